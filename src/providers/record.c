/*
 * Record and replay: how users regression-test their agents.
 *
 * With a recording file set, every exchange is appended as one JSON line:
 *   {"v": 1, "time", "provider", "wire", "model", "endpoint", "request": <the body sent>,
 *    "status", "content_type", "response": "<the bytes received, as text>"}
 * (a binary reply, Bedrock's event stream, is kept as "response_base64" beside an empty
 * "response").
 * No header is recorded, and the API key is replaced wherever it might appear, so a
 * recording can be shared. The replay provider serves the lines back in order: each request
 * is compared with the recorded one as JSON, and the first difference is named by its JSON
 * Pointer with both values ("request 3 differs at /messages/2/content: recorded "a", got
 * "b""), so a change in an agent's behaviour fails loudly instead of drifting.
 */
#include "provider_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The file is opened at the first exchange, so a run that sent nothing leaves no empty
 * recording behind; whether it can be written is checked when the recorder is made. */
struct rein__recorder {
    FILE *f;
    char *path;
    pthread_mutex_t mu;
};

struct rein__recorder *rein__recorder_open(const char *path, rein_error *err)
{
    struct rein__recorder *rec = rein_calloc(1, sizeof(*rec));
    const char *slash = strrchr(path, '/');
    char *dir = slash ? rein_strndup(path, slash == path ? 1 : (size_t)(slash - path)) : NULL;

    if (!rec || !(rec->path = rein_strdup(path)) || (slash && !dir)) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto fail;
    }
    if (access(path, F_OK) == 0 ? access(path, W_OK) != 0 : access(dir ? dir : ".", W_OK) != 0) {
        rein_error_set(err, REIN_EINVAL, "cannot write the recording %s: %s", path,
                       strerror(errno));
        goto fail;
    }
    rein_free(dir);
    pthread_mutex_init(&rec->mu, NULL);
    return rec;
fail:
    rein_free(dir);
    if (rec)
        rein_free(rec->path);
    rein_free(rec);
    return NULL;
}

void rein__recorder_close(struct rein__recorder *rec)
{
    if (!rec)
        return;
    if (rec->f)
        fclose(rec->f);
    rein_free(rec->path);
    pthread_mutex_destroy(&rec->mu);
    rein_free(rec);
}

/* Replaces every occurrence of secret in b (a key shorter than 4 bytes is not a key). */
static rein_err scrub(struct rein_buf *b, const char *secret)
{
    static const char mask[] = "[REDACTED]";
    size_t n = secret ? strlen(secret) : 0;
    struct rein_buf out;
    const char *p, *hit;
    rein_err rc = REIN_OK;

    if (n < 4 || !memmem(b->ptr, b->len, secret, n))
        return REIN_OK;
    rein_buf_init(&out, 0);
    p = b->ptr;
    while (!rc && (hit = memmem(p, (size_t)(b->ptr + b->len - p), secret, n))) {
        rc = rein_buf_add(&out, p, (size_t)(hit - p));
        if (!rc)
            rc = rein_buf_add(&out, mask, sizeof(mask) - 1);
        p = hit + n;
    }
    if (!rc)
        rc = rein_buf_add(&out, p, (size_t)(b->ptr + b->len - p));
    if (rc) {
        rein_buf_release(&out);
        return rc;
    }
    rein_buf_release(b);
    *b = out;
    return REIN_OK;
}

/* True for replies that are bytes, not text (they are kept as base64). */
static bool binary_type(const char *content_type)
{
    return content_type && strncasecmp(content_type, "application/vnd.amazon.eventstream", 34) == 0;
}

