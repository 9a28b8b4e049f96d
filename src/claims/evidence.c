/*
 * Checking claims: each one against what happened, never against the agent's word.
 *
 *   tool          the ledger: a success entry for the tool (its name compared without case
 *                 or separators) confirms; only failed or pending entries, or none, refute.
 *   file_written  the ledger (a successful call of a tool that may write, naming the file in
 *                 its arguments or result) or the tree: the file exists and is new since the
 *                 base revision or differs from it (git cat-file / git diff against the base);
 *                 outside git, that it exists (medium confidence).
 *   file_deleted  the ledger as above, or the tree: gone now and present in the base.
 *   function      the ledger (a writing call whose arguments name the function), or the
 *                 definition in the named file (rein_claims_find_function), or in the
 *                 project's sources when no file is named.
 *   checks        the caller runs the protocol (run_check).
 *
 * When a ledger was given and neither it nor the tree shows the claim, it is refuted: the
 * agent could only have done it through a call. When there was nothing to check against, it
 * is unverifiable.
 *
 * git runs as a program (no shell), read-only (--no-optional-locks), one question per claim.
 */
#include "claims_int.h"

#include <dirent.h>
#include <errno.h>
#include <rein/proc.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define GIT_TIMEOUT_MS   30000
#define SOURCE_MAX_BYTES ((size_t)8 << 20)
#define SEARCH_MAX_FILES 2000
#define SEARCH_MAX_DEPTH 8
#define CALLS_LISTED     4

enum verdict { V_UNDECIDED = 0, V_YES, V_NO };

struct checker {
    const struct rein_claims_evidence *ev;
    const char *cwd;
    rein_error *err;
    bool probed;
    bool repo;
    char *top;        /* the repository's top level */
    char *prefix;     /* cwd relative to top ("" or "sub/") */
    const char *base; /* the revision, "HEAD" by default */
    bool has_base;    /* the base revision exists (a new repository has no HEAD) */
};

static rein_err set(struct rein__claim *c, enum rein_claim_status s, double conf, const char *fmt,
                    ...) REIN_PRINTF(4, 5);

/* Drops a UTF-8 sequence that vsnprintf cut short at the end of buf. */
static void tidy_end(char *buf)
{
    size_t n = strlen(buf), k = n;

    while (k > 0 && ((unsigned char)buf[k - 1] & 0xc0) == 0x80)
        k--;
    if (k > 0 && (unsigned char)buf[k - 1] >= 0xc0 && rein__claims_utf8_len(buf, n, k - 1) == 1)
        buf[k - 1] = '\0';
}

static rein_err set(struct rein__claim *c, enum rein_claim_status s, double conf, const char *fmt,
                    ...)
{
    char buf[480];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    tidy_end(buf);
    rein_free(c->evidence);
    c->evidence = rein_strdup(buf);
    if (!c->evidence)
        return REIN_ENOMEM;
    c->pub.status = s;
    c->pub.confidence = conf;
    return REIN_OK;
}

/* ---- git ---- */

