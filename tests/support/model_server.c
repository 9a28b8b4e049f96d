/*
 * The scripted model server (model_server.h): HTTP on 127.0.0.1 through libmicrohttpd, one
 * thread per connection, so a reply can sleep, stall or hang on its own thread without
 * holding up the others.
 *
 * A request is read whole, recorded, validated (model_server_check.c), matched against the
 * script (model_server_script.c) and rendered into a list of events (model_server_wire.c).
 * Faults then reshape that list (an inserted malformed line, an in-stream error, a cut or a
 * stall after k events, a cut after n bytes, re-slicing into n-byte pieces), and a content
 * reader callback hands the pieces to MHD one by one with the scripted delays in between.
 *
 * Every wait (delays, hangs) polls two things: the connection's socket, so a hang ends when
 * the client goes away, and a pipe written once by ms_stop(), so nothing outlives the server
 * and no test can block forever on it.
 */
#include "model_server_int.h"
#include "core/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define MS_MAX_BODY ((size_t)64 << 20)

/* A request record with the storage its public view points into. */
struct record {
    struct ms_request pub;
    char *method, *path, *query, *body, *reply_name, *error;
};

struct ms_server {
    struct MHD_Daemon *daemon;
    int port;
    char url[64];
    char openai_url[72];
    int stop_pipe[2]; /* written once by ms_stop: wakes every waiting reply */

    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t cond;
    struct ms_reply **replies;
    size_t nreplies, cap_replies;
    char *name;
    char *api_key;
    bool validate;
    struct record **log;
    size_t nlog, cap_log;
    size_t seen;      /* requests since the last reset; can exceed nlog past log_limit */
    size_t log_limit; /* most records kept; 0: no limit */
};

/* ---- small helpers ------------------------------------------------------------------- */

static void lock(ms_server *s)
{
    pthread_mutex_lock(&s->mu);
}

static void unlock(ms_server *s)
{
    pthread_mutex_unlock(&s->mu);
}

static void reply_unref(ms_server *s, struct ms_reply *r)
{
    bool last;

    if (!r)
        return;
    lock(s);
    last = --r->refs == 0;
    unlock(s);
    if (last)
        ms__reply_free(r);
}

/*
 * Sleeps ms milliseconds (-1: until woken). Returns false as soon as the server stops or the
 * client at fd (-1: none) goes away.
 */
static bool pause_ms(ms_server *s, int fd, long ms)
{
    int64_t deadline = ms < 0 ? INT64_MAX : rein_now_ms() + ms;

    for (;;) {
        struct pollfd p[2] = {{.fd = s->stop_pipe[0], .events = POLLIN},
                              {.fd = fd, .events = POLLRDHUP}};
        int64_t left = ms < 0 ? 1000 : deadline - rein_now_ms();
        int n;

        n = poll(p, fd >= 0 ? 2 : 1, left > 1000 ? 1000 : left < 0 ? 0 : (int)left);
        if (n < 0 && errno != EINTR)
            return false;
        if (p[0].revents)
            return false;
        if (fd >= 0 && (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
            return false;
        if (ms >= 0 && rein_now_ms() >= deadline)
            return true;
    }
}

/* ---- the script ---------------------------------------------------------------------- */

static rein_err push_reply(ms_server *s, struct ms_reply *r)
{
    if (s->nreplies == s->cap_replies) {
        size_t cap = s->cap_replies ? s->cap_replies * 2 : 16;
        struct ms_reply **v = rein_realloc(s->replies, cap * sizeof(struct ms_reply *));
        if (!v)
            return REIN_ENOMEM;
        s->replies = v;
        s->cap_replies = cap;
    }
    r->index = (int)s->nreplies;
    s->replies[s->nreplies++] = r;
    return REIN_OK;
}

/* Drops the script's reference to every reply. Called with the lock held. */
static void clear_replies_locked(ms_server *s, struct ms_reply ***old, size_t *nold)
{
    *old = s->replies;
    *nold = s->nreplies;
    s->replies = NULL;
    s->nreplies = s->cap_replies = 0;
}

static void release_replies(ms_server *s, struct ms_reply **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        reply_unref(s, v[i]);
    rein_free(v);
}

static bool reply_left(const struct ms_reply *r)
{
    return r->times == 0 || r->used < r->times;
}

/* Picks the reply for a request and takes a reference to it. Called with the lock held. */
static struct ms_reply *select_locked(ms_server *s, const struct ms_req_view *v)
{
    struct ms_reply *pick = NULL;
    size_t i;

    for (i = 0; !pick && i < s->nreplies; i++) {
        struct ms_reply *r = s->replies[i];
        if (r->match && reply_left(r) && ms__reply_matches(r, v))
            pick = r;
    }
    for (i = 0; !pick && i < s->nreplies; i++) {
        struct ms_reply *r = s->replies[i];
        if (!r->match && reply_left(r))
            pick = r;
    }
    if (pick) {
        pick->used++;
        pick->refs++;
    }
    return pick;
}

/* True when some reply's match.path names this path (so an unknown path may be served). */
static bool path_scripted_locked(ms_server *s, const char *path)
{
    for (size_t i = 0; i < s->nreplies; i++) {
        const char *p = json_string_value(json_object_get(s->replies[i]->match, "path"));
        if (p && strcmp(p, path) == 0)
            return true;
    }
    return false;
}

/* Compiles every reply of an array; nothing is kept unless all of them are right. */
static rein_err compile_all(json_t *arr, const char *base_dir, struct ms_reply ***out, size_t *nout,
                            rein_error *err)
{
    size_t n = json_array_size(arr), i;
    struct ms_reply **v = rein_calloc(n ? n : 1, sizeof(struct ms_reply *));
    rein_err rc = REIN_OK;

    if (!v)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    for (i = 0; !rc && i < n; i++) {
        char where[48];
        snprintf(where, sizeof(where), "replies[%zu]", i);
        rc = ms__reply_compile(json_array_get(arr, i), where, base_dir, &v[i], err);
    }
    if (rc) {
        for (i = 0; i < n; i++)
            ms__reply_free(v[i]);
        rein_free(v);
        return rc;
    }
    *out = v;
    *nout = n;
    return REIN_OK;
}

static const char *const scenario_members[] = {"name", "api_key", "validate", "replies",
                                               "description"};

static bool is_scenario(const json_t *doc)
{
    return json_is_object(doc) && json_object_get(doc, "replies");
}

static rein_err check_scenario(const json_t *doc, rein_error *err)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)doc, key, v)
    {
        size_t i, n = REIN_ARRAY_SIZE(scenario_members);
        for (i = 0; i < n && strcmp(key, scenario_members[i]) != 0; i++)
            ;
        if (i == n)
            return rein_error_set(err, REIN_EINVAL,
                                  "scenario: unknown member \"%s\" (known: name, api_key, "
                                  "validate, replies, description)",
                                  key);
    }
    if (!json_is_array(json_object_get(doc, "replies")))
        return rein_error_set(err, REIN_EINVAL, "scenario.replies: expected an array");
    if (json_object_get(doc, "name") && !json_is_string(json_object_get(doc, "name")))
        return rein_error_set(err, REIN_EINVAL, "scenario.name: expected a string");
    if (json_object_get(doc, "api_key") && !json_is_string(json_object_get(doc, "api_key")) &&
        !json_is_null(json_object_get(doc, "api_key")))
        return rein_error_set(err, REIN_EINVAL, "scenario.api_key: expected a string or null");
    if (json_object_get(doc, "validate") && !json_is_boolean(json_object_get(doc, "validate")))
        return rein_error_set(err, REIN_EINVAL, "scenario.validate: expected true or false");
    return REIN_OK;
}

