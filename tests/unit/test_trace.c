/*
 * Tracing (src/trace): the W3C traceparent and tracestate parsers against the specification's
 * rules, spans and the thread's current context, the sampler, and the exporter's queue against
 * a real OTLP/HTTP receiver on loopback (sending, retrying a 503, and a receiver that is down:
 * a bounded queue and every lost span counted). Each test runs in a process of its own (CTest
 * runs them one by one), so each sets up the process-wide exporter from its own variables.
 */
#include "test.h"

#include "otlp_receiver.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "trace/trace_int.h"

#if defined(HAVE_OTLP_PROTOBUF)
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"
#endif

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static void parse_ok(const char *tp, const char *ts, struct rein_trace_context *c)
{
    rein_error err;

    rein_error_clear(&err);
    assert_rein_ok(rein_trace_context_parse(tp, ts, c, &err), &err);
}

static void parse_bad(const char *tp)
{
    struct rein_trace_context c;
    rein_error err;

    memset(&c, 'x', sizeof(c));
    assert_int_equal(rein_trace_context_parse(tp, NULL, &c, &err), REIN_EPARSE);
    assert_true(err.msg[0] != '\0');
    assert_int_equal(c.trace_id[0], 'x'); /* untouched */
}

static void traceparent_valid(void **state)
{
    struct rein_trace_context c;
    char out[REIN_TRACEPARENT_LEN + 1];

    (void)state;
    parse_ok(TP, NULL, &c);
    assert_string_equal(c.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_string_equal(c.span_id, "00f067aa0ba902b7");
    assert_int_equal(c.flags, 1);
    assert_string_equal(c.state, "");
    rein_trace_context_format(&c, out);
    assert_string_equal(out, TP);
    /* Flags other than sampled are kept and passed on; spaces around the value are OWS. */
    parse_ok(" \t00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-fe ", NULL, &c);
    assert_int_equal(c.flags, 0xfe);
    /* A later version may append fields; rein reads the version-00 part and writes 00. */
    parse_ok("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-will-be",
             NULL, &c);
    rein_trace_context_format(&c, out);
    assert_string_equal(out, TP);
    parse_ok("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", NULL, &c);
    assert_int_equal(c.flags, 0);
}

static void traceparent_invalid(void **state)
{
    (void)state;
    parse_bad(NULL);
    parse_bad("");
    parse_bad("00-4bf9");
    parse_bad("00-00000000000000000000000000000000-00f067aa0ba902b7-01"); /* zero trace id */
    parse_bad("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"); /* zero parent */
    parse_bad("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"); /* forbidden version */
    parse_bad("0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    parse_bad("0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"); /* uppercase */
    parse_bad("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01");
    parse_bad("00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01");
    parse_bad("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0G");
    parse_bad("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1");
    parse_bad("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    parse_bad("00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01");
    parse_bad("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01");
    /* Version 00 is exactly 55 bytes; a later version's extra fields start with '-'. */
    parse_bad(TP "-extra");
    parse_bad(TP "0");
    parse_bad("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x");
}

static void tracestate_rules(void **state)
{
    struct rein_trace_context c;
    char big[600];

    (void)state;
    assert_true(rein_tracestate_is_valid("congo=t61rcWkgMzE"));
    assert_true(rein_tracestate_is_valid("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"));
    assert_true(rein_tracestate_is_valid(" a=1 ,, b=2\t")); /* OWS and empty members */
    assert_true(rein_tracestate_is_valid("tenant1@vendor=x,k_-*/9=v v"));
    assert_true(rein_tracestate_is_valid(""));
    assert_false(rein_tracestate_is_valid(NULL));
    assert_false(rein_tracestate_is_valid("a=1,a=2"));             /* duplicate key */
    assert_false(rein_tracestate_is_valid("Upper=1"));             /* key is lowercase */
    assert_false(rein_tracestate_is_valid("1abc=1"));              /* simple key starts a-z */
    assert_false(rein_tracestate_is_valid("a=b=c"));               /* '=' in the value */
    assert_false(rein_tracestate_is_valid("a="));                  /* empty value */
    assert_false(rein_tracestate_is_valid("novalue"));             /* no '=' */
    assert_false(rein_tracestate_is_valid("a=\x01"));              /* control byte */
    assert_false(rein_tracestate_is_valid("t@=1"));                /* empty system id */
    assert_false(rein_tracestate_is_valid("t@123456789012345=1")); /* system id > 14 */
    /* 33 members is one too many. */
    size_t used = 0;
    for (int i = 0; i < 33; i++)
        used += (size_t)snprintf(big + used, sizeof(big) - used, "%sk%d=v", i ? "," : "", i);
    assert_false(rein_tracestate_is_valid(big));
    /* A tracestate rein cannot keep is dropped; the traceparent stands. */
    parse_ok(TP, "a=1,a=2", &c);
    assert_string_equal(c.state, "");
    parse_ok(TP, "congo=t61rcWkgMzE", &c);
    assert_string_equal(c.state, "congo=t61rcWkgMzE");
    memset(big, 'v', sizeof(big) - 1);
    big[0] = 'k';
    big[1] = '=';
    big[sizeof(big) - 1] = '\0';
    parse_ok(TP, big, &c);
    assert_string_equal(c.state, "");
}

static void spans_and_scopes(void **state)
{
    struct rein_trace_context in;
    struct rein_trace_scope scope;
    struct rein_span turn, call, other;
    char tp[REIN_TRACEPARENT_LEN + 1];

    (void)state;
    assert_null(rein_trace_current());
    assert_false(rein_trace_current_traceparent(tp));
    assert_string_equal(tp, "");
    /* Export off: a span still has ids and is the current context while open. */
    rein_span_start(&turn, "invoke_agent", REIN_SPAN_INTERNAL, "0af7651916cd43dd8448eb211c80319c");
    assert_false(rein_span_is_recording(&turn));
    assert_string_equal(turn.ctx.trace_id, "0af7651916cd43dd8448eb211c80319c");
    assert_ptr_equal(rein_trace_current(), &turn.ctx);
    assert_int_equal(turn.ctx.flags, 0);
    rein_span_start(&call, "execute_tool echo", REIN_SPAN_INTERNAL, NULL);
    assert_string_equal(call.ctx.trace_id, turn.ctx.trace_id);
    assert_string_not_equal(call.ctx.span_id, turn.ctx.span_id);
    rein_span_set_str(&call, "gen_ai.tool.name", "echo"); /* not recorded: a no-op */
    rein_span_end(&call);
    assert_ptr_equal(rein_trace_current(), &turn.ctx);
    rein_span_end(&turn);
    assert_null(rein_trace_current());

    /* An incoming context is continued: same trace, its flags and tracestate passed on. */
    parse_ok(TP, "congo=t61rcWkgMzE", &in);
    rein_trace_scope_enter(&scope, &in);
    rein_span_start(&turn, "invoke_agent", REIN_SPAN_INTERNAL, in.trace_id);
    assert_string_equal(turn.ctx.trace_id, in.trace_id);
    assert_int_equal(turn.ctx.flags, 1);
    assert_string_equal(turn.ctx.state, "congo=t61rcWkgMzE");
    assert_true(rein_trace_current_traceparent(tp));
    assert_memory_equal(tp, "00-4bf92f3577b34da6a3ce929d0e0e4736-", 36);
    assert_memory_not_equal(tp + 36, "00f067aa0ba902b7", 16);
    rein_span_end(&turn);
    /* A turn of another trace does not adopt a context left current on the thread. */
    rein_span_start(&other, "invoke_agent", REIN_SPAN_INTERNAL, "0af7651916cd43dd8448eb211c80319c");
    assert_string_equal(other.ctx.trace_id, "0af7651916cd43dd8448eb211c80319c");
    assert_string_equal(other.ctx.state, "");
    rein_span_end(&other);
    assert_ptr_equal(rein_trace_current(), &in);
    rein_trace_scope_leave(&scope);
    assert_null(rein_trace_current());
}

/* ---- the exporter ---- */

static void export_env(const char *endpoint)
{
    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint, 1);
    setenv("OTEL_BSP_SCHEDULE_DELAY", "20", 1);
    setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2000", 1);
    setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", 1); /* what the receiver here decodes */
}

static void setup_ok(void)
{
    rein_error err;

    rein_error_clear(&err);
    assert_rein_ok(rein_trace_setup(&err), &err);
    assert_true(rein_trace_enabled());
}

static void exporter_sends(void **state)
{
    struct otlp_receiver *r = otlp_start();
    struct rein_span turn, chat;
    struct rein_trace_stats st;
    const char *reasons[] = {"tool_calls"};
    json_t *spans, *s1, *s2;

    (void)state;
    assert_non_null(r);
    export_env(otlp_url(r));
    setenv("OTEL_SERVICE_NAME", "svc-a", 1);
    setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test%20one,service.name=ignored", 1);
    setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team = a%20b ,authorization=Bearer%20k", 1);
    setup_ok();
    rein_span_start(&turn, "invoke_agent", REIN_SPAN_INTERNAL, NULL);
    assert_true(rein_span_is_recording(&turn));
    assert_int_equal(turn.ctx.flags, 1);
    rein_span_start(&chat, "chat gpt-x", REIN_SPAN_CLIENT, NULL);
    rein_span_set_str(&chat, "gen_ai.provider.name", "openai");
    rein_span_set_int(&chat, "gen_ai.usage.input_tokens", 12);
    rein_span_set_strs(&chat, "gen_ai.response.finish_reasons", reasons, 1);
    rein_span_set_double(&chat, "rein.ratio", 0.5);
    rein_span_set_bool(&chat, "rein.flag", true);
    rein_span_event(&chat, "rein.repair");
    rein_span_event_str(&chat, "rein.repair.from", "Echo");
    rein_span_event_int(&chat, "rein.preflight.errors", 2);
    rein_span_fail(&chat, "timeout", "the model took too long");
    rein_span_end(&chat);
    rein_span_end(&turn);
    assert_true(otlp_wait_spans(r, 2, 10000));
    spans = otlp_spans(r);
    s1 = otlp_span_named(spans, "invoke_agent");
    s2 = otlp_span_named(spans, "chat gpt-x");
    assert_non_null(s1);
    assert_non_null(s2);
    assert_string_equal(json_string_value(json_object_get(s2, "parentSpanId")), turn.ctx.span_id);
    assert_string_equal(json_string_value(json_object_get(s2, "traceId")), turn.ctx.trace_id);
    assert_null(json_object_get(s1, "parentSpanId"));
    assert_int_equal(json_integer_value(json_object_get(s2, "kind")), 3);
    assert_string_equal(otlp_attr_str(s2, "gen_ai.provider.name"), "openai");
    assert_int_equal(otlp_attr_int(s2, "gen_ai.usage.input_tokens"), 12);
    assert_string_equal(otlp_attr_str(s2, "error.type"), "timeout");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(s2, "status"), "code")), 2);
    json_t *ev = json_array_get(json_object_get(s2, "events"), 0);
    assert_string_equal(json_string_value(json_object_get(ev, "name")), "rein.repair");
    json_t *res = json_object_get(s1, "resource");
    assert_string_equal(json_string_value(json_object_get(res, "service.name")), "svc-a");
    assert_string_equal(json_string_value(json_object_get(res, "deployment.environment")),
                        "test one");
    assert_string_equal(otlp_last_header(r, "x-team"), "a b");
    assert_string_equal(otlp_last_header(r, "authorization"), "Bearer k");
    assert_string_equal(otlp_last_header(r, "content-type"), "application/json");
    rein_trace_shutdown(2000);
    rein_trace_stats(&st);
    assert_int_equal(st.exported, 2);
    assert_int_equal(st.dropped, 0);
    json_decref(spans);
    otlp_stop(r);
}

