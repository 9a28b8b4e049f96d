/*
 * Unit tests for Bedrock (src/providers/bedrock.c, eventstream.c, sigv4.c): the AWS event
 * stream framing against the AWS SDK's own test vectors (tests/data/providers/bedrock/
 * eventstream, positive and negative), whole and in pieces of 1 to 7 bytes; the real Converse
 * and ConverseStream recordings in tests/data/providers/bedrock decoded to the values written
 * down next to them, the streams both as recorded (one event per line) and framed as the
 * service sends them (binary messages); exceptions in the stream, cut and corrupted streams;
 * and AWS credentials found as the SDKs find them (environment, shared files, profiles).
 */
#include "test.h"

#include "model_server.h"
#include "providers/provider_int.h"

#include <dirent.h>

/* A string literal and its length, for the functions that take both. */
#define LIT(s) (s), (sizeof(s) - 1)

/* ---------------------------------------------------------------------------------------
 * The framing
 */

struct seen {
    int n;
    char types[8][64];
    char kinds[8][16];
    char ctype[64];
    struct rein_buf payload;
};

static rein_err on_msg(void *ud, const struct rein__evs_msg *m, rein_error *err)
{
    struct seen *s = ud;

    (void)err;
    if (s->n < 8) {
        snprintf(s->types[s->n], sizeof(s->types[0]), "%s", m->event_type);
        snprintf(s->kinds[s->n], sizeof(s->kinds[0]), "%s", m->message_type);
    }
    snprintf(s->ctype, sizeof(s->ctype), "%s", m->content_type);
    s->n++;
    return rein_buf_add(&s->payload, m->payload, m->len);
}

/* Feeds len bytes in pieces of chunk (0: whole); the feed's result, and what is pending. */
static rein_err feed(const char *p, size_t len, size_t chunk, struct seen *s, size_t *pending,
                     rein_error *err)
{
    struct rein__evs evs;
    rein_err rc = REIN_OK;

    memset(s, 0, sizeof(*s));
    rein_buf_init(&s->payload, 0);
    rein__evs_init(&evs, 1 << 16, on_msg, s);
    if (!chunk)
        chunk = len ? len : 1;
    for (size_t off = 0; off < len && !rc; off += chunk)
        rc = rein__evs_feed(&evs, p + off, len - off < chunk ? len - off : chunk, err);
    *pending = rein__evs_pending(&evs);
    rein__evs_release(&evs);
    return rc;
}

static char *vector(const char *name, size_t *len)
{
    char path[1024];

    snprintf(path, sizeof(path), "%s/tests/data/providers/bedrock/eventstream/%s.bin",
             REIN_SOURCE_DIR, name);
    char *b = test_read_file(path, len);
    assert_non_null(b);
    return b;
}

static void test_aws_sdk_event_stream_vectors(void **state)
{
    static const char *const positive[] = {"positive-all_headers", "positive-empty_message",
                                           "positive-int32_header", "positive-payload_no_headers",
                                           "positive-payload_one_str_header"};
    static const char *const negative[] = {
        "negative-corrupted_headers", "negative-corrupted_header_len", "negative-corrupted_length",
        "negative-corrupted_payload"};
    struct seen s;
    rein_error err;
    size_t len, pending;

    (void)state;
    for (size_t i = 0; i < sizeof(positive) / sizeof(positive[0]); i++) {
        char *b = vector(positive[i], &len);
        for (size_t chunk = 0; chunk <= 7; chunk++) {
            assert_rein_ok(feed(b, len, chunk, &s, &pending, &err), &err);
            assert_int_equal(s.n, 1);
            assert_int_equal(pending, 0);
            /* Every vector with a body carries {'foo':'bar'}; the empty one none. */
            assert_int_equal(s.payload.len, strcmp(positive[i], "positive-empty_message") ? 13 : 0);
            if (s.payload.len)
                assert_memory_equal(s.payload.ptr, "{'foo':'bar'}", 13);
            if (!strcmp(positive[i], "positive-payload_one_str_header") ||
                !strcmp(positive[i], "positive-all_headers"))
                assert_string_equal(s.ctype, "application/json");
            rein_buf_release(&s.payload);
        }
        free(b);
    }
    for (size_t i = 0; i < sizeof(negative) / sizeof(negative[0]); i++) {
        char *b = vector(negative[i], &len);
        for (size_t chunk = 0; chunk <= 7; chunk++) {
            rein_err rc = feed(b, len, chunk, &s, &pending, &err);
            /* A corrupted length leaves the message unfinished: nothing is handed on. */
            if (rc == REIN_OK)
                assert_true(pending > 0);
            else
                assert_int_equal(rc, REIN_EPARSE);
            assert_int_equal(s.n, 0);
            rein_buf_release(&s.payload);
        }
        free(b);
    }
    /* Two vectors back to back, split anywhere: two messages. */
    {
        size_t l1, l2;
        char *a = vector("positive-all_headers", &l1), *b = vector("positive-int32_header", &l2);
        char *both = malloc(l1 + l2);
        assert_non_null(both);
        memcpy(both, a, l1);
        memcpy(both + l1, b, l2);
        for (size_t chunk = 0; chunk <= 7; chunk++) {
            assert_rein_ok(feed(both, l1 + l2, chunk, &s, &pending, &err), &err);
            assert_int_equal(s.n, 2);
            rein_buf_release(&s.payload);
        }
        free(a);
        free(b);
        free(both);
    }
}

