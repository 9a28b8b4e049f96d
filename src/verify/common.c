/*
 * Small pieces the rest of src/verify/ stands on: the names of the public enums, confidence
 * propagation, SHA-256 (written from FIPS 180-4; used for tree hashes, state hashes and
 * failure signatures, where two different states must not collide by accident), and text
 * helpers that clean command output (ANSI colours, carriage returns) and cut its tail.
 */
#include "verify_int.h"

#include <math.h>
#include <string.h>

#define NAME(id, name) name,
static const char *const priority_names[] = {REIN_VERIFY_PRIORITY_MAP(NAME)};
static const char *const mode_names[] = {REIN_VERIFY_MODE_MAP(NAME)};
static const char *const status_names[] = {REIN_VERIFY_STATUS_MAP(NAME)};
static const char *const verdict_names[] = {REIN_VERIFY_VERDICT_MAP(NAME)};
static const char *const format_names[] = {REIN_VERIFY_FORMAT_MAP(NAME)};
#undef NAME

const char *rein_verify_priority_name(enum rein_verify_priority p)
{
    return (unsigned)p < REIN_ARRAY_SIZE(priority_names) ? priority_names[p] : "P?";
}

const char *rein_verify_mode_name(enum rein_verify_mode m)
{
    return (unsigned)m < REIN_ARRAY_SIZE(mode_names) ? mode_names[m] : "unknown";
}

bool rein_verify_mode_parse(const char *text, enum rein_verify_mode *out)
{
    for (size_t i = 1; text && i < REIN_ARRAY_SIZE(mode_names); i++) {
        if (strcmp(text, mode_names[i]) == 0) {
            *out = (enum rein_verify_mode)i;
            return true;
        }
    }
    return false;
}

const char *rein_verify_status_name(enum rein_verify_status s)
{
    return (unsigned)s < REIN_ARRAY_SIZE(status_names) ? status_names[s] : "unknown";
}

const char *rein_verify_verdict_name(enum rein_verify_verdict v)
{
    return (unsigned)v < REIN_ARRAY_SIZE(verdict_names) ? verdict_names[v] : "UNKNOWN";
}

const char *rein_verify_format_name(enum rein_verify_format f)
{
    return (unsigned)f < REIN_ARRAY_SIZE(format_names) ? format_names[f] : "unknown";
}

bool rein_verify_format_parse(const char *text, enum rein_verify_format *out)
{
    for (size_t i = 0; text && i < REIN_ARRAY_SIZE(format_names); i++) {
        if (strcmp(text, format_names[i]) == 0) {
            *out = (enum rein_verify_format)i;
            return true;
        }
    }
    /* Names people reach for: clang diagnostics look like gcc's. */
    if (text && strcmp(text, "clang") == 0) {
        *out = REIN_VERIFY_FORMAT_GCC;
        return true;
    }
    if (text && strcmp(text, "junit-xml") == 0) {
        *out = REIN_VERIFY_FORMAT_JUNIT;
        return true;
    }
    return false;
}

/* ---- confidence ---- */

static double clamp01(double c)
{
    if (isnan(c) || c < 0)
        return 0;
    return c > 1 ? 1 : c;
}

double rein_verify_confidence_propagate(double own, const double *inputs, size_t n)
{
    double c = clamp01(own);

    /* Uncertainty only accumulates: downstream is never surer than what it was built on. */
    for (size_t i = 0; inputs && i < n; i++) {
        double in = clamp01(inputs[i]);
        if (in < c)
            c = in;
    }
    return c;
}

enum rein_verify_confidence_level rein_verify_confidence_level(double c)
{
    c = clamp01(c);
    if (c >= REIN_VERIFY_CONFIDENCE_HIGH)
        return REIN_VERIFY_CONFIDENCE_LEVEL_HIGH;
    if (c >= REIN_VERIFY_CONFIDENCE_LOW)
        return REIN_VERIFY_CONFIDENCE_LEVEL_MEDIUM;
    return REIN_VERIFY_CONFIDENCE_LEVEL_LOW;
}

const char *rein_verify_confidence_label(double c)
{
    switch (rein_verify_confidence_level(c)) {
    case REIN_VERIFY_CONFIDENCE_LEVEL_HIGH:
        return "verified";
    case REIN_VERIFY_CONFIDENCE_LEVEL_MEDIUM:
        return "UNVERIFIED";
    case REIN_VERIFY_CONFIDENCE_LEVEL_LOW:
        break;
    }
    return "withheld";
}

/* ---- SHA-256 ---- */

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror32(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

static void sha_block(struct rein__sha256 *s, const uint8_t *p)
{
    uint32_t w[64], a, b, c, d, e, f, g, h;

    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
    e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) +
                      sha_k[i] + w[i];
        uint32_t t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g, g = f, f = e, e = d + t1;
        d = c, c = b, b = a, a = t1 + t2;
    }
    s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
    s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

void rein__verify_sha256_init(struct rein__sha256 *s)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof(iv));
    s->total = 0;
    s->fill = 0;
}

