/*
 * The plan (docs/DESIGN.md [cortex]'s Plan class): steps with dependencies, statuses, notes,
 * the tool history of each step, files, outputs of completed steps and replan counts, and the
 * seed's methods: add_tool_call, update_tool_result, finalize_step, rewrite_step, split_step,
 * get_step_output, ready steps and mark_step.
 *
 * A step's history keeps every attempt: each entry carries the replan count it was made under
 * ("attempt"), and an entry of a run that a crash or a cancel cut short is marked
 * "interrupted". Only the entries of the current attempt count for finalize and verify, so a
 * rewritten step is judged on what it did after the rewrite, while the record of what went
 * wrong before stays in the file.
 */
#include "plan_int.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#define NAME(id, name) name,
static const char *const status_names[] = {REIN_PLAN_STATUS_MAP(NAME)};
#undef NAME

const char *rein_plan_status_name(enum rein_plan_status s)
{
    return (size_t)s < REIN_ARRAY_SIZE(status_names) ? status_names[s] : "not_started";
}

bool rein_plan_status_parse(const char *text, enum rein_plan_status *out)
{
    for (size_t i = 0; text && i < REIN_ARRAY_SIZE(status_names); i++) {
        if (strcmp(text, status_names[i]) == 0) {
            *out = (enum rein_plan_status)i;
            return true;
        }
    }
    return false;
}

rein_plan *rein_plan_new(const char *title, const char *query)
{
    rein_plan *p = rein_calloc(1, sizeof(*p));

    if (!p)
        return NULL;
    p->title = rein_strdup(title ? title : "");
    p->query = rein_strdup(query ? query : "");
    if (!p->title || !p->query) {
        rein_plan_free(p);
        return NULL;
    }
    p->next_uid = 1;
    return p;
}

static void step_release(struct rein__plan_step *s)
{
    rein_free(s->desc);
    rein_free(s->deps);
    rein_free(s->note);
    json_decref(s->history);
    json_decref(s->files);
    rein_free(s->output);
}

void rein_plan_free(rein_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        step_release(&p->steps[i]);
    rein_free(p->steps);
    rein_free(p->title);
    rein_free(p->query);
    rein_free(p->answer);
    rein_free(p);
}

static rein_err reserve(rein_plan *p, size_t extra)
{
    struct rein__plan_step *steps;
    size_t cap;

    if (p->n + extra > REIN_PLAN_MAX_STEPS)
        return REIN_ETOOBIG;
    if (p->n + extra <= p->cap)
        return REIN_OK;
    cap = p->cap ? p->cap * 2 : 8;
    while (cap < p->n + extra)
        cap *= 2;
    steps = rein_realloc(p->steps, cap * sizeof(*steps));
    if (!steps)
        return REIN_ENOMEM;
    p->steps = steps;
    p->cap = cap;
    return REIN_OK;
}

/* Fills s as a new not_started step (desc copied). */
static rein_err step_init(rein_plan *p, struct rein__plan_step *s, const char *desc)
{
    memset(s, 0, sizeof(*s));
    s->desc = rein_strdup(desc ? desc : "");
    s->history = json_array();
    s->files = json_array();
    if (!s->desc || !s->history || !s->files) {
        step_release(s);
        memset(s, 0, sizeof(*s));
        return REIN_ENOMEM;
    }
    s->uid = p->next_uid++;
    return REIN_OK;
}

rein_err rein__plan_push(rein_plan *p, const char *desc, size_t *index)
{
    rein_err rc = reserve(p, 1);

    if (rc)
        return rc;
    rc = step_init(p, &p->steps[p->n], desc);
    if (rc)
        return rc;
    if (index)
        *index = p->n;
    p->n++;
    return REIN_OK;
}

long rein__plan_find_uid(const rein_plan *p, uint64_t uid)
{
    for (size_t i = 0; i < p->n; i++) {
        if (p->steps[i].uid == uid)
            return (long)i;
    }
    return -1;
}

rein_err rein__plan_set_deps(rein_plan *p, size_t i, const int *deps, size_t n)
{
    struct rein__plan_step *s = &p->steps[i];
    int *d = NULL;
    size_t m = 0;

    if (n > 0) {
        d = rein_calloc(n, sizeof(*d));
        if (!d)
            return REIN_ENOMEM;
    }
    for (size_t k = 0; k < n; k++) {
        bool seen = false;
        /* The step's invariant (plan_int.h): callers checked the indices already. */
        assert(deps[k] >= 0 && (size_t)deps[k] < p->n && (size_t)deps[k] != i);
        for (size_t j = 0; j < m && !seen; j++)
            seen = d[j] == deps[k];
        if (!seen)
            d[m++] = deps[k];
    }
    rein_free(s->deps);
    s->deps = d;
    s->ndeps = m;
    return REIN_OK;
}

