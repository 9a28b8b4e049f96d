/*
 * Working-tree hashes, for the loop's repeated-state and oscillation detection: two
 * iterations that leave the same files with the same contents get the same hash.
 *
 * In a git repository the hash covers exactly the files git would track: for every path in
 * the index, its blob id when the work tree matches the index, else the SHA-256 of what is
 * on disk (or "deleted"); and every untracked, not ignored file by content. Reading blob ids
 * from the index keeps the cost proportional to what changed, not to the size of the
 * repository. Outside git, every regular file under the directory (except .git) is hashed by
 * path and content, within fixed limits. Modification times never enter the hash.
 */
#include "verify_int.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WALK_MAX_FILES 20000
#define WALK_MAX_BYTES ((uint64_t)256 << 20)

struct hasher {
    struct rein__sha256 tree;
    uint64_t bytes;
    size_t files;
};

/* Adds "path\0" + the SHA-256 of the file's content (or link target) to the tree hash. */
static rein_err hash_path(struct hasher *hs, const char *full, const char *name)
{
    struct rein__sha256 h;
    uint8_t digest[32];
    struct stat st;
    char buf[65536];

    rein__sha256_init(&h);
    if (lstat(full, &st) != 0) {
        rein__sha256_add(&h, "deleted", 7);
    } else if (S_ISLNK(st.st_mode)) {
        ssize_t n = readlink(full, buf, sizeof(buf));
        rein__sha256_add(&h, "link:", 5);
        if (n > 0)
            rein__sha256_add(&h, buf, (size_t)n);
    } else if (S_ISREG(st.st_mode)) {
        FILE *f = fopen(full, "rb");
        size_t n;
        rein__sha256_add(&h, (st.st_mode & 0111) ? "exec:" : "file:", 5);
        while (f && (n = fread(buf, 1, sizeof(buf), f)) > 0) {
            hs->bytes += n;
            if (hs->bytes > WALK_MAX_BYTES) {
                fclose(f);
                return REIN_ETOOBIG;
            }
            rein__sha256_add(&h, buf, n);
        }
        if (f)
            fclose(f);
    } else {
        rein__sha256_add(&h, "other", 5);
    }
    rein__sha256_final(&h, digest);
    rein__sha256_add(&hs->tree, name, strlen(name) + 1);
    rein__sha256_add(&hs->tree, digest, sizeof(digest));
    return ++hs->files > WALK_MAX_FILES ? REIN_ETOOBIG : REIN_OK;
}

/* ---- outside git ---- */

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static rein_err walk(struct hasher *hs, const char *dir, const char *rel, int depth)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0;
    rein_err rc = REIN_OK;

    if (!d)
        return REIN_OK;
    if (depth > 64) {
        closedir(d);
        return REIN_ETOOBIG;
    }
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            strcmp(e->d_name, ".git") == 0)
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            char **v = rein_realloc(names, ncap * sizeof(*v));
            if (!v) {
                rc = REIN_ENOMEM;
                break;
            }
            names = v;
            cap = ncap;
        }
        names[n] = rein_strdup(e->d_name);
        if (!names[n]) {
            rc = REIN_ENOMEM;
            break;
        }
        n++;
        if (n > WALK_MAX_FILES) {
            rc = REIN_ETOOBIG;
            break;
        }
    }
    closedir(d);
    if (!rc && n)
        qsort(names, n, sizeof(*names), cmp_name); /* readdir's order is not stable */
    for (size_t i = 0; !rc && i < n; i++) {
        char *full = rein_asprintf("%s/%s", dir, names[i]);
        char *r = rel[0] ? rein_asprintf("%s/%s", rel, names[i]) : rein_strdup(names[i]);
        struct stat st;
        if (!full || !r)
            rc = REIN_ENOMEM;
        else if (lstat(full, &st) == 0 && S_ISDIR(st.st_mode))
            rc = walk(hs, full, r, depth + 1);
        else
            rc = hash_path(hs, full, r);
        rein_free(full);
        rein_free(r);
    }
    for (size_t i = 0; i < n; i++)
        rein_free(names[i]);
    rein_free(names);
    return rc;
}

