/*
 * AWS credentials and Signature Version 4 for Bedrock (docs/decisions/0027).
 *
 * Credentials are found as the AWS SDKs and CLI find them: AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN for temporary ones) from the environment, else
 * the profile AWS_PROFILE names ("default" without it) in the shared credentials file
 * (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials; section [NAME]) and then in the
 * config file (AWS_CONFIG_FILE, default ~/.aws/config; section [profile NAME], or [default]).
 * The region is AWS_REGION, else AWS_DEFAULT_REGION, else the profile's region in the config
 * file. Without keys there, the credentials that expire come from the profile's
 * credential_process, the container endpoint or the EC2 instance metadata (awscreds.c): the
 * first are fetched here, and again when a signing finds them within five minutes of their
 * Expiration.
 *
 * Signing follows the SigV4 specification (docs.aws.amazon.com, "Create a signed AWS API
 * request"): the canonical request (method, the path URI-encoded once more as services other
 * than S3 want it, the query, the signed headers content-type, host, x-amz-date and
 * x-amz-security-token when there is a session token, the SHA-256 of the body), the string to
 * sign over the credential scope DATE/REGION/bedrock/aws4_request, and the HMAC chain from
 * "AWS4" + secret. libcurl's CURLOPT_AWS_SIGV4 is not used: in curl 7.88 (Debian 12) it signs
 * the path as it is sent, so a model id with ':' (every Bedrock model version) cannot be
 * signed, and it signs header lines without a value that it then does not send.
 *
 * Secrets are copied only into struct rein__aws and the one Authorization header; they are
 * wiped when freed and never formatted into a message.
 */
#include "provider_int.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Credentials from a source that expire are refetched this long before their Expiration. */
#define REFRESH_MARGIN_MS (5 * 60 * 1000)

struct rein__aws {
    char *key_id, *secret, *token, *region;
    const char *source;                      /* where the credentials came from, for messages */
    char *process;                           /* the profile's credential_process, or NULL */
    char *web_file, *web_role, *web_session; /* the profile's web identity settings, or NULL */
    /* The source of credentials that expire (kind REIN__AWS_STATIC: none); the lock guards
     * the three secrets and expires_ms while a signing refreshes them. */
    struct rein__aws_source src;
    int64_t expires_ms; /* 0: they do not expire */
    pthread_mutex_t lock;
};

static void wipe_free(char *s)
{
    if (s) {
        memset(s, 0, strlen(s));
        rein_free(s);
    }
}

void rein__aws_free(struct rein__aws *a)
{
    if (!a)
        return;
    wipe_free(a->key_id);
    wipe_free(a->secret);
    wipe_free(a->token);
    rein_free(a->region);
    rein_free(a->process);
    rein_free(a->web_file);
    rein_free(a->web_role);
    rein_free(a->web_session);
    rein__aws_source_release(&a->src);
    pthread_mutex_destroy(&a->lock);
    rein_free(a);
}

const char *rein__aws_region(const struct rein__aws *a)
{
    return a ? a->region : NULL;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

/* ---- the shared files ------------------------------------------------------------------ */

static char *trim(char *s)
{
    char *e;

    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
        *--e = '\0';
    return s;
}

/* Sets *slot (when still empty) to a copy of value. */
static rein_err take(char **slot, const char *value)
{
    if (*slot || !value[0])
        return REIN_OK;
    *slot = rein_strdup(value);
    return *slot ? REIN_OK : REIN_ENOMEM;
}

/*
 * Reads the section named section of an INI file (the AWS shared file format: [name] headers,
 * key = value lines, # and ; comments, indented lines continuing a nested value, which are
 * skipped) and fills what a is still missing. A missing file is not an error.
 */
static rein_err read_profile(const char *path, const char *section, struct rein__aws *a,
                             bool *found)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    char line[4096];
    bool in = false;
    rein_err rc = REIN_OK;

    if (!f)
        return REIN_OK;
    while (!rc && fgets(line, sizeof(line), f)) {
        char *s, *eq, *key, *value;
        if (line[0] == ' ' || line[0] == '\t')
            continue; /* a nested value (s3 = ...) */
        s = trim(line);
        if (!*s || *s == '#' || *s == ';')
            continue;
        if (*s == '[') {
            char *end = strchr(s, ']');
            if (end)
                *end = '\0';
            in = strcmp(trim(s + 1), section) == 0;
            *found |= in;
            continue;
        }
        if (!in || !(eq = strchr(s, '=')))
            continue;
        *eq = '\0';
        key = trim(s);
        value = trim(eq + 1);
        if (!strcmp(key, "aws_access_key_id"))
            rc = take(&a->key_id, value);
        else if (!strcmp(key, "aws_secret_access_key"))
            rc = take(&a->secret, value);
        else if (!strcmp(key, "aws_session_token"))
            rc = take(&a->token, value);
        else if (!strcmp(key, "region"))
            rc = take(&a->region, value);
        else if (!strcmp(key, "credential_process"))
            rc = take(&a->process, value);
        else if (!strcmp(key, "web_identity_token_file"))
            rc = take(&a->web_file, value);
        else if (!strcmp(key, "role_arn"))
            rc = take(&a->web_role, value);
        else if (!strcmp(key, "role_session_name"))
            rc = take(&a->web_session, value);
    }
    memset(line, 0, sizeof(line));
    fclose(f);
    return rc;
}

