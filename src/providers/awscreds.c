/*
 * AWS credentials that expire and are fetched again (docs/decisions/0033): the sources of the
 * AWS SDKs' default chain after the environment and the static keys of the shared files.
 *
 *   - Web identity (EKS IRSA, GitHub Actions OIDC): AWS_WEB_IDENTITY_TOKEN_FILE and
 *     AWS_ROLE_ARN (AWS_ROLE_SESSION_NAME optional), or a profile's web_identity_token_file and
 *     role_arn: the token is exchanged at STS (AssumeRoleWithWebIdentity, unsigned; the
 *     endpoint AWS_ENDPOINT_URL_STS, else https://sts.REGION.amazonaws.com) for credentials
 *     in an XML answer.
 *   - credential_process, a profile setting: the command runs through /bin/sh -c (as the Go and
 *     Java SDKs run it) and prints {"Version": 1, "AccessKeyId", "SecretAccessKey",
 *     "SessionToken", "Expiration"} on stdout.
 *   - The container endpoint (ECS, EKS Pod Identity): AWS_CONTAINER_CREDENTIALS_RELATIVE_URI on
 *     http://169.254.170.2, or AWS_CONTAINER_CREDENTIALS_FULL_URI (https, or http to a loopback
 *     or the container hosts' link-local addresses only, as the SDKs allow), with
 *     AWS_CONTAINER_AUTHORIZATION_TOKEN or the contents of
 *     AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE as its Authorization header. The answer is
 *     {"AccessKeyId", "SecretAccessKey", "Token", "Expiration"}.
 *   - EC2 instance metadata, IMDSv2 only: PUT /latest/api/token with
 *     X-aws-ec2-metadata-token-ttl-seconds, then with X-aws-ec2-metadata-token the role from
 *     GET /latest/meta-data/iam/security-credentials/ and its credentials from
 *     GET /latest/meta-data/iam/security-credentials/ROLE ({"Code": "Success", …}). The endpoint
 *     is AWS_EC2_METADATA_SERVICE_ENDPOINT (default http://169.254.169.254); it is not asked
 *     when AWS_EC2_METADATA_DISABLED is true.
 *
 * Every answer is untrusted bytes: read with a size bound and parsed by rein__aws_creds_parse
 * (a libFuzzer target). The secrets are wiped when released and never put in a message.
 */
#include "provider_int.h"

#include <rein/proc.h>

#include <curl/curl.h>
#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define WHERE      "providers"
#define ANSWER_MAX ((size_t)64 * 1024)
#define IMDS_TTL   "21600"

static void wipe_free(char *s)
{
    if (s) {
        memset(s, 0, strlen(s));
        rein_free(s);
    }
}

void rein__aws_creds_release(struct rein__aws_creds *c)
{
    wipe_free(c->key_id);
    wipe_free(c->secret);
    wipe_free(c->token);
    memset(c, 0, sizeof(*c));
}

void rein__aws_source_release(struct rein__aws_source *s)
{
    rein_free(s->process);
    rein_free(s->url);
    wipe_free(s->auth);
    rein_free(s->auth_file);
    rein_free(s->imds);
    rein_free(s->role_arn);
    rein_free(s->session);
    memset(s, 0, sizeof(*s));
}

const char *rein__aws_source_name(const struct rein__aws_source *s)
{
    switch (s->kind) {
    case REIN__AWS_PROCESS:
        return "credential_process";
    case REIN__AWS_CONTAINER:
        return "the container credentials endpoint";
    case REIN__AWS_IMDS:
        return "the EC2 instance metadata service";
    case REIN__AWS_WEB_IDENTITY:
        return "STS AssumeRoleWithWebIdentity";
    default:
        return "static credentials";
    }
}

/* ---- parsing ------------------------------------------------------------------------------ */

/* Seconds since the epoch of an ISO 8601 UTC time ("2026-11-26T10:00:00Z", fractions and
 * "+00:00" allowed); -1 when it is not one. */
static int64_t iso8601(const char *s)
{
    struct tm tm;
    int n = 0, y, mo, d, h, mi, sec;
    const char *rest;

    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19)
        return -1;
    rest = s + n;
    if (*rest == '.')
        rest += 1 + strspn(rest + 1, "0123456789");
    if (strcmp(rest, "Z") != 0 && strcmp(rest, "+00:00") != 0)
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return -1;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    return (int64_t)timegm(&tm);
}

