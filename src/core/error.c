/*
 * Error codes and the rein_error detail record (include/rein/core.h).
 *
 * The code table is expanded from REIN_ERRNO_MAP so names, texts and values never drift.
 * Nothing here allocates: errors must be reportable when memory is exhausted.
 */
#include <rein/core.h>

#include <stdio.h>
#include <string.h>

const char *rein_strerror(int code)
{
    switch (code) {
    case REIN_OK:
        return "success";
#define REIN_ERRNO_TEXT_(name, value, text)                                                        \
    case REIN_##name:                                                                              \
        return text;
        REIN_ERRNO_MAP(REIN_ERRNO_TEXT_)
#undef REIN_ERRNO_TEXT_
    default:
        return "unknown error";
    }
}

const char *rein_err_name(int code)
{
    switch (code) {
    case REIN_OK:
        return "REIN_OK";
#define REIN_ERRNO_NAME_(name, value, text)                                                        \
    case REIN_##name:                                                                              \
        return "REIN_" #name;
        REIN_ERRNO_MAP(REIN_ERRNO_NAME_)
#undef REIN_ERRNO_NAME_
    default:
        return "REIN_E?";
    }
}

void rein_error_clear(rein_error *err)
{
    if (err)
        memset(err, 0, sizeof(*err));
}

int rein_error_setv(rein_error *err, int code, const char *fmt, va_list ap)
{
    if (!err)
        return code;
    err->code = code;
    if (fmt)
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    else
        snprintf(err->msg, sizeof(err->msg), "%s", rein_strerror(code));
    return code;
}

int(rein_error_set)(rein_error *err, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    rein_error_setv(err, code, fmt, ap);
    va_end(ap);
    return code;
}

void rein_error_where(rein_error *err, const char *where)
{
    /* A copy cut as snprintf cuts it: every request marks where it is several times, and
     * snprintf's format machinery cost ten times the copy. */
    if (err && where) {
        size_t n = strnlen(where, sizeof(err->where) - 1);
        memcpy(err->where, where, n);
        err->where[n] = '\0';
    }
}

int rein_error_prefix(rein_error *err, const char *fmt, ...)
{
    char head[sizeof(err->msg)];
    char old[sizeof(err->msg)];
    va_list ap;

    if (!err)
        return 0;
    va_start(ap, fmt);
    vsnprintf(head, sizeof(head), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    size_t hlen = strnlen(head, sizeof(head) - 1);
    size_t olen = strnlen(old, sizeof(old) - 1);
    if (olen > sizeof(err->msg) - 1 - hlen)
        olen = sizeof(err->msg) - 1 - hlen;
    memcpy(err->msg, head, hlen);
    memcpy(err->msg + hlen, old, olen);
    err->msg[hlen + olen] = '\0';
    return err->code;
}
