/*
 * Unit tests for the claims module (include/rein/claims.h): the labelled corpus
 * (tests/data/claims, with recall and false-positive rate printed and held to 95% / 2%), what
 * extraction finds in sentences of each kind, the tool vocabulary, the evidence for each kind
 * (ledger, working tree and git, source, protocols), the three ledger shapes, the source
 * scanner, and extraction under failing allocations.
 */
/* rein-test-timeout: 120 */
#include "test.h"

#include <sys/stat.h>

/* A git repository with files (name, text, …, NULL) committed. */
static char *git_repo(const char *const *files)
{
    char *dir = test_tmpdir();

    for (size_t i = 0; files && files[i]; i += 2)
        free(test_write_file(dir, files[i], files[i + 1]));
    test_sh(dir, "git init -q && git add -A && git -c user.email=t@t -c user.name=t "
                 "commit -qm init --allow-empty");
    return dir;
}

/* The tools the corpus speaks of: the built-in skills from a real registry, and the names a
 * ledger or an MCP server would bring. */
static rein_claims_vocab *corpus_vocab(rein_registry **reg_out)
{
    static const char *const more[] = {
        "write_file",  "read_file",      "web_search",     "get_weather",   "send_email",
        "run_command", "query_database", "translate_text", "create_ticket", "fetch_url"};
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    rein_claims_vocab *v;

    assert_non_null(reg);
    assert_rein_ok(rein_skills_register_builtins(reg, NULL, &err), &err);
    v = rein_claims_vocab_new(reg, &err);
    assert_non_null(v);
    for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
        assert_rein_ok(rein_claims_vocab_add(v, more[i]), NULL);
    *reg_out = reg;
    return v;
}

/* Every check fails: a claim that tests, build, lint or types pass is refuted. */
static int failing_check(const char *protocol, char *why, size_t why_len, double *conf, void *ud)
{
    (void)ud;
    snprintf(why, why_len, "%s exited 1", protocol);
    *conf = 1.0;
    return 0;
}

struct tally {
    size_t claims, found, none, fp;
    size_t by_lang_claims[3], by_lang_found[3], by_lang_none[3], by_lang_fp[3];
    size_t kind_right;
};

static int lang_index(const char *lang)
{
    return strcmp(lang, "en") == 0 ? 0 : strcmp(lang, "zh-Hans") == 0 ? 1 : 2;
}

static void print_tally(const char *name, const struct tally *t)
{
    static const char *const langs[] = {"en", "zh-Hans", "zh-Hant"};

    print_message("%-9s recall %5.1f%% (%zu/%zu refuted)   false positives %4.1f%% (%zu/%zu "
                  "refuted)   kind right %zu/%zu\n",
                  name, t->claims ? 100.0 * (double)t->found / (double)t->claims : 0.0, t->found,
                  t->claims, t->none ? 100.0 * (double)t->fp / (double)t->none : 0.0, t->fp,
                  t->none, t->kind_right, t->found);
    for (int l = 0; l < 3; l++)
        print_message("          %-8s recall %zu/%zu, false positives %zu/%zu\n", langs[l],
                      t->by_lang_found[l], t->by_lang_claims[l], t->by_lang_fp[l],
                      t->by_lang_none[l]);
}

static void add_tally(struct tally *to, const struct tally *from)
{
    to->claims += from->claims;
    to->found += from->found;
    to->none += from->none;
    to->fp += from->fp;
    to->kind_right += from->kind_right;
    for (int l = 0; l < 3; l++) {
        to->by_lang_claims[l] += from->by_lang_claims[l];
        to->by_lang_found[l] += from->by_lang_found[l];
        to->by_lang_none[l] += from->by_lang_none[l];
        to->by_lang_fp[l] += from->by_lang_fp[l];
    }
}

/* Runs one corpus file in dir; every claim unbacked (empty ledger, no files, failing checks). */
static void run_corpus(const char *file, const rein_claims_vocab *vocab, const char *dir,
                       struct tally *t)
{
    char *path = NULL, *text;
    size_t len;
    json_t *ledger = json_array();
    struct rein_claims_evidence ev = {
        .ledger = ledger, .tree = true, .cwd = dir, .run_check = failing_check};
    char *line, *save = NULL;

    assert_true(asprintf(&path, "%s/tests/data/claims/%s", REIN_SOURCE_DIR, file) > 0);
    text = test_read_file(path, &len);
    assert_non_null(text);
    memset(t, 0, sizeof(*t));
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *label = line, *lang, *sentence;
        rein_error err;
        rein_claims *c;
        bool claim, refuted = false, kind_ok = false;
        int li;
        if (line[0] == '#' || !line[0])
            continue;
        lang = strchr(label, '\t');
        assert_non_null(lang);
        *lang++ = '\0';
        sentence = strchr(lang, '\t');
        assert_non_null(sentence);
        *sentence++ = '\0';
        li = lang_index(lang);
        claim = strncmp(label, "none", 4) != 0;
        c = rein_claims_extract(sentence, strlen(sentence), vocab, &err);
        assert_non_null(c);
        assert_rein_ok(rein_claims_check(c, &ev, &err), &err);
        for (size_t i = 0; i < rein_claims_count(c); i++) {
            const struct rein_claim *cl = rein_claims_get(c, i);
            if (cl->status != REIN_CLAIM_REFUTED)
                continue;
            refuted = true;
            kind_ok |= strcmp(rein_claim_kind_name(cl->kind), label) == 0;
        }
        if (claim) {
            t->claims++;
            t->by_lang_claims[li]++;
            t->found += refuted;
            t->by_lang_found[li] += refuted;
            t->kind_right += kind_ok;
            if (!refuted)
                print_message("  missed   [%s] %s\n", label, sentence);
            else if (!kind_ok)
                print_message("  kind     [%s] %s (got %s)\n", label, sentence,
                              rein_claim_kind_name(rein_claims_get(c, 0)->kind));
        } else {
            t->none++;
            t->by_lang_none[li]++;
            t->fp += refuted;
            t->by_lang_fp[li] += refuted;
            if (refuted) {
                const struct rein_claim *cl = rein_claims_get(c, 0);
                print_message("  refuted  [%s] %s (%s %s)\n", label, sentence,
                              rein_claim_kind_name(cl->kind), cl->subject);
            }
        }
        rein_claims_free(c);
    }
    json_decref(ledger);
    free(text);
    free(path);
}

