/*
 * The store dispatcher (include/rein/store.h): picks a backend from the URL, checks every
 * argument once (ids, JSON texts, statuses), fills ids and clocks, encodes list cursors, and
 * implements what is the same for every backend on top of the vtable in store_int.h: the
 * conversation export and approval waiting. Leases are in lease.c.
 */
#include "store/store_int.h"

#include <rein/doc.h>
#include <rein/json.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WHERE "store"

bool rein_store_id_is_valid(const char *id)
{
    size_t n;

    if (!id || !id[0] || id[0] == '.')
        return false;
    n = strlen(id);
    if (n > 64 || strstr(id, ".."))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
        if (!ok)
            return false;
    }
    return true;
}

bool rein__store_call_id_is_valid(const char *text)
{
    size_t n;

    if (!text || !text[0])
        return false;
    n = strlen(text);
    if (n > 128)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c <= 0x20 || c >= 0x7f)
            return false;
    }
    return true;
}

static rein_err check_id(const char *id, const char *what, rein_error *err)
{
    if (rein_store_id_is_valid(id))
        return REIN_OK;
    rein_error_set(err, REIN_EINVAL,
                   "%s id \"%.64s\" is not valid: use 1-64 characters of A-Z a-z 0-9 _ . - "
                   "(not starting with '.', no \"..\")",
                   what, id ? id : "(null)");
    rein_error_where(err, WHERE);
    return REIN_EINVAL;
}

static rein_err check_call_id(const char *id, rein_error *err)
{
    if (rein__store_call_id_is_valid(id))
        return REIN_OK;
    rein_error_set(err, REIN_EINVAL,
                   "call id \"%.64s\" is not valid: use 1-128 printable ASCII characters "
                   "without spaces",
                   id ? id : "(null)");
    rein_error_where(err, WHERE);
    return REIN_EINVAL;
}

/*
 * Checks that text (may be NULL when optional) is JSON, of object type if asked. The store
 * keeps such texts as they are, so they are checked without building a tree.
 */
static rein_err check_json(const char *text, size_t len, const char *what, bool optional,
                           bool want_object, rein_error *err)
{
    rein_error perr;
    rein_err rc;

    if (!text) {
        if (optional)
            return REIN_OK;
        rein_error_set(err, REIN_EINVAL, "%s is missing", what);
        rein_error_where(err, WHERE);
        return REIN_EINVAL;
    }
    rc = rein_json_check(text, len, &perr);
    if (rc == REIN_ENOMEM)
        return rein_error_set(err, REIN_ENOMEM, "%s: out of memory", what);
    if (rc != REIN_OK) {
        rein_error_set(err, REIN_EINVAL, "%s is not valid JSON (line %d, column %d): %s", what,
                       perr.line, perr.column, perr.msg);
        if (err) {
            err->line = perr.line;
            err->column = perr.column;
        }
        rein_error_where(err, WHERE);
        return REIN_EINVAL;
    }
    if (want_object && text[strspn(text, " \t\r\n")] != '{') {
        rein_error_set(err, REIN_EINVAL, "%s must be a JSON object", what);
        rein_error_where(err, WHERE);
        return REIN_EINVAL;
    }
    return REIN_OK;
}

/* The string value of an object's member key (n bytes) at node o, or NULL (len: its bytes). */
static const char *doc_member_str(const struct rein_doc_node *o, const char *key, size_t n,
                                  size_t *len)
{
    const struct rein_doc_node *m = o + 1;

    for (uint32_t i = 0; i < o->n; i++, m = rein_doc_next(m + 1)) {
        if (m->n == n && memcmp(m->u.str, key, n) == 0 && m[1].type == JSON_STRING) {
            *len = m[1].n;
            return m[1].u.str;
        }
    }
    return NULL;
}

/*
 * A message must be an object whose "role" is one of the four of decision 0001. Read as a
 * document (rein/doc.h), not a tree: it is only looked at (issue 25). A document that holds a
 * tree instead (duplicate keys and the like) is read from the tree, as before.
 */
static rein_err check_message(const char *json, size_t len, rein_error *err)
{
    static const char *const roles[] = {"system", "user", "assistant", "tool"};
    rein_error perr;
    rein_doc *d = rein_doc_parse(json, len, &perr);
    const struct rein_doc_node *root;
    const char *role = NULL;
    size_t rlen = 0;
    rein_err rc = REIN_EINVAL;

    if (!d) {
        if (perr.code == REIN_ENOMEM)
            return rein_error_set(err, REIN_ENOMEM, "message: out of memory");
        rein_error_set(err, REIN_EINVAL, "message is not valid JSON (line %d, column %d): %s",
                       perr.line, perr.column, perr.msg);
        goto out;
    }
    if (rein_doc_type(d) != JSON_OBJECT) {
        rein_error_set(err, REIN_EINVAL, "message must be a JSON object, not %s",
                       rein__json_type_word(rein_doc_type(d)));
        goto out;
    }
    root = rein_doc_root(d);
    if (root) {
        role = doc_member_str(root, "role", 4, &rlen);
    } else {
        const json_t *tree = rein_doc_tree(d);
        if (!tree) {
            rc = rein_error_set(err, REIN_ENOMEM, "message: out of memory");
            goto out;
        }
        role = json_string_value(json_object_get(tree, "role"));
        rlen = role ? json_string_length(json_object_get(tree, "role")) : 0;
    }
    for (size_t i = 0; role && i < 4; i++) {
        if (rlen == strlen(roles[i]) && memcmp(role, roles[i], rlen) == 0)
            rc = REIN_OK;
    }
    if (rc != REIN_OK)
        rein_error_set(err, REIN_EINVAL,
                       "message \"role\" must be \"system\", \"user\", \"assistant\" or \"tool\"");
out:
    if (rc != REIN_OK && rc != REIN_ENOMEM)
        rein_error_where(err, WHERE);
    rein_doc_free(d);
    return rc;
}