/* A span's attributes and events live in its own storage: more of them than its first block
 * holds (a 64 KB value, 40 attributes, 20 events, a rename) all arrive intact. */
static void span_storage_grows(void **state)
{
    struct otlp_receiver *r = otlp_start();
    struct rein_span s;
    char key[40][16], *big = malloc(65537);
    json_t *spans, *got, *events;

    (void)state;
    assert_non_null(r);
    assert_non_null(big);
    memset(big, 'x', 65536);
    big[65536] = '\0';
    export_env(otlp_url(r));
    setup_ok();
    rein_span_start(&s, "first name", REIN_SPAN_INTERNAL, NULL);
    for (int i = 0; i < 40; i++) {
        snprintf(key[i], sizeof(key[i]), "rein.k%d", i);
        rein_span_set_int(&s, key[i], i);
    }
    rein_span_set_str(&s, "rein.big", big);
    for (int i = 0; i < 20; i++) {
        rein_span_event(&s, "rein.step");
        rein_span_event_int(&s, "rein.step.index", i);
    }
    rein_span_set_name(&s, "second name");
    rein_span_fail(&s, "timeout", "the message");
    rein_span_end(&s);
    assert_true(otlp_wait_spans(r, 1, 10000));
    spans = otlp_spans(r);
    got = otlp_span_named(spans, "second name");
    assert_non_null(got);
    for (int i = 0; i < 40; i++)
        assert_int_equal(otlp_attr_int(got, key[i]), i);
    assert_string_equal(otlp_attr_str(got, "rein.big"), big);
    assert_string_equal(otlp_attr_str(got, "error.type"), "timeout");
    events = json_object_get(got, "events");
    assert_int_equal(json_array_size(events), 20);
    assert_string_equal(json_string_value(json_object_get(json_array_get(events, 19), "name")),
                        "rein.step");
    rein_trace_shutdown(2000);
    json_decref(spans);
    free(big);
    otlp_stop(r);
}