static void test_framing_errors_are_named(void **state)
{
    struct rein_buf b;
    struct seen s;
    rein_error err;
    size_t pending;

    (void)state;
    rein_buf_init(&b, 0);
    assert_rein_ok(ms_eventstream_frame(&b, "event", "messageStart", "{}", 2), NULL);
    /* A flipped payload byte: the message CRC. */
    b.ptr[b.len - 6] ^= 1;
    assert_int_equal(feed(b.ptr, b.len, 0, &s, &pending, &err), REIN_EPARSE);
    assert_non_null(strstr(err.msg, "message CRC"));
    rein_buf_release(&s.payload);
    /* A flipped length byte: the prelude CRC. */
    b.ptr[b.len - 6] ^= 1;
    b.ptr[3] ^= 1;
    assert_int_equal(feed(b.ptr, b.len, 3, &s, &pending, &err), REIN_EPARSE);
    assert_non_null(strstr(err.msg, "prelude CRC"));
    rein_buf_release(&s.payload);
    /* Not an event stream at all (an HTML error page). */
    assert_int_equal(feed("<html><body>502 Bad Gateway</body></html>", 41, 0, &s, &pending, &err),
                     REIN_EPARSE);
    rein_buf_release(&s.payload);
    rein_buf_release(&b);
}

/* ---------------------------------------------------------------------------------------
 * The recordings
 */

/* Frames each recorded line {"type": {...}} as the binary message the service sends. */
static void frame_lines(const char *text, struct rein_buf *out)
{
    const char *line = text;

    while (*line) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        json_t *o = n ? rein_json_parse(line, n, 0, NULL) : NULL;
        const char *type;
        json_t *inner;
        if (o) {
            json_object_foreach(o, type, inner)
            {
                char *payload = rein_json_dumps(inner);
                assert_non_null(payload);
                assert_rein_ok(ms_eventstream_frame(out, "event", type, payload, strlen(payload)),
                               NULL);
                rein_free(payload);
            }
            json_decref(o);
        }
        line += n + (end ? 1 : 0);
    }
}

static void check(const char *rec, const char *fmt, const char *text, size_t len, bool lines,
                  const json_t *want)
{
    for (size_t chunk = 0; chunk <= 7; chunk++) {
        rein_error err;
        rein_model_response *r = test_decode(fmt, text, len, chunk, lines, NULL, 0, &err);
        json_t *got;
        if (!r)
            fail_msg("%s (pieces of %zu): %s", rec, chunk, err.msg);
        got = rein_model_response_to_json(r);
        if (!json_equal(want, got)) {
            char *g = json_dumps(got, JSON_COMPACT);
            fail_msg("%s (pieces of %zu, %s) decodes to %.600s", rec, chunk,
                     lines ? "lines" : "framed", g);
        }
        json_decref(got);
        rein_model_response_free(r);
    }
}

static void test_recordings_decode_to_the_written_down_values(void **state)
{
    char dir[1024];
    struct dirent *e;
    DIR *d;
    int checked = 0;

    (void)state;
    snprintf(dir, sizeof(dir), "%s/tests/data/providers/bedrock", REIN_SOURCE_DIR);
    d = opendir(dir);
    assert_non_null(d);
    while ((e = readdir(d))) {
        char path[2048];
        json_t *spec;
        const char *rec, *fmt;
        char *text;
        size_t len;
        if (!strstr(e->d_name, ".expected.json"))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        spec = rein_json_load_file(path, NULL);
        assert_non_null(spec);
        rec = json_string_value(json_object_get(spec, "recording"));
        fmt = json_string_value(json_object_get(spec, "format"));
        snprintf(path, sizeof(path), "%s/%s", dir, rec);
        text = test_read_file(path, &len);
        assert_non_null(text);
        if (strstr(rec, ".stream.jsonl")) {
            struct rein_buf framed;
            check(rec, fmt, text, len, true, json_object_get(spec, "expect"));
            rein_buf_init(&framed, 0);
            frame_lines(text, &framed);
            check(rec, fmt, framed.ptr, framed.len, false, json_object_get(spec, "expect"));
            rein_buf_release(&framed);
        } else {
            check(rec, fmt, text, len, false, json_object_get(spec, "expect"));
        }
        free(text);
        json_decref(spec);
        checked++;
    }
    closedir(d);
    assert_int_equal(checked, 6); /* every Bedrock recording */
}