/* ---- open / close ----------------------------------------------------------------------- */

/* The in-process wake-up of event waiters (see struct rein_store). The condition variable
 * uses the monotonic clock, as rein_now_ms() does. events_notify also runs as a waiter's
 * cancel callback. */
static void events_notify_init(rein_store *s)
{
    pthread_condattr_t attr;

    pthread_mutex_init(&s->events_mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->events_cv, &attr);
    pthread_condattr_destroy(&attr);
}

static void events_notify_release(rein_store *s)
{
    pthread_mutex_destroy(&s->events_mu);
    pthread_cond_destroy(&s->events_cv);
}

static void events_notify(void *userdata)
{
    rein_store *s = userdata;

    pthread_mutex_lock(&s->events_mu);
    s->events_gen++;
    pthread_cond_broadcast(&s->events_cv);
    pthread_mutex_unlock(&s->events_mu);
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

rein_err rein_store_open(const char *url, const struct rein_store_opts *opts, rein_store **out,
                         rein_error *err)
{
    rein_store *s;
    rein_err rc;

    *out = NULL;
    if (!url || !*url)
        url = REIN_STORE_DEFAULT_URL;
    s = rein_calloc(1, sizeof(*s));
    if (!s)
        return rein_error_set(err, REIN_ENOMEM, "store: out of memory");
    if (opts)
        s->opts = *opts;
    if (!s->opts.pool_size)
        s->opts.pool_size = 4;
    if (s->opts.busy_timeout_ms <= 0)
        s->opts.busy_timeout_ms = 5000;
    if (s->opts.io_timeout_ms <= 0)
        s->opts.io_timeout_ms = 5000;
    if (s->opts.poll_ms <= 0)
        s->opts.poll_ms = 100;
    if (!s->opts.events_max)
        s->opts.events_max = 10000;
    events_notify_init(s);
    s->prefix = rein_strdup(s->opts.key_prefix ? s->opts.key_prefix : "rein:");
    if (!s->prefix) {
        rc = rein_error_set(err, REIN_ENOMEM, "store: out of memory");
        goto out_free;
    }
    s->opts.key_prefix = s->prefix;

    if (has_prefix(url, "redis://")) {
        rc = rein__store_redis_open(s, url, err);
    } else if (has_prefix(url, "sqlite:")) {
        rc = rein__store_sqlite_open(s, url + strlen("sqlite:"), err);
    } else {
        /* Anything else is refused, a bare path too: "bogus:x" must not become a file. */
        rc = rein_error_set(err, REIN_EINVAL,
                            "store URL \"%.100s\" is not one rein knows; use sqlite:PATH (e.g. "
                            "sqlite:./rein.db) or redis://HOST:PORT[/DB]",
                            url);
        rein_error_where(err, "store");
    }
    if (rc != REIN_OK)
        goto out_free;
    if (!s->opts.no_recover) {
        int flagged = 0;
        rc = rein_store_recover(s, &flagged, err);
        if (rc != REIN_OK)
            goto out_close;
        if (flagged > 0)
            rein_log(REIN_LOG_WARN, WHERE,
                     "%d pending ledger entr%s left by a stopped process flagged interrupted",
                     flagged, flagged == 1 ? "y" : "ies");
    }
    *out = s;
    return REIN_OK;

out_close:
    s->ops->close(s);
out_free:
    if (err && !err->where[0])
        rein_error_where(err, WHERE);
    events_notify_release(s);
    rein_free(s->url);
    rein_free(s->prefix);
    rein_free(s);
    return rc;
}

void rein_store_free(rein_store *s)
{
    if (!s)
        return;
    rein__store_keeper_stop(s);
    if (s->ops)
        s->ops->close(s);
    events_notify_release(s);
    rein_free(s->url);
    rein_free(s->prefix);
    rein_free(s);
}

const char *rein_store_kind(const rein_store *s)
{
    return s->ops->kind;
}

const char *rein_store_url(const rein_store *s)
{
    return s->url ? s->url : "";
}

rein_err rein_store_ping(rein_store *s, rein_error *err)
{
    return s->ops->ping(s, err);
}

rein_err rein_store_read_now(rein_store *s, rein_store_read_fn fn, void *userdata, rein_error *err)
{
    if (!s->ops->read_now)
        return rein_error_set(err, REIN_EBUSY, "%s: reads wait for the server", s->ops->kind);
    return s->ops->read_now(s, fn, userdata, err);
}

rein_err rein_store_read(rein_store *s, rein_store_read_fn fn, void *userdata, rein_error *err)
{
    if (!s->ops->read)
        return fn(s, userdata, err);
    return s->ops->read(s, fn, userdata, err);
}

rein_err rein_store_group(rein_store *s, rein_store_read_fn fn, void *userdata, rein_error *err)
{
    if (!s->ops->group)
        return fn(s, userdata, err);
    return s->ops->group(s, fn, userdata, err);
}

rein_err rein_store_group_ahead(rein_store *s, rein_store_read_fn fn, void *userdata,
                                uint64_t *ticket, rein_error *err)
{
    *ticket = 0;
    if (!s->ops->group_ahead)
        return rein_store_group(s, fn, userdata, err);
    return s->ops->group_ahead(s, fn, userdata, ticket, err);
}

rein_err rein_store_group_kept(rein_store *s, uint64_t ticket, rein_error *err)
{
    if (ticket == 0 || !s->ops->group_kept)
        return REIN_OK;
    return s->ops->group_kept(s, ticket, err);
}

void rein_store_counts(const rein_store *s, struct rein_store_counts *out)
{
    out->calls = atomic_load_explicit(&s->tally.calls, memory_order_relaxed);
    out->waits = atomic_load_explicit(&s->tally.waits, memory_order_relaxed);
    out->commits = atomic_load_explicit(&s->tally.commits, memory_order_relaxed);
}

uint64_t rein__store_savepoints(const rein_store *s)
{
    return atomic_load_explicit(&s->tally.savepoints, memory_order_relaxed);
}

uint64_t rein__store_checkpoints(const rein_store *s)
{
    return atomic_load_explicit(&s->tally.checkpoints, memory_order_relaxed);
}

/* ---- conversations ---------------------------------------------------------------------- */

/*
 * Text appended after a member the writer placed: the writer has marked the object as holding
 * a member, so a literal ",\"key\":" and a value written here keep its state right. The answers
 * that list many rows (a page of conversations, a conversation's messages) write most members
 * this way: one append per piece instead of the writer's checks per key and per value, and
 * the same bytes, since the writer writes a string as its quote, rein_json_escape's text of
 * it and a quote.
 */
static void tail_add(struct rein_jw *w, const char *s, size_t n)
{
    if (!w->err)
        w->err = rein_buf_add(w->buf, s, n);
}

#define TAIL(w, lit) tail_add((w), (lit), sizeof(lit) - 1)

/* s escaped, without its quotes. */
static void tail_escaped(struct rein_jw *w, const char *s)
{
    if (!w->err)
        w->err = rein_json_escape(w->buf, s, strlen(s));
}

/* A time as rein_time_iso writes it: digits and separators, nothing to escape. */
static void tail_time(struct rein_jw *w, int64_t wall_ms, char when[REIN_TIME_ISO_LEN])
{
    rein_time_iso(wall_ms, when);
    tail_add(w, when, strlen(when));
}

/*
 * The members of a conversation object {id, title, state, metadata, created_at, updated_at,
 * message_count}, in that order, into the object w has open: the one shape every reader
 * (get, list, export, the HTTP routes) sees. An unset title or metadata is null; metadata is
 * written as it parses (compact), null when it does not.
 */
static void write_conv(struct rein_jw *w, const struct rein__conv_row *r)
{
    char when[REIN_TIME_ISO_LEN];

    REIN_JW_KEY(w, "id");
    rein_jw_str(w, r->id);
    if (r->title) {
        TAIL(w, ",\"title\":\"");
        tail_escaped(w, r->title);
        TAIL(w, "\",\"state\":\"");
    } else {
        TAIL(w, ",\"title\":null,\"state\":\"");
    }
    tail_escaped(w, r->state ? r->state : "idle");
    TAIL(w, "\"");
    REIN_JW_KEY(w, "metadata");
    if (r->metadata && rein_json_is_written_form(r->metadata, strlen(r->metadata))) {
        rein_jw_raw(w, r->metadata, strlen(r->metadata));
    } else if (r->metadata) {
        json_t *meta = rein_json_parse(r->metadata, strlen(r->metadata), 0, NULL);
        if (meta)
            rein_jw_json(w, meta);
        else
            rein_jw_null(w);
        json_decref(meta);
    } else {
        rein_jw_null(w);
    }
    TAIL(w, ",\"created_at\":\"");
    tail_time(w, r->created_ms, when);
    TAIL(w, "\",\"updated_at\":\"");
    /* Often the same instant (a conversation never written to since): written once. */
    if (r->updated_ms == r->created_ms)
        tail_add(w, when, strlen(when));
    else
        tail_time(w, r->updated_ms, when);
    TAIL(w, "\"");
    REIN_JW_KEY(w, "message_count");
    rein_jw_int(w, r->message_count);
}

/* The writer's error as a store error (REIN_OK while it has none). */
static rein_err jw_failed(const struct rein_jw *w, rein_error *err)
{
    if (!w->err)
        return REIN_OK;
    return rein_error_set(err, w->err, "store: could not write the answer: %s",
                          rein_strerror(w->err));
}

/* The text in b (written by this file) as a new tree in *out. */
static rein_err tree_of(const struct rein_buf *b, json_t **out, rein_error *err)
{
    *out = rein_json_parse(b->ptr, b->len, 0, NULL);
    return *out ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "store: out of memory");
}

