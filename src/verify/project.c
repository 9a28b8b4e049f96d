/*
 * What kind of project a folder is, and the checks that fit it: `rein verify --init` writes
 * them as rein-verify.yaml, and `rein loop` without a protocol file derives its criteria from
 * them (criteria.c).
 *
 * Detection reads only the files every build tool is known by (no program is run):
 *   CMake (CMakeLists.txt; tests when it calls enable_testing, add_test or include(CTest)),
 *   Make (Makefile, makefile, GNUmakefile; its test/check and lint targets),
 *   npm, yarn or pnpm (package.json and the lock file; its build, test, lint scripts),
 *   TypeScript (tsconfig.json), ESLint (.eslintrc*, eslint.config.*, or "eslintConfig"),
 *   pytest (pytest.ini, conftest.py, [tool.pytest…] in pyproject.toml, [tool:pytest] in
 *   setup.cfg, test_*.py in tests/ or at the top), tox (tox.ini), ruff (ruff.toml,
 *   .ruff.toml, [tool.ruff] in pyproject.toml), cargo (Cargo.toml; clippy when clippy.toml
 *   is there), go (go.mod), Maven (pom.xml), Gradle (build.gradle, build.gradle.kts; the
 *   wrapper when there is one), clang-tidy (.clang-tidy).
 * The commands are the ones each tool's documentation gives for building, testing and
 * linting; test steps name the reports the tool writes (Surefire, Gradle) so every result is
 * counted.
 */
#include "verify_int.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROBE_MAX ((size_t)256 << 10)

struct rein_verify_project {
    unsigned kinds;
    struct rein_buf build, lint, typecheck, test; /* YAML step lines, "      - {…}\n" */
    json_t *found;                                /* [{"kind", "evidence"}] */
};

static bool exists(const char *dir, const char *name)
{
    char *p = rein__verify_path_join(dir, name);
    struct stat st;
    bool ok = p && stat(p, &st) == 0;

    rein_free(p);
    return ok;
}

/* The first PROBE_MAX bytes of dir/name, or NULL. New. */
static char *slurp(const char *dir, const char *name)
{
    char *p = rein__verify_path_join(dir, name), *buf = NULL;
    FILE *f = p ? fopen(p, "rb") : NULL;
    size_t n;

    rein_free(p);
    if (!f)
        return NULL;
    buf = rein_malloc(PROBE_MAX + 1);
    if (buf) {
        n = fread(buf, 1, PROBE_MAX, f);
        buf[n] = '\0';
    }
    fclose(f);
    return buf;
}

static bool file_has(const char *dir, const char *name, const char *needle)
{
    char *t = slurp(dir, name);
    bool yes = t && strstr(t, needle);

    rein_free(t);
    return yes;
}

/* A Makefile target line "name:" (not "name:=", a variable). */
static bool make_target(const char *text, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, name, n) == 0 && p[n] == ':' && p[n + 1] != '=')
            return true;
    }
    return false;
}

/*
 * The target BUILD should make when there is no `all`: the first rule's target unless that
 * one runs the tests or is a chore (then `make` would fail the build for a failing test),
 * else the first target that builds something. Copies it into out ("" for plain `make`);
 * false when no rule builds anything (a Makefile that only runs tests).
 */
static bool make_build_target(const char *text, char *out, size_t out_len)
{
    static const char *const not_build[] = {"test",      "tests",   "check",  "lint",
                                            "clean",     "install", "format", "run",
                                            "distclean", "help",    "bench",  "coverage"};
    bool first = true;

    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        size_t line = strcspn(p, "\n"), head = strcspn(p, ":=\n"), n = strcspn(p, " \t:=\n");
        bool skip = false;
        /* A rule line: column 0, targets, then ':' that is not ":=" ("a b: deps" → a). */
        if (n == 0 || *p == '#' || *p == '.' || head >= line || p[head] != ':' ||
            p[head + 1] == '=' || memchr(p, '%', head) || memchr(p, '$', head))
            continue;
        for (size_t i = 0; i < sizeof(not_build) / sizeof(not_build[0]); i++)
            skip |= strlen(not_build[i]) == n && strncmp(p, not_build[i], n) == 0;
        if (!skip) {
            snprintf(out, out_len, "%.*s", first || n >= out_len ? 0 : (int)n, p);
            return true;
        }
        first = false;
    }
    out[0] = '\0';
    return first; /* no rule at all: plain `make` says what is wrong */
}

