/*
 * Unit tests for src/providers: decoding every recorded provider response in
 * /work/shared/fixtures to the values written by hand in tests/data/providers/, in any
 * chunking; the SSE reader; string unescaping across deltas; call statuses (invalid names,
 * cut arguments, zero-argument calls); tool calls written as text; the event stream; the
 * history and its cached wire encodings; configuration, presets and capabilities; and
 * allocation failure at every step of a decode.
 */
/* rein-test-timeout: 120 */
#include "test.h"

#include "providers/provider_int.h"

#include <dirent.h>
#include <math.h>

/* ---------------------------------------------------------------------------------------
 * Helpers
 */

struct collected {
    struct rein_buf text, reasoning, args;
    int starts, ends, retries, finishes, usages;
    char order[256];
    size_t norder;
};

static void collect(const struct rein_model_event *ev, void *ud)
{
    struct collected *c = ud;
    char tag = '?';

    switch (ev->type) {
    case REIN_MEV_TEXT_DELTA:
        assert_rein_ok(rein_buf_add(&c->text, ev->text, ev->len), NULL);
        tag = 't';
        break;
    case REIN_MEV_REASONING_DELTA:
        assert_rein_ok(rein_buf_add(&c->reasoning, ev->text, ev->len), NULL);
        tag = 'r';
        break;
    case REIN_MEV_TOOL_CALL_START:
        c->starts++;
        tag = 'S';
        break;
    case REIN_MEV_TOOL_CALL_DELTA:
        assert_rein_ok(rein_buf_add(&c->args, ev->text, ev->len), NULL);
        tag = 'D';
        break;
    case REIN_MEV_TOOL_CALL_END:
        c->ends++;
        tag = 'E';
        break;
    case REIN_MEV_USAGE:
        c->usages++;
        tag = 'u';
        break;
    case REIN_MEV_FINISH:
        c->finishes++;
        tag = 'F';
        break;
    case REIN_MEV_RETRY:
        c->retries++;
        tag = 'R';
        break;
    case REIN_MEV_LOGPROBS:
        tag = 'l';
        break;
    case REIN_MEV_ANNOTATIONS:
        tag = 'a';
        break;
    case REIN_MEV_TEXT_BLOCK:
        tag = 'b';
        break;
    case REIN_MEV_SERVER_BLOCK:
        tag = 'v';
        break;
    case REIN_MEV_REASONING_ITEM:
        tag = 'i';
        break;
    case REIN_MEV_OUTPUT_ITEM:
        tag = 'o';
        break;
    case REIN_MEV_OUTPUT_ITEM_EVENT:
        tag = 'P';
        break;
    case REIN_MEV_CITATION:
        tag = 'c';
        break;
    default:
        break;
    }
    /* Consecutive equal tags are folded, so the order reads like "tSDDE F". */
    if (c->norder + 1 < sizeof(c->order) && (c->norder == 0 || c->order[c->norder - 1] != tag)) {
        c->order[c->norder++] = tag;
        c->order[c->norder] = '\0';
    }
}

static void collected_init(struct collected *c)
{
    memset(c, 0, sizeof(*c));
    rein_buf_init(&c->text, 0);
    rein_buf_init(&c->reasoning, 0);
    rein_buf_init(&c->args, 0);
}

static void collected_release(struct collected *c)
{
    rein_buf_release(&c->text);
    rein_buf_release(&c->reasoning);
    rein_buf_release(&c->args);
}

/* Decodes text in pieces of `chunk` bytes (0: all at once). Returns the response. */
static rein_model_response *decode_opts(enum rein_wire_format fmt, const char *text, size_t len,
                                        size_t chunk, const struct rein_decoder_options *opt,
                                        struct collected *col, rein_error *err)
{
    rein_provider_decoder *d = rein_provider_decoder_new(fmt, opt, col ? collect : NULL, col);
    rein_model_response *r = NULL;
    rein_err rc = REIN_OK;

    assert_non_null(d);
    if (!chunk)
        chunk = len ? len : 1;
    for (size_t off = 0; off < len && !rc; off += chunk)
        rc = rein_provider_decoder_feed(d, text + off, len - off < chunk ? len - off : chunk, err);
    if (!rc)
        rc = rein_provider_decoder_finish(d, &r, err);
    rein_provider_decoder_free(d);
    return rc ? NULL : r;
}

static rein_model_response *decode(enum rein_wire_format fmt, const char *text, size_t chunk,
                                   struct collected *col)
{
    rein_error err;
    rein_model_response *r;

    rein_error_clear(&err);
    r = decode_opts(fmt, text, strlen(text), chunk, NULL, col, &err);
    if (!r)
        fail_msg("decode failed: %s", err.msg);
    return r;
}

static const rein_model_call *only_call(const rein_model_response *r)
{
    assert_int_equal(rein_model_response_call_count(r), 1);
    return rein_model_response_call(r, 0);
}

/* ---------------------------------------------------------------------------------------
 * Fixtures: every recording decodes to the values written by hand
 */

/* Compares actual against expected; expected strings may be {"$starts","$ends","$bytes"}. */
static bool matches(const json_t *want, const json_t *got, char *why, size_t size, const char *at)
{
    if (json_is_object(want) && json_object_get(want, "$bytes")) {
        const char *s = json_string_value(got);
        const char *st = json_string_value(json_object_get(want, "$starts"));
        const char *en = json_string_value(json_object_get(want, "$ends"));
        size_t n = (size_t)json_integer_value(json_object_get(want, "$bytes"));
        if (!s || strlen(s) != n || strncmp(s, st, strlen(st)) != 0 ||
            strcmp(s + strlen(s) - strlen(en), en) != 0) {
            snprintf(why, size, "%s: got %zu bytes starting '%.40s', want %zu bytes '%.40s'…'%s'",
                     at, s ? strlen(s) : 0, s ? s : "(not a string)", n, st, en);
            return false;
        }
        return true;
    }
    if (json_is_object(want) && json_is_object(got)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)want, k, v)
        {
            char sub[160];
            snprintf(sub, sizeof(sub), "%s.%s", at, k);
            if (!matches(v, json_object_get(got, k), why, size, sub))
                return false;
        }
        return true;
    }
    if (json_is_array(want) && json_is_array(got)) {
        if (json_array_size(want) != json_array_size(got)) {
            snprintf(why, size, "%s: got %zu items, want %zu", at, json_array_size(got),
                     json_array_size(want));
            return false;
        }
        for (size_t i = 0; i < json_array_size(want); i++) {
            char sub[160];
            snprintf(sub, sizeof(sub), "%s[%zu]", at, i);
            if (!matches(json_array_get(want, i), json_array_get(got, i), why, size, sub))
                return false;
        }
        return true;
    }
    if (got && json_equal((json_t *)want, (json_t *)got))
        return true;
    char *w = json_dumps(want, JSON_ENCODE_ANY | JSON_COMPACT);
    char *g = got ? json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    snprintf(why, size, "%s: got %.200s, want %.200s", at, g ? g : "(absent)", w ? w : "?");
    free(w);
    free(g);
    return false;
}

struct fixture_run {
    int checked;
    int failed;
};

/* in_tree: the recording sits next to its expected file (tests/data/responses), not in the
 * shared fixtures. */
static void run_fixture(const char *expected_path, bool in_tree, struct fixture_run *run,
                        size_t chunk)
{
    json_t *spec = rein_json_load_file(expected_path, NULL);
    const char *fixture, *fmtname;
    enum rein_wire_format fmt;
    struct rein_decoder_options opt;
    rein_model_response *r;
    rein_error err;
    char *text, why[512];
    size_t len;
    json_t *got;

    assert_non_null(spec);
    fixture = json_string_value(json_object_get(spec, "fixture"));
    fmtname = json_string_value(json_object_get(spec, "format"));
    assert_rein_ok(rein_wire_format_parse(fmtname, &fmt), NULL);
    memset(&opt, 0, sizeof(opt));
    opt.payload_lines = json_is_true(json_object_get(spec, "jsonl"));
    char sub[1024];
    if (in_tree)
        snprintf(sub, sizeof(sub), "%s/tests/data/responses/%s", REIN_SOURCE_DIR, fixture);
    else
        snprintf(sub, sizeof(sub), "fixtures/%s", fixture);
    text = test_read_file(in_tree ? sub : test_shared_path(sub), &len);
    assert_non_null(text);
    rein_error_clear(&err);
    r = decode_opts(fmt, text, len, chunk, &opt, NULL, &err);
    if (!r) {
        print_error("%s (chunk %zu): decode failed: %s\n", fixture, chunk, err.msg);
        run->failed++;
    } else {
        got = rein_model_response_to_json(r);
        assert_non_null(got);
        if (!matches(json_object_get(spec, "expect"), got, why, sizeof(why), "response")) {
            print_error("%s (chunk %zu): %s\n", fixture, chunk, why);
            run->failed++;
        }
        json_decref(got);
        rein_model_response_free(r);
    }
    run->checked++;
    free(text);
    json_decref(spec);
}

/* fn(the path of the file, ud) for every expected file in tests/data/NAME. */
static void each_expected(const char *name, void (*fn)(const char *path, void *ud), void *ud)
{
    char dir[1024];
    struct dirent *e;
    DIR *d;

    snprintf(dir, sizeof(dir), "%s/tests/data/%s", REIN_SOURCE_DIR, name);
    d = opendir(dir);
    assert_non_null(d);
    while ((e = readdir(d))) {
        char path[2048];
        if (!strstr(e->d_name, ".expected.json"))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        fn(path, ud);
    }
    closedir(d);
}

struct dir_run {
    bool in_tree;
    struct fixture_run *run;
    size_t chunk;
};

static void run_one(const char *path, void *ud)
{
    struct dir_run *dr = ud;

    run_fixture(path, dr->in_tree, dr->run, dr->chunk);
}

/* Every expected file in tests/data/NAME. */
static void run_dir(const char *name, bool in_tree, struct fixture_run *run, size_t chunk)
{
    struct dir_run dr = {in_tree, run, chunk};

    each_expected(name, run_one, &dr);
}

/* The recordings kept in the tree (tests/data/responses, SOURCES.md there): always run. */
static void run_tree_recordings(size_t chunk)
{
    struct fixture_run run = {0, 0};

    run_dir("responses", true, &run, chunk);
    assert_int_equal(run.failed, 0);
    assert_int_equal(run.checked, 12); /* every Responses API recording */
}

static void run_all_fixtures(size_t chunk)
{
    struct fixture_run run = {0, 0};

    run_tree_recordings(chunk);
    if (!test_require_shared("fixtures/SOURCES.md"))
        return;
    run_dir("providers", false, &run, chunk);
    assert_int_equal(run.failed, 0);
    assert_int_equal(run.checked, 52); /* every provider recording in the fixtures */
}

/* The in-tree recordings in pieces of every size from 1 to 7 bytes (1 and 7 run above). */
static void test_recordings_decode_the_same_in_every_small_piece(void **state)
{
    (void)state;
    for (size_t chunk = 2; chunk <= 6; chunk++)
        run_tree_recordings(chunk);
}

static void test_fixtures_decode_to_hand_written_values(void **state)
{
    (void)state;
    run_all_fixtures(0);
}

static void test_fixtures_decode_the_same_byte_by_byte(void **state)
{
    (void)state;
    run_all_fixtures(1);
}

static void test_fixtures_decode_the_same_in_odd_pieces(void **state)
{
    (void)state;
    run_all_fixtures(7);
    run_all_fixtures(4093);
}

static void test_fixture_notes_say_what_was_assembled(void **state)
{
    const char *path;
    char *text;
    size_t len;
    rein_provider_decoder *d;
    rein_model_response *r;
    struct rein_decoder_options opt;

    (void)state;
    path = test_require_shared("fixtures/openai/openai-python-gpt4o-n3-multiple-choices.sse");
    if (!path)
        return;
    text = test_read_file(path, &len);
    d = rein_provider_decoder_new(REIN_WIRE_OPENAI_SSE, NULL, NULL, NULL);
    assert_rein_ok(rein_provider_decoder_feed(d, text, len, NULL), NULL);
    assert_rein_ok(rein_provider_decoder_finish(d, &r, NULL), NULL);
    assert_non_null(strstr(rein_provider_decoder_notes(d), "choice 0"));
    rein_model_response_free(r);
    rein_provider_decoder_free(d);
    free(text);

    text = test_read_file(
        test_shared_path("fixtures/anthropic/vercel-server-tool-use-tool-search.stream.jsonl"),
        &len);
    memset(&opt, 0, sizeof(opt));
    opt.payload_lines = true;
    d = rein_provider_decoder_new(REIN_WIRE_ANTHROPIC_SSE, &opt, NULL, NULL);
    assert_rein_ok(rein_provider_decoder_feed(d, text, len, NULL), NULL);
    assert_rein_ok(rein_provider_decoder_finish(d, &r, NULL), NULL);
    assert_non_null(strstr(rein_provider_decoder_notes(d), "several messages"));
    /* The server tool use is kept for replay, not offered as a call to run. */
    json_t *m = rein_model_response_message(r);
    json_t *blocks = json_object_get(m, "server_blocks");
    assert_int_equal(json_array_size(blocks), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(blocks, 0), "type")),
                        "server_tool_use");
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_array_get(blocks, 0), "input"), "limit")),
                     10);
    json_decref(m);
    rein_model_response_free(r);
    rein_provider_decoder_free(d);
    free(text);
}

/* ---------------------------------------------------------------------------------------
 * The SSE reader
 */

struct sse_log {
    char events[16][64];
    char data[16][128];
    int n;
};

static rein_err sse_cb(void *ud, const char *event, const char *data, size_t len, rein_error *err)
{
    struct sse_log *l = ud;

    (void)err;
    assert_true(l->n < 16);
    snprintf(l->events[l->n], 64, "%s", event ? event : "");
    snprintf(l->data[l->n], 128, "%.*s", (int)len, data);
    l->n++;
    return REIN_OK;
}

static void sse_run(const char *input, size_t chunk, bool lines, struct sse_log *log)
{
    struct rein__sse s;
    size_t len = strlen(input);

    memset(log, 0, sizeof(*log));
    rein__sse_init(&s, 0, lines, sse_cb, log);
    if (!chunk)
        chunk = len;
    for (size_t off = 0; off < len; off += chunk)
        assert_rein_ok(rein__sse_feed(&s, input + off, len - off < chunk ? len - off : chunk, NULL),
                       NULL);
    assert_rein_ok(rein__sse_finish(&s, NULL), NULL);
    rein__sse_release(&s);
}

static void test_sse_reader_follows_the_spec_and_its_variants(void **state)
{
    static const char *const input = "\xEF\xBB\xBF: a comment\r\n"
                                     "event: message_start\r\n"
                                     "data: {\"a\":1}\r\n"
                                     "\r\n"
                                     "data:{\"b\":2}\n\n"
                                     "data: line one\n"
                                     "data: line two\n\n"
                                     "id:7\nevent:result\n:HTTP_STATUS/200\ndata:{\"c\":3}\n"
                                     "id:8\nevent:result\ndata:{\"d\":4}\n"
                                     "retry: 100\nunknown field\n\n"
                                     "data: last, with no blank line";
    struct sse_log l;

    (void)state;
    for (size_t chunk = 0; chunk < 8; chunk++) {
        sse_run(input, chunk, false, &l);
        assert_int_equal(l.n, 6);
        assert_string_equal(l.events[0], "message_start");
        assert_string_equal(l.data[0], "{\"a\":1}");
        assert_string_equal(l.events[1], "");
        assert_string_equal(l.data[1], "{\"b\":2}");
        assert_string_equal(l.data[2], "line one\nline two");
        /* DashScope writes no blank line between events: the next id: dispatches. */
        assert_string_equal(l.events[3], "result");
        assert_string_equal(l.data[3], "{\"c\":3}");
        assert_string_equal(l.data[4], "{\"d\":4}");
        assert_string_equal(l.data[5], "last, with no blank line");
    }
}

static void test_sse_reader_handles_lone_cr_and_payload_lines(void **state)
{
    struct sse_log l;

    (void)state;
    for (size_t chunk = 0; chunk < 4; chunk++) {
        sse_run("data: x\r\rdata: y\r\r", chunk, false, &l);
        assert_int_equal(l.n, 2);
        assert_string_equal(l.data[1], "y");
        sse_run("{\"a\":1}\n\n  \n{\"b\":2}\r\n{\"c\":3}", chunk, true, &l);
        assert_int_equal(l.n, 3);
        assert_string_equal(l.data[2], "{\"c\":3}");
    }
}

static void test_sse_reader_bounds_an_event(void **state)
{
    struct rein__sse s;
    struct sse_log l;
    rein_error err;
    char big[200];

    (void)state;
    memset(&l, 0, sizeof(l));
    memset(big, 'x', sizeof(big));
    rein__sse_init(&s, 64, false, sse_cb, &l);
    assert_rein_ok(rein__sse_feed(&s, "data: ", 6, NULL), NULL);
    assert_int_equal(rein__sse_feed(&s, big, sizeof(big), &err), REIN_ETOOBIG);
    assert_non_null(strstr(err.msg, "larger than 64"));
    rein__sse_release(&s);
}

/* Events of any size, kept whole. */
struct sse_big {
    struct rein_buf data[4];
    char events[4][16];
    int n;
};

static rein_err sse_big_cb(void *ud, const char *event, const char *data, size_t len,
                           rein_error *err)
{
    struct sse_big *l = ud;

    (void)err;
    assert_true(l->n < 4);
    snprintf(l->events[l->n], sizeof(l->events[0]), "%s", event ? event : "");
    return rein_buf_add(&l->data[l->n++], data, len);
}

/* Feeds input in pieces of chunk bytes to a reader bounded at max; the result of the last
 * feed or of the finish. */
static rein_err sse_big_run(const char *input, size_t len, size_t chunk, size_t max,
                            struct sse_big *l)
{
    struct rein__sse s;
    rein_error err;
    rein_err rc = REIN_OK;

    memset(l, 0, sizeof(*l));
    for (int i = 0; i < 4; i++)
        rein_buf_init(&l->data[i], 0);
    rein__sse_init(&s, max, false, sse_big_cb, l);
    for (size_t off = 0; off < len && !rc; off += chunk)
        rc = rein__sse_feed(&s, input + off, len - off < chunk ? len - off : chunk, &err);
    if (!rc)
        rc = rein__sse_finish(&s, &err);
    rein__sse_release(&s);
    return rc;
}

static void sse_big_free(struct sse_big *l)
{
    for (int i = 0; i < 4; i++)
        rein_buf_release(&l->data[i]);
}

/* A data line that arrives in many pieces is gathered once and handed over whole, with the
 * lines after it, a BOM before it, CRLF and a named event around it (the line buffer becomes
 * the event's data instead of being copied into it). */
static void test_sse_reader_gathers_a_split_line_once(void **state)
{
    static const size_t pieces[] = {1, 7, 1000, 4096, 300000};
    struct rein_buf in, want;
    struct sse_big l;

    (void)state;
    rein_buf_init(&in, 0);
    rein_buf_init(&want, 0);
    assert_rein_ok(rein_buf_adds(&in, "\xEF\xBB\xBF"
                                      "event: big\r\ndata: "),
                   NULL);
    for (int i = 0; i < 100000; i++)
        assert_rein_ok(rein_buf_addch(&want, (char)('a' + i % 26)), NULL);
    assert_rein_ok(rein_buf_add(&in, want.ptr, want.len), NULL);
    assert_rein_ok(rein_buf_adds(&in, "\r\ndata:tail\r\n\r\ndata: a\ndata: "), NULL);
    assert_rein_ok(rein_buf_add(&in, want.ptr, 5000), NULL);
    assert_rein_ok(rein_buf_adds(&in, "\n\ndata: "), NULL);
    assert_rein_ok(rein_buf_add(&in, want.ptr, 3000), NULL); /* cut: no blank line */
    assert_rein_ok(rein_buf_adds(&want, "\ntail"), NULL);
    for (size_t k = 0; k < REIN_ARRAY_SIZE(pieces); k++) {
        assert_rein_ok(sse_big_run(in.ptr, in.len, pieces[k], 0, &l), NULL);
        assert_int_equal(l.n, 3);
        assert_string_equal(l.events[0], "big");
        assert_int_equal(l.data[0].len, want.len);
        assert_memory_equal(l.data[0].ptr, want.ptr, want.len);
        assert_string_equal(l.events[1], "");
        assert_int_equal(l.data[1].len, 2 + 5000);
        assert_memory_equal(l.data[1].ptr, "a\nabcdef", 8);
        assert_int_equal(l.data[2].len, 3000);
        assert_memory_equal(l.data[2].ptr, want.ptr, 3000);
        sse_big_free(&l);
    }
    rein_buf_release(&in);
    rein_buf_release(&want);
}

/* The bound is on the event's data, whether its first line was gathered or not. */
static void test_sse_reader_bounds_a_gathered_event(void **state)
{
    static const char fits[] = "data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
                               "data: yyyyyyyyyyyyy\n\n"; /* 50 + 1 + 13 = 64 bytes */
    static const char over[] = "data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
                               "data: yyyyyyyyyyyyyy\n\n"; /* 65 bytes */
    struct sse_big l;

    (void)state;
    for (size_t chunk = 1; chunk < 80; chunk += 13) {
        assert_rein_ok(sse_big_run(fits, sizeof(fits) - 1, chunk, 64, &l), NULL);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.data[0].len, 64);
        sse_big_free(&l);
        assert_int_equal(sse_big_run(over, sizeof(over) - 1, chunk, 64, &l), REIN_ETOOBIG);
        sse_big_free(&l);
    }
}

/* ---------------------------------------------------------------------------------------
 * Strings and names
 */

static void test_unescape_joins_surrogates_across_deltas(void **state)
{
    struct rein_buf b;
    uint32_t hi = 0;

    (void)state;
    rein_buf_init(&b, 0);
    assert_rein_ok(rein__json_unescape(&b, "a\\ud83d", 7, &hi), NULL);
    assert_int_not_equal(hi, 0);
    assert_rein_ok(rein__json_unescape(&b, "\\ude00b\\n\\u00e9\\\"", 17, &hi), NULL);
    assert_string_equal(b.ptr, "a\xF0\x9F\x98\x80"
                               "b\n\xC3\xA9\"");
    /* A lone half becomes U+FFFD, and so does a bad escape. */
    rein_buf_reset(&b);
    assert_rein_ok(rein__json_unescape(&b, "\\ud83dx\\q", 9, &hi), NULL);
    assert_string_equal(b.ptr, "\xEF\xBF\xBDx\xEF\xBF\xBD");
    rein_buf_reset(&b);
    assert_rein_ok(rein__json_unescape(&b, "\\ud83d", 6, &hi), NULL);
    assert_rein_ok(rein__json_unescape_flush(&b, &hi), NULL);
    assert_string_equal(b.ptr, "\xEF\xBF\xBD");
    rein_buf_release(&b);
}

/*
 * The oracle for rein__json_unescape: the plain per-escape version it replaced (one buffer call
 * per run and per escape), whose output the faster one must give byte for byte, with the same
 * surrogate carried between pieces and the same errors at a buffer's limit.
 */
