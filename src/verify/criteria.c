/*
 * Success criteria derived from a request (docs/DESIGN.md [verification]), for `rein loop`
 * without a protocol file.
 *
 *   step 1  the request's action verbs, English and Chinese (simplified and traditional):
 *           implement/add (實作, 實現, 新增, 实现, 添加, …), fix (修復, 修复, 修正, 解決, …),
 *           refactor (重構, 重构, …); and its constraints ("don't change the API", "keep
 *           backward compatibility", 不要改變 API, 保持向後相容, …).
 *   step 2  the seed's verb table:
 *             implement/add  CODE_COMPILES, TESTS_PASS, FUNCTIONALITY_WORKS
 *             fix            BUG_RESOLVED, REGRESSION_TESTS_PASS, NO_NEW_ERRORS
 *             refactor       BEHAVIOR_UNCHANGED, CODE_QUALITY_IMPROVED, TESTS_STILL_PASS
 *   step 3  the implicit ones: always NO_SYNTAX_ERRORS, NO_TYPE_ERRORS in a TypeScript
 *           project; from the project (project.c) TESTS_PASS when it has tests, LINT_PASS
 *           when it has a linter; NO_TODO_COMMENTS (desired) in what changed.
 * Priorities are the seed's: P0 NO_SYNTAX_ERRORS, CODE_COMPILES; P1 the tests, lint and type
 * checks and what the verbs ask for; P2 CODE_QUALITY_IMPROVED and NO_TODO_COMMENTS.
 *
 * Each criterion names the protocol that checks it: BUILD, TYPECHECK, LINT and TEST with the
 * project's commands, FUNCTIONALITY and ARCHITECT through the judge (unverifiable without
 * one), TODO for the comments. A criterion whose protocol has nothing to run here (no test
 * command was found) is kept in the list as not checked, with the reason, so a person sees
 * what the loop could not look at. A request without a known verb gets the implicit
 * criteria only.
 */
#include "verify_int.h"

#include <stdio.h>
#include <string.h>

enum verb { V_IMPLEMENT, V_FIX, V_REFACTOR, V_COUNT };

static const char *const verb_names[V_COUNT] = {"implement", "fix", "refactor"};

/* English stems: a word that starts with one, followed by one of the endings below. */
static const struct {
    const char *stem;
    enum verb v;
} en_verbs[] = {
    {"implement", V_IMPLEMENT},
    {"add", V_IMPLEMENT},
    {"create", V_IMPLEMENT},
    {"introduce", V_IMPLEMENT},
    {"support", V_IMPLEMENT},
    {"write", V_IMPLEMENT},
    {"fix", V_FIX},
    {"repair", V_FIX},
    {"resolve", V_FIX},
    {"correct", V_FIX},
    {"debug", V_FIX},
    {"patch", V_FIX},
    {"refactor", V_REFACTOR},
    {"restructure", V_REFACTOR},
    {"reorganize", V_REFACTOR},
    {"reorganise", V_REFACTOR},
    {"clean up", V_REFACTOR},
    {"cleanup", V_REFACTOR},
    {"simplify", V_REFACTOR},
    {"rename", V_REFACTOR},
};
static const char *const en_endings[] = {"", "s", "es", "ed", "d", "ing", "ies", "ied"};

/* Chinese words, simplified and traditional (matched anywhere: Chinese has no spaces). */
static const struct {
    const char *word;
    enum verb v;
} zh_verbs[] = {
    {"實作", V_IMPLEMENT}, {"實現", V_IMPLEMENT}, {"实现", V_IMPLEMENT}, {"新增", V_IMPLEMENT},
    {"添加", V_IMPLEMENT}, {"增加", V_IMPLEMENT}, {"加入", V_IMPLEMENT}, {"创建", V_IMPLEMENT},
    {"建立", V_IMPLEMENT}, {"编写", V_IMPLEMENT}, {"編寫", V_IMPLEMENT}, {"撰寫", V_IMPLEMENT},
    {"修復", V_FIX},       {"修复", V_FIX},       {"修正", V_FIX},       {"解決", V_FIX},
    {"解决", V_FIX},       {"修好", V_FIX},       {"重構", V_REFACTOR},  {"重构", V_REFACTOR},
    {"簡化", V_REFACTOR},  {"简化", V_REFACTOR},
};

static const char *const constraint_marks[] = {
    "don't change",     "do not change",   "without changing", "keep backward compat",
    "backwards compat", "backward compat", "不要改變",         "不要改变",
    "不改變",           "不改变",          "保持向後相容",     "保持向后兼容",
    "向後相容",         "向后兼容",
};

struct crit {
    const char *id;
    enum rein_verify_priority priority;
    const char *protocol;
    char source[48];
    bool checked;
    const char *why; /* not checked: why */
};