rein_err rein_store_conv_create(rein_store *s, const char *id, const char *title,
                                const char *metadata_json, char id_out[REIN_ID_MAX],
                                rein_error *err)
{
    char fresh[REIN_ID_MAX];
    rein_err rc;

    if (id) {
        rc = check_id(id, "conversation", err);
        if (rc != REIN_OK)
            return rc;
    } else {
        rein_id_new("conv_", fresh);
        id = fresh;
    }
    rc = check_json(metadata_json, metadata_json ? strlen(metadata_json) : 0, "metadata", true,
                    true, err);
    if (rc != REIN_OK)
        return rc;
    rc = s->ops->conv_create(s, id, title, metadata_json, rein_wall_ms(), err);
    if (rc == REIN_OK && id_out)
        memcpy(id_out, id, strlen(id) + 1);
    return rc;
}

rein_err rein_store_conv_update(rein_store *s, const char *id, const char *title, const char *state,
                                const char *metadata_json, rein_error *err)
{
    rein_err rc = check_id(id, "conversation", err);

    if (rc != REIN_OK)
        return rc;
    if (state && (!state[0] || strlen(state) >= REIN_LOCK_STATE_MAX))
        return rein_error_set(err, REIN_EINVAL, "conversation state must be 1-%d bytes",
                              REIN_LOCK_STATE_MAX - 1);
    rc = check_json(metadata_json, metadata_json ? strlen(metadata_json) : 0, "metadata", true,
                    true, err);
    if (rc != REIN_OK)
        return rc;
    return s->ops->conv_update(s, id, title, state, metadata_json, rein_wall_ms(), err);
}

