/*
 * The checks of the gateway (include/rein/gateway.h): a request's tools become a registry, and
 * every call of a reply goes through the one call pipeline (rein_call_run) with check_only:
 * name check, repair to a declared name, parsing, preflight against the tool's schema. The
 * verdict, the invalid payload the model reads on a re-ask, and the repair all come from the
 * pipeline's result; nothing here validates on its own (docs/DESIGN.md, "one pipeline").
 *
 * The client's tools are run by the client, so their runner kind ("client") never runs: a call
 * checked here is handed out, not executed. Server-side tools are in the same registry so a
 * name is repaired among everything the model was offered; their calls then run through the
 * pipeline of the gateway's own registry (gateway.c).
 *
 * Compiling schemas costs more than checking a call, and an agent sends the same tools with
 * every request, so registries are cached by the tools' text (a small most-recently-used list;
 * a registry is immutable once made and shared by reference).
 */
#include "gateway/gateway_int.h"

#include <rein/schema.h>

#include <stdint.h>
#include <string.h>

static rein_err client_invoke(void *state, const struct rein_invocation *inv,
                              struct rein_tool_reply *reply, rein_error *err)
{
    (void)state;
    (void)reply;
    return rein_error_set(err, REIN_EINTERNAL,
                          "%s runs in the client: the gateway only checks calls to it",
                          rein_tool_id(inv->tool));
}

static const struct rein_runner_kind client_kind = {
    .name = "client",
    .schema = NULL,
    .open = NULL,
    .invoke = client_invoke,
    .close = NULL,
};

/* ---- the cache ---------------------------------------------------------------------------- */

static void tools_free(struct rein__gw_tools *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nclient; i++) {
        rein_free(t->client[i].name);
        rein_free(t->client[i].description);
        json_decref(t->client[i].parameters);
        json_decref(t->client[i].native);
    }
    rein_free(t->client);
    rein_free(t->wire_tools);
    rein_registry_free(t->reg);
    rein_free(t->server);
    rein_free(t->key);
    rein_free(t);
}

void rein__gw_cache_init(struct rein__gw_cache *cache)
{
    memset(cache, 0, sizeof(*cache));
    pthread_mutex_init(&cache->mu, NULL);
}

void rein__gw_cache_release(struct rein__gw_cache *cache)
{
    for (size_t i = 0; i < cache->n; i++)
        tools_free(cache->slot[i]);
    cache->n = 0;
    pthread_mutex_destroy(&cache->mu);
}

/* Takes a reference to the entry with this key, moved to the front; NULL when absent. */
static struct rein__gw_tools *cache_find(struct rein__gw_cache *cache, const char *key)
{
    struct rein__gw_tools *hit = NULL;

    pthread_mutex_lock(&cache->mu);
    for (size_t i = 0; i < cache->n; i++) {
        if (strcmp(cache->slot[i]->key, key) != 0)
            continue;
        hit = cache->slot[i];
        memmove(cache->slot + 1, cache->slot, i * sizeof(struct rein__gw_tools *));
        cache->slot[0] = hit;
        hit->refs++;
        break;
    }
    pthread_mutex_unlock(&cache->mu);
    return hit;
}

/* Puts t (one reference, the caller's) in front; an entry pushed out is freed when unused.
 * Returns the entry to use: t, or one another thread put there meanwhile (t is then freed). */
static struct rein__gw_tools *cache_add(struct rein__gw_cache *cache, struct rein__gw_tools *t)
{
    struct rein__gw_tools *out = t, *drop = NULL;

    pthread_mutex_lock(&cache->mu);
    for (size_t i = 0; i < cache->n; i++) {
        if (strcmp(cache->slot[i]->key, t->key) == 0) {
            out = cache->slot[i];
            out->refs++;
            break;
        }
    }
    if (out == t) {
        t->refs = 2; /* the cache's and the caller's */
        if (cache->n == REIN__GW_CACHE) {
            drop = cache->slot[--cache->n];
            if (--drop->refs > 0)
                drop = NULL; /* still in use: its last user frees it */
        }
        memmove(cache->slot + 1, cache->slot, cache->n * sizeof(struct rein__gw_tools *));
        cache->slot[0] = t;
        cache->n++;
    }
    pthread_mutex_unlock(&cache->mu);
    if (out != t)
        tools_free(t);
    tools_free(drop);
    return out;
}