#define CRIT_MAX 24

struct rein_verify_criteria {
    rein_verify_config *cfg;
    json_t *json;
    char *text;
};

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool is_letter(char c)
{
    c = lower(c);
    return c >= 'a' && c <= 'z';
}

/* Does the English word stem (with an ending) start at s (a word start)? */
static bool word_at(const char *s, const char *stem)
{
    size_t n = strlen(stem);

    for (size_t i = 0; i < n; i++) {
        if (lower(s[i]) != stem[i])
            return false;
    }
    /* simplify → simplifies, simplified */
    for (size_t e = 0; e < REIN_ARRAY_SIZE(en_endings); e++) {
        const char *end = en_endings[e];
        size_t en = strlen(end), k = 0;
        size_t base = n;
        if (stem[n - 1] == 'y' && end[0] == 'i')
            base = n - 1;
        for (k = 0; k < en && lower(s[base + k]) == end[k]; k++)
            ;
        if (k == en && !is_letter(s[base + en]))
            return true;
    }
    return false;
}

static void find_verbs(const char *goal, bool found[V_COUNT], const char *word[V_COUNT])
{
    for (const char *s = goal; *s; s++) {
        if (s != goal && is_letter(s[-1]))
            continue;
        for (size_t i = 0; i < REIN_ARRAY_SIZE(en_verbs); i++) {
            if (!found[en_verbs[i].v] && word_at(s, en_verbs[i].stem)) {
                found[en_verbs[i].v] = true;
                word[en_verbs[i].v] = en_verbs[i].stem;
            }
        }
    }
    for (size_t i = 0; i < REIN_ARRAY_SIZE(zh_verbs); i++) {
        if (!found[zh_verbs[i].v] && strstr(goal, zh_verbs[i].word)) {
            found[zh_verbs[i].v] = true;
            word[zh_verbs[i].v] = zh_verbs[i].word;
        }
    }
}

/* Bytes up to the end of the sentence at s: ". ; ! ?", a line end, or 。；！？ */
static size_t clause_len(const char *s)
{
    static const char *const ends[] = {"\xe3\x80\x82", "\xef\xbc\x9b", "\xef\xbc\x81",
                                       "\xef\xbc\x9f"};
    size_t i = 0;

    for (; s[i] && !strchr(".;!?\n", s[i]); i++) {
        for (size_t k = 0; k < REIN_ARRAY_SIZE(ends); k++) {
            if (strncmp(s + i, ends[k], 3) == 0)
                return i;
        }
    }
    return i;
}

/* The constraint clauses of goal, as a new JSON array of strings. */
static json_t *find_constraints(const char *goal)
{
    json_t *out = json_array();
    char *low = rein_strdup(goal);

    if (!out || !low) {
        json_decref(out);
        rein_free(low);
        return NULL;
    }
    for (char *p = low; *p; p++)
        *p = lower(*p);
    for (size_t i = 0; i < REIN_ARRAY_SIZE(constraint_marks); i++) {
        const char *at = strstr(low, constraint_marks[i]);
        size_t off, n;
        char clause[160];
        if (!at)
            continue;
        off = (size_t)(at - low);
        /* The clause runs to the end of the sentence. */
        n = clause_len(goal + off);
        snprintf(clause, sizeof(clause), "%.*s", (int)(n < 150 ? n : 150), goal + off);
        rein__verify_utf8_fix(clause, strlen(clause));
        if (json_array_append_new(out, json_string(clause))) {
            json_decref(out);
            out = NULL;
            break;
        }
        break; /* one clause is enough to name it */
    }
    rein_free(low);
    return out;
}

static void add(struct crit *c, size_t *n, const char *id, enum rein_verify_priority pr,
                const char *protocol, const char *source)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp(c[i].id, id) == 0)
            return;
    }
    if (*n == CRIT_MAX)
        return;
    c[*n].id = id;
    c[*n].priority = pr;
    c[*n].protocol = protocol;
    c[*n].checked = true;
    c[*n].why = NULL;
    snprintf(c[*n].source, sizeof(c[*n].source), "%s", source);
    (*n)++;
}

static const char todo_protocol[] = "  TODO:\n"
                                    "    description: no TODO or FIXME added\n"
                                    "    priority: P2\n"
                                    "    group: 4\n"
                                    "    layer: 1\n"
                                    "    steps:\n"
                                    "      - name: no TODO in the change\n"
                                    "        shell: true\n"
                                    "        command: \"! git diff HEAD -U0 2>/dev/null | grep -E "
                                    "'^[+][^+].*\\\\b(TODO|FIXME)\\\\b'\"\n";