static int conv_row_write(const struct rein__conv_row *row, void *userdata)
{
    write_conv(userdata, row);
    return 0;
}

/* The conversation's members into the object w has open; nothing is written when it is
 * absent (REIN_ENOTFOUND). */
static rein_err conv_members_write(rein_store *s, const char *id, struct rein_jw *w,
                                   rein_error *err)
{
    rein_err rc = check_id(id, "conversation", err);

    if (rc == REIN_OK)
        rc = s->ops->conv_get(s, id, conv_row_write, w, err);
    if (rc == REIN_OK)
        rc = jw_failed(w, err);
    return rc;
}

rein_err rein_store_conv_get(rein_store *s, const char *id, json_t **out, rein_error *err)
{
    struct rein_buf b;
    struct rein_jw w;
    rein_err rc;

    *out = NULL;
    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_jw_obj_begin(&w);
    rc = conv_members_write(s, id, &w, err);
    rein_jw_obj_end(&w);
    if (rc == REIN_OK)
        rc = jw_failed(&w, err);
    if (rc == REIN_OK)
        rc = tree_of(&b, out, err);
    rein_buf_release(&b);
    return rc;
}

static int conv_row_seen(const struct rein__conv_row *row, void *userdata)
{
    (void)row;
    *(bool *)userdata = true;
    return 0;
}

bool rein_store_conv_exists(rein_store *s, const char *id, rein_error *err)
{
    bool seen = false;
    rein_err rc = check_id(id, "conversation", err);

    if (rc == REIN_OK)
        rc = s->ops->conv_get(s, id, conv_row_seen, &seen, err);
    if (rc == REIN_ENOTFOUND)
        rein_error_clear(err);
    return rc == REIN_OK && seen;
}

/* Cursor text: "<updated_ms>:<id>". */
static rein_err parse_cursor(const char *cursor, int64_t *ms, char id[REIN_ID_MAX], rein_error *err)
{
    const char *colon = strchr(cursor, ':');
    char *end = NULL;
    long long v;

    if (!colon || colon == cursor || colon - cursor > 19)
        goto bad;
    for (const char *p = cursor; p < colon; p++) {
        if (*p < '0' || *p > '9')
            goto bad;
    }
    errno = 0;
    v = strtoll(cursor, &end, 10);
    if (errno || end != colon || !rein_store_id_is_valid(colon + 1))
        goto bad;
    *ms = v;
    memcpy(id, colon + 1, strlen(colon + 1) + 1);
    return REIN_OK;
bad:
    rein_error_set(err, REIN_EINVAL, "cursor \"%.80s\" is not valid: pass next_cursor unchanged",
                   cursor);
    rein_error_where(err, WHERE);
    return REIN_EINVAL;
}

/* A page being written: the rows up to limit go out as they come; one more only tells that
 * another page follows, and the cursor names the last row written. */
struct page_writer {
    struct rein_jw *w;
    unsigned limit, written;
    bool more;
    int64_t last_ms;
    char last_id[REIN_ID_MAX];
};

static int page_row(const struct rein__conv_row *row, void *userdata)
{
    struct page_writer *pw = userdata;
    size_t n = strlen(row->id);

    if (pw->written == pw->limit) {
        pw->more = true;
        return 0;
    }
    rein_jw_obj_begin(pw->w);
    write_conv(pw->w, row);
    rein_jw_obj_end(pw->w);
    pw->written++;
    pw->last_ms = row->updated_ms;
    if (n >= sizeof(pw->last_id))
        n = sizeof(pw->last_id) - 1; /* not an id rein made: its cursor is refused later */
    memcpy(pw->last_id, row->id, n);
    pw->last_id[n] = '\0';
    return 0;
}

rein_err rein_store_conv_page_write(rein_store *s, const char *text, const char *cursor,
                                    unsigned limit, struct rein_jw *w, rein_error *err)
{
    struct page_writer pw = {.w = w, .limit = limit == 0 ? 20 : limit > 100 ? 100 : limit};
    char cur_id[REIN_ID_MAX];
    int64_t cur_ms = 0;
    rein_err rc;

    if (text && strlen(text) > REIN_STORE_QUERY_MAX)
        return rein_error_set(err, REIN_EINVAL, "the search text must be at most %d bytes",
                              REIN_STORE_QUERY_MAX);
    if (cursor && *cursor) {
        rc = parse_cursor(cursor, &cur_ms, cur_id, err);
        if (rc != REIN_OK)
            return rc;
    }
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "conversations");
    rein_jw_arr_begin(w);
    /* One more than asked tells whether another page follows. */
    rc = s->ops->conv_list(s, cur_ms, cursor && *cursor ? cur_id : NULL,
                           text && text[0] ? text : NULL, pw.limit + 1, page_row, &pw, err);
    if (rc != REIN_OK)
        return rc;
    rein_jw_arr_end(w);
    REIN_JW_KEY(w, "next_cursor");
    if (pw.more) {
        char next[24 + REIN_ID_MAX];
        snprintf(next, sizeof(next), "%" PRId64 ":%s", pw.last_ms, pw.last_id);
        rein_jw_str(w, next);
    } else {
        rein_jw_null(w);
    }
    rein_jw_obj_end(w);
    return jw_failed(w, err);
}

