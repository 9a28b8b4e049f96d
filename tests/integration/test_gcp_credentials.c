/*
 * Vertex AI with Google Application Default Credentials, over real HTTP: the credentials file
 * found as Google's libraries find it (gcloud's default file under CLOUDSDK_CONFIG, or
 * GOOGLE_APPLICATION_CREDENTIALS), its token_uri pointing at a scripted token endpoint on
 * loopback. An authorized_user's refresh token and a service account's RS256 JWT (checked here
 * with the public key) are exchanged for an access token, which the scripted model server
 * requires as the bearer; the token is kept until near its end and fetched again after. Bad
 * files and refusals are named.
 */
/* rein-test-timeout: 60 */
#include "test.h"

#include "cred_server.h"
#include "model_server.h"
#include "providers/provider_int.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <unistd.h>

#define LIT(s) (s), (sizeof(s) - 1)

struct fx {
    char *dir;
    cs_server *cs;
    ms_server *ms;
    rein_provider_config *cfg;
    char base[256];
};

static void fx_start(struct fx *f)
{
    rein_error err;

    memset(f, 0, sizeof(*f));
    f->dir = test_tmpdir();
    f->cs = cs_start();
    f->ms = ms_start(0, &err);
    assert_non_null(f->cs);
    assert_non_null(f->ms);
    unsetenv("GOOGLE_ACCESS_TOKEN");
    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    unsetenv("GOOGLE_CLOUD_PROJECT");
    setenv("CLOUDSDK_CONFIG", f->dir, 1);
    setenv("HOME", f->dir, 1);
    snprintf(f->base, sizeof(f->base), "%s/v1/projects/p1/locations/us-central1/publishers/google",
             ms_url(f->ms));
    f->cfg = rein_provider_config_new();
    assert_rein_ok(rein_provider_config_set(f->cfg, "provider", "vertex", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_model(f->cfg, "gemini-2.5-flash"), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(f->cfg, f->base), NULL);
}

static void fx_stop(struct fx *f)
{
    rein_provider_config_free(f->cfg);
    ms_stop(f->ms);
    cs_stop(f->cs);
    unsetenv("CLOUDSDK_CONFIG");
    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    test_rmtree(f->dir);
    free(f->dir);
}

/* One generateContent through p; the answer's text must be "ok". */
static void ask(rein_provider *p)
{
    rein_model_request *req = rein_model_request_new();
    rein_history *h = rein_history_new();
    rein_model_response *r = NULL;
    rein_error err;

    rein_model_request_set_stream(req, false);
    assert_rein_ok(rein_history_add_user(h, "hi"), NULL);
    assert_rein_ok(rein_provider_send(p, req, h, &r, &err), &err);
    assert_string_equal(rein_model_response_text(r), "ok");
    rein_model_response_free(r);
    rein_history_free(h);
    rein_model_request_free(req);
}

static void test_token_answers(void **state)
{
    static const struct {
        const char *text, *err;
    } bad[] = {
        {"", "not a JSON object"},
        {"{\"error\":\"invalid_grant\",\"error_description\":\"Token has been expired or "
         "revoked.\"}",
         "invalid_grant: Token has been expired"},
        {"{\"expires_in\":3599}", "no usable access_token"},
        {"{\"access_token\":\"a\\r\\nX-Evil: 1\"}", "no usable access_token"},
        {"{\"access_token\":\"a\",\"token_type\":\"MAC\"}", "not Bearer"},
        {"{\"access_token\":\"a\",\"expires_in\":\"soon\"}", "expires_in"},
        {"{\"access_token\":\"a\",\"expires_in\":-5}", "expires_in"},
    };
    char *token;
    int64_t exp;
    rein_error err;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(bad); i++) {
        assert_int_equal(
            rein__gcp_token_parse(bad[i].text, strlen(bad[i].text), &token, &exp, &err),
            REIN_EPARSE);
        if (!strstr(err.msg, bad[i].err))
            fail_msg("%s: %s", bad[i].text, err.msg);
        assert_null(token);
    }
    assert_rein_ok(rein__gcp_token_parse(LIT("{\"access_token\":\"ya29.x\",\"expires_in\":3599,"
                                             "\"token_type\":\"Bearer\"}"),
                                         &token, &exp, &err),
                   &err);
    assert_string_equal(token, "ya29.x");
    assert_int_equal(exp, 3599);
    rein_free(token);
}

