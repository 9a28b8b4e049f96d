/*
 * Claim extraction: the first half of chain-of-verification. An agent's final text is split
 * into sentences (English and Chinese punctuation), and each sentence is searched for claims
 * that can be checked against the world: a file created, modified or deleted; a function that
 * exists in a file; tests that pass; no type errors; a build that passes; lint that is clean.
 *
 * Extraction is deliberately conservative, because a claim extracted by mistake could fail a
 * correct result: a question, a conditional or future sentence ("if the tests pass", "I will
 * create", "应该", "需要") makes no claim; a negation earlier in the clause ("I did not
 * create", "没有修改") cancels the claim after it; a file verb claims only the paths it
 * governs (the verb, then nothing but fillers such as "the new file" or other paths, then the
 * path; or the path, then "was"/"已被", then the verb).
 *
 * Patterns are PCRE2 (UTF-8, caseless), compiled per extraction with rein's allocator, so an
 * extraction owns no global state. The checks themselves live in claims_check.c.
 */
#include "claims_int.h"

#include <stdio.h>
#include <string.h>

#define SENTENCE_MAX   2000
#define CLAIM_TEXT_MAX 300
#define CLAIMS_MAX     200

/* File extensions a bare word must end with to be taken for a path. */
#define EXTS                                                                                       \
    "c|h|cc|cpp|cxx|hpp|hh|hxx|m|mm|cu|py|pyi|js|mjs|cjs|jsx|ts|tsx|mts|go|rs|java|kt|kts|swift|"  \
    "rb|php|cs|scala|lua|pl|sh|bash|zsh|ps1|json|jsonl|yaml|yml|toml|ini|cfg|conf|xml|html|htm|"   \
    "css|scss|less|md|rst|txt|csv|sql|proto|graphql|gradle|cmake|mk|lock|env|tf|vue|svelte|dart|"  \
    "ex|exs|erl|hs|ml|clj|r|jl|zig|nim|in|am|ac|s|asm|log|patch|diff"

#define NAME "[A-Za-z_$][\\w$]*(?:::[A-Za-z_$][\\w$]*)*"

