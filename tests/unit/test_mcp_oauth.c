/*
 * Unit tests of the MCP client's OAuth parts (src/mcp/oauth_*.c) that decide what is trusted:
 * the WWW-Authenticate challenge and metadata parsers, PKCE (the RFC 7636 vector, verifiers
 * and states from getrandom that differ every time), the loopback redirect listener on a real
 * socket (a redirect with another state is refused, other paths get 404, an error is
 * reported), and the token file (created 0600 in a 0700 folder, refused when others can read
 * it). The whole flow runs against the conformance suite's servers in script.mcp_conformance.
 */
#include "test.h"

#include "mcp/oauth_int.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static void challenge_parse(void **state)
{
    struct rein__oauth_challenge ch;
    const char *v;

    (void)state;
    v = "Bearer resource_metadata=\"https://a.example/.well-known/oauth-protected-resource/mcp\","
        " scope=\"mcp:basic mcp:write\", error=\"insufficient_scope\"";
    assert_int_equal(rein__oauth_challenge_parse(v, strlen(v), &ch), REIN_OK);
    assert_string_equal(ch.resource_metadata,
                        "https://a.example/.well-known/oauth-protected-resource/mcp");
    assert_string_equal(ch.scope, "mcp:basic mcp:write");
    assert_string_equal(ch.error, "insufficient_scope");
    rein__oauth_challenge_release(&ch);

    /* Another scheme first, a token68 in it, unquoted values, escapes, case of the scheme. */
    v = "Basic realm=\"x, y\", Negotiate abc==, bearer error=invalid_token, "
        "scope=\"a\\\"b\"";
    assert_int_equal(rein__oauth_challenge_parse(v, strlen(v), &ch), REIN_OK);
    assert_null(ch.resource_metadata);
    assert_string_equal(ch.error, "invalid_token");
    assert_string_equal(ch.scope, "a\"b");
    rein__oauth_challenge_release(&ch);

    /* Parameters of a later, non-Bearer challenge are not taken. */
    v = "Bearer, Basic scope=\"admin\"";
    assert_int_equal(rein__oauth_challenge_parse(v, strlen(v), &ch), REIN_OK);
    assert_null(ch.scope);
    rein__oauth_challenge_release(&ch);

    v = "Basic realm=\"x\"";
    assert_int_equal(rein__oauth_challenge_parse(v, strlen(v), &ch), REIN_ENOTFOUND);
    v = "Bearer scope=\"unterminated";
    assert_int_equal(rein__oauth_challenge_parse(v, strlen(v), &ch), REIN_EINVAL);
    assert_null(ch.scope);
    v = "Bearer scope=\"bad\x01control\"";
    assert_int_equal(rein__oauth_challenge_parse(v, strlen(v), &ch), REIN_EINVAL);
    assert_int_equal(rein__oauth_challenge_parse("", 0, &ch), REIN_ENOTFOUND);
}

static rein_err doc(enum rein__oauth_doc kind, const char *text)
{
    json_t *out = NULL;
    rein_error err;
    rein_err rc;

    rein_error_clear(&err);
    rc = rein__oauth_doc_parse(kind, text, strlen(text), &out, &err);
    json_decref(out);
    return rc;
}

