/*
 * Google Application Default Credentials for the vertex preset (docs/decisions/0033): when no
 * access token is given, the credentials file is GOOGLE_APPLICATION_CREDENTIALS, else gcloud's
 * (CLOUDSDK_CONFIG or ~/.config/gcloud, application_default_credentials.json), as Google's
 * client libraries find it. Two kinds:
 *
 *   - "authorized_user" (gcloud auth application-default login): its refresh_token is
 *     exchanged at token_uri (default https://oauth2.googleapis.com/token) with client_id and
 *     client_secret, grant_type refresh_token;
 *   - "service_account": a JWT (RS256, signed with private_key by rein__jwt_sign, kid
 *     private_key_id) claiming iss client_email, scope cloud-platform and aud token_uri for an
 *     hour, exchanged with grant_type urn:ietf:params:oauth:grant-type:jwt-bearer.
 *
 * token_uri comes from the file, so a file pointing elsewhere (a test, a proxy) is followed as
 * the libraries follow it. The answer {"access_token", "expires_in", "token_type"} is parsed by
 * rein__gcp_token_parse (a libFuzzer target); the token is kept until five minutes before it
 * expires (half its life for short ones) and fetched again by the request that finds it stale.
 * Secrets are wiped when freed and never put in a message.
 */
#include "provider_int.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define WHERE       "providers"
#define ANSWER_MAX  ((size_t)64 * 1024)
#define FILE_MAX    ((size_t)256 * 1024)
#define DEFAULT_URI "https://oauth2.googleapis.com/token"
#define SCOPE       "https://www.googleapis.com/auth/cloud-platform"
#define MARGIN_MS   ((int64_t)5 * 60 * 1000)

enum gcp_kind { GCP_USER = 1, GCP_SERVICE };

struct rein__gcp {
    enum gcp_kind kind;
    char *client_id, *client_secret, *refresh_token; /* authorized_user */
    char *email, *key_pem, *key_id;                  /* service_account */
    char *token_uri, *path, *project;
    pthread_mutex_t lock; /* guards token, expires_ms, refresh_at_ms */
    char *token;
    int64_t expires_ms, refresh_at_ms;
};

static void wipe_free(char *s)
{
    if (s) {
        memset(s, 0, strlen(s));
        rein_free(s);
    }
}

void rein__gcp_free(struct rein__gcp *g)
{
    if (!g)
        return;
    rein_free(g->client_id);
    wipe_free(g->client_secret);
    wipe_free(g->refresh_token);
    rein_free(g->email);
    wipe_free(g->key_pem);
    rein_free(g->key_id);
    rein_free(g->token_uri);
    rein_free(g->path);
    rein_free(g->project);
    wipe_free(g->token);
    pthread_mutex_destroy(&g->lock);
    rein_free(g);
}

const char *rein__gcp_project(const struct rein__gcp *g)
{
    return g ? g->project : NULL;
}

/* ---- the token endpoint's answer ----------------------------------------------------------- */

rein_err rein__gcp_token_parse(const char *text, size_t len, char **token, int64_t *expires_in,
                               rein_error *err)
{
    json_t *doc;
    const char *t, *type;
    const json_t *exp;

    *token = NULL;
    *expires_in = 0;
    if (len > ANSWER_MAX)
        return rein_error_set(err, REIN_EPARSE, "the token answer is over %zu bytes", ANSWER_MAX);
    doc = rein_json_parse(text, len, 0, NULL);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return rein_error_set(err, REIN_EPARSE, "the token answer is not a JSON object");
    }
    if (json_is_string(json_object_get(doc, "error"))) {
        /* OAuth's error words (invalid_grant, …) and its description are not secrets. */
        rein_error_set(err, REIN_EPARSE, "the token endpoint refused: %.64s%s%.200s",
                       json_string_value(json_object_get(doc, "error")),
                       json_is_string(json_object_get(doc, "error_description")) ? ": " : "",
                       json_is_string(json_object_get(doc, "error_description"))
                           ? json_string_value(json_object_get(doc, "error_description"))
                           : "");
        json_decref(doc);
        return REIN_EPARSE;
    }
    t = json_string_value(json_object_get(doc, "access_token"));
    type = json_string_value(json_object_get(doc, "token_type"));
    exp = json_object_get(doc, "expires_in");
    if (!t || !t[0] || strpbrk(t, "\r\n")) {
        json_decref(doc);
        return rein_error_set(err, REIN_EPARSE, "the token answer has no usable access_token");
    }
    if (type && strcasecmp(type, "Bearer") != 0) {
        rein_error_set(err, REIN_EPARSE, "the token answer's token_type is %.32s, not Bearer",
                       type);
        json_decref(doc);
        return REIN_EPARSE;
    }
    if (exp && (!json_is_number(exp) || json_number_value(exp) < 1 ||
                json_number_value(exp) > 7 * 24 * 3600)) {
        json_decref(doc);
        return rein_error_set(err, REIN_EPARSE,
                              "the token answer's expires_in is not a number of seconds");
    }
    *expires_in = exp ? (int64_t)json_number_value(exp) : 3600;
    *token = rein_strdup(t);
    json_decref(doc);
    return *token ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
}

