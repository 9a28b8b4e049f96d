/*
 * Recording a session's events (include/rein/session.h): every event of a turn goes to the
 * store under the conversation's next sequence id, so any instance can replay it and follow the
 * turn while it runs, and to the adapter as it happens.
 *
 * A commit per event would make a streamed answer cost a commit per token. So status and
 * text_delta events are held back (text deltas that follow each other joined into one) and
 * written in one commit with the next event of another kind, or once what is held passes
 * REIN_SESSION_TEXT_MAX bytes or REIN_SESSION_TEXT_MS. With opts.defer_events every event is
 * held that way, and what is held also goes with the turn's other commits (rein_session_end
 * at the latest). Order is kept: what is held is written before the event that releases it,
 * and every write goes through rein__session_commit with the turn's queued messages.
 *
 * The agent calls the event callback from the turn's thread and from pool workers, never twice
 * at once, so the held events need no lock of their own.
 */
#include "session/session_int.h"

#include <rein/json.h>

#include <string.h>

#define WHERE REIN__SESSION_WHERE

void rein__session_held_init(struct rein__session_held *held)
{
    memset(held, 0, sizeof(*held));
    rein_buf_init(&held->buf, 0);
    rein_buf_init(&held->text, 0);
}

void rein__session_held_release(struct rein__session_held *held)
{
    rein_buf_release(&held->buf);
    rein_buf_release(&held->text);
}

/* Renders the open text delta into the held buffer, as the item reserved for it. */
static rein_err close_text(struct rein__session_held *held)
{
    struct rein_jw w;
    size_t off = held->buf.len;

    if (!held->text_open)
        return REIN_OK;
    held->text_open = false;
    rein_jw_init(&w, &held->buf);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "type");
    rein_jw_str(&w, "text_delta");
    rein_jw_key(&w, "seq");
    rein_jw_uint(&w, held->text_seq);
    rein_jw_key(&w, "text");
    rein_jw_strn(&w, held->text.ptr, held->text.len);
    rein_jw_obj_end(&w);
    rein_buf_reset(&held->text);
    if (rein_jw_finish(&w) != REIN_OK || rein_buf_addch(&held->buf, '\0') != REIN_OK) {
        rein_buf_truncate(&held->buf, off);
        held->n--; /* the delta is lost from the record; the answer keeps its text */
        return REIN_ENOMEM;
    }
    held->items[held->n - 1].off = off;
    return REIN_OK;
}

/* Holds json (len bytes) as the next item. */
static rein_err hold(struct rein__session_held *held, const char *type, const char *json,
                     size_t len)
{
    size_t off = held->buf.len;

    if (held->n == 0)
        held->since_ms = rein_now_ms();
    if (rein_buf_add(&held->buf, json, len) != REIN_OK ||
        rein_buf_addch(&held->buf, '\0') != REIN_OK) {
        rein_buf_truncate(&held->buf, off);
        return REIN_ENOMEM;
    }
    held->items[held->n].type = type;
    held->items[held->n].off = off;
    held->n++;
    return REIN_OK;
}

/* Adds a text delta: to the open one, or as a new open item. */
static rein_err hold_text(struct rein__session_held *held, const struct rein_agent_event *ev)
{
    if (!held->text_open) {
        if (held->n == 0)
            held->since_ms = rein_now_ms();
        held->items[held->n].type = "text_delta";
        held->items[held->n].off = 0;
        held->n++;
        held->text_open = true;
        held->text_seq = ev->seq;
    }
    return rein_buf_add(&held->text, ev->text, ev->len);
}

/* What record_held writes after what is held, and what it wrote last. */
struct held_out {
    const char *type, *json; /* NULL: only what is held */
    int64_t last;
};

/* Writes what is held, then out's event when it has one, in one store call: a commit's
 * more (rein__session_commit), so the queued writes go in the same group. */
static rein_err record_held(rein_session *s, void *data, rein_error *err)
{
    struct held_out *out = data;
    struct rein__session_held *held = &s->held;
    struct rein_store_event evs[REIN__SESSION_HELD + 1];
    int64_t seqs[REIN__SESSION_HELD + 1];
    size_t n = 0;
    rein_err rc;

    (void)close_text(held);
    for (size_t i = 0; i < held->n; i++)
        evs[n++] = (struct rein_store_event){.conv_id = s->conv_id,
                                             .trace_id = s->trace_id,
                                             .type = held->items[i].type,
                                             .payload = held->buf.ptr + held->items[i].off};
    if (out->json)
        evs[n++] = (struct rein_store_event){.conv_id = s->conv_id,
                                             .trace_id = s->trace_id,
                                             .type = out->type,
                                             .payload = out->json};
    rc = n ? rein_store_events_record(s->store, evs, n, seqs, err) : REIN_OK;
    held->n = 0;
    rein_buf_reset(&held->buf);
    if (rc == REIN_OK && n)
        out->last = seqs[n - 1];
    return rc;
}

