/*
 * Loading the release's stores (store_fixture.h): the SQLite dump is run as it is; the Redis
 * file is one command per line, a JSON array of strings, sent with hiredis as binary-safe
 * arguments.
 */
#include "store_fixture.h"
#include "test.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_HIREDIS
#include <hiredis/hiredis.h>
#endif

void test_store_fixture_sqlite(const char *path)
{
    char *sql = test_read_file(REIN_SOURCE_DIR "/tests/data/store/sqlite-v2.sql", NULL);
    sqlite3 *db = NULL;
    char *msg = NULL;

    assert_non_null(sql);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("loading the SQLite fixture: %s", msg);
    sqlite3_close(db);
    free(sql);
}

/* Runs sql on the database at path; what names it in the failure. */
static void exec_sql(const char *path, const char *sql, const char *what)
{
    sqlite3 *db = NULL;
    char *msg = NULL;

    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("adding the %s: %s", what, msg);
    sqlite3_close(db);
}

void test_store_fixture_poison(const char *path)
{
    exec_sql(path,
             "CREATE TABLE poison_parent (id INTEGER PRIMARY KEY);"
             "CREATE TABLE poison (x INTEGER REFERENCES poison_parent(id) "
             "  DEFERRABLE INITIALLY DEFERRED);"
             "CREATE TRIGGER poison_msg AFTER INSERT ON messages "
             "  WHEN instr(NEW.body, 'poison') > 0 BEGIN INSERT INTO poison VALUES (1); "
             "END;",
             "poison trigger");
}

void test_store_fixture_poison_titles(const char *path)
{
    exec_sql(path,
             "CREATE TRIGGER poison_title AFTER INSERT ON conversations "
             "  WHEN instr(COALESCE(NEW.title, ''), 'poison') > 0 BEGIN "
             "  INSERT INTO poison VALUES (1); END;",
             "title trigger");
}

void test_store_fixture_redis(const struct test_redis *r)
{
#ifdef HAVE_HIREDIS
    char *text = test_read_file(REIN_SOURCE_DIR "/tests/data/store/redis-layout1.jsonl", NULL);
    redisContext *ctx = redisConnect("127.0.0.1", r->port);
    char *line, *save = NULL;

    assert_non_null(text);
    assert_true(ctx && !ctx->err);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *cmd = json_loads(line, 0, NULL);
        size_t n = json_array_size(cmd);
        const char **argv = calloc(n, sizeof(*argv));
        size_t *lens = calloc(n, sizeof(*lens));
        redisReply *rep;
        assert_true(n > 0 && argv && lens);
        for (size_t i = 0; i < n; i++) {
            argv[i] = json_string_value(json_array_get(cmd, i));
            lens[i] = json_string_length(json_array_get(cmd, i));
        }
        rep = redisCommandArgv(ctx, (int)n, argv, lens);
        if (!rep || rep->type == REDIS_REPLY_ERROR)
            fail_msg("loading the Redis fixture: %s", rep ? rep->str : ctx->errstr);
        freeReplyObject(rep);
        free(argv);
        free(lens);
        json_decref(cmd);
    }
    redisFree(ctx);
    free(text);
#else
    (void)r;
    skip();
#endif
}