static void exporter_retries_503(void **state)
{
    struct otlp_receiver *r = otlp_start();
    struct rein_span s;
    struct rein_trace_stats st;

    (void)state;
    assert_non_null(r);
    otlp_fail_next(r, 2, 503); /* with Retry-After: 0 */
    export_env(otlp_url(r));
    setup_ok();
    rein_span_start(&s, "invoke_agent", REIN_SPAN_INTERNAL, NULL);
    rein_span_end(&s);
    assert_true(otlp_wait_spans(r, 1, 10000));
    assert_int_equal(otlp_requests(r), 3);
    rein_trace_shutdown(2000);
    rein_trace_stats(&st);
    assert_int_equal(st.exported, 1);
    assert_int_equal(st.dropped, 0);
    assert_int_equal(st.batches_failed, 0);
    otlp_stop(r);
}

/* 429 is retried as 503 is (the receiver's Retry-After: 0 honoured); a 502 without
 * Retry-After waits the exponential backoff's first step (half a second) before the retry. */
static void exporter_retries_429_and_backs_off(void **state)
{
    struct otlp_receiver *r = otlp_start();
    struct rein_span s;
    struct rein_trace_stats st;
    int64_t t0;

    (void)state;
    assert_non_null(r);
    otlp_fail_next(r, 1, 429);
    export_env(otlp_url(r));
    setup_ok();
    rein_span_start(&s, "invoke_agent", REIN_SPAN_INTERNAL, NULL);
    rein_span_end(&s);
    assert_true(otlp_wait_spans(r, 1, 10000));
    assert_int_equal(otlp_requests(r), 2);
    otlp_fail_next(r, 1, 502);
    t0 = rein_now_ms();
    rein_span_start(&s, "invoke_agent", REIN_SPAN_INTERNAL, NULL);
    rein_span_end(&s);
    assert_true(otlp_wait_spans(r, 2, 10000));
    assert_true(rein_now_ms() - t0 >= 500); /* a lower bound: load only makes it longer */
    assert_int_equal(otlp_requests(r), 4);
    rein_trace_shutdown(2000);
    rein_trace_stats(&st);
    assert_int_equal(st.exported, 2);
    assert_int_equal(st.dropped, 0);
    assert_int_equal(st.batches_failed, 0);
    otlp_stop(r);
}

