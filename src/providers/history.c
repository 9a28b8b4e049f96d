/*
 * The conversation history (include/rein/history.h): neutral messages in order, each with
 * its wire encoding cached beside it.
 *
 * A message is checked against the neutral shape once, when it is appended, and copied so
 * that nobody can change it under its cached encoding. A wire asks for message i's piece
 * through rein__history_piece(); the piece is made by the wire's encoder the first time and
 * reused on every later turn, so a request body costs one copy of the cached pieces plus the
 * encoding of what is new. A different wire or quirk set (variant) re-encodes.
 */
#include "provider_int.h"

#include <string.h>

struct hmsg {
    json_t *msg;
    char *enc;
    size_t enc_len;
    const struct rein__wire *wire;
    unsigned variant;
};

struct rein_history {
    struct hmsg *m;
    size_t n, cap;
    size_t encodes;
};

rein_history *rein_history_new(void)
{
    return rein_calloc(1, sizeof(struct rein_history));
}

static void hmsg_release(struct hmsg *m)
{
    json_decref(m->msg);
    rein_free(m->enc);
    memset(m, 0, sizeof(*m));
}

void rein_history_free(rein_history *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++)
        hmsg_release(&h->m[i]);
    rein_free(h->m);
    rein_free(h);
}

size_t rein_history_len(const rein_history *h)
{
    return h->n;
}

const json_t *rein_history_get(const rein_history *h, size_t i)
{
    return i < h->n ? h->m[i].msg : NULL;
}

void rein_history_truncate(rein_history *h, size_t n)
{
    while (h->n > n)
        hmsg_release(&h->m[--h->n]);
}

size_t rein__history_encode_count(const rein_history *h)
{
    return h->encodes;
}

/* ---- the neutral shape ---- */

static rein_err want(rein_error *err, const char *where, const char *what)
{
    return rein_error_set(err, REIN_EINVAL, "message: %s %s", where, what);
}

static rein_err check_string(const json_t *msg, const char *key, bool required, rein_error *err)
{
    const json_t *v = json_object_get(msg, key);

    if (!v)
        return required ? rein_error_set(err, REIN_EINVAL, "message: \"%s\" is missing", key)
                        : REIN_OK;
    if (!json_is_string(v) && !(json_is_null(v) && !required))
        return rein_error_set(err, REIN_EINVAL, "message: \"%s\" must be a string, got %s", key,
                              rein_json_type_name(v));
    return REIN_OK;
}

static rein_err check_calls(const json_t *calls, rein_error *err)
{
    size_t i;
    json_t *c;

    if (!json_is_array(calls))
        return want(err, "\"tool_calls\"", "must be an array");
    json_array_foreach(calls, i, c)
    {
        static const char *const keys[] = {"id", "name", "arguments"};
        if (!json_is_object(c))
            return rein_error_set(err, REIN_EINVAL, "message: tool_calls[%zu] must be an object",
                                  i);
        for (size_t k = 0; k < 3; k++) {
            const json_t *v = json_object_get(c, keys[k]);
            if (!json_is_string(v))
                return rein_error_set(err, REIN_EINVAL,
                                      "message: tool_calls[%zu].%s must be a string%s", i, keys[k],
                                      k == 2 ? " (the raw argument text the model sent)" : "");
        }
        if (!json_string_value(json_object_get(c, "id"))[0])
            return rein_error_set(err, REIN_EINVAL, "message: tool_calls[%zu].id is empty", i);
    }
    return REIN_OK;
}

static rein_err check_message(const json_t *msg, rein_error *err)
{
    const char *role;
    const json_t *v;
    rein_err rc;

    if (!json_is_object(msg))
        return rein_error_set(err, REIN_EINVAL, "a message must be a JSON object, got %s",
                              rein_json_type_name(msg));
    rc = check_string(msg, "role", true, err);
    if (rc)
        return rc;
    role = json_string_value(json_object_get(msg, "role"));
    if (strcmp(role, "system") != 0 && strcmp(role, "user") != 0 &&
        strcmp(role, "assistant") != 0 && strcmp(role, "tool") != 0)
        return rein_error_set(err, REIN_EINVAL,
                              "message: role \"%s\" is not system, user, assistant or tool", role);
    rc = check_string(msg, "content", false, err);
    if (!rc && strcmp(role, "tool") == 0) {
        rc = check_string(msg, "tool_call_id", true, err);
        if (!rc)
            rc = check_string(msg, "name", false, err);
        v = json_object_get(msg, "is_error");
        if (!rc && v && !json_is_boolean(v))
            rc = want(err, "\"is_error\"", "must be a boolean");
    }
    if (!rc && strcmp(role, "assistant") == 0) {
        v = json_object_get(msg, "tool_calls");
        if (v && !json_is_null(v))
            rc = check_calls(v, err);
        if (!rc)
            rc = check_string(msg, "reasoning", false, err);
        if (!rc)
            rc = check_string(msg, "reasoning_signature", false, err);
        if (!rc)
            rc = check_string(msg, "refusal", false, err);
        v = json_object_get(msg, "redacted_reasoning");
        if (!rc && v && !json_is_array(v))
            rc = want(err, "\"redacted_reasoning\"", "must be an array of strings");
        v = json_object_get(msg, "server_blocks");
        if (!rc && v && !json_is_array(v))
            rc = want(err, "\"server_blocks\"", "must be an array of objects");
        v = json_object_get(msg, "thinking_blocks");
        if (!rc && v && !json_is_array(v))
            rc = want(err, "\"thinking_blocks\"", "must be an array of objects");
    }
    return rc;
}

