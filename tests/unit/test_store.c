/*
 * The store (include/rein/store.h): one suite of test functions run against each backend,
 * SQLite on a file in a temporary folder and Redis on a real redis-server started on a free
 * port. Two handles on one database emulate two rein instances. Backend-specific cases
 * (migrations, damaged files, Redis going away) follow the shared table.
 */
/* rein-test-timeout: 60 */
#include "redis_server.h"
#include "store/store_int.h"
#include "store_fixture.h"
#include "test.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct backend {
    bool redis;
    bool exclusive; /* SQLite in exclusive mode: group commit */
    char *dir;
    char url[600];
    struct test_redis *server;
};

static rein_store *open_store(struct backend *b)
{
    struct rein_store_opts opts = {.exclusive = b->exclusive};
    rein_store *s = NULL;
    rein_error err;

    assert_rein_ok(rein_store_open(b->url, &opts, &s, &err), &err);
    return s;
}

/* Set while a test runs, so the teardown can stop the server and remove files even when an
 * assertion fails half-way. */
static struct backend *current;

static int cleanup(void **state)
{
    (void)state;
    if (current) {
        test_redis_stop(current->server);
        if (current->dir) {
            test_rmtree(current->dir);
            free(current->dir);
        }
        current = NULL;
    }
    return 0;
}

static void run_backend_excl(bool redis, bool exclusive, void (*fn)(struct backend *b))
{
    static struct backend b;

    memset(&b, 0, sizeof(b));
    b.redis = redis;
    b.exclusive = exclusive;
    current = &b;

    if (redis) {
        rein_store *probe = NULL;
        rein_error err;
        if (rein_store_open("redis://127.0.0.1:1", NULL, &probe, &err) == REIN_ENOTSUP) {
            print_message("[  SKIPPED ] this build has no Redis backend (hiredis missing)\n");
            skip();
        }
        b.server = test_redis_start();
        snprintf(b.url, sizeof(b.url), "%s", b.server->url);
    } else {
        b.dir = test_tmpdir();
        snprintf(b.url, sizeof(b.url), "sqlite:%s/rein.db", b.dir);
    }
    fn(&b);
}

static void run_backend(bool redis, void (*fn)(struct backend *b))
{
    run_backend_excl(redis, false, fn);
}

/* The same test on SQLite in exclusive mode (one handle per file), where calls share
 * group-committed transactions. */
#define EXCLUSIVE(name)                                                                            \
    static void sqlite_excl_##name(void **state)                                                   \
    {                                                                                              \
        (void)state;                                                                               \
        run_backend_excl(false, true, t_##name);                                                   \
    }

#define BOTH(name)                                                                                 \
    static void sqlite_##name(void **state)                                                        \
    {                                                                                              \
        (void)state;                                                                               \
        run_backend(false, t_##name);                                                              \
    }                                                                                              \
    static void redis_##name(void **state)                                                         \
    {                                                                                              \
        (void)state;                                                                               \
        run_backend(true, t_##name);                                                               \
    }

static void append(rein_store *s, const char *conv, const char *json, int64_t want_pos)
{
    int64_t pos = -1;
    rein_error err;

    assert_rein_ok(rein_store_message_append(s, conv, json, strlen(json),
                                             "4bf92f3577b34da6a3ce929d0e0e4736", &pos, &err),
                   &err);
    assert_int_equal(pos, want_pos);
}

/* The outcome of a call, as rein_store_ledger_update takes it (a latency not measured). */
static rein_err ledger_update(rein_store *s, const char *conv, const char *call_id,
                              enum rein_call_status status, const char *result, rein_error *err)
{
    struct rein_ledger_entry e = {
        .call_id = call_id, .status = status, .result = result, .latency_ms = -1};

    return rein_store_ledger_update(s, conv, &e, err);
}

/* ---- conversations ---------------------------------------------------------------------- */

static void t_conv_roundtrip(struct backend *b)
{
    rein_store *s = open_store(b);
    char id[REIN_ID_MAX];
    json_t *o = NULL;
    rein_error err;

    assert_rein_ok(rein_store_conv_create(s, "c1", "First", "{\"user\":\"ana\"}", id, &err), &err);
    assert_string_equal(id, "c1");
    assert_rein_ok(rein_store_conv_create(s, NULL, NULL, NULL, id, &err), &err);
    assert_memory_equal(id, "conv_", 5);
    assert_true(rein_store_conv_exists(s, id, &err));
    assert_false(rein_store_conv_exists(s, "nope", &err));

    assert_int_equal(rein_store_conv_create(s, "c1", NULL, NULL, NULL, &err), REIN_EEXIST);
    assert_int_equal(rein_store_conv_create(s, "../x", NULL, NULL, NULL, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "not valid"));
    assert_int_equal(rein_store_conv_create(s, "a/b", NULL, NULL, NULL, &err), REIN_EINVAL);
    assert_int_equal(rein_store_conv_create(s, "c2", NULL, "[1]", NULL, &err), REIN_EINVAL);
    assert_int_equal(rein_store_conv_create(s, "c2", NULL, "{bad", NULL, &err), REIN_EINVAL);

    assert_rein_ok(rein_store_conv_get(s, "c1", &o, &err), &err);
    assert_string_equal(json_string_value(json_object_get(o, "title")), "First");
    assert_string_equal(json_string_value(json_object_get(o, "state")), "idle");
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "metadata"), "user")),
                        "ana");
    assert_int_equal(json_integer_value(json_object_get(o, "message_count")), 0);
    assert_null(json_object_get(o, "_updated_ms"));
    json_decref(o);

    assert_rein_ok(rein_store_conv_update(s, "c1", "Renamed", "running", NULL, &err), &err);
    assert_rein_ok(rein_store_conv_get(s, "c1", &o, &err), &err);
    assert_string_equal(json_string_value(json_object_get(o, "title")), "Renamed");
    assert_string_equal(json_string_value(json_object_get(o, "state")), "running");
    assert_non_null(json_object_get(json_object_get(o, "metadata"), "user"));
    json_decref(o);
    assert_int_equal(rein_store_conv_update(s, "zz", "x", NULL, NULL, &err), REIN_ENOTFOUND);
    assert_int_equal(rein_store_conv_get(s, "zz", &o, &err), REIN_ENOTFOUND);
    assert_null(o);
    rein_store_free(s);
}
BOTH(conv_roundtrip)

struct collect {
    int n;
    char texts[8][256];
    int64_t positions[8];
};

static int collect_message(const struct rein_store_message *m, void *userdata)
{
    struct collect *c = userdata;

    if (c->n >= 8)
        return 1;
    assert_int_equal(strlen(m->json), m->len);
    snprintf(c->texts[c->n], sizeof(c->texts[0]), "%s", m->json);
    c->positions[c->n] = m->position;
    assert_string_equal(m->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_true(m->created_ms > 0);
    c->n++;
    return 0;
}

static void t_messages(struct backend *b)
{
    /* Odd spacing and key order must come back byte for byte. */
    static const char *const msgs[] = {
        "{\"role\":\"user\",\"content\":\"search openSkill\"}",
        "{ \"role\" : \"assistant\", \"content\": \"\", \"tool_calls\": [{\"id\": \"call_1\", "
        "\"name\": \"file_search\", \"arguments\": \"{\\\"query\\\":  \\\"openSkill\\\"}\"}]}",
        "{\"tool_call_id\":\"call_1\",\"role\":\"tool\",\"name\":\"file_search\","
        "\"content\":\"{\\\"matches\\\":[]}\",\"n\":12345678901234567}",
    };
    rein_store *s = open_store(b);
    struct collect c = {0};
    json_t *o = NULL;
    rein_error err;

    assert_rein_ok(rein_store_conv_create(s, "m1", NULL, NULL, NULL, &err), &err);
    for (int i = 0; i < 3; i++)
        append(s, "m1", msgs[i], i);
    assert_rein_ok(rein_store_messages_each(s, "m1", 0, collect_message, &c, &err), &err);
    assert_int_equal(c.n, 3);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(c.texts[i], msgs[i]);
        assert_int_equal(c.positions[i], i);
    }
    memset(&c, 0, sizeof(c));
    assert_rein_ok(rein_store_messages_each(s, "m1", 2, collect_message, &c, &err), &err);
    assert_int_equal(c.n, 1);
    assert_string_equal(c.texts[0], msgs[2]);

    assert_rein_ok(rein_store_conv_get(s, "m1", &o, &err), &err);
    assert_int_equal(json_integer_value(json_object_get(o, "message_count")), 3);
    json_decref(o);

    /* Bad input: a clear error and nothing written. */
    assert_int_equal(rein_store_message_append(s, "m1", "{\"role\":", 8, NULL, NULL, &err),
                     REIN_EINVAL);
    assert_non_null(strstr(err.msg, "line 1"));
    assert_int_equal(rein_store_message_append(s, "m1", "[1]", 3, NULL, NULL, &err), REIN_EINVAL);
    assert_int_equal(
        rein_store_message_append(s, "m1", "{\"role\":\"robot\"}", 16, NULL, NULL, &err),
        REIN_EINVAL);
    assert_non_null(strstr(err.msg, "role"));
    /* The role is the object's own member, a whole string: not a prefix, a nested one or a
     * number (the check reads a document, not a tree). */
    {
        static const char *const bad[] = {
            "{\"role\":\"use\"}", "{\"role\":\"users\"}", "{\"role\":1}",
            "{\"a\":{\"role\":\"user\"},\"b\":[{\"role\":\"tool\"}]}", "{}"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            assert_int_equal(
                rein_store_message_append(s, "m1", bad[i], strlen(bad[i]), NULL, NULL, &err),
                REIN_EINVAL);
            assert_non_null(strstr(err.msg, "role"));
        }
    }
    assert_int_equal(
        rein_store_message_append(s, "nope", msgs[0], strlen(msgs[0]), NULL, NULL, &err),
        REIN_ENOTFOUND);
    assert_int_equal(rein_store_messages_each(s, "nope", 0, collect_message, &c, &err),
                     REIN_ENOTFOUND);
    memset(&c, 0, sizeof(c));
    assert_rein_ok(rein_store_messages_each(s, "m1", 0, collect_message, &c, &err), &err);
    assert_int_equal(c.n, 3);
    /* The position continues after rejected input. */
    append(s, "m1", msgs[0], 3);
    rein_store_free(s);
}
BOTH(messages)

/* Several messages in one call: in order after those there, all or none. */
static void t_messages_batch(struct backend *b)
{
    static const char *const trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    const struct rein_store_text two[] = {
        {"{\"role\":\"user\",\"content\":\"a\"}", 29},
        {"{\"role\":\"assistant\",\"content\":\"b\"}", 34},
    };
    const struct rein_store_text bad[] = {
        {"{\"role\":\"user\",\"content\":\"c\"}", 29},
        {"{\"role\":\"robot\"}", 16},
    };
    struct rein_store_text many[REIN_STORE_MESSAGES_BATCH + 1];
    rein_store *s = open_store(b);
    struct collect c = {0};
    int64_t first = -1;
    json_t *o = NULL;
    rein_error err;

    assert_rein_ok(rein_store_conv_create(s, "mb", NULL, NULL, NULL, &err), &err);
    append(s, "mb", "{\"role\":\"system\",\"content\":\"s\"}", 0);
    assert_rein_ok(rein_store_messages_append(s, "mb", two, 2, trace, &first, &err), &err);
    assert_int_equal(first, 1);
    /* A bad message refuses the whole call, naming it; so does an unknown conversation. */
    assert_int_equal(rein_store_messages_append(s, "mb", bad, 2, trace, &first, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "message 1 of 2"));
    assert_non_null(strstr(err.msg, "role"));
    assert_int_equal(rein_store_messages_append(s, "none", two, 2, trace, &first, &err),
                     REIN_ENOTFOUND);
    for (size_t i = 0; i < REIN_ARRAY_SIZE(many); i++)
        many[i] = two[0];
    assert_int_equal(
        rein_store_messages_append(s, "mb", many, REIN_ARRAY_SIZE(many), trace, &first, &err),
        REIN_EINVAL);
    assert_rein_ok(rein_store_messages_append(s, "mb", two, 0, trace, &first, &err), &err);
    assert_rein_ok(rein_store_messages_each(s, "mb", 0, collect_message, &c, &err), &err);
    assert_int_equal(c.n, 3);
    assert_string_equal(c.texts[1], two[0].json);
    assert_string_equal(c.texts[2], two[1].json);
    assert_int_equal(c.positions[2], 2);
    assert_rein_ok(rein_store_conv_get(s, "mb", &o, &err), &err);
    assert_int_equal(json_integer_value(json_object_get(o, "message_count")), 3);
    json_decref(o);
    /* The next single append continues after them. */
    append(s, "mb", two[0].json, 3);
    rein_store_free(s);
}
BOTH(messages_batch)
EXCLUSIVE(messages_batch)

static void t_list_paging(struct backend *b)
{
    rein_store *s = open_store(b);
    char seen[25][REIN_ID_MAX];
    char *cursor = NULL;
    int total = 0, pages = 0;
    int64_t last_updated = INT64_MAX;
    json_t *page = NULL;
    rein_error err;

    for (int i = 0; i < 25; i++) {
        char id[32];
        snprintf(id, sizeof(id), "p%02d", i);
        assert_rein_ok(rein_store_conv_create(s, id, NULL, NULL, NULL, &err), &err);
    }
    /* Touch p07 last, on a later millisecond than any creation: it must come first. */
    {
        int64_t t0 = rein_wall_ms();
        while (rein_wall_ms() <= t0)
            ;
    }
    append(s, "p07", "{\"role\":\"user\",\"content\":\"hi\"}", 0);
    for (;;) {
        json_t *arr;
        assert_rein_ok(rein_store_conv_list(s, cursor, 10, &page, &err), &err);
        arr = json_object_get(page, "conversations");
        pages++;
        if (pages == 1)
            assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 0), "id")),
                                "p07");
        for (size_t i = 0; i < json_array_size(arr); i++) {
            json_t *c = json_array_get(arr, i);
            const char *id = json_string_value(json_object_get(c, "id"));
            const char *updated = json_string_value(json_object_get(c, "updated_at"));
            for (int j = 0; j < total; j++)
                assert_string_not_equal(seen[j], id);
            snprintf(seen[total++], REIN_ID_MAX, "%s", id);
            assert_non_null(updated);
            assert_null(json_object_get(c, "_updated_ms"));
            (void)last_updated;
        }
        free(cursor);
        cursor = NULL;
        if (json_is_null(json_object_get(page, "next_cursor"))) {
            json_decref(page);
            break;
        }
        assert_int_equal(json_array_size(arr), 10);
        cursor = strdup(json_string_value(json_object_get(page, "next_cursor")));
        json_decref(page);
    }
    assert_int_equal(total, 25);
    assert_int_equal(pages, 3);

    assert_int_equal(rein_store_conv_list(s, "garbage", 10, &page, &err), REIN_EINVAL);
    assert_int_equal(rein_store_conv_list(s, "12:../x", 10, &page, &err), REIN_EINVAL);
    assert_rein_ok(rein_store_conv_list(s, NULL, 1000, &page, &err), &err);
    assert_int_equal(json_array_size(json_object_get(page, "conversations")), 25);
    json_decref(page);
    rein_store_free(s);
}
BOTH(list_paging)

/* Search by title: ASCII letters without case, other text byte for byte, pages with cursors,
 * renamed titles found by their new name. */