/* Runs git in dir; *code its exit status (-1: not run). out (may be NULL) gets stdout. */
static rein_err git(const char *dir, const char *const *args, int *code, struct rein_buf *out)
{
    const char *argv[12] = {"git", "--no-optional-locks", "-C", dir};
    struct rein_proc_run_opts o = {.proc = {.argv = argv},
                                   .stdout_max = 1 << 20,
                                   .stderr_max = 1024,
                                   .timeout_ms = GIT_TIMEOUT_MS};
    struct rein_proc_result res;
    size_t n = 4;
    rein_err rc;

    for (size_t i = 0; args[i] && n < 11; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    *code = -1;
    rc = rein_proc_run(&o, &res, NULL);
    if (rc)
        return rc == REIN_ENOMEM ? rc : REIN_OK; /* no git: not a repository */
    *code = res.timed_out ? -1 : res.exit_code;
    if (out && rein_buf_add(out, res.out.ptr, res.out.len))
        rc = REIN_ENOMEM;
    rein_proc_result_release(&res);
    return rc;
}

static rein_err probe(struct checker *k)
{
    const char *top_args[] = {"rev-parse", "--show-toplevel", "--show-prefix", NULL};
    struct rein_buf out;
    int code;
    rein_err rc;

    if (k->probed)
        return REIN_OK;
    k->probed = true;
    k->base = k->ev->base ? k->ev->base : "HEAD";
    rein_buf_init(&out, 1 << 16);
    rc = git(k->cwd, top_args, &code, &out);
    if (!rc && code == 0) {
        char *nl = strchr(out.ptr, '\n');
        if (nl) {
            char *nl2;
            *nl = '\0';
            nl2 = strchr(nl + 1, '\n');
            if (nl2)
                *nl2 = '\0';
            k->top = rein_strdup(out.ptr);
            k->prefix = rein_strdup(nl + 1);
            if (!k->top || !k->prefix)
                rc = REIN_ENOMEM;
            k->repo = !rc;
        }
    }
    rein_buf_release(&out);
    if (rc || !k->repo)
        return rc;
    {
        char rev[300];
        const char *verify[] = {"rev-parse", "--verify", "--quiet", rev, NULL};
        snprintf(rev, sizeof(rev), "%s^{commit}", k->base);
        rc = git(k->top, verify, &code, NULL);
        if (rc)
            return rc;
        k->has_base = code == 0;
        if (!k->has_base && k->ev->base)
            return rein_error_set(k->err, REIN_EINVAL, "git does not know the base revision '%s'",
                                  k->ev->base);
    }
    return REIN_OK;
}

/* The claim's path relative to the top level, or NULL when it is outside the repository. */
static char *repo_path(const struct checker *k, const char *path)
{
    size_t tl = strlen(k->top);

    if (path[0] == '/') {
        if (strncmp(path, k->top, tl) == 0 && path[tl] == '/')
            return rein_strdup(path + tl + 1);
        return NULL;
    }
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    if (strstr(path, "../") || strcmp(path, "..") == 0)
        return NULL;
    return rein_asprintf("%s%s", k->prefix, path);
}

/* Is rp (a top-level-relative path) in the base revision? */
static rein_err in_base(struct checker *k, const char *rp, bool *yes)
{
    char spec[1200];
    const char *args[] = {"cat-file", "-e", spec, NULL};
    size_t n;
    int code;
    rein_err rc;

    *yes = false;
    if (!k->has_base)
        return REIN_OK;
    snprintf(spec, sizeof(spec), "%s:%s", k->base, rp);
    n = strlen(spec);
    while (n && spec[n - 1] == '/')
        spec[--n] = '\0';
    rc = git(k->top, args, &code, NULL);
    *yes = !rc && code == 0;
    return rc;
}

/* Does rp differ from the base (tracked changes, or untracked files under a directory)? */
static rein_err differs(struct checker *k, const char *rp, bool *yes)
{
    const char *diff[] = {"diff", "--quiet", k->base, "--", rp, NULL};
    const char *others[] = {"ls-files", "--others", "--exclude-standard", "--", rp, NULL};
    struct rein_buf out;
    int code;
    rein_err rc = git(k->top, diff, &code, NULL);

    *yes = code == 1;
    if (rc || *yes)
        return rc;
    rein_buf_init(&out, 1 << 16);
    rc = git(k->top, others, &code, &out);
    *yes = !rc && code == 0 && out.len > 0;
    rein_buf_release(&out);
    return rc;
}

/* ---- the ledger ---- */

static const char *entry_status(const json_t *e)
{
    const char *s = json_string_value(json_object_get(e, "status"));

    return s ? s : "";
}

static bool read_only(const struct checker *k, const char *tool)
{
    const rein_tool *t = k->ev->reg && tool ? rein_registry_get(k->ev->reg, tool) : NULL;

    return t && rein_tool_is_read_only(t);
}

/* A successful call of a tool that may write whose arguments or result contain needle (or,
 * for a path, its last part). Returns the entry or NULL. */
static const json_t *touched(const struct checker *k, const char *needle, bool is_path)
{
    const char *base = is_path ? strrchr(needle, '/') : NULL;
    size_t i;
    const json_t *e;

    if (base && base[1])
        base++;
    else
        base = NULL;
    json_array_foreach(k->ev->ledger, i, e)
    {
        const char *tool = json_string_value(json_object_get(e, "tool"));
        bool hit = false;
        if (strcmp(entry_status(e), "success") != 0 || read_only(k, tool))
            continue;
        for (int part = 0; part < 2 && !hit; part++) {
            const json_t *v = json_object_get(e, part ? "result" : "args");
            char *dump = v ? rein_json_dumps(v) : NULL;
            hit = dump && (strstr(dump, needle) || (base && strstr(dump, base)));
            rein_free(dump);
        }
        if (hit)
            return e;
    }
    return NULL;
}

static const char *call_id(const json_t *e)
{
    const char *id = json_string_value(json_object_get(e, "call_id"));

    return id ? id : "no id";
}

static rein_err check_tool(struct checker *k, struct rein__claim *c)
{
    const char *want = c->tool ? c->tool : c->subject;
    const json_t *failed = NULL, *e;
    char names[200] = "";
    size_t i, calls = 0, nl = 0;

    if (!k->ev->ledger)
        return set(c, REIN_CLAIM_UNVERIFIABLE, 0.5, "no ledger was given to check that %s ran",
                   want);
    json_array_foreach(k->ev->ledger, i, e)
    {
        const char *t = json_string_value(json_object_get(e, "tool"));
        calls++;
        if (t && nl < sizeof(names) - 1 && calls <= CALLS_LISTED)
            nl += (size_t)snprintf(names + nl, sizeof(names) - nl, "%s%s", nl ? ", " : "", t);
        if (!t || !rein__claims_same_tool(t, strlen(t), want, strlen(want)))
            continue;
        if (strcmp(entry_status(e), "success") == 0)
            return set(c, REIN_CLAIM_CONFIRMED, 1.0, "the ledger has a successful call of %s (%s)",
                       t, call_id(e));
        if (!failed)
            failed = e;
    }
    if (failed)
        return set(c, REIN_CLAIM_REFUTED, 1.0,
                   "%s was called (%s) but did not succeed: its entry is %s, so it produced "
                   "nothing",
                   want, call_id(failed), entry_status(failed));
    if (calls == 0)
        return set(c, REIN_CLAIM_REFUTED, 1.0, "no call shows it: the ledger has no calls at all");
    return set(c, REIN_CLAIM_REFUTED, 1.0,
               "no call shows it: the ledger has no call of %s (%zu "
               "call%s: %s%s)",
               want, calls, calls == 1 ? "" : "s", names, calls > CALLS_LISTED ? ", …" : "");
}

/* ---- files ---- */

static char *fs_path(const struct checker *k, const char *path)
{
    return path[0] == '/' ? rein_strdup(path) : rein_asprintf("%s/%s", k->cwd, path);
}

/* What the tree says about a file claim; the evidence goes into c when decided. */
static rein_err tree_file(struct checker *k, struct rein__claim *c, enum verdict *v)
{
    struct stat st;
    char *full = fs_path(k, c->path), *rp = NULL;
    bool exists, was = false, changed = false;
    bool del = c->pub.kind == REIN_CLAIM_FILE_DELETED;
    rein_err rc;

    *v = V_UNDECIDED;
    if (!full)
        return REIN_ENOMEM;
    exists = stat(full, &st) == 0;
    rein_free(full);
    rc = probe(k);
    if (rc)
        return rc;
    if (k->repo) {
        rp = repo_path(k, c->path);
        if (rp && !rc)
            rc = in_base(k, rp, &was);
        if (rp && !rc && exists && was && !del)
            rc = differs(k, rp, &changed);
    }
    if (rc)
        goto out;
    if (del) {
        if (exists) {
            *v = V_NO;
            rc = set(c, REIN_CLAIM_REFUTED, 1.0, "%s still exists", c->path);
        } else if (rp && was) {
            *v = V_YES;
            rc =
                set(c, REIN_CLAIM_CONFIRMED, 1.0, "%s existed at %s and is gone", c->path, k->base);
        } else if (rp) {
            *v = V_NO;
            rc = set(c, REIN_CLAIM_REFUTED, 0.9,
                     "%s does not exist now and did not exist at %s either: nothing shows it "
                     "was there to delete",
                     c->path, k->has_base ? k->base : "the first commit");
        }
        goto out;
    }
    if (!exists) {
        *v = V_NO;
        rc = set(c, REIN_CLAIM_REFUTED, 1.0, "%s does not exist", c->path);
    } else if (!rp) {
        *v = V_YES;
        rc = set(c, REIN_CLAIM_CONFIRMED, 0.6,
                 "%s exists; outside a git repository whether it was written now is unknown",
                 c->path);
    } else if (!was) {
        *v = V_YES;
        rc = set(c, REIN_CLAIM_CONFIRMED, 1.0, "%s exists and is new since %s", c->path,
                 k->has_base ? k->base : "the repository has no commits");
    } else if (changed) {
        *v = V_YES;
        rc = set(c, REIN_CLAIM_CONFIRMED, 1.0, "%s differs from %s", c->path, k->base);
    } else {
        *v = V_NO;
        rc = set(c, REIN_CLAIM_REFUTED, 1.0, "%s is unchanged since %s%s", c->path, k->base,
                 k->ev->base ? "" : " (give a base revision if the change was committed)");
    }
out:
    rein_free(rp);
    return rc;
}

/* ---- functions ---- */

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

static rein_err function_in(struct checker *k, struct rein__claim *c, enum verdict *v)
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
        *v = V_NO;
        return set(c, REIN_CLAIM_REFUTED, 1.0, "%s does not exist", c->path);
    }
    r = rein_claims_find_function(text, len, c->path, c->name, &line);
    rein_free(text);
    *v = r == 2 || (r == 1 && header) ? V_YES : r < 0 && line ? V_UNDECIDED : V_NO;
    if (r == 2 && c->pub.line && (line > c->pub.line + 3 || line < c->pub.line - 3))
        return set(c, REIN_CLAIM_CONFIRMED, 0.6, "%s is defined at %s:%d, not at line %d as said",
                   c->name, c->path, line, c->pub.line);
    if (r == 2)
        return set(c, REIN_CLAIM_CONFIRMED, 0.9, "%s is defined at %s:%d", c->name, c->path, line);
    if (r == 1 && header)
        return set(c, REIN_CLAIM_CONFIRMED, 0.7, "%s is declared at %s:%d", c->name, c->path, line);
    if (r == 1)
        return set(c, REIN_CLAIM_REFUTED, 0.9,
                   "%s is only declared at %s:%d; there is no definition", c->name, c->path, line);
    if (r < 0 && line)
        return set(c, REIN_CLAIM_UNVERIFIABLE, 0.5,
                   "%s appears at %s:%d, but rein does not read this language", c->name, c->path,
                   line);
    if (r < 0)
        return set(c, REIN_CLAIM_REFUTED, 0.8, "%s does not appear in %s", c->name, c->path);
    return set(c, REIN_CLAIM_REFUTED, 0.9, "%s has no definition of %s", c->path, c->name);
}