/* ---- accessors ---- */

static const struct rein__plan_step *cstep(const rein_plan *p, size_t i)
{
    return p && i < p->n ? &p->steps[i] : NULL;
}

static struct rein__plan_step *step_at(rein_plan *p, size_t i)
{
    return p && i < p->n ? &p->steps[i] : NULL;
}

const char *rein_plan_title(const rein_plan *p)
{
    return p ? p->title : NULL;
}

const char *rein_plan_query(const rein_plan *p)
{
    return p ? p->query : NULL;
}

const char *rein_plan_answer(const rein_plan *p)
{
    return p ? p->answer : NULL;
}

rein_err rein_plan_set_answer(rein_plan *p, const char *answer)
{
    char *a = NULL;

    if (!p)
        return REIN_EINVAL;
    if (answer && !(a = rein_strdup(answer)))
        return REIN_ENOMEM;
    rein_free(p->answer);
    p->answer = a;
    return REIN_OK;
}

size_t rein_plan_step_count(const rein_plan *p)
{
    return p ? p->n : 0;
}

const char *rein_plan_step_description(const rein_plan *p, size_t i)
{
    const struct rein__plan_step *s = cstep(p, i);
    return s ? s->desc : NULL;
}

enum rein_plan_status rein_plan_step_status(const rein_plan *p, size_t i)
{
    const struct rein__plan_step *s = cstep(p, i);
    return s ? s->status : REIN_PLAN_NOT_STARTED;
}

const char *rein_plan_step_note(const rein_plan *p, size_t i)
{
    const struct rein__plan_step *s = cstep(p, i);
    return s ? s->note : NULL;
}

const int *rein_plan_step_deps(const rein_plan *p, size_t i, size_t *n)
{
    const struct rein__plan_step *s = cstep(p, i);

    if (n)
        *n = s ? s->ndeps : 0;
    return s ? s->deps : NULL;
}

int rein_plan_step_replans(const rein_plan *p, size_t i)
{
    const struct rein__plan_step *s = cstep(p, i);
    return s ? s->replans : 0;
}

void rein_plan_set_step_replans(rein_plan *p, size_t i, int n)
{
    struct rein__plan_step *s = step_at(p, i);

    if (s)
        s->replans = n < 0 ? 0 : n;
}

const json_t *rein_plan_step_history(const rein_plan *p, size_t i)
{
    const struct rein__plan_step *s = cstep(p, i);
    return s ? s->history : NULL;
}

const json_t *rein_plan_step_files(const rein_plan *p, size_t i)
{
    const struct rein__plan_step *s = cstep(p, i);
    return s ? s->files : NULL;
}

const char *rein_plan_get_step_output(const rein_plan *p, size_t i)
{
    const struct rein__plan_step *s = cstep(p, i);
    return s && s->status == REIN_PLAN_COMPLETED ? s->output : NULL;
}

rein_err rein_plan_set_step_output(rein_plan *p, size_t i, const char *output)
{
    struct rein__plan_step *s = step_at(p, i);
    char *o = NULL;

    if (!s)
        return REIN_EINVAL;
    if (output && !(o = rein_strdup(output)))
        return REIN_ENOMEM;
    rein_free(s->output);
    s->output = o;
    return REIN_OK;
}

/* ---- building and marking ---- */

rein_err rein_plan_add_step(rein_plan *p, const char *description, const int *deps, size_t n,
                            size_t *index, rein_error *err)
{
    size_t at;
    rein_err rc;

    if (!p || !description)
        return rein_error_set(err, REIN_EINVAL, "a step needs a description");
    for (size_t k = 0; k < n; k++) {
        if (deps[k] < 0 || (size_t)deps[k] >= p->n)
            return rein_error_set(err, REIN_EINVAL, "dependency %d is not a step of the plan",
                                  deps[k]);
    }
    rc = rein__plan_push(p, description, &at);
    if (rc == REIN_ETOOBIG)
        return rein_error_set(err, rc, "a plan has at most %d steps", REIN_PLAN_MAX_STEPS);
    if (rc)
        return rein_error_set(err, rc, "out of memory");
    rc = rein__plan_set_deps(p, at, deps, n);
    if (rc) {
        step_release(&p->steps[at]);
        p->n--;
        return rein_error_set(err, rc, "out of memory");
    }
    if (index)
        *index = at;
    return REIN_OK;
}

