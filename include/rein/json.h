/*
 * rein/json.h: jansson documents in and out of rein buffers.
 *
 * JSON documents in rein are jansson's json_t. These helpers put jansson's diagnostics into a
 * rein_error (with line and column) and write json_t values through the rein JSON writer, so
 * a document can be embedded in a larger body without an intermediate string.
 *
 * Threading: any thread; values follow jansson's rules (one thread per value while mutated).
 */
#ifndef REIN_JSON_H
#define REIN_JSON_H

#include <jansson.h>
#include <rein/buf.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Parses len bytes of text (borrowed) as one JSON value. Returns a new reference, or NULL
 * with err set to REIN_EPARSE and its line, column and jansson's message. Integers that do
 * not fit in 64 bits and nesting deeper than jansson's limit are parse errors. flags are
 * jansson decoding flags; JSON_DECODE_ANY is always added. rein's own parser builds the value
 * when it can be sure of it (decision 0037); anything else, errors included, is jansson's,
 * so the result is always what jansson's loader gives.
 */
REIN_EXTERN json_t *rein_json_parse(const char *text, size_t len, size_t flags, rein_error *err);
/*
 * Checks that len bytes of text are one JSON value that rein_json_parse() (flags 0) would
 * accept, without building it: for texts that are kept as they are and only need to be known
 * good. REIN_OK, or REIN_EPARSE with err's line, column and what is wrong (REIN_ENOMEM only for
 * a number longer than 63 bytes when memory is exhausted).
 */
REIN_EXTERN rein_err rein_json_check(const char *text, size_t len, rein_error *err) REIN_WUR;
/* Reads and parses a whole file. err names the path on failure. New reference or NULL. */
REIN_EXTERN json_t *rein_json_load_file(const char *path, rein_error *err);
/*
 * Where the value at JSON Pointer pointer (RFC 6901; "" is the whole document) starts in
 * text (len bytes of JSON, borrowed): for an object member the position of its key, for an
 * array element the element. line and column count from 1, a column being a character, as
 * in jansson's errors. False when the pointer names nothing there (or the text is broken
 * before it). For a check that found a problem in a parsed document and must point a
 * person at it in the file.
 */
REIN_EXTERN bool rein_json_locate(const char *text, size_t len, const char *pointer, int *line,
                                  int *column);
/* Writes v (borrowed) as one value. Object keys keep their order. */
REIN_EXTERN void rein_jw_json(struct rein_jw *w, const json_t *v);
/*
 * True when len bytes of text (borrowed) are exactly what rein_jw_json() writes for the value
 * rein_json_parse() (flags 0) makes of them, so the text can be written as it is
 * (rein_jw_raw) instead of parsed and written again. Narrow on purpose: spaces, escapes the
 * writer does not use, real numbers, "-0", repeated keys, NUL and deep nesting all answer
 * false, and the caller parses. One pass, no allocation.
 */
REIN_EXTERN bool rein_json_is_written_form(const char *text, size_t len);
/* Appends the compact encoding of v (borrowed) to b. */
REIN_EXTERN rein_err rein_json_dump(struct rein_buf *b, const json_t *v) REIN_WUR;
/* Appends v (borrowed) laid out over lines, indent spaces per level (at most 16; 0: compact),
 * for a person to read. Numbers as in every rein JSON (rein_json_double_text). On failure b
 * is left as it was. */
REIN_EXTERN rein_err rein_json_dump_indent(struct rein_buf *b, const json_t *v,
                                           int indent) REIN_WUR;
/* New compact string for v (borrowed), free with rein_free(); NULL on failure. */
REIN_EXTERN char *rein_json_dumps(const json_t *v);
/* Short readable type name: "object", "array", "string", "integer", "number", "boolean", "null". */
REIN_EXTERN const char *rein_json_type_name(const json_t *v);

#ifdef __cplusplus
}
#endif
#endif /* REIN_JSON_H */