struct search {
    struct checker *k;
    struct rein__claim *c;
    size_t files;
    bool found;
    char where[300];
    int line;
};

static rein_err search_file(struct search *s, const char *full, const char *shown)
{
    size_t len = 0;
    int line = 0;
    char *text;

    if (rein_claims_find_function("", 0, full, "x", &line) < 0)
        return REIN_OK; /* not a language rein reads */
    s->files++;
    text = read_source(full, &len);
    if (!text)
        return errno == ENOMEM ? REIN_ENOMEM : REIN_OK;
    if (rein_claims_find_function(text, len, full, s->c->name, &line) == 2) {
        s->found = true;
        s->line = line;
        snprintf(s->where, sizeof(s->where), "%s", shown);
    }
    rein_free(text);
    return REIN_OK;
}

static rein_err search_git(struct search *s)
{
    const char *args[] = {"ls-files", "-z", "--cached", "--others", "--exclude-standard", NULL};
    struct rein_buf out;
    int code;
    rein_err rc;

    rein_buf_init(&out, 0);
    rc = git(s->k->cwd, args, &code, &out);
    for (size_t i = 0;
         !rc && code == 0 && i < out.len && !s->found && s->files < SEARCH_MAX_FILES;) {
        const char *p = out.ptr + i;
        char *full = rein_asprintf("%s/%s", s->k->cwd, p);
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
        char *full, *sub;
        if (e->d_name[0] == '.' || strcmp(e->d_name, "node_modules") == 0 ||
            strncmp(e->d_name, "build", 5) == 0)
            continue;
        full = rein_asprintf("%s/%s", dir, e->d_name);
        sub = shown[0] ? rein_asprintf("%s/%s", shown, e->d_name) : rein_strdup(e->d_name);
        if (!full || !sub)
            rc = REIN_ENOMEM;
        else if (lstat(full, &st) == 0 && S_ISDIR(st.st_mode))
            rc = search_dir(s, full, sub, depth + 1);
        else if (lstat(full, &st) == 0 && S_ISREG(st.st_mode))
            rc = search_file(s, full, sub);
        rein_free(full);
        rein_free(sub);
    }
    closedir(d);
    return rc;
}

