/*
 * The two tools the plan engine's own model calls use: create_plan (the planner) and replan
 * (the replanner, the seed's ReplanResult). They are ordinary built-in tools in registries
 * of their own, so the model's call goes through the one pipeline: name repair, the JSON
 * Schema preflight, then this file's check of what the schema cannot say (indices in range,
 * no cycle, the members each action needs). A problem comes back to the model as the usual
 * invalid payload, every problem with its JSON Pointer, and the model tries again.
 */
#include "plan_int.h"

#include <stdio.h>
#include <string.h>

static const char create_plan_manifest[] =
    "{\"id\":\"create_plan\","
    "\"description\":\"Record the plan for the user's request: a short title, the steps in the "
    "order they should run, and for each step the steps it needs first. Call it exactly once "
    "with the whole plan.\","
    "\"sequential\":true,"
    "\"parameters\":{\"type\":\"object\",\"properties\":{"
    "\"title\":{\"type\":\"string\",\"minLength\":1,\"description\":\"A short title for the "
    "plan\"},"
    "\"steps\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":256,\"items\":{\"type\":"
    "\"string\",\"minLength\":1},\"description\":\"The steps, each a self-contained "
    "instruction someone could carry out with the tools\"},"
    "\"dependencies\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"array\","
    "\"items\":{\"type\":\"integer\",\"minimum\":0}},\"description\":\"For a step that needs "
    "others first: its 0-based index (as a string key) mapped to the indices of the steps it "
    "needs, e.g. {\\\"2\\\": [0, 1]}. Steps without dependencies may run at the same time. No "
    "cycles.\"}},"
    "\"required\":[\"title\",\"steps\"],\"additionalProperties\":false}}";

static const char replan_manifest[] =
    "{\"id\":\"replan\","
    "\"description\":\"Decide how to fix a plan step that failed: rewrite its description, split "
    "it into smaller steps, or give up on it.\","
    "\"sequential\":true,"
    "\"parameters\":{\"type\":\"object\",\"properties\":{"
    "\"action\":{\"type\":\"string\",\"enum\":[\"rewrite\",\"split\",\"give_up\"]},"
    "\"new_description\":{\"type\":[\"string\",\"null\"],\"description\":\"rewrite: the step's "
    "new description\"},"
    "\"new_steps\":{\"type\":[\"array\",\"null\"],\"items\":{\"type\":\"string\",\"minLength\":1},"
    "\"description\":\"split: the smaller steps that replace it, in order (at least two)\"},"
    "\"new_dependencies\":{\"type\":[\"object\",\"null\"],\"additionalProperties\":{\"type\":"
    "\"array\",\"items\":{\"type\":\"integer\",\"minimum\":0}},\"description\":\"split: "
    "dependencies among the new steps by their 0-based index in new_steps, e.g. {\\\"1\\\": "
    "[0]}\"},"
    "\"reason\":{\"type\":\"string\",\"description\":\"why\"}},"
    "\"required\":[\"action\"],\"additionalProperties\":false}}";

json_t *rein_plan_create_plan_manifest(void)
{
    return rein_json_parse(create_plan_manifest, sizeof(create_plan_manifest) - 1, 0, NULL);
}

json_t *rein_plan_replan_manifest(void)
{
    return rein_json_parse(replan_manifest, sizeof(replan_manifest) - 1, 0, NULL);
}

/* ---- replan's arguments ---- */

static bool present(const json_t *v)
{
    return v && !json_is_null(v);
}

static rein_err check_split(const json_t *args, json_t *list, rein_error *err)
{
    int *deps[REIN_PLAN_MAX_STEPS] = {0};
    size_t ndeps[REIN_PLAN_MAX_STEPS] = {0};
    const json_t *steps = json_object_get(args, "new_steps");
    const json_t *d = json_object_get(args, "new_dependencies");
    rein_err rc = REIN_OK;
    size_t n = json_array_size(steps), i;
    json_t *v;

    if (!json_is_array(steps) || n < 2)
        return rein__plan_problem(list, err, "/new_steps", "%s",
                                  json_is_array(steps)
                                      ? "a split makes at least two steps (use rewrite for one)"
                                      : "required for split: the steps that replace the failed "
                                        "one");
    if (n > REIN_PLAN_MAX_STEPS)
        return rein__plan_problem(list, err, "/new_steps", "at most %d steps", REIN_PLAN_MAX_STEPS);
    json_array_foreach(steps, i, v)
    {
        if (!json_is_string(v) || json_string_length(v) == 0) {
            char path[40];
            snprintf(path, sizeof(path), "/new_steps/%zu", i);
            rc = rein__plan_problem(list, err, path, "must be a non-empty string");
        }
    }
    if (present(d)) {
        rein_err one = rein__plan_deps_read(d, n, "/new_dependencies", deps, ndeps, list, err);
        char cycle[200];
        if (one)
            rc = one;
        else if (rein__plan_find_cycle(n, deps, ndeps, cycle, sizeof(cycle)))
            rc = rein__plan_problem(list, err, "/new_dependencies",
                                    "the new steps depend on each other in a loop: %s", cycle);
    }
    rein__plan_deps_free(deps, n);
    return rc;
}