/* rein_store_conv_page_write's page as a new tree. */
static rein_err conv_page(rein_store *s, const char *query, const char *cursor, unsigned limit,
                          json_t **out, rein_error *err)
{
    struct rein_buf b;
    struct rein_jw w;
    rein_err rc;

    *out = NULL;
    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rc = rein_store_conv_page_write(s, query, cursor, limit, &w, err);
    if (rc == REIN_OK)
        rc = tree_of(&b, out, err);
    rein_buf_release(&b);
    return rc;
}

rein_err rein_store_conv_list(rein_store *s, const char *cursor, unsigned limit, json_t **out,
                              rein_error *err)
{
    return conv_page(s, NULL, cursor, limit, out, err);
}

rein_err rein_store_conv_find(rein_store *s, const char *text, const char *cursor, unsigned limit,
                              json_t **out, rein_error *err)
{
    *out = NULL;
    if (!text)
        return rein_error_set(err, REIN_EINVAL, "the search text must be at most %d bytes",
                              REIN_STORE_QUERY_MAX);
    return conv_page(s, text, cursor, limit, out, err);
}

rein_err rein_store_conv_delete(rein_store *s, const char *id, rein_error *err)
{
    rein_err rc = check_id(id, "conversation", err);

    if (rc != REIN_OK)
        return rc;
    return s->ops->conv_delete(s, id, rein_wall_ms(), err);
}

/* One stored message as the export shows it. A message that does not parse fails the export
 * (as memory running out would: the store checked it when it was appended). A message already
 * in the writer's form (as rein appends them) is copied as it is: parsing and writing it again
 * would give the same bytes. */
static int export_message(const struct rein_store_message *m, void *userdata)
{
    struct rein_jw *w = userdata;
    char when[REIN_TIME_ISO_LEN];
    bool as_is = rein_json_is_written_form(m->json, m->len);
    json_t *msg = as_is ? NULL : rein_json_parse(m->json, m->len, 0, NULL);

    if (!as_is && !msg)
        return REIN_ENOMEM;
    rein_jw_obj_begin(w);
    REIN_JW_KEY(w, "position");
    rein_jw_int(w, m->position);
    TAIL(w, ",\"created_at\":\"");
    tail_time(w, m->created_ms, when);
    TAIL(w, "\",\"trace_id\":\"");
    tail_escaped(w, m->trace_id ? m->trace_id : "");
    TAIL(w, "\"");
    REIN_JW_KEY(w, "message");
    if (as_is)
        rein_jw_raw(w, m->json, m->len);
    else
        rein_jw_json(w, msg);
    rein_jw_obj_end(w);
    json_decref(msg);
    return w->err ? REIN_ENOMEM : 0;
}

/* An entry as rein_ledger_entry_to_json() has it (its texts read back as JSON). */
static int export_ledger(const char *conv_id, const struct rein_ledger_entry *e, void *userdata)
{
    struct rein_jw *w = userdata;
    json_t *o = rein_ledger_entry_to_json(e);

    (void)conv_id;
    if (!o)
        return REIN_ENOMEM;
    rein_jw_json(w, o);
    json_decref(o);
    return w->err ? REIN_ENOMEM : 0;
}

rein_err rein_store_conv_export_write(rein_store *s, const char *id, struct rein_jw *w,
                                      rein_error *err)
{
    rein_err rc = conv_members_write(s, id, w, err);

    if (rc != REIN_OK)
        return rc;
    REIN_JW_KEY(w, "messages");
    rein_jw_arr_begin(w);
    rc = rein_store_messages_each(s, id, 0, export_message, w, err);
    rein_jw_arr_end(w);
    if (rc == REIN_OK) {
        REIN_JW_KEY(w, "ledger");
        rein_jw_arr_begin(w);
        rc = rein_store_ledger_each(s, id, export_ledger, w, err);
        rein_jw_arr_end(w);
    }
    if (rc == REIN_ENOMEM)
        rein_error_set(err, REIN_ENOMEM, "store: out of memory");
    if (rc == REIN_OK)
        rc = jw_failed(w, err);
    return rc;
}

rein_err rein_store_conv_export(rein_store *s, const char *id, json_t **out, rein_error *err)
{
    struct rein_buf b;
    struct rein_jw w;
    rein_err rc;

    *out = NULL;
    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_jw_obj_begin(&w);
    rc = rein_store_conv_export_write(s, id, &w, err);
    rein_jw_obj_end(&w);
    if (rc == REIN_OK)
        rc = jw_failed(&w, err);
    if (rc == REIN_OK)
        rc = tree_of(&b, out, err);
    rein_buf_release(&b);
    return rc;
}

/* ---- messages --------------------------------------------------------------------------- */

rein_err rein_store_message_append(rein_store *s, const char *conv_id, const char *json, size_t len,
                                   const char *trace_id, int64_t *position_out, rein_error *err)
{
    struct rein_store_text one = {json, len};

    if (!json)
        return rein_error_set(err, REIN_EINVAL, "message is missing");
    return rein_store_messages_append(s, conv_id, &one, 1, trace_id, position_out, err);
}

rein_err rein_store_messages_append(rein_store *s, const char *conv_id,
                                    const struct rein_store_text *msgs, size_t n,
                                    const char *trace_id, int64_t *first_out, rein_error *err)
{
    int64_t first = -1;
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc != REIN_OK)
        return rc;
    if (n == 0)
        return REIN_OK;
    if (!msgs)
        return rein_error_set(err, REIN_EINVAL, "messages are missing");
    if (n > REIN_STORE_MESSAGES_BATCH)
        return rein_error_set(err, REIN_EINVAL, "at most %d messages are appended at once, not %zu",
                              REIN_STORE_MESSAGES_BATCH, n);
    if (trace_id && trace_id[0] && !rein__store_call_id_is_valid(trace_id))
        return rein_error_set(err, REIN_EINVAL, "message trace id is not valid");
    for (size_t i = 0; i < n; i++) {
        if (!msgs[i].json)
            return rein_error_set(err, REIN_EINVAL, "message %zu is missing", i);
        rein_error why;
        rc = check_message(msgs[i].json, msgs[i].len, &why);
        if (rc != REIN_OK) {
            if (n == 1) {
                if (err)
                    *err = why;
                return rc;
            }
            return rein_error_set(err, rc, "message %zu of %zu: %s", i, n, why.msg);
        }
    }
    rc = s->ops->messages_append(s, conv_id, msgs, n, trace_id ? trace_id : "", rein_wall_ms(),
                                 &first, err);
    if (rc == REIN_OK && first_out)
        *first_out = first;
    return rc;
}

