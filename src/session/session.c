/*
 * A turn of a stored conversation (include/rein/session.h): opening one (the lease, the
 * conversation, the history), running an agent turn in it with hooks that write every message
 * and ledger change to the store before the agent goes on, keeping the lock's state in step,
 * and waiting for approvals through the store. Recording events is events.c's, recovering
 * what a dead turn left is recover.c's, proposals are proposal.c's.
 *
 * `rein serve` (src/server/routes_agent.c) and `rein chat` (src/cli/cmd_chat.c) are adapters
 * over this file: they turn requests or flags into session options and events into Server-Sent
 * Events or terminal output, and nothing else.
 */
#include "session/session_int.h"

#include <rein/json.h>

#include <string.h>

#define WHERE             REIN__SESSION_WHERE
#define DEFAULT_LEASE_MS  30000
#define STATE_IDLE        "idle"
#define STATE_INTERRUPTED "interrupted"
#define STATE_RUNNING     "running" /* until close; recovery turns a dead turn's into interrupted */

void rein__session_title(const char *text, char out[REIN_SESSION_TITLE_MAX + 1])
{
    const char *s = text + strspn(text, " \t\r\n");
    size_t n = strcspn(s, "\r\n");

    if (n > REIN_SESSION_TITLE_MAX) {
        n = REIN_SESSION_TITLE_MAX;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(out, s, n);
    out[n] = '\0';
}

/* ---- the write queue (session_int.h) ---------------------------------------------------- */

static void queue_clear(struct rein__session_queue *q)
{
    for (size_t i = 0; i < q->n; i++)
        rein_free(q->items[i].mem);
    q->n = 0;
    rein_buf_reset(&q->text);
    q->state[0] = '\0';
    q->tool[0] = '\0';
}

static void queue_release(struct rein__session_queue *q)
{
    queue_clear(q);
    rein_free(q->items);
    rein_buf_release(&q->text);
}

/* The next free item of the queue, zeroed; NULL when memory ran out. qmu held. */
static struct rein__queued *queue_add(struct rein__session_queue *q)
{
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 8;
        struct rein__queued *items = rein_realloc(q->items, cap * sizeof(*items));
        if (!items)
            return NULL;
        q->items = items;
        q->cap = cap;
    }
    memset(&q->items[q->n], 0, sizeof(q->items[0]));
    return &q->items[q->n++];
}

/* The failure of an earlier commit, which refuses every later write. qmu held. */
static rein_err queue_failed(const rein_session *s, rein_error *err)
{
    if (!s->q.failed.code)
        return REIN_OK;
    if (err)
        *err = s->q.failed;
    return s->q.failed.code;
}

/* Queues msg's text; position is where the history has it (SIZE_MAX: not known). */
static rein_err queue_message(rein_session *s, const json_t *msg, const char *text, size_t text_len,
                              size_t position, rein_error *err)
{
    struct rein__queued *item = NULL;
    size_t off;
    rein_err rc;

    pthread_mutex_lock(&s->qmu);
    off = s->q.text.len;
    rc = queue_failed(s, err);
    if (rc == REIN_OK) {
        rc = text ? rein_buf_add(&s->q.text, text, text_len) : rein_json_dump(&s->q.text, msg);
        if (rc == REIN_OK)
            rc = rein_buf_addch(&s->q.text, '\0');
        if (rc == REIN_OK && !(item = queue_add(&s->q)))
            rc = REIN_ENOMEM;
        if (rc == REIN_OK) {
            item->off = off;
            item->len = s->q.text.len - off - 1;
            item->position = position;
        } else {
            rein_buf_truncate(&s->q.text, off);
            rc = rein_error_set(err, rc, "a message could not be written out: %s",
                                rein_strerror(rc));
        }
    }
    pthread_mutex_unlock(&s->qmu);
    return rc;
}