/* ---- extraction ---- */

struct want {
    enum rein_claim_kind kind;
    const char *subject;
    const char *path;
};

static void expect_claims(const rein_claims_vocab *v, const char *text, const struct want *w,
                          size_t n)
{
    rein_error err;
    rein_claims *c = rein_claims_extract(text, strlen(text), v, &err);
    size_t got;

    assert_non_null(c);
    got = rein_claims_count(c);
    for (size_t i = 0; i < got || i < n; i++) {
        const struct rein_claim *cl = rein_claims_get(c, i);
        bool ok = i < got && i < n && cl->kind == w[i].kind &&
                  strcmp(cl->subject, w[i].subject) == 0 &&
                  ((!cl->path && !w[i].path) ||
                   (cl->path && w[i].path && strcmp(cl->path, w[i].path) == 0));
        if (!ok) {
            print_error("text: %s\n", text);
            for (size_t k = 0; k < got; k++) {
                const struct rein_claim *x = rein_claims_get(c, k);
                print_error("  got %s subject=%s path=%s\n", rein_claim_kind_name(x->kind),
                            x->subject, x->path ? x->path : "-");
            }
            fail_msg("claim %zu differs (expected %zu claims, got %zu)", i, n, got);
        }
    }
    rein_claims_free(c);
}

#define EXPECT(v, text, ...)                                                                       \
    do {                                                                                           \
        const struct want w_[] = {__VA_ARGS__};                                                    \
        expect_claims(v, text, w_, sizeof(w_) / sizeof(w_[0]));                                    \
    } while (0)
#define EXPECT_NONE(v, text) expect_claims(v, text, NULL, 0)

static rein_claims_vocab *small_vocab(void)
{
    static const char *const names[] = {"calculator", "file_search", "get_weather",
                                        "echo",       "write_file",  "read"};
    rein_claims_vocab *v = rein_claims_vocab_new(NULL, NULL);

    assert_non_null(v);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        assert_rein_ok(rein_claims_vocab_add(v, names[i]), NULL);
    return v;
}

