/*
 * The call ledger (docs/DESIGN.md [cortex]): one entry per tool call, written `pending`
 * before the call runs and updated when its result arrives, so a step or a turn that ends
 * with a pending entry is visibly unfinished (a lost call, or one the model only claimed to
 * make).
 *
 * Entries live in blocks of ENTRY_BLOCK under a mutex, so appending never moves an entry or
 * copies the ledger. An entry keeps its arguments and result as compact JSON text, inside the
 * entry when short: it holds no reference into a call's live values (which would keep every
 * call's memory alive until the ledger goes), and text is what the store writes anyway. The
 * pipeline updates its own entry by position; other callers (the plan engine, a replay) pair
 * a result with its call by call id, or first in, first out per tool when the provider gave
 * no ids. The optional hook sees every change as a struct rein_ledger_entry (a copy of the
 * entry's texts taken under the lock), outside the lock, on the thread that made it: that is
 * where the store makes each change durable, with no JSON tree built on the way.
 */
#include "tools_int.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>

#define ENTRY_BLOCK  64
#define SMALL_BYTES  160 /* call id, tool, sent name, trace id and arguments */
#define SMALL_RESULT 48

/*
 * Invariants: strings is small or a heap block holding call_id, tool, sent_name (when set),
 * trace_id (when set) and args (when set), each NUL-terminated; result is small_result or a
 * heap block, or NULL for null.
 */
struct entry {
    char *strings;
    const char *call_id, *tool, *sent_name, *trace_id, *args;
    size_t tool_len, sent_len, args_len;
    bool args_is_text; /* args is unparsable text, written as a JSON string */
    bool has_step;
    int step;
    enum rein_call_status status;
    char *result;
    size_t result_len;
    int64_t call_wall_ms, response_wall_ms, latency_ms;
    /* The short result before the strings: a typical entry then spans four cache lines, not
     * six, and each call writes a fresh entry. */
    char small_result[SMALL_RESULT];
    char small[SMALL_BYTES];
};

/*
 * Blocks of freed ledgers, kept for the next ones (at most BLOCK_CACHE, 670 KiB): a
 * server's conversations come and go, and a block reused is memory the allocator does not give
 * back to the kernel only to fault it in again for the next conversation.
 */
#define BLOCK_CACHE 32
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *cache[BLOCK_CACHE];
static size_t ncached;

static struct entry *block_get(void)
{
    struct entry *b = NULL;

    pthread_mutex_lock(&cache_lock);
    if (ncached)
        b = cache[--ncached];
    pthread_mutex_unlock(&cache_lock);
    return b ? b : rein_malloc(ENTRY_BLOCK * sizeof(struct entry));
}

static void block_put(struct entry *b)
{
    pthread_mutex_lock(&cache_lock);
    if (ncached < BLOCK_CACHE) {
        cache[ncached++] = b;
        b = NULL;
    }
    pthread_mutex_unlock(&cache_lock);
    rein_free(b);
}

struct rein_ledger {
    pthread_mutex_t lock;
    struct entry **blocks; /* n entries in blocks of ENTRY_BLOCK */
    size_t n, nblocks;
    rein_ledger_hook_fn hook;
    void *hook_data;
};

#define NAME(id, name) name,
static const char *const status_names[] = {REIN_CALL_STATUS_MAP(NAME)};
#undef NAME

const char *rein_call_status_name(enum rein_call_status status)
{
    if ((unsigned)status >= REIN_ARRAY_SIZE(status_names))
        return "unknown";
    return status_names[status];
}

bool rein_call_status_parse(const char *text, enum rein_call_status *out)
{
    for (size_t i = 0; text && i < REIN_ARRAY_SIZE(status_names); i++) {
        if (strcmp(text, status_names[i]) == 0) {
            *out = (enum rein_call_status)i;
            return true;
        }
    }
    return false;
}

rein_ledger *rein_ledger_new(void)
{
    rein_ledger *l = rein_calloc(1, sizeof(*l));

    if (!l)
        return NULL;
    pthread_mutex_init(&l->lock, NULL);
    return l;
}