static rein_err oracle_put_cp(struct rein_buf *out, uint32_t cp)
{
    char u[4];
    size_t n = 0;

    if (cp < 0x80) {
        u[n++] = (char)cp;
    } else if (cp < 0x800) {
        u[n++] = (char)(0xC0 | (cp >> 6));
        u[n++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        u[n++] = (char)(0xE0 | (cp >> 12));
        u[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[n++] = (char)(0x80 | (cp & 0x3F));
    } else {
        u[n++] = (char)(0xF0 | (cp >> 18));
        u[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[n++] = (char)(0x80 | (cp & 0x3F));
    }
    return rein_buf_add(out, u, n);
}

static rein_err oracle_flush(struct rein_buf *out, uint32_t *hi)
{
    if (!*hi)
        return REIN_OK;
    *hi = 0;
    return rein_buf_add(out, "\xEF\xBF\xBD", 3);
}

static rein_err oracle_escape(struct rein_buf *out, const char *s, size_t len, size_t *i,
                              uint32_t *hi)
{
    static const char from[] = "ntrbf/\\\"", to[] = "\n\t\r\b\f/\\\"";
    const char *m;
    uint32_t u = 0;
    rein_err rc;

    if (s[*i + 1] == 'u') {
        bool ok = *i + 6 <= len;
        for (size_t k = 2; ok && k < 6; k++) {
            int h = rein__hex_digit(s[*i + k]);
            ok = h >= 0;
            u = (u << 4) | (uint32_t)(ok ? h : 0);
        }
        *i += ok ? 6 : 2;
        if (!ok)
            return rein_buf_add(out, "\xEF\xBF\xBD", 3);
        if (u >= 0xD800 && u <= 0xDBFF) {
            rc = oracle_flush(out, hi);
            *hi = u;
            return rc;
        }
        if (u >= 0xDC00 && u <= 0xDFFF) {
            if (!*hi)
                return rein_buf_add(out, "\xEF\xBF\xBD", 3);
            u = 0x10000 + ((*hi - 0xD800) << 10) + (u - 0xDC00);
            *hi = 0;
            return oracle_put_cp(out, u);
        }
        rc = oracle_flush(out, hi);
        return rc ? rc : oracle_put_cp(out, u);
    }
    m = s[*i + 1] ? strchr(from, s[*i + 1]) : NULL;
    *i += 2;
    rc = oracle_flush(out, hi);
    return rc ? rc : m ? rein_buf_addch(out, to[m - from]) : rein_buf_add(out, "\xEF\xBF\xBD", 3);
}

static rein_err oracle_unescape(struct rein_buf *out, const char *s, size_t len, uint32_t *hi)
{
    size_t i = 0, run = 0;
    rein_err rc;

    if (len == 0)
        return REIN_OK;
    if (*hi && s[0] != '\\' && (rc = oracle_flush(out, hi)))
        return rc;
    if (!memchr(s, '\\', len))
        return rein_buf_add(out, s, len);
    if ((rc = rein_buf_grow(out, len)))
        return rc;
    for (; i < len; run = i) {
        const char *bs = memchr(s + i, '\\', len - i);
        if (!bs)
            break;
        i = (size_t)(bs - s);
        if (i > run && ((rc = oracle_flush(out, hi)) || (rc = rein_buf_add(out, s + run, i - run))))
            return rc;
        if (i + 1 >= len)
            return rein_buf_add(out, "\xEF\xBF\xBD", 3);
        if ((rc = oracle_escape(out, s, len, &i, hi)))
            return rc;
    }
    if (run < len && ((rc = oracle_flush(out, hi)) || (rc = rein_buf_add(out, s + run, len - run))))
        return rc;
    return REIN_OK;
}

static void test_unescape_matches_the_plain_version(void **state)
{
    /* Pieces the random text is made of: runs long and short, every escape, broken ones,
     * surrogate halves, and non-ASCII bytes. */
    static const char *const parts[] = {"a",
                                        "xy",
                                        "plain text of some length.",
                                        "caf\xC3\xA9",
                                        "\\n",
                                        "\\t",
                                        "\\r",
                                        "\\b",
                                        "\\f",
                                        "\\/",
                                        "\\\\",
                                        "\\\"",
                                        "\\u00e9",
                                        "\\u0000",
                                        "\\ud83d",
                                        "\\ude00",
                                        "\\uDBFF",
                                        "\\u12",
                                        "\\uzzzz",
                                        "\\q",
                                        "\\",
                                        "u",
                                        "{\\\"id\\\":1,\\\"name\\\":\\\"n\\\"}",
                                        "\xE6\x97\xA5"};
    uint64_t seed = 25;
    char text[600];

    (void)state;
    for (int round = 0; round < 4000; round++) {
        struct rein_buf a, b;
        uint32_t ha = 0, hb = 0;
        size_t n = 0, max = 0;
        rein_err ra = REIN_OK, rb = REIN_OK;

        seed = seed * 6364136223846793005u + 1442695040888963407u;
        while (n < (size_t)(seed >> 33) % 500) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            const char *p = parts[(seed >> 33) % (sizeof(parts) / sizeof(parts[0]))];
            memcpy(text + n, p, strlen(p));
            n += strlen(p);
        }
        /* One in four rounds with a limit somewhere inside the output. */
        if (round % 4 == 3)
            max = 2 + (size_t)(seed >> 40) % (n + 16);
        rein_buf_init(&a, max);
        rein_buf_init(&b, max);
        /* Fed in random pieces, as deltas arrive (a piece may split an escape). */
        for (size_t off = 0; off < n && !ra && !rb;) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            size_t k = round % 2 ? n - off : 1 + (size_t)(seed >> 33) % (n - off);
            ra = rein__json_unescape(&a, text + off, k, &ha);
            rb = oracle_unescape(&b, text + off, k, &hb);
            assert_int_equal(ra, rb);
            assert_int_equal(ha, hb);
            off += k;
        }
        if (!ra && !rb) {
            ra = rein__json_unescape_flush(&a, &ha);
            rb = oracle_flush(&b, &hb);
            assert_int_equal(ra, rb);
        }
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.ptr, b.ptr, a.len + 1);
        rein_buf_release(&a);
        rein_buf_release(&b);
    }
}

static void test_tool_names_are_checked(void **state)
{
    (void)state;
    assert_true(rein__tool_name_is_valid("file_search", 11));
    assert_true(rein__tool_name_is_valid("math.factorial", 14));
    assert_true(rein__tool_name_is_valid("搜索", strlen("搜索")));
    assert_false(rein__tool_name_is_valid("", 0));
    assert_false(rein__tool_name_is_valid("\xE2\x9A\x99", 3)); /* ⚙ */
    assert_false(rein__tool_name_is_valid("---", 3));
    assert_false(rein__tool_name_is_valid("two words", 9));
    assert_false(rein__tool_name_is_valid("bad\xFFutf8", 8));
    assert_false(rein__tool_name_is_valid("tab\tname", 8));
}

/* ---------------------------------------------------------------------------------------
 * Call statuses
 */

#define CHUNK(delta) "data: {\"choices\":[{\"index\":0,\"delta\":" delta "}]}\n\n"
#define FINISH(reason)                                                                             \
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"" reason "\"}]}\n\n"
#define CALL0(id, name)                                                                            \
    CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"" id "\",\"function\":{\"name\":\"" name         \
          "\",\"arguments\":\"\"}}]}")
#define ARGS(i, a)                                                                                 \
    CHUNK("{\"tool_calls\":[{\"index\":" #i ",\"function\":{\"arguments\":\"" a "\"}}]}")

static void test_invalid_names_are_kept_and_marked(void **state)
{
    rein_model_response *r;
    const rein_model_call *c;

    (void)state;
    r = decode(REIN_WIRE_OPENAI_SSE,
               CALL0("call_1", "\xE2\x9A\x99") ARGS(0, "{}") CHUNK(
                   "{\"tool_calls\":[{\"index\":1,\"id\":\"call_2\",\"function\":{\"name\":\"\","
                   "\"arguments\":\"{\\\"a\\\":1}\"}}]}") FINISH("tool_calls") "data: [DONE]\n\n",
               0, NULL);
    assert_int_equal(rein_model_response_call_count(r), 2);
    c = rein_model_response_call(r, 0);
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_INVALID_NAME);
    assert_string_equal(rein_model_call_name(c), "\xE2\x9A\x99");
    assert_null(rein_model_call_arguments(c));
    assert_non_null(strstr(rein_model_call_error(c), "not a usable name"));
    c = rein_model_response_call(r, 1);
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_INVALID_NAME);
    assert_string_equal(rein_model_call_id(c), "call_2");
    assert_string_equal(rein_model_call_raw_arguments(c), "{\"a\":1}");
    rein_model_response_free(r);
}

static void test_cut_stream_marks_the_call_incomplete(void **state)
{
    rein_model_response *r;
    const rein_model_call *c;
    json_t *j;

    (void)state;
    r = decode(REIN_WIRE_OPENAI_SSE,
               CHUNK("{\"content\":\"Let me look.\"}") CALL0("call_x", "read")
                   ARGS(0, "{\\\"filePath\\\": \\\"/tm"),
               0, NULL);
    assert_false(rein_model_response_is_complete(r));
    c = only_call(r);
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_INCOMPLETE);
    assert_string_equal(rein_model_call_raw_arguments(c), "{\"filePath\": \"/tm");
    assert_string_equal(rein_model_response_text(r), "Let me look.");
    assert_null(rein_model_response_finish_reason(r));
    assert_int_equal(rein_model_response_finish(r), REIN_FINISH_NONE);
    j = rein_model_response_to_json(r);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(j, "tool_calls"), 0), "status")),
                        "incomplete");
    assert_true(json_is_null(
        json_object_get(json_array_get(json_object_get(j, "tool_calls"), 0), "arguments")));
    json_decref(j);
    rein_model_response_free(r);

    /* A call that started but got no arguments before the cut is incomplete too. */
    r = decode(REIN_WIRE_OPENAI_SSE, CALL0("call_y", "list_files"), 0, NULL);
    assert_int_equal(rein_model_call_status(only_call(r)), REIN_MODEL_CALL_INCOMPLETE);
    rein_model_response_free(r);

    /* Anthropic: a tool_use block without its content_block_stop. */
    r = decode(REIN_WIRE_ANTHROPIC_SSE,
               "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}\n\n"
               "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
               "\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get\",\"input\":{}}}\n\n"
               "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
               "\"input_json_delta\",\"partial_json\":\"{\\\"k\\\": [1, 2\"}}\n\n",
               3, NULL);
    assert_int_equal(rein_model_call_status(only_call(r)), REIN_MODEL_CALL_INCOMPLETE);
    assert_int_equal(rein_model_response_input_tokens(r), 5);
    assert_int_equal(rein_model_response_output_tokens(r), -1);
    rein_model_response_free(r);
}

static void test_bad_json_and_non_objects_are_invalid_json(void **state)
{
    rein_model_response *r;
    const rein_model_call *c;

    (void)state;
    r = decode(
        REIN_WIRE_OPENAI_SSE,
        CALL0("call_1", "a") ARGS(0, "{\\\"x\\\": 1,}") CHUNK(
            "{\"tool_calls\":[{\"index\":1,\"id\":\"call_2\",\"function\":{\"name\":\"b\","
            "\"arguments\":\"[1,2]\"}}]}")
            CHUNK("{\"tool_calls\":[{\"index\":2,\"id\":\"call_3\",\"function\":{\"name\":\"c\","
                  "\"arguments\":\"{\\\"n\\\": 123456789012345678901234567890}\"}}]}")
                FINISH("tool_calls"),
        0, NULL);
    assert_int_equal(rein_model_response_call_count(r), 3);
    c = rein_model_response_call(r, 0);
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_INVALID_JSON);
    assert_non_null(strstr(rein_model_call_error(c), "not valid JSON"));
    c = rein_model_response_call(r, 1);
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_INVALID_JSON);
    assert_non_null(strstr(rein_model_call_error(c), "must be a JSON object, got array"));
    /* An integer beyond 64 bits does not parse: the raw string is kept for the hint. */
    c = rein_model_response_call(r, 2);
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_INVALID_JSON);
    assert_string_equal(rein_model_call_raw_arguments(c),
                        "{\"n\": 123456789012345678901234567890}");
    rein_model_response_free(r);
}

static void test_zero_argument_calls_mean_an_empty_object(void **state)
{
    rein_model_response *r;
    const rein_model_call *c;

    (void)state;
    /* vLLM: a name with no "arguments" key at all, then the finish. */
    r = decode(
        REIN_WIRE_OPENAI_SSE,
        CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"now\"}}]}")
            FINISH("tool_calls"),
        0, NULL);
    c = only_call(r);
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_OK);
    assert_string_equal(rein_model_call_raw_arguments(c), "");
    assert_true(json_is_object(rein_model_call_arguments(c)));
    assert_int_equal(json_object_size(rein_model_call_arguments(c)), 0);
    rein_model_response_free(r);
}

static void test_ollama_index_zero_quirk_and_unicode_in_arguments(void **state)
{
    rein_model_response *r;

    (void)state;
    /* Ollama's /v1 sends every call at index 0 with its own id (ollama#16212). */
    r = decode(REIN_WIRE_OPENAI_SSE,
               CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\","
                     "\"arguments\":\"{\\\"x\\\":\\\"\\\\ud83d\"}}]}") ARGS(0, "\\\\ude00\\\"}")
                   CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"b\",\"function\":{\"name\":\"g\","
                         "\"arguments\":\"{}\"}}]}") FINISH("stop"),
               5, NULL);
    assert_int_equal(rein_model_response_call_count(r), 2);
    assert_string_equal(rein_model_call_name(rein_model_response_call(r, 1)), "g");
    /* The emoji's surrogate halves came in two deltas and were joined. */
    assert_string_equal(json_string_value(json_object_get(
                            rein_model_call_arguments(rein_model_response_call(r, 0)), "x")),
                        "\xF0\x9F\x98\x80");
    assert_int_equal(rein_model_call_status(rein_model_response_call(r, 1)), REIN_MODEL_CALL_OK);
    rein_model_response_free(r);
}

static void test_calls_without_index_or_id(void **state)
{
    rein_model_response *r;

    (void)state;
    /* Each call whole in one delta, with neither index nor id: two calls, not one. */
    r = decode(
        REIN_WIRE_OPENAI_SSE,
        CHUNK("{\"tool_calls\":[{\"function\":{\"name\":\"a\",\"arguments\":\"{}\"}}]}") CHUNK(
            "{\"tool_calls\":[{\"function\":{\"name\":\"b\",\"arguments\":\"{\\\"x\\\":1}\"}}]}")
            FINISH("tool_calls"),
        0, NULL);
    assert_int_equal(rein_model_response_call_count(r), 2);
    assert_string_equal(rein_model_call_name(rein_model_response_call(r, 1)), "b");
    assert_int_equal(rein_model_call_status(rein_model_response_call(r, 1)), REIN_MODEL_CALL_OK);
    /* Made-up ids are distinct. */
    assert_string_not_equal(rein_model_call_id(rein_model_response_call(r, 0)),
                            rein_model_call_id(rein_model_response_call(r, 1)));
    rein_model_response_free(r);
    /* Without an index, argument pieces still continue the call they belong to. */
    r = decode(REIN_WIRE_OPENAI_SSE,
               CHUNK("{\"tool_calls\":[{\"id\":\"c1\",\"function\":{\"name\":\"a\",\"arguments\":"
                     "\"{\\\"x\\\"\"}}]}")
                   CHUNK("{\"tool_calls\":[{\"function\":{\"arguments\":\": 2}\"}}]}")
                       FINISH("tool_calls"),
               0, NULL);
    assert_string_equal(rein_model_call_raw_arguments(only_call(r)), "{\"x\": 2}");
    rein_model_response_free(r);
}

static void test_decoder_errors_say_where(void **state)
{
    rein_error err;
    rein_model_response *r;
    const char *bad = CHUNK("{\"content\":\"ok\"}") "data: {not json\n\n";

    (void)state;
    rein_error_clear(&err);
    r = decode_opts(REIN_WIRE_OPENAI_SSE, bad, strlen(bad), 0, NULL, NULL, &err);
    assert_null(r);
    assert_int_equal(err.code, REIN_EPARSE);
    assert_non_null(strstr(err.msg, "event 2 (line"));
    /* A JSON body is not an SSE stream. */
    rein_error_clear(&err);
    r = decode_opts(REIN_WIRE_OPENAI_SSE, "{\"choices\":[]}\n", 15, 0, NULL, NULL, &err);
    assert_null(r);
    assert_non_null(strstr(err.msg, "no SSE data events"));
    /* An Anthropic stream is not an OpenAI one. */
    rein_error_clear(&err);
    const char *anth = "data: {\"type\":\"message_start\",\"message\":{}}\n\n";
    r = decode_opts(REIN_WIRE_OPENAI_SSE, anth, strlen(anth), 0, NULL, NULL, &err);
    assert_null(r);
    assert_non_null(strstr(err.msg, "shape of openai-sse"));
    rein_error_clear(&err);
    r = decode_opts(REIN_WIRE_OPENAI_JSON, "{\"a\": [1, 2", 11, 0, NULL, NULL, &err);
    assert_null(r);
    assert_non_null(strstr(err.msg, "line 1"));
}

/* ---------------------------------------------------------------------------------------
 * Events
 */

static void test_events_follow_the_stream(void **state)
{
    struct collected col;
    rein_model_response *r;

    (void)state;
    collected_init(&col);
    r = decode(REIN_WIRE_OPENAI_SSE,
               CHUNK("{\"role\":\"assistant\",\"content\":\"Checking\"}")
                   CHUNK("{\"content\":\" now.\"}") CALL0("call_1", "get_weather")
                       ARGS(0, "{\\\"city\\\":") ARGS(0, "\\\"Paris\\\"}")
                           FINISH("tool_calls") "data: "
                                                "{\"choices\":[],\"usage\":{\"prompt_tokens\":9,"
                                                "\"completion_tokens\":4}}\n\n"
                                                "data: [DONE]\n\n",
               3, &col);
    assert_string_equal(col.text.ptr, "Checking now.");
    assert_string_equal(col.args.ptr, "{\"city\":\"Paris\"}");
    assert_string_equal(col.order, "tSDEuF");
    assert_int_equal(col.starts, 1);
    assert_int_equal(col.ends, 1);
    assert_int_equal(rein_model_response_input_tokens(r), 9);
    assert_int_equal(rein_model_response_finish(r), REIN_FINISH_TOOL_CALLS);
    rein_model_response_free(r);
    collected_release(&col);

    /* Anthropic ends a call at its content_block_stop, before the message ends. */
    collected_init(&col);
    r = decode(
        REIN_WIRE_ANTHROPIC_SSE,
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
        "\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{}}}\n\n"
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
        "\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n"
        "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
        "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":"
        "\"text\",\"text\":\"\"}}\n\n"
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":"
        "\"text_delta\",\"text\":\"done\"}}\n\n"
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
        "\"usage\":{\"output_tokens\":3}}\n\n"
        "data: {\"type\":\"message_stop\"}\n\n",
        0, &col);
    assert_string_equal(col.order, "SDEbtuF");
    assert_true(rein_model_response_is_complete(r));
    rein_model_response_free(r);
    collected_release(&col);
}

#define LP(tok, lp) "{\"token\":\"" tok "\",\"logprob\":" lp ",\"bytes\":null,\"top_logprobs\":[]}"

#define ANNS                                                                                       \
    "[{\"type\":\"url_citation\",\"url_citation\":{\"start_index\":0,\"end_index\":5,\"url\":"     \
    "\"https://example.org/\",\"title\":\"E\"}}]"

/*
 * What an OpenAI reply carries that rein does not read, the client asked for (logprobs) or a
 * search model adds (annotations), is kept as the wire wrote it: a stream's logprobs pieces
 * joined, each told before the text it scores; a body's as they are. The general path reads
 * them: the one-pass reader declines a chunk that has them.
 */
static void test_logprobs_and_annotations_are_kept(void **state)
{
    static const char ann[] = ANNS;
    static const char sse[] =
        "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":"
        "\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
        "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
        "\"Paris\"},\"logprobs\":{\"content\":[" LP(
            "Paris", "-0.5") "],\"refusal\":null},"
                             "\"finish_reason\":null}]}\n\n"
                             "data: "
                             "{\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{"
                             "\"content\":"
                             "\".\"},\"logprobs\":{\"content\":[" LP(
                                 ".", "-0.25") "],\"refusal\":null},"
                                               "\"finish_reason\":null}]}\n\n"
                                               "data: "
                                               "{\"id\":\"c\",\"model\":\"m\",\"choices\":[{"
                                               "\"index\":0,\"delta\":{"
                                               "\"annotations\":" ANNS
                                               "},\"finish_reason\":null}]}\n\n"
                                               "data: "
                                               "{\"id\":\"c\",\"model\":\"m\",\"choices\":[{"
                                               "\"index\":0,\"delta\":{},"
                                               "\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n"
                                               "data: [DONE]\n\n";
    static const char body[] =
        "{\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
        "\"assistant\",\"content\":\"Paris.\",\"annotations\":" ANNS "},\"logprobs\":{"
        "\"content\":[" LP("Paris", "-0.5") "," LP(".", "-0.25") "],\"refusal\":null},"
                                                                 "\"finish_reason\":\"stop\"}]}";
    json_t *want_lp = json_pack("{s:[{s:s,s:f,s:n,s:[]},{s:s,s:f,s:n,s:[]}],s:n}", "content",
                                "token", "Paris", "logprob", -0.5, "bytes", "top_logprobs", "token",
                                ".", "logprob", -0.25, "bytes", "top_logprobs", "refusal");
    json_t *want_ann = json_loads(ann, 0, NULL);
    struct collected col;
    rein_model_response *r;

    (void)state;
    assert_non_null(want_lp);
    assert_non_null(want_ann);
    for (size_t chunk = 0; chunk <= 7; chunk += 7) {
        collected_init(&col);
        r = decode(REIN_WIRE_OPENAI_SSE, sse, chunk, &col);
        assert_string_equal(col.text.ptr, "Paris.");
        assert_string_equal(col.order, "ltltaF");
        assert_true(json_equal(rein_model_response_logprobs(r), want_lp));
        assert_true(json_equal(rein_model_response_annotations(r), want_ann));
        rein_model_response_free(r);
        collected_release(&col);
    }
    r = decode(REIN_WIRE_OPENAI_JSON, body, 0, NULL);
    assert_string_equal(rein_model_response_text(r), "Paris.");
    assert_true(json_equal(rein_model_response_logprobs(r), want_lp));
    assert_true(json_equal(rein_model_response_annotations(r), want_ann));
    rein_model_response_free(r);
    /* a reply without them has none (the usual body says "annotations": []) */
    r = decode(REIN_WIRE_OPENAI_JSON,
               "{\"choices\":[{\"message\":{\"content\":\"a\",\"annotations\":[]},"
               "\"logprobs\":null,\"finish_reason\":\"stop\"}]}",
               0, NULL);
    assert_null(rein_model_response_logprobs(r));
    assert_null(rein_model_response_annotations(r));
    rein_model_response_free(r);
    json_decref(want_lp);
    json_decref(want_ann);
}

#define CITE1                                                                                      \
    "{\"type\":\"web_search_result_location\",\"cited_text\":\"Paris is the capital\","            \
    "\"url\":\"https://example.org/p\",\"title\":\"P\",\"encrypted_index\":\"e1\"}"
#define AN_BLOCK_START(i, block)                                                                   \
    "data: {\"type\":\"content_block_start\",\"index\":" #i ",\"content_block\":" block "}\n\n"
#define AN_BLOCK_DELTA(i, delta)                                                                   \
    "data: {\"type\":\"content_block_delta\",\"index\":" #i ",\"delta\":" delta "}\n\n"
#define AN_BLOCK_STOP(i) "data: {\"type\":\"content_block_stop\",\"index\":" #i "}\n\n"

/*
 * Claude's text blocks are kept with their places and citations: a web search answer is a
 * text, the search's blocks, then text blocks that each cite what they say. The text the filter
 * held back (the first block's trailing space) goes out before the next block starts.
 */