/* A file matching prefix*suffix directly in dir. */
static bool any_file(const char *dir, const char *sub, const char *prefix, const char *suffix)
{
    char *p = sub ? rein__verify_path_join(dir, sub) : rein_strdup(dir ? dir : ".");
    DIR *d = p ? opendir(p) : NULL;
    struct dirent *e;
    bool yes = false;

    rein_free(p);
    while (d && !yes && (e = readdir(d))) {
        size_t n = strlen(e->d_name), sn = strlen(suffix);
        yes = strncmp(e->d_name, prefix, strlen(prefix)) == 0 && n > sn &&
              strcmp(e->d_name + n - sn, suffix) == 0;
    }
    if (d)
        closedir(d);
    return yes;
}

static rein_err found(struct rein_verify_project *pj, unsigned kind, const char *name,
                      const char *evidence)
{
    pj->kinds |= kind;
    if (json_array_append_new(pj->found,
                              json_pack("{s:s, s:s}", "kind", name, "evidence", evidence)))
        return REIN_ENOMEM;
    return REIN_OK;
}

static rein_err step(struct rein_buf *b, const char *fmt, ...) REIN_PRINTF(2, 3);

static rein_err step(struct rein_buf *b, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    return rein_buf_addf(b, "      - %s\n", line);
}

static rein_err detect_c(const char *dir, struct rein_verify_project *pj)
{
    char *mk = NULL;
    const char *mkname = exists(dir, "GNUmakefile") ? "GNUmakefile"
                         : exists(dir, "Makefile")  ? "Makefile"
                         : exists(dir, "makefile")  ? "makefile"
                                                    : NULL;
    rein_err rc = REIN_OK;

    if (exists(dir, "CMakeLists.txt")) {
        char *cm = slurp(dir, "CMakeLists.txt");
        bool tests = cm && (strstr(cm, "enable_testing") || strstr(cm, "add_test") ||
                            strstr(cm, "include(CTest)"));
        rein_free(cm);
        rc = found(pj, REIN_VERIFY_PROJECT_CMAKE, "cmake", "CMakeLists.txt");
        if (!rc)
            rc = step(&pj->build, "{name: configure, command: cmake -S . -B build}");
        if (!rc)
            rc =
                step(&pj->build, "{name: compile, command: cmake --build build -j 2, format: gcc}");
        if (!rc && tests) {
            pj->kinds |= REIN_VERIFY_PROJECT_HAS_TESTS;
            rc = step(&pj->test,
                      "{command: ctest --test-dir build --output-on-failure, format: ctest}");
        }
        return rc;
    }
    if (!mkname)
        return REIN_OK;
    mk = slurp(dir, mkname);
    rc = found(pj, REIN_VERIFY_PROJECT_MAKE, "make", mkname);
    /* "make" builds the first target, which is sometimes `test`: prefer `all`, else the
     * first target that is not one of the chores. */
    if (!rc) {
        char target[64] = "";
        bool builds = true;
        if (mk && make_target(mk, "all"))
            snprintf(target, sizeof(target), "all");
        else if (mk)
            builds = make_build_target(mk, target, sizeof(target));
        if (builds)
            rc = step(&pj->build, "{command: make%s%s, format: gcc}", target[0] ? " " : "", target);
    }
    if (!rc && mk && (make_target(mk, "test") || make_target(mk, "check"))) {
        pj->kinds |= REIN_VERIFY_PROJECT_HAS_TESTS;
        rc = step(&pj->test, "{command: make %s}", make_target(mk, "test") ? "test" : "check");
    }
    if (!rc && mk && make_target(mk, "lint")) {
        pj->kinds |= REIN_VERIFY_PROJECT_HAS_LINTER;
        rc = step(&pj->lint, "{command: make lint}");
    }
    rein_free(mk);
    return rc;
}

/* "scripts": {"test": "..."} of package.json. */
static bool npm_script(const json_t *pkg, const char *name)
{
    const char *s = json_string_value(json_object_get(json_object_get(pkg, "scripts"), name));

    /* npm init writes a test script that only fails. */
    return s && !strstr(s, "no test specified");
}