/* Queues a copy of e, its texts in one block. */
static rein_err queue_ledger(rein_session *s, const struct rein_ledger_entry *e, rein_error *err)
{
    const char *from[] = {e->call_id, e->tool, e->sent_name, e->args, e->result, e->trace_id};
    struct rein__queued *item = NULL;
    size_t total = 0;
    char *mem;
    rein_err rc;

    for (size_t i = 0; i < REIN_ARRAY_SIZE(from); i++)
        total += from[i] ? strlen(from[i]) + 1 : 0;
    mem = rein_malloc(total ? total : 1);
    pthread_mutex_lock(&s->qmu);
    rc = queue_failed(s, err);
    if (rc == REIN_OK && (!mem || !(item = queue_add(&s->q))))
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    if (rc == REIN_OK) {
        const char **to[] = {&item->e.call_id, &item->e.tool,   &item->e.sent_name,
                             &item->e.args,    &item->e.result, &item->e.trace_id};
        char *p = mem;
        item->ledger = true;
        item->e = *e;
        item->mem = mem;
        mem = NULL;
        for (size_t i = 0; i < REIN_ARRAY_SIZE(from); i++) {
            if (!from[i])
                continue;
            size_t n = strlen(from[i]) + 1;
            memcpy(p, from[i], n);
            *to[i] = p;
            p += n;
        }
    }
    pthread_mutex_unlock(&s->qmu);
    rein_free(mem);
    return rc;
}

/* Appends the n message texts of items (none a ledger change) in one store call; s->stored
 * follows. */
static rein_err append_texts(rein_session *s, const struct rein__queued *items, size_t n,
                             rein_error *err)
{
    struct rein_store_text texts[REIN_STORE_MESSAGES_BATCH];
    int64_t first = -1;
    rein_err rc;

    for (size_t i = 0; i < n; i++)
        texts[i] = (struct rein_store_text){s->q.text.ptr + items[i].off, items[i].len};
    rc = rein_store_messages_append(s->store, s->conv_id, texts, n, s->trace_id, &first, err);
    if (rc != REIN_OK)
        return rc;
    s->stored = first + (int64_t)n;
    for (size_t i = 0; i < n; i++) {
        int64_t at = first + (int64_t)i;
        if (items[i].position != SIZE_MAX && at != (int64_t)items[i].position)
            rein_log(REIN_LOG_WARN, WHERE, "%s: message stored at %lld, the history has it at %zu",
                     s->conv_id, (long long)at, items[i].position);
    }
    return REIN_OK;
}

/* A pending entry is put (written before the call runs), later changes update it; a call
 * refused before it could run is written once, already decided. */
static rein_err write_ledger(rein_session *s, const struct rein_ledger_entry *e, rein_error *err)
{
    struct rein_ledger_entry copy = *e;
    rein_err rc;

    if (!copy.trace_id || !copy.trace_id[0])
        copy.trace_id = s->trace_id;
    if (e->status == REIN_CALL_PENDING)
        return rein_store_ledger_put(s->store, s->conv_id, &copy, err);
    rc = rein_store_ledger_update(s->store, s->conv_id, &copy, err);
    if (rc == REIN_ENOTFOUND)
        rc = rein_store_ledger_put(s->store, s->conv_id, &copy, err);
    return rc;
}

struct commit {
    rein_session *s;
    rein__session_more_fn more;
    void *data;
    rein_err more_rc;
    rein_error more_err;
};

/* The store group of a commit: the queue in order, the lock's state, then more. */
static rein_err apply_queue(rein_store *store, void *userdata, rein_error *err)
{
    struct commit *c = userdata;
    rein_session *s = c->s;
    struct rein__session_queue *q = &s->q;
    rein_err rc = REIN_OK;

    (void)store;
    /* In order; the messages between two ledger changes in one store call each. */
    for (size_t i = 0, j; i < q->n && rc == REIN_OK; i = j) {
        j = i + 1;
        if (q->items[i].ledger) {
            rc = write_ledger(s, &q->items[i].e, err);
            continue;
        }
        while (j < q->n && !q->items[j].ledger && j - i < REIN_STORE_MESSAGES_BATCH)
            j++;
        rc = append_texts(s, &q->items[i], j - i, err);
    }
    if (rc == REIN_OK && q->state[0] && s->lease) {
        rein_error serr;
        /* What others see of the turn; the turn goes on without it. */
        if (rein_store_lease_set_state(s->lease, q->state, q->tool, &serr) != REIN_OK)
            rein_log(REIN_LOG_WARN, WHERE, "%s: lock state not updated: %s", s->conv_id, serr.msg);
    }
    if (c->more) {
        rein_error_clear(&c->more_err);
        c->more_rc = c->more(s, c->data, &c->more_err);
    }
    return rc;
}