static void set_str(char **slot, const char *value)
{
    rein_free(*slot);
    *slot = value ? rein_strdup(value) : NULL;
}

/* Installs a parsed document (scenario, reply array or one reply). doc is borrowed. */
static rein_err install(ms_server *s, json_t *doc, const char *base_dir, const char *dflt_name,
                        bool append, rein_error *err)
{
    json_t *arr = NULL;
    struct ms_reply **v = NULL, **old = NULL;
    size_t n = 0, nold = 0, i;
    rein_err rc = REIN_OK;

    if (is_scenario(doc)) {
        rc = check_scenario(doc, err);
        arr = json_incref(json_object_get(doc, "replies"));
    } else if (json_is_array(doc)) {
        arr = json_incref(doc);
    } else if (json_is_object(doc)) {
        arr = json_pack("[O]", doc);
    } else {
        rc = rein_error_set(err, REIN_EINVAL,
                            "a script is a scenario object, an array of replies or one reply, "
                            "not %s",
                            rein_json_type_name(doc));
    }
    if (!rc && !arr)
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    if (!rc)
        rc = compile_all(arr, base_dir, &v, &n, err);
    json_decref(arr);
    if (rc)
        return rc;
    lock(s);
    if (!append)
        clear_replies_locked(s, &old, &nold);
    for (i = 0; i < n; i++) {
        if (push_reply(s, v[i]) != REIN_OK)
            break;
    }
    if (is_scenario(doc)) {
        const char *name = json_string_value(json_object_get(doc, "name"));
        if (name || dflt_name)
            set_str(&s->name, name ? name : dflt_name);
        if (json_object_get(doc, "api_key"))
            set_str(&s->api_key, json_string_value(json_object_get(doc, "api_key")));
        if (json_object_get(doc, "validate"))
            s->validate = json_is_true(json_object_get(doc, "validate"));
    } else if (dflt_name && !append) {
        set_str(&s->name, dflt_name);
    }
    unlock(s);
    if (i < n) {
        for (size_t j = i; j < n; j++)
            ms__reply_free(v[j]);
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    rein_free(v);
    release_replies(s, old, nold);
    return rc;
}

rein_err ms_script(ms_server *s, const char *text, bool append, rein_error *err)
{
    json_t *doc = rein_json_parse(text, strlen(text), 0, err);
    rein_err rc;

    if (!doc)
        return rein_error_prefix(err, "script: ");
    rc = install(s, doc, NULL, NULL, append, err);
    json_decref(doc);
    return rc;
}

rein_err ms_load(ms_server *s, const char *path, bool append, rein_error *err)
{
    json_t *doc = rein_json_load_file(path, err);
    char *dir_copy = rein_strdup(path), *base_copy = rein_strdup(path);
    rein_err rc;

    if (!doc || !dir_copy || !base_copy) {
        rc = doc   ? rein_error_set(err, REIN_ENOMEM, "out of memory")
             : err ? err->code
                   : REIN_EPARSE;
        goto out;
    }
    rc = install(s, doc, dirname(dir_copy), basename(base_copy), append, err);
    if (rc)
        rein_error_prefix(err, "%s: ", path);
out:
    json_decref(doc);
    rein_free(dir_copy);
    rein_free(base_copy);
    return rc;
}

rein_err ms_add(ms_server *s, json_t *reply, rein_error *err)
{
    rein_err rc;

    if (!json_is_object(reply)) {
        json_decref(reply);
        return rein_error_set(err, REIN_EINVAL, "a reply is a JSON object");
    }
    rc = install(s, reply, NULL, NULL, true, err);
    json_decref(reply);
    return rc;
}

rein_err ms_add_text(ms_server *s, const char *text)
{
    return ms_add(s, json_pack("{s:s}", "text", text), NULL);
}

rein_err ms_add_tool_call(ms_server *s, const char *id, const char *name, const char *arguments)
{
    json_t *call = json_pack("{s:s, s:s}", "name", name, "arguments", arguments);

    if (call && id)
        json_object_set_new(call, "id", json_string(id));
    return ms_add(s, json_pack("{s:[o]}", "tool_calls", call), NULL);
}

rein_err ms_add_error(ms_server *s, int status, const char *message)
{
    json_t *r = json_pack("{s:i}", "status", status);

    if (r && message)
        json_object_set_new(r, "error", json_pack("{s:s}", "message", message));
    return ms_add(s, r, NULL);
}

void ms_set_api_key(ms_server *s, const char *key)
{
    lock(s);
    set_str(&s->api_key, key);
    unlock(s);
}

void ms_set_validate(ms_server *s, bool on)
{
    lock(s);
    s->validate = on;
    unlock(s);
}

void ms_set_name(ms_server *s, const char *name)
{
    lock(s);
    set_str(&s->name, name);
    unlock(s);
}

size_t ms_replies_left(ms_server *s)
{
    size_t n = 0;

    lock(s);
    for (size_t i = 0; i < s->nreplies; i++)
        n += reply_left(s->replies[i]);
    unlock(s);
    return n;
}

/* ---- the request log ----------------------------------------------------------------- */

static void record_free(struct record *r)
{
    if (!r)
        return;
    rein_free(r->method);
    rein_free(r->path);
    rein_free(r->query);
    rein_free(r->body);
    rein_free(r->reply_name);
    rein_free(r->error);
    json_decref(r->pub.headers);
    json_decref(r->pub.json);
    rein_free(r);
}

/*
 * Counts the request, adds rec to the log (taking it; it is dropped past the log limit or
 * when memory runs out) and wakes ms_wait. Called with the lock held.
 */
static void publish_locked(ms_server *s, struct record *rec)
{
    rec->pub.index = s->seen++;
    pthread_cond_broadcast(&s->cond);
    if (s->log_limit && s->nlog >= s->log_limit) {
        record_free(rec);
        return;
    }
    if (s->nlog == s->cap_log) {
        size_t cap = s->cap_log ? s->cap_log * 2 : 32;
        struct record **v = rein_realloc(s->log, cap * sizeof(struct record *));
        if (!v) {
            record_free(rec);
            return;
        }
        s->log = v;
        s->cap_log = cap;
    }
    s->log[s->nlog++] = rec;
}

void ms_set_log_limit(ms_server *s, size_t max)
{
    lock(s);
    s->log_limit = max;
    unlock(s);
}

size_t ms_request_count(ms_server *s)
{
    size_t n;

    lock(s);
    n = s->seen;
    unlock(s);
    return n;
}

bool ms_wait(ms_server *s, size_t n, int timeout_ms)
{
    struct timespec ts = rein__deadline_ts(CLOCK_MONOTONIC, timeout_ms);
    bool ok;

    lock(s);
    while (s->seen < n) {
        if (pthread_cond_timedwait(&s->cond, &s->mu, &ts) == ETIMEDOUT)
            break;
    }
    ok = s->seen >= n;
    unlock(s);
    return ok;
}

const struct ms_request *ms_request(ms_server *s, size_t i)
{
    const struct ms_request *r = NULL;

    lock(s);
    if (i < s->nlog)
        r = &s->log[i]->pub;
    unlock(s);
    return r;
}

const struct ms_request *ms_last_request(ms_server *s)
{
    const struct ms_request *r = NULL;

    lock(s);
    if (s->nlog)
        r = &s->log[s->nlog - 1]->pub;
    unlock(s);
    return r;
}

const char *ms_request_header(const struct ms_request *r, const char *name)
{
    const char *key;
    json_t *v;

    json_object_foreach(r->headers, key, v)
    {
        if (strcasecmp(key, name) == 0)
            return json_string_value(v);
    }
    return NULL;
}

/* A JSON string of bytes that may not be UTF-8: invalid bytes become U+FFFD via the writer. */
static json_t *lossy_string(const char *s, size_t len)
{
    struct rein_buf b;
    json_t *v;

    v = json_stringn(s, len);
    if (v)
        return v;
    rein_buf_init(&b, 0);
    if (rein_json_escape(&b, s, len) == REIN_OK && rein_buf_addch(&b, '"') == REIN_OK) {
        /* Re-read the escaped text as a JSON string: it is valid UTF-8 now. */
        struct rein_buf q;
        rein_buf_init(&q, 0);
        if (rein_buf_addch(&q, '"') == REIN_OK && rein_buf_add(&q, b.ptr, b.len) == REIN_OK)
            v = rein_json_parse(q.ptr, q.len, 0, NULL);
        rein_buf_release(&q);
    }
    rein_buf_release(&b);
    return v ? v : json_string("");
}

static json_t *record_json(const struct ms_request *r)
{
    char iso[REIN_TIME_ISO_LEN];
    json_t *o = json_object();

    json_object_set_new(o, "index", json_integer((json_int_t)r->index));
    json_object_set_new(o, "method", json_string(r->method));
    json_object_set_new(o, "path", lossy_string(r->path, strlen(r->path)));
    json_object_set_new(o, "query", lossy_string(r->query, strlen(r->query)));
    json_object_set(o, "headers", r->headers);
    json_object_set_new(o, "body", lossy_string(r->body, r->body_len));
    json_object_set(o, "json", r->json ? r->json : json_null());
    json_object_set_new(o, "time", json_string(rein_time_iso(r->time_ms, iso)));
    json_object_set_new(o, "time_ms", json_integer(r->time_ms));
    json_object_set_new(o, "format", json_string(r->format));
    json_object_set_new(o, "stream", json_boolean(r->stream));
    json_object_set_new(o, "reply", json_integer(r->reply));
    json_object_set_new(o, "reply_name", r->reply_name ? json_string(r->reply_name) : json_null());
    json_object_set_new(o, "status", json_integer(r->status));
    json_object_set_new(o, "error",
                        r->error ? lossy_string(r->error, strlen(r->error)) : json_null());
    return o;
}

json_t *ms_requests_json(ms_server *s)
{
    json_t *arr = json_array();

    lock(s);
    for (size_t i = 0; arr && i < s->nlog; i++)
        json_array_append_new(arr, record_json(&s->log[i]->pub));
    unlock(s);
    return arr;
}

void ms_reset(ms_server *s)
{
    struct ms_reply **old;
    size_t nold;
    struct record **log;
    size_t nlog;

    lock(s);
    clear_replies_locked(s, &old, &nold);
    log = s->log;
    nlog = s->nlog;
    s->log = NULL;
    s->nlog = s->cap_log = s->seen = 0;
    unlock(s);
    release_replies(s, old, nold);
    for (size_t i = 0; i < nlog; i++)
        record_free(log[i]);
    rein_free(log);
}

/* ---- answering ----------------------------------------------------------------------- */

/* The body of one request, gathered over the access handler's calls. */
struct exchange {
    struct rein_buf body;
    bool too_big;
};

enum end_mode { END_NORMAL, END_CUT, END_HANG };

/* What the content reader serves: the body's bytes in pieces, then an ending. */
struct stream {
    ms_server *s;
    int fd;
    struct ms_body body;
    size_t *pieces; /* end offsets; piece i spans pieces[i-1]..pieces[i] */
    size_t npieces;
    size_t next; /* next piece */
    size_t at;   /* bytes of the body sent so far */
    bool started;
    enum end_mode end;
    long delay_first_byte_ms, delay_chunk_ms;
};

static void stream_free(void *cls)
{
    struct stream *st = cls;

    ms__body_release(&st->body);
    rein_free(st->pieces);
    rein_free(st);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream *st = cls;
    size_t start, n;
    long wait = 0;

    (void)pos;
    start = st->next ? st->pieces[st->next - 1] : 0;
    if (!st->started)
        wait = st->delay_first_byte_ms;
    else if (st->at == start)
        wait = st->delay_chunk_ms;
    st->started = true;
    if (wait > 0 && !pause_ms(st->s, st->fd, wait))
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (st->next >= st->npieces) {
        if (st->end == END_HANG)
            pause_ms(st->s, st->fd, -1);
        return st->end == END_NORMAL ? MHD_CONTENT_READER_END_OF_STREAM
                                     : MHD_CONTENT_READER_END_WITH_ERROR;
    }
    n = st->pieces[st->next] - st->at;
    if (n > max)
        n = max;
    memcpy(buf, st->body.buf.ptr + st->at, n);
    st->at += n;
    if (st->at == st->pieces[st->next])
        st->next++;
    return (ssize_t)n;
}

/* Reshapes the rendered events by the reply's faults; returns the declared body length. */
static rein_err apply_event_faults(const struct ms_reply *r, enum ms_format f, struct stream *st,
                                   size_t *declared)
{
    const struct ms_fault *ft = &r->fault;
    struct ms_body *b = &st->body;
    rein_err rc = REIN_OK;

    if (ft->malformed_after_events >= 0)
        rc = ms__body_insert(b, (size_t)ft->malformed_after_events, ft->malformed,
                             strlen(ft->malformed));
    if (!rc && ft->error_after_events >= 0) {
        ms__body_keep(b, (size_t)ft->error_after_events);
        rc = ms__render_stream_error(f, ft->error_event, b);
    }
    *declared = b->buf.len;
    if (!rc && ft->cut_after_events >= 0) {
        ms__body_keep(b, (size_t)ft->cut_after_events);
        st->end = END_CUT;
    }
    if (!rc && ft->hang_after_events >= 0) {
        ms__body_keep(b, (size_t)ft->hang_after_events);
        st->end = END_HANG;
    }
    return rc;
}

/* Cuts the pieces the reader will send: events, or fixed-size slices, up to a byte limit. */
static rein_err plan_pieces(const struct ms_reply *r, struct stream *st)
{
    const struct ms_fault *ft = &r->fault;
    size_t limit = st->body.buf.len, i, cap;

    if (ft->cut_after_bytes >= 0 && (size_t)ft->cut_after_bytes < limit) {
        limit = (size_t)ft->cut_after_bytes;
        st->end = st->end == END_HANG ? END_HANG : END_CUT;
    }
    cap = ft->chunk_bytes > 0 ? limit / (size_t)ft->chunk_bytes + 2 : st->body.n + 2;
    st->pieces = rein_calloc(cap, sizeof(*st->pieces));
    if (!st->pieces)
        return REIN_ENOMEM;
    if (ft->chunk_bytes > 0) {
        for (i = (size_t)ft->chunk_bytes; i < limit; i += (size_t)ft->chunk_bytes)
            st->pieces[st->npieces++] = i;
    } else {
        for (i = 0; i < st->body.n && st->body.ends[i] < limit; i++) {
            if (st->body.ends[i] > (st->npieces ? st->pieces[st->npieces - 1] : 0))
                st->pieces[st->npieces++] = st->body.ends[i];
        }
    }
    if (limit > (st->npieces ? st->pieces[st->npieces - 1] : 0))
        st->pieces[st->npieces++] = limit;
    return REIN_OK;
}

/* Everything known about the request being answered. */
struct req {
    struct MHD_Connection *conn;
    int fd;
    const char *method;
    const char *path;
    enum ms_format format;
    json_t *headers;
    json_t *json;
    const char *parse_error;
    const char *body;
    size_t body_len;
    bool stream;
};

static void add_header(struct MHD_Response *resp, const char *name, const char *value)
{
    if (MHD_add_response_header(resp, name, value) != MHD_YES)
        rein_log(REIN_LOG_WARN, "model-server", "cannot add header %s", name);
}

/* The value of the scripted header name (any case) of a reply, or NULL. */
static const char *extra_header(const json_t *extra, const char *name)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)extra, key, v)
    {
        if (strcasecmp(key, name) == 0)
            return json_string_value(v);
    }
    return NULL;
}