static rein_err detect_node(const char *dir, struct rein_verify_project *pj)
{
    const char *pm = exists(dir, "pnpm-lock.yaml") ? "pnpm"
                     : exists(dir, "yarn.lock")    ? "yarn"
                                                   : "npm";
    /* The project's tools run through its package manager, as its users run them: pnpm
     * and Yarn (Plug'n'Play has no node_modules/.bin for npx to find) have their own. */
    const char *exec = strcmp(pm, "pnpm") == 0   ? "pnpm exec"
                       : strcmp(pm, "yarn") == 0 ? "yarn"
                                                 : "npx";
    char *text = slurp(dir, "package.json");
    json_t *pkg = text ? json_loads(text, 0, NULL) : NULL;
    bool eslint = exists(dir, "eslint.config.js") || exists(dir, "eslint.config.mjs") ||
                  exists(dir, "eslint.config.cjs") || exists(dir, "eslint.config.ts") ||
                  exists(dir, ".eslintrc") || exists(dir, ".eslintrc.json") ||
                  exists(dir, ".eslintrc.js") || exists(dir, ".eslintrc.cjs") ||
                  exists(dir, ".eslintrc.yml") || exists(dir, ".eslintrc.yaml") ||
                  json_object_get(pkg, "eslintConfig");
    rein_err rc = REIN_OK;

    rein_free(text);
    if (!exists(dir, "package.json")) {
        json_decref(pkg);
        return REIN_OK;
    }
    rc = found(pj, REIN_VERIFY_PROJECT_NODE, pm,
               strcmp(pm, "npm") == 0    ? "package.json"
               : strcmp(pm, "yarn") == 0 ? "package.json, yarn.lock"
                                         : "package.json, pnpm-lock.yaml");
    if (!rc && npm_script(pkg, "build"))
        rc = step(&pj->build, "{command: %s run build}", pm);
    if (!rc && exists(dir, "tsconfig.json")) {
        rc = found(pj, REIN_VERIFY_PROJECT_TYPESCRIPT, "typescript", "tsconfig.json");
        if (!rc)
            rc = step(&pj->typecheck, "{command: %s tsc --noEmit, format: gcc}", exec);
    }
    if (!rc && npm_script(pkg, "test")) {
        pj->kinds |= REIN_VERIFY_PROJECT_HAS_TESTS;
        rc = step(&pj->test, "{command: %s test}", pm);
    }
    if (!rc && npm_script(pkg, "lint")) {
        pj->kinds |= REIN_VERIFY_PROJECT_HAS_LINTER;
        rc = step(&pj->lint, "{command: %s run lint}", pm);
    } else if (!rc && eslint) {
        rc = found(pj, REIN_VERIFY_PROJECT_HAS_LINTER, "eslint", "an ESLint configuration");
        if (!rc)
            rc = step(&pj->lint, "{command: %s eslint ., format: eslint}", exec);
    }
    json_decref(pkg);
    return rc;
}

static rein_err detect_python(const char *dir, struct rein_verify_project *pj)
{
    bool pytest = exists(dir, "pytest.ini") || exists(dir, "conftest.py") ||
                  file_has(dir, "pyproject.toml", "[tool.pytest") ||
                  file_has(dir, "setup.cfg", "[tool:pytest]") ||
                  any_file(dir, "tests", "test_", ".py") || any_file(dir, NULL, "test_", ".py");
    bool tox = exists(dir, "tox.ini");
    bool ruff = exists(dir, "ruff.toml") || exists(dir, ".ruff.toml") ||
                file_has(dir, "pyproject.toml", "[tool.ruff");
    bool python = pytest || tox || ruff || exists(dir, "pyproject.toml") ||
                  exists(dir, "setup.py") || exists(dir, "requirements.txt");
    rein_err rc = REIN_OK;

    if (!python)
        return REIN_OK;
    rc = found(pj, REIN_VERIFY_PROJECT_PYTHON, "python",
               exists(dir, "pyproject.toml") ? "pyproject.toml"
               : exists(dir, "setup.py")     ? "setup.py"
               : tox                         ? "tox.ini"
                                             : "test_*.py");
    /* Python's "it compiles": every module parses. */
    if (!rc)
        rc = step(&pj->build, "{name: syntax, command: python3 -m compileall -q -x "
                              "'(^|/)(\\.git|\\.venv|venv|\\.tox|node_modules)/' .}");
    if (!rc && pytest) {
        rc = found(pj, REIN_VERIFY_PROJECT_HAS_TESTS, "pytest", "pytest configuration or tests");
        if (!rc)
            rc = step(&pj->test, "{command: python3 -m pytest -q -p no:cacheprovider, format: "
                                 "pytest}");
    } else if (!rc && tox) {
        rc = found(pj, REIN_VERIFY_PROJECT_HAS_TESTS, "tox", "tox.ini");
        if (!rc)
            rc = step(&pj->test, "{command: tox -q, format: pytest}");
    }
    if (!rc && ruff) {
        rc = found(pj, REIN_VERIFY_PROJECT_HAS_LINTER, "ruff", "a ruff configuration");
        if (!rc)
            rc = step(&pj->lint, "{command: ruff check .}");
    }
    return rc;
}

