/*
 * rein/doc.h: a JSON document in rein's own compact form, read in place.
 *
 * A jansson tree costs an allocation per value and about 1.2 KB per 100-byte record (a struct,
 * a hash table and a record per member), which is most of the time to decode a large tool-call
 * argument (issue 25, decision 0056). A rein_doc is the same document as one array of 16-byte
 * nodes in document order (a container, then its members or items; an object's member is its
 * key, a string node, then its value), strings pointing into the text or, when they had
 * escapes, into one buffer of their unescaped bytes. The schema validator reads it directly
 * (rein_schema_validate_doc in rein/schema.h); a jansson tree is made only when a caller asks
 * (rein_doc_tree).
 *
 * It holds exactly the value rein_json_parse(text, len, 0, err) would return: the same members
 * in the same order, the same numbers and strings, and for a text that does not parse the same
 * error. Texts rein's parser is not sure of (duplicate keys, an integer beyond 64 bits, a real
 * strtod reads only with a range error, nesting past 256, a key longer than 1 KB) are handed to
 * rein_json_parse, and the document then holds its tree instead of nodes (rein_doc_root returns
 * NULL): answers stay the same, only the speed differs.
 *
 * Threading: a document is immutable once parsed and may be read on many threads at once,
 * rein_doc_tree included.
 */
#ifndef REIN_DOC_H
#define REIN_DOC_H

#include <rein/json.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_doc rein_doc;

/*
 * One value. type is jansson's json_type (JSON_OBJECT … JSON_NULL), so a type test is the same
 * bit test for both forms. An object's n members follow it as key, value pairs; an array's n
 * items follow it; skip is the number of nodes the container takes, itself included, so the
 * value after it is node + skip (rein_doc_next).
 */
struct rein_doc_node {
    uint32_t type;
    uint32_t n; /* string: bytes; object: members; array: items; else 0 */
    union {
        const char *str; /* string (a key too): n bytes, not NUL-terminated; valid UTF-8 */
        size_t skip;     /* object, array */
        json_int_t i;    /* integer */
        double d;        /* real */
    } u;
};

/*
 * Parses len bytes of text (borrowed: it must stay alive and unchanged until rein_doc_free, as
 * strings without escapes are read from it). Returns a new document (rein_doc_free), or NULL
 * with err set exactly as rein_json_parse(text, len, 0, err) sets it (REIN_EPARSE with line
 * and column, or REIN_ENOMEM).
 */
REIN_EXTERN rein_doc *rein_doc_parse(const char *text, size_t len, rein_error *err);
/* NULL is a no-op. Frees the document, its nodes and its tree if one was made. */
REIN_EXTERN void rein_doc_free(rein_doc *doc);
/* The root node (borrowed, valid until rein_doc_free), or NULL when the document holds a tree
 * made by jansson instead (see above): rein_doc_tree then returns it. */
REIN_EXTERN const struct rein_doc_node *rein_doc_root(const rein_doc *doc);
/* The root's type (a json_type), whichever form the document holds. */
REIN_EXTERN int rein_doc_type(const rein_doc *doc);
/*
 * The document as a jansson tree: made at the first call and kept by the document (borrowed,
 * valid until rein_doc_free; it must not be changed: copy it to fill in defaults). NULL only
 * when memory is exhausted. Safe from several threads at once (one tree is kept).
 */
REIN_EXTERN const json_t *rein_doc_tree(const rein_doc *doc);
/* A new jansson value (json_decref) equal to the value at node n of a document; NULL when
 * memory is exhausted. */
REIN_EXTERN json_t *rein_doc_node_tree(const struct rein_doc_node *n);

/* The value after n's (and its members' or items'). */
static inline const struct rein_doc_node *rein_doc_next(const struct rein_doc_node *n)
{
    return n->type <= JSON_ARRAY ? n + n->u.skip : n + 1;
}

#ifdef __cplusplus
}
#endif
#endif /* REIN_DOC_H */