/* ---- the assertion of a service account ---------------------------------------------------- */

/* The signed JWT header.claims.signature for the service account, into b. */
static rein_err assertion(const struct rein__gcp *g, time_t now, struct rein_buf *b,
                          rein_error *err)
{
    json_t *head = json_pack("{s:s, s:s?}", "typ", "JWT", "kid", g->key_id);
    json_t *claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", g->email, "scope", SCOPE, "aud",
                               g->token_uri, "iat", (json_int_t)now, "exp", (json_int_t)now + 3600);
    rein_err rc;

    if (!head || !claims)
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    else
        rc = rein__jwt_sign("RS256", g->key_pem, head, claims, b, err);
    if (rc == REIN_EINVAL)
        rein_error_prefix(err, "%s: private_key: ", g->path);
    json_decref(head);
    json_decref(claims);
    return rc;
}

/* ---- asking the token endpoint ------------------------------------------------------------- */

/* Appends "&name=value" (the first without '&'), the value form-encoded. */
static rein_err form(struct rein_buf *b, CURL *c, const char *name, const char *value)
{
    char *v = curl_easy_escape(c, value, 0);
    rein_err rc;

    if (!v)
        return REIN_ENOMEM;
    rc = rein_buf_addf(b, "%s%s=%s", b->len ? "&" : "", name, v);
    memset(v, 0, strlen(v));
    curl_free(v);
    return rc;
}