static void t_find(struct backend *b)
{
    rein_store *s = open_store(b);
    static const char *const titles[] = {"Deploy the API", "deploy notes",    "部署手册", NULL,
                                         "Lunch",          "Re-deploy friday"};
    json_t *page = NULL;
    const json_t *arr;
    char *cursor;
    char big[REIN_STORE_QUERY_MAX + 2];
    rein_error err;

    for (int i = 0; i < 6; i++) {
        char id[16];
        snprintf(id, sizeof(id), "f%d", i);
        assert_rein_ok(rein_store_conv_create(s, id, titles[i], NULL, NULL, &err), &err);
    }
    assert_rein_ok(rein_store_conv_find(s, "DEPLOY", NULL, 20, &page, &err), &err);
    arr = json_object_get(page, "conversations");
    assert_int_equal(json_array_size(arr), 3);
    json_decref(page);
    assert_rein_ok(rein_store_conv_find(s, "部署", NULL, 20, &page, &err), &err);
    arr = json_object_get(page, "conversations");
    assert_int_equal(json_array_size(arr), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 0), "id")), "f2");
    json_decref(page);
    /* Two at a time: a cursor that keeps the filter. */
    assert_rein_ok(rein_store_conv_find(s, "deploy", NULL, 2, &page, &err), &err);
    assert_int_equal(json_array_size(json_object_get(page, "conversations")), 2);
    cursor = strdup(json_string_value(json_object_get(page, "next_cursor")));
    json_decref(page);
    assert_rein_ok(rein_store_conv_find(s, "deploy", cursor, 2, &page, &err), &err);
    assert_int_equal(json_array_size(json_object_get(page, "conversations")), 1);
    assert_true(json_is_null(json_object_get(page, "next_cursor")));
    free(cursor);
    json_decref(page);
    /* Nothing matches; "" matches all; a renamed one is found by its new title only. */
    assert_rein_ok(rein_store_conv_find(s, "zzz", NULL, 20, &page, &err), &err);
    assert_int_equal(json_array_size(json_object_get(page, "conversations")), 0);
    json_decref(page);
    assert_rein_ok(rein_store_conv_find(s, "", NULL, 20, &page, &err), &err);
    assert_int_equal(json_array_size(json_object_get(page, "conversations")), 6);
    json_decref(page);
    assert_rein_ok(rein_store_conv_update(s, "f4", "Team lunch plans", NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_conv_find(s, "plans", NULL, 20, &page, &err), &err);
    arr = json_object_get(page, "conversations");
    assert_int_equal(json_array_size(arr), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 0), "title")),
                        "Team lunch plans");
    json_decref(page);
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(rein_store_conv_find(s, big, NULL, 20, &page, &err), REIN_EINVAL);
    assert_null(page);
    assert_int_equal(rein_store_conv_find(s, "x", "garbage", 20, &page, &err), REIN_EINVAL);
    rein_store_free(s);
}
BOTH(find)

/* Dropping the messages from a position: the count follows, later appends take the freed
 * positions, the ledger stays. */
static void t_truncate(struct backend *b)
{
    rein_store *s = open_store(b);
    struct rein_ledger_entry e = {
        .call_id = "c1", .tool = "echo", .args = "{\"text\":\"x\"}", .step = -1};
    json_t *conv = NULL;
    int64_t pos = -1;
    rein_error err;

    assert_rein_ok(rein_store_conv_create(s, "t1", "t", NULL, NULL, &err), &err);
    for (int i = 0; i < 4; i++)
        append(s, "t1", "{\"role\":\"user\",\"content\":\"m\"}", i);
    assert_rein_ok(rein_store_ledger_put(s, "t1", &e, &err), &err);
    assert_rein_ok(rein_store_messages_truncate(s, "t1", 2, &err), &err);
    assert_rein_ok(rein_store_conv_export(s, "t1", &conv, &err), &err);
    assert_int_equal(json_array_size(json_object_get(conv, "messages")), 2);
    assert_int_equal(json_integer_value(json_object_get(conv, "message_count")), 2);
    assert_int_equal(json_array_size(json_object_get(conv, "ledger")), 1);
    json_decref(conv);
    assert_rein_ok(rein_store_message_append(s, "t1", "{\"role\":\"user\",\"content\":\"n\"}", 29,
                                             NULL, &pos, &err),
                   &err);
    assert_int_equal(pos, 2);
    /* Past the end changes nothing; from 0 empties it. */
    assert_rein_ok(rein_store_messages_truncate(s, "t1", 10, &err), &err);
    assert_rein_ok(rein_store_conv_get(s, "t1", &conv, &err), &err);
    assert_int_equal(json_integer_value(json_object_get(conv, "message_count")), 3);
    json_decref(conv);
    assert_rein_ok(rein_store_messages_truncate(s, "t1", 0, &err), &err);
    assert_rein_ok(rein_store_conv_get(s, "t1", &conv, &err), &err);
    assert_int_equal(json_integer_value(json_object_get(conv, "message_count")), 0);
    json_decref(conv);
    assert_int_equal(rein_store_messages_truncate(s, "nope", 0, &err), REIN_ENOTFOUND);
    assert_int_equal(rein_store_messages_truncate(s, "t1", -1, &err), REIN_EINVAL);
    rein_store_free(s);
}
BOTH(truncate)

