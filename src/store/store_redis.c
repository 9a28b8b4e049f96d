/*
 * The Redis store backend (src/store/store_int.h), through hiredis, so several `rein serve`
 * processes share conversations, ledger, locks and control messages.
 *
 * Keys, under a configurable prefix P (default "rein:"):
 *   P conv:ID            hash: id, title, state, metadata, created_ms, updated_ms, message_count
 *   P convs              sorted set of conversation ids scored by updated_ms (the list order)
 *   P msgs:ID            list of "CREATED_MS TRACE_ID JSON" (TRACE_ID "-" when none)
 *   P ledger:ID          hash call_id -> entry JSON; P ledger:ID:order list of call ids;
 *   P ledger:ID:pending  set of pending call ids; P pending: set of ids with pending calls
 *   P running            set of the ids of conversations in state "running" (a turn's)
 *   P events:ID, P trace:TRACE   capped lists of event JSON (trace lists expire after 7 days);
 *                        P events:ID:seq the conversation's last event sequence id (each
 *                        entry carries its own as "s", so a list holds consecutive ids)
 *   P lock:ID            the owner token, SET NX PX; P lockinfo:ID hash (state, tool, started)
 *   P cancel:ID          "TOKEN\nREASON", living as long as the lock it targets
 *   P approval:ID:CALL   hash requested_ms, answer; P approvals:ID set of waiting call ids
 *   P schema             the layout version (LAYOUT below), migrated on open
 * Every change that touches several keys is one Lua script, so it is atomic; lock release and
 * renew are compare-and-delete and compare-and-pexpire scripts on the owner token.
 *
 * Connections come from a small pool; a command that fails on a dropped connection reconnects
 * once and is sent again. Errors name the server address.
 */
#include "store/store_int.h"

#ifdef HAVE_HIREDIS

#include <rein/buf.h>
#include <rein/json.h>

#include <assert.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define WHERE "store/redis"
/* a batch of events or messages and its keys */
#define MAX_ARGS                                                                                   \
    (16 + (REIN_STORE_EVENTS_BATCH > REIN_STORE_MESSAGES_BATCH ? REIN_STORE_EVENTS_BATCH           \
                                                               : REIN_STORE_MESSAGES_BATCH))
#define TRACE_TTL "604800"

struct rconn {
    redisContext *ctx;
    struct rconn *next_free;
};

/* Invariants: live <= max; each open connection sits in one slot of all[] and is either on
 * the free list or held by exactly one thread. */
struct rd {
    char host[256];
    int port;
    int db;
    char *password;
    char addr[300]; /* "host:port" for messages */
    int timeout_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct rconn **all; /* max slots; NULL where no connection is open */
    unsigned live, max;
    struct rconn *free_list;
    struct rein__store_tally *tally; /* the handle's */
};

/* A command's arguments; strings it formats itself are owned and freed by cmd_release. */
struct cmd {
    int argc;
    const char *argv[MAX_ARGS];
    size_t len[MAX_ARGS];
    char *owned[MAX_ARGS];
    int nowned;
    bool oom;
};

static struct rd *impl(rein_store *s)
{
    return s->impl;
}

static void arg_n(struct cmd *c, const char *s, size_t len)
{
    if (c->argc >= MAX_ARGS) {
        c->oom = true;
        return;
    }
    c->argv[c->argc] = s;
    c->len[c->argc] = len;
    c->argc++;
}

static void arg(struct cmd *c, const char *s)
{
    arg_n(c, s ? s : "", s ? strlen(s) : 0);
}

static void arg_owned(struct cmd *c, char *s)
{
    if (!s || c->nowned >= MAX_ARGS) {
        rein_free(s);
        c->oom = true;
        return;
    }
    c->owned[c->nowned++] = s;
    arg(c, s);
}

static void arg_i(struct cmd *c, int64_t v)
{
    arg_owned(c, rein_asprintf("%" PRId64, v));
}

/* A key: the prefix, then kind, then the id parts joined with ':'. */
static void arg_key(struct cmd *c, rein_store *s, const char *kind, const char *a, const char *b)
{
    arg_owned(c, rein_asprintf("%s%s%s%s%s%s", s->prefix, kind, a ? ":" : "", a ? a : "",
                               b ? ":" : "", b ? b : ""));
}

static void cmd_release(struct cmd *c)
{
    for (int i = 0; i < c->nowned; i++)
        rein_free(c->owned[i]);
    c->nowned = 0;
    c->argc = 0;
}

/* ---- connections ------------------------------------------------------------------------ */

static rein_err conn_fail(struct rd *r, const char *what, const char *why, rein_error *err)
{
    rein_error_set(err, REIN_ESTORE, "redis %s: %s: %s", r->addr, what, why);
    rein_error_where(err, WHERE);
    return REIN_ESTORE;
}

static rein_err oom_plain(rein_error *err)
{
    return rein_error_set(err, REIN_ENOMEM, "redis: out of memory");
}

static rein_err setup(struct rd *r, redisContext *ctx, rein_error *err)
{
    redisReply *rep;

    if (r->password) {
        rep = redisCommand(ctx, "AUTH %s", r->password);
        if (!rep || rep->type == REDIS_REPLY_ERROR) {
            rein_err rc = conn_fail(r, "AUTH", rep ? rep->str : ctx->errstr, err);
            freeReplyObject(rep);
            return rc;
        }
        freeReplyObject(rep);
    }
    if (r->db) {
        rep = redisCommand(ctx, "SELECT %d", r->db);
        if (!rep || rep->type == REDIS_REPLY_ERROR) {
            rein_err rc = conn_fail(r, "SELECT", rep ? rep->str : ctx->errstr, err);
            freeReplyObject(rep);
            return rc;
        }
        freeReplyObject(rep);
    }
    return REIN_OK;
}

static rein_err connect_ctx(struct rd *r, redisContext **out, rein_error *err)
{
    struct timeval tv = {r->timeout_ms / 1000, (r->timeout_ms % 1000) * 1000};
    redisContext *ctx = redisConnectWithTimeout(r->host, r->port, tv);
    rein_err rc;

    *out = NULL;
    if (!ctx)
        return rein_error_set(err, REIN_ENOMEM, "redis: out of memory");
    if (ctx->err) {
        rc = conn_fail(r, "connect", ctx->errstr, err);
        redisFree(ctx);
        return rc;
    }
    redisSetTimeout(ctx, tv);
    redisEnableKeepAlive(ctx);
    rc = setup(r, ctx, err);
    if (rc != REIN_OK) {
        redisFree(ctx);
        return rc;
    }
    *out = ctx;
    return REIN_OK;
}

