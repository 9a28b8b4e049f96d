/*
 * The library-internal interface of core: small helpers that every module of librein may use
 * and that would otherwise be written once per module (a hex digit, FNV-1a
 * hashing, the one libcurl global-init guard, a cancellable libcurl transfer, ${VAR}
 * expansion). It is not installed and not part of the API; unlike a module's private
 * `*_int.h`, any file under src/ may include it (docs/decisions/0013, scripts/modgraph.sh).
 * Everything here is safe to call from any thread.
 */
#ifndef REIN_CORE_INTERNAL_H
#define REIN_CORE_INTERNAL_H

#include <rein/cancel.h>
#include <rein/core.h>
#include <rein/json.h>

#include <curl/curl.h>
#include <expat.h>
#include <string.h>
#include <time.h>

/* True when none of the eight bytes at p needs a look in a JSON string: no '"', '\\', control
 * byte or byte from 0x80 up (UTF-8, checked byte by byte). rein_json_escape copies such bytes
 * as they are; most text is runs of them. */
static inline bool rein__json_plain8(const unsigned char *p)
{
    const uint64_t ones = UINT64_C(0x0101010101010101), highs = ones * 0x80;
    uint64_t w, q, b;

    memcpy(&w, p, 8);
    q = w ^ (ones * '"');
    b = w ^ (ones * '\\');
    return !((((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & highs);
}

/*
 * Appends s (len bytes, at least 8) to out as rein_json_escape() would when none of its bytes
 * needs a look, eight at a time (the last eight overlapping the ones before), and returns
 * true; returns false, out's text unchanged, when one does. out must have room for len more bytes.
 * For a short string where rein_json_escape()'s call and set-up cost more than its bytes.
 */
static inline bool rein__json_copy_plain(struct rein_buf *out, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    char *o = out->ptr + out->len;
    size_t i = 0;

    for (; len - i >= 8; i += 8) {
        if (!rein__json_plain8(u + i))
            goto out_unchanged;
        memcpy(o + i, u + i, 8);
    }
    if (i < len) {
        if (!rein__json_plain8(u + len - 8))
            goto out_unchanged;
        memcpy(o + len - 8, u + len - 8, 8);
    }
    out->len += len;
    out->ptr[out->len] = '\0';
    return true;
out_unchanged:
    o[0] = '\0'; /* the words copied so far lie past the end again */
    return false;
}

/* The value of a hexadecimal digit (either case), or -1 for any other byte. */
static inline int rein__hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/*
 * FNV-1a over len bytes, continuing from h: start with REIN_FNV32_INIT / REIN_FNV64_INIT and
 * feed the pieces of a key in turn. Not for anything an attacker must not collide.
 */
#define REIN_FNV32_INIT 2166136261u
#define REIN_FNV64_INIT 0xcbf29ce484222325ULL
static inline uint32_t rein__fnv1a32(uint32_t h, const void *data, size_t len)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}
static inline uint64_t rein__fnv1a64(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

/* ---- ids.c ---- */
/* The time on clock ms milliseconds from now (a negative ms counts as 0), as the absolute
 * deadline pthread_cond_timedwait() takes: clock must be the one the condition variable was
 * made with (CLOCK_REALTIME unless pthread_condattr_setclock() chose another). */
struct timespec rein__deadline_ts(clockid_t clock, int64_t ms);

/* ---- text.c ---- */
/* Length of the valid UTF-8 sequence at s (1-4; avail bytes there), or 0 when it is not
 * valid: no overlong forms, surrogates or code points above U+10FFFF. */
size_t rein__utf8_seq_len(const unsigned char *s, size_t avail);

/* ---- json_fast.c ---- */
/* The value of len bytes of JSON text when rein's own parser is sure of it (exactly the value
 * jansson's loader would build), else NULL: jansson must decide, errors included. */
json_t *rein__json_parse_fast(const char *text, size_t len);
/* Its pieces, shared with the document form (doc.c), so both accept exactly the same text.
 * rein__jf_scan_string: from c (after the opening quote) to the closing quote, which it
 * returns, or NULL (a control byte, or the text ends); *escaped when a backslash came, *high
 * when a byte >= 0x80 did. rein__jf_unescape: decodes the escapes of s[0..len) into out (at
 * least len bytes), returning the length, or -1 for a bad or lone-surrogate escape.
 * rein__jf_utf8_ok: s[0..len) is UTF-8 as jansson's check has it (no overlong forms,
 * surrogates or code points above U+10FFFF). rein__jf_number: the number at *p (advanced past
 * it): 1 an integer (*i), 2 a finite real (*d), 0 when jansson must decide (bad grammar, out
 * of range). */
const char *rein__jf_scan_string(const char *c, const char *end, bool *escaped, bool *high);
long rein__jf_unescape(const char *s, size_t len, char *out);
bool rein__jf_utf8_ok(const char *s, size_t len);
int rein__jf_number(const char **p, const char *end, json_int_t *i, double *d);

/* ---- json.c ---- */
/* rein_json_type_name for a json_type ("object", …, "number" for a real, "boolean"). */
const char *rein__json_type_word(int type);
/* A new JSON string holding s (len bytes, any bytes), invalid UTF-8 as U+FFFD; NULL when
 * memory is exhausted. */
json_t *rein__json_string_lossy(const char *s, size_t len);

/* ---- curl.c ---- */
/*
 * curl_global_init, once per process whoever asks first (it is not thread-safe in older
 * libcurl, so every module goes through this one guard). REIN_OK, or REIN_EINTERNAL with err naming
 * libcurl's reason.
 */
rein_err rein__curl_global_init(rein_error *err);
/*
 * Runs a libcurl transfer (easy, borrowed) on a multi handle that also wakes on cancel (may be
 * NULL). Returns the transfer's CURLcode, or CURLE_ABORTED_BY_CALLBACK when cancelled
 * (*cancelled set). Used by the HTTP skill runner and the MCP client's HTTP transport.
 */
CURLcode rein__curl_perform(CURL *easy, rein_cancel *cancel, bool *cancelled);

/* ---- env.c ---- */
/*
 * prefix (copied) followed by value with each ${VAR} replaced from rein's environment (unset:
 * empty), so secrets stay out of manifests and configuration files. New string (rein_free),
 * or NULL when memory is exhausted.
 */
char *rein__expand_env(const char *prefix, const char *value);
/*
 * The same, with check (when not NULL) asked first for each ${VAR} (name is the n bytes
 * after "${", not NUL-terminated; ud is passed on): a check that returns an error (set in err)
 * stops the expansion with it, so a caller can allow only some variables. *out is the new
 * string (rein_free), NULL on error; REIN_ENOMEM when memory is exhausted.
 */
typedef rein_err (*rein__env_check)(const char *name, size_t n, void *ud, rein_error *err);
rein_err rein__expand_env_checked(const char *prefix, const char *value, rein__env_check check,
                                  void *ud, char **out, rein_error *err);

/* ---- SHA-256 (FIPS 180-4), verification's hashes and PKCE (sha256.c) ---- */

struct rein__sha256 {
    uint32_t h[8];
    uint64_t total; /* bytes added so far */
    uint8_t block[64];
    size_t fill; /* bytes waiting in block */
};
void rein__sha256_init(struct rein__sha256 *s);
void rein__sha256_add(struct rein__sha256 *s, const void *data, size_t len);
/* Finishes s and writes 32 bytes. s must be initialised again before reuse. */
void rein__sha256_final(struct rein__sha256 *s, uint8_t out[32]);
/* Finishes s and writes the first nhex hex digits of the digest and a NUL (nhex <= 64). */
void rein__sha256_hex(struct rein__sha256 *s, char *out, size_t nhex);
/* HMAC-SHA256 (RFC 2104) of data under key into out (AWS SigV4, src/providers/sigv4.c). */
void rein__hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                       uint8_t out[32]);

/* ---- base64 (RFC 4648 with padding; base64.c) ---- */

/* New NUL-terminated base64 text of len bytes (rein_malloc'd), or NULL when memory runs out. */
char *rein__base64(const unsigned char *p, size_t len);
/* The bytes len characters of base64 text stand for, in a new buffer (rein_malloc'd) with a
 * NUL after them and their count in *out_len; NULL when the text is not base64 (length not a
 * multiple of 4, a character outside the alphabet, padding anywhere but the end) or memory
 * runs out. */
char *rein__base64_decode(const char *p, size_t len, size_t *out_len);
/* Whether len characters at p are base64 text as rein__base64_decode takes it (the empty text
 * is); decodes nothing, so it costs a pass over a large attachment and no copy of it. */
bool rein__base64_valid(const char *p, size_t len);

/* ---- JWT (jwt.c): tokens rein signs to present itself ---- */

/* Appends the base64url text (RFC 4648 §5, no padding) of len bytes to b. */
rein_err rein__base64url_add(struct rein_buf *b, const void *p, size_t len);
/*
 * Appends a signed JWT (JWS compact form) to b: header (borrowed, may be NULL; "alg" is set)
 * and claims (borrowed) as base64url JSON, then the signature. alg "RS256" (an RSA key of 2048
 * bits or more) or "ES256" (an EC key on P-256, signed as r || s), NULL for the one key_pem's
 * kind signs with. key_pem: a PEM private key, NUL-terminated; one that needs a passphrase is
 * refused. REIN_EINVAL (err says why) or REIN_ENOMEM; b may then hold a part.
 */
rein_err rein__jwt_sign(const char *alg, const char *key_pem, const json_t *header,
                        const json_t *claims, struct rein_buf *b, rein_error *err);

/* ---- XML (xml.c): the expat parsers of every reader of XML from outside (verify's test and
 * coverage reports, the providers' STS answers) ---- */

/*
 * The first member of an XML reader's state: expat calls the reader's handlers with a pointer
 * to it (so to the reader), and the shared entity handler stops the parser and sets entity:
 * none of these documents declares entities, and entities are how XML bombs are built.
 */
struct rein__xml_guard {
    XML_Parser parser;
    bool entity; /* a declaration was refused */
};

/*
 * Starts (or, after a document, restarts) g->parser, allocating through rein_malloc, with the
 * handlers (text may be NULL) called with g. false on ENOMEM. The caller frees g->parser with
 * XML_ParserFree.
 */
bool rein__xml_start(struct rein__xml_guard *g, XML_StartElementHandler start,
                     XML_EndElementHandler end, XML_CharacterDataHandler text);

#endif /* REIN_CORE_INTERNAL_H */
