/*
 * Standard base64 (RFC 4648, section 4, with padding): MCP blobs and header values, OAuth's
 * PKCE and basic credentials, and binary replies in recordings all use this one alphabet.
 */
#include "core/internal.h"

#include <rein/core.h>

#include <stdint.h>
#include <string.h>

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *rein__base64(const unsigned char *p, size_t len)
{
    size_t n = 4 * ((len + 2) / 3), o = 0;
    char *out = rein_malloc(n + 1);

    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        out[o++] = b64[(v >> 18) & 63];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = i + 1 < len ? b64[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? b64[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

static int b64_value(unsigned char c)
{
    const char *at = c ? memchr(b64, c, 64) : NULL;

    return at ? (int)(at - b64) : -1;
}

char *rein__base64_decode(const char *p, size_t len, size_t *out_len)
{
    size_t o = 0;
    char *out;

    if (len % 4)
        return NULL;
    out = rein_malloc(len / 4 * 3 + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        bool last = i + 4 == len;
        for (int k = 0; k < 4; k++) {
            v[k] = b64_value((unsigned char)p[i + k]);
            /* Padding only closes the last group: "xx==" or "xxx=". */
            if (v[k] < 0 && !(last && p[i + k] == '=' && k >= 2 && (k == 3 || p[i + 3] == '='))) {
                rein_free(out);
                return NULL;
            }
        }
        out[o++] = (char)((v[0] << 2) | (v[1] >> 4));
        if (v[2] >= 0)
            out[o++] = (char)(((v[1] & 15) << 4) | (v[2] >> 2));
        if (v[2] >= 0 && v[3] >= 0)
            out[o++] = (char)(((v[2] & 3) << 6) | v[3]);
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}

bool rein__base64_valid(const char *p, size_t len)
{
    size_t pad = 0;

    if (len % 4)
        return false;
    while (pad < 2 && pad < len && p[len - 1 - pad] == '=')
        pad++;
    for (size_t i = 0; i < len - pad; i++) {
        char c = p[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/'))
            return false;
    }
    return true;
}
