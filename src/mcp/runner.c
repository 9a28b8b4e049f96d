/*
 * The tools of MCP servers in rein's registry: the runner kind "mcp", the set of configured
 * servers (rein_mcp_clients), and the rule that names their tools.
 *
 * Naming (docs/decisions/0007-mcp-module.md). An MCP tool joins as
 *     <server>__<tool>
 * where <server> is the configuration's name for the server cut to 24 bytes, and both parts
 * have every byte outside [A-Za-z0-9_-] replaced by '_'. When that id is taken twice (by two
 * servers' tools, two tools whose names differ only in replaced bytes, or a built-in or skill
 * tool) or is longer than 64 bytes, every tool that would get it is named instead
 *     <first 55 bytes of the id>_<8 hex digits of FNV-1a-32 of "server\0tool">
 * Built-in and skill tools keep their names. The rule looks at the whole set at once and
 * depends only on server names and tool names, never on the order in which servers were
 * configured or answered. The original name is what goes on the wire (runner.tool).
 *
 * A tool's manifest comes from its MCP definition: description (else title, else a sentence
 * naming the server), inputSchema as the parameter schema (so preflight checks arguments
 * against the server's own schema before anything is sent), readOnlyHint, destructiveHint
 * (true unless the tool is read-only or says false, as MCP defines the default),
 * idempotentHint, openWorldHint and title, and the server's timeout_ms.
 */
#include "mcp/mcp_int.h"

#include <rein/pool.h>

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SERVER_PART_MAX 24
#define HASHED_PREFIX   55

/* ---- the runner kind -------------------------------------------------------------------- */

struct tool_state {
    struct rein__mcp_conn *conn; /* a reference */
    char *tool;                  /* the MCP name */
};

static void runner_close(void *state)
{
    struct tool_state *st = state;

    if (!st)
        return;
    rein__mcp_conn_unref(st->conn);
    rein_free(st->tool);
    rein_free(st);
}

static struct tool_state *state_new(struct rein__mcp_conn *conn, const char *tool)
{
    struct tool_state *st = rein_calloc(1, sizeof(*st));

    if (!st)
        return NULL;
    st->tool = rein_strdup(tool);
    if (!st->tool) {
        rein_free(st);
        return NULL;
    }
    st->conn = rein__mcp_conn_ref(conn);
    return st;
}

/* A manifest's own server: {"kind": "mcp", "tool", "command" | "url", ...}. */
static rein_err runner_open(const json_t *runner, const char *base_dir, void **state,
                            rein_error *err)
{
    const char *tool = json_string_value(json_object_get(runner, "tool"));
    const char *name = json_string_value(json_object_get(runner, "server"));
    struct rein__mcp_conn_config *cfg = NULL;
    struct rein__mcp_conn *conn;
    json_t *entry = json_deep_copy(runner);
    rein_err rc;

    *state = NULL;
    if (!entry)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    json_object_del(entry, "kind");
    json_object_del(entry, "tool");
    json_object_del(entry, "server");
    rc = rein__mcp_conn_config_parse(name ? name : tool, entry, base_dir, &cfg, err);
    json_decref(entry);
    if (rc)
        return rc;
    /* Connected on the first call, so loading a skills folder starts nothing. */
    conn = rein__mcp_conn_new(cfg);
    *state = conn ? state_new(conn, tool) : NULL;
    rein__mcp_conn_unref(conn);
    return *state ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
}

static rein_err runner_invoke(void *state, const struct rein_invocation *inv,
                              struct rein_tool_reply *reply, rein_error *err)
{
    struct tool_state *st = state;

    return rein__mcp_conn_call(st->conn, st->tool, inv, reply, err);
}

