/*
 * The agent's events: their JSON (defined once here, so the command's --events lines, the
 * server's SSE stream and the store's trace all agree) and their delivery to a turn's
 * callback, serialized with a mutex because tool calls report from pool workers.
 */
#include "agent_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NAME(id, name) name,
static const char *const type_names[] = {"", REIN_AGENT_EV_MAP(NAME)};
#undef NAME

const char *rein_agent_event_type_name(enum rein_agent_event_type type)
{
    if ((size_t)type >= REIN_ARRAY_SIZE(type_names) || type == 0)
        return "unknown";
    return type_names[type];
}

/* quoted is a key as REIN_JW_KEY writes it ("\"name\":"), made at compile time by KEY_STR and
 * KEY_RAW: an event is written per status change, and escaping each key cost a fifth of it. */
static void key_str(struct rein_jw *w, const char *quoted, size_t qlen, const char *s)
{
    rein_jw_key_quoted(w, quoted, qlen);
    rein_jw_str(w, s);
}

static void key_raw(struct rein_jw *w, const char *quoted, size_t qlen, const char *json,
                    size_t len)
{
    rein_jw_key_quoted(w, quoted, qlen);
    if (json && len)
        rein_jw_raw(w, json, len);
    else
        rein_jw_null(w);
}

#define KEY_STR(w, lit, s)      key_str((w), "\"" lit "\":", sizeof(lit) + 2, (s))
#define KEY_RAW(w, lit, j, len) key_raw((w), "\"" lit "\":", sizeof(lit) + 2, (j), (len))

static void write_call(struct rein_jw *w, const struct rein_agent_event *ev)
{
    KEY_STR(w, "call_id", ev->call_id);
    KEY_STR(w, "tool", ev->tool);
}

rein_err rein_agent_event_write(const struct rein_agent_event *ev, struct rein_buf *out)
{
    struct rein_jw w;

    rein_jw_init(&w, out);
    rein_jw_obj_begin(&w);
    KEY_STR(&w, "type", rein_agent_event_type_name(ev->type));
    REIN_JW_KEY(&w, "seq");
    rein_jw_uint(&w, ev->seq);
    switch (ev->type) {
    case REIN_AGENT_EV_STATUS:
        KEY_STR(&w, "state", rein_agent_state_name(ev->state));
        if (ev->tool)
            write_call(&w, ev);
        break;
    case REIN_AGENT_EV_TEXT_DELTA:
        REIN_JW_KEY(&w, "text");
        rein_jw_strn(&w, ev->text ? ev->text : "", ev->text ? ev->len : 0);
        break;
    case REIN_AGENT_EV_TOOL_CALL:
        write_call(&w, ev);
        KEY_RAW(&w, "arguments", ev->json, ev->json_len);
        REIN_JW_KEY(&w, "iteration");
        rein_jw_int(&w, ev->iteration);
        break;
    case REIN_AGENT_EV_TOOL_RESULT:
        write_call(&w, ev);
        KEY_STR(&w, "status", ev->kind);
        REIN_JW_KEY(&w, "ok");
        rein_jw_bool(&w, ev->ok);
        REIN_JW_KEY(&w, "latency_ms");
        rein_jw_int(&w, ev->latency_ms);
        KEY_RAW(&w, "result", ev->json, ev->json_len);
        break;
    case REIN_AGENT_EV_APPROVAL_REQUIRED:
        write_call(&w, ev);
        KEY_RAW(&w, "arguments", ev->json, ev->json_len);
        REIN_JW_KEY(&w, "timeout_ms");
        rein_jw_int(&w, ev->timeout_ms);
        break;
    case REIN_AGENT_EV_VERIFICATION:
        write_call(&w, ev);
        KEY_STR(&w, "kind", ev->kind);
        if (ev->code)
            KEY_STR(&w, "code", ev->code);
        REIN_JW_KEY(&w, "passed");
        rein_jw_bool(&w, ev->ok);
        REIN_JW_KEY(&w, "reason");
        rein_jw_strn(&w, ev->text ? ev->text : "", ev->text ? ev->len : 0);
        break;
    case REIN_AGENT_EV_FINAL:
        REIN_JW_KEY(&w, "text");
        rein_jw_strn(&w, ev->text ? ev->text : "", ev->text ? ev->len : 0);
        KEY_STR(&w, "stop_reason", rein_agent_stop_name(ev->stop));
        REIN_JW_KEY(&w, "success");
        rein_jw_bool(&w, ev->ok);
        if (ev->code)
            KEY_STR(&w, "code", ev->code);
        break;
    case REIN_AGENT_EV_CLAIMS:
        KEY_STR(&w, "action", ev->kind ? ev->kind : "report");
        KEY_RAW(&w, "claims", ev->json, ev->json_len);
        break;
    case REIN_AGENT_EV_ERROR:
        KEY_STR(&w, "kind", ev->kind ? ev->kind : "internal");
        REIN_JW_KEY(&w, "message");
        rein_jw_strn(&w, ev->text ? ev->text : "", ev->text ? ev->len : 0);
        break;
    }
    rein_jw_obj_end(&w);
    return rein_jw_finish(&w);
}

json_t *rein_agent_event_json(const struct rein_agent_event *ev)
{
    struct rein_buf b;
    json_t *j = NULL;

    rein_buf_init(&b, 0);
    if (rein_agent_event_write(ev, &b) == REIN_OK)
        j = rein_json_parse(b.ptr, b.len, 0, NULL);
    rein_buf_release(&b);
    return j;
}

/* ---- delivery ---- */

void rein__turn_emit(struct turn *t, struct rein_agent_event *ev)
{
    if (!t->o->on_event)
        return;
    pthread_mutex_lock(&t->ev_mu);
    ev->seq = ++t->seq;
    t->o->on_event(ev, t->o->event_data);
    pthread_mutex_unlock(&t->ev_mu);
}

void rein__turn_status(struct turn *t, enum rein_agent_state st, const char *tool,
                       const char *call_id)
{
    struct rein_agent_event ev;

    if (!t->o->on_event)
        return;
    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_STATUS;
    ev.state = st;
    ev.tool = tool;
    ev.call_id = tool ? call_id : NULL;
    rein__turn_emit(t, &ev);
}

void rein__turn_error_event(struct turn *t, const char *kind, const char *fmt, ...)
{
    struct rein_agent_event ev;
    char msg[512];
    va_list ap;
    int n;

    if (!t->o->on_event)
        return;
    va_start(ap, fmt);
    n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    memset(&ev, 0, sizeof(ev));
    ev.type = REIN_AGENT_EV_ERROR;
    ev.kind = kind;
    ev.text = msg;
    ev.len = n < 0 ? 0 : (size_t)n >= sizeof(msg) ? sizeof(msg) - 1 : (size_t)n;
    rein__turn_emit(t, &ev);
}