void rein__gw_tools_put(rein_gateway *g, struct rein__gw_tools *t)
{
    bool last;

    if (!t)
        return;
    pthread_mutex_lock(&g->cache.mu);
    last = --t->refs == 0;
    pthread_mutex_unlock(&g->cache.mu);
    if (last)
        tools_free(t);
}

bool rein__gw_tools_is_server(const struct rein__gw_tools *t, const char *name)
{
    for (size_t i = 0; i < t->nserver; i++) {
        if (strcmp(rein_tool_id(t->server[i]), name) == 0)
            return true;
    }
    return false;
}

bool rein__gw_tools_is_custom(const struct rein__gw_tools *t, const char *name)
{
    for (size_t i = 0; t && i < t->nclient; i++) {
        if (t->client[i].custom && strcmp(t->client[i].name, name) == 0)
            return true;
    }
    return false;
}

/* ---- custom tools (decision 0089) ---------------------------------------------------------- */

/* The input's anchored pattern, when rein's patterns (ECMA-262 on PCRE2) take the expression:
 * the API's regular expressions are another dialect, and one rein cannot read is told to the
 * model rather than refused. */
static bool add_pattern(json_t *input, const char *definition)
{
    json_t *probe;
    rein_schema *s;
    rein_error e;
    size_t n = strlen(definition);
    char *anchored = rein_malloc(n + 8);

    if (!anchored)
        return false;
    memcpy(anchored, "^(?:", 4);
    memcpy(anchored + 4, definition, n);
    memcpy(anchored + 4 + n, ")$", 3);
    probe = json_pack("{s:s, s:s}", "type", "string", "pattern", anchored);
    rein_free(anchored);
    if (!probe)
        return false;
    s = rein_schema_compile(probe, NULL, &e);
    if (s)
        (void)json_object_set(input, "pattern", json_object_get(probe, "pattern"));
    rein_schema_free(s);
    json_decref(probe);
    return true;
}

json_t *rein__gw_custom_schema(const json_t *format, const char *param, struct rein__gw_bad *bad)
{
    const char *type = json_string_value(json_object_get(format, "type"));
    const json_t *grammar = json_object_get(format, "grammar");
    const char *syntax = json_string_value(json_object_get(grammar, "syntax"));
    const char *def = json_string_value(json_object_get(grammar, "definition"));
    json_t *input, *schema;
    char *desc = NULL;

    if (format && !json_is_null(format) &&
        (!type || (strcmp(type, "text") != 0 && strcmp(type, "grammar") != 0))) {
        rein__gw_bad(bad, param,
                     "Invalid '%s': expected {\"type\": \"text\"} or {\"type\": "
                     "\"grammar\", \"grammar\": {\"syntax\", \"definition\"}}.",
                     param);
        return NULL;
    }
    if (type && strcmp(type, "grammar") == 0 &&
        (!def || !syntax || (strcmp(syntax, "lark") != 0 && strcmp(syntax, "regex") != 0))) {
        rein__gw_bad(bad, param,
                     "Invalid '%s.grammar': expected a definition and a syntax of "
                     "'lark' or 'regex'.",
                     param);
        return NULL;
    }
    if (def)
        desc =
            rein_asprintf("The tool's whole input, written in this %s:\n%s",
                          strcmp(syntax, "lark") == 0 ? "Lark grammar" : "regular expression", def);
    input = json_pack("{s:s, s:s}", "type", "string", "description",
                      desc ? desc : "The tool's input, as free text.");
    rein_free(desc);
    if (!input || (def && strcmp(syntax, "regex") == 0 && !add_pattern(input, def))) {
        json_decref(input);
        return NULL;
    }
    schema = json_pack("{s:s, s:{s:o}, s:[s], s:b}", "type", "object", "properties", "input", input,
                       "required", "input", "additionalProperties", 0);
    return schema;
}

char *rein__gw_custom_input(const char *args)
{
    rein_error e;
    json_t *v = rein_json_parse(args, strlen(args), JSON_DECODE_ANY, &e);
    const json_t *in = json_object_get(v, "input");
    char *out = json_is_string(in) ? rein_strndup(json_string_value(in), json_string_length(in))
                                   : rein_strdup(args);

    json_decref(v);
    return out;
}

