/*
 * The tool registry: tools by id, their compiled parameter schemas and route patterns, the
 * runner kinds that execute them, and the tool lists each wire format expects (OpenAI
 * `tools[].function`, Anthropic `tools[].input_schema`, MCP `tools/list`).
 *
 * Any number of threads read a registry at once under its read lock; a tool that joins or
 * leaves later (an MCP server's) takes the write lock, and a removed tool is kept aside until
 * the registry is freed, so pointers already handed out stay valid. Exact lookups go through an
 * open-addressing table; the repair steps (repair.c) scan the precomputed lower-case and
 * normalised forms of each id.
 */
#include "tools_int.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ---- the "builtin" runner kind: a C function and its userdata ---- */

struct builtin_state {
    rein_tool_fn fn;
    void *userdata;
    void (*free_userdata)(void *userdata);
};

static rein_err builtin_open(const json_t *runner, const char *base_dir, void **state,
                             rein_error *err)
{
    (void)runner;
    (void)base_dir;
    *state = NULL;
    return rein_error_set(err, REIN_ESCHEMA,
                          "/kind: \"builtin\" tools are registered in C; a skill folder "
                          "needs {\"kind\": \"process\", \"command\": [...]} or "
                          "{\"kind\": \"http\", \"url\": \"...\"}");
}

/*
 * Finds a string holding a NUL character in v (at pointer path, a buffer of size bytes) and
 * leaves its pointer in path. A built-in tool reads strings as C strings: "a.txt\u0000/../.."
 * would be searched as "a.txt" while the ledger records the whole string, so such an argument
 * is refused before the tool sees it.
 */
static bool has_nul(const json_t *v)
{
    return json_is_string(v) && memchr(json_string_value(v), '\0', json_string_length(v)) != NULL;
}

static bool find_nul(const json_t *v, char *path, size_t size)
{
    size_t len = strlen(path), i;
    const char *key;
    json_t *item;

    if (json_is_string(v))
        return has_nul(v);
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, key, item)
        {
            /* A string without NUL (most members) needs no pointer written. */
            if (json_is_string(item) && !has_nul(item))
                continue;
            snprintf(path + len, size - len, "/%s", key);
            if (find_nul(item, path, size))
                return true;
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, item)
        {
            if (json_is_string(item) && !has_nul(item))
                continue;
            snprintf(path + len, size - len, "/%zu", i);
            if (find_nul(item, path, size))
                return true;
        }
    }
    path[len] = '\0';
    return false;
}

static rein_err builtin_invoke(void *state, const struct rein_invocation *inv,
                               struct rein_tool_reply *reply, rein_error *err)
{
    struct builtin_state *b = state;
    char path[256] = "";

    if (find_nul(inv->args, path, sizeof(path))) {
        reply->details = json_pack("[{s:s, s:s}]", "path", path, "message",
                                   "contains a NUL character (\\u0000)");
        return rein_error_set(err, REIN_EINVALID,
                              "%s contains a NUL character (\\u0000), which this tool cannot "
                              "take; send the string without it",
                              path[0] ? path + 1 : "the arguments");
    }
    return b->fn(b->userdata, inv, reply, err);
}

static void builtin_close(void *state)
{
    struct builtin_state *b = state;

    if (b && b->free_userdata)
        b->free_userdata(b->userdata);
    rein_free(b);
}

const struct rein_runner_kind rein__tools_runner_builtin = {
    .name = "builtin",
    .schema = "{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"builtin\"}},"
              "\"additionalProperties\":false}",
    .open = builtin_open,
    .invoke = builtin_invoke,
    .close = builtin_close,
};

/* ---- registry ---- */

rein_registry *rein_registry_new(rein_error *err)
{
    rein_registry *reg = rein_calloc(1, sizeof(*reg));

    if (!reg)
        goto out_nomem;
    pthread_rwlock_init(&reg->lock, NULL);
    pthread_mutex_init(&reg->watch_mu, NULL);
    atomic_init(&reg->generation, 0);
    reg->problems = json_array();
    if (!reg->problems)
        goto out_free;
    if (rein_registry_add_runner_kind(reg, &rein__tools_runner_builtin, err))
        goto out_free;
    return reg;

out_free:
    rein_registry_free(reg);
out_nomem:
    rein_error_set(err, REIN_ENOMEM, "out of memory creating a registry");
    return NULL;
}

