/*
 * A protocol file read into a jansson tree plus the line and column of each value and key
 * (src/verify/doc.c). Private to src/verify/.
 */
#ifndef REIN_VERIFY_DOC_H
#define REIN_VERIFY_DOC_H

#include "verify_int.h"

struct rein__doc_pos {
    const json_t *node; /* the value, or the object holding key */
    char *key;          /* owned; NULL for a value's own position */
    int line, col;      /* 1-based */
};

/* Invariant: every pointer in pos points into the tree held by root. */
struct rein__doc {
    json_t *root; /* owned */
    bool is_json;
    struct rein__doc_pos *pos;
    size_t npos, cap;
};

/*
 * Parses len bytes of text (borrowed) as JSON (when name ends in ".json" or the text starts
 * with '{') or YAML. On failure err has the code (REIN_EPARSE, REIN_EDEPTH, REIN_ENOMEM), the
 * line and column, and a message starting "<name>:<line>:<col>: ". d is filled on success
 * and must be released either way.
 */
rein_err rein__doc_load(struct rein__doc *d, const char *text, size_t len, const char *name,
                        rein_error *err);
void rein__doc_release(struct rein__doc *d);
/* Position of node (key NULL) or of key in the object node. false when unknown. */
bool rein__doc_where(const struct rein__doc *d, const json_t *node, const char *key, int *line,
                     int *col);

#endif /* REIN_VERIFY_DOC_H */