rein_err rein__session_commit(rein_session *s, rein__session_more_fn more, void *data,
                              rein_error *err)
{
    struct commit c = {.s = s, .more = more, .data = data};
    rein_error e;
    rein_err rc;
    bool queued;

    rein_error_clear(&e);
    pthread_mutex_lock(&s->qmu);
    queued = s->q.n > 0 || s->q.state[0];
    if (s->q.failed.code)
        queue_clear(&s->q); /* refused already; more still runs (events, the lock's release) */
    rc = queued || more ? rein_store_group(s->store, apply_queue, &c, &e) : REIN_OK;
    /* The opening went ahead of its commit: this commit, later, is where it must be kept (a
     * lost opening is also why this one failed, when it did). */
    if ((queued || more) && s->open_ticket) {
        rein_error why;
        rein_err kept = rein_store_group_kept(s->store, s->open_ticket, &why);
        s->open_ticket = 0;
        if (kept != REIN_OK) {
            rc = rein_error_set(&e, kept, "the conversation's opening was not stored: %s", why.msg);
            s->q.failed = e;
        }
    }
    if (rc != REIN_OK && queued && !s->q.failed.code)
        s->q.failed = e;
    queue_clear(&s->q);
    if (rc == REIN_OK && s->q.failed.code)
        rc = queue_failed(s, &e);
    pthread_mutex_unlock(&s->qmu);
    if (rc == REIN_OK && c.more_rc != REIN_OK) {
        rc = c.more_rc;
        e = c.more_err;
    }
    if (rc != REIN_OK && err)
        *err = e;
    return rc;
}

/* ---- persistence ------------------------------------------------------------------------ */

rein_err rein__session_save_message(rein_session *s, const json_t *msg, int64_t *position,
                                    rein_error *err)
{
    rein_err rc = queue_message(s, msg, NULL, 0, SIZE_MAX, err);

    if (rc == REIN_OK)
        rc = rein__session_commit(s, NULL, NULL, err);
    if (position)
        *position = rc == REIN_OK ? s->stored - 1 : -1;
    return rc;
}

/* The agent's message hook: the message at position of the history waits for the turn's next
 * commit (before the next call runs, the next event is written, or the turn ends). It is the
 * last message of the session's history, which keeps it as the text rein_json_dump writes:
 * that text is stored, not the message written out once more (issue 25). */
static rein_err save_turn_message(void *userdata, size_t position, const json_t *msg,
                                  rein_error *err)
{
    rein_session *s = userdata;
    size_t n = rein_history_len(s->h), len = 0;
    const char *text = NULL;

    if (n && rein_history_get(s->h, n - 1) == msg)
        text = rein_history_text(s->h, n - 1, &len);
    return queue_message(s, msg, text, len, position, err);
}

rein_err rein_session_ledger_write(void *session, const struct rein_ledger_entry *e)
{
    return rein__session_save_ledger(session, e);
}

/* Queues e and, when commit, commits. */
static rein_err save_ledger(rein_session *s, const struct rein_ledger_entry *e, bool commit)
{
    rein_error err;
    rein_err rc;

    rein_error_clear(&err);
    rc = queue_ledger(s, e, &err);
    if (rc == REIN_OK && commit)
        rc = rein__session_commit(s, NULL, NULL, &err);
    if (rc != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "%s: ledger entry %s not stored: %s", s->conv_id, e->call_id,
                 err.msg[0] ? err.msg : rein_strerror(rc));
    return rc;
}

