/*
 * rein/buf.h: a bounded, growable byte buffer and a JSON writer that appends to it.
 *
 * Text from the network is built here, so every buffer has a maximum size: growing past it
 * fails with REIN_ETOOBIG instead of letting input grow without limit.
 *
 * Threading: a buffer or writer belongs to one thread at a time.
 */
#ifndef REIN_BUF_H
#define REIN_BUF_H

#include <rein/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Invariants: ptr is never NULL and ptr[len] == '\0' (a buffer with no storage points at a
 * shared empty string, so it can be printed at once); len < alloc whenever alloc != 0;
 * len + 1 <= max. The struct is caller storage: _init/_release, never _new/_free.
 */
struct rein_buf {
    size_t len;
    size_t alloc;
    size_t max; /* most bytes the buffer may hold, NUL included */
    char *ptr;
};

#define REIN_BUF_DEFAULT_MAX ((size_t)1 << 30)

/* Prepares b with no storage. max 0 means REIN_BUF_DEFAULT_MAX. */
REIN_EXTERN void rein_buf_init(struct rein_buf *b, size_t max);
/* Frees the storage and leaves b as after rein_buf_init() with the same max. */
REIN_EXTERN void rein_buf_release(struct rein_buf *b);
/* Makes room for extra more bytes (and the NUL). REIN_ETOOBIG past max, REIN_ENOMEM. */
REIN_EXTERN rein_err rein_buf_grow(struct rein_buf *b, size_t extra) REIN_WUR;
/* Appends len bytes of data (borrowed). On failure b is unchanged. */
REIN_EXTERN rein_err rein_buf_add(struct rein_buf *b, const void *data, size_t len) REIN_WUR;
REIN_EXTERN rein_err rein_buf_adds(struct rein_buf *b, const char *s) REIN_WUR;
REIN_EXTERN rein_err rein_buf_addch(struct rein_buf *b, char c) REIN_WUR;
REIN_EXTERN rein_err rein_buf_addf(struct rein_buf *b, const char *fmt, ...) REIN_WUR
    REIN_PRINTF(2, 3);
REIN_EXTERN rein_err rein_buf_addvf(struct rein_buf *b, const char *fmt, va_list ap) REIN_WUR
    REIN_PRINTF(2, 0);
/* Sets len to n (n <= len) and rewrites the NUL. Keeps the storage. */
REIN_EXTERN void rein_buf_truncate(struct rein_buf *b, size_t n);
/* Sets len to 0, keeping the storage for reuse. */
REIN_EXTERN void rein_buf_reset(struct rein_buf *b);
/*
 * Hands the contents to the caller: returns new memory (free with rein_free) holding len
 * bytes and a NUL, stores len in *len_out when not NULL, and leaves b empty. NULL only when
 * memory is exhausted, in which case b is unchanged.
 */
REIN_EXTERN char *rein_buf_detach(struct rein_buf *b, size_t *len_out);

/*
 * JSON writer. Values are appended to a borrowed buffer with commas and colons placed
 * automatically. Errors are sticky: after the first failure every call is a no-op and
 * rein_jw_finish() reports it, so a writer can be driven without checking each call.
 *
 * Strings must be UTF-8: invalid bytes are written as U+FFFD, so the output is always valid
 * JSON. Nesting deeper than REIN_JW_MAX_DEPTH fails with REIN_EDEPTH.
 */
#define REIN_JW_MAX_DEPTH 2048

struct rein_jw {
    struct rein_buf *buf; /* borrowed */
    int err;
    int depth;
    bool after_key;
    uint8_t need_comma[REIN_JW_MAX_DEPTH / 8 + 1];
};

/* buf is borrowed and must outlive the writer; output is appended after what it holds. */
REIN_EXTERN void rein_jw_init(struct rein_jw *w, struct rein_buf *buf);
REIN_EXTERN void rein_jw_obj_begin(struct rein_jw *w);
REIN_EXTERN void rein_jw_obj_end(struct rein_jw *w);
REIN_EXTERN void rein_jw_arr_begin(struct rein_jw *w);
REIN_EXTERN void rein_jw_arr_end(struct rein_jw *w);
/* An object key; the next call writes its value. */
REIN_EXTERN void rein_jw_key(struct rein_jw *w, const char *key);
REIN_EXTERN void rein_jw_keyn(struct rein_jw *w, const char *key, size_t len);
/*
 * A key written as given: quoted is the key with its quotes and the colon ("\"title\":"), len
 * bytes, and must need no escape. For keys that are literals in rein's own code, through
 * REIN_JW_KEY(w, "title"): one copy instead of a check of every byte.
 */
REIN_EXTERN void rein_jw_key_quoted(struct rein_jw *w, const char *quoted, size_t len);
#define REIN_JW_KEY(w, lit) rein_jw_key_quoted((w), "\"" lit "\":", sizeof(lit) + 2)
/* s NULL writes null. */
REIN_EXTERN void rein_jw_str(struct rein_jw *w, const char *s);
REIN_EXTERN void rein_jw_strn(struct rein_jw *w, const char *s, size_t len);
REIN_EXTERN void rein_jw_int(struct rein_jw *w, int64_t v);
REIN_EXTERN void rein_jw_uint(struct rein_jw *w, uint64_t v);
/* Shortest text that reads back as the same double; NaN and infinities are written null.
 * The text is rein_json_double_text()'s. */
REIN_EXTERN void rein_jw_double(struct rein_jw *w, double v);
/*
 * Writes into out the shortest decimal text that reads back as v (the fewest significant
 * digits), laid out as Python's repr does: plain notation for exponents -4 to 15 ("2.8",
 * "0.30000000000000004", "1e-07", "1e+21", "5e-324", "-0.0"), always with a fraction or an
 * exponent ("2.0"). NaN and infinities give "null". Returns the length. Every JSON rein writes
 * prints doubles this way, and so does text that shows a number to a person.
 */
#define REIN_JSON_DOUBLE_MAX 32
REIN_EXTERN int rein_json_double_text(double v, char out[REIN_JSON_DOUBLE_MAX]);
REIN_EXTERN void rein_jw_bool(struct rein_jw *w, bool v);
REIN_EXTERN void rein_jw_null(struct rein_jw *w);
/* Already-encoded JSON text (borrowed), written as one value without checking. */
REIN_EXTERN void rein_jw_raw(struct rein_jw *w, const char *json, size_t len);
/* Appends s as a JSON string body (no quotes), escaping as needed. */
REIN_EXTERN rein_err rein_json_escape(struct rein_buf *b, const char *s, size_t len) REIN_WUR;
/* The first error, or REIN_OK when the writer is not nested inside an open container. */
REIN_EXTERN rein_err rein_jw_finish(const struct rein_jw *w) REIN_WUR;

#ifdef __cplusplus
}
#endif
#endif /* REIN_BUF_H */
