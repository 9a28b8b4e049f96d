/*
 * The stateless MCP revision (2026-07-28) at the edges: which requests speak it (their
 * params._meta names the protocol version; there is no initialize), and the checks its
 * Streamable HTTP binding asks of a server: the MCP-Protocol-Version, Mcp-Method and Mcp-Name
 * headers must be present and equal to the body's values, Mcp-Name possibly in the base64
 * sentinel form "=?base64?...?=". The header decoder reads bytes a client chose; it is fuzzed
 * by fuzz/mcp_headers.c.
 */
#include "mcp/mcp_int.h"

#include <stdio.h>
#include <string.h>

#define SENTINEL_OPEN  "=?base64?"
#define SENTINEL_CLOSE "?="

bool rein__mcp_version_modern(const char *version)
{
    return version && strcmp(version, REIN__MCP_MODERN) == 0;
}

const char *rein__mcp_request_version(const struct rein__mcp_msg *msg)
{
    const json_t *meta = json_object_get(msg->params, "_meta");
    const json_t *v = json_object_get(meta, REIN__MCP_META_VERSION);

    if (!v)
        return NULL;
    /* Present but not a string: still a request of the stateless revisions, with a version
     * no server supports, so the client hears which ones are. */
    return json_is_string(v) ? json_string_value(v) : "";
}

/* Decodes base64 into a new NUL-terminated string; NULL when the text is not base64 or the
 * bytes hold a NUL. */
static char *b64_decode(const char *p, size_t len)
{
    size_t n;
    char *out = rein__base64_decode(p, len, &n);

    if (out && strlen(out) != n) {
        rein_free(out);
        return NULL;
    }
    return out;
}

char *rein__mcp_header_decode(const char *value)
{
    size_t len, open = strlen(SENTINEL_OPEN), close = strlen(SENTINEL_CLOSE);

    /* Whitespace around a field value is not part of it (RFC 9110, 5.5). */
    while (*value == ' ' || *value == '\t')
        value++;
    len = strlen(value);
    while (len && (value[len - 1] == ' ' || value[len - 1] == '\t'))
        len--;

    if (len >= open + close && memcmp(value, SENTINEL_OPEN, open) == 0 &&
        memcmp(value + len - close, SENTINEL_CLOSE, close) == 0)
        return b64_decode(value + open, len - open - close);
    /* A plain value: visible ASCII, spaces and tabs (RFC 9110), nothing else. */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)value[i];
        if (c != '\t' && (c < 0x20 || c > 0x7e))
            return NULL;
    }
    return rein_strndup(value, len);
}

bool rein__mcp_is_legacy_initialize(const struct rein__mcp_msg *msg)
{
    /* initialize is gone from 2026-07-28: one that names only a _meta version is a stateless
     * request for a method that does not exist; with protocolVersion it opens a session. */
    return msg->kind == REIN__MCP_REQUEST && strcmp(msg->method, "initialize") == 0 &&
           (json_object_get(msg->params, "protocolVersion") || !rein__mcp_request_version(msg));
}

bool rein__mcp_check_meta(const struct rein__mcp_msg *msg, char *why, size_t why_size)
{
    const json_t *meta = json_object_get(msg->params, "_meta");
    const json_t *level = json_object_get(meta, REIN__MCP_META_LEVEL);

    if (!json_is_string(json_object_get(meta, REIN__MCP_META_VERSION))) {
        snprintf(why, why_size,
                 "params._meta needs %s, the protocol version as a string (\"%s\"): requests "
                 "without a session carry it",
                 REIN__MCP_META_VERSION, REIN__MCP_MODERN);
        return false;
    }
    if (!json_is_object(json_object_get(meta, REIN__MCP_META_CAPS))) {
        snprintf(why, why_size, "params._meta needs %s, an object ({} when the client offers none)",
                 REIN__MCP_META_CAPS);
        return false;
    }
    if (level && rein__mcp_level_index(json_string_value(level)) < 0) {
        snprintf(why, why_size,
                 "params._meta's %s must be one of debug, info, notice, warning, error, "
                 "critical, alert, emergency",
                 REIN__MCP_META_LEVEL);
        return false;
    }
    return true;
}