static rein_err conn_get(struct rd *r, struct rconn **out, rein_error *err)
{
    struct rconn *c = NULL;
    rein_err rc = REIN_OK;

    REIN__STORE_COUNT(r->tally, calls);
    pthread_mutex_lock(&r->mu);
    while (!r->free_list && r->live >= r->max)
        pthread_cond_wait(&r->cv, &r->mu);
    if (r->free_list) {
        c = r->free_list;
        r->free_list = c->next_free;
        pthread_mutex_unlock(&r->mu);
        *out = c;
        return REIN_OK;
    }
    /* Count the connection now, so the pool never exceeds max while connecting unlocked. */
    r->live++;
    assert(r->live <= r->max); /* struct rd's invariant */
    pthread_mutex_unlock(&r->mu);
    c = rein_calloc(1, sizeof(*c));
    rc = c ? connect_ctx(r, &c->ctx, err) : oom_plain(err);
    pthread_mutex_lock(&r->mu);
    if (rc == REIN_OK) {
        for (unsigned i = 0; i < r->max; i++) {
            if (!r->all[i]) {
                r->all[i] = c;
                break;
            }
        }
    } else {
        r->live--;
        rein_free(c);
        c = NULL;
        pthread_cond_signal(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    *out = c;
    return rc;
}

static void conn_put(struct rd *r, struct rconn *c)
{
    pthread_mutex_lock(&r->mu);
    c->next_free = r->free_list;
    r->free_list = c;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/*
 * Sends one command and returns its reply (free with freeReplyObject). A dropped connection
 * (the server restarted, killed idle clients, a network blip) is reconnected once and the
 * command sent again. Redis error replies become REIN_ESTORE with the server's words.
 */
static redisReply *call(rein_store *s, struct cmd *cm, rein_error *err)
{
    struct rd *r = impl(s);
    struct rconn *c = NULL;
    redisReply *rep = NULL;

    if (cm->oom) {
        rein_error_set(err, REIN_ENOMEM, "redis: out of memory");
        return NULL;
    }
    if (conn_get(r, &c, err) != REIN_OK)
        return NULL;
    for (int attempt = 0; attempt < 2 && !rep; attempt++) {
        if (!c->ctx || c->ctx->err) {
            redisContext *fresh = NULL;
            if (c->ctx)
                redisFree(c->ctx);
            c->ctx = NULL;
            if (connect_ctx(r, &fresh, err) != REIN_OK)
                break;
            c->ctx = fresh;
        }
        rep = redisCommandArgv(c->ctx, cm->argc, cm->argv, cm->len);
        if (!rep && attempt == 1)
            conn_fail(r, cm->argv[0], c->ctx->errstr, err);
    }
    if (rep && rep->type == REDIS_REPLY_ERROR) {
        conn_fail(r, cm->argv[0], rep->str, err);
        freeReplyObject(rep);
        rep = NULL;
    }
    conn_put(r, c);
    return rep;
}

/* Runs a command whose reply is an integer (or nil, read as -1). */
static rein_err call_int(rein_store *s, struct cmd *cm, long long *out, rein_error *err)
{
    redisReply *rep = call(s, cm, err);

    cmd_release(cm);
    if (!rep)
        return err ? err->code : REIN_ESTORE;
    *out = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
    freeReplyObject(rep);
    return REIN_OK;
}

static void eval(struct cmd *cm, const char *script, int numkeys)
{
    arg(cm, "EVAL");
    arg(cm, script);
    arg_i(cm, numkeys);
}

static rein_err oom(rein_error *err)
{
    return rein_error_set(err, REIN_ENOMEM, "redis: out of memory");
}

/* ---- conversations ---------------------------------------------------------------------- */

static const char *const lua_conv_create =
    "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end "
    "redis.call('HSET', KEYS[1], 'id', ARGV[1], 'state', 'idle', 'created_ms', ARGV[2], "
    "  'updated_ms', ARGV[2], 'message_count', 0) "
    "if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'title', ARGV[4]) end "
    "if ARGV[5] == '1' then redis.call('HSET', KEYS[1], 'metadata', ARGV[6]) end "
    "redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1]) "
    "return 1";

static rein_err rd_conv_create(rein_store *s, const char *id, const char *title,
                               const char *metadata, int64_t now_ms, rein_error *err)
{
    struct cmd cm = {0};
    long long v = 0;
    rein_err rc;

    eval(&cm, lua_conv_create, 2);
    arg_key(&cm, s, "conv", id, NULL);
    arg_key(&cm, s, "convs", NULL, NULL);
    arg(&cm, id);
    arg_i(&cm, now_ms);
    arg(&cm, title ? "1" : "0");
    arg(&cm, title);
    arg(&cm, metadata ? "1" : "0");
    arg(&cm, metadata);
    rc = call_int(s, &cm, &v, err);
    if (rc == REIN_OK && v == 0)
        rc = rein_error_set(err, REIN_EEXIST, "conversation %s already exists", id);
    return rc;
}

static const char *const lua_conv_update =
    "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end "
    "if ARGV[2] == '1' then redis.call('HSET', KEYS[1], 'title', ARGV[3]) end "
    "if ARGV[4] == '1' then redis.call('HSET', KEYS[1], 'state', ARGV[5]) "
    "  if ARGV[5] == 'running' then redis.call('SADD', KEYS[3], ARGV[1]) "
    "  else redis.call('SREM', KEYS[3], ARGV[1]) end "
    "end "
    "if ARGV[6] == '1' then redis.call('HSET', KEYS[1], 'metadata', ARGV[7]) end "
    "local old = tonumber(redis.call('HGET', KEYS[1], 'updated_ms')) "
    "local now = tonumber(ARGV[8]) "
    "if now > old then redis.call('HSET', KEYS[1], 'updated_ms', ARGV[8]) "
    "  redis.call('ZADD', KEYS[2], ARGV[8], ARGV[1]) end "
    "return 1";

static rein_err rd_conv_update(rein_store *s, const char *id, const char *title, const char *state,
                               const char *metadata, int64_t now_ms, rein_error *err)
{
    struct cmd cm = {0};
    long long v = 0;
    rein_err rc;

    eval(&cm, lua_conv_update, 3);
    arg_key(&cm, s, "conv", id, NULL);
    arg_key(&cm, s, "convs", NULL, NULL);
    arg_key(&cm, s, "running", NULL, NULL);
    arg(&cm, id);
    arg(&cm, title ? "1" : "0");
    arg(&cm, title);
    arg(&cm, state ? "1" : "0");
    arg(&cm, state);
    arg(&cm, metadata ? "1" : "0");
    arg(&cm, metadata);
    arg_i(&cm, now_ms);
    rc = call_int(s, &cm, &v, err);
    if (rc == REIN_OK && v == 0)
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s not found", id);
    return rc;
}

static int64_t to_i64(const char *text)
{
    return text ? strtoll(text, NULL, 10) : 0;
}

/* The conversation of an HGETALL reply (field, value, field, value, ...) to fn; REIN_ENOMEM
 * when the reply has no id. */
static int hash_conv(const redisReply *h, rein__conv_row_fn fn, void *userdata)
{
    const char *f[7] = {0};
    static const char *const names[7] = {"id",         "title",      "state",        "metadata",
                                         "created_ms", "updated_ms", "message_count"};
    struct rein__conv_row row;

    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        for (int k = 0; k < 7; k++) {
            if (strcmp(h->element[i]->str, names[k]) == 0)
                f[k] = h->element[i + 1]->str;
        }
    }
    if (!f[0])
        return REIN_ENOMEM;
    row = (struct rein__conv_row){.id = f[0],
                                  .title = f[1],
                                  .state = f[2],
                                  .metadata = f[3],
                                  .created_ms = to_i64(f[4]),
                                  .updated_ms = to_i64(f[5]),
                                  .message_count = to_i64(f[6])};
    return fn(&row, userdata);
}

static rein_err rd_conv_get(rein_store *s, const char *id, rein__conv_row_fn fn, void *userdata,
                            rein_error *err)
{
    struct cmd cm = {0};
    redisReply *rep;
    rein_err rc = REIN_OK;

    arg(&cm, "HGETALL");
    arg_key(&cm, s, "conv", id, NULL);
    rep = call(s, &cm, err);
    cmd_release(&cm);
    if (!rep)
        return err ? err->code : REIN_ESTORE;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements == 0) {
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s not found", id);
    } else {
        rc = hash_conv(rep, fn, userdata);
        if (rc == REIN_ENOMEM)
            oom(err);
    }
    freeReplyObject(rep);
    return rc;
}

/* Walks the sorted set newest first, skipping up to and including the cursor, and returns
 * the HGETALL of each conversation. Ties on the score come in descending id order, which is
 * the order the cursor assumes. With a query (ARGV[6], lower case; '' for none) only titles
 * that contain it count, compared with ASCII letters lowered as SQLite's lower() does. */
static const char *const lua_conv_list =
    "local limit = tonumber(ARGV[1]) local has = ARGV[2] == '1' "
    "local cur_ms = tonumber(ARGV[3]) local cur_id = ARGV[4] local q = ARGV[6] "
    "local max = '+inf' if has then max = ARGV[3] end "
    "local out = {} local offset = 0 "
    "while #out < limit do "
    "  local batch = redis.call('ZREVRANGEBYSCORE', KEYS[1], max, '-inf', 'WITHSCORES', "
    "    'LIMIT', offset, 200) "
    "  if #batch == 0 then break end "
    "  for i = 1, #batch, 2 do "
    "    local id = batch[i] local score = tonumber(batch[i + 1]) "
    "    if not (has and score == cur_ms and id >= cur_id) then "
    "      local keep = q == '' "
    "      if not keep then "
    "        local title = redis.call('HGET', ARGV[5] .. id, 'title') "
    "        keep = title and string.find(string.lower(title), q, 1, true) ~= nil "
    "      end "
    "      if keep then table.insert(out, redis.call('HGETALL', ARGV[5] .. id)) end "
    "      if #out >= limit then break end "
    "    end "
    "  end "
    "  offset = offset + 200 "
    "end "
    "return out";

/* query with its ASCII letters lowered (new), as the Lua side compares. */
static char *ascii_lower(const char *query)
{
    char *q = rein_strdup(query ? query : "");

    for (char *p = q; p && *p; p++) {
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    }
    return q;
}

static rein_err rd_conv_list(rein_store *s, int64_t cur_ms, const char *cur_id, const char *query,
                             unsigned limit, rein__conv_row_fn fn, void *userdata, rein_error *err)
{
    struct cmd cm = {0};
    redisReply *rep;
    rein_err rc = REIN_OK;

    eval(&cm, lua_conv_list, 1);
    arg_key(&cm, s, "convs", NULL, NULL);
    arg_i(&cm, limit);
    arg(&cm, cur_id ? "1" : "0");
    arg_i(&cm, cur_ms);
    arg(&cm, cur_id ? cur_id : "");
    arg_owned(&cm, rein_asprintf("%sconv:", s->prefix));
    arg_owned(&cm, ascii_lower(query));
    rep = call(s, &cm, err);
    cmd_release(&cm);
    if (!rep)
        return err ? err->code : REIN_ESTORE;
    for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
        if (rep->element[i]->type != REDIS_REPLY_ARRAY || rep->element[i]->elements == 0)
            continue; /* deleted between the two reads: skip */
        rc = hash_conv(rep->element[i], fn, userdata);
        if (rc != REIN_OK) {
            if (rc == REIN_ENOMEM)
                oom(err);
            break;
        }
    }
    freeReplyObject(rep);
    return rc;
}