static rein_err function_anywhere(struct checker *k, struct rein__claim *c, enum verdict *v)
{
    struct search s = {.k = k, .c = c};
    rein_err rc = probe(k);

    if (!rc)
        rc = k->repo ? search_git(&s) : search_dir(&s, k->cwd, "", 0);
    if (rc)
        return rc;
    if (s.found) {
        *v = V_YES;
        return set(c, REIN_CLAIM_CONFIRMED, 0.9, "%s is defined at %s:%d", c->name, s.where,
                   s.line);
    }
    if (s.files == 0)
        return REIN_OK; /* undecided */
    *v = V_NO;
    return set(c, REIN_CLAIM_REFUTED, 0.8, "no definition of %s in the %zu source files searched",
               c->name, s.files);
}

static rein_err function_tree(struct checker *k, struct rein__claim *c, enum verdict *v)
{
    return c->path ? function_in(k, c, v) : function_anywhere(k, c, v);
}

/*
 * A file or function claim: a successful writing call that names what (the file's path or
 * the function's name) confirms it; else the tree decides when it may be read; else, with a
 * ledger, nothing shows it; with nothing to check against, it is unverifiable.
 */
static rein_err check_work(struct checker *k, struct rein__claim *c, const char *what, bool is_path,
                           rein_err (*tree)(struct checker *, struct rein__claim *, enum verdict *))
{
    const json_t *e = k->ev->ledger ? touched(k, what, is_path) : NULL;
    enum verdict v = V_UNDECIDED;
    rein_err rc;

    if (e)
        return set(c, REIN_CLAIM_CONFIRMED, is_path ? 0.9 : 0.8,
                   "call %s (%s) succeeded and names %s", call_id(e),
                   json_string_value(json_object_get(e, "tool")), what);
    if (k->ev->tree) {
        rc = tree(k, c, &v);
        if (rc || v == V_YES || (v == V_NO && !k->ev->ledger))
            return rc;
        if (v == V_NO) {
            /* what the tree says, and that no call shows it either */
            char *seen = rein_strdup(c->evidence);
            if (!seen)
                return REIN_ENOMEM;
            rc = set(c, REIN_CLAIM_REFUTED, c->pub.confidence,
                     "%s, and no call shows it: no successful call of a tool that writes names it",
                     seen);
            rein_free(seen);
            return rc;
        }
    }
    if (k->ev->ledger)
        return set(c, REIN_CLAIM_REFUTED, 1.0,
                   "no call shows it: no successful call of a tool that writes names %s%s", what,
                   k->ev->tree ? ", and the working tree does not show it either" : "");
    return set(c, REIN_CLAIM_UNVERIFIABLE, 0.5,
               "nothing to check %s against: no ledger, and the tree cannot tell", what);
}

