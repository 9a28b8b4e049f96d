/* The provider tests' fixture (provider_fixture.h). */
#include "provider_fixture.h"

#include "test.h"

void pfx_start(struct pfx *f, const char *api_key, const char *retry_base_ms)
{
    rein_error err;

    memset(f, 0, sizeof(*f));
    f->ms = ms_start(0, &err);
    if (!f->ms)
        fail_msg("model server: %s", err.msg);
    if (api_key)
        ms_set_api_key(f->ms, api_key);
    f->cfg = rein_provider_config_new();
    f->req = rein_model_request_new();
    f->h = rein_history_new();
    assert_non_null(f->cfg);
    assert_non_null(f->req);
    assert_non_null(f->h);
    assert_rein_ok(rein_provider_config_set(f->cfg, "retry_base_ms", retry_base_ms, NULL), NULL);
}

void pfx_provider(struct pfx *f)
{
    f->p = rein_provider_new(f->cfg, &f->err);
    if (!f->p)
        fail_msg("provider: %s", f->err.msg);
}

void pfx_script(struct pfx *f, const char *json)
{
    rein_error err;

    if (ms_script(f->ms, json, false, &err) != REIN_OK)
        fail_msg("script: %s", err.msg);
}

rein_err pfx_send(struct pfx *f)
{
    rein_model_response_free(f->resp);
    f->resp = NULL;
    rein_error_clear(&f->err);
    return rein_provider_send(f->p, f->req, f->h, &f->resp, &f->err);
}

void pfx_stop(struct pfx *f)
{
    rein_model_response_free(f->resp);
    rein_provider_free(f->p);
    rein_provider_config_free(f->cfg);
    rein_model_request_free(f->req);
    rein_history_free(f->h);
    ms_stop(f->ms);
}