static void test_extract_kinds(void **state)
{
    rein_claims_vocab *v = small_vocab();

    (void)state;
    EXPECT(v, "I used the calculator and it returned 2.", {REIN_CLAIM_TOOL, "calculator", NULL});
    EXPECT(v, "I wrote the result to result.txt, then deleted old.log.",
           {REIN_CLAIM_FILE_WRITTEN, "result.txt", "result.txt"},
           {REIN_CLAIM_FILE_DELETED, "old.log", "old.log"});
    EXPECT(v, "Created `src/a.c`, `src/b.h` and tests/test_a.py",
           {REIN_CLAIM_FILE_WRITTEN, "src/a.c", "src/a.c"},
           {REIN_CLAIM_FILE_WRITTEN, "src/b.h", "src/b.h"},
           {REIN_CLAIM_FILE_WRITTEN, "tests/test_a.py", "tests/test_a.py"});
    EXPECT(v, "I added parse_args to src/cli.c.", {REIN_CLAIM_FUNCTION, "parse_args", "src/cli.c"});
    EXPECT(v, "I removed the debug print from src/cli.c.",
           {REIN_CLAIM_FILE_WRITTEN, "src/cli.c", "src/cli.c"});
    EXPECT(v, "All 12 tests pass, the build succeeds, lint is clean and there are no type errors.",
           {REIN_CLAIM_TESTS_PASS, "tests", NULL}, {REIN_CLAIM_BUILD_PASSES, "build", NULL},
           {REIN_CLAIM_LINT_CLEAN, "lint", NULL}, {REIN_CLAIM_NO_TYPE_ERRORS, "types", NULL});
    EXPECT(v, "我已在 auth.ts 第 42 行加入了 validateToken 函數",
           {REIN_CLAIM_FUNCTION, "validateToken", "auth.ts"});
    EXPECT(v, "我调用了 calculator，结果是 2。我已将结果写入 result.txt。",
           {REIN_CLAIM_TOOL, "calculator", NULL},
           {REIN_CLAIM_FILE_WRITTEN, "result.txt", "result.txt"});
    /* a result after a fronted frame, a causative, a headline passive, something there now */
    EXPECT(v, "Checking with get_weather, the forecast is 12 degrees.",
           {REIN_CLAIM_TOOL, "get_weather", NULL});
    EXPECT(v, "I had the calculator tally the invoices.", {REIN_CLAIM_TOOL, "calculator", NULL});
    EXPECT(v, "Summary written to docs/summary.md.",
           {REIN_CLAIM_FILE_WRITTEN, "docs/summary.md", "docs/summary.md"});
    EXPECT(v, "There's now a `normalize()` helper in lib/text.py.",
           {REIN_CLAIM_FUNCTION, "normalize", "lib/text.py"});
    EXPECT(v, "There is now a changelog at docs/CHANGES.md.",
           {REIN_CLAIM_FILE_WRITTEN, "docs/CHANGES.md", "docs/CHANGES.md"});
    EXPECT(v, "The compiler finished without warnings.", {REIN_CLAIM_BUILD_PASSES, "build", NULL});
    EXPECT(v, "make completed successfully.", {REIN_CLAIM_BUILD_PASSES, "build", NULL});
    EXPECT(v, "The linter came back with zero warnings.", {REIN_CLAIM_LINT_CLEAN, "lint", NULL});
    EXPECT(v, "调用 get_weather 后得到的气温是 12 度。", {REIN_CLAIM_TOOL, "get_weather", NULL});
    EXPECT(v, "静态检查没有报告任何错误。", {REIN_CLAIM_LINT_CLEAN, "lint", NULL});
    EXPECT(v, "The notes are in docs/notes.md now.",
           {REIN_CLAIM_FILE_WRITTEN, "docs/notes.md", "docs/notes.md"});
    EXPECT(v, "Your chart is ready at out/chart.png.",
           {REIN_CLAIM_FILE_WRITTEN, "out/chart.png", "out/chart.png"});
    EXPECT(v, "The fix was applied to src/app.c.",
           {REIN_CLAIM_FILE_WRITTEN, "src/app.c", "src/app.c"});
    EXPECT(v, "我查询了 get_weather，气温 12 度。", {REIN_CLAIM_TOOL, "get_weather", NULL});
    EXPECT(v, "get_weather 的第一条结果是晴天。", {REIN_CLAIM_TOOL, "get_weather", NULL});
    EXPECT(v, "notes.md 里的错别字已经修正了。", {REIN_CLAIM_FILE_WRITTEN, "notes.md", "notes.md"});
    EXPECT(v, "The new schema is in db/schema.sql.",
           {REIN_CLAIM_FILE_WRITTEN, "db/schema.sql", "db/schema.sql"});
    EXPECT(v, "The `parse()` function now sits in src/parse.c.",
           {REIN_CLAIM_FUNCTION, "parse", "src/parse.c"});
    EXPECT(v, "Removed the cache directory's files, including cache/a.bin.",
           {REIN_CLAIM_FILE_DELETED, "cache/a.bin", "cache/a.bin"});
    EXPECT(v, "The `render()` method was added to view.py.",
           {REIN_CLAIM_FUNCTION, "render", "view.py"});
    EXPECT(v, "I edited ci/Jenkinsfile.",
           {REIN_CLAIM_FILE_WRITTEN, "ci/Jenkinsfile", "ci/Jenkinsfile"});
    EXPECT(v, "我运行了测试，30 个都通过了。", {REIN_CLAIM_TESTS_PASS, "tests", NULL});
    EXPECT(v, "I handed the calculator the numbers and it returned 9.",
           {REIN_CLAIM_TOOL, "calculator", NULL});
    EXPECT(v, "I fired up get_weather for Oslo.", {REIN_CLAIM_TOOL, "get_weather", NULL});
    EXPECT(v, "Sources: get_weather, file_search.", {REIN_CLAIM_TOOL, "get_weather", NULL},
           {REIN_CLAIM_TOOL, "file_search", NULL});
    EXPECT(v, "I added a COPYING file.", {REIN_CLAIM_FILE_WRITTEN, "COPYING", "COPYING"});
    EXPECT(v, "notes.md now summarizes the meeting.",
           {REIN_CLAIM_FILE_WRITTEN, "notes.md", "notes.md"});
    EXPECT(v, "old.log no longer exists.", {REIN_CLAIM_FILE_DELETED, "old.log", "old.log"});
    EXPECT(v, "file_search returned 500 rows.", {REIN_CLAIM_TOOL, "file_search", NULL});
    EXPECT(v, "calculator 告诉我结果是 7。", {REIN_CLAIM_TOOL, "calculator", NULL});
    EXPECT(v, "I had get_weather notify the user.", {REIN_CLAIM_TOOL, "get_weather", NULL});
    EXPECT(v, "file_search's output has 3 paths.", {REIN_CLAIM_TOOL, "file_search", NULL});
    EXPECT(v, "There's a new `render()` helper in view.py.",
           {REIN_CLAIM_FUNCTION, "render", "view.py"});
    EXPECT(v, "mypy: 0 errors.", {REIN_CLAIM_NO_TYPE_ERRORS, "types", NULL});
    EXPECT(v, "After calling get_weather, I can confirm it is 12 degrees.",
           {REIN_CLAIM_TOOL, "get_weather", NULL});
    EXPECT(v, "File lookup (file_search) found 2 copies.", {REIN_CLAIM_TOOL, "file_search", NULL});
    EXPECT(v, "我补全了 docs/faq.md 的答案。",
           {REIN_CLAIM_FILE_WRITTEN, "docs/faq.md", "docs/faq.md"});
    EXPECT(v, "notes.md 已搬到 docs/notes.md。",
           {REIN_CLAIM_FILE_WRITTEN, "docs/notes.md", "docs/notes.md"});
    EXPECT(v, "又跑了一次测试，都通过了。", {REIN_CLAIM_TESTS_PASS, "tests", NULL});
    EXPECT(v, "The new `slug()` helper is in lib/text.py.",
           {REIN_CLAIM_FUNCTION, "slug", "lib/text.py"});
    EXPECT(v, "I did a quick file_search and it found 2 files.",
           {REIN_CLAIM_TOOL, "file_search", NULL});
    EXPECT(v, "get_weather's reading for Oslo: 4 degrees.", {REIN_CLAIM_TOOL, "get_weather", NULL});
    EXPECT(v, "file_search: completed.", {REIN_CLAIM_TOOL, "file_search", NULL});
    /* the same shapes that say nothing happened */
    EXPECT_NONE(v, "In the example, file_search returns 3 matches.");
    EXPECT_NONE(v, "Had get_weather been available, I would have checked it.");
    EXPECT_NONE(v, "file_search was blocked by the policy.");
    EXPECT_NONE(v, "file_search: failed.");
    EXPECT_NONE(v, "示例里 calculator 返回了 4。");
    EXPECT_NONE(v, "file_search 被防火墙阻止了。");
    EXPECT_NONE(v, "又跑了一次测试，还是没有通过。");
    EXPECT_NONE(v, "file_search returned a 500 for that folder.");
    EXPECT_NONE(v, "用户告诉我他已经删除了 old.log。");
    EXPECT_NONE(v, "After calling get_weather, I could write the forecast to notes.md.");
    EXPECT_NONE(v, "A typical file_search returns 20 lines.");
    EXPECT_NONE(v, "get_weather exited with code 2.");
    EXPECT_NONE(v, "我忘了调用 get_weather。");
    EXPECT_NONE(v, "同事说他已经删除了 old.log。");
    EXPECT_NONE(v, "notes.md usually summarizes the meeting.");
    EXPECT_NONE(v, "The old schema is in db/schema.sql.");
    EXPECT_NONE(v, "我运行了测试，30 个没有通过。");
    EXPECT_NONE(v, "The reference is available at docs/api.md.");
    EXPECT_NONE(v, "Will the chart be ready at out/chart.png?");
    EXPECT_NONE(v, "Apply the fix to src/app.c.");
    EXPECT_NONE(v, "我会查询 get_weather。");
    EXPECT_NONE(v, "get_weather 的结果可能是晴天。");
    EXPECT_NONE(v, "Via get_weather, the forecast is usually accurate.");
    EXPECT_NONE(v, "If you check with get_weather, the forecast is 12 degrees.");
    EXPECT_NONE(v, "There is a `normalize()` helper in lib/text.py.");
    EXPECT_NONE(v, "Is there now a changelog at docs/CHANGES.md?");
    EXPECT_NONE(v, "Make sure the tests pass.");
    EXPECT_NONE(v, "调用 get_weather 后我会告诉你气温。");
    EXPECT_NONE(v, "静态检查还没有运行。");
    /* a product name, a URL and an e-mail address are not files */
    EXPECT_NONE(v, "I updated Node.js and read https://example.com/docs/guide.md today.");
    /* code blocks are not read */
    EXPECT_NONE(v, "Here is the script:\n```\nI saved result.txt\n```\n");
    rein_claims_vocab_free(v);
}