rein_err rein_store_messages_each(rein_store *s, const char *conv_id, int64_t from,
                                  rein_store_message_fn fn, void *userdata, rein_error *err)
{
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc != REIN_OK)
        return rc;
    return s->ops->messages_each(s, conv_id, from < 0 ? 0 : from, fn, userdata, err);
}

rein_err rein_store_messages_truncate(rein_store *s, const char *conv_id, int64_t from,
                                      rein_error *err)
{
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc != REIN_OK)
        return rc;
    if (from < 0)
        return rein_error_set(err, REIN_EINVAL, "a message position is 0 or more");
    return s->ops->messages_truncate(s, conv_id, from, rein_wall_ms(), err);
}

/* ---- ledger ----------------------------------------------------------------------------- */

/* Checks what every written entry must be: a call id, a tool, a known status, JSON texts. */
static rein_err check_entry(const struct rein_ledger_entry *e, bool need_args, rein_error *err)
{
    rein_err rc = check_call_id(e->call_id, err);

    if (rc != REIN_OK)
        return rc;
    if (need_args && (!e->tool || !e->tool[0] || strlen(e->tool) > 256))
        return rein_error_set(err, REIN_EINVAL, "ledger entry needs a tool name of 1-256 bytes");
    if ((unsigned)e->status > REIN_CALL_INVALID)
        return rein_error_set(err, REIN_EINVAL, "ledger status %d is not valid", (int)e->status);
    if (need_args)
        rc = check_json(e->args, e->args ? strlen(e->args) : 0, "ledger args", false, false, err);
    if (rc == REIN_OK)
        rc = check_json(e->result, e->result ? strlen(e->result) : 0, "ledger result", true, false,
                        err);
    return rc;
}

rein_err rein_store_ledger_put(rein_store *s, const char *conv_id,
                               const struct rein_ledger_entry *e, rein_error *err)
{
    struct rein_ledger_entry copy;
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc == REIN_OK)
        rc = check_entry(e, true, err);
    if (rc != REIN_OK)
        return rc;
    copy = *e;
    if (!copy.call_ms)
        copy.call_ms = rein_wall_ms();
    if (!copy.trace_id)
        copy.trace_id = "";
    if (copy.status != REIN_CALL_PENDING && !copy.response_ms)
        copy.response_ms = rein_wall_ms();
    if (copy.status == REIN_CALL_PENDING)
        copy.response_ms = 0;
    return s->ops->ledger_put(s, conv_id, &copy, err);
}

rein_err rein_store_ledger_update(rein_store *s, const char *conv_id,
                                  const struct rein_ledger_entry *e, rein_error *err)
{
    struct rein_ledger_entry copy;
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc == REIN_OK)
        rc = check_entry(e, false, err);
    if (rc != REIN_OK)
        return rc;
    copy = *e;
    if (!copy.response_ms && copy.status != REIN_CALL_PENDING)
        copy.response_ms = rein_wall_ms();
    return s->ops->ledger_update(s, conv_id, &copy, err);
}

rein_err rein_store_ledger_each(rein_store *s, const char *conv_id, rein_store_ledger_fn fn,
                                void *userdata, rein_error *err)
{
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc != REIN_OK)
        return rc;
    return s->ops->ledger_each(s, conv_id, fn, userdata, err);
}

/* ---- events ----------------------------------------------------------------------------- */

/* Checks one event for rein_store_events_record and fills its time. */
static rein_err check_event(const struct rein_store_event *ev, struct rein_store_event *copy,
                            int64_t now_ms, rein_error *err)
{
    rein_err rc;

    if (ev->conv_id) {
        rc = check_id(ev->conv_id, "conversation", err);
        if (rc != REIN_OK)
            return rc;
    }
    if (!ev->type || !ev->type[0] || strlen(ev->type) > 64)
        return rein_error_set(err, REIN_EINVAL, "event type must be 1-64 bytes");
    if (!ev->conv_id && (!ev->trace_id || !ev->trace_id[0]))
        return rein_error_set(err, REIN_EINVAL, "an event needs a conversation or a trace id");
    if (ev->trace_id && !rein__store_call_id_is_valid(ev->trace_id) && ev->trace_id[0])
        return rein_error_set(err, REIN_EINVAL, "event trace id is not valid");
    rc = check_json(ev->payload, ev->payload ? strlen(ev->payload) : 0, "event payload", false,
                    false, err);
    if (rc != REIN_OK)
        return rc;
    *copy = *ev;
    if (!copy->time_ms)
        copy->time_ms = now_ms;
    if (copy->trace_id && !copy->trace_id[0])
        copy->trace_id = NULL;
    copy->seq = 0;
    return REIN_OK;
}

static bool same_text(const char *a, const char *b)
{
    if (a && !a[0])
        a = NULL;
    if (b && !b[0])
        b = NULL;
    return a == b || (a && b && strcmp(a, b) == 0);
}