/* ---- making a registry --------------------------------------------------------------------- */

static bool name_ok(const char *name)
{
    size_t n = strlen(name);

    return n >= 1 && n <= REIN_TOOL_NAME_MAX &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

/* The client's schema as the pipeline takes it: an object schema ("type" added when absent:
 * both wires send arguments as an object). New reference, or NULL with bad set. */
static json_t *object_schema(const struct rein__gw_tool *t, const char *param,
                             struct rein__gw_bad *bad)
{
    const json_t *type = json_object_get(t->parameters, "type");
    json_t *s;

    if (!t->parameters)
        return json_pack("{s:s, s:{}}", "type", "object", "properties");
    if (type && !(json_is_string(type) && strcmp(json_string_value(type), "object") == 0)) {
        rein__gw_bad(bad, param,
                     "Invalid '%s': the schema of a tool's arguments must be of type "
                     "\"object\".",
                     param);
        return NULL;
    }
    if (type)
        return json_incref(t->parameters);
    s = json_copy(t->parameters);
    if (s && json_object_set_new(s, "type", json_string("object"))) {
        json_decref(s);
        s = NULL;
    }
    return s;
}

static rein_err add_client_tool(rein_registry *reg, const struct rein__gw_tool *t, size_t i,
                                enum rein_gateway_api api, struct rein__gw_bad *bad)
{
    bool anthropic = api == REIN_GATEWAY_ANTHROPIC;
    char param[96];
    json_t *schema, *m;
    rein_error e;
    rein_err rc;

    if (api == REIN_GATEWAY_GEMINI) /* the declarations of every tool, counted in order */
        snprintf(param, sizeof(param), "functionDeclarations[%zu].name", i);
    else if (anthropic)
        snprintf(param, sizeof(param), "tools.%zu.name", i);
    else
        snprintf(param, sizeof(param), "tools[%zu].function.name", i);
    if (!name_ok(t->name))
        return rein__gw_bad(bad, param,
                            "Invalid '%s': a tool name must be 1-64 characters of A-Z a-z 0-9 _ - "
                            "(got \"%.80s\").",
                            param, t->name);
    if (api == REIN_GATEWAY_GEMINI)
        snprintf(param, sizeof(param), "functionDeclarations[%zu].parameters", i);
    else if (anthropic)
        snprintf(param, sizeof(param), "tools.%zu.input_schema", i);
    else
        snprintf(param, sizeof(param), "tools[%zu].function.parameters", i);
    schema = object_schema(t, param, bad);
    if (!schema)
        return bad->msg[0] ? REIN_EINVAL : REIN_ENOMEM;
    m = json_pack("{s:s, s:s, s:o}", "id", t->name, "description",
                  t->description && t->description[0] ? t->description : "(no description)",
                  "parameters", schema);
    if (!m)
        return REIN_ENOMEM;
    rein_error_clear(&e);
    rc = rein_registry_add_tool(reg, m, &client_kind, NULL, &e);
    json_decref(m);
    if (rc == REIN_EEXIST)
        return rein__gw_bad(bad, param, "Invalid 'tools': two tools are named \"%s\".", t->name);
    if (rc == REIN_ESCHEMA || rc == REIN_EINVAL)
        return rein__gw_bad(bad, param, "Invalid '%s': rein cannot check calls against it: %s",
                            param, e.msg);
    return rc;
}

static rein_err add_server_tool(rein_registry *reg, const rein_tool *t, struct rein__gw_bad *bad)
{
    json_t *m = json_pack("{s:s, s:s, s:O}", "id", rein_tool_id(t), "description",
                          rein_tool_description(t), "parameters", rein_tool_parameters(t));
    rein_error e;
    rein_err rc;

    if (!m)
        return REIN_ENOMEM;
    rc = rein_registry_add_tool(reg, m, &client_kind, NULL, &e);
    json_decref(m);
    if (rc == REIN_EEXIST)
        return rein__gw_bad(bad, "tools",
                            "Invalid 'tools': \"%s\" is both one of the request's tools and a "
                            "server-side tool named in x-rein-tools.",
                            rein_tool_id(t));
    return rc;
}

/* ---- the tools' text as sent ---------------------------------------------------------- */

static size_t skip_ws(const char *s, size_t i, size_t n)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

/* Just past the string that opens at s[i] ('"'); 0 when it does not end. A quote ends it
 * unless an odd run of backslashes stands before it; found with memchr, as most of a body's
 * bytes are in strings. */
static size_t skip_string(const char *s, size_t i, size_t n)
{
    size_t from = i + 1;

    for (i = from; i < n;) {
        const char *q = memchr(s + i, '"', n - i);
        size_t at, k;
        if (!q)
            return 0;
        at = (size_t)(q - s);
        for (k = at; k > from && s[k - 1] == '\\';)
            k--;
        if ((at - k) % 2 == 0)
            return at + 1;
        i = at + 1;
    }
    return 0;
}

/* Just past the value that starts at s[i]; 0 when it does not end. */
static size_t skip_value(const char *s, size_t i, size_t n)
{
    size_t depth = 0;

    if (i >= n)
        return 0;
    if (s[i] != '"' && s[i] != '{' && s[i] != '[') {
        while (i < n && !memchr(",}] \t\r\n", s[i], 7))
            i++;
        return i;
    }
    while (i < n) {
        if (s[i] == '"') {
            i = skip_string(s, i, n);
            if (!i || !depth)
                return i;
            continue;
        }
        if (s[i] == '{' || s[i] == '[') {
            depth++;
        } else if (s[i] == '}' || s[i] == ']') {
            if (depth == 0)
                return 0;
            if (--depth == 0)
                return i + 1;
        }
        i++;
    }
    return 0;
}

bool rein__gw_raw_member(const char *s, size_t n, const char *name, const char **out,
                         size_t *out_len)
{
    size_t nlen = strlen(name), i = skip_ws(s, 0, n), k, end, at = 0, len = 0;
    bool found = false, match;

    if (i >= n || s[i] != '{')
        return false;
    i = skip_ws(s, i + 1, n);
    while (i < n && s[i] == '"') {
        k = i + 1;
        i = skip_string(s, i, n);
        if (!i)
            return false;
        /* Compared as written: a name spelt with escapes is not found (the caller falls back
         * to the parsed value; the parser refused a name given twice). */
        match = i - 1 - k == nlen && memcmp(s + k, name, nlen) == 0;
        i = skip_ws(s, i, n);
        if (i >= n || s[i] != ':')
            return false;
        i = skip_ws(s, i + 1, n);
        end = skip_value(s, i, n);
        if (!end || (match && found))
            return false;
        if (match) {
            found = true;
            at = i;
            len = end - i;
        }
        i = skip_ws(s, end, n);
        if (i < n && s[i] == ',') {
            i = skip_ws(s, i + 1, n);
            continue;
        }
        if (!found || i >= n || s[i] != '}')
            return false;
        *out = s + at;
        *out_len = len;
        return true;
    }
    return false;
}

/* The key's head: the wire and the server-side tools. */
static rein_err key_head(struct rein_buf *b, enum rein_gateway_api api,
                         const rein_tool *const *server, size_t nserver)
{
    rein_err rc = rein_buf_adds(b, api == REIN_GATEWAY_ANTHROPIC ? "a:"
                                   : api == REIN_GATEWAY_GEMINI  ? "g:"
                                                                 : "o:");

    for (size_t i = 0; !rc && i < nserver; i++)
        rc = rein_buf_addf(b, "%s,", rein_tool_id(server[i]));
    return rc ? rc : rein_buf_addch(b, '\n');
}

/*
 * The cache key: the server-side tools, then the tools as sent. The tools' own bytes when
 * they can be found in the body (most requests): writing the parsed array out again was a
 * twentieth of the gateway's instructions per request (bench/gateway.sh). Equal bytes are
 * an equal array; a key written out from the parsed array is the text of an equal array too,
 * so the two kinds of key never name different tools.
 */
static char *tools_key(const struct rein__gw_req *r, const rein_tool *const *server, size_t nserver)
{
    struct rein_buf b;
    rein_err rc;

    rein_buf_init(&b, 0);
    rc = key_head(&b, r->api, server, nserver);
    /* The key is compared as a C string: bytes with a NUL (which no JSON text the parser
     * accepted has) would end it early. */
    if (!rc && r->tools_raw && !memchr(r->tools_raw, '\0', r->tools_raw_len))
        rc = rein_buf_add(&b, r->tools_raw, r->tools_raw_len);
    else if (!rc && r->tools_json)
        rc = rein_json_dump(&b, r->tools_json);
    if (rc) {
        rein_buf_release(&b);
        return NULL;
    }
    return rein_buf_detach(&b, NULL);
}

void rein__gw_tools_find(rein_gateway *g, struct rein__gw_req *r, const char *body, size_t len,
                         const rein_tool *const *server, size_t nserver,
                         struct rein__gw_tools **out)
{
    const char *raw;
    size_t n;
    struct rein_buf b;

    *out = NULL;
    /* Only an array can be an entry's: the parser refuses any other tools but null, which
     * makes no entry of its own bytes. */
    if (!rein__gw_raw_member(body, len, "tools", &raw, &n) || raw[0] != '[' || memchr(raw, '\0', n))
        return;
    rein_buf_init(&b, 0);
    if (rein_buf_grow(&b, n + 64) == REIN_OK && key_head(&b, r->api, server, nserver) == REIN_OK &&
        rein_buf_add(&b, raw, n) == REIN_OK)
        *out = cache_find(&g->cache, b.ptr);
    rein_buf_release(&b);
    if (!*out)
        return;
    r->tools_raw = raw;
    r->tools_raw_len = n;
    r->tools_known = true;
}

/* True when n bytes of p hold a byte outside ASCII. */
static bool wide(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)p[i] >= 0x80)
            return true;
    }
    return false;
}

