/*
 * The tools of MCP servers in rein's registry: the runner kind "mcp", the set of configured
 * servers (rein_mcp_clients), and the rule that names their tools.
 *
 * Naming (docs/decisions/0007-mcp-module.md, refined by 0023). An MCP tool joins as
 *     <server>__<tool>
 * where <server> is the configuration's name for the server cut to 24 bytes, and both parts
 * have every byte outside [A-Za-z0-9_-] replaced by '_'. A tool is named instead
 *     <first 55 bytes of the id>_<8 hex digits of FNV-1a-32 of "server\0tool">
 * when its id is longer than 64 bytes, is taken by a built-in or skill tool, is wanted by
 * another tool of the same server (names that differ only in replaced bytes), or when its
 * server's part could be confused with another configured server's (the same part, or one
 * part followed by "__" starting the other): then every tool of both servers is. Built-in
 * and skill tools keep their names. Servers connect and change their tools at any time, so the
 * rule uses only what is known of each server alone (the configured names, its own tool list,
 * the tools rein had before), never the order in which servers answered. The original name is
 * what goes on the wire (runner.tool).
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
#include <time.h>

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

/*
 * One configured server. conn is fixed; tools, problems and registered change when the
 * server's tool list is (re)read: registered is written only by the thread that syncs this
 * server (its supervisor, or rein_mcp_clients_register), tools and problems are swapped under
 * the set's mu so status readers see whole lists.
 */
struct server_entry {
    rein_mcp_clients *set;
    struct rein__mcp_conn *conn;
    json_t *tools;      /* [{id, name}] in the server's order */
    json_t *problems;   /* [text] */
    json_t *registered; /* {MCP name: {"id", "def"}}: what this server has in the registry */
    pthread_t supervisor;
    bool supervised;
    bool wake; /* the connection changed (set->mu) */
    /* tools is the list of the connection's current session (set->mu): until the supervisor
     * has registered them after a connect, the status does not say ready */
    bool synced;
};

struct rein_mcp_clients {
    struct server_entry **servers;
    size_t n, cap;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rein_cancel *stop;  /* ends the supervisors */
    rein_registry *reg; /* where supervised servers' tools go (borrowed) */
    json_t *defaults;   /* top-level timeout_ms, max_timeout_ms, ... for every entry */
    bool started;
};

rein_mcp_clients *rein_mcp_clients_new(void)
{
    rein_mcp_clients *set = rein_calloc(1, sizeof(*set));

    if (!set)
        return NULL;
    set->stop = rein_cancel_new();
    set->defaults = json_object();
    if (!set->stop || !set->defaults) {
        rein_cancel_unref(set->stop);
        json_decref(set->defaults);
        rein_free(set);
        return NULL;
    }
    pthread_mutex_init(&set->mu, NULL);
    pthread_cond_init(&set->cv, NULL);
    return set;
}

void rein_mcp_clients_free(rein_mcp_clients *set)
{
    if (!set)
        return;
    rein_cancel_trigger(set->stop, "rein is stopping");
    for (size_t i = 0; i < set->n; i++) {
        struct server_entry *e = set->servers[i];
        /* The connection outlives the set (the registry's tools hold it): it stops telling a
         * supervisor that is about to go. */
        rein__mcp_conn_watch(e->conn, NULL, NULL);
        if (e->supervised)
            pthread_join(e->supervisor, NULL);
    }
    for (size_t i = 0; i < set->n; i++) {
        struct server_entry *e = set->servers[i];
        rein__mcp_conn_unref(e->conn);
        json_decref(e->tools);
        json_decref(e->problems);
        json_decref(e->registered);
        rein_free(e);
    }
    rein_free(set->servers);
    rein_cancel_unref(set->stop);
    json_decref(set->defaults);
    pthread_mutex_destroy(&set->mu);
    pthread_cond_destroy(&set->cv);
    rein_free(set);
}

size_t rein_mcp_clients_count(const rein_mcp_clients *set)
{
    return set ? set->n : 0;
}

static struct server_entry *find(const rein_mcp_clients *set, const char *name)
{
    for (size_t i = 0; i < set->n; i++) {
        if (strcmp(rein__mcp_conn_config(set->servers[i]->conn)->name, name) == 0)
            return set->servers[i];
    }
    return NULL;
}