rein_err rein_plan_mark_step(rein_plan *p, size_t i, enum rein_plan_status status, const char *note)
{
    struct rein__plan_step *s = step_at(p, i);
    char *n = NULL;

    if (!s)
        return REIN_EINVAL;
    if (note && note[0] && !(n = rein_strdup(note)))
        return REIN_ENOMEM;
    if (note) {
        rein_free(s->note);
        s->note = n;
    }
    s->status = status;
    return REIN_OK;
}

void rein__plan_mark(rein_plan *p, size_t i, enum rein_plan_status status, const char *note)
{
    /* Without memory for the note the status still changes; the old note stays. */
    if (rein_plan_mark_step(p, i, status, note) != REIN_OK)
        p->steps[i].status = status;
}

void rein__plan_text_init(struct rein__plan_text *t, size_t max)
{
    rein_buf_init(&t->b, max);
    t->rc = REIN_OK;
}

void rein__plan_text_addf(struct rein__plan_text *t, const char *fmt, ...)
{
    va_list ap;

    if (t->rc)
        return;
    va_start(ap, fmt);
    t->rc = rein_buf_addvf(&t->b, fmt, ap);
    va_end(ap);
}

void rein__plan_text_add(struct rein__plan_text *t, const char *s, size_t len)
{
    if (!t->rc)
        t->rc = rein_buf_add(&t->b, s, len);
}

void rein__plan_text_adds(struct rein__plan_text *t, const char *s)
{
    rein__plan_text_add(t, s, strlen(s));
}

void rein__plan_text_addch(struct rein__plan_text *t, char c)
{
    rein__plan_text_add(t, &c, 1);
}

char *rein__plan_text_detach(struct rein__plan_text *t)
{
    char *s = t->rc == REIN_ENOMEM ? NULL : rein_buf_detach(&t->b, NULL);

    rein_buf_release(&t->b);
    return s;
}

static bool deps_completed(const rein_plan *p, const struct rein__plan_step *s)
{
    for (size_t k = 0; k < s->ndeps; k++) {
        if (p->steps[s->deps[k]].status != REIN_PLAN_COMPLETED)
            return false;
    }
    return true;
}

size_t rein_plan_ready_steps(const rein_plan *p, size_t *out, size_t max)
{
    size_t count = 0;

    for (size_t i = 0; p && i < p->n; i++) {
        const struct rein__plan_step *s = &p->steps[i];
        if (s->status != REIN_PLAN_NOT_STARTED || !deps_completed(p, s))
            continue;
        if (out && count < max)
            out[count] = i;
        count++;
    }
    return count;
}

bool rein_plan_is_finished(const rein_plan *p)
{
    for (size_t i = 0; p && i < p->n; i++) {
        if (p->steps[i].status == REIN_PLAN_NOT_STARTED ||
            p->steps[i].status == REIN_PLAN_IN_PROGRESS)
            return false;
    }
    return true;
}

static bool depends_on(const struct rein__plan_step *s, size_t j)
{
    for (size_t k = 0; k < s->ndeps; k++) {
        if ((size_t)s->deps[k] == j)
            return true;
    }
    return false;
}

/* Skips the not-yet-run dependents of step j (transitively), naming root, the blocked step. */
static size_t skip_from(rein_plan *p, size_t j, size_t root)
{
    size_t count = 0;
    char note[200];

    snprintf(note, sizeof(note), "skipped: step %zu (%.120s) is blocked", root,
             p->steps[root].desc);
    for (size_t i = 0; i < p->n; i++) {
        struct rein__plan_step *s = &p->steps[i];
        if (s->status != REIN_PLAN_NOT_STARTED || !depends_on(s, j))
            continue;
        rein__plan_mark(p, i, REIN_PLAN_SKIPPED, note);
        count += 1 + skip_from(p, i, root);
    }
    return count;
}

size_t rein_plan_skip_dependents(rein_plan *p, size_t i)
{
    if (!p || i >= p->n)
        return 0;
    return skip_from(p, i, i);
}