/* Exceptions, a cut stream, an error body, and what the stop reasons mean. */
static void test_exceptions_cuts_and_stop_reasons(void **state)
{
    struct rein_buf b;
    rein_model_response *r;
    rein_error err;
    char notes[512];

    (void)state;
    rein_buf_init(&b, 0);
    assert_rein_ok(
        ms_eventstream_frame(&b, "event", "messageStart", LIT("{\"role\":\"assistant\"}")), NULL);
    assert_rein_ok(
        ms_eventstream_frame(&b, "event", "contentBlockDelta",
                             LIT("{\"contentBlockIndex\":0,\"delta\":{\"text\":\"Hi\"}}")),
        NULL);
    {
        struct rein_buf x;
        rein_buf_init(&x, 0);
        assert_rein_ok(rein_buf_add(&x, b.ptr, b.len), NULL);
        assert_rein_ok(ms_eventstream_frame(&x, "exception", "throttlingException",
                                            LIT("{\"message\":\"Too many tokens\"}")),
                       NULL);
        r = test_decode("bedrock-eventstream", x.ptr, x.len, 5, false, NULL, 0, &err);
        assert_non_null(r);
        assert_string_equal(rein_model_response_text(r), "Hi");
        assert_false(rein_model_response_is_complete(r));
        assert_string_equal(
            json_string_value(json_object_get(rein_model_response_error(r), "type")),
            "throttlingException");
        assert_string_equal(
            json_string_value(json_object_get(rein_model_response_error(r), "message")),
            "Too many tokens");
        rein_model_response_free(r);
        rein_buf_release(&x);
    }
    /* Cut inside the last message: what came before is kept, incomplete, and noted. */
    r = test_decode("bedrock-eventstream", b.ptr, b.len - 7, 0, false, notes, sizeof(notes), &err);
    assert_non_null(r);
    assert_false(rein_model_response_is_complete(r));
    assert_non_null(strstr(notes, "cut"));
    rein_model_response_free(r);
    rein_buf_release(&b);

    r = test_decode("bedrock-json", LIT("{\"message\":\"Too many requests\"}"), 0, false, NULL, 0,
                    &err);
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(rein_model_response_error(r), "message")),
                        "Too many requests");
    rein_model_response_free(r);
    r = test_decode(
        "bedrock-json",
        "{\"output\":{\"message\":{\"role\":\"assistant\",\"content\":[{\"text\":\"no\"}]}},"
        "\"stopReason\":\"guardrail_intervened\",\"usage\":{\"inputTokens\":10,"
        "\"outputTokens\":1,\"cacheReadInputTokens\":90,\"cacheWriteInputTokens\":5}}",
        sizeof("{\"output\":{\"message\":{\"role\":\"assistant\",\"content\":[{\"text\":\"no\"}]}},"
               "\"stopReason\":\"guardrail_intervened\",\"usage\":{\"inputTokens\":10,"
               "\"outputTokens\":1,\"cacheReadInputTokens\":90,\"cacheWriteInputTokens\":5}}") -
            1,
        0, false, NULL, 0, &err);
    assert_non_null(r);
    assert_int_equal(rein_model_response_finish(r), REIN_FINISH_CONTENT_FILTER);
    assert_int_equal(rein_model_response_input_tokens(r), 105);
    rein_model_response_free(r);
    assert_null(test_decode("bedrock-json", LIT("{\"hello\":1}"), 0, false, NULL, 0, &err));
    assert_non_null(strstr(err.msg, "output.message.content"));
}

/* ---------------------------------------------------------------------------------------
 * Credentials
 */