static char *home_file(const char *var, const char *rel)
{
    const char *v = env(var), *home = env("HOME");

    if (v)
        return rein_strdup(v);
    return home ? rein_asprintf("%s/.aws/%s", home, rel) : NULL;
}

/* Replaces a's secrets with c's (taken). */
static void adopt(struct rein__aws *a, struct rein__aws_creds *c)
{
    wipe_free(a->key_id);
    wipe_free(a->secret);
    wipe_free(a->token);
    a->key_id = c->key_id;
    a->secret = c->secret;
    a->token = c->token;
    a->expires_ms = c->expires_ms;
    memset(c, 0, sizeof(*c));
}

/*
 * Without static keys: the credentials that expire, from the first source the chain names,
 * fetched now so that a provider that cannot sign fails when it is made. The message of a
 * failure says what to set and what the source answered.
 */
static rein_err load_expiring(struct rein__aws *a, const char *profile, const char *creds,
                              rein_error *err)
{
    struct rein__aws_profile_web pw = {a->web_file, a->web_role, a->web_session};
    struct rein__aws_creds c;
    rein_error why;
    rein_err rc;

    wipe_free(a->key_id);
    wipe_free(a->secret);
    a->key_id = a->secret = NULL;
    rein_error_clear(&why);
    rc = rein__aws_source_find(a->process, &pw, a->region, &a->src, &why);
    if (!rc && a->src.kind != REIN__AWS_STATIC)
        rc = rein__aws_fetch(&a->src, &c, &why);
    if (!rc && a->src.kind != REIN__AWS_STATIC) {
        adopt(a, &c);
        a->source = rein__aws_source_name(&a->src);
        return REIN_OK;
    }
    if (rc == REIN_ENOMEM)
        return rein_error_set(err, rc, "out of memory");
    if (why.msg[0]) /* a source was asked: its answer first (the message has 256 bytes) */
        return rein_error_set(err, REIN_EINVAL,
                              "the bedrock provider found no AWS credentials: %.150s; or set "
                              "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, profile \"%.20s\", or "
                              "AWS_BEARER_TOKEN_BEDROCK",
                              why.msg, profile);
    return rein_error_set(err, REIN_EINVAL,
                          "the bedrock provider found no AWS credentials: set AWS_ACCESS_KEY_ID "
                          "and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), or profile \"%s\" "
                          "in %s (keys or credential_process), or an API key in "
                          "AWS_BEARER_TOKEN_BEDROCK",
                          profile, creds ? creds : "~/.aws/credentials");
}