static void test_anthropic_text_blocks_keep_their_citations(void **state)
{
    static const char sse[] = AN_BLOCK_START(0, "{\"type\":\"text\",\"text\":\"\"}")
        AN_BLOCK_DELTA(0, "{\"type\":\"text_delta\",\"text\":\"Let me look. \"}") AN_BLOCK_STOP(0)
            AN_BLOCK_START(1, "{\"type\":\"server_tool_use\",\"id\":\"s1\","
                              "\"name\":\"web_search\",\"input\":{}}") AN_BLOCK_STOP(1)
                AN_BLOCK_START(2, "{\"type\":\"web_search_tool_result\","
                                  "\"tool_use_id\":\"s1\",\"content\":[]}") AN_BLOCK_STOP(2)
                    AN_BLOCK_START(3, "{\"type\":\"text\",\"text\":\"\",\"citations\":[]}")
                        AN_BLOCK_DELTA(3, "{\"type\":\"citations_delta\",\"citation\":" CITE1 "}")
                            AN_BLOCK_DELTA(3, "{\"type\":\"text_delta\",\"text\":\"Paris.\"}")
                                AN_BLOCK_STOP(3)
                                    AN_BLOCK_START(4, "{\"type\":\"text\",\"text\":\" Done\"}")
                                        AN_BLOCK_STOP(4) "data: {\"type\":\"message_delta\","
                                                         "\"delta\":{\"stop_reason\":"
                                                         "\"end_turn\"}}\n\n";
    static const char body[] =
        "{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":["
        "{\"type\":\"text\",\"text\":\"Let me look. "
        "\"},{\"type\":\"server_tool_use\",\"id\":\"s1\","
        "\"name\":\"web_search\",\"input\":{}},{\"type\":\"web_search_tool_result\","
        "\"tool_use_id\":\"s1\",\"content\":[]},{\"type\":\"text\",\"text\":\"Paris.\","
        "\"citations\":[" CITE1 "]},{\"type\":\"text\",\"text\":\" Done\"}],"
        "\"stop_reason\":\"end_turn\"}";
    json_t *want =
        json_pack("[{s:i,s:i},{s:i,s:i,s:[o]},{s:i,s:i}]", "at", 0, "server", 0, "at", 13, "server",
                  2, "citations", json_loads(CITE1, 0, NULL), "at", 19, "server", 2);
    struct collected col;
    rein_model_response *r;

    (void)state;
    assert_non_null(want);
    for (size_t chunk = 0; chunk <= 5; chunk += 5) {
        collected_init(&col);
        r = decode(REIN_WIRE_ANTHROPIC_SSE, sse, chunk, &col);
        assert_string_equal(rein_model_response_text(r), "Let me look. Paris. Done");
        assert_string_equal(col.text.ptr, "Let me look. Paris. Done");
        /* the held space goes out before the server blocks: the text stays in its block */
        assert_string_equal(col.order, "btvbctbtF");
        if (!json_equal(rein_model_response_text_blocks(r), want)) {
            char *got = rein_json_dumps(rein_model_response_text_blocks(r));
            fail_msg("text blocks: %s", got);
        }
        rein_model_response_free(r);
        collected_release(&col);
    }
    r = decode(REIN_WIRE_ANTHROPIC_JSON, body, 0, NULL);
    assert_true(json_equal(rein_model_response_text_blocks(r), want));
    rein_model_response_free(r);
    json_decref(want);
}

/* The text events add up to the reply's text when a piece was not where the last one ended (a
 * <think> section before it) and the end lets out what was held back; and an escape-free
 * delta after a delta ending in half a surrogate pair comes after that half's U+FFFD. */
static void test_text_events_after_a_gap_and_a_lone_half(void **state)
{
    struct collected col;
    rein_model_response *r;

    (void)state;
    collected_init(&col);
    r = decode(REIN_WIRE_OPENAI_SSE,
               CHUNK("{\"content\":\"<think>hm</think>\"}") CHUNK("{\"content\":\"Hello\"}")
                   CHUNK("{\"content\":\" there <\"}") FINISH("stop"),
               0, &col);
    assert_string_equal(col.reasoning.ptr, "hm");
    assert_string_equal(rein_model_response_text(r), "Hello there <");
    assert_string_equal(col.text.ptr, "Hello there <");
    rein_model_response_free(r);
    collected_release(&col);

    collected_init(&col);
    r = decode(REIN_WIRE_OPENAI_SSE,
               CHUNK("{\"content\":\"a\\ud83d\"}") CHUNK("{\"content\":\"x\"}") FINISH("stop"), 0,
               &col);
    assert_string_equal(rein_model_response_text(r), "a\xEF\xBF\xBDx");
    assert_string_equal(col.text.ptr, "a\xEF\xBF\xBDx");
    rein_model_response_free(r);
    collected_release(&col);
}

static void test_text_events_hold_back_call_markup(void **state)
{
    struct collected col;
    rein_model_response *r;

    (void)state;
    collected_init(&col);
    /* The marker is split across deltas; none of it may be shown as answer text. */
    r = decode(
        REIN_WIRE_OPENAI_SSE,
        CHUNK("{\"content\":\"Sure.\\n<tool\"}")
            CHUNK("{\"content\":\"_call>\\n{\\\"name\\\": \\\"get_weather\\\", \"}") CHUNK(
                "{\"content\":\"\\\"arguments\\\": {\\\"city\\\": \\\"Oslo\\\"}}\\n</tool_call>\"}")
                FINISH("stop"),
        0, &col);
    assert_string_equal(col.text.ptr, "Sure.");
    assert_string_equal(rein_model_response_text(r), "Sure.");
    assert_int_equal(col.starts, 1);
    assert_true(rein_model_call_from_text(only_call(r)));
    rein_model_response_free(r);
    collected_release(&col);

    /* Whitespace that ends a plain delta waits for the next: here markup follows, and the
     * shown text stops where the reply's text does. */
    collected_init(&col);
    r = decode(REIN_WIRE_OPENAI_SSE,
               CHUNK("{\"content\":\"Sure.\"}") CHUNK("{\"content\":\" Checking. \"}")
                   CHUNK("{\"content\":\"<tool_call>\\n{\\\"name\\\": \\\"get_weather\\\", "
                         "\\\"arguments\\\": {}}\\n</tool_call>\"}") FINISH("stop"),
               0, &col);
    assert_string_equal(col.text.ptr, "Sure. Checking.");
    assert_string_equal(rein_model_response_text(r), "Sure. Checking.");
    rein_model_response_free(r);
    collected_release(&col);

    /* An offered tool written as a tag is held back too, even split mid-name. */
    collected_init(&col);
    {
        struct rein_decoder_options opt;
        const char *names[] = {"run_command"};
        const char *stream = CHUNK("{\"content\":\"Running: <run_com\"}")
            CHUNK("{\"content\":\"mand command=\\\"ls\\\" />\"}") FINISH("stop");
        rein_error err;
        memset(&opt, 0, sizeof(opt));
        opt.tool_names = names;
        opt.tool_name_count = 1;
        r = decode_opts(REIN_WIRE_OPENAI_SSE, stream, strlen(stream), 0, &opt, &col, &err);
        assert_non_null(r);
        assert_string_equal(col.text.ptr, "Running:");
        assert_int_equal(col.starts, 1);
        rein_model_response_free(r);
    }
    collected_release(&col);

    /* A <think> section streams as reasoning. */
    collected_init(&col);
    r = decode(REIN_WIRE_OPENAI_SSE,
               CHUNK("{\"content\":\"<thi\"}") CHUNK("{\"content\":\"nk>plan it</th\"}")
                   CHUNK("{\"content\":\"ink>\\n\\nThe answer is 4.\"}") FINISH("stop"),
               0, &col);
    assert_string_equal(col.reasoning.ptr, "plan it");
    assert_string_equal(col.text.ptr, "The answer is 4.");
    assert_string_equal(rein_model_response_reasoning(r), "plan it");
    assert_string_equal(rein_model_response_text(r), "The answer is 4.");
    rein_model_response_free(r);
    collected_release(&col);

    /* An ordinary code block is shown once it closes. */
    collected_init(&col);
    r = decode(REIN_WIRE_OPENAI_SSE,
               CHUNK("{\"content\":\"Use:\\n```c\\nint x;\\n\"}")
                   CHUNK("{\"content\":\"```\\nDone.\"}") FINISH("stop"),
               0, &col);
    assert_string_equal(col.text.ptr, "Use:\n```c\nint x;\n```\nDone.");
    assert_string_equal(rein_model_response_text(r), col.text.ptr);
    assert_int_equal(rein_model_response_call_count(r), 0);
    rein_model_response_free(r);
    collected_release(&col);
}

/* ---------------------------------------------------------------------------------------
 * Tool calls written as text
 */

static rein_model_response *text_reply(const char *content, const struct rein_decoder_options *opt)
{
    json_t *body = json_pack("{s:[{s:i, s:{s:s, s:s}, s:s}]}", "choices", "index", 0, "message",
                             "role", "assistant", "content", content, "finish_reason", "stop");
    char *text = json_dumps(body, JSON_COMPACT);
    rein_error err;
    rein_model_response *r;

    rein_error_clear(&err);
    r = decode_opts(REIN_WIRE_OPENAI_JSON, text, strlen(text), 0, opt, NULL, &err);
    if (!r)
        fail_msg("%s", err.msg);
    free(text);
    json_decref(body);
    return r;
}

static void check_text_call(const char *content, const char *name, const char *raw,
                            enum rein_model_call_status status, const char *rest)
{
    rein_model_response *r = text_reply(content, NULL);
    const rein_model_call *c = only_call(r);

    assert_string_equal(rein_model_call_name(c), name);
    assert_string_equal(rein_model_call_raw_arguments(c), raw);
    assert_int_equal(rein_model_call_status(c), status);
    assert_true(rein_model_call_from_text(c));
    assert_memory_equal(rein_model_call_id(c), "call_", 5);
    assert_string_equal(rein_model_response_text(r), rest);
    rein_model_response_free(r);
}

static void test_text_calls_in_every_known_form(void **state)
{
    (void)state;
    check_text_call("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", "
                    "\"n\": 1.50}}\n</tool_call>",
                    "get_weather", "{\"city\": \"Oslo\", \"n\": 1.50}", REIN_MODEL_CALL_OK, "");
    check_text_call("I'll check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n"
                    "</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
                    "get_weather", "{\"city\":\"Oslo\",\"days\":3}", REIN_MODEL_CALL_OK,
                    "I'll check.");
    check_text_call("[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {\"q\": \"rein\"}}]",
                    "search", "{\"q\": \"rein\"}", REIN_MODEL_CALL_OK, "");
    check_text_call("[TOOL_CALLS]search[ARGS]{\"q\": \"rein\"}", "search", "{\"q\": \"rein\"}",
                    REIN_MODEL_CALL_OK, "");
    check_text_call(
        "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"x\"}}<|eom_id|>", "search",
        "{\"q\": \"x\"}", REIN_MODEL_CALL_OK, "");
    check_text_call("Here:\n```json\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n```",
                    "search", "{\"q\": \"x\"}", REIN_MODEL_CALL_OK, "Here:");
    check_text_call("{\"name\": \"search\", \"arguments\": \"{\\\"q\\\": \\\"x\\\"}\"}", "search",
                    "{\"q\": \"x\"}", REIN_MODEL_CALL_OK, "");
    /* Cut or broken markup still becomes a call, so it is answered, not taken as an answer. */
    check_text_call("<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"x", "search",
                    "{\"q\": \"x", REIN_MODEL_CALL_INVALID_JSON, "");
    check_text_call("<tool_call>\nsearch for rein\n</tool_call>", "", "search for rein",
                    REIN_MODEL_CALL_INVALID_NAME, "");
}

/* text as a reply's content moves the reasoning (when not NULL) out and leaves rest. */
static void check_think(const char *text, const char *reasoning, const char *rest)
{
    rein_model_response *r = text_reply(text, NULL);

    if (reasoning)
        assert_string_equal(rein_model_response_reasoning(r), reasoning);
    assert_string_equal(rein_model_response_text(r), rest);
    rein_model_response_free(r);
}

/* The scan finds each marker after near misses of it (its first byte, or all of it but its
 * last byte) and at the very end of the text, and a text of near misses alone stays as it is. */
static void test_text_calls_after_near_misses(void **state)
{
    const char *misses = "a < b, [TOOL_CALL] <tool_call <|python_tag| ``json `x` [1] <think "
                         "</think <|";
    char text[512];
    rein_model_response *r;

    (void)state;
    snprintf(text, sizeof(text),
             "%s<tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>", misses);
    check_text_call(text, "search", "{}", REIN_MODEL_CALL_OK, misses);
    snprintf(text, sizeof(text), "%s[TOOL_CALLS]search[ARGS]{}", misses);
    check_text_call(text, "search", "{}", REIN_MODEL_CALL_OK, misses);
    snprintf(text, sizeof(text), "%s<|python_tag|>{\"name\": \"search\", \"parameters\": {}}",
             misses);
    check_text_call(text, "search", "{}", REIN_MODEL_CALL_OK, misses);
    snprintf(text, sizeof(text), "%s\n```json\n{\"name\": \"search\", \"arguments\": {}}\n```",
             misses);
    check_text_call(text, "search", "{}", REIN_MODEL_CALL_OK, misses);
    /* a marker cut at the end of the text is still a call */
    snprintf(text, sizeof(text), "%s<tool_call>", misses);
    check_text_call(text, "", "", REIN_MODEL_CALL_INVALID_NAME, misses);
    r = text_reply(misses, NULL);
    assert_int_equal(rein_model_response_call_count(r), 0);
    assert_string_equal(rein_model_response_text(r), misses);
    rein_model_response_free(r);
    /* a lone </think> after near misses of <think> is the end of leaked thinking; after a
     * <think> in the middle of the text it is text */
    check_think("a <thin <think </thin thought</think>Answer.", "a <thin <think </thin thought",
                "Answer.");
    check_think("a <thin <think> b</think>Answer.", NULL, "a <thin <think> b</think>Answer.");
}

static void test_text_calls_are_not_invented(void **state)
{
    struct rein_decoder_options opt;
    const char *names[] = {"get_weather"};
    rein_model_response *r;

    (void)state;
    /* JSON answers and code blocks that are not calls stay text. */
    r = text_reply("{\"city\": \"Oslo\", \"temp\": 3}", NULL);
    assert_int_equal(rein_model_response_call_count(r), 0);
    rein_model_response_free(r);
    r = text_reply("```json\n{\"name\": \"Bob\", \"age\": 3}\n```", NULL);
    assert_int_equal(rein_model_response_call_count(r), 0);
    rein_model_response_free(r);
    /* With the offered tools known, a JSON object naming another tool is text. */
    memset(&opt, 0, sizeof(opt));
    opt.tool_names = names;
    opt.tool_name_count = 1;
    r = text_reply("```json\n{\"name\": \"search\", \"arguments\": {}}\n```", &opt);
    assert_int_equal(rein_model_response_call_count(r), 0);
    rein_model_response_free(r);
    r = text_reply("{\"name\": \"get_weather\", \"arguments\": {}}", &opt);
    assert_int_equal(rein_model_response_call_count(r), 1);
    rein_model_response_free(r);
}

static void test_text_calls_as_tags_of_offered_tools(void **state)
{
    struct rein_decoder_options opt;
    const char *names[] = {"run_command", "search"};
    rein_model_response *r;
    const rein_model_call *c;

    (void)state;
    memset(&opt, 0, sizeof(opt));
    opt.tool_names = names;
    opt.tool_name_count = 2;
    /* The Ollama recording's leak: <run_command command="ls -l" /> with finish_reason stop. */
    r = text_reply("<run_command command=\"ls -l\" />", &opt);
    c = only_call(r);
    assert_string_equal(rein_model_call_name(c), "run_command");
    assert_string_equal(rein_model_call_raw_arguments(c), "{\"command\":\"ls -l\"}");
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_OK);
    assert_string_equal(rein_model_response_text(r), "");
    rein_model_response_free(r);
    r = text_reply("Let me look.\n<search>{\"q\": \"a &amp; b\"}</search>", &opt);
    c = only_call(r);
    assert_string_equal(rein_model_call_raw_arguments(c), "{\"q\": \"a &amp; b\"}");
    assert_string_equal(rein_model_response_text(r), "Let me look.");
    rein_model_response_free(r);
    r = text_reply("<search q='x &quot;y&quot;'/>", &opt);
    assert_string_equal(rein_model_call_raw_arguments(only_call(r)), "{\"q\":\"x \\\"y\\\"\"}");
    rein_model_response_free(r);
    /* Not an offered tool, or no tools known: text. */
    r = text_reply("<b>bold</b> and <run_commands x=\"1\"/>", &opt);
    assert_int_equal(rein_model_response_call_count(r), 0);
    rein_model_response_free(r);
    r = text_reply("<run_command command=\"ls -l\" />", NULL);
    assert_int_equal(rein_model_response_call_count(r), 0);
    rein_model_response_free(r);
}

static void test_text_calls_report_mode_keeps_the_text(void **state)
{
    struct rein_decoder_options opt;
    rein_model_response *r;
    const char *content = "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>";

    (void)state;
    memset(&opt, 0, sizeof(opt));
    opt.text_calls = REIN_TEXT_CALLS_REPORT;
    r = text_reply(content, &opt);
    assert_int_equal(rein_model_response_call_count(r), 0);
    assert_int_equal(rein_model_response_text_call_count(r), 1);
    assert_string_equal(rein_model_response_text(r), content);
    rein_model_response_free(r);
}

/*
 * llama.cpp (issue 24): a stream that leaks the start of the call markup into content
 * ("<tool_call>\n<function=get_…") before its parser catches up and sends the same call as
 * native tool_calls. The leaked markup is no call of its own: only the native call remains,
 * and the markup is not left in the text. A text call the native calls do not cover stays.
 */
static void test_leaked_markup_next_to_native_calls_is_no_call(void **state)
{
    struct collected col;
    rein_model_response *r;
    const rein_model_call *c;

    (void)state;
    collected_init(&col);
    r = decode(REIN_WIRE_OPENAI_SSE,
               CHUNK("{\"role\":\"assistant\",\"content\":\"<tool_call>\\n\"}")
                   CHUNK("{\"content\":\"<function=get_\"}")
                       CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"Xk2abc\",\"type\":"
                             "\"function\",\"function\":{\"name\":\"get_weather\","
                             "\"arguments\":\"{\\\"city\\\":\"}}]}")
                           CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
                                 "\"\\\"Oslo\\\"}\"}}]}") FINISH("tool_calls") "data: [DONE]\n\n",
               0, &col);
    c = only_call(r);
    assert_string_equal(rein_model_call_name(c), "get_weather");
    assert_int_equal(rein_model_call_status(c), REIN_MODEL_CALL_OK);
    assert_false(rein_model_call_from_text(c));
    assert_string_equal(rein_model_response_text(r), "");
    assert_int_equal(col.starts, 1);
    assert_int_equal(col.ends, 1);
    assert_string_equal(col.text.ptr ? col.text.ptr : "", "");
    rein_model_response_free(r);
    collected_release(&col);

    /* The whole markup leaked, then the native call: still one call, the text kept around. */
    r = decode(REIN_WIRE_OPENAI_SSE,
               CHUNK("{\"content\":\"Checking.\\n<tool_call>\\n<function=get_weather>\\n"
                     "<parameter=city>\\nOslo\\n</parameter>\\n</function>\\n</tool_call>\"}")
                   CALL0("c1", "get_weather")
                       CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
                             "\"{\\\"city\\\":\\\"Oslo\\\"}\"}}]}") FINISH("tool_calls"),
               0, NULL);
    c = only_call(r);
    assert_string_equal(rein_model_call_id(c), "c1");
    assert_string_equal(rein_model_response_text(r), "Checking.");
    rein_model_response_free(r);

    /* A text call for a tool the native calls do not name is not covered: it stays. */
    r = decode(REIN_WIRE_OPENAI_SSE,
               CHUNK("{\"content\":\"<tool_call>{\\\"name\\\": \\\"read\\\", "
                     "\\\"arguments\\\": {}}</tool_call>\"}") CALL0("c1", "get_weather")
                   FINISH("tool_calls"),
               0, NULL);
    assert_int_equal(rein_model_response_call_count(r), 2);
    assert_string_equal(rein_model_call_name(rein_model_response_call(r, 1)), "read");
    assert_true(rein_model_call_from_text(rein_model_response_call(r, 1)));
    rein_model_response_free(r);
}

static void test_think_tags_move_to_reasoning(void **state)
{
    struct rein_decoder_options opt;
    rein_model_response *r;

    (void)state;
    check_think("<think>\nweigh it\n</think>\n\nAnswer.", "weigh it", "Answer.");
    check_think("leaked thought</think>Answer.", "leaked thought", "Answer.");
    memset(&opt, 0, sizeof(opt));
    opt.keep_think_tags = true;
    r = text_reply("<think>x</think>y", &opt);
    assert_string_equal(rein_model_response_text(r), "<think>x</think>y");
    rein_model_response_free(r);
}

/* ---------------------------------------------------------------------------------------
 * History and encodings
 */

static rein_provider *provider_for(const char *name, const char *base)
{
    rein_provider_config *cfg = rein_provider_config_new();
    rein_provider *p;
    rein_error err;

    assert_rein_ok(rein_provider_config_set(cfg, "provider", name, NULL), NULL);
    assert_rein_ok(rein_provider_config_set_model(cfg, "test-model"), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(cfg, base), NULL);
    assert_rein_ok(rein_provider_config_set_api_key(cfg, "sk-test-secret-1234"), NULL);
    p = rein_provider_new(cfg, &err);
    if (!p)
        fail_msg("%s", err.msg);
    rein_provider_config_free(cfg);
    return p;
}

static rein_history *sample_history(void)
{
    rein_history *h = rein_history_new();
    json_t *asst;

    assert_rein_ok(rein_history_add_system(h, "Be brief."), NULL);
    assert_rein_ok(rein_history_add_user(h, "Weather in Oslo and Bergen?"), NULL);
    asst =
        json_pack("{s:s, s:s, s:s, s:s, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}]}", "role", "assistant",
                  "content", "", "reasoning", "two cities", "reasoning_signature",
                  "sig==", "tool_calls", "id", "c1", "name", "weather", "arguments",
                  "{\"city\":\"Oslo\",\"n\":1.50}", "id", "c2", "name", "weather", "arguments", "");
    assert_rein_ok(rein_history_append(h, asst, NULL), NULL);
    json_decref(asst);
    assert_rein_ok(rein_history_add_tool_result(h, "c1", "weather", "{\"t\":3}", false), NULL);
    assert_rein_ok(rein_history_add_tool_result(h, "c2", "weather", "boom", true), NULL);
    return h;
}

static char *body_for(rein_provider *p, rein_model_request *req, rein_history *h)
{
    struct rein__body b;

    rein__body_init(&b);
    if (!req->tools_valid) {
        assert_rein_ok(p->wire->encode_tools
                           ? p->wire->encode_tools(p, req, &req->tools_enc)
                           : rein__wire_openai.encode_tools(p, req, &req->tools_enc),
                       NULL);
        req->tools_valid = true;
        req->tools_json = req->tools_enc.ptr;
        req->tools_len = req->tools_enc.len;
    }
    assert_rein_ok(p->wire->build_body(p, req, h, &b, NULL), NULL);
    assert_rein_ok(rein__body_flatten(&b), NULL);
    return rein_buf_detach(&b.buf, NULL);
}