/* The protocol file for the criteria (a YAML text), and which criteria it can check. */
static rein_err build_yaml(const rein_verify_project *pj, struct crit *c, size_t n,
                           struct rein_buf *y)
{
    static const char *const order[] = {"BUILD",         "TYPECHECK", "LINT", "TEST",
                                        "FUNCTIONALITY", "ARCHITECT", "TODO"};
    rein_err rc = rein_buf_adds(y, "protocols:\n");

    for (size_t k = 0; !rc && k < REIN_ARRAY_SIZE(order); k++) {
        const char *name = order[k];
        const char *steps = rein__verify_project_steps(pj, name);
        enum rein_verify_priority pr = REIN_VERIFY_P2;
        bool used = false;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(c[i].protocol, name) != 0)
                continue;
            used = true;
            pr = c[i].priority < pr ? c[i].priority : pr;
        }
        if (!used)
            continue;
        if (strcmp(name, "FUNCTIONALITY") == 0 || strcmp(name, "ARCHITECT") == 0) {
            rc = rein_buf_addf(y, "  %s:\n    priority: P%d\n%s", name, (int)pr,
                               name[0] == 'A' ? "    when: [always]\n" : "");
        } else if (strcmp(name, "TODO") == 0) {
            rc = rein_buf_adds(y, todo_protocol);
        } else if (steps[0]) {
            rc = rein_buf_addf(y, "  %s:\n    priority: P%d\n%s    steps:\n%s", name, (int)pr,
                               strcmp(name, "TYPECHECK") == 0 ? "    group: 1\n    layer: 1\n" : "",
                               steps);
        } else {
            for (size_t i = 0; i < n; i++) {
                if (strcmp(c[i].protocol, name) == 0) {
                    c[i].checked = false;
                    c[i].why = strcmp(name, "TEST") == 0    ? "no test command was found here"
                               : strcmp(name, "LINT") == 0  ? "no linter was found here"
                               : strcmp(name, "BUILD") == 0 ? "no build command was found here"
                                                            : "nothing here runs it";
                }
            }
        }
    }
    return rc;
}