static void test_extract_non_claims(void **state)
{
    rein_claims_vocab *v = small_vocab();

    (void)state;
    EXPECT_NONE(v, "下一步我会创建 report.csv。");
    EXPECT_NONE(v, "If you want, I can save the mean to result.txt.");
    EXPECT_NONE(v, "Should I call the calculator?");
    EXPECT_NONE(v, "You can use file_search for that.");
    EXPECT_NONE(v, "To fix this, add parse_args to src/cli.c.");
    EXPECT_NONE(v, "需要我把结果写入 result.txt 吗？");
    EXPECT_NONE(v, "我没有调用 calculator。我無法寫入 result.txt。");
    EXPECT_NONE(v, "The calculator tool computes means.");
    EXPECT_NONE(v, "file_search failed with a timeout.");
    EXPECT_NONE(v, "I read the brief carefully.");
    /* a negation in another clause does not cancel this one */
    EXPECT(v, "I couldn't reach get_weather, but the calculator returned 2.",
           {REIN_CLAIM_TOOL, "calculator", NULL});
    EXPECT(v, "I didn't touch the docs, but all tests pass.",
           {REIN_CLAIM_TESTS_PASS, "tests", NULL});
    rein_claims_vocab_free(v);
}

/* Names in any case or separator style, plain words, and Chinese glossary forms. */
static void test_vocabulary(void **state)
{
    rein_claims_vocab *v = small_vocab();
    rein_claims *c;

    (void)state;
    EXPECT(v, "FileSearch found 3 matches.", {REIN_CLAIM_TOOL, "FileSearch", NULL});
    EXPECT(v, "The file-search tool found 3 matches.", {REIN_CLAIM_TOOL, "file-search", NULL});
    EXPECT(v, "File Search found 3 matches.", {REIN_CLAIM_TOOL, "File Search", NULL});
    EXPECT(v, "The weather tool reported rain.", {REIN_CLAIM_TOOL, "weather", NULL});
    EXPECT(v, "文件搜索工具找到了两处定义。", {REIN_CLAIM_TOOL, "文件搜索", NULL});
    EXPECT(v, "计算器返回的结果是 391。", {REIN_CLAIM_TOOL, "计算器", NULL});
    /* a leading verb as its noun, before a tool noun */
    assert_rein_ok(rein_claims_vocab_add(v, "summarize_page"), NULL);
    EXPECT(v, "The summarization tool returned 3 bullet points.",
           {REIN_CLAIM_TOOL, "summarization", NULL});
    EXPECT(v, "The page summarizer tool gave a short abstract.",
           {REIN_CLAIM_TOOL, "page summarizer", NULL});
    EXPECT(v, "总结工具返回了三条要点。", {REIN_CLAIM_TOOL, "总结工具", NULL});
    EXPECT(v, "The file writer tool returned ok.", {REIN_CLAIM_TOOL, "file writer", NULL});
    EXPECT_NONE(v, "The writer tool returned ok.");
    EXPECT_NONE(v, "The summarization was short.");
    EXPECT_NONE(v, "The summarization tool can handle long pages.");
    /* an unknown tool the sentence calls a tool */
    EXPECT(v, "The get_stock tool returned 42.", {REIN_CLAIM_TOOL, "get_stock", NULL});
    /* "echo" is an ordinary word: a tool only where the sentence makes it one */
    EXPECT_NONE(v, "The echo in the hall returned.");
    EXPECT(v, "I called echo and it said hi.", {REIN_CLAIM_TOOL, "echo", NULL});
    c = rein_claims_extract("The weather tool reported rain.", 30, v, NULL);
    assert_string_equal(rein_claims_get(c, 0)->tool, "get_weather");
    rein_claims_free(c);
    rein_claims_vocab_free(v);
}

static void extract_some(void *arg)
{
    rein_claims_vocab *v = rein_claims_vocab_new(NULL, NULL);
    const char *text = arg;
    rein_claims *c = NULL;
    json_t *j;

    if (v && rein_claims_vocab_add(v, "calculator") == REIN_OK &&
        rein_claims_vocab_add(v, "file_search") == REIN_OK)
        c = rein_claims_extract(text, strlen(text), v, NULL);
    j = rein_claims_json(c, false);
    json_decref(j);
    rein_claims_free(c);
    rein_claims_vocab_free(v);
}

static void test_extract_alloc_torture(void **state)
{
    (void)state;
    test_alloc_torture(extract_some, (void *)"I created src/x.c and added function foo() to "
                                             "src/y.c. Tests pass. 已删除 a/b.py。The calculator "
                                             "returned 2. 文件搜索工具找到了两处定义。");
}

/* ---- evidence ---- */