static void test_history_encodes_openai_messages(void **state)
{
    rein_provider *p = provider_for("openai-compatible", "http://127.0.0.1:9/v1");
    rein_model_request *req = rein_model_request_new();
    rein_history *h = sample_history();
    json_t *body, *msgs;
    char *text;

    (void)state;
    assert_rein_ok(rein_model_request_add_tool(req, "weather", "Weather for a city", NULL), NULL);
    assert_rein_ok(rein_model_request_set_tool_choice(req, "required"), NULL);
    rein_model_request_set_max_tokens(req, 100);
    text = body_for(p, req, h);
    /* The raw argument string goes back byte for byte: 1.50 stays 1.50. */
    assert_non_null(strstr(text, "\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\",\\\"n\\\":1.50}\""));
    body = rein_json_parse(text, strlen(text), 0, NULL);
    msgs = json_object_get(body, "messages");
    assert_int_equal(json_array_size(msgs), 5);
    assert_string_equal(rein__json_str(json_array_get(msgs, 0), "role"), "system");
    assert_true(json_is_null(json_object_get(json_array_get(msgs, 2), "content")));
    json_t *calls = json_object_get(json_array_get(msgs, 2), "tool_calls");
    assert_string_equal(
        rein__json_str(json_object_get(json_array_get(calls, 1), "function"), "arguments"), "{}");
    assert_string_equal(rein__json_str(json_array_get(msgs, 3), "role"), "tool");
    assert_string_equal(rein__json_str(json_array_get(msgs, 3), "tool_call_id"), "c1");
    assert_string_equal(rein__json_str(body, "tool_choice"), "required");
    assert_int_equal(json_integer_value(json_object_get(body, "max_tokens")), 100);
    assert_true(
        json_is_true(json_object_get(json_object_get(body, "stream_options"), "include_usage")));
    assert_string_equal(
        rein__json_str(
            json_object_get(json_array_get(json_object_get(body, "tools"), 0), "function"), "name"),
        "weather");
    assert_null(strstr(text, "sk-test-secret"));
    json_decref(body);
    rein_free(text);
    rein_history_free(h);
    rein_model_request_free(req);
    rein_provider_free(p);
}

static void test_history_encodes_anthropic_messages(void **state)
{
    rein_provider *p = provider_for("anthropic", "http://127.0.0.1:9");
    rein_model_request *req = rein_model_request_new();
    rein_history *h = sample_history();
    json_t *body, *msgs, *blocks;
    char *text;

    (void)state;
    assert_string_equal(rein_provider_endpoint(p), "http://127.0.0.1:9/v1/messages");
    assert_rein_ok(rein_model_request_add_tool(req, "weather", NULL, NULL), NULL);
    assert_rein_ok(rein_model_request_set_tool_choice(req, "weather"), NULL);
    assert_rein_ok(rein_history_add_user(h, "And tomorrow?"), NULL);
    text = body_for(p, req, h);
    body = rein_json_parse(text, strlen(text), 0, NULL);
    assert_non_null(body);
    assert_string_equal(rein__json_str(json_array_get(json_object_get(body, "system"), 0), "text"),
                        "Be brief.");
    msgs = json_object_get(body, "messages");
    assert_int_equal(json_array_size(msgs), 3);
    /* Thinking (with its signature) comes before the tool_use blocks. */
    blocks = json_object_get(json_array_get(msgs, 1), "content");
    assert_int_equal(json_array_size(blocks), 3);
    assert_string_equal(rein__json_str(json_array_get(blocks, 0), "type"), "thinking");
    assert_string_equal(rein__json_str(json_array_get(blocks, 0), "signature"), "sig==");
    assert_string_equal(rein__json_str(json_array_get(blocks, 1), "type"), "tool_use");
    assert_non_null(strstr(text, "\"input\":{\"city\":\"Oslo\",\"n\":1.50}"));
    assert_int_equal(json_object_size(json_object_get(json_array_get(blocks, 2), "input")), 0);
    /* Both tool results, then the next user text, are one user message. */
    blocks = json_object_get(json_array_get(msgs, 2), "content");
    assert_string_equal(rein__json_str(json_array_get(msgs, 2), "role"), "user");
    assert_int_equal(json_array_size(blocks), 3);
    assert_string_equal(rein__json_str(json_array_get(blocks, 0), "type"), "tool_result");
    assert_string_equal(rein__json_str(json_array_get(blocks, 1), "tool_use_id"), "c2");
    assert_true(json_is_true(json_object_get(json_array_get(blocks, 1), "is_error")));
    assert_string_equal(rein__json_str(json_array_get(blocks, 2), "type"), "text");
    assert_string_equal(rein__json_str(json_object_get(body, "tool_choice"), "type"), "tool");
    assert_int_equal(json_integer_value(json_object_get(body, "max_tokens")), 4096);
    assert_non_null(
        json_object_get(json_array_get(json_object_get(body, "tools"), 0), "input_schema"));
    json_decref(body);
    rein_free(text);
    rein_history_free(h);
    rein_model_request_free(req);
    rein_provider_free(p);
}

static void test_history_encodes_ollama_messages(void **state)
{
    rein_provider *p = provider_for("ollama", "http://127.0.0.1:9/");
    rein_model_request *req = rein_model_request_new();
    rein_history *h = sample_history();
    json_t *body, *msgs;
    char *text;

    (void)state;
    assert_string_equal(rein_provider_endpoint(p), "http://127.0.0.1:9/api/chat");
    rein_model_request_set_temperature(req, 0.5);
    text = body_for(p, req, h);
    body = rein_json_parse(text, strlen(text), 0, NULL);
    msgs = json_object_get(body, "messages");
    json_t *calls = json_object_get(json_array_get(msgs, 2), "tool_calls");
    assert_true(json_is_object(
        json_object_get(json_object_get(json_array_get(calls, 0), "function"), "arguments")));
    assert_non_null(strstr(text, "\"arguments\":{\"city\":\"Oslo\",\"n\":1.50}"));
    assert_string_equal(rein__json_str(json_array_get(msgs, 3), "tool_name"), "weather");
    assert_string_equal(rein__json_str(json_array_get(msgs, 2), "thinking"), "two cities");
    assert_true(json_real_value(json_object_get(json_object_get(body, "options"), "temperature")) ==
                0.5);
    json_decref(body);
    rein_free(text);
    rein_history_free(h);
    rein_model_request_free(req);
    rein_provider_free(p);
}

static void test_history_encodes_each_message_once(void **state)
{
    rein_provider *p = provider_for("openai-compatible", "http://127.0.0.1:9/v1");
    rein_model_request *req = rein_model_request_new();
    rein_history *h = rein_history_new();

    (void)state;
    for (int turn = 0; turn < 20; turn++) {
        char msg[32];
        snprintf(msg, sizeof(msg), "turn %d", turn);
        assert_rein_ok(rein_history_add_user(h, msg), NULL);
        rein_free(body_for(p, req, h));
    }
    /* Twenty bodies over a growing history: each message was encoded exactly once. */
    assert_int_equal(rein__history_encode_count(h), 20);
    rein_history_truncate(h, 5);
    assert_int_equal(rein_history_len(h), 5);
    rein_free(body_for(p, req, h));
    assert_int_equal(rein__history_encode_count(h), 20);
    rein_history_free(h);
    rein_model_request_free(req);
    rein_provider_free(p);
}

/* rein_history_compact gives back a short history's encodings and keeps a long one's, and a
 * short one's once they were made again (rein_history_freeze gives those back too); the body
 * is the same bytes either way. */
static void test_history_compact_keeps_what_pays(void **state)
{
    rein_provider *p = provider_for("openai-compatible", "http://127.0.0.1:9/v1");
    rein_model_request *req = rein_model_request_new();
    rein_history *h = rein_history_new();
    char *before, *after, big[5000];

    (void)state;
    rein_history_compact(h); /* empty: nothing to give back */
    assert_rein_ok(rein_history_add_system(h, "be brief"), NULL);
    assert_rein_ok(rein_history_add_user(h, "hello"), NULL);
    before = body_for(p, req, h);
    rein_history_compact(h);
    assert_int_equal(rein_history_len(h), 2);
    /* Reading an idle conversation does not make it come back: it is given back again. */
    json_decref(rein_history_to_json(h));
    rein_history_compact(h);
    after = body_for(p, req, h);
    assert_string_equal(before, after);
    assert_int_equal(rein__history_encode_count(h), 4); /* made again */
    rein_free(after);
    /* Made again once: its pieces are kept by every compaction from now on. */
    rein_history_compact(h);
    after = body_for(p, req, h);
    assert_string_equal(before, after);
    assert_int_equal(rein__history_encode_count(h), 4);
    rein_free(after);
    /* ... unless the caller says it stays idle a long while. */
    rein_history_freeze(h);
    after = body_for(p, req, h);
    assert_string_equal(before, after);
    assert_int_equal(rein__history_encode_count(h), 6);
    rein_free(before);
    rein_free(after);
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_rein_ok(rein_history_add_user(h, big), NULL);
    assert_rein_ok(rein_history_add_user(h, big), NULL);
    before = body_for(p, req, h);
    rein_history_compact(h);
    assert_rein_ok(rein_history_add_user(h, "more"), NULL);
    after = body_for(p, req, h);
    assert_int_equal(rein__history_encode_count(h), 9); /* kept: only the new one made */
    assert_memory_equal(before, after, strlen(before) - 200);
    rein_free(before);
    rein_free(after);
    rein_history_free(h);
    rein_model_request_free(req);
    rein_provider_free(p);
}

/* rein_history_text is the text rein_json_dump writes of each message, through a compaction
 * and a freeze too; a shared message (whose tree the history keeps) and an index out of range
 * have none. */
static void test_history_text_is_the_message_written(void **state)
{
    rein_history *h = rein_history_new();
    json_t *sys = json_pack("{s:s, s:s}", "role", "system", "content", "be \"brief\"");
    json_t *asst = json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "role", "assistant", "content", "",
                             "tool_calls", "id", "c1", "name", "echo", "arguments", "{ }");
    size_t len = 0;

    (void)state;
    assert_rein_ok(rein_history_append_shared(h, sys, NULL), NULL);
    assert_rein_ok(rein_history_add_user(h, "h\u00e9llo\n\"there\""), NULL);
    assert_rein_ok(rein_history_append(h, asst, NULL), NULL);
    assert_rein_ok(rein_history_add_tool_result(h, "c1", "echo", "{\"ok\":true}", false), NULL);
    assert_null(rein_history_text(h, 0, &len));
    assert_null(rein_history_text(h, 4, &len));
    for (int round = 0; round < 3; round++) {
        for (size_t i = 1; i < rein_history_len(h); i++) {
            struct rein_buf b;
            const char *text = rein_history_text(h, i, &len);
            rein_buf_init(&b, 0);
            assert_rein_ok(rein_json_dump(&b, rein_history_get(h, i)), NULL);
            assert_non_null(text);
            assert_int_equal(len, b.len);
            assert_memory_equal(text, b.ptr, len);
            assert_int_equal(text[len], '\0');
            rein_buf_release(&b);
        }
        if (round == 0)
            rein_history_compact(h);
        else
            rein_history_freeze(h);
    }
    json_decref(sys);
    json_decref(asst);
    rein_history_free(h);
}

/* A shared message's piece, kept across histories, is the one its wire makes: histories on two
 * wires, taken in turn twice, send what a history of their own copy of it sends. */
static void test_history_shared_pieces_follow_the_wire(void **state)
{
    rein_provider *ps[2] = {provider_for("openai-compatible", "http://127.0.0.1:9/v1"),
                            provider_for("anthropic", "http://127.0.0.1:9")};
    json_t *sys = json_pack("{s:s, s:s}", "role", "system", "content", "Be \"brief\".");

    (void)state;
    for (int round = 0; round < 2; round++) {
        for (int k = 0; k < 2; k++) {
            rein_model_request *req = rein_model_request_new();
            rein_history *shared = rein_history_new(), *own = rein_history_new();
            char *a, *b;
            assert_rein_ok(rein_history_append_shared(shared, sys, NULL), NULL);
            assert_rein_ok(rein_history_append(own, sys, NULL), NULL);
            assert_rein_ok(rein_history_add_user(shared, "hi"), NULL);
            assert_rein_ok(rein_history_add_user(own, "hi"), NULL);
            a = body_for(ps[k], req, shared);
            b = body_for(ps[k], req, own);
            assert_string_equal(a, b);
            rein_free(a);
            rein_free(b);
            rein_history_free(shared);
            rein_history_free(own);
            rein_model_request_free(req);
        }
    }
    json_decref(sys);
    rein_provider_free(ps[0]);
    rein_provider_free(ps[1]);
}

/* rein_history_append_text: a stored message read once (its text kept as rein_json_dump writes
 * it, whatever spacing it came in), errors as append's, and the text of a shared message whose
 * piece is kept (an agent's system prompt stored by an earlier turn) becomes that message. */
static void test_history_append_text(void **state)
{
    rein_provider *p = provider_for("openai-compatible", "http://127.0.0.1:9/v1");
    rein_model_request *req = rein_model_request_new();
    rein_history *h = rein_history_new(), *first = rein_history_new();
    json_t *sys = json_pack("{s:s, s:s}", "role", "system", "content", "Be \"terse\".");
    static const char spaced[] = "{ \"role\": \"user\", \"content\": \"h\\u00e9\" }";
    struct rein_buf b;
    size_t len = 0;
    const char *text;
    char *body;
    rein_error err;

    (void)state;
    assert_int_equal(rein_history_append_text(h, "{\"role\":", 8, &err), REIN_EPARSE);
    assert_int_equal(rein_history_append_text(h, "{\"role\":\"robot\"}", 16, &err), REIN_EINVAL);
    assert_rein_ok(rein_history_append_text(h, spaced, strlen(spaced), NULL), NULL);
    text = rein_history_text(h, 0, &len);
    assert_non_null(text);
    assert_string_equal(text, "{\"role\":\"user\",\"content\":\"h\u00e9\"}");
    /* the shared prompt's piece kept by a first history; its stored text comes back as it */
    assert_rein_ok(rein_history_append_shared(first, sys, NULL), NULL);
    body = body_for(p, req, first);
    rein_free(body);
    rein_buf_init(&b, 0);
    assert_rein_ok(rein_json_dump(&b, sys), NULL);
    assert_rein_ok(rein_history_append_text(h, b.ptr, b.len, NULL), NULL);
    assert_ptr_equal(rein_history_get(h, 1), sys);
    assert_null(rein_history_text(h, 1, &len)); /* shared: its tree, no text */
    rein_buf_release(&b);
    rein_history_free(first);
    rein_history_free(h);
    json_decref(sys);
    rein_model_request_free(req);
    rein_provider_free(p);
}

/* A conversation of `turns` exchanges for the removal tests: a user message, an assistant
 * message with two calls, their results (the second without the tool's name, which Gemini
 * then looks up), an answer; a system note now and then. Returns the index of each exchange's
 * user message in at[]. */
static rein_history *mixed_history(int turns, size_t *at)
{
    rein_history *h = rein_history_new();
    char text[64], id1[16], id2[16];

    assert_rein_ok(rein_history_add_system(h, "Be brief."), NULL);
    for (int k = 0; k < turns; k++) {
        json_t *asst;
        at[k] = rein_history_len(h);
        snprintf(text, sizeof(text), "question %d \u00e5", k);
        assert_rein_ok(rein_history_add_user(h, text), NULL);
        snprintf(id1, sizeof(id1), "c%da", k);
        snprintf(id2, sizeof(id2), "c%db", k);
        asst = json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}]}", "role", "assistant",
                         "content", k % 2 ? "let me look" : "", "tool_calls", "id", id1, "name",
                         "weather", "arguments", "{\"city\":\"Oslo\"}", "id", id2, "name", "clock",
                         "arguments", "");
        assert_rein_ok(rein_history_append(h, asst, NULL), NULL);
        json_decref(asst);
        assert_rein_ok(rein_history_add_tool_result(h, id1, "weather", "{\"t\":3}", false), NULL);
        assert_rein_ok(rein_history_add_tool_result(h, id2, NULL, "noon", k % 3 == 0), NULL);
        snprintf(text, sizeof(text), "answer %d", k);
        asst = json_pack("{s:s, s:s}", "role", "assistant", "content", text);
        assert_rein_ok(rein_history_append(h, asst, NULL), NULL);
        json_decref(asst);
        if (k % 7 == 3)
            assert_rein_ok(rein_history_add_system(h, "A note."), NULL);
    }
    return h;
}

/* A history made from scratch out of h's messages except from..to-1. */
static rein_history *fresh_without(const rein_history *h, size_t from, size_t to)
{
    json_t *all = rein_history_to_json(h), *kept = json_array();
    rein_history *f;

    for (size_t i = 0; i < json_array_size(all); i++) {
        if (i < from || i >= to)
            json_array_append(kept, json_array_get(all, i));
    }
    f = rein_history_from_json(kept, NULL);
    assert_non_null(f);
    json_decref(all);
    json_decref(kept);
    return f;
}

/* Every answer of h and g (the same messages) agrees. */
static void assert_histories_agree(rein_provider *p, rein_model_request *req, rein_history *h,
                                   rein_history *g)
{
    json_t *a = rein_history_to_json(h), *b = rein_history_to_json(g);
    char *x, *y;
    int64_t t1, t2;
    size_t c1, c2;

    assert_int_equal(rein_history_len(h), rein_history_len(g));
    assert_true(json_equal(a, b));
    for (size_t i = 0; i < rein_history_len(g); i++) {
        const json_t *calls = json_object_get(rein_history_get(g, i), "tool_calls"), *c;
        size_t k;
        assert_true(json_equal(rein_history_get(h, i), rein_history_get(g, i)));
        json_array_foreach(calls, k, c)
        {
            assert_true(rein_history_has_call_id(h, json_string_value(json_object_get(c, "id"))));
        }
    }
    assert_false(rein_history_has_call_id(h, "c999a"));
    assert_int_equal(rein_history_first_open(h), rein_history_first_open(g));
    rein_history_size(h, &t1, &c1);
    rein_history_size(g, &t2, &c2);
    assert_int_equal(t1, t2);
    assert_int_equal(c1, c2);
    assert_int_equal(rein__history_chain(h), rein__history_chain(g));
    x = body_for(p, req, h);
    y = body_for(p, req, g);
    assert_string_equal(x, y);
    rein_free(x);
    rein_free(y);
    json_decref(a);
    json_decref(b);
}

/* An idle conversation keeps its messages as text (a short one in a single block, with its id
 * set and encodings given back): every answer, body and later change is what it is for the
 * same history never compacted, on a wire that groups messages and on one that does not. */
static void test_history_idle_form_answers_alike(void **state)
{
    static const char *const wires[][2] = {
        {"openai-compatible", "http://127.0.0.1:9/v1"},
        {"anthropic", "http://127.0.0.1:9"},
    };
    size_t at[40];

    (void)state;
    for (size_t w = 0; w < REIN_ARRAY_SIZE(wires); w++) {
        rein_provider *p = provider_for(wires[w][0], wires[w][1]);
        rein_model_request *req = rein_model_request_new();
        /* 3 exchanges: short, kept in one block; 40 and a long message: each message's tree
         * given back */
        for (int turns = 3; turns <= 40; turns += 37) {
            rein_history *h = mixed_history(turns, at), *g = mixed_history(turns, at);
            char big[9000];
            if (turns > 3) {
                memset(big, 'x', sizeof(big) - 1);
                big[sizeof(big) - 1] = '\0';
                assert_rein_ok(rein_history_add_user(h, big), NULL);
                assert_rein_ok(rein_history_add_user(g, big), NULL);
            }
            rein_history_compact(h);
            assert_histories_agree(p, req, h, g);
            rein_history_compact(h);
            /* changes to an idle history: a cut, a truncation, an append after each */
            rein_history_remove(h, at[1], at[2] + 2);
            rein_history_remove(g, at[1], at[2] + 2);
            rein_history_compact(h);
            assert_rein_ok(rein_history_add_user(h, "again"), NULL);
            assert_rein_ok(rein_history_add_user(g, "again"), NULL);
            assert_histories_agree(p, req, h, g);
            rein_history_compact(h);
            rein_history_truncate(h, at[1] + 3);
            rein_history_truncate(g, at[1] + 3);
            assert_histories_agree(p, req, h, g);
            rein_history_compact(h);
            rein_history_truncate(h, 0);
            rein_history_truncate(g, 0);
            assert_histories_agree(p, req, h, g);
            rein_history_free(h);
            rein_history_free(g);
        }
        rein_model_request_free(req);
        rein_provider_free(p);
    }
}

/* Requests offering the same shared tools read one encoding the provider made once, and
 * their body is the one an unshared list gives; another list, an unshared tool or another
 * wire encodes its own; Gemini's dropped keywords reach every request; an encoding outlives
 * its eviction from the cache and the provider, while a request still sends it. */
static void test_shared_tools_encoded_once(void **state)
{
    rein_provider *p = provider_for("gemini", "http://127.0.0.1:9/v1beta");
    rein_provider *q = provider_for("openai-compatible", "http://127.0.0.1:9/v1");
    json_t *params =
        json_pack("{s:s, s:{s:{s:s}}, s:{s:{s:s}}}", "type", "object", "properties", "city", "type",
                  "string", "patternProperties", "^x", "type", "string");
    rein_model_request *r[5], *other[9];
    rein_history *h = rein_history_new();
    char *want, *got, name[16];
    rein_error err;

    (void)state;
    assert_rein_ok(rein_history_add_user(h, "weather?"), NULL);
    for (size_t i = 0; i < 5; i++) {
        r[i] = rein_model_request_new();
        if (i == 2)
            assert_rein_ok(rein_model_request_add_tool(r[i], "weather", "Weather", params), NULL);
        else
            assert_rein_ok(rein_model_request_add_tool_shared(r[i], "weather",
                                                              i == 3 ? "Rain" : "Weather", params),
                           NULL);
        assert_rein_ok(rein_provider_prepare(i == 4 ? q : p, r[i], &err), &err);
    }
    assert_ptr_equal(r[0]->tools_json, r[1]->tools_json);     /* one encoding */
    assert_ptr_not_equal(r[0]->tools_json, r[2]->tools_json); /* unshared: its own */
    assert_ptr_not_equal(r[0]->tools_json, r[3]->tools_json); /* another description */
    want = body_for(p, r[2], h);
    got = body_for(p, r[1], h);
    assert_string_equal(got, want);
    rein_free(got);
    assert_true(json_equal(rein_model_request_dropped(r[1]), rein_model_request_dropped(r[2])));
    assert_non_null(rein_model_request_dropped(r[0]));
    assert_null(rein_model_request_dropped(r[4])); /* the chat wire drops nothing */
    assert_non_null(strstr(r[4]->tools_json, "\"type\":\"function\""));
    /* Nine other lists push the first out of the cache; r[0] and r[1] still send it. */
    for (size_t i = 0; i < 9; i++) {
        other[i] = rein_model_request_new();
        snprintf(name, sizeof(name), "tool%zu", i);
        assert_rein_ok(rein_model_request_add_tool_shared(other[i], name, NULL, params), NULL);
        assert_rein_ok(rein_provider_prepare(p, other[i], &err), &err);
    }
    rein_provider_free(p);
    rein_provider_free(q);
    p = provider_for("gemini", "http://127.0.0.1:9/v1beta");
    got = body_for(p, r[1], h);
    rein_provider_free(p);
    assert_string_equal(got, want);
    rein_free(got);
    rein_free(want);
    for (size_t i = 0; i < 9; i++)
        rein_model_request_free(other[i]);
    for (size_t i = 0; i < 5; i++)
        rein_model_request_free(r[i]);
    json_decref(params);
    rein_history_free(h);
}

/* The five wires the in-place history tests cover: {provider, base URL}. */
static const char *const five_wires[][2] = {
    {"openai-compatible", "http://127.0.0.1:9/v1"},
    {"anthropic", "http://127.0.0.1:9"},
    {"gemini", "http://127.0.0.1:9/v1beta"},
    {"bedrock", "http://127.0.0.1:9"},
    {"ollama", "http://127.0.0.1:9"},
};

