/*
 * Fuzz target for rein's compact document form (src/core/doc.c), differential against
 * rein_json_parse (flags 0), the authority: rein_doc_parse fails exactly when it does, with
 * the same error message, line and column, and otherwise holds the same value (written out
 * alike: members in order, integers and reals as such, the same doubles and strings); every
 * container's skip lands just past its last member or item.
 */
#include <rein/rein.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The node after n's value, found by walking its members or items one by one. */
static const struct rein_doc_node *walk(const struct rein_doc_node *n)
{
    const struct rein_doc_node *c = n + 1;

    if (n->type > JSON_ARRAY)
        return c;
    for (uint32_t i = 0; i < n->n; i++) {
        if (n->type == JSON_OBJECT) {
            if (c->type != JSON_STRING)
                abort(); /* a member starts with its key */
            c++;
        }
        c = walk(c);
    }
    if (c != rein_doc_next(n))
        abort(); /* the skip index is wrong */
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    rein_error derr = {0}, jerr = {0};
    rein_doc *doc;
    json_t *want;
    char *a, *b;

    if (size > 1 << 20)
        return 0;
    doc = rein_doc_parse(text, size, &derr);
    want = rein_json_parse(text, size, 0, &jerr);
    if (!doc || !want) {
        if (doc || want || derr.code != jerr.code || strcmp(derr.msg, jerr.msg) != 0 ||
            derr.line != jerr.line || derr.column != jerr.column)
            abort(); /* one failed and the other did not, or they say different things */
        return 0;
    }
    if (rein_doc_root(doc))
        walk(rein_doc_root(doc));
    if (rein_doc_type(doc) != (int)json_typeof(want))
        abort();
    a = rein_json_dumps(rein_doc_tree(doc));
    b = rein_json_dumps(want);
    if (!a || !b || strcmp(a, b) != 0)
        abort(); /* a different value */
    rein_free(a);
    rein_free(b);
    rein_doc_free(doc);
    json_decref(want);
    return 0;
}
