/*
 * SHA-256 (FIPS 180-4): verification's tree, state and failure hashes, and the MCP client's
 * PKCE code challenge (RFC 7636 S256); and HMAC-SHA256 (RFC 2104) on it, for Bedrock's AWS
 * Signature Version 4. Declared in core/internal.h.
 */
#include "core/internal.h"

#include <string.h>

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

void rein__sha256_init(struct rein__sha256 *s)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof(iv));
    s->total = 0;
    s->fill = 0;
}

void rein__sha256_add(struct rein__sha256 *s, const void *data, size_t len)
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

void rein__sha256_final(struct rein__sha256 *s, uint8_t out[32])
{
    uint64_t bits = s->total * 8;
    uint8_t pad[72] = {0x80};
    size_t padlen = (s->fill < 56 ? 56 : 120) - s->fill;

    for (int i = 0; i < 8; i++)
        pad[padlen + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
    /* bits was taken before the padding is added, so the padding does not count itself. */
    rein__sha256_add(s, pad, padlen + 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->h[i];
    }
}

void rein__sha256_hex(struct rein__sha256 *s, char *out, size_t nhex)
{
    static const char hex[] = "0123456789abcdef";
    uint8_t d[32];

    rein__sha256_final(s, d);
    if (nhex > 64)
        nhex = 64;
    for (size_t i = 0; i < nhex; i++)
        out[i] = hex[(d[i / 2] >> (i % 2 ? 0 : 4)) & 0xf];
    out[nhex] = '\0';
}

void rein__hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                       uint8_t out[32])
{
    uint8_t k[64], pad[64], inner[32];
    struct rein__sha256 s;

    memset(k, 0, sizeof(k));
    if (key_len > sizeof(k)) {
        rein__sha256_init(&s);
        rein__sha256_add(&s, key, key_len);
        rein__sha256_final(&s, k);
    } else {
        memcpy(k, key, key_len);
    }
    for (size_t i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x36;
    rein__sha256_init(&s);
    rein__sha256_add(&s, pad, 64);
    rein__sha256_add(&s, data, len);
    rein__sha256_final(&s, inner);
    for (size_t i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x5c;
    rein__sha256_init(&s);
    rein__sha256_add(&s, pad, 64);
    rein__sha256_add(&s, inner, 32);
    rein__sha256_final(&s, out);
}