/*
 * Makes s[from..end) (the inside of the tools' array, valid JSON) the inside of an array that
 * spans as many lines and columns: whitespace stays, strings that hold characters outside
 * ASCII stay (a column is a character, not a byte) with a comma before each but the first,
 * every other byte (ASCII, outside or inside a string) becomes a space.
 */
static void blank_inside(char *s, size_t from, size_t end)
{
    size_t gap = SIZE_MAX; /* a blanked byte since the last kept string, for its comma */
    bool kept = false;

    for (size_t i = from; i < end;) {
        size_t next;
        if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
            i++;
            continue;
        }
        if (s[i] == '"') {
            next = skip_string(s, i, end);
            if (next && wide(s + i, next - i)) {
                /* Two strings always have a ':' or ',' between them: gap is set. */
                if (kept && gap != SIZE_MAX)
                    s[gap] = ',';
                kept = true;
                gap = SIZE_MAX;
                i = next;
                continue;
            }
            next = next ? next : end;
        } else {
            next = i + 1;
        }
        if (gap == SIZE_MAX)
            gap = i;
        memset(s + i, ' ', next - i);
        i = next;
    }
}

static const char *parse_text(const struct rein__gw_req *r, const char *body, size_t len,
                              char **copy)
{
    size_t at;
    char *s;

    *copy = NULL;
    if (!r->tools_known)
        return body;
    /* The bytes are a JSON array found in body: at least "[]", and body holds them. */
    at = (size_t)(r->tools_raw - body);
    s = rein_malloc(len + 1);
    if (!s)
        return NULL;
    memcpy(s, body, len);
    s[len] = '\0';
    /* An array as long as the tools, over the same lines and columns: a parse error after it
     * is reported at the same line and column. */
    blank_inside(s, at + 1, at + r->tools_raw_len - 1);
    *copy = s;
    return s;
}

