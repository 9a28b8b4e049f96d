/*
 * Fuzz target: the requestState a stateless client sends back with a retry
 * (rein__mcp_state_open in src/mcp/request_state.c). Whatever the text, it is refused with a
 * reason, or it is a state the key sealed: a fixed key's own states open, with their answers,
 * and the same state under another key never does.
 */
#include <rein/rein.h>

#include "mcp/mcp_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t key[32] = {1, 2, 3}, other[32] = {3, 2, 1};
    char *text = malloc(size + 1), why[300] = "";
    json_t *args = json_object(), *answers = NULL;

    if (!text || !args)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    if (rein__mcp_state_open(key, text, "t", args, &answers, why, sizeof(why)) == REIN_OK) {
        if (!json_is_object(answers))
            abort();
        /* A state that opens was sealed under key: it must not open under another. */
        json_t *again = NULL;
        if (rein__mcp_state_open(other, text, "t", args, &again, why, sizeof(why)) == REIN_OK)
            abort();
        json_decref(answers);
    } else if (answers || !why[0]) {
        abort();
    }
    /* The text as answers round-trips through a seal. */
    json_t *given = json_pack("{s:s%}", "k", text, size);
    char *sealed = given ? rein__mcp_state_seal(key, "t", args, given) : NULL;
    if (sealed) {
        if (rein__mcp_state_open(key, sealed, "t", args, &answers, why, sizeof(why)) != REIN_OK ||
            !json_equal(answers, given))
            abort();
        json_decref(answers);
        rein_free(sealed);
    }
    json_decref(given);
    json_decref(args);
    free(text);
    return 0;
}