static const char *const pattern_text[RE_COUNT] = {
    [RE_PATH] =
        "(?<![\\w./\\-@:#])(?|`((?:[\\w.\\-]+/)*[\\w.\\-]+/?)`"
        "|((?:\\.{1,2}/)?(?:[\\w\\-][\\w.\\-]*/)*[\\w\\-][\\w.\\-]*\\.(?:" EXTS "))(?![\\w\\-/])"
        "|(\\.{1,2}/[\\w.\\-/]+)"
        "|((?:[\\w\\-][\\w.\\-]*/)+)(?![\\w.\\-])"
        "|((?-i:Makefile|GNUmakefile|Dockerfile|Justfile|Rakefile|Gemfile|Procfile|Jenkinsfile))"
        "(?![\\w.\\-]))",
    [RE_CREATED] = "\\b(?:created|added|wrote|written|generated|introduced|scaffolded)\\b"
                   "|(?:已经|已經|已)?(?:创建|創建|新建|新增|添加|生成|建立)了?",
    [RE_MODIFIED] = "\\b(?:modified|updated|changed|edited|fixed|refactored|rewrote|rewritten|"
                    "patched|adjusted|altered|tweaked|amended)\\b"
                    "|(?:已经|已經|已)?(?:修改|更新|改动|改動|编辑|編輯|修复|修復|重构|重構|调整|"
                    "調整|改写|改寫)了?",
    [RE_DELETED] = "\\b(?:deleted|removed|erased)\\b"
                   "|(?:已经|已經|已)?(?:删除|刪除|移除|删掉|刪掉|去掉)了?",
    [RE_FN_VERB] = "\\b(?:add(?:ed|s)?|implement(?:ed|s)?|defin(?:ed|es)|wr(?:ote|itten)|"
                   "creat(?:ed|es)|introduc(?:ed|es)|exists?|contains|now\\s+has|declar(?:ed|es))"
                   "\\b|加入|添加|新增|实现|實現|定义|定義|编写|編寫|写了|寫了|创建|創建|增加|"
                   "存在|包含",
    [RE_FN_NAME] = "(?|\\b(?:function|method|func|helper|procedure|routine|callback|handler)\\s+"
                   "(?:called\\s+|named\\s+)?`?(" NAME ")`?"
                   "|(?<![\\w$])`?(" NAME ")\\([^()\\s]{0,40}\\)`?"
                   "|(?<![\\w$])`?(" NAME ")`?\\s+(?:function|method|helper)\\b"
                   "|(?:函数|函數|方法)\\s*`?(" NAME ")`?"
                   "|(?<![\\w$])`?(" NAME ")`?\\s*(?:函数|函數|方法))",
    [RE_LINE] = "\\bline\\s+(\\d{1,7})\\b|第\\s*(\\d{1,7})\\s*行",
    [RE_TESTS] =
        "\\b(?:all\\s+(?:of\\s+the\\s+)?(?:\\d+\\s+)?)?(?:the\\s+)?(?:unit\\s+|integration\\s+)?"
        "tests?(?:\\s+suite)?\\s+(?:now\\s+|all\\s+|still\\s+)*(?:pass(?:es|ed)?|passing|are\\s+"
        "passing|is\\s+passing|succeed(?:s|ed)?|are\\s+green|run\\s+green)\\b"
        "|\\b(?:make\\s+test|ctest|pytest|npm\\s+test|cargo\\s+test|go\\s+test)\\s+(?:now\\s+)?"
        "(?:pass(?:es|ed)?|succeeds?|is\\s+green)\\b"
        "|(?:所有|全部)?的?(?:单元|單元|集成|整合)?(?:测试|測試)(?:用例)?(?:都|均|全部|已经|已經|"
        "已)*(?:通过|通過|全绿|全綠)",
    [RE_TYPES] =
        "\\bno\\s+(?:more\\s+)?type(?:script)?[-\\s]?errors?\\b"
        "|\\btype[-\\s]?check(?:s|ing|er)?\\s+(?:now\\s+)?(?:pass(?:es|ed)?|succeeds?|is\\s+"
        "clean|clean)\\b"
        "|\\bzero\\s+type\\s+errors\\b"
        "|(?:没有|沒有|无|無)(?:任何)?(?:类型|類型|type\\s*)(?:错误|錯誤|errors?)"
        "|(?:类型|類型)检查(?:已)?(?:通过|通過)",
    [RE_BUILD] = "\\b(?:the\\s+)?(?:build|compilation)\\s+(?:now\\s+)?(?:pass(?:es|ed)?|succeeds|"
                 "succeeded|is\\s+(?:green|clean|passing|successful))\\b"
                 "|\\b(?:builds|compiles)\\s+(?:now\\s+)?(?:cleanly|successfully|fine|without\\s+"
                 "(?:errors|warnings))\\b"
                 "|(?:编译|編譯|构建|構建)(?:已)?(?:通过|通過|成功)",
    [RE_LINT] = "\\b(?:lint(?:ing|er)?|eslint|clang-tidy|flake8|ruff|pylint)\\s+(?:now\\s+)?"
                "(?:pass(?:es|ed)?|is\\s+clean|succeeds)\\b"
                "|\\bno\\s+(?:more\\s+)?lint(?:ing)?\\s+(?:errors|warnings|issues)\\b"
                "|\\blint[-\\s]?clean\\b"
                "|(?:lint|代码检查|代碼檢查|静态检查|靜態檢查)\\s*(?:已)?(?:通过|通過)",
    [RE_HEDGE] = "\\b(?:if|unless|should|will|would|could|might|may|must|needs?\\s+to|plans?\\s+"
                 "to|going\\s+to|let\\s+me|let's|please|try(?:ing)?\\s+to|todo|i'll|we'll|you'll|"
                 "you\\s+can|you\\s+should|once|whether|expect(?:ed)?\\s+to|supposed\\s+to)\\b"
                 "|如果|假如|若|应该|應該|将会|將會|需要|请|請|可以|计划|計劃|打算|待办|待辦|"
                 "是否|尚未",
    [RE_NEG] = "\\b(?:not|never|no\\s+longer|cannot|failed\\s+to|unable\\s+to|neither|nor)\\b"
               "|n't\\b|没有|沒有|未|没|沒|无法|無法|不能|并未|並未|别|別",
};