/* Skips every not_started step whose dependency is blocked or skipped (a loaded plan). */
static size_t skip_unreachable(rein_plan *p)
{
    size_t count = 0;

    for (size_t i = 0; i < p->n; i++) {
        if (p->steps[i].status == REIN_PLAN_BLOCKED)
            count += skip_from(p, i, i);
    }
    for (size_t i = 0; i < p->n; i++) {
        struct rein__plan_step *s = &p->steps[i];
        if (s->status != REIN_PLAN_NOT_STARTED)
            continue;
        for (size_t k = 0; k < s->ndeps; k++) {
            const struct rein__plan_step *d = &p->steps[s->deps[k]];
            if (d->status == REIN_PLAN_SKIPPED) {
                char note[200];
                snprintf(note, sizeof(note), "skipped: step %d (%.120s) was skipped", s->deps[k],
                         d->desc);
                rein__plan_mark(p, i, REIN_PLAN_SKIPPED, note);
                count += 1 + skip_from(p, i, i);
                break;
            }
        }
    }
    return count;
}

/* ---- the tool history ---- */

bool rein__plan_entry_current(const struct rein__plan_step *s, const json_t *entry)
{
    const json_t *a = json_object_get(entry, "attempt");

    if (json_is_true(json_object_get(entry, "interrupted")))
        return false;
    return json_is_integer(a) ? json_integer_value(a) == s->replans : s->replans == 0;
}

void rein__plan_step_interrupt(rein_plan *p, size_t i)
{
    struct rein__plan_step *s = step_at(p, i);
    size_t k;
    json_t *e;

    if (!s)
        return;
    json_array_foreach(s->history, k, e)
    {
        /* Without memory for the mark the entry stays current: verification then sees it. */
        if (rein__plan_entry_current(s, e))
            (void)json_object_set_new(e, "interrupted", json_true());
    }
}

size_t rein_plan_resume_reset(rein_plan *p)
{
    size_t reset = 0;

    for (size_t i = 0; p && i < p->n; i++) {
        if (p->steps[i].status != REIN_PLAN_IN_PROGRESS)
            continue;
        rein__plan_step_interrupt(p, i);
        p->steps[i].status = REIN_PLAN_NOT_STARTED;
        reset++;
    }
    if (p)
        skip_unreachable(p);
    return reset;
}

/* A new entry with the ledger's members; call_time now. */
static json_t *new_entry(const char *call_id, const char *tool, const json_t *args, size_t step,
                         int attempt)
{
    char iso[REIN_TIME_ISO_LEN], id[REIN_ID_MAX];

    if (!call_id || !call_id[0]) {
        rein_id_new("call_", id);
        call_id = id;
    }
    return json_pack("{s:s, s:s, s:O, s:s, s:n, s:s, s:n, s:I, s:i}", "call_id", call_id, "tool",
                     tool, "args", args ? (json_t *)args : json_null(), "status", "pending",
                     "result", "call_time", rein_time_iso(rein_wall_ms(), iso), "response_time",
                     "step", (json_int_t)step, "attempt", attempt);
}

rein_err rein_plan_add_tool_call(rein_plan *p, size_t i, const char *call_id, const char *tool,
                                 const json_t *args, rein_error *err)
{
    struct rein__plan_step *s = step_at(p, i);
    json_t *e;

    if (!s || !tool || !tool[0])
        return rein_error_set(err, REIN_EINVAL, "add_tool_call needs a step and a tool");
    e = new_entry(call_id, tool, args, i, s->replans);
    if (!e || json_array_append_new(s->history, e))
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    return REIN_OK;
}

/* Index of the entry of the current attempt a result belongs to, or -1. */
static long find_pending(const struct rein__plan_step *s, const char *call_id, const char *tool)
{
    size_t k;
    json_t *e;

    json_array_foreach(s->history, k, e)
    {
        const char *st = json_string_value(json_object_get(e, "status"));
        const char *id = json_string_value(json_object_get(e, "call_id"));
        const char *t = json_string_value(json_object_get(e, "tool"));
        if (!rein__plan_entry_current(s, e) || !st || strcmp(st, "pending") != 0)
            continue;
        if (call_id && call_id[0]) {
            if (id && strcmp(id, call_id) == 0)
                return (long)k;
        } else if (tool && t && strcmp(t, tool) == 0) {
            return (long)k;
        }
    }
    return -1;
}