/* Takes msg (a private copy) whatever happens. */
static rein_err append_take(rein_history *h, json_t *msg)
{
    if (!msg)
        return REIN_ENOMEM;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        struct hmsg *v = rein_realloc(h->m, cap * sizeof(*v));
        if (!v) {
            json_decref(msg);
            return REIN_ENOMEM;
        }
        h->m = v;
        h->cap = cap;
    }
    memset(&h->m[h->n], 0, sizeof(h->m[h->n]));
    h->m[h->n++].msg = msg;
    return REIN_OK;
}

rein_err rein_history_append(rein_history *h, const json_t *msg, rein_error *err)
{
    rein_err rc = check_message(msg, err);

    if (rc)
        return rc;
    return append_take(h, json_deep_copy(msg));
}

static rein_err add_text(rein_history *h, const char *role, const char *text)
{
    json_t *m;

    /* jansson refuses text that is not UTF-8 as if memory had run out: say what it is. */
    if (text && rein_utf8_valid_prefix(text, strlen(text)) != strlen(text))
        return REIN_EINVAL;
    m = json_pack("{s:s, s:s}", "role", role, "content", text ? text : "");
    return append_take(h, m);
}

rein_err rein_history_add_system(rein_history *h, const char *text)
{
    return add_text(h, "system", text);
}

rein_err rein_history_add_user(rein_history *h, const char *text)
{
    return add_text(h, "user", text);
}

rein_err rein_history_add_response(rein_history *h, const rein_model_response *r)
{
    return append_take(h, rein_model_response_message(r));
}

rein_err rein_history_add_tool_result(rein_history *h, const char *call_id, const char *name,
                                      const char *content, bool is_error)
{
    json_t *m;

    if (!call_id || !call_id[0])
        return REIN_EINVAL;
    m = json_pack("{s:s, s:s, s:s}", "role", "tool", "tool_call_id", call_id, "content",
                  content ? content : "");
    if (m && name && json_object_set_new(m, "name", json_string(name)) != 0) {
        json_decref(m);
        return REIN_ENOMEM;
    }
    if (m && is_error && json_object_set_new(m, "is_error", json_true()) != 0) {
        json_decref(m);
        return REIN_ENOMEM;
    }
    return append_take(h, m);
}

json_t *rein_history_to_json(const rein_history *h)
{
    json_t *a = json_array();

    for (size_t i = 0; a && i < h->n; i++) {
        if (json_array_append(a, h->m[i].msg) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

rein_history *rein_history_from_json(const json_t *messages, rein_error *err)
{
    rein_history *h;
    size_t i;
    json_t *m;

    if (!json_is_array(messages)) {
        rein_error_set(err, REIN_EINVAL, "a history must be a JSON array of messages");
        return NULL;
    }
    h = rein_history_new();
    if (!h) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    json_array_foreach(messages, i, m)
    {
        rein_err rc = rein_history_append(h, m, err);
        if (rc) {
            rein_error_prefix(err, "messages[%zu]: ", i);
            rein_history_free(h);
            return NULL;
        }
    }
    return h;
}

rein_err rein__history_piece(rein_history *h, size_t i, const rein_provider *p,
                             const struct rein__wire *w, const char **out, size_t *len)
{
    struct hmsg *m = &h->m[i];
    unsigned v = w->variant ? w->variant(p) : 0;
    struct rein_buf b;
    rein_err rc;

    if (!m->enc || m->wire != w || m->variant != v) {
        rein_buf_init(&b, 0);
        rc = w->encode_message(p, m->msg, &b);
        if (rc) {
            rein_buf_release(&b);
            return rc;
        }
        rein_free(m->enc);
        m->enc_len = b.len;
        m->enc = rein_buf_detach(&b, NULL);
        if (!m->enc) {
            rein_buf_release(&b);
            return REIN_ENOMEM;
        }
        m->wire = w;
        m->variant = v;
        h->encodes++;
    }
    *out = m->enc;
    *len = m->enc_len;
    return REIN_OK;
}