static void *pcre_alloc(PCRE2_SIZE n, void *ud)
{
    (void)ud;
    return rein_malloc(n);
}

static void pcre_free(void *p, void *ud)
{
    (void)ud;
    rein_free(p);
}

void rein__claims_re_release(struct rein__claims_re *re)
{
    for (int i = 0; i < RE_COUNT; i++)
        pcre2_code_free(re->code[i]);
    pcre2_match_data_free(re->md);
    pcre2_general_context_free(re->gctx);
    memset(re, 0, sizeof(*re));
}

rein_err rein__claims_re_init(struct rein__claims_re *re, rein_error *err)
{
    pcre2_compile_context *cc;

    memset(re, 0, sizeof(*re));
    re->gctx = pcre2_general_context_create(pcre_alloc, pcre_free, NULL);
    cc = re->gctx ? pcre2_compile_context_create(re->gctx) : NULL;
    if (!cc)
        goto out_oom;
    for (int i = 0; i < RE_COUNT; i++) {
        int code;
        PCRE2_SIZE off;
        re->code[i] =
            pcre2_compile((PCRE2_SPTR)pattern_text[i], PCRE2_ZERO_TERMINATED,
                          PCRE2_UTF | PCRE2_CASELESS | PCRE2_NO_UTF_CHECK, &code, &off, cc);
        if (!re->code[i]) {
            char msg[120];
            pcre2_compile_context_free(cc);
            if (code == PCRE2_ERROR_NOMEMORY)
                goto out_oom;
            pcre2_get_error_message(code, (PCRE2_UCHAR *)msg, sizeof(msg));
            rein__claims_re_release(re);
            return rein_error_set(err, REIN_EINTERNAL, "claim pattern %d: %s at %zu", i, msg,
                                  (size_t)off);
        }
    }
    pcre2_compile_context_free(cc);
    re->md = pcre2_match_data_create(16, re->gctx);
    if (!re->md)
        goto out_oom;
    return REIN_OK;

out_oom:
    rein__claims_re_release(re);
    return rein_error_set(err, REIN_ENOMEM, "out of memory compiling claim patterns");
}

/*
 * Finds pattern i in s[0..n) from start. true with the match in *m (group g's span when it
 * matched, else the whole match; see rein__claims_group).
 */
bool rein__claims_find(struct rein__claims_re *re, int i, const char *s, size_t n, size_t start,
                       struct rein__span *m)
{
    PCRE2_SIZE *ov;
    int rc;

    if (start > n)
        return false;
    rc = pcre2_match(re->code[i], (PCRE2_SPTR)s, n, start, PCRE2_NO_UTF_CHECK, re->md, NULL);
    if (rc < 0)
        return false;
    ov = pcre2_get_ovector_pointer(re->md);
    m->start = ov[0];
    m->end = ov[1];
    m->g_start = m->g_end = 0;
    /* The first group that took part (branch resets give every alternative group 1). */
    for (int g = 1; g < rc; g++) {
        if (ov[2 * g] != PCRE2_UNSET) {
            m->g_start = ov[2 * g];
            m->g_end = ov[2 * g + 1];
            break;
        }
    }
    return true;
}

/* ---- the claims list ---- */

void rein_verify_claims_free(rein_verify_claims *claims)
{
    if (!claims)
        return;
    for (size_t i = 0; i < claims->n; i++) {
        struct rein__claim *c = &claims->v[i];
        rein_free(c->text);
        rein_free(c->path);
        rein_free(c->name);
        rein_free(c->evidence);
    }
    rein_free(claims->v);
    rein_free(claims);
}

size_t rein_verify_claims_count(const rein_verify_claims *claims)
{
    return claims ? claims->n : 0;
}