static void tool_free(rein_tool *t)
{
    if (!t)
        return;
    if (t->kind && t->kind->close)
        t->kind->close(t->state);
    for (size_t i = 0; i < t->nroutes; i++) {
        pcre2_code_free(t->routes[i].code);
        rein_free(t->routes[i].pattern);
    }
    rein_free(t->routes);
    rein_schema_free(t->schema);
    rein_schema_free(t->output_schema);
    json_decref(t->manifest);
    rein_free(t->source);
    rein_free(t);
}

void rein_registry_free(rein_registry *reg)
{
    if (!reg)
        return;
    for (size_t i = 0; i < reg->ntools; i++)
        tool_free(reg->tools[i]);
    while (reg->retired) {
        rein_tool *t = reg->retired;
        reg->retired = t->retired_next;
        tool_free(t);
    }
    while (reg->watchers) {
        struct rein__tools_watcher *w = reg->watchers;
        reg->watchers = w->next;
        rein_free(w);
    }
    pthread_rwlock_destroy(&reg->lock);
    pthread_mutex_destroy(&reg->watch_mu);
    rein_free(reg->tools);
    rein_free(reg->slots);
    for (size_t i = 0; i < reg->nkinds; i++)
        rein_schema_free(reg->kinds[i].schema);
    rein_free(reg->kinds);
    json_decref(reg->problems);
    rein_schema_free(reg->meta);
    rein_free(reg);
}

struct rein__tools_kind_entry *rein__tools_kind(rein_registry *reg, const char *name)
{
    for (size_t i = 0; i < reg->nkinds; i++) {
        if (strcmp(reg->kinds[i].kind->name, name) == 0)
            return &reg->kinds[i];
    }
    return NULL;
}

rein_err rein_registry_add_runner_kind(rein_registry *reg, const struct rein_runner_kind *kind,
                                       rein_error *err)
{
    if (!reg || !kind || !kind->name || !kind->invoke)
        return rein_error_set(err, REIN_EINVAL, "a runner kind needs a name and an invoke");
    if (rein__tools_kind(reg, kind->name))
        return rein_error_set(err, REIN_EEXIST, "runner kind %s is already known", kind->name);
    if (reg->nkinds == reg->kinds_cap) {
        size_t cap = reg->kinds_cap ? 2 * reg->kinds_cap : 4;
        struct rein__tools_kind_entry *k = rein_realloc(reg->kinds, cap * sizeof(*k));
        if (!k)
            return rein_error_set(err, REIN_ENOMEM, "out of memory adding a runner kind");
        reg->kinds = k;
        reg->kinds_cap = cap;
    }
    reg->kinds[reg->nkinds++] = (struct rein__tools_kind_entry){kind, NULL};
    return REIN_OK;
}

static uint32_t hash_name(const char *s, size_t len)
{
    return rein__fnv1a32(REIN_FNV32_INIT, s, len);
}

/* Rebuilds the id table with room for n tools (load factor at most one half); force rebuilds
 * it at the same size (after a removal, since linear probing cannot delete in place). */
static rein_err rehash(rein_registry *reg, size_t n, bool force)
{
    size_t nslots = 16;
    uint32_t *slots;

    while (nslots < 2 * n)
        nslots *= 2;
    if (nslots == reg->nslots && !force)
        return REIN_OK;
    slots = rein_calloc(nslots, sizeof(*slots));
    if (!slots)
        return REIN_ENOMEM;
    for (size_t i = 0; i < reg->ntools; i++) {
        size_t h = hash_name(reg->tools[i]->id, reg->tools[i]->id_len) & (nslots - 1);
        while (slots[h])
            h = (h + 1) & (nslots - 1);
        slots[h] = (uint32_t)(i + 1);
    }
    rein_free(reg->slots);
    reg->slots = slots;
    reg->nslots = nslots;
    return REIN_OK;
}