/*
 * OTEL_EXPORTER_OTLP_TIMEOUT bounds a request: a collector that takes the connection and never
 * answers is given up after 100 ms and tried again after the first backoff step (half a
 * second), so a second connection comes long before the default timeout (10 s) would let it.
 */
static void exporter_timeout(void **state)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), conns[8], n = 0;
    char url[64];
    struct rein_span s;
    int64_t until;

    (void)state;
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(lfd, 8), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(sa.sin_port));
    export_env(url);
    setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "100", 1);
    setup_ok();
    rein_span_start(&s, "invoke_agent", REIN_SPAN_INTERNAL, NULL);
    rein_span_end(&s);
    /* Take each connection and answer nothing; 9 s is less than the default timeout. */
    until = rein_now_ms() + 9000;
    while (n < 2 && rein_now_ms() < until) {
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        if (poll(&p, 1, 100) == 1 && (conns[n] = accept(lfd, NULL, NULL)) >= 0)
            n++;
    }
    assert_int_equal(n, 2);
    rein_trace_shutdown(0);
    for (int i = 0; i < n; i++)
        close(conns[i]);
    close(lfd);
}

/* A 400 is not retried: the batch is given up and its spans counted as dropped. */
static void exporter_gives_up_on_400(void **state)
{
    struct otlp_receiver *r = otlp_start();
    struct rein_span s;
    struct rein_trace_stats st;

    (void)state;
    assert_non_null(r);
    otlp_fail_next(r, 1, 400);
    export_env(otlp_url(r));
    setup_ok();
    rein_span_start(&s, "invoke_agent", REIN_SPAN_INTERNAL, NULL);
    rein_span_end(&s);
    for (int i = 0; i < 500 && otlp_requests(r) < 1; i++)
        usleep(10000);
    rein_trace_shutdown(2000);
    rein_trace_stats(&st);
    assert_int_equal(otlp_requests(r), 1);
    assert_int_equal(st.exported, 0);
    assert_int_equal(st.dropped, 1);
    assert_int_equal(st.batches_failed, 1);
    otlp_stop(r);
}

/* The receiver is down: ending spans never blocks, the queue never holds more than its size,
 * and every span is either exported or counted as dropped. */
static void exporter_receiver_down(void **state)
{
    char url[64];
    struct rein_trace_stats st;
    int64_t t0;

    (void)state;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", test_free_port());
    export_env(url);
    setenv("OTEL_BSP_MAX_QUEUE_SIZE", "8", 1);
    setup_ok();
    t0 = rein_now_ms();
    for (int i = 0; i < 200; i++) {
        struct rein_span s;
        rein_span_start(&s, "execute_tool echo", REIN_SPAN_INTERNAL, NULL);
        rein_span_set_str(&s, "gen_ai.tool.name", "echo");
        rein_span_end(&s);
        rein_trace_stats(&st);
        assert_true(st.queued <= 8);
    }
    assert_true(rein_now_ms() - t0 < 5000); /* a generous bound: no span waited for a send */
    rein_trace_stats(&st);
    assert_int_equal(st.ended, 200);
    assert_true(st.dropped >= 200 - 16); /* at most a queue and a batch in flight */
    rein_trace_shutdown(0);
    rein_trace_stats(&st);
    assert_int_equal(st.exported, 0);
    assert_int_equal(st.dropped, 200);
    assert_int_equal(st.queued, 0);
}

