/*
 * The resources rein serves over MCP (resources/list, resources/templates/list,
 * resources/read, subscriptions and completion of template variables), from three sources:
 *
 *   declared   resources.json files (rein_mcp_server_load_dir): fixed resources with their
 *              text, base64 blob or file, and templates whose text takes the URI's variables;
 *   files      every regular file under the allowed roots (the file skills' roots), as
 *              file:// URIs, read as text when they are UTF-8 and as a blob otherwise; a URI
 *              outside the roots, or one whose symbolic links lead out, is not found;
 *   rein://    the stored conversations (when a store is given):
 *              rein://conversations/{id}/transcript (the messages) and
 *              rein://conversations/{id}/ledger (every tool call with its outcome).
 *
 * Listing pages through the sources in that order; the cursor is "<source>:<position>", so
 * it stays meaningful while conversations come and go. A resource's fingerprint (a file's
 * size and modification time, a conversation's message count and update time) is what a
 * subscription watches: when it changes, the subscriber gets notifications/resources/updated.
 *
 * URI templates follow RFC 6570 as far as matching needs: literal text, {name} (one path
 * segment: no '/', '?' or '#') and {+name} (anything).
 */
#include "mcp/mcp_int.h"

#include <rein/skills.h>
#include <rein/store.h>

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define WHERE           "mcp/resources"
#define PAGE_SIZE       100
#define MAX_WALK        10000             /* files listed from the roots at most */
#define MAX_READ        ((size_t)8 << 20) /* a resource larger than this is refused */
#define MAX_COMPLETIONS 100
#define CONV_TRANSCRIPT "/transcript"
#define CONV_LEDGER     "/ledger"
#define CONV_PREFIX     "rein://conversations/"

struct rein__mcp_resources {
    json_t *declared;         /* [{"def": Resource, "text"|"blob"|"file"}] */
    json_t *templates;        /* [{"def": ResourceTemplate, "text"|"blob"}] */
    rein_skills_roots *roots; /* NULL: no file resources */
    rein_store *store;        /* borrowed; NULL: no conversations */
};

/* ---- small helpers ---------------------------------------------------------------------- */

/* True when len bytes are UTF-8 text without NUL bytes (what a text resource may hold). */
static bool is_text(const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (c == 0 || n == 0 || i + n > len)
            return false;
        for (size_t k = 1; k < n; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
        }
        i += n;
    }
    return true;
}

/* MIME type from a file name's extension; NULL when unknown. */
static const char *mime_of(const char *path)
{
    static const char *const table[][2] = {{".txt", "text/plain"},
                                           {".md", "text/markdown"},
                                           {".json", "application/json"},
                                           {".c", "text/x-c"},
                                           {".h", "text/x-c"},
                                           {".py", "text/x-python"},
                                           {".js", "text/javascript"},
                                           {".mjs", "text/javascript"},
                                           {".ts", "text/x-typescript"},
                                           {".html", "text/html"},
                                           {".css", "text/css"},
                                           {".csv", "text/csv"},
                                           {".xml", "application/xml"},
                                           {".yaml", "application/yaml"},
                                           {".yml", "application/yaml"},
                                           {".sh", "text/x-shellscript"},
                                           {".log", "text/plain"},
                                           {".png", "image/png"},
                                           {".jpg", "image/jpeg"},
                                           {".jpeg", "image/jpeg"},
                                           {".gif", "image/gif"},
                                           {".webp", "image/webp"},
                                           {".svg", "image/svg+xml"},
                                           {".pdf", "application/pdf"},
                                           {".wav", "audio/wav"},
                                           {".mp3", "audio/mpeg"},
                                           {".ogg", "audio/ogg"}};
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');

    if (!dot || (slash && dot < slash))
        return NULL;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (strcasecmp(dot, table[i][0]) == 0)
            return table[i][1];
    }
    return NULL;
}