static void metadata_documents(void **state)
{
    (void)state;
    assert_int_equal(doc(REIN__OAUTH_PRM, "{\"resource\":\"https://a/mcp\","
                                          "\"authorization_servers\":[\"https://as\"]}"),
                     REIN_OK);
    assert_int_equal(doc(REIN__OAUTH_PRM, "{\"authorization_servers\":[\"https://as\"]}"),
                     REIN_EINVAL);
    assert_int_equal(doc(REIN__OAUTH_PRM, "{\"resource\":\"x\",\"authorization_servers\":[1]}"),
                     REIN_EINVAL);
    assert_int_equal(doc(REIN__OAUTH_PRM, "[1]"), REIN_EINVAL);
    assert_int_equal(doc(REIN__OAUTH_PRM, "{\"resource\":"), REIN_EINVAL);
    assert_int_equal(doc(REIN__OAUTH_ASM, "{\"issuer\":\"https://as\","
                                          "\"authorization_endpoint\":\"https://as/a\","
                                          "\"token_endpoint\":\"https://as/t\","
                                          "\"client_id_metadata_document_supported\":true}"),
                     REIN_OK);
    assert_int_equal(doc(REIN__OAUTH_ASM, "{\"issuer\":\"https://as\","
                                          "\"authorization_endpoint\":\"https://as/a\"}"),
                     REIN_EINVAL);
    assert_int_equal(doc(REIN__OAUTH_ASM, "{\"issuer\":\"https://as\","
                                          "\"authorization_endpoint\":\"https://as/a\","
                                          "\"token_endpoint\":\"https://as/t\","
                                          "\"client_id_metadata_document_supported\":\"yes\"}"),
                     REIN_EINVAL);
    assert_int_equal(doc(REIN__OAUTH_TOKEN, "{\"access_token\":\"t\",\"token_type\":\"bearer\","
                                            "\"expires_in\":60}"),
                     REIN_OK);
    /* Only Bearer tokens are used; a negative lifetime is malformed. */
    assert_int_equal(doc(REIN__OAUTH_TOKEN, "{\"access_token\":\"t\",\"token_type\":\"mac\"}"),
                     REIN_EINVAL);
    assert_int_equal(doc(REIN__OAUTH_TOKEN, "{\"access_token\":\"t\",\"token_type\":\"Bearer\","
                                            "\"expires_in\":-5}"),
                     REIN_EINVAL);
    assert_int_equal(doc(REIN__OAUTH_TOKEN, "{\"access_token\":\"\",\"token_type\":\"Bearer\"}"),
                     REIN_EINVAL);
    assert_int_equal(doc(REIN__OAUTH_CLIENT, "{\"client_secret\":\"s\"}"), REIN_EINVAL);
    assert_int_equal(doc(REIN__OAUTH_TOKEN_ERR, "{\"error\":\"invalid_grant\"}"), REIN_OK);
    /* RFC 8693: an exchange's token_type need not be Bearer (an ID-JAG is "N_A"), but it must
     * say what it issued. */
    assert_int_equal(doc(REIN__OAUTH_EXCHANGE, "{\"access_token\":\"j\",\"token_type\":\"N_A\","
                                               "\"issued_token_type\":\"urn:x\"}"),
                     REIN_OK);
    assert_int_equal(doc(REIN__OAUTH_EXCHANGE, "{\"access_token\":\"j\",\"token_type\":\"N_A\"}"),
                     REIN_EINVAL);
}

/* OAuth endpoints must be https, or http to this machine (the authorization spec's one
 * exception), whatever tricks the URL holds. */
static void https_only_endpoints(void **state)
{
    static const char *const ok[] = {
        "https://as.example.com/token", "https://as.example.com",
        "HTTPS://AS.EXAMPLE.COM/x",     "http://localhost:8080/callback",
        "http://localhost/token",       "http://localhost",
        "http://127.0.0.1:9/register",  "http://[::1]:4000/authorize",
        "http://LOCALHOST:1/t",         "https://user@as.example.com/token"};
    static const char *const refused[] = {"http://as.example.com/token",
                                          "http://192.0.2.1/token",
                                          "http://localhost.example.com/token",
                                          "http://127.0.0.1.nip.io/token",
                                          "http://127.0.0.1:80@as.example.com/token",
                                          "http://localhost@as.example.com/",
                                          "http://[::1].example.com/",
                                          "http://localhostx/",
                                          "ftp://localhost/token",
                                          "file:///etc/passwd",
                                          "localhost/token",
                                          "https:///token",
                                          "https://as.example.com/a b",
                                          "https://as.example.com/\r\nX-Injected: 1",
                                          "http://localhost\\@as.example.com/",
                                          "",
                                          NULL};

    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        if (!rein__oauth_endpoint_ok(ok[i]))
            fail_msg("refused %s", ok[i]);
    }
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        if (rein__oauth_endpoint_ok(refused[i]))
            fail_msg("allowed %s", refused[i] ? refused[i] : "NULL");
    }
}

