/*
 * The change in a working tree as a unified diff, for the LLM judge ("## Code change" in the
 * seed's prompt): `git diff` against HEAD (or a base revision) for tracked files, then every
 * untracked, not ignored file as a new-file diff, since an agent's new files are usually the
 * heart of its change and plain `git diff` leaves them out. Binary files are named, not
 * shown. The text is bounded: past max bytes it is cut at a line with a note saying how much
 * was left out, so a generated file cannot crowd the judge's context.
 */
#include "verify_int.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define DEFAULT_MAX        ((size_t)64 << 10)
#define NEW_FILE_MAX_BYTES ((size_t)256 << 10)

struct diff {
    const char *dir;
    struct rein_buf out;
    size_t max;
    size_t dropped; /* bytes left out */
};

/* Appends len bytes, or counts them as dropped once the limit is reached. */
static rein_err add(struct diff *d, const char *s, size_t len)
{
    if (d->dropped || d->out.len + len > d->max) {
        d->dropped += len;
        return REIN_OK;
    }
    return rein_buf_add(&d->out, s, len);
}

static rein_err git_text(struct diff *d, const char *const *args, struct rein_buf *out, int *code,
                         rein_error *err)
{
    rein_buf_reset(out);
    return rein__verify_git(d->dir, args, out, code, err);
}

/* One untracked file as "+" lines (path is relative to the repository's top level). */
static rein_err add_new_file(struct diff *d, const char *top, const char *path)
{
    char *full = rein_asprintf("%s/%s", top, path);
    char *head = rein_asprintf("diff --git a/%s b/%s\nnew file (untracked)\n--- /dev/null\n"
                               "+++ b/%s\n",
                               path, path, path);
    struct rein_buf body;
    char buf[8192];
    struct stat st;
    FILE *f = NULL;
    size_t n, lines = 0;
    bool binary = false, nl = true;
    rein_err rc = REIN_ENOMEM;

    rein_buf_init(&body, NEW_FILE_MAX_BYTES * 2 + 64);
    if (!full || !head)
        goto out;
    if (lstat(full, &st) == 0 && S_ISREG(st.st_mode))
        f = fopen(full, "rb");
    if (!f) {
        rc = REIN_OK; /* gone since git listed it, or not a regular file: nothing to show */
        goto out;
    }
    if ((size_t)st.st_size > NEW_FILE_MAX_BYTES) {
        rc = rein_buf_addf(&body, "+… (%lld bytes: too large to show)\n", (long long)st.st_size);
        goto show;
    }
    while (!binary && (n = fread(buf, 1, sizeof(buf), f)) > 0) {
        for (size_t i = 0; i < n && !binary; i++) {
            binary = buf[i] == '\0';
            if (nl && rein_buf_addch(&body, '+'))
                goto out;
            if (rein_buf_addch(&body, buf[i]))
                goto out;
            nl = buf[i] == '\n';
            lines += nl;
        }
    }
    if (!binary && !nl) {
        /* The last line counts in the hunk; git's marker after it does not. */
        if (rein_buf_adds(&body, "\n\\ No newline at end of file\n"))
            goto out;
        lines++;
    }
    if (binary) {
        rein_buf_reset(&body);
        rc = rein_buf_addf(&body, "Binary file %s added\n", path);
        goto show;
    }
    rc = REIN_OK;
show:
    if (!rc) {
        rein__verify_utf8_fix(body.ptr, body.len);
        rc = add(d, head, strlen(head));
    }
    if (!rc) {
        char hunk[64];
        if (!binary && lines) {
            snprintf(hunk, sizeof(hunk), "@@ -0,0 +1,%zu @@\n", lines);
            rc = add(d, hunk, strlen(hunk));
        }
        if (!rc)
            rc = add(d, body.ptr, body.len);
    }
out:
    if (f)
        fclose(f);
    rein_buf_release(&body);
    rein_free(full);
    rein_free(head);
    return rc;
}

static rein_err add_untracked(struct diff *d, const char *top, struct rein_buf *tmp,
                              rein_error *err)
{
    const char *args[] = {"ls-files",    "-z", "--others", "--exclude-standard",
                          "--full-name", ":/", NULL};
    char *list;
    size_t len;
    int code;
    rein_err rc = git_text(d, args, tmp, &code, err);

    if (rc || code != 0)
        return rc;
    list = rein_buf_detach(tmp, &len);
    if (!list)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    for (size_t i = 0; i < len && !rc;) {
        size_t n = strnlen(list + i, len - i);
        rc = add_new_file(d, top, list + i);
        i += n + 1;
    }
    rein_free(list);
    return rc == REIN_ENOMEM ? rein_error_set(err, rc, "out of memory") : rc;
}

rein_err rein_verify_diff(const char *dir, const char *base, size_t max_bytes, char **out,
                          rein_error *err)
{
    const char *top_args[] = {"rev-parse", "--show-toplevel", NULL};
    const char *head_args[] = {"rev-parse", "--verify", "-q", "HEAD", NULL};
    struct diff d = {.dir = dir ? dir : ".", .max = max_bytes ? max_bytes : DEFAULT_MAX};
    struct rein_buf tmp;
    const char *user_base = base;
    char *top = NULL;
    int code;
    rein_err rc;

    *out = NULL;
    rein_buf_init(&d.out, 0);
    rein_buf_init(&tmp, 0);
    rc = git_text(&d, top_args, &tmp, &code, err);
    if (rc || code != 0)
        goto done; /* not a repository (or no git): no diff, not an error */
    tmp.ptr[strcspn(tmp.ptr, "\n")] = '\0';
    top = rein_strdup(tmp.ptr);
    if (!top) {
        rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
        goto done;
    }
    if (!base) {
        rc = git_text(&d, head_args, &tmp, &code, err);
        if (rc)
            goto done;
        base = code == 0 ? "HEAD" : NULL;
    }
    {
        /* Without a HEAD (a new repository) the index is the reference: staged files show
         * with --cached, the rest as untracked. */
        const char *diff_args[] = {"diff",   "--no-color", "--no-ext-diff",
                                   "--stat", "-p",         base ? base : "--cached",
                                   "--",     NULL};
        rc = git_text(&d, diff_args, &tmp, &code, err);
        if (!rc && code != 0 && user_base)
            rc = rein_error_set(err, REIN_EINVAL, "git does not know the revision \"%s\"", base);
        if (!rc && code == 0) {
            rein__verify_utf8_fix(tmp.ptr, tmp.len);
            rc = add(&d, tmp.ptr, tmp.len);
        }
    }
    if (!rc)
        rc = add_untracked(&d, top, &tmp, err);
done:
    if (!rc && d.dropped) {
        /* Cut at the last whole line that fits, and say how much is missing. */
        char *nl = d.out.len ? memrchr(d.out.ptr, '\n', d.out.len) : NULL;
        size_t keep = nl ? (size_t)(nl - d.out.ptr) + 1 : 0;
        d.dropped += d.out.len - keep;
        rein_buf_truncate(&d.out, keep);
        rc = rein_buf_addf(&d.out, "… (diff cut: %zu more bytes not shown)\n", d.dropped);
    }
    if (!rc) {
        *out = rein_buf_detach(&d.out, NULL);
        if (!*out)
            rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
    } else if (rc == REIN_ENOMEM) {
        rein_error_set(err, rc, "out of memory");
    }
    rein_free(top);
    rein_buf_release(&tmp);
    rein_buf_release(&d.out);
    return rc;
}
