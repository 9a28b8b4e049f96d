/*
 * The call ledger (000_47403d59ab6ffe48.txt): one entry per tool call, written `pending`
 * before the call runs and updated when its result arrives, so a step or a turn that ends
 * with a pending entry is visibly unfinished (a lost call, or one the model only claimed to
 * make).
 *
 * Entries live in one growable array under a mutex; the strings of an entry share one
 * allocation. The pipeline updates its own entry by position; other callers (the plan engine,
 * a replay) pair a result with its call by call id, or first in, first out per tool when the
 * provider gave no ids. The optional hook sees every change as JSON, outside the lock, on the
 * thread that made it: that is where the store makes each change durable.
 */
#include "tools_int.h"

#include <pthread.h>
#include <string.h>

struct entry {
    char *strings; /* call_id \0 tool \0 sent_name \0 trace_id \0 (one allocation) */
    const char *call_id, *tool, *sent_name, *trace_id;
    size_t tool_len, sent_len;
    bool has_step;
    int step;
    json_t *args; /* NULL: args_text as a string, or null */
    char *args_text;
    size_t args_len;
    enum rein_call_status status;
    json_t *result;
    int64_t call_wall_ms, response_wall_ms, latency_ms;
};

struct rein_ledger {
    pthread_mutex_t lock;
    struct entry *v;
    size_t n, cap;
    rein_ledger_hook_fn hook;
    void *hook_data;
};

const char *rein_call_status_name(enum rein_call_status status)
{
    switch (status) {
    case REIN_CALL_SUCCESS:
        return "success";
    case REIN_CALL_ERROR:
        return "error";
    case REIN_CALL_INVALID:
        return "invalid";
    default:
        return "pending";
    }
}

rein_ledger *rein_ledger_new(void)
{
    rein_ledger *l = rein_calloc(1, sizeof(*l));

    if (!l)
        return NULL;
    pthread_mutex_init(&l->lock, NULL);
    return l;
}

static void entry_release(struct entry *e)
{
    rein_free(e->strings);
    rein_free(e->args_text);
    json_decref(e->args);
    json_decref(e->result);
}

void rein_ledger_free(rein_ledger *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        entry_release(&l->v[i]);
    rein_free(l->v);
    pthread_mutex_destroy(&l->lock);
    rein_free(l);
}

void rein_ledger_set_hook(rein_ledger *l, rein_ledger_hook_fn fn, void *userdata)
{
    pthread_mutex_lock(&l->lock);
    l->hook = fn;
    l->hook_data = userdata;
    pthread_mutex_unlock(&l->lock);
}

static void write_time(struct rein_jw *w, int64_t wall_ms)
{
    char iso[REIN_TIME_ISO_LEN];

    if (wall_ms <= 0)
        rein_jw_null(w);
    else
        rein_jw_str(w, rein_time_iso(wall_ms, iso));
}

void rein__entry_write(struct rein_jw *w, const struct rein__entry_view *v)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "call_id");
    rein_jw_str(w, v->call_id);
    rein_jw_key(w, "tool");
    rein_jw_strn(w, v->tool, v->tool_len);
    rein_jw_key(w, "args");
    if (v->args)
        rein_jw_json(w, v->args);
    else if (v->args_text)
        rein_jw_strn(w, v->args_text, v->args_len);
    else
        rein_jw_null(w);
    rein_jw_key(w, "status");
    rein_jw_str(w, rein_call_status_name(v->status));
    rein_jw_key(w, "result");
    if (v->result)
        rein_jw_json(w, v->result);
    else
        rein_jw_null(w);
    rein_jw_key(w, "call_time");
    write_time(w, v->call_wall_ms);
    rein_jw_key(w, "response_time");
    write_time(w, v->response_wall_ms);
    rein_jw_key(w, "step");
    if (v->has_step)
        rein_jw_int(w, v->step);
    else
        rein_jw_null(w);
    rein_jw_key(w, "sent_name");
    if (v->sent_name)
        rein_jw_strn(w, v->sent_name, v->sent_len);
    else
        rein_jw_strn(w, v->tool, v->tool_len);
    rein_jw_key(w, "trace_id");
    rein_jw_str(w, v->trace_id);
    rein_jw_key(w, "latency_ms");
    if (v->latency_ms >= 0)
        rein_jw_int(w, v->latency_ms);
    else
        rein_jw_null(w);
    rein_jw_obj_end(w);
}

