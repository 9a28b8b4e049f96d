/*
 * The promise of the request parsers' document paths (src/gateway/openai.c and anthropic.c,
 * decisions 0060 and 0067), checked on one body: the parser, which reads the common shape of a
 * body as a rein_doc, and its general path alone (the whole body as a jansson tree) answer
 * alike, the same refusal (parameter and message) or the same request, with the body's tools
 * known to the tools cache or not. Shared by fuzz/gateway_request.c and
 * tests/unit/test_gateway_parse.c. Include after "gateway/gateway_int.h".
 */
#ifndef REIN_FUZZ_GATEWAY_SAME_H
#define REIN_FUZZ_GATEWAY_SAME_H

#include <stdio.h>
#include <string.h>

static bool gw_same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* a and b both NULL, or equal values. */
static bool gw_same_json(const json_t *a, const json_t *b)
{
    return (!a && !b) || json_equal(a, b);
}

/* Two parses of one body hold the same request. */
static bool gw_same_req(const struct rein__gw_req *a, const struct rein__gw_req *b)
{
    if (rein_history_len(a->h) != rein_history_len(b->h) || a->ntools != b->ntools ||
        !gw_same_str(a->model, b->model) || !gw_same_str(a->tool_choice, b->tool_choice) ||
        a->parallel != b->parallel || a->max_tokens != b->max_tokens ||
        a->temperature != b->temperature || a->top_p != b->top_p || a->stream != b->stream ||
        a->include_usage != b->include_usage || !json_equal(a->passthrough, b->passthrough) ||
        !json_equal(a->dropped, b->dropped) || !json_equal(a->unsupported, b->unsupported) ||
        !gw_same_json(a->stop, b->stop) || a->tools_raw != b->tools_raw ||
        a->tools_raw_len != b->tools_raw_len || !gw_same_json(a->tools_json, b->tools_json))
        return false;
    for (size_t i = 0; i < rein_history_len(a->h); i++)
        if (!json_equal(rein_history_get(a->h, i), rein_history_get(b->h, i)))
            return false;
    for (size_t i = 0; i < a->ntools; i++) {
        const struct rein__gw_tool *x = &a->tools[i], *y = &b->tools[i];
        if (!gw_same_str(x->name, y->name) || !gw_same_str(x->description, y->description) ||
            !gw_same_json(x->parameters, y->parameters))
            return false;
    }
    return true;
}

/* r made ready to parse for api, with the tools at tools_at (n bytes) known when tools_at is
 * set. */
static void gw_req_ready(struct rein__gw_req *r, enum rein_gateway_api api, const char *tools_at,
                         size_t n, bool verbatim)
{
    rein__gw_req_init(r, api);
    r->verbatim = verbatim;
    if (tools_at) {
        r->tools_raw = tools_at;
        r->tools_raw_len = n;
        r->tools_known = true;
    }
}

/* Both paths on body; false when they answer differently (memory running out is no answer). */
static bool gw_paths_agree_known(enum rein_gateway_api api, const char *body, size_t len,
                                 const char *tools_at, size_t n, bool verbatim)
{
    bool anthropic = api == REIN_GATEWAY_ANTHROPIC;
    struct rein__gw_req fast, tree;
    struct rein__gw_bad fb, tb;
    rein_err frc, trc;
    bool same;

    memset(&fb, 0, sizeof(fb));
    memset(&tb, 0, sizeof(tb));
    gw_req_ready(&fast, api, tools_at, n, verbatim);
    gw_req_ready(&tree, api, tools_at, n, verbatim);
    frc = anthropic ? rein__gw_anthropic_parse(&fast, body, len, &fb)
                    : rein__gw_openai_parse(&fast, body, len, &fb);
    trc = anthropic ? rein__gw_anthropic_parse_tree(&tree, body, len, &tb)
                    : rein__gw_openai_parse_tree(&tree, body, len, &tb);
    same = frc == REIN_ENOMEM || trc == REIN_ENOMEM ||
           (frc == trc && strcmp(fb.param, tb.param) == 0 && strcmp(fb.msg, tb.msg) == 0 &&
            (frc != REIN_OK || gw_same_req(&fast, &tree)));
    if (!same)
        fprintf(stderr,
                "%s: the document path answered %d (%s: %s), the general path %d (%s: %s)\n",
                anthropic ? "anthropic" : "openai", frc, fb.param, fb.msg, trc, tb.param, tb.msg);
    rein__gw_req_release(&fast);
    rein__gw_req_release(&tree);
    return same;
}

/* Both paths on body, as it is and, when its tools can be found as written and are JSON
 * (the tools cache holds only tools it parsed), with them known: the gateway finds them in
 * a body before parsing it. */
static bool gw_paths_agree(enum rein_gateway_api api, const char *body, size_t len, bool verbatim)
{
    const char *at;
    size_t n;
    json_t *tools;

    if (!gw_paths_agree_known(api, body, len, NULL, 0, verbatim))
        return false;
    if (!rein__gw_raw_member(body, len, "tools", &at, &n) || at[0] != '[' || memchr(at, 0, n))
        return true;
    tools = rein_json_parse(at, n, 0, NULL);
    if (!tools)
        return true;
    json_decref(tools);
    return gw_paths_agree_known(api, body, len, at, n, verbatim);
}

#endif /* REIN_FUZZ_GATEWAY_SAME_H */