static rein_err take_str(const json_t *doc, const char *key, char **out)
{
    const char *v = json_string_value(json_object_get(doc, key));

    if (!v || !v[0])
        return REIN_OK;
    *out = rein_strdup(v);
    return *out ? REIN_OK : REIN_ENOMEM;
}

rein_err rein__aws_creds_parse(const char *text, size_t len, struct rein__aws_creds *out,
                               rein_error *err)
{
    json_t *doc;
    const json_t *v;
    rein_err rc;

    memset(out, 0, sizeof(*out));
    if (len > ANSWER_MAX)
        return rein_error_set(err, REIN_EPARSE, "the credentials answer is over %zu bytes",
                              ANSWER_MAX);
    doc = rein_json_parse(text, len, 0, NULL);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return rein_error_set(err, REIN_EPARSE, "the credentials answer is not a JSON object");
    }
    v = json_object_get(doc, "Version");
    if (v && json_number_value(v) != 1.0) {
        rein_error_set(err, REIN_EPARSE, "the credentials answer has Version %.16g, not 1",
                       json_number_value(v));
        json_decref(doc);
        return REIN_EPARSE;
    }
    v = json_object_get(doc, "Code");
    if (v && (!json_is_string(v) || strcmp(json_string_value(v), "Success") != 0)) {
        rein_error_set(err, REIN_EPARSE, "the credentials answer says Code %.64s",
                       json_is_string(v) ? json_string_value(v) : "(not a string)");
        json_decref(doc);
        return REIN_EPARSE;
    }
    rc = take_str(doc, "AccessKeyId", &out->key_id);
    if (!rc)
        rc = take_str(doc, "SecretAccessKey", &out->secret);
    if (!rc)
        rc = take_str(doc, "SessionToken", &out->token);
    if (!rc && !out->token)
        rc = take_str(doc, "Token", &out->token);
    v = json_object_get(doc, "Expiration");
    if (!rc && json_is_string(v)) {
        int64_t at = iso8601(json_string_value(v));
        if (at < 0)
            rc = rein_error_set(err, REIN_EPARSE,
                                "the credentials answer's Expiration is not an ISO 8601 time");
        else
            out->expires_ms = at * 1000;
    } else if (!rc && v && !json_is_null(v)) {
        rc =
            rein_error_set(err, REIN_EPARSE, "the credentials answer's Expiration is not a string");
    }
    json_decref(doc);
    if (!rc && (!out->key_id || !out->secret))
        rc = rein_error_set(err, REIN_EPARSE,
                            "the credentials answer has no AccessKeyId or SecretAccessKey");
    if (rc == REIN_ENOMEM)
        rein_error_set(err, rc, "out of memory");
    if (rc)
        rein__aws_creds_release(out);
    return rc;
}

/* ---- STS's XML answer ---------------------------------------------------------------------- */

enum sts_field { F_NONE, F_KEY, F_SECRET, F_TOKEN, F_EXPIRATION, F_CODE, F_MESSAGE, F_COUNT };

struct sts_reader {
    struct rein__xml_guard x; /* first: the handlers get a pointer to it */
    int depth;
    bool in_credentials, in_error;
    enum sts_field field;
    struct rein_buf text[F_COUNT];
};

static void XMLCALL sts_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    static const char *const names[F_COUNT] = {
        "", "AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration", "Code", "Message"};
    struct sts_reader *r = ud;

    (void)attrs;
    r->depth++;
    r->field = F_NONE;
    if (!strcmp(name, "Credentials"))
        r->in_credentials = true;
    else if (!strcmp(name, "Error"))
        r->in_error = true;
    for (int f = F_KEY; f < F_COUNT; f++) {
        bool want = f >= F_CODE ? r->in_error : r->in_credentials;
        if (want && !strcmp(name, names[f]))
            r->field = (enum sts_field)f;
    }
}

static void XMLCALL sts_end(void *ud, const XML_Char *name)
{
    struct sts_reader *r = ud;

    r->depth--;
    r->field = F_NONE;
    if (!strcmp(name, "Credentials"))
        r->in_credentials = false;
    else if (!strcmp(name, "Error"))
        r->in_error = false;
}