rein_err rein__recorder_write(struct rein__recorder *rec, const rein_provider *p, const char *body,
                              size_t body_len, long status, const char *content_type,
                              const char *resp, size_t resp_len)
{
    struct rein_buf line;
    struct rein_jw w;
    char ts[REIN_TIME_ISO_LEN];
    rein_err rc;
    json_t *req = rein_json_parse(body, body_len, 0, NULL);

    rein_buf_init(&line, 0);
    rein_jw_init(&w, &line);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "v");
    rein_jw_int(&w, 1);
    rein_jw_key(&w, "time");
    rein_jw_str(&w, rein_time_iso(rein_wall_ms(), ts));
    rein_jw_key(&w, "provider");
    rein_jw_str(&w, p->cfg.preset->name);
    rein_jw_key(&w, "wire");
    rein_jw_str(&w, p->wire->name);
    rein_jw_key(&w, "model");
    rein_jw_str(&w, p->cfg.model);
    rein_jw_key(&w, "endpoint");
    rein_jw_str(&w, p->endpoint);
    rein_jw_key(&w, "request");
    if (req)
        rein_jw_raw(&w, body, body_len);
    else
        rein_jw_strn(&w, body, body_len);
    rein_jw_key(&w, "status");
    rein_jw_int(&w, status);
    rein_jw_key(&w, "content_type");
    rein_jw_str(&w, content_type ? content_type : "");
    rein_jw_key(&w, "response");
    if (binary_type(content_type)) {
        char *enc = rein__base64((const unsigned char *)resp, resp_len);
        rein_jw_str(&w, "");
        rein_jw_key(&w, "response_base64");
        if (enc)
            rein_jw_str(&w, enc);
        else
            w.err = REIN_ENOMEM;
        rein_free(enc);
    } else {
        rein_jw_strn(&w, resp, resp_len);
    }
    rein_jw_obj_end(&w);
    json_decref(req);
    rc = rein_jw_finish(&w);
    if (!rc)
        rc = scrub(&line, p->cfg.api_key);
    if (!rc)
        rc = rein_buf_addch(&line, '\n');
    if (!rc) {
        pthread_mutex_lock(&rec->mu);
        if (!rec->f)
            rec->f = fopen(rec->path, "a");
        if (!rec->f || fwrite(line.ptr, 1, line.len, rec->f) != line.len || fflush(rec->f) != 0)
            rc = REIN_EIO;
        pthread_mutex_unlock(&rec->mu);
    }
    rein_buf_release(&line);
    return rc;
}

/* ---------------------------------------------------------------------------------------
 * Replay
 */

struct rein__replay {
    json_t *entries; /* array of exchange objects */
    size_t next;
    char *path;
    pthread_mutex_t mu;
};

struct rein__replay *rein__replay_open(const char *path, rein_error *err)
{
    struct rein__replay *rp = rein_calloc(1, sizeof(*rp));
    FILE *f = NULL;
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t n;

    if (!rp || !(rp->entries = json_array()) || !(rp->path = rein_strdup(path)))
        goto nomem;
    f = fopen(path, "rb");
    if (!f) {
        rein_error_set(err, REIN_EIO, "cannot open the recording %s: %s", path, strerror(errno));
        goto fail;
    }
    while ((n = getline(&line, &cap, f)) >= 0) {
        rein_error jerr;
        json_t *v;
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        if (n == 0)
            continue;
        rein_error_clear(&jerr);
        v = rein_json_parse(line, (size_t)n, 0, &jerr);
        if (!json_is_object(v) || !json_is_string(json_object_get(v, "response")) ||
            !json_object_get(v, "request")) {
            rein_error_set(err, REIN_EPARSE, "%s:%zu: not a recorded exchange%s%s", path, lineno,
                           v ? "" : ": ", v ? "" : jerr.msg);
            json_decref(v);
            goto fail;
        }
        if (json_is_string(json_object_get(v, "response_base64"))) {
            /* A binary reply: its bytes, unchecked (they are no UTF-8), as the response. */
            const json_t *enc = json_object_get(v, "response_base64");
            size_t raw_len = 0;
            char *raw =
                rein__base64_decode(json_string_value(enc), json_string_length(enc), &raw_len);
            bool ok =
                raw && json_object_set_new(v, "response", json_stringn_nocheck(raw, raw_len)) == 0;
            rein_free(raw);
            if (!ok) {
                rein_error_set(err, REIN_EPARSE, "%s:%zu: response_base64 is not base64", path,
                               lineno);
                json_decref(v);
                goto fail;
            }
        }
        if (json_array_append_new(rp->entries, v) != 0)
            goto nomem;
    }
    free(line);
    fclose(f);
    pthread_mutex_init(&rp->mu, NULL);
    return rp;
nomem:
    rein_error_set(err, REIN_ENOMEM, "out of memory");
fail:
    free(line);
    if (f)
        fclose(f);
    if (rp) {
        json_decref(rp->entries);
        rein_free(rp->path);
        rein_free(rp);
    }
    return NULL;
}

void rein__replay_close(struct rein__replay *rp)
{
    if (!rp)
        return;
    json_decref(rp->entries);
    rein_free(rp->path);
    pthread_mutex_destroy(&rp->mu);
    rein_free(rp);
}

