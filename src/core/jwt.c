/*
 * Signed JWTs (RFC 7519, JWS compact form, RFC 7515) for the credentials rein presents itself:
 * an OAuth client's private_key_jwt assertion (RFC 7523). RS256 (RSASSA-PKCS1-v1_5 with
 * SHA-256) and ES256 (ECDSA on P-256 with SHA-256, the signature as the 64 bytes r || s that
 * JWS asks for, not OpenSSL's DER) through libcrypto. The key is a PEM private key; one that
 * needs a passphrase is refused rather than prompted for.
 */
#include "core/internal.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <string.h>

rein_err rein__base64url_add(struct rein_buf *b, const void *p, size_t len)
{
    char *t = rein__base64(p, len);
    size_t n = 0;
    rein_err rc;

    if (!t)
        return REIN_ENOMEM;
    for (char *c = t; *c && *c != '='; c++, n++)
        *c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
    rc = rein_buf_add(b, t, n);
    rein_free(t);
    return rc;
}

/* No passphrase: an encrypted key fails to load instead of prompting on the terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

/* The raw r || s (64 bytes) of an ECDSA P-256 signature OpenSSL wrote as DER. */
static bool ecdsa_raw(const unsigned char *der, size_t len, unsigned char out[64])
{
    const unsigned char *p = der;
    ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)len);
    const BIGNUM *r = NULL, *s = NULL;
    bool ok;

    if (!sig)
        return false;
    ECDSA_SIG_get0(sig, &r, &s);
    ok = BN_bn2binpad(r, out, 32) == 32 && BN_bn2binpad(s, out + 32, 32) == 32;
    ECDSA_SIG_free(sig);
    return ok;
}

/* Whether key can sign alg: RS256 an RSA key (2048 bits or more), ES256 a P-256 key. */
static bool key_fits(EVP_PKEY *key, const char *alg)
{
    char group[64] = "";
    size_t n = 0;

    if (strcmp(alg, "RS256") == 0)
        return EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA && EVP_PKEY_get_bits(key) >= 2048;
    return EVP_PKEY_get_base_id(key) == EVP_PKEY_EC &&
           EVP_PKEY_get_group_name(key, group, sizeof(group), &n) == 1 &&
           (strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0);
}

rein_err rein__jwt_sign(const char *alg, const char *key_pem, const json_t *header,
                        const json_t *claims, struct rein_buf *b, rein_error *err)
{
    json_t *head = NULL;
    struct rein_buf text;
    BIO *bio = NULL;
    EVP_PKEY *key = NULL;
    EVP_MD_CTX *md = NULL;
    unsigned char sig[1024], raw[64];
    size_t siglen = sizeof(sig), start = b->len;
    bool es;
    rein_err rc;

    if (alg && strcmp(alg, "ES256") != 0 && strcmp(alg, "RS256") != 0)
        return rein_error_set(err, REIN_EINVAL, "the signing algorithm %s is not RS256 or ES256",
                              alg);
    rein_buf_init(&text, 0);
    bio = BIO_new_mem_buf(key_pem, -1);
    key = bio ? PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL) : NULL;
    if (!key) {
        rc = rein_error_set(err, REIN_EINVAL,
                            "the key is not a PEM private key (or it needs a passphrase)");
        goto out;
    }
    if (!alg)
        alg = EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA ? "RS256" : "ES256";
    es = strcmp(alg, "ES256") == 0;
    if (!key_fits(key, alg)) {
        rc = rein_error_set(err, REIN_EINVAL, "the key cannot sign %s (that needs %s)", alg,
                            es ? "an EC key on P-256" : "an RSA key of 2048 bits or more");
        goto out;
    }
    head = header ? json_deep_copy(header) : json_object();
    rc = head && !json_object_set_new(head, "alg", json_string(alg)) ? REIN_OK : REIN_ENOMEM;
    if (!rc)
        rc = rein_json_dump(&text, head);
    if (!rc)
        rc = rein__base64url_add(b, text.ptr, text.len);
    rein_buf_reset(&text);
    if (!rc)
        rc = rein_buf_addch(b, '.');
    if (!rc)
        rc = rein_json_dump(&text, claims);
    if (!rc)
        rc = rein__base64url_add(b, text.ptr, text.len);
    if (rc) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto out;
    }
    md = EVP_MD_CTX_new();
    if (!md || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
        EVP_DigestSign(md, sig, &siglen, (const unsigned char *)b->ptr + start, b->len - start) !=
            1 ||
        (es && !ecdsa_raw(sig, siglen, raw))) {
        rc = rein_error_set(err, REIN_EINVAL, "the key could not sign the %s token", alg);
        goto out;
    }
    rc = rein_buf_addch(b, '.');
    if (!rc)
        rc = es ? rein__base64url_add(b, raw, sizeof(raw)) : rein__base64url_add(b, sig, siglen);
    if (rc)
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
out:
    EVP_MD_CTX_free(md);
    EVP_PKEY_free(key);
    BIO_free(bio);
    json_decref(head);
    rein_buf_release(&text);
    return rc;
}