static struct rein__entry_view view_of(const struct entry *e)
{
    return (struct rein__entry_view){
        .call_id = e->call_id,
        .tool = e->tool,
        .tool_len = e->tool_len,
        .sent_name = e->sent_name,
        .sent_len = e->sent_len,
        .args = e->args,
        .args_text = e->args_text,
        .args_len = e->args_len,
        .status = e->status,
        .result = e->result,
        .call_wall_ms = e->call_wall_ms,
        .response_wall_ms = e->response_wall_ms,
        .has_step = e->has_step,
        .step = e->step,
        .trace_id = e->trace_id,
        .latency_ms = e->latency_ms,
    };
}

static json_t *entry_json(const struct entry *e)
{
    struct rein__entry_view v = view_of(e);
    struct rein_buf b;
    struct rein_jw w;
    json_t *j = NULL;

    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein__entry_write(&w, &v);
    if (rein_jw_finish(&w) == REIN_OK)
        j = rein_json_parse(b.ptr, b.len, 0, NULL);
    rein_buf_release(&b);
    return j;
}

/* Copies the strings of v into one block owned by e. */
static rein_err entry_fill(struct entry *e, const struct rein__entry_view *v)
{
    size_t id_len = strlen(v->call_id), trace_len = v->trace_id ? strlen(v->trace_id) : 0;
    size_t sent_len = v->sent_name ? v->sent_len : 0;
    size_t total = id_len + v->tool_len + sent_len + trace_len + 4;
    char *p;

    memset(e, 0, sizeof(*e));
    e->strings = rein_malloc(total);
    if (!e->strings)
        return REIN_ENOMEM;
    p = e->strings;
    memcpy(p, v->call_id, id_len + 1);
    e->call_id = p;
    p += id_len + 1;
    memcpy(p, v->tool, v->tool_len);
    p[v->tool_len] = '\0';
    e->tool = p;
    e->tool_len = v->tool_len;
    p += v->tool_len + 1;
    if (v->sent_name) {
        memcpy(p, v->sent_name, sent_len);
        p[sent_len] = '\0';
        e->sent_name = p;
        e->sent_len = sent_len;
        p += sent_len + 1;
    }
    if (v->trace_id) {
        memcpy(p, v->trace_id, trace_len + 1);
        e->trace_id = p;
    }
    if (v->args) {
        e->args = json_incref((json_t *)v->args);
    } else if (v->args_text) {
        e->args_text = rein_strndup(v->args_text, v->args_len);
        if (!e->args_text) {
            rein_free(e->strings);
            return REIN_ENOMEM;
        }
        e->args_len = v->args_len;
    }
    e->status = v->status;
    e->result = v->result ? json_incref((json_t *)v->result) : NULL;
    e->call_wall_ms = v->call_wall_ms;
    e->response_wall_ms = v->response_wall_ms;
    e->has_step = v->has_step;
    e->step = v->step;
    e->latency_ms = v->latency_ms;
    return REIN_OK;
}

/* Runs the hook on entry i (a snapshot taken under the lock), outside the lock. */
static rein_err notify(rein_ledger *l, json_t *snapshot, rein_ledger_hook_fn hook, void *data,
                       rein_error *err)
{
    rein_err rc = REIN_OK;

    if (!hook)
        return REIN_OK;
    if (!snapshot)
        return rein_error_set(err, REIN_ENOMEM, "ledger: out of memory describing an entry");
    rc = hook(data, snapshot);
    json_decref(snapshot);
    if (rc && err && err->code == 0)
        rein_error_set(err, rc, "ledger: the persistence hook failed: %s", rein_strerror(rc));
    (void)l;
    return rc;
}