/* ---- checks ---- */

static rein_err check_protocol(struct checker *k, struct rein__claim *c)
{
    const char *protocol = c->pub.kind == REIN_CLAIM_TESTS_PASS       ? "TEST"
                           : c->pub.kind == REIN_CLAIM_NO_TYPE_ERRORS ? "TYPECHECK"
                           : c->pub.kind == REIN_CLAIM_BUILD_PASSES   ? "BUILD"
                                                                      : "LINT";
    char why[240] = "";
    double conf = 1.0;
    int r;

    if (!k->ev->run_check)
        return set(c, REIN_CLAIM_UNVERIFIABLE, 0.5, "no %s protocol can be run here to check it",
                   protocol);
    r = k->ev->run_check(protocol, why, sizeof(why), &conf, k->ev->userdata);
    /* no separate type check: for compiled languages the build is the type check */
    if (r < 0 && c->pub.kind == REIN_CLAIM_NO_TYPE_ERRORS) {
        protocol = "BUILD";
        r = k->ev->run_check(protocol, why, sizeof(why), &conf, k->ev->userdata);
    }
    if (r < 0)
        return set(c, REIN_CLAIM_UNVERIFIABLE, 0.5,
                   "there is no %s protocol to run; declare one in rein-verify.yaml", protocol);
    return set(c, r ? REIN_CLAIM_CONFIRMED : REIN_CLAIM_REFUTED, conf, "%s %s%s%s", protocol,
               r ? "passed" : "failed", why[0] ? ": " : "", why);
}