static void XMLCALL sts_text(void *ud, const XML_Char *s, int len)
{
    struct sts_reader *r = ud;

    /* A failed append loses a field, which then reads as missing. */
    if (r->field != F_NONE && r->text[r->field].len < 4096 &&
        rein_buf_add(&r->text[r->field], s, (size_t)len) != REIN_OK)
        rein_buf_reset(&r->text[r->field]);
}

/* The field's text (NUL-terminated in place), or NULL when it is empty. */
static const char *sts_field(struct sts_reader *r, enum sts_field f)
{
    if (!r->text[f].len || rein_buf_addch(&r->text[f], '\0') != REIN_OK)
        return NULL;
    return r->text[f].ptr;
}

rein_err rein__aws_sts_parse(const char *text, size_t len, struct rein__aws_creds *out,
                             rein_error *err)
{
    struct sts_reader r;
    const char *v;
    rein_err rc = REIN_OK;

    memset(out, 0, sizeof(*out));
    memset(&r, 0, sizeof(r));
    if (len > ANSWER_MAX)
        return rein_error_set(err, REIN_EPARSE, "the STS answer is over %zu bytes", ANSWER_MAX);
    if (!rein__xml_start(&r.x, sts_start, sts_end, sts_text)) {
        XML_ParserFree(r.x.parser);
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    for (int f = 0; f < F_COUNT; f++)
        rein_buf_init(&r.text[f], 0);
    if (XML_Parse(r.x.parser, text, (int)len, XML_TRUE) == XML_STATUS_ERROR || r.x.entity)
        rc = rein_error_set(err, REIN_EPARSE, "the STS answer is not XML STS writes (%s)",
                            r.x.entity ? "an entity declaration"
                                       : XML_ErrorString(XML_GetErrorCode(r.x.parser)));
    if (!rc && (v = sts_field(&r, F_CODE)) != NULL) {
        const char *msg = sts_field(&r, F_MESSAGE);
        rc = rein_error_set(err, REIN_EPARSE, "STS refused: %.64s%s%.160s", v, msg ? ": " : "",
                            msg ? msg : "");
    }
    if (!rc && (v = sts_field(&r, F_KEY)) && !(out->key_id = rein_strdup(v)))
        rc = REIN_ENOMEM;
    if (!rc && (v = sts_field(&r, F_SECRET)) && !(out->secret = rein_strdup(v)))
        rc = REIN_ENOMEM;
    if (!rc && (v = sts_field(&r, F_TOKEN)) && !(out->token = rein_strdup(v)))
        rc = REIN_ENOMEM;
    if (!rc && (v = sts_field(&r, F_EXPIRATION))) {
        int64_t at = iso8601(v);
        if (at < 0)
            rc = rein_error_set(err, REIN_EPARSE, "the STS answer's Expiration is not ISO 8601");
        out->expires_ms = at * 1000;
    }
    if (!rc && (!out->key_id || !out->secret))
        rc = rein_error_set(err, REIN_EPARSE, "the STS answer has no Credentials");
    for (int f = 0; f < F_COUNT; f++) {
        if (r.text[f].ptr)
            memset(r.text[f].ptr, 0, r.text[f].len);
        rein_buf_release(&r.text[f]);
    }
    XML_ParserFree(r.x.parser);
    if (rc == REIN_ENOMEM)
        rein_error_set(err, rc, "out of memory");
    if (rc)
        rein__aws_creds_release(out);
    return rc;
}

/* ---- credential_process ------------------------------------------------------------------- */

static rein_err from_process(const char *command, struct rein__aws_creds *out, rein_error *err)
{
    const char *argv[] = {"/bin/sh", "-c", command, NULL};
    struct rein_proc_run_opts o;
    struct rein_proc_result res;
    rein_err rc;

    memset(&o, 0, sizeof(o));
    o.proc.argv = argv;
    o.stdout_max = ANSWER_MAX + 1;
    o.stderr_max = 512;
    o.timeout_ms = 60000;
    o.kill_on_flood = true;
    rc = rein_proc_run(&o, &res, err);
    if (rc)
        return rc;
    if (res.timed_out || res.exit_code != 0) {
        /* Its stderr is the program's own words; it never holds the secrets it failed to
         * print. */
        rc = rein_error_set(err, REIN_EINVAL, "credential_process %s (%.200s)",
                            res.timed_out ? "did not finish in 60 s" : "failed",
                            res.err.len ? res.err.ptr : "no message");
    } else {
        rc = rein__aws_creds_parse(res.out.ptr ? res.out.ptr : "", res.out.len, out, err);
        if (rc)
            rein_error_prefix(err, "credential_process: ");
    }
    if (res.out.ptr)
        memset(res.out.ptr, 0, res.out.len);
    rein_proc_result_release(&res);
    return rc;
}

/* ---- HTTP sources ------------------------------------------------------------------------- */

struct answer {
    struct rein_buf *body;
    bool over;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct answer *a = ud;

    if (a->body->len + size * n > ANSWER_MAX) {
        a->over = true;
        return 0;
    }
    return rein_buf_add(a->body, p, size * n) == REIN_OK ? size * n : 0;
}

rein_err rein__cred_http(const char *method, const char *url, const char *const *headers,
                         const char *body, int64_t timeout_ms, long *status, struct rein_buf *out,
                         rein_error *err)
{
    CURL *c = curl_easy_init();
    struct curl_slist *list = NULL;
    struct answer a = {out, false};
    CURLcode cc;
    rein_err rc = c ? REIN_OK : REIN_ENOMEM;

    *status = 0;
    for (size_t i = 0; !rc && headers && headers[i]; i++)
        rc = rein__header_add(&list, headers[i]);
    if (rc) {
        curl_slist_free_all(list);
        curl_easy_cleanup(c);
        return rein_error_set(err, rc, "out of memory");
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body || !strcmp(method, "PUT")) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)(body ? strlen(body) : 0));
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms > 5000 ? 10000L : 1000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    cc = curl_easy_perform(c);
    if (cc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    curl_slist_free_all(list);
    curl_easy_cleanup(c);
    if (a.over)
        return rein_error_set(err, REIN_ETOOBIG, "%s %s: the answer is over %zu bytes", method, url,
                              ANSWER_MAX);
    if (cc != CURLE_OK)
        return rein_error_set(err, REIN_EIO, "%s %s: %s", method, url, curl_easy_strerror(cc));
    return REIN_OK;
}