static void add_common_headers(struct MHD_Response *resp, enum ms_format f, const struct stream *st,
                               const json_t *extra)
{
    const char *key;
    json_t *v;

    add_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, st->body.content_type);
    /* the request id once, as the services send it: a scripted one instead of the made one */
    if (f == MS_FMT_ANTHROPIC && !extra_header(extra, "request-id"))
        add_header(resp, "request-id", st->body.request_id);
    else if ((f == MS_FMT_OPENAI || f == MS_FMT_RESPONSES) && !extra_header(extra, "x-request-id"))
        add_header(resp, "x-request-id", st->body.request_id);
    else if (f == MS_FMT_DASHSCOPE)
        add_header(resp, "x-dashscope-call-gateway", "true");
    if (st->body.error_type[0])
        add_header(resp, "x-amzn-ErrorType", st->body.error_type);
    if (st->body.chunked)
        add_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    json_object_foreach((json_t *)extra, key, v)
    {
        add_header(resp, key, json_string_value(v));
    }
}

/* Queues st (taken) as the response. */
static enum MHD_Result send_stream(struct req *q, int status, enum ms_format f, struct stream *st,
                                   size_t declared, const json_t *extra)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;

    resp = MHD_create_response_from_callback(st->body.chunked ? MHD_SIZE_UNKNOWN : declared,
                                             16 * 1024, stream_read, st, stream_free);
    if (!resp) {
        stream_free(st);
        return MHD_NO;
    }
    add_common_headers(resp, f, st, extra);
    ret = MHD_queue_response(q->conn, (unsigned int)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static struct stream *stream_new(ms_server *s, int fd)
{
    struct stream *st = rein_calloc(1, sizeof(*st));

    if (!st)
        return NULL;
    st->s = s;
    st->fd = fd;
    ms__body_init(&st->body);
    return st;
}

/* Answers with an error body in format f (no faults, no delays). */
static enum MHD_Result send_error(ms_server *s, struct req *q, enum ms_format f,
                                  const struct ms_error_info *e)
{
    struct stream *st = stream_new(s, q->fd);

    if (!st)
        return MHD_NO;
    if (ms__render_error(f == MS_FMT_UNKNOWN ? MS_FMT_OPENAI : f, e, &st->body) != REIN_OK ||
        plan_pieces(&(struct ms_reply){.fault = {.chunk_bytes = -1, .cut_after_bytes = -1}}, st) !=
            REIN_OK) {
        stream_free(st);
        return MHD_NO;
    }
    return send_stream(q, e->status, f, st, st->body.buf.len, NULL);
}

static const char *raw_content_type(const struct ms_reply *r, enum ms_format f, bool stream)
{
    if (r->content_type)
        return r->content_type;
    if (!stream)
        return "application/json";
    return f == MS_FMT_OLLAMA ? "application/x-ndjson" : "text/event-stream; charset=utf-8";
}

static rein_err render(const struct ms_reply *r, const struct req *q, enum ms_format f, bool stream,
                       struct stream *st)
{
    const json_t *opts = json_object_get(q->json, "stream_options");
    struct ms_ctx c = {.format = f,
                       .req = q->json,
                       .req_len = q->body_len,
                       .stream = stream,
                       .include_usage = json_is_true(json_object_get(opts, "include_usage")),
                       .path = q->path};

    if (r->body && r->wrap_sse) {
        st->body.content_type =
            r->content_type ? r->content_type : "text/event-stream; charset=utf-8";
        st->body.chunked = stream;
        return ms__body_wrap_lines(&st->body, r->body, r->body_len, f);
    }
    if (r->body) {
        const char *ct = raw_content_type(r, f, stream);
        st->body.content_type = ct;
        st->body.chunked = stream;
        if (strstr(ct, "event-stream"))
            return ms__body_split_raw(&st->body, r->body, r->body_len, true);
        if (strstr(ct, "ndjson") || strstr(ct, "jsonl"))
            return ms__body_split_raw(&st->body, r->body, r->body_len, false);
        if (rein_buf_add(&st->body.buf, r->body, r->body_len) != REIN_OK)
            return REIN_ENOMEM;
        return ms__body_mark(&st->body);
    }
    if (r->status >= 400) {
        const json_t *e = json_object_get(r->spec, "error");
        struct ms_error_info info = {
            .status = r->status,
            .type = json_string_value(json_object_get(e, "type")),
            .message = json_string_value(json_object_get(e, "message")),
            .code = json_string_value(json_object_get(e, "code")),
            .param = json_string_value(json_object_get(e, "param")),
        };
        return ms__render_error(f, &info, &st->body);
    }
    return ms__render_reply(r, &c, &st->body);
}

/* Serves a scripted reply: render, reshape by faults, wait, then queue the stream. */
static enum MHD_Result serve_reply(ms_server *s, struct req *q, const struct ms_reply *r)
{
    enum ms_format f = r->format != MS_FMT_AUTO      ? r->format
                       : q->format != MS_FMT_UNKNOWN ? q->format
                                                     : MS_FMT_OPENAI;
    bool stream = r->stream >= 0 ? r->stream == 1 : q->stream;
    struct stream *st = stream_new(s, q->fd);
    size_t declared = 0;
    const char *rid;

    if (!st)
        return MHD_NO;
    st->delay_first_byte_ms = r->delay_first_byte_ms;
    st->delay_chunk_ms = r->delay_chunk_ms;
    rid = extra_header(r->headers, f == MS_FMT_ANTHROPIC ? "request-id" : "x-request-id");
    if (rid)
        snprintf(st->body.request_id, sizeof(st->body.request_id), "%s", rid);
    if (render(r, q, f, stream, st) != REIN_OK || apply_event_faults(r, f, st, &declared) ||
        plan_pieces(r, st) != REIN_OK) {
        stream_free(st);
        return MHD_NO;
    }
    if (r->fault.hang)
        pause_ms(s, q->fd, -1);
    if (r->fault.hang || (r->delay_headers_ms > 0 && !pause_ms(s, q->fd, r->delay_headers_ms))) {
        stream_free(st);
        return MHD_NO;
    }
    return send_stream(q, r->status, f, st, declared, r->headers);
}

/* ---- request intake ------------------------------------------------------------------ */

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    json_t *h = cls;
    char name[256];
    size_t i;
    const char *old;

    (void)kind;
    for (i = 0; key[i] && i + 1 < sizeof(name); i++)
        name[i] = (char)((key[i] >= 'A' && key[i] <= 'Z') ? key[i] + 32 : key[i]);
    name[i] = '\0';
    old = json_string_value(json_object_get(h, name));
    if (old) {
        char *joined = rein_asprintf("%s, %s", old, value ? value : "");
        json_object_set_new(h, name, json_string(joined ? joined : old));
        rein_free(joined);
    } else {
        json_object_set_new(h, name, json_string(value ? value : ""));
    }
    return MHD_YES;
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    struct rein_buf *b = cls;
    rein_err rc = REIN_OK;

    (void)kind;
    if (b->len)
        rc = rein_buf_addch(b, '&');
    if (!rc)
        rc = rein_buf_adds(b, key);
    if (!rc && value)
        rc = rein_buf_addf(b, "=%s", value);
    return rc ? MHD_NO : MHD_YES;
}