/* gcloud's file (authorized_user): the refresh token exchanged, the token cached, then fetched
 * again once it nears its end. */
static void test_authorized_user(void **state)
{
    struct fx f;
    char file[1024];
    const char *body;
    rein_provider *p;
    rein_error err;

    (void)state;
    fx_start(&f);
    snprintf(file, sizeof(file),
             "{\"type\":\"authorized_user\",\"client_id\":\"cid.apps\",\"client_secret\":"
             "\"csecret\",\"refresh_token\":\"1//refresh+tok\",\"quota_project_id\":\"p1\","
             "\"token_uri\":\"%s/token\"}",
             cs_url(f.cs));
    free(test_write_file(f.dir, "application_default_credentials.json", file));
    /* A short-lived first token (kept for half its life), then a long one. */
    cs_route(f.cs, "POST", "/token", 200,
             "{\"access_token\":\"ya29.user\",\"expires_in\":1,\"token_type\":\"Bearer\"}", NULL);
    ms_set_api_key(f.ms, "ya29.user");
    assert_rein_ok(ms_script(f.ms, "{\"text\":\"ok\",\"times\":0}", false, &err), &err);
    p = rein_provider_new(f.cfg, &err);
    if (!p)
        fail_msg("%s", err.msg);
    body = cs_last_body(f.cs, "/token");
    assert_non_null(strstr(body, "grant_type=refresh_token"));
    assert_non_null(strstr(body, "client_id=cid.apps"));
    assert_non_null(strstr(body, "client_secret=csecret"));
    assert_non_null(strstr(body, "refresh_token=1%2F%2Frefresh%2Btok"));
    ask(p);
    assert_int_equal(cs_count(f.cs, "POST", "/token"), 1);
    /* Past half of its one second: the next request fetches a new token first. */
    cs_route(f.cs, "POST", "/token", 200,
             "{\"access_token\":\"ya29.second\",\"expires_in\":3599,\"token_type\":\"Bearer\"}",
             NULL);
    ms_set_api_key(f.ms, "ya29.second");
    usleep(600 * 1000);
    ask(p);
    assert_int_equal(cs_count(f.cs, "POST", "/token"), 2);
    ask(p);
    assert_int_equal(cs_count(f.cs, "POST", "/token"), 2);
    rein_provider_free(p);
    fx_stop(&f);
}

/* Base64url text to bytes (new, *n their count). */
static unsigned char *unb64url(const char *s, size_t len, size_t *n)
{
    char *t = calloc(1, len + 4);
    unsigned char *out = calloc(1, len + 4);
    int got;

    memcpy(t, s, len);
    for (size_t i = 0; i < len; i++)
        t[i] = t[i] == '-' ? '+' : t[i] == '_' ? '/' : t[i];
    while (len % 4)
        t[len++] = '=';
    got = EVP_DecodeBlock(out, (unsigned char *)t, (int)len);
    assert_true(got >= 0);
    *n = (size_t)got - (size_t)(len >= 2 && t[len - 1] == '=') -
         (size_t)(len >= 2 && t[len - 2] == '=');
    free(t);
    return out;
}