static const char *const lua_conv_delete =
    "local p = ARGV[1] local id = ARGV[2] "
    "if redis.call('EXISTS', p .. 'lock:' .. id) == 1 then return -1 end "
    "if redis.call('EXISTS', p .. 'conv:' .. id) == 0 then return 0 end "
    "for _, call in ipairs(redis.call('SMEMBERS', p .. 'approvals:' .. id)) do "
    "  redis.call('DEL', p .. 'approval:' .. id .. ':' .. call) end "
    "redis.call('DEL', p .. 'conv:' .. id, p .. 'msgs:' .. id, p .. 'ledger:' .. id, "
    "  p .. 'ledger:' .. id .. ':order', p .. 'ledger:' .. id .. ':pending', "
    "  p .. 'events:' .. id, p .. 'events:' .. id .. ':seq', p .. 'approvals:' .. id, "
    "  p .. 'cancel:' .. id, "
    "  p .. 'lockinfo:' .. id) "
    "redis.call('ZREM', p .. 'convs', id) "
    "redis.call('SREM', p .. 'pending', id) "
    "redis.call('SREM', p .. 'running', id) "
    "return 1";

static rein_err rd_conv_delete(rein_store *s, const char *id, int64_t now_ms, rein_error *err)
{
    struct cmd cm = {0};
    long long v = 0;
    rein_err rc;

    (void)now_ms;
    eval(&cm, lua_conv_delete, 0);
    arg(&cm, s->prefix);
    arg(&cm, id);
    rc = call_int(s, &cm, &v, err);
    if (rc == REIN_OK && v == -1)
        rc = rein_error_set(err, REIN_EBUSY, "conversation %s has a turn running", id);
    else if (rc == REIN_OK && v == 0)
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s not found", id);
    return rc;
}

/* ---- messages --------------------------------------------------------------------------- */

static const char *const lua_msg_truncate =
    "if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end "
    "local from = tonumber(ARGV[1]) "
    "if from <= 0 then redis.call('DEL', KEYS[2]) else redis.call('LTRIM', KEYS[2], 0, from - 1) "
    "end "
    "redis.call('HSET', KEYS[1], 'message_count', redis.call('LLEN', KEYS[2])) "
    "local old = tonumber(redis.call('HGET', KEYS[1], 'updated_ms')) "
    "if tonumber(ARGV[2]) > old then redis.call('HSET', KEYS[1], 'updated_ms', ARGV[2]) "
    "  redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3]) end "
    "return 1";

static rein_err rd_messages_truncate(rein_store *s, const char *conv_id, int64_t from,
                                     int64_t now_ms, rein_error *err)
{
    struct cmd cm = {0};
    long long v = 0;
    rein_err rc;

    eval(&cm, lua_msg_truncate, 3);
    arg_key(&cm, s, "conv", conv_id, NULL);
    arg_key(&cm, s, "msgs", conv_id, NULL);
    arg_key(&cm, s, "convs", NULL, NULL);
    arg_i(&cm, from);
    arg_i(&cm, now_ms);
    arg(&cm, conv_id);
    rc = call_int(s, &cm, &v, err);
    if (rc == REIN_OK && v < 0)
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s not found", conv_id);
    return rc;
}

/* ARGV: now_ms, the conversation's id, then the stored items in order; returns the first
 * one's position. */
static const char *const lua_msg_append =
    "if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end "
    "local n = 0 "
    "for i = 3, #ARGV do n = redis.call('RPUSH', KEYS[2], ARGV[i]) end "
    "redis.call('HSET', KEYS[1], 'message_count', n) "
    "local old = tonumber(redis.call('HGET', KEYS[1], 'updated_ms')) "
    "if tonumber(ARGV[1]) > old then redis.call('HSET', KEYS[1], 'updated_ms', ARGV[1]) "
    "  redis.call('ZADD', KEYS[3], ARGV[1], ARGV[2]) end "
    "return n - (#ARGV - 2)";

/* One EVAL for all of them: one round trip, and atomic (a script runs whole). */
static rein_err rd_messages_append(rein_store *s, const char *conv_id,
                                   const struct rein_store_text *msgs, size_t n,
                                   const char *trace_id, int64_t now_ms, int64_t *first,
                                   rein_error *err)
{
    struct cmd cm = {0};
    struct rein_buf item;
    long long v = -1;
    rein_err rc;

    rein_buf_init(&item, 0);
    eval(&cm, lua_msg_append, 3);
    arg_key(&cm, s, "conv", conv_id, NULL);
    arg_key(&cm, s, "msgs", conv_id, NULL);
    arg_key(&cm, s, "convs", NULL, NULL);
    arg_i(&cm, now_ms);
    arg(&cm, conv_id);
    for (size_t i = 0; i < n && !cm.oom; i++) {
        size_t len = 0;
        char *text = NULL;
        if (rein_buf_addf(&item, "%" PRId64 " %s ", now_ms, trace_id[0] ? trace_id : "-") ==
                REIN_OK &&
            rein_buf_add(&item, msgs[i].json, msgs[i].len) == REIN_OK)
            text = rein_buf_detach(&item, &len);
        rein_buf_reset(&item);
        /* Owned, with its length: the text may be long, and is not measured again. */
        if (!text || cm.nowned >= MAX_ARGS) {
            rein_free(text);
            cm.oom = true;
            break;
        }
        cm.owned[cm.nowned++] = text;
        arg_n(&cm, text, len);
    }
    rc = call_int(s, &cm, &v, err);
    rein_buf_release(&item);
    if (rc == REIN_OK && v < 0)
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s not found", conv_id);
    if (rc == REIN_OK)
        *first = v;
    return rc;
}

static rein_err conv_must_exist(rein_store *s, const char *conv_id, rein_error *err)
{
    struct cmd cm = {0};
    long long v = 0;
    rein_err rc;

    arg(&cm, "EXISTS");
    arg_key(&cm, s, "conv", conv_id, NULL);
    rc = call_int(s, &cm, &v, err);
    if (rc == REIN_OK && v != 1)
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s not found", conv_id);
    return rc;
}