static void pkce_and_randomness(void **state)
{
    char challenge[44];
    char *a, *b, *s1, *s2;

    (void)state;
    /* RFC 7636 appendix B. */
    rein__oauth_s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", challenge);
    assert_string_equal(challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    /* 32 random bytes: 43 base64url characters (RFC 7636 §4.1 asks 43 to 128). */
    a = rein__oauth_random(32);
    b = rein__oauth_random(32);
    s1 = rein__oauth_random(24);
    s2 = rein__oauth_random(24);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(strlen(a), 43);
    assert_int_equal(strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
                     43);
    assert_string_not_equal(a, b);
    assert_int_equal(strlen(s1), 32);
    assert_string_not_equal(s1, s2);
    rein_free(a);
    rein_free(b);
    rein_free(s1);
    rein_free(s2);
}

static void forms_and_queries(void **state)
{
    struct rein_buf b;
    char out[64];

    (void)state;
    rein_buf_init(&b, 0);
    assert_rein_ok(rein__oauth_form_add(&b, "redirect_uri", "http://127.0.0.1:5/cb?x=1&y"), NULL);
    assert_rein_ok(rein__oauth_form_add(&b, "scope", "a b"), NULL);
    assert_rein_ok(rein_buf_addch(&b, '\0'), NULL);
    assert_string_equal(b.ptr, "redirect_uri=http%3A%2F%2F127.0.0.1%3A5%2Fcb%3Fx%3D1%26y&"
                               "scope=a%20b");
    rein_buf_release(&b);
    assert_true(rein__oauth_query_get("code=a%2Bb+c&state=s", "code", out, sizeof(out)));
    assert_string_equal(out, "a+b c");
    assert_true(rein__oauth_query_get("xcode=1&code=2", "code", out, sizeof(out)));
    assert_string_equal(out, "2");
    assert_false(rein__oauth_query_get("code=a%00b", "code", out, sizeof(out)));
    assert_false(rein__oauth_query_get("code=%4", "code", out, sizeof(out)));
    assert_false(rein__oauth_query_get("state=1", "code", out, sizeof(out)));
    assert_false(rein__oauth_query_get("code=0123456789", "code", out, 5));
}

/* Connects to the listener and sends a request head; returns the socket. */
static int send_request(int port, const char *line)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char req[1024];
    int n;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    n = snprintf(req, sizeof(req), "%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", line);
    assert_int_equal(write(fd, req, (size_t)n), n);
    return fd;
}

static void read_answer(int fd, char *out, size_t size)
{
    size_t n = 0;
    ssize_t got;

    while (n + 1 < size && (got = read(fd, out + n, size - 1 - n)) > 0)
        n += (size_t)got;
    out[n] = '\0';
    close(fd);
}

static void loopback_redirect(void **state)
{
    struct rein__oauth_loopback lb;
    char code[64], answer[1024];
    rein_error err;
    int a, b;

    (void)state;
    rein_error_clear(&err);
    assert_rein_ok(rein__oauth_loopback_open(&lb, 0, &err), &err);
    assert_true(lb.port > 0);
    /* Another path first (a favicon), then the redirect with the right state. */
    a = send_request(lb.port, "GET /favicon.ico");
    b = send_request(lb.port, "GET /callback?code=the%20code&state=S1");
    assert_rein_ok(rein__oauth_loopback_wait(&lb, "S1", 5000, NULL, code, sizeof(code), &err),
                   &err);
    assert_string_equal(code, "the code");
    read_answer(a, answer, sizeof(answer));
    assert_non_null(strstr(answer, "404"));
    read_answer(b, answer, sizeof(answer));
    assert_non_null(strstr(answer, "200 OK"));

    /* A redirect with another state (a forged or stale one) is refused, its code unused. */
    a = send_request(lb.port, "GET /callback?code=stolen&state=S2x");
    assert_int_equal(rein__oauth_loopback_wait(&lb, "S2", 5000, NULL, code, sizeof(code), &err),
                     REIN_EDENIED);
    assert_non_null(strstr(err.msg, "state"));
    read_answer(a, answer, sizeof(answer));
    assert_non_null(strstr(answer, "400"));
    /* No state at all is the same. */
    a = send_request(lb.port, "GET /callback?code=stolen");
    assert_int_equal(rein__oauth_loopback_wait(&lb, "S3", 5000, NULL, code, sizeof(code), &err),
                     REIN_EDENIED);
    read_answer(a, answer, sizeof(answer));
    /* The authorization server's refusal is reported. */
    a = send_request(lb.port, "GET /callback?error=access_denied&state=S4");
    assert_int_equal(rein__oauth_loopback_wait(&lb, "S4", 5000, NULL, code, sizeof(code), &err),
                     REIN_EDENIED);
    assert_non_null(strstr(err.msg, "access_denied"));
    read_answer(a, answer, sizeof(answer));
    /* Nothing arrives: a timeout, not a hang. */
    assert_int_equal(rein__oauth_loopback_wait(&lb, "S5", 50, NULL, code, sizeof(code), &err),
                     REIN_ETIMEDOUT);
    rein__oauth_loopback_close(&lb);
}