const rein_tool *rein__tools_lookup(const rein_registry *reg, const char *id, size_t len)
{
    size_t h;

    if (!reg->nslots)
        return NULL;
    h = hash_name(id, len) & (reg->nslots - 1);
    while (reg->slots[h]) {
        const rein_tool *t = reg->tools[reg->slots[h] - 1];
        if (t->id_len == len && memcmp(t->id, id, len) == 0)
            return t;
        h = (h + 1) & (reg->nslots - 1);
    }
    return NULL;
}

void rein__tools_rdlock(const rein_registry *reg)
{
    pthread_rwlock_rdlock(&((rein_registry *)reg)->lock);
}

void rein__tools_unlock(const rein_registry *reg)
{
    pthread_rwlock_unlock(&((rein_registry *)reg)->lock);
}

const rein_tool *rein_registry_get(const rein_registry *reg, const char *id)
{
    const rein_tool *t;

    if (!reg || !id)
        return NULL;
    rein__tools_rdlock(reg);
    t = rein__tools_lookup(reg, id, strlen(id));
    rein__tools_unlock(reg);
    return t;
}

/* Tells the watchers about a change (no registry lock held). */
static void changed(rein_registry *reg)
{
    atomic_fetch_add(&reg->generation, 1);
    pthread_mutex_lock(&reg->watch_mu);
    for (struct rein__tools_watcher *w = reg->watchers; w; w = w->next)
        w->fn(w->userdata, reg);
    pthread_mutex_unlock(&reg->watch_mu);
}

int rein_registry_watch(const rein_registry *creg, rein_registry_change_fn fn, void *userdata)
{
    /* The watcher list is not part of what a const registry promises not to change. */
    rein_registry *reg = (rein_registry *)creg;
    struct rein__tools_watcher *w = reg && fn ? rein_calloc(1, sizeof(*w)) : NULL;
    int handle;

    if (!w)
        return 0;
    pthread_mutex_lock(&reg->watch_mu);
    handle = ++reg->next_watch;
    *w = (struct rein__tools_watcher){reg->watchers, handle, fn, userdata};
    reg->watchers = w;
    pthread_mutex_unlock(&reg->watch_mu);
    return handle;
}

void rein_registry_unwatch(const rein_registry *creg, int handle)
{
    rein_registry *reg = (rein_registry *)creg;
    struct rein__tools_watcher *gone = NULL;

    if (!reg || handle <= 0)
        return;
    /* The mutex is held while watchers run, so once it is ours none of them is running. */
    pthread_mutex_lock(&reg->watch_mu);
    for (struct rein__tools_watcher **pp = &reg->watchers; *pp; pp = &(*pp)->next) {
        if ((*pp)->handle == handle) {
            gone = *pp;
            *pp = gone->next;
            break;
        }
    }
    pthread_mutex_unlock(&reg->watch_mu);
    rein_free(gone);
}

uint64_t rein_registry_generation(const rein_registry *reg)
{
    return reg ? atomic_load(&((rein_registry *)reg)->generation) : 0;
}

rein_err rein_registry_remove(rein_registry *reg, const char *id, rein_error *err)
{
    rein_tool *t = NULL;
    size_t i;

    if (!reg || !id)
        return rein_error_set(err, REIN_EINVAL, "no registry or no tool id");
    pthread_rwlock_wrlock(&reg->lock);
    for (i = 0; i < reg->ntools; i++) {
        if (strcmp(reg->tools[i]->id, id) == 0) {
            t = reg->tools[i];
            break;
        }
    }
    if (t) {
        memmove(&reg->tools[i], &reg->tools[i + 1], (reg->ntools - i - 1) * sizeof(rein_tool *));
        reg->ntools--;
        t->retired_next = reg->retired;
        reg->retired = t;
        /* Same size: no allocation, so removal cannot fail half-way. */
        memset(reg->slots, 0, reg->nslots * sizeof(*reg->slots));
        for (size_t k = 0; k < reg->ntools; k++) {
            size_t h = hash_name(reg->tools[k]->id, reg->tools[k]->id_len) & (reg->nslots - 1);
            while (reg->slots[h])
                h = (h + 1) & (reg->nslots - 1);
            reg->slots[h] = (uint32_t)(k + 1);
        }
    }
    pthread_rwlock_unlock(&reg->lock);
    if (!t)
        return rein_error_set(err, REIN_ENOTFOUND, "no tool is named %s", id);
    changed(reg);
    return REIN_OK;
}