/* Splits a stored "MS TRACE JSON" item; false when it is not in that form. */
static bool parse_item(const char *item, size_t len, struct rein_store_message *m, char *trace,
                       size_t trace_size)
{
    const char *sp1 = memchr(item, ' ', len);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - item)) : NULL;
    size_t tlen;

    if (!sp1 || !sp2)
        return false;
    m->created_ms = strtoll(item, NULL, 10);
    tlen = (size_t)(sp2 - sp1 - 1);
    if (tlen >= trace_size)
        tlen = trace_size - 1;
    memcpy(trace, sp1 + 1, tlen);
    trace[tlen] = '\0';
    if (strcmp(trace, "-") == 0)
        trace[0] = '\0';
    m->trace_id = trace;
    m->json = sp2 + 1;
    m->len = len - (size_t)(sp2 + 1 - item);
    return true;
}

static rein_err rd_messages_each(rein_store *s, const char *conv_id, int64_t from,
                                 rein_store_message_fn fn, void *userdata, rein_error *err)
{
    enum { BATCH = 256 };
    rein_err rc = conv_must_exist(s, conv_id, err);
    int64_t pos = from;

    while (rc == REIN_OK) {
        struct cmd cm = {0};
        redisReply *rep;
        size_t n;

        arg(&cm, "LRANGE");
        arg_key(&cm, s, "msgs", conv_id, NULL);
        arg_i(&cm, pos);
        arg_i(&cm, pos + BATCH - 1);
        rep = call(s, &cm, err);
        cmd_release(&cm);
        if (!rep)
            return err ? err->code : REIN_ESTORE;
        n = rep->type == REDIS_REPLY_ARRAY ? rep->elements : 0;
        for (size_t i = 0; i < n && rc == REIN_OK; i++) {
            struct rein_store_message m = {.position = pos};
            char trace[REIN_ID_MAX + 72];
            int stop;
            if (!parse_item(rep->element[i]->str, rep->element[i]->len, &m, trace, sizeof(trace))) {
                rc = rein_error_set(err, REIN_ESTORE,
                                    "redis %s: message %" PRId64 " of %s is "
                                    "damaged",
                                    impl(s)->addr, pos, conv_id);
                break;
            }
            stop = fn(&m, userdata);
            if (stop)
                rc = stop;
            pos++;
        }
        freeReplyObject(rep);
        if (n < BATCH)
            break;
    }
    return rc;
}

/* ---- ledger ----------------------------------------------------------------------------- */

/*
 * The stored form of an entry: args and result as strings, so their text is kept exactly;
 * step and latency_ms null when not known. Member names are those of the entry's JSON
 * (rein_ledger_entry_write), times in milliseconds.
 */
static char *entry_encode(const struct rein_ledger_entry *e)
{
    json_t *o = json_object();
    char *text = NULL;

    if (!o)
        return NULL;
    if (!json_object_set_new(o, "call_id", json_string(e->call_id)) &&
        !json_object_set_new(o, "tool", json_string(e->tool)) &&
        !json_object_set_new(o, "sent_name",
                             e->sent_name ? json_string(e->sent_name) : json_null()) &&
        !json_object_set_new(o, "args", json_string(e->args)) &&
        !json_object_set_new(o, "status", json_string(rein_call_status_name(e->status))) &&
        !json_object_set_new(o, "result", e->result ? json_string(e->result) : json_null()) &&
        !json_object_set_new(o, "call_ms", json_integer(e->call_ms)) &&
        !json_object_set_new(o, "response_ms", json_integer(e->response_ms)) &&
        !json_object_set_new(o, "step", e->has_step ? json_integer(e->step) : json_null()) &&
        !json_object_set_new(o, "trace_id", json_string(e->trace_id ? e->trace_id : "")) &&
        !json_object_set_new(o, "latency_ms",
                             e->latency_ms >= 0 ? json_integer(e->latency_ms) : json_null()) &&
        !json_object_set_new(o, "interrupted", json_boolean(e->interrupted)))
        text = rein_json_dumps(o);
    json_decref(o);
    return text;
}

/* Reads a stored entry; borrowed pointers stay valid while *holder lives. */
static bool entry_decode(const char *text, size_t len, struct rein_ledger_entry *e, json_t **holder)
{
    json_t *o = rein_json_parse(text, len, 0, NULL);
    const json_t *step, *latency;
    const char *status;

    *holder = o;
    if (!json_is_object(o))
        return false;
    memset(e, 0, sizeof(*e));
    e->call_id = json_string_value(json_object_get(o, "call_id"));
    e->tool = json_string_value(json_object_get(o, "tool"));
    e->sent_name = json_string_value(json_object_get(o, "sent_name"));
    e->args = json_string_value(json_object_get(o, "args"));
    e->result = json_string_value(json_object_get(o, "result"));
    /* Lua's cjson writes integers as numbers that may come back as reals. */
    e->call_ms = (int64_t)json_number_value(json_object_get(o, "call_ms"));
    e->response_ms = (int64_t)json_number_value(json_object_get(o, "response_ms"));
    /* Layout 1 wrote -1 for "no step". */
    step = json_object_get(o, "step");
    e->has_step = json_is_number(step) && json_number_value(step) >= 0;
    e->step = e->has_step ? (int)json_number_value(step) : 0;
    latency = json_object_get(o, "latency_ms");
    e->latency_ms = json_is_number(latency) ? (int64_t)json_number_value(latency) : -1;
    e->trace_id = json_string_value(json_object_get(o, "trace_id"));
    e->interrupted = json_is_true(json_object_get(o, "interrupted"));
    status = json_string_value(json_object_get(o, "status"));
    if (!rein_call_status_parse(status, &e->status))
        e->status = REIN_CALL_ERROR;
    return e->call_id && e->tool && e->args;
}

static const char *const lua_ledger_put =
    "if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end "
    "if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then "
    "  redis.call('RPUSH', KEYS[3], ARGV[1]) end "
    "redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) "
    "if ARGV[3] == 'pending' then redis.call('SADD', KEYS[4], ARGV[1]) "
    "  redis.call('SADD', KEYS[5], ARGV[4]) "
    "else redis.call('SREM', KEYS[4], ARGV[1]) "
    "  if redis.call('SCARD', KEYS[4]) == 0 then redis.call('SREM', KEYS[5], ARGV[4]) end end "
    "return 1";

static void ledger_keys(struct cmd *cm, rein_store *s, const char *conv_id)
{
    arg_key(cm, s, "conv", conv_id, NULL);
    arg_key(cm, s, "ledger", conv_id, NULL);
    arg_key(cm, s, "ledger", conv_id, "order");
    arg_key(cm, s, "ledger", conv_id, "pending");
    arg_key(cm, s, "pending", NULL, NULL);
}

static rein_err rd_ledger_put(rein_store *s, const char *conv_id, const struct rein_ledger_entry *e,
                              rein_error *err)
{
    struct cmd cm = {0};
    char *text = entry_encode(e);
    long long v = 0;
    rein_err rc;

    if (!text)
        return oom(err);
    eval(&cm, lua_ledger_put, 5);
    ledger_keys(&cm, s, conv_id);
    arg(&cm, e->call_id);
    arg(&cm, text);
    arg(&cm, rein_call_status_name(e->status));
    arg(&cm, conv_id);
    rc = call_int(s, &cm, &v, err);
    rein_free(text);
    if (rc == REIN_OK && v < 0)
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s not found", conv_id);
    return rc;
}

static const char *const lua_ledger_update =
    "local raw = redis.call('HGET', KEYS[2], ARGV[1]) "
    "if not raw then return 0 end "
    "local e = cjson.decode(raw) "
    "e.status = ARGV[2] "
    "if ARGV[3] == '1' then e.result = ARGV[4] else e.result = cjson.null end "
    "e.response_ms = tonumber(ARGV[5]) e.interrupted = false "
    "if ARGV[7] == '' then e.latency_ms = cjson.null else e.latency_ms = tonumber(ARGV[7]) end "
    "redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(e)) "
    "if ARGV[2] == 'pending' then redis.call('SADD', KEYS[4], ARGV[1]) "
    "  redis.call('SADD', KEYS[5], ARGV[6]) "
    "else redis.call('SREM', KEYS[4], ARGV[1]) "
    "  if redis.call('SCARD', KEYS[4]) == 0 then redis.call('SREM', KEYS[5], ARGV[6]) end end "
    "return 1";

