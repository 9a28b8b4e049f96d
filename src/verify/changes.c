/*
 * Change detection for conditional protocols (ARCHITECT runs only when files were added,
 * dependencies changed or public signatures changed) and for the human-review flag of the
 * thorough and full modes (security-sensitive paths).
 *
 * The changed paths come from git (rein__verify_git_read); whether a change touches
 * dependencies or a public API is read from the added and removed lines of `git diff -U0`:
 * a declaration line in a header, an `export` in JavaScript or TypeScript, `pub` in Rust, an
 * exported Go func or type, a public top-level def or class in Python; a dependency line in a
 * build file (find_package, pkg_check_modules, target_link_libraries, LDLIBS, -lfoo, …) or
 * any change to a package manifest or lock file. These are heuristics, named as such in the
 * header; they err toward running the review.
 */
#include "verify_int.h"

#include <string.h>

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash ? slash + 1 : path;
}

static const char *ext_of(const char *path)
{
    const char *b = base_name(path), *dot = strrchr(b, '.');

    return dot && dot != b ? dot + 1 : "";
}

static bool in_list(const char *s, const char *const *list)
{
    for (size_t i = 0; list[i]; i++) {
        if (strcmp(s, list[i]) == 0)
            return true;
    }
    return false;
}

static bool is_manifest(const char *path)
{
    static const char *const names[] = {"package.json",
                                        "package-lock.json",
                                        "npm-shrinkwrap.json",
                                        "yarn.lock",
                                        "pnpm-lock.yaml",
                                        "Pipfile",
                                        "Pipfile.lock",
                                        "pyproject.toml",
                                        "setup.py",
                                        "setup.cfg",
                                        "poetry.lock",
                                        "go.mod",
                                        "go.sum",
                                        "Cargo.toml",
                                        "Cargo.lock",
                                        "Gemfile",
                                        "Gemfile.lock",
                                        "composer.json",
                                        "composer.lock",
                                        "pom.xml",
                                        "build.gradle",
                                        "build.gradle.kts",
                                        "vcpkg.json",
                                        "conanfile.txt",
                                        "conanfile.py",
                                        NULL};
    const char *b = base_name(path);

    return in_list(b, names) ||
           (strncmp(b, "requirements", 12) == 0 && strcmp(ext_of(b), "txt") == 0);
}

static bool is_build_file(const char *path)
{
    static const char *const names[] = {"CMakeLists.txt", "meson.build", "configure.ac",
                                        "configure.in",   "Makefile",    "makefile",
                                        "GNUmakefile",    "Makefile.am", NULL};
    const char *e = ext_of(path);

    return in_list(base_name(path), names) || strcmp(e, "cmake") == 0 || strcmp(e, "mk") == 0;
}

static bool is_security_path(const char *path)
{
    static const char *const words[] = {"auth",       "login", "passw", "secret",     "credential",
                                        "crypt",      "oauth", "jwt",   "permission", "security",
                                        "sudo",       ".env",  ".pem",  ".key",       "id_rsa",
                                        "id_ed25519", "cert",  "ssl",   "tls",        NULL};
    char lower[512];
    size_t n = strlen(path) < sizeof(lower) - 1 ? strlen(path) : sizeof(lower) - 1;

    for (size_t i = 0; i < n; i++)
        lower[i] = (char)(path[i] >= 'A' && path[i] <= 'Z' ? path[i] - 'A' + 'a' : path[i]);
    lower[n] = '\0';
    for (size_t i = 0; words[i]; i++) {
        if (strstr(lower, words[i]))
            return true;
    }
    return false;
}

static bool is_header(const char *path)
{
    static const char *const exts[] = {"h", "hh", "hpp", "hxx", "h++", "inl", NULL};

    return in_list(ext_of(path), exts);
}

static bool has_word_at_start(const char *s, const char *w)
{
    size_t n = strlen(w);

    return strncmp(s, w, n) == 0 && (s[n] == ' ' || s[n] == '\t');
}