/* Sets pointer to base + the pointer that leads err->msg, when it has one. */
static void pointer_from(char *pointer, size_t size, const char *base, const char *msg)
{
    size_t n = msg[0] == '/' ? strcspn(msg, " ") : 0;

    if (!pointer || !size)
        return;
    if (n > 0 && msg[n - 1] == ':')
        n--;
    snprintf(pointer, size, "%s%.*s", base, (int)n, msg);
}

static rein_err compile_routes(rein_tool *t, char *pointer, size_t pointer_size, rein_error *err)
{
    json_t *routes = json_object_get(t->manifest, "routes");
    size_t n = json_array_size(routes);

    if (n == 0)
        return REIN_OK;
    t->routes = rein_calloc(n, sizeof(*t->routes));
    if (!t->routes)
        return rein_error_set(err, REIN_ENOMEM, "out of memory compiling routes");
    for (size_t i = 0; i < n; i++) {
        const char *pat = json_string_value(json_array_get(routes, i));
        int errcode;
        PCRE2_SIZE off;
        struct rein__tools_route *r = &t->routes[i];

        r->pattern = rein_strdup(pat);
        if (!r->pattern)
            return rein_error_set(err, REIN_ENOMEM, "out of memory compiling routes");
        t->nroutes++;
        r->code = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                &errcode, &off, NULL);
        if (!r->code) {
            PCRE2_UCHAR text[160];
            pcre2_get_error_message(errcode, text, sizeof(text));
            if (pointer)
                snprintf(pointer, pointer_size, "/routes/%zu", i);
            return rein_error_set(err, REIN_ESCHEMA, "/routes/%zu: %s at offset %zu", i,
                                  (const char *)text, (size_t)off);
        }
        /* JIT is an optimisation; interpreting works when it is unavailable. */
        (void)pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE);
    }
    return REIN_OK;
}

/* Builds the tool from a checked, normalized manifest (taken). */
static rein_err tool_build(rein_tool *t, json_t *manifest, const char *source, char *pointer,
                           size_t pointer_size, rein_error *err)
{
    const char *id = json_string_value(json_object_get(manifest, "id"));
    rein_error serr;

    t->manifest = manifest;
    t->id_len = strlen(id);
    memcpy(t->id, id, t->id_len + 1);
    rein__tools_name_lower(t->id, t->id_len, t->lower);
    rein__tools_name_normalize(t->id, t->id_len, t->norm);
    t->description = json_string_value(json_object_get(manifest, "description"));
    t->parameters = json_object_get(manifest, "parameters");
    t->destructive = json_is_true(json_object_get(manifest, "destructive"));
    t->read_only = json_is_true(json_object_get(manifest, "read_only"));
    t->sequential = json_is_true(json_object_get(manifest, "sequential"));
    t->timeout_ms = (int64_t)json_integer_value(json_object_get(manifest, "timeout_ms"));
    t->source = rein_strdup(source ? source : "builtin");
    if (!t->source)
        return rein_error_set(err, REIN_ENOMEM, "out of memory adding %s", id);
    rein_error_clear(&serr);
    t->schema = rein_schema_compile(t->parameters, NULL, &serr);
    if (!t->schema) {
        pointer_from(pointer, pointer_size, "/parameters", serr.msg);
        return rein_error_set(err, serr.code == REIN_ENOMEM ? REIN_ENOMEM : REIN_ESCHEMA,
                              "/parameters%s%s", serr.msg[0] == '/' ? "" : ": ", serr.msg);
    }
    t->has_defaults = rein__tools_has_defaults(t->parameters);
    t->output = json_object_get(manifest, "output_schema");
    if (t->output) {
        rein_error_clear(&serr);
        t->output_schema = rein_schema_compile(t->output, NULL, &serr);
        if (!t->output_schema) {
            pointer_from(pointer, pointer_size, "/output_schema", serr.msg);
            return rein_error_set(err, serr.code == REIN_ENOMEM ? REIN_ENOMEM : REIN_ESCHEMA,
                                  "/output_schema%s%s", serr.msg[0] == '/' ? "" : ": ", serr.msg);
        }
    }
    return compile_routes(t, pointer, pointer_size, err);
}

