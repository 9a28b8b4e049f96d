/*
 * provider_fixture.h: what the provider tests over real HTTP build alike (test_provider_http,
 * test_bedrock_http, test_gemini_http, test_wire_stop): the scripted model server, a provider
 * configuration with quick retries, an empty request and history, the provider made from the
 * configuration, and the last answer and error. Each test file sets the wire (preset, base
 * URL, credentials) itself.
 */
#ifndef REIN_TEST_PROVIDER_FIXTURE_H
#define REIN_TEST_PROVIDER_FIXTURE_H

#include "model_server.h"

#include <rein/rein.h>

struct pfx {
    ms_server *ms;
    rein_provider_config *cfg;
    rein_provider *p; /* NULL until pfx_provider() */
    rein_model_request *req;
    rein_history *h;
    rein_model_response *resp; /* the last pfx_send()'s answer (NULL: none) */
    rein_error err;            /* the last pfx_send()'s or pfx_provider()'s error */
};

/*
 * Starts the model server, which requires api_key when it is not NULL (copied), and makes a
 * new configuration whose retries are retry_base_ms (text, e.g. "5") apart, a new request and
 * an empty history. Fails the test when any of them cannot be made.
 */
void pfx_start(struct pfx *f, const char *api_key, const char *retry_base_ms);
/* Makes f->p from f->cfg; fails the test with the provider's error when it cannot. */
void pfx_provider(struct pfx *f);
/* Scripts the model server (json: a reply list or scenario, see ms_script; replaces the
 * script); fails the test when the script is refused. */
void pfx_script(struct pfx *f, const char *json);
/* Sends f->req with f->h through f->p: f->resp (the previous one freed) and f->err hold what
 * came back. */
rein_err pfx_send(struct pfx *f);
/* Frees what pfx_start() and the calls after it made and stops the model server. */
void pfx_stop(struct pfx *f);

#endif
