/*
 * What git says about a working tree, for claim checks ("I created src/x.c"), change
 * detection (ARCHITECT's conditions) and tree hashes.
 *
 * git is run as a program through rein_proc_run (no shell), with --no-optional-locks so that
 * reading the state never takes the index lock from under the agent, and with -z output so
 * that no path is ever quoted or split. Paths are kept relative to the repository's top
 * level, which is what porcelain and name-status output use; claims made relative to a
 * subdirectory are translated with rein__verify_git_repo_path().
 */
#include "verify_int.h"

#include <limits.h>
#include <rein/proc.h>
#include <stdlib.h>
#include <string.h>

#define GIT_ARGS_MAX   24
#define GIT_OUTPUT_MAX ((size_t)64 << 20)
#define GIT_TIMEOUT_MS 60000

rein_err rein__verify_git(const char *dir, const char *const *args, struct rein_buf *out,
                          int *exit_code, rein_error *err)
{
    const char *argv[GIT_ARGS_MAX + 5] = {"git", "--no-optional-locks", "-C", dir ? dir : "."};
    struct rein_proc_run_opts o = {.proc = {.argv = argv},
                                   .stdout_max = GIT_OUTPUT_MAX,
                                   .stderr_max = 4096,
                                   .timeout_ms = GIT_TIMEOUT_MS};
    struct rein_proc_result res;
    rein_error perr;
    size_t n = 4;
    rein_err rc;

    for (size_t i = 0; args[i]; i++) {
        if (n == GIT_ARGS_MAX + 4)
            return rein_error_set(err, REIN_EINVAL, "too many git arguments");
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    *exit_code = -1;
    rc = rein_proc_run(&o, &res, &perr);
    if (rc == REIN_ENOTFOUND)
        return REIN_OK; /* no git: the caller treats the tree as not a repository */
    if (rc) {
        if (err)
            *err = perr;
        return rc;
    }
    if (res.stdout_truncated) {
        rein_proc_result_release(&res);
        return rein_error_set(err, REIN_ETOOBIG, "git %s: output larger than 64 MiB", args[0]);
    }
    *exit_code = res.timed_out ? -1 : res.exit_code;
    rc = rein_buf_add(out, res.out.ptr, res.out.len);
    rein_proc_result_release(&res);
    if (rc)
        return rein_error_set(err, rc, "out of memory reading git output");
    return REIN_OK;
}

void rein__verify_git_release(struct rein__git *g)
{
    for (size_t i = 0; i < g->n; i++)
        rein_free(g->entries[i].path);
    rein_free(g->entries);
    rein_free(g->toplevel);
    rein_free(g->prefix);
    memset(g, 0, sizeof(*g));
}

static rein_err add_entry(struct rein__git *g, size_t *cap, char x, char y, const char *path,
                          size_t len)
{
    if (len == 0)
        return REIN_OK;
    if (g->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 32;
        struct rein__git_entry *e = rein_realloc(g->entries, ncap * sizeof(*e));
        if (!e)
            return REIN_ENOMEM;
        g->entries = e;
        *cap = ncap;
    }
    g->entries[g->n].path = rein_strndup(path, len);
    if (!g->entries[g->n].path)
        return REIN_ENOMEM;
    g->entries[g->n].x = x;
    g->entries[g->n].y = y;
    g->n++;
    return REIN_OK;
}

/* "XY path\0" records of `git status --porcelain=v1 -z --no-renames`. */
static rein_err parse_status(struct rein__git *g, size_t *cap, const char *s, size_t len)
{
    size_t i = 0;

    while (i + 3 < len) {
        size_t n = strnlen(s + i + 3, len - i - 3);
        rein_err rc = add_entry(g, cap, s[i], s[i + 1], s + i + 3, n);
        if (rc)
            return rc;
        i += 3 + n + 1;
    }
    return REIN_OK;
}

/* "M\0path\0" pairs of `git diff --name-status -z --no-renames`. */
static rein_err parse_name_status(struct rein__git *g, size_t *cap, const char *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        size_t sn = strnlen(s + i, len - i), pn;
        char x = s[i];
        rein_err rc;
        i += sn + 1;
        if (i >= len)
            break;
        pn = strnlen(s + i, len - i);
        rc = add_entry(g, cap, x, ' ', s + i, pn);
        if (rc)
            return rc;
        i += pn + 1;
    }
    return REIN_OK;
}

/* NUL-separated paths of `git ls-files -z`, recorded as untracked. */
static rein_err parse_untracked(struct rein__git *g, size_t *cap, const char *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        size_t n = strnlen(s + i, len - i);
        rein_err rc = add_entry(g, cap, '?', '?', s + i, n);
        if (rc)
            return rc;
        i += n + 1;
    }
    return REIN_OK;
}

static rein_err read_toplevel(const char *dir, struct rein__git *g, rein_error *err)
{
    const char *args[] = {"rev-parse", "--show-toplevel", "--show-prefix", NULL};
    const char *head_args[] = {"rev-parse", "--verify", "-q", "HEAD", NULL};
    struct rein_buf out;
    char *nl;
    int code;
    rein_err rc;

    rein_buf_init(&out, 0);
    rc = rein__verify_git(dir, args, &out, &code, err);
    if (rc || code != 0 || !(nl = strchr(out.ptr, '\n')))
        goto out;
    g->toplevel = rein_strndup(out.ptr, (size_t)(nl - out.ptr));
    g->prefix = rein_strdup(nl + 1);
    if (!g->toplevel || !g->prefix) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto out;
    }
    g->prefix[strcspn(g->prefix, "\n")] = '\0';
    g->is_repo = true;
    rein_buf_reset(&out);
    rc = rein__verify_git(dir, head_args, &out, &code, err);
    g->has_head = !rc && code == 0;
