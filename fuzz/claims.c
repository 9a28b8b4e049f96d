/*
 * Fuzz target for the claims module (src/claims/): an agent's final text is untrusted, and so
 * is a ledger handed to `rein verify --claims --ledger`. The input is extracted as claims with
 * a vocabulary of tool names (English and Chinese forms), the claims are checked against a
 * ledger (the input itself when it parses as a JSON ledger, else a fixed one; never the file
 * system), turned into JSON, and the input is scanned as C, Python, JavaScript and Go source
 * for the names the claims mention.
 */
#include <rein/claims.h>

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const langs[] = {"x.c", "x.cc", "x.py", "x.ts", "x.go", "x.rb", "x.txt"};
    static const char *const tools[] = {"calculator",    "file_search",    "get_weather",
                                        "echo",          "WebSearch",      "send-email",
                                        "log_transform", "translate_text", "query_database"};
    rein_claims_vocab *v = rein_claims_vocab_new(NULL, NULL);
    json_t *doc = json_loadb((const char *)data, size, 0, NULL), *ledger = NULL;
    json_t *fixed = json_loads("[{\"tool\":\"calculator\",\"status\":\"success\",\"args\":"
                               "{\"path\":\"result.txt\"}},{\"tool\":\"echo\",\"status\":"
                               "\"error\"}]",
                               0, NULL);
    struct rein_claims_evidence ev;
    rein_claims *claims;
    const char *name = "main";

    for (size_t i = 0; v && i < sizeof(tools) / sizeof(tools[0]); i++) {
        if (rein_claims_vocab_add(v, tools[i]) != REIN_OK)
            __builtin_trap();
    }
    if (doc && rein_claims_ledger_from_json(doc, &ledger, NULL) == REIN_OK &&
        (!json_is_array(ledger) || rein_claims_vocab_add_ledger(v, ledger) != REIN_OK))
        __builtin_trap();
    claims = rein_claims_extract((const char *)data, size, v, NULL);
    memset(&ev, 0, sizeof(ev));
    ev.ledger = ledger ? ledger : fixed;
    if (claims && rein_claims_check(claims, &ev, NULL) != REIN_OK)
        __builtin_trap();
    for (size_t i = 0; i < rein_claims_count(claims); i++) {
        const struct rein_claim *c = rein_claims_get(claims, i);
        if (!c->text || !c->subject || c->status == REIN_CLAIM_UNCHECKED ||
            (c->kind == REIN_CLAIM_FUNCTION && !c->name) || c->offset > size)
            __builtin_trap();
        if (c->name)
            name = c->name;
    }
    for (size_t i = 0; i < sizeof(langs) / sizeof(langs[0]); i++) {
        int line = 0;
        int r = rein_claims_find_function((const char *)data, size, langs[i], name, &line);
        if (r > 0 && line <= 0)
            __builtin_trap();
    }
    json_decref(rein_claims_json(claims, false));
    rein_claims_free(claims);
    rein_claims_vocab_free(v);
    json_decref(ledger);
    json_decref(doc);
    json_decref(fixed);
    return 0;
}