static void sampler_and_switches(void **state)
{
    struct rein_trace_context in;
    struct rein_trace_scope scope;
    struct rein_span s;
    rein_error err;

    (void)state;
    /* Nothing configured: export stays off and setup succeeds. */
    assert_rein_ok(rein_trace_setup(&err), &err);
    assert_false(rein_trace_enabled());
    assert_false(rein_trace_capture_content());
    rein_trace_shutdown(0);

    setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9/v1/traces", 1);
    setenv("OTEL_SDK_DISABLED", "true", 1);
    assert_rein_ok(rein_trace_setup(&err), &err);
    assert_false(rein_trace_enabled());
    rein_trace_shutdown(0);
    unsetenv("OTEL_SDK_DISABLED");

    setenv("OTEL_TRACES_SAMPLER", "sometimes", 1);
    assert_int_equal(rein_trace_setup(&err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "OTEL_TRACES_SAMPLER"));
    assert_false(rein_trace_enabled());
    rein_trace_shutdown(0);

    setenv("OTEL_TRACES_SAMPLER", "traceidratio", 1);
    setenv("OTEL_TRACES_SAMPLER_ARG", "1.5", 1);
    assert_int_equal(rein_trace_setup(&err), REIN_EINVAL);
    rein_trace_shutdown(0);

    setenv("OTEL_TRACES_SAMPLER_ARG", "0", 1);
    setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "TRUE", 1);
    setup_ok();
    assert_true(rein_trace_capture_content());
    rein_span_start(&s, "invoke_agent", REIN_SPAN_INTERNAL, NULL);
    assert_false(rein_span_is_recording(&s)); /* ratio 0 keeps nothing */
    assert_int_equal(s.ctx.flags & REIN_TRACE_SAMPLED, 0);
    rein_span_end(&s);
    rein_trace_shutdown(0);

    /* parentbased: an unsampled caller is followed, a sampled one too. */
    setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on", 1);
    setup_ok();
    parse_ok("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", NULL, &in);
    rein_trace_scope_enter(&scope, &in);
    rein_span_start(&s, "invoke_agent", REIN_SPAN_INTERNAL, NULL);
    assert_false(rein_span_is_recording(&s));
    rein_span_end(&s);
    in.flags = 1;
    rein_span_start(&s, "invoke_agent", REIN_SPAN_INTERNAL, NULL);
    assert_true(rein_span_is_recording(&s));
    rein_span_end(&s);
    rein_trace_scope_leave(&scope);
    rein_trace_shutdown(0);

    setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", 1);
    assert_int_equal(rein_trace_setup(&err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "OTEL_EXPORTER_OTLP_PROTOCOL"));
    rein_trace_shutdown(0);
}

#if defined(HAVE_OTLP_PROTOBUF)
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;

static const Opentelemetry__Proto__Common__V1__AnyValue *kv(KeyValue **list, size_t n,
                                                            const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i]->key, key) == 0)
            return list[i]->value;
    fail_msg("attribute %s is missing", key);
    return NULL;
}

/* Spans are written in the protobuf wire format by rein itself (otlp_spans.c): decoded here
 * by the code protoc-c generates from the official trace.proto, every kind of value comes
 * back: long strings (two-byte lengths), negative and large integers (ten-byte varints),
 * doubles, both booleans, string arrays (empty too), events, tracestate, parent, status. */
