/*
 * Stores written by the first release (tests/data/store/README.md), loaded into a fresh
 * SQLite file or an empty redis-server, for the migration tests; and a commit that fails on
 * demand, for the durability tests.
 */
#ifndef REIN_TEST_STORE_FIXTURE_H
#define REIN_TEST_STORE_FIXTURE_H

#include "redis_server.h"

/* Creates the SQLite database at path from tests/data/store/sqlite-v2.sql. */
void test_store_fixture_sqlite(const char *path);
/* Writes the keys of tests/data/store/redis-layout1.jsonl into r's server. */
void test_store_fixture_redis(const struct test_redis *r);
/* Adds to the SQLite database at path a trigger by which a message whose body holds "poison"
 * makes the transaction that inserted it fail at COMMIT (a deferred foreign key with no parent
 * row): a commit failure on demand. */
void test_store_fixture_poison(const char *path);
/* Adds to test_store_fixture_poison's (call it first) a trigger that poisons the commit of a
 * new conversation whose title contains "poison". */
void test_store_fixture_poison_titles(const char *path);

#endif
