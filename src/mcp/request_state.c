/*
 * The requestState of MCP 2026-07-28's input-required results (SEP-2322), for rein as a
 * stateless server: the answers a client gave in earlier rounds travel with it, so any round
 * can go to any process that holds the key. It is
 *
 *   base64(JSON {"v": 1, "tool", "args": SHA-256 of the arguments' sorted text, "answers",
 *                "exp": Unix seconds}) "." hex(HMAC-SHA256(key, the base64 text))
 *
 * so a client can read it but not change it, reuse it for another tool or other arguments, or
 * keep it past an hour. The key is derived from a configured secret (servers that share it, such
 * as replicas, accept each other's states), else kept in the state folder (it outlives a
 * restart), else random per server.
 */
#include "mcp/mcp_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* ---- the key ------------------------------------------------------------------------------ */

#define KEY_FILE "mcp-request-state.key"

static bool from_hex(const char *text, uint8_t key[32])
{
    for (size_t i = 0; i < 64; i++) {
        char ch = text[i];
        int v = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        if (v < 0)
            return false;
        key[i / 2] = (uint8_t)(i % 2 ? (key[i / 2] | v) : v << 4);
    }
    return true;
}

/* Reads a key file that only its owner (this user) can read; 1 read, 0 absent, -1 refused. */
static int read_key(const char *path, uint8_t key[32], char *why, size_t size)
{
    struct stat st;
    char text[66];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(why, size, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) ||
        st.st_uid != geteuid()) {
        close(fd);
        snprintf(why, size, "%s is readable by others or not yours; remove it", path);
        return -1;
    }
    n = read(fd, text, sizeof(text));
    close(fd);
    if (n < 64 || !from_hex(text, key)) {
        snprintf(why, size, "%s does not hold a key (64 hex digits); remove it", path);
        return -1;
    }
    return 1;
}

/* Makes a new key file (mode 0600) unless another process just did; then reads the one there. */
static int make_key(const char *dir, const char *path, uint8_t key[32], char *why, size_t size)
{
    static const char digits[] = "0123456789abcdef";
    char tmp[3300], text[65];
    uint8_t fresh[32];
    rein_error err;
    int fd, rc;
    bool ok;

    rein_error_clear(&err);
    if (rein__mcp_make_state_dir(dir, &err) != REIN_OK) {
        snprintf(why, size, "%s", err.msg);
        return -1;
    }
    rein_random_bytes(fresh, sizeof(fresh));
    for (size_t i = 0; i < 32; i++) {
        text[2 * i] = digits[fresh[i] >> 4];
        text[2 * i + 1] = digits[fresh[i] & 15];
    }
    text[64] = '\n';
    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
    (void)unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    ok = fd >= 0 && fchmod(fd, 0600) == 0 && write(fd, text, 65) == 65 && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    /* link() does not replace: of two processes starting at once, one key wins, and both use
     * it. */
    if (!ok || (link(tmp, path) != 0 && errno != EEXIST)) {
        snprintf(why, size, "cannot write %s: %s", path, strerror(errno));
        (void)unlink(tmp);
        return -1;
    }
    (void)unlink(tmp);
    rc = read_key(path, key, why, size);
    return rc == 0 ? -1 : rc;
}

rein_err rein__mcp_state_key(const char *secret, uint8_t key[32], char *where, size_t size)
{
    static const char label[] = "rein MCP requestState key, version 1";
    char dir[3000], path[3100];
    int rc;

    if (secret && secret[0]) {
        /* HMAC(secret, label): the secret itself never signs anything. */
        rein__hmac_sha256(secret, strlen(secret), label, sizeof(label) - 1, key);
        snprintf(where, size, "the configured secret");
        return REIN_OK;
    }
    if (!rein__mcp_state_dir(dir, sizeof(dir)) ||
        snprintf(path, sizeof(path), "%s/%s", dir, KEY_FILE) >= (int)sizeof(path)) {
        snprintf(where, size, "no state folder: set REIN_STATE_DIR or HOME");
        return REIN_ENOTFOUND;
    }
    rc = read_key(path, key, where, size);
    if (rc == 0)
        rc = make_key(dir, path, key, where, size);
    if (rc < 0)
        return REIN_EIO;
    snprintf(where, size, "%s", path);
    return REIN_OK;
}