rein_err rein_plan_update_tool_result(rein_plan *p, size_t i, const char *call_id, const char *tool,
                                      enum rein_call_status status, const json_t *result,
                                      rein_error *err)
{
    struct rein__plan_step *s = step_at(p, i);
    char iso[REIN_TIME_ISO_LEN];
    json_t *e, *r;
    long k;

    if (!s || status == REIN_CALL_PENDING)
        return rein_error_set(err, REIN_EINVAL, "update_tool_result needs a step and a status");
    k = find_pending(s, call_id, tool);
    if (k < 0)
        return rein_error_set(err, REIN_ENOTFOUND, "step %zu has no pending call %s", i,
                              call_id && call_id[0] ? call_id
                              : tool                ? tool
                                                    : "(no tool)");
    e = json_array_get(s->history, (size_t)k);
    r = result ? json_deep_copy(result) : json_null();
    if (!r || json_object_set_new(e, "result", r) ||
        json_object_set_new(e, "status", json_string(rein_call_status_name(status))) ||
        json_object_set_new(e, "response_time", json_string(rein_time_iso(rein_wall_ms(), iso))))
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    return REIN_OK;
}

rein_err rein_plan_record_entry(rein_plan *p, size_t i, const json_t *entry, rein_error *err)
{
    struct rein__plan_step *s = step_at(p, i);
    const char *id = json_string_value(json_object_get(entry, "call_id"));
    json_t *copy, *e;
    size_t k;

    if (!s || !json_is_object(entry) || !id)
        return rein_error_set(err, REIN_EINVAL, "a ledger entry needs a step and a call_id");
    copy = json_deep_copy(entry);
    if (!copy || json_object_set_new(copy, "step", json_integer((json_int_t)i)) ||
        json_object_set_new(copy, "attempt", json_integer(s->replans))) {
        json_decref(copy);
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    json_array_foreach(s->history, k, e)
    {
        const char *eid = json_string_value(json_object_get(e, "call_id"));
        if (rein__plan_entry_current(s, e) && eid && strcmp(eid, id) == 0)
            return json_array_set_new(s->history, k, copy)
                       ? rein_error_set(err, REIN_ENOMEM, "out of memory")
                       : REIN_OK;
    }
    if (json_array_append_new(s->history, copy))
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    return REIN_OK;
}

json_t *rein_plan_finalize_step(const rein_plan *p, size_t i)
{
    const struct rein__plan_step *s = cstep(p, i);
    json_t *out = json_array(), *e;
    size_t k;

    if (!out || !s)
        return out;
    json_array_foreach(s->history, k, e)
    {
        const char *st = json_string_value(json_object_get(e, "status"));
        if (rein__plan_entry_current(s, e) && st && strcmp(st, "pending") == 0 &&
            json_array_append(out, e)) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

rein_err rein_plan_rewrite_step(rein_plan *p, size_t i, const char *description, rein_error *err)
{
    struct rein__plan_step *s = step_at(p, i);
    char *d;

    if (!s || !description || !description[0])
        return rein_error_set(err, REIN_EINVAL, "rewrite_step needs a step and a description");
    d = rein_strdup(description);
    if (!d)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rein_free(s->desc);
    s->desc = d;
    return REIN_OK;
}

/* ---- split ---- */

/* Where index o of the old plan goes when step i is replaced by m steps (o != i). */
static int moved(int o, size_t i, size_t m)
{
    return (size_t)o < i ? o : o + (int)m - 1;
}

/* Sets every history entry's "step" to its step's index (after indices moved). */
static void renumber_entries(rein_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        size_t k;
        json_t *e;
        json_array_foreach(p->steps[i].history, k, e)
        {
            if (json_object_get(e, "step"))
                (void)json_object_set_new(e, "step", json_integer((json_int_t)i));
        }
    }
}

/*
 * Builds the new dependency lists of every step (new_deps[x], x over the new plan) for a
 * split of step i into m steps with local dependencies ldeps/nl. Returns REIN_ENOMEM or OK.
 */
static rein_err split_deps(const rein_plan *p, size_t i, size_t m, int *const *ldeps,
                           const size_t *nl, int **new_deps, size_t *new_n)
{
    const struct rein__plan_step *old = &p->steps[i];
    size_t total = p->n + m - 1, nsinks = 0;
    int sinks[REIN_PLAN_MAX_STEPS];

    for (size_t k = 0; k < m; k++) {
        bool needed = false;
        for (size_t j = 0; j < m && !needed; j++) {
            for (size_t d = 0; d < nl[j] && !needed; d++)
                needed = (size_t)ldeps[j][d] == k;
        }
        if (!needed)
            sinks[nsinks++] = (int)(i + k);
    }
    for (size_t x = 0; x < total; x++) {
        const struct rein__plan_step *src;
        size_t cap, n = 0;
        if (x >= i && x < i + m) {
            size_t k = x - i;
            cap = old->ndeps + nl[k];
            new_deps[x] = rein_calloc(cap ? cap : 1, sizeof(int));
            if (!new_deps[x])
                return REIN_ENOMEM;
            for (size_t d = 0; d < old->ndeps; d++)
                new_deps[x][n++] = moved(old->deps[d], i, m);
            for (size_t d = 0; d < nl[k]; d++)
                new_deps[x][n++] = (int)i + ldeps[k][d];
            new_n[x] = n;
            continue;
        }
        src = &p->steps[x < i ? x : x - m + 1];
        cap = src->ndeps + nsinks;
        new_deps[x] = rein_calloc(cap ? cap : 1, sizeof(int));
        if (!new_deps[x])
            return REIN_ENOMEM;
        for (size_t d = 0; d < src->ndeps; d++) {
            if ((size_t)src->deps[d] == i) {
                for (size_t s = 0; s < nsinks; s++)
                    new_deps[x][n++] = sinks[s];
            } else {
                new_deps[x][n++] = moved(src->deps[d], i, m);
            }
        }
        new_n[x] = n;
    }
    return REIN_OK;
}

rein_err rein_plan_split_step(rein_plan *p, size_t i, const char *const *descs, size_t n,
                              const json_t *deps, rein_error *err)
{
    int *ldeps[REIN_PLAN_MAX_STEPS] = {0}, *new_deps[REIN_PLAN_MAX_STEPS] = {0};
    size_t nl[REIN_PLAN_MAX_STEPS] = {0}, new_n[REIN_PLAN_MAX_STEPS] = {0};
    struct rein__plan_step fresh[REIN_PLAN_MAX_STEPS];
    size_t made = 0, total;
    char cycle[200];
    rein_err rc;

    rein_error_clear(err);
    if (!p || i >= p->n || !descs || n == 0)
        return rein_error_set(err, REIN_EINVALID, "split_step needs a step and new steps");
    total = p->n + n - 1;
    if (total > REIN_PLAN_MAX_STEPS)
        return rein_error_set(err, REIN_EINVALID,
                              "the split would make %zu steps; a plan has at "
                              "most %d",
                              total, REIN_PLAN_MAX_STEPS);
    for (size_t k = 0; k < n; k++) {
        if (!descs[k] || !descs[k][0])
            return rein_error_set(err, REIN_EINVALID, "new step %zu has no description", k);
    }
    rc = deps ? rein__plan_deps_read(deps, n, "/new_dependencies", ldeps, nl, NULL, err) : REIN_OK;
    if (rc)
        goto out;
    if (rein__plan_find_cycle(n, ldeps, nl, cycle, sizeof(cycle))) {
        rc = rein_error_set(err, REIN_EINVALID, "the new steps' dependencies form a cycle: %s",
                            cycle);
        goto out;
    }
    rc = reserve(p, n - 1);
    if (!rc)
        rc = split_deps(p, i, n, ldeps, nl, new_deps, new_n);
    for (; !rc && made < n; made++)
        rc = step_init(p, &fresh[made], descs[made]);
    if (rc) {
        rein_error_set(err, rc, "out of memory");
        goto out;
    }
    /* Nothing can fail from here on: the plan changes in place. */
    {
        struct rein__plan_step old = p->steps[i];
        /* The first new step keeps what happened before: the history and the note. */
        json_decref(fresh[0].history);
        fresh[0].history = json_incref(old.history);
        fresh[0].note = old.note;
        old.note = NULL;
        for (size_t k = 0; k < n; k++)
            fresh[k].replans = old.replans;
        memmove(&p->steps[i + n], &p->steps[i + 1], (p->n - i - 1) * sizeof(*p->steps));
        memcpy(&p->steps[i], fresh, n * sizeof(*fresh));
        p->n = total;
        step_release(&old);
        made = 0; /* owned by the plan now */
        for (size_t x = 0; x < total; x++) {
            rein_free(p->steps[x].deps);
            p->steps[x].deps = new_deps[x];
            p->steps[x].ndeps = new_n[x];
            new_deps[x] = NULL;
        }
        renumber_entries(p);
    }
out:
    for (size_t k = 0; k < made; k++)
        step_release(&fresh[k]);
    for (size_t x = 0; x < REIN_PLAN_MAX_STEPS; x++)
        rein_free(new_deps[x]);
    rein__plan_deps_free(ldeps, n);
    return rc;
}