rein_err rein__aws_load(struct rein__aws **out, rein_error *err)
{
    struct rein__aws *a = rein_calloc(1, sizeof(*a));
    const char *profile = env("AWS_PROFILE") ? env("AWS_PROFILE") : "default";
    char *creds = home_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    char *config = home_file("AWS_CONFIG_FILE", "config");
    char *section = rein_asprintf(strcmp(profile, "default") ? "profile %s" : "%s", profile);
    /* Web identity in the environment comes before the profile's keys, as in the SDKs. */
    bool web_env = env("AWS_WEB_IDENTITY_TOKEN_FILE") && env("AWS_ROLE_ARN"), from_env = false;
    bool found = false;
    rein_err rc = a && section ? REIN_OK : REIN_ENOMEM;

    *out = NULL;
    if (a)
        pthread_mutex_init(&a->lock, NULL);
    if (!rc && env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
        rc = take(&a->key_id, env("AWS_ACCESS_KEY_ID"));
        if (!rc)
            rc = take(&a->secret, env("AWS_SECRET_ACCESS_KEY"));
        if (!rc && env("AWS_SESSION_TOKEN"))
            rc = take(&a->token, env("AWS_SESSION_TOKEN"));
        if (a)
            a->source = "the environment";
        from_env = true;
    }
    if (!rc)
        rc = take(&a->region, env("AWS_REGION") ? env("AWS_REGION") : "");
    if (!rc)
        rc = take(&a->region, env("AWS_DEFAULT_REGION") ? env("AWS_DEFAULT_REGION") : "");
    if (!rc && !a->key_id) {
        rc = read_profile(creds, profile, a, &found);
        a->source = "the shared credentials file";
    }
    if (!rc) /* the config file may hold the credentials too, and the region */
        rc = read_profile(config, section, a, &found);
    if (!rc && (!a->key_id || !a->secret || (web_env && !from_env)))
        rc = load_expiring(a, profile, creds, err);
    if (!rc && !a->region)
        rc = rein_error_set(err, REIN_EINVAL,
                            "the bedrock provider needs a region: set AWS_REGION (or "
                            "AWS_DEFAULT_REGION, or region in profile \"%s\" of %s), or a base "
                            "URL",
                            profile, config ? config : "~/.aws/config");
    rein_free(creds);
    rein_free(config);
    rein_free(section);
    if (rc == REIN_ENOMEM)
        rein_error_set(err, rc, "out of memory");
    if (rc) {
        rein__aws_free(a);
        return rc;
    }
    *out = a;
    return REIN_OK;
}

/* ---- signing ----------------------------------------------------------------------------- */

static void hex(const uint8_t *d, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[2 * n] = '\0';
}

static void sha256_hex(const void *data, size_t len, char out[65])
{
    struct rein__sha256 s;
    uint8_t d[32];

    rein__sha256_init(&s);
    rein__sha256_add(&s, data, len);
    rein__sha256_final(&s, d);
    hex(d, 32, out);
}

/* Appends s URI-encoded as SigV4 wants it: unreserved characters as they are, '/' kept when
 * slash, everything else %XX in upper case. */
rein_err rein__aws_uri_encode(struct rein_buf *b, const char *s, size_t n, bool slash)
{
    rein_err rc = REIN_OK;

    for (size_t i = 0; i < n && !rc; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (slash && c == '/')) {
            rc = rein_buf_addch(b, (char)c);
        } else {
            char esc[4];
            snprintf(esc, sizeof(esc), "%%%02X", c);
            rc = rein_buf_add(b, esc, 3);
        }
    }
    return rc;
}

/* Splits url into host[:port], path and query (borrowed spans of url). */
static bool split_url(const char *url, const char **host, size_t *hlen, const char **path,
                      size_t *plen, const char **query)
{
    const char *p = strstr(url, "://");

    if (!p)
        return false;
    *host = p + 3;
    p = *host + strcspn(*host, "/?");
    *hlen = (size_t)(p - *host);
    *path = *p == '/' ? p : "/";
    *plen = *p == '/' ? strcspn(p, "?") : 1;
    *query = strchr(p, '?') ? strchr(p, '?') + 1 : "";
    return *hlen > 0;
}

/* Under a->lock: fetches the credentials again when they are within the margin of their
 * Expiration. A failed fetch keeps the old ones while they last (and says so in the log). */
static rein_err refresh(struct rein__aws *a, time_t now)
{
    struct rein__aws_creds c;
    rein_error why;
    int64_t now_ms = (int64_t)now * 1000;

    if (a->src.kind == REIN__AWS_STATIC || !a->expires_ms ||
        now_ms < a->expires_ms - REFRESH_MARGIN_MS)
        return REIN_OK;
    rein_error_clear(&why);
    if (rein__aws_fetch(&a->src, &c, &why) == REIN_OK) {
        adopt(a, &c);
        return REIN_OK;
    }
    rein_log(REIN_LOG_WARN, "providers", "AWS credentials from %s could not be refreshed: %s",
             rein__aws_source_name(&a->src), why.msg);
    return now_ms < a->expires_ms ? REIN_OK : REIN_EINVAL;
}

