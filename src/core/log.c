/*
 * Leveled logging to stderr (include/rein/core.h).
 *
 * The level is read from REIN_LOG once, lazily, so a program that never logs never looks at
 * the environment. Lines are formatted on the stack and written with one write so messages
 * from different threads do not interleave. Control bytes in a message (a request's method
 * or path, a skill's stderr) are written as \xNN, so what a client sends can neither forge a
 * log line (CR, LF) nor drive the terminal that shows the log (ESC, BS).
 */
#include "core/internal.h"

#include <rein/core.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>
#include <unistd.h>

static atomic_int current_level = -1;
static rein_log_sink_fn sink_fn;
static void *sink_userdata;

#define NAME(id, name) name,
static const char *const level_names[] = {REIN_LOG_LEVEL_MAP(NAME)};
#undef NAME

bool rein_log_level_parse(const char *text, enum rein_log_level *out)
{
    for (size_t i = 0; text && i < REIN_ARRAY_SIZE(level_names); i++) {
        if (strcasecmp(text, level_names[i]) == 0) {
            *out = (enum rein_log_level)i;
            return true;
        }
    }
    if (text && strcasecmp(text, "warning") == 0) {
        *out = REIN_LOG_WARN;
        return true;
    }
    return false;
}

enum rein_log_level rein_log_level(void)
{
    int lvl = atomic_load(&current_level);
    enum rein_log_level parsed = REIN_LOG_WARN;

    if (lvl >= 0)
        return (enum rein_log_level)lvl;
    (void)rein_log_level_parse(getenv("REIN_LOG"), &parsed);
    atomic_store(&current_level, (int)parsed);
    return parsed;
}

void rein_log_set_level(enum rein_log_level level)
{
    atomic_store(&current_level, (int)level);
}

void rein_log_set_sink(rein_log_sink_fn sink, void *userdata)
{
    sink_fn = sink;
    sink_userdata = userdata;
}

bool rein_log_enabled(enum rein_log_level level)
{
    return (int)level <= (int)rein_log_level();
}

static void write_stderr(enum rein_log_level level, const char *where, const char *msg)
{
    char line[1024];
    char ts[REIN_TIME_ISO_LEN];
    int n;

    n = snprintf(line, sizeof(line), "%s rein %s %s%s%s\n", rein_time_iso(rein_wall_ms(), ts),
                 level_names[level], where ? where : "", where ? ": " : "", msg);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line)) {
        n = (int)sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    /* A failed log write has nowhere to be reported. */
    if (write(STDERR_FILENO, line, (size_t)n) < 0)
        return;
}

/* Copies in to out (size bytes) with each control byte (below 0x20, and DEL) as \xNN. */
static void escape_controls(const char *in, char *out, size_t size)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;

    for (const unsigned char *p = (const unsigned char *)in; *p && n + 5 < size; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            out[n++] = '\\';
            out[n++] = 'x';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        } else {
            out[n++] = (char)*p;
        }
    }
    out[n] = '\0';
}

void rein_log(enum rein_log_level level, const char *where, const char *fmt, ...)
{
    char raw[900], msg[900];
    va_list ap;

    if (!rein_log_enabled(level))
        return;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    escape_controls(raw, msg, sizeof(msg));
    if (sink_fn)
        sink_fn(level, where, msg, sink_userdata);
    else
        write_stderr(level, where, msg);
}
