/*
 * Plans as JSON: create_plan's arguments ({title, steps, dependencies}, checked for meaning
 * beyond the schema: indices in range, no self-dependency, no cycle), and the saved plan file
 * with the seed's field names, read back from untrusted bytes with every member checked and
 * the JSON Pointer of the first problem in the error.
 *
 * Saving is atomic (a temporary file in the same folder, flushed, renamed over the old one):
 * the engine saves after every change, and a process killed at any instant leaves either the
 * previous plan or the new one, never half of one.
 */
#include "plan_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_REPLANS_READ 1000

/* ---- create_plan's arguments ---- */

rein_err rein_plan_spec_check(const json_t *args, json_t **details, rein_error *err)
{
    static const char *const names[] = {"title", "steps", "dependencies", NULL};
    int *deps[REIN_PLAN_MAX_STEPS] = {0};
    size_t ndeps[REIN_PLAN_MAX_STEPS] = {0};
    json_t *list = details ? json_array() : NULL;
    const json_t *title, *steps, *d;
    rein_err rc = REIN_OK;
    size_t n = 0, i;
    json_t *v;

    rein_error_clear(err);
    if (details)
        *details = NULL;
    if (details && !list)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = rein__plan_args_members(args, names, "create_plan takes title, steps and dependencies",
                                 list, err);
    if (!json_is_object(args))
        goto out;
    title = json_object_get(args, "title");
    if (!json_is_string(title) || json_string_length(title) == 0)
        rc =
            rein__plan_problem(list, err, "/title", "%s",
                               title ? "must be a non-empty string" : "required: the plan's title");
    steps = json_object_get(args, "steps");
    if (!json_is_array(steps) || json_array_size(steps) == 0) {
        rc = rein__plan_problem(list, err, "/steps", "%s",
                                !steps ? "required: the steps, in order, as strings"
                                       : "must be a non-empty array of step descriptions");
        goto out;
    }
    n = json_array_size(steps);
    if (n > REIN_PLAN_MAX_STEPS) {
        rc = rein__plan_problem(list, err, "/steps", "a plan has at most %d steps, not %zu",
                                REIN_PLAN_MAX_STEPS, n);
        n = 0;
        goto out;
    }
    json_array_foreach(steps, i, v)
    {
        if (!json_is_string(v) || json_string_length(v) == 0) {
            char path[40];
            snprintf(path, sizeof(path), "/steps/%zu", i);
            rc = rein__plan_problem(list, err, path,
                                    "must be a non-empty string (what the step "
                                    "does)");
        }
    }
    n = json_array_size(steps);
    d = json_object_get(args, "dependencies");
    if (d) {
        rein_err one = rein__plan_deps_read(d, n, "/dependencies", deps, ndeps, list, err);
        if (one == REIN_ENOMEM) {
            rc = one;
            goto out;
        }
        if (one) {
            rc = one;
        } else {
            char cycle[200];
            if (rein__plan_find_cycle(n, deps, ndeps, cycle, sizeof(cycle)))
                rc = rein__plan_problem(list, err, "/dependencies",
                                        "the steps depend on each other in a loop, so none of "
                                        "them could start: %s (each needs the next)",
                                        cycle);
        }
    }
out:
    rein__plan_deps_free(deps, n);
    if (details && rc)
        *details = list;
    else
        json_decref(list);
    return rc;
}

rein_plan *rein_plan_from_spec(const json_t *args, const char *query, rein_error *err)
{
    int *deps[REIN_PLAN_MAX_STEPS] = {0};
    size_t ndeps[REIN_PLAN_MAX_STEPS] = {0};
    const json_t *steps;
    rein_plan *p;
    size_t n, i;
    json_t *v;

    if (rein_plan_spec_check(args, NULL, err) != REIN_OK)
        return NULL;
    steps = json_object_get(args, "steps");
    n = json_array_size(steps);
    p = rein_plan_new(json_string_value(json_object_get(args, "title")), query);
    if (!p)
        goto nomem;
    json_array_foreach(steps, i, v)
    {
        if (rein__plan_push(p, json_string_value(v), NULL))
            goto nomem;
    }
    if (rein__plan_deps_read(json_object_get(args, "dependencies"), n, "/dependencies", deps, ndeps,
                             NULL, err))
        goto nomem;
    for (i = 0; i < n; i++) {
        if (rein__plan_set_deps(p, i, deps[i], ndeps[i]))
            goto nomem;
    }
    rein__plan_deps_free(deps, n);
    return p;
nomem:
    rein__plan_deps_free(deps, n);
    rein_plan_free(p);
    rein_error_set(err, REIN_ENOMEM, "out of memory");
    return NULL;
}

