/*
 * Fuzz target for claim extraction (src/verify/claims.c) and the source scanner
 * (src/verify/source.c): an agent's final text and the files it points at are untrusted. The
 * input is extracted as claims, and scanned as C, Python, JavaScript and Go source for the
 * names the claims mention (or "main").
 */
#include <rein/verify.h>

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const langs[] = {"x.c", "x.cc", "x.py", "x.ts", "x.go", "x.rb", "x.txt"};
    rein_verify_claims *claims = rein_verify_claims_extract((const char *)data, size, NULL);
    const char *name = "main";

    for (size_t i = 0; i < rein_verify_claims_count(claims); i++) {
        const struct rein_verify_claim *c = rein_verify_claims_get(claims, i);
        if (!c->text || (c->kind == REIN_VERIFY_CLAIM_FUNCTION_EXISTS && !c->name))
            __builtin_trap();
        if (c->name)
            name = c->name;
    }
    for (size_t i = 0; i < sizeof(langs) / sizeof(langs[0]); i++) {
        int line = 0;
        int r = rein_verify_source_find_function((const char *)data, size, langs[i], name, &line);
        if (r > 0 && line <= 0)
            __builtin_trap();
    }
    json_decref(rein_verify_claims_json(claims));
    rein_verify_claims_free(claims);
    return 0;
}