static rein_err detect_others(const char *dir, struct rein_verify_project *pj)
{
    rein_err rc = REIN_OK;

    if (exists(dir, "Cargo.toml")) {
        rc = found(pj, REIN_VERIFY_PROJECT_CARGO | REIN_VERIFY_PROJECT_HAS_TESTS, "cargo",
                   "Cargo.toml");
        if (!rc)
            rc = step(&pj->build, "{command: cargo build, format: gcc}");
        if (!rc)
            rc = step(&pj->test, "{command: cargo test}");
        if (!rc && (exists(dir, "clippy.toml") || exists(dir, ".clippy.toml"))) {
            pj->kinds |= REIN_VERIFY_PROJECT_HAS_LINTER;
            rc = step(&pj->lint, "{command: cargo clippy -- -D warnings}");
        }
    }
    if (!rc && exists(dir, "go.mod")) {
        rc = found(pj, REIN_VERIFY_PROJECT_GO | REIN_VERIFY_PROJECT_HAS_TESTS, "go", "go.mod");
        if (!rc)
            rc = step(&pj->build, "{command: go build ./...}");
        if (!rc)
            rc = step(&pj->lint, "{command: go vet ./...}");
        pj->kinds |= REIN_VERIFY_PROJECT_HAS_LINTER;
        if (!rc)
            rc = step(&pj->test, "{command: go test ./...}");
    }
    if (!rc && exists(dir, "pom.xml")) {
        rc = found(pj, REIN_VERIFY_PROJECT_MAVEN | REIN_VERIFY_PROJECT_HAS_TESTS, "maven",
                   "pom.xml");
        if (!rc)
            rc = step(&pj->build, "{command: mvn -B -q compile}");
        if (!rc)
            rc = step(&pj->test, "{command: mvn -B -q test, reports: "
                                 "[target/surefire-reports/TEST-*.xml]}");
    }
    if (!rc && (exists(dir, "build.gradle") || exists(dir, "build.gradle.kts"))) {
        const char *gradle = exists(dir, "gradlew") ? "./gradlew" : "gradle";
        rc = found(pj, REIN_VERIFY_PROJECT_GRADLE | REIN_VERIFY_PROJECT_HAS_TESTS, "gradle",
                   exists(dir, "build.gradle") ? "build.gradle" : "build.gradle.kts");
        if (!rc)
            rc = step(&pj->build, "{command: %s assemble}", gradle);
        if (!rc)
            rc = step(&pj->test, "{command: %s test, reports: [build/test-results/test/*.xml]}",
                      gradle);
    }
    if (!rc && exists(dir, ".clang-tidy")) {
        rc = found(pj, REIN_VERIFY_PROJECT_HAS_LINTER, "clang-tidy", ".clang-tidy");
        /* clang-tidy takes files: the tracked C and C++ sources, with the build's
         * compile_commands.json when CMake wrote one. Outside a git repository the list
         * would be empty and the check pass having read nothing: it fails instead. */
        if (!rc)
            rc = step(&pj->lint,
                      "{name: clang-tidy, shell: true, format: gcc, command: \"git rev-parse "
                      "--git-dir >/dev/null && git ls-files -z '*.c' '*.cc' '*.cpp' | xargs "
                      "-0 -r clang-tidy "
                      "--quiet%s\"}",
                      pj->kinds & REIN_VERIFY_PROJECT_CMAKE ? " -p build" : "");
    }
    return rc;
}

