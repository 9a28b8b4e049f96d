/*
 * rein/core.h: errors, allocation, logging, ids and clocks.
 *
 * Everything else in rein stands on this header. It has no knowledge of agents, tools or
 * providers and never calls upward.
 *
 * Threading: every function here may be called from any thread. rein_set_allocator() and
 * rein_log_set_sink() must be called before other threads use the library.
 */
#ifndef REIN_CORE_H
#define REIN_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The number of elements of an array (an array, not a pointer to one). */
#define REIN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__) || defined(__clang__)
#define REIN_EXTERN          __attribute__((visibility("default")))
#define REIN_WUR             __attribute__((warn_unused_result))
#define REIN_PRINTF(fmt, va) __attribute__((format(printf, fmt, va)))
#else
#define REIN_EXTERN
#define REIN_WUR
#define REIN_PRINTF(fmt, va)
#endif

/*
 * One code space for the whole library: 0 is success, failures are negative. The enum,
 * rein_strerror() and rein_err_name() are generated from this one map so they cannot drift.
 * Codes are only ever appended.
 */
#define REIN_ERRNO_MAP(X)                                                                          \
    X(EINVAL, -1, "invalid argument")                                                              \
    X(ENOMEM, -2, "out of memory")                                                                 \
    X(EPARSE, -3, "malformed input")                                                               \
    X(ETOOBIG, -4, "size limit exceeded")                                                          \
    X(ENOTSUP, -5, "not supported by this build")                                                  \
    X(EIO, -6, "input/output error")                                                               \
    X(ENOTFOUND, -7, "not found")                                                                  \
    X(ETIMEDOUT, -8, "timed out")                                                                  \
    X(ECANCELED, -9, "cancelled")                                                                  \
    X(ESCHEMA, -10, "invalid schema")                                                              \
    X(EINVALID, -11, "validation failed")                                                          \
    X(EHTTP, -12, "HTTP error")                                                                    \
    X(EPROVIDER, -13, "model provider error")                                                      \
    X(ESTORE, -14, "store error")                                                                  \
    X(EBUSY, -15, "busy")                                                                          \
    X(EDENIED, -16, "denied")                                                                      \
    X(EEXIST, -17, "already exists")                                                               \
    X(ESTATE, -18, "operation not valid in the current state")                                     \
    X(EDEPTH, -19, "nesting too deep")                                                             \
    X(EINTERNAL, -20, "internal error")

enum rein_errno {
    REIN_OK = 0,
#define REIN_ERRNO_ENUM_(name, value, text) REIN_##name = (value),
    REIN_ERRNO_MAP(REIN_ERRNO_ENUM_)
#undef REIN_ERRNO_ENUM_
};

/* The result of an action: REIN_OK or a negative REIN_E* code. */
typedef int rein_err;

/*
 * Details of a failure, filled without allocating so it works when memory is exhausted.
 * Callers own the storage; functions that take a `rein_error *err` accept NULL.
 */
typedef struct rein_error {
    int code;       /* REIN_E* */
    int detail;     /* HTTP status, SQLite rc, CURLcode, errno, or 0 */
    int line;       /* parse errors only, 1-based; 0 when unknown */
    int column;     /* parse errors only, 1-based; 0 when unknown */
    char where[48]; /* "providers/openai: decode" */
    char msg[256];  /* what went wrong and, where possible, what to do about it */
} rein_error;

/* Static text for a code ("out of memory"); never NULL. */
REIN_EXTERN const char *rein_strerror(int code);
/* Static name for a code ("REIN_ENOMEM"); never NULL. */
REIN_EXTERN const char *rein_err_name(int code);

/* Resets *err to "no error". err may be NULL. */
REIN_EXTERN void rein_error_clear(rein_error *err);
/*
 * Records a failure in err (may be NULL) and returns code, so callers can write
 * `return rein_error_set(err, REIN_EPARSE, "…", …);`. The message is truncated to fit.
 */
REIN_EXTERN int rein_error_set(rein_error *err, int code, const char *fmt, ...) REIN_PRINTF(3, 4);
#if defined(__GNUC__) || defined(__clang__)
/* Lets static analysers see that the result is `code` across translation units. */
#define rein_error_set(err, code, ...)                                                             \
    __extension__({                                                                                \
        int rein_code_ = (code);                                                                   \
        (rein_error_set)((err), rein_code_, __VA_ARGS__);                                          \
        rein_code_;                                                                                \
    })
#endif
REIN_EXTERN int rein_error_setv(rein_error *err, int code, const char *fmt, va_list ap)
    REIN_PRINTF(3, 0);
/* Sets err->where (borrowed text is copied). */
REIN_EXTERN void rein_error_where(rein_error *err, const char *where);
/* Prepends context to an existing message: "file.json: " + old message. Returns err->code. */
REIN_EXTERN int rein_error_prefix(rein_error *err, const char *fmt, ...) REIN_PRINTF(2, 3);

/*
 * Allocation. Every allocation in rein goes through these, so a test can make the Nth one
 * fail. The hook is also installed into jansson. Set it before anything else is allocated.
 */