static rein_err sign_locked(const struct rein__aws *a, const char *service, const char *url,
                            const char body_hash[65], time_t now, struct curl_slist **headers);

rein_err rein__aws_sign_hashed(struct rein__aws *a, const char *service, const char *url,
                               const char body_hash[65], time_t now, struct curl_slist **headers)
{
    rein_err rc;

    pthread_mutex_lock(&a->lock);
    rc = refresh(a, now);
    if (!rc)
        rc = sign_locked(a, service, url, body_hash, now, headers);
    pthread_mutex_unlock(&a->lock);
    return rc;
}

rein_err rein__aws_sign(struct rein__aws *a, const char *service, const char *url, const char *body,
                        size_t len, time_t now, struct curl_slist **headers)
{
    char body_hash[65];

    sha256_hex(body, len, body_hash);
    return rein__aws_sign_hashed(a, service, url, body_hash, now, headers);
}

static rein_err sign_locked(const struct rein__aws *a, const char *service, const char *url,
                            const char body_hash[65], time_t now, struct curl_slist **headers)
{
    const char *host, *path, *query;
    size_t hlen, plen;
    struct rein_buf canon, sts;
    char date[9], stamp[17], canon_hash[65], sig[65], *line;
    uint8_t k[32], k2[32];
    struct tm tm;
    rein_err rc;

    if (!split_url(url, &host, &hlen, &path, &plen, &query) || !gmtime_r(&now, &tm))
        return REIN_EINVAL;
    strftime(date, sizeof(date), "%Y%m%d", &tm);
    strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
    rein_buf_init(&canon, 0);
    rein_buf_init(&sts, 0);
    /* The path as sent is encoded once more (a %3A in a model id is signed as %253A). */
    rc = rein_buf_adds(&canon, "POST\n");
    if (!rc)
        rc = rein__aws_uri_encode(&canon, path, plen, true);
    if (!rc)
        rc = rein_buf_addf(&canon,
                           "\n%s\ncontent-type:application/json\nhost:%.*s\nx-amz-date:%s\n%s%s%s\n"
                           "content-type;host;x-amz-date%s\n%s",
                           query, (int)hlen, host, stamp, a->token ? "x-amz-security-token:" : "",
                           a->token ? a->token : "", a->token ? "\n" : "",
                           a->token ? ";x-amz-security-token" : "", body_hash);
    if (!rc) {
        sha256_hex(canon.ptr, canon.len, canon_hash);
        rc = rein_buf_addf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", stamp, date,
                           a->region, service, canon_hash);
    }
    if (!rc) {
        char *key = rein_asprintf("AWS4%s", a->secret);
        if (!key) {
            rc = REIN_ENOMEM;
        } else {
            rein__hmac_sha256(key, strlen(key), date, strlen(date), k);
            wipe_free(key);
            rein__hmac_sha256(k, 32, a->region, strlen(a->region), k2);
            rein__hmac_sha256(k2, 32, service, strlen(service), k);
            rein__hmac_sha256(k, 32, "aws4_request", 12, k2);
            rein__hmac_sha256(k2, 32, sts.ptr, sts.len, k);
            hex(k, 32, sig);
            memset(k2, 0, sizeof(k2));
        }
    }
    rein_buf_release(&canon);
    rein_buf_release(&sts);
    if (rc)
        return rc;
    line = rein_asprintf("Authorization: AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, "
                         "SignedHeaders=content-type;host;x-amz-date%s, Signature=%s",
                         a->key_id, date, a->region, service,
                         a->token ? ";x-amz-security-token" : "", sig);
    rc = line ? rein__header_add(headers, line) : REIN_ENOMEM;
    rein_free(line);
    if (!rc) {
        char d[48];
        snprintf(d, sizeof(d), "X-Amz-Date: %s", stamp);
        rc = rein__header_add(headers, d);
    }
    if (!rc && a->token) {
        line = rein_asprintf("X-Amz-Security-Token: %s", a->token);
        rc = line ? rein__header_add(headers, line) : REIN_ENOMEM;
        wipe_free(line);
    }
    return rc;
}