void rein_verify_project_free(rein_verify_project *pj)
{
    if (!pj)
        return;
    rein_buf_release(&pj->build);
    rein_buf_release(&pj->lint);
    rein_buf_release(&pj->typecheck);
    rein_buf_release(&pj->test);
    json_decref(pj->found);
    rein_free(pj);
}

rein_verify_project *rein_verify_project_detect(const char *dir, rein_error *err)
{
    rein_verify_project *pj = rein_calloc(1, sizeof(*pj));
    struct stat st;
    rein_err rc;

    if (!pj) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    if (stat(dir ? dir : ".", &st) != 0 || !S_ISDIR(st.st_mode)) {
        rein_free(pj);
        rein_error_set(err, REIN_ENOTFOUND, "%s is not a folder", dir ? dir : ".");
        return NULL;
    }
    rein_buf_init(&pj->build, 1 << 16);
    rein_buf_init(&pj->lint, 1 << 16);
    rein_buf_init(&pj->typecheck, 1 << 16);
    rein_buf_init(&pj->test, 1 << 16);
    pj->found = json_array();
    rc = pj->found ? detect_c(dir, pj) : REIN_ENOMEM;
    if (!rc)
        rc = detect_node(dir, pj);
    if (!rc)
        rc = detect_python(dir, pj);
    if (!rc)
        rc = detect_others(dir, pj);
    if (rc) {
        rein_verify_project_free(pj);
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    return pj;
}

unsigned rein_verify_project_kinds(const rein_verify_project *pj)
{
    return pj->kinds;
}

json_t *rein_verify_project_json(const rein_verify_project *pj)
{
    return json_pack("{s:O, s:b, s:b, s:b}", "found", pj->found, "has_tests",
                     (pj->kinds & REIN_VERIFY_PROJECT_HAS_TESTS) != 0, "has_linter",
                     (pj->kinds & REIN_VERIFY_PROJECT_HAS_LINTER) != 0, "typescript",
                     (pj->kinds & REIN_VERIFY_PROJECT_TYPESCRIPT) != 0);
}

const char *rein__verify_project_steps(const rein_verify_project *pj, const char *protocol)
{
    if (strcmp(protocol, "BUILD") == 0)
        return pj->build.ptr;
    if (strcmp(protocol, "LINT") == 0)
        return pj->lint.ptr;
    if (strcmp(protocol, "TYPECHECK") == 0)
        return pj->typecheck.ptr;
    if (strcmp(protocol, "TEST") == 0)
        return pj->test.ptr;
    return "";
}

char *rein_verify_project_yaml(const rein_verify_project *pj)
{
    static const struct {
        const char *name, *head;
    } protos[] = {
        {"BUILD", "  BUILD:\n    priority: P0\n    steps:\n"},
        {"TYPECHECK", "  TYPECHECK:\n    description: no type errors\n    priority: P1\n"
                      "    group: 1\n    layer: 1\n    steps:\n"},
        {"LINT", "  LINT:\n    priority: P1\n    steps:\n"},
        {"TEST", "  TEST:\n    priority: P1\n    steps:\n"},
    };
    struct rein_buf b;
    size_t i, n = 0;
    json_t *f;
    rein_err rc;
    char *out;

    rein_buf_init(&b, 1 << 20);
    rc = rein_buf_adds(&b, "# Written by `rein verify --init` from what this folder holds:\n");
    json_array_foreach(pj->found, i, f)
    {
        if (!rc)
            rc = rein_buf_addf(&b, "#   %s (%s)\n", json_string_value(json_object_get(f, "kind")),
                               json_string_value(json_object_get(f, "evidence")));
    }
    if (!rc)
        rc = rein_buf_adds(&b, "# Edit the commands to fit; `rein verify --help` describes the "
                               "format.\nprotocols:\n");
    for (i = 0; !rc && i < REIN_ARRAY_SIZE(protos); i++) {
        const char *steps = rein__verify_project_steps(pj, protos[i].name);
        if (!steps[0])
            continue;
        n++;
        rc = rein_buf_adds(&b, protos[i].head);
        if (!rc)
            rc = rein_buf_adds(&b, steps);
    }
    if (!rc && n == 0)
        rc = REIN_ENOTFOUND;
    out = rc ? NULL : rein_buf_detach(&b, NULL);
    rein_buf_release(&b);
    return out;
}