static struct record *record_new(struct MHD_Connection *conn, const char *method, const char *path,
                                 struct exchange *x)
{
    struct record *rec = rein_calloc(1, sizeof(*rec));
    const union MHD_ConnectionInfo *ci;
    struct rein_buf query;

    if (!rec)
        return NULL;
    rein_buf_init(&query, 0);
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_arg, &query);
    rec->method = rein_strdup(method);
    rec->path = rein_strdup(path);
    rec->query = rein_buf_detach(&query, NULL);
    rec->pub.body_len = x->body.len;
    rec->body = rein_malloc(x->body.len + 1);
    if (rec->body)
        memcpy(rec->body, x->body.ptr, x->body.len + 1);
    rec->pub.headers = json_object();
    if (!rec->method || !rec->path || !rec->query || !rec->body || !rec->pub.headers) {
        record_free(rec);
        return NULL;
    }
    MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_header, rec->pub.headers);
    rec->pub.method = rec->method;
    rec->pub.path = rec->path;
    rec->pub.query = rec->query;
    rec->pub.body = rec->body;
    rec->pub.time_ms = rein_wall_ms();
    rec->pub.mono_ms = rein_now_ms();
    rec->pub.reply = -1;
    ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
        rec->pub.client_port = ntohs(((const struct sockaddr_in *)ci->client_addr)->sin_port);
    return rec;
}