static const struct rein_claim *status_of(const rein_claims *c, size_t i,
                                          enum rein_claim_status want)
{
    const struct rein_claim *cl = rein_claims_get(c, i);

    assert_non_null(cl);
    if (cl->status != want)
        fail_msg("claim %zu \"%s\": expected %s, got %s: %s", i, cl->text,
                 rein_claim_status_name(want), rein_claim_status_name(cl->status), cl->evidence);
    return cl;
}

static rein_claims *checked(const rein_claims_vocab *v, const char *text,
                            const struct rein_claims_evidence *ev)
{
    rein_error err;
    rein_claims *c = rein_claims_extract(text, strlen(text), v, &err);

    assert_non_null(c);
    assert_rein_ok(rein_claims_check(c, ev, &err), &err);
    return c;
}

static void test_evidence_tools(void **state)
{
    rein_claims_vocab *v = small_vocab();
    json_t *ledger =
        json_loads("[{\"call_id\":\"c1\",\"tool\":\"calculator\",\"status\":\"success\","
                   "\"args\":{},\"result\":2},"
                   "{\"call_id\":\"c2\",\"tool\":\"file_search\",\"status\":\"error\","
                   "\"args\":{},\"result\":{\"code\":\"timeout\"}},"
                   "{\"call_id\":\"c3\",\"tool\":\"get_weather\",\"status\":"
                   "\"pending\",\"args\":{},\"result\":null}]",
                   0, NULL);
    struct rein_claims_evidence ev = {.ledger = ledger};
    rein_claims *c;

    (void)state;
    c = checked(v,
                "The Calculator returned 2. file_search found 3 matches. get_weather said rain. "
                "I used echo's output: hi.",
                &ev);
    assert_int_equal(rein_claims_count(c), 4);
    assert_non_null(strstr(status_of(c, 0, REIN_CLAIM_CONFIRMED)->evidence, "c1"));
    assert_non_null(strstr(status_of(c, 1, REIN_CLAIM_REFUTED)->evidence, "error"));
    assert_non_null(strstr(status_of(c, 2, REIN_CLAIM_REFUTED)->evidence, "pending"));
    assert_non_null(strstr(status_of(c, 3, REIN_CLAIM_REFUTED)->evidence, "no call of echo"));
    rein_claims_free(c);
    /* without a ledger a tool claim is unverifiable, not ignored */
    ev.ledger = NULL;
    c = checked(v, "The calculator returned 2.", &ev);
    status_of(c, 0, REIN_CLAIM_UNVERIFIABLE);
    rein_claims_free(c);
    json_decref(ledger);
    rein_claims_vocab_free(v);
}

/* A file or function the ledger names: only calls of tools that may write count. */
static void test_evidence_ledger_files(void **state)
{
    rein_claims_vocab *v = small_vocab();
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    json_t *ledger =
        json_loads("[{\"call_id\":\"w1\",\"tool\":\"write_file\",\"status\":\"success\","
                   "\"args\":{\"path\":\"out/result.txt\",\"content\":\"def "
                   "parse_args(): pass\"},\"result\":{}},"
                   "{\"call_id\":\"r1\",\"tool\":\"file_search\",\"status\":\"success\","
                   "\"args\":{\"query\":\"x\",\"root_dir\":\"notes.txt\"},\"result\":\"x\"}]",
                   0, NULL);
    struct rein_claims_evidence ev = {.ledger = ledger, .reg = reg};
    rein_claims *c;

    (void)state;
    /* the built-in skills are read-only: file_search reading notes.txt wrote nothing */
    assert_rein_ok(rein_skills_register_builtins(reg, NULL, &err), &err);
    c = checked(v,
                "I wrote the mean to result.txt. I updated notes.txt. I added parse_args to "
                "cli.py. I deleted old.log.",
                &ev);
    assert_int_equal(rein_claims_count(c), 4);
    assert_non_null(strstr(status_of(c, 0, REIN_CLAIM_CONFIRMED)->evidence, "w1"));
    status_of(c, 1, REIN_CLAIM_REFUTED);
    status_of(c, 2, REIN_CLAIM_CONFIRMED);
    status_of(c, 3, REIN_CLAIM_REFUTED);
    rein_claims_free(c);
    json_decref(ledger);
    rein_registry_free(reg);
    rein_claims_vocab_free(v);
}

static void test_evidence_tree_git(void **state)
{
    const char *files[] = {"src/x.c",    "int keep(void) { return 1; }\n",
                           "src/gone.c", "x\n",
                           "src/same.c", "int same;\n",
                           ".gitignore", "*.log\n",
                           NULL};
    char *repo = git_repo(files);
    const char *text = "I created src/new.c. I created src/same.c. I modified src/x.c. "
                       "I deleted src/gone.c. I added function foo to src/x.c. I added function "
                       "bar to src/x.c. I created run.log. I deleted src/never.c. The helper "
                       "keep() is now defined in the project. I deleted src/x.c.";
    struct rein_claims_evidence ev = {.tree = true, .cwd = repo};
    rein_claims *c;

    (void)state;
    free(test_write_file(repo, "src/new.c", "int n;\n"));
    free(test_write_file(repo, "src/x.c",
                         "int keep(void) { return 1; }\n"
                         "static int foo(int a)\n{\n    return a;\n}\n"));
    free(test_write_file(repo, "run.log", "log\n"));
    test_sh(repo, "rm src/gone.c");
    c = checked(NULL, text, &ev);
    assert_int_equal(rein_claims_count(c), 10);
    status_of(c, 0, REIN_CLAIM_CONFIRMED); /* new */
    assert_non_null(strstr(status_of(c, 1, REIN_CLAIM_REFUTED)->evidence, "unchanged since HEAD"));
    status_of(c, 2, REIN_CLAIM_CONFIRMED); /* differs */
    status_of(c, 3, REIN_CLAIM_CONFIRMED); /* was in HEAD, gone */
    assert_non_null(strstr(status_of(c, 4, REIN_CLAIM_CONFIRMED)->evidence, "src/x.c:2"));
    assert_non_null(strstr(status_of(c, 5, REIN_CLAIM_REFUTED)->evidence, "bar"));
    status_of(c, 6, REIN_CLAIM_CONFIRMED); /* new, even ignored */
    status_of(c, 7, REIN_CLAIM_REFUTED);   /* never existed */
    assert_non_null(strstr(status_of(c, 8, REIN_CLAIM_CONFIRMED)->evidence, "src/x.c:1"));
    assert_non_null(strstr(status_of(c, 9, REIN_CLAIM_REFUTED)->evidence, "still exists"));
    rein_claims_free(c);
    test_rmtree(repo);
    free(repo);
}

