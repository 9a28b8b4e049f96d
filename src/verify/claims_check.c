/*
 * Claim checking: the second half of chain-of-verification. Each extracted claim is checked
 * on its own, against the world rather than against the agent's word:
 *
 *   file created   the file exists and git shows it new (untracked or added)
 *   file modified  git shows changes to it
 *   file deleted   it does not exist and git shows it deleted
 *   function       the file has a definition of the name (source.c), or, with no file named,
 *                  some source file of the project does
 *   tests pass, no type errors, build passes, lint clean: the protocol is run (through the
 *                  caller's run_check) and its result decides
 *
 * A claim that contradicts what is found is refuted; one that cannot be decided (no git, an
 * ignored file, no protocol to run) is unverifiable, never silently verified. Outside git,
 * existence is all there is to go on, and the confidence says so.
 */
#include "claims_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define SOURCE_MAX_BYTES ((size_t)8 << 20)
#define SEARCH_MAX_FILES 2000
#define SEARCH_MAX_DEPTH 8

struct checker {
    const struct rein_verify_claims_opts *opts;
    const char *cwd;
    struct rein__git git;
    bool git_read;
    rein_error *err;
};

static rein_err set_result(struct rein__claim *c, enum rein_verify_claim_status status,
                           double confidence, const char *fmt, ...) REIN_PRINTF(4, 5);