/* The body of a 200 answer as a string (NUL-terminated in body, to release), else an error
 * naming the status. Short timeouts: a source that is not there must not hold a provider's
 * setup for long. */
static rein_err http_ok(const char *what, const char *method, const char *url,
                        const char *const *headers, struct rein_buf *body, rein_error *err)
{
    long status;
    rein_err rc;

    rein_buf_init(body, 0);
    rc = rein__cred_http(method, url, headers, NULL, 5000, &status, body, err);
    if (!rc && status != 200)
        rc = rein_error_set(err, REIN_EINVAL, "%s: %s %s answered %ld", what, method, url, status);
    if (!rc)
        rc = rein_buf_addch(body, '\0');
    if (rc)
        rein_buf_release(body);
    return rc;
}

/* True for a container endpoint URL the SDKs accept: https anywhere, http only to a loopback
 * address or the ECS and EKS link-local hosts. */
static bool container_url_ok(const char *url)
{
    static const char *const hosts[] = {"http://127.",
                                        "http://localhost:",
                                        "http://localhost/",
                                        "http://[::1]",
                                        "http://169.254.170.2:",
                                        "http://169.254.170.2/",
                                        "http://169.254.170.23:",
                                        "http://169.254.170.23/",
                                        "http://[fd00:ec2::23]"};

    if (!strncasecmp(url, "https://", 8))
        return true;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(hosts); i++)
        if (!strncasecmp(url, hosts[i], strlen(hosts[i])))
            return true;
    return false;
}