/* True when an added or removed line (without its +/-) of file changes a public API. */
static bool api_line(const char *file, const char *line)
{
    const char *e = ext_of(file), *s = line;

    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s)
        return false;
    if (is_header(file)) {
        if (s[0] == '/' || s[0] == '*' || has_word_at_start(s, "#include") ||
            strncmp(s, "#if", 3) == 0 || strncmp(s, "#endif", 6) == 0 ||
            strncmp(s, "#else", 5) == 0 || strncmp(s, "#pragma", 7) == 0)
            return false;
        return strchr(s, '(') || has_word_at_start(s, "typedef") ||
               has_word_at_start(s, "struct") || has_word_at_start(s, "enum") ||
               has_word_at_start(s, "union") || has_word_at_start(s, "extern") ||
               has_word_at_start(s, "class") || has_word_at_start(s, "#define");
    }
    if (!strcmp(e, "js") || !strcmp(e, "mjs") || !strcmp(e, "cjs") || !strcmp(e, "ts") ||
        !strcmp(e, "tsx") || !strcmp(e, "jsx") || !strcmp(e, "mts"))
        return has_word_at_start(s, "export");
    if (!strcmp(e, "rs"))
        return strncmp(s, "pub ", 4) == 0 || strncmp(s, "pub(", 4) == 0;
    if (!strcmp(e, "go")) {
        if (strncmp(s, "func ", 5) == 0) {
            s += 5;
            if (*s == '(') /* a method: skip the receiver */
                s = strchr(s, ')') ? strchr(s, ')') + 1 : s;
            while (*s == ' ')
                s++;
            return *s >= 'A' && *s <= 'Z';
        }
        return strncmp(s, "type ", 5) == 0 && s[5] >= 'A' && s[5] <= 'Z';
    }
    if (!strcmp(e, "py")) {
        if (line[0] == ' ' || line[0] == '\t')
            return false; /* only module-level definitions are public API */
        if (strncmp(s, "async ", 6) == 0)
            s += 6;
        if (strncmp(s, "def ", 4) == 0)
            return s[4] != '_';
        return strncmp(s, "class ", 6) == 0 && s[6] != '_';
    }
    if (!strcmp(e, "java") || !strcmp(e, "cs") || !strcmp(e, "kt"))
        return strstr(s, "public ") && strchr(s, '(');
    return false;
}

static bool dependency_line(const char *line)
{
    static const char *const words[] = {"find_package",
                                        "pkg_check_modules",
                                        "PKG_CHECK_MODULES",
                                        "target_link_libraries",
                                        "FetchContent_Declare",
                                        "ExternalProject_Add",
                                        "dependency(",
                                        "AC_CHECK_LIB",
                                        "LDLIBS",
                                        "LIBS",
                                        "pkg-config",
                                        NULL};

    for (size_t i = 0; words[i]; i++) {
        if (strstr(line, words[i]))
            return true;
    }
    /* -lfoo on a link line */
    for (const char *p = strstr(line, "-l"); p; p = strstr(p + 2, "-l")) {
        if ((p == line || p[-1] == ' ') && p[2] >= 'a' && p[2] <= 'z')
            return true;
    }
    return false;
}

/* Reads `git diff -U0` and sets api_changed and dependencies_changed from its lines. */
static rein_err scan_diff(const char *dir, const char *base, bool has_head,
                          struct rein_verify_changes *out, rein_error *err)
{
    const char *with_base[] = {"diff", "-U0", "--no-color", "--no-ext-diff", base, "--", NULL};
    const char *cached[] = {"diff", "-U0", "--no-color", "--no-ext-diff", "--cached", "--", NULL};
    const char *head[] = {"diff", "-U0", "--no-color", "--no-ext-diff", "HEAD", "--", NULL};
    struct rein_buf diff;
    char file[1024] = "";
    int code;
    rein_err rc;

    rein_buf_init(&diff, 0);
    rc = rein__verify_git(dir, base ? with_base : has_head ? head : cached, &diff, &code, err);
    if (rc || code != 0) {
        rein_buf_release(&diff);
        return rc;
    }
    for (char *line = diff.ptr; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strncmp(line, "+++ b/", 6) == 0) {
            snprintf(file, sizeof(file), "%s", line + 6);
        } else if ((line[0] == '+' || line[0] == '-') && strncmp(line, "+++", 3) != 0 &&
                   strncmp(line, "---", 3) != 0 && file[0]) {
            if (api_line(file, line + 1))
                out->api_changed = true;
            if (is_build_file(file) && dependency_line(line + 1))
                out->dependencies_changed = true;
        }
        if (!nl)
            break;
        line = nl + 1;
    }
    rein_buf_release(&diff);
    return REIN_OK;
}

rein_err rein_verify_changes_read(const char *dir, const char *base,
                                  struct rein_verify_changes *out, rein_error *err)
{
    struct rein__git g;
    rein_err rc;

    memset(out, 0, sizeof(*out));
    rc = rein__verify_git_read(dir, base, &g, err);
    if (rc || !g.is_repo) {
        rein__verify_git_release(&g);
        return rc;
    }
    out->known = true;
    out->changed_count = g.n;
    for (size_t i = 0; i < g.n; i++) {
        const struct rein__git_entry *e = &g.entries[i];
        if (e->x == '?' || e->x == 'A')
            out->files_added = true;
        if (e->x == 'D' || e->y == 'D')
            out->files_deleted = true;
        if ((e->x && strchr("MTRCU", e->x)) || (e->y && strchr("MTRCU", e->y)))
            out->files_modified = true;
        if (is_manifest(e->path))
            out->dependencies_changed = true;
        if (is_security_path(e->path))
            out->security_sensitive = true;
        /* A deleted header takes its declarations with it. */
        if (is_header(e->path) && (e->x == 'D' || e->y == 'D'))
            out->api_changed = true;
    }
    if (g.n)
        rc = scan_diff(dir, base, g.has_head, out, err);
    rein__verify_git_release(&g);
    return rc;
}