static void token_file(void **state)
{
    char *dir = test_tmpdir(), path[4096], sub[4096];
    json_t *entry = json_pack("{s:s}", "access_token", "secret-token"), *got = NULL;
    struct stat st;
    rein_error err;

    (void)state;
    rein_error_clear(&err);
    snprintf(sub, sizeof(sub), "%s/state/rein", dir);
    setenv("REIN_STATE_DIR", sub, 1);
    assert_rein_ok(rein__oauth_store_save("https://a/mcp", entry, &err), &err);
    assert_true(rein__oauth_store_path(path, sizeof(path)));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(stat(sub, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_rein_ok(rein__oauth_store_load("https://a/mcp", &got, &err), &err);
    assert_string_equal(json_string_value(json_object_get(got, "access_token")), "secret-token");
    json_decref(got);
    assert_rein_ok(rein__oauth_store_load("https://other/mcp", &got, &err), &err);
    assert_null(got);
    /* Removing an entry keeps the others. */
    assert_rein_ok(rein__oauth_store_save("https://b/mcp", entry, &err), &err);
    assert_rein_ok(rein__oauth_store_save("https://a/mcp", NULL, &err), &err);
    assert_rein_ok(rein__oauth_store_load("https://b/mcp", &got, &err), &err);
    assert_non_null(got);
    json_decref(got);
    /* A file others can read may have leaked: it is not used. */
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(rein__oauth_store_load("https://b/mcp", &got, &err), REIN_EDENIED);
    assert_null(got);
    assert_int_equal(rein__oauth_store_save("https://c/mcp", entry, &err), REIN_EDENIED);
    unsetenv("REIN_STATE_DIR");
    json_decref(entry);
    test_rmtree(dir);
    free(dir);
}

/* ---- signed JWTs (src/core/jwt.c): private_key_jwt assertions (RFC 7523) ------------------ */

/* A new private key as PEM text (free()): "ec" (P-256), "ec-locked" (the same, encrypted with
 * a passphrase) or "rsa" with bits. */
static char *key_pem(const char *kind, unsigned bits)
{
    EVP_PKEY *key = strncmp(kind, "ec", 2) == 0 ? EVP_EC_gen("P-256") : EVP_RSA_gen(bits);
    bool locked = strcmp(kind, "ec-locked") == 0;
    BIO *bio = BIO_new(BIO_s_mem());
    char *data = NULL, *out;
    long n;

    assert_non_null(key);
    assert_non_null(bio);
    assert_int_equal(PEM_write_bio_PrivateKey(bio, key, locked ? EVP_aes_256_cbc() : NULL,
                                              locked ? (unsigned char *)"pass" : NULL,
                                              locked ? 4 : 0, NULL, NULL),
                     1);
    n = BIO_get_mem_data(bio, &data);
    out = malloc((size_t)n + 1); /* the BIO's bytes have no NUL after them */
    assert_non_null(out);
    memcpy(out, data, (size_t)n);
    out[n] = '\0';
    BIO_free(bio);
    EVP_PKEY_free(key);
    return out;
}

/* The bytes of a base64url part (no padding) of a JWT: rein_free. */
static unsigned char *b64url_decode(const char *p, size_t n, size_t *out_len)
{
    char text[4096];
    size_t k = 0;
    unsigned char *out;

    assert_true(n + 4 < sizeof(text));
    for (size_t i = 0; i < n; i++)
        text[k++] = p[i] == '-' ? '+' : p[i] == '_' ? '/' : p[i];
    while (k % 4)
        text[k++] = '=';
    out = (unsigned char *)rein__base64_decode(text, k, out_len);
    assert_non_null(out);
    return out;
}

/* Checks jwt's signature with the public half of pem, the way a verifier does (JWS r || s
 * turned back into DER for ES256); returns its header (a new reference), *claims too. */
static json_t *jwt_verify(const char *jwt, const char *pem, json_t **claims)
{
    const char *d1 = strchr(jwt, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    BIO *bio = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char *sig, *part, der[128];
    size_t siglen, n;
    int derlen;
    json_t *head;

    assert_non_null(d2);
    assert_null(strchr(d2 + 1, '.'));
    assert_null(strchr(jwt, '='));
    sig = b64url_decode(d2 + 1, strlen(d2 + 1), &siglen);
    if (EVP_PKEY_get_base_id(key) == EVP_PKEY_EC) {
        ECDSA_SIG *s = ECDSA_SIG_new();
        unsigned char *p = der;
        assert_int_equal(siglen, 64);
        ECDSA_SIG_set0(s, BN_bin2bn(sig, 32, NULL), BN_bin2bn(sig + 32, 32, NULL));
        derlen = i2d_ECDSA_SIG(s, &p);
        ECDSA_SIG_free(s);
        assert_true(derlen > 0);
        assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key), 1);
        assert_int_equal(EVP_DigestVerify(md, der, (size_t)derlen, (const unsigned char *)jwt,
                                          (size_t)(d2 - jwt)),
                         1);
    } else {
        assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key), 1);
        assert_int_equal(
            EVP_DigestVerify(md, sig, siglen, (const unsigned char *)jwt, (size_t)(d2 - jwt)), 1);
    }
    part = b64url_decode(jwt, (size_t)(d1 - jwt), &n);
    head = json_loadb((const char *)part, n, 0, NULL);
    rein_free(part);
    part = b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), &n);
    *claims = json_loadb((const char *)part, n, 0, NULL);
    rein_free(part);
    rein_free(sig);
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(key);
    BIO_free(bio);
    assert_non_null(head);
    assert_non_null(*claims);
    return head;
}