/* Commits what is queued with what is held and json (when not NULL); *seq_out receives the
 * last sequence id written, once the commit is done. */
static rein_err write_held(rein_session *s, const char *type, const char *json, int64_t *seq_out,
                           rein_error *err)
{
    struct held_out out = {type, json, 0};
    rein_err rc = rein__session_commit(s, record_held, &out, err);

    if (rc == REIN_OK && out.last) {
        s->last_seq = out.last;
        if (seq_out)
            *seq_out = out.last;
    }
    return rc;
}

rein_err rein__session_write_held(rein_session *s, void *data, rein_error *err)
{
    struct held_out out = {NULL, NULL, 0};
    rein_err rc;

    (void)data;
    rc = s->held.n || s->held.text_open ? record_held(s, &out, err) : REIN_OK;

    if (rc == REIN_OK && out.last)
        s->last_seq = out.last;
    return rc;
}

void rein__session_flush(rein_session *s)
{
    rein_error err;

    if (!s->store)
        return;
    if (write_held(s, NULL, NULL, NULL, &err) != REIN_OK)
        rein_log(REIN_LOG_WARN, WHERE, "%s: events not recorded: %s", s->conv_id, err.msg);
}

rein_err rein__session_record(rein_session *s, const char *type, const char *json, size_t len,
                              bool tell, bool may_hold, int64_t *seq_out, rein_error *err)
{
    int64_t seq = 0;
    rein_err rc = REIN_OK;
    /* Held (seq 0) when events wait for the turn's commits and there is room. */
    bool held = s->store && may_hold && s->opts.defer_events && s->held.n < REIN__SESSION_HELD &&
                close_text(&s->held) == REIN_OK && hold(&s->held, type, json, len) == REIN_OK;

    if (s->store && !held)
        rc = write_held(s, type, json, &seq, err);
    if (seq_out)
        *seq_out = seq;
    if (tell && s->opts.on_event) {
        struct rein_session_event sev = {type, json, len, seq, NULL};
        s->opts.on_event(&sev, s->opts.event_data);
    }
    return rc;
}

/* Status and text deltas wait for the next event, unless what is held is big or old. */
static bool held_back(const rein_session *s, const struct rein_agent_event *ev)
{
    const struct rein__session_held *held = &s->held;

    if (ev->type != REIN_AGENT_EV_STATUS && ev->type != REIN_AGENT_EV_TEXT_DELTA &&
        !s->opts.defer_events)
        return false;
    /* Deferred events wait for the turn's commits however old they are. */
    return held->n < REIN__SESSION_HELD && held->buf.len + held->text.len < REIN_SESSION_TEXT_MAX &&
           (s->opts.defer_events || held->n == 0 ||
            rein_now_ms() - held->since_ms < REIN_SESSION_TEXT_MS);
}

void rein__session_on_agent_event(rein_session *s, const struct rein_agent_event *ev)
{
    const char *type = rein_agent_event_type_name(ev->type);
    struct rein_session_event sev = {type, NULL, 0, 0, ev};
    struct rein_buf b;
    rein_error err;
    rein_err rc = REIN_OK;

    rein_buf_init(&b, 0);
    if (rein_agent_event_write(ev, &b) != REIN_OK) {
        rein_buf_release(&b);
        return;
    }
    if (s->store && held_back(s, ev)) {
        if (ev->type == REIN_AGENT_EV_TEXT_DELTA)
            rc = hold_text(&s->held, ev);
        else if (close_text(&s->held) == REIN_OK)
            rc = hold(&s->held, type, b.ptr, b.len);
        if (rc != REIN_OK)
            rein_log(REIN_LOG_WARN, WHERE, "%s: %s event not recorded: out of memory", s->conv_id,
                     type);
    } else if (s->store && write_held(s, type, b.ptr, &sev.seq, &err) != REIN_OK) {
        rein_log(REIN_LOG_WARN, WHERE, "%s: %s event not recorded: %s", s->conv_id, type, err.msg);
    }
    sev.json = b.ptr;
    sev.len = b.len;
    if (s->opts.on_event)
        s->opts.on_event(&sev, s->opts.event_data);
    rein_buf_release(&b);
}
