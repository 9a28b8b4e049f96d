/*
 * The built-in skills' entry point and the simplest of them, echo.
 *
 * Each built-in skill is a manifest (JSON text, the same shape an external skill's
 * manifest.json has) and a C function, registered like any other tool: the pipeline treats
 * them exactly as it treats a process or an HTTP skill.
 */
#include "skills_int.h"

static const char echo_manifest[] =
    "{\"id\":\"echo\","
    "\"description\":\"Return the given text unchanged.\","
    "\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"The text to return\"}},"
    "\"required\":[\"text\"],\"additionalProperties\":false},"
    "\"output_schema\":{\"type\":\"string\",\"description\":\"The text, unchanged\"},"
    "\"read_only\":true,\"idempotent\":true,\"open_world\":false,\"timeout_ms\":1000,"
    "\"examples\":[{\"text\":\"echo hello world\",\"arguments\":{\"text\":\"hello world\"}},"
    "{\"text\":\"回显 你好\",\"arguments\":{\"text\":\"你好\"}}]}";

static rein_err echo_run(void *userdata, const struct rein_invocation *inv,
                         struct rein_tool_reply *reply, rein_error *err)
{
    json_t *text = json_object_get(inv->args, "text");

    (void)userdata;
    /* The preflight guarantees a string; the output shares it with the arguments. */
    reply->output = json_incref(text);
    if (!reply->output)
        return rein_error_set(err, REIN_EINVALID, "text is missing");
    return REIN_OK;
}

rein_err rein__skills_echo_register(rein_registry *reg, rein_error *err)
{
    return rein__skills_register(reg, echo_manifest, echo_run, NULL, NULL, err);
}

rein_err rein_skills_register_builtins(rein_registry *reg, const struct rein_skills_config *cfg,
                                       rein_error *err)
{
    rein_err rc;

    if (!reg)
        return rein_error_set(err, REIN_EINVAL, "no registry");
    rc = rein__skills_echo_register(reg, err);
    if (!rc)
        rc = rein__skills_file_search_register(reg, cfg, err);
    if (!rc)
        rc = rein__skills_calculator_register(reg, err);
    if (!rc)
        rc = rein__skills_log_transform_register(reg, cfg, err);
    return rc;
}

rein_err rein_skills_register_runners(rein_registry *reg, rein_error *err)
{
    rein_err rc;

    if (!reg)
        return rein_error_set(err, REIN_EINVAL, "no registry");
    rc = rein_registry_add_runner_kind(reg, rein__skills_process_kind(), err);
    if (!rc)
        rc = rein_registry_add_runner_kind(reg, rein__skills_http_kind(), err);
    return rc;
}