static rein_err insert(rein_registry *reg, rein_tool *t, rein_error *err)
{
    if (reg->ntools == reg->cap) {
        size_t cap = reg->cap ? 2 * reg->cap : 8;
        rein_tool **v = rein_realloc(reg->tools, cap * sizeof(rein_tool *));
        if (!v)
            return rein_error_set(err, REIN_ENOMEM, "out of memory adding %s", t->id);
        reg->tools = v;
        reg->cap = cap;
    }
    if (rehash(reg, reg->ntools + 1, false))
        return rein_error_set(err, REIN_ENOMEM, "out of memory adding %s", t->id);
    size_t h = hash_name(t->id, t->id_len) & (reg->nslots - 1);
    while (reg->slots[h])
        h = (h + 1) & (reg->nslots - 1);
    reg->tools[reg->ntools++] = t;
    reg->slots[h] = (uint32_t)reg->ntools;
    /* The table's invariant: a power of two, at most half full, so probes end quickly. */
    assert((reg->nslots & (reg->nslots - 1)) == 0 && 2 * reg->ntools <= reg->nslots);
    return REIN_OK;
}

/* Finds and opens the runner a manifest's runner object names. */
static rein_err open_runner(rein_registry *reg, rein_tool *t, const char *base_dir, char *pointer,
                            size_t pointer_size, rein_error *err)
{
    json_t *runner = json_object_get(t->manifest, "runner");
    const char *name = json_string_value(json_object_get(runner, "kind"));
    struct rein__tools_kind_entry *k = rein__tools_kind(reg, name);
    rein_err rc;

    if (!k) {
        struct rein_buf known;
        rein_buf_init(&known, 256);
        for (size_t i = 0; i < reg->nkinds; i++)
            rein__tools_ignore(
                rein_buf_addf(&known, "%s%s", i ? ", " : "", reg->kinds[i].kind->name));
        if (pointer)
            snprintf(pointer, pointer_size, "/runner/kind");
        rc =
            rein_error_set(err, REIN_ENOTFOUND,
                           "/runner/kind: unknown runner kind \"%s\" (known: %s)", name, known.ptr);
        rein_buf_release(&known);
        return rc;
    }
    rc = rein__tools_runner_check(reg, k, runner, pointer, pointer_size, err);
    if (rc)
        return rc;
    rc = k->kind->open ? k->kind->open(runner, base_dir, &t->state, err) : REIN_OK;
    if (rc) {
        /* The runner's pointers are relative to its object. */
        if (err) {
            rein_error_prefix(err, err->msg[0] == '/' ? "/runner" : "/runner: ");
            pointer_from(pointer, pointer_size, "", err->msg);
        }
        return rc;
    }
    t->kind = k->kind;
    return REIN_OK;
}