rein_err rein__ledger_begin(rein_ledger *l, const struct rein__entry_view *v, size_t *index,
                            rein_error *err)
{
    rein_ledger_hook_fn hook;
    void *hook_data;
    json_t *snapshot = NULL;
    struct entry e;

    if (entry_fill(&e, v))
        return rein_error_set(err, REIN_ENOMEM, "ledger: out of memory");
    pthread_mutex_lock(&l->lock);
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        struct entry *nv = rein_realloc(l->v, cap * sizeof(*nv));
        if (!nv) {
            pthread_mutex_unlock(&l->lock);
            entry_release(&e);
            return rein_error_set(err, REIN_ENOMEM, "ledger: out of memory");
        }
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n] = e;
    if (index)
        *index = l->n;
    l->n++;
    hook = l->hook;
    hook_data = l->hook_data;
    if (hook)
        snapshot = entry_json(&e);
    pthread_mutex_unlock(&l->lock);
    return notify(l, snapshot, hook, hook_data, err);
}

/* Sets the final state of entry i and returns the hook's snapshot (or NULL). Called locked. */
static json_t *finish_locked(rein_ledger *l, size_t i, enum rein_call_status status,
                             const json_t *result, int64_t response_wall_ms, int64_t latency_ms)
{
    struct entry *e = &l->v[i];

    e->status = status;
    json_decref(e->result);
    e->result = result ? json_incref((json_t *)result) : NULL;
    e->response_wall_ms = response_wall_ms;
    e->latency_ms = latency_ms;
    return l->hook ? entry_json(e) : NULL;
}

rein_err rein__ledger_finish(rein_ledger *l, size_t index, enum rein_call_status status,
                             const json_t *result, int64_t response_wall_ms, int64_t latency_ms,
                             rein_error *err)
{
    rein_ledger_hook_fn hook;
    void *hook_data;
    json_t *snapshot;

    pthread_mutex_lock(&l->lock);
    if (index >= l->n) {
        pthread_mutex_unlock(&l->lock);
        return rein_error_set(err, REIN_EINVAL, "ledger: no entry %zu", index);
    }
    snapshot = finish_locked(l, index, status, result, response_wall_ms, latency_ms);
    hook = l->hook;
    hook_data = l->hook_data;
    pthread_mutex_unlock(&l->lock);
    return notify(l, snapshot, hook, hook_data, err);
}

rein_err rein_ledger_add_call(rein_ledger *l, const struct rein_ledger_call *call, size_t *index,
                              rein_error *err)
{
    char id[REIN_ID_MAX];
    const char *call_id = call ? call->call_id : NULL;

    if (!l || !call || !call->tool)
        return rein_error_set(err, REIN_EINVAL, "ledger: a call needs a tool name");
    if (!call_id || !call_id[0]) {
        rein_id_new("call_", id);
        call_id = id;
    }
    struct rein__entry_view v = {
        .call_id = call_id,
        .tool = call->tool,
        .tool_len = strlen(call->tool),
        .sent_name = call->sent_name,
        .sent_len = call->sent_name ? strlen(call->sent_name) : 0,
        .args = call->args,
        .status = REIN_CALL_PENDING,
        .call_wall_ms = rein_wall_ms(),
        .has_step = call->has_step,
        .step = call->step,
        .trace_id = call->trace_id,
        .latency_ms = -1,
    };
    return rein__ledger_begin(l, &v, index, err);
}

static bool same_step(const struct entry *e, bool has_step, int step)
{
    return e->has_step == has_step && (!has_step || e->step == step);
}

/* The entry a result belongs to (see rein_ledger_update_result), or -1. Called locked. */
static long find_pending(const rein_ledger *l, bool has_step, int step, const char *call_id,
                         const char *tool)
{
    for (size_t i = 0; i < l->n; i++) {
        const struct entry *e = &l->v[i];
        if (e->status != REIN_CALL_PENDING)
            continue;
        if (call_id && call_id[0]) {
            if (strcmp(e->call_id, call_id) == 0)
                return (long)i;
            continue;
        }
        if (tool && same_step(e, has_step, step) &&
            (strcmp(e->tool, tool) == 0 || (e->sent_name && strcmp(e->sent_name, tool) == 0)))
            return (long)i;
    }
    return -1;
}