rein_err rein_plan_replan_check(const json_t *args, json_t **details, rein_error *err)
{
    static const char *const names[] = {"action",           "new_description", "new_steps",
                                        "new_dependencies", "reason",          NULL};
    json_t *list = details ? json_array() : NULL;
    const char *action;
    rein_err rc = REIN_OK;
    json_t *v;

    rein_error_clear(err);
    if (details)
        *details = NULL;
    if (details && !list)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = rein__plan_args_members(args, names,
                                 "replan takes action, new_description, new_steps, "
                                 "new_dependencies and reason",
                                 list, err);
    if (!json_is_object(args))
        goto out;
    v = json_object_get(args, "reason");
    if (present(v) && !json_is_string(v))
        rc = rein__plan_problem(list, err, "/reason", "must be a string");
    action = json_string_value(json_object_get(args, "action"));
    if (!action) {
        rc = rein__plan_problem(list, err, "/action", "required: rewrite, split or give_up");
    } else if (strcmp(action, "rewrite") == 0) {
        v = json_object_get(args, "new_description");
        if (!json_is_string(v) || json_string_length(v) == 0)
            rc = rein__plan_problem(list, err, "/new_description",
                                    "required for rewrite: the step's new description");
        if (present(json_object_get(args, "new_steps")))
            rc = rein__plan_problem(list, err, "/new_steps",
                                    "only for split; a rewrite gives new_description");
    } else if (strcmp(action, "split") == 0) {
        if (check_split(args, list, err))
            rc = REIN_EINVALID;
        if (present(json_object_get(args, "new_description")))
            rc = rein__plan_problem(list, err, "/new_description",
                                    "only for rewrite; a split gives new_steps");
    } else if (strcmp(action, "give_up") != 0) {
        rc = rein__plan_problem(list, err, "/action",
                                "\"%.40s\" is not an action: rewrite, split or give_up", action);
    }
    if (!rc && action && strcmp(action, "split") != 0 &&
        present(json_object_get(args, "new_dependencies")))
        rc = rein__plan_problem(list, err, "/new_dependencies", "only for split");
out:
    if (details && rc)
        *details = list;
    else
        json_decref(list);
    return rc;
}

/* ---- the built-in functions ---- */

static rein_err create_plan_fn(void *ud, const struct rein_invocation *inv,
                               struct rein_tool_reply *reply, rein_error *err)
{
    json_t *details = NULL;
    rein_err rc = rein_plan_spec_check(inv->args, &details, err);

    (void)ud;
    if (rc) {
        reply->details = details;
        return rc;
    }
    reply->output = json_pack("{s:b, s:I}", "accepted", 1, "steps",
                              (json_int_t)json_array_size(json_object_get(inv->args, "steps")));
    return reply->output ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
}

static rein_err replan_fn(void *ud, const struct rein_invocation *inv,
                          struct rein_tool_reply *reply, rein_error *err)
{
    json_t *details = NULL;
    rein_err rc = rein_plan_replan_check(inv->args, &details, err);

    (void)ud;
    if (rc) {
        reply->details = details;
        return rc;
    }
    reply->output =
        json_pack("{s:b, s:O}", "accepted", 1, "action", json_object_get(inv->args, "action"));
    return reply->output ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
}

rein_err rein__plan_register_tools(rein_registry *planner_reg, rein_registry *replan_reg,
                                   rein_error *err)
{
    json_t *m = rein_plan_create_plan_manifest();
    rein_err rc;

    if (!m)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = rein_registry_add_builtin(planner_reg, m, create_plan_fn, NULL, NULL, err);
    json_decref(m);
    if (rc)
        return rc;
    m = rein_plan_replan_manifest();
    if (!m)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = rein_registry_add_builtin(replan_reg, m, replan_fn, NULL, NULL, err);
    json_decref(m);
    return rc;
}