static json_t *crit_json(const struct crit *c, size_t n)
{
    json_t *a = json_array();

    for (size_t i = 0; a && i < n; i++) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:b}", "id", c[i].id, "priority",
                              rein_verify_priority_name(c[i].priority), "protocol", c[i].protocol,
                              "source", c[i].source, "checked", c[i].checked);
        if (o && c[i].why && json_object_set_new(o, "why", json_string(c[i].why))) {
            json_decref(o);
            o = NULL;
        }
        if (!o || json_array_append_new(a, o)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static char *crit_text(const struct crit *c, size_t n)
{
    struct rein_buf b;
    rein_err rc = REIN_OK;
    char *out;

    rein_buf_init(&b, 1 << 16);
    for (size_t i = 0; !rc && i < n; i++)
        rc =
            rein_buf_addf(&b, "%s %-22s %-13s (%s)%s%s\n", rein_verify_priority_name(c[i].priority),
                          c[i].id, c[i].protocol, c[i].source,
                          c[i].checked ? "" : ": not checked, ", c[i].checked ? "" : c[i].why);
    out = rc ? NULL : rein_buf_detach(&b, NULL);
    rein_buf_release(&b);
    return out;
}

void rein_verify_criteria_free(rein_verify_criteria *cr)
{
    if (!cr)
        return;
    rein_verify_config_free(cr->cfg);
    json_decref(cr->json);
    rein_free(cr->text);
    rein_free(cr);
}

/* The criteria of goal for project pj, in order, into c. */
static size_t derive(const rein_verify_project *pj, bool verbs[V_COUNT], const char *words[V_COUNT],
                     const json_t *constraints, struct crit *c)
{
    unsigned k = rein_verify_project_kinds(pj);
    char src[48];
    size_t n = 0;

    add(c, &n, "NO_SYNTAX_ERRORS", REIN_VERIFY_P0, "BUILD", "always");
    if (verbs[V_IMPLEMENT]) {
        snprintf(src, sizeof(src), "verb \"%s\"", words[V_IMPLEMENT]);
        add(c, &n, "CODE_COMPILES", REIN_VERIFY_P0, "BUILD", src);
        add(c, &n, "TESTS_PASS", REIN_VERIFY_P1, "TEST", src);
        add(c, &n, "FUNCTIONALITY_WORKS", REIN_VERIFY_P1, "FUNCTIONALITY", src);
    }
    if (verbs[V_FIX]) {
        snprintf(src, sizeof(src), "verb \"%s\"", words[V_FIX]);
        add(c, &n, "BUG_RESOLVED", REIN_VERIFY_P1, "FUNCTIONALITY", src);
        add(c, &n, "REGRESSION_TESTS_PASS", REIN_VERIFY_P1, "TEST", src);
        add(c, &n, "NO_NEW_ERRORS", REIN_VERIFY_P1, "LINT", src);
    }
    if (verbs[V_REFACTOR]) {
        snprintf(src, sizeof(src), "verb \"%s\"", words[V_REFACTOR]);
        add(c, &n, "BEHAVIOR_UNCHANGED", REIN_VERIFY_P1, "TEST", src);
        add(c, &n, "CODE_QUALITY_IMPROVED", REIN_VERIFY_P2, "ARCHITECT", src);
        add(c, &n, "TESTS_STILL_PASS", REIN_VERIFY_P1, "TEST", src);
    }
    if (json_array_size(constraints))
        add(c, &n, "CONSTRAINTS_KEPT", REIN_VERIFY_P1, "ARCHITECT", "constraint");
    if (k & REIN_VERIFY_PROJECT_TYPESCRIPT)
        add(c, &n, "NO_TYPE_ERRORS", REIN_VERIFY_P1, "TYPECHECK", "always (TypeScript)");
    if (k & REIN_VERIFY_PROJECT_HAS_TESTS)
        add(c, &n, "TESTS_PASS", REIN_VERIFY_P1, "TEST", "context: has tests");
    if (k & REIN_VERIFY_PROJECT_HAS_LINTER)
        add(c, &n, "LINT_PASS", REIN_VERIFY_P1, "LINT", "context: has a linter");
    add(c, &n, "NO_TODO_COMMENTS", REIN_VERIFY_P2, "TODO", "desired");
    return n;
}

rein_verify_criteria *rein_verify_criteria_derive(const char *goal, const char *dir,
                                                  rein_error *err)
{
    rein_verify_criteria *cr = NULL;
    rein_verify_project *pj;
    struct crit c[CRIT_MAX];
    bool verbs[V_COUNT] = {false};
    const char *words[V_COUNT] = {NULL};
    json_t *constraints = NULL, *verb_list = NULL, *list = NULL;
    struct rein_buf y;
    size_t n;

    if (!goal || !goal[0]) {
        rein_error_set(err, REIN_EINVAL, "criteria need a goal");
        return NULL;
    }
    pj = rein_verify_project_detect(dir, err);
    if (!pj)
        return NULL;
    if (!rein_verify_project_kinds(pj)) {
        rein_verify_project_free(pj);
        rein_error_set(err, REIN_ENOTFOUND,
                       "no rein-verify.yaml in %s, and nothing there to derive checks from (no "
                       "CMakeLists.txt, Makefile, package.json, pyproject.toml, tox.ini, "
                       "Cargo.toml, go.mod, pom.xml or build.gradle): write a protocol file "
                       "(see 'rein verify --help'), or pass --config FILE",
                       dir ? dir : "the current directory");
        return NULL;
    }
    rein_buf_init(&y, 1 << 20);
    find_verbs(goal, verbs, words);
    constraints = find_constraints(goal);
    verb_list = json_array();
    cr = rein_calloc(1, sizeof(*cr));
    if (!constraints || !verb_list || !cr)
        goto oom;
    for (int v = 0; v < V_COUNT; v++) {
        if (verbs[v] &&
            json_array_append_new(
                verb_list, json_pack("{s:s, s:s}", "class", verb_names[v], "word", words[v])))
            goto oom;
    }
    n = derive(pj, verbs, words, constraints, c);
    if (build_yaml(pj, c, n, &y))
        goto oom;
    cr->cfg = rein_verify_config_parse(y.ptr, y.len, "(criteria)", err);
    if (!cr->cfg)
        goto fail;
    list = crit_json(c, n);
    cr->text = crit_text(c, n);
    cr->json = list && cr->text ? json_pack("{s:s, s:O, s:O, s:o, s:O}", "goal", goal, "verbs",
                                            verb_list, "constraints", constraints, "project",
                                            rein_verify_project_json(pj), "criteria", list)
                                : NULL;
    if (!cr->json)
        goto oom;
    json_decref(list);
    json_decref(verb_list);
    json_decref(constraints);
    rein_buf_release(&y);
    rein_verify_project_free(pj);
    return cr;
oom:
    rein_error_set(err, REIN_ENOMEM, "out of memory");
fail:
    json_decref(list);
    json_decref(verb_list);
    json_decref(constraints);
    rein_buf_release(&y);
    rein_verify_project_free(pj);
    rein_verify_criteria_free(cr);
    return NULL;
}

const rein_verify_config *rein_verify_criteria_config(const rein_verify_criteria *cr)
{
    return cr->cfg;
}

const json_t *rein_verify_criteria_json(const rein_verify_criteria *cr)
{
    return cr->json;
}

const char *rein_verify_criteria_text(const rein_verify_criteria *cr)
{
    return cr->text;
}