/* entry with the set's defaults for what it does not say itself (new reference, or NULL). */
static json_t *with_defaults(const rein_mcp_clients *set, const json_t *entry)
{
    json_t *full = json_deep_copy(entry);
    const char *key;
    json_t *v;

    if (!full || !json_is_object(full))
        return full;
    json_object_foreach(set->defaults, key, v)
    {
        if (!json_object_get(full, key) && json_object_set(full, key, v)) {
            json_decref(full);
            return NULL;
        }
    }
    return full;
}

static rein_err add_entry(rein_mcp_clients *set, const char *name, const json_t *entry,
                          const char *base_dir, rein_error *err)
{
    struct rein__mcp_conn_config *cfg;
    struct server_entry *e;
    json_t *full;
    rein_err rc;

    if (set->started)
        return rein_error_set(err, REIN_ESTATE, "mcpServers.%s: the servers are already started",
                              name);
    if (find(set, name))
        return rein_error_set(err, REIN_EEXIST, "mcpServers.%s is configured twice", name);
    full = with_defaults(set, entry);
    if (!full)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = rein__mcp_conn_config_parse(name, full, base_dir, &cfg, err);
    json_decref(full);
    if (rc)
        return rc;
    if (set->n == set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 4;
        struct server_entry **grown =
            rein_realloc(set->servers, cap * sizeof(struct server_entry *));
        if (!grown) {
            rein__mcp_conn_config_free(cfg);
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
        }
        set->servers = grown;
        set->cap = cap;
    }
    e = rein_calloc(1, sizeof(*e));
    if (e) {
        e->set = set;
        e->conn = rein__mcp_conn_new(cfg);
        cfg = NULL;
        e->tools = json_array();
        e->problems = json_array();
        e->registered = json_object();
    }
    if (!e || !e->conn || !e->tools || !e->problems || !e->registered) {
        rein__mcp_conn_config_free(cfg);
        if (e) {
            rein__mcp_conn_unref(e->conn);
            json_decref(e->tools);
            json_decref(e->problems);
            json_decref(e->registered);
            rein_free(e);
        }
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    set->servers[set->n++] = e;
    return REIN_OK;
}

rein_err rein_mcp_clients_add(rein_mcp_clients *set, const char *name, const json_t *entry,
                              rein_error *err)
{
    if (!set)
        return rein_error_set(err, REIN_EINVAL, "no set of MCP servers");
    return add_entry(set, name, entry, NULL, err);
}

/* Top-level limits apply to every server that does not set its own. */
static rein_err take_defaults(rein_mcp_clients *set, const json_t *config, rein_error *err)
{
    static const char *const keys[] = {"timeout_ms", "max_timeout_ms", "connect_timeout_ms",
                                       "max_message_bytes"};

    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        json_t *v = json_object_get(config, keys[i]);
        if (!v)
            continue;
        if (!json_is_integer(v) || json_integer_value(v) < 1)
            return rein_error_set(err, REIN_EINVAL, "%s: must be a positive integer", keys[i]);
        if (json_object_set(set->defaults, keys[i], v))
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    return REIN_OK;
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
    rc = take_defaults(set, config, err);
    if (rc)
        return rc;
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

/* ---- naming ----------------------------------------------------------------------------- */

/* Copies in with bytes outside [A-Za-z0-9_-] replaced by '_', at most max bytes; returns true
 * when the copy differs from in (replaced or cut). */
static bool sanitize(const char *in, size_t max, char *out, size_t size)
{
    size_t n = 0;
    bool changed = false;

    for (const char *p = in; *p; p++) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
        if (n >= max || n + 1 >= size) {
            changed = true;
            break;
        }
        changed = changed || !ok;
        out[n++] = ok ? ch : '_';
    }
    out[n] = '\0';
    return changed;
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

/* True when a starts with b followed by "__". */
static bool extends(const char *a, const char *b)
{
    size_t n = strlen(b);

    return strncmp(a, b, n) == 0 && strncmp(a + n, "__", 2) == 0;
}

/* True when server's part of an id could also be another configured server's. */
static bool server_ambiguous(const rein_mcp_clients *set, const char *server)
{
    char mine[SERVER_PART_MAX + 1], other[SERVER_PART_MAX + 1];

    sanitize(server, SERVER_PART_MAX, mine, sizeof(mine));
    for (size_t i = 0; i < set->n; i++) {
        const char *name = rein__mcp_conn_config(set->servers[i]->conn)->name;
        if (strcmp(name, server) == 0)
            continue;
        sanitize(name, SERVER_PART_MAX, other, sizeof(other));
        if (strcmp(mine, other) == 0 || extends(mine, other) || extends(other, mine))
            return true;
    }
    return false;
}

/* True when a tool that is not this server's tool `tool` holds id in reg. */
static bool taken_by_other(const rein_registry *reg, const char *id, const char *server,
                           const char *tool)
{
    const rein_tool *t = rein_registry_get(reg, id);
    const json_t *runner;

    if (!t)
        return false;
    runner = json_object_get(rein_tool_manifest(t), "runner");
    return strcmp(rein_tool_runner_kind(t), "mcp") != 0 ||
           strcmp(json_string_value(json_object_get(runner, "server")) ?: "", server) != 0 ||
           strcmp(json_string_value(json_object_get(runner, "tool")) ?: "", tool) != 0;
}

/*
 * The id of tool (its MCP name) of server e, whose whole tool list is defs, by the rule at the
 * top of this file; written to id (size >= REIN_TOOL_NAME_MAX + 1).
 */
static void tool_id(const struct server_entry *e, const rein_registry *reg, const json_t *defs,
                    const char *tool, char *id, size_t size)
{
    const char *server = rein__mcp_conn_config(e->conn)->name;
    char sp[SERVER_PART_MAX + 1], tp[400], other[400], full[512];
    bool hashed = server_ambiguous(e->set, server);
    const json_t *def;
    size_t i;

    /* Replaced bytes alone do not call for a hash: only a name another tool could want. */
    (void)sanitize(server, SERVER_PART_MAX, sp, sizeof(sp));
    (void)sanitize(tool, sizeof(tp) - 1, tp, sizeof(tp));
    snprintf(full, sizeof(full), "%s__%s", sp, tp);
    hashed = hashed || strlen(full) > REIN_TOOL_NAME_MAX;
    /* Another tool of this server that comes out the same once its bytes are replaced. */
    json_array_foreach(defs, i, def)
    {
        const char *name = json_string_value(json_object_get(def, "name"));
        if (hashed || !name || strcmp(name, tool) == 0)
            continue;
        sanitize(name, sizeof(other) - 1, other, sizeof(other));
        hashed = strcmp(other, tp) == 0;
    }
    hashed = hashed || taken_by_other(reg, full, server, tool);
    if (!hashed) {
        snprintf(id, size, "%s", full);
        return;
    }
    full[HASHED_PREFIX < strlen(full) ? HASHED_PREFIX : strlen(full)] = '\0';
    snprintf(id, size, "%s_%08x", full, fnv1a(server, tool));
}

static json_t *tool_manifest(const struct server_entry *e, const json_t *def, const char *name,
                             const char *id)
{
    const json_t *ann = json_object_get(def, "annotations");
    const json_t *schema = json_object_get(def, "inputSchema");
    const char *title = json_string_value(json_object_get(def, "title"));
    const char *desc = json_string_value(json_object_get(def, "description"));
    const struct rein__mcp_conn_config *cfg = rein__mcp_conn_config(e->conn);
    bool ro = json_is_true(json_object_get(ann, "readOnlyHint"));
    json_t *m, *v, *params;
    char fallback[300];

    if (!title)
        title = json_string_value(json_object_get(ann, "title"));
    if (!desc || !desc[0]) {
        snprintf(fallback, sizeof(fallback), "%s%sthe tool %s of the MCP server %s",
                 title ? title : "", title ? ": " : "", name, cfg->name);
        desc = fallback;
    }
    /* A tool without a schema takes an object (MCP requires one; some servers omit it). */
    params = json_is_object(schema) ? json_incref((json_t *)schema)
                                    : json_pack("{s:s}", "type", "object");
    /* The manifest's limit is the most a call may take; the server's silence is limited to
     * timeout_ms by the runner itself (progress notifications renew it). */
    m = json_pack("{s:s, s:s, s:o, s:b, s:b, s:I, s:{s:s, s:s, s:s}}", "id", id, "description",
                  desc, "parameters", params, "read_only", ro, "destructive",
                  !ro && !json_is_false(json_object_get(ann, "destructiveHint")), "timeout_ms",
                  (json_int_t)cfg->max_timeout_ms, "runner", "kind", "mcp", "server", cfg->name,
                  "tool", name);
    if (!m)
        return NULL;
    if (title && json_object_set_new(m, "title", json_string(title)))
        goto fail;
    /* The server promises this shape for structuredContent: the pipeline holds it to that. */
    v = json_object_get(def, "outputSchema");
    if (json_is_object(v) && json_object_set(m, "output_schema", v))
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

static void problem(json_t *problems, const char *server, const char *fmt, ...) REIN_PRINTF(3, 4);

static void problem(json_t *problems, const char *server, const char *fmt, ...)
{
    char text[600];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    rein_log(REIN_LOG_WARN, "mcp", "%s: %s", server, text);
    if (json_array_append_new(problems, json_string(text)))
        rein_log(REIN_LOG_WARN, "mcp", "out of memory recording a problem");
}

/* Adds one tool under id; REIN_ENOMEM is the only error passed on (others become problems). */
static rein_err register_one(struct server_entry *e, rein_registry *reg, const json_t *def,
                             const char *name, const char *id, json_t *problems)
{
    const char *server = rein__mcp_conn_config(e->conn)->name;
    struct tool_state *st;
    json_t *m;
    rein_error err;
    rein_err rc;

    m = tool_manifest(e, def, name, id);
    st = m ? state_new(e->conn, name) : NULL;
    if (!st) {
        json_decref(m);
        return REIN_ENOMEM;
    }
    rein_error_clear(&err);
    rc = rein_registry_add_tool(reg, m, &rein__mcp_runner, st, &err);
    if (rc == REIN_ESCHEMA && strncmp(err.msg, "/output_schema", 14) == 0) {
        /* An outputSchema rein cannot compile: the tool still joins, unchecked. */
        problem(problems, server,
                "tool %s: its outputSchema is not usable (%s); its structured "
                "results are not checked",
                name, err.msg);
        json_object_del(m, "output_schema");
        st = state_new(e->conn, name);
        rein_error_clear(&err);
        rc = st ? rein_registry_add_tool(reg, m, &rein__mcp_runner, st, &err) : REIN_ENOMEM;
    }
    json_decref(m);
    if (rc == REIN_ENOMEM)
        return rc;
    if (rc == REIN_EEXIST) {
        problem(problems, server, "tool %s: no unique name could be made for it; left out", name);
        return REIN_OK;
    }
    if (rc) {
        problem(problems, server, "tool %s: %s; left out", name, err.msg);
        return REIN_OK;
    }
    if (json_object_set_new(e->registered, name, json_pack("{s:s, s:O}", "id", id, "def", def)))
        return REIN_ENOMEM;
    return REIN_OK;
}

static const json_t *def_named(const json_t *defs, const char *name)
{
    const json_t *def;
    size_t i;

    json_array_foreach(defs, i, def)
    {
        if (json_is_string(json_object_get(def, "name")) &&
            strcmp(json_string_value(json_object_get(def, "name")), name) == 0)
            return def;
    }
    return NULL;
}

/*
 * Brings reg in line with the server's current tool list: tools it no longer has, or whose
 * definition changed, leave; new ones join. Unchanged tools stay as they are (calls running
 * them are not disturbed). Then e->tools and e->problems describe the result.
 */
static rein_err sync_tools(struct server_entry *e, rein_registry *reg)
{
    const char *server = rein__mcp_conn_config(e->conn)->name;
    json_t *defs = rein__mcp_conn_tools(e->conn);
    json_t *tools = json_array(), *problems = json_array(), *rec;
    const char *name;
    const json_t *def;
    rein_err rc = REIN_OK;
    size_t i;
    void *tmp;

    if (!tools || !problems)
        goto nomem;
    json_object_foreach_safe(e->registered, tmp, name, rec)
    {
        const json_t *now = def_named(defs, name);
        if (now && json_equal(now, json_object_get(rec, "def")))
            continue;
        if (rein_registry_remove(reg, json_string_value(json_object_get(rec, "id")), NULL))
            rein_log(REIN_LOG_DEBUG, "mcp", "%s: tool %s was not in the registry", server, name);
        json_object_del(e->registered, name);
    }
    json_array_foreach(defs, i, def)
    {
        char id[REIN_TOOL_NAME_MAX + 1];
        name = json_string_value(json_object_get(def, "name"));
        if (!name || !name[0]) {
            problem(problems, server, "tools/list entry %zu has no name; left out", i);
            continue;
        }
        if (!json_object_get(e->registered, name)) {
            tool_id(e, reg, defs, name, id, sizeof(id));
            rc = register_one(e, reg, def, name, id, problems);
            if (rc)
                goto nomem;
        }
        rec = json_object_get(e->registered, name);
        if (rec &&
            json_array_append_new(
                tools, json_pack("{s:O, s:s}", "id", json_object_get(rec, "id"), "name", name)))
            goto nomem;
    }
    pthread_mutex_lock(&e->set->mu);
    json_decref(e->tools);
    json_decref(e->problems);
    e->tools = tools;
    e->problems = problems;
    e->synced = true;
    pthread_mutex_unlock(&e->set->mu);
    json_decref(defs);
    return REIN_OK;
nomem:
    json_decref(tools);
    json_decref(problems);
    json_decref(defs);
    return REIN_ENOMEM;
}

rein_err rein_mcp_clients_register(rein_mcp_clients *set, rein_registry *reg, rein_error *err)
{
    if (!set || !reg)
        return rein_error_set(err, REIN_EINVAL, "no set of MCP servers or no registry");
    for (size_t i = 0; i < set->n; i++) {
        if (rein__mcp_conn_is_ready(set->servers[i]->conn) &&
            sync_tools(set->servers[i], reg) != REIN_OK)
            return rein_error_set(err, REIN_ENOMEM, "out of memory adding MCP tools");
    }
    return REIN_OK;
}

/* ---- connecting ------------------------------------------------------------------------- */

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
    jobs[i].ok = rein__mcp_conn_connect(jobs[i].e->conn, jobs[i].timeout_ms, NULL, &err) == REIN_OK;
    if (!jobs[i].ok)
        rein_log(REIN_LOG_WARN, "mcp", "%s", err.msg);
}

void rein_mcp_clients_allow_login(rein_mcp_clients *set, bool allow)
{
    for (size_t i = 0; set && i < set->n; i++)
        rein__mcp_conn_allow_login(set->servers[i]->conn, allow);
}

void rein_mcp_clients_offer(rein_mcp_clients *set, unsigned offers)
{
    for (size_t i = 0; set && i < set->n; i++)
        rein__mcp_conn_offer(set->servers[i]->conn, offers & REIN_MCP_OFFER_ALL);
}

rein_err rein_mcp_clients_login(rein_mcp_clients *set, const char *name, int64_t timeout_ms,
                                bool *authorized, rein_error *err)
{
    struct server_entry *e = set && name ? find(set, name) : NULL;
    rein_err rc;

    *authorized = false;
    if (!e)
        return rein_error_set(err, REIN_ENOTFOUND, "no MCP server named \"%s\" is configured",
                              name ? name : "");
    if (!rein__mcp_conn_config(e->conn)->http)
        return rein_error_set(err, REIN_EINVAL,
                              "mcpServers.%s is a program (stdio); only HTTP servers log in", name);
    rc = rein__mcp_conn_forget_token(e->conn, err);
    if (rc)
        return rc;
    rein__mcp_conn_allow_login(e->conn, true);
    rc = rein__mcp_conn_connect(e->conn, timeout_ms > 0 ? timeout_ms : 600000, NULL, err);
    rein__mcp_conn_allow_login(e->conn, false);
    *authorized = rein__mcp_conn_has_token(e->conn);
    return rc;
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
        jobs[i] = (struct connect_job){set->servers[i], timeout_ms, false};
    /* Servers start in parallel: one slow server does not delay the others. */
    pool = rein_pool_new((unsigned)(set->n < 8 ? set->n : 8), NULL);
    rein_pool_run_batch(pool, set->n, 0, connect_one, jobs);
    rein_pool_free(pool);
    for (size_t i = 0; i < set->n; i++)
        ok += jobs[i].ok;
    rein_free(jobs);
    return ok;
}

/* ---- supervision: servers that come and go ---------------------------------------------- */

#define BACKOFF_FIRST_MS 500
#define BACKOFF_MAX_MS   30000

static void on_conn_change(void *ud)
{
    struct server_entry *e = ud;

    pthread_mutex_lock(&e->set->mu);
    e->wake = true;
    pthread_cond_broadcast(&e->set->cv);
    pthread_mutex_unlock(&e->set->mu);
}

/* Waits until e is woken, the set stops, or until (0: no limit); clears the wake flag. */
static void sleep_until(struct server_entry *e, int64_t until)
{
    rein_mcp_clients *set = e->set;

    pthread_mutex_lock(&set->mu);
    while (!e->wake && !rein_cancel_is_set(set->stop)) {
        int64_t now = rein_now_ms(), wait = 1000;
        if (until && now >= until)
            break;
        if (until && until - now < wait)
            wait = until - now;
        rein__mcp_cond_wait_ms(&set->cv, &set->mu, wait);
    }
    e->wake = false;
    pthread_mutex_unlock(&set->mu);
}

/*
 * One server's supervisor: connects it (again and again, with a growing pause, while it fails
 * or after it was lost), puts its tools into the registry once it is ready, and follows its
 * notifications/tools/list_changed. Never holds the set's lock while it talks to the server.
 */
static void *supervise(void *arg)
{
    struct server_entry *e = arg;
    rein_mcp_clients *set = e->set;
    const char *server = rein__mcp_conn_config(e->conn)->name;
    int64_t backoff = BACKOFF_FIRST_MS, next = 0;

    while (!rein_cancel_is_set(set->stop)) {
        rein_error err;
        bool changed = false;

        rein_error_clear(&err);
        if (!rein__mcp_conn_is_ready(e->conn)) {
            if (next && rein_now_ms() < next) {
                sleep_until(e, next);
                continue;
            }
            rein__mcp_conn_retry_at(e->conn, 0);
            pthread_mutex_lock(&set->mu);
            e->synced = false;
            pthread_mutex_unlock(&set->mu);
            if (rein__mcp_conn_connect(e->conn, 0, set->stop, &err) != REIN_OK) {
                if (rein_cancel_is_set(set->stop))
                    break;
                next = rein_now_ms() + backoff;
                rein__mcp_conn_retry_at(e->conn, next);
                rein_log(REIN_LOG_WARN, "mcp", "%s: %s; trying again in %lld ms", server, err.msg,
                         (long long)backoff);
                backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
                continue;
            }
            backoff = BACKOFF_FIRST_MS;
            next = 0;
            changed = true;
        } else if (rein__mcp_conn_refresh_tools(e->conn, 0, &changed, &err) != REIN_OK) {
            rein_log(REIN_LOG_WARN, "mcp", "%s: reading its changed tool list: %s", server,
                     err.msg);
        }
        if (changed && sync_tools(e, set->reg) != REIN_OK)
            rein_log(REIN_LOG_ERROR, "mcp", "%s: out of memory adding its tools", server);
        sleep_until(e, 0);
    }
    return NULL;
}

rein_err rein_mcp_clients_start(rein_mcp_clients *set, rein_registry *reg, rein_error *err)
{
    if (!set || !reg)
        return rein_error_set(err, REIN_EINVAL, "no set of MCP servers or no registry");
    if (set->started)
        return rein_error_set(err, REIN_ESTATE, "the MCP servers are already started");
    set->started = true;
    set->reg = reg;
    for (size_t i = 0; i < set->n; i++) {
        struct server_entry *e = set->servers[i];
        rein__mcp_conn_watch(e->conn, on_conn_change, e);
        /* under the mu: the status reads it from the server's threads */
        pthread_mutex_lock(&set->mu);
        e->supervised = true;
        pthread_mutex_unlock(&set->mu);
        if (pthread_create(&e->supervisor, NULL, supervise, e) != 0) {
            pthread_mutex_lock(&set->mu);
            e->supervised = false;
            pthread_mutex_unlock(&set->mu);
            rein__mcp_conn_watch(e->conn, NULL, NULL);
            return rein_error_set(err, REIN_ENOMEM, "cannot start a thread for MCP server %s",
                                  rein__mcp_conn_config(e->conn)->name);
        }
    }
    return REIN_OK;
}

/* ---- status ----------------------------------------------------------------------------- */

json_t *rein_mcp_clients_status_json(const rein_mcp_clients *set)
{
    json_t *arr = json_array();

    for (size_t i = 0; arr && set && i < set->n; i++) {
        const struct server_entry *e = set->servers[i];
        json_t *o = rein__mcp_conn_status_json(e->conn);
        pthread_mutex_lock(&((rein_mcp_clients *)set)->mu);
        bool bad = !o || json_object_set(o, "tools", e->tools) ||
                   json_object_set(o, "problems", e->problems);
        /* Connected, its tools not registered yet: none of them can be called, so it is not
         * ready (GET /healthz said ready with the tools of no session, or none). */
        if (!bad && e->supervised && !e->synced &&
            strcmp(json_string_value(json_object_get(o, "state")), "ready") == 0)
            bad = json_object_set_new(o, "state", json_string("not connected")) ||
                  json_object_set_new(o, "retry_in_ms", json_integer(0));
        pthread_mutex_unlock(&((rein_mcp_clients *)set)->mu);
        if (bad || json_array_append_new(arr, o)) {
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
    const json_t *rec;

    if (!e)
        return NULL;
    /* registered changes only on the thread that syncs this server: callers use this where
     * nothing else does (after rein_mcp_clients_register, or for display). */
    rec = json_object_get(e->registered, tool);
    return json_string_value(json_object_get(rec, "id"));
}
