/*
 * The file_search skill: matching lines of the text files under a folder inside the allowed
 * roots, with file, line number and the line.
 *
 * The walk is deterministic (entries in name order) and bounded: binary files (a NUL byte in
 * their first 8 KiB, as grep decides) and files over the size limit are skipped and counted,
 * symbolic links are followed only when they lead inside the roots (the others are counted),
 * hard links (files with several names, which may be files outside the roots) are skipped and
 * counted,
 * folders reached twice through links are not searched twice, and the call's deadline and
 * cancel handle are checked for every file and every line. Plain queries are matched
 * literally; regex: true uses PCRE2 under its match and depth limits, line by line, and a
 * limit reached is an error (invalid_arguments naming file and line), never "no match".
 */
#include "skills_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH      64
#define BINARY_PROBE   8192
#define MAX_LINE_SHOWN 400

static const char file_search_manifest[] =
    "{\"id\":\"file_search\","
    "\"description\":\"Search file contents under an allowed directory and return matching "
    "lines (file, line number, text).\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{"
    "\"query\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Text to look for (a "
    "regular expression when regex is true)\"},"
    "\"root_dir\":{\"type\":\"string\",\"description\":\"Folder to search, relative to the "
    "allowed root (default: the allowed root)\"},"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"default\":20,"
    "\"description\":\"Most matches to return\"},"
    "\"regex\":{\"type\":\"boolean\",\"default\":false,\"description\":\"Treat query as a "
    "regular expression (PCRE)\"},"
    "\"glob\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Only files whose name "
    "matches this pattern, e.g. *.md (a pattern with / matches the path under root_dir)\"},"
    "\"case_sensitive\":{\"type\":\"boolean\",\"default\":false}},"
    "\"required\":[\"query\"],\"additionalProperties\":false},"
    "\"output_schema\":{\"type\":\"object\",\"properties\":{"
    "\"root\":{\"type\":\"string\"},\"query\":{\"type\":\"string\"},"
    "\"matches\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"file\":{\"type\":\"string\"},\"line\":{\"type\":\"integer\"},"
    "\"text\":{\"type\":\"string\"}},\"required\":[\"file\",\"line\",\"text\"]}},"
    "\"count\":{\"type\":\"integer\"},\"truncated\":{\"type\":\"boolean\"},"
    "\"files_scanned\":{\"type\":\"integer\"},"
    "\"skipped\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}},"
    "\"required\":[\"root\",\"query\",\"matches\",\"count\",\"truncated\"]},"
    "\"read_only\":true,\"idempotent\":true,\"open_world\":false,\"timeout_ms\":10000,"
    "\"examples\":[{\"text\":\"search the docs for calculator\",\"arguments\":{\"query\":"
    "\"calculator\"}},{\"text\":\"在 ./data/docs 目录下搜索 'openSkill'，最多返回 5 条\","
    "\"arguments\":{\"query\":\"openSkill\",\"root_dir\":\"./data/docs\",\"limit\":5}}]}";

struct visited {
    dev_t dev;
    ino_t ino;
};

struct search {
    const struct rein__skills_roots *roots;
    const struct rein_invocation *inv;
    struct rein_tool_reply *reply;
    struct rein__skills_regex re;
    const char *glob;
    bool glob_path;
    size_t limit, count;
    bool truncated;
    json_t *matches;
    size_t scanned, binary, large, outside, hard_links, unreadable;
    struct visited *seen;
    size_t nseen, seen_cap;
    size_t base_len; /* the searched folder's path length, for relative names */
    char *buf;
    size_t buf_cap;
    rein_err stop; /* set when the walk must end: limit, deadline, cancel, memory */
    rein_error *err;
};