/* Exchanges the file's credentials for an access token (*token new, *expires_in seconds). */
static rein_err fetch(const struct rein__gcp *g, char **token, int64_t *expires_in, rein_error *err)
{
    static const char *const headers[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
    CURL *c = curl_easy_init(); /* for form encoding only */
    struct rein_buf body, jwt, answer;
    long status = 0;
    rein_err rc = c ? REIN_OK : REIN_ENOMEM;

    rein_buf_init(&body, 0);
    rein_buf_init(&jwt, 0);
    rein_buf_init(&answer, 0);
    if (!rc && g->kind == GCP_USER) {
        rc = form(&body, c, "grant_type", "refresh_token");
        if (!rc)
            rc = form(&body, c, "client_id", g->client_id);
        if (!rc)
            rc = form(&body, c, "client_secret", g->client_secret);
        if (!rc)
            rc = form(&body, c, "refresh_token", g->refresh_token);
    } else if (!rc) {
        rc = assertion(g, time(NULL), &jwt, err);
        if (!rc)
            rc = rein_buf_addch(&jwt, '\0');
        if (!rc)
            rc = form(&body, c, "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer");
        if (!rc)
            rc = form(&body, c, "assertion", jwt.ptr);
    }
    curl_easy_cleanup(c);
    if (!rc)
        rc = rein_buf_addch(&body, '\0');
    if (!rc)
        rc = rein__cred_http("POST", g->token_uri, headers, body.ptr, 30000, &status, &answer, err);
    if (!rc) {
        rc =
            rein__gcp_token_parse(answer.ptr ? answer.ptr : "", answer.len, token, expires_in, err);
        if (!rc && status != 200) {
            wipe_free(*token);
            *token = NULL;
            rc = rein_error_set(err, REIN_EINVAL, "POST %s answered %ld", g->token_uri, status);
        } else if (rc && status != 200) {
            rein_error_prefix(err, "POST %s answered %ld: ", g->token_uri, status);
        }
    }
    if (body.ptr)
        memset(body.ptr, 0, body.len);
    if (jwt.ptr)
        memset(jwt.ptr, 0, jwt.len);
    if (answer.ptr)
        memset(answer.ptr, 0, answer.len);
    rein_buf_release(&body);
    rein_buf_release(&jwt);
    rein_buf_release(&answer);
    if (rc == REIN_ENOMEM)
        rein_error_set(err, rc, "out of memory");
    return rc;
}

/* Under g->lock: takes a fresh token. */
static void adopt(struct rein__gcp *g, char *token, int64_t expires_in)
{
    int64_t now = rein_now_ms(), life = expires_in * 1000;

    wipe_free(g->token);
    g->token = token;
    g->expires_ms = now + life;
    g->refresh_at_ms = g->expires_ms - (life / 2 < MARGIN_MS ? life / 2 : MARGIN_MS);
}

rein_err rein__gcp_header(struct rein__gcp *g, struct curl_slist **headers)
{
    rein_err rc = REIN_OK;
    char *line;

    pthread_mutex_lock(&g->lock);
    if (!g->token || rein_now_ms() >= g->refresh_at_ms) {
        rein_error why;
        char *token;
        int64_t expires_in;
        rein_error_clear(&why);
        if (fetch(g, &token, &expires_in, &why) == REIN_OK)
            adopt(g, token, expires_in);
        else
            rein_log(REIN_LOG_WARN, WHERE,
                     "the access token from the credentials in %s could not be refreshed: %s",
                     g->path, why.msg);
    }
    if (!g->token || rein_now_ms() >= g->expires_ms) {
        rc = REIN_EINVAL;
    } else {
        line = rein_asprintf("Authorization: Bearer %s", g->token);
        rc = line ? rein__header_add(headers, line) : REIN_ENOMEM;
        wipe_free(line);
    }
    pthread_mutex_unlock(&g->lock);
    return rc;
}

/* ---- the credentials file ------------------------------------------------------------------ */

static rein_err take(const json_t *doc, const char *key, char **out)
{
    const char *v = json_string_value(json_object_get(doc, key));

    *out = v && v[0] ? rein_strdup(v) : NULL;
    return !v || !v[0] || *out ? REIN_OK : REIN_ENOMEM;
}

/* The file Google's libraries read: GOOGLE_APPLICATION_CREDENTIALS, else gcloud's (NULL when
 * there is none: no ADC). */
static char *adc_path(void)
{
    const char *v = getenv("GOOGLE_APPLICATION_CREDENTIALS");
    const char *dir = getenv("CLOUDSDK_CONFIG"), *home = getenv("HOME");
    char *p;

    if (v && v[0])
        return rein_strdup(v);
    if (dir && dir[0])
        p = rein_asprintf("%s/application_default_credentials.json", dir);
    else if (home && home[0])
        p = rein_asprintf("%s/.config/gcloud/application_default_credentials.json", home);
    else
        return NULL;
    if (p && access(p, R_OK) != 0) {
        rein_free(p);
        p = NULL;
    }
    return p;
}

static rein_err read_file(struct rein__gcp *g, rein_error *err)
{
    char *text = NULL;
    size_t len = 0;
    json_t *doc;
    const char *type;
    rein_err rc = rein_read_file(g->path, FILE_MAX, &text, &len, err);

    if (rc)
        return rc;
    doc = rein_json_parse(text, len, 0, NULL);
    memset(text, 0, len);
    rein_free(text);
    type = json_string_value(json_object_get(doc, "type"));
    if (!json_is_object(doc) || !type) {
        json_decref(doc);
        return rein_error_set(err, REIN_EINVAL, "%s: not a Google credentials file (no \"type\")",
                              g->path);
    }
    if (!strcmp(type, "authorized_user")) {
        g->kind = GCP_USER;
        rc = take(doc, "client_id", &g->client_id);
        if (!rc)
            rc = take(doc, "client_secret", &g->client_secret);
        if (!rc)
            rc = take(doc, "refresh_token", &g->refresh_token);
        if (!rc)
            rc = take(doc, "quota_project_id", &g->project);
        if (!rc && (!g->client_id || !g->client_secret || !g->refresh_token))
            rc = rein_error_set(err, REIN_EINVAL,
                                "%s: an authorized_user file needs client_id, client_secret and "
                                "refresh_token",
                                g->path);
    } else if (!strcmp(type, "service_account")) {
        g->kind = GCP_SERVICE;
        rc = take(doc, "client_email", &g->email);
        if (!rc)
            rc = take(doc, "private_key", &g->key_pem);
        if (!rc)
            rc = take(doc, "private_key_id", &g->key_id);
        if (!rc)
            rc = take(doc, "project_id", &g->project);
        if (!rc && (!g->email || !g->key_pem))
            rc = rein_error_set(err, REIN_EINVAL,
                                "%s: a service_account file needs client_email and private_key",
                                g->path);
    } else {
        rc = rein_error_set(err, REIN_EINVAL,
                            "%s: credentials of type \"%.40s\" are not supported (authorized_user "
                            "and service_account are)",
                            g->path, type);
    }
    if (!rc)
        rc = take(doc, "token_uri", &g->token_uri);
    if (!rc && !g->token_uri && !(g->token_uri = rein_strdup(DEFAULT_URI)))
        rc = REIN_ENOMEM;
    json_decref(doc);
    if (rc == REIN_ENOMEM)
        rein_error_set(err, rc, "out of memory");
    return rc;
}

rein_err rein__gcp_load(struct rein__gcp **out, rein_error *err)
{
    struct rein__gcp *g;
    char *token = NULL;
    int64_t expires_in = 0;
    rein_err rc;

    *out = NULL;
    g = rein_calloc(1, sizeof(*g));
    if (!g)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    pthread_mutex_init(&g->lock, NULL);
    g->path = adc_path();
    if (!g->path) {
        rein__gcp_free(g);
        return REIN_ENOTFOUND;
    }
    rc = read_file(g, err);
    if (rc == REIN_ENOTFOUND) /* a file that is named must be there */
        rc = REIN_EINVAL;
    /* The first token now: credentials that cannot get one fail when the provider is made. */
    if (!rc)
        rc = fetch(g, &token, &expires_in, err);
    if (rc) {
        rein_error_prefix(err, "Application Default Credentials: ");
        rein__gcp_free(g);
        return rc;
    }
    adopt(g, token, expires_in);
    *out = g;
    return REIN_OK;
}