rein_err rein_ledger_update_result(rein_ledger *l, bool has_step, int step, const char *call_id,
                                   const char *tool, enum rein_call_status status,
                                   const json_t *result, rein_error *err)
{
    rein_ledger_hook_fn hook;
    void *hook_data;
    json_t *snapshot;
    long i;

    if (!l || status == REIN_CALL_PENDING)
        return rein_error_set(err, REIN_EINVAL, "ledger: a result needs a final status");
    /* Finding and updating under one lock, so two results never claim the same call. */
    pthread_mutex_lock(&l->lock);
    i = find_pending(l, has_step, step, call_id, tool);
    if (i < 0) {
        pthread_mutex_unlock(&l->lock);
        if (call_id && call_id[0])
            return rein_error_set(err, REIN_ENOTFOUND, "ledger: no pending call %s", call_id);
        return rein_error_set(err, REIN_ENOTFOUND, "ledger: no pending call of %s%s",
                              tool ? tool : "(no tool)", has_step ? " in this step" : "");
    }
    snapshot = finish_locked(l, (size_t)i, status, result, rein_wall_ms(), -1);
    hook = l->hook;
    hook_data = l->hook_data;
    pthread_mutex_unlock(&l->lock);
    return notify(l, snapshot, hook, hook_data, err);
}

size_t rein_ledger_count(const rein_ledger *l)
{
    size_t n;

    pthread_mutex_lock((pthread_mutex_t *)&l->lock);
    n = l->n;
    pthread_mutex_unlock((pthread_mutex_t *)&l->lock);
    return n;
}

json_t *rein_ledger_entry_json(const rein_ledger *l, size_t i)
{
    json_t *j = NULL;

    pthread_mutex_lock((pthread_mutex_t *)&l->lock);
    if (i < l->n)
        j = entry_json(&l->v[i]);
    pthread_mutex_unlock((pthread_mutex_t *)&l->lock);
    return j;
}

/* New array of the entries that match (all, or one step; only pending ones when asked). */
static json_t *select_entries(const rein_ledger *l, bool all_steps, bool has_step, int step,
                              bool pending_only)
{
    json_t *arr = json_array();

    if (!arr)
        return NULL;
    pthread_mutex_lock((pthread_mutex_t *)&l->lock);
    for (size_t i = 0; i < l->n; i++) {
        const struct entry *e = &l->v[i];
        if (!all_steps && !same_step(e, has_step, step))
            continue;
        if (pending_only && e->status != REIN_CALL_PENDING)
            continue;
        if (json_array_append_new(arr, entry_json(e))) {
            json_decref(arr);
            arr = NULL;
            break;
        }
    }
    pthread_mutex_unlock((pthread_mutex_t *)&l->lock);
    return arr;
}

json_t *rein_ledger_json(const rein_ledger *l, bool all_steps, bool has_step, int step)
{
    return select_entries(l, all_steps, has_step, step, false);
}

json_t *rein_ledger_finalize(const rein_ledger *l, bool has_step, int step)
{
    return select_entries(l, false, has_step, step, true);
}

size_t rein_ledger_pending_count(const rein_ledger *l, bool all_steps, bool has_step, int step)
{
    size_t n = 0;

    pthread_mutex_lock((pthread_mutex_t *)&l->lock);
    for (size_t i = 0; i < l->n; i++) {
        const struct entry *e = &l->v[i];
        if ((all_steps || same_step(e, has_step, step)) && e->status == REIN_CALL_PENDING)
            n++;
    }
    pthread_mutex_unlock((pthread_mutex_t *)&l->lock);
    return n;
}

bool rein_ledger_verify(const rein_ledger *l, bool has_step, int step)
{
    return rein_ledger_pending_count(l, false, has_step, step) == 0;
}