static void clear_aws_env(void)
{
    static const char *const vars[] = {"AWS_ACCESS_KEY_ID",           "AWS_SECRET_ACCESS_KEY",
                                       "AWS_SESSION_TOKEN",           "AWS_REGION",
                                       "AWS_DEFAULT_REGION",          "AWS_PROFILE",
                                       "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
                                       "AWS_BEARER_TOKEN_BEDROCK"};

    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    /* The sources of credentials that expire stay out (tests/integration/test_aws_credentials.c
     * has them): no container endpoint, no instance metadata. */
    unsetenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

/* Signs a request and returns the Authorization line (new string). */
static char *signature_of(struct rein__aws *a)
{
    struct curl_slist *h = NULL, *l;
    char *out = NULL;

    assert_rein_ok(
        rein__aws_sign(a, "bedrock", "https://h.example/model/x/converse", "{}", 2, 1700000000, &h),
        NULL);
    for (l = h; l; l = l->next) {
        if (!strncmp(l->data, "Authorization:", 14))
            out = strdup(l->data);
    }
    curl_slist_free_all(h);
    return out;
}

static void test_credentials_from_the_environment_and_profiles(void **state)
{
    char *dir = test_tmpdir(), path[1024], *auth;
    struct rein__aws *a = NULL;
    rein_error err;

    (void)state;
    clear_aws_env();
    setenv("HOME", dir, 1);
    /* Nothing anywhere: the message says what to set. */
    assert_int_equal(rein__aws_load(&a, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "AWS_ACCESS_KEY_ID"));
    /* The environment. */
    setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secret-env", 1);
    setenv("AWS_SESSION_TOKEN", "token-env", 1);
    assert_int_equal(rein__aws_load(&a, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "region"));
    setenv("AWS_DEFAULT_REGION", "eu-west-1", 1);
    assert_rein_ok(rein__aws_load(&a, &err), &err);
    assert_string_equal(rein__aws_region(a), "eu-west-1");
    auth = signature_of(a);
    assert_non_null(strstr(auth, "Credential=AKIDENV/20231114/eu-west-1/bedrock/aws4_request"));
    assert_non_null(
        strstr(auth, "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token"));
    assert_null(strstr(auth, "secret-env"));
    free(auth);
    rein__aws_free(a);
    /* The shared files, profile by profile; the config file's region; AWS_REGION wins. */
    clear_aws_env();
    snprintf(path, sizeof(path), "%s/.aws/credentials", dir);
    free(test_write_file(dir, ".aws/credentials",
                         "# comment\n[default]\naws_access_key_id = AKIDDEFAULT\n"
                         "aws_secret_access_key = s-default\n\n[work]\n"
                         "aws_access_key_id=AKIDWORK\naws_secret_access_key=s-work\n"
                         "aws_session_token = t-work\n"));
    free(test_write_file(dir, ".aws/config",
                         "[default]\nregion = us-west-2\n[profile work]\nregion = ap-south-1\n"
                         "s3 =\n  max_concurrent_requests = 20\n"));
    assert_rein_ok(rein__aws_load(&a, &err), &err);
    assert_string_equal(rein__aws_region(a), "us-west-2");
    auth = signature_of(a);
    assert_non_null(strstr(auth, "Credential=AKIDDEFAULT/"));
    assert_non_null(strstr(auth, "SignedHeaders=content-type;host;x-amz-date,"));
    free(auth);
    rein__aws_free(a);
    setenv("AWS_PROFILE", "work", 1);
    assert_rein_ok(rein__aws_load(&a, &err), &err);
    assert_string_equal(rein__aws_region(a), "ap-south-1");
    auth = signature_of(a);
    assert_non_null(strstr(auth, "Credential=AKIDWORK/20231114/ap-south-1/"));
    assert_non_null(strstr(auth, "x-amz-security-token"));
    free(auth);
    rein__aws_free(a);
    setenv("AWS_REGION", "us-east-1", 1);
    assert_rein_ok(rein__aws_load(&a, &err), &err);
    assert_string_equal(rein__aws_region(a), "us-east-1");
    rein__aws_free(a);
    /* A profile that does not exist. */
    setenv("AWS_PROFILE", "nope", 1);
    assert_int_equal(rein__aws_load(&a, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "\"nope\""));
    clear_aws_env();
    test_rmtree(dir);
    free(dir);
}

/*
 * What a Converse reply says about itself: no model and no id (the Converse and ConverseStream
 * responses carry neither; the chat span keeps the request model and sets no
 * gen_ai.response.model or gen_ai.response.id), and the prompt-cache reads and writes of its
 * usage (gen_ai.usage.cache_read.input_tokens, gen_ai.usage.cache_creation.input_tokens).
 * The recordings, whole and in pieces of 1 to 7 bytes, then a framed stream whose metadata
 * reports cache use.
 */
static void test_replies_name_no_model_and_report_cache_use(void **state)
{
    static const struct {
        const char *rec, *fmt;
        bool lines;
        int64_t cached, written;
    } recs[] = {
        {"vercel-amazon-bedrock-text.json", "bedrock-json", false, 0, 0},
        {"vercel-amazon-bedrock-reasoning.json", "bedrock-json", false, 0, 0},
        {"vercel-amazon-bedrock-json-other-tool.1.json", "bedrock-json", false, -1, -1},
        {"vercel-amazon-bedrock-text.stream.jsonl", "bedrock-eventstream", true, -1, -1},
        {"vercel-amazon-bedrock-json-other-tool.1.stream.jsonl", "bedrock-eventstream", true, -1,
         -1},
    };
    static const char *const events[][2] = {
        {"messageStart", "{\"role\":\"assistant\"}"},
        {"contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"Hi\"}}"},
        {"contentBlockStop", "{\"contentBlockIndex\":0}"},
        {"messageStop", "{\"stopReason\":\"end_turn\"}"},
        {"metadata", "{\"usage\":{\"inputTokens\":10,\"outputTokens\":1,\"totalTokens\":106,"
                     "\"cacheReadInputTokens\":90,\"cacheWriteInputTokens\":5},"
                     "\"metrics\":{\"latencyMs\":12}}"},
    };
    struct rein_buf b;
    rein_model_response *r;
    rein_error err;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(recs); i++) {
        char path[1024];
        size_t len;
        snprintf(path, sizeof(path), "%s/tests/data/providers/bedrock/%s", REIN_SOURCE_DIR,
                 recs[i].rec);
        char *text = test_read_file(path, &len);
        assert_non_null(text);
        for (size_t chunk = 0; chunk <= 7; chunk++) {
            r = test_decode(recs[i].fmt, text, len, chunk, recs[i].lines, NULL, 0, &err);
            if (!r)
                fail_msg("%s: %s", recs[i].rec, err.msg);
            assert_null(rein_model_response_model(r));
            assert_null(rein_model_response_id(r));
            assert_int_equal(rein_model_response_cached_tokens(r), recs[i].cached);
            assert_int_equal(rein_model_response_cache_write_tokens(r), recs[i].written);
            rein_model_response_free(r);
        }
        free(text);
    }
    rein_buf_init(&b, 0);
    for (size_t i = 0; i < REIN_ARRAY_SIZE(events); i++)
        assert_rein_ok(
            ms_eventstream_frame(&b, "event", events[i][0], events[i][1], strlen(events[i][1])),
            NULL);
    for (size_t chunk = 0; chunk <= 1; chunk++) {
        r = test_decode("bedrock-eventstream", b.ptr, b.len, chunk, false, NULL, 0, &err);
        assert_non_null(r);
        assert_string_equal(rein_model_response_text(r), "Hi");
        assert_null(rein_model_response_model(r));
        assert_null(rein_model_response_id(r));
        assert_int_equal(rein_model_response_input_tokens(r), 105);
        assert_int_equal(rein_model_response_cached_tokens(r), 90);
        assert_int_equal(rein_model_response_cache_write_tokens(r), 5);
        rein_model_response_free(r);
    }
    rein_buf_release(&b);
}

