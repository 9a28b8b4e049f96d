/*
 * The requestState of MCP 2026-07-28's input-required results (SEP-2322), for rein as a
 * stateless server: the answers a client gave in earlier rounds travel with it, so any round
 * can go to any process that holds the key. It is
 *
 *   base64(JSON {"v": 1, "tool", "args": SHA-256 of the arguments' sorted text, "answers",
 *                "exp": Unix seconds}) "." hex(HMAC-SHA256(key, the base64 text))
 *
 * so a client can read it but not change it, reuse it for another tool or other arguments, or
 * keep it past an hour. The key is the server's (random when it starts).
 */
#include "mcp/mcp_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE_VERSION   1
#define STATE_LIFE_S    3600
#define STATE_MAX_BYTES ((size_t)1 << 20)

static int key_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A copy of v whose objects list their members in key order, so that rein_json_dump (which
 * keeps insertion order) writes the same text for arguments sent with members in any order.
 * New reference or NULL. */
static json_t *sorted_copy(const json_t *v)
{
    if (json_is_array(v)) {
        json_t *out = json_array();
        size_t i;
        json_t *m;

        if (!out)
            return NULL;
        json_array_foreach(v, i, m)
        {
            if (json_array_append_new(out, sorted_copy(m)) != 0) {
                json_decref(out);
                return NULL;
            }
        }
        return out;
    }
    if (!json_is_object(v))
        return json_deep_copy(v);
    size_t n = json_object_size(v), i = 0;
    const char **keys = calloc(n ? n : 1, sizeof(*keys));
    json_t *out = json_object();
    const char *k;
    json_t *m;

    if (!out || !keys) {
        free(keys);
        json_decref(out);
        return NULL;
    }
    json_object_foreach((json_t *)v, k, m)
    {
        keys[i++] = k;
    }
    if (n)
        qsort(keys, n, sizeof(*keys), key_cmp);
    for (i = 0; i < n; i++)
        if (json_object_set_new(out, keys[i], sorted_copy(json_object_get(v, keys[i]))) != 0) {
            json_decref(out);
            out = NULL;
            break;
        }
    free(keys);
    return out;
}

bool rein__mcp_json_hash(const json_t *args, char out[65])
{
    json_t *sorted = sorted_copy(args);
    struct rein_buf text;
    struct rein__sha256 h;
    bool ok;

    rein_buf_init(&text, 0);
    ok = sorted && rein_json_dump(&text, sorted) == REIN_OK;
    json_decref(sorted);
    if (ok) {
        rein__sha256_init(&h);
        rein__sha256_add(&h, text.ptr, text.len);
        rein__sha256_hex(&h, out, 64);
    }
    rein_buf_release(&text);
    return ok;
}

static void mac_hex(const uint8_t key[32], const char *text, size_t len, char out[65])
{
    static const char digits[] = "0123456789abcdef";
    uint8_t mac[32];

    rein__hmac_sha256(key, 32, text, len, mac);
    for (size_t i = 0; i < 32; i++) {
        out[2 * i] = digits[mac[i] >> 4];
        out[2 * i + 1] = digits[mac[i] & 15];
    }
    out[64] = '\0';
}

char *rein__mcp_state_seal(const uint8_t key[32], const char *tool, const json_t *args,
                           const json_t *answers)
{
    char hash[65], mac[65];
    json_t *doc;
    char *json = NULL, *b64 = NULL, *out = NULL;

    if (!rein__mcp_json_hash(args, hash))
        return NULL;
    doc = json_pack("{s:i, s:s, s:s, s:O, s:I}", "v", STATE_VERSION, "tool", tool, "args", hash,
                    "answers", (json_t *)answers, "exp",
                    (json_int_t)(rein_wall_ms() / 1000) + STATE_LIFE_S);
    json = doc ? rein_json_dumps(doc) : NULL;
    b64 = json ? rein__base64((const unsigned char *)json, strlen(json)) : NULL;
    if (b64) {
        mac_hex(key, b64, strlen(b64), mac);
        out = rein_asprintf("%s.%s", b64, mac);
    }
    json_decref(doc);
    rein_free(json);
    rein_free(b64);
    return out;
}

rein_err rein__mcp_state_open(const uint8_t key[32], const char *state, const char *tool,
                              const json_t *args, json_t **answers, char *why, size_t size)
{
    const char *dot = state ? strrchr(state, '.') : NULL;
    char mac[65], hash[65];
    unsigned diff = 0;
    size_t len, n;
    char *json;
    json_t *doc;

    *answers = NULL;
    if (!dot || strlen(dot + 1) != 64 || (size_t)(dot - state) > STATE_MAX_BYTES) {
        snprintf(why, size, "not a state this server gave (its integrity check failed)");
        return REIN_EINVALID;
    }
    len = (size_t)(dot - state);
    mac_hex(key, state, len, mac);
    for (size_t i = 0; i < 64; i++) /* in constant time */
        diff |= (unsigned)(mac[i] ^ dot[1 + i]);
    if (diff) {
        snprintf(why, size, "its integrity check failed (changed, or from another server)");
        return REIN_EINVALID;
    }
    json = rein__base64_decode(state, len, &n);
    doc = json ? rein_json_parse(json, n, 0, NULL) : NULL;
    rein_free(json);
    if (!json_is_object(doc) || json_integer_value(json_object_get(doc, "v")) != STATE_VERSION ||
        !json_is_object(json_object_get(doc, "answers"))) {
        json_decref(doc);
        snprintf(why, size, "a state of another version");
        return REIN_EINVALID;
    }
    if (strcmp(json_string_value(json_object_get(doc, "tool")) ?: "", tool) != 0 ||
        !rein__mcp_json_hash(args, hash) ||
        strcmp(json_string_value(json_object_get(doc, "args")) ?: "", hash) != 0) {
        json_decref(doc);
        snprintf(why, size, "given for another tool or other arguments");
        return REIN_EINVALID;
    }
    if (json_integer_value(json_object_get(doc, "exp")) < rein_wall_ms() / 1000) {
        json_decref(doc);
        snprintf(why, size, "expired (a state lasts %d s); call the tool again without it",
                 STATE_LIFE_S);
        return REIN_EINVALID;
    }
    *answers = json_incref(json_object_get(doc, "answers"));
    json_decref(doc);
    return REIN_OK;
}