rein_err rein__session_save_ledger(void *userdata, const struct rein_ledger_entry *e)
{
    return save_ledger(userdata, e, true);
}

/* The ledger hook of the session's turns: every change waits for the turn's next commit. A
 * pending entry's is at the latest before_call's, right before its call runs (or the lock
 * state waiting_approval's, before anyone is asked). */
static rein_err save_turn_ledger(void *userdata, const struct rein_ledger_entry *e)
{
    return save_ledger(userdata, e, false);
}

/* The turns' before_call hook: the commit point of a call about to run. It holds what the turn
 * queued since its last commit (the person's message, the model's call, the pending entry) and
 * the lock state executing, so a client polling the conversation sees the call run. */
static rein_err commit_before_call(void *userdata, const char *call_id, rein_error *err)
{
    (void)call_id;
    return rein__session_commit(userdata, rein__session_write_held, NULL, err);
}

/* src into dst (size bytes), cut to fit, as snprintf("%s") would, without its format (a
 * turn sets the state five times, twice each). */
static void copy_cut(char *dst, size_t size, const char *src)
{
    size_t n = strnlen(src, size - 1);

    memcpy(dst, src, n);
    dst[n] = '\0';
}

void rein__session_set_state(rein_session *s, const char *state, const char *tool, bool now)
{
    rein_error err;

    if (!s->lease)
        return;
    pthread_mutex_lock(&s->qmu);
    copy_cut(s->q.state, sizeof(s->q.state), state);
    copy_cut(s->q.tool, sizeof(s->q.tool), tool ? tool : "");
    pthread_mutex_unlock(&s->qmu);
    if (now && rein__session_commit(s, rein__session_write_held, NULL, &err) != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "%s: lock state not updated: %s", s->conv_id, err.msg);
}

/* ---- approvals through the store -------------------------------------------------------- */

static bool was_asked(rein_session *s, const char *call_id)
{
    bool found = false;

    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nasked && !found; i++)
        found = strcmp(s->asked[i], call_id) == 0;
    pthread_mutex_unlock(&s->mu);
    return found;
}

/*
 * Registers the approval in the store before the event reaches anyone, so an answer posted the
 * moment a client sees approval_required finds it waiting.
 */
static void announce_approval(rein_session *s, const char *call_id)
{
    rein_error err;

    if (rein_store_approval_request(s->store, s->conv_id, call_id, &err) != REIN_OK) {
        rein_log(REIN_LOG_WARN, WHERE, "%s: approval of %s not announced: %s", s->conv_id, call_id,
                 err.msg);
        return;
    }
    pthread_mutex_lock(&s->mu);
    if (!s->asked)
        s->asked = rein_calloc(REIN__SESSION_ASKED, sizeof(*s->asked));
    /* out of memory it is not noted: approve_in_store announces it again, which is harmless */
    if (s->asked && s->nasked < REIN__SESSION_ASKED && strlen(call_id) < sizeof(s->asked[0]))
        snprintf(s->asked[s->nasked++], sizeof(s->asked[0]), "%s", call_id);
    pthread_mutex_unlock(&s->mu);
}

static rein_err approve_in_store(void *userdata, const struct rein_agent_approval *a,
                                 bool *approved, rein_error *err)
{
    rein_session *s = userdata;
    rein_err rc;

    if (!was_asked(s, a->call_id)) {
        rc = rein_store_approval_request(s->store, s->conv_id, a->call_id, err);
        if (rc != REIN_OK)
            return rc;
    }
    return rein_store_approval_wait(s->store, s->conv_id, a->call_id, a->timeout_ms, a->cancel,
                                    approved, err);
}

static bool approvals_in_store(const rein_session *s)
{
    return s->store && !s->opts.approve;
}

/* ---- the turn --------------------------------------------------------------------------- */

