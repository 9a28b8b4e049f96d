/*
 * AWS credentials that expire, from the sources of the SDKs' default chain after the static
 * keys: web identity (STS AssumeRoleWithWebIdentity), a profile's credential_process (a real
 * shell command), the container endpoint and the EC2 instance metadata (IMDSv2), over real HTTP against a scripted endpoint on loopback,
 * its address overridden the way the SDKs allow (AWS_CONTAINER_CREDENTIALS_FULL_URI,
 * AWS_EC2_METADATA_SERVICE_ENDPOINT). Credentials are kept until five minutes before their
 * Expiration and fetched again after; a Bedrock request signed with container credentials is
 * verified by the scripted model server.
 */
/* rein-test-timeout: 60 */
#include "test.h"

#include "cred_server.h"
#include "model_server.h"
#include "providers/provider_int.h"

#include <curl/curl.h>
#include <time.h>

#define LIT(s) (s), (sizeof(s) - 1)

static const char *const AWS_VARS[] = {
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_ENDPOINT_URL_STS",
};

/* No credentials anywhere, the instance metadata off unless a test turns it on. */
static void clean_env(const char *home)
{
    for (size_t i = 0; i < REIN_ARRAY_SIZE(AWS_VARS); i++)
        unsetenv(AWS_VARS[i]);
    setenv("HOME", home, 1);
    setenv("AWS_REGION", "us-east-1", 1);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

/* An ISO 8601 time `secs` from now. */
static void iso_in(long secs, char out[32])
{
    time_t t = time(NULL) + secs;
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The key id a signature by a names (new string). */
static char *signed_key(struct rein__aws *a, time_t now)
{
    struct curl_slist *h = NULL;
    char *out = NULL;

    assert_rein_ok(
        rein__aws_sign(a, "bedrock", "https://h.example/model/x/converse", "{}", 2, now, &h), NULL);
    for (struct curl_slist *l = h; l; l = l->next) {
        const char *c = strstr(l->data, "Credential=");
        if (!strncmp(l->data, "Authorization:", 14) && c)
            out = strndup(c + 11, strcspn(c + 11, "/"));
    }
    curl_slist_free_all(h);
    assert_non_null(out);
    return out;
}

static void test_parse_answers(void **state)
{
    static const struct {
        const char *text, *err;
    } bad[] = {
        {"", "not a JSON object"},
        {"[1]", "not a JSON object"},
        {"{\"Version\":2,\"AccessKeyId\":\"a\",\"SecretAccessKey\":\"s\"}", "Version 2"},
        {"{\"Code\":\"AssumeRoleUnauthorizedAccess\",\"AccessKeyId\":\"a\"}", "Code Assume"},
        {"{\"AccessKeyId\":\"a\"}", "no AccessKeyId or SecretAccessKey"},
        {"{\"AccessKeyId\":\"a\",\"SecretAccessKey\":\"s\",\"Expiration\":\"soon\"}", "ISO 8601"},
        {"{\"AccessKeyId\":\"a\",\"SecretAccessKey\":\"s\",\"Expiration\":7}", "not a string"},
    };
    struct rein__aws_creds c;
    rein_error err;

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(bad); i++) {
        assert_int_equal(rein__aws_creds_parse(bad[i].text, strlen(bad[i].text), &c, &err),
                         REIN_EPARSE);
        if (!strstr(err.msg, bad[i].err))
            fail_msg("%s: %s", bad[i].text, err.msg);
        assert_null(c.key_id);
    }
    /* credential_process, the container endpoint and IMDS name the token differently. */
    assert_rein_ok(rein__aws_creds_parse(LIT("{\"Version\":1,\"AccessKeyId\":\"AK\","
                                             "\"SecretAccessKey\":\"SK\",\"SessionToken\":\"T1\","
                                             "\"Expiration\":\"2030-01-02T03:04:05.123Z\"}"),
                                         &c, &err),
                   &err);
    assert_string_equal(c.token, "T1");
    assert_int_equal(c.expires_ms, (int64_t)1893553445 * 1000);
    rein__aws_creds_release(&c);
    assert_rein_ok(rein__aws_creds_parse(LIT("{\"Code\":\"Success\",\"Type\":\"AWS-HMAC\","
                                             "\"AccessKeyId\":\"AK\",\"SecretAccessKey\":\"SK\","
                                             "\"Token\":\"T2\",\"Expiration\":"
                                             "\"2030-01-02T03:04:05+00:00\"}"),
                                         &c, &err),
                   &err);
    assert_string_equal(c.token, "T2");
    rein__aws_creds_release(&c);
    /* No Expiration: they do not expire. */
    assert_rein_ok(
        rein__aws_creds_parse(LIT("{\"AccessKeyId\":\"AK\",\"SecretAccessKey\":\"SK\"}"), &c, &err),
        &err);
    assert_null(c.token);
    assert_int_equal(c.expires_ms, 0);
    rein__aws_creds_release(&c);
}

/* credential_process: a shell command whose counter shows how often it ran. */
static void test_credential_process(void **state)
{
    char *dir = test_tmpdir(), cfg[4096], soon[32], later[32], *key;
    struct rein__aws *a = NULL;
    rein_error err;

    (void)state;
    clean_env(dir);
    setenv("AWS_PROFILE", "proc", 1);
    iso_in(60, soon); /* inside the five-minute margin: every signing fetches again */
    iso_in(3600, later);
    snprintf(cfg, sizeof(cfg),
             "[profile proc]\nregion = eu-west-1\ncredential_process = sh -c 'n=$(cat %s/n "
             "2>/dev/null || echo 0); n=$((n+1)); echo $n > %s/n; printf "
             "\"{\\\"Version\\\": 1, \\\"AccessKeyId\\\": \\\"AKIDPROC$n\\\", "
             "\\\"SecretAccessKey\\\": \\\"s$n\\\", \\\"SessionToken\\\": \\\"t$n\\\", "
             "\\\"Expiration\\\": \\\"%s\\\"}\"'\n"
             "[profile steady]\ncredential_process = printf '{\"Version\": 1, "
             "\"AccessKeyId\": \"AKIDSTEADY\", \"SecretAccessKey\": \"s\", \"Expiration\": "
             "\"%s\"}'\n"
             "[profile broken]\ncredential_process = sh -c 'echo no SSO session >&2; exit 3'\n"
             "[profile v2]\ncredential_process = printf '{\"Version\": 2}'\n",
             dir, dir, soon, later);
    free(test_write_file(dir, ".aws/config", cfg));
    assert_rein_ok(rein__aws_load(&a, &err), &err);
    key = signed_key(a, time(NULL));
    assert_string_equal(key, "AKIDPROC2"); /* fetched at load, and again: near Expiration */
    free(key);
    rein__aws_free(a);

    setenv("AWS_PROFILE", "steady", 1);
    assert_rein_ok(rein__aws_load(&a, &err), &err);
    key = signed_key(a, time(NULL));
    assert_string_equal(key, "AKIDSTEADY");
    free(key);
    /* An hour on it is past its Expiration and is fetched again (the same answer here). */
    key = signed_key(a, time(NULL) + 3600);
    assert_string_equal(key, "AKIDSTEADY");
    free(key);
    rein__aws_free(a);

    setenv("AWS_PROFILE", "broken", 1);
    assert_int_equal(rein__aws_load(&a, &err), REIN_EINVAL);
    assert_null(a);
    if (!strstr(err.msg, "credential_process failed"))
        fail_msg("%s", err.msg);
    assert_non_null(strstr(err.msg, "no SSO session"));
    setenv("AWS_PROFILE", "v2", 1);
    assert_int_equal(rein__aws_load(&a, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "Version 2"));
    test_rmtree(dir);
    free(dir);
}

#define CREDS(key)                                                                                 \
    "{\"AccessKeyId\":\"" key "\",\"SecretAccessKey\":\"secret-" key "\",\"Token\":\"tok-" key     \
    "\",\"Expiration\":\"2099-01-01T00:00:00Z\"}"

static void test_container_endpoint(void **state)
{
    char *dir = test_tmpdir(), url[128], *key, *tokfile;
    cs_server *cs = cs_start();
    struct rein__aws *a = NULL;
    rein_error err;

    (void)state;
    assert_non_null(cs);
    clean_env(dir);
    cs_route(cs, "GET", "/v2/credentials/abc", 200, CREDS("AKIDCONT"),
             "Authorization: Bearer ecs-token");
    snprintf(url, sizeof(url), "%s/v2/credentials/abc", cs_url(cs));
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
    /* Without the authorization token the endpoint refuses, and the message says why. */
    assert_int_equal(rein__aws_load(&a, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "answered 401"));
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "Bearer ecs-token", 1);
    assert_rein_ok(rein__aws_load(&a, &err), &err);
    key = signed_key(a, time(NULL));
    assert_string_equal(key, "AKIDCONT");
    free(key);
    rein__aws_free(a);
    /* The token from a file (EKS Pod Identity), read at each fetch. */
    unsetenv("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    tokfile = test_write_file(dir, "token", "Bearer ecs-token\n");
    setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", tokfile, 1);
    assert_rein_ok(rein__aws_load(&a, &err), &err);
    rein__aws_free(a);
    assert_int_equal(cs_count(cs, "GET", "/v2/credentials/abc"), 3);
    /* Plain http only to loopback or the container hosts. */
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://creds.example.com/x", 1);
    assert_int_equal(rein__aws_load(&a, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "AWS_CONTAINER_CREDENTIALS_FULL_URI must be https"));
    /* An answer that is not credentials. */
    cs_route(cs, "GET", "/v2/credentials/abc", 200, "{\"Message\":\"no role\"}", NULL);
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
    assert_int_equal(rein__aws_load(&a, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "no AccessKeyId"));
    free(tokfile);
    cs_stop(cs);
    test_rmtree(dir);
    free(dir);
}

static void test_instance_metadata_v2(void **state)
{
    char *dir = test_tmpdir(), *key;
    cs_server *cs = cs_start();
    struct rein__aws *a = NULL;
    rein_error err;

    (void)state;
    assert_non_null(cs);
    clean_env(dir);
    cs_route(cs, "PUT", "/latest/api/token", 200, "imds-session",
             "X-aws-ec2-metadata-token-ttl-seconds: 21600");
    cs_route(cs, "GET", "/latest/meta-data/iam/security-credentials/", 200, "web-role\n",
             "X-aws-ec2-metadata-token: imds-session");
    cs_route(cs, "GET", "/latest/meta-data/iam/security-credentials/web-role", 200,
             "{\"Code\":\"Success\",\"Type\":\"AWS-HMAC\",\"AccessKeyId\":\"AKIDIMDS\","
             "\"SecretAccessKey\":\"s\",\"Token\":\"t\",\"Expiration\":\"2099-01-01T00:00:00Z\"}",
             "X-aws-ec2-metadata-token: imds-session");
    setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", cs_url(cs), 1);
    /* Turned off: not asked at all. */
    assert_int_equal(rein__aws_load(&a, &err), REIN_EINVAL);
    assert_int_equal(cs_count(cs, NULL, NULL), 0);
    unsetenv("AWS_EC2_METADATA_DISABLED");
    assert_rein_ok(rein__aws_load(&a, &err), &err);
    key = signed_key(a, time(NULL));
    assert_string_equal(key, "AKIDIMDS");
    free(key);
    /* Cached: a later signing before the Expiration asks nothing. */
    key = signed_key(a, time(NULL) + 600);
    free(key);
    assert_int_equal(cs_count(cs, "PUT", "/latest/api/token"), 1);
    rein__aws_free(a);
    /* An instance without a role. */
    cs_route(cs, "GET", "/latest/meta-data/iam/security-credentials/", 404, "", NULL);
    assert_int_equal(rein__aws_load(&a, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "AWS_ACCESS_KEY_ID"));
    assert_non_null(strstr(err.msg, "answered 404"));
    cs_stop(cs);
    test_rmtree(dir);
    free(dir);
}

#define STS_OK(key)                                                                                \
    "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"      \
    "<AssumeRoleWithWebIdentityResult><SubjectFromWebIdentityToken>system:serviceaccount:a:b"      \
    "</SubjectFromWebIdentityToken><AssumedRoleUser><Arn>arn:aws:sts::1:assumed-role/r/s</Arn>"    \
    "<AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser><Credentials><SessionToken>tok-" key   \
    "</SessionToken><SecretAccessKey>secret-" key "</SecretAccessKey><Expiration>"                 \
    "2099-01-01T00:00:00Z</Expiration><AccessKeyId>" key "</AccessKeyId></Credentials>"            \
    "</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"

/* Web identity: the token file exchanged at STS (AWS_ENDPOINT_URL_STS), from the environment
 * (which wins over a profile's keys) or from the profile's settings. */
static void test_web_identity(void **state)
{
    char *dir = test_tmpdir(), *tokfile, *key, cfg[1024];
    cs_server *cs = cs_start();
    struct rein__aws *a = NULL;
    struct rein__aws_creds c;
    const char *body;
    rein_error err;

    (void)state;
    assert_non_null(cs);
    clean_env(dir);
    tokfile = test_write_file(dir, "token", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln\n");
    cs_route(cs, "POST", "/", 200, STS_OK("AKIDWEB"), NULL);
    setenv("AWS_ENDPOINT_URL_STS", cs_url(cs), 1);
    setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tokfile, 1);
    setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/bedrock-caller", 1);
    setenv("AWS_ROLE_SESSION_NAME", "rein-test", 1);
    free(test_write_file(dir, ".aws/credentials",
                         "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = s\n"));
    assert_rein_ok(rein__aws_load(&a, &err), &err);
    key = signed_key(a, time(NULL));
    assert_string_equal(key, "AKIDWEB");
    free(key);
    rein__aws_free(a);
    body = cs_last_body(cs, "/");
    assert_non_null(strstr(body, "Action=AssumeRoleWithWebIdentity"));
    assert_non_null(strstr(body, "Version=2011-06-15"));
    assert_non_null(
        strstr(body, "RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fbedrock-caller"));
    assert_non_null(strstr(body, "RoleSessionName=rein-test"));
    assert_non_null(strstr(body, "WebIdentityToken=eyJhbGciOiJSUzI1NiJ9.e30.c2ln"));
    /* From the profile's settings. */
    unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
    unsetenv("AWS_ROLE_ARN");
    snprintf(cfg, sizeof(cfg),
             "[profile irsa]\nweb_identity_token_file = %s\nrole_arn = arn:aws:iam::1:role/x\n",
             tokfile);
    free(test_write_file(dir, ".aws/config", cfg));
    setenv("AWS_PROFILE", "irsa", 1);
    cs_route(cs, "POST", "/", 200, STS_OK("AKIDPROFILE"), NULL);
    assert_rein_ok(rein__aws_load(&a, &err), &err);
    key = signed_key(a, time(NULL));
    assert_string_equal(key, "AKIDPROFILE");
    free(key);
    rein__aws_free(a);
    /* STS refuses the token: its code and message are named. */
    cs_route(cs, "POST", "/", 400,
             "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>"
             "Sender</Type><Code>InvalidIdentityToken</Code><Message>Token expired</Message>"
             "</Error><RequestId>r1</RequestId></ErrorResponse>",
             NULL);
    assert_int_equal(rein__aws_load(&a, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "InvalidIdentityToken: Token expired"));
    /* The parser alone: what is not STS's answer. */
    assert_int_equal(rein__aws_sts_parse(LIT("<a><Credentials><AccessKeyId>k</AccessKeyId>"
                                             "</Credentials></a>"),
                                         &c, &err),
                     REIN_EPARSE);
    assert_non_null(strstr(err.msg, "no Credentials"));
    assert_int_equal(
        rein__aws_sts_parse(LIT("<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>"), &c, &err),
        REIN_EPARSE);
    assert_non_null(strstr(err.msg, "entity"));
    assert_int_equal(rein__aws_sts_parse(LIT("not xml"), &c, &err), REIN_EPARSE);
    free(tokfile);
    cs_stop(cs);
    test_rmtree(dir);
    free(dir);
}

/* A Bedrock request signed with the container's credentials, session token included, is one
 * the model server (which recomputes the signature) takes. */
static void test_bedrock_signs_with_container_credentials(void **state)
{
    char *dir = test_tmpdir(), url[128];
    cs_server *cs = cs_start();
    rein_provider_config *cfg = rein_provider_config_new();
    rein_model_request *req = rein_model_request_new();
    rein_history *h = rein_history_new();
    rein_model_response *r = NULL;
    rein_provider *p;
    rein_error err;
    ms_server *ms = ms_start(0, &err);
    const struct ms_request *q;

    (void)state;
    assert_non_null(cs);
    assert_non_null(ms);
    clean_env(dir);
    cs_route(cs, "GET", "/creds", 200, CREDS("AKIDCONT"), NULL);
    snprintf(url, sizeof(url), "%s/creds", cs_url(cs));
    setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
    ms_set_api_key(ms, "AKIDCONT:secret-AKIDCONT");
    assert_rein_ok(rein_provider_config_set(cfg, "provider", "bedrock", NULL), NULL);
    assert_rein_ok(rein_provider_config_set_model(cfg, "anthropic.claude-3-5-haiku"), NULL);
    assert_rein_ok(rein_provider_config_set_base_url(cfg, ms_url(ms)), NULL);
    p = rein_provider_new(cfg, &err);
    if (!p)
        fail_msg("%s", err.msg);
    assert_rein_ok(ms_script(ms, "[{\"text\":\"signed\"}]", false, &err), &err);
    assert_rein_ok(rein_history_add_user(h, "hi"), NULL);
    rein_model_request_set_stream(req, false);
    assert_rein_ok(rein_provider_send(p, req, h, &r, &err), &err);
    assert_string_equal(rein_model_response_text(r), "signed");
    q = ms_last_request(ms);
    assert_string_equal(ms_request_header(q, "x-amz-security-token"), "tok-AKIDCONT");
    rein_model_response_free(r);
    rein_provider_free(p);
    rein_provider_config_free(cfg);
    rein_model_request_free(req);
    rein_history_free(h);
    ms_stop(ms);
    cs_stop(cs);
    test_rmtree(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_parse_answers),
    cmocka_unit_test(test_credential_process),
    cmocka_unit_test(test_container_endpoint),
    cmocka_unit_test(test_instance_metadata_v2),
    cmocka_unit_test(test_web_identity),
    cmocka_unit_test(test_bedrock_signs_with_container_credentials),
};

REIN_TEST_MAIN(tests)