static rein_err rd_ledger_update(rein_store *s, const char *conv_id,
                                 const struct rein_ledger_entry *e, rein_error *err)
{
    struct cmd cm = {0};
    long long v = 0;
    rein_err rc;

    eval(&cm, lua_ledger_update, 5);
    ledger_keys(&cm, s, conv_id);
    arg(&cm, e->call_id);
    arg(&cm, rein_call_status_name(e->status));
    arg(&cm, e->result ? "1" : "0");
    arg(&cm, e->result);
    arg_i(&cm, e->response_ms);
    arg(&cm, conv_id);
    if (e->latency_ms >= 0)
        arg_i(&cm, e->latency_ms);
    else
        arg(&cm, "");
    rc = call_int(s, &cm, &v, err);
    if (rc == REIN_OK && v == 0)
        rc = rein_error_set(err, REIN_ENOTFOUND, "no ledger entry %s in conversation %s",
                            e->call_id, conv_id);
    return rc;
}

static const char *const lua_ledger_all = "local ids = redis.call('LRANGE', KEYS[1], 0, -1) "
                                          "if #ids == 0 then return {} end "
                                          "return redis.call('HMGET', KEYS[2], unpack(ids))";

static rein_err rd_ledger_each(rein_store *s, const char *conv_id, rein_store_ledger_fn fn,
                               void *userdata, rein_error *err)
{
    struct cmd cm = {0};
    redisReply *rep;
    rein_err rc = conv_must_exist(s, conv_id, err);

    if (rc != REIN_OK)
        return rc;
    eval(&cm, lua_ledger_all, 2);
    arg_key(&cm, s, "ledger", conv_id, "order");
    arg_key(&cm, s, "ledger", conv_id, NULL);
    rep = call(s, &cm, err);
    cmd_release(&cm);
    if (!rep)
        return err ? err->code : REIN_ESTORE;
    for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
        struct rein_ledger_entry e;
        json_t *holder = NULL;
        int stop;
        if (rep->element[i]->type != REDIS_REPLY_STRING)
            continue;
        if (!entry_decode(rep->element[i]->str, rep->element[i]->len, &e, &holder)) {
            json_decref(holder);
            rc = rein_error_set(err, REIN_ESTORE, "redis %s: a ledger entry of %s is damaged",
                                impl(s)->addr, conv_id);
            break;
        }
        stop = fn(conv_id, &e, userdata);
        json_decref(holder);
        if (stop) {
            rc = stop;
            break;
        }
    }
    freeReplyObject(rep);
    return rc;
}

/* ---- events ----------------------------------------------------------------------------- */

/* The entries arrive as JSON objects from rd_events_add; each gets its sequence id put in
 * front here, where the ids are taken. */
static const char *const lua_events_add =
    "local max = tonumber(ARGV[1]) local n = #ARGV - 3 local last = 0 "
    "if ARGV[2] == '1' then last = redis.call('INCRBY', KEYS[3], n) end "
    "for i = 1, n do local entry = ARGV[3 + i] "
    "  if ARGV[2] == '1' then "
    "    entry = '{\"s\":' .. (last - n + i) .. ',' .. string.sub(entry, 2) "
    "    redis.call('RPUSH', KEYS[1], entry) end "
    "  if ARGV[3] == '1' then redis.call('RPUSH', KEYS[2], entry) end end "
    "if ARGV[2] == '1' then redis.call('LTRIM', KEYS[1], -max, -1) end "
    "if ARGV[3] == '1' then redis.call('LTRIM', KEYS[2], -max, -1) "
    "  redis.call('EXPIRE', KEYS[2], " TRACE_TTL ") end "
    "return last";

/* The stored form of an event, without its sequence id (new text, NULL when out of memory):
 * written directly, the same bytes a tree of it dumps to, without making the tree (about a
 * tenth of a turn's instructions on Redis, issue 25). */
static char *event_encode(const struct rein_store_event *ev)
{
    struct rein_buf b;
    struct rein_jw w;

    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "c");
    rein_jw_str(&w, ev->conv_id); /* null when NULL */
    rein_jw_key(&w, "t");
    rein_jw_str(&w, ev->trace_id);
    rein_jw_key(&w, "y");
    rein_jw_str(&w, ev->type);
    rein_jw_key(&w, "p");
    rein_jw_str(&w, ev->payload);
    rein_jw_key(&w, "ms");
    rein_jw_int(&w, ev->time_ms);
    rein_jw_obj_end(&w);
    if (rein_jw_finish(&w) != REIN_OK) {
        rein_buf_release(&b);
        return NULL;
    }
    return rein_buf_detach(&b, NULL);
}

static rein_err rd_events_add(rein_store *s, const struct rein_store_event *evs, size_t n,
                              int64_t *seqs, rein_error *err)
{
    const struct rein_store_event *ev = &evs[0];
    struct cmd cm = {0};
    long long last = 0;
    rein_err rc;

    eval(&cm, lua_events_add, 3);
    arg_key(&cm, s, "events", ev->conv_id ? ev->conv_id : "-", NULL);
    arg_key(&cm, s, "trace", ev->trace_id ? ev->trace_id : "-", NULL);
    arg_key(&cm, s, "events", ev->conv_id ? ev->conv_id : "-", "seq");
    arg_i(&cm, s->opts.events_max);
    arg(&cm, ev->conv_id ? "1" : "0");
    arg(&cm, ev->trace_id ? "1" : "0");
    for (size_t i = 0; i < n; i++)
        arg_owned(&cm, event_encode(&evs[i]));
    rc = call_int(s, &cm, &last, err);
    for (size_t i = 0; rc == REIN_OK && i < n; i++)
        seqs[i] = ev->conv_id && last > 0 ? last - (long long)n + 1 + (long long)i : 0;
    return rc;
}

/*
 * Hands the stored entries of rep (an array of event JSON) to fn, those with a sequence id
 * above after only (0: all), restricted to trace_id when it is not NULL.
 */
static rein_err each_entry(const redisReply *rep, const char *trace_id, int64_t after,
                           rein_store_event_fn fn, void *userdata)
{
    for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i < rep->elements; i++) {
        json_t *o = rein_json_parse(rep->element[i]->str, rep->element[i]->len, 0, NULL);
        struct rein_store_event ev = {
            .conv_id = json_string_value(json_object_get(o, "c")),
            .trace_id = json_string_value(json_object_get(o, "t")),
            .type = json_string_value(json_object_get(o, "y")),
            .payload = json_string_value(json_object_get(o, "p")),
            .time_ms = (int64_t)json_number_value(json_object_get(o, "ms")),
            .seq = (int64_t)json_number_value(json_object_get(o, "s")),
        };
        int stop = 0;
        if (ev.type && ev.payload && ev.seq >= 0 && (after <= 0 || ev.seq > after) &&
            (!trace_id || (ev.trace_id && strcmp(ev.trace_id, trace_id) == 0)))
            stop = fn(&ev, userdata);
        json_decref(o);
        if (stop)
            return stop;
    }
    return REIN_OK;
}

static rein_err rd_events_each(rein_store *s, const char *conv_id, const char *trace_id,
                               rein_store_event_fn fn, void *userdata, rein_error *err)
{
    struct cmd cm = {0};
    redisReply *rep;
    rein_err rc;

    arg(&cm, "LRANGE");
    if (conv_id)
        arg_key(&cm, s, "events", conv_id, NULL);
    else
        arg_key(&cm, s, "trace", trace_id, NULL);
    arg(&cm, "0");
    arg(&cm, "-1");
    rep = call(s, &cm, err);
    cmd_release(&cm);
    if (!rep)
        return err ? err->code : REIN_ESTORE;
    rc = each_entry(rep, conv_id ? trace_id : NULL, 0, fn, userdata);
    freeReplyObject(rep);
    return rc;
}