/* rein__tools_add with the write lock held. */
static rein_err add_locked(rein_registry *reg, json_t *manifest,
                           const struct rein_runner_kind *kind, void *state, const char *base_dir,
                           const char *source, char *pointer, size_t pointer_size, rein_error *err)
{
    json_t *norm = NULL;
    rein_tool *t;
    rein_err rc;

    rc = rein__tools_manifest_check(reg, manifest, kind ? kind->name : "builtin", &norm, pointer,
                                    pointer_size, err);
    if (rc)
        goto out_close;
    const char *id = json_string_value(json_object_get(norm, "id"));
    if (rein__tools_lookup(reg, id, strlen(id))) {
        if (pointer)
            snprintf(pointer, pointer_size, "/id");
        rc = rein_error_set(err, REIN_EEXIST, "/id: a tool named %s is already registered", id);
        json_decref(norm);
        goto out_close;
    }
    t = rein_calloc(1, sizeof(*t));
    if (!t) {
        json_decref(norm);
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory adding %s", id);
        goto out_close;
    }
    rc = tool_build(t, norm, source, pointer, pointer_size, err);
    if (!rc && kind) {
        t->kind = kind;
        t->state = state;
        state = NULL; /* the tool owns it now, also when a later step fails */
        kind = NULL;
    } else if (!rc) {
        rc = open_runner(reg, t, base_dir, pointer, pointer_size, err);
    }
    if (!rc)
        rc = insert(reg, t, err);
    if (rc) {
        tool_free(t);
        goto out_close;
    }
    return REIN_OK;

out_close:
    if (kind && kind->close)
        kind->close(state);
    return rc;
}

rein_err rein__tools_add(rein_registry *reg, json_t *manifest, const struct rein_runner_kind *kind,
                         void *state, const char *base_dir, const char *source, char *pointer,
                         size_t pointer_size, rein_error *err)
{
    rein_err rc;

    if (pointer && pointer_size)
        pointer[0] = '\0';
    if (!reg) {
        if (kind && kind->close)
            kind->close(state);
        return rein_error_set(err, REIN_EINVAL, "no registry");
    }
    /* The whole add holds the write lock: the manifest meta-schema is compiled on first use,
     * and adds are rare next to lookups. */
    pthread_rwlock_wrlock(&reg->lock);
    rc = add_locked(reg, manifest, kind, state, base_dir, source, pointer, pointer_size, err);
    pthread_rwlock_unlock(&reg->lock);
    if (rc == REIN_OK)
        changed(reg);
    return rc;
}

rein_err rein_registry_add_manifest(rein_registry *reg, json_t *manifest, const char *base_dir,
                                    const char *source, rein_error *err)
{
    return rein__tools_add(reg, manifest, NULL, NULL, base_dir, source, NULL, 0, err);
}

rein_err rein_registry_add_builtin(rein_registry *reg, json_t *manifest, rein_tool_fn fn,
                                   void *userdata, void (*free_userdata)(void *userdata),
                                   rein_error *err)
{
    struct builtin_state *b = rein_calloc(1, sizeof(*b));
    json_t *runner = json_object_get(manifest, "runner");
    const char *kind = json_string_value(json_object_get(runner, "kind"));

    if (!b) {
        if (free_userdata)
            free_userdata(userdata);
        return rein_error_set(err, REIN_ENOMEM, "out of memory adding a built-in tool");
    }
    *b = (struct builtin_state){fn, userdata, free_userdata};
    if (!fn || (runner && (!kind || strcmp(kind, "builtin") != 0))) {
        builtin_close(b);
        return rein_error_set(err, REIN_EINVAL,
                              "/runner: a built-in tool has a C function and runner kind builtin");
    }
    return rein__tools_add(reg, manifest, &rein__tools_runner_builtin, b, NULL, NULL, NULL, 0, err);
}

rein_err rein_registry_add_tool(rein_registry *reg, json_t *manifest,
                                const struct rein_runner_kind *kind, void *state, rein_error *err)
{
    if (!kind || !kind->invoke) {
        if (kind && kind->close)
            kind->close(state);
        return rein_error_set(err, REIN_EINVAL, "a tool needs a runner kind with an invoke");
    }
    return rein__tools_add(reg, manifest, kind, state, NULL, NULL, NULL, 0, err);
}

const json_t *rein_registry_problems(const rein_registry *reg)
{
    return reg ? reg->problems : NULL;
}