void rein__verify_sha256_add(struct rein__sha256 *s, const void *data, size_t len)
{
    const uint8_t *p = data;

    s->total += len;
    if (s->fill) {
        size_t take = 64 - s->fill < len ? 64 - s->fill : len;
        memcpy(s->block + s->fill, p, take);
        s->fill += take;
        p += take;
        len -= take;
        if (s->fill < 64)
            return;
        sha_block(s, s->block);
        s->fill = 0;
    }
    for (; len >= 64; p += 64, len -= 64)
        sha_block(s, p);
    if (len)
        memcpy(s->block, p, len);
    s->fill = len;
}

void rein__verify_sha256_final(struct rein__sha256 *s, uint8_t out[32])
{
    uint64_t bits = s->total * 8;
    uint8_t pad[72] = {0x80};
    size_t padlen = (s->fill < 56 ? 56 : 120) - s->fill;

    for (int i = 0; i < 8; i++)
        pad[padlen + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
    /* bits was taken before the padding is added, so the padding does not count itself. */
    rein__verify_sha256_add(s, pad, padlen + 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->h[i];
    }
}

void rein__verify_sha256_hex(struct rein__sha256 *s, char *out, size_t nhex)
{
    static const char hex[] = "0123456789abcdef";
    uint8_t d[32];

    rein__verify_sha256_final(s, d);
    if (nhex > 64)
        nhex = 64;
    for (size_t i = 0; i < nhex; i++)
        out[i] = hex[(d[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
    out[nhex] = '\0';
}

/* ---- text ---- */

/* Length of the escape sequence starting at p[0] == ESC, within n bytes. */
static size_t escape_len(const unsigned char *p, size_t n)
{
    size_t i = 1;

    if (n < 2)
        return 1;
    if (p[1] == '[') { /* CSI: parameters, intermediates, one final byte */
        for (i = 2; i < n && !(p[i] >= 0x40 && p[i] <= 0x7e); i++)
            ;
        return i < n ? i + 1 : n;
    }
    if (p[1] == ']') { /* OSC: ends with BEL or ESC \ */
        for (i = 2; i < n; i++) {
            if (p[i] == 0x07)
                return i + 1;
            if (p[i] == 0x1b && i + 1 < n && p[i + 1] == '\\')
                return i + 2;
        }
        return n;
    }
    return 2; /* a two-byte escape */
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;

    if (!len || len > n)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xc0) != 0x80)
            return 0;
    }
    if ((len == 2 && c < 0xc2) || (len == 3 && c == 0xe0 && s[1] < 0xa0) ||
        (len == 3 && c == 0xed && s[1] > 0x9f) ||
        (len == 4 && (c > 0xf4 || (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))))
        return 0;
    return len;
}

void rein__verify_utf8_fix(char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t len = utf8_len((const unsigned char *)s + i, n - i);
        if (len == 0) {
            s[i++] = '?';
            continue;
        }
        i += len;
    }
}

json_t *rein__verify_jstr(const char *s)
{
    json_t *v;
    char *copy;

    if (!s)
        return json_null();
    v = json_string(s);
    if (v)
        return v;
    copy = rein_strdup(s);
    if (!copy)
        return NULL;
    rein__verify_utf8_fix(copy, strlen(copy));
    v = json_string(copy);
    rein_free(copy);
    return v;
}

char *rein__verify_clean_text(const char *in, size_t len, size_t *out_len)
{
    const unsigned char *p = (const unsigned char *)in;
    char *out = rein_malloc(len + 1);
    size_t o = 0;

    if (!out)
        return NULL;
    for (size_t i = 0; i < len;) {
        if (p[i] == 0x1b) {
            i += escape_len(p + i, len - i);
        } else if (p[i] == '\r') {
            out[o++] = '\n';
            i += (i + 1 < len && p[i + 1] == '\n') ? 2 : 1;
        } else {
            out[o++] = p[i] ? (char)p[i] : ' ';
            i++;
        }
    }
    out[o] = '\0';
    /* Tools print bytes, not always UTF-8; what rein reports must be valid text. */
    rein__verify_utf8_fix(out, o);
    if (out_len)
        *out_len = o;
    return out;
}

const char *rein__verify_tail(const char *text, size_t len, size_t max, size_t *tail_len)
{
    const char *start = text;

    if (len > max) {
        const char *nl;
        start = text + (len - max);
        nl = memchr(start, '\n', max);
        /* Start at a line when one begins in the window; else at a character boundary. */
        if (nl && nl + 1 < text + len)
            start = nl + 1;
        else
            while (start < text + len && ((unsigned char)*start & 0xc0) == 0x80)
                start++;
    }
    *tail_len = (size_t)(text + len - start);
    return start;
}

bool rein__verify_has_prefix_ci(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++) {
        char a = *s, b = *prefix;
        if (a >= 'A' && a <= 'Z')
            a = (char)(a - 'A' + 'a');
        if (b >= 'A' && b <= 'Z')
            b = (char)(b - 'A' + 'a');
        if (a != b || !*s)
            return false;
    }
    return true;
}