/* The list holds consecutive sequence ids ending at the counter's value, so the entries after
 * a given id are one LRANGE away. */
static const char *const lua_events_after =
    "local n = redis.call('LLEN', KEYS[1]) if n == 0 then return {} end "
    "local last = tonumber(redis.call('GET', KEYS[2]) or n) "
    "local start = tonumber(ARGV[1]) - (last - n + 1) + 1 "
    "if start < 0 then start = 0 end if start >= n then return {} end "
    "local stop = -1 if tonumber(ARGV[2]) > 0 then stop = start + tonumber(ARGV[2]) - 1 end "
    "return redis.call('LRANGE', KEYS[1], start, stop)";

static rein_err rd_events_after(rein_store *s, const char *conv_id, int64_t after, unsigned max,
                                rein_store_event_fn fn, void *userdata, rein_error *err)
{
    struct cmd cm = {0};
    redisReply *rep;
    rein_err rc;

    eval(&cm, lua_events_after, 2);
    arg_key(&cm, s, "events", conv_id, NULL);
    arg_key(&cm, s, "events", conv_id, "seq");
    arg_i(&cm, after);
    arg_i(&cm, max);
    rep = call(s, &cm, err);
    cmd_release(&cm);
    if (!rep)
        return err ? err->code : REIN_ESTORE;
    rc = each_entry(rep, NULL, after, fn, userdata);
    freeReplyObject(rep);
    return rc;
}

static rein_err rd_events_last(rein_store *s, const char *conv_id, int64_t *last, rein_error *err)
{
    struct cmd cm = {0};
    redisReply *rep;

    arg(&cm, "GET");
    arg_key(&cm, s, "events", conv_id, "seq");
    rep = call(s, &cm, err);
    cmd_release(&cm);
    if (!rep)
        return err ? err->code : REIN_ESTORE;
    *last = rep->type == REDIS_REPLY_STRING ? strtoll(rep->str, NULL, 10) : 0;
    freeReplyObject(rep);
    return REIN_OK;
}

/* ---- locks ------------------------------------------------------------------------------ */

static const char *const lua_lock_acquire =
    "local p = ARGV[1] local id = ARGV[2] "
    "local lock = p .. 'lock:' .. id local info = p .. 'lockinfo:' .. id "
    "if redis.call('SET', lock, ARGV[3], 'NX', 'PX', ARGV[4]) then "
    "  redis.call('DEL', info, p .. 'cancel:' .. id) "
    "  redis.call('HSET', info, 'token', ARGV[3], 'state', ARGV[5], 'tool', '', "
    "    'started_ms', ARGV[6]) "
    "  redis.call('PEXPIRE', info, ARGV[4]) "
    "  for _, call in ipairs(redis.call('SMEMBERS', p .. 'approvals:' .. id)) do "
    "    redis.call('DEL', p .. 'approval:' .. id .. ':' .. call) end "
    "  redis.call('DEL', p .. 'approvals:' .. id) "
    "  return {1} "
    "end "
    "return {0, redis.call('PTTL', lock), redis.call('HGETALL', info), redis.call('GET', lock)}";

static void fill_info(const redisReply *h, long long pttl, const char *token,
                      struct rein_store_lock_info *info)
{
    memset(info, 0, sizeof(*info));
    for (size_t i = 0; h && h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2) {
        const char *f = h->element[i]->str, *v = h->element[i + 1]->str;
        if (strcmp(f, "state") == 0)
            snprintf(info->state, sizeof(info->state), "%s", v);
        else if (strcmp(f, "tool") == 0)
            snprintf(info->tool, sizeof(info->tool), "%s", v);
        else if (strcmp(f, "started_ms") == 0)
            info->started_ms = to_i64(v);
    }
    if (token)
        snprintf(info->token, sizeof(info->token), "%s", token);
    info->expires_ms = rein_wall_ms() + (pttl > 0 ? pttl : 0);
}

static rein_err rd_lock_acquire(rein_store *s, const char *conv_id, const char *token,
                                const char *state, int64_t lease_ms,
                                struct rein_store_lock_info *held, rein_error *err)
{
    struct cmd cm = {0};
    redisReply *rep;
    rein_err rc = REIN_OK;

    eval(&cm, lua_lock_acquire, 0);
    arg(&cm, s->prefix);
    arg(&cm, conv_id);
    arg(&cm, token);
    arg_i(&cm, lease_ms);
    arg(&cm, state);
    arg_i(&cm, rein_wall_ms());
    rep = call(s, &cm, err);
    cmd_release(&cm);
    if (!rep)
        return err ? err->code : REIN_ESTORE;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1) {
        rc = rein_error_set(err, REIN_ESTORE, "redis %s: unexpected lock reply", impl(s)->addr);
    } else if (rep->element[0]->integer != 1) {
        struct rein_store_lock_info info;
        fill_info(rep->elements > 2 ? rep->element[2] : NULL,
                  rep->elements > 1 ? rep->element[1]->integer : 0,
                  rep->elements > 3 && rep->element[3]->type == REDIS_REPLY_STRING
                      ? rep->element[3]->str
                      : NULL,
                  &info);
        if (held)
            *held = info;
        rc = rein_error_set(err, REIN_EBUSY, "conversation %s is locked by a running turn (%s)",
                            conv_id, info.state[0] ? info.state : "busy");
    }
    freeReplyObject(rep);
    return rc;
}

static const char *const lua_lock_renew =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end "
    "redis.call('PEXPIRE', KEYS[1], ARGV[2]) redis.call('PEXPIRE', KEYS[2], ARGV[2]) "
    "if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end "
    "return 1";

static const char *const lua_lock_release =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end "
    "redis.call('DEL', KEYS[1], KEYS[2], KEYS[3]) return 1";

static const char *const lua_lock_state =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end "
    "redis.call('HSET', KEYS[2], 'state', ARGV[2], 'tool', ARGV[3]) return 1";

static rein_err lock_script(rein_store *s, const char *script, const char *conv_id,
                            const char *token, const char *a2, const char *a3, int64_t lease_ms,
                            rein_error *err)
{
    struct cmd cm = {0};
    long long v = 0;
    rein_err rc;

    eval(&cm, script, 3);
    arg_key(&cm, s, "lock", conv_id, NULL);
    arg_key(&cm, s, "lockinfo", conv_id, NULL);
    arg_key(&cm, s, "cancel", conv_id, NULL);
    arg(&cm, token);
    if (a2) {
        arg(&cm, a2);
        arg(&cm, a3);
    } else {
        arg_i(&cm, lease_ms);
    }
    rc = call_int(s, &cm, &v, err);
    if (rc == REIN_OK && v != 1)
        rc = rein_error_set(err, REIN_ESTATE, "the lock of %s is not held by this owner", conv_id);
    return rc;
}

static rein_err rd_lock_renew(rein_store *s, const char *conv_id, const char *token,
                              int64_t lease_ms, rein_error *err)
{
    return lock_script(s, lua_lock_renew, conv_id, token, NULL, NULL, lease_ms, err);
}

static rein_err rd_lock_release(rein_store *s, const char *conv_id, const char *token,
                                rein_error *err)
{
    return lock_script(s, lua_lock_release, conv_id, token, NULL, NULL, 0, err);
}

static rein_err rd_lock_set_state(rein_store *s, const char *conv_id, const char *token,
                                  const char *state, const char *tool, rein_error *err)
{
    return lock_script(s, lua_lock_state, conv_id, token, state, tool, 0, err);
}

static const char *const lua_lock_get =
    "local t = redis.call('GET', KEYS[1]) "
    "if not t then return {0} end "
    "return {1, redis.call('PTTL', KEYS[1]), redis.call('HGETALL', KEYS[2]), t}";