/* A message replaced in place: on every wire the next body is byte for byte that of a history
 * made from scratch with the new message, only that message is encoded again (a tool result
 * or user message; after an assistant message the rest is), and the ids, sizes, open
 * exchanges and chained hash agree; a replacement of another role is refused. */
static void test_history_replace_keeps_other_encodings(void **state)
{
    size_t at[30];

    (void)state;
    for (size_t w = 0; w < REIN_ARRAY_SIZE(five_wires); w++) {
        rein_provider *p = provider_for(five_wires[w][0], five_wires[w][1]);
        rein_model_request *req = rein_model_request_new();
        rein_history *h = mixed_history(30, at);
        /* {index, role}: a tool result without its name (Gemini looks it up), one with it, a
         * user message, then two at once, then an assistant message */
        const size_t picks[][2] = {
            {at[3] + 3, 1}, {at[20] + 2, 1}, {at[7], 1}, {at[9] + 2, 2}, {at[12] + 1, 0}};
        rein_error err;
        char *body;
        json_t *bad;
        body = body_for(p, req, h);
        rein_free(body);
        for (size_t k = 0; k < REIN_ARRAY_SIZE(picks); k++) {
            size_t i = picks[k][0], encodes = rein__history_encode_count(h);
            json_t *all = rein_history_to_json(h), *m;
            rein_history *f;
            for (size_t n = 0; n < (picks[k][1] == 2 ? 2 : 1); n++) {
                size_t j = n ? at[15] + 3 : i;
                m = json_deep_copy(json_array_get(all, j));
                json_object_set_new(m, "content", json_string(n ? "shorter" : "a new text \u00e9"));
                if (!picks[k][1]) {
                    json_t *c = json_array_get(json_object_get(m, "tool_calls"), 0);
                    json_object_set_new(c, "arguments", json_string("{\"city\":\"Bergen\"}"));
                }
                assert_rein_ok(rein_history_replace(h, j, m, &err), &err);
                json_array_set_new(all, j, m);
            }
            f = rein_history_from_json(all, NULL);
            assert_non_null(f);
            assert_histories_agree(p, req, h, f);
            if (picks[k][1])
                assert_int_equal(rein__history_encode_count(h), encodes + picks[k][1]);
            rein_history_free(f);
            json_decref(all);
        }
        bad = json_pack("{s:s, s:s}", "role", "user", "content", "not a tool result");
        assert_int_equal(rein_history_replace(h, at[3] + 2, bad, &err), REIN_EINVAL);
        assert_int_equal(rein_history_replace(h, 9999, bad, &err), REIN_EINVAL);
        json_decref(bad);
        rein_history_free(h);
        rein_model_request_free(req);
        rein_provider_free(p);
    }
}

/* The neutral messages of a conversation with a tool result's image (decision 0098): a user
 * message, an assistant's two calls, their results (c1's with an image), a user message, a
 * call c3 and its result (an image), an answer, a last user message. */
static json_t *tool_media_messages(void)
{
    static const char png[] = "iVBORw0KGgo=";

    return json_pack("[{s:s, s:s}, {s:s, s:s, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}]},"
                     " {s:s, s:s, s:s, s:s, s:[{s:s, s:s, s:s, s:i}]}, {s:s, s:s, s:s},"
                     " {s:s, s:s}, {s:s, s:s, s:[{s:s, s:s, s:s}]},"
                     " {s:s, s:s, s:s, s:[{s:s, s:s, s:s, s:i}]}, {s:s, s:s}, {s:s, s:s}]",
                     "role", "user", "content", "look", "role", "assistant", "content", "",
                     "tool_calls", "id", "c1", "name", "snap", "arguments", "{}", "id", "c2",
                     "name", "stats", "arguments", "{}", "role", "tool", "tool_call_id", "c1",
                     "name", "snap", "content", "a page", "attachments", "type", "image",
                     "mime_type", "image/png", "data", png, "index", 1, "role", "tool",
                     "tool_call_id", "c2", "content", "3 rows", "role", "user", "content", "next",
                     "role", "assistant", "content", "", "tool_calls", "id", "c3", "name", "snap",
                     "arguments", "{}", "role", "tool", "tool_call_id", "c3", "content", "",
                     "attachments", "type", "image", "mime_type", "image/png", "data", png, "index",
                     1, "role", "assistant", "content", "done", "role", "user", "content", "again");
}

/* The roles of a body's messages as one letter each, and where its user messages of content
 * parts are ("m"). */
static char *body_roles(const char *body)
{
    json_t *b = json_loads(body, 0, NULL), *m;
    char *out = rein_calloc(64, 1);
    size_t i;

    assert_non_null(b);
    assert_non_null(out);
    json_array_foreach(json_object_get(b, "messages"), i, m)
    {
        const char *role = json_string_value(json_object_get(m, "role"));
        assert_true(i < 63);
        out[i] = json_is_array(json_object_get(m, "content")) && role[0] == 'u' ? 'm' : role[0];
    }
    json_decref(b);
    return out;
}

/* On the OpenAI chat wire a turn's tool results' media go in one user message after the last
 * of them (decision 0098): in the piece of the message after them, or after the pieces when
 * the history ends with them. A replaced or removed tool result, a removal that moves a
 * message next to tool results, and a shared message after them all give the body of a
 * history made from scratch. */
static void test_history_tool_media_openai(void **state)
{
    rein_provider *p = provider_for("openai-compatible", "http://127.0.0.1:9/v1");
    rein_model_request *req = rein_model_request_new();
    json_t *all = tool_media_messages(), *m;
    rein_history *h = rein_history_from_json(all, NULL), *g, *tail;
    rein_error err;
    char *body, *roles;

    (void)state;
    assert_non_null(h);
    body = body_for(p, req, h);
    roles = body_roles(body);
    assert_string_equal(roles, "uattmuatmau");
    assert_non_null(strstr(body, "is in the user message after the tool results"));
    assert_non_null(strstr(body, "The media of the result of tool call c1 (snap)"));
    assert_non_null(strstr(body, "\"url\":\"data:image/png;base64,iVBORw0KGgo=\""));
    rein_free(roles);
    rein_free(body);
    /* the history ending with the tool results: their media after the pieces */
    tail = rein_history_from_json(all, NULL);
    assert_non_null(tail);
    rein_history_truncate(tail, 4);
    body = body_for(p, req, tail);
    roles = body_roles(body);
    assert_string_equal(roles, "uattm");
    rein_free(roles);
    rein_free(body);
    rein_history_free(tail);
    /* c1's result replaced by one without media: the message after the run is made again */
    m = json_pack("{s:s, s:s, s:s, s:s}", "role", "tool", "tool_call_id", "c1", "name", "snap",
                  "content", "no page");
    assert_rein_ok(rein_history_replace(h, 2, m, &err), &err);
    json_array_set_new(all, 2, m);
    g = rein_history_from_json(all, NULL);
    assert_histories_agree(p, req, h, g);
    rein_history_free(g);
    body = body_for(p, req, h);
    roles = body_roles(body);
    assert_string_equal(roles, "uattuatmau");
    rein_free(roles);
    rein_free(body);
    /* and back: the media again */
    m = json_deep_copy(json_array_get(all, 6));
    json_object_set_new(m, "tool_call_id", json_string("c1"));
    json_object_set_new(m, "name", json_string("snap"));
    assert_rein_ok(rein_history_replace(h, 2, m, &err), &err);
    json_array_set_new(all, 2, m);
    g = rein_history_from_json(all, NULL);
    assert_histories_agree(p, req, h, g);
    rein_history_free(g);
    /* messages 4..7 removed: "again" now follows the first turn's tool results */
    rein_history_remove(h, 4, 8);
    for (size_t k = 0; k < 4; k++)
        json_array_remove(all, 4);
    g = rein_history_from_json(all, NULL);
    assert_histories_agree(p, req, h, g);
    body = body_for(p, req, h);
    roles = body_roles(body);
    assert_string_equal(roles, "uattmu");
    rein_free(roles);
    rein_free(body);
    rein_history_free(g);
    /* the tool results removed: "again" follows "look", without their media */
    rein_history_remove(h, 1, 4);
    for (size_t k = 0; k < 3; k++)
        json_array_remove(all, 1);
    g = rein_history_from_json(all, NULL);
    assert_histories_agree(p, req, h, g);
    rein_history_free(g);
    rein_history_free(h);
    json_decref(all);
    /* a shared message after tool results and elsewhere: its piece is not kept for both */
    all = tool_media_messages();
    h = rein_history_from_json(all, NULL);
    g = rein_history_new();
    m = json_pack("{s:s, s:s}", "role", "user", "content", "shared");
    assert_non_null(h);
    rein_history_truncate(h, 4);
    assert_rein_ok(rein_history_append_shared(h, m, &err), &err);
    assert_rein_ok(rein_history_append(g, json_array_get(all, 0), &err), &err);
    assert_rein_ok(rein_history_append_shared(g, m, &err), &err);
    body = body_for(p, req, h);
    roles = body_roles(body);
    assert_string_equal(roles, "uattmu");
    rein_free(roles);
    rein_free(body);
    body = body_for(p, req, g);
    roles = body_roles(body);
    assert_string_equal(roles, "uu");
    rein_free(roles);
    rein_free(body);
    body = body_for(p, req, h);
    roles = body_roles(body);
    assert_string_equal(roles, "uattmu");
    rein_free(roles);
    rein_free(body);
    json_decref(m);
    rein_history_free(g);
    rein_history_free(h);
    json_decref(all);
    rein_model_request_free(req);
    rein_provider_free(p);
}

/* Messages removed from the middle: on every wire the next body is byte for byte the body of
 * a history made from scratch without them, the kept messages are not encoded again (cuts at
 * exchanges), and the ids, sizes, open exchanges and chained hash agree. */
static void test_history_remove_keeps_encodings_on_every_wire(void **state)
{
    size_t at[30];

    (void)state;
    for (size_t w = 0; w < REIN_ARRAY_SIZE(five_wires); w++) {
        rein_provider *p = provider_for(five_wires[w][0], five_wires[w][1]);
        rein_model_request *req = rein_model_request_new();
        rein_history *base = mixed_history(30, at);
        size_t n = rein_history_len(base);
        /* {from, to, whether the cut is at exchanges (nothing encoded again)} */
        const size_t cuts[][3] = {
            {1, at[3], 1},
            {at[5], at[9], 1},
            {1, at[29], 1},
            {at[2] + 2, at[4], 0},
            {at[6] + 1, at[6] + 3, 0},
            {0, at[1], 1},
            {at[4] + 3, at[4] + 4, 0},
            {at[20], n, 1},
            {at[8], at[8], 1},
        };
        for (size_t c = 0; c < REIN_ARRAY_SIZE(cuts); c++) {
            size_t from = cuts[c][0], to = cuts[c][1], encodes;
            rein_history *h = fresh_without(base, 0, 0), *f = fresh_without(base, from, to);
            char *before = body_for(p, req, h), *after, *want;
            int64_t t1, t2;
            size_t c1, c2;
            encodes = rein__history_encode_count(h);
            rein_history_remove(h, from, to);
            after = body_for(p, req, h);
            want = body_for(p, req, f);
            if (strcmp(after, want) != 0)
                fail_msg("%s, cut %zu..%zu: the body differs from a fresh history's",
                         five_wires[w][0], from, to);
            if (cuts[c][2])
                assert_int_equal(rein__history_encode_count(h), encodes);
            assert_int_equal(rein_history_len(h), rein_history_len(f));
            assert_int_equal(rein_history_first_open(h), rein_history_first_open(f));
            rein_history_size(h, &t1, &c1);
            rein_history_size(f, &t2, &c2);
            assert_true(t1 == t2 && c1 == c2);
            assert_true(rein__history_chain(h) == rein__history_chain(f));
            for (int k = 0; k < 30; k++) {
                char id[16];
                snprintf(id, sizeof(id), "c%da", k);
                assert_true(rein_history_has_call_id(h, id) == rein_history_has_call_id(f, id));
            }
            /* What comes next is encoded after the moved pieces as after fresh ones. */
            assert_rein_ok(rein_history_add_user(h, "and then?"), NULL);
            assert_rein_ok(rein_history_add_user(f, "and then?"), NULL);
            rein_free(after);
            rein_free(want);
            after = body_for(p, req, h);
            want = body_for(p, req, f);
            assert_string_equal(after, want);
            rein_free(before);
            rein_free(after);
            rein_free(want);
            rein_history_free(h);
            rein_history_free(f);
        }
        rein_history_free(base);
        rein_model_request_free(req);
        rein_provider_free(p);
    }
}

/* The SHA-256 a signer takes over a body with the history's block in it, spliced (a long
 * history) or copied (a short one), which hashes only what changed since the last body (from
 * the last mark before a cut), is the SHA-256 of the flat body after appends, truncations (a
 * turn's retry, a turn undone: a cut and other messages after it), a removal and
 * compactions. */
static void sha_over_steps(rein_provider *p, rein_model_request *req, size_t turns, bool spliced)
{
    size_t at[400];
    rein_history *h = mixed_history(turns, at);

    for (int step = 0; step < 27; step++) {
        struct rein__body b;
        struct rein__sha256 s;
        char got[65], want[65];
        if (step == 2)
            assert_rein_ok(rein_history_add_user(h, "more"), NULL);
        if (step == 3)
            rein_history_truncate(h, rein_history_len(h) - 3);
        if (step == 4)
            rein_history_remove(h, 1, at[10]);
        if (step == 5 || step == 9)
            rein_history_compact(h);
        if (step == 11)
            rein_history_freeze(h);
        if (step == 6)
            assert_rein_ok(rein_history_add_user(h, "again"), NULL);
        if (step > 6 && step % 2) {
            char text[600];
            memset(text, 'a' + step % 26, sizeof(text) - 1);
            text[sizeof(text) - 1] = '\0';
            assert_rein_ok(rein_history_add_user(h, text), NULL);
        } else if (step > 6) {
            /* Cut, and longer than what was cut before the next body: the bytes after the
             * cut differ at the same offsets. */
            char text[3000];
            rein_history_truncate(h, rein_history_len(h) - (size_t)(step % 3) - 1);
            memset(text, 'A' + step % 26, sizeof(text) - 1);
            text[sizeof(text) - 1] = '\0';
            assert_rein_ok(rein_history_add_user(h, text), NULL);
        }
        rein__body_init(&b);
        assert_rein_ok(p->wire->build_body(p, req, h, &b, NULL), NULL);
        assert_true(spliced ? b.mid != NULL : b.mid == NULL);
        rein__body_sha256_hex(&b, got);
        /* the cache took the block: the next body hashes only what changed */
        assert_true(rein__history_sha_cache(h)->done > 0);
        assert_rein_ok(rein__body_flatten(&b), NULL);
        rein__sha256_init(&s);
        rein__sha256_add(&s, b.buf.ptr, b.buf.len);
        rein__sha256_hex(&s, want, 64);
        assert_string_equal(got, want);
        rein__body_release(&b);
    }
    rein_history_free(h);
}

static void test_body_sha256_over_pieces(void **state)
{
    rein_provider *p = provider_for("bedrock", "http://127.0.0.1:9");
    rein_model_request *req = rein_model_request_new();

    (void)state;
    sha_over_steps(p, req, 400, true);
    sha_over_steps(p, req, 20, false);
    rein_model_request_free(req);
    rein_provider_free(p);
}

/* Appends the messages of turn k (user, assistant call, tool result, answer) to h; turn 3's
 * tool result is larger than the history's kept scratch space. */
static void add_turn(rein_history *h, int k)
{
    char text[64], id[32];
    json_t *m;

    snprintf(text, sizeof(text), "question %d", k);
    snprintf(id, sizeof(id), "call_%d", k);
    assert_rein_ok(rein_history_add_user(h, text), NULL);
    m = json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "role", "assistant", "content", "",
                  "tool_calls", "id", id, "name", "echo", "arguments", "{\"n\":1}");
    assert_rein_ok(rein_history_append(h, m, NULL), NULL);
    json_decref(m);
    if (k == 3) {
        char *big = rein_malloc(100000);
        memset(big, 'x', 99999);
        big[99999] = '\0';
        assert_rein_ok(rein_history_add_tool_result(h, id, "echo", big, false), NULL);
        rein_free(big);
    } else {
        assert_rein_ok(rein_history_add_tool_result(h, id, "echo", "{\"n\":1}", false), NULL);
    }
    snprintf(text, sizeof(text), "answer %d", k);
    m = json_pack("{s:s, s:s}", "role", "assistant", "content", text);
    assert_rein_ok(rein_history_append(h, m, NULL), NULL);
    json_decref(m);
}

/* The body from the cached pieces equals the body of a fresh history with the same messages,
 * after truncating and appending other messages, and after switching wires and back. */
static void test_history_pieces_after_truncate_and_wire_change(void **state)
{
    const char *presets[2][2] = {{"openai-compatible", "http://127.0.0.1:9/v1"},
                                 {"anthropic", "http://127.0.0.1:9"}};
    rein_history *h = rein_history_new();

    (void)state;
    for (int k = 0; k < 6; k++)
        add_turn(h, k);
    for (int round = 0; round < 3; round++) {
        const char **pre = presets[round % 2];
        rein_provider *p = provider_for(pre[0], pre[1]);
        rein_model_request *r1 = rein_model_request_new(), *r2 = rein_model_request_new();
        rein_history *fresh = rein_history_new();
        char *cached, *want;

        rein_free(body_for(p, r1, h)); /* every piece made for this wire */
        rein_history_truncate(h, 9 + (size_t)round);
        add_turn(h, 10 + round);
        for (size_t i = 0; i < rein_history_len(h); i++)
            assert_rein_ok(rein_history_append(fresh, rein_history_get(h, i), NULL), NULL);
        cached = body_for(p, r1, h);
        want = body_for(p, r2, fresh);
        assert_string_equal(cached, want);
        rein_free(cached);
        rein_free(want);
        rein_history_free(fresh);
        rein_model_request_free(r1);
        rein_model_request_free(r2);
        rein_provider_free(p);
    }
    rein_history_free(h);
}

/* A body in three pieces reads, hashes and flattens as the same bytes in one piece. */
static void check_spliced(struct rein__body *b)
{
    size_t len = rein__body_len(b),
           cuts[] = {
               0,      1, b->at - 1, b->at, b->at + 1, b->at + b->mid_len - 1, b->at + b->mid_len,
               len - 1};
    char *flat, *copy = rein_malloc(len);
    struct rein__body whole;

    assert_non_null(b->mid);
    assert_true(b->mid_len >= REIN__SPLICE_MIN);
    rein__body_init(&whole);
    rein__body_copy(b, 0, copy, len);
    assert_rein_ok(rein_buf_add(&whole.buf, copy, len), NULL);
    flat = whole.buf.ptr;
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        for (size_t j = i; j < sizeof(cuts) / sizeof(cuts[0]); j++) {
            size_t n = cuts[j] - cuts[i] + 1;
            memset(copy, 0, len);
            rein__body_copy(b, cuts[i], copy, n);
            assert_memory_equal(copy, flat + cuts[i], n);
            assert_true(rein__body_hash(b, 0, cuts[i], n) == rein__hash64(0, flat + cuts[i], n));
        }
    }
    assert_rein_ok(rein__body_flatten(b), NULL);
    assert_null(b->mid);
    assert_int_equal(b->buf.len, len);
    assert_memory_equal(b->buf.ptr, flat, len);
    rein_free(copy);
    rein__body_release(&whole);
}

/* A history past REIN__SPLICE_MIN is spliced into the body in place of a copy, with the same
 * bytes: those of a small history's body with the messages block swapped. */
static void test_large_history_body_spliced_in_place(void **state)
{
    const char *presets[2][2] = {{"openai-compatible", "http://127.0.0.1:9/v1"},
                                 {"ollama", "http://127.0.0.1:9"}};

    (void)state;
    for (int k = 0; k < 2; k++) {
        rein_provider *p = provider_for(presets[k][0], presets[k][1]);
        rein_model_request *req = rein_model_request_new();
        rein_history *small = rein_history_new(), *h = rein_history_new();
        const char *msgs, *small_msgs;
        size_t len, small_len;
        struct rein__body b;
        struct rein_buf want;
        char *small_body, *at;

        assert_rein_ok(rein_history_add_user(small, "hi"), NULL);
        /* Many small messages (turn 3 would add one large result), then escapes and UTF-8. */
        for (int i = 4; rein__history_joined(h, p, p->wire, &msgs, &len) == REIN_OK &&
                        len < 2 * REIN__SPLICE_MIN;
             i++)
            add_turn(h, i);
        assert_rein_ok(rein_history_add_user(h, "Fin \"ø\"\n\u2603"), NULL);
        small_body = body_for(p, req, small);
        assert_rein_ok(rein__history_joined(small, p, p->wire, &small_msgs, &small_len), NULL);
        assert_rein_ok(rein__history_joined(h, p, p->wire, &msgs, &len), NULL);
        rein_buf_init(&want, 0);
        assert_rein_ok(rein_buf_add(&want, small_msgs, small_len), NULL);
        at = strstr(small_body, want.ptr);
        assert_non_null(at);
        rein_buf_reset(&want);
        assert_rein_ok(rein_buf_add(&want, small_body, (size_t)(at - small_body)), NULL);
        assert_rein_ok(rein_buf_add(&want, msgs, len), NULL);
        assert_rein_ok(rein_buf_adds(&want, at + small_len), NULL);

        rein__body_init(&b);
        assert_rein_ok(p->wire->build_body(p, req, h, &b, NULL), NULL);
        assert_ptr_equal(b.mid, msgs); /* the history's own bytes, not a copy */
        assert_int_equal(b.mid_len, len);
        check_spliced(&b);
        assert_int_equal(b.buf.len, want.len);
        assert_memory_equal(b.buf.ptr, want.ptr, want.len);

        rein__body_release(&b);
        rein_buf_release(&want);
        rein_free(small_body);
        rein_history_free(small);
        rein_history_free(h);
        rein_model_request_free(req);
        rein_provider_free(p);
    }
}

static json_t *assistant_with_ids(const char *a, const char *b)
{
    json_t *m = json_pack("{s:s, s:[{s:s, s:s, s:s}]}", "role", "assistant", "tool_calls", "id", a,
                          "name", "f", "arguments", "{}");

    if (b)
        json_array_append_new(json_object_get(m, "tool_calls"),
                              json_pack("{s:s, s:s, s:s}", "id", b, "name", "f", "arguments", ""));
    return m;
}

/* The set of call ids follows appends and truncations, keeps an id that two messages carry
 * until both are gone, and grows past its first table. */