/* Each ISO 8601 time in text replaced by "T" (in place): the rest must match exactly. */
static void mask_times(char *text)
{
    char *r = text, *w = text;

    while (*r) {
        if (strlen(r) >= 24 && r[4] == '-' && r[7] == '-' && r[10] == 'T' && r[13] == ':' &&
            r[19] == '.' && r[23] == 'Z') {
            *w++ = 'T';
            r += 24;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

/* The text a write call produced, and the dump of the tree the same store call builds. */
static void expect_text(struct rein_buf *written, json_t *tree, const char *want)
{
    char *dumped = rein_json_dumps(tree);

    assert_non_null(dumped);
    assert_string_equal(dumped, written->ptr);
    mask_times(dumped);
    assert_string_equal(dumped, want);
    rein_free(dumped);
    json_decref(tree);
    rein_buf_reset(written);
}

/*
 * A page and an export written straight from the rows are the text the trees dump to, and that
 * text is what GET /agent/conversations and GET /agent/conversations/{id} answered when they
 * dumped trees (the literals below came from that version): key order, metadata and messages
 * re-encoded compact, numbers, escapes, an unset title, a ledger entry.
 */
static void t_written_text(struct backend *b)
{
    static const char *const m1 =
        "{ \"role\": \"user\", \"content\": \"h\\u00e9llo\\n\\u263a \\ud83d\\ude00\" }";
    static const char *const m2 =
        "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"call_9\","
        "\"name\":\"echo\",\"arguments\":\"{\\\"text\\\":\\\"x\\\"}\"}]}";
    static const char *const want_export =
        "{\"id\":\"w1\",\"title\":\"Plan \\\"\xce\xb1"
        "\\\"\\tB\",\"state\":\"idle\",\"metadata"
        "\":{\"b\":[1,2500.0,{\"c\":null}],\"a\":\"\xc3\xa9"
        "/\",\"z\":-0.0},\"created_at\":\"T"
        "\",\"updated_at\":\"T\",\"message_count\":2,\"messages\":[{\"position\":0,\"created_at\""
        ":\"T\",\"trace_id\":\"4bf92f3577b34da6a3ce929d0e0e4736\",\"message\":{\"role\":\"user\","
        "\"content\":\"h\xc3\xa9"
        "llo\\n\xe2\x98\xba"
        " \xf0\x9f\x98\x80"
        "\"}},{\"position\":1,"
        "\"created_at\":\"T\",\"trace_id\":\"\",\"message\":{\"role\":\"assistant\",\"content\":"
        "\"\",\"tool_calls\":[{\"id\":\"call_9\",\"name\":\"echo\",\"arguments\":\"{\\\"text\\\":"
        "\\\"x\\\"}\"}]}}],\"ledger\":[{\"call_id\":\"call_9\",\"tool\":\"echo\",\"args\":{\"text"
        "\":\"x\",\"n\":2.5,\"big\":12345678901234},\"status\":\"pending\",\"result\":null,\"call"
        "_time\":\"T\",\"response_time\":null,\"step\":1,\"sent_name\":\"echo\",\"trace_id\":\"4b"
        "f92f3577b34da6a3ce929d0e0e4736\",\"latency_ms\":0,\"interrupted\":false}]}";
    static const char *const want_page =
        "{\"conversations\":[{\"id\":\"w2\",\"title\":null,\"state\":\"idle\",\"metadata\":null,"
        "\"created_at\":\"T\",\"updated_at\":\"T\",\"message_count\":0},{\"id\":\"w1\",\"title\":"
        "\"Plan \\\"\xce\xb1"
        "\\\"\\tB\",\"state\":\"idle\",\"metadata\":{\"b\":[1,2500.0,{\"c\""
        ":null}],\"a\":\"\xc3\xa9"
        "/\",\"z\":-0.0},\"created_at\":\"T\",\"updated_at\":\"T\",\"m"
        "essage_count\":2}],\"next_cursor\":null}";
    rein_store *s = open_store(b);
    struct rein_ledger_entry e = {.call_id = "call_9",
                                  .tool = "echo",
                                  .args = "{\"text\": \"x\", \"n\": 2.50, \"big\": 12345678901234}",
                                  .has_step = true,
                                  .step = 1,
                                  .trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"};
    struct rein_buf buf;
    struct rein_jw w;
    json_t *tree = NULL;
    int64_t pos;
    rein_error err;

    assert_rein_ok(rein_store_conv_create(s, "w1", "Plan \"\xce\xb1\"\tB",
                                          "{ \"b\": [1, 2.5e3, {\"c\": null}], "
                                          "\"a\": \"\\u00e9\\/\", \"z\": -0.0 }",
                                          NULL, &err),
                   &err);
    assert_rein_ok(rein_store_message_append(s, "w1", m1, strlen(m1),
                                             "4bf92f3577b34da6a3ce929d0e0e4736", &pos, &err),
                   &err);
    assert_rein_ok(rein_store_message_append(s, "w1", m2, strlen(m2), NULL, &pos, &err), &err);
    assert_rein_ok(rein_store_ledger_put(s, "w1", &e, &err), &err);
    assert_rein_ok(rein_store_conv_create(s, "w2", NULL, NULL, NULL, &err), &err);

    rein_buf_init(&buf, 0);
    rein_jw_init(&w, &buf);
    rein_jw_obj_begin(&w);
    assert_rein_ok(rein_store_conv_export_write(s, "w1", &w, &err), &err);
    rein_jw_obj_end(&w);
    assert_rein_ok(rein_jw_finish(&w), NULL);
    assert_rein_ok(rein_store_conv_export(s, "w1", &tree, &err), &err);
    expect_text(&buf, tree, want_export);

    rein_jw_init(&w, &buf);
    assert_rein_ok(rein_store_conv_page_write(s, NULL, NULL, 0, &w, &err), &err);
    assert_rein_ok(rein_store_conv_list(s, NULL, 0, &tree, &err), &err);
    expect_text(&buf, tree, want_page);

    /* One a page: the cursor names the last one written; the next page ends the list. */
    rein_jw_init(&w, &buf);
    assert_rein_ok(rein_store_conv_page_write(s, "", NULL, 1, &w, &err), &err);
    assert_non_null(strstr(buf.ptr, "\"id\":\"w2\""));
    assert_non_null(strstr(buf.ptr, ":w2\"}"));
    rein_buf_reset(&buf);

    /* Nothing is written for an absent conversation or a bad id. */
    rein_jw_init(&w, &buf);
    assert_int_equal(rein_store_conv_export_write(s, "nope", &w, &err), REIN_ENOTFOUND);
    assert_int_equal(rein_store_conv_export_write(s, "a..b", &w, &err), REIN_EINVAL);
    assert_int_equal(buf.len, 0);
    assert_int_equal(rein_store_conv_page_write(s, NULL, "garbage", 5, &w, &err), REIN_EINVAL);
    assert_int_equal(buf.len, 0);
    rein_buf_release(&buf);
    rein_store_free(s);
}
BOTH(written_text)

struct read_probe {
    rein_store *s;
    int runs;
    rein_err other_thread; /* what rein_store_read_now gave a second thread meanwhile */
    rein_err write;        /* what a write inside the reads gave */
    int64_t messages;
};

static int count_message(const struct rein_store_message *m, void *userdata)
{
    (void)m;
    (*(int64_t *)userdata)++;
    return 0;
}

static rein_err probe_nested(rein_store *s, void *userdata, rein_error *err)
{
    (void)s;
    (void)err;
    ((struct read_probe *)userdata)->runs++;
    return REIN_OK;
}

static void *probe_thread(void *arg)
{
    struct read_probe *p = arg;
    struct read_probe other = {.s = p->s};
    rein_error err;

    p->other_thread = rein_store_read_now(p->s, probe_nested, &other, &err);
    return NULL;
}

/* The reads of a snapshot, and a write that must fail inside one. */
static rein_err probe_plain_reads(rein_store *s, void *userdata, rein_error *err)
{
    struct read_probe *p = userdata;
    json_t *conv = NULL;
    rein_error werr;
    rein_err rc;

    p->runs++;
    rc = rein_store_conv_get(s, "r1", &conv, err);
    json_decref(conv);
    if (rc == REIN_OK)
        rc = rein_store_messages_each(s, "r1", 0, count_message, &p->messages, err);
    p->write = rein_store_conv_create(s, "r2", NULL, NULL, NULL, &werr);
    return rc;
}

static rein_err probe_reads(rein_store *s, void *userdata, rein_error *err)
{
    struct read_probe *p = userdata;
    pthread_t th;
    rein_err rc = probe_plain_reads(s, userdata, err);

    if (rc == REIN_OK)
        rc = rein_store_read_now(s, probe_nested, p, err); /* nested: runs at once */
    assert_int_equal(pthread_create(&th, NULL, probe_thread, p), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    return rc;
}

/*
 * rein_store_read_now: the reads run inside one snapshot, a nested call runs at once, a write
 * inside fails and leaves nothing; a second thread gets REIN_EBUSY where the one connection
 * is taken (exclusive mode) and its own connection from the pool otherwise; Redis always
 * answers REIN_EBUSY without running fn.
 */
static void t_read_now(struct backend *b)
{
    rein_store *s = open_store(b);
    struct read_probe p = {.s = s};
    json_t *conv = NULL;
    rein_error err;

    assert_rein_ok(rein_store_conv_create(s, "r1", NULL, NULL, NULL, &err), &err);
    append(s, "r1", "{\"role\":\"user\",\"content\":\"hi\"}", 0);
    if (b->redis) {
        assert_int_equal(rein_store_read_now(s, probe_reads, &p, &err), REIN_EBUSY);
        assert_int_equal(p.runs, 0);
        rein_store_free(s);
        return;
    }
    assert_rein_ok(rein_store_read_now(s, probe_reads, &p, &err), &err);
    assert_int_equal(p.runs, 2);
    assert_int_equal(p.messages, 1);
    assert_int_equal(p.write, REIN_ESTORE);
    assert_int_equal(p.other_thread, b->exclusive ? REIN_EBUSY : REIN_OK);
    assert_int_equal(rein_store_conv_get(s, "r2", &conv, &err), REIN_ENOTFOUND);
    /* The connection is back: writes and reads go on. */
    assert_rein_ok(rein_store_conv_create(s, "r2", NULL, NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_conv_get(s, "r2", &conv, &err), &err);
    json_decref(conv);
    rein_store_free(s);
}
BOTH(read_now)

struct read_wait {
    rein_store *s;
    sem_t in, go;
    atomic_bool first_done; /* the first reader's fn has returned */
    bool saw_first_done;    /* ... when the second reader's fn ran */
    rein_err second;        /* what rein_store_read gave the second reader */
};

static rein_err hold_reads(rein_store *s, void *userdata, rein_error *err)
{
    struct read_wait *w = userdata;
    json_t *conv = NULL;
    rein_err rc = rein_store_conv_get(s, "r1", &conv, err);

    json_decref(conv);
    sem_post(&w->in);
    while (sem_wait(&w->go) != 0)
        ;
    atomic_store(&w->first_done, true);
    return rc;
}

static rein_err second_reads(rein_store *s, void *userdata, rein_error *err)
{
    struct read_wait *w = userdata;
    json_t *conv = NULL;
    rein_err rc = rein_store_conv_get(s, "r1", &conv, err);

    json_decref(conv);
    w->saw_first_done = atomic_load(&w->first_done);
    return rc;
}

static void *first_reader(void *arg)
{
    struct read_wait *w = arg;
    rein_error err;

    assert_rein_ok(rein_store_read(w->s, hold_reads, w, &err), &err);
    return NULL;
}

static void *second_reader(void *arg)
{
    struct read_wait *w = arg;
    rein_error err;

    w->second = rein_store_read(w->s, second_reads, w, &err);
    return NULL;
}

/*
 * rein_store_read: the reads run inside one snapshot with no commit of their own (a plain
 * call in exclusive mode borrows the connection inside a batch and waits for its commit), a
 * write inside fails; where the one connection is taken (exclusive mode) a second reader
 * waits for it instead of failing; Redis runs fn as it is.
 */
static void t_read_waits(struct backend *b)
{
    rein_store *s = open_store(b);
    struct read_probe p = {.s = s};
    struct read_wait w = {.s = s};
    struct rein_store_counts before, after;
    pthread_t first, second;
    json_t *conv = NULL;
    rein_error err;

    assert_rein_ok(rein_store_conv_create(s, "r1", NULL, NULL, NULL, &err), &err);
    append(s, "r1", "{\"role\":\"user\",\"content\":\"hi\"}", 0);
    rein_store_counts(s, &before);
    assert_rein_ok(rein_store_read(s, probe_plain_reads, &p, &err), &err);
    rein_store_counts(s, &after);
    assert_int_equal(p.runs, 1);
    assert_int_equal(p.messages, 1);
    assert_int_equal(after.waits, before.waits);
    assert_int_equal(after.commits, before.commits);
    if (!b->redis) {
        assert_int_equal(p.write, REIN_ESTORE);
        assert_int_equal(rein_store_conv_get(s, "r2", &conv, &err), REIN_ENOTFOUND);
    }
    sem_init(&w.in, 0, 0);
    sem_init(&w.go, 0, 0);
    atomic_init(&w.first_done, false);
    assert_int_equal(pthread_create(&first, NULL, first_reader, &w), 0);
    while (sem_wait(&w.in) != 0)
        ;
    assert_int_equal(pthread_create(&second, NULL, second_reader, &w), 0);
    /* A second reader that did not wait would run now, before the first lets go (the wait
     * only gives a wrong implementation the time to show itself; a right one passes anyway). */
    usleep(50 * 1000);
    sem_post(&w.go);
    assert_int_equal(pthread_join(first, NULL), 0);
    assert_int_equal(pthread_join(second, NULL), 0);
    assert_int_equal(w.second, REIN_OK);
    if (b->exclusive)
        assert_true(w.saw_first_done);
    sem_destroy(&w.in);
    sem_destroy(&w.go);
    rein_store_free(s);
}
BOTH(read_waits)
EXCLUSIVE(read_waits)

static void t_delete(struct backend *b)
{
    rein_store *s = open_store(b);
    struct rein_ledger_entry e = {
        .call_id = "call_1", .tool = "echo", .args = "{\"text\":\"x\"}", .step = -1};
    struct rein_store_event ev = {.conv_id = "d1", .type = "final", .payload = "{}"};
    char token[REIN_ID_MAX];
    json_t *o = NULL;
    rein_error err;

    assert_rein_ok(rein_store_conv_create(s, "d1", "gone soon", NULL, NULL, &err), &err);
    append(s, "d1", "{\"role\":\"user\",\"content\":\"x\"}", 0);
    assert_rein_ok(rein_store_ledger_put(s, "d1", &e, &err), &err);
    assert_rein_ok(rein_store_event_add(s, &ev, &err), &err);

    assert_rein_ok(rein_store_lock_acquire(s, "d1", 60000, NULL, token, NULL, &err), &err);
    assert_int_equal(rein_store_conv_delete(s, "d1", &err), REIN_EBUSY);
    assert_rein_ok(rein_store_lock_release(s, "d1", token, &err), &err);

    assert_rein_ok(rein_store_conv_delete(s, "d1", &err), &err);
    assert_int_equal(rein_store_conv_get(s, "d1", &o, &err), REIN_ENOTFOUND);
    assert_int_equal(rein_store_conv_delete(s, "d1", &err), REIN_ENOTFOUND);
    assert_int_equal(rein_store_conv_delete(s, "..", &err), REIN_EINVAL);
    /* A new conversation with the same id starts empty. */
    assert_rein_ok(rein_store_conv_create(s, "d1", NULL, NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_conv_export(s, "d1", &o, &err), &err);
    assert_int_equal(json_array_size(json_object_get(o, "messages")), 0);
    assert_int_equal(json_array_size(json_object_get(o, "ledger")), 0);
    json_decref(o);
    rein_store_free(s);
}
BOTH(delete)

/* ---- ledger ----------------------------------------------------------------------------- */

struct ledger_seen {
    int n;
    char call_ids[8][32];
    char statuses[8][16];
    bool interrupted[8];
    int steps[8];
    char results[8][128];
    char names[8][32];
};

static int collect_ledger(const char *conv_id, const struct rein_ledger_entry *e, void *ud)
{
    struct ledger_seen *l = ud;

    (void)conv_id;
    snprintf(l->call_ids[l->n], 32, "%s", e->call_id);
    snprintf(l->statuses[l->n], 16, "%s", rein_call_status_name(e->status));
    snprintf(l->results[l->n], 128, "%s", e->result ? e->result : "(null)");
    snprintf(l->names[l->n], 32, "%s", e->sent_name ? e->sent_name : "(null)");
    l->interrupted[l->n] = e->interrupted;
    l->steps[l->n] = e->has_step ? e->step : -1;
    assert_true(e->call_ms > 0);
    if (e->status == REIN_CALL_PENDING)
        assert_int_equal(e->response_ms, 0);
    else
        assert_true(e->response_ms >= e->call_ms);
    l->n++;
    return 0;
}

static void t_ledger(struct backend *b)
{
    rein_store *s = open_store(b);
    struct rein_ledger_entry e1 = {.call_id = "call_1",
                                   .tool = "file_search",
                                   .sent_name = "File_Search",
                                   .args = "{\"query\":\"openSkill\"}",
                                   .has_step = true,
                                   .step = 2,
                                   .trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"};
    struct rein_ledger_entry e2 = {.call_id = "toolu_01A",
                                   .tool = "calculator",
                                   .args = "{\"op\":\"mean\",\"values\":[1,2,3]}",
                                   .step = -1};
    struct ledger_seen seen = {0};
    json_t *o = NULL, *entry;
    rein_error err;

    assert_rein_ok(rein_store_conv_create(s, "l1", NULL, NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_ledger_put(s, "l1", &e1, &err), &err);
    assert_rein_ok(rein_store_ledger_put(s, "l1", &e2, &err), &err);
    assert_rein_ok(
        ledger_update(s, "l1", "call_1", REIN_CALL_SUCCESS, "{\"matches\":[\"a.md\"]}", &err),
        &err);
    assert_rein_ok(rein_store_ledger_each(s, "l1", collect_ledger, &seen, &err), &err);
    assert_int_equal(seen.n, 2);
    assert_string_equal(seen.call_ids[0], "call_1");
    assert_string_equal(seen.statuses[0], "success");
    assert_string_equal(seen.results[0], "{\"matches\":[\"a.md\"]}");
    assert_string_equal(seen.names[0], "File_Search");
    assert_int_equal(seen.steps[0], 2);
    assert_string_equal(seen.call_ids[1], "toolu_01A");
    assert_string_equal(seen.statuses[1], "pending");
    assert_string_equal(seen.results[1], "(null)");
    assert_int_equal(seen.steps[1], -1);

    /* Writing the same call id again replaces the entry and keeps its place. */
    e1.status = REIN_CALL_INVALID;
    e1.result = "{\"error\":\"missing query\"}";
    assert_rein_ok(rein_store_ledger_put(s, "l1", &e1, &err), &err);
    memset(&seen, 0, sizeof(seen));
    assert_rein_ok(rein_store_ledger_each(s, "l1", collect_ledger, &seen, &err), &err);
    assert_int_equal(seen.n, 2);
    assert_string_equal(seen.call_ids[0], "call_1");
    assert_string_equal(seen.statuses[0], "invalid");

    assert_rein_ok(rein_store_conv_export(s, "l1", &o, &err), &err);
    entry = json_array_get(json_object_get(o, "ledger"), 1);
    assert_string_equal(json_string_value(json_object_get(entry, "status")), "pending");
    assert_true(json_is_false(json_object_get(entry, "interrupted")));
    assert_true(json_is_null(json_object_get(entry, "response_time")));
    assert_int_equal(json_integer_value(json_array_get(
                         json_object_get(json_object_get(entry, "args"), "values"), 2)),
                     3);
    assert_string_equal(json_string_value(json_object_get(entry, "sent_name")), "calculator");
    json_decref(o);

    /* Bad input. */
    assert_int_equal(ledger_update(s, "l1", "call_404", REIN_CALL_SUCCESS, NULL, &err),
                     REIN_ENOTFOUND);
    e2.args = "{not json";
    assert_int_equal(rein_store_ledger_put(s, "l1", &e2, &err), REIN_EINVAL);
    e2.args = "{}";
    e2.call_id = "has space";
    assert_int_equal(rein_store_ledger_put(s, "l1", &e2, &err), REIN_EINVAL);
    e2.call_id = "call_9";
    assert_int_equal(rein_store_ledger_put(s, "nope", &e2, &err), REIN_ENOTFOUND);
    assert_int_equal(ledger_update(s, "l1", "toolu_01A", REIN_CALL_ERROR, "{oops", &err),
                     REIN_EINVAL);
    rein_store_free(s);
}
BOTH(ledger)

/* ---- events ----------------------------------------------------------------------------- */

static int count_events(const struct rein_store_event *ev, void *ud)
{
    int *n = ud;

    assert_non_null(ev->type);
    assert_non_null(ev->payload);
    assert_true(ev->time_ms > 0);
    (*n)++;
    return 0;
}

static void t_events(struct backend *b)
{
    static const char *trace_a = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    static const char *trace_b = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    rein_store *s = open_store(b);
    struct rein_store_event ev = {.conv_id = "e1",
                                  .trace_id = trace_a,
                                  .type = "tool_call",
                                  .payload = "{\"tool\":\"echo\"}"};
    int n = 0;
    rein_error err;

    assert_rein_ok(rein_store_conv_create(s, "e1", NULL, NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_event_add(s, &ev, &err), &err);
    ev.type = "final";
    assert_rein_ok(rein_store_event_add(s, &ev, &err), &err);
    ev.trace_id = trace_b;
    assert_rein_ok(rein_store_event_add(s, &ev, &err), &err);
    ev.conv_id = NULL;
    ev.trace_id = "cccccccccccccccccccccccccccccccc";
    assert_rein_ok(rein_store_event_add(s, &ev, &err), &err);

    assert_rein_ok(rein_store_events_each(s, "e1", NULL, count_events, &n, &err), &err);
    assert_int_equal(n, 3);
    n = 0;
    assert_rein_ok(rein_store_events_each(s, "e1", trace_a, count_events, &n, &err), &err);
    assert_int_equal(n, 2);
    n = 0;
    assert_rein_ok(
        rein_store_events_each(s, NULL, "cccccccccccccccccccccccccccccccc", count_events, &n, &err),
        &err);
    assert_int_equal(n, 1);

    ev.payload = "{bad";
    assert_int_equal(rein_store_event_add(s, &ev, &err), REIN_EINVAL);
    ev.payload = "{}";
    ev.type = "";
    assert_int_equal(rein_store_event_add(s, &ev, &err), REIN_EINVAL);
    assert_int_equal(rein_store_events_each(s, NULL, NULL, count_events, &n, &err), REIN_EINVAL);
    rein_store_free(s);
}
BOTH(events)

/* Sequence ids: per conversation, consecutive, read after an id, waited for, bounded. */
struct seqs {
    int n;
    int64_t seq[200];
    char type[200][16];
};

static int collect_seqs(const struct rein_store_event *ev, void *ud)
{
    struct seqs *q = ud;

    if (q->n < 200) {
        q->seq[q->n] = ev->seq;
        snprintf(q->type[q->n], sizeof(q->type[0]), "%s", ev->type);
        q->n++;
    }
    return 0;
}

struct waiter {
    rein_store *s;
    rein_err rc;
    int64_t last;
};

static void *wait_events(void *arg)
{
    struct waiter *w = arg;
    rein_error err;

    w->rc = rein_store_events_wait(w->s, "q1", 3, 10000, NULL, &w->last, &err);
    return NULL;
}

static void t_events_seq(struct backend *b)
{
    struct rein_store_opts opts = {.events_max = 10, .poll_ms = 20};
    struct rein_store_event evs[3] = {
        {.conv_id = "q1",
         .trace_id = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
         .type = "status",
         .payload = "{}"},
        {.conv_id = "q1",
         .trace_id = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
         .type = "text_delta",
         .payload = "{\"text\":\"x\"}"},
        {.conv_id = "q1",
         .trace_id = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
         .type = "tool_call",
         .payload = "{}"},
    };
    struct rein_store_event other = {.conv_id = "q2", .type = "final", .payload = "{}"};
    struct rein_store_event lone = {
        .trace_id = "cccccccccccccccccccccccccccccccc", .type = "x", .payload = "{}"};
    struct waiter w = {0};
    struct seqs q = {0};
    int64_t got[3] = {0}, seq = -1, last = -1;
    rein_store *s = NULL, *s2 = NULL;
    pthread_t th;
    rein_error err;

    assert_rein_ok(rein_store_open(b->url, &opts, &s, &err), &err);
    assert_rein_ok(rein_store_conv_create(s, "q1", NULL, NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_conv_create(s, "q2", NULL, NULL, NULL, &err), &err);
    /* One batch, one commit, consecutive ids; another conversation counts on its own. */
    assert_rein_ok(rein_store_events_record(s, evs, 3, got, &err), &err);
    assert_int_equal(got[0], 1);
    assert_int_equal(got[2], 3);
    assert_rein_ok(rein_store_event_record(s, &other, &seq, &err), &err);
    assert_int_equal(seq, 1);
    assert_rein_ok(rein_store_event_record(s, &lone, &seq, &err), &err);
    assert_int_equal(seq, 0);
    assert_rein_ok(rein_store_events_after(s, "q1", 1, 0, collect_seqs, &q, &err), &err);
    assert_int_equal(q.n, 2);
    assert_int_equal(q.seq[0], 2);
    assert_string_equal(q.type[1], "tool_call");
    memset(&q, 0, sizeof(q));
    assert_rein_ok(rein_store_events_after(s, "q1", 0, 2, collect_seqs, &q, &err), &err);
    assert_int_equal(q.n, 2);
    memset(&q, 0, sizeof(q));
    assert_rein_ok(rein_store_events_after(s, "q1", 3, 0, collect_seqs, &q, &err), &err);
    assert_int_equal(q.n, 0);
    assert_rein_ok(rein_store_events_after(s, "none", 0, 0, collect_seqs, &q, &err), &err);
    assert_int_equal(q.n, 0);

    /* A waiter on another handle (another instance) wakes for a new event. */
    assert_rein_ok(rein_store_open(b->url, &opts, &s2, &err), &err);
    assert_int_equal(rein_store_events_wait(s2, "q1", 3, 0, NULL, &last, &err), REIN_ETIMEDOUT);
    assert_int_equal(last, 3);
    assert_rein_ok(rein_store_events_wait(s2, "q1", 2, 0, NULL, &last, &err), &err);
    w.s = s2;
    assert_int_equal(pthread_create(&th, NULL, wait_events, &w), 0);
    assert_rein_ok(rein_store_event_record(s, &evs[2], &seq, &err), &err);
    pthread_join(th, NULL);
    assert_rein_ok(w.rc, NULL);
    assert_int_equal(w.last, 4);
    /* And one on the same handle, at once. */
    w.s = s;
    assert_int_equal(pthread_create(&th, NULL, wait_events, &w), 0);
    assert_rein_ok(rein_store_event_record(s, &evs[2], &seq, &err), &err);
    pthread_join(th, NULL);
    assert_rein_ok(w.rc, NULL);

    /* The newest events_max are kept (SQLite drops older ones in batches). */
    for (int i = 0; i < 150; i++)
        assert_rein_ok(rein_store_event_record(s, &evs[0], &seq, &err), &err);
    assert_int_equal(seq, 155);
    memset(&q, 0, sizeof(q));
    assert_rein_ok(rein_store_events_after(s, "q1", 0, 0, collect_seqs, &q, &err), &err);
    assert_true(q.n >= 10 && q.n <= 10 + 64);
    assert_int_equal(q.seq[q.n - 1], 155);
    for (int i = 1; i < q.n; i++)
        assert_int_equal(q.seq[i], q.seq[i - 1] + 1);
    memset(&q, 0, sizeof(q));
    assert_rein_ok(rein_store_events_after(s, "q1", 150, 0, collect_seqs, &q, &err), &err);
    assert_int_equal(q.n, 5);
    assert_int_equal(q.seq[0], 151);

    /* Bad batches. */
    assert_int_equal(rein_store_events_record(s, evs, 0, NULL, &err), REIN_EINVAL);
    evs[1].conv_id = "q2";
    assert_int_equal(rein_store_events_record(s, evs, 2, NULL, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "share"));
    evs[1].conv_id = "q1";
    evs[1].payload = "{bad";
    assert_int_equal(rein_store_events_record(s, evs, 3, got, &err), REIN_EINVAL);
    assert_int_equal(rein_store_events_wait(s, "../x", 0, 0, NULL, NULL, &err), REIN_EINVAL);
    /* Deleting the conversation drops its events and their counter. */
    assert_rein_ok(rein_store_conv_delete(s, "q1", &err), &err);
    assert_int_equal(rein_store_events_wait(s, "q1", 0, 0, NULL, &last, &err), REIN_ETIMEDOUT);
    assert_int_equal(last, 0);
    rein_store_free(s2);
    rein_store_free(s);
}
BOTH(events_seq)

/* The events of a trace, in the order they were recorded: (conversation, seq) pairs. */
struct trace_walk {
    int n;
    char conv[64][8];
    int64_t seq[64];
};

static int collect_trace(const struct rein_store_event *ev, void *ud)
{
    struct trace_walk *t = ud;

    if (t->n < 64) {
        snprintf(t->conv[t->n], sizeof(t->conv[0]), "%s", ev->conv_id ? ev->conv_id : "-");
        t->seq[t->n] = ev->seq;
        t->n++;
    }
    return 0;
}

/*
 * SQLite: a trace's events across conversations and without one, in the order recorded, also
 * once the oldest have been dropped partway through a batch; they are found through the last
 * event of each batch (decision 0079), which alone is in the trace's index. (Redis keeps a
 * capped list per trace, events_max long.)
 */
static void t_trace_events(struct backend *b)
{
    static const char *trace = "abababababababababababababababab";
    struct rein_store_opts opts = {.events_max = 10, .exclusive = true};
    struct rein_store_event evs[5], other = {.conv_id = "t2",
                                             .trace_id = "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
                                             .type = "final",
                                             .payload = "{}"};
    struct rein_store_event lone = {.trace_id = trace, .type = "x", .payload = "{}"};
    struct trace_walk all = {0}, t1 = {0};
    rein_store *s = NULL;
    rein_error err;

    for (int i = 0; i < 5; i++)
        evs[i] = (struct rein_store_event){
            .conv_id = "t1", .trace_id = trace, .type = "status", .payload = "{}"};
    assert_rein_ok(rein_store_open(b->url, &opts, &s, &err), &err);
    assert_rein_ok(rein_store_conv_create(s, "t1", NULL, NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_conv_create(s, "t2", NULL, NULL, NULL, &err), &err);
    /* 14 batches of 5 in t1: at seq 64 SQLite drops 1..54, cutting batch 51..55 after its
     * fourth event. */
    for (int i = 0; i < 14; i++)
        assert_rein_ok(rein_store_events_record(s, evs, 5, NULL, &err), &err);
    for (int i = 0; i < 3; i++)
        evs[i].conv_id = "t2";
    assert_rein_ok(rein_store_events_record(s, evs, 3, NULL, &err), &err);
    assert_rein_ok(rein_store_event_add(s, &other, &err), &err);
    assert_rein_ok(rein_store_event_add(s, &lone, &err), &err);

    assert_rein_ok(rein_store_events_each(s, "t1", trace, collect_trace, &t1, &err), &err);
    assert_true(t1.n >= 10 && t1.n < 60);
    assert_int_equal(t1.seq[t1.n - 1], 70);
    assert_rein_ok(rein_store_events_each(s, NULL, trace, collect_trace, &all, &err), &err);
    assert_int_equal(all.n, t1.n + 4);
    for (int i = 0; i < t1.n; i++) {
        assert_string_equal(all.conv[i], "t1");
        assert_int_equal(all.seq[i], t1.seq[i]);
    }
    for (int i = 0; i < 3; i++) {
        assert_string_equal(all.conv[t1.n + i], "t2");
        assert_int_equal(all.seq[t1.n + i], i + 1);
    }
    assert_string_equal(all.conv[t1.n + 3], "-");
    rein_store_free(s);
    {
        /* One index entry per batch and per event without a conversation, not per event. */
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;

        assert_int_equal(sqlite3_open(b->url + strlen("sqlite:"), &db), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db,
                                            "SELECT count(*) FROM events INDEXED BY "
                                            "events_trace_tail WHERE tail = 1 AND trace_id = ?1",
                                            -1, &st, NULL),
                         SQLITE_OK);
        sqlite3_bind_text(st, 1, trace, -1, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        /* t1: the batches 51..55 to 66..70 (four), t2: one, and the lone event. */
        assert_int_equal(sqlite3_column_int(st, 0), 6);
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
}
static void sqlite_trace_events(void **state)
{
    (void)state;
    run_backend_excl(false, true, t_trace_events);
}

/* ---- a store written by the first release ------------------------------------------------ */

struct ledger_by_id {
    const char *call_id;
    json_t *entry;
};

static int find_ledger(const char *conv_id, const struct rein_ledger_entry *e, void *ud)
{
    struct ledger_by_id *f = ud;

    (void)conv_id;
    if (strcmp(e->call_id, f->call_id) == 0)
        f->entry = rein_ledger_entry_to_json(e);
    return 0;
}

static json_t *release_entry(rein_store *s, const char *conv, const char *call_id)
{
    struct ledger_by_id f = {call_id, NULL};
    rein_error err;

    assert_rein_ok(rein_store_ledger_each(s, conv, find_ledger, &f, &err), &err);
    assert_non_null(f.entry);
    return f.entry;
}

static void t_release_store(struct backend *b)
{
    struct rein_store_event ev = {.conv_id = "chat-1", .type = "status", .payload = "{}"};
    struct seqs q = {0};
    json_t *page = NULL, *e;
    rein_store *s;
    int64_t seq = 0;
    rein_error err;

    if (b->redis) {
        test_store_fixture_redis(b->server);
    } else {
        char path[700];
        snprintf(path, sizeof(path), "%s/rein.db", b->dir);
        test_store_fixture_sqlite(path);
    }
    s = open_store(b);
    assert_rein_ok(rein_store_conv_list(s, NULL, 0, &page, &err), &err);
    assert_int_equal(json_array_size(json_object_get(page, "conversations")), 4);
    json_decref(page);
    /* The old ledger reads as it was written. */
    e = release_entry(s, "chat-2", "c1");
    assert_string_equal(json_string_value(json_object_get(e, "tool")), "echo");
    assert_string_equal(json_string_value(json_object_get(e, "sent_name")), "Echo");
    assert_null(json_object_get(e, "name_sent"));
    assert_string_equal(json_string_value(json_object_get(e, "status")), "success");
    /* Not measured then; the shape has it all the same. */
    assert_true(json_is_null(json_object_get(e, "latency_ms")));
    assert_true(json_is_null(json_object_get(e, "step")));
    json_decref(e);
    e = release_entry(s, "chat-2", "c2");
    assert_string_equal(json_string_value(json_object_get(e, "status")), "invalid");
    assert_string_equal(json_string_value(json_object_get(json_object_get(e, "result"), "code")),
                        "invalid_arguments");
    json_decref(e);
    /* Recovery at open flagged the call the killed process left running. */
    e = release_entry(s, "chat-4", "s1");
    assert_string_equal(json_string_value(json_object_get(e, "status")), "pending");
    assert_true(json_is_true(json_object_get(e, "interrupted")));
    json_decref(e);
    /* Old events got sequence ids in the order they were written; new ones follow on. */
    assert_rein_ok(rein_store_events_after(s, "chat-1", 0, 0, collect_seqs, &q, &err), &err);
    assert_int_equal(q.n, 16);
    for (int i = 0; i < q.n; i++)
        assert_int_equal(q.seq[i], i + 1);
    assert_string_equal(q.type[0], "status");
    assert_string_equal(q.type[15], "final");
    assert_rein_ok(rein_store_event_record(s, &ev, &seq, &err), &err);
    assert_int_equal(seq, 17);
    rein_store_free(s);
    /* Opening again changes nothing. */
    s = open_store(b);
    memset(&q, 0, sizeof(q));
    assert_rein_ok(rein_store_events_after(s, "chat-1", 15, 0, collect_seqs, &q, &err), &err);
    assert_int_equal(q.n, 2);
    assert_int_equal(q.seq[1], 17);
    rein_store_free(s);
}
BOTH(release_store)

/* ---- locks ------------------------------------------------------------------------------ */

static void t_lock_basic(struct backend *b)
{
    rein_store *s = open_store(b);
    rein_store *other = open_store(b); /* a second instance */
    char token[REIN_ID_MAX], token2[REIN_ID_MAX];
    struct rein_store_lock_info held, info;
    rein_error err;

    assert_int_equal(rein_store_lock_get(s, "k1", &info, &err), REIN_ENOTFOUND);
    assert_rein_ok(rein_store_lock_acquire(s, "k1", 60000, NULL, token, NULL, &err), &err);
    assert_memory_equal(token, "lock_", 5);
    assert_int_equal(rein_store_lock_acquire(other, "k1", 60000, NULL, token2, &held, &err),
                     REIN_EBUSY);
    assert_string_equal(held.state, "thinking");
    assert_string_equal(held.token, token);
    assert_true(held.expires_ms > rein_wall_ms());

    assert_rein_ok(rein_store_lock_set_state(s, "k1", token, "executing", "file_search", &err),
                   &err);
    assert_rein_ok(rein_store_lock_get(other, "k1", &info, &err), &err);
    assert_string_equal(info.state, "executing");
    assert_string_equal(info.tool, "file_search");
    assert_true(info.started_ms > 0);
    assert_int_equal(rein_store_lock_set_state(other, "k1", "lock_wrong", "idle", NULL, &err),
                     REIN_ESTATE);

    assert_rein_ok(rein_store_lock_renew(s, "k1", token, 60000, &err), &err);
    assert_int_equal(rein_store_lock_renew(other, "k1", "lock_wrong", 60000, &err), REIN_ESTATE);
    assert_int_equal(rein_store_lock_release(other, "k1", "lock_wrong", &err), REIN_ESTATE);
    assert_rein_ok(rein_store_lock_release(s, "k1", token, &err), &err);
    assert_int_equal(rein_store_lock_release(s, "k1", token, &err), REIN_ESTATE);
    assert_rein_ok(rein_store_lock_acquire(other, "k1", 60000, "verifying", token2, NULL, &err),
                   &err);
    assert_rein_ok(rein_store_lock_get(s, "k1", &info, &err), &err);
    assert_string_equal(info.state, "verifying");
    assert_rein_ok(rein_store_lock_release(other, "k1", token2, &err), &err);

    assert_int_equal(rein_store_lock_acquire(s, "k1", 0, NULL, token, NULL, &err), REIN_EINVAL);
    assert_int_equal(rein_store_lock_acquire(s, "k/1", 100, NULL, token, NULL, &err), REIN_EINVAL);
    rein_store_free(other);
    rein_store_free(s);
}
BOTH(lock_basic)

static void t_lock_expiry(struct backend *b)
{
    rein_store *s = open_store(b);
    rein_store *other = open_store(b);
    char token[REIN_ID_MAX], token2[REIN_ID_MAX];
    int64_t deadline = rein_now_ms() + 10000;
    rein_err rc;
    rein_error err;

    /* A crashed owner: a short lease that nobody renews (long enough that the next call sees
     * it held even on a loaded machine under ThreadSanitizer, where 150 ms was not). */
    assert_rein_ok(rein_store_lock_acquire(s, "x1", 1000, NULL, token, NULL, &err), &err);
    assert_int_equal(rein_store_lock_acquire(other, "x1", 60000, NULL, token2, NULL, &err),
                     REIN_EBUSY);
    while ((rc = rein_store_lock_acquire(other, "x1", 60000, NULL, token2, NULL, &err)) ==
               REIN_EBUSY &&
           rein_now_ms() < deadline)
        rein_sleep_ms(20);
    assert_rein_ok(rc, &err);
    /* The old owner has lost it and cannot touch the new owner's lock. */
    assert_int_equal(rein_store_lock_renew(s, "x1", token, 60000, &err), REIN_ESTATE);
    assert_int_equal(rein_store_lock_release(s, "x1", token, &err), REIN_ESTATE);
    assert_int_equal(rein_store_lock_set_state(s, "x1", token, "executing", NULL, &err),
                     REIN_ESTATE);
    assert_int_equal(rein_store_lock_acquire(s, "x1", 60000, NULL, token, NULL, &err), REIN_EBUSY);
    assert_rein_ok(rein_store_lock_release(other, "x1", token2, &err), &err);
    rein_store_free(other);
    rein_store_free(s);
}
BOTH(lock_expiry)

struct race {
    rein_store *stores[2];
    pthread_barrier_t barrier;
    int wins;
    int busy;
    pthread_mutex_t mu;
};

static void *race_main(void *arg)
{
    struct race *r = ((void **)arg)[0];
    rein_store *s = ((void **)arg)[1];
    char token[REIN_ID_MAX];
    rein_error err;
    rein_err rc;

    pthread_barrier_wait(&r->barrier);
    rc = rein_store_lock_acquire(s, "race", 60000, NULL, token, NULL, &err);
    pthread_mutex_lock(&r->mu);
    if (rc == REIN_OK)
        r->wins++;
    else if (rc == REIN_EBUSY)
        r->busy++;
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static void t_lock_concurrent(struct backend *b)
{
    enum { N = 8 };
    struct race r = {0};
    pthread_t threads[N];
    void *args[N][2];

    r.stores[0] = open_store(b);
    r.stores[1] = open_store(b);
    pthread_mutex_init(&r.mu, NULL);
    pthread_barrier_init(&r.barrier, NULL, N);
    for (int i = 0; i < N; i++) {
        args[i][0] = &r;
        args[i][1] = r.stores[i % 2];
        assert_int_equal(pthread_create(&threads[i], NULL, race_main, args[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(threads[i], NULL);
    assert_int_equal(r.wins, 1);
    assert_int_equal(r.busy, N - 1);
    pthread_barrier_destroy(&r.barrier);
    pthread_mutex_destroy(&r.mu);
    rein_store_free(r.stores[0]);
    rein_store_free(r.stores[1]);
}
BOTH(lock_concurrent)

/* ---- control messages across two instances ---------------------------------------------- */

struct approval_wait {
    rein_store *s;
    rein_err rc;
    bool approved;
    rein_cancel *cancel;
};

static void *approval_main(void *arg)
{
    struct approval_wait *w = arg;
    rein_error err;

    w->rc = rein_store_approval_wait(w->s, "ctl", "call_7", 20000, w->cancel, &w->approved, &err);
    return NULL;
}

static void t_control(struct backend *b)
{
    rein_store *owner = open_store(b);
    rein_store *other = open_store(b);
    rein_store_lease *lease = NULL;
    struct rein_store_lock_info held;
    struct approval_wait w = {0};
    pthread_t th;
    bool approved = true;
    rein_error err;

    assert_int_equal(rein_store_cancel_request(other, "ctl", "stop", &err), REIN_ESTATE);
    assert_rein_ok(rein_store_lease_acquire(owner, "ctl", 60000, "thinking", &lease, NULL, &err),
                   &err);
    assert_int_equal(rein_store_lease_acquire(other, "ctl", 60000, NULL,
                                              &(rein_store_lease *){NULL}, &held, &err),
                     REIN_EBUSY);
    assert_string_equal(held.token, rein_store_lease_token(lease));

    /* Approvals: only a waiting call can be answered, and only once. */
    assert_int_equal(rein_store_approval_post(other, "ctl", "call_7", true, &err), REIN_ENOTFOUND);
    assert_rein_ok(rein_store_approval_request(owner, "ctl", "call_7", &err), &err);
    assert_rein_ok(rein_store_lease_set_state(lease, "waiting_approval", "delete_file", &err),
                   &err);
    w.s = owner;
    w.cancel = rein_store_lease_cancel(lease);
    /* Both answers go in before the waiter starts: once it has taken the first, a second post
     * finds nothing waiting (ENOTFOUND), so posting during the wait would race. */
    assert_rein_ok(rein_store_approval_post(other, "ctl", "call_7", true, &err), &err);
    assert_int_equal(rein_store_approval_post(other, "ctl", "call_7", false, &err), REIN_EEXIST);
    assert_int_equal(pthread_create(&th, NULL, approval_main, &w), 0);
    pthread_join(th, NULL);
    assert_rein_ok(w.rc, NULL);
    assert_true(w.approved);
    assert_int_equal(rein_store_approval_post(other, "ctl", "call_7", true, &err), REIN_ENOTFOUND);

    /* A denial, and a wait that times out. */
    assert_rein_ok(rein_store_approval_request(owner, "ctl", "call_8", &err), &err);
    assert_rein_ok(rein_store_approval_post(other, "ctl", "call_8", false, &err), &err);
    assert_rein_ok(rein_store_approval_wait(owner, "ctl", "call_8", 5000, NULL, &approved, &err),
                   &err);
    assert_false(approved);
    assert_rein_ok(rein_store_approval_request(owner, "ctl", "call_9", &err), &err);
    assert_int_equal(rein_store_approval_wait(owner, "ctl", "call_9", 50, NULL, &approved, &err),
                     REIN_ETIMEDOUT);

    /* Cancel written by the other instance reaches the owner's cancellation handle. */
    assert_false(rein_cancel_is_set(rein_store_lease_cancel(lease)));
    assert_rein_ok(rein_store_cancel_request(other, "ctl", "user pressed stop", &err), &err);
    assert_true(rein_cancel_wait(rein_store_lease_cancel(lease), 10000));
    assert_string_equal(rein_cancel_reason(rein_store_lease_cancel(lease)), "user pressed stop");
    rein_store_lease_release(lease);

    /* Released: the next turn is not cancelled by the old request. */
    assert_rein_ok(rein_store_lease_acquire(other, "ctl", 60000, NULL, &lease, NULL, &err), &err);
    {
        bool requested = true;
        assert_rein_ok(rein_store_cancel_check(other, "ctl", rein_store_lease_token(lease),
                                               &requested, NULL, &err),
                       &err);
        assert_false(requested);
    }
    rein_store_lease_release(lease);
    rein_store_free(other);
    rein_store_free(owner);
}
BOTH(control)

/* The leases of the renewal tests: renewed every 1,500 ms (a third), so a renewal moves the
 * expiry 1,500 ms past the first one; the tests ask for half of that, as clocks are read on both
 * sides. */
#define LEASE_TEST_MS 4500

static void t_lease_renews(struct backend *b)
{
    rein_store *s = open_store(b);
    rein_store *other = open_store(b);
    rein_store_lease *lease = NULL;
    struct rein_store_lock_info info;
    int64_t first;
    int64_t deadline = rein_now_ms() + 10000;
    rein_error err;

    /* A lease kept alive by its thread outlives its own period. The lease is long enough that
     * only a renewing thread starved for three seconds lets it lapse: a loaded CI machine did it
     * to a 300 ms lease (renewed every 100 ms), and once to 1,500 ms leases under the sanitizers
     * at load 15-20. */
    assert_rein_ok(rein_store_lease_acquire(s, "r1", LEASE_TEST_MS, NULL, &lease, NULL, &err),
                   &err);
    assert_rein_ok(rein_store_lock_get(other, "r1", &info, &err), &err);
    first = info.expires_ms;
    while (rein_now_ms() < deadline) {
        assert_rein_ok(rein_store_lock_get(other, "r1", &info, &err), &err);
        if (info.expires_ms >= first + LEASE_TEST_MS / 6)
            break;
        rein_sleep_ms(20);
    }
    assert_true(info.expires_ms >= first + LEASE_TEST_MS / 6);
    assert_false(rein_cancel_is_set(rein_store_lease_cancel(lease)));
    rein_store_lease_release(lease);
    assert_int_equal(rein_store_lock_get(other, "r1", &info, &err), REIN_ENOTFOUND);
    rein_store_free(other);
    rein_store_free(s);
}
BOTH(lease_renews)

/* One handle's leases share its one lease thread: each is renewed on its own schedule, a
 * cancel request reaches only its own lease, and a lease released early stops being renewed
 * while the others go on. */
static void t_leases_share_the_thread(struct backend *b)
{
    rein_store *s = open_store(b);
    rein_store *other = open_store(b);
    rein_store_lease *lease[3] = {NULL};
    int64_t first[3], deadline = rein_now_ms() + 10000;
    struct rein_store_lock_info info;
    const char *conv[3] = {"m0", "m1", "m2"};
    bool renewed = false;
    rein_error err;

    for (int i = 0; i < 3; i++) {
        assert_rein_ok(
            rein_store_lease_acquire(s, conv[i], LEASE_TEST_MS, NULL, &lease[i], NULL, &err), &err);
        assert_rein_ok(rein_store_lock_get(other, conv[i], &info, &err), &err);
        first[i] = info.expires_ms;
    }
    rein_store_lease_release(lease[0]);
    assert_int_equal(rein_store_lock_get(other, "m0", &info, &err), REIN_ENOTFOUND);
    assert_rein_ok(rein_store_cancel_request(other, "m1", "stop m1", &err), &err);
    assert_true(rein_cancel_wait(rein_store_lease_cancel(lease[1]), 10000));
    assert_string_equal(rein_cancel_reason(rein_store_lease_cancel(lease[1])), "stop m1");
    while (!renewed && rein_now_ms() < deadline) {
        renewed = true;
        for (int i = 1; i < 3; i++) {
            assert_rein_ok(rein_store_lock_get(other, conv[i], &info, &err), &err);
            renewed = renewed && info.expires_ms >= first[i] + LEASE_TEST_MS / 6;
        }
        if (!renewed)
            rein_sleep_ms(20);
    }
    assert_true(renewed);
    assert_false(rein_cancel_is_set(rein_store_lease_cancel(lease[2])));
    assert_int_equal(rein_store_lock_get(other, "m0", &info, &err), REIN_ENOTFOUND);
    rein_store_lease_release(lease[1]);
    rein_store_lease_release(lease[2]);
    rein_store_free(other);
    rein_store_free(s);
}
BOTH(leases_share_the_thread)

/* ---- recovery --------------------------------------------------------------------------- */

static int find_interrupted(const char *conv_id, const struct rein_ledger_entry *e, void *ud)
{
    (void)conv_id;
    *(int *)ud = e->interrupted ? 1 : 0;
    assert_int_equal(e->status == REIN_CALL_PENDING || !e->interrupted, 1);
    return 0;
}

static void assert_conv_state(rein_store *s, const char *id, const char *want)
{
    json_t *o = NULL;
    rein_error err;

    assert_rein_ok(rein_store_conv_get(s, id, &o, &err), &err);
    assert_string_equal(json_string_value(json_object_get(o, "state")), want);
    json_decref(o);
}

static void t_recovery(struct backend *b)
{
    rein_store *live = open_store(b);
    rein_store *dead = open_store(b);
    rein_store *fresh;
    struct rein_ledger_entry e = {.call_id = "call_1", .tool = "echo", .args = "{}", .step = -1};
    char token[REIN_ID_MAX], dead_token[REIN_ID_MAX];
    int flagged = -1, interrupted = -1;
    json_t *o = NULL;
    rein_error err;

    assert_rein_ok(rein_store_conv_create(live, "alive", NULL, NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_conv_create(live, "crashed", NULL, NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_conv_create(live, "orphan", NULL, NULL, NULL, &err), &err);
    /* "alive" runs on a live instance; "crashed" was held by one whose lease ran out;
     * "orphan" has no lock at all. */
    assert_rein_ok(rein_store_lock_acquire(live, "alive", 60000, NULL, token, NULL, &err), &err);
    assert_rein_ok(rein_store_lock_acquire(dead, "crashed", 1, NULL, dead_token, NULL, &err), &err);
    assert_rein_ok(rein_store_ledger_put(live, "alive", &e, &err), &err);
    assert_rein_ok(rein_store_ledger_put(dead, "crashed", &e, &err), &err);
    assert_rein_ok(rein_store_ledger_put(dead, "orphan", &e, &err), &err);
    /* Their turns said they were running (as a session does), and none said it ended; "gone"
     * was running too, and was deleted since. */
    assert_rein_ok(rein_store_conv_create(live, "gone", NULL, NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_conv_create(live, "quiet", NULL, NULL, NULL, &err), &err);
    for (const char *const *id = (const char *const[]){"alive", "crashed", "orphan", "gone", NULL};
         *id; id++)
        assert_rein_ok(rein_store_conv_update(live, *id, NULL, "running", NULL, &err), &err);
    assert_rein_ok(rein_store_conv_delete(live, "gone", &err), &err);
    rein_store_free(dead);
    {
        /* Make sure the 1 ms lease has run out. */
        struct rein_store_lock_info info;
        int64_t deadline = rein_now_ms() + 5000;
        while (rein_store_lock_get(live, "crashed", &info, &err) == REIN_OK &&
               rein_now_ms() < deadline)
            rein_sleep_ms(5);
    }

    /* A new instance starting flags the two dead calls, not the live one. */
    {
        struct rein_store_opts opts = {.no_recover = true};
        assert_rein_ok(rein_store_open(b->url, &opts, &fresh, &err), &err);
    }
    assert_rein_ok(rein_store_recover(fresh, &flagged, &err), &err);
    assert_int_equal(flagged, 2);
    /* The dead turns' conversations say they were interrupted; the live one still runs, the
     * others keep their state, and the deleted one stays deleted. */
    assert_conv_state(fresh, "crashed", "interrupted");
    assert_conv_state(fresh, "orphan", "interrupted");
    assert_conv_state(fresh, "alive", "running");
    assert_conv_state(fresh, "quiet", "idle");
    assert_false(rein_store_conv_exists(fresh, "gone", &err));
    assert_rein_ok(rein_store_recover(fresh, &flagged, &err), &err);
    assert_int_equal(flagged, 0);
    assert_conv_state(fresh, "alive", "running");
    assert_rein_ok(rein_store_ledger_each(fresh, "alive", find_interrupted, &interrupted, &err),
                   &err);
    assert_int_equal(interrupted, 0);
    assert_rein_ok(rein_store_ledger_each(fresh, "crashed", find_interrupted, &interrupted, &err),
                   &err);
    assert_int_equal(interrupted, 1);
    assert_rein_ok(rein_store_conv_export(fresh, "orphan", &o, &err), &err);
    {
        json_t *entry = json_array_get(json_object_get(o, "ledger"), 0);
        assert_string_equal(json_string_value(json_object_get(entry, "status")), "pending");
        assert_true(json_is_true(json_object_get(entry, "interrupted")));
    }
    json_decref(o);
    /* A result arriving later clears the flag. */
    assert_rein_ok(ledger_update(fresh, "orphan", "call_1", REIN_CALL_ERROR,
                                 "{\"error\":\"cancelled\"}", &err),
                   &err);
    assert_rein_ok(rein_store_ledger_each(fresh, "orphan", find_interrupted, &interrupted, &err),
                   &err);
    assert_int_equal(interrupted, 0);
    assert_rein_ok(rein_store_lock_release(live, "alive", token, &err), &err);
    rein_store_free(fresh);
    rein_store_free(live);
}
BOTH(recovery)

/* ---- SQLite only ------------------------------------------------------------------------ */

static char *sqlite_file(const char *dir)
{
    char *path = NULL;

    assert_true(asprintf(&path, "%s/rein.db", dir) > 0);
    return path;
}

static void exec_raw(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    char *msg = NULL;

    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s", msg);
    sqlite3_close(db);
}

EXCLUSIVE(conv_roundtrip)
EXCLUSIVE(messages)
EXCLUSIVE(list_paging)
EXCLUSIVE(find)
EXCLUSIVE(truncate)
EXCLUSIVE(delete)
EXCLUSIVE(ledger)
EXCLUSIVE(events)
EXCLUSIVE(events_seq)
EXCLUSIVE(written_text)
EXCLUSIVE(read_now)

/* ---- group commit (SQLite, exclusive mode) ---------------------------------------------- */

/* The store of a group-commit test (static: the teardown reads it after the test). */
static struct backend gc_backend;

/* A new SQLite file in a new directory, open in exclusive mode (what `rein serve` uses); b
 * must outlive the test (the teardown reads it). */
static rein_store *open_exclusive(struct backend *b)
{
    memset(b, 0, sizeof(*b));
    b->dir = test_tmpdir();
    b->exclusive = true;
    current = b;
    snprintf(b->url, sizeof(b->url), "sqlite:%s/rein.db", b->dir);
    return open_store(b);
}

/* A new SQLite file with the poison trigger, open in exclusive mode. */
static rein_store *open_poisoned(void)
{
    struct backend *b = &gc_backend;
    char path[600];

    rein_store_free(open_exclusive(b));
    snprintf(path, sizeof(path), "%s/rein.db", b->dir);
    test_store_fixture_poison(path);
    return open_store(b);
}

#define GC_THREADS 6
#define GC_CALLS   40

struct gc_thread {
    rein_store *s;
    int k; /* odd: each append is a group of its own (run by the writer thread), even: a plain
              call (lent the connection inside the writer's batch) */
    bool ok[GC_CALLS];
    rein_err rc[GC_CALLS];
    int read_failures;
};

static int gc_count(const struct rein_store_message *m, void *userdata)
{
    (void)m;
    (*(int *)userdata)++;
    return 0;
}

struct gc_append {
    const char *conv, *body;
    int64_t pos;
};

static rein_err gc_append_fn(rein_store *s, void *userdata, rein_error *err)
{
    struct gc_append *a = userdata;

    return rein_store_message_append(s, a->conv, a->body, strlen(a->body), NULL, &a->pos, err);
}

/* Thread k appends GC_CALLS messages to its conversation (thread 0 poisons every fifth) and
 * reads between them, all at once with the others. */
static void *gc_main(void *arg)
{
    struct gc_thread *t = arg;
    char conv[16], body[96];

    snprintf(conv, sizeof(conv), "g%d", t->k);
    for (int i = 0; i < GC_CALLS; i++) {
        int64_t pos = -1;
        int seen = 0;
        rein_error err;
        bool poison = t->k == 0 && i % 5 == 4;
        snprintf(body, sizeof(body), "{\"role\":\"user\",\"content\":\"%s %d\"}",
                 poison ? "poison" : "m", i);
        if (t->k % 2) {
            struct gc_append a = {conv, body, -1};
            t->rc[i] = rein_store_group(t->s, gc_append_fn, &a, &err);
        } else {
            t->rc[i] = rein_store_message_append(t->s, conv, body, strlen(body), NULL, &pos, &err);
        }
        t->ok[i] = t->rc[i] == REIN_OK;
        /* A read fails only when it shared a batch that failed to commit. */
        if (rein_store_messages_each(t->s, conv, 0, gc_count, &seen, &err) != REIN_OK)
            t->read_failures++;
    }
    return NULL;
}

struct gc_check {
    const struct gc_thread *t;
    int next; /* the next successful call expected */
    int64_t pos;
    bool bad;
};

static int gc_verify(const struct rein_store_message *m, void *userdata)
{
    struct gc_check *c = userdata;
    char want[96];

    while (c->next < GC_CALLS && !c->t->ok[c->next])
        c->next++;
    snprintf(want, sizeof(want), "{\"role\":\"user\",\"content\":\"%s %d\"}", "m", c->next);
    if (c->next >= GC_CALLS || strcmp(m->json, want) != 0 || m->position != c->pos)
        c->bad = true;
    c->next++;
    c->pos++;
    return 0;
}

/*
 * Many threads' calls and groups share batches: every call that succeeded is on disk after the
 * store is closed and opened again, in order and without gaps; every call that failed (the
 * poisoned ones, and any that shared their batch) left nothing behind.
 */
static void sqlite_group_commit_keeps_what_it_acknowledged(void **state)
{
    struct gc_thread t[GC_THREADS];
    pthread_t th[GC_THREADS];
    rein_store *s;
    rein_error err;
    int ok = 0;

    (void)state;
    s = open_poisoned();
    for (int k = 0; k < GC_THREADS; k++) {
        char conv[16];
        snprintf(conv, sizeof(conv), "g%d", k);
        assert_rein_ok(rein_store_conv_create(s, conv, NULL, NULL, NULL, &err), &err);
        memset(&t[k], 0, sizeof(t[k]));
        t[k].s = s;
        t[k].k = k;
    }
    for (int k = 0; k < GC_THREADS; k++)
        assert_int_equal(pthread_create(&th[k], NULL, gc_main, &t[k]), 0);
    for (int k = 0; k < GC_THREADS; k++)
        pthread_join(th[k], NULL);
    rein_store_free(s);

    gc_backend.exclusive = false;
    s = open_store(&gc_backend);
    for (int k = 0; k < GC_THREADS; k++) {
        struct gc_check c = {.t = &t[k]};
        char conv[16];
        snprintf(conv, sizeof(conv), "g%d", k);
        for (int i = 0; i < GC_CALLS; i++) {
            if (k == 0 && i % 5 == 4)
                assert_int_equal(t[k].rc[i], REIN_ESTORE);
            else if (!t[k].ok[i])
                assert_int_equal(t[k].rc[i], REIN_ESTORE); /* shared a poisoned batch */
            ok += t[k].ok[i];
        }
        assert_rein_ok(rein_store_messages_each(s, conv, 0, gc_verify, &c, &err), &err);
        assert_false(c.bad);
        while (c.next < GC_CALLS && !t[k].ok[c.next])
            c.next++;
        assert_int_equal(c.next, GC_CALLS); /* every acknowledged message was read back */
    }
    /* Poison fails its own batch only: most calls got through. */
    assert_true(ok > GC_THREADS * GC_CALLS / 2);
    rein_store_free(s);
}

/* One thread alone: a failed commit fails the call, leaves nothing, and the next call works
 * (its batch starts clean). */
static void sqlite_group_commit_failure_is_reported(void **state)
{
    rein_store *s;
    rein_error err;
    int64_t pos = -1;
    int n = 0;
    const char *poison = "{\"role\":\"user\",\"content\":\"poison\"}";

    (void)state;
    s = open_poisoned();
    assert_rein_ok(rein_store_conv_create(s, "p", NULL, NULL, NULL, &err), &err);
    assert_int_equal(rein_store_message_append(s, "p", poison, strlen(poison), NULL, &pos, &err),
                     REIN_ESTORE);
    assert_non_null(strstr(err.msg, "FOREIGN KEY"));
    append(s, "p", "{\"role\":\"user\",\"content\":\"fine\"}", 0);
    assert_rein_ok(rein_store_messages_each(s, "p", 0, gc_count, &n, &err), &err);
    assert_int_equal(n, 1);
    rein_store_free(s);
}

/* ---- groups (rein_store_group) ------------------------------------------------------------ */

struct grp {
    const char *conv;
    bool poison;   /* the second message fails at commit */
    int seen;      /* messages read inside the group */
    rein_err miss; /* an append to a conversation that does not exist */
};

/* Two messages, a call that fails on its own, and a read that sees the group's writes. */
static rein_err grp_fn(rein_store *s, void *userdata, rein_error *err)
{
    struct grp *g = userdata;
    const char *second = g->poison ? "{\"role\":\"user\",\"content\":\"poison\"}"
                                   : "{\"role\":\"assistant\",\"content\":\"two\"}";
    const char *one = "{\"role\":\"user\",\"content\":\"one\"}";
    rein_error miss_err;
    rein_err rc = rein_store_message_append(s, g->conv, one, strlen(one), NULL, NULL, err);

    if (rc == REIN_OK)
        rc = rein_store_message_append(s, g->conv, second, strlen(second), NULL, NULL, err);
    g->miss = rein_store_message_append(s, "nobody", one, strlen(one), NULL, NULL, &miss_err);
    if (rc == REIN_OK)
        rc = rein_store_messages_each(s, g->conv, 0, gc_count, &g->seen, err);
    return rc;
}

/* Every backend: a group's calls read each other's writes, a call failing inside it is undone
 * alone, and what the group wrote is there afterwards. Only SQLite in exclusive mode waits
 * for commits, and there the group waits once, not once per call. */
static void t_group(struct backend *b)
{
    struct rein_store_counts before, after;
    struct grp g = {.conv = "g"};
    rein_store *s = open_store(b);
    rein_error err;
    int n = 0;

    assert_rein_ok(rein_store_conv_create(s, "g", NULL, NULL, NULL, &err), &err);
    rein_store_counts(s, &before);
    assert_rein_ok(rein_store_group(s, grp_fn, &g, &err), &err);
    rein_store_counts(s, &after);
    assert_int_equal(g.seen, 2);
    assert_int_equal(g.miss, REIN_ENOTFOUND);
    assert_true(after.calls >= before.calls + 4);
    assert_int_equal(after.waits - before.waits, b->exclusive ? 1 : 0);
    if (b->exclusive)
        assert_int_equal(after.commits - before.commits, 1);
    rein_store_free(s);
    s = open_store(b);
    assert_rein_ok(rein_store_messages_each(s, "g", 0, gc_count, &n, &err), &err);
    assert_int_equal(n, 2);
    rein_store_free(s);
}

BOTH(group)
EXCLUSIVE(group)

/* A group whose commit fails returns the failure, and none of its writes were kept: a caller
 * told REIN_OK can rely on every one of them. */
static void sqlite_group_commit_failure_keeps_nothing(void **state)
{
    struct grp g = {.conv = "p", .poison = true};
    rein_store *s;
    rein_error err;
    int n = 0;

    (void)state;
    s = open_poisoned();
    assert_rein_ok(rein_store_conv_create(s, "p", NULL, NULL, NULL, &err), &err);
    assert_int_equal(rein_store_group(s, grp_fn, &g, &err), REIN_ESTORE);
    assert_non_null(strstr(err.msg, "FOREIGN KEY"));
    assert_int_equal(g.seen, 2); /* each call succeeded; the commit did not */
    assert_rein_ok(rein_store_messages_each(s, "p", 0, gc_count, &n, &err), &err);
    assert_int_equal(n, 0);
    /* The next group starts clean. */
    g.poison = false;
    g.seen = 0;
    assert_rein_ok(rein_store_group(s, grp_fn, &g, &err), &err);
    assert_int_equal(g.seen, 2);
    rein_store_free(s);
}

/* rein_store_group_ahead: fn's result without the wait (no wait counted), its writes seen by
 * the next calls; rein_store_group_kept after a later call says whether the commit was made:
 * yes for a clean group, REIN_ESTORE with the commit's failure for a poisoned one, whose
 * writes are gone. Other stores commit as they go: ticket 0, always kept. */
static void sqlite_group_ahead_is_checked_later(void **state)
{
    struct grp g = {.conv = "a"};
    struct rein_store_counts before, after;
    rein_store *s;
    uint64_t ticket = 0;
    rein_error err;
    int n = 0;

    (void)state;
    s = open_poisoned();
    assert_rein_ok(rein_store_conv_create(s, "a", NULL, NULL, NULL, &err), &err);
    rein_store_counts(s, &before);
    assert_rein_ok(rein_store_group_ahead(s, grp_fn, &g, &ticket, &err), &err);
    rein_store_counts(s, &after);
    assert_int_equal(after.waits, before.waits);
    assert_true(ticket > 0);
    assert_int_equal(g.seen, 2);
    assert_rein_ok(rein_store_messages_each(s, "a", 0, gc_count, &n, &err), &err);
    assert_int_equal(n, 2);
    assert_rein_ok(rein_store_group_kept(s, ticket, &err), &err);

    g.poison = true;
    g.seen = 0;
    assert_rein_ok(rein_store_group_ahead(s, grp_fn, &g, &ticket, &err), &err);
    assert_int_equal(g.seen, 4);
    n = 0;
    assert_rein_ok(rein_store_messages_each(s, "a", 0, gc_count, &n, &err), &err);
    assert_int_equal(n, 2); /* the poisoned batch was rolled back */
    assert_int_equal(rein_store_group_kept(s, ticket, &err), REIN_ESTORE);
    assert_non_null(strstr(err.msg, "FOREIGN KEY"));
    assert_rein_ok(rein_store_group_kept(s, 0, &err), &err);
    rein_store_free(s);
}

static void t_group_ahead_elsewhere(struct backend *b)
{
    struct grp g = {.conv = "e"};
    rein_store *s = open_store(b);
    uint64_t ticket = 7;
    rein_error err;

    assert_rein_ok(rein_store_conv_create(s, "e", NULL, NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_group_ahead(s, grp_fn, &g, &ticket, &err), &err);
    assert_int_equal(ticket, 0);
    assert_int_equal(g.seen, 2);
    assert_rein_ok(rein_store_group_kept(s, ticket, &err), &err);
    rein_store_free(s);
}
BOTH(group_ahead_elsewhere)

/* ---- the WAL's writes gathered (src/store/sqlite_wal.c, decision 0072) -------------------- */

/* A VFS under rein's that counts the writes reaching WAL files: set as SQLite's default before
 * the first store of the process opens, so rein's VFS wraps it. */
static sqlite3_vfs *wc_under;
static sqlite3_vfs wc_vfs;
static sqlite3_io_methods wc_methods;
static const sqlite3_io_methods *wc_real_methods;
static atomic_int wc_writes, wc_syncs;
static atomic_llong wc_bytes;

static int wc_write(sqlite3_file *f, const void *src, int n, sqlite3_int64 off)
{
    atomic_fetch_add(&wc_writes, 1);
    atomic_fetch_add(&wc_bytes, n);
    return wc_real_methods->xWrite(f, src, n, off);
}

static int wc_sync(sqlite3_file *f, int flags)
{
    atomic_fetch_add(&wc_syncs, 1);
    return wc_real_methods->xSync(f, flags);
}

static int wc_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
    int rc = wc_under->xOpen(wc_under, name, f, flags, out);

    (void)vfs;
    if (rc == SQLITE_OK && (flags & SQLITE_OPEN_WAL) && f->pMethods) {
        wc_real_methods = f->pMethods;
        wc_methods = *f->pMethods;
        wc_methods.xWrite = wc_write;
        wc_methods.xSync = wc_sync;
        f->pMethods = &wc_methods;
    }
    return rc;
}

/* False when a store opened in this process before (rein's VFS already wraps another). */
static bool wc_install(void)
{
    if (sqlite3_vfs_find("rein-wal"))
        return false;
    wc_under = sqlite3_vfs_find(NULL);
    wc_vfs = *wc_under;
    wc_vfs.zName = "test-count";
    wc_vfs.xOpen = wc_open;
    return sqlite3_vfs_register(&wc_vfs, 1) == SQLITE_OK;
}

struct wal_fill {
    const char *conv;
    int first, n, size; /* messages first .. first + n - 1, each with size letters */
};

static rein_err wal_fill_fn(rein_store *s, void *userdata, rein_error *err)
{
    struct wal_fill *w = userdata;
    char *body = malloc((size_t)w->size + 64);
    rein_err rc = REIN_OK;

    assert_non_null(body);
    for (int i = w->first; i < w->first + w->n && rc == REIN_OK; i++) {
        int len = snprintf(body, 64, "{\"role\":\"user\",\"content\":\"%d:", i);

        memset(body + len, 'a' + i % 26, (size_t)w->size);
        len += w->size;
        len += snprintf(body + len, 64, "\"}");
        rc = rein_store_message_append(s, w->conv, body, (size_t)len, NULL, NULL, err);
    }
    free(body);
    return rc;
}

struct wal_check {
    int seen, size, bad;
};

static int wal_check_fn(const struct rein_store_message *m, void *userdata)
{
    struct wal_check *c = userdata;
    char head[64];
    int len = snprintf(head, sizeof(head), "{\"role\":\"user\",\"content\":\"%d:", c->seen);

    if (m->len != (size_t)(len + c->size + 2) || memcmp(m->json, head, (size_t)len) != 0 ||
        m->json[len] != 'a' + c->seen % 26 || m->json[len + c->size - 1] != 'a' + c->seen % 26)
        c->bad++;
    c->seen++;
    return 0;
}

/* A group commit of many pages reaches the WAL file in a few large writes, not a header and a
 * page for each frame; every write is there before the sync that makes it durable. */
static void sqlite_wal_writes_gathered(void **state)
{
    struct wal_fill w = {.conv = "w", .n = 40, .size = 3000};
    struct wal_check c = {.size = 3000};
    static struct backend b;
    rein_store *s;
    rein_error err;
    int writes, syncs;
    long long bytes;

    (void)state;
    if (!wc_install()) {
        print_message("[  SKIPPED ] a store was opened before in this process\n");
        skip();
    }
    s = open_exclusive(&b);
    assert_rein_ok(rein_store_conv_create(s, "w", NULL, NULL, NULL, &err), &err);
    atomic_store(&wc_writes, 0);
    atomic_store(&wc_syncs, 0);
    atomic_store(&wc_bytes, 0);
    assert_rein_ok(rein_store_group(s, wal_fill_fn, &w, &err), &err);
    writes = atomic_load(&wc_writes);
    syncs = atomic_load(&wc_syncs);
    bytes = atomic_load(&wc_bytes);
    /* 40 messages of 3 KB: about 40 pages, so over 80 writes when each frame is two. */
    assert_true(syncs >= 1);
    assert_true(bytes > 40 * 3000);
    assert_in_range(writes, 1, 4 * syncs);
    assert_rein_ok(rein_store_messages_each(s, "w", 0, wal_check_fn, &c, &err), &err);
    assert_int_equal(c.seen, 40);
    assert_int_equal(c.bad, 0);
    rein_store_free(s);
}

/* A group larger than SQLite's page cache spills frames into the WAL before its commit,
 * reads them back and rewrites some in place: every message reads back whole, in this
 * process and in a fresh one's view (a new handle). */
static void sqlite_wal_large_group_reads_back(void **state)
{
    struct wal_fill w = {.conv = "big", .n = 900, .size = 5000};
    static struct backend b;
    rein_store *s;
    rein_error err;

    (void)state;
    s = open_exclusive(&b);
    assert_rein_ok(rein_store_conv_create(s, "big", NULL, NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_group(s, wal_fill_fn, &w, &err), &err);
    w.first = 900;
    w.n = 30;
    assert_rein_ok(rein_store_group(s, wal_fill_fn, &w, &err), &err);
    for (int round = 0; round < 2; round++) {
        struct wal_check c = {.size = 5000};

        assert_rein_ok(rein_store_messages_each(s, "big", 0, wal_check_fn, &c, &err), &err);
        assert_int_equal(c.seen, 930);
        assert_int_equal(c.bad, 0);
        rein_store_free(s);
        s = round == 0 ? open_store(&b) : NULL;
    }
}

/* ---- the writer's checkpoint (decision 0078) ------------------------------------------------ */

/* A VFS under rein's that counts the writes reaching the database file (only a checkpoint
 * writes there in WAL mode) and, while hold_db is set, keeps each one waiting until the test
 * posts hold_go: a checkpoint then cannot end before the test lets it. */
static sqlite3_vfs *hd_under;
static sqlite3_vfs hd_vfs;
static sqlite3_io_methods hd_methods;
static const sqlite3_io_methods *hd_real_methods;
static atomic_int hd_writes;
static atomic_bool hold_db, hold_timed_out;
static sem_t hold_go;

static int hd_write(sqlite3_file *f, const void *src, int n, sqlite3_int64 off)
{
    if (atomic_load(&hold_db)) {
        struct timespec until;

        /* A bound, so that a checkpoint the submitter waits for fails the test instead of
         * hanging it. */
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 30;
        while (sem_timedwait(&hold_go, &until) != 0) {
            if (errno != EINTR) {
                atomic_store(&hold_timed_out, true);
                break;
            }
        }
        atomic_store(&hold_db, false);
    }
    atomic_fetch_add(&hd_writes, 1);
    return hd_real_methods->xWrite(f, src, n, off);
}

static int hd_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
    int rc = hd_under->xOpen(hd_under, name, f, flags, out);

    (void)vfs;
    if (rc == SQLITE_OK && (flags & SQLITE_OPEN_MAIN_DB) && f->pMethods) {
        hd_real_methods = f->pMethods;
        hd_methods = *f->pMethods;
        hd_methods.xWrite = hd_write;
        f->pMethods = &hd_methods;
    }
    return rc;
}

static bool hd_install(void)
{
    if (sqlite3_vfs_find("rein-wal"))
        return false;
    hd_under = sqlite3_vfs_find(NULL);
    hd_vfs = *hd_under;
    hd_vfs.zName = "test-hold";
    hd_vfs.xOpen = hd_open;
    return sqlite3_vfs_register(&hd_vfs, 1) == SQLITE_OK;
}

static rein_err nothing_fn(rein_store *s, void *userdata, rein_error *err)
{
    (void)s;
    (void)userdata;
    (void)err;
    return REIN_OK;
}

/* Frames in the WAL file at path (4 KB pages). */
static long wal_frames_at(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && st.st_size > 32 ? (long)((st.st_size - 32) / (4096 + 24)) : 0;
}

/* Exclusive mode: the WAL is not copied into the database at SQLite's 1,000 frames, but once
 * it holds the writer's threshold (1,500 here); and the copy runs after the batch that passed
 * it was answered: its submitter returns while the copy is held. */
static void sqlite_checkpoint_after_told(void **state)
{
    struct wal_fill w = {.conv = "k", .n = 40, .size = 3000};
    struct wal_check c = {.size = 3000};
    static struct backend b;
    char wal[600];
    rein_store *s;
    rein_error err;

    (void)state;
    if (!hd_install()) {
        print_message("[  SKIPPED ] a store was opened before in this process\n");
        skip();
    }
    sem_init(&hold_go, 0, 0);
    rein__store_sqlite_checkpoint_at(1500);
    s = open_exclusive(&b);
    snprintf(wal, sizeof(wal), "%s/rein.db-wal", b.dir);
    assert_rein_ok(rein_store_conv_create(s, "k", NULL, NULL, NULL, &err), &err);
    atomic_store(&hd_writes, 0);
    /* Past SQLite's automatic checkpoint (1,000 frames; each group adds about 50): nothing
     * reaches the database. */
    for (int i = 0; i < 100 && wal_frames_at(wal) < 1100; i++) {
        assert_rein_ok(rein_store_group(s, wal_fill_fn, &w, &err), &err);
        w.first += w.n;
    }
    assert_in_range(wal_frames_at(wal), 1100, 1499);
    assert_int_equal(atomic_load(&hd_writes), 0);
    assert_int_equal(rein__store_checkpoints(s), 0);
    /* A batch that passes the threshold: its submitter is answered while the copy is held,
     * and the copy ends once let go. */
    atomic_store(&hold_db, true);
    w.n = 800;
    assert_rein_ok(rein_store_group(s, wal_fill_fn, &w, &err), &err);
    w.first += w.n;
    assert_int_equal(rein__store_checkpoints(s), 0);
    sem_post(&hold_go);
    assert_rein_ok(rein_store_group(s, nothing_fn, NULL, &err), &err);
    assert_false(atomic_load(&hold_timed_out));
    assert_int_equal(rein__store_checkpoints(s), 1);
    assert_true(atomic_load(&hd_writes) > 0);
    /* Everything reads back, here and after a reopen. */
    for (int round = 0; round < 2; round++) {
        c.seen = 0;
        assert_rein_ok(rein_store_messages_each(s, "k", 0, wal_check_fn, &c, &err), &err);
        assert_int_equal(c.seen, w.first);
        assert_int_equal(c.bad, 0);
        rein_store_free(s);
        s = round == 0 ? open_store(&b) : NULL;
    }
    rein__store_sqlite_checkpoint_at(0);
    sem_destroy(&hold_go);
}

/* ---- one-statement calls in a group take no savepoint (decision 0073) -------------------- */

struct one_calls {
    int failures; /* calls that failed as they should */
};

static int one_count(const struct rein_store_message *m, void *userdata)
{
    (void)m;
    (*(int *)userdata)++;
    return 0;
}

static int one_ledger_count(const char *conv_id, const struct rein_ledger_entry *e, void *userdata)
{
    (void)conv_id;
    (void)e;
    (*(int *)userdata)++;
    return 0;
}

static rein_err one_calls_fn(rein_store *s, void *userdata, rein_error *err)
{
    struct one_calls *oc = userdata;
    struct rein_ledger_entry e = {
        .call_id = "c1", .tool = "echo", .args = "{\"text\":\"x\"}", .step = -1};
    struct rein_ledger_entry missing = e;
    struct rein_store_text msg = {"{\"role\":\"user\",\"content\":\"m\"}", 29};
    rein_error ignored;
    json_t *conv = NULL;
    int n = 0;
    rein_err rc;

    missing.call_id = "c-none";
    missing.status = REIN_CALL_SUCCESS;
    missing.result = "{}";
    /* Reads and one-statement writes, two of which fail: none takes a savepoint, and a failed
     * one leaves the others' writes in the batch. */
    rc = rein_store_conv_update(s, "one", "renamed", NULL, NULL, err);
    if (rc == REIN_OK)
        rc = rein_store_ledger_put(s, "one", &e, err);
    if (rc == REIN_OK && rein_store_ledger_update(s, "one", &missing, &ignored) == REIN_ENOTFOUND)
        oc->failures++;
    if (rc == REIN_OK &&
        rein_store_conv_create(s, "one", NULL, NULL, NULL, &ignored) == REIN_EEXIST)
        oc->failures++;
    if (rc == REIN_OK)
        rc = rein_store_conv_get(s, "one", &conv, err);
    json_decref(conv);
    if (rc == REIN_OK)
        rc = rein_store_messages_each(s, "one", 0, one_count, &n, err);
    /* Several statements: a savepoint, so that it fails whole. */
    if (rc == REIN_OK)
        rc = rein_store_messages_append(s, "one", &msg, 1, NULL, NULL, err);
    return rc;
}

static void sqlite_group_one_statement_calls(void **state)
{
    static struct backend b;
    struct one_calls oc = {0};
    rein_store *s;
    rein_error err;
    json_t *conv = NULL;
    uint64_t before;
    int n = 0;

    (void)state;
    s = open_exclusive(&b);
    assert_rein_ok(rein_store_conv_create(s, "one", "t", NULL, NULL, &err), &err);
    before = rein__store_savepoints(s);
    assert_rein_ok(rein_store_group(s, one_calls_fn, &oc, &err), &err);
    assert_int_equal(oc.failures, 2);
    assert_int_equal(rein__store_savepoints(s) - before, 1);
    /* Everything that succeeded was committed, after a reopen too. */
    rein_store_free(s);
    s = open_store(&b);
    assert_rein_ok(rein_store_conv_get(s, "one", &conv, &err), &err);
    assert_string_equal(json_string_value(json_object_get(conv, "title")), "renamed");
    assert_int_equal(json_integer_value(json_object_get(conv, "message_count")), 1);
    json_decref(conv);
    assert_rein_ok(rein_store_messages_each(s, "one", 0, one_count, &n, &err), &err);
    assert_int_equal(n, 1);
    n = 0;
    assert_rein_ok(rein_store_ledger_each(s, "one", one_ledger_count, &n, &err), &err);
    assert_int_equal(n, 1);
    rein_store_free(s);
}

static void sqlite_migrates_v1(void **state)
{
    /* A database written by the first schema version, with data in it. */
    static const char *const v1 =
        "CREATE TABLE schema_version (version INTEGER NOT NULL);"
        "INSERT INTO schema_version VALUES (1);"
        "CREATE TABLE conversations (id TEXT PRIMARY KEY, title TEXT, state TEXT NOT NULL "
        "DEFAULT 'idle', metadata TEXT, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT "
        "NULL, message_count INTEGER NOT NULL DEFAULT 0);"
        "CREATE INDEX conversations_updated ON conversations(updated_ms, id);"
        "CREATE TABLE messages (conversation_id TEXT NOT NULL REFERENCES conversations(id) ON "
        "DELETE CASCADE, position INTEGER NOT NULL, created_ms INTEGER NOT NULL, trace_id TEXT "
        "NOT NULL DEFAULT '', body TEXT NOT NULL, PRIMARY KEY (conversation_id, position)) "
        "WITHOUT ROWID;"
        "CREATE TABLE ledger (conversation_id TEXT NOT NULL REFERENCES conversations(id) ON "
        "DELETE CASCADE, seq INTEGER NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL, args "
        "TEXT NOT NULL, status TEXT NOT NULL, result TEXT, call_ms INTEGER NOT NULL, response_ms "
        "INTEGER, step INTEGER, trace_id TEXT NOT NULL DEFAULT '', PRIMARY KEY "
        "(conversation_id, call_id));"
        "CREATE TABLE events (id INTEGER PRIMARY KEY, conversation_id TEXT, trace_id TEXT, type "
        "TEXT NOT NULL, payload TEXT NOT NULL, time_ms INTEGER NOT NULL);"
        "INSERT INTO conversations VALUES ('old', 'From v1', 'idle', NULL, 1700000000000, "
        "1700000000000, 1);"
        "INSERT INTO messages VALUES ('old', 0, 1700000000000, '', "
        "'{\"role\":\"user\",\"content\":\"hello\"}');"
        "INSERT INTO ledger VALUES ('old', 1, 'call_1', 'echo', '{}', 'pending', NULL, "
        "1700000000000, NULL, NULL, '');";
    char *dir = test_tmpdir();
    char *path = sqlite_file(dir);
    char url[600];
    struct backend b = {0};
    rein_store *s;
    json_t *o = NULL, *entry;
    char token[REIN_ID_MAX];
    rein_error err;

    (void)state;
    exec_raw(path, v1);
    snprintf(url, sizeof(url), "sqlite:%s", path);
    snprintf(b.url, sizeof(b.url), "%s", url);
    s = open_store(&b);
    assert_rein_ok(rein_store_conv_export(s, "old", &o, &err), &err);
    assert_string_equal(json_string_value(json_object_get(o, "title")), "From v1");
    assert_int_equal(json_array_size(json_object_get(o, "messages")), 1);
    entry = json_array_get(json_object_get(o, "ledger"), 0);
    assert_string_equal(json_string_value(json_object_get(entry, "sent_name")), "echo");
    /* Recovery at open ran on the migrated table: the dead v1 call is flagged. */
    assert_true(json_is_true(json_object_get(entry, "interrupted")));
    json_decref(o);
    append(s, "old", "{\"role\":\"assistant\",\"content\":\"hi\"}", 1);
    assert_rein_ok(rein_store_lock_acquire(s, "old", 1000, NULL, token, NULL, &err), &err);
    rein_store_free(s);
    /* Opening again finds the current version and changes nothing. */
    s = open_store(&b);
    rein_store_free(s);
    test_rmtree(dir);
    free(path);
    free(dir);
}

/* The plan SQLite chooses for sql, one line per step. */
static void query_plan(const char *path, const char *sql, char *out, size_t size)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char *q = NULL;
    size_t n = 0;

    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_true(asprintf(&q, "EXPLAIN QUERY PLAN %s", sql) > 0);
    assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
    out[0] = '\0';
    while (sqlite3_step(st) == SQLITE_ROW)
        n += (size_t)snprintf(out + n, n < size ? size - n : 0, "%s\n",
                              (const char *)sqlite3_column_text(st, 3));
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(q);
}

/*
 * A page of the list is read from one index that holds every column the list answers with,
 * never from the table (decision 0064), also in a database made before that index existed
 * (schema 5, as the previous release leaves it, with the list's old index).
 */
static void sqlite_list_reads_only_its_index(void **state)
{
    /* The list's two statements as src/store/store_sqlite.c has them (ST_CONV_LIST_*). */
    static const char *const lists[] = {
        "SELECT id, title, state, metadata, created_ms, updated_ms, message_count FROM "
        "conversations WHERE (?4 IS NULL OR instr(lower(COALESCE(title, '')), lower(?4)) > 0) "
        "ORDER BY updated_ms DESC, id DESC LIMIT ?3",
        "SELECT id, title, state, metadata, created_ms, updated_ms, message_count FROM "
        "conversations WHERE (updated_ms < ?1 OR (updated_ms = ?1 AND id < ?2)) AND (?4 IS NULL "
        "OR instr(lower(COALESCE(title, '')), lower(?4)) > 0) ORDER BY updated_ms DESC, id DESC "
        "LIMIT ?3"};
    char *dir = test_tmpdir();
    char *path = sqlite_file(dir);
    struct backend b = {0};
    rein_store *s;
    json_t *page = NULL;
    char plan[1024];
    rein_error err;

    (void)state;
    snprintf(b.url, sizeof(b.url), "sqlite:%s", path);
    s = open_store(&b);
    assert_rein_ok(rein_store_conv_create(s, "a", "First", NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_conv_create(s, "b", "Second", NULL, NULL, &err), &err);
    rein_store_free(s);
    /* Back to schema 5: the old indexes (step 7's events index too), the old version number. */
    exec_raw(path, "DROP INDEX conversations_listed;"
                   "CREATE INDEX conversations_updated ON conversations(updated_ms, id);"
                   "DROP INDEX events_trace_tail; ALTER TABLE events DROP COLUMN tail;"
                   "CREATE INDEX events_trace ON events(trace_id, id);"
                   "UPDATE schema_version SET version = 5;");
    for (size_t i = 0; i < REIN_ARRAY_SIZE(lists); i++) {
        query_plan(path, lists[i], plan, sizeof(plan));
        assert_null(strstr(plan, "COVERING"));
    }
    s = open_store(&b);
    assert_rein_ok(rein_store_conv_list(s, NULL, 10, &page, &err), &err);
    assert_int_equal(json_array_size(json_object_get(page, "conversations")), 2);
    json_decref(page);
    rein_store_free(s);
    for (size_t i = 0; i < REIN_ARRAY_SIZE(lists); i++) {
        query_plan(path, lists[i], plan, sizeof(plan));
        assert_non_null(strstr(plan, "USING COVERING INDEX conversations_listed"));
        assert_null(strstr(plan, "TEMP B-TREE"));
    }
    test_rmtree(dir);
    free(path);
    free(dir);
}

static void sqlite_refuses_newer(void **state)
{
    char *dir = test_tmpdir();
    char *path = sqlite_file(dir);
    char url[600];
    rein_store *s = NULL;
    rein_error err;

    (void)state;
    exec_raw(path, "CREATE TABLE schema_version (version INTEGER NOT NULL);"
                   "INSERT INTO schema_version VALUES (99);");
    snprintf(url, sizeof(url), "sqlite:%s", path);
    assert_int_equal(rein_store_open(url, NULL, &s, &err), REIN_ESTORE);
    assert_null(s);
    assert_non_null(strstr(err.msg, "schema version 99"));
    assert_non_null(strstr(err.msg, "newer"));
    assert_non_null(strstr(err.msg, path));
    test_rmtree(dir);
    free(path);
    free(dir);
}

static void sqlite_bad_files(void **state)
{
    char *dir = test_tmpdir();
    char *garbage = test_write_file(dir, "garbage.db",
                                    "this is not a database at all, just some text that is long "
                                    "enough to fill a header. 0123456789abcdef0123456789abcdef "
                                    "0123456789abcdef0123456789abcdef");
    char url[600];
    rein_store *s = NULL;
    rein_error err;

    (void)state;
    snprintf(url, sizeof(url), "sqlite:%s", garbage);
    assert_int_equal(rein_store_open(url, NULL, &s, &err), REIN_ESTORE);
    assert_non_null(strstr(err.msg, "not a rein database"));
    assert_non_null(strstr(err.msg, garbage));

    snprintf(url, sizeof(url), "sqlite:%s/no/such/folder/rein.db", dir);
    assert_int_equal(rein_store_open(url, NULL, &s, &err), REIN_ESTORE);
    assert_non_null(strstr(err.msg, "no/such/folder"));

    /* A folder where the file should be. */
    snprintf(url, sizeof(url), "sqlite:%s", dir);
    assert_int_equal(rein_store_open(url, NULL, &s, &err), REIN_ESTORE);
    assert_null(s);

    assert_int_equal(rein_store_open("mysql://x", NULL, &s, &err), REIN_EINVAL);
    assert_int_equal(rein_store_open("sqlite:", NULL, &s, &err), REIN_EINVAL);
    test_rmtree(dir);
    free(garbage);
    free(dir);
}

static void sqlite_readonly_file(void **state)
{
    char *dir = test_tmpdir();
    char *path = sqlite_file(dir);
    char url[600];
    rein_store *s = NULL;
    rein_error err;

    (void)state;
    snprintf(url, sizeof(url), "sqlite:%s", path);
    assert_rein_ok(rein_store_open(url, NULL, &s, &err), &err);
    rein_store_free(s);
    s = NULL;
    if (geteuid() == 0) {
        /* root writes through permissions; an immutable-looking file cannot be arranged
         * portably, so check the other path to an unwritable store: a file in /proc. */
        assert_int_equal(rein_store_open("sqlite:/proc/version", NULL, &s, &err), REIN_ESTORE);
    } else {
        chmod(path, 0444);
        chmod(dir, 0555);
        assert_int_equal(rein_store_open(url, NULL, &s, &err), REIN_ESTORE);
        assert_non_null(strstr(err.msg, "writable"));
        chmod(dir, 0755);
    }
    assert_null(s);
    test_rmtree(dir);
    free(path);
    free(dir);
}

/* Exclusive mode (what rein serve uses): no -shm file is mapped, so truncating or removing it
 * from outside cannot crash the process with SIGBUS; a second process is refused; the WAL is
 * written over from its start after each checkpoint instead of growing. */
static void sqlite_exclusive_maps_no_shm(void **state)
{
    char *dir = test_tmpdir();
    char url[600], shm[600], wal[600];
    struct rein_store_opts opts = {.exclusive = true};
    rein_store *s = NULL, *other = NULL;
    rein_error err;
    struct stat st;
    char *big = malloc(64 << 10);

    (void)state;
    snprintf(url, sizeof(url), "sqlite:%s/rein.db", dir);
    snprintf(shm, sizeof(shm), "%s/rein.db-shm", dir);
    snprintf(wal, sizeof(wal), "%s/rein.db-wal", dir);
    assert_rein_ok(rein_store_open(url, &opts, &s, &err), &err);
    assert_rein_ok(rein_store_conv_create(s, "x", NULL, NULL, NULL, &err), &err);
    assert_int_not_equal(stat(shm, &st), 0);
    /* Another process (here: another handle) cannot use the file meanwhile. */
    {
        struct rein_store_opts quick = {.busy_timeout_ms = 50};
        assert_int_equal(rein_store_open(url, &quick, &other, &err), REIN_ESTORE);
        assert_null(other);
    }
    /* 200 messages of 64 KiB pass a checkpoint at 1,000 frames (the writer's threshold set
     * low here, decision 0078) several times; the WAL is written over from its start after
     * each, so it stays near 1,000 frames (4 MiB) instead of growing. */
    rein__store_sqlite_checkpoint_at(1000);
    memset(big, 'a', 64 << 10);
    memcpy(big, "{\"role\":\"user\",\"content\":\"", 26);
    memcpy(big + (64 << 10) - 3, "\"}", 3);
    for (int i = 0; i < 200; i++)
        assert_rein_ok(rein_store_message_append(s, "x", big, strlen(big), NULL, NULL, &err), &err);
    assert_int_equal(stat(wal, &st), 0);
    assert_true(st.st_size <= (8 << 20));
    rein__store_sqlite_checkpoint_at(0);
    rein_store_free(s);
    free(big);
    test_rmtree(dir);
    free(dir);
}

static void sqlite_memory(void **state)
{
    rein_store *s = NULL;
    rein_error err;

    (void)state;
    assert_rein_ok(rein_store_open("sqlite::memory:", NULL, &s, &err), &err);
    assert_string_equal(rein_store_kind(s), "sqlite");
    assert_rein_ok(rein_store_conv_create(s, "m", NULL, NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_ping(s, &err), &err);
    rein_store_free(s);
}

/* Out-of-memory at every allocation of an append + export: errors, never a leak or crash. */
static rein_store *torture_store;

static void torture_body(void *arg)
{
    json_t *o = NULL;
    rein_error err;

    (void)arg;
    if (rein_store_message_append(torture_store, "t", "{\"role\":\"user\",\"content\":\"x\"}", 30,
                                  NULL, NULL, &err) != REIN_OK)
        return;
    if (rein_store_conv_export(torture_store, "t", &o, &err) == REIN_OK)
        json_decref(o);
}

static void sqlite_alloc_torture(void **state)
{
    char *dir = test_tmpdir();
    char url[600];
    rein_error err;
    struct rein_ledger_entry e = {
        .call_id = "c", .tool = "echo", .args = "{\"a\":[1,2]}", .step = -1};

    (void)state;
    snprintf(url, sizeof(url), "sqlite:%s/rein.db", dir);
    assert_rein_ok(rein_store_open(url, NULL, &torture_store, &err), &err);
    assert_rein_ok(rein_store_conv_create(torture_store, "t", NULL, "{\"k\":1}", NULL, &err), &err);
    assert_rein_ok(rein_store_ledger_put(torture_store, "t", &e, &err), &err);
    test_alloc_torture(torture_body, NULL);
    rein_store_free(torture_store);
    test_rmtree(dir);
    free(dir);
}

/* ---- Redis only ------------------------------------------------------------------------- */

static void t_redis_down(struct backend *b)
{
    char url[64];
    rein_store *s = NULL;
    rein_error err;
    int port = test_free_port();

    (void)b;
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
    assert_int_equal(rein_store_open(url, NULL, &s, &err), REIN_ESTORE);
    assert_null(s);
    snprintf(url, sizeof(url), "127.0.0.1:%d", port);
    assert_non_null(strstr(err.msg, url));
    assert_non_null(strstr(err.msg, "refused"));
    assert_int_equal(rein_store_open("redis://", NULL, &s, &err), REIN_EINVAL);
    assert_int_equal(rein_store_open("redis://host:99999", NULL, &s, &err), REIN_EINVAL);
    assert_int_equal(rein_store_open("redis://host:1/x", NULL, &s, &err), REIN_EINVAL);
}

static void redis_down(void **state)
{
    (void)state;
    run_backend(true, t_redis_down);
}

static void t_redis_reconnect(struct backend *b)
{
    rein_store *s = open_store(b);
    const char *reply;
    json_t *o = NULL;
    rein_error err;

    assert_rein_ok(rein_store_conv_create(s, "rc", NULL, NULL, NULL, &err), &err);
    /* The server drops every client connection, as a restart or a proxy would. */
    reply = test_redis_command(b->server, "CLIENT KILL TYPE normal");
    assert_non_null(reply);
    assert_rein_ok(rein_store_conv_get(s, "rc", &o, &err), &err);
    json_decref(o);
    append(s, "rc", "{\"role\":\"user\",\"content\":\"after\"}", 0);
    /* Once the server is gone for good, the error names it. */
    test_redis_stop(b->server);
    b->server = NULL;
    assert_int_equal(rein_store_conv_get(s, "rc", &o, &err), REIN_ESTORE);
    assert_non_null(strstr(err.msg, "127.0.0.1:"));
    rein_store_free(s);
}

static void redis_reconnect(void **state)
{
    (void)state;
    run_backend(true, t_redis_reconnect);
}

static void t_redis_prefix(struct backend *b)
{
    struct rein_store_opts a_opts = {.key_prefix = "teamA:"};
    struct rein_store_opts b_opts = {.key_prefix = "teamB:"};
    rein_store *sa = NULL, *sb = NULL;
    json_t *page = NULL;
    rein_error err;

    assert_rein_ok(rein_store_open(b->url, &a_opts, &sa, &err), &err);
    assert_rein_ok(rein_store_open(b->url, &b_opts, &sb, &err), &err);
    assert_rein_ok(rein_store_conv_create(sa, "same", NULL, NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_conv_create(sb, "same", NULL, NULL, NULL, &err), &err);
    assert_rein_ok(rein_store_conv_delete(sa, "same", &err), &err);
    assert_true(rein_store_conv_exists(sb, "same", &err));
    assert_rein_ok(rein_store_conv_list(sa, NULL, 10, &page, &err), &err);
    assert_int_equal(json_array_size(json_object_get(page, "conversations")), 0);
    json_decref(page);
    assert_string_equal(rein_store_kind(sa), "redis");
    rein_store_free(sa);
    rein_store_free(sb);
}

static void redis_prefix(void **state)
{
    (void)state;
    run_backend(true, t_redis_prefix);
}

static void store_ids(void **state)
{
    (void)state;
    assert_true(rein_store_id_is_valid("conv_abc-DEF.1"));
    assert_false(rein_store_id_is_valid(""));
    assert_false(rein_store_id_is_valid(NULL));
    assert_false(rein_store_id_is_valid(".hidden"));
    assert_false(rein_store_id_is_valid("a..b"));
    assert_false(rein_store_id_is_valid("a/b"));
    assert_false(rein_store_id_is_valid("a%2Fb"));
    assert_false(rein_store_id_is_valid("a:b"));
    assert_false(rein_store_id_is_valid("01234567890123456789012345678901234567890123456789"
                                        "012345678901234"));
    assert_string_equal(rein_call_status_name(REIN_CALL_INVALID), "invalid");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(store_ids),
    cmocka_unit_test_teardown(sqlite_conv_roundtrip, cleanup),
    cmocka_unit_test_teardown(redis_conv_roundtrip, cleanup),
    cmocka_unit_test_teardown(sqlite_messages, cleanup),
    cmocka_unit_test_teardown(redis_messages, cleanup),
    cmocka_unit_test_teardown(sqlite_group_ahead_elsewhere, cleanup),
    cmocka_unit_test_teardown(redis_group_ahead_elsewhere, cleanup),
    cmocka_unit_test_teardown(sqlite_messages_batch, cleanup),
    cmocka_unit_test_teardown(redis_messages_batch, cleanup),
    cmocka_unit_test_teardown(sqlite_list_paging, cleanup),
    cmocka_unit_test_teardown(redis_list_paging, cleanup),
    cmocka_unit_test_teardown(sqlite_find, cleanup),
    cmocka_unit_test_teardown(redis_find, cleanup),
    cmocka_unit_test_teardown(sqlite_written_text, cleanup),
    cmocka_unit_test_teardown(redis_written_text, cleanup),
    cmocka_unit_test_teardown(sqlite_read_now, cleanup),
    cmocka_unit_test_teardown(redis_read_now, cleanup),
    cmocka_unit_test_teardown(sqlite_read_waits, cleanup),
    cmocka_unit_test_teardown(redis_read_waits, cleanup),
    cmocka_unit_test_teardown(sqlite_truncate, cleanup),
    cmocka_unit_test_teardown(redis_truncate, cleanup),
    cmocka_unit_test_teardown(sqlite_delete, cleanup),
    cmocka_unit_test_teardown(redis_delete, cleanup),
    cmocka_unit_test_teardown(sqlite_ledger, cleanup),
    cmocka_unit_test_teardown(redis_ledger, cleanup),
    cmocka_unit_test_teardown(sqlite_events, cleanup),
    cmocka_unit_test_teardown(redis_events, cleanup),
    cmocka_unit_test_teardown(sqlite_events_seq, cleanup),
    cmocka_unit_test_teardown(redis_events_seq, cleanup),
    cmocka_unit_test_teardown(sqlite_trace_events, cleanup),
    cmocka_unit_test_teardown(sqlite_release_store, cleanup),
    cmocka_unit_test_teardown(redis_release_store, cleanup),
    cmocka_unit_test_teardown(sqlite_lock_basic, cleanup),
    cmocka_unit_test_teardown(redis_lock_basic, cleanup),
    cmocka_unit_test_teardown(sqlite_lock_expiry, cleanup),
    cmocka_unit_test_teardown(redis_lock_expiry, cleanup),
    cmocka_unit_test_teardown(sqlite_lock_concurrent, cleanup),
    cmocka_unit_test_teardown(redis_lock_concurrent, cleanup),
    cmocka_unit_test_teardown(sqlite_control, cleanup),
    cmocka_unit_test_teardown(redis_control, cleanup),
    cmocka_unit_test_teardown(sqlite_lease_renews, cleanup),
    cmocka_unit_test_teardown(redis_lease_renews, cleanup),
    cmocka_unit_test_teardown(sqlite_leases_share_the_thread, cleanup),
    cmocka_unit_test_teardown(redis_leases_share_the_thread, cleanup),
    cmocka_unit_test_teardown(sqlite_recovery, cleanup),
    cmocka_unit_test_teardown(redis_recovery, cleanup),
    cmocka_unit_test_teardown(redis_down, cleanup),
    cmocka_unit_test_teardown(redis_reconnect, cleanup),
    cmocka_unit_test_teardown(redis_prefix, cleanup),
    cmocka_unit_test(sqlite_migrates_v1),
    cmocka_unit_test(sqlite_list_reads_only_its_index),
    cmocka_unit_test(sqlite_refuses_newer),
    cmocka_unit_test(sqlite_bad_files),
    cmocka_unit_test(sqlite_readonly_file),
    cmocka_unit_test(sqlite_memory),
    cmocka_unit_test(sqlite_exclusive_maps_no_shm),
    cmocka_unit_test(sqlite_alloc_torture),
    cmocka_unit_test_teardown(sqlite_excl_conv_roundtrip, cleanup),
    cmocka_unit_test_teardown(sqlite_excl_messages, cleanup),
    cmocka_unit_test_teardown(sqlite_excl_messages_batch, cleanup),
    cmocka_unit_test_teardown(sqlite_excl_list_paging, cleanup),
    cmocka_unit_test_teardown(sqlite_excl_find, cleanup),
    cmocka_unit_test_teardown(sqlite_excl_truncate, cleanup),
    cmocka_unit_test_teardown(sqlite_excl_delete, cleanup),
    cmocka_unit_test_teardown(sqlite_excl_ledger, cleanup),
    cmocka_unit_test_teardown(sqlite_excl_events, cleanup),
    cmocka_unit_test_teardown(sqlite_excl_events_seq, cleanup),
    cmocka_unit_test_teardown(sqlite_excl_written_text, cleanup),
    cmocka_unit_test_teardown(sqlite_excl_read_now, cleanup),
    cmocka_unit_test_teardown(sqlite_excl_read_waits, cleanup),
    cmocka_unit_test_teardown(sqlite_group_commit_keeps_what_it_acknowledged, cleanup),
    cmocka_unit_test_teardown(sqlite_group_commit_failure_is_reported, cleanup),
    cmocka_unit_test_teardown(sqlite_group, cleanup),
    cmocka_unit_test_teardown(redis_group, cleanup),
    cmocka_unit_test_teardown(sqlite_excl_group, cleanup),
    cmocka_unit_test_teardown(sqlite_group_commit_failure_keeps_nothing, cleanup),
    cmocka_unit_test_teardown(sqlite_group_ahead_is_checked_later, cleanup),
    cmocka_unit_test_teardown(sqlite_wal_writes_gathered, cleanup),
    cmocka_unit_test_teardown(sqlite_checkpoint_after_told, cleanup),
    cmocka_unit_test_teardown(sqlite_wal_large_group_reads_back, cleanup),
    cmocka_unit_test_teardown(sqlite_group_one_statement_calls, cleanup),
};

REIN_TEST_MAIN(tests)