/* "file://" + path with every byte outside [A-Za-z0-9-._~/] percent-encoded; new or NULL. */
static char *file_uri(const char *path)
{
    struct rein_buf b;
    char *out;

    rein_buf_init(&b, 0);
    if (rein_buf_adds(&b, "file://"))
        goto fail;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || strchr("-._~/", *p);
        if (plain ? rein_buf_addch(&b, (char)*p) : rein_buf_addf(&b, "%%%02X", *p))
            goto fail;
    }
    out = rein_buf_detach(&b, NULL);
    return out;
fail:
    rein_buf_release(&b);
    return NULL;
}

/* The path of a file:// URI, percent-decoded (new); NULL when it is not one or is malformed
 * (an encoded NUL, a host other than localhost). */
static char *uri_path(const char *uri)
{
    const char *p;
    char *out, *o;

    if (strncmp(uri, "file://", 7) != 0)
        return NULL;
    p = uri + 7;
    if (strncmp(p, "localhost/", 10) == 0)
        p += 9;
    if (*p != '/')
        return NULL;
    out = o = rein_malloc(strlen(p) + 1);
    if (!out)
        return NULL;
    for (; *p && *p != '?' && *p != '#'; p++) {
        if (*p == '%') {
            char hex[3] = {p[1], p[1] ? p[2] : 0, 0};
            char *end = NULL;
            long v = strtol(hex, &end, 16);
            if (!p[1] || !p[2] || *end || v == 0) {
                rein_free(out);
                return NULL;
            }
            *o++ = (char)v;
            p += 2;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return out;
}

/* ---- URI templates ---------------------------------------------------------------------- */

/*
 * Matches uri against template (literal text, {name}, {+name}); on a match returns true and,
 * when vars is not NULL, sets each variable's text in it.
 */
static bool tmpl_match(const char *t, const char *u, json_t *vars)
{
    while (*t) {
        if (*t != '{') {
            if (*t != *u)
                return false;
            t++;
            u++;
            continue;
        }
        const char *close = strchr(t, '}');
        if (!close)
            return false;
        bool reserved = t[1] == '+';
        const char *name = t + 1 + (reserved ? 1 : 0);
        size_t nlen = (size_t)(close - name);
        const char *rest = close + 1;
        /* The shortest value that lets the rest match; a simple variable stays in one
         * segment and is never empty. */
        for (const char *end = u + 1; *(end - 1); end++) {
            if (!reserved && strchr("/?#", end[-1]))
                break;
            if (tmpl_match(rest, end, vars)) {
                if (vars) {
                    char key[64];
                    snprintf(key, sizeof(key), "%.*s", (int)(nlen < 63 ? nlen : 63), name);
                    json_object_set_new(vars, key, json_stringn(u, (size_t)(end - u)));
                }
                return true;
            }
            if (!*end)
                break;
        }
        return false;
    }
    return *u == '\0';
}

bool rein__mcp_uri_template_match(const char *tmpl, const char *uri, json_t *vars)
{
    return tmpl && uri && tmpl_match(tmpl, uri, vars);
}

/* text with every "{name}" of vars replaced by its value (new), or NULL. */
static char *fill(const char *text, const json_t *vars)
{
    struct rein_buf b;

    rein_buf_init(&b, 0);
    for (const char *p = text; *p;) {
        const char *close = *p == '{' ? strchr(p, '}') : NULL;
        const json_t *v = NULL;
        if (close) {
            char key[64];
            snprintf(key, sizeof(key), "%.*s", (int)(close - p - 1 < 63 ? close - p - 1 : 63),
                     p + 1);
            v = json_object_get(vars, key);
        }
        if (json_is_string(v)) {
            if (rein_buf_add(&b, json_string_value(v), json_string_length(v)))
                goto fail;
            p = close + 1;
        } else if (rein_buf_addch(&b, *p++)) {
            goto fail;
        }
    }
    return rein_buf_detach(&b, NULL);
fail:
    rein_buf_release(&b);
    return NULL;
}

/* ---- the object ------------------------------------------------------------------------- */

struct rein__mcp_resources *rein__mcp_resources_new(void)
{
    struct rein__mcp_resources *r = rein_calloc(1, sizeof(*r));

    if (!r)
        return NULL;
    r->declared = json_array();
    r->templates = json_array();
    if (!r->declared || !r->templates) {
        rein__mcp_resources_free(r);
        return NULL;
    }
    return r;
}

void rein__mcp_resources_free(struct rein__mcp_resources *r)
{
    if (!r)
        return;
    json_decref(r->declared);
    json_decref(r->templates);
    rein_skills_roots_free(r->roots);
    rein_free(r);
}

rein_err rein__mcp_resources_set_roots(struct rein__mcp_resources *r, const char *const *roots,
                                       rein_error *err)
{
    struct rein_skills_config cfg = {.roots = roots};

    rein_skills_roots_free(r->roots);
    r->roots = NULL;
    if (!roots)
        return REIN_OK;
    r->roots = rein_skills_roots_new(&cfg, err);
    return r->roots ? REIN_OK : (err ? err->code : REIN_ENOMEM);
}

void rein__mcp_resources_set_store(struct rein__mcp_resources *r, rein_store *store)
{
    r->store = store;
}

bool rein__mcp_resources_any(const struct rein__mcp_resources *r)
{
    return json_array_size(r->declared) || json_array_size(r->templates) || r->roots || r->store;
}

/* Checks one declared resource or template (pointer: where it is, for messages). */
static rein_err check_declared(const json_t *d, bool tmpl, const char *dir, const char *where,
                               json_t **out, rein_error *err)
{
    const char *key = tmpl ? "uriTemplate" : "uri";
    const char *uri = json_string_value(json_object_get(d, key));
    const char *name = json_string_value(json_object_get(d, "name"));
    const json_t *text = json_object_get(d, "text"), *blob = json_object_get(d, "blob");
    const json_t *file = json_object_get(d, "file");
    json_t *def, *entry;
    int sources = (text != NULL) + (blob != NULL) + (file != NULL);

    if (!uri || !uri[0] || !name || !name[0])
        return rein_error_set(err, REIN_EINVAL, "%s: needs \"%s\" and \"name\" (strings)", where,
                              key);
    if (sources != 1 || (text && !json_is_string(text)) || (blob && !json_is_string(blob)) ||
        (file && (!json_is_string(file) || tmpl)))
        return rein_error_set(err, REIN_EINVAL,
                              "%s: needs exactly one of \"text\" and \"blob\" (strings)%s", where,
                              tmpl ? "" : ", or \"file\" (a path)");
    def = json_deep_copy(d);
    if (!def)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    json_object_del(def, "text");
    json_object_del(def, "blob");
    json_object_del(def, "file");
    entry = json_pack("{s:o}", "def", def);
    if (entry && text)
        json_object_set(entry, "text", (json_t *)text);
    if (entry && blob)
        json_object_set(entry, "blob", (json_t *)blob);
    if (entry && file) {
        const char *f = json_string_value(file);
        char *full = f[0] == '/' || !dir ? rein_strdup(f) : rein_asprintf("%s/%s", dir, f);
        if (!full || json_object_set_new(entry, "file", json_string(full))) {
            json_decref(entry);
            entry = NULL;
        }
        rein_free(full);
    }
    if (!entry)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    *out = entry;
    return REIN_OK;
}

rein_err rein__mcp_resources_load_file(struct rein__mcp_resources *r, const char *path,
                                       rein_error *err)
{
    json_t *doc = rein_json_load_file(path, err), *entry;
    const json_t *list;
    char *copy = rein_strdup(path), where[300];
    const char *dir = copy ? dirname(copy) : NULL;
    rein_err rc = REIN_OK;
    size_t i;

    if (!doc || !copy) {
        rein_free(copy);
        json_decref(doc);
        return doc ? rein_error_set(err, REIN_ENOMEM, "out of memory")
                   : (err ? err->code : REIN_EPARSE);
    }
    for (int tmpl = 0; tmpl < 2 && !rc; tmpl++) {
        list = json_object_get(doc, tmpl ? "templates" : "resources");
        if (list && !json_is_array(list)) {
            rc = rein_error_set(err, REIN_EINVAL, "%s: \"%s\" must be an array", path,
                                tmpl ? "templates" : "resources");
            break;
        }
        json_array_foreach(list, i, entry)
        {
            snprintf(where, sizeof(where), "%s: %s[%zu]", path, tmpl ? "templates" : "resources",
                     i);
            json_t *kept = NULL;
            rc = check_declared(entry, tmpl, dir, where, &kept, err);
            if (!rc && json_array_append_new(tmpl ? r->templates : r->declared, kept))
                rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
            if (rc)
                break;
        }
    }
    json_decref(doc);
    rein_free(copy);
    return rc;
}

/* ---- files under the roots -------------------------------------------------------------- */

struct walk {
    char **paths;
    size_t n, cap;
    bool full; /* MAX_WALK reached */
};

static void walk_release(struct walk *w)
{
    for (size_t i = 0; i < w->n; i++)
        rein_free(w->paths[i]);
    rein_free(w->paths);
    memset(w, 0, sizeof(*w));
}

static int by_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Collects the regular files under dir (hidden entries and symbolic links left out). */
static rein_err walk_dir(struct walk *w, const char *dir, int depth)
{
    DIR *d = depth < 32 ? opendir(dir) : NULL;
    struct dirent *ent;
    rein_err rc = REIN_OK;

    if (!d)
        return REIN_OK; /* unreadable folders are simply not listed */
    while (!rc && (ent = readdir(d))) {
        struct stat st;
        char *path;
        if (ent->d_name[0] == '.')
            continue;
        path = rein_asprintf("%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", ent->d_name);
        if (!path) {
            rc = REIN_ENOMEM;
            break;
        }
        if (lstat(path, &st) != 0 || S_ISLNK(st.st_mode)) {
            rein_free(path);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            rc = walk_dir(w, path, depth + 1);
            rein_free(path);
        } else if (S_ISREG(st.st_mode) && w->n < MAX_WALK) {
            if (w->n == w->cap) {
                size_t cap = w->cap ? 2 * w->cap : 64;
                char **grown = rein_realloc(w->paths, cap * sizeof(char *));
                if (!grown) {
                    rein_free(path);
                    rc = REIN_ENOMEM;
                    break;
                }
                w->paths = grown;
                w->cap = cap;
            }
            w->paths[w->n++] = path;
        } else {
            w->full = w->full || S_ISREG(st.st_mode);
            rein_free(path);
        }
    }
    closedir(d);
    return rc;
}

/* Every file under the roots, sorted (so pages stay stable between two requests). */
static rein_err walk_roots(const struct rein__mcp_resources *r, struct walk *w)
{
    rein_err rc = REIN_OK;

    memset(w, 0, sizeof(*w));
    for (size_t i = 0; r->roots && !rc && i < rein_skills_roots_count(r->roots); i++)
        rc = walk_dir(w, rein_skills_roots_at(r->roots, i), 0);
    if (!rc && w->n)
        qsort(w->paths, w->n, sizeof(char *), by_path);
    return rc;
}

static json_t *file_resource(const char *path)
{
    char *uri = file_uri(path);
    const char *slash = strrchr(path, '/'), *mime = mime_of(path);
    struct stat st;
    json_t *o;

    if (!uri)
        return NULL;
    o = json_pack("{s:s, s:s}", "uri", uri, "name", slash ? slash + 1 : path);
    rein_free(uri);
    if (o && mime)
        json_object_set_new(o, "mimeType", json_string(mime));
    if (o && stat(path, &st) == 0)
        json_object_set_new(o, "size", json_integer((json_int_t)st.st_size));
    return o;
}

/* {uri, mimeType, text | blob} of a file's bytes; new or NULL (err says why). */
static json_t *file_contents(const char *uri, const char *path, const char *mime, rein_error *err)
{
    struct stat st;
    FILE *f = NULL;
    unsigned char *bytes = NULL;
    json_t *o = NULL;
    size_t n;

    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        rein_error_set(err, REIN_ENOTFOUND, "%s is not a file", uri);
        return NULL;
    }
    if ((size_t)st.st_size > MAX_READ) {
        rein_error_set(err, REIN_ETOOBIG, "%s is larger than %zu bytes", uri, MAX_READ);
        return NULL;
    }
    f = fopen(path, "rb");
    bytes = rein_malloc((size_t)st.st_size + 1);
    if (!f || !bytes) {
        rein_error_set(err, f ? REIN_ENOMEM : REIN_EIO, "%s: %s", uri,
                       f ? "out of memory" : strerror(errno));
        goto out;
    }
    n = fread(bytes, 1, (size_t)st.st_size, f);
    if (!mime)
        mime = mime_of(path);
    if (is_text(bytes, n) && (!mime || strncmp(mime, "image/", 6) != 0)) {
        o = json_pack("{s:s, s:s, s:s%}", "uri", uri, "mimeType", mime ? mime : "text/plain",
                      "text", (const char *)bytes, n);
    } else {
        char *enc = rein__base64(bytes, n);
        o = enc ? json_pack("{s:s, s:s, s:s}", "uri", uri, "mimeType",
                            mime ? mime : "application/octet-stream", "blob", enc)
                : NULL;
        rein_free(enc);
    }
    if (!o)
        rein_error_set(err, REIN_ENOMEM, "out of memory reading %s", uri);
out:
    if (f)
        fclose(f);
    rein_free(bytes);
    return o;
}

/* ---- conversations ---------------------------------------------------------------------- */

/* The conversation id and the kind ("transcript" or "ledger") of a rein:// URI. */
static bool conv_uri(const char *uri, char *id, size_t size, bool *ledger)
{
    const char *p, *slash;

    if (strncmp(uri, CONV_PREFIX, strlen(CONV_PREFIX)) != 0)
        return false;
    p = uri + strlen(CONV_PREFIX);
    slash = strchr(p, '/');
    if (!slash || (size_t)(slash - p) >= size || slash == p)
        return false;
    if (strcmp(slash, CONV_TRANSCRIPT) == 0)
        *ledger = false;
    else if (strcmp(slash, CONV_LEDGER) == 0)
        *ledger = true;
    else
        return false;
    memcpy(id, p, (size_t)(slash - p));
    id[slash - p] = '\0';
    return rein_store_id_is_valid(id);
}

static rein_err conv_resources(const json_t *conv, json_t *out)
{
    const char *id = json_string_value(json_object_get(conv, "id"));
    const char *title = json_string_value(json_object_get(conv, "title"));
    char uri[REIN_ID_MAX + 64], desc[400];

    for (int ledger = 0; ledger < 2; ledger++) {
        snprintf(uri, sizeof(uri), CONV_PREFIX "%s%s", id, ledger ? CONV_LEDGER : CONV_TRANSCRIPT);
        snprintf(desc, sizeof(desc), "%s of the conversation %s%s%.200s%s",
                 ledger ? "Every tool call (with its arguments and outcome)" : "The messages", id,
                 title ? " (\"" : "", title ? title : "", title ? "\")" : "");
        json_t *o =
            json_pack("{s:s, s:s, s:s, s:s}", "uri", uri, "name", ledger ? "ledger" : "transcript",
                      "description", desc, "mimeType", "application/json");
        if (!o || json_array_append_new(out, o))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

static json_t *conv_contents(struct rein__mcp_resources *r, const char *uri, const char *id,
                             bool ledger, rein_error *err)
{
    json_t *exp = NULL, *doc, *o = NULL;
    char *text;

    if (rein_store_conv_export(r->store, id, &exp, err) != REIN_OK)
        return NULL;
    doc = ledger ? json_pack("{s:s, s:O}", "id", id, "entries", json_object_get(exp, "ledger"))
                 : json_pack("{s:s, s:O, s:O, s:O, s:O}", "id", id, "title",
                             json_object_get(exp, "title") ?: json_null(), "created_at",
                             json_object_get(exp, "created_at") ?: json_null(), "updated_at",
                             json_object_get(exp, "updated_at") ?: json_null(), "messages",
                             json_object_get(exp, "messages") ?: json_null());
    text = doc ? rein_json_dumps(doc) : NULL;
    if (text)
        o = json_pack("{s:s, s:s, s:s}", "uri", uri, "mimeType", "application/json", "text", text);
    if (!o)
        rein_error_set(err, REIN_ENOMEM, "out of memory reading %s", uri);
    rein_free(text);
    json_decref(doc);
    json_decref(exp);
    return o;
}

/* ---- listing ---------------------------------------------------------------------------- */

/* The first source with something to list at or after src ('d', 'f', 'c'), or 0. */
static char next_source(const struct rein__mcp_resources *r, char src)
{
    const char order[] = "dfc";
    bool has[3] = {json_array_size(r->declared) > 0, r->roots != NULL, r->store != NULL};

    for (int i = (int)(strchr(order, src) - order); i < 3; i++) {
        if (has[i])
            return order[i];
    }
    return 0;
}

/* Sets *next to "<src>:<pos>" (new); NULL when src is 0. */
static rein_err set_next(char **next, char src, const char *pos)
{
    *next = src ? rein_asprintf("%c:%s", src, pos ? pos : "") : NULL;
    return src && !*next ? REIN_ENOMEM : REIN_OK;
}

json_t *rein__mcp_resources_list(struct rein__mcp_resources *r, const char *cursor, char **next,
                                 rein_error *err)
{
    char src = cursor ? cursor[0] : next_source(r, 'd');
    const char *pos = cursor && cursor[1] == ':' ? cursor + 2 : "";
    json_t *out = json_array();
    char *end = NULL, num[32];
    size_t start = 0;
    rein_err rc = REIN_OK;

    *next = NULL;
    if (!out)
        goto nomem;
    if (cursor && (cursor[1] != ':' || !strchr("dfc", src) || !next_source(r, src))) {
        json_decref(out);
        rein_error_set(err, REIN_EINVAL, "params.cursor is not a cursor this server gave");
        return NULL;
    }
    if (src == 'd' || src == 'f') {
        start = pos[0] ? (size_t)strtoull(pos, &end, 10) : 0;
        if (pos[0] && *end) {
            json_decref(out);
            rein_error_set(err, REIN_EINVAL, "params.cursor is not a cursor this server gave");
            return NULL;
        }
    }
    if (src == 'd') {
        size_t n = json_array_size(r->declared);
        for (size_t i = start; i < n && i < start + PAGE_SIZE && !rc; i++) {
            json_t *def = json_deep_copy(json_object_get(json_array_get(r->declared, i), "def"));
            rc = !def || json_array_append_new(out, def) ? REIN_ENOMEM : REIN_OK;
        }
        snprintf(num, sizeof(num), "%zu", start + PAGE_SIZE);
        if (!rc)
            rc = start + PAGE_SIZE < n ? set_next(next, 'd', num)
                                       : set_next(next, next_source(r, 'f'), NULL);
    } else if (src == 'f') {
        struct walk w;
        rc = walk_roots(r, &w);
        for (size_t i = start; !rc && i < w.n && i < start + PAGE_SIZE; i++) {
            json_t *o = file_resource(w.paths[i]);
            rc = !o || json_array_append_new(out, o) ? REIN_ENOMEM : REIN_OK;
        }
        snprintf(num, sizeof(num), "%zu", start + PAGE_SIZE);
        if (!rc)
            rc = start + PAGE_SIZE < w.n ? set_next(next, 'f', num)
                                         : set_next(next, next_source(r, 'c'), NULL);
        walk_release(&w);
    } else {
        json_t *page = NULL, *conv;
        size_t i;
        rein_error serr;
        rein_error_clear(&serr);
        if (rein_store_conv_list(r->store, pos[0] ? pos : NULL, PAGE_SIZE / 2, &page, &serr)) {
            json_decref(out);
            rein_error_set(err, serr.code == REIN_EINVAL ? REIN_EINVAL : REIN_EIO, "%s", serr.msg);
            return NULL;
        }
        json_array_foreach(json_object_get(page, "conversations"), i, conv)
        {
            if (!rc)
                rc = conv_resources(conv, out);
        }
        const char *more = json_string_value(json_object_get(page, "next_cursor"));
        if (!rc && more)
            rc = set_next(next, 'c', more);
        json_decref(page);
    }
    if (!rc)
        return out;
nomem:
    json_decref(out);
    rein_free(*next);
    *next = NULL;
    rein_error_set(err, REIN_ENOMEM, "out of memory listing resources");
    return NULL;
}

json_t *rein__mcp_resources_templates(struct rein__mcp_resources *r)
{
    json_t *out = json_array(), *t;
    size_t i;

    json_array_foreach(r->templates, i, t)
    {
        if (out && json_array_append_new(out, json_deep_copy(json_object_get(t, "def")))) {
            json_decref(out);
            out = NULL;
        }
    }
    if (out && r->roots &&
        json_array_append_new(
            out, json_pack("{s:s, s:s, s:s}", "uriTemplate", "file://{+path}", "name", "files",
                           "description",
                           "A file under the folders rein may read (its allowed roots); path is "
                           "absolute")))
        goto fail;
    if (out && r->store &&
        (json_array_append_new(out,
                               json_pack("{s:s, s:s, s:s, s:s}", "uriTemplate",
                                         CONV_PREFIX "{id}" CONV_TRANSCRIPT, "name", "transcript",
                                         "description", "The messages of a stored conversation",
                                         "mimeType", "application/json")) ||
         json_array_append_new(
             out, json_pack("{s:s, s:s, s:s, s:s}", "uriTemplate", CONV_PREFIX "{id}" CONV_LEDGER,
                            "name", "ledger", "description",
                            "Every tool call of a stored conversation, with its outcome",
                            "mimeType", "application/json"))))
        goto fail;
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* ---- reading ---------------------------------------------------------------------------- */

/* {uri, mimeType?, text|blob} of a declared resource or a template's instance (vars: the
 * template's variables, or NULL). */
static json_t *declared_contents(const json_t *entry, const char *uri, const json_t *vars,
                                 rein_error *err)
{
    const json_t *def = json_object_get(entry, "def");
    const char *mime = json_string_value(json_object_get(def, "mimeType"));
    const char *file = json_string_value(json_object_get(entry, "file"));
    const char *key = json_object_get(entry, "blob") ? "blob" : "text";
    json_t *o;
    char *value;

    if (file)
        return file_contents(uri, file, mime, err);
    value = vars ? fill(json_string_value(json_object_get(entry, key)), vars)
                 : rein_strdup(json_string_value(json_object_get(entry, key)));
    o = value ? json_pack("{s:s, s:s}", "uri", uri, key, value) : NULL;
    if (o && mime)
        json_object_set_new(o, "mimeType", json_string(mime));
    rein_free(value);
    if (!o)
        rein_error_set(err, REIN_ENOMEM, "out of memory reading %s", uri);
    return o;
}

json_t *rein__mcp_resources_read(struct rein__mcp_resources *r, const char *uri, rein_error *err)
{
    const json_t *entry;
    json_t *contents = NULL;
    char id[REIN_ID_MAX], *path;
    bool ledger;
    size_t i;

    json_array_foreach(r->declared, i, entry)
    {
        if (strcmp(json_string_value(json_object_get(json_object_get(entry, "def"), "uri")), uri) ==
            0) {
            contents = declared_contents(entry, uri, NULL, err);
            goto out;
        }
    }
    json_array_foreach(r->templates, i, entry)
    {
        const char *t =
            json_string_value(json_object_get(json_object_get(entry, "def"), "uriTemplate"));
        json_t *vars = json_object();
        if (vars && tmpl_match(t, uri, vars)) {
            contents = declared_contents(entry, uri, vars, err);
            json_decref(vars);
            goto out;
        }
        json_decref(vars);
    }
    if (r->roots && (path = uri_path(uri))) {
        char *real = NULL;
        if (rein_skills_roots_resolve(r->roots, path, &real, err) == REIN_OK)
            contents = file_contents(uri, real, NULL, err);
        else if (err && err->code != REIN_ENOMEM)
            err->code = REIN_ENOTFOUND; /* outside the roots is the same as not there */
        rein_free(real);
        rein_free(path);
        goto out;
    }
    if (r->store && conv_uri(uri, id, sizeof(id), &ledger)) {
        contents = conv_contents(r, uri, id, ledger, err);
        goto out;
    }
    rein_error_set(err, REIN_ENOTFOUND, "no resource has the URI %.200s", uri);
    return NULL;
out:
    if (!contents)
        return NULL;
    return json_pack("{s:[o]}", "contents", contents);
}

/* ---- subscriptions ---------------------------------------------------------------------- */

char *rein__mcp_resources_fingerprint(struct rein__mcp_resources *r, const char *uri)
{
    char id[REIN_ID_MAX], *path, *real = NULL;
    struct stat st;
    bool ledger;

    if (r->roots && (path = uri_path(uri))) {
        bool here = rein_skills_roots_resolve(r->roots, path, &real, NULL) == REIN_OK &&
                    stat(real, &st) == 0;
        rein_free(path);
        rein_free(real);
        return here ? rein_asprintf("%lld:%lld.%09ld", (long long)st.st_size,
                                    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec)
                    : rein_strdup("");
    }
    if (r->store && conv_uri(uri, id, sizeof(id), &ledger)) {
        json_t *conv = NULL;
        char *fp = NULL, *text;
        uint64_t h = 1469598103934665603ULL;
        /* The ledger changes without a new message (a call's outcome arrives): its own text is
         * what is compared. */
        if ((ledger ? rein_store_conv_export(r->store, id, &conv, NULL)
                    : rein_store_conv_get(r->store, id, &conv, NULL)) != REIN_OK)
            return rein_strdup("");
        if (ledger) {
            text = rein_json_dumps(json_object_get(conv, "ledger"));
            for (const char *p = text; p && *p; p++)
                h = (h ^ (unsigned char)*p) * 1099511628211ULL;
            fp = text ? rein_asprintf("%016llx", (unsigned long long)h) : NULL;
            rein_free(text);
        } else {
            fp = rein_asprintf(
                "%lld:%s", (long long)json_integer_value(json_object_get(conv, "message_count")),
                json_string_value(json_object_get(conv, "updated_at")) ?: "");
        }
        json_decref(conv);
        return fp;
    }
    /* Declared resources do not change while rein runs; an unknown URI is absent. */
    return rein_strdup("");
}

/* ---- completion ------------------------------------------------------------------------- */

json_t *rein__mcp_resources_complete(struct rein__mcp_resources *r, const char *tmpl,
                                     const char *var, const char *prefix)
{
    json_t *values = json_array();
    size_t plen = strlen(prefix);

    if (!values)
        return NULL;
    if (r->roots && strcmp(tmpl, "file://{+path}") == 0 && strcmp(var, "path") == 0) {
        struct walk w;
        if (walk_roots(r, &w) == REIN_OK) {
            for (size_t i = 0; i < w.n && json_array_size(values) < MAX_COMPLETIONS; i++) {
                if (strncmp(w.paths[i], prefix, plen) == 0)
                    json_array_append_new(values, json_string(w.paths[i]));
            }
        }
        walk_release(&w);
    } else if (r->store && strncmp(tmpl, CONV_PREFIX "{id}", strlen(CONV_PREFIX "{id}")) == 0 &&
               strcmp(var, "id") == 0) {
        json_t *page = NULL, *conv;
        char cursor[256] = "";
        size_t i;
        /* The newest conversations first, a few pages at most. */
        for (int p = 0; p < 5 && json_array_size(values) < MAX_COMPLETIONS; p++) {
            if (rein_store_conv_list(r->store, cursor[0] ? cursor : NULL, 100, &page, NULL))
                break;
            json_array_foreach(json_object_get(page, "conversations"), i, conv)
            {
                const char *id = json_string_value(json_object_get(conv, "id"));
                if (id && strncmp(id, prefix, plen) == 0 &&
                    json_array_size(values) < MAX_COMPLETIONS)
                    json_array_append_new(values, json_string(id));
            }
            const char *more = json_string_value(json_object_get(page, "next_cursor"));
            snprintf(cursor, sizeof(cursor), "%s", more ? more : "");
            json_decref(page);
            page = NULL;
            if (!cursor[0])
                break;
        }
    }
    return values;
}