static void jwt_signing(void **state)
{
    char *ec = key_pem("ec", 0), *rsa = key_pem("rsa", 2048), *small = key_pem("rsa", 1024);
    char *locked = key_pem("ec-locked", 0);
    json_t *claims = json_pack("{s:s, s:s, s:I}", "iss", "c", "sub", "c", "exp", (json_int_t)99);
    json_t *header = json_pack("{s:s, s:s}", "typ", "JWT", "kid", "k1"), *h, *got;
    struct rein_buf b;
    rein_error err;

    (void)state;
    rein_buf_init(&b, 0);
    /* ES256: a P-256 key; the algorithm chosen from the key when none is named. */
    assert_int_equal(rein__jwt_sign(NULL, ec, header, claims, &b, &err), REIN_OK);
    assert_int_equal(rein_buf_addch(&b, '\0'), REIN_OK);
    h = jwt_verify(b.ptr, ec, &got);
    assert_string_equal(json_string_value(json_object_get(h, "alg")), "ES256");
    assert_string_equal(json_string_value(json_object_get(h, "kid")), "k1");
    assert_true(json_equal(got, claims));
    json_decref(h);
    json_decref(got);
    /* RS256. */
    rein_buf_reset(&b);
    assert_int_equal(rein__jwt_sign("RS256", rsa, NULL, claims, &b, &err), REIN_OK);
    assert_int_equal(rein_buf_addch(&b, '\0'), REIN_OK);
    h = jwt_verify(b.ptr, rsa, &got);
    assert_string_equal(json_string_value(json_object_get(h, "alg")), "RS256");
    json_decref(h);
    json_decref(got);
    /* Refused with a reason: a key of the other kind, a short RSA key, an unknown algorithm,
     * something that is not a key. */
    rein_buf_reset(&b);
    assert_int_equal(rein__jwt_sign("ES256", rsa, NULL, claims, &b, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "P-256"));
    assert_int_equal(rein__jwt_sign("RS256", ec, NULL, claims, &b, &err), REIN_EINVAL);
    assert_int_equal(rein__jwt_sign(NULL, small, NULL, claims, &b, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "2048"));
    assert_int_equal(rein__jwt_sign("HS256", ec, NULL, claims, &b, &err), REIN_EINVAL);
    assert_int_equal(
        rein__jwt_sign(NULL, "-----BEGIN PRIVATE KEY-----\nAAAA\n", NULL, claims, &b, &err),
        REIN_EINVAL);
    assert_non_null(strstr(err.msg, "PEM"));
    /* One that needs a passphrase is refused, never prompted for. */
    assert_int_equal(rein__jwt_sign(NULL, locked, NULL, claims, &b, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "passphrase"));
    rein_buf_release(&b);
    json_decref(header);
    json_decref(claims);
    free(ec);
    free(rsa);
    free(small);
    free(locked);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(challenge_parse),     cmocka_unit_test(metadata_documents),
    cmocka_unit_test(jwt_signing),         cmocka_unit_test(https_only_endpoints),
    cmocka_unit_test(pkce_and_randomness), cmocka_unit_test(forms_and_queries),
    cmocka_unit_test(loopback_redirect),   cmocka_unit_test(token_file),
};

REIN_TEST_MAIN(tests)