static void test_history_call_id_set(void **state)
{
    rein_history *h = rein_history_new();
    json_t *m;
    char id[32];

    (void)state;
    assert_false(rein_history_has_call_id(h, "a"));
    assert_rein_ok(rein_history_add_user(h, "hi"), NULL);
    m = assistant_with_ids("a", "b");
    assert_rein_ok(rein_history_append(h, m, NULL), NULL);
    json_decref(m);
    /* A tool message's tool_call_id is an answer, not a call. */
    assert_rein_ok(rein_history_add_tool_result(h, "z", NULL, "r", false), NULL);
    assert_true(rein_history_has_call_id(h, "a"));
    assert_true(rein_history_has_call_id(h, "b"));
    assert_false(rein_history_has_call_id(h, "z"));
    assert_false(rein_history_has_call_id(h, "c"));
    m = assistant_with_ids("a", "c"); /* a history from elsewhere may repeat an id */
    assert_rein_ok(rein_history_append(h, m, NULL), NULL);
    json_decref(m);
    rein_history_truncate(h, 3);
    assert_true(rein_history_has_call_id(h, "a"));
    assert_false(rein_history_has_call_id(h, "c"));
    rein_history_truncate(h, 1);
    assert_false(rein_history_has_call_id(h, "a"));
    assert_false(rein_history_has_call_id(h, "b"));
    /* Many appends and truncations: the table grows and drops what was removed. */
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 2000; i++) {
            snprintf(id, sizeof(id), "call_%d", i);
            m = assistant_with_ids(id, NULL);
            assert_rein_ok(rein_history_append(h, m, NULL), NULL);
            json_decref(m);
        }
        assert_true(rein_history_has_call_id(h, "call_0"));
        assert_true(rein_history_has_call_id(h, "call_1999"));
        assert_false(rein_history_has_call_id(h, "call_2000"));
        rein_history_truncate(h, 1001);
        assert_true(rein_history_has_call_id(h, "call_999"));
        assert_false(rein_history_has_call_id(h, "call_1000"));
        rein_history_truncate(h, 1);
        assert_false(rein_history_has_call_id(h, "call_0"));
    }
    rein_history_free(h);
    /* A history read back from JSON has the set too. */
    m = json_pack("[{s:s, s:s}, o]", "role", "user", "content", "x", assistant_with_ids("q", "r"));
    h = rein_history_from_json(m, NULL);
    json_decref(m);
    assert_non_null(h);
    assert_true(rein_history_has_call_id(h, "r"));
    rein_history_free(h);
}

/* The first exchange whose calls lack results right after them (or carry a name no wire
 * takes), judged as the history grows and after truncations. */
static void test_history_first_open(void **state)
{
    rein_history *h = rein_history_new();
    json_t *m;

    (void)state;
    assert_int_equal(rein_history_first_open(h), 0);
    assert_rein_ok(rein_history_add_user(h, "hi"), NULL);
    assert_int_equal(rein_history_first_open(h), 1);
    m = assistant_with_ids("a", "b"); /* index 1 */
    assert_rein_ok(rein_history_append(h, m, NULL), NULL);
    json_decref(m);
    assert_int_equal(rein_history_first_open(h), 1);
    assert_rein_ok(rein_history_add_tool_result(h, "b", NULL, "r", false), NULL);
    assert_int_equal(rein_history_first_open(h), 1);
    assert_rein_ok(rein_history_add_tool_result(h, "a", NULL, "r", false), NULL);
    assert_int_equal(rein_history_first_open(h), 4);
    assert_rein_ok(rein_history_add_user(h, "more"), NULL); /* index 4 */
    m = assistant_with_ids("c", NULL);                      /* index 5, never answered */
    assert_rein_ok(rein_history_append(h, m, NULL), NULL);
    json_decref(m);
    assert_rein_ok(rein_history_add_user(h, "later"), NULL);
    /* A result after another message does not count. */
    assert_rein_ok(rein_history_add_tool_result(h, "c", NULL, "r", false), NULL);
    assert_int_equal(rein_history_first_open(h), 5);
    rein_history_truncate(h, 6);
    assert_int_equal(rein_history_first_open(h), 5);
    assert_rein_ok(rein_history_add_tool_result(h, "c", NULL, "r", false), NULL);
    assert_int_equal(rein_history_first_open(h), 7);
    rein_history_truncate(h, 2);
    assert_int_equal(rein_history_first_open(h), 1);
    rein_history_truncate(h, 1);
    assert_int_equal(rein_history_first_open(h), 1);
    /* A name outside ^[a-zA-Z0-9_-]{1,64}$ leaves the exchange open even when answered. */
    m = json_pack("{s:s, s:[{s:s, s:s, s:s}]}", "role", "assistant", "tool_calls", "id", "d",
                  "name", "functions.f", "arguments", "{}");
    assert_rein_ok(rein_history_append(h, m, NULL), NULL);
    json_decref(m);
    assert_rein_ok(rein_history_add_tool_result(h, "d", NULL, "r", false), NULL);
    assert_rein_ok(rein_history_add_user(h, "next"), NULL);
    assert_int_equal(rein_history_first_open(h), 1);
    rein_history_free(h);
}

/* The running sums behind the agent's size estimate follow appends and truncations. */
static void test_history_size(void **state)
{
    rein_history *h = rein_history_new();
    int64_t text;
    size_t calls;
    json_t *m;

    (void)state;
    rein_history_size(h, &text, &calls);
    assert_true(text == 0 && calls == 0);
    assert_rein_ok(rein_history_add_user(h, "hello"), NULL); /* 5 */
    m = assistant_with_ids("ab", "c");                       /* 2+1+{}=2, 1+1+0 */
    json_object_set_new(m, "reasoning", json_string("why")); /* 3 */
    assert_rein_ok(rein_history_append(h, m, NULL), NULL);
    json_decref(m);
    assert_rein_ok(rein_history_add_tool_result(h, "ab", "f", "1234", false), NULL); /* 4 */
    rein_history_size(h, &text, &calls);
    assert_int_equal(text, 5 + 3 + (2 + 1 + 2) + (1 + 1 + 0) + 4);
    assert_int_equal(calls, 2);
    rein_history_truncate(h, 1);
    rein_history_size(h, &text, &calls);
    assert_true(text == 5 && calls == 0);
    rein_history_free(h);
}

/* The chained hash that seeds made-up call ids: a function of the messages in order, equal
 * for equal histories and back to its old value after a truncation. */
static void test_history_chain(void **state)
{
    rein_history *a = rein_history_new(), *b = rein_history_new();
    uint64_t one, two;

    (void)state;
    assert_rein_ok(rein_history_add_user(a, "x"), NULL);
    one = rein__history_chain(a);
    assert_rein_ok(rein_history_add_user(a, "y"), NULL);
    two = rein__history_chain(a);
    assert_true(one != two);
    assert_rein_ok(rein_history_add_user(b, "y"), NULL);
    assert_rein_ok(rein_history_add_user(b, "x"), NULL);
    assert_true(rein__history_chain(b) != two); /* the order counts */
    rein_history_truncate(b, 0);
    assert_rein_ok(rein_history_add_user(b, "x"), NULL);
    assert_true(rein__history_chain(b) == one);
    assert_rein_ok(rein_history_add_user(b, "y"), NULL);
    assert_true(rein__history_chain(b) == two);
    rein_history_truncate(a, 1);
    assert_true(rein__history_chain(a) == one);
    assert_rein_ok(rein_history_add_user(a, "z"), NULL);
    assert_true(rein__history_chain(a) != two);
    rein_history_free(a);
    rein_history_free(b);
}

static void test_history_checks_the_neutral_shape(void **state)
{
    rein_history *h = rein_history_new();
    rein_error err;
    json_t *m;

    (void)state;
    m = json_pack("{s:s}", "role", "robot");
    assert_int_equal(rein_history_append(h, m, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "robot"));
    json_decref(m);
    m = json_pack("{s:s, s:s}", "role", "tool", "content", "x");
    assert_int_equal(rein_history_append(h, m, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "tool_call_id"));
    json_decref(m);
    m = json_pack("{s:s, s:[{s:s, s:s, s:{}}]}", "role", "assistant", "tool_calls", "id", "a",
                  "name", "f", "arguments");
    assert_int_equal(rein_history_append(h, m, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "tool_calls[0].arguments"));
    json_decref(m);
    assert_int_equal(rein_history_len(h), 0);

    /* Round trip through JSON, as the store does. */
    rein_history *s = sample_history();
    json_t *arr = rein_history_to_json(s);
    rein_history *back = rein_history_from_json(arr, &err);
    assert_non_null(back);
    assert_int_equal(rein_history_len(back), 5);
    assert_true(json_equal((json_t *)rein_history_get(back, 2), (json_t *)rein_history_get(s, 2)));
    json_decref(arr);
    rein_history_free(back);
    rein_history_free(s);
    rein_history_free(h);
}

static void test_response_becomes_the_assistant_message(void **state)
{
    rein_model_response *r;
    json_t *m;
    rein_history *h = rein_history_new();

    (void)state;
    r = decode(REIN_WIRE_ANTHROPIC_SSE,
               "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
               "\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n"
               "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
               "\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n"
               "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
               "\"signature_delta\",\"signature\":\"SIG\"}}\n\n"
               "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":"
               "\"redacted_thinking\",\"data\":\"opaque\"}}\n\n"
               "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":"
               "\"tool_use\",\"id\":\"toolu_9\",\"name\":\"f\",\"input\":{}}}\n\n"
               "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":"
               "\"input_json_delta\",\"partial_json\":\"{\\\"a\\\": 1.0}\"}}\n\n"
               "data: {\"type\":\"content_block_stop\",\"index\":2}\n\n"
               "data: {\"type\":\"message_stop\"}\n\n",
               0, NULL);
    m = rein_model_response_message(r);
    assert_string_equal(rein__json_str(m, "reasoning"), "hmm");
    assert_string_equal(rein__json_str(m, "reasoning_signature"), "SIG");
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(m, "redacted_reasoning"), 0)), "opaque");
    assert_string_equal(
        rein__json_str(json_array_get(json_object_get(m, "tool_calls"), 0), "arguments"),
        "{\"a\": 1.0}");
    /* The ordered list has both, the open thinking block closed at the end of the stream. */
    json_t *ordered = json_object_get(m, "thinking_blocks");
    assert_int_equal(json_array_size(ordered), 2);
    assert_string_equal(rein__json_str(json_array_get(ordered, 0), "redacted"), "opaque");
    assert_string_equal(rein__json_str(json_array_get(ordered, 1), "signature"), "SIG");
    assert_rein_ok(rein_history_add_response(h, r), NULL);
    assert_int_equal(rein_history_len(h), 1);
    json_decref(m);
    rein_history_free(h);
    rein_model_response_free(r);
}

#define TB_START(i, type, extra)                                                                   \
    "data: {\"type\":\"content_block_start\",\"index\":" #i ",\"content_block\":{\"type\":\"" type \
    "\"" extra "}}\n\n"
#define TB_DELTA(i, type, field, value)                                                            \
    "data: {\"type\":\"content_block_delta\",\"index\":" #i ",\"delta\":{\"type\":\"" type         \
    "\",\"" field "\":\"" value "\"}}\n\n"
#define TB_STOP(i) "data: {\"type\":\"content_block_stop\",\"index\":" #i "}\n\n"

/* Interleaved thinking: each thinking block goes back with its own signature, in its place. */
static void test_interleaved_thinking_goes_back_in_order(void **state)
{
    rein_provider *p = provider_for("anthropic", "http://127.0.0.1:9");
    rein_model_request *req = rein_model_request_new();
    rein_history *h = rein_history_new();
    rein_model_response *r;
    json_t *m, *body, *blocks;
    char *text;

    (void)state;
    r = decode(
        REIN_WIRE_ANTHROPIC_SSE,
        TB_START(0, "thinking", ",\"thinking\":\"\",\"signature\":\"\"")
            TB_DELTA(0, "thinking_delta", "thinking", "first")
                TB_DELTA(0, "signature_delta", "signature", "S1") TB_STOP(0)
                    TB_START(1, "tool_use", ",\"id\":\"t1\",\"name\":\"f\",\"input\":{}")
                        TB_DELTA(1, "input_json_delta", "partial_json", "{}") TB_STOP(1)
                            TB_START(2, "thinking", ",\"thinking\":\"\",\"signature\":\"\"")
                                TB_DELTA(2, "thinking_delta", "thinking", "second")
                                    TB_DELTA(2, "signature_delta", "signature", "S2") TB_STOP(2)
                                        TB_START(3, "tool_use",
                                                 ",\"id\":\"t2\",\"name\":\"f\",\"input\":{}")
                                            TB_DELTA(3, "input_json_delta", "partial_json", "{}")
                                                TB_STOP(3) "data: {\"type\":\"message_stop\"}\n\n",
        0, NULL);
    m = rein_model_response_message(r);
    assert_int_equal(json_array_size(json_object_get(m, "thinking_blocks")), 2);
    assert_rein_ok(rein_history_add_user(h, "go"), NULL);
    assert_rein_ok(rein_history_add_response(h, r), NULL);
    assert_rein_ok(rein_history_add_tool_result(h, "t1", "f", "1", false), NULL);
    assert_rein_ok(rein_history_add_tool_result(h, "t2", "f", "2", false), NULL);
    text = body_for(p, req, h);
    body = rein_json_parse(text, strlen(text), 0, NULL);
    assert_non_null(body);
    blocks = json_object_get(json_array_get(json_object_get(body, "messages"), 1), "content");
    assert_int_equal(json_array_size(blocks), 4);
    assert_string_equal(rein__json_str(json_array_get(blocks, 0), "signature"), "S1");
    assert_string_equal(rein__json_str(json_array_get(blocks, 0), "thinking"), "first");
    assert_string_equal(rein__json_str(json_array_get(blocks, 1), "id"), "t1");
    assert_string_equal(rein__json_str(json_array_get(blocks, 2), "signature"), "S2");
    assert_string_equal(rein__json_str(json_array_get(blocks, 2), "thinking"), "second");
    assert_string_equal(rein__json_str(json_array_get(blocks, 3), "id"), "t2");
    json_decref(body);
    rein_free(text);
    json_decref(m);
    rein_history_free(h);
    rein_model_response_free(r);
    rein_model_request_free(req);
    rein_provider_free(p);
}

/*
 * OpenRouter (issue 24): reasoning_details stream in pieces that share an index (text, then
 * the signature), are kept merged, and go back verbatim in the assistant message, as
 * OpenRouter asks so the model can continue its reasoning after a tool call.
 */
#define ORD(items) CHUNK("{\"reasoning\":\"\",\"reasoning_details\":[" items "]}")
static void test_openrouter_reasoning_details_are_kept(void **state)
{
    rein_provider *p = provider_for("openai-compatible", "http://127.0.0.1:9/v1");
    rein_model_request *req = rein_model_request_new();
    rein_history *h = rein_history_new();
    rein_model_response *r;
    json_t *m, *det, *body, *sent;
    char *text;

    (void)state;
    r = decode(REIN_WIRE_OPENAI_SSE,
               ORD("{\"type\":\"reasoning.text\",\"text\":\"Let me \",\"format\":"
                   "\"anthropic-claude-v1\",\"index\":0}")
                   ORD("{\"type\":\"reasoning.text\",\"text\":\"check.\",\"format\":"
                       "\"anthropic-claude-v1\",\"index\":0}")
                       ORD("{\"type\":\"reasoning.text\",\"signature\":\"EqMB\",\"format\":"
                           "\"anthropic-claude-v1\",\"index\":0}")
                           ORD("{\"type\":\"reasoning.encrypted\",\"data\":\"gAAA\",\"id\":"
                               "\"rs_1\",\"format\":\"openai-responses-v1\",\"index\":1}")
                               CALL0("call_1", "get_weather") FINISH("tool_calls"),
               3, NULL);
    m = rein_model_response_message(r);
    det = json_object_get(m, "reasoning_details");
    assert_int_equal(json_array_size(det), 2);
    assert_string_equal(rein__json_str(json_array_get(det, 0), "text"), "Let me check.");
    assert_string_equal(rein__json_str(json_array_get(det, 0), "signature"), "EqMB");
    assert_string_equal(rein__json_str(json_array_get(det, 0), "format"), "anthropic-claude-v1");
    assert_string_equal(rein__json_str(json_array_get(det, 1), "data"), "gAAA");
    assert_string_equal(rein__json_str(json_array_get(det, 1), "id"), "rs_1");
    assert_rein_ok(rein_history_add_user(h, "weather?"), NULL);
    assert_rein_ok(rein_history_append(h, m, NULL), NULL);
    assert_rein_ok(rein_history_add_tool_result(h, "call_1", "get_weather", "sunny", false), NULL);
    text = body_for(p, req, h);
    body = rein_json_parse(text, strlen(text), 0, NULL);
    assert_non_null(body);
    sent =
        json_object_get(json_array_get(json_object_get(body, "messages"), 1), "reasoning_details");
    assert_true(json_equal(sent, det));
    json_decref(body);
    rein_free(text);
    json_decref(m);
    rein_model_response_free(r);

    /* A whole body keeps them as they came; the history refuses a value that is no array. */
    r = decode(REIN_WIRE_OPENAI_JSON,
               "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
               "\"4\",\"reasoning\":\"2+2\",\"reasoning_details\":[{\"type\":"
               "\"reasoning.summary\",\"summary\":\"adds\",\"index\":0}]},\"finish_reason\":"
               "\"stop\"}]}",
               0, NULL);
    m = rein_model_response_message(r);
    det = json_object_get(m, "reasoning_details");
    assert_string_equal(rein__json_str(json_array_get(det, 0), "summary"), "adds");
    json_object_set_new(m, "reasoning_details", json_string("x"));
    assert_int_equal(rein_history_append(h, m, NULL), REIN_EINVAL);
    json_decref(m);
    rein_model_response_free(r);
    rein_history_free(h);
    rein_model_request_free(req);
    rein_provider_free(p);
}

/* ---------------------------------------------------------------------------------------
 * The OpenAI Responses API wire (issue 24)
 */

#define RS(type, rest) "data: {\"type\":\"" type "\"" rest "}\n\n"
#define RS_CREATED                                                                                 \
    RS("response.created", ",\"response\":{\"id\":\"resp_9\",\"status\":\"in_progress\"}")
#define RS_DONE(status, extra)                                                                     \
    RS("response." status, ",\"response\":{\"id\":\"resp_9\",\"status\":\"" status "\"" extra      \
                           ",\"usage\":{\"input_tokens\":20,\"input_tokens_details\":{"            \
                           "\"cached_tokens\":8},\"output_tokens\":7,\"output_tokens_details\":{"  \
                           "\"reasoning_tokens\":3},\"total_tokens\":27}}")

static rein_model_response *rs_decode(const char *stream, size_t chunk, struct collected *col,
                                      rein_error *err)
{
    enum rein_wire_format fmt;

    assert_rein_ok(rein_wire_format_parse("openai-responses-sse", &fmt), NULL);
    rein_error_clear(err);
    return decode_opts(fmt, stream, strlen(stream), chunk, NULL, col, err);
}

static void test_responses_stream_events(void **state)
{
    static const char stream[] = RS_CREATED RS("response.in_progress",
                                               ",\"response\":{\"id\":\"resp_9\"}")
        RS("response.output_item.added",
           ",\"output_index\":0,\"item\":{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[]}")
            RS("response.reasoning_summary_part.added", ",\"output_index\":0,\"summary_index\":0")
                RS("response.reasoning_summary_text.delta",
                   ",\"output_index\":0,\"summary_index\":0,\"delta\":\"Think \"")
                    RS("response.reasoning_summary_text.delta",
                       ",\"output_index\":0,\"summary_index\":0,\"delta\":\"once.\"")
                        RS("response.reasoning_summary_part.added",
                           ",\"output_index\":0,\"summary_index\":1")
                            RS("response.reasoning_summary_text.delta",
                               ",\"output_index\":0,\"delta\":\"Twice.\"")
                                RS("response.output_item.done",
                                   ",\"output_index\":0,\"item\":{\"id\":\"rs_1\",\"type\":"
                                   "\"reasoning\",\"summary\":[{\"type\":\"summary_text\","
                                   "\"text\":\"Think once.\"}],\"encrypted_content\":\"gAAA\"}")
                                    RS("response.output_text.delta",
                                       ",\"output_index\":1,\"content_index\":0,\"delta\":"
                                       "\"Caf\\u00e9 \"")
                                        RS("response.output_text.annotation.added",
                                           ",\"output_index\":1,\"annotation\":{}")
                                            RS("response.output_text.delta",
                                               ",\"output_index\":1,\"delta\":\"time.\"")
                                                RS("response.output_item.added",
                                                   ",\"output_index\":2,\"item\":{\"type\":"
                                                   "\"function_call\",\"id\":\"fc_1\","
                                                   "\"call_id\":\"call_1\",\"name\":\"get_"
                                                   "weather\",\"arguments\":\"\"}")
                                                    RS("response.function_call_arguments."
                                                       "delta",
                                                       ",\"output_index\":2,\"delta\":"
                                                       "\"{\\\"city\\\":\"")
                                                        RS("response.function_call_arguments."
                                                           "delta",
                                                           ",\"output_index\":2,\"delta\":"
                                                           "\"\\\"Oslo\\\"}\"")
                                                            RS("response.function_call_"
                                                               "arguments.done",
                                                               ",\"output_index\":2,"
                                                               "\"arguments\":\"{\\\"city\\\":"
                                                               "\\\"Oslo\\\"}\"")
        /* A call whose arguments come only whole, in its done events. */
        RS("response.output_item.added", ",\"output_index\":3,\"item\":{\"type\":\"function_call\","
                                         "\"call_id\":\"call_2\",\"name\":\"now\"}")
            RS("response.output_item.done",
               ",\"output_index\":3,\"item\":{\"type\":\"function_call\",\"call_id\":\"call_2\","
               "\"name\":\"now\",\"arguments\":\"{\\\"tz\\\":\\\"UTC\\\"}\"}")
                RS("response.web_search_call.searching", ",\"output_index\":4")
                    RS_DONE("completed", "");
    struct collected col;
    rein_model_response *r;
    rein_error err;
    json_t *m, *items;

    (void)state;
    for (size_t chunk = 0; chunk <= 7; chunk += 7) {
        collected_init(&col);
        r = rs_decode(stream, chunk, &col, &err);
        if (!r)
            fail_msg("%s", err.msg);
        assert_string_equal(rein_model_response_text(r), "Café time.");
        assert_string_equal(rein_model_response_reasoning(r), "Think once.\n\nTwice.");
        assert_int_equal(rein_model_response_call_count(r), 2);
        assert_string_equal(rein_model_call_id(rein_model_response_call(r, 0)), "call_1");
        assert_string_equal(rein_model_call_raw_arguments(rein_model_response_call(r, 0)),
                            "{\"city\":\"Oslo\"}");
        assert_string_equal(rein_model_call_raw_arguments(rein_model_response_call(r, 1)),
                            "{\"tz\":\"UTC\"}");
        assert_int_equal(rein_model_call_status(rein_model_response_call(r, 1)),
                         REIN_MODEL_CALL_OK);
        assert_int_equal(rein_model_response_finish(r), REIN_FINISH_TOOL_CALLS);
        assert_true(rein_model_response_is_complete(r));
        assert_int_equal(rein_model_response_input_tokens(r), 20);
        assert_int_equal(rein_model_response_output_tokens(r), 7);
        assert_int_equal(rein_model_response_cached_tokens(r), 8);
        assert_int_equal(rein_model_response_reasoning_tokens(r), 3);
        /* The events streamed as the reply did: reasoning, text, two calls, usage, finish. */
        /* the reasoning item ("i") as it begins (its id, before its deltas) and whole as it
         * ends, before the text */
        /* a hosted tool's progress ("P", web_search_call.searching) is told as it came */
        assert_string_equal(col.order, "iritSDESDEPuF");
        assert_string_equal(col.args.ptr, "{\"city\":\"Oslo\"}{\"tz\":\"UTC\"}");
        /* The reasoning item and the response id go into the assistant message. */
        m = rein_model_response_message(r);
        items = json_object_get(m, "reasoning_items");
        assert_int_equal(json_array_size(items), 1);
        assert_string_equal(rein__json_str(json_array_get(items, 0), "id"), "rs_1");
        assert_string_equal(rein__json_str(json_array_get(items, 0), "encrypted_content"), "gAAA");
        assert_string_equal(rein__json_str(m, "response_id"), "resp_9");
        json_decref(m);
        rein_model_response_free(r);
        collected_release(&col);
    }
}

/* The model that answered, the reply's id and the input tokens read from and written to the
 * prompt cache, from every wire that reports them (gen_ai.response.model, gen_ai.response.id,
 * gen_ai.usage.cache_read.input_tokens and gen_ai.usage.cache_creation.input_tokens on the
 * chat span), whole and streamed byte by byte. Bedrock's Converse replies name neither model
 * nor id (test_bedrock.c). */
