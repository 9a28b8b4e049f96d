/*
 * The ledger a claim check reads, from whichever shape rein wrote it in:
 *   - an array of ledger entries, as the store and `rein plan` keep them
 *     ({call_id, tool, args, status, result, call_time, response_time, step});
 *   - the result of `rein chat --json` or POST /agent/chat: its "tool_calls"
 *     ({call_id, tool, arguments, status, result, …});
 *   - a saved plan: "step_tool_history", every step's entries.
 * The output is always an array of {tool, args, status, result, call_id?, step?}.
 */
#include "claims_int.h"

static rein_err add_entry(json_t *out, const json_t *e, const char *args_key, rein_error *err,
                          const char *where, size_t i)
{
    const json_t *tool = json_object_get(e, "tool"), *status = json_object_get(e, "status");
    json_t *o;

    if (!json_is_object(e) || !json_is_string(tool) || !json_is_string(status))
        return rein_error_set(err, REIN_EPARSE,
                              "%s[%zu]: a ledger entry needs a \"tool\" and a \"status\" string",
                              where, i);
    o = json_pack("{s:O, s:O, s:O, s:O}", "tool", tool, "status", status, "args",
                  json_object_get(e, args_key) ? json_object_get(e, args_key) : json_null(),
                  "result",
                  json_object_get(e, "result") ? json_object_get(e, "result") : json_null());
    if (!o ||
        (json_object_get(e, "call_id") &&
         json_object_set(o, "call_id", json_object_get(e, "call_id"))) ||
        (json_object_get(e, "step") && json_object_set(o, "step", json_object_get(e, "step"))) ||
        json_array_append_new(out, o))
        return rein_error_set(err, REIN_ENOMEM, "out of memory reading the ledger");
    return REIN_OK;
}

static rein_err add_all(json_t *out, const json_t *arr, const char *args_key, const char *where,
                        rein_error *err)
{
    size_t i;
    const json_t *e;

    json_array_foreach(arr, i, e)
    {
        rein_err rc = add_entry(out, e, args_key, err, where, i);
        if (rc)
            return rc;
    }
    return REIN_OK;
}

rein_err rein_claims_ledger_from_json(const json_t *doc, json_t **out, rein_error *err)
{
    json_t *arr = json_array();
    const json_t *v;
    rein_err rc;

    *out = NULL;
    if (!arr)
        return rein_error_set(err, REIN_ENOMEM, "out of memory reading the ledger");
    if (json_is_array(doc)) {
        rc = add_all(arr, doc, "args", "ledger", err);
    } else if (json_is_object(doc) && json_is_array(v = json_object_get(doc, "tool_calls"))) {
        rc = add_all(arr, v, "arguments", "tool_calls", err);
    } else if (json_is_object(doc) &&
               json_is_object(v = json_object_get(doc, "step_tool_history"))) {
        const char *key;
        const json_t *steps;
        rc = REIN_OK;
        json_object_foreach((json_t *)v, key, steps)
        {
            if (!json_is_array(steps)) {
                rc = rein_error_set(err, REIN_EPARSE,
                                    "step_tool_history[\"%s\"]: expected an array of entries", key);
                break;
            }
            rc = add_all(arr, steps, "args", "step_tool_history", err);
            if (rc)
                break;
        }
    } else {
        rc = rein_error_set(err, REIN_EPARSE,
                            "a ledger is a JSON array of entries, a `rein chat --json` result "
                            "(with \"tool_calls\") or a saved plan (with \"step_tool_history\")");
    }
    if (rc) {
        json_decref(arr);
        return rc;
    }
    *out = arr;
    return REIN_OK;
}