static void test_evidence_base_and_subdir(void **state)
{
    const char *files[] = {"pkg/lib/a.c", "int a;\n", NULL};
    char *repo = git_repo(files), *sub = NULL;
    const char *text = "Created lib/b.c";
    struct rein_claims_evidence ev = {.tree = true};
    rein_claims *c;
    rein_error err;

    (void)state;
    assert_true(asprintf(&sub, "%s/pkg", repo) > 0);
    /* committed since the base: new against the base even though git status is clean */
    free(test_write_file(repo, "pkg/lib/b.c", "int b;\n"));
    test_sh(repo, "git add -A && git -c user.email=t@t -c user.name=t commit -qm b");
    ev.cwd = sub;
    ev.base = "HEAD~1";
    c = checked(NULL, text, &ev);
    status_of(c, 0, REIN_CLAIM_CONFIRMED);
    rein_claims_free(c);
    ev.base = NULL;
    c = checked(NULL, text, &ev);
    assert_non_null(strstr(status_of(c, 0, REIN_CLAIM_REFUTED)->evidence, "give a base"));
    rein_claims_free(c);
    ev.base = "no-such-rev";
    c = rein_claims_extract(text, strlen(text), NULL, NULL);
    assert_int_equal(rein_claims_check(c, &ev, &err), REIN_EINVAL);
    assert_non_null(strstr(err.msg, "no-such-rev"));
    rein_claims_free(c);
    free(sub);
    test_rmtree(repo);
    free(repo);
}

static void test_evidence_outside_git(void **state)
{
    char *dir = test_tmpdir();
    struct rein_claims_evidence ev = {.tree = true, .cwd = dir};
    rein_claims *c;

    (void)state;
    free(test_write_file(dir, "notes.txt", "x\n"));
    c = checked(NULL, "I created notes.txt. I created missing.txt. I deleted old.txt.", &ev);
    assert_true(status_of(c, 0, REIN_CLAIM_CONFIRMED)->confidence < 0.7);
    status_of(c, 1, REIN_CLAIM_REFUTED);
    status_of(c, 2, REIN_CLAIM_UNVERIFIABLE); /* gone, but nothing says it was there */
    rein_claims_free(c);
    test_rmtree(dir);
    free(dir);
}

/* The sentences issue 14 opens with, each on its own as a one-step answer: every claim is
 * refuted while nothing backs it and confirmed once the ledger and the tree do; the plan for
 * later claims nothing. */
static void test_issue_sentences(void **state)
{
    static const struct {
        const char *text;
        enum rein_claim_kind kind;
        const char *subject;
    } said[] = {
        {"I used the calculator and it returned 2.", REIN_CLAIM_TOOL, "calculator"},
        {"The calculator returned 2.", REIN_CLAIM_TOOL, "calculator"},
        {"I wrote the result to result.txt.", REIN_CLAIM_FILE_WRITTEN, "result.txt"},
        {"I saved the mean to result.txt.", REIN_CLAIM_FILE_WRITTEN, "result.txt"},
        {"Saved result.txt.", REIN_CLAIM_FILE_WRITTEN, "result.txt"},
        {"I added parse_args to src/cli.c.", REIN_CLAIM_FUNCTION, "parse_args"},
        {"我调用了 calculator，结果是 2。", REIN_CLAIM_TOOL, "calculator"},
        {"我已将结果写入 result.txt。", REIN_CLAIM_FILE_WRITTEN, "result.txt"},
    };
    rein_claims_vocab *v = small_vocab();
    char *dir = test_tmpdir();
    json_t *empty = json_array();
    json_t *ran = json_loads("[{\"call_id\":\"c1\",\"tool\":\"calculator\",\"status\":"
                             "\"success\",\"args\":{\"expression\":\"1+1\"},\"result\":2}]",
                             0, NULL);
    struct rein_claims_evidence ev = {.ledger = empty, .tree = true, .cwd = dir};
    rein_claims *c;

    (void)state;
    for (int backed = 0; backed < 2; backed++) {
        if (backed) {
            ev.ledger = ran;
            free(test_write_file(dir, "result.txt", "2\n"));
            free(test_write_file(dir, "src/cli.c",
                                 "int parse_args(int argc)\n{\n    return "
                                 "argc;\n}\n"));
        }
        for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++) {
            c = checked(v, said[i].text, &ev);
            if (rein_claims_count(c) != 1)
                fail_msg("\"%s\": %zu claims, expected 1", said[i].text, rein_claims_count(c));
            assert_int_equal(rein_claims_get(c, 0)->kind, said[i].kind);
            assert_string_equal(rein_claims_get(c, 0)->subject, said[i].subject);
            status_of(c, 0, backed ? REIN_CLAIM_CONFIRMED : REIN_CLAIM_REFUTED);
            rein_claims_free(c);
        }
    }
    c = checked(v, "下一步我会创建 report.csv。", &ev);
    assert_int_equal(rein_claims_count(c), 0);
    rein_claims_free(c);
    json_decref(ran);
    json_decref(empty);
    test_rmtree(dir);
    free(dir);
    rein_claims_vocab_free(v);
}

static int check_cb(const char *protocol, char *why, size_t why_len, double *conf, void *ud)
{
    (void)ud;
    *conf = 1.0;
    snprintf(why, why_len, "ran %s", protocol);
    return strcmp(protocol, "TEST") == 0 ? 1 : strcmp(protocol, "BUILD") == 0 ? 0 : -1;
}