struct rein_allocator {
    void *(*malloc_fn)(size_t size);
    void *(*realloc_fn)(void *ptr, size_t size);
    void (*free_fn)(void *ptr);
};
/* alloc: borrowed, copied; NULL restores the C library's functions. */
REIN_EXTERN void rein_set_allocator(const struct rein_allocator *alloc);
/* New memory or NULL. */
REIN_EXTERN void *rein_malloc(size_t size);
/* Zeroed memory for n elements of size bytes; NULL on failure or overflow. */
REIN_EXTERN void *rein_calloc(size_t n, size_t size);
/* Like realloc(); on failure ptr is left untouched and NULL is returned. */
REIN_EXTERN void *rein_realloc(void *ptr, size_t size);
/* ptr may be NULL. */
REIN_EXTERN void rein_free(void *ptr);
/* New copy of s (NULL when s is NULL or memory is exhausted). */
REIN_EXTERN char *rein_strdup(const char *s);
/* New NUL-terminated copy of the first len bytes of s. */
REIN_EXTERN char *rein_strndup(const char *s, size_t len);
/* New formatted string, or NULL. */
REIN_EXTERN char *rein_asprintf(const char *fmt, ...) REIN_PRINTF(1, 2);

/*
 * Logging to stderr, one line per message. The level comes from REIN_LOG
 * (error|warn|info|debug; default warn) the first time anything is logged.
 */
/* Log levels, most severe first; the enum and rein_log_level_parse()'s names, one list. */
#define REIN_LOG_LEVEL_MAP(X)    X(ERROR, "error") X(WARN, "warn") X(INFO, "info") X(DEBUG, "debug")
#define REIN__LOG_ENUM(id, name) REIN_LOG_##id,
enum rein_log_level { REIN_LOG_LEVEL_MAP(REIN__LOG_ENUM) };
#undef REIN__LOG_ENUM
/* Called for every message at or below the current level, from the logging thread. */
typedef void (*rein_log_sink_fn)(enum rein_log_level level, const char *where, const char *msg,
                                 void *userdata);
REIN_EXTERN void rein_log_set_level(enum rein_log_level level);
REIN_EXTERN enum rein_log_level rein_log_level(void);
/* Parses "error|warn|info|debug"; returns false (and leaves *out) on anything else. */
REIN_EXTERN bool rein_log_level_parse(const char *text, enum rein_log_level *out);
/* sink NULL restores the stderr writer. userdata is borrowed. */
REIN_EXTERN void rein_log_set_sink(rein_log_sink_fn sink, void *userdata);
REIN_EXTERN bool rein_log_enabled(enum rein_log_level level);
REIN_EXTERN void rein_log(enum rein_log_level level, const char *where, const char *fmt, ...)
    REIN_PRINTF(3, 4);

#define REIN_TRACE_ID_LEN 32 /* W3C trace-id: 32 lowercase hex digits, not all zero */
#define REIN_SPAN_ID_LEN  16
#define REIN_ID_MAX       64 /* room for any id rein makes, with its prefix and NUL */

/* Fills out with a new random trace id and a NUL (out has REIN_TRACE_ID_LEN + 1 bytes). */
REIN_EXTERN void rein_trace_id_new(char out[REIN_TRACE_ID_LEN + 1]);
/* Fills out with a new random span id and a NUL. */
REIN_EXTERN void rein_span_id_new(char out[REIN_SPAN_ID_LEN + 1]);
/* True when text is a well-formed trace id (32 lowercase hex, not all zero). */
REIN_EXTERN bool rein_trace_id_is_valid(const char *text);
/*
 * Fills out with prefix + 24 random characters [0-9A-Za-z] ("call_3fJ…", "conv_…").
 * prefix must be shorter than REIN_ID_MAX - 25 bytes.
 */
REIN_EXTERN void rein_id_new(const char *prefix, char out[REIN_ID_MAX]);
/* Fills buf with len random bytes from the kernel's generator. */
REIN_EXTERN void rein_random_bytes(void *buf, size_t len);

/* Monotonic clock, for durations and deadlines. */
REIN_EXTERN int64_t rein_now_ms(void);
REIN_EXTERN int64_t rein_now_ns(void);
/* Wall clock in milliseconds since the epoch, for timestamps. */
REIN_EXTERN int64_t rein_wall_ms(void);
/* Writes "2026-11-21T21:07:03.120Z" (UTC) for wall_ms into out; returns out. */
#define REIN_TIME_ISO_LEN 32
REIN_EXTERN char *rein_time_iso(int64_t wall_ms, char out[REIN_TIME_ISO_LEN]);
/* Sleeps at least ms milliseconds. */
REIN_EXTERN void rein_sleep_ms(int64_t ms);

/*
 * Text checks. rein_utf8_valid_prefix returns how many leading bytes of text (len bytes,
 * borrowed) are valid UTF-8 as JSON requires it (no overlong forms, surrogates or code points
 * above U+10FFFF): len when all of it is, else the offset of the first bad byte.
 */
REIN_EXTERN size_t rein_utf8_valid_prefix(const char *text, size_t len);
/*
 * The entry of choices (n entries, or fewer when a NULL ends them; all borrowed) a mistyped
 * word was most likely meant to be: the nearest by edit distance (ASCII case ignored,
 * adjacent transpositions count once), if it is close for the word's length. NULL when
 * nothing is close. The result points into choices.
 */
REIN_EXTERN const char *rein_suggest(const char *word, const char *const *choices, size_t n);

/*
 * Reads the whole file at path (borrowed) into *text: new memory (free with rein_free()),
 * NUL-terminated, its length in *len (may be NULL). REIN_ENOTFOUND when it does not exist,
 * REIN_EINVAL for a directory, REIN_EIO when it cannot be read, REIN_ETOOBIG beyond max
 * bytes; err's message starts with the path.
 */
REIN_EXTERN rein_err rein_read_file(const char *path, size_t max, char **text, size_t *len,
                                    rein_error *err) REIN_WUR;

/* Library version: "MAJOR.MINOR.PATCH". */
REIN_EXTERN const char *rein_version(void);

#ifdef __cplusplus
}
#endif
#endif /* REIN_CORE_H */