const struct rein_verify_claim *rein_verify_claims_get(const rein_verify_claims *c, size_t i)
{
    struct rein__claim *cl;

    if (!c || i >= c->n)
        return NULL;
    cl = &c->v[i];
    cl->pub.text = cl->text;
    cl->pub.path = cl->path;
    cl->pub.name = cl->name;
    cl->pub.evidence = cl->evidence ? cl->evidence : "";
    return &cl->pub;
}

const char *rein_verify_claim_kind_name(enum rein_verify_claim_kind k)
{
    static const char *const names[] = {"file_created",    "file_modified", "file_deleted",
                                        "function_exists", "tests_pass",    "no_type_errors",
                                        "build_passes",    "lint_clean"};

    return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "unknown";
}

const char *rein_verify_claim_status_name(enum rein_verify_claim_status s)
{
    static const char *const names[] = {"unchecked", "verified", "refuted", "unverifiable"};

    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

json_t *rein_verify_claims_json(const rein_verify_claims *claims)
{
    json_t *arr = json_array();

    for (size_t i = 0; arr && claims && i < claims->n; i++) {
        const struct rein__claim *c = &claims->v[i];
        json_t *o = json_pack(
            "{s:s, s:o, s:s, s:o, s:f}", "kind", rein_verify_claim_kind_name(c->pub.kind), "text",
            rein__verify_jstr(c->text), "status", rein_verify_claim_status_name(c->pub.status),
            "evidence", rein__verify_jstr(c->evidence ? c->evidence : ""), "confidence",
            c->pub.confidence);
        if (!o || json_array_append_new(arr, o))
            goto out_fail;
        if ((c->path && json_object_set_new(o, "path", json_string(c->path))) ||
            (c->name && json_object_set_new(o, "name", json_string(c->name))) ||
            (c->pub.line && json_object_set_new(o, "line", json_integer(c->pub.line))))
            goto out_fail;
    }
    return arr;

out_fail:
    json_decref(arr);
    return NULL;
}

/* ---- extraction ---- */

struct sentence {
    const char *s;
    size_t n;
    bool question;
};

static bool add_claim(rein_verify_claims *cl, enum rein_verify_claim_kind kind,
                      const struct sentence *st, const char *path, size_t path_len,
                      const char *name, size_t name_len, int line)
{
    struct rein__claim *c;
    size_t tn = st->n;

    for (size_t i = 0; i < cl->n; i++) {
        const struct rein__claim *o = &cl->v[i];
        bool same_path = (!o->path && !path) || (o->path && path && strlen(o->path) == path_len &&
                                                 memcmp(o->path, path, path_len) == 0);
        bool same_name = (!o->name && !name) || (o->name && name && strlen(o->name) == name_len &&
                                                 memcmp(o->name, name, name_len) == 0);
        if (o->pub.kind == kind && same_path && same_name)
            return true; /* said twice is still one claim */
    }
    if (cl->n == CLAIMS_MAX)
        return true;
    if (cl->n == cl->cap) {
        size_t cap = cl->cap ? cl->cap * 2 : 8;
        struct rein__claim *v = rein_realloc(cl->v, cap * sizeof(*v));
        if (!v)
            return false;
        cl->v = v;
        cl->cap = cap;
    }
    c = &cl->v[cl->n];
    memset(c, 0, sizeof(*c));
    if (tn > CLAIM_TEXT_MAX) {
        tn = CLAIM_TEXT_MAX;
        while (tn && ((unsigned char)st->s[tn] & 0xc0) == 0x80)
            tn--;
    }
    c->text = rein_strndup(st->s, tn);
    c->path = path ? rein_strndup(path, path_len) : NULL;
    c->name = name ? rein_strndup(name, name_len) : NULL;
    if (!c->text || (path && !c->path) || (name && !c->name)) {
        rein_free(c->text);
        rein_free(c->path);
        rein_free(c->name);
        return false;
    }
    c->pub.kind = kind;
    c->pub.line = line;
    c->pub.status = REIN_VERIFY_CLAIM_UNCHECKED;
    cl->n++;
    return true;
}

/* Start of the clause holding position pos: after the last , ; 但 … before it. */
static size_t clause_start(const char *s, size_t pos)
{
    static const char *const seps[] = {",",  ";",  " but ", " and ", "，",   "；",
                                       "、", "但", "而且",  "并且",  "並且", NULL};
    size_t best = 0;

    for (size_t i = 0; seps[i]; i++) {
        size_t sn = strlen(seps[i]);
        for (size_t j = 0; j + sn <= pos; j++) {
            if (memcmp(s + j, seps[i], sn) == 0 && j + sn > best)
                best = j + sn;
        }
    }
    return best;
}

/* Is there a negation in the clause before pos? */
static bool negated(struct rein__claims_re *re, const struct sentence *st, size_t pos)
{
    struct rein__span m;
    size_t from = clause_start(st->s, pos);

    return rein__claims_find(re, RE_NEG, st->s, pos, from, &m);
}

/* Execution claims: one pattern each, anywhere in the sentence. */
static bool find_exec_claims(struct rein__claims_re *re, rein_verify_claims *cl,
                             const struct sentence *st)
{
    static const struct {
        int re;
        enum rein_verify_claim_kind kind;
    } map[] = {{RE_TESTS, REIN_VERIFY_CLAIM_TESTS_PASS},
               {RE_TYPES, REIN_VERIFY_CLAIM_NO_TYPE_ERRORS},
               {RE_BUILD, REIN_VERIFY_CLAIM_BUILD_PASSES},
               {RE_LINT, REIN_VERIFY_CLAIM_LINT_CLEAN}};
    struct rein__span m;

    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (rein__claims_find(re, map[i].re, st->s, st->n, 0, &m) && !negated(re, st, m.start) &&
            !add_claim(cl, map[i].kind, st, NULL, 0, NULL, 0, 0))
            return false;
    }
    return true;
}