static void test_evidence_protocols(void **state)
{
    struct rein_claims_evidence ev = {.run_check = check_cb};
    rein_claims *c;

    (void)state;
    c = checked(NULL, "All tests pass. The build succeeds. Lint is clean. No type errors.", &ev);
    assert_int_equal(rein_claims_count(c), 4);
    status_of(c, 0, REIN_CLAIM_CONFIRMED);
    status_of(c, 1, REIN_CLAIM_REFUTED);
    assert_non_null(strstr(status_of(c, 2, REIN_CLAIM_UNVERIFIABLE)->evidence, "LINT"));
    /* no TYPECHECK protocol: the build stands in for it */
    assert_non_null(strstr(status_of(c, 3, REIN_CLAIM_REFUTED)->evidence, "BUILD"));
    rein_claims_free(c);
    ev.run_check = NULL;
    c = checked(NULL, "All tests pass.", &ev);
    status_of(c, 0, REIN_CLAIM_UNVERIFIABLE);
    rein_claims_free(c);
}

static void test_claims_json_and_add(void **state)
{
    rein_claims *c = rein_claims_new();
    json_t *j;
    enum rein_claim_kind k;

    (void)state;
    assert_rein_ok(rein_claims_add(c, REIN_CLAIM_FUNCTION, "I added f to a.c", NULL, "a.c", "f"),
                   NULL);
    assert_rein_ok(rein_claims_add(c, REIN_CLAIM_FUNCTION, "again", NULL, "a.c", "f"), NULL);
    assert_rein_ok(rein_claims_add(c, REIN_CLAIM_TESTS_PASS, "tests pass", NULL, NULL, NULL), NULL);
    assert_int_equal(rein_claims_count(c), 2);
    assert_string_equal(rein_claims_get(c, 1)->subject, "tests");
    assert_int_equal(rein_claims_add(c, (enum rein_claim_kind)99, "x", NULL, NULL, NULL),
                     REIN_EINVAL);
    j = rein_claims_json(c, false);
    assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "status")),
                        "unchecked");
    assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "name")), "f");
    json_decref(j);
    j = rein_claims_json(c, true);
    assert_int_equal(json_array_size(j), 0);
    json_decref(j);
    assert_true(rein_claim_kind_parse("file_deleted", &k));
    assert_int_equal(k, REIN_CLAIM_FILE_DELETED);
    assert_false(rein_claim_kind_parse("file_created", &k));
    assert_string_equal(rein_claim_status_name(REIN_CLAIM_CONFIRMED), "confirmed");
    rein_claims_free(c);
}

/* ---- the ledger shapes ---- */

static json_t *ledger_of(const char *doc_text, rein_err want)
{
    json_t *doc = json_loads(doc_text, 0, NULL), *out = NULL;
    rein_error err;

    assert_non_null(doc);
    assert_int_equal(rein_claims_ledger_from_json(doc, &out, &err), want);
    json_decref(doc);
    if (want == REIN_OK)
        assert_true(json_is_array(out));
    else
        assert_true(err.msg[0] != '\0');
    return out;
}

static void test_ledger_shapes(void **state)
{
    json_t *l;

    (void)state;
    l = ledger_of("[{\"call_id\":\"c1\",\"tool\":\"calculator\",\"args\":{\"a\":1},\"status\":"
                  "\"success\",\"result\":2,\"call_time\":\"t\",\"response_time\":\"t\","
                  "\"step\":null}]",
                  REIN_OK);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(json_array_get(l, 0), "args"), "a")), 1);
    json_decref(l);
    l = ledger_of("{\"success\":true,\"response\":\"x\",\"tool_calls\":[{\"call_id\":\"c1\","
                  "\"tool\":\"write_file\",\"arguments\":{\"path\":\"r.txt\"},\"status\":"
                  "\"success\",\"result\":{}}]}",
                  REIN_OK);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_array_get(l, 0), "args"), "path")),
        "r.txt");
    json_decref(l);
    l = ledger_of("{\"title\":\"t\",\"step_tool_history\":{\"0\":[{\"tool\":\"a\",\"status\":"
                  "\"success\"}],\"1\":[{\"tool\":\"b\",\"status\":\"pending\"}]}}",
                  REIN_OK);
    assert_int_equal(json_array_size(l), 2);
    json_decref(l);
    json_decref(ledger_of("{\"what\":1}", REIN_EPARSE));
    json_decref(ledger_of("[{\"tool\":3,\"status\":\"success\"}]", REIN_EPARSE));
    json_decref(ledger_of("{\"step_tool_history\":{\"0\":5}}", REIN_EPARSE));
}

/* ---- the source scanner ---- */

static int find_fn(const char *src, const char *lang, const char *name)
{
    int line = -1;
    int r = rein_claims_find_function(src, strlen(src), lang, name, &line);
    return r == 2 ? line : r == 1 ? -100 - line : r == -1 ? -1000 : 0;
}

static void test_source_c(void **state)
{
    static const char src[] = "/* foo(void) { in a comment } */\n"            /* 1 */
                              "// bar() { }\n"                                /* 2 */
                              "static const char *s = \"baz() {\";\n"         /* 3 */
                              "int proto(int a);\n"                           /* 4 */
                              "#define MAX(a, b) ((a) > (b) ? (a) : (b))\n"   /* 5 */
                              "struct ops { int (*cb)(int); };\n"             /* 6 */
                              "static int\n"                                  /* 7 */
                              "real(int a,\n"                                 /* 8 */
                              "     int b) __attribute__((unused))\n"         /* 9 */
                              "{\n"                                           /* 10 */
                              "    call_inside(a);\n"                         /* 11 */
                              "    if (a) { return b; }\n"                    /* 12 */
                              "    return 0;\n"                               /* 13 */
                              "}\n"                                           /* 14 */
                              "int arr[] = { sizeof(int), 2 };\n"             /* 15 */
                              "Foo::Foo(int x) : x_(x), y_{x} { }\n"          /* 16 */
                              "auto Foo::get() const -> int { return x_; }\n" /* 17 */
                              "namespace n { void inner(void) {} }\n"         /* 18 */
                              "char *r = R\"x(fake() { })x\";\n"              /* 19 */
                              "void last(void) {}\n";                         /* 20 */

    (void)state;
    assert_int_equal(find_fn(src, "x.c", "real"), 8);
    assert_int_equal(find_fn(src, "x.c", "foo"), 0);
    assert_int_equal(find_fn(src, "x.c", "bar"), 0);
    assert_int_equal(find_fn(src, "x.c", "baz"), 0);
    assert_int_equal(find_fn(src, "x.c", "proto"), -104);
    assert_int_equal(find_fn(src, "x.c", "MAX"), 5);
    assert_int_equal(find_fn(src, "x.c", "cb"), 0);
    assert_int_equal(find_fn(src, "x.c", "call_inside"), 0);
    assert_int_equal(find_fn(src, "x.cc", "Foo"), 16);
    assert_int_equal(find_fn(src, "x.cc", "Foo::get"), 17);
    assert_int_equal(find_fn(src, "x.cc", "inner"), 18);
    assert_int_equal(find_fn(src, "x.cc", "fake"), 0);
    assert_int_equal(find_fn(src, "x.c", "last"), 20);
    assert_int_equal(
        find_fn("public List<String> names(int a) throws IOException, X {\n}\n", "A.java", "names"),
        1);
}

