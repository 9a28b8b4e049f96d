/*
 * The allowed roots of the file skills (file_search, log_transform): which folders a model may
 * make rein read.
 *
 * A path a model gives is checked twice: lexically (after "." and ".." are folded, before the
 * file system is touched, so "../../etc" is refused without revealing whether it exists) and
 * again after realpath() (so a symbolic link inside a root that leads elsewhere is refused
 * too). Hard links are treated like symbolic links that cannot be followed: a file with more
 * than one name may be the same file as one outside the roots, and nothing tells where its
 * other names are, so a regular file with a link count above one is refused. Roots
 * themselves are stored as real paths.
 */
#include "skills_int.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_MAX_FILE_BYTES ((size_t)16 << 20)

void rein__skills_roots_free(void *p)
{
    struct rein__skills_roots *r = p;

    if (!r)
        return;
    for (size_t i = 0; r->roots && i < r->n; i++)
        free(r->roots[i]); /* from realpath() */
    rein_free(r->roots);
    rein_free(r);
}

rein_err rein__skills_roots_new(const struct rein_skills_config *cfg,
                                struct rein__skills_roots **out, rein_error *err)
{
    static const char *const cwd_only[] = {".", NULL};
    const char *const *list = cfg && cfg->roots && cfg->roots[0] ? cfg->roots : cwd_only;
    struct rein__skills_roots *r = rein_calloc(1, sizeof(*r));
    size_t n = 0;

    *out = NULL;
    while (list[n])
        n++;
    if (!r || !(r->roots = rein_calloc(n, sizeof(*r->roots)))) {
        rein__skills_roots_free(r);
        return rein_error_set(err, REIN_ENOMEM, "out of memory configuring the skills");
    }
    r->max_file_bytes = cfg && cfg->max_file_bytes ? cfg->max_file_bytes : DEFAULT_MAX_FILE_BYTES;
    for (size_t i = 0; i < n; i++) {
        r->roots[i] = realpath(list[i], NULL);
        if (!r->roots[i]) {
            int e = errno;
            rein__skills_roots_free(r);
            return rein_error_set(err, e == ENOMEM ? REIN_ENOMEM : REIN_ENOTFOUND,
                                  "allowed root %s: %s", list[i], strerror(e));
        }
        r->n++;
    }
    *out = r;
    return REIN_OK;
}

static bool inside(const char *root, const char *path)
{
    size_t n = strlen(root);

    if (n == 1 && root[0] == '/')
        return path[0] == '/';
    return strncmp(root, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

bool rein__skills_roots_contain(const struct rein__skills_roots *r, const char *real)
{
    for (size_t i = 0; i < r->n; i++) {
        if (inside(r->roots[i], real))
            return true;
    }
    return false;
}

bool rein__skills_is_hard_link(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink > 1;
}

/* Folds ".", ".." and repeated slashes of an absolute path in place. */
static void fold(char *path)
{
    char *out = path, *p = path;

    while (*p) {
        while (*p == '/')
            p++;
        char *seg = p;
        while (*p && *p != '/')
            p++;
        size_t len = (size_t)(p - seg);
        if (len == 0 || (len == 1 && seg[0] == '.'))
            continue;
        if (len == 2 && seg[0] == '.' && seg[1] == '.') {
            while (out > path && *--out != '/')
                ;
            continue;
        }
        *out++ = '/';
        memmove(out, seg, len);
        out += len;
    }
    if (out == path)
        *out++ = '/';
    *out = '\0';
}

rein_err rein__skills_roots_resolve(const struct rein__skills_roots *r, const char *path,
                                    const char *what, char **out, rein_error *err)
{
    char *joined, *real;
    int e;

    *out = NULL;
    if (!path || !path[0])
        path = ".";
    if (strlen(path) >= PATH_MAX)
        return rein_error_set(err, REIN_EINVALID, "%s is too long", what);
    joined = path[0] == '/' ? rein_strdup(path) : rein_asprintf("%s/%s", r->roots[0], path);
    if (!joined)
        return rein_error_set(err, REIN_ENOMEM, "out of memory resolving %s", what);
    fold(joined);
    if (!rein__skills_roots_contain(r, joined)) {
        rein_free(joined);
        return rein_error_set(err, REIN_EDENIED, "%s \"%s\" is outside the allowed roots", what,
                              path);
    }
    real = realpath(joined, NULL);
    e = errno;
    rein_free(joined);
    if (!real)
        return rein_error_set(err, e == ENOMEM ? REIN_ENOMEM : REIN_ENOTFOUND, "%s \"%s\": %s",
                              what, path, strerror(e));
    if (!rein__skills_roots_contain(r, real)) {
        free(real);
        return rein_error_set(err, REIN_EDENIED,
                              "%s \"%s\" leads outside the allowed roots (through a symbolic link)",
                              what, path);
    }
    if (rein__skills_is_hard_link(real)) {
        free(real);
        return rein_error_set(err, REIN_EDENIED,
                              "%s \"%s\" is a hard link (a file with several names), which may "
                              "be a file outside the allowed roots",
                              what, path);
    }
    *out = rein_strdup(real);
    free(real);
    return *out ? REIN_OK : rein_error_set(err, REIN_ENOMEM, "out of memory resolving %s", what);
}

/* ---- the public face of the roots (include/rein/skills.h) ---- */

struct rein_skills_roots {
    struct rein__skills_roots *r;
};

rein_skills_roots *rein_skills_roots_new(const struct rein_skills_config *cfg, rein_error *err)
{
    rein_skills_roots *out = rein_calloc(1, sizeof(*out));

    if (!out) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    if (rein__skills_roots_new(cfg, &out->r, err) != REIN_OK) {
        rein_free(out);
        return NULL;
    }
    return out;
}

void rein_skills_roots_free(rein_skills_roots *r)
{
    if (!r)
        return;
    rein__skills_roots_free(r->r);
    rein_free(r);
}

size_t rein_skills_roots_count(const rein_skills_roots *r)
{
    return r ? r->r->n : 0;
}

const char *rein_skills_roots_at(const rein_skills_roots *r, size_t i)
{
    return r && i < r->r->n ? r->r->roots[i] : NULL;
}

rein_err rein_skills_roots_resolve(const rein_skills_roots *r, const char *path, char **real,
                                   rein_error *err)
{
    return rein__skills_roots_resolve(r->r, path, "path", real, err);
}