static rein_err rd_lock_get(rein_store *s, const char *conv_id, struct rein_store_lock_info *out,
                            rein_error *err)
{
    struct cmd cm = {0};
    redisReply *rep;
    rein_err rc = REIN_OK;

    eval(&cm, lua_lock_get, 2);
    arg_key(&cm, s, "lock", conv_id, NULL);
    arg_key(&cm, s, "lockinfo", conv_id, NULL);
    rep = call(s, &cm, err);
    cmd_release(&cm);
    if (!rep)
        return err ? err->code : REIN_ESTORE;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 4 || rep->element[0]->integer != 1)
        rc = rein_error_set(err, REIN_ENOTFOUND, "conversation %s is not locked", conv_id);
    else
        fill_info(rep->element[2], rep->element[1]->integer, rep->element[3]->str, out);
    freeReplyObject(rep);
    return rc;
}

/* ---- control messages ------------------------------------------------------------------- */

static const char *const lua_cancel_request =
    "local t = redis.call('GET', KEYS[1]) "
    "if not t then return 0 end "
    "local ttl = redis.call('PTTL', KEYS[1]) "
    "if ttl <= 0 then ttl = 1 end "
    "redis.call('SET', KEYS[2], t .. '\\n' .. ARGV[1], 'PX', ttl) return 1";

static rein_err rd_cancel_request(rein_store *s, const char *conv_id, const char *reason,
                                  rein_error *err)
{
    struct cmd cm = {0};
    long long v = 0;
    rein_err rc;

    eval(&cm, lua_cancel_request, 2);
    arg_key(&cm, s, "lock", conv_id, NULL);
    arg_key(&cm, s, "cancel", conv_id, NULL);
    arg(&cm, reason);
    rc = call_int(s, &cm, &v, err);
    if (rc == REIN_OK && v != 1)
        rc = rein_error_set(err, REIN_ESTATE, "conversation %s has no running turn", conv_id);
    return rc;
}

static rein_err rd_cancel_check(rein_store *s, const char *conv_id, const char *token,
                                bool *requested, char reason[160], rein_error *err)
{
    struct cmd cm = {0};
    redisReply *rep;
    size_t tlen = strlen(token);

    arg(&cm, "GET");
    arg_key(&cm, s, "cancel", conv_id, NULL);
    rep = call(s, &cm, err);
    cmd_release(&cm);
    if (!rep)
        return err ? err->code : REIN_ESTORE;
    if (rep->type == REDIS_REPLY_STRING && rep->len > tlen && rep->str[tlen] == '\n' &&
        memcmp(rep->str, token, tlen) == 0) {
        *requested = true;
        snprintf(reason, 160, "%s", rep->str + tlen + 1);
    }
    freeReplyObject(rep);
    return REIN_OK;
}

static const char *const lua_approval_request =
    "redis.call('DEL', KEYS[1]) "
    "redis.call('HSET', KEYS[1], 'requested_ms', ARGV[1]) "
    "redis.call('EXPIRE', KEYS[1], 86400) "
    "redis.call('SADD', KEYS[2], ARGV[2]) redis.call('EXPIRE', KEYS[2], 86400) return 1";

static void approval_keys(struct cmd *cm, rein_store *s, const char *conv_id, const char *call_id)
{
    arg_owned(cm, rein_asprintf("%sapproval:%s:%s", s->prefix, conv_id, call_id));
    arg_key(cm, s, "approvals", conv_id, NULL);
}

static rein_err rd_approval_request(rein_store *s, const char *conv_id, const char *call_id,
                                    int64_t now_ms, rein_error *err)
{
    struct cmd cm = {0};
    long long v = 0;

    eval(&cm, lua_approval_request, 2);
    approval_keys(&cm, s, conv_id, call_id);
    arg_i(&cm, now_ms);
    arg(&cm, call_id);
    return call_int(s, &cm, &v, err);
}

static const char *const lua_approval_post =
    "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end "
    "if redis.call('HEXISTS', KEYS[1], 'answer') == 1 then return -1 end "
    "redis.call('HSET', KEYS[1], 'answer', ARGV[1], 'answered_ms', ARGV[2]) return 1";

static rein_err rd_approval_post(rein_store *s, const char *conv_id, const char *call_id,
                                 bool approve, int64_t now_ms, rein_error *err)
{
    struct cmd cm = {0};
    long long v = 0;
    rein_err rc;

    eval(&cm, lua_approval_post, 2);
    approval_keys(&cm, s, conv_id, call_id);
    arg(&cm, approve ? "1" : "0");
    arg_i(&cm, now_ms);
    rc = call_int(s, &cm, &v, err);
    if (rc == REIN_OK && v == 0)
        rc = rein_error_set(err, REIN_ENOTFOUND, "no approval is waiting for call %s in %s",
                            call_id, conv_id);
    else if (rc == REIN_OK && v == -1)
        rc = rein_error_set(err, REIN_EEXIST, "call %s was already answered", call_id);
    return rc;
}

static rein_err rd_approval_take(rein_store *s, const char *conv_id, const char *call_id,
                                 bool *answered, bool *approve, rein_error *err)
{
    struct cmd cm = {0};
    redisReply *rep;

    *answered = false;
    arg(&cm, "HGET");
    arg_owned(&cm, rein_asprintf("%sapproval:%s:%s", s->prefix, conv_id, call_id));
    arg(&cm, "answer");
    rep = call(s, &cm, err);
    cmd_release(&cm);
    if (!rep)
        return err ? err->code : REIN_ESTORE;
    if (rep->type == REDIS_REPLY_STRING) {
        *answered = true;
        *approve = strcmp(rep->str, "1") == 0;
    }
    freeReplyObject(rep);
    return REIN_OK;
}

static const char *const lua_approval_drop =
    "redis.call('DEL', KEYS[1]) redis.call('SREM', KEYS[2], ARGV[1]) return 1";

static rein_err rd_approval_drop(rein_store *s, const char *conv_id, const char *call_id,
                                 rein_error *err)
{
    struct cmd cm = {0};
    long long v = 0;

    eval(&cm, lua_approval_drop, 2);
    approval_keys(&cm, s, conv_id, call_id);
    arg(&cm, call_id);
    return call_int(s, &cm, &v, err);
}

/* Flags the pending calls of every conversation whose lock is gone (expired or never held),
 * and marks such a conversation interrupted when its turn never wrote that it ended. */
static const char *const lua_recover =
    "local p = ARGV[1] local n = 0 "
    "for _, id in ipairs(redis.call('SMEMBERS', p .. 'pending')) do "
    "  if redis.call('EXISTS', p .. 'lock:' .. id) == 0 then "
    "    local ledger = p .. 'ledger:' .. id "
    "    for _, call in ipairs(redis.call('SMEMBERS', ledger .. ':pending')) do "
    "      local raw = redis.call('HGET', ledger, call) "
    "      if raw then "
    "        local e = cjson.decode(raw) "
    "        if e.status == 'pending' and not e.interrupted then "
    "          e.interrupted = true redis.call('HSET', ledger, call, cjson.encode(e)) n = n + 1 "
    "        end "
    "      end "
    "    end "
    "  end "
    "end "
    "for _, id in ipairs(redis.call('SMEMBERS', p .. 'running')) do "
    "  if redis.call('EXISTS', p .. 'lock:' .. id) == 0 then "
    "    if redis.call('HGET', p .. 'conv:' .. id, 'state') == 'running' then "
    "      redis.call('HSET', p .. 'conv:' .. id, 'state', 'interrupted') end "
    "    redis.call('SREM', p .. 'running', id) "
    "  end "
    "end "
    "return n";

static rein_err rd_recover(rein_store *s, int *flagged, rein_error *err)
{
    struct cmd cm = {0};
    long long v = 0;
    rein_err rc;

    eval(&cm, lua_recover, 0);
    arg(&cm, s->prefix);
    rc = call_int(s, &cm, &v, err);
    if (rc == REIN_OK)
        *flagged = (int)v;
    return rc;
}

static rein_err rd_ping(rein_store *s, rein_error *err)
{
    struct cmd cm = {0};
    redisReply *rep;

    arg(&cm, "PING");
    rep = call(s, &cm, err);
    cmd_release(&cm);
    if (!rep)
        return err ? err->code : REIN_ESTORE;
    freeReplyObject(rep);
    return REIN_OK;
}