static void test_format_names_presets_and_caps(void **state)
{
    enum rein_wire_format f;
    struct rein_model_caps caps;
    const char *const *names = rein_provider_names();
    bool bedrock = false;

    (void)state;
    assert_rein_ok(rein_wire_format_parse("bedrock-eventstream", &f), NULL);
    assert_string_equal(rein_wire_format_name(f), "bedrock-eventstream");
    assert_rein_ok(rein_wire_format_parse("bedrock-json", &f), NULL);
    for (size_t i = 0; names[i]; i++)
        bedrock |= strcmp(names[i], "bedrock") == 0;
    assert_true(bedrock);
    rein_model_caps_lookup("us.anthropic.claude-sonnet-4-20250514-v1:0", &caps);
    assert_true(caps.tools && caps.parallel_tools);
    assert_int_equal(caps.context_window, 200000);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_aws_sdk_event_stream_vectors),
    cmocka_unit_test(test_framing_errors_are_named),
    cmocka_unit_test(test_recordings_decode_to_the_written_down_values),
    cmocka_unit_test(test_exceptions_cuts_and_stop_reasons),
    cmocka_unit_test(test_credentials_from_the_environment_and_profiles),
    cmocka_unit_test(test_replies_name_no_model_and_report_cache_use),
    cmocka_unit_test(test_format_names_presets_and_caps),
};

REIN_TEST_MAIN(tests)