/* ---- writing ---- */

static rein_err set_index(json_t *obj, size_t i, json_t *v)
{
    char key[24];

    snprintf(key, sizeof(key), "%zu", i);
    return json_object_set_new(obj, key, v) ? REIN_ENOMEM : REIN_OK;
}

static json_t *deps_json(const struct rein__plan_step *s)
{
    json_t *a = json_array();

    for (size_t k = 0; a && k < s->ndeps; k++) {
        if (json_array_append_new(a, json_integer(s->deps[k]))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

json_t *rein_plan_to_json(const rein_plan *p)
{
    json_t *j = json_object(), *steps = json_array(), *deps = json_object(),
           *statuses = json_object(), *notes = json_object(), *hist = json_object(),
           *files = json_object(), *outputs = json_object(), *replans = json_object();
    rein_err rc = REIN_OK;

    if (!j || !steps || !deps || !statuses || !notes || !hist || !files || !outputs || !replans)
        rc = REIN_ENOMEM;
    for (size_t i = 0; !rc && i < p->n; i++) {
        const struct rein__plan_step *s = &p->steps[i];
        if (json_array_append_new(steps, json_string(s->desc)))
            rc = REIN_ENOMEM;
        if (!rc && s->ndeps)
            rc = set_index(deps, i, deps_json(s));
        if (!rc)
            rc = set_index(statuses, i, json_string(rein_plan_status_name(s->status)));
        if (!rc && s->note)
            rc = set_index(notes, i, json_string(s->note));
        if (!rc && json_array_size(s->history))
            rc = set_index(hist, i, json_incref(s->history));
        if (!rc && json_array_size(s->files))
            rc = set_index(files, i, json_incref(s->files));
        if (!rc && s->output)
            rc = set_index(outputs, i, json_string(s->output));
        if (!rc)
            rc = set_index(replans, i, json_integer(s->replans));
    }
    if (!rc &&
        (json_object_set_new(j, "title", json_string(p->title)) ||
         json_object_set_new(j, "query", json_string(p->query)) ||
         json_object_set(j, "steps", steps) || json_object_set(j, "dependencies", deps) ||
         json_object_set(j, "step_statuses", statuses) || json_object_set(j, "step_notes", notes) ||
         json_object_set(j, "step_tool_history", hist) || json_object_set(j, "step_files", files) ||
         json_object_set(j, "step_outputs", outputs) ||
         json_object_set(j, "replan_attempts", replans) ||
         (p->answer && json_object_set_new(j, "answer", json_string(p->answer)))))
        rc = REIN_ENOMEM;
    json_decref(steps);
    json_decref(deps);
    json_decref(statuses);
    json_decref(notes);
    json_decref(hist);
    json_decref(files);
    json_decref(outputs);
    json_decref(replans);
    if (rc) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* Writes len bytes to fd, retrying short writes. */
static bool write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        len -= (size_t)w;
    }
    return true;
}

/* Flushes the folder holding path, so the rename itself survives a crash of the machine. */
static void sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir =
        slash ? rein_strndup(path, slash == path ? 1 : (size_t)(slash - path)) : rein_strdup(".");
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;

    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    rein_free(dir);
}

rein_err rein_plan_save_file(const rein_plan *p, const char *path, rein_error *err)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    json_t *j;
    struct rein_buf b;
    char *tmp = NULL;
    int fd = -1, e = 0;
    rein_err rc = REIN_OK;

    if (!p || !path || !path[0])
        return rein_error_set(err, REIN_EINVAL, "save needs a plan and a path");
    j = rein_plan_to_json(p);
    rein_buf_init(&b, 0);
    if (!j || rein_json_dump_indent(&b, j, 2) != REIN_OK || rein_buf_addch(&b, '\n') != REIN_OK) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory writing the plan");
        goto out;
    }
    tmp = slash ? rein_asprintf("%.*s/.%s.XXXXXX", (int)(slash - path), path, slash + 1)
                : rein_asprintf(".%s.XXXXXX", path);
    if (!tmp) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto out;
    }
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        e = errno;
        rc = rein_error_set(err, REIN_EIO, "%s: cannot create a file next to it: %s", path,
                            strerror(e));
        goto out_err;
    }
    if (!write_all(fd, b.ptr, b.len) || fsync(fd) != 0) {
        e = errno;
        rc = rein_error_set(err, REIN_EIO, "%s: cannot write: %s", path, strerror(e));
        goto out_unlink;
    }
    if (close(fd) != 0) {
        fd = -1;
        e = errno;
        rc = rein_error_set(err, REIN_EIO, "%s: cannot write: %s", path, strerror(e));
        goto out_unlink;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        e = errno;
        rc = rein_error_set(err, REIN_EIO, "%s: cannot replace: %s", path, strerror(e));
        goto out_unlink;
    }
    sync_dir(path);
    goto out;