/* ---- in git ---- */

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const struct rein__git_entry *)a)->path,
                  ((const struct rein__git_entry *)b)->path);
}

/* True when the work tree's copy of path differs from the index (or is untracked). */
static const struct rein__git_entry *changed(const struct rein__git *g, const char *path)
{
    struct rein__git_entry key = {(char *)path, 0, 0};

    if (g->n == 0)
        return NULL;
    return bsearch(&key, g->entries, g->n, sizeof(key), cmp_entry);
}

static rein_err hash_git(struct hasher *hs, struct rein__git *g, rein_error *err)
{
    const char *args[] = {"ls-files", "-s", "-z", NULL};
    struct rein_buf out;
    int code;
    rein_err rc;

    if (g->n)
        qsort(g->entries, g->n, sizeof(*g->entries), cmp_entry);
    rein_buf_init(&out, 0);
    rc = rein__verify_git(g->toplevel, args, &out, &code, err);
    if (!rc && code != 0)
        rc = rein_error_set(err, REIN_EIO, "git ls-files failed in %s", g->toplevel);
    /* "<mode> <blob> <stage>\t<path>\0" per index entry, sorted by path. */
    for (size_t i = 0; !rc && i < out.len;) {
        const char *rec = out.ptr + i, *tab = strchr(rec, '\t');
        const struct rein__git_entry *e;
        size_t len = strlen(rec);
        i += len + 1;
        if (!tab)
            continue;
        e = changed(g, tab + 1);
        if (e && e->y != ' ') {
            char *full = rein_asprintf("%s/%s", g->toplevel, tab + 1);
            if (!full) {
                rc = REIN_ENOMEM;
                break;
            }
            rc = hash_path(hs, full, tab + 1);
            rein_free(full);
        } else {
            /* The index's mode and blob id stand for the unchanged content. */
            rein__sha256_add(&hs->tree, tab + 1, strlen(tab + 1) + 1);
            rein__sha256_add(&hs->tree, rec, (size_t)(tab - rec));
        }
    }
    for (size_t i = 0; !rc && i < g->n; i++) {
        char *full;
        if (g->entries[i].x != '?')
            continue;
        full = rein_asprintf("%s/%s", g->toplevel, g->entries[i].path);
        if (!full) {
            rc = REIN_ENOMEM;
            break;
        }
        rein__sha256_add(&hs->tree, "untracked", 10);
        rc = hash_path(hs, full, g->entries[i].path);
        rein_free(full);
    }
    rein_buf_release(&out);
    return rc;
}

rein_err rein_verify_tree_hash(const char *dir, char out[REIN_VERIFY_HASH_LEN + 1], rein_error *err)
{
    struct hasher hs = {0};
    struct rein__git g;
    rein_err rc;

    out[0] = '\0';
    rein__sha256_init(&hs.tree);
    rc = rein__verify_git_read(dir, NULL, &g, err);
    if (!rc && g.is_repo) {
        rein__sha256_add(&hs.tree, "git", 4);
        rc = hash_git(&hs, &g, err);
    } else if (!rc) {
        rein__sha256_add(&hs.tree, "dir", 4);
        rc = walk(&hs, dir ? dir : ".", "", 0);
    }
    rein__verify_git_release(&g);
    if (rc == REIN_ETOOBIG)
        return rein_error_set(err, rc, "the tree is too large to hash (over %d files or %d MiB)",
                              WALK_MAX_FILES, (int)(WALK_MAX_BYTES >> 20));
    if (rc == REIN_ENOMEM)
        return rein_error_set(err, rc, "out of memory hashing the tree");
    if (rc)
        return rc;
    rein__sha256_hex(&hs.tree, out, REIN_VERIFY_HASH_LEN);
    return REIN_OK;
}