const struct rein_runner_kind rein__mcp_runner = {
    .name = "mcp",
    .schema = "{\"type\":\"object\",\"required\":[\"kind\",\"tool\"],\"properties\":{"
              "\"kind\":{\"const\":\"mcp\"},"
              "\"tool\":{\"type\":\"string\",\"minLength\":1},"
              "\"server\":{\"type\":\"string\",\"minLength\":1},"
              "\"command\":{\"type\":\"string\",\"minLength\":1},"
              "\"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
              "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
              "\"cwd\":{\"type\":\"string\",\"minLength\":1},"
              "\"url\":{\"type\":\"string\",\"pattern\":\"^https?://[^\\\\s]+$\"},"
              "\"headers\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
              "\"bearer_token\":{\"type\":\"string\"},"
              "\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":86400000},"
              "\"connect_timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":86400000},"
              "\"max_message_bytes\":{\"type\":\"integer\",\"minimum\":1024}},"
              "\"oneOf\":[{\"required\":[\"command\"]},{\"required\":[\"url\"]}],"
              "\"additionalProperties\":false}",
    .open = runner_open,
    .invoke = runner_invoke,
    .close = runner_close,
};

rein_err rein_mcp_register_runner(rein_registry *reg, rein_error *err)
{
    return rein_registry_add_runner_kind(reg, &rein__mcp_runner, err);
}

/* ---- the set of configured servers ------------------------------------------------------ */

struct server_entry {
    struct rein__mcp_conn *conn;
    json_t *tools;    /* [{id, name}] after register */
    json_t *problems; /* [text] */
};

struct rein_mcp_clients {
    struct server_entry *servers;
    size_t n, cap;
};

rein_mcp_clients *rein_mcp_clients_new(void)
{
    return rein_calloc(1, sizeof(rein_mcp_clients));
}

void rein_mcp_clients_free(rein_mcp_clients *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->n; i++) {
        rein__mcp_conn_unref(set->servers[i].conn);
        json_decref(set->servers[i].tools);
        json_decref(set->servers[i].problems);
    }
    rein_free(set->servers);
    rein_free(set);
}

size_t rein_mcp_clients_count(const rein_mcp_clients *set)
{
    return set ? set->n : 0;
}

static struct server_entry *find(const rein_mcp_clients *set, const char *name)
{
    for (size_t i = 0; i < set->n; i++) {
        if (strcmp(rein__mcp_conn_config(set->servers[i].conn)->name, name) == 0)
            return &set->servers[i];
    }
    return NULL;
}