static bool is_stopword(const char *s, size_t n)
{
    static const char *const words[] = {
        "a",        "an",      "the",     "that",       "this",    "these",       "those",
        "which",    "to",      "in",      "into",       "for",     "of",          "on",
        "at",       "by",      "with",    "from",       "called",  "named",       "and",
        "or",       "is",      "it",      "its",        "new",     "all",         "each",
        "every",    "some",    "one",     "two",        "three",   "returns",     "return",
        "function", "method",  "helper",  "i",          "we",      "was",         "now",
        "also",     "test",    "tests",   "file",       "added",   "implemented", "defined",
        "wrote",    "written", "created", "introduced", "updated", "modified",    "exported",
        "public",   "private", "static",  "async",      "inline",  "my",          "our",
        "their",    "small",   "simple",  "separate",   "utility", "exists",      "contains",
        "has",      NULL};

    for (size_t i = 0; words[i]; i++) {
        if (strlen(words[i]) == n && rein__verify_has_prefix_ci(s, words[i]))
            return true;
    }
    return false;
}

struct paths {
    struct rein__span v[32];
    size_t n;
};

static bool plausible_path(const char *p, size_t n, bool backticked)
{
    const char *dot;

    if (n == 0 || n > 512)
        return false;
    if (backticked) /* `foo` alone is a name, not a path */
        return memchr(p, '/', n) || memchr(p, '.', n);
    /* Node.js, Vue.js, Three.js: product names, not files. */
    dot = memchr(p, '.', n);
    if (!memchr(p, '/', n) && dot && p[0] >= 'A' && p[0] <= 'Z' && (size_t)(p + n - dot) == 3 &&
        dot[1] == 'j' && dot[2] == 's')
        return false;
    return true;
}