rein_err rein_store_events_record(rein_store *s, const struct rein_store_event *evs, size_t n,
                                  int64_t *seqs, rein_error *err)
{
    struct rein_store_event copy[REIN_STORE_EVENTS_BATCH];
    int64_t got[REIN_STORE_EVENTS_BATCH] = {0};
    int64_t now = rein_wall_ms();
    rein_err rc;

    if (n == 0 || n > REIN_STORE_EVENTS_BATCH)
        return rein_error_set(err, REIN_EINVAL, "record 1-%d events at once, not %zu",
                              REIN_STORE_EVENTS_BATCH, n);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && (!same_text(evs[i].conv_id, evs[0].conv_id) ||
                      !same_text(evs[i].trace_id, evs[0].trace_id)))
            return rein_error_set(err, REIN_EINVAL,
                                  "events recorded together must share their conversation and "
                                  "trace");
        rc = check_event(&evs[i], &copy[i], now, err);
        if (rc != REIN_OK)
            return rc;
    }
    rc = s->ops->events_add(s, copy, n, got, err);
    if (rc != REIN_OK)
        return rc;
    if (evs[0].conv_id)
        events_notify(s);
    if (seqs)
        memcpy(seqs, got, n * sizeof(*seqs));
    return REIN_OK;
}

rein_err rein_store_event_record(rein_store *s, const struct rein_store_event *ev, int64_t *seq_out,
                                 rein_error *err)
{
    int64_t seq = 0;
    rein_err rc = rein_store_events_record(s, ev, 1, &seq, err);

    if (seq_out)
        *seq_out = rc == REIN_OK ? seq : 0;
    return rc;
}

rein_err rein_store_event_add(rein_store *s, const struct rein_store_event *ev, rein_error *err)
{
    return rein_store_event_record(s, ev, NULL, err);
}

rein_err rein_store_events_each(rein_store *s, const char *conv_id, const char *trace_id,
                                rein_store_event_fn fn, void *userdata, rein_error *err)
{
    rein_err rc;

    if (conv_id) {
        rc = check_id(conv_id, "conversation", err);
        if (rc != REIN_OK)
            return rc;
    } else if (!trace_id || !rein__store_call_id_is_valid(trace_id)) {
        return rein_error_set(err, REIN_EINVAL, "events: give a conversation or a trace id");
    }
    return s->ops->events_each(s, conv_id, trace_id, fn, userdata, err);
}

rein_err rein_store_events_after(rein_store *s, const char *conv_id, int64_t after_seq,
                                 unsigned max, rein_store_event_fn fn, void *userdata,
                                 rein_error *err)
{
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc != REIN_OK)
        return rc;
    return s->ops->events_after(s, conv_id, after_seq < 0 ? 0 : after_seq, max, fn, userdata, err);
}

/* Sleeps on the handle's condition variable until gen moves on (an event was recorded through
 * the handle, or a waiter's cancel fired) or ms pass. */
static void wait_for_events(rein_store *s, uint64_t gen, int64_t ms)
{
    struct timespec ts = rein__deadline_ts(CLOCK_MONOTONIC, ms);

    pthread_mutex_lock(&s->events_mu);
    while (s->events_gen == gen) {
        if (pthread_cond_timedwait(&s->events_cv, &s->events_mu, &ts) != 0)
            break;
    }
    pthread_mutex_unlock(&s->events_mu);
}

rein_err rein_store_events_wait(rein_store *s, const char *conv_id, int64_t after_seq,
                                int64_t timeout_ms, rein_cancel *cancel, int64_t *last_seq,
                                rein_error *err)
{
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : rein_now_ms() + timeout_ms;
    int64_t last = 0;
    int hook = 0;
    rein_err rc = check_id(conv_id, "conversation", err);

    if (last_seq)
        *last_seq = 0;
    if (rc != REIN_OK)
        return rc;
    if (cancel) {
        /* A cancel wakes every waiter of the handle; the others look again and sleep on. */
        hook = rein_cancel_on(cancel, events_notify, s);
        if (hook < 0)
            return rein_error_set(err, hook, "events: cannot watch the cancel handle");
    }
    for (;;) {
        uint64_t gen;
        int64_t left;

        pthread_mutex_lock(&s->events_mu);
        gen = s->events_gen;
        pthread_mutex_unlock(&s->events_mu);
        rc = s->ops->events_last(s, conv_id, &last, err);
        if (rc != REIN_OK || last > after_seq)
            break;
        if (rein_cancel_is_set(cancel)) {
            rc = rein_error_set(err, REIN_ECANCELED, "waiting for events cancelled: %s",
                                rein_cancel_reason(cancel));
            break;
        }
        left = deadline - rein_now_ms();
        if (left <= 0) {
            rc = rein_error_set(err, REIN_ETIMEDOUT, "no new event in conversation %s in time",
                                conv_id);
            break;
        }
        /* Another process's events are only seen by looking again: at most poll_ms apart. */
        wait_for_events(s, gen, left < s->opts.poll_ms ? left : s->opts.poll_ms);
    }
    if (hook > 0)
        rein_cancel_off(cancel, hook);
    if (last_seq)
        *last_seq = last;
    return rc;
}

/* ---- locks ------------------------------------------------------------------------------ */

static rein_err check_state(const char *state, rein_error *err)
{
    if (!state || !state[0] || strlen(state) >= REIN_LOCK_STATE_MAX)
        return rein_error_set(err, REIN_EINVAL, "lock state must be 1-%d bytes",
                              REIN_LOCK_STATE_MAX - 1);
    return REIN_OK;
}