static void on_event(const struct rein_agent_event *ev, void *userdata)
{
    rein_session *s = userdata;

    if (ev->type == REIN_AGENT_EV_APPROVAL_REQUIRED && approvals_in_store(s))
        announce_approval(s, ev->call_id);
    if (ev->type == REIN_AGENT_EV_STATUS)
        /* executing is committed by commit_before_call, whose failure stops the call. */
        rein__session_set_state(s, rein_agent_state_name(ev->state), ev->tool,
                                ev->state == REIN_AGENT_STATE_WAITING_APPROVAL);
    rein__session_on_agent_event(s, ev);
}

/* Records the first event of a turn: which conversation and trace it belongs to. */
static void record_start(rein_session *s, const struct rein_agent_turn_opts *o)
{
    struct rein_buf b;
    struct rein_jw w;
    rein_error err;

    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "type");
    rein_jw_str(&w, "start");
    rein_jw_key(&w, "seq");
    rein_jw_int(&w, 0);
    rein_jw_key(&w, "conversation_id");
    if (s->store)
        rein_jw_str(&w, s->conv_id);
    else
        rein_jw_null(&w);
    rein_jw_key(&w, "trace_id");
    rein_jw_str(&w, s->trace_id);
    /* Where the turn's first message goes: a reader replaying the turn draws the stored
     * messages before it and the turn from its events. */
    rein_jw_key(&w, "position");
    rein_jw_int(&w, (int64_t)rein_history_len(s->h));
    rein_jw_key(&w, "mode");
    rein_jw_str(&w, rein_agent_mode_name(o->mode));
    rein_jw_key(&w, "verification");
    rein_jw_str(&w, rein_agent_verification_name(o->verification));
    rein_jw_obj_end(&w);
    if (rein_jw_finish(&w) == REIN_OK &&
        rein__session_record(s, "start", b.ptr, b.len, true, true, NULL, &err) != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "%s: start not recorded: %s", s->conv_id, err.msg);
    rein_buf_release(&b);
}

/* Records the turn's result object, handed to nobody: the adapter answers after closing,
 * with the same text (rein_session_result_text), so it is written once. */
static void record_result(rein_session *s, const rein_agent_result *r)
{
    rein_error err;

    rein_buf_release(&s->result);
    if (rein_agent_result_json_text(r, &s->result) != REIN_OK)
        rein_buf_release(&s->result);
    if (s->result.len && rein__session_record(s, "result", s->result.ptr, s->result.len, false,
                                              true, NULL, &err) != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "%s: result not recorded: %s", s->conv_id, err.msg);
}

const char *rein_session_result_text(const rein_session *s, size_t *len)
{
    if (!s || !s->result.len)
        return NULL;
    if (len)
        *len = s->result.len;
    return s->result.ptr;
}

rein_err rein_session_run(rein_session *s, rein_agent *agent, const char *message,
                          const struct rein_agent_turn_opts *turn, rein_agent_result **out,
                          rein_error *err)
{
    struct rein_agent_persist persist = {save_turn_message, save_turn_ledger, s,
                                         commit_before_call};
    struct rein_agent_turn_opts o;
    rein_err rc;

    if (out)
        *out = NULL;
    if (!s || !agent || !message || !out)
        return rein_error_set(err, REIN_EINVAL,
                              "a session turn needs a session, an agent, a "
                              "message and a place for the result");
    if (turn)
        o = *turn;
    else
        memset(&o, 0, sizeof(o));
    o.cancel = s->cancel;
    o.on_event = on_event;
    o.event_data = s;
    o.approve = s->opts.approve ? s->opts.approve : s->store ? approve_in_store : NULL;
    o.approval_data = s->opts.approve ? s->opts.approval_data : s;
    o.persist = s->store ? &persist : NULL;
    o.ledger = NULL;
    o.conversation_id = s->store ? s->conv_id : NULL;
    o.trace_id = s->trace_id;
    record_start(s, &o);
    rc = rein_agent_run(agent, s->h, message, &o, out, err);
    if (rc == REIN_OK)
        record_result(s, *out);
    else if (!s->opts.defer_events)
        rein__session_flush(s);
    /* A write of the turn that failed refused every later one: the turn is not kept. */
    if (rc == REIN_OK && s->store) {
        pthread_mutex_lock(&s->qmu);
        rc = queue_failed(s, err);
        pthread_mutex_unlock(&s->qmu);
        if (rc != REIN_OK) {
            rein_agent_result_free(*out);
            *out = NULL;
        }
    }
    return rc;
}