static void test_replies_name_their_model_and_id(void **state)
{
    static const struct {
        const char *format, *text, *model, *id;
        int64_t cached, written;
    } cases[] = {
        {"openai-json",
         "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"model\":\"gpt-4o-2024-08-06\","
         "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},"
         "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1,"
         "\"prompt_tokens_details\":{\"cached_tokens\":4}}}",
         "gpt-4o-2024-08-06", "chatcmpl-1", 4, -1},
        {"openai-sse",
         "data: "
         "{\"id\":\"chatcmpl-2\",\"model\":\"openai/gpt-5\\u002dmini\",\"choices\":[{\"index\":0,"
         "\"delta\":{\"content\":\"hi\"}}]}\n\n"
         "data: {\"id\":\"chatcmpl-2\",\"model\":\"other\",\"choices\":[{\"index\":0,\"delta\":{},"
         "\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
         "openai/gpt-5-mini", "chatcmpl-2", -1, -1},
        /* OpenRouter's usage chunk: cache reads and writes in prompt_tokens_details. */
        {"openai-sse",
         "data: {\"id\":\"gen-3\",\"model\":\"anthropic/claude-sonnet-4\",\"choices\":[{"
         "\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n"
         "data: {\"id\":\"gen-3\",\"model\":\"anthropic/claude-sonnet-4\",\"choices\":[],"
         "\"usage\":{\"prompt_tokens\":194,\"completion_tokens\":2,\"prompt_tokens_details\":{"
         "\"cached_tokens\":0,\"cache_write_tokens\":100}}}\n\ndata: [DONE]\n\n",
         "anthropic/claude-sonnet-4", "gen-3", 0, 100},
        {"anthropic-json",
         "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x-1\","
         "\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],\"stop_reason\":\"end_turn\","
         "\"usage\":{\"input_tokens\":3,\"cache_creation_input_tokens\":2,"
         "\"cache_read_input_tokens\":5,\"output_tokens\":1}}",
         "claude-x-1", "msg_1", 5, 2},
        {"anthropic-sse",
         "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\","
         "\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-y-2\",\"content\":[],"
         "\"usage\":{\"input_tokens\":1,\"cache_creation_input_tokens\":11,"
         "\"cache_read_input_tokens\":7,\"output_tokens\":1}}}\n\n"
         "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
         "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
         "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
         "\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n"
         "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
         "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
         "\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n"
         "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
         "claude-y-2", "msg_2", 7, 11},
        {"gemini-json",
         "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hi\"}],\"role\":\"model\"},"
         "\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":9,"
         "\"candidatesTokenCount\":1,\"cachedContentTokenCount\":3},"
         "\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"r-77\"}",
         "gemini-2.5-flash", "r-77", 3, -1},
        {"openai-responses-json",
         "{\"id\":\"resp_1\",\"object\":\"response\",\"model\":\"gpt-5-2025-08-07\","
         "\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"id\":\"m1\",\"role\":"
         "\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"hi\"}]}],"
         "\"usage\":{\"input_tokens\":9,\"input_tokens_details\":{\"cached_tokens\":2},"
         "\"output_tokens\":1}}",
         "gpt-5-2025-08-07", "resp_1", 2, -1},
        {"ollama-json",
         "{\"model\":\"llama3.2\",\"created_at\":\"2025-01-01T00:00:00Z\",\"message\":{\"role\":"
         "\"assistant\",\"content\":\"hi\"},\"done\":true,\"done_reason\":\"stop\"}",
         "llama3.2", NULL, -1, -1},
    };

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(cases); i++) {
        for (size_t chunk = 0; chunk <= 1; chunk++) {
            enum rein_wire_format fmt;
            rein_model_response *r;
            rein_error err;

            assert_rein_ok(rein_wire_format_parse(cases[i].format, &fmt), NULL);
            rein_error_clear(&err);
            r = decode_opts(fmt, cases[i].text, strlen(cases[i].text), chunk, NULL, NULL, &err);
            if (!r)
                fail_msg("%s: %s", cases[i].format, err.msg);
            assert_string_equal(rein_model_response_text(r), "hi");
            assert_string_equal(rein_model_response_model(r), cases[i].model);
            if (cases[i].id)
                assert_string_equal(rein_model_response_id(r), cases[i].id);
            else
                assert_null(rein_model_response_id(r));
            assert_int_equal(rein_model_response_cached_tokens(r), cases[i].cached);
            assert_int_equal(rein_model_response_cache_write_tokens(r), cases[i].written);
            rein_model_response_free(r);
        }
    }
}

/* The last "KEY": N in text (N >= 0), or -1 when KEY does not occur with a number. */
static int64_t last_count(const char *text, const char *key)
{
    int64_t v = -1;

    for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
        const char *q = p + strlen(key);
        while (*q == ' ' || *q == ':')
            q++;
        if (*q >= '0' && *q <= '9')
            v = strtoll(q, NULL, 10);
    }
    return v;
}

/* One shared recording (its expected file at path): the prompt-cache writes decoded, whole and
 * byte by byte, are the last count the reply reported, or -1 when it reported none. */
static void check_cache_writes(const char *path, void *ud)
{
    json_t *spec = rein_json_load_file(path, NULL);
    enum rein_wire_format fmt;
    struct rein_decoder_options opt;
    char sub[1024], *text;
    size_t len;
    int64_t want;

    assert_non_null(spec);
    assert_rein_ok(rein_wire_format_parse(json_string_value(json_object_get(spec, "format")), &fmt),
                   NULL);
    memset(&opt, 0, sizeof(opt));
    opt.payload_lines = json_is_true(json_object_get(spec, "jsonl"));
    snprintf(sub, sizeof(sub), "fixtures/%s", json_string_value(json_object_get(spec, "fixture")));
    text = test_read_file(test_shared_path(sub), &len);
    assert_non_null(text);
    want = last_count(text, "\"cache_creation_input_tokens\"");
    if (want < 0)
        want = last_count(text, "\"cache_write_tokens\"");
    *(int *)ud += want >= 0;
    for (size_t chunk = 0; chunk <= 1; chunk++) {
        rein_error err;
        rein_model_response *r;
        rein_error_clear(&err);
        r = decode_opts(fmt, text, len, chunk, &opt, NULL, &err);
        if (!r)
            continue; /* error bodies; test_fixtures_decode_to_hand_written_values */
        if (rein_model_response_cache_write_tokens(r) != want)
            fail_msg("%s (chunk %zu): cache writes %lld, want %lld", sub, chunk,
                     (long long)rein_model_response_cache_write_tokens(r), (long long)want);
        rein_model_response_free(r);
    }
    free(text);
    json_decref(spec);
}

/* The real recordings that report prompt-cache writes (Anthropic's usage carries
 * cache_creation_input_tokens, 0 in all of them) and those that do not. */
static void test_recordings_report_cache_writes(void **state)
{
    int with = 0;

    (void)state;
    if (!test_require_shared("fixtures/SOURCES.md"))
        return;
    each_expected("providers", check_cache_writes, &with);
    assert_true(with >= 8); /* the Anthropic recordings with usage */
}

static void test_responses_endings_and_errors(void **state)
{
    rein_model_response *r;
    rein_error err;
    const json_t *e;

    (void)state;
    /* Cut by max_output_tokens: the reply ended, short. */
    r = rs_decode(
        RS_CREATED RS("response.output_text.delta", ",\"output_index\":0,\"delta\":\"Hal\"")
            RS_DONE("incomplete", ",\"incomplete_details\":{\"reason\":"
                                  "\"max_output_tokens\"}"),
        0, NULL, &err);
    assert_non_null(r);
    assert_int_equal(rein_model_response_finish(r), REIN_FINISH_LENGTH);
    assert_true(rein_model_response_is_complete(r));
    rein_model_response_free(r);
    /* A refusal. */
    r = rs_decode(RS_CREATED RS("response.refusal.delta", ",\"output_index\":0,\"delta\":\"No.\"")
                      RS_DONE("completed", ""),
                  1, NULL, &err);
    assert_non_null(r);
    assert_string_equal(rein_model_response_refusal(r), "No.");
    rein_model_response_free(r);
    /* The documented error event (fields at the top), then response.failed. */
    r = rs_decode(RS_CREATED RS("error", ",\"code\":\"server_error\",\"message\":\"boom\","
                                         "\"param\":null,\"sequence_number\":3")
                      RS("response.failed", ",\"response\":{\"id\":\"resp_9\",\"status\":"
                                            "\"failed\",\"error\":{\"code\":\"other\","
                                            "\"message\":\"later\"}}"),
                  0, NULL, &err);
    assert_non_null(r);
    e = rein_model_response_error(r);
    assert_string_equal(rein__json_str(e, "code"), "server_error");
    assert_string_equal(rein__json_str(e, "message"), "boom");
    assert_false(rein_model_response_is_complete(r));
    rein_model_response_free(r);
    /* response.failed alone, with no error object: still an error. */
    r = rs_decode(RS_CREATED RS("response.failed", ",\"response\":{\"status\":\"failed\","
                                                   "\"error\":null}"),
                  0, NULL, &err);
    assert_non_null(r);
    assert_non_null(rein_model_response_error(r));
    rein_model_response_free(r);
    /* A stream cut before response.completed is incomplete, its open call too. */
    r = rs_decode(RS_CREATED RS("response.output_item.added",
                                ",\"output_index\":0,\"item\":{\"type\":\"function_call\","
                                "\"call_id\":\"c\",\"name\":\"f\"}")
                      RS("response.function_call_arguments.delta",
                         ",\"output_index\":0,\"delta\":\"{\\\"a\\\":\"") "data: {\"type\":\"resp",
                  0, NULL, &err);
    assert_non_null(r);
    assert_false(rein_model_response_is_complete(r));
    assert_int_equal(rein_model_call_status(rein_model_response_call(r, 0)),
                     REIN_MODEL_CALL_INCOMPLETE);
    rein_model_response_free(r);
    /* Another wire's stream is not taken for this one. */
    r = rs_decode("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n", 0, NULL,
                  &err);
    assert_null(r);
    assert_non_null(strstr(err.msg, "openai-responses-sse"));
}

#define MORE "[{\"type\":\"web_search\"}]"

/* A hosted tool's item (it ran at OpenAI) is kept whole in its place and told as an
 * output_item event, and the answer's citations as annotations; the item goes back with the
 * history before the message, and the hosted tools a caller adds
 * (rein_model_request_set_more_tools) follow the request's own. */
static void test_responses_hosted_tool_items(void **state)
{
    static const char ws[] = "{\"id\":\"ws_1\",\"type\":\"web_search_call\",\"status\":"
                             "\"completed\",\"action\":{\"type\":\"search\",\"query\":\"oslo\"}}";
    static const char stream[] =
        RS_CREATED RS("response.output_item.added", ",\"output_index\":0,\"item\":{\"id\":\"ws_1\","
                                                    "\"type\":\"web_search_call\"}")
            RS("response.web_search_call.completed", ",\"output_index\":0")
                RS("response.output_item.done", ",\"output_index\":0,\"item\":{\"id\":\"ws_1\","
                                                "\"type\":\"web_search_call\",\"status\":"
                                                "\"completed\",\"action\":{\"type\":\"search\","
                                                "\"query\":\"oslo\"}}")
                    RS("response.output_text.delta", ",\"output_index\":1,\"delta\":\"Mild.\"")
                        RS("response.output_text.annotation.added",
                           ",\"output_index\":1,\"annotation\":{\"type\":\"url_citation\","
                           "\"start_index\":0,\"end_index\":5,\"url\":\"https://w.example\"}")
                            RS_DONE("completed", "");
    rein_provider *p = provider_for("openai-responses", "http://127.0.0.1:9/v1");
    rein_model_request *req = rein_model_request_new();
    rein_history *h = rein_history_new();
    json_t *want = json_loads(ws, 0, NULL), *m, *body, *tools, *user;
    struct collected col;
    rein_model_response *r;
    rein_error err;
    char *text;

    (void)state;
    assert_non_null(want);
    collected_init(&col);
    r = rs_decode(stream, 5, &col, &err);
    if (!r)
        fail_msg("%s", err.msg);
    /* the item's added event and its progress ("P"), then the item whole ("o") */
    assert_string_equal(col.order, "PotauF");
    /* the citation in the neutral (chat completions) shape: its members nested */
    assert_string_equal(
        rein__json_str(
            json_object_get(json_array_get(rein_model_response_annotations(r), 0), "url_citation"),
            "url"),
        "https://w.example");
    m = rein_model_response_message(r);
    assert_true(json_equal(json_array_get(json_object_get(m, "reasoning_items"), 0), want));
    rein_model_response_free(r);
    collected_release(&col);

    /* back with the history, before the message's text; more tools after the request's own */
    /* append_shared takes a reference of its own */
    user = json_pack("{s:s, s:s}", "role", "user", "content", "Weather in Oslo?");
    assert_rein_ok(rein_history_append_shared(h, user, NULL), NULL);
    json_decref(user);
    assert_rein_ok(rein_history_append(h, m, NULL), NULL);
    json_decref(m);
    assert_rein_ok(rein_model_request_add_tool(req, "weather", NULL, NULL), NULL);
    assert_int_equal(rein_model_request_set_more_tools(req, "openai-responses", "{}", 2),
                     REIN_EINVAL);
    assert_rein_ok(
        rein_model_request_set_more_tools(req, "openai-responses", MORE, sizeof(MORE) - 1), NULL);
    text = body_for(p, req, h);
    body = rein_json_parse(text, strlen(text), 0, NULL);
    assert_non_null(body);
    assert_true(json_equal(json_array_get(json_object_get(body, "input"), 1), want));
    assert_string_equal(rein__json_str(json_array_get(json_object_get(body, "input"), 2), "role"),
                        "assistant");
    tools = json_object_get(body, "tools");
    assert_int_equal(json_array_size(tools), 2);
    assert_string_equal(rein__json_str(json_array_get(tools, 0), "name"), "weather");
    assert_string_equal(rein__json_str(json_array_get(tools, 1), "type"), "web_search");
    json_decref(body);
    rein_free(text);
    rein_model_request_free(req);

    /* more tools alone; and for another wire, none */
    req = rein_model_request_new();
    assert_rein_ok(
        rein_model_request_set_more_tools(req, "openai-responses", MORE, sizeof(MORE) - 1), NULL);
    text = body_for(p, req, h);
    body = rein_json_parse(text, strlen(text), 0, NULL);
    assert_int_equal(json_array_size(json_object_get(body, "tools")), 1);
    json_decref(body);
    rein_free(text);
    assert_rein_ok(rein_model_request_set_more_tools(req, "anthropic", MORE, sizeof(MORE) - 1),
                   NULL);
    text = body_for(p, req, h);
    body = rein_json_parse(text, strlen(text), 0, NULL);
    assert_null(json_object_get(body, "tools"));
    json_decref(body);
    rein_free(text);
    rein_model_request_free(req);
    rein_history_free(h);
    rein_provider_free(p);
    json_decref(want);
}

static void test_responses_encodes_the_history(void **state)
{
    rein_provider *p = provider_for("openai-responses", "http://127.0.0.1:9/v1");
    rein_model_request *req = rein_model_request_new();
    rein_history *h = sample_history();
    json_t *asst, *body, *in, *tools, *closed, *open;
    char *text;

    (void)state;
    /* The sample's assistant turn with reasoning items: one with its encrypted content, one
     * without (a stored one, which is not sent back). */
    asst = json_pack("{s:s, s:s, s:[{s:s, s:s, s:[], s:s}, {s:s, s:s, s:[]}], s:[{s:s, s:s, "
                     "s:s}]}",
                     "role", "assistant", "content", "Checking.", "reasoning_items", "type",
                     "reasoning", "id", "rs_1", "summary", "encrypted_content", "gAAA", "type",
                     "reasoning", "id", "rs_2", "summary", "tool_calls", "id", "c3", "name",
                     "weather", "arguments", "{}");
    assert_rein_ok(rein_history_append(h, asst, NULL), NULL);
    json_decref(asst);
    assert_rein_ok(rein_history_add_tool_result(h, "c3", "weather", "{\"t\":1}", false), NULL);
    closed = json_pack("{s:s, s:{s:{s:s}}, s:[s], s:b}", "type", "object", "properties", "city",
                       "type", "string", "required", "city", "additionalProperties", 0);
    open = json_pack("{s:s, s:{s:{s:s}}}", "type", "object", "properties", "q", "type", "string");
    assert_rein_ok(rein_model_request_add_tool(req, "weather", "Weather", closed), NULL);
    assert_rein_ok(rein_model_request_add_tool(req, "lookup", NULL, open), NULL);
    json_decref(closed);
    json_decref(open);
    rein_model_request_set_max_tokens(req, 100);
    assert_rein_ok(rein_model_request_set_model(req, "gpt-5-mini"), NULL);
    text = body_for(p, req, h);
    body = rein_json_parse(text, strlen(text), 0, NULL);
    assert_non_null(body);
    in = json_object_get(body, "input");
    /* system, user, assistant(2 calls), 2 outputs, reasoning rs_1, text, call, output */
    assert_int_equal(json_array_size(in), 10);
    assert_string_equal(rein__json_str(json_array_get(in, 0), "role"), "system");
    assert_string_equal(rein__json_str(json_array_get(in, 1), "content"),
                        "Weather in Oslo and Bergen?");
    assert_string_equal(rein__json_str(json_array_get(in, 2), "type"), "function_call");
    assert_string_equal(rein__json_str(json_array_get(in, 2), "call_id"), "c1");
    assert_string_equal(rein__json_str(json_array_get(in, 2), "arguments"),
                        "{\"city\":\"Oslo\",\"n\":1.50}");
    assert_string_equal(rein__json_str(json_array_get(in, 3), "arguments"), "{}");
    assert_string_equal(rein__json_str(json_array_get(in, 4), "type"), "function_call_output");
    assert_string_equal(rein__json_str(json_array_get(in, 4), "output"), "{\"t\":3}");
    assert_string_equal(rein__json_str(json_array_get(in, 6), "type"), "reasoning");
    assert_string_equal(rein__json_str(json_array_get(in, 6), "encrypted_content"), "gAAA");
    assert_string_equal(rein__json_str(json_array_get(in, 7), "content"), "Checking.");
    assert_string_equal(rein__json_str(json_array_get(in, 8), "call_id"), "c3");
    assert_string_equal(rein__json_str(json_array_get(in, 9), "call_id"), "c3");
    tools = json_object_get(body, "tools");
    assert_string_equal(rein__json_str(json_array_get(tools, 0), "name"), "weather");
    assert_true(json_is_true(json_object_get(json_array_get(tools, 0), "strict")));
    assert_true(json_is_false(json_object_get(json_array_get(tools, 1), "strict")));
    assert_int_equal(json_integer_value(json_object_get(body, "max_output_tokens")), 100);
    assert_true(json_is_false(json_object_get(body, "store")));
    assert_string_equal(json_string_value(json_array_get(json_object_get(body, "include"), 0)),
                        "reasoning.encrypted_content");
    assert_null(json_object_get(body, "messages"));
    assert_null(json_object_get(body, "previous_response_id"));
    json_decref(body);
    rein_free(text);
    rein_model_request_free(req);
    rein_history_free(h);
    rein_provider_free(p);
}

/* previous_response_id: the response is stored, and only what follows the last stored
 * response goes out. */
static void test_responses_previous_response_id(void **state)
{
    rein_provider_config *cfg = rein_provider_config_new();
    rein_model_request *req = rein_model_request_new();
    rein_history *h = rein_history_new();
    rein_provider *p;
    rein_error err;
    json_t *asst, *body;
    char *text;

    (void)state;
    assert_rein_ok(rein_provider_config_set(cfg, "provider", "openai-responses", NULL), NULL);
    assert_rein_ok(rein_provider_config_set(cfg, "model", "gpt-4.1", NULL), NULL);
    assert_rein_ok(rein_provider_config_set(cfg, "base_url", "http://127.0.0.1:9/v1", NULL), NULL);
    assert_rein_ok(rein_provider_config_set(cfg, "previous_response_id", "true", NULL), NULL);
    assert_int_equal(rein_provider_config_set(cfg, "previous_response_id", "maybe", &err),
                     REIN_EINVAL);
    p = rein_provider_new(cfg, &err);
    assert_non_null(p);
    assert_rein_ok(rein_history_add_user(h, "first"), NULL);
    asst = json_pack("{s:s, s:s, s:s}", "role", "assistant", "content", "one", "response_id",
                     "resp_1");
    assert_rein_ok(rein_history_append(h, asst, NULL), NULL);
    json_decref(asst);
    assert_rein_ok(rein_history_add_user(h, "second"), NULL);
    text = body_for(p, req, h);
    body = rein_json_parse(text, strlen(text), 0, NULL);
    assert_string_equal(rein__json_str(body, "previous_response_id"), "resp_1");
    assert_true(json_is_true(json_object_get(body, "store")));
    assert_int_equal(json_array_size(json_object_get(body, "input")), 1);
    assert_string_equal(
        rein__json_str(json_array_get(json_object_get(body, "input"), 0), "content"), "second");
    json_decref(body);
    rein_free(text);
    rein_provider_free(p);
    rein_model_request_free(req);
    rein_history_free(h);
    rein_provider_config_free(cfg);
}

/* Azure OpenAI: the deployment's address, api-version, and the key's header. */
static void test_azure_addresses_and_keys(void **state)
{
    static const struct {
        const char *preset, *base, *deployment, *version, *want;
    } cases[] = {
        {"azure", "https://res.openai.azure.com/", "gpt4o-prod", NULL,
         "https://res.openai.azure.com/openai/deployments/gpt4o-prod/chat/completions"
         "?api-version=2024-10-21"},
        {"azure", "https://res.openai.azure.com", NULL, "2025-01-01-preview",
         "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions"
         "?api-version=2025-01-01-preview"},
        {"azure-responses", "https://res.openai.azure.com", NULL, NULL,
         "https://res.openai.azure.com/openai/v1/responses"},
        {"azure-responses", "https://res.openai.azure.com", NULL, "preview",
         "https://res.openai.azure.com/openai/v1/responses?api-version=preview"},
        {"azure", "https://res.openai.azure.com/openai/v1", "dep1", NULL,
         "https://res.openai.azure.com/openai/v1/chat/completions"},
    };
    rein_error err;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(cases); i++) {
        rein_provider_config *cfg = rein_provider_config_new();
        rein_provider *p;
        assert_rein_ok(rein_provider_config_set(cfg, "provider", cases[i].preset, NULL), NULL);
        assert_rein_ok(rein_provider_config_set(cfg, "model", "gpt-4o", NULL), NULL);
        assert_rein_ok(rein_provider_config_set(cfg, "base_url", cases[i].base, NULL), NULL);
        assert_rein_ok(rein_provider_config_set_api_key(cfg, "az-key-1234"), NULL);
        if (cases[i].deployment)
            assert_rein_ok(rein_provider_config_set(cfg, "deployment", cases[i].deployment, NULL),
                           NULL);
        if (cases[i].version)
            assert_rein_ok(rein_provider_config_set(cfg, "api_version", cases[i].version, NULL),
                           NULL);
        p = rein_provider_new(cfg, &err);
        if (!p)
            fail_msg("%s: %s", cases[i].preset, err.msg);
        assert_string_equal(rein_provider_endpoint(p), cases[i].want);
        if (cases[i].deployment && strstr(cases[i].base, "/openai/v1"))
            assert_string_equal(rein_provider_model(p), cases[i].deployment);
        rein_provider_free(p);
        rein_provider_config_free(cfg);
    }
    /* Without a base URL, and with a deployment name that cannot go into a URL. */
    {
        rein_provider_config *cfg = rein_provider_config_new();
        assert_rein_ok(rein_provider_config_set(cfg, "provider", "azure", NULL), NULL);
        assert_rein_ok(rein_provider_config_set(cfg, "model", "gpt-4o", NULL), NULL);
        assert_rein_ok(rein_provider_config_set_api_key(cfg, "k"), NULL);
        assert_null(rein_provider_new(cfg, &err));
        assert_non_null(strstr(err.msg, "resource endpoint"));
        assert_rein_ok(
            rein_provider_config_set(cfg, "base_url", "https://r.openai.azure.com", NULL), NULL);
        assert_rein_ok(rein_provider_config_set(cfg, "deployment", "a/b", NULL), NULL);
        assert_null(rein_provider_new(cfg, &err));
        assert_non_null(strstr(err.msg, "deployment name"));
        assert_int_equal(rein_provider_config_set(cfg, "auth", "basic", &err), REIN_EINVAL);
        rein_provider_config_free(cfg);
    }
}