/* Entry i (i < n). Called locked. */
static struct entry *at(const rein_ledger *l, size_t i)
{
    return &l->blocks[i / ENTRY_BLOCK][i % ENTRY_BLOCK];
}

static void entry_release(struct entry *e)
{
    if (e->strings != e->small)
        rein_free(e->strings);
    if (e->result != e->small_result)
        rein_free(e->result);
}

void rein_ledger_free(rein_ledger *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        entry_release(at(l, i));
    for (size_t b = 0; b < l->nblocks; b++)
        block_put(l->blocks[b]);
    rein_free(l->blocks);
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

void rein__tools_entry_write(struct rein_jw *w, const struct rein__tools_entry_view *v)
{
    rein_jw_obj_begin(w);
    rein_jw_key(w, "call_id");
    rein_jw_str(w, v->call_id);
    rein_jw_key(w, "tool");
    rein_jw_strn(w, v->tool, v->tool_len);
    rein_jw_key(w, "args");
    if (v->args_json)
        rein_jw_raw(w, v->args_json, v->args_json_len);
    else if (v->args_text)
        rein_jw_strn(w, v->args_text, v->args_len);
    else
        rein_jw_null(w);
    rein_jw_key(w, "status");
    rein_jw_str(w, rein_call_status_name(v->status));
    rein_jw_key(w, "result");
    if (v->result_json)
        rein_jw_raw(w, v->result_json, v->result_len);
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
    rein_jw_key(w, "interrupted");
    rein_jw_bool(w, v->interrupted);
    rein_jw_obj_end(w);
}

void rein_ledger_entry_write(const struct rein_ledger_entry *e, struct rein_jw *w)
{
    struct rein__tools_entry_view v = {
        .call_id = e->call_id,
        .tool = e->tool,
        .tool_len = strlen(e->tool),
        .sent_name = e->sent_name,
        .sent_len = e->sent_name ? strlen(e->sent_name) : 0,
        .args_json = e->args,
        .args_json_len = e->args ? strlen(e->args) : 0,
        .status = e->status,
        .result_json = e->result,
        .result_len = e->result ? strlen(e->result) : 0,
        .call_wall_ms = e->call_ms,
        .response_wall_ms = e->response_ms,
        .has_step = e->has_step,
        .step = e->step,
        .trace_id = e->trace_id,
        .latency_ms = e->latency_ms,
        .interrupted = e->interrupted,
    };

    rein__tools_entry_write(w, &v);
}

/* The JSON text in b as a new tree; NULL when the writer failed or a text was not JSON. */
static json_t *written_json(struct rein_jw *w, struct rein_buf *b)
{
    return rein_jw_finish(w) == REIN_OK ? rein_json_parse(b->ptr, b->len, 0, NULL) : NULL;
}

json_t *rein_ledger_entry_to_json(const struct rein_ledger_entry *e)
{
    struct rein_buf b;
    struct rein_jw w;
    json_t *j;

    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_ledger_entry_write(e, &w);
    j = written_json(&w, &b);
    rein_buf_release(&b);
    return j;
}

static struct rein__tools_entry_view view_of(const struct entry *e)
{
    return (struct rein__tools_entry_view){
        .call_id = e->call_id,
        .tool = e->tool,
        .tool_len = e->tool_len,
        .sent_name = e->sent_name,
        .sent_len = e->sent_len,
        .args_json = e->args_is_text ? NULL : e->args,
        .args_json_len = e->args_len,
        .args_text = e->args_is_text ? e->args : NULL,
        .args_len = e->args_len,
        .status = e->status,
        .result_json = e->result,
        .result_len = e->result_len,
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
    struct rein__tools_entry_view v = view_of(e);
    struct rein_buf b;
    struct rein_jw w;
    json_t *j;

    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein__tools_entry_write(&w, &v);
    j = written_json(&w, &b);
    rein_buf_release(&b);
    return j;
}

/*
 * What the hook gets: the entry as a struct rein_ledger_entry whose texts are copied into mem
 * (taken under the lock, read outside it, while other threads may change the entry).
 * Arguments kept as unparsable text become a JSON string here.
 */
struct snapshot {
    struct rein_ledger_entry e;
    struct rein_buf mem;
};

/* Appends len bytes of s and a NUL to b; returns the offset, or SIZE_MAX when out of memory. */
static size_t keep(struct rein_buf *b, const char *s, size_t len)
{
    size_t off = b->len;

    if (rein_buf_add(b, s, len) != REIN_OK || rein_buf_addch(b, '\0') != REIN_OK)
        return SIZE_MAX;
    return off;
}

static rein_err snapshot_take(const struct entry *en, struct snapshot *s)
{
    struct rein_buf *b = &s->mem;
    size_t id, tool, sent = 0, trace = 0, args = 0, result = 0;
    bool ok;

    rein_buf_init(b, 0);
    id = keep(b, en->call_id, strlen(en->call_id));
    tool = keep(b, en->tool, en->tool_len);
    ok = id != SIZE_MAX && tool != SIZE_MAX;
    if (ok && en->sent_name)
        ok = (sent = keep(b, en->sent_name, en->sent_len)) != SIZE_MAX;
    if (ok && en->trace_id)
        ok = (trace = keep(b, en->trace_id, strlen(en->trace_id))) != SIZE_MAX;
    if (ok && en->args && en->args_is_text) {
        args = b->len;
        ok = rein_buf_addch(b, '"') == REIN_OK &&
             rein_json_escape(b, en->args, en->args_len) == REIN_OK &&
             rein_buf_add(b, "\"", 2) == REIN_OK;
    } else if (ok) {
        ok = (args = en->args ? keep(b, en->args, en->args_len) : keep(b, "null", 4)) != SIZE_MAX;
    }
    if (ok && en->result)
        ok = (result = keep(b, en->result, en->result_len)) != SIZE_MAX;
    if (!ok) {
        rein_buf_release(b);
        return REIN_ENOMEM;
    }
    /* The buffer has stopped moving: point into it now. */
    s->e = (struct rein_ledger_entry){
        .call_id = b->ptr + id,
        .tool = b->ptr + tool,
        .sent_name = en->sent_name ? b->ptr + sent : NULL,
        .args = b->ptr + args,
        .status = en->status,
        .result = en->result ? b->ptr + result : NULL,
        .call_ms = en->call_wall_ms,
        .response_ms = en->response_wall_ms,
        .latency_ms = en->latency_ms,
        .has_step = en->has_step,
        .step = en->step,
        .trace_id = en->trace_id ? b->ptr + trace : NULL,
    };
    return REIN_OK;
}

/* Copies len bytes of s to *p and NUL-terminates; returns the copy and advances *p. */
static const char *put(char **p, const char *s, size_t len)
{
    char *at = *p;

    if (len)
        memcpy(at, s, len);
    at[len] = '\0';
    *p += len + 1;
    return at;
}

/* Sets the entry's result text (copied from outside the entry; NULL for null). */
static rein_err set_result(struct entry *e, const char *json, size_t len)
{
    char *r = NULL;

    if (json) {
        r = len < sizeof(e->small_result) ? e->small_result : rein_malloc(len + 1);
        if (!r)
            return REIN_ENOMEM; /* the old result stays */
    }
    if (e->result && e->result != e->small_result)
        rein_free(e->result);
    if (r) {
        memcpy(r, json, len);
        r[len] = '\0';
    }
    e->result = r;
    e->result_len = r ? len : 0;
    return REIN_OK;
}

/* Fills e from v, copying every string. */
static rein_err entry_fill(struct entry *e, const struct rein__tools_entry_view *v)
{
    size_t id_len = v->call_id_len ? v->call_id_len : strlen(v->call_id);
    size_t trace_len = v->trace_id_len ? v->trace_id_len : v->trace_id ? strlen(v->trace_id) : 0;
    size_t sent_len = v->sent_name ? v->sent_len : 0;
    const char *args = v->args_json ? v->args_json : v->args_text;
    size_t args_len = v->args_json ? v->args_json_len : v->args_len;
    size_t total = id_len + v->tool_len + sent_len + trace_len + (args ? args_len : 0) + 5;
    char *p;

    memset(e, 0, offsetof(struct entry, small_result));
    e->strings = total <= sizeof(e->small) ? e->small : rein_malloc(total);
    if (!e->strings)
        return REIN_ENOMEM;
    p = e->strings;
    e->call_id = put(&p, v->call_id, id_len);
    e->tool = put(&p, v->tool, v->tool_len);
    e->tool_len = v->tool_len;
    if (v->sent_name) {
        e->sent_name = put(&p, v->sent_name, sent_len);
        e->sent_len = sent_len;
    }
    if (v->trace_id)
        e->trace_id = put(&p, v->trace_id, trace_len);
    if (args) {
        e->args = put(&p, args, args_len);
        e->args_len = args_len;
        e->args_is_text = !v->args_json;
    }
    e->status = v->status;
    e->call_wall_ms = v->call_wall_ms;
    e->response_wall_ms = v->response_wall_ms;
    e->has_step = v->has_step;
    e->step = v->step;
    e->latency_ms = v->latency_ms;
    if (set_result(e, v->result_json, v->result_len)) {
        entry_release(e);
        return REIN_ENOMEM;
    }
    return REIN_OK;
}

/* Runs the hook with a snapshot (taken under the lock, or failed to), outside the lock. */
static rein_err notify(struct snapshot *snap, rein_err taken, rein_ledger_hook_fn hook, void *data,
                       rein_error *err)
{
    rein_err rc;

    if (!hook)
        return REIN_OK;
    if (taken != REIN_OK)
        return rein_error_set(err, REIN_ENOMEM, "ledger: out of memory describing an entry");
    rc = hook(data, &snap->e);
    rein_buf_release(&snap->mem);
    if (rc)
        rein_error_set(err, rc, "ledger: the persistence hook failed: %s", rein_strerror(rc));
    return rc;
}

/* Makes room for one more entry. Called locked. */
static rein_err reserve(rein_ledger *l)
{
    struct entry **blocks;

    if (l->n < l->nblocks * ENTRY_BLOCK)
        return REIN_OK;
    blocks = rein_realloc(l->blocks, (l->nblocks + 1) * sizeof(struct entry *));
    if (!blocks)
        return REIN_ENOMEM;
    l->blocks = blocks;
    blocks[l->nblocks] = block_get();
    if (!blocks[l->nblocks])
        return REIN_ENOMEM;
    l->nblocks++;
    return REIN_OK;
}

rein_err rein__tools_ledger_begin(rein_ledger *l, const struct rein__tools_entry_view *v,
                                  size_t *index, rein_error *err)
{
    rein_ledger_hook_fn hook;
    void *hook_data;
    struct snapshot snap;
    rein_err taken = REIN_OK;
    struct entry *e;

    pthread_mutex_lock(&l->lock);
    if (reserve(l) || entry_fill((e = at(l, l->n)), v)) {
        pthread_mutex_unlock(&l->lock);
        return rein_error_set(err, REIN_ENOMEM, "ledger: out of memory");
    }
    if (index)
        *index = l->n;
    l->n++;
    hook = l->hook;
    hook_data = l->hook_data;
    if (hook)
        taken = snapshot_take(e, &snap);
    pthread_mutex_unlock(&l->lock);
    return notify(&snap, taken, hook, hook_data, err);
}

/* Sets the final state of entry i. Called locked; *taken says whether snap is the hook's copy. */
static rein_err finish_locked(rein_ledger *l, size_t i, enum rein_call_status status,
                              const char *result, size_t result_len, int64_t response_wall_ms,
                              int64_t latency_ms, struct snapshot *snap, rein_err *taken)
{
    struct entry *e = at(l, i);

    *taken = REIN_ENOMEM;
    if (set_result(e, result, result_len))
        return REIN_ENOMEM;
    e->status = status;
    e->response_wall_ms = response_wall_ms;
    e->latency_ms = latency_ms;
    if (l->hook)
        *taken = snapshot_take(e, snap);
    return REIN_OK;
}

rein_err rein__tools_ledger_finish(rein_ledger *l, size_t index, enum rein_call_status status,
                                   const char *result_json, size_t result_len,
                                   int64_t response_wall_ms, int64_t latency_ms, rein_error *err)
{
    rein_ledger_hook_fn hook;
    void *hook_data;
    struct snapshot snap;
    rein_err rc, taken;

    pthread_mutex_lock(&l->lock);
    if (index >= l->n) {
        pthread_mutex_unlock(&l->lock);
        return rein_error_set(err, REIN_EINVAL, "ledger: no entry %zu", index);
    }
    rc = finish_locked(l, index, status, result_json, result_len, response_wall_ms, latency_ms,
                       &snap, &taken);
    hook = l->hook;
    hook_data = l->hook_data;
    pthread_mutex_unlock(&l->lock);
    if (rc)
        return rein_error_set(err, rc, "ledger: out of memory recording a result");
    return notify(&snap, taken, hook, hook_data, err);
}

/* Compact JSON text of v (borrowed) in b; NULL when v is NULL. */
static const char *dump(const json_t *v, struct rein_buf *b, rein_err *rc)
{
    if (!v)
        return NULL;
    *rc = rein_json_dump(b, v);
    return b->ptr;
}

rein_err rein_ledger_add_call(rein_ledger *l, const struct rein_ledger_call *call, size_t *index,
                              rein_error *err)
{
    char id[REIN_ID_MAX];
    const char *call_id = call ? call->call_id : NULL;
    struct rein_buf args;
    rein_err rc = REIN_OK;

    if (!l || !call || !call->tool)
        return rein_error_set(err, REIN_EINVAL, "ledger: a call needs a tool name");
    if (!call_id || !call_id[0]) {
        rein_id_new("call_", id);
        call_id = id;
    }
    rein_buf_init(&args, 0);
    struct rein__tools_entry_view v = {
        .call_id = call_id,
        .tool = call->tool,
        .tool_len = strlen(call->tool),
        .sent_name = call->sent_name,
        .sent_len = call->sent_name ? strlen(call->sent_name) : 0,
        .args_json = dump(call->args, &args, &rc),
        .args_json_len = args.len,
        .status = REIN_CALL_PENDING,
        .call_wall_ms = rein_wall_ms(),
        .has_step = call->has_step,
        .step = call->step,
        .trace_id = call->trace_id,
        .latency_ms = -1,
    };
    if (!rc)
        rc = rein__tools_ledger_begin(l, &v, index, err);
    else
        rein_error_set(err, rc, "ledger: the arguments could not be written");
    rein_buf_release(&args);
    return rc;
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
        const struct entry *e = at(l, i);
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
    struct snapshot snap;
    struct rein_buf text;
    rein_err rc = REIN_OK, taken = REIN_ENOMEM;
    const char *json;
    long i;

    if (!l || status == REIN_CALL_PENDING)
        return rein_error_set(err, REIN_EINVAL, "ledger: a result needs a final status");
    rein_buf_init(&text, 0);
    json = dump(result, &text, &rc);
    if (rc) {
        rein_buf_release(&text);
        return rein_error_set(err, rc, "ledger: the result could not be written");
    }
    /* Finding and updating under one lock, so two results never claim the same call. */
    pthread_mutex_lock(&l->lock);
    i = find_pending(l, has_step, step, call_id, tool);
    if (i >= 0)
        rc = finish_locked(l, (size_t)i, status, json, text.len, rein_wall_ms(), -1, &snap, &taken);
    hook = l->hook;
    hook_data = l->hook_data;
    pthread_mutex_unlock(&l->lock);
    rein_buf_release(&text);
    if (i < 0) {
        if (call_id && call_id[0])
            return rein_error_set(err, REIN_ENOTFOUND, "ledger: no pending call %s", call_id);
        return rein_error_set(err, REIN_ENOTFOUND, "ledger: no pending call of %s%s",
                              tool ? tool : "(no tool)", has_step ? " in this step" : "");
    }
    if (rc)
        return rein_error_set(err, rc, "ledger: out of memory recording a result");
    return notify(&snap, taken, hook, hook_data, err);
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
        j = entry_json(at(l, i));
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
        const struct entry *e = at(l, i);
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
        const struct entry *e = at(l, i);
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