rein_err rein__gw_collect(json_t **obj, const struct rein_doc_node *k,
                          const struct rein_doc_node *v)
{
    if (!*obj && !(*obj = json_object()))
        return REIN_ENOMEM;
    return json_object_setn_new(*obj, k->u.str, k->n, rein_doc_node_tree(v)) ? REIN_ENOMEM
                                                                             : REIN_OK;
}

bool rein__gw_listed(const char *const *list, const char *key, size_t n)
{
    for (size_t i = 0; list[i]; i++) {
        if (strncmp(list[i], key, n) == 0 && list[i][n] == '\0')
            return true;
    }
    return false;
}

bool rein__gw_unlist(json_t *list, const char *name)
{
    size_t i;
    json_t *v;

    json_array_foreach(list, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), name) == 0) {
            (void)json_array_remove(list, i);
            return true;
        }
    }
    return false;
}

rein_err rein__gw_rest(struct rein__gw_req *r, const char *key, json_t *v, const char *name,
                       bool droppable)
{
    if (json_object_set(r->passthrough, key, v) ||
        json_array_append_new(droppable ? r->dropped : r->unsupported, json_string(name)))
        return REIN_ENOMEM;
    return REIN_OK;
}

int rein__gw_members(const struct rein_doc_node *root, const char *const *keys,
                     const struct rein_doc_node **found, const char *const *handled, json_t **opts,
                     json_t **rest)
{
    const struct rein_doc_node *k = root + 1;
    int rc = REIN_OK;

    for (uint32_t j = 0; !rc && j < root->n; j++, k = rein_doc_next(k + 1)) {
        size_t i = 0;

        if (rein__gw_node_has_nul(k))
            return REIN__GW_DECLINED;
        while (keys[i] && !(strncmp(keys[i], k->u.str, k->n) == 0 && keys[i][k->n] == '\0'))
            i++;
        if (keys[i])
            found[i] = k + 1;
        else
            rc = rein__gw_collect(rein__gw_listed(handled, k->u.str, k->n) ? opts : rest, k, k + 1);
    }
    return rc;
}