/* ---------------------------------------------------------------------------------------
 * Configuration and capabilities
 */

static void test_presets_and_base_urls(void **state)
{
    rein_provider_config *cfg = rein_provider_config_new();
    rein_provider *p;
    rein_error err;

    (void)state;
    assert_rein_ok(rein_provider_config_set(cfg, "provider", "dashscope", NULL), NULL);
    assert_rein_ok(rein_provider_config_set(cfg, "model", "qwen-plus", NULL), NULL);
    assert_rein_ok(rein_provider_config_set(cfg, "api_key", "sk-abcdef", NULL), NULL);
    p = rein_provider_new(cfg, &err);
    assert_non_null(p);
    assert_string_equal(rein_provider_endpoint(p),
                        "https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions");
    assert_string_equal(rein_provider_wire(p), "openai");
    rein_provider_free(p);

    /* A base URL that already names the endpoint is not extended twice. */
    assert_rein_ok(rein_provider_config_set(cfg, "provider", "vllm", NULL), NULL);
    assert_rein_ok(
        rein_provider_config_set(cfg, "base_url", "http://h:1/v1/chat/completions/", NULL), NULL);
    p = rein_provider_new(cfg, &err);
    assert_string_equal(rein_provider_endpoint(p), "http://h:1/v1/chat/completions");
    rein_provider_free(p);

    assert_rein_ok(rein_provider_config_set(cfg, "provider", "openai-compatible", NULL), NULL);
    assert_null(rein_provider_new(cfg, &err));
    assert_int_equal(err.code, REIN_EINVAL);
    assert_non_null(strstr(err.msg, "base URL"));

    assert_int_equal(rein_provider_config_set(cfg, "provider", "gpt", &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "unknown provider 'gpt'"));
    assert_int_equal(rein_provider_config_set(cfg, "idle_timeout_ms", "soon", &err), REIN_EINVAL);
    assert_int_equal(rein_provider_config_set(cfg, "colour", "blue", &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "colour"));

    /* The rules provider needs no model, key or address. */
    assert_rein_ok(rein_provider_config_set(cfg, "provider", "rules", NULL), NULL);
    p = rein_provider_new(cfg, &err);
    assert_non_null(p);
    assert_string_equal(rein_provider_wire(p), "rules");
    rein_provider_free(p);
    rein_provider_config_free(cfg);
}

static void test_keys_come_from_the_environment_and_never_show(void **state)
{
    rein_provider_config *cfg = rein_provider_config_new();
    rein_provider *p;
    rein_error err;

    (void)state;
    unsetenv("ANTHROPIC_API_KEY");
    setenv("REIN_PROVIDER", "anthropic", 1);
    setenv("REIN_MODEL", "claude-sonnet-4-5", 1);
    assert_rein_ok(rein_provider_config_from_env(cfg, &err), &err);
    p = rein_provider_new(cfg, &err);
    assert_null(p);
    assert_non_null(strstr(err.msg, "ANTHROPIC_API_KEY"));
    setenv("ANTHROPIC_API_KEY", "sk-ant-very-secret", 1);
    p = rein_provider_new(cfg, &err);
    assert_non_null(p);
    assert_string_equal(rein_provider_model(p), "claude-sonnet-4-5");
    assert_string_equal(rein_provider_endpoint(p), "https://api.anthropic.com/v1/messages");
    rein_provider_free(p);
    /* a reasoning effort the environment names, or refuses by name */
    setenv("REIN_REASONING_EFFORT", "extreme", 1);
    assert_int_equal(rein_provider_config_from_env(cfg, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "REIN_REASONING_EFFORT"));
    setenv("REIN_REASONING_EFFORT", "high", 1);
    assert_rein_ok(rein_provider_config_from_env(cfg, &err), &err);
    p = rein_provider_new(cfg, &err);
    assert_non_null(p);
    rein_provider_free(p);
    unsetenv("REIN_REASONING_EFFORT");
    unsetenv("REIN_PROVIDER");
    unsetenv("REIN_MODEL");
    unsetenv("ANTHROPIC_API_KEY");
    rein_provider_config_free(cfg);
}

/* A configuration that cannot be used is refused with the file, line and column of the
 * problem, never half applied in silence. */
static void test_config_refusals_name_the_place(void **state)
{
    static const struct {
        const char *text, *want;
        int line, column;
    } cases[] = {
        {"{\"provider\": \"openai\",\n  \"modle\": \"x\"}",
         "unknown key \"modle\" (did you mean \"model\"?)", 2, 3},
        {"{\"provider\": {\"provider\": \"vllm\",\n \"max_retrys\": 3}}",
         "did you mean \"max_retries\"", 2, 2},
        {"{\"provider\": {\"model\": \"m\"}, \"model\": \"n\"}",
         "go inside the \"provider\" object", 1, 30},
        {"{\"provider\": {\"model\": \"m\"}, \"mcpservers\": {}}", "did you mean \"mcpServers\"", 1,
         30},
        {"{\"provider\": 7}", "must be a provider name or an object", 1, 2},
        {"{\"provider\": \"nope\"}", "unknown provider 'nope'", 1, 2},
        {"{\"capabilities\": {\"gpt\": {\"toolz\": true}}}",
         "unknown key \"toolz\" in capabilities", 1, 27},
        {"{\"capabilities\": {\"gpt\": {\"tools\": 1}}}", "must be true or false", 1, 27},
        {"[1, 2]", "must be a JSON object, got array", 1, 1},
        {"{\"model\": \"caf\xe9\"}", "not valid UTF-8 at byte 15", 1, 15},
        {"{\"model\": ", "", 1, 10},
        {"{\"model\": \"a\\u0000b\"}", "must not contain \\u0000", 1, 2},
    };
    rein_provider_config *cfg = rein_provider_config_new();
    rein_error err;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char head[64];
        rein_error_clear(&err);
        assert_int_not_equal(rein_provider_config_load_text(
                                 cfg, cases[i].text, strlen(cases[i].text), "rein.json", &err),
                             REIN_OK);
        snprintf(head, sizeof(head), "rein.json:%d:%d: ", cases[i].line, cases[i].column);
        if (strncmp(err.msg, head, strlen(head)) != 0 || !strstr(err.msg, cases[i].want))
            fail_msg("case %zu: got \"%s\", want \"%s...%s\"", i, err.msg, head, cases[i].want);
        assert_int_equal(err.line, cases[i].line);
        assert_int_equal(err.column, cases[i].column);
    }
    /* What belongs to others, and the two keys editors add, pass. */
    rein_error_clear(&err);
    {
        const char *fine = "{\"$schema\": \"x\", \"mcpServers\": {}, \"provider\": \"rules\"}";
        assert_rein_ok(rein_provider_config_load_text(cfg, fine, strlen(fine), "rein.json", &err),
                       &err);
    }
    rein_error_clear(&err);
    assert_int_equal(rein_provider_config_set(cfg, "modle", "x", &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "did you mean 'model'"));
    rein_provider_config_free(cfg);
}

static void test_config_file_and_capabilities(void **state)
{
    char *dir = test_tmpdir();
    char *path = test_write_file(dir, "rein.json",
                                 "{\"provider\": {\"provider\": \"llamacpp\", \"model\": "
                                 "\"my-local-7b\", \"max_retries\": 5, \"text_calls\": \"report\","
                                 " \"capabilities\": {\"my-local\": {\"parallel_tools\": true, "
                                 "\"context_window\": 32768}}}}");
    char *bad = test_write_file(dir, "bad.json", "{\"provider\": \"ollama\",\n \"model\": 3.5}");
    char *broken = test_write_file(dir, "broken.json", "{\"provider\": ");
    rein_provider_config *cfg = rein_provider_config_new();
    struct rein_model_caps caps;
    rein_provider *p;
    rein_error err;

    (void)state;
    assert_rein_ok(rein_provider_config_load_file(cfg, path, &err), &err);
    p = rein_provider_new(cfg, &err);
    assert_non_null(p);
    assert_string_equal(rein_provider_endpoint(p), "http://localhost:8080/v1/chat/completions");
    rein_provider_caps(p, &caps);
    assert_true(caps.parallel_tools);
    assert_int_equal(caps.context_window, 32768);
    rein_provider_free(p);
    assert_int_equal(rein_provider_config_load_file(cfg, bad, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "model"));
    assert_int_equal(rein_provider_config_load_file(cfg, broken, &err), REIN_EPARSE);
    assert_non_null(strstr(err.msg, "broken.json"));
    rein_provider_config_free(cfg);

    rein_model_caps_lookup("gpt-4o-mini", &caps);
    assert_true(caps.confidence && caps.parallel_tools);
    assert_int_equal(caps.context_window, 128000);
    rein_model_caps_lookup("gpt-4", &caps);
    assert_int_equal(caps.context_window, 8192);
    rein_model_caps_lookup("claude-3-5-sonnet-latest", &caps);
    assert_true(caps.confidence);
    rein_model_caps_lookup("Qwen/Qwen3-8B", &caps);
    assert_int_equal(caps.context_window, 131072);
    assert_false(caps.confidence);
    rein_model_caps_lookup("something-new", &caps);
    assert_true(caps.tools && !caps.parallel_tools && !caps.confidence);
    test_rmtree(dir);
    free(dir);
    free(path);
    free(bad);
    free(broken);
}

/* ---------------------------------------------------------------------------------------
 * Allocation failure at every step
 */

static void torture_decode(void *arg)
{
    const char *text = arg;
    rein_provider_decoder *d = rein_provider_decoder_new(REIN_WIRE_OPENAI_SSE, NULL, NULL, NULL);
    rein_model_response *r = NULL;
    json_t *j;

    if (!d)
        return;
    if (rein_provider_decoder_feed(d, text, strlen(text), NULL) == REIN_OK &&
        rein_provider_decoder_finish(d, &r, NULL) == REIN_OK) {
        j = rein_model_response_to_json(r);
        json_decref(j);
        j = rein_model_response_message(r);
        json_decref(j);
    }
    rein_model_response_free(r);
    rein_provider_decoder_free(d);
}

/* A caller's header line is checked: a token for its name, no line break in its value, and
 * none of the headers the provider writes itself. */
static void test_request_header_lines(void **state)
{
    rein_model_request *req = rein_model_request_new();

    (void)state;
    assert_rein_ok(rein_model_request_add_header(req, "anthropic-beta", "a,b"), NULL);
    assert_rein_ok(rein_model_request_add_header(req, "X-Custom", ""), NULL);
    assert_int_equal(rein_model_request_add_header(req, "Authorization", "Bearer x"), REIN_EINVAL);
    assert_int_equal(rein_model_request_add_header(req, "x-api-key", "k"), REIN_EINVAL);
    assert_int_equal(rein_model_request_add_header(req, "Anthropic-Version", "1"), REIN_EINVAL);
    assert_int_equal(rein_model_request_add_header(req, "bad name", "v"), REIN_EINVAL);
    assert_int_equal(rein_model_request_add_header(req, "x:y", "v"), REIN_EINVAL);
    assert_int_equal(rein_model_request_add_header(req, "", "v"), REIN_EINVAL);
    assert_int_equal(rein_model_request_add_header(req, "x-a", "v\r\nHost: evil"), REIN_EINVAL);
    assert_int_equal(rein_model_request_add_header(req, "x-a", "v\nb"), REIN_EINVAL);
    rein_model_request_free(req);
}

static void test_decoding_survives_allocation_failure(void **state)
{
    static const char stream[] =
        CHUNK("{\"content\":\"<think>a</think>Hi "
              "<tool_call>{\\\"name\\\":\\\"f\\\",\\\"arguments\\\":{}}</tool_call>\"}")
            CALL0("call_1", "get") ARGS(0, "{\\\"a\\\":\\\"\\\\u00e9\\\"}")
                FINISH("tool_calls") "data: "
                                     "{\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_"
                                     "tokens\":2}}\n\n"
                                     "data: [DONE]\n\n";

    (void)state;
    test_alloc_torture(torture_decode, (void *)stream);
}

static void torture_history(void *arg)
{
    rein_provider *p = arg;
    rein_history *h = rein_history_new();
    rein_model_request *req = rein_model_request_new();
    struct rein__body b;

    rein__body_init(&b);
    if (h && req && rein_history_add_user(h, "hi") == REIN_OK &&
        rein_history_add_tool_result(h, "c", "n", "r", false) == REIN_OK &&
        rein_model_request_add_tool(req, "f", "d", NULL) == REIN_OK &&
        p->wire->encode_tools(p, req, &req->tools_enc) == REIN_OK) {
        req->tools_valid = true;
        req->tools_json = req->tools_enc.ptr;
        req->tools_len = req->tools_enc.len;
        (void)(p->wire->build_body(p, req, h, &b, NULL) == REIN_OK);
    }
    rein__body_release(&b);
    rein_model_request_free(req);
    rein_history_free(h);
}

static void test_encoding_survives_allocation_failure(void **state)
{
    rein_provider *p = provider_for("anthropic", "http://127.0.0.1:9");

    (void)state;
    test_alloc_torture(torture_history, p);
    rein_provider_free(p);
}

/* ---------------------------------------------------------------------------------------
 * The upstream's response headers (headers.c, decision 0086)
 */

static void offer(struct rein_model_headers *h, const char *line)
{
    static const char *const keys[] = {"sk-secret-key", NULL};

    assert_rein_ok(rein__headers_offer(h, line, strlen(line), keys, 2), NULL);
}

/* Only the listed names are kept, lower-cased, values trimmed; no allocation for the rest. */
static void test_kept_headers_are_the_listed_ones(void **state)
{
    static const char *const refused[] = {"content-length: 12\r\n",
                                          "Content-Encoding: gzip\r\n",
                                          "Connection: keep-alive\r\n",
                                          "Transfer-Encoding: chunked\r\n",
                                          "set-cookie: a=b\r\n",
                                          "Authorization: Bearer x\r\n",
                                          "request-idx: 1\r\n",
                                          "x-request-ids: 1\r\n",
                                          "x-ratelimit-: 1\r\n",
                                          "anthropic-ratelimit-a b: 1\r\n",
                                          "x-ratelimit-a_b: 1\r\n",
                                          "no colon here\r\n",
                                          "x-ratelimit-echo: Bearer sk-secret-key\r\n",
                                          "x-ratelimit-ctl: a\x01"
                                          "b\r\n",
                                          "x-ratelimit-utf8: caf\xc3\xa9\r\n",
                                          "\r\n"};
    struct rein_model_headers h = {0};
    const char *name, *value;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(refused); i++)
        offer(&h, refused[i]);
    assert_int_equal(rein_model_headers_count(&h), 0);
    assert_null(h.buf); /* nothing kept, nothing allocated */
    offer(&h, "X-Request-Id:   req_1 \r\n");
    offer(&h, "x-RateLimit-Remaining-Tokens: 29000\r\n");
    offer(&h, "anthropic-ratelimit-unified-5h-utilization:0.25\r\n");
    offer(&h, "openai-processing-ms: 40\r\n");
    offer(&h, "request-id: req_2\r\n");
    offer(&h, "x-ratelimit-empty:\r\n");
    assert_int_equal(rein_model_headers_count(&h), 6);
    assert_true(rein_model_headers_at(&h, 0, &name, &value));
    assert_string_equal(name, "x-request-id");
    assert_string_equal(value, "req_1");
    assert_true(rein_model_headers_at(&h, 1, &name, &value));
    assert_string_equal(name, "x-ratelimit-remaining-tokens");
    assert_string_equal(rein_model_headers_get(&h, "X-RATELIMIT-REMAINING-TOKENS"), "29000");
    assert_string_equal(rein_model_headers_get(&h, "anthropic-ratelimit-unified-5h-utilization"),
                        "0.25");
    assert_string_equal(rein_model_headers_get(&h, "x-ratelimit-empty"), "");
    assert_false(rein_model_headers_at(&h, 6, &name, &value));
    assert_null(rein_model_headers_get(&h, "set-cookie"));
    assert_int_equal(rein_model_headers_count(NULL), 0);
    rein__headers_clear(&h); /* a new response (after 100 Continue) starts over */
    assert_int_equal(rein_model_headers_count(&h), 0);
    assert_null(rein_model_headers_get(&h, "request-id"));
    rein__headers_release(&h);
}

/* An upstream cannot make rein keep more than the bounds: count, value size, total bytes. */
static void test_kept_headers_are_bounded(void **state)
{
    struct rein_model_headers h = {0};
    char line[400], big[REIN__HEADER_VALUE_MAX + 2];

    (void)state;
    for (int i = 0; i < REIN_MODEL_HEADERS_MAX + 20; i++) {
        snprintf(line, sizeof(line), "x-ratelimit-n%d: %d\r\n", i, i);
        offer(&h, line);
    }
    assert_int_equal(rein_model_headers_count(&h), REIN_MODEL_HEADERS_MAX);
    assert_string_equal(rein_model_headers_get(&h, "x-ratelimit-n47"), "47");
    assert_null(rein_model_headers_get(&h, "x-ratelimit-n48"));
    rein__headers_release(&h);

    memset(big, 'v', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    snprintf(line, sizeof(line), "x-ratelimit-big: %s\r\n", big);
    offer(&h, line); /* one byte past the value bound */
    assert_int_equal(rein_model_headers_count(&h), 0);
    big[sizeof(big) - 2] = '\0';
    for (int i = 0; i < 40; i++) {
        snprintf(line, sizeof(line), "x-ratelimit-b%02d: %s\r\n", i, big);
        offer(&h, line);
    }
    /* each takes its 15-byte name, 256-byte value and two NULs: 15 fit in the 4 KiB */
    assert_int_equal(rein_model_headers_count(&h), REIN__HEADERS_BYTES / (15 + 256 + 2));
    assert_true(h.len <= REIN__HEADERS_BYTES);
    rein__headers_release(&h);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fixtures_decode_to_hand_written_values),
    cmocka_unit_test(test_fixtures_decode_the_same_byte_by_byte),
    cmocka_unit_test(test_fixtures_decode_the_same_in_odd_pieces),
    cmocka_unit_test(test_recordings_decode_the_same_in_every_small_piece),
    cmocka_unit_test(test_fixture_notes_say_what_was_assembled),
    cmocka_unit_test(test_sse_reader_follows_the_spec_and_its_variants),
    cmocka_unit_test(test_sse_reader_handles_lone_cr_and_payload_lines),
    cmocka_unit_test(test_sse_reader_bounds_an_event),
    cmocka_unit_test(test_sse_reader_gathers_a_split_line_once),
    cmocka_unit_test(test_sse_reader_bounds_a_gathered_event),
    cmocka_unit_test(test_unescape_joins_surrogates_across_deltas),
    cmocka_unit_test(test_unescape_matches_the_plain_version),
    cmocka_unit_test(test_tool_names_are_checked),
    cmocka_unit_test(test_invalid_names_are_kept_and_marked),
    cmocka_unit_test(test_cut_stream_marks_the_call_incomplete),
    cmocka_unit_test(test_bad_json_and_non_objects_are_invalid_json),
    cmocka_unit_test(test_zero_argument_calls_mean_an_empty_object),
    cmocka_unit_test(test_ollama_index_zero_quirk_and_unicode_in_arguments),
    cmocka_unit_test(test_calls_without_index_or_id),
    cmocka_unit_test(test_decoder_errors_say_where),
    cmocka_unit_test(test_events_follow_the_stream),
    cmocka_unit_test(test_logprobs_and_annotations_are_kept),
    cmocka_unit_test(test_anthropic_text_blocks_keep_their_citations),
    cmocka_unit_test(test_text_events_hold_back_call_markup),
    cmocka_unit_test(test_text_events_after_a_gap_and_a_lone_half),
    cmocka_unit_test(test_text_calls_in_every_known_form),
    cmocka_unit_test(test_text_calls_after_near_misses),
    cmocka_unit_test(test_text_calls_are_not_invented),
    cmocka_unit_test(test_text_calls_as_tags_of_offered_tools),
    cmocka_unit_test(test_text_calls_report_mode_keeps_the_text),
    cmocka_unit_test(test_leaked_markup_next_to_native_calls_is_no_call),
    cmocka_unit_test(test_think_tags_move_to_reasoning),
    cmocka_unit_test(test_history_encodes_openai_messages),
    cmocka_unit_test(test_history_encodes_anthropic_messages),
    cmocka_unit_test(test_history_encodes_ollama_messages),
    cmocka_unit_test(test_history_encodes_each_message_once),
    cmocka_unit_test(test_history_pieces_after_truncate_and_wire_change),
    cmocka_unit_test(test_large_history_body_spliced_in_place),
    cmocka_unit_test(test_history_call_id_set),
    cmocka_unit_test(test_history_chain),
    cmocka_unit_test(test_history_compact_keeps_what_pays),
    cmocka_unit_test(test_history_text_is_the_message_written),
    cmocka_unit_test(test_history_append_text),
    cmocka_unit_test(test_history_shared_pieces_follow_the_wire),
    cmocka_unit_test(test_history_idle_form_answers_alike),
    cmocka_unit_test(test_shared_tools_encoded_once),
    cmocka_unit_test(test_history_replace_keeps_other_encodings),
    cmocka_unit_test(test_history_tool_media_openai),
    cmocka_unit_test(test_history_remove_keeps_encodings_on_every_wire),
    cmocka_unit_test(test_body_sha256_over_pieces),
    cmocka_unit_test(test_history_size),
    cmocka_unit_test(test_history_first_open),
    cmocka_unit_test(test_history_checks_the_neutral_shape),
    cmocka_unit_test(test_response_becomes_the_assistant_message),
    cmocka_unit_test(test_interleaved_thinking_goes_back_in_order),
    cmocka_unit_test(test_request_header_lines),
    cmocka_unit_test(test_openrouter_reasoning_details_are_kept),
    cmocka_unit_test(test_responses_stream_events),
    cmocka_unit_test(test_responses_endings_and_errors),
    cmocka_unit_test(test_replies_name_their_model_and_id),
    cmocka_unit_test(test_recordings_report_cache_writes),
    cmocka_unit_test(test_responses_encodes_the_history),
    cmocka_unit_test(test_responses_hosted_tool_items),
    cmocka_unit_test(test_responses_previous_response_id),
    cmocka_unit_test(test_azure_addresses_and_keys),
    cmocka_unit_test(test_presets_and_base_urls),
    cmocka_unit_test(test_keys_come_from_the_environment_and_never_show),
    cmocka_unit_test(test_config_refusals_name_the_place),
    cmocka_unit_test(test_config_file_and_capabilities),
    cmocka_unit_test(test_decoding_survives_allocation_failure),
    cmocka_unit_test(test_encoding_survives_allocation_failure),
    cmocka_unit_test(test_kept_headers_are_the_listed_ones),
    cmocka_unit_test(test_kept_headers_are_bounded),
};

REIN_TEST_MAIN(tests)