/* true when the folder was already searched (reached again through a link). */
static bool seen_before(struct search *s, const struct stat *st)
{
    for (size_t i = 0; i < s->nseen; i++) {
        if (s->seen[i].dev == st->st_dev && s->seen[i].ino == st->st_ino)
            return true;
    }
    if (s->nseen == s->seen_cap) {
        size_t cap = s->seen_cap ? 2 * s->seen_cap : 32;
        struct visited *v = rein_realloc(s->seen, cap * sizeof(*v));
        if (!v) {
            s->stop = rein_error_set(s->err, REIN_ENOMEM, "out of memory walking folders");
            return true;
        }
        s->seen = v;
        s->seen_cap = cap;
    }
    s->seen[s->nseen++] = (struct visited){st->st_dev, st->st_ino};
    return false;
}

/* Reads up to limit + 1 bytes of the file into s->buf; returns the length or -1. */
static ssize_t read_file(struct search *s, const char *path, size_t limit)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    size_t len = 0;

    if (fd < 0)
        return -1;
    for (;;) {
        if (len == s->buf_cap) {
            size_t cap = s->buf_cap ? 2 * s->buf_cap : 65536;
            char *b = rein_realloc(s->buf, cap + 1);
            if (!b) {
                close(fd);
                s->stop = rein_error_set(s->err, REIN_ENOMEM, "out of memory reading %s", path);
                return -1;
            }
            s->buf = b;
            s->buf_cap = cap;
        }
        ssize_t n = read(fd, s->buf + len, s->buf_cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close(fd);
            return n < 0 ? -1 : (ssize_t)len;
        }
        len += (size_t)n;
        if (len > limit) {
            close(fd);
            return (ssize_t)len;
        }
    }
}

/* The line shown in a match: at most MAX_LINE_SHOWN bytes, cut on a character boundary. */
static json_t *line_text(const char *line, size_t len)
{
    char shown[MAX_LINE_SHOWN + 8];
    size_t n = len;

    if (n > 0 && line[n - 1] == '\r')
        n--;
    if (n <= MAX_LINE_SHOWN)
        return rein__json_string_lossy(line, n);
    n = MAX_LINE_SHOWN;
    while (n > 0 && ((unsigned char)line[n] & 0xc0) == 0x80)
        n--;
    memcpy(shown, line, n);
    memcpy(shown + n, "\xe2\x80\xa6", 3); /* … */
    return rein__json_string_lossy(shown, n + 3);
}

static void add_match(struct search *s, const char *rel, size_t lineno, const char *line,
                      size_t len)
{
    json_t *m = json_pack("{s:s, s:I, s:o}", "file", rel, "line", (json_int_t)lineno, "text",
                          line_text(line, len));

    if (!m || json_array_append_new(s->matches, m)) {
        s->stop = rein_error_set(s->err, REIN_ENOMEM, "out of memory collecting matches");
        return;
    }
    s->count++;
}

/* Matches the buffer line by line (as grep does), so the deadline is looked at before every
 * line and a limit names the file and line. */
static void search_buffer(struct search *s, const char *rel, size_t len)
{
    const char *buf = s->buf;
    size_t pos = 0, lineno = 0;

    while (pos < len && !s->stop) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - buf) : len;
        int m;
        lineno++;
        m = rein__skills_regex_find(&s->re, buf + pos, end - pos, s->inv, s->reply, s->err);
        if (m < 0) {
            if (m == REIN_EINVALID && s->err) {
                char msg[sizeof(s->err->msg)];
                snprintf(msg, sizeof(msg), "%s", s->err->msg);
                rein_error_set(s->err, REIN_EINVALID, "%s line %zu: %s", rel, lineno, msg);
            }
            s->stop = (rein_err)m;
            return;
        }
        if (m == 1) {
            if (s->count == s->limit) {
                s->truncated = true;
                s->stop = REIN_ETOOBIG; /* the limit, not an error */
                return;
            }
            add_match(s, rel, lineno, buf + pos, end - pos);
        }
        pos = end + 1;
    }
}