static void spans_encode_to_the_wire_format(void **state)
{
    struct rein_trace_context in;
    struct rein_trace_scope scope;
    struct rein_span s;
    struct rein__span_rec *rec;
    struct rein__resource res = {0};
    struct rein_buf b;
    const char *two[] = {"stop", "länge"};
    char longv[301];
    Opentelemetry__Proto__Collector__Trace__V1__ExportTraceServiceRequest *req;
    Opentelemetry__Proto__Trace__V1__Span *sp;

    (void)state;
    export_env("http://127.0.0.1:9");
    setenv("OTEL_BSP_SCHEDULE_DELAY", "600000", 1);
    setup_ok();
    memset(longv, 'v', 300);
    longv[300] = '\0';
    parse_ok("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "k1=v1,k2=v2", &in);
    rein_trace_scope_enter(&scope, &in);
    rein_span_start(&s, "chat m", REIN_SPAN_CLIENT, NULL);
    rein_span_set_str(&s, "s.long", longv);
    rein_span_set_int(&s, "i.neg", -5);
    rein_span_set_int(&s, "i.big", INT64_MAX);
    rein_span_set_double(&s, "d", 0.25);
    rein_span_set_bool(&s, "b.t", true);
    rein_span_set_bool(&s, "b.f", false);
    rein_span_set_strs(&s, "a.two", two, 2);
    rein_span_set_strs(&s, "a.none", two, 0);
    rein_span_event(&s, "rein.repair");
    rein_span_event_str(&s, "rein.repair.from", "Echo");
    rein_span_event_double(&s, "rein.wait_ms", 1.5);
    rein_span_event_bool(&s, "rein.passed", true);
    rein_span_event(&s, "bare");
    rein_span_fail(&s, "timeout", "took too long");
    rec = s.rec;
    assert_non_null(rec);
    rec->end_ns = rec->start_ns + 1500;
    s.rec = NULL; /* encoded here, not queued */
    rein_span_end(&s);
    rein_trace_scope_leave(&scope);
    assert_true(rein__attrs_add_str(&res.attrs, "service.name", "svc", 3));

    rein_buf_init(&b, 0);
    assert_rein_ok(rein__otlp_proto_traces(&b, &res, &rec, 1), NULL);
    req = opentelemetry__proto__collector__trace__v1__export_trace_service_request__unpack(
        NULL, b.len, (const uint8_t *)b.ptr);
    assert_non_null(req);
    assert_int_equal(req->n_resource_spans, 1);
    assert_string_equal(req->resource_spans[0]->resource->attributes[0]->value->string_value,
                        "svc");
    assert_string_equal(req->resource_spans[0]->scope_spans[0]->scope->name, "rein");
    assert_int_equal(req->resource_spans[0]->scope_spans[0]->n_spans, 1);
    sp = req->resource_spans[0]->scope_spans[0]->spans[0];
    assert_int_equal(sp->trace_id.len, 16);
    assert_int_equal(sp->trace_id.data[0], 0x4b);
    assert_int_equal(sp->trace_id.data[15], 0x36);
    assert_int_equal(sp->parent_span_id.len, 8);
    assert_int_equal(sp->parent_span_id.data[7], 0xb7);
    assert_int_equal(sp->span_id.len, 8);
    assert_string_equal(sp->trace_state, "k1=v1,k2=v2");
    assert_string_equal(sp->name, "chat m");
    assert_int_equal(sp->kind, 3);
    assert_int_equal(sp->end_time_unix_nano - sp->start_time_unix_nano, 1500);
    assert_string_equal(kv(sp->attributes, sp->n_attributes, "s.long")->string_value, longv);
    assert_int_equal(kv(sp->attributes, sp->n_attributes, "i.neg")->int_value, -5);
    assert_true(kv(sp->attributes, sp->n_attributes, "i.big")->int_value == INT64_MAX);
    assert_true(kv(sp->attributes, sp->n_attributes, "d")->double_value == 0.25);
    assert_true(kv(sp->attributes, sp->n_attributes, "b.t")->bool_value);
    assert_int_equal(kv(sp->attributes, sp->n_attributes, "b.f")->value_case,
                     OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE);
    assert_false(kv(sp->attributes, sp->n_attributes, "b.f")->bool_value);
    const Opentelemetry__Proto__Common__V1__ArrayValue *arr =
        kv(sp->attributes, sp->n_attributes, "a.two")->array_value;
    assert_int_equal(arr->n_values, 2);
    assert_string_equal(arr->values[1]->string_value, "länge");
    assert_int_equal(kv(sp->attributes, sp->n_attributes, "a.none")->array_value->n_values, 0);
    assert_string_equal(kv(sp->attributes, sp->n_attributes, "error.type")->string_value,
                        "timeout");
    assert_int_equal(sp->n_events, 2);
    assert_string_equal(sp->events[0]->name, "rein.repair");
    assert_string_equal(sp->events[0]->attributes[0]->value->string_value, "Echo");
    assert_true(
        kv(sp->events[0]->attributes, sp->events[0]->n_attributes, "rein.wait_ms")->double_value ==
        1.5);
    assert_true(
        kv(sp->events[0]->attributes, sp->events[0]->n_attributes, "rein.passed")->bool_value);
    assert_int_equal(sp->events[1]->n_attributes, 0);
    assert_int_equal(sp->status->code, 2);
    assert_string_equal(sp->status->message, "took too long");
    /* Span.flags (field 16, fixed32, OTLP 1.0; the definitions are v1.7.0, decision 0048):
     * the caller's flags, sampled; nothing rein writes is unknown to them. */
    assert_int_equal(sp->flags, 1);
    assert_int_equal(sp->base.n_unknown_fields, 0);
    opentelemetry__proto__collector__trace__v1__export_trace_service_request__free_unpacked(req,
                                                                                            NULL);
    rein_buf_release(&b);
    rein__span_rec_free(rec);
    rein__attrs_release(&res.attrs);
    rein_trace_shutdown(0);
}
#else
/* Built without protobuf-c (REIN_OTLP_PROTOBUF=OFF): nothing here decodes protobuf. */
static void spans_encode_to_the_wire_format(void **state)
{
    (void)state;
    skip();
}
#endif

/* ---- metrics ---- */

/* The registry as OpenTelemetry metrics: the GenAI client metrics under the conventions'
 * names, units and keys, rein's own without the Prometheus suffixes, empty label values left
 * out, histogram buckets with the one past the last bound, min and max. */
static void registry_as_otel_metrics(void **state)
{
    static const char *const tlabels[] = {"gen_ai_operation_name", "gen_ai_provider_name",
                                          "gen_ai_request_model", "gen_ai_token_type", NULL};
    static const char *const clabels[] = {"tool", "status", NULL};
    static const double bounds[] = {1, 4, 16};
    const char *in[] = {"chat", "openai", "", "input"};
    const char *ok[] = {"echo", "success"};
    rein_metrics *m = rein_metrics_new();
    rein_arena *ar = rein_arena_new(0);
    rein_error err;
    struct rein_otel_metric *list;
    size_t n;

    (void)state;
    assert_non_null(m);
    assert_non_null(ar);
    rein_metric *usage = rein_metrics_family(m, REIN_METRIC_HISTOGRAM, "gen_ai_client_token_usage",
                                             "tokens", tlabels, bounds, 3, &err);
    rein_metric *calls = rein_metrics_family(m, REIN_METRIC_COUNTER, "rein_tool_calls_total",
                                             "calls", clabels, NULL, 0, &err);
    rein_metric *dur = rein_metrics_family(m, REIN_METRIC_HISTOGRAM, "rein_x_duration_seconds", "x",
                                           NULL, NULL, 0, &err);
    assert_non_null(usage);
    assert_non_null(calls);
    assert_non_null(dur);
    rein_metric_observe(usage, in, 0);
    rein_metric_observe(usage, in, 5);
    rein_metric_observe(usage, in, 100);
    rein_metric_add(calls, ok, 2);
    assert_rein_ok(rein_metrics_otel_collect(m, ar, &list, &n), NULL);
    rein_metrics_free(m); /* the collection is a copy */
    assert_int_equal(n, 3);

    assert_string_equal(list[0].name, "gen_ai.client.token.usage");
    assert_string_equal(list[0].unit, "{token}");
    assert_int_equal(list[0].kind, REIN_OTEL_HISTOGRAM);
    assert_int_equal(list[0].nbounds, 3);
    assert_int_equal(list[0].npoints, 1);
    const struct rein_otel_point *p = &list[0].points[0];
    assert_int_equal(p->nattrs, 3); /* the empty model is left out */
    assert_string_equal(p->keys[0], "gen_ai.operation.name");
    assert_string_equal(p->keys[2], "gen_ai.token.type");
    assert_string_equal(p->values[2], "input");
    assert_int_equal(p->count, 3);
    assert_true(p->value == 105.0 && p->min == 0.0 && p->max == 100.0);
    assert_int_equal(p->bucket_counts[0], 1); /* 0 <= 1 */
    assert_int_equal(p->bucket_counts[1], 0);
    assert_int_equal(p->bucket_counts[2], 1); /* 5 <= 16 */
    assert_int_equal(p->bucket_counts[3], 1); /* 100: past the last bound */
    assert_true(p->start_ns > 0);

    assert_string_equal(list[1].name, "rein_tool_calls");
    assert_int_equal(list[1].kind, REIN_OTEL_SUM);
    assert_true(list[1].monotonic);
    assert_true(list[1].points[0].value == 2.0);
    assert_string_equal(list[1].points[0].keys[0], "tool");

    assert_string_equal(list[2].name, "rein_x_duration");
    assert_string_equal(list[2].unit, "s");
    assert_int_equal(list[2].npoints, 0);
    rein_arena_free(ar);
}

struct collected {
    atomic_int calls;
};

static rein_err collect_one(void *userdata, rein_arena *ar, struct rein_otel_metric **out,
                            size_t *n)
{
    struct collected *c = userdata;
    struct rein_otel_metric *m = rein_arena_calloc(ar, 1, sizeof(*m));
    struct rein_otel_point *p = rein_arena_calloc(ar, 1, sizeof(*p));

    atomic_fetch_add(&c->calls, 1);
    if (!m || !p)
        return REIN_ENOMEM;
    m->name = "rein_test";
    m->kind = REIN_OTEL_SUM;
    m->monotonic = true;
    m->points = p;
    m->npoints = 1;
    p->value = 1;
    *out = m;
    *n = 1;
    return REIN_OK;
}

/* The collector is down: collections go on at their interval on the exporter's thread, each
 * failed one is counted, nothing piles up, and shutdown returns within its deadline. */
static void metrics_receiver_down(void **state)
{
    char url[64];
    struct collected c = {0};
    struct rein_trace_stats st;
    rein_error err;
    int64_t t0;

    (void)state;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", test_free_port());
    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url, 1);
    setenv("OTEL_METRIC_EXPORT_INTERVAL", "10", 1);
    setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", 1);
    assert_rein_ok(rein_trace_metrics_setup(collect_one, &c, &err), &err);
    assert_true(rein_trace_metrics_enabled());
    for (int i = 0; i < 1000 && atomic_load(&c.calls) < 1; i++)
        usleep(10000);
    assert_true(atomic_load(&c.calls) >= 1);
    t0 = rein_now_ms();
    rein_trace_shutdown(200);
    assert_true(rein_now_ms() - t0 < 5000); /* generous: the deadline is 200 ms */
    assert_false(rein_trace_metrics_enabled());
    rein_trace_stats(&st);
    assert_int_equal(st.metric_exports, 0);
    assert_true(st.metric_exports_failed >= 1);
}