static void rd_close(rein_store *s)
{
    struct rd *r = impl(s);

    if (!r)
        return;
    for (unsigned i = 0; i < r->max && r->all; i++) {
        if (r->all[i]) {
            if (r->all[i]->ctx)
                redisFree(r->all[i]->ctx);
            rein_free(r->all[i]);
        }
    }
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    rein_free(r->all);
    rein_free(r->password);
    rein_free(r);
    s->impl = NULL;
}

static const struct rein__store_ops redis_ops = {
    .kind = "redis",
    .close = rd_close,
    .ping = rd_ping,
    .conv_create = rd_conv_create,
    .conv_update = rd_conv_update,
    .conv_get = rd_conv_get,
    .conv_list = rd_conv_list,
    .conv_delete = rd_conv_delete,
    .messages_append = rd_messages_append,
    .messages_each = rd_messages_each,
    .messages_truncate = rd_messages_truncate,
    .ledger_put = rd_ledger_put,
    .ledger_update = rd_ledger_update,
    .ledger_each = rd_ledger_each,
    .events_add = rd_events_add,
    .events_each = rd_events_each,
    .events_after = rd_events_after,
    .events_last = rd_events_last,
    .lock_acquire = rd_lock_acquire,
    .lock_renew = rd_lock_renew,
    .lock_release = rd_lock_release,
    .lock_set_state = rd_lock_set_state,
    .lock_get = rd_lock_get,
    .cancel_request = rd_cancel_request,
    .cancel_check = rd_cancel_check,
    .approval_request = rd_approval_request,
    .approval_post = rd_approval_post,
    .approval_take = rd_approval_take,
    .approval_drop = rd_approval_drop,
    .recover = rd_recover,
};

/* ---- layout migrations ------------------------------------------------------------------ */

/*
 * The layout version this code writes. 1 is the layout of the first release (no P schema
 * key); 2 numbers events per conversation; 3 names the ledger's fields as every other shape
 * does (sent_name, not name_sent) and keeps latency_ms. A store written by a newer rein is
 * refused, an older one is brought up to date once, atomically, by the first instance that
 * opens it.
 */
#define LAYOUT 3

static const char *const lua_migrate =
    "local p = ARGV[1] local want = tonumber(ARGV[2]) "
    "local have = tonumber(redis.call('GET', p .. 'schema') or '1') "
    "if have > want then return -have end "
    "local glob = string.gsub(p, '([%*%?%[%]\\])', '\\%1') "
    "if have < 2 then "
    "  for _, key in ipairs(redis.call('KEYS', glob .. 'events:*')) do "
    "    if redis.call('TYPE', key).ok == 'list' then "
    "      local entries = redis.call('LRANGE', key, 0, -1) "
    "      redis.call('DEL', key) "
    "      for i, e in ipairs(entries) do "
    "        if string.sub(e, 1, 5) ~= '{\"s\":' then "
    "          e = '{\"s\":' .. i .. ',' .. string.sub(e, 2) end "
    "        redis.call('RPUSH', key, e) end "
    "      redis.call('SET', key .. ':seq', #entries) end end end "
    "if have < 3 then "
    "  for _, key in ipairs(redis.call('KEYS', glob .. 'ledger:*')) do "
    "    if redis.call('TYPE', key).ok == 'hash' then "
    "      local all = redis.call('HGETALL', key) "
    "      for i = 1, #all, 2 do local e = cjson.decode(all[i + 1]) "
    "        if e.sent_name == nil then e.sent_name = e.name_sent end "
    "        e.name_sent = nil "
    "        if e.latency_ms == nil then e.latency_ms = cjson.null end "
    "        if e.step == -1 then e.step = cjson.null end "
    "        redis.call('HSET', key, all[i], cjson.encode(e)) end end end end "
    "if have < want then redis.call('SET', p .. 'schema', want) end "
    "return have";

static rein_err migrate(rein_store *s, rein_error *err)
{
    struct cmd cm = {0};
    long long have = 0;
    rein_err rc;

    eval(&cm, lua_migrate, 0);
    arg(&cm, s->prefix);
    arg_i(&cm, LAYOUT);
    rc = call_int(s, &cm, &have, err);
    if (rc != REIN_OK)
        return rc;
    if (have < 0) {
        rein_error_set(err, REIN_ESTORE,
                       "redis %s: the store has layout version %lld, newer than this rein knows "
                       "(%d): use a newer rein or another key prefix",
                       impl(s)->addr, -have, LAYOUT);
        rein_error_where(err, WHERE);
        return REIN_ESTORE;
    }
    if (have < LAYOUT)
        rein_log(REIN_LOG_INFO, WHERE, "%s: migrated the store layout from version %lld to %d",
                 impl(s)->addr, have, LAYOUT);
    return REIN_OK;
}

/* Parses redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]. */
static rein_err parse_url(struct rd *r, const char *url, rein_error *err)
{
    const char *p = url + strlen("redis://");
    const char *at = strchr(p, '@');
    const char *slash, *colon;
    size_t hlen;
    char *end = NULL;

    if (at) {
        const char *pc = memchr(p, ':', (size_t)(at - p));
        const char *pw = pc ? pc + 1 : p;
        r->password = rein_strndup(pw, (size_t)(at - pw));
        if (!r->password)
            return oom(err);
        p = at + 1;
    }
    slash = strchr(p, '/');
    colon = memchr(p, ':', slash ? (size_t)(slash - p) : strlen(p));
    hlen = colon ? (size_t)(colon - p) : slash ? (size_t)(slash - p) : strlen(p);
    if (hlen == 0 || hlen >= sizeof(r->host))
        goto bad;
    memcpy(r->host, p, hlen);
    r->host[hlen] = '\0';
    r->port = 6379;
    if (colon) {
        long v;
        errno = 0;
        v = strtol(colon + 1, &end, 10);
        if (errno || end == colon + 1 || v < 1 || v > 65535 || (*end && *end != '/'))
            goto bad;
        r->port = (int)v;
    }
    if (slash && slash[1]) {
        long v;
        errno = 0;
        v = strtol(slash + 1, &end, 10);
        if (errno || *end || v < 0 || v > 1000000)
            goto bad;
        r->db = (int)v;
    }
    snprintf(r->addr, sizeof(r->addr), "%s:%d", r->host, r->port);
    return REIN_OK;
bad:
    return rein_error_set(err, REIN_EINVAL,
                          "redis URL is not understood: use redis://[:PASSWORD@]HOST[:PORT][/DB]");
}

rein_err rein__store_redis_open(rein_store *s, const char *url, rein_error *err)
{
    struct rd *r = rein_calloc(1, sizeof(*r));
    struct rconn *c = NULL;
    rein_err rc;

    if (!r)
        return oom(err);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->tally = &s->tally;
    s->impl = r;
    r->timeout_ms = s->opts.io_timeout_ms;
    r->max = s->opts.pool_size;
    r->all = rein_calloc(r->max, sizeof(struct rconn *));
    if (!r->all) {
        rc = oom(err);
        goto out_close;
    }
    rc = parse_url(r, url, err);
    if (rc != REIN_OK)
        goto out_close;
    s->url = rein_asprintf("redis://%s/%d", r->addr, r->db);
    if (!s->url) {
        rc = oom(err);
        goto out_close;
    }
    /* Connect now, so an unreachable server is reported at open with its address. */
    rc = conn_get(r, &c, err);
    if (rc != REIN_OK)
        goto out_close;
    conn_put(r, c);
    rc = migrate(s, err);
    if (rc != REIN_OK)
        goto out_close;
    s->ops = &redis_ops;
    return REIN_OK;
out_close:
    rd_close(s);
    return rc;
}

#else /* !HAVE_HIREDIS */

rein_err rein__store_redis_open(rein_store *s, const char *url, rein_error *err)
{
    (void)s;
    return rein_error_set(err, REIN_ENOTSUP,
                          "%s: this rein was built without hiredis; install libhiredis-dev and "
                          "rebuild, or use sqlite:PATH",
                          url);
}

#endif