rein_err rein_store_lock_acquire(rein_store *s, const char *conv_id, int64_t lease_ms,
                                 const char *state, char token_out[REIN_ID_MAX],
                                 struct rein_store_lock_info *held, rein_error *err)
{
    char token[REIN_ID_MAX];
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc != REIN_OK)
        return rc;
    if (!state)
        state = "thinking";
    rc = check_state(state, err);
    if (rc != REIN_OK)
        return rc;
    if (lease_ms <= 0)
        return rein_error_set(err, REIN_EINVAL, "lock lease must be positive");
    if (held)
        memset(held, 0, sizeof(*held));
    rein_id_new("lock_", token);
    rc = s->ops->lock_acquire(s, conv_id, token, state, lease_ms, held, err);
    if (rc == REIN_OK)
        memcpy(token_out, token, sizeof(token));
    return rc;
}

rein_err rein_store_lock_renew(rein_store *s, const char *conv_id, const char *token,
                               int64_t lease_ms, rein_error *err)
{
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc != REIN_OK)
        return rc;
    if (lease_ms <= 0 || !token)
        return rein_error_set(err, REIN_EINVAL, "lock renew needs a token and a positive lease");
    return s->ops->lock_renew(s, conv_id, token, lease_ms, err);
}

rein_err rein_store_lock_release(rein_store *s, const char *conv_id, const char *token,
                                 rein_error *err)
{
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc != REIN_OK)
        return rc;
    if (!token)
        return rein_error_set(err, REIN_EINVAL, "lock release needs a token");
    return s->ops->lock_release(s, conv_id, token, err);
}

rein_err rein_store_lock_set_state(rein_store *s, const char *conv_id, const char *token,
                                   const char *state, const char *tool, rein_error *err)
{
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc != REIN_OK)
        return rc;
    rc = check_state(state, err);
    if (rc != REIN_OK)
        return rc;
    if (!token)
        return rein_error_set(err, REIN_EINVAL, "lock state needs a token");
    if (tool && strlen(tool) >= REIN_LOCK_TOOL_MAX)
        return rein_error_set(err, REIN_EINVAL, "tool name too long for the lock state");
    return s->ops->lock_set_state(s, conv_id, token, state, tool ? tool : "", err);
}

rein_err rein_store_lock_get(rein_store *s, const char *conv_id, struct rein_store_lock_info *out,
                             rein_error *err)
{
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc != REIN_OK)
        return rc;
    memset(out, 0, sizeof(*out));
    return s->ops->lock_get(s, conv_id, out, err);
}

/* ---- control messages ------------------------------------------------------------------- */

rein_err rein_store_cancel_request(rein_store *s, const char *conv_id, const char *reason,
                                   rein_error *err)
{
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc != REIN_OK)
        return rc;
    if (!reason || !reason[0])
        reason = "cancelled";
    return s->ops->cancel_request(s, conv_id, reason, err);
}

rein_err rein_store_cancel_check(rein_store *s, const char *conv_id, const char *token,
                                 bool *requested, char reason[160], rein_error *err)
{
    char buf[160] = "";
    rein_err rc = check_id(conv_id, "conversation", err);

    *requested = false;
    if (rc != REIN_OK)
        return rc;
    if (!token)
        return rein_error_set(err, REIN_EINVAL, "cancel check needs the lock token");
    rc = s->ops->cancel_check(s, conv_id, token, requested, buf, err);
    if (rc == REIN_OK && reason)
        memcpy(reason, buf, sizeof(buf));
    return rc;
}

rein_err rein_store_approval_request(rein_store *s, const char *conv_id, const char *call_id,
                                     rein_error *err)
{
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc == REIN_OK)
        rc = check_call_id(call_id, err);
    if (rc != REIN_OK)
        return rc;
    return s->ops->approval_request(s, conv_id, call_id, rein_wall_ms(), err);
}

rein_err rein_store_approval_post(rein_store *s, const char *conv_id, const char *call_id,
                                  bool approve, rein_error *err)
{
    rein_err rc = check_id(conv_id, "conversation", err);

    if (rc == REIN_OK)
        rc = check_call_id(call_id, err);
    if (rc != REIN_OK)
        return rc;
    return s->ops->approval_post(s, conv_id, call_id, approve, rein_wall_ms(), err);
}

rein_err rein_store_approval_wait(rein_store *s, const char *conv_id, const char *call_id,
                                  int64_t timeout_ms, rein_cancel *cancel, bool *approved,
                                  rein_error *err)
{
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : rein_now_ms() + timeout_ms;
    rein_err rc = check_id(conv_id, "conversation", err);
    rein_error drop_err;

    *approved = false;
    if (rc == REIN_OK)
        rc = check_call_id(call_id, err);
    if (rc != REIN_OK)
        return rc;
    for (;;) {
        bool answered = false, yes = false;
        int64_t left;

        rc = s->ops->approval_take(s, conv_id, call_id, &answered, &yes, err);
        if (rc != REIN_OK)
            break;
        if (answered) {
            *approved = yes;
            break;
        }
        left = deadline - rein_now_ms();
        if (left <= 0) {
            rc = rein_error_set(err, REIN_ETIMEDOUT, "no answer to the approval of %s in time",
                                call_id);
            break;
        }
        if (rein_cancel_wait(cancel, left < s->opts.poll_ms ? left : s->opts.poll_ms)) {
            rc = rein_error_set(err, REIN_ECANCELED, "approval wait cancelled: %s",
                                rein_cancel_reason(cancel));
            break;
        }
    }
    /* The request is gone whatever happened, so a late answer gets a clear 404. */
    if (s->ops->approval_drop(s, conv_id, call_id, &drop_err) != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "dropping approval %s: %s", call_id, drop_err.msg);
    return rc;
}

rein_err rein_store_recover(rein_store *s, int *flagged, rein_error *err)
{
    int n = 0;
    rein_err rc = s->ops->recover(s, &n, err);

    if (flagged)
        *flagged = n;
    return rc;
}