rein_err rein_claims_check(rein_claims *claims, const struct rein_claims_evidence *ev,
                           rein_error *err)
{
    static const struct rein_claims_evidence none;
    struct checker k = {.ev = ev ? ev : &none, .err = err};
    rein_err rc = REIN_OK;

    k.cwd = k.ev->cwd ? k.ev->cwd : ".";
    for (size_t i = 0; claims && i < claims->n && !rc; i++) {
        struct rein__claim *c = &claims->v[i];
        switch (c->pub.kind) {
        case REIN_CLAIM_TOOL:
            rc = check_tool(&k, c);
            break;
        case REIN_CLAIM_FILE_WRITTEN:
        case REIN_CLAIM_FILE_DELETED:
            rc = c->path ? check_work(&k, c, c->path, true, tree_file)
                         : set(c, REIN_CLAIM_UNVERIFIABLE, 0.5, "no file named");
            break;
        case REIN_CLAIM_FUNCTION:
            rc = c->name ? check_work(&k, c, c->name, false, function_tree)
                         : set(c, REIN_CLAIM_UNVERIFIABLE, 0.5, "no function named");
            break;
        default:
            rc = check_protocol(&k, c);
            break;
        }
    }
    rein_free(k.top);
    rein_free(k.prefix);
    if (rc == REIN_ENOMEM)
        rein_error_set(err, rc, "out of memory checking claims");
    return rc;
}