static rein_err set_result(struct rein__claim *c, enum rein_verify_claim_status status,
                           double confidence, const char *fmt, ...)
{
    char buf[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    rein_free(c->evidence);
    c->evidence = rein_strdup(buf);
    if (!c->evidence)
        return REIN_ENOMEM;
    c->pub.status = status;
    c->pub.confidence = confidence;
    return REIN_OK;
}

static char *fs_path(const struct checker *k, const char *path)
{
    return path[0] == '/' ? rein_strdup(path) : rein_asprintf("%s/%s", k->cwd, path);
}

static rein_err ensure_git(struct checker *k)
{
    rein_err rc;

    if (k->git_read)
        return REIN_OK;
    rc = rein__verify_git_read(k->cwd, k->opts->base, &k->git, k->err);
    if (rc)
        return rc;
    k->git_read = true;
    return REIN_OK;
}

/* The git entry for rp, or for something under the directory rp. */
static const struct rein__git_entry *git_entry(const struct rein__git *g, const char *rp)
{
    size_t n = strlen(rp);

    while (n && rp[n - 1] == '/')
        n--;
    for (size_t i = 0; i < g->n; i++) {
        const char *p = g->entries[i].path;
        if (strncmp(p, rp, n) == 0 && (p[n] == '\0' || p[n] == '/'))
            return &g->entries[i];
    }
    return NULL;
}

static bool git_ignores(const struct checker *k, const char *rp)
{
    const char *args[] = {"check-ignore", "-q", "--", rp, NULL};
    struct rein_buf out;
    int code = -1;

    rein_buf_init(&out, 4096);
    if (k->git.toplevel && rein__verify_git(k->git.toplevel, args, &out, &code, NULL))
        code = -1;
    rein_buf_release(&out);
    return code == 0;
}

static const char *against(const struct checker *k)
{
    return k->opts->base ? k->opts->base : "HEAD";
}

/* The status letters of an entry without blanks ("M", "AM"); "" when there is none. */
static void letters(const struct rein__git_entry *e, char out[3])
{
    size_t n = 0;

    if (e && e->x && e->x != ' ')
        out[n++] = e->x;
    if (e && e->y && e->y != ' ')
        out[n++] = e->y;
    out[n] = '\0';
}

static rein_err check_created(struct checker *k, struct rein__claim *c, bool exists, const char *rp)
{
    const struct rein__git_entry *e;
    char st[3];

    if (!exists)
        return set_result(c, REIN_VERIFY_CLAIM_REFUTED, 1.0, "%s does not exist", c->path);
    if (!k->git.is_repo || !rp)
        return set_result(c, REIN_VERIFY_CLAIM_VERIFIED, 0.6,
                          "%s exists; outside a git repository its age is unknown", c->path);
    e = git_entry(&k->git, rp);
    letters(e, st);
    if (e && (e->x == '?' || e->x == 'A'))
        return set_result(c, REIN_VERIFY_CLAIM_VERIFIED, 1.0, "%s is new (git: %s)", c->path,
                          e->x == '?'     ? "untracked"
                          : k->opts->base ? "added since base"
                                          : "added to the index");
    if (e)
        return set_result(c, REIN_VERIFY_CLAIM_REFUTED, 0.9,
                          "%s existed before: git shows it changed (%s), not new", c->path, st);
    if (git_ignores(k, rp))
        return set_result(c, REIN_VERIFY_CLAIM_UNVERIFIABLE, 0.5,
                          "%s exists but git ignores it, so git cannot tell whether it is new",
                          c->path);
    return set_result(c, REIN_VERIFY_CLAIM_REFUTED, 1.0,
                      "%s is tracked and unchanged since %s, so it was not created now%s", c->path,
                      against(k),
                      k->opts->base ? "" : " (give a base revision if it was committed)");
}

static rein_err check_modified(struct checker *k, struct rein__claim *c, bool exists,
                               const char *rp)
{
    const struct rein__git_entry *e;
    char st[3];

    if (!exists)
        return set_result(c, REIN_VERIFY_CLAIM_REFUTED, 1.0, "%s does not exist", c->path);
    if (!k->git.is_repo || !rp)
        return set_result(c, REIN_VERIFY_CLAIM_UNVERIFIABLE, 0.5,
                          "%s exists, but outside a git repository there is no record of "
                          "changes",
                          c->path);
    e = git_entry(&k->git, rp);
    letters(e, st);
    if (e)
        return set_result(c, REIN_VERIFY_CLAIM_VERIFIED, 1.0, "git shows %s changed (%s)", c->path,
                          e->x == '?' ? "untracked, new" : st);
    if (git_ignores(k, rp))
        return set_result(c, REIN_VERIFY_CLAIM_UNVERIFIABLE, 0.5,
                          "%s is ignored by git, which therefore has no record of changes",
                          c->path);
    return set_result(c, REIN_VERIFY_CLAIM_REFUTED, 1.0, "git shows no changes to %s since %s",
                      c->path, against(k));
}

static rein_err check_deleted(struct checker *k, struct rein__claim *c, bool exists, const char *rp)
{
    const struct rein__git_entry *e;

    if (exists)
        return set_result(c, REIN_VERIFY_CLAIM_REFUTED, 1.0, "%s still exists", c->path);
    if (!k->git.is_repo || !rp)
        return set_result(c, REIN_VERIFY_CLAIM_VERIFIED, 0.6,
                          "%s does not exist; outside a git repository whether it ever did is "
                          "unknown",
                          c->path);
    e = git_entry(&k->git, rp);
    if (e && (e->x == 'D' || e->y == 'D'))
        return set_result(c, REIN_VERIFY_CLAIM_VERIFIED, 1.0, "git shows %s deleted", c->path);
    return set_result(c, REIN_VERIFY_CLAIM_UNVERIFIABLE, 0.5,
                      "%s does not exist, but git has no record of it being deleted (was it "
                      "ever tracked?)",
                      c->path);
}

static rein_err check_file(struct checker *k, struct rein__claim *c)
{
    struct stat st;
    char *full = fs_path(k, c->path), *rp = NULL;
    bool exists;
    rein_err rc;

    if (!full)
        return REIN_ENOMEM;
    exists = lstat(full, &st) == 0;
    rein_free(full);
    rc = ensure_git(k);
    if (rc)
        return rc;
    if (k->git.is_repo) {
        rp = rein__verify_git_repo_path(&k->git, k->cwd, c->path);
        /* NULL is also "outside the repository": existence is all that is left then. */
    }
    switch (c->pub.kind) {
    case REIN_VERIFY_CLAIM_FILE_CREATED:
        rc = check_created(k, c, exists, rp);
        break;
    case REIN_VERIFY_CLAIM_FILE_MODIFIED:
        rc = check_modified(k, c, exists, rp);
        break;
    default:
        rc = check_deleted(k, c, exists, rp);
        break;
    }
    rein_free(rp);
    return rc;
}

/* ---- functions ---- */

/* Reads a whole file (at most SOURCE_MAX_BYTES) into new memory; NULL with errno set. */
static char *read_source(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;

    if (!f)
        return NULL;
    buf = rein_malloc(SOURCE_MAX_BYTES + 1);
    if (!buf) {
        fclose(f);
        errno = ENOMEM;
        return NULL;
    }
    *len = fread(buf, 1, SOURCE_MAX_BYTES, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static rein_err check_function_in(struct checker *k, struct rein__claim *c)
{
    char *full = fs_path(k, c->path), *text;
    size_t len = 0;
    int line = 0, r;
    const char *dot = strrchr(c->path, '.');
    bool header = dot && (strcmp(dot, ".h") == 0 || strcmp(dot, ".hpp") == 0 ||
                          strcmp(dot, ".hh") == 0 || strcmp(dot, ".hxx") == 0);

    if (!full)
        return REIN_ENOMEM;
    text = read_source(full, &len);
    rein_free(full);
    if (!text) {
        if (errno == ENOMEM)
            return REIN_ENOMEM;
        return set_result(c, REIN_VERIFY_CLAIM_REFUTED, 1.0, "%s does not exist", c->path);
    }
    r = rein_verify_source_find_function(text, len, c->path, c->name, &line);
    rein_free(text);
    if (r == 2 && c->pub.line && (line > c->pub.line + 3 || line < c->pub.line - 3))
        return set_result(c, REIN_VERIFY_CLAIM_VERIFIED, 0.6,
                          "%s is defined at %s:%d, not at line %d as claimed", c->name, c->path,
                          line, c->pub.line);
    if (r == 2)
        return set_result(c, REIN_VERIFY_CLAIM_VERIFIED, 0.9, "%s is defined at %s:%d", c->name,
                          c->path, line);
    if (r == 1 && header)
        return set_result(c, REIN_VERIFY_CLAIM_VERIFIED, 0.7, "%s is declared at %s:%d", c->name,
                          c->path, line);
    if (r == 1)
        return set_result(c, REIN_VERIFY_CLAIM_REFUTED, 0.9,
                          "%s is only declared at %s:%d; %s has no definition of it", c->name,
                          c->path, line, c->path);
    if (r < 0 && line)
        return set_result(c, REIN_VERIFY_CLAIM_UNVERIFIABLE, 0.5,
                          "%s( appears at %s:%d, but rein does not parse this language", c->name,
                          c->path, line);
    if (r < 0)
        return set_result(c, REIN_VERIFY_CLAIM_REFUTED, 0.8, "%s does not appear in %s", c->name,
                          c->path);
    return set_result(c, REIN_VERIFY_CLAIM_REFUTED, 0.9, "%s has no definition of %s", c->path,
                      c->name);
}

struct search {
    struct checker *k;
    struct rein__claim *c;
    size_t files;
    bool found;
    char where[300];
    int line;
};

/* Scans one file of the search; sets s->found. Files of unknown languages are passed over. */
static rein_err search_file(struct search *s, const char *full, const char *shown)
{
    size_t len = 0;
    int line = 0, r;
    char *text;

    if (rein_verify_source_find_function("", 0, full, "x", &line) < 0)
        return REIN_OK; /* not a language rein reads */
    s->files++;
    text = read_source(full, &len);
    if (!text)
        return errno == ENOMEM ? REIN_ENOMEM : REIN_OK;
    r = rein_verify_source_find_function(text, len, full, s->c->name, &line);
    rein_free(text);
    if (r == 2) {
        s->found = true;
        s->line = line;
        snprintf(s->where, sizeof(s->where), "%s", shown);
    }
    return REIN_OK;
}

static rein_err search_git(struct search *s)
{
    const char *args[] = {"ls-files",           "-z",          "--cached", "--others",
                          "--exclude-standard", "--full-name", ":/",       NULL};
    struct rein_buf out;
    int code;
    rein_err rc;

    rein_buf_init(&out, 0);
    rc = rein__verify_git(s->k->cwd, args, &out, &code, s->k->err);
    for (size_t i = 0;
         !rc && code == 0 && i < out.len && !s->found && s->files < SEARCH_MAX_FILES;) {
        const char *p = out.ptr + i;
        char *full = rein_asprintf("%s/%s", s->k->git.toplevel, p);
        i += strlen(p) + 1;
        if (!full) {
            rc = REIN_ENOMEM;
            break;
        }
        rc = search_file(s, full, p);
        rein_free(full);
    }
    rein_buf_release(&out);
    return rc;
}

static rein_err search_dir(struct search *s, const char *dir, const char *shown, int depth)
{
    DIR *d;
    struct dirent *e;
    rein_err rc = REIN_OK;

    if (depth > SEARCH_MAX_DEPTH || !(d = opendir(dir)))
        return REIN_OK;
    while (!rc && !s->found && s->files < SEARCH_MAX_FILES && (e = readdir(d))) {
        struct stat st;
        bool known;
        char *full, *sub;
        if (e->d_name[0] == '.' || strcmp(e->d_name, "node_modules") == 0 ||
            strncmp(e->d_name, "build", 5) == 0)
            continue;
        full = rein_asprintf("%s/%s", dir, e->d_name);
        sub = shown[0] ? rein_asprintf("%s/%s", shown, e->d_name) : rein_strdup(e->d_name);
        known = full && sub && lstat(full, &st) == 0;
        if (!full || !sub)
            rc = REIN_ENOMEM;
        else if (known && S_ISDIR(st.st_mode))
            rc = search_dir(s, full, sub, depth + 1);
        else if (known && S_ISREG(st.st_mode))
            rc = search_file(s, full, sub);
        rein_free(full);
        rein_free(sub);
    }
    closedir(d);
    return rc;
}

static rein_err check_function(struct checker *k, struct rein__claim *c)
{
    struct search s = {.k = k, .c = c};
    rein_err rc;

    if (c->path)
        return check_function_in(k, c);
    rc = ensure_git(k);
    if (!rc)
        rc = k->git.is_repo ? search_git(&s) : search_dir(&s, k->cwd, "", 0);
    if (rc)
        return rc;
    if (s.found)
        return set_result(c, REIN_VERIFY_CLAIM_VERIFIED, 0.9, "%s is defined at %s:%d", c->name,
                          s.where, s.line);
    if (s.files == 0)
        return set_result(c, REIN_VERIFY_CLAIM_UNVERIFIABLE, 0.5,
                          "no file was named and no source file rein can read was found");
    return set_result(c, REIN_VERIFY_CLAIM_REFUTED, 0.8,
                      "no definition of %s in the %zu source files searched", c->name, s.files);
}

/* ---- execution claims ---- */

static rein_err check_exec(struct checker *k, struct rein__claim *c)
{
    const char *protocol = c->pub.kind == REIN_VERIFY_CLAIM_TESTS_PASS       ? "TEST"
                           : c->pub.kind == REIN_VERIFY_CLAIM_NO_TYPE_ERRORS ? "TYPECHECK"
                           : c->pub.kind == REIN_VERIFY_CLAIM_BUILD_PASSES   ? "BUILD"
                                                                             : "LINT";
    char why[240] = "";
    double conf = 1.0;
    int r;

    if (!k->opts->run_check)
        return set_result(c, REIN_VERIFY_CLAIM_UNVERIFIABLE, 0.5,
                          "nothing was given to run the %s protocol with", protocol);
    r = k->opts->run_check(protocol, why, sizeof(why), &conf, k->opts->userdata);
    /* No separate type check: for compiled languages the build is the type check. */
    if (r < 0 && c->pub.kind == REIN_VERIFY_CLAIM_NO_TYPE_ERRORS) {
        protocol = "BUILD";
        r = k->opts->run_check(protocol, why, sizeof(why), &conf, k->opts->userdata);
    }
    if (r < 0)
        return set_result(c, REIN_VERIFY_CLAIM_UNVERIFIABLE, 0.5,
                          "there is no %s protocol to run; declare one in rein-verify.yaml",
                          protocol);
    return set_result(c, r ? REIN_VERIFY_CLAIM_VERIFIED : REIN_VERIFY_CLAIM_REFUTED, conf,
                      "%s %s%s%s", protocol, r ? "passed" : "failed", why[0] ? ": " : "", why);
}

rein_err rein_verify_claims_check(rein_verify_claims *claims,
                                  const struct rein_verify_claims_opts *opts, rein_error *err)
{
    static const struct rein_verify_claims_opts none = {0};
    struct checker k = {.opts = opts ? opts : &none, .err = err};
    rein_err rc = REIN_OK;

    k.cwd = k.opts->cwd ? k.opts->cwd : ".";
    for (size_t i = 0; claims && i < claims->n && !rc; i++) {
        struct rein__claim *c = &claims->v[i];
        switch (c->pub.kind) {
        case REIN_VERIFY_CLAIM_FILE_CREATED:
        case REIN_VERIFY_CLAIM_FILE_MODIFIED:
        case REIN_VERIFY_CLAIM_FILE_DELETED:
            rc = check_file(&k, c);
            break;
        case REIN_VERIFY_CLAIM_FUNCTION_EXISTS:
            rc = check_function(&k, c);
            break;
        default:
            rc = check_exec(&k, c);
            break;
        }
    }
    rein__verify_git_release(&k.git);
    if (rc == REIN_ENOMEM)
        rein_error_set(err, rc, "out of memory checking claims");
    return rc;
}