static bool wants_stream(enum ms_format f, const char *path, const json_t *body,
                         const json_t *headers)
{
    const json_t *v = json_object_get(body, "stream");

    if (f == MS_FMT_GEMINI) /* the method says it: :streamGenerateContent */
        return strstr(path, ":streamGenerateContent") != NULL;
    if (f == MS_FMT_BEDROCK)
        return ms__bd_path_streams(path);
    if (f == MS_FMT_ANTHROPIC && ms__vx_path(path)) /* Vertex: the method says it */
        return ms__vx_path_streams(path);
    if (f == MS_FMT_DASHSCOPE) {
        /* DashScope streams when asked by header, as its SDKs do. */
        const char *sse = json_string_value(json_object_get(headers, "x-dashscope-sse"));
        return sse && strcmp(sse, "enable") == 0;
    }
    if (f == MS_FMT_OLLAMA)
        return !json_is_false(v);
    return json_is_true(v);
}

/* Fills the outcome of a request into its record before it is published. */
static void record_outcome(struct record *rec, int status, const struct ms_reply *r,
                           const char *error)
{
    rec->pub.status = status;
    if (r) {
        rec->pub.reply = r->index;
        rec->reply_name = r->name ? rein_strdup(r->name) : NULL;
        rec->pub.reply_name = rec->reply_name;
    }
    if (error) {
        rec->error = rein_strdup(error);
        rec->pub.error = rec->error;
    }
}

