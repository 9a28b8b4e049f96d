/*
 * Splitting a step's command string into an argv, without a shell.
 *
 * `command: make -C build test` is split the way a POSIX shell splits words: blanks separate
 * words, single quotes keep everything literal, double quotes keep everything but `\"` and
 * `\\`, and a backslash outside quotes escapes the next character. Nothing is expanded. Shell
 * syntax outside quotes (pipes, redirections, `&&`, `$VAR`, globs) is refused with the
 * character named: without a shell it would reach the program as a literal argument, which is
 * never what the author meant. `shell: true` in the step is the way to ask for a shell.
 */
#include "verify_int.h"

#include <stdio.h>
#include <string.h>

#define ARGV_MAX 256

void rein__verify_argv_free(char **argv)
{
    if (!argv)
        return;
    for (size_t i = 0; argv[i]; i++)
        rein_free(argv[i]);
    rein_free(argv);
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_shell_syntax(char c)
{
    return strchr("|&;<>$`()*?", c) != NULL;
}

/* Reads one word starting at *pos into w; false with why set on a syntax problem. */
static bool read_word(const char *cmd, size_t *pos, struct rein_buf *w, bool *oom, char *why,
                      size_t why_len)
{
    size_t i = *pos;

    while (cmd[i] && !is_blank(cmd[i])) {
        char c = cmd[i];
        if (c == '\'' || c == '"') {
            size_t open = i++;
            while (cmd[i] && cmd[i] != c) {
                if (c == '"' && cmd[i] == '\\' && (cmd[i + 1] == '"' || cmd[i + 1] == '\\'))
                    i++;
                if (rein_buf_addch(w, cmd[i++])) {
                    *oom = true;
                    return false;
                }
            }
            if (!cmd[i]) {
                snprintf(why, why_len, "the quote at offset %zu is never closed", open);
                return false;
            }
            i++;
            continue;
        }
        if (c == '\\') {
            if (!cmd[i + 1]) {
                snprintf(why, why_len, "the command ends with a backslash");
                return false;
            }
            i++;
        } else if (is_shell_syntax(c)) {
            snprintf(why, why_len,
                     "the command uses shell syntax ('%c' at offset %zu); set `shell: true` on "
                     "the step, quote the character, or write the command as a list",
                     c, i);
            return false;
        }
        if (rein_buf_addch(w, cmd[i++])) {
            *oom = true;
            return false;
        }
    }
    *pos = i;
    return true;
}

char **rein__verify_split_command(const char *cmd, char *why, size_t why_len)
{
    char **argv = rein_calloc(ARGV_MAX + 1, sizeof(*argv));
    size_t n = 0, pos = 0;
    struct rein_buf w;
    bool oom = false;

    if (!argv) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    rein_buf_init(&w, 1 << 20);
    for (;;) {
        while (is_blank(cmd[pos]))
            pos++;
        if (!cmd[pos])
            break;
        if (n == ARGV_MAX) {
            snprintf(why, why_len, "more than %d words", ARGV_MAX);
            goto out_fail;
        }
        rein_buf_reset(&w);
        if (!read_word(cmd, &pos, &w, &oom, why, why_len))
            goto out_fail;
        argv[n] = rein_strndup(w.ptr, w.len);
        if (!argv[n]) {
            oom = true;
            goto out_fail;
        }
        n++;
    }
    rein_buf_release(&w);
    if (n == 0) {
        snprintf(why, why_len, "the command is empty");
        rein__verify_argv_free(argv);
        return NULL;
    }
    return argv;

out_fail:
    if (oom)
        snprintf(why, why_len, "out of memory");
    rein_buf_release(&w);
    rein__verify_argv_free(argv);
    return NULL;
}