size_t rein_registry_count(const rein_registry *reg)
{
    size_t n;

    if (!reg)
        return 0;
    rein__tools_rdlock(reg);
    n = reg->ntools;
    rein__tools_unlock(reg);
    return n;
}

const rein_tool *rein_registry_at(const rein_registry *reg, size_t i)
{
    const rein_tool *t;

    if (!reg)
        return NULL;
    rein__tools_rdlock(reg);
    t = i < reg->ntools ? reg->tools[i] : NULL;
    rein__tools_unlock(reg);
    return t;
}

/* ---- tool accessors ---- */

const char *rein_tool_id(const rein_tool *t)
{
    return t->id;
}

const char *rein_tool_description(const rein_tool *t)
{
    return t->description;
}

const json_t *rein_tool_manifest(const rein_tool *t)
{
    return t->manifest;
}

const json_t *rein_tool_parameters(const rein_tool *t)
{
    return t->parameters;
}

const json_t *rein_tool_output_schema(const rein_tool *t)
{
    return t->output;
}

const rein_schema *rein_tool_schema(const rein_tool *t)
{
    return t->schema;
}

const char *rein_tool_runner_kind(const rein_tool *t)
{
    return t->kind ? t->kind->name : "";
}

const char *rein_tool_source(const rein_tool *t)
{
    return t->source;
}

bool rein_tool_is_destructive(const rein_tool *t)
{
    return t->destructive;
}

bool rein_tool_is_read_only(const rein_tool *t)
{
    return t->read_only;
}

bool rein_tool_is_sequential(const rein_tool *t)
{
    return t->sequential;
}

int64_t rein_tool_timeout_ms(const rein_tool *t)
{
    return t->timeout_ms;
}

size_t rein_tool_route_count(const rein_tool *t)
{
    return t->nroutes;
}

const char *rein_tool_route_pattern(const rein_tool *t, size_t i)
{
    return i < t->nroutes ? t->routes[i].pattern : NULL;
}

/* Limits that keep a pathological pattern from running for long on a long message. */
static pcre2_match_context *match_ctx;
static pthread_once_t match_ctx_once = PTHREAD_ONCE_INIT;

static void make_match_ctx(void)
{
    match_ctx = pcre2_match_context_create(NULL);
    if (match_ctx) {
        pcre2_set_match_limit(match_ctx, 1000000);
        pcre2_set_depth_limit(match_ctx, 10000);
    }
}

static rein_err captures_json(const struct rein__tools_route *r, const char *text,
                              pcre2_match_data *md, json_t **out)
{
    uint32_t count = 0, entry = 0;
    PCRE2_SPTR table = NULL;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    json_t *obj = json_object();

    if (!obj)
        return REIN_ENOMEM;
    pcre2_pattern_info(r->code, PCRE2_INFO_NAMECOUNT, &count);
    pcre2_pattern_info(r->code, PCRE2_INFO_NAMEENTRYSIZE, &entry);
    pcre2_pattern_info(r->code, PCRE2_INFO_NAMETABLE, &table);
    for (uint32_t i = 0; i < count; i++) {
        PCRE2_SPTR e = table + (size_t)i * entry;
        uint32_t group = ((uint32_t)e[0] << 8) | e[1];
        if (ov[2 * group] == PCRE2_UNSET)
            continue;
        json_t *v =
            rein__json_string_lossy(text + ov[2 * group], ov[2 * group + 1] - ov[2 * group]);
        if (!v || json_object_set_new(obj, (const char *)(e + 2), v)) {
            json_decref(obj);
            return REIN_ENOMEM;
        }
    }
    *out = obj;
    return REIN_OK;
}