/* The body value Mcp-Name mirrors, or NULL when the method has none. */
static const char *name_source(const struct rein__mcp_msg *msg)
{
    if (strcmp(msg->method, "tools/call") == 0 || strcmp(msg->method, "prompts/get") == 0)
        return json_string_value(json_object_get(msg->params, "name"));
    if (strcmp(msg->method, "resources/read") == 0)
        return json_string_value(json_object_get(msg->params, "uri"));
    return NULL;
}

bool rein__mcp_check_headers(const struct rein__mcp_msg *msg, const char *version,
                             const char *version_header, const char *method_header,
                             const char *name_header, char *why, size_t why_size)
{
    const char *name = name_source(msg);
    char *decoded;
    bool same;

    if (!version_header || !method_header) {
        snprintf(why, why_size, "Header mismatch: the %s header is missing",
                 version_header ? "Mcp-Method" : "MCP-Protocol-Version");
        return false;
    }
    if (strcmp(version_header, version) != 0) {
        snprintf(why, why_size,
                 "Header mismatch: MCP-Protocol-Version '%.40s' does not match the body's _meta "
                 "protocol version '%.40s'",
                 version_header, version);
        return false;
    }
    if (strcmp(method_header, msg->method) != 0) {
        snprintf(why, why_size, "Header mismatch: Mcp-Method '%.60s' does not match method '%.60s'",
                 method_header, msg->method);
        return false;
    }
    if (!name)
        return true; /* no name in the body: the method's own check answers */
    if (!name_header) {
        snprintf(why, why_size, "Header mismatch: %s needs the Mcp-Name header ('%.100s')",
                 msg->method, name);
        return false;
    }
    decoded = rein__mcp_header_decode(name_header);
    same = decoded && strcmp(decoded, name) == 0;
    if (!same)
        snprintf(why, why_size,
                 decoded ? "Header mismatch: Mcp-Name '%.100s' does not match the body's '%.100s'"
                         : "Header mismatch: Mcp-Name '%.100s' is not a valid header value (body: "
                           "'%.100s')",
                 decoded ? decoded : name_header, name);
    rein_free(decoded);
    return same;
}

/* The text a header carries for value (a new string), or NULL for a value no header mirrors
 * (objects, arrays, null). */
static char *header_text(const json_t *v)
{
    if (json_is_string(v))
        return rein_strdup(json_string_value(v));
    if (json_is_integer(v))
        return rein_asprintf("%lld", (long long)json_integer_value(v));
    if (json_is_boolean(v))
        return rein_strdup(json_is_true(v) ? "true" : "false");
    if (json_is_real(v))
        return rein_json_dumps(v);
    return NULL;
}

bool rein__mcp_check_param_headers(const json_t *schema, const json_t *args,
                                   const char *(*header)(void *ud, const char *name), void *ud,
                                   char *why, size_t why_size)
{
    const json_t *props = json_object_get(schema, "properties"), *p;
    const char *key;

    json_object_foreach((json_t *)props, key, p)
    {
        const char *name = json_string_value(json_object_get(p, "x-mcp-header"));
        const json_t *v = json_object_get(args, key);
        char hname[160], *want, *got;
        const char *raw;
        bool same;

        if (!name || !name[0] || strlen(name) > 100 ||
            strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") !=
                strlen(name))
            continue; /* not a header name: nothing can be mirrored */
        snprintf(hname, sizeof(hname), "Mcp-Param-%s", name);
        raw = header(ud, hname);
        want = v ? header_text(v) : NULL;
        if (v && !want && !raw)
            continue;
        if (!raw || !want) {
            snprintf(why, why_size,
                     raw ? "Header mismatch: %s is given but the argument '%.100s' is not"
                         : "Header mismatch: the argument '%.100s' needs the %s header",
                     raw ? hname : key, raw ? key : hname);
            rein_free(want);
            return false;
        }
        got = rein__mcp_header_decode(raw);
        same = got && strcmp(got, want) == 0;
        if (!same)
            snprintf(why, why_size,
                     got ? "Header mismatch: %s '%.100s' does not match the argument '%.60s'"
                         : "Header mismatch: %s '%.100s' is not a valid header value (argument "
                           "'%.60s')",
                     hname, got ? got : raw, key);
        rein_free(got);
        rein_free(want);
        if (!same)
            return false;
    }
    return true;
}