static rein_err from_container(const struct rein__aws_source *s, struct rein__aws_creds *out,
                               rein_error *err)
{
    char *auth = NULL, *line = NULL;
    const char *headers[2] = {NULL, NULL};
    struct rein_buf a;
    rein_err rc = REIN_OK;

    if (s->auth_file) {
        /* Read again each time: EKS rotates the token in the file. */
        rc = rein_read_file(s->auth_file, 16384, &auth, NULL, err);
        if (rc)
            return rein_error_prefix(err, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: ");
        auth[strcspn(auth, "\r\n")] = '\0';
    }
    if (auth || s->auth) {
        line = rein_asprintf("Authorization: %s", auth ? auth : s->auth);
        if (!line)
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        headers[0] = line;
    }
    if (!rc)
        rc = http_ok("the container credentials endpoint", "GET", s->url, headers, &a, err);
    if (!rc) {
        rc = rein__aws_creds_parse(a.ptr, a.len - 1, out, err);
        memset(a.ptr, 0, a.len);
        rein_buf_release(&a);
    }
    wipe_free(auth);
    wipe_free(line);
    return rc;
}

static rein_err from_imds(const struct rein__aws_source *s, struct rein__aws_creds *out,
                          rein_error *err)
{
    const char *put_headers[] = {"X-aws-ec2-metadata-token-ttl-seconds: " IMDS_TTL, NULL};
    const char *get_headers[2] = {NULL, NULL};
    char *url = rein_asprintf("%s/latest/api/token", s->imds), *token = NULL, *role = NULL;
    struct rein_buf a;
    rein_err rc = url ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");

    if (!rc)
        rc = http_ok("the EC2 instance metadata service (IMDSv2 token)", "PUT", url, put_headers,
                     &a, err);
    if (!rc) {
        token = rein_asprintf("X-aws-ec2-metadata-token: %s", a.ptr);
        rein_buf_release(&a);
        get_headers[0] = token;
        rein_free(url);
        url = rein_asprintf("%s/latest/meta-data/iam/security-credentials/", s->imds);
        rc = token && url ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    if (!rc)
        rc = http_ok("the EC2 instance metadata service (role)", "GET", url, get_headers, &a, err);
    if (!rc) {
        /* The first line names the instance profile's role. */
        a.ptr[strcspn(a.ptr, "\r\n")] = '\0';
        if (!a.ptr[0] || strchr(a.ptr, '/'))
            rc = rein_error_set(err, REIN_EINVAL,
                                "the EC2 instance metadata service names no IAM role: the "
                                "instance has no instance profile");
        else if (!(role = rein_strdup(a.ptr)))
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        rein_buf_release(&a);
    }
    if (!rc) {
        rein_free(url);
        url = rein_asprintf("%s/latest/meta-data/iam/security-credentials/%s", s->imds, role);
        rc = url ? http_ok("the EC2 instance metadata service", "GET", url, get_headers, &a, err)
                 : rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    if (!rc) {
        rc = rein__aws_creds_parse(a.ptr, a.len - 1, out, err);
        memset(a.ptr, 0, a.len);
        rein_buf_release(&a);
    }
    rein_free(url);
    rein_free(role);
    wipe_free(token);
    return rc;
}

/* Appends "&name=value", the value URL-encoded. */
static rein_err query(struct rein_buf *b, const char *name, const char *value)
{
    return rein_buf_addf(b, "&%s=", name) || rein__aws_uri_encode(b, value, strlen(value), false)
               ? REIN_ENOMEM
               : REIN_OK;
}

static rein_err from_web_identity(const struct rein__aws_source *s, struct rein__aws_creds *out,
                                  rein_error *err)
{
    static const char *const headers[] = {
        "Content-Type: application/x-www-form-urlencoded; charset=utf-8", NULL};
    char *token = NULL;
    struct rein_buf body, answer;
    long status = 0;
    rein_err rc;

    /* Read again each time: the orchestrator rotates the token in the file. */
    rc = rein_read_file(s->auth_file, 65536, &token, NULL, err);
    if (rc)
        return rein_error_prefix(err, "AWS_WEB_IDENTITY_TOKEN_FILE: ");
    token[strcspn(token, "\r\n")] = '\0';
    rein_buf_init(&body, 0);
    rein_buf_init(&answer, 0);
    rc = rein_buf_adds(&body, "Action=AssumeRoleWithWebIdentity&Version=2011-06-15");
    if (!rc)
        rc = query(&body, "RoleArn", s->role_arn);
    if (!rc)
        rc = query(&body, "RoleSessionName", s->session);
    if (!rc)
        rc = query(&body, "WebIdentityToken", token);
    if (!rc)
        rc = rein_buf_addch(&body, '\0');
    wipe_free(token);
    if (rc)
        rc = rein_error_set(err, rc, "out of memory");
    if (!rc)
        rc = rein__cred_http("POST", s->url, headers, body.ptr, 10000, &status, &answer, err);
    if (!rc) {
        rc = rein__aws_sts_parse(answer.ptr ? answer.ptr : "", answer.len, out, err);
        if (rc && status != 200)
            rein_error_prefix(err, "POST %s answered %ld: ", s->url, status);
    }
    if (body.ptr)
        memset(body.ptr, 0, body.len);
    if (answer.ptr)
        memset(answer.ptr, 0, answer.len);
    rein_buf_release(&body);
    rein_buf_release(&answer);
    return rc;
}

rein_err rein__aws_fetch(const struct rein__aws_source *s, struct rein__aws_creds *out,
                         rein_error *err)
{
    memset(out, 0, sizeof(*out));
    switch (s->kind) {
    case REIN__AWS_PROCESS:
        return from_process(s->process, out, err);
    case REIN__AWS_CONTAINER:
        return from_container(s, out, err);
    case REIN__AWS_IMDS:
        return from_imds(s, out, err);
    case REIN__AWS_WEB_IDENTITY:
        return from_web_identity(s, out, err);
    default:
        return rein_error_set(err, REIN_EINTERNAL, "no AWS credentials source to ask");
    }
}

/* ---- which source ------------------------------------------------------------------------- */

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

/* The web identity source from the environment or the profile's settings (NULL: none). */
static rein_err web_identity(const struct rein__aws_profile_web *pw, const char *region,
                             struct rein__aws_source *s)
{
    const char *file = env("AWS_WEB_IDENTITY_TOKEN_FILE"), *role = env("AWS_ROLE_ARN");
    const char *ep = env("AWS_ENDPOINT_URL_STS"), *session = env("AWS_ROLE_SESSION_NAME");

    if (!file || !role) {
        file = pw ? pw->token_file : NULL;
        role = pw ? pw->role_arn : NULL;
        session = pw && pw->session ? pw->session : session;
    }
    if (!file || !role)
        return REIN_ENOTFOUND;
    s->kind = REIN__AWS_WEB_IDENTITY;
    s->auth_file = rein_strdup(file);
    s->role_arn = rein_strdup(role);
    s->session = session ? rein_strdup(session) : rein_asprintf("rein-%lld", (long long)time(NULL));
    s->url = ep ? rein_strdup(ep)
                : rein_asprintf("https://sts.%s.amazonaws.com", region ? region : "us-east-1");
    return s->auth_file && s->role_arn && s->session && s->url ? REIN_OK : REIN_ENOMEM;
}

/* After web identity: the profile's process, the container endpoint, the instance metadata. */
static rein_err later_source(const char *process, struct rein__aws_source *s, rein_error *err)
{
    const char *rel = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    const char *full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    const char *imds_off = env("AWS_EC2_METADATA_DISABLED");
    rein_err rc = REIN_OK;

    if (process) {
        s->kind = REIN__AWS_PROCESS;
        s->process = rein_strdup(process);
        rc = s->process ? REIN_OK : REIN_ENOMEM;
    } else if (rel || full) {
        s->kind = REIN__AWS_CONTAINER;
        s->url = rel ? rein_asprintf("http://169.254.170.2%s", rel) : rein_strdup(full);
        if (env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"))
            s->auth_file = rein_strdup(env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"));
        else if (env("AWS_CONTAINER_AUTHORIZATION_TOKEN"))
            s->auth = rein_strdup(env("AWS_CONTAINER_AUTHORIZATION_TOKEN"));
        rc = s->url ? REIN_OK : REIN_ENOMEM;
        if (!rc && !rel && !container_url_ok(full))
            rc = rein_error_set(err, REIN_EINVAL,
                                "AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, or http to a "
                                "loopback address or 169.254.170.2 / 169.254.170.23: %.200s",
                                full);
    } else if (!imds_off || strcasecmp(imds_off, "true") != 0) {
        const char *ep = env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
        size_t n;
        s->kind = REIN__AWS_IMDS;
        s->imds = rein_strdup(ep ? ep : "http://169.254.169.254");
        rc = s->imds ? REIN_OK : REIN_ENOMEM;
        n = s->imds ? strlen(s->imds) : 0;
        while (n > 0 && s->imds[n - 1] == '/')
            s->imds[--n] = '\0';
    }
    return rc;
}

rein_err rein__aws_source_find(const char *process, const struct rein__aws_profile_web *pw,
                               const char *region, struct rein__aws_source *s, rein_error *err)
{
    rein_err rc;

    memset(s, 0, sizeof(*s));
    rc = web_identity(pw, region, s);
    if (rc == REIN_ENOTFOUND)
        rc = later_source(process, s, err);
    if (rc == REIN_ENOMEM)
        rein_error_set(err, rc, "out of memory");
    if (rc)
        rein__aws_source_release(s);
    return rc;
}
