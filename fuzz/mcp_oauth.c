/*
 * Fuzz target: what OAuth servers send rein's MCP client (src/mcp/oauth_parse.c). The first
 * byte picks the parser: a WWW-Authenticate value, one of the metadata documents (protected
 * resource, authorization server, client registration, token response, token error, token
 * exchange response), or the
 * query of the loopback redirect. A challenge that parses keeps no member with a NUL or a
 * control byte it did not get quoted; a document that parses is an object; a decoded query
 * value holds no NUL and fits its buffer.
 */
#include <rein/rein.h>

#include "mcp/oauth_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rein__oauth_challenge ch;
    const char *text = (const char *)data + 1;
    size_t len = size ? size - 1 : 0;
    char *q, out[256];
    json_t *doc = NULL;

    if (size == 0 || size > 1 << 16)
        return 0;
    switch (data[0] % 9) {
    case 0:
        if (rein__oauth_challenge_parse(text, len, &ch) == REIN_OK) {
            const char *members[] = {ch.resource_metadata, ch.scope, ch.error};
            for (size_t i = 0; i < 3; i++)
                if (members[i] && strlen(members[i]) > len)
                    abort();
            rein__oauth_challenge_release(&ch);
        }
        break;
    case 7:
    case 8:
        q = rein_strndup(text, len);
        if (!q)
            return 0;
        if (rein__oauth_query_get(q, data[0] % 2 ? "code" : "state", out, sizeof(out)) &&
            strlen(out) >= sizeof(out))
            abort();
        rein_free(q);
        break;
    default:
        if (rein__oauth_doc_parse((enum rein__oauth_doc)(data[0] % 9 - 1), text, len, &doc, NULL) ==
                REIN_OK &&
            !json_is_object(doc))
            abort();
        json_decref(doc);
        break;
    }
    return 0;
}
