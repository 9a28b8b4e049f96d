/*
 * Fuzz target: the header values of a 2026-07-28 request (src/mcp/modern.c), which any HTTP
 * client chooses: Mcp-Name and Mcp-Param-* as plain text or in the base64 sentinel form. The
 * input is split at its first newline into a header value and a name the body carries. A value
 * decodes to a NUL-free string or is refused; a plain value decodes to itself; and the checks
 * of a tools/call's headers (Mcp-Name, and Mcp-Param-* for an argument declaring x-mcp-header)
 * agree with comparing the decoded value to the body's.
 */
#include <rein/rein.h>

#include "mcp/mcp_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *header_of(void *ud, const char *name)
{
    return strcmp(name, "Mcp-Param-A") == 0 ? ud : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text, *nl, *value, *decoded;
    struct rein__mcp_msg m;
    json_t *doc, *schema, *args;
    char why[512];
    bool ok;

    if (size > 1 << 16)
        return 0;
    text = rein_strndup((const char *)data, size);
    if (!text)
        return 0;
    nl = strchr(text, '\n');
    if (nl)
        *nl = '\0';
    value = text;
    decoded = rein__mcp_header_decode(value);
    if (decoded && strncmp(value, "=?base64?", 9) != 0 && strcmp(decoded, value) != 0)
        abort(); /* a plain value is itself */
    doc = nl ? json_pack("{s:s, s:i, s:s, s:{s:s, s:{s:s}}}", "jsonrpc", "2.0", "id", 1, "method",
                         "tools/call", "params", "name", nl + 1, "_meta", REIN__MCP_META_VERSION,
                         REIN__MCP_MODERN)
             : NULL;
    if (doc) {
        char *body = json_dumps(doc, JSON_COMPACT);
        if (body && rein__mcp_decode(body, strlen(body), 0, &m, NULL, NULL) == REIN_OK) {
            ok = rein__mcp_check_headers(&m, REIN__MCP_MODERN, REIN__MCP_MODERN, "tools/call",
                                         value, why, sizeof(why));
            if (ok != (decoded && strcmp(decoded, nl + 1) == 0))
                abort();
            rein__mcp_msg_release(&m);
        }
        free(body);
        json_decref(doc);
    }
    /* The same value as an Mcp-Param-* header mirroring a string argument. */
    schema =
        json_pack("{s:{s:{s:s, s:s}}}", "properties", "a", "type", "string", "x-mcp-header", "A");
    args = nl ? json_pack("{s:s}", "a", nl + 1) : NULL;
    if (schema && args) {
        ok = rein__mcp_check_param_headers(schema, args, header_of, value, why, sizeof(why));
        if (ok != (decoded && strcmp(decoded, nl + 1) == 0))
            abort();
    }
    json_decref(schema);
    json_decref(args);
    rein_free(decoded);
    rein_free(text);
    return 0;
}