/* A service account: the JWT's claims, and its signature checked with the public key. */
static void test_service_account(void **state)
{
    struct fx f;
    EVP_PKEY *key = EVP_RSA_gen(2048);
    BIO *bio = BIO_new(BIO_s_mem());
    char *pem, *file, *path, *assertion, *dot1, *dot2;
    const char *body;
    json_t *doc, *head, *claims;
    unsigned char *part, *sig;
    size_t n, siglen;
    long pem_len;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    rein_provider *p;
    rein_error err;

    (void)state;
    fx_start(&f);
    assert_non_null(key);
    assert_int_equal(PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL), 1);
    pem_len = BIO_get_mem_data(bio, &pem);
    doc = json_pack("{s:s, s:s, s:s, s:s%, s:s, s:s}", "type", "service_account", "project_id",
                    "p1", "private_key_id", "kid-1", "private_key", pem, (size_t)pem_len,
                    "client_email", "rein@p1.iam.gserviceaccount.com", "token_uri", "");
    path = rein_asprintf("%s/token", cs_url(f.cs));
    json_object_set_new(doc, "token_uri", json_string(path));
    file = rein_json_dumps(doc);
    json_decref(doc);
    free(test_write_file(f.dir, "sa.json", file));
    rein_free(file);
    rein_free(path);
    path = rein_asprintf("%s/sa.json", f.dir);
    setenv("GOOGLE_APPLICATION_CREDENTIALS", path, 1);
    rein_free(path);
    cs_route(f.cs, "POST", "/token", 200,
             "{\"access_token\":\"ya29.sa\",\"expires_in\":3599,\"token_type\":\"Bearer\"}", NULL);
    ms_set_api_key(f.ms, "ya29.sa");
    assert_rein_ok(ms_script(f.ms, "{\"text\":\"ok\"}", false, &err), &err);
    p = rein_provider_new(f.cfg, &err);
    if (!p)
        fail_msg("%s", err.msg);
    ask(p);
    body = cs_last_body(f.cs, "/token");
    assert_non_null(
        strstr(body, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"));
    assertion = strstr(body, "assertion=");
    assert_non_null(assertion);
    assertion += 10;
    dot1 = strchr(assertion, '.');
    dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    assert_non_null(dot2);
    part = unb64url(assertion, (size_t)(dot1 - assertion), &n);
    head = rein_json_parse((char *)part, n, 0, NULL);
    free(part);
    assert_string_equal(json_string_value(json_object_get(head, "alg")), "RS256");
    assert_string_equal(json_string_value(json_object_get(head, "kid")), "kid-1");
    part = unb64url(dot1 + 1, (size_t)(dot2 - dot1 - 1), &n);
    claims = rein_json_parse((char *)part, n, 0, NULL);
    free(part);
    assert_string_equal(json_string_value(json_object_get(claims, "iss")),
                        "rein@p1.iam.gserviceaccount.com");
    assert_string_equal(json_string_value(json_object_get(claims, "scope")),
                        "https://www.googleapis.com/auth/cloud-platform");
    assert_non_null(strstr(json_string_value(json_object_get(claims, "aud")), "/token"));
    assert_int_equal(json_integer_value(json_object_get(claims, "exp")) -
                         json_integer_value(json_object_get(claims, "iat")),
                     3600);
    sig = unb64url(dot2 + 1, strcspn(dot2 + 1, "&"), &siglen);
    assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key), 1);
    assert_int_equal(EVP_DigestVerify(md, sig, siglen, (const unsigned char *)assertion,
                                      (size_t)(dot2 - assertion)),
                     1);
    free(sig);
    json_decref(head);
    json_decref(claims);
    EVP_MD_CTX_free(md);
    BIO_free(bio);
    EVP_PKEY_free(key);
    rein_provider_free(p);
    fx_stop(&f);
}

static void test_bad_files_and_refusals(void **state)
{
    struct fx f;
    char file[512];
    rein_provider *p;
    rein_error err;

    (void)state;
    fx_start(&f);
    /* No file at all and a base URL configured: the proxy case, no token demanded. */
    p = rein_provider_new(f.cfg, &err);
    assert_non_null(p);
    rein_provider_free(p);
    /* A file that is named must be there. */
    setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/adc.json", 1);
    assert_null(rein_provider_new(f.cfg, &err));
    assert_non_null(strstr(err.msg, "/nonexistent/adc.json"));
    unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    free(test_write_file(f.dir, "application_default_credentials.json",
                         "{\"type\":\"external_account\",\"audience\":\"x\"}"));
    assert_null(rein_provider_new(f.cfg, &err));
    assert_non_null(strstr(err.msg, "\"external_account\" are not supported"));
    snprintf(file, sizeof(file),
             "{\"type\":\"authorized_user\",\"client_id\":\"c\",\"client_secret\":\"s\","
             "\"refresh_token\":\"r\",\"token_uri\":\"%s/token\"}",
             cs_url(f.cs));
    free(test_write_file(f.dir, "application_default_credentials.json", file));
    cs_route(f.cs, "POST", "/token", 400,
             "{\"error\":\"invalid_grant\",\"error_description\":\"Token has been expired or "
             "revoked.\"}",
             NULL);
    assert_null(rein_provider_new(f.cfg, &err));
    assert_non_null(strstr(err.msg, "Application Default Credentials"));
    assert_non_null(strstr(err.msg, "invalid_grant"));
    assert_null(strstr(err.msg, "\"r\""));
    fx_stop(&f);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_token_answers),
    cmocka_unit_test(test_authorized_user),
    cmocka_unit_test(test_service_account),
    cmocka_unit_test(test_bad_files_and_refusals),
};

REIN_TEST_MAIN(tests)