const char *rein__gw_doc_text(const struct rein__gw_req *r, const char *body, size_t *len,
                              char *stack, size_t size, char **heap)
{
    size_t at, n;
    char *s;

    *heap = NULL;
    if (!r->tools_known)
        return body;
    at = (size_t)(r->tools_raw - body);
    n = *len - r->tools_raw_len + 2;
    s = n <= size ? stack : (*heap = rein_malloc(n));
    if (!s)
        return NULL;
    memcpy(s, body, at);
    memcpy(s + at, "[]", 2);
    memcpy(s + at + 2, r->tools_raw + r->tools_raw_len, *len - at - r->tools_raw_len);
    *len = n;
    return s;
}

void rein__gw_req_restart(struct rein__gw_req *r, struct rein__gw_bad *bad)
{
    enum rein_gateway_api api = r->api;
    const char *raw = r->tools_known ? r->tools_raw : NULL;
    size_t raw_len = r->tools_raw_len;
    bool known = r->tools_known, verbatim = r->verbatim, count = r->count;
    bool tool_media = r->tool_media;
    const rein_provider *upstream = r->upstream;

    rein__gw_req_release(r);
    rein__gw_req_init(r, api);
    r->verbatim = verbatim;
    r->count = count;
    r->tool_media = tool_media;
    r->upstream = upstream;
    r->tools_known = known;
    r->tools_raw = raw;
    r->tools_raw_len = raw ? raw_len : 0;
    memset(bad, 0, sizeof(*bad));
}

json_t *rein__gw_parse_doc(const struct rein__gw_req *r, const char *body, size_t len,
                           rein_error *err)
{
    char *copy;
    const char *text = parse_text(r, body, len, &copy);
    json_t *doc;

    if (!text) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    doc = rein_json_parse(text, len, JSON_REJECT_DUPLICATES, err);
    rein_free(copy);
    return doc;
}

/* Copies of the client's tools for the upstream request (parameters deep: the request's
 * tree goes away with it, and an entry is read by other threads). */