rein_err rein_tool_route_match(const rein_tool *t, size_t i, const char *text, size_t len,
                               json_t **captures, rein_error *err)
{
    pcre2_match_data *md;
    int rc;
    rein_err out = REIN_OK;

    if (captures)
        *captures = NULL;
    if (!t || i >= t->nroutes || !text)
        return rein_error_set(err, REIN_EINVAL, "no route %zu", i);
    pthread_once(&match_ctx_once, make_match_ctx);
    md = pcre2_match_data_create_from_pattern(t->routes[i].code, NULL);
    if (!md)
        return rein_error_set(err, REIN_ENOMEM, "out of memory matching a route");
    rc = pcre2_match(t->routes[i].code, (PCRE2_SPTR)text, len, 0, 0, md, match_ctx);
    if (rc == PCRE2_ERROR_NOMATCH) {
        out = REIN_ENOTFOUND;
    } else if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT) {
        out = rein_error_set(err, REIN_ETOOBIG, "route %s: match limit reached",
                             t->routes[i].pattern);
    } else if (rc < 0) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(rc, msg, sizeof(msg));
        out = rein_error_set(err, REIN_EINVAL, "route %s: %s", t->routes[i].pattern,
                             (const char *)msg);
    } else if (captures && captures_json(&t->routes[i], text, md, captures)) {
        out = rein_error_set(err, REIN_ENOMEM, "out of memory matching a route");
    }
    pcre2_match_data_free(md);
    return out;
}

/* ---- exports ---- */

static json_t *mcp_annotations(const rein_tool *t)
{
    const json_t *m = t->manifest;
    json_t *a = json_pack("{s:O*, s:b, s:b, s:O*, s:O*}", "title", json_object_get(m, "title"),
                          "readOnlyHint", t->read_only, "destructiveHint", t->destructive,
                          "idempotentHint", json_object_get(m, "idempotent"), "openWorldHint",
                          json_object_get(m, "open_world"));

    return a;
}

json_t *rein_tool_json(const rein_tool *t, enum rein_tool_format fmt)
{
    json_t *title;

    switch (fmt) {
    case REIN_TOOLS_OPENAI:
        return json_pack("{s:s, s:{s:s, s:s, s:O}}", "type", "function", "function", "name", t->id,
                         "description", t->description, "parameters", t->parameters);
    case REIN_TOOLS_ANTHROPIC:
        return json_pack("{s:s, s:s, s:O}", "name", t->id, "description", t->description,
                         "input_schema", t->parameters);
    case REIN_TOOLS_MCP:
        title = json_object_get(t->manifest, "title");
        /* MCP (up to 2025-11-25) describes structured output only as an object. */
        return json_pack("{s:s, s:O*, s:s, s:O, s:O*, s:o}", "name", t->id, "title", title,
                         "description", t->description, "inputSchema", t->parameters,
                         "outputSchema", rein__tools_schema_is_object(t->output) ? t->output : NULL,
                         "annotations", mcp_annotations(t));
    }
    return NULL;
}

/* New array of f(tool) for every tool. */
static json_t *collect(const rein_registry *reg, json_t *(*f)(const rein_tool *t, int fmt), int fmt)
{
    json_t *arr = json_array();

    rein__tools_rdlock(reg);
    for (size_t i = 0; arr && i < reg->ntools; i++) {
        if (json_array_append_new(arr, f(reg->tools[i], fmt))) {
            json_decref(arr);
            arr = NULL;
        }
    }
    rein__tools_unlock(reg);
    return arr;
}

static json_t *as_format(const rein_tool *t, int fmt)
{
    return rein_tool_json(t, (enum rein_tool_format)fmt);
}

static json_t *as_manifest(const rein_tool *t, int fmt)
{
    (void)fmt;
    return json_incref(t->manifest);
}

static json_t *as_name(const rein_tool *t, int fmt)
{
    (void)fmt;
    return json_string(t->id);
}

json_t *rein_registry_tools_json(const rein_registry *reg, enum rein_tool_format fmt)
{
    return reg ? collect(reg, as_format, (int)fmt) : NULL;
}

json_t *rein_registry_manifests_json(const rein_registry *reg)
{
    return reg ? collect(reg, as_manifest, 0) : NULL;
}

json_t *rein_registry_names_json(const rein_registry *reg)
{
    return reg ? collect(reg, as_name, 0) : NULL;
}