/* ---- opening and closing ---------------------------------------------------------------- */

/* Creates the conversation unless it exists (another opener may have made it meanwhile). */
static rein_err ensure_conversation(rein_session *s, const char *title, rein_error *err)
{
    char cut[REIN_SESSION_TITLE_MAX + 1] = "";
    rein_error e;
    rein_err rc;

    rein_error_clear(&e);
    if (rein_store_conv_exists(s->store, s->conv_id, &e))
        return REIN_OK;
    if (e.code) {
        if (err)
            *err = e;
        return e.code;
    }
    if (s->opts.existing)
        return rein_error_set(err, REIN_ENOTFOUND, "there is no conversation %s", s->conv_id);
    if (title)
        rein__session_title(title, cut);
    rc = rein_store_conv_create(s->store, s->conv_id, cut[0] ? cut : NULL, NULL, NULL, err);
    return rc == REIN_EEXIST ? REIN_OK : rc;
}

/* ---- replacing the last message (edit and resend, regenerate) ----------------------------- */

struct replace_check {
    int64_t from;
    bool first_is_person; /* the message at from is the person's */
    bool later_person;    /* a later one is too */
};

/* A message the person wrote: role user, and not one of rein's own notes to the model. */
static bool from_person(const char *json, size_t len)
{
    json_t *m = rein_json_parse(json, len, 0, NULL);
    const char *role = json_string_value(json_object_get(m, "role"));
    const char *text = json_string_value(json_object_get(m, "content"));
    bool yes = role && strcmp(role, "user") == 0 && !(text && strncmp(text, "[rein] ", 7) == 0);

    json_decref(m);
    return yes;
}

static int check_replaced(const struct rein_store_message *m, void *userdata)
{
    struct replace_check *rc = userdata;
    bool person = from_person(m->json, m->len);

    if (m->position == rc->from)
        rc->first_is_person = person;
    else if (person)
        rc->later_person = true;
    return 0;
}

static rein_err replace_messages(rein_session *s, rein_error *err)
{
    struct replace_check rc = {.from = s->opts.replace_from};
    rein_err r = rein_store_messages_each(s->store, s->conv_id, rc.from, check_replaced, &rc, err);

    if (r != REIN_OK)
        return r;
    if (!rc.first_is_person || rc.later_person)
        return rein_error_set(err, REIN_ESTATE,
                              "message %lld of conversation %s is not the last message from the "
                              "person: the conversation moved on; reload it",
                              (long long)rc.from, s->conv_id);
    return rein_store_messages_truncate(s->store, s->conv_id, rc.from, err);
}

/* client_history: the client sends the conversation; only its length is read. */
static rein_err count_stored(rein_session *s, rein_error *err)
{
    json_t *conv = NULL;
    rein_err rc = rein_store_conv_get(s->store, s->conv_id, &conv, err);

    if (rc == REIN_OK)
        s->stored = json_integer_value(json_object_get(conv, "message_count"));
    json_decref(conv);
    return rc;
}

struct opening {
    rein_session *s;
    const char *title;
    struct rein_store_lock_info *held;
};

/* Takes the lease and loads the conversation, all in one store group (one wait for the disk);
 * on failure nothing is held once the session is closed. */