out:
    rein_buf_release(&out);
    return rc;
}

static rein_err read_against_base(const char *dir, const char *base, struct rein__git *g,
                                  size_t *cap, struct rein_buf *out, rein_error *err)
{
    char *rev = rein_asprintf("%s^{commit}", base);
    const char *verify[] = {"rev-parse", "--verify", "-q", rev, NULL};
    const char *diff[] = {"diff", "--name-status", "-z", "--no-renames", base, "--", NULL};
    const char *others[] = {"ls-files",    "-z", "--others", "--exclude-standard",
                            "--full-name", ":/", NULL};
    int code;
    rein_err rc;

    if (!rev)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    rc = rein__verify_git(dir, verify, out, &code, err);
    rein_free(rev);
    if (rc)
        return rc;
    if (code != 0)
        return rein_error_set(err, REIN_EINVAL, "git does not know the revision \"%s\"", base);
    rein_buf_reset(out);
    rc = rein__verify_git(dir, diff, out, &code, err);
    if (!rc && code == 0)
        rc = parse_name_status(g, cap, out->ptr, out->len);
    if (rc)
        return rc == REIN_ENOMEM ? rein_error_set(err, rc, "out of memory") : rc;
    rein_buf_reset(out);
    rc = rein__verify_git(dir, others, out, &code, err);
    if (!rc && code == 0)
        rc = parse_untracked(g, cap, out->ptr, out->len);
    return rc == REIN_ENOMEM ? rein_error_set(err, rc, "out of memory") : rc;
}

rein_err rein__verify_git_read(const char *dir, const char *base, struct rein__git *g,
                               rein_error *err)
{
    const char *status[] = {
        "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", NULL};
    struct rein_buf out;
    size_t cap = 0;
    int code;
    rein_err rc;

    memset(g, 0, sizeof(*g));
    rc = read_toplevel(dir, g, err);
    if (rc || !g->is_repo)
        return rc;
    rein_buf_init(&out, 0);
    if (base) {
        rc = read_against_base(dir, base, g, &cap, &out, err);
    } else {
        rc = rein__verify_git(dir, status, &out, &code, err);
        if (!rc && code == 0)
            rc = parse_status(g, &cap, out.ptr, out.len);
        if (rc == REIN_ENOMEM)
            rein_error_set(err, rc, "out of memory");
    }
    rein_buf_release(&out);
    return rc;
}

const struct rein__git_entry *rein__verify_git_find(const struct rein__git *g, const char *path)
{
    for (size_t i = 0; i < g->n; i++) {
        if (strcmp(g->entries[i].path, path) == 0)
            return &g->entries[i];
    }
    return NULL;
}

/* Appends path's components to b, resolving "." and ".." against what b holds. */
static rein_err add_components(struct rein_buf *b, const char *path)
{
    while (*path) {
        size_t n = strcspn(path, "/");
        if (n == 0 || (n == 1 && path[0] == '.')) {
            /* nothing */
        } else if (n == 2 && path[0] == '.' && path[1] == '.') {
            char *slash = strrchr(b->ptr, '/');
            if (slash && slash != b->ptr)
                rein_buf_truncate(b, (size_t)(slash - b->ptr));
            else if (slash)
                rein_buf_truncate(b, 1);
            else
                rein_buf_truncate(b, 0);
        } else {
            if (b->len && b->ptr[b->len - 1] != '/' && rein_buf_addch(b, '/'))
                return REIN_ENOMEM;
            if (rein_buf_add(b, path, n))
                return REIN_ENOMEM;
        }
        path += n;
        if (*path == '/')
            path++;
    }
    return REIN_OK;
}

char *rein__verify_path_join(const char *dir, const char *path)
{
    struct rein_buf b;
    char *out;

    rein_buf_init(&b, PATH_MAX * 4);
    if (path[0] != '/') {
        const char *d = dir ? dir : ".";
        if ((d[0] == '/' && rein_buf_addch(&b, '/')) || add_components(&b, d))
            goto out_fail;
    } else if (rein_buf_addch(&b, '/')) {
        goto out_fail;
    }
    if (add_components(&b, path))
        goto out_fail;
    if (b.len == 0 && rein_buf_addch(&b, '.'))
        goto out_fail;
    out = rein_buf_detach(&b, NULL);
    rein_buf_release(&b);
    return out;

out_fail:
    rein_buf_release(&b);
    return NULL;
}

char *rein__verify_git_repo_path(const struct rein__git *g, const char *dir, const char *path)
{
    char real[PATH_MAX];
    char *full, *out = NULL;
    size_t tl;

    if (!g->is_repo || !realpath(dir ? dir : ".", real))
        return NULL;
    full = rein__verify_path_join(real, path);
    if (!full)
        return NULL;
    tl = strlen(g->toplevel);
    if (strncmp(full, g->toplevel, tl) == 0 && full[tl] == '/')
        out = rein_strdup(full + tl + 1);
    rein_free(full);
    return out;
}