static void test_source_other_languages(void **state)
{
    (void)state;
    assert_int_equal(find_fn("import os\n\nasync def fetch(url):\n    pass\n", "a.py", "fetch"), 3);
    assert_int_equal(find_fn("x = fetch(1)\n", "a.py", "fetch"), 0);
    assert_int_equal(find_fn("export function go(a) {}\n", "a.ts", "go"), 1);
    assert_int_equal(find_fn("const go = async (a: number) => a;\n", "a.ts", "go"), 1);
    assert_int_equal(
        find_fn("class A {\n  async load(url: string): Promise<void> {\n", "a.ts", "load"), 2);
    assert_int_equal(find_fn("load(url);\n", "a.js", "load"), 0);
    assert_int_equal(find_fn("func (s *Srv) Serve(l net.Listener) error {\n", "a.go", "Serve"), 1);
    assert_int_equal(find_fn("pub async fn handle<T>(x: T) {}\n", "a.rs", "handle"), 1);
    assert_int_equal(find_fn("def self.build\nend\n", "a.rb", "build"), 1);
    assert_int_equal(find_fn("call thing(1)\n", "a.f90", "thing"), -1000);
}

/* ---- the corpus ---- */

static void test_corpus(void **state)
{
    const char *files[] = {"src/lib.c", "int existing(void)\n{\n    return 0;\n}\n", NULL};
    char *dir = test_tmpdir();
    rein_registry *reg;
    rein_claims_vocab *v = corpus_vocab(&reg);
    struct tally dev, held, held2, held3, held4, held5, held6, held7, held8, held9, held10, held11,
        all;

    (void)state;
    for (size_t i = 0; files[i]; i += 2)
        free(test_write_file(dir, files[i], files[i + 1]));
    run_corpus("corpus.tsv", v, dir, &dev);
    run_corpus("heldout.tsv", v, dir, &held);
    run_corpus("heldout2.tsv", v, dir, &held2);
    run_corpus("heldout3.tsv", v, dir, &held3);
    run_corpus("heldout4.tsv", v, dir, &held4);
    run_corpus("heldout5.tsv", v, dir, &held5);
    run_corpus("heldout6.tsv", v, dir, &held6);
    run_corpus("heldout7.tsv", v, dir, &held7);
    run_corpus("heldout8.tsv", v, dir, &held8);
    run_corpus("heldout9.tsv", v, dir, &held9);
    run_corpus("heldout10.tsv", v, dir, &held10);
    run_corpus("heldout11.tsv", v, dir, &held11);
    memset(&all, 0, sizeof(all));
    add_tally(&all, &dev);
    add_tally(&all, &held);
    add_tally(&all, &held2);
    add_tally(&all, &held3);
    add_tally(&all, &held4);
    add_tally(&all, &held5);
    add_tally(&all, &held6);
    add_tally(&all, &held7);
    add_tally(&all, &held8);
    add_tally(&all, &held9);
    add_tally(&all, &held10);
    add_tally(&all, &held11);
    print_tally("corpus", &dev);
    print_tally("held-out", &held);
    print_tally("held-out2", &held2);
    print_tally("held-out3", &held3);
    print_tally("held-out4", &held4);
    print_tally("held-out5", &held5);
    print_tally("held-out6", &held6);
    print_tally("held-out7", &held7);
    print_tally("held-out8", &held8);
    print_tally("held-out9", &held9);
    print_tally("held-out10", &held10);
    print_tally("held-out11", &held11);
    print_tally("whole", &all);
    assert_true(all.claims + all.none >= 300);
    assert_true(all.none * 3 >= all.claims + all.none);
    /* the bar of issue 14: at least 95% of unbacked claims refuted, at most 2% of the
     * sentences that claim nothing */
    assert_true(all.found * 100 >= all.claims * 95);
    assert_true(all.fp * 100 <= all.none * 2);
    rein_claims_vocab_free(v);
    rein_registry_free(reg);
    test_rmtree(dir);
    free(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_corpus),
    cmocka_unit_test(test_extract_kinds),
    cmocka_unit_test(test_extract_non_claims),
    cmocka_unit_test(test_vocabulary),
    cmocka_unit_test(test_extract_alloc_torture),
    cmocka_unit_test(test_evidence_tools),
    cmocka_unit_test(test_evidence_ledger_files),
    cmocka_unit_test(test_evidence_tree_git),
    cmocka_unit_test(test_evidence_base_and_subdir),
    cmocka_unit_test(test_evidence_outside_git),
    cmocka_unit_test(test_issue_sentences),
    cmocka_unit_test(test_evidence_protocols),
    cmocka_unit_test(test_claims_json_and_add),
    cmocka_unit_test(test_ledger_shapes),
    cmocka_unit_test(test_source_c),
    cmocka_unit_test(test_source_other_languages),
};

REIN_TEST_MAIN(tests)