out_unlink:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
out_err:
    if (err)
        err->detail = e;
out:
    rein_free(tmp);
    rein_buf_release(&b);
    json_decref(j);
    return rc;
}

/* ---- reading ---- */

/* The member names of a saved plan. */
static bool known_member(const char *key)
{
    static const char *const names[] = {
        "title",      "query",      "steps",        "dependencies",    "step_statuses",
        "step_notes", "step_files", "step_outputs", "replan_attempts", "step_tool_history",
        "answer"};

    if (strncmp(key, "x-", 2) == 0)
        return true;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(names); i++) {
        if (strcmp(key, names[i]) == 0)
            return true;
    }
    return false;
}

static rein_err bad(rein_error *err, const char *path, const char *fmt, ...) REIN_PRINTF(3, 4);
static rein_err bad(rein_error *err, const char *path, const char *fmt, ...)
{
    char msg[220];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return rein_error_set(err, REIN_EPARSE, "%s: %s", path, msg);
}

typedef rein_err (*member_fn)(rein_plan *p, size_t i, json_t *v, const char *path, rein_error *err);

/* Calls fn for each "<index>": value member of the object named name (absent: nothing). */
static rein_err each_index(rein_plan *p, const json_t *doc, const char *name, member_fn fn,
                           rein_error *err)
{
    const json_t *obj = json_object_get(doc, name);
    const char *key;
    json_t *v;

    if (!obj)
        return REIN_OK;
    if (!json_is_object(obj)) {
        char path[64];
        snprintf(path, sizeof(path), "/%s", name);
        return bad(err, path, "must be an object keyed by step index, not %s",
                   rein_json_type_name(obj));
    }
    json_object_foreach((json_t *)obj, key, v)
    {
        char path[120];
        size_t i;
        rein_err rc;
        snprintf(path, sizeof(path), "/%s/%.40s", name, key);
        if (!rein__plan_index_parse(key, p->n, &i))
            return bad(err, path, "not a step index: the plan has %zu steps", p->n);
        rc = fn(p, i, v, path, err);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

static rein_err read_status(rein_plan *p, size_t i, json_t *v, const char *path, rein_error *err)
{
    if (!rein_plan_status_parse(json_string_value(v), &p->steps[i].status))
        return bad(err, path,
                   "not a status (not_started, in_progress, completed, blocked, skipped)");
    return REIN_OK;
}

static rein_err read_string(char **slot, json_t *v, const char *path, rein_error *err)
{
    char *s;

    if (!json_is_string(v))
        return bad(err, path, "must be a string, not %s", rein_json_type_name(v));
    s = rein_strdup(json_string_value(v));
    if (!s)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rein_free(*slot);
    *slot = s;
    return REIN_OK;
}

static rein_err read_note(rein_plan *p, size_t i, json_t *v, const char *path, rein_error *err)
{
    return read_string(&p->steps[i].note, v, path, err);
}

static rein_err read_output(rein_plan *p, size_t i, json_t *v, const char *path, rein_error *err)
{
    return read_string(&p->steps[i].output, v, path, err);
}

static rein_err read_replans(rein_plan *p, size_t i, json_t *v, const char *path, rein_error *err)
{
    json_int_t n = json_integer_value(v);

    if (!json_is_integer(v) || n < 0 || n > MAX_REPLANS_READ)
        return bad(err, path, "must be a count from 0 to %d", MAX_REPLANS_READ);
    p->steps[i].replans = (int)n;
    return REIN_OK;
}

/* Replaces *slot with a deep copy of v (checked by the caller). */
static rein_err keep_copy(json_t **slot, const json_t *v, rein_error *err)
{
    json_decref(*slot);
    *slot = json_deep_copy(v);
    return *slot ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
}

static rein_err read_files(rein_plan *p, size_t i, json_t *v, const char *path, rein_error *err)
{
    size_t k;
    json_t *f;

    if (!json_is_array(v))
        return bad(err, path, "must be an array of paths, not %s", rein_json_type_name(v));
    json_array_foreach(v, k, f)
    {
        if (!json_is_string(f))
            return bad(err, path, "item %zu must be a path (a string)", k);
    }
    return keep_copy(&p->steps[i].files, v, err);
}

static rein_err check_entry(const json_t *e, const char *path, size_t k, rein_error *err)
{
    static const char *const statuses[] = {"pending", "success", "error", "invalid"};
    const char *st = json_string_value(json_object_get(e, "status"));
    const json_t *a = json_object_get(e, "attempt"), *id = json_object_get(e, "call_id"),
                 *in = json_object_get(e, "interrupted");
    bool ok = false;

    if (!json_is_object(e))
        return bad(err, path, "entry %zu must be an object", k);
    if (!json_is_string(json_object_get(e, "tool")))
        return bad(err, path, "entry %zu has no \"tool\" (a string)", k);
    for (size_t s = 0; st && s < REIN_ARRAY_SIZE(statuses); s++)
        ok = ok || strcmp(st, statuses[s]) == 0;
    if (!ok)
        return bad(err, path, "entry %zu: \"status\" must be pending, success, error or invalid",
                   k);
    if (a && (!json_is_integer(a) || json_integer_value(a) < 0 ||
              json_integer_value(a) > MAX_REPLANS_READ))
        return bad(err, path, "entry %zu: \"attempt\" must be a count", k);
    if (id && !json_is_string(id))
        return bad(err, path, "entry %zu: \"call_id\" must be a string", k);
    if (in && !json_is_boolean(in))
        return bad(err, path, "entry %zu: \"interrupted\" must be true or false", k);
    return REIN_OK;
}

static rein_err read_history(rein_plan *p, size_t i, json_t *v, const char *path, rein_error *err)
{
    size_t k;
    json_t *e;

    if (!json_is_array(v))
        return bad(err, path, "must be an array of ledger entries, not %s", rein_json_type_name(v));
    json_array_foreach(v, k, e)
    {
        rein_err rc = check_entry(e, path, k, err);
        if (rc)
            return rc;
    }
    return keep_copy(&p->steps[i].history, v, err);
}

static rein_err read_steps(rein_plan *p, const json_t *doc, rein_error *err)
{
    const json_t *steps = json_object_get(doc, "steps");
    size_t i;
    json_t *v;

    if (!json_is_array(steps) || json_array_size(steps) == 0)
        return bad(err, "/steps", "must be a non-empty array of step descriptions");
    if (json_array_size(steps) > REIN_PLAN_MAX_STEPS)
        return bad(err, "/steps", "a plan has at most %d steps", REIN_PLAN_MAX_STEPS);
    json_array_foreach(steps, i, v)
    {
        if (!json_is_string(v) || json_string_length(v) == 0)
            return bad(err, "/steps", "item %zu must be a non-empty string", i);
        if (rein__plan_push(p, json_string_value(v), NULL))
            return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    return REIN_OK;
}

static rein_err read_deps(rein_plan *p, const json_t *doc, rein_error *err)
{
    int *deps[REIN_PLAN_MAX_STEPS] = {0};
    size_t ndeps[REIN_PLAN_MAX_STEPS] = {0};
    char cycle[200];
    rein_err rc;

    rein_error_clear(err);
    rc = rein__plan_deps_read(json_object_get(doc, "dependencies"), p->n, "/dependencies", deps,
                              ndeps, NULL, err);
    if (rc == REIN_EINVALID) {
        rc = REIN_EPARSE;
        if (err)
            err->code = rc;
    }
    if (!rc && rein__plan_find_cycle(p->n, deps, ndeps, cycle, sizeof(cycle)))
        rc = bad(err, "/dependencies", "the steps depend on each other in a loop: %s", cycle);
    for (size_t i = 0; !rc && i < p->n; i++) {
        if (rein__plan_set_deps(p, i, deps[i], ndeps[i]))
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    rein__plan_deps_free(deps, p->n);
    return rc;
}

rein_plan *rein_plan_from_json(const json_t *doc, rein_error *err)
{
    const json_t *title, *query, *answer;
    rein_plan *p = NULL;
    const char *key;
    json_t *v;
    rein_err rc;

    rein_error_clear(err);
    rein_error_where(err, REIN__PLAN_WHERE);
    if (!json_is_object(doc)) {
        rein_error_set(err, REIN_EPARSE, "a plan is a JSON object, not %s",
                       rein_json_type_name(doc));
        return NULL;
    }
    json_object_foreach((json_t *)doc, key, v)
    {
        if (!known_member(key)) {
            rein_error_set(err, REIN_EPARSE,
                           "/%.60s: unknown member (a plan has title, query, steps, "
                           "dependencies, step_statuses, step_notes, step_tool_history, "
                           "step_files, step_outputs, replan_attempts, answer)",
                           key);
            return NULL;
        }
    }
    title = json_object_get(doc, "title");
    query = json_object_get(doc, "query");
    answer = json_object_get(doc, "answer");
    if (!json_is_string(title)) {
        bad(err, "/title", "required: the plan's title (a string)");
        return NULL;
    }
    if (query && !json_is_string(query)) {
        bad(err, "/query", "must be a string");
        return NULL;
    }
    if (answer && !json_is_string(answer) && !json_is_null(answer)) {
        bad(err, "/answer", "must be a string");
        return NULL;
    }
    p = rein_plan_new(json_string_value(title), json_string_value(query));
    if (!p) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    rc = read_steps(p, doc, err);
    if (!rc)
        rc = read_deps(p, doc, err);
    if (!rc)
        rc = each_index(p, doc, "step_statuses", read_status, err);
    if (!rc)
        rc = each_index(p, doc, "step_notes", read_note, err);
    if (!rc)
        rc = each_index(p, doc, "step_tool_history", read_history, err);
    if (!rc)
        rc = each_index(p, doc, "step_files", read_files, err);
    if (!rc)
        rc = each_index(p, doc, "step_outputs", read_output, err);
    if (!rc)
        rc = each_index(p, doc, "replan_attempts", read_replans, err);
    if (!rc && json_is_string(answer) && rein_plan_set_answer(p, json_string_value(answer)))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    if (rc) {
        rein_plan_free(p);
        return NULL;
    }
    return p;
}

rein_plan *rein_plan_parse(const char *text, size_t len, rein_error *err)
{
    json_t *doc = rein_json_parse(text, len, JSON_REJECT_DUPLICATES, err);
    rein_plan *p;

    if (!doc)
        return NULL;
    p = rein_plan_from_json(doc, err);
    json_decref(doc);
    return p;
}

rein_plan *rein_plan_load_file(const char *path, rein_error *err)
{
    json_t *doc = rein_json_load_file(path, err);
    rein_plan *p;

    if (!doc)
        return NULL;
    p = rein_plan_from_json(doc, err);
    json_decref(doc);
    if (!p && err)
        rein_error_prefix(err, "%s: ", path);
    return p;
}