static rein_err open_stored(rein_store *store, void *userdata, rein_error *err)
{
    struct opening *op = userdata;
    rein_session *s = op->s;
    const char *title = op->title;
    struct rein_store_lock_info *held = op->held;
    int64_t lease_ms = s->opts.lease_ms > 0 ? s->opts.lease_ms : DEFAULT_LEASE_MS;
    rein_err rc;

    rc = rein_store_lease_acquire(store, s->conv_id, lease_ms, "thinking", &s->lease, held, err);
    if (rc == REIN_EBUSY && held)
        rein_error_set(err, REIN_EBUSY, "conversation %s is busy: a turn is %s%s%s", s->conv_id,
                       held->state, held->tool[0] ? " " : "", held->tool);
    if (rc != REIN_OK)
        return rc;
    rc = ensure_conversation(s, title, err);
    if (rc == REIN_OK && s->opts.replace)
        rc = replace_messages(s, err);
    if (rc == REIN_OK)
        rc = s->opts.client_history ? count_stored(s, err) : rein__session_load(s, err);
    /* Listings show the turn, and a process that dies before close leaves "running" behind
     * for rein_store_recover() to turn into "interrupted" once the lease has run out. */
    if (rc == REIN_OK)
        rc = rein_store_conv_update(s->store, s->conv_id, NULL, STATE_RUNNING, NULL, err);
    if (rc == REIN_OK) {
        s->cancel = rein_cancel_new_child(rein_store_lease_cancel(s->lease));
        if (!s->cancel)
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    return rc;
}

rein_err rein_session_open(rein_store *store, const char *conv_id,
                           const struct rein_session_opts *opts, rein_session **out,
                           struct rein_store_lock_info *held, rein_error *err)
{
    rein_session *s;
    rein_err rc;

    *out = NULL;
    if (conv_id && !rein_store_id_is_valid(conv_id))
        return rein_error_set(err, REIN_EINVAL,
                              "conversation id \"%.64s\" is not valid: use 1-64 characters of "
                              "A-Z a-z 0-9 _ . - (not starting with '.', no \"..\")",
                              conv_id);
    s = rein_calloc(1, sizeof(*s));
    if (!s)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    if (opts)
        s->opts = *opts;
    s->opts.title = NULL;
    s->store = store;
    rein_buf_init(&s->result, 0);
    atomic_init(&s->interrupted, false);
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->qmu, NULL);
    rein_buf_init(&s->q.text, 0);
    rein__session_held_init(&s->held);
    if (opts && opts->trace_id && opts->trace_id[0])
        copy_cut(s->trace_id, sizeof(s->trace_id), opts->trace_id);
    else
        rein_trace_id_new(s->trace_id);
    if (conv_id)
        copy_cut(s->conv_id, sizeof(s->conv_id), conv_id);
    else
        rein_id_new("conv_", s->conv_id);
    s->h = rein_history_new();
    if (!s->h) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto fail;
    }
    if (store) {
        struct opening op = {s, opts ? opts->title : NULL, held};
        /* Nothing of the opening is told or irreversible: the turn's first commit (before a
         * call runs, an event id goes out, or the turn ends) checks it was kept. */
        rc = rein_store_group_ahead(store, open_stored, &op, &s->open_ticket, err);
    } else {
        s->cancel = rein_cancel_new();
        rc = s->cancel ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    if (rc != REIN_OK)
        goto fail;
    *out = s;
    return REIN_OK;
fail:
    if (err && !err->where[0])
        rein_error_where(err, WHERE);
    rein_session_close(s);
    return rc;
}

/* The end's writes after the queue: what is held, the conversation's state for listings, then
 * the lock, so a client that sends the next message as soon as it has the answer does not find
 * the conversation busy. A failure is returned after the lock is released. */
static rein_err end_writes(rein_session *s, void *data, rein_error *err)
{
    rein_err rc = rein__session_write_held(s, data, err);
    rein_error e;

    if (s->lease &&
        rein_store_conv_update(s->store, s->conv_id, NULL,
                               atomic_load(&s->interrupted) ? STATE_INTERRUPTED : STATE_IDLE, NULL,
                               &e) != REIN_OK &&
        e.code != REIN_ENOTFOUND)
        rein_log(REIN_LOG_WARN, WHERE, "%s: state not updated: %s", s->conv_id, e.msg);
    rein_store_lease_release(s->lease);
    s->lease = NULL;
    return rc;
}

/* The end's commit failed, and took the lock's release with it (or the turn's writes were lost
 * before): the conversation is left "interrupted" and its lock free, in a commit of their own,
 * so the next message does not wait for the lease to run out. Failures are logged. */