static void search_file(struct search *s, const char *path, const char *shown_path,
                        const struct stat *st)
{
    const char *rel = shown_path + (s->base_len < strlen(shown_path) ? s->base_len + 1 : 0);
    const char *base = strrchr(shown_path, '/');
    ssize_t len;

    if (s->glob && fnmatch(s->glob, s->glob_path ? rel : (base ? base + 1 : shown_path),
                           s->glob_path ? FNM_PATHNAME : 0) != 0)
        return;
    if ((size_t)st->st_size > s->roots->max_file_bytes) {
        s->large++;
        return;
    }
    len = read_file(s, path, s->roots->max_file_bytes);
    if (len < 0) {
        if (!s->stop)
            s->unreadable++;
        return;
    }
    if ((size_t)len > s->roots->max_file_bytes) {
        s->large++; /* it grew while being read */
        return;
    }
    if (memchr(s->buf, '\0', (size_t)len < BINARY_PROBE ? (size_t)len : BINARY_PROBE)) {
        s->binary++;
        return;
    }
    s->scanned++;
    search_buffer(s, rel[0] ? rel : (base ? base + 1 : shown_path), (size_t)len);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entry names of a folder, sorted; NULL on failure (counted as unreadable). */
static char **list_dir(struct search *s, const char *path, size_t *count)
{
    DIR *d = opendir(path);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0;

    *count = 0;
    if (!d) {
        s->unreadable++;
        return NULL;
    }
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **v = rein_realloc(names, cap * sizeof(*v));
            if (!v)
                break;
            names = v;
        }
        names[n] = rein_strdup(e->d_name);
        if (!names[n])
            break;
        n++;
    }
    if (e)
        s->stop = rein_error_set(s->err, REIN_ENOMEM, "out of memory listing %s", path);
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), cmp_names);
    *count = n;
    return names;
}

static void walk(struct search *s, const char *path, int depth);

/* One folder entry: a file to search, a folder to enter, or a link to check first. */
static void visit(struct search *s, const char *child, int depth)
{
    struct stat st;
    char *real = NULL;

    if (lstat(child, &st) != 0) {
        s->unreadable++;
        return;
    }
    if (S_ISLNK(st.st_mode)) {
        real = realpath(child, NULL);
        if (!real || !rein__skills_roots_contain(s->roots, real)) {
            if (real)
                s->outside++;
            else
                s->unreadable++; /* a dangling link */
            free(real);
            return;
        }
        if (stat(real, &st) != 0) {
            s->unreadable++;
            free(real);
            return;
        }
    }
    if (S_ISDIR(st.st_mode)) {
        if (depth < MAX_DEPTH && !seen_before(s, &st))
            walk(s, child, depth + 1);
    } else if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
        s->hard_links++; /* may be a file outside the roots under another name */
    } else if (S_ISREG(st.st_mode)) {
        search_file(s, real ? real : child, child, &st);
    }
    free(real);
}

static bool skipped_folder(const char *name)
{
    return strcmp(name, ".git") == 0 || strcmp(name, ".hg") == 0 || strcmp(name, ".svn") == 0;
}

static void walk(struct search *s, const char *path, int depth)
{
    size_t n;
    char **names;

    if (!s->stop)
        s->stop = rein_invocation_check(s->inv, s->err);
    if (s->stop)
        return;
    names = list_dir(s, path, &n);
    for (size_t i = 0; i < n; i++) {
        char *child;
        if (!s->stop && !skipped_folder(names[i])) {
            child = rein_asprintf("%s/%s", path, names[i]);
            if (!child)
                s->stop = rein_error_set(s->err, REIN_ENOMEM, "out of memory walking %s", path);
            else if (strlen(child) < PATH_MAX)
                visit(s, child, depth);
            rein_free(child);
            if (!s->stop)
                s->stop = rein_invocation_check(s->inv, s->err);
        }
        rein_free(names[i]);
    }
    rein_free(names);
}