/* How a request is answered: a scripted reply, or an error whose strings live here. */
struct outcome {
    struct ms_reply *pick; /* a reference, or NULL */
    struct ms_error_info e;
    char *msg;
    char *param;
    char type[48];
    char code[48];
    bool google; /* Vertex refused it itself: its error in Google's shape */
};

static void outcome_release(ms_server *s, struct outcome *o)
{
    reply_unref(s, o->pick);
    rein_free(o->msg);
    rein_free(o->param);
}

/* Takes the verdict's strings into the outcome. */
static void outcome_from_verdict(struct outcome *o, struct ms_verdict *v)
{
    o->msg = v->message;
    o->param = v->param;
    v->message = v->param = NULL;
    snprintf(o->type, sizeof(o->type), "%s", v->type);
    snprintf(o->code, sizeof(o->code), "%s", v->code);
    o->e.status = v->status;
    o->e.type = o->type[0] ? o->type : NULL;
    o->e.code = o->code[0] ? o->code : NULL;
    o->e.param = o->param;
    o->e.flat = v->flat;
    o->e.message_json = v->message_json;
}

/* Checks the path, the method and the request the way the service would. */
static void screen(ms_server *s, const struct req *q, struct outcome *o)
{
    struct ms_verdict v = {0};
    bool known, validate;
    char *key;

    lock(s);
    known = q->format != MS_FMT_UNKNOWN || path_scripted_locked(s, q->path);
    key = s->api_key ? rein_strdup(s->api_key) : NULL;
    validate = s->validate;
    unlock(s);
    if (!known || strcmp(q->method, "POST") != 0) {
        o->msg = rein_asprintf("Invalid URL (%s %s)", q->method, q->path);
        o->e.status = 404;
        o->e.type = "invalid_request_error";
    } else if (q->format == MS_FMT_BEDROCK && key &&
               !ms__bd_check_auth(q->headers, q->path, q->body, q->body_len, key, &v)) {
        outcome_from_verdict(o, &v);
        ms__verdict_release(&v);
    } else if (q->format == MS_FMT_ANTHROPIC && ms__vx_path(q->path)) {
        if (!ms__vx_check(q->headers, key, q->path, validate, q->json, q->parse_error, &v,
                          &o->google))
            outcome_from_verdict(o, &v);
        ms__verdict_release(&v);
    } else if (q->format != MS_FMT_UNKNOWN &&
               !ms__check_request(q->format, q->path, q->headers,
                                  q->format == MS_FMT_BEDROCK ? NULL : key, validate, q->json,
                                  q->parse_error, &v)) {
        outcome_from_verdict(o, &v);
        ms__verdict_release(&v);
    }
    rein_free(key);
}