static void metrics_switches(void **state)
{
    struct collected c = {0};
    rein_error err;

    (void)state;
    /* Nothing configured, or only a traces endpoint: off. */
    assert_rein_ok(rein_trace_metrics_setup(collect_one, &c, &err), &err);
    assert_false(rein_trace_metrics_enabled());
    setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9/v1/traces", 1);
    assert_rein_ok(rein_trace_metrics_setup(collect_one, &c, &err), &err);
    assert_false(rein_trace_metrics_enabled());

    setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://127.0.0.1:9/v1/metrics", 1);
    setenv("OTEL_METRICS_EXPORTER", "none", 1);
    assert_rein_ok(rein_trace_metrics_setup(collect_one, &c, &err), &err);
    assert_false(rein_trace_metrics_enabled());
    setenv("OTEL_METRICS_EXPORTER", "prometheus", 1); /* rein serve's /metrics only */
    assert_rein_ok(rein_trace_metrics_setup(collect_one, &c, &err), &err);
    assert_false(rein_trace_metrics_enabled());
    setenv("OTEL_METRICS_EXPORTER", "prometheus, otlp", 1);
    setenv("OTEL_SDK_DISABLED", "true", 1);
    assert_rein_ok(rein_trace_metrics_setup(collect_one, &c, &err), &err);
    assert_false(rein_trace_metrics_enabled());
    unsetenv("OTEL_SDK_DISABLED");

    setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta", 1);
    assert_int_equal(rein_trace_metrics_setup(collect_one, &c, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"));
    assert_false(rein_trace_metrics_enabled());
    setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "Cumulative", 1);
    setenv("OTEL_METRIC_EXPORT_INTERVAL", "soon", 1);
    assert_int_equal(rein_trace_metrics_setup(collect_one, &c, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "OTEL_METRIC_EXPORT_INTERVAL"));
    setenv("OTEL_METRIC_EXPORT_INTERVAL", "60000", 1);
    setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc", 1);
    assert_int_equal(rein_trace_metrics_setup(collect_one, &c, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"));
    unsetenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL");
    assert_rein_ok(rein_trace_metrics_setup(collect_one, &c, &err), &err);
    assert_true(rein_trace_metrics_enabled());
    assert_false(rein_trace_enabled()); /* spans are set up on their own */
    rein_trace_shutdown(0);
    assert_false(rein_trace_metrics_enabled());
    assert_int_equal(atomic_load(&c.calls), 1); /* the last collection at shutdown */
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(traceparent_valid),
        cmocka_unit_test(traceparent_invalid),
        cmocka_unit_test(tracestate_rules),
        cmocka_unit_test(spans_and_scopes),
        cmocka_unit_test(exporter_sends),
        cmocka_unit_test(span_storage_grows),
        cmocka_unit_test(exporter_retries_503),
        cmocka_unit_test(exporter_retries_429_and_backs_off),
        cmocka_unit_test(exporter_timeout),
        cmocka_unit_test(exporter_gives_up_on_400),
        cmocka_unit_test(exporter_receiver_down),
        cmocka_unit_test(sampler_and_switches),
        cmocka_unit_test(registry_as_otel_metrics),
        cmocka_unit_test(metrics_receiver_down),
        cmocka_unit_test(metrics_switches),
        cmocka_unit_test(spans_encode_to_the_wire_format),
    };

    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