struct release {
    rein_session *s;
    const char *token;
};

static rein_err release_after_failure(rein_store *store, void *userdata, rein_error *err)
{
    const struct release *r = userdata;
    rein_session *s = r->s;
    rein_error e;
    rein_err rc;

    rc = rein_store_conv_update(store, s->conv_id, NULL, STATE_INTERRUPTED, NULL, &e);
    if (rc != REIN_OK && rc != REIN_ENOTFOUND)
        rein_log(REIN_LOG_WARN, WHERE, "%s: state not updated: %s", s->conv_id, e.msg);
    rc = rein_store_lock_release(store, s->conv_id, r->token, &e);
    if (rc != REIN_OK && rc != REIN_ESTATE)
        rein_log(REIN_LOG_WARN, WHERE, "%s: lock not released: %s", s->conv_id, e.msg);
    (void)err;
    return REIN_OK;
}

rein_err rein_session_end(rein_session *s, rein_error *err)
{
    rein_err rc = REIN_OK;

    if (!s)
        return REIN_OK;
    if (s->store) {
        char token[REIN_ID_MAX] = "";
        rein_error ignored;
        if (s->lease)
            snprintf(token, sizeof(token), "%s", rein_store_lease_token(s->lease));
        /* The lease thread renews through the store: it lets go of this lease before the group. */
        rein_store_lease_stop(s->lease);
        rc = rein__session_commit(s, end_writes, NULL, err);
        if (rc != REIN_OK && token[0]) {
            struct release r = {s, token};
            if (rein_store_group(s->store, release_after_failure, &r, &ignored) != REIN_OK)
                rein_log(REIN_LOG_WARN, WHERE, "%s: releasing after a failed commit: %s",
                         s->conv_id, ignored.msg);
        }
    }
    rein_cancel_unref(s->cancel);
    rein_history_free(s->h);
    rein__session_held_release(&s->held);
    queue_release(&s->q);
    rein_buf_release(&s->result);
    pthread_mutex_destroy(&s->mu);
    rein_free(s->asked);
    pthread_mutex_destroy(&s->qmu);
    rein_free(s);
    return rc;
}

void rein_session_close(rein_session *s)
{
    rein_error err;

    if (rein_session_end(s, &err) != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "the session's last writes were not stored: %s", err.msg);
}

/* ---- accessors -------------------------------------------------------------------------- */

const char *rein_session_conversation_id(const rein_session *s)
{
    return s->store ? s->conv_id : NULL;
}

const char *rein_session_trace_id(const rein_session *s)
{
    return s->trace_id;
}

const rein_history *rein_session_history(const rein_session *s)
{
    return s->h;
}

rein_cancel *rein_session_cancel(rein_session *s)
{
    return s->cancel;
}

void rein_session_interrupt(rein_session *s, const char *reason)
{
    atomic_store(&s->interrupted, true);
    rein_cancel_trigger(s->cancel, reason ? reason : "interrupted");
}

int64_t rein_session_last_seq(const rein_session *s)
{
    return s->last_seq;
}

rein_err rein_session_append(rein_session *s, const json_t *msg, rein_error *err)
{
    if (!s->store)
        return rein_error_set(err, REIN_EINVAL, "a session without a store keeps no messages");
    if (!json_is_object(msg))
        return rein_error_set(err, REIN_EINVAL, "a message must be a JSON object");
    return rein__session_save_message(s, msg, NULL, err);
}

int64_t rein_session_message_count(const rein_session *s)
{
    return s->store ? s->stored : (int64_t)rein_history_len(s->h);
}

rein_err rein_session_record(rein_session *s, const char *type, const char *payload,
                             int64_t *seq_out, rein_error *err)
{
    if (seq_out)
        *seq_out = 0;
    if (!s->store)
        return rein_error_set(err, REIN_EINVAL, "a session without a store records nothing");
    if (!type || !payload)
        return rein_error_set(err, REIN_EINVAL, "an event needs a type and a payload");
    return rein__session_record(s, type, payload, strlen(payload), false, false, seq_out, err);
}