/* Screens, selects and records one model request (rec is taken). */
static void decide(ms_server *s, struct record *rec, const struct req *q, struct outcome *o)
{
    struct ms_req_view view = {.path = q->path,
                               .format = q->format,
                               .body = q->body,
                               .body_len = q->body_len,
                               .json = q->json,
                               .stream = q->stream};

    screen(s, q, o);
    lock(s);
    view.nth = s->seen + 1;
    if (!o->e.status) {
        o->pick = select_locked(s, &view);
        if (!o->pick) {
            o->msg = rein_asprintf("rein-model-server: scenario \"%s\" has no reply for request "
                                   "#%zu (%s %s): %zu replies were scripted and all are used up",
                                   s->name ? s->name : "inline", view.nth, q->method, q->path,
                                   s->nreplies);
            o->e.status = 500; /* the format's own 500 type: server_error, api_error */
        }
    }
    o->e.message = o->msg;
    record_outcome(rec, o->pick ? o->pick->status : o->e.status, o->pick,
                   o->pick ? NULL : (o->msg ? o->msg : "out of memory"));
    rec->pub.format = ms__format_name(q->format);
    rec->pub.stream = q->stream;
    rec->pub.json = json_incref(q->json);
    publish_locked(s, rec);
    unlock(s);
}

static enum MHD_Result answer_model(ms_server *s, struct MHD_Connection *conn, const char *url,
                                    const char *method, struct exchange *x)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct record *rec = record_new(conn, method, url, x);
    struct req q = {.conn = conn, .fd = ci ? ci->connect_fd : -1, .method = method, .path = url};
    struct outcome o;
    rein_error perr;
    enum MHD_Result ret;

    if (!rec)
        return MHD_NO;
    memset(&o, 0, sizeof(o));
    /* The record may be freed by ms_reset while this request is answered, so the request
     * keeps its own references to what it reads. */
    q.headers = json_incref(rec->pub.headers);
    q.body = x->body.ptr;
    q.body_len = x->body.len;
    q.format = ms__format_of_path(url);
    rein_error_clear(&perr);
    q.json = rein_json_parse(q.body, q.body_len, 0, &perr);
    q.parse_error = perr.msg;
    q.stream = wants_stream(q.format, url, q.json, q.headers);
    decide(s, rec, &q, &o);
    if (o.pick)
        ret = serve_reply(s, &q, o.pick);
    else
        ret = send_error(s, &q, o.google ? MS_FMT_GEMINI : q.format, &o.e);
    outcome_release(s, &o);
    json_decref(q.json);
    json_decref(q.headers);
    return ret;
}