static void find_paths(struct rein__claims_re *re, const struct sentence *st, struct paths *ps)
{
    struct rein__span m;
    size_t pos = 0;

    ps->n = 0;
    while (ps->n < sizeof(ps->v) / sizeof(ps->v[0]) &&
           rein__claims_find(re, RE_PATH, st->s, st->n, pos, &m)) {
        bool tick = st->s[m.start] == '`';
        size_t gs = m.g_start, ge = m.g_end;
        pos = m.end > m.start ? m.end : m.start + 1;
        /* Sentence punctuation glued to a bare path is not part of it. */
        while (!tick && ge > gs && strchr(".,:;", st->s[ge - 1]))
            ge--;
        if (!plausible_path(st->s + gs, ge - gs, tick))
            continue;
        ps->v[ps->n].start = m.start;
        ps->v[ps->n].end = m.end;
        ps->v[ps->n].g_start = gs;
        ps->v[ps->n].g_end = ge;
        ps->n++;
    }
}

/*
 * Words that may stand between a verb and the path it governs. English words are matched
 * whole (ASCII letters), Chinese ones as byte sequences.
 */
static bool only_fillers(const char *s, size_t a, size_t b, const struct paths *ps, bool passive)
{
    static const char *const en[] = {"a",      "an",     "the",    "new",    "file",  "files",
                                     "source", "header", "script", "module", "empty", "following",
                                     "these",  "those",  "both",   "also",   "all",   "directory",
                                     "folder", "dir",    "called", "named",  "and",   "two",
                                     "three",  "four",   "test",   "config", NULL};
    static const char *const en_passive[] = {"is",           "was",  "were",    "has", "have",
                                             "had",          "been", "be",      "now", "also",
                                             "successfully", "just", "already", NULL};
    static const char *const zh[] = {
        "了", "文件",   "檔案",   "档案",   "新的",     "新",       "一个", "一個", "个",
        "個", "源文件", "头文件", "頭文件", "测试文件", "測試文件", "目录", "目錄", "和",
        "与", "與",     "及",     "以及",   "、",       "，",       "：",   "已经", "已經",
        "已", "被",     "都",     "均",     "也",       "成功",     "地",   NULL};
    size_t i = a;

    while (i < b) {
        bool skipped = false;
        char c = s[i];
        for (size_t k = 0; k < ps->n && !skipped; k++) {
            if (ps->v[k].start == i) {
                i = ps->v[k].end;
                skipped = true;
            }
        }
        if (skipped)
            continue;
        if (c == ' ' || c == '\t' || c == ',' || c == ':' || c == '`' || c == '"' || c == '\'' ||
            c == '(' || c == ')' || c == '*') {
            i++;
            continue;
        }
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
            size_t e = i;
            bool ok = false;
            while (e < b && ((s[e] >= 'a' && s[e] <= 'z') || (s[e] >= 'A' && s[e] <= 'Z')))
                e++;
            for (const char *const *w = passive ? en_passive : en; *w && !ok; w++)
                ok = strlen(*w) == e - i && rein__verify_has_prefix_ci(s + i, *w);
            if (!ok)
                return false;
            i = e;
            continue;
        }
        for (size_t k = 0; zh[k] && !skipped; k++) {
            size_t zn = strlen(zh[k]);
            if (i + zn <= b && memcmp(s + i, zh[k], zn) == 0) {
                i += zn;
                skipped = true;
            }
        }
        if (!skipped)
            return false;
    }
    return true;
}

struct verb {
    size_t start, end;
    enum rein_verify_claim_kind kind;
};

static size_t find_verbs(struct rein__claims_re *re, const struct sentence *st, struct verb *v,
                         size_t max)
{
    static const struct {
        int re;
        enum rein_verify_claim_kind kind;
    } map[] = {{RE_CREATED, REIN_VERIFY_CLAIM_FILE_CREATED},
               {RE_MODIFIED, REIN_VERIFY_CLAIM_FILE_MODIFIED},
               {RE_DELETED, REIN_VERIFY_CLAIM_FILE_DELETED}};
    size_t n = 0;

    for (size_t k = 0; k < sizeof(map) / sizeof(map[0]); k++) {
        struct rein__span m;
        size_t pos = 0;
        while (n < max && rein__claims_find(re, map[k].re, st->s, st->n, pos, &m)) {
            pos = m.end > m.start ? m.end : m.start + 1;
            if (m.end == m.start)
                continue;
            v[n].start = m.start;
            v[n].end = m.end;
            v[n].kind = map[k].kind;
            n++;
        }
    }
    return n;
}