rein_err rein__replay_peek(struct rein__replay *rp, const char **wire, char **model)
{
    const json_t *e = json_array_get(rp->entries, 0);

    if (!e)
        return REIN_ENOTFOUND;
    *wire = json_string_value(json_object_get(e, "wire"));
    if (!*model && json_is_string(json_object_get(e, "model"))) {
        *model = rein_strdup(json_string_value(json_object_get(e, "model")));
        if (!*model)
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

/* A short rendering of a value for a message. */
static void brief(const json_t *v, char *out, size_t size)
{
    char *s = v ? rein_json_dumps(v) : NULL;

    if (!s) {
        snprintf(out, size, "%s", v ? "?" : "nothing");
        return;
    }
    if (strlen(s) > 60)
        snprintf(out, size, "%.57s...", s);
    else
        snprintf(out, size, "%s", s);
    rein_free(s);
}

static rein_err path_push(struct rein_buf *path, const char *key)
{
    rein_err rc = rein_buf_addch(path, '/');

    for (const char *k = key; !rc && *k; k++) {
        if (*k == '~')
            rc = rein_buf_add(path, "~0", 2);
        else if (*k == '/')
            rc = rein_buf_add(path, "~1", 2);
        else
            rc = rein_buf_addch(path, *k);
    }
    return rc;
}

/* The first difference between recorded a and sent b: false and msg filled when they differ. */
static bool same(const json_t *a, const json_t *b, struct rein_buf *path, char *msg, size_t size)
{
    char ra[80], rb[80];
    size_t len = path->len;

    if (json_typeof(a) == JSON_OBJECT && json_typeof(b) == JSON_OBJECT) {
        const char *key;
        json_t *va;
        json_object_foreach((json_t *)a, key, va)
        {
            json_t *vb = json_object_get(b, key);
            if (path_push(path, key) != REIN_OK)
                return false;
            if (!vb) {
                brief(va, ra, sizeof(ra));
                snprintf(msg, size, "%s: recorded %s, got nothing", path->ptr, ra);
                return false;
            }
            if (!same(va, vb, path, msg, size))
                return false;
            rein_buf_truncate(path, len);
        }
        json_object_foreach((json_t *)b, key, va)
        {
            if (!json_object_get(a, key)) {
                (void)path_push(path, key);
                brief(va, rb, sizeof(rb));
                snprintf(msg, size, "%s: not in the recording, got %s", path->ptr, rb);
                return false;
            }
        }
        return true;
    }
    if (json_typeof(a) == JSON_ARRAY && json_typeof(b) == JSON_ARRAY) {
        size_t na = json_array_size(a), nb = json_array_size(b);
        for (size_t i = 0; i < na && i < nb; i++) {
            char idx[24];
            snprintf(idx, sizeof(idx), "%zu", i);
            if (path_push(path, idx) != REIN_OK)
                return false;
            if (!same(json_array_get(a, i), json_array_get(b, i), path, msg, size))
                return false;
            rein_buf_truncate(path, len);
        }
        if (na != nb) {
            snprintf(msg, size, "%s: recorded %zu items, got %zu", path->len ? path->ptr : "/", na,
                     nb);
            return false;
        }
        return true;
    }
    if (json_equal((json_t *)a, (json_t *)b))
        return true;
    brief(a, ra, sizeof(ra));
    brief(b, rb, sizeof(rb));
    snprintf(msg, size, "%s: recorded %s, got %s", path->len ? path->ptr : "/", ra, rb);
    return false;
}

rein_err rein__replay_next(struct rein__replay *rp, const char *body, size_t body_len, long *status,
                           const char **content_type, const char **resp, size_t *resp_len,
                           const char **wire, rein_error *err)
{
    const json_t *e, *recorded;
    json_t *sent;
    struct rein_buf path;
    char msg[200];
    size_t n;
    rein_err rc = REIN_OK;

    pthread_mutex_lock(&rp->mu);
    n = rp->next;
    e = json_array_get(rp->entries, n);
    if (!e) {
        pthread_mutex_unlock(&rp->mu);
        return rein_error_set(err, REIN_EINVAL,
                              "replay: request %zu has no recorded exchange (%s holds %zu)", n + 1,
                              rp->path, json_array_size(rp->entries));
    }
    rp->next++;
    pthread_mutex_unlock(&rp->mu);
    recorded = json_object_get(e, "request");
    sent = rein_json_parse(body, body_len, 0, NULL);
    if (!sent)
        return rein_error_set(err, REIN_EINTERNAL, "replay: the request body is not JSON");
    rein_buf_init(&path, 0);
    if (!same(recorded, sent, &path, msg, sizeof(msg)))
        rc = rein_error_set(err, REIN_EINVAL, "replay: request %zu differs from %s at %s", n + 1,
                            rp->path, msg);
    rein_buf_release(&path);
    json_decref(sent);
    if (rc)
        return rc;
    *status = (long)json_integer_value(json_object_get(e, "status"));
    if (*status == 0)
        *status = 200;
    *content_type = json_string_value(json_object_get(e, "content_type"));
    if (!*content_type)
        *content_type = "";
    *resp = json_string_value(json_object_get(e, "response"));
    *resp_len = json_string_length(json_object_get(e, "response"));
    *wire = json_string_value(json_object_get(e, "wire"));
    return REIN_OK;
}