/* ---- control endpoints --------------------------------------------------------------- */

static enum MHD_Result send_json(struct MHD_Connection *conn, int status, json_t *doc)
{
    char *text = rein_json_dumps(doc);
    struct MHD_Response *resp;
    enum MHD_Result ret;

    json_decref(doc);
    if (!text)
        return MHD_NO;
    resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_COPY);
    rein_free(text);
    if (!resp)
        return MHD_NO;
    add_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    ret = MHD_queue_response(conn, (unsigned int)status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result answer_control(ms_server *s, struct MHD_Connection *conn, const char *url,
                                      const char *method, struct exchange *x)
{
    bool post = strcmp(method, "POST") == 0;
    rein_error err;

    if (strcmp(url, "/__requests") == 0 && !post)
        return send_json(conn, 200, ms_requests_json(s));
    if (strcmp(url, "/__health") == 0)
        return send_json(conn, 200, json_pack("{s:b}", "ok", 1));
    if (strcmp(url, "/__reset") == 0 && post) {
        ms_reset(s);
        return send_json(conn, 200, json_pack("{s:b}", "ok", 1));
    }
    if (strcmp(url, "/__script") == 0 && post) {
        const char *a = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "append");
        bool append = a && strcmp(a, "0") != 0 && strcmp(a, "false") != 0;
        rein_error_clear(&err);
        if (ms_script(s, x->body.ptr, append, &err) != REIN_OK)
            return send_json(conn, 400, json_pack("{s:b, s:s}", "ok", 0, "error", err.msg));
        return send_json(conn, 200,
                         json_pack("{s:b, s:i}", "ok", 1, "replies", (int)ms_replies_left(s)));
    }
    return send_json(conn, 404,
                     json_pack("{s:b, s:s}", "ok", 0, "error",
                               "unknown control endpoint (GET /__requests, POST /__script, POST "
                               "/__reset, GET /__health)"));
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    ms_server *s = cls;
    struct exchange *x = *con_cls;

    (void)version;
    if (!x) {
        x = rein_calloc(1, sizeof(*x));
        if (!x)
            return MHD_NO;
        rein_buf_init(&x->body, MS_MAX_BODY);
        *con_cls = x;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!x->too_big && rein_buf_add(&x->body, upload, *upload_size) != REIN_OK)
            x->too_big = true;
        *upload_size = 0;
        return MHD_YES;
    }
    if (x->too_big)
        return send_json(conn, 413,
                         json_pack("{s:{s:s, s:s}}", "error", "message", "request body too large",
                                   "type", "invalid_request_error"));
    if (strncmp(url, "/__", 3) == 0)
        return answer_control(s, conn, url, method, x);
    return answer_model(s, conn, url, method, x);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    struct exchange *x = *con_cls;

    (void)cls;
    (void)conn;
    (void)toe;
    if (!x)
        return;
    rein_buf_release(&x->body);
    rein_free(x);
    *con_cls = NULL;
}

/* ---- life cycle ---------------------------------------------------------------------- */

ms_server *ms_start(int port, rein_error *err)
{
    ms_server *s = rein_calloc(1, sizeof(*s));
    struct sockaddr_in sa = {.sin_family = AF_INET};
    pthread_condattr_t ca;
    const union MHD_DaemonInfo *info;

    if (!s) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    s->validate = true;
    s->stop_pipe[0] = s->stop_pipe[1] = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (pipe2(s->stop_pipe, O_CLOEXEC) != 0) {
        rein_error_set(err, REIN_EIO, "pipe: %s", strerror(errno));
        goto out_free;
    }
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)port);
    s->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                                     MHD_USE_POLL,
                                 (uint16_t)port, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR,
                                 (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, completed, s,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned int)512, MHD_OPTION_END);
    if (!s->daemon) {
        rein_error_set(err, REIN_EIO, "cannot listen on 127.0.0.1:%d (in use?)", port);
        goto out_free;
    }
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : port;
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
    snprintf(s->openai_url, sizeof(s->openai_url), "http://127.0.0.1:%d/v1", s->port);
    return s;

out_free:
    ms_stop(s);
    return NULL;
}

void ms_stop(ms_server *s)
{
    if (!s)
        return;
    if (s->stop_pipe[1] >= 0) {
        ssize_t n;
        do {
            n = write(s->stop_pipe[1], "x", 1);
        } while (n < 0 && errno == EINTR);
    }
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    ms_reset(s);
    if (s->stop_pipe[0] >= 0)
        close(s->stop_pipe[0]);
    if (s->stop_pipe[1] >= 0)
        close(s->stop_pipe[1]);
    rein_free(s->name);
    rein_free(s->api_key);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mu);
    rein_free(s);
}

int ms_port(const ms_server *s)
{
    return s->port;
}

const char *ms_url(const ms_server *s)
{
    return s->url;
}

const char *ms_openai_url(const ms_server *s)
{
    return s->openai_url;
}