static rein_err keep_decls(struct rein__gw_tools *t, const struct rein__gw_req *r)
{
    if (!r->ntools)
        return REIN_OK;
    t->client = rein_calloc(r->ntools, sizeof(*t->client));
    if (!t->client)
        return REIN_ENOMEM;
    for (size_t i = 0; i < r->ntools; i++) {
        struct rein__gw_decl *d = &t->client[t->nclient++];
        d->name = rein_strdup(r->tools[i].name);
        d->description = r->tools[i].description ? rein_strdup(r->tools[i].description) : NULL;
        d->parameters = r->tools[i].parameters ? json_deep_copy(r->tools[i].parameters) : NULL;
        d->custom = r->tools[i].custom;
        d->native = r->tools[i].native ? json_deep_copy(r->tools[i].native) : NULL;
        if (!d->name || (r->tools[i].description && !d->description) ||
            (r->tools[i].parameters && !d->parameters) || (r->tools[i].native && !d->native))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

/* A server-side tool as the client's wire declares one. */
static json_t *wire_decl(const rein_tool *tool, bool anthropic)
{
    const char *desc = rein_tool_description(tool);
    json_t *params = json_deep_copy(rein_tool_parameters(tool));
    json_t *d = json_object();

    if (!params)
        params = json_pack("{s:s, s:{}}", "type", "object", "properties");
    if (!d || !params || json_object_set_new(d, "name", json_string(rein_tool_id(tool))) ||
        (desc && json_object_set_new(d, "description", json_string(desc))) ||
        json_object_set_new(d, anthropic ? "input_schema" : "parameters", json_incref(params))) {
        json_decref(d);
        json_decref(params);
        return NULL;
    }
    json_decref(params);
    if (anthropic)
        return d;
    return json_pack("{s:s, s:o}", "type", "function", "function", d);
}

/* The list for an upstream of the client's wire: the client's tools as sent (a copy: the
 * entry outlives the request and is read by other threads), then the server-side ones. */
static rein_err keep_wire_tools(struct rein__gw_tools *t, const struct rein__gw_req *r,
                                const rein_tool *const *server, size_t nserver)
{
    json_t *list;
    struct rein_buf b;
    rein_err rc;

    /* An empty list goes as before (left out): OpenAI refuses "tools": []. */
    if (!r->verbatim || !json_array_size(r->tools_json))
        return REIN_OK;
    list = json_copy(r->tools_json); /* shallow: only its text is kept */
    for (size_t i = 0; list && i < nserver; i++) {
        if (json_array_append_new(list, wire_decl(server[i], r->api == REIN_GATEWAY_ANTHROPIC))) {
            json_decref(list);
            list = NULL;
        }
    }
    if (!list)
        return REIN_ENOMEM;
    rein_buf_init(&b, 0);
    rc = rein_json_dump(&b, list);
    json_decref(list);
    if (!rc && !(t->wire_tools = rein_buf_detach(&b, &t->wire_tools_len)))
        rc = REIN_ENOMEM;
    rein_buf_release(&b);
    return rc;
}

static rein_err tools_make(const struct rein__gw_req *r, const rein_tool *const *server,
                           size_t nserver, char *key, struct rein__gw_tools **out,
                           struct rein__gw_bad *bad)
{
    struct rein__gw_tools *t = rein_calloc(1, sizeof(*t));
    rein_error e;
    rein_err rc = REIN_OK;

    *out = NULL;
    if (!t) {
        rein_free(key);
        return REIN_ENOMEM;
    }
    t->key = key;
    t->reg = rein_registry_new(&e);
    t->server = rein_calloc(nserver + 1, sizeof(const rein_tool *));
    if (!t->reg || !t->server)
        rc = REIN_ENOMEM;
    for (size_t i = 0; !rc && i < r->ntools; i++)
        rc = add_client_tool(t->reg, &r->tools[i], i, r->api, bad);
    if (!rc)
        rc = keep_decls(t, r);
    if (!rc)
        rc = keep_wire_tools(t, r, server, nserver);
    for (size_t i = 0; !rc && i < nserver; i++) {
        rc = add_server_tool(t->reg, server[i], bad);
        t->server[t->nserver++] = server[i];
    }
    if (rc) {
        tools_free(t);
        return rc;
    }
    *out = t;
    return REIN_OK;
}

rein_err rein__gw_tools_get(rein_gateway *g, const struct rein__gw_req *r,
                            const rein_tool *const *server, size_t nserver,
                            struct rein__gw_tools **out, struct rein__gw_bad *bad)
{
    char *key = tools_key(r, server, nserver);
    struct rein__gw_tools *t;
    rein_err rc;

    *out = NULL;
    if (!key)
        return REIN_ENOMEM;
    t = cache_find(&g->cache, key);
    if (t) {
        rein_free(key);
        *out = t;
        return REIN_OK;
    }
    rc = tools_make(r, server, nserver, key, &t, bad);
    if (rc)
        return rc;
    *out = cache_add(&g->cache, t);
    return REIN_OK;
}

/* ---- checking one call --------------------------------------------------------------------- */

/* An id the answer has not used and the history does not hold (a copy), recorded as used. */
static char *unique_id(struct rein__gw_ctx *c, const char *id, bool *changed)
{
    char made[REIN_ID_MAX];

    *changed = false;
    if (!id[0] || json_object_get(c->seen_ids, id)) {
        rein_id_new(c->wire->id_prefix, made);
        id = made;
        *changed = true;
    }
    if (json_object_set_new(c->seen_ids, id, json_true()))
        return NULL;
    return rein_strdup(id);
}

static rein_err grow_round(struct rein__gw_ctx *c)
{
    struct rein__gw_round_call *n;
    size_t cap;

    if (c->nrc < c->rc_cap)
        return REIN_OK;
    cap = c->rc_cap ? c->rc_cap * 2 : 8;
    n = rein_realloc(c->rc, cap * sizeof(*n));
    if (!n)
        return REIN_ENOMEM;
    c->rc = n;
    c->rc_cap = cap;
    return REIN_OK;
}

rein_err rein__gw_check(struct rein__gw_ctx *c, const rein_model_call *call, size_t *out)
{
    const char *raw = rein_model_call_raw_arguments(call);
    const char *name = rein_model_call_name(call);
    struct rein_call_input in = {
        .call_id = rein_model_call_id(call),
        .name = name,
        .args_text = raw,
        .args_len = strlen(raw),
        .trace_id = c->trace_id,
        /* The decoder parsed the arguments already: the check reads that document instead
         * of parsing the text again, unless the value is wanted afterwards (defaults filled
         * in, which needs rein_call_result_args). */
        .args_doc = c->o.fill_defaults ? NULL : rein_model_call_document(call),
    };
    struct rein_call_opts o = {.check_only = true};
    struct rein__gw_round_call *rc;
    rein_call_result *res = NULL;
    rein_error err;
    bool changed;

    if (grow_round(c) != REIN_OK)
        return REIN_ENOMEM;
    rein_error_clear(&err);
    if (rein_call_run(c->tools->reg, &in, &o, &res, &err) != REIN_OK)
        return REIN_ENOMEM;
    rc = &c->rc[c->nrc];
    memset(rc, 0, sizeof(*rc));
    rc->res = res;
    rc->from_text = rein_model_call_from_text(call);
    if (!rein_call_result_ok(res))
        rc->verdict = REIN__GW_INVALID;
    else if (rein__gw_tools_is_server(c->tools, rein_call_result_tool_name(res)))
        rc->verdict = REIN__GW_SERVER;
    else
        rc->verdict = REIN__GW_VALID;
    rc->name = rein_strdup(rein_call_result_ok(res) ? rein_call_result_tool_name(res) : name);
    rc->id = unique_id(c, rein_model_call_id(call), &changed);
    if (rc->verdict == REIN__GW_VALID && c->o.fill_defaults && rein_call_result_args(res))
        rc->args = rein_json_dumps(rein_call_result_args(res));
    else
        rc->args = rein_strdup(raw[0] ? raw : "{}");
    c->nrc++;
    if (!rc->name || !rc->id || !rc->args)
        return REIN_ENOMEM;
    if (changed) {
        json_t *r = json_pack("{s:s, s:s}", "from", rein_model_call_id(call), "to", rc->id);
        if (!c->renamed)
            c->renamed = json_array();
        if (!r || !c->renamed || json_array_append_new(c->renamed, r))
            return REIN_ENOMEM;
    }
    *out = c->nrc - 1;
    return REIN_OK;
}

rein_err rein__gw_append(struct rein__gw_req *r, bool own, json_t *msg, const char *param,
                         struct rein__gw_bad *bad)
{
    rein_error e;
    rein_err rc;

    if (!msg)
        return REIN_ENOMEM;
    rein_error_clear(&e);
    rc = own ? rein_history_append_shared(r->h, msg, &e) : rein_history_append(r->h, msg, &e);
    json_decref(msg);
    return rc == REIN_EINVAL ? rein__gw_bad(bad, param, "%s: %s", param, e.msg) : rc;
}

json_t *rein__gw_text_msg(const char *role, const char *text, size_t len)
{
    json_t *msg = json_object();

    if (msg && (json_object_set_new(msg, "role", json_string(role)) ||
                json_object_set_new(msg, "content", json_stringn(text, len)))) {
        json_decref(msg);
        return NULL;
    }
    return msg;
}

bool rein__gw_args_object(const char *args, size_t n)
{
    size_t i = 0;

    while (i < n && (args[i] == ' ' || args[i] == '\t' || args[i] == '\n' || args[i] == '\r'))
        i++;
    return i < n && args[i] == '{' && rein_json_check(args, n, NULL) == REIN_OK;
}