static bool find_file_claims(struct rein__claims_re *re, rein_verify_claims *cl,
                             const struct sentence *st, const struct paths *ps)
{
    struct verb verbs[16];
    size_t nv = find_verbs(re, st, verbs, 16);

    for (size_t i = 0; i < ps->n; i++) {
        const struct rein__span *p = &ps->v[i];
        const struct verb *gov = NULL;
        /* The nearest verb before the path that governs it, else one right after it. */
        for (size_t k = 0; k < nv; k++) {
            if (verbs[k].end <= p->start && (!gov || verbs[k].end > gov->end) &&
                only_fillers(st->s, verbs[k].end, p->start, ps, false))
                gov = &verbs[k];
        }
        for (size_t k = 0; !gov && k < nv; k++) {
            if (verbs[k].start >= p->end && only_fillers(st->s, p->end, verbs[k].start, ps, true))
                gov = &verbs[k];
        }
        if (!gov || negated(re, st, gov->start < p->start ? gov->start : p->start))
            continue;
        if (!add_claim(cl, gov->kind, st, st->s + p->g_start, p->g_end - p->g_start, NULL, 0, 0))
            return false;
    }
    return true;
}

static int claimed_line(struct rein__claims_re *re, const struct sentence *st,
                        const struct rein__span *path)
{
    struct rein__span m;
    const char *s;

    if (path && path->end < st->n && st->s[path->end] == ':') {
        int line = 0;
        for (s = st->s + path->end + 1;
             s < st->s + st->n && *s >= '0' && *s <= '9' && line < 10000000; s++)
            line = line * 10 + (*s - '0');
        if (line > 0)
            return line;
    }
    if (!rein__claims_find(re, RE_LINE, st->s, st->n, 0, &m) || m.g_end <= m.g_start)
        return 0;
    {
        int line = 0;
        for (size_t i = m.g_start; i < m.g_end; i++)
            line = line * 10 + (st->s[i] - '0');
        return line;
    }
}

/* The path a function claim is about: the nearest one after the name, else before it. */
static const struct rein__span *function_path(const struct paths *ps, size_t name_pos)
{
    const struct rein__span *best = NULL;

    for (size_t i = 0; i < ps->n; i++) {
        if (ps->v[i].start >= name_pos &&
            (!best || best->start < name_pos || ps->v[i].start < best->start))
            best = &ps->v[i];
        else if (ps->v[i].start < name_pos &&
                 (!best || (best->start < name_pos && ps->v[i].start > best->start)))
            best = &ps->v[i];
    }
    return best;
}

static bool find_function_claims(struct rein__claims_re *re, rein_verify_claims *cl,
                                 const struct sentence *st, const struct paths *ps)
{
    struct rein__span verb, m;
    size_t pos = 0;

    if (!rein__claims_find(re, RE_FN_VERB, st->s, st->n, 0, &verb) || negated(re, st, verb.start))
        return true;
    while (rein__claims_find(re, RE_FN_NAME, st->s, st->n, pos, &m)) {
        const struct rein__span *path;
        bool inside_path = false;
        /* A stopword ("added function foo") may hide a real name further on: look again
         * from just after where this match began. */
        if (m.g_end <= m.g_start || is_stopword(st->s + m.g_start, m.g_end - m.g_start)) {
            pos = m.start + 1;
            while (pos < st->n && ((unsigned char)st->s[pos] & 0xc0) == 0x80)
                pos++;
            continue;
        }
        pos = m.end > m.start ? m.end : m.start + 1;
        for (size_t i = 0; i < ps->n; i++)
            inside_path |= m.g_start >= ps->v[i].start && m.g_start < ps->v[i].end;
        if (inside_path)
            continue;
        path = function_path(ps, m.start);
        if (!add_claim(cl, REIN_VERIFY_CLAIM_FUNCTION_EXISTS, st,
                       path ? st->s + path->g_start : NULL, path ? path->g_end - path->g_start : 0,
                       st->s + m.g_start, m.g_end - m.g_start, claimed_line(re, st, path)))
            return false;
    }
    return true;
}