static rein_err add_entry(rein_mcp_clients *set, const char *name, const json_t *entry,
                          const char *base_dir, rein_error *err)
{
    struct rein__mcp_conn_config *cfg;
    struct server_entry *e;
    rein_err rc;

    if (find(set, name))
        return rein_error_set(err, REIN_EEXIST, "mcpServers.%s is configured twice", name);
    rc = rein__mcp_conn_config_parse(name, entry, base_dir, &cfg, err);
    if (rc)
        return rc;
    if (set->n == set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 4;
        e = rein_realloc(set->servers, cap * sizeof(*e));
        if (!e) {
            rein__mcp_conn_config_free(cfg);
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
        }
        set->servers = e;
        set->cap = cap;
    }
    e = &set->servers[set->n];
    memset(e, 0, sizeof(*e));
    e->conn = rein__mcp_conn_new(cfg);
    e->tools = json_array();
    e->problems = json_array();
    if (!e->conn || !e->tools || !e->problems) {
        rein__mcp_conn_unref(e->conn);
        json_decref(e->tools);
        json_decref(e->problems);
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    set->n++;
    return REIN_OK;
}

rein_err rein_mcp_clients_add(rein_mcp_clients *set, const char *name, const json_t *entry,
                              rein_error *err)
{
    if (!set)
        return rein_error_set(err, REIN_EINVAL, "no set of MCP servers");
    return add_entry(set, name, entry, NULL, err);
}

rein_err rein_mcp_clients_add_config(rein_mcp_clients *set, const json_t *config,
                                     const char *base_dir, rein_error *err)
{
    const json_t *servers = json_object_get(config, "mcpServers");
    const char *name;
    json_t *entry;
    rein_err rc;

    if (!set || !json_is_object(config))
        return rein_error_set(err, REIN_EINVAL, "the configuration must be a JSON object");
    if (!servers)
        return REIN_OK; /* a config file for other parts of rein */
    if (!json_is_object(servers))
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers: must be an object of {\"name\": {server}}");
    json_object_foreach((json_t *)servers, name, entry)
    {
        rc = add_entry(set, name, entry, base_dir, err);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

rein_err rein_mcp_clients_load_file(rein_mcp_clients *set, const char *path, rein_error *err)
{
    json_t *doc = rein_json_load_file(path, err);
    char *copy = rein_strdup(path);
    rein_err rc;

    if (!doc || !copy) {
        rein_free(copy);
        json_decref(doc);
        return doc ? rein_error_set(err, REIN_ENOMEM, "out of memory") : REIN_EPARSE;
    }
    /* A relative cwd in the file is taken relative to the file's folder. */
    rc = rein_mcp_clients_add_config(set, doc, dirname(copy), err);
    json_decref(doc);
    rein_free(copy);
    if (rc)
        rein_error_prefix(err, "%s: ", path);
    return rc;
}

struct connect_job {
    struct server_entry *e;
    int64_t timeout_ms;
    bool ok;
};

static void connect_one(void *arg, size_t i)
{
    struct connect_job *jobs = arg;
    rein_error err;

    rein_error_clear(&err);
    jobs[i].ok = rein__mcp_conn_connect(jobs[i].e->conn, jobs[i].timeout_ms, &err) == REIN_OK;
    if (!jobs[i].ok)
        rein_log(REIN_LOG_WARN, "mcp", "%s", err.msg);
}

size_t rein_mcp_clients_connect(rein_mcp_clients *set, int64_t timeout_ms)
{
    struct connect_job *jobs;
    rein_pool *pool;
    size_t ok = 0;

    if (!set || set->n == 0)
        return 0;
    jobs = rein_calloc(set->n, sizeof(*jobs));
    if (!jobs)
        return 0;
    for (size_t i = 0; i < set->n; i++)
        jobs[i] = (struct connect_job){&set->servers[i], timeout_ms, false};
    /* Servers start in parallel: one slow server does not delay the others. */
    pool = rein_pool_new((unsigned)(set->n < 8 ? set->n : 8), NULL);
    rein_pool_run_batch(pool, set->n, 0, connect_one, jobs);
    rein_pool_free(pool);
    for (size_t i = 0; i < set->n; i++)
        ok += jobs[i].ok;
    rein_free(jobs);
    return ok;
}

/* ---- naming ----------------------------------------------------------------------------- */

static void sanitize(const char *in, size_t max, char *out, size_t size)
{
    size_t n = 0;

    for (const char *p = in; *p && n < max && n + 1 < size; p++) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
        out[n++] = ok ? ch : '_';
    }
    out[n] = '\0';
}

static uint32_t fnv1a(const char *server, const char *tool)
{
    uint32_t h = 2166136261u;

    for (const char *p = server; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    h = (h ^ 0u) * 16777619u;
    for (const char *p = tool; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h;
}

/* One tool on its way into the registry. */
struct candidate {
    struct server_entry *e;
    const json_t *def;
    const char *name;
    char id[512];
};

static int by_server_name(const void *a, const void *b)
{
    const struct server_entry *x = *(struct server_entry *const *)a;
    const struct server_entry *y = *(struct server_entry *const *)b;

    return strcmp(rein__mcp_conn_config(x->conn)->name, rein__mcp_conn_config(y->conn)->name);
}

static void hashed_id(struct candidate *c, const char *server)
{
    char prefix[HASHED_PREFIX + 1];
    size_t n = strlen(c->id);

    if (n > HASHED_PREFIX)
        n = HASHED_PREFIX;
    memcpy(prefix, c->id, n);
    prefix[n] = '\0';
    snprintf(c->id, sizeof(c->id), "%s_%08x", prefix, fnv1a(server, c->name));
}

/* Sets every candidate's id by the naming rule. */
static void name_candidates(struct candidate *cands, size_t n, const rein_registry *reg)
{
    bool *clash = rein_calloc(n ? n : 1, sizeof(bool));

    for (size_t i = 0; i < n; i++) {
        char server[SERVER_PART_MAX + 1], tool[400];
        sanitize(rein__mcp_conn_config(cands[i].e->conn)->name, SERVER_PART_MAX, server,
                 sizeof(server));
        sanitize(cands[i].name, sizeof(tool) - 1, tool, sizeof(tool));
        snprintf(cands[i].id, sizeof(cands[i].id), "%s__%s", server, tool);
    }
    for (size_t i = 0; i < n; i++) {
        bool c = strlen(cands[i].id) > REIN_TOOL_NAME_MAX || rein_registry_get(reg, cands[i].id);
        for (size_t j = 0; !c && j < n; j++)
            c = j != i && strcmp(cands[i].id, cands[j].id) == 0;
        if (clash)
            clash[i] = c;
        else if (c)
            cands[i].id[0] = '\0'; /* out of memory: leave it out rather than misname it */
    }
    for (size_t i = 0; clash && i < n; i++) {
        if (clash[i])
            hashed_id(&cands[i], rein__mcp_conn_config(cands[i].e->conn)->name);
    }
    rein_free(clash);
}

static json_t *tool_manifest(const struct candidate *c)
{
    const json_t *def = c->def, *ann = json_object_get(def, "annotations");
    const json_t *schema = json_object_get(def, "inputSchema");
    const char *title = json_string_value(json_object_get(def, "title"));
    const char *desc = json_string_value(json_object_get(def, "description"));
    const struct rein__mcp_conn_config *cfg = rein__mcp_conn_config(c->e->conn);
    bool ro = json_is_true(json_object_get(ann, "readOnlyHint"));
    json_t *m, *v, *params;
    char fallback[300];

    if (!title)
        title = json_string_value(json_object_get(ann, "title"));
    if (!desc || !desc[0]) {
        snprintf(fallback, sizeof(fallback), "%s%sthe tool %s of the MCP server %s",
                 title ? title : "", title ? ": " : "", c->name, cfg->name);
        desc = fallback;
    }
    /* A tool without a schema takes an object (MCP requires one; some servers omit it). */
    params = json_is_object(schema) ? json_incref((json_t *)schema)
                                    : json_pack("{s:s}", "type", "object");
    m = json_pack("{s:s, s:s, s:o, s:b, s:b, s:I, s:{s:s, s:s, s:s}}", "id", c->id, "description",
                  desc, "parameters", params, "read_only", ro, "destructive",
                  !ro && !json_is_false(json_object_get(ann, "destructiveHint")), "timeout_ms",
                  (json_int_t)cfg->timeout_ms, "runner", "kind", "mcp", "server", cfg->name, "tool",
                  c->name);
    if (!m)
        return NULL;
    if (title && json_object_set_new(m, "title", json_string(title)))
        goto fail;
    v = json_object_get(ann, "idempotentHint");
    if (json_is_boolean(v) && json_object_set(m, "idempotent", v))
        goto fail;
    v = json_object_get(ann, "openWorldHint");
    if (json_is_boolean(v) && json_object_set(m, "open_world", v))
        goto fail;
    return m;
fail:
    json_decref(m);
    return NULL;
}

static void problem(struct server_entry *e, const char *fmt, ...) REIN_PRINTF(2, 3);

static void problem(struct server_entry *e, const char *fmt, ...)
{
    char text[600];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    rein_log(REIN_LOG_WARN, "mcp", "%s: %s", rein__mcp_conn_config(e->conn)->name, text);
    if (json_array_append_new(e->problems, json_string(text)))
        rein_log(REIN_LOG_WARN, "mcp", "out of memory recording a problem");
}

/* Adds one named candidate; REIN_ENOMEM is the only error passed on. */
static rein_err register_one(struct candidate *c, rein_registry *reg)
{
    struct tool_state *st;
    json_t *m;
    rein_error err;
    rein_err rc;

    if (!c->id[0] || rein_registry_get(reg, c->id)) {
        problem(c->e, "tool %s: no unique name could be made for it; left out", c->name);
        return REIN_OK;
    }
    m = tool_manifest(c);
    st = m ? state_new(c->e->conn, c->name) : NULL;
    if (!st) {
        json_decref(m);
        return REIN_ENOMEM;
    }
    rein_error_clear(&err);
    rc = rein_registry_add_tool(reg, m, &rein__mcp_runner, st, &err);
    json_decref(m);
    if (rc == REIN_ENOMEM)
        return rc;
    if (rc) {
        problem(c->e, "tool %s: %s; left out", c->name, err.msg);
        return REIN_OK;
    }
    if (json_array_append_new(c->e->tools, json_pack("{s:s, s:s}", "id", c->id, "name", c->name)))
        return REIN_ENOMEM;
    return REIN_OK;
}

rein_err rein_mcp_clients_register(rein_mcp_clients *set, rein_registry *reg, rein_error *err)
{
    struct server_entry **order;
    struct candidate *cands;
    size_t n = 0, k = 0;
    rein_err rc = REIN_OK;

    if (!set || !reg)
        return rein_error_set(err, REIN_EINVAL, "no set of MCP servers or no registry");
    order = rein_calloc(set->n ? set->n : 1, sizeof(struct server_entry *));
    for (size_t i = 0; order && i < set->n; i++) {
        order[i] = &set->servers[i];
        n += json_array_size(rein__mcp_conn_tools(set->servers[i].conn));
    }
    cands = rein_calloc(n ? n : 1, sizeof(*cands));
    if (!order || !cands) {
        rein_free(order);
        rein_free(cands);
        return rein_error_set(err, REIN_ENOMEM, "out of memory adding MCP tools");
    }
    qsort(order, set->n, sizeof(struct server_entry *), by_server_name);
    for (size_t i = 0; i < set->n; i++) {
        const json_t *def;
        size_t j;
        json_array_foreach(rein__mcp_conn_tools(order[i]->conn), j, def)
        {
            const char *name = json_string_value(json_object_get(def, "name"));
            if (!name || !name[0]) {
                problem(order[i], "tools/list entry %zu has no name; left out", j);
                continue;
            }
            cands[k++] = (struct candidate){order[i], def, name, ""};
        }
    }
    name_candidates(cands, k, reg);
    for (size_t i = 0; i < k && rc == REIN_OK; i++)
        rc = register_one(&cands[i], reg);
    rein_free(order);
    rein_free(cands);
    if (rc)
        return rein_error_set(err, rc, "out of memory adding MCP tools");
    return REIN_OK;
}

json_t *rein_mcp_clients_status_json(const rein_mcp_clients *set)
{
    json_t *arr = json_array();

    for (size_t i = 0; arr && set && i < set->n; i++) {
        const struct server_entry *e = &set->servers[i];
        json_t *o = rein__mcp_conn_status_json(e->conn);
        if (!o || json_object_set(o, "tools", e->tools) ||
            json_object_set(o, "problems", e->problems) || json_array_append_new(arr, o)) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

const char *rein_mcp_clients_tool_id(const rein_mcp_clients *set, const char *server,
                                     const char *tool)
{
    const struct server_entry *e = set && server && tool ? find(set, server) : NULL;
    const json_t *t;
    size_t i;

    if (!e)
        return NULL;
    json_array_foreach(e->tools, i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "name")), tool) == 0)
            return json_string_value(json_object_get(t, "id"));
    }
    return NULL;
}