/* Compiles the query: literal unless regex, caseless unless case_sensitive. */
static rein_err compile_query(struct search *s, const char *query, bool regex, bool cs,
                              struct rein_tool_reply *reply, rein_error *err)
{
    /* Lines are matched one at a time, so ^ and $ are a line's ends without MULTILINE.
     * PCRE2_LITERAL does not allow UCP; UTF alone folds case beyond ASCII. */
    uint32_t opts = (regex ? PCRE2_UCP : PCRE2_LITERAL) | (cs ? 0 : PCRE2_CASELESS);

    return rein__skills_regex_compile(&s->re, query, opts, "query", "/query", reply, err);
}

static json_t *report(const struct search *s, const char *root, const char *query)
{
    return json_pack("{s:s, s:s, s:O, s:I, s:b, s:I, s:{s:I, s:I, s:I, s:I, s:I}}", "root", root,
                     "query", query, "matches", s->matches, "count", (json_int_t)s->count,
                     "truncated", s->truncated, "files_scanned", (json_int_t)s->scanned, "skipped",
                     "binary", (json_int_t)s->binary, "too_large", (json_int_t)s->large,
                     "symlinks_outside", (json_int_t)s->outside, "hard_links",
                     (json_int_t)s->hard_links, "unreadable", (json_int_t)s->unreadable);
}

static rein_err file_search_run(void *userdata, const struct rein_invocation *inv,
                                struct rein_tool_reply *reply, rein_error *err)
{
    const struct rein__skills_roots *roots = userdata;
    const char *query = json_string_value(json_object_get(inv->args, "query"));
    const char *root_dir = json_string_value(json_object_get(inv->args, "root_dir"));
    struct search s = {.roots = roots, .inv = inv, .reply = reply, .err = err};
    char *real = NULL;
    struct stat st;
    rein_err rc;

    s.limit = (size_t)json_integer_value(json_object_get(inv->args, "limit"));
    if (s.limit == 0)
        s.limit = 20;
    s.glob = json_string_value(json_object_get(inv->args, "glob"));
    s.glob_path = s.glob && strchr(s.glob, '/');
    rc = rein__skills_roots_resolve(roots, root_dir, "root_dir", &real, err);
    if (rc == REIN_ENOTFOUND) {
        reply->details =
            json_pack("[{s:s, s:s}]", "path", "/root_dir", "message", "does not exist");
        return rein_error_set(err, REIN_EINVALID, "root_dir \"%s\" does not exist", root_dir);
    }
    if (rc == REIN_EDENIED)
        reply->details = json_pack("[{s:s, s:s}]", "path", "/root_dir", "message",
                                   "is outside the allowed roots");
    if (rc)
        return rc;
    rc = compile_query(&s, query, json_is_true(json_object_get(inv->args, "regex")),
                       json_is_true(json_object_get(inv->args, "case_sensitive")), reply, err);
    s.matches = json_array();
    if (!rc && !s.matches)
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    if (!rc && stat(real, &st) == 0) {
        s.base_len = strlen(real);
        if (S_ISDIR(st.st_mode)) {
            (void)seen_before(&s, &st);
            walk(&s, real, 0);
        } else {
            s.base_len = (size_t)(strrchr(real, '/') - real);
            search_file(&s, real, real, &st);
        }
        rc = s.stop == REIN_ETOOBIG ? REIN_OK : s.stop;
    }
    if (!rc) {
        reply->output = report(&s, root_dir ? root_dir : ".", query);
        if (!reply->output)
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    json_decref(s.matches);
    rein__skills_regex_free(&s.re);
    rein_free(s.seen);
    rein_free(s.buf);
    rein_free(real);
    return rc;
}

rein_err rein__skills_file_search_register(rein_registry *reg, const struct rein_skills_config *cfg,
                                           rein_error *err)
{
    struct rein__skills_roots *roots;
    rein_err rc = rein__skills_roots_new(cfg, &roots, err);

    if (rc)
        return rc;
    return rein__skills_register(reg, file_search_manifest, file_search_run, roots,
                                 rein__skills_roots_free, err);
}