static bool sentence_claims(struct rein__claims_re *re, rein_verify_claims *cl,
                            const struct sentence *st)
{
    struct rein__span m;
    struct paths ps;

    if (st->question || rein__claims_find(re, RE_HEDGE, st->s, st->n, 0, &m))
        return true;
    find_paths(re, st, &ps);
    return find_exec_claims(re, cl, st) && find_function_claims(re, cl, st, &ps) &&
           find_file_claims(re, cl, st, &ps);
}

/* Length of a sentence terminator at s[i] (0 if none); *question when it is a '?'. */
static size_t terminator(const char *s, size_t n, size_t i, bool *question)
{
    static const char *const wide[] = {"。", "！", "？", "；", NULL};
    char c = s[i];

    *question = false;
    if (c == '\n')
        return 1;
    if (c == '.' || c == '!' || c == '?' || c == ';') {
        /* "src/x.c" and "3.5" continue; ". " or the end ends a sentence. */
        if (i + 1 < n && s[i + 1] != ' ' && s[i + 1] != '\t' && s[i + 1] != '\n' &&
            s[i + 1] != '\r')
            return 0;
        *question = c == '?';
        return 1;
    }
    for (size_t k = 0; wide[k]; k++) {
        if (i + 3 <= n && memcmp(s + i, wide[k], 3) == 0) {
            *question = k == 2;
            return 3;
        }
    }
    return 0;
}

static bool valid_utf8(const char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!len || i + len > n || c == 0)
            return false;
        for (size_t k = 1; k < len; k++) {
            if (((unsigned char)s[i + k] & 0xc0) != 0x80)
                return false;
        }
        if ((len == 2 && c < 0xc2) || (len == 3 && c == 0xe0 && (unsigned char)s[i + 1] < 0xa0) ||
            (len == 3 && c == 0xed && (unsigned char)s[i + 1] > 0x9f) ||
            (len == 4 && (c > 0xf4 || (c == 0xf0 && (unsigned char)s[i + 1] < 0x90) ||
                          (c == 0xf4 && (unsigned char)s[i + 1] > 0x8f))))
            return false;
        i += len;
    }
    return true;
}

/* Calls sentence_claims on each sentence of text; false on ENOMEM. */
static bool each_sentence(struct rein__claims_re *re, rein_verify_claims *cl, const char *text,
                          size_t len)
{
    size_t start = 0;

    for (size_t i = 0; i <= len;) {
        bool q = false;
        size_t t = i < len ? terminator(text, len, i, &q) : 1;
        if (!t) {
            i++;
            continue;
        }
        {
            struct sentence st = {text + start, i - start, q};
            /* Trim blanks and list markers ("- ", "* ", "1. "). */
            while (st.n && strchr(" \t\r-*>#", st.s[0])) {
                st.s++;
                st.n--;
            }
            while (st.n && strchr(" \t\r", st.s[st.n - 1]))
                st.n--;
            if (st.n > 2 && st.n <= SENTENCE_MAX && valid_utf8(st.s, st.n) &&
                !sentence_claims(re, cl, &st))
                return false;
        }
        i += t;
        start = i;
    }
    return true;
}

rein_verify_claims *rein_verify_claims_extract(const char *text, size_t len, rein_error *err)
{
    struct rein__claims_re re;
    rein_verify_claims *cl = rein_calloc(1, sizeof(*cl));

    if (!cl) {
        rein_error_set(err, REIN_ENOMEM, "out of memory extracting claims");
        return NULL;
    }
    if (rein__claims_re_init(&re, err)) {
        rein_free(cl);
        return NULL;
    }
    if (!each_sentence(&re, cl, text ? text : "", text ? len : 0)) {
        rein_verify_claims_free(cl);
        cl = NULL;
        rein_error_set(err, REIN_ENOMEM, "out of memory extracting claims");
    }
    rein__claims_re_release(&re);
    return cl;
}
