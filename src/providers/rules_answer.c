/*
 * The rules provider's answers (rules_int.h): each tool result worded for a person in the
 * request's language (English, Simplified or Traditional Chinese), never a JSON dump:
 *
 *   echo            the text
 *   file_search     how many matches in how many files, then file:line: text, and whether
 *                   the list was cut at the limit
 *   calculator      the value with its operation ("The mean of 1, 2, 3 is 2.", "2*3 = 6")
 *   log_transform   the lines read and parsed, the counts by level, the first error lines
 *                   (or the first matching ones when a level or text was asked for), and
 *                   whether the records were cut at the limit
 *   other tools     their text, or their output's members one per line
 *
 * A failed call says what failed and why; a request that did not route says what rein can do
 * without a model and how to configure one.
 */
#include "rules_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MATCHES_SHOWN 10
#define LINES_SHOWN   5
#define VALUES_SHOWN  12
#define TEXT_MAX      2000

static void addn(struct rein__text *t, const char *p, size_t n)
{
    rein_err rc = rein_buf_add(&t->b, p, n);

    if (rc && !t->rc)
        t->rc = rc;
}

static void adds(struct rein__text *t, const char *s)
{
    addn(t, s, strlen(s));
}

static void addf(struct rein__text *t, const char *fmt, ...) REIN_PRINTF(2, 3);
static void addf(struct rein__text *t, const char *fmt, ...)
{
    va_list ap;
    rein_err rc;

    va_start(ap, fmt);
    rc = rein_buf_addvf(&t->b, fmt, ap);
    va_end(ap);
    if (rc && !t->rc)
        t->rc = rc;
}

/* A scalar as a person reads it: numbers in their shortest form, strings as they are. */
static void add_scalar(struct rein__text *t, const json_t *v)
{
    char *s;

    if (json_is_string(v)) {
        size_t n = json_string_length(v);
        addn(t, json_string_value(v), n > TEXT_MAX ? TEXT_MAX : n);
        if (n > TEXT_MAX)
            adds(t, " …");
        return;
    }
    s = rein_json_dumps(v);
    if (!s)
        return;
    addn(t, s, strlen(s) > TEXT_MAX ? TEXT_MAX : strlen(s));
    rein_free(s);
}

/* The wording of the request's language (a macro, so printf formats stay literals the
 * compiler checks). */
#define L(lang, en, hans, hant)                                                                    \
    ((lang) == REIN__LANG_HANT ? (hant) : (lang) == REIN__LANG_HANS ? (hans) : (en))

/* ---- file_search ---- */

static void render_search(struct rein__text *t, const json_t *out, enum rein__lang lang)
{
    const json_t *matches = json_object_get(out, "matches"), *m;
    const char *query = rein__json_str(out, "query"), *last = NULL;
    json_int_t count = json_integer_value(json_object_get(out, "count"));
    json_int_t scanned = json_integer_value(json_object_get(out, "files_scanned"));
    size_t i, files = 0;

    json_array_foreach(matches, i, m)
    {
        const char *f = rein__json_str(m, "file");
        if (!last || strcmp(last, f) != 0)
            files++;
        last = f;
    }
    if (json_array_size(matches) == 0) {
        addf(t,
             L(lang, "No matches for \"%s\" (%lld files searched).",
               "没有找到包含“%s”的内容（搜索了 %lld 个文件）。",
               "沒有找到包含「%s」的內容（搜尋了 %lld 個檔案）。"),
             query, (long long)scanned);
        return;
    }
    if (lang == REIN__LANG_EN)
        addf(t, "%lld match%s for \"%s\" in %zu file%s:", (long long)count, count == 1 ? "" : "es",
             query, files, files == 1 ? "" : "s");
    else
        addf(t,
             lang == REIN__LANG_HANT ? "找到 %lld 處包含「%s」的內容（%zu 個檔案）："
                                     : "找到 %lld 处包含“%s”的内容（%zu 个文件）：",
             (long long)count, query, files);
    json_array_foreach(matches, i, m)
    {
        if (i == MATCHES_SHOWN) {
            addf(t, L(lang, "\n  … and %zu more", "\n  …… 另有 %zu 处", "\n  …… 另有 %zu 處"),
                 json_array_size(matches) - i);
            break;
        }
        addf(t, "\n  %s:%lld: %s", rein__json_str(m, "file"),
             (long long)json_integer_value(json_object_get(m, "line")), rein__json_str(m, "text"));
    }
    if (json_is_true(json_object_get(out, "truncated")))
        addf(t,
             L(lang, "\nThe search stopped at the limit of %lld matches; there may be more.",
               "\n搜索在 %lld 处的上限停止，可能还有更多。",
               "\n搜尋在 %lld 處的上限停止，可能還有更多。"),
             (long long)count);
}

/* ---- calculator ---- */

static const char *op_name(const char *op, enum rein__lang lang)
{
    static const struct {
        const char *op, *en, *hans, *hant;
    } names[] = {
        {"mean", "mean", "平均值", "平均值"},
        {"sum", "sum", "总和", "總和"},
        {"min", "minimum", "最小值", "最小值"},
        {"max", "maximum", "最大值", "最大值"},
        {"median", "median", "中位数", "中位數"},
        {"stdev", "sample standard deviation", "样本标准差", "樣本標準差"},
        {"product", "product", "乘积", "乘積"},
        {"count", "count", "个数", "個數"},
    };
    for (size_t i = 0; i < REIN_ARRAY_SIZE(names); i++) {
        if (strcmp(names[i].op, op) == 0)
            return L(lang, names[i].en, names[i].hans, names[i].hant);
    }
    return op;
}

static void add_values(struct rein__text *t, const json_t *values)
{
    const json_t *v;
    size_t i;

    json_array_foreach(values, i, v)
    {
        if (i == VALUES_SHOWN) {
            addf(t, ", … (%zu values)", json_array_size(values));
            break;
        }
        if (i)
            adds(t, ", ");
        add_scalar(t, v);
    }
}

static void render_calc(struct rein__text *t, const json_t *out, const json_t *args,
                        enum rein__lang lang)
{
    const json_t *res = json_object_get(out, "result");
    const char *op = json_string_value(json_object_get(out, "op"));
    const json_t *values = json_object_get(args, "values");

    if (!op) {
        adds(t, rein__json_str(out, "expression"));
        adds(t, " = ");
        add_scalar(t, res);
        return;
    }
    if (lang == REIN__LANG_EN) {
        addf(t, "The %s of ", op_name(op, lang));
        if (json_array_size(values))
            add_values(t, values);
        else
            addf(t, "%lld values", (long long)json_integer_value(json_object_get(out, "count")));
        adds(t, " is ");
        add_scalar(t, res);
        adds(t, ".");
        return;
    }
    add_values(t, values);
    addf(t, " 的%s是 ", op_name(op, lang));
    add_scalar(t, res);
    adds(t, "。");
}

/* ---- log_transform ---- */

static const char *const level_order[] = {"fatal", "error", "warn",   "info",
                                          "debug", "trace", "unknown"};

static void render_log(struct rein__text *t, const json_t *out, const json_t *args,
                       enum rein__lang lang)
{
    const json_t *counts = json_object_get(out, "counts"),
                 *by = json_object_get(counts, "by_level");
    const json_t *records = json_object_get(out, "records"), *r;
    json_int_t lines = json_integer_value(json_object_get(counts, "lines"));
    json_int_t parsed = json_integer_value(json_object_get(counts, "parsed"));
    json_int_t bad = json_integer_value(json_object_get(counts, "unparsable"));
    json_int_t matched = json_integer_value(json_object_get(counts, "matched"));
    bool filtered = json_object_get(args, "level") || json_object_get(args, "match");
    size_t i, shown = 0, listed = 0;

    addf(t,
         L(lang, "%s: %lld lines, %lld parsed", "%s：共 %lld 行，解析 %lld 行",
           "%s：共 %lld 行，解析 %lld 行"),
         rein__json_str(out, "source"), (long long)lines, (long long)parsed);
    if (bad)
        addf(t,
             L(lang, " (%lld in no format I know)", "（%lld 行格式无法识别）",
               "（%lld 行格式無法識別）"),
             (long long)bad);
    adds(t, L(lang, ".", "。", "。"));
    if (filtered)
        addf(t,
             L(lang, " %lld match what you asked for.", "符合条件的有 %lld 条。",
               "符合條件的有 %lld 筆。"),
             (long long)matched);
    if (json_object_size(by) > 0) {
        adds(t, L(lang, " By level: ", "按级别：", "依等級："));
        for (size_t k = 0; k < REIN_ARRAY_SIZE(level_order); k++) {
            const json_t *c = json_object_get(by, level_order[k]);
            if (!c)
                continue;
            addf(t, "%s%s %lld", listed++ ? L(lang, ", ", "，", "，") : "", level_order[k],
                 (long long)json_integer_value(c));
        }
        adds(t, L(lang, ".", "。", "。"));
    }
    /* the lines a person wants first: the errors, or what was asked for */
    json_array_foreach(records, i, r)
    {
        const char *level = json_string_value(json_object_get(r, "level"));
        bool severe = level && (strcmp(level, "error") == 0 || strcmp(level, "fatal") == 0);
        const json_t *msg = json_object_get(r, "message");
        if (!filtered && !severe)
            continue;
        if (shown == LINES_SHOWN)
            break;
        if (shown++ == 0)
            adds(t, filtered ? L(lang, "\nFirst matching lines:", "\n前几条符合的记录：",
                                 "\n前幾筆符合的記錄：")
                             : L(lang, "\nFirst errors:", "\n前几条错误：", "\n前幾筆錯誤："));
        addf(t, L(lang, "\n  line %lld", "\n  第 %lld 行", "\n  第 %lld 行"),
             (long long)json_integer_value(json_object_get(r, "line")));
        if (level)
            addf(t, " [%s]", level);
        adds(t, L(lang, ": ", "：", "："));
        add_scalar(t, msg ? msg : json_object_get(r, "fields"));
    }
    if (!filtered && shown == 0 && parsed > 0)
        adds(t, L(lang, "\nNo errors.", "\n没有错误。", "\n沒有錯誤。"));
    if (json_is_true(json_object_get(out, "truncated")))
        addf(t,
             L(lang, "\nOnly the first %zu of %lld records were returned (the limit).",
               "\n只返回了前 %zu 条（共 %lld 条，达到上限）。",
               "\n只返回了前 %zu 筆（共 %lld 筆，達到上限）。"),
             json_array_size(records), (long long)matched);
}

/* ---- other tools ---- */

static void render_other(struct rein__text *t, const json_t *out)
{
    static const char *const text_keys[] = {"text", "message", "result", "answer", "summary"};
    const char *key;
    json_t *v;
    size_t lines = 0;

    if (!json_is_object(out)) {
        add_scalar(t, out);
        return;
    }
    for (size_t i = 0; i < REIN_ARRAY_SIZE(text_keys); i++) {
        v = json_object_get(out, text_keys[i]);
        if (v && !json_is_object(v) && !json_is_array(v) && json_object_size(out) <= 2) {
            add_scalar(t, v);
            return;
        }
    }
    json_object_foreach((json_t *)out, key, v)
    {
        addf(t, "%s%s: ", lines++ ? "\n" : "", key);
        add_scalar(t, v);
    }
}

/* One result in words. */
static void render(struct rein__text *t, const json_t *r, enum rein__lang lang)
{
    const char *tool = rein__json_str(r, "tool");
    const json_t *content = json_object_get(r, "content"), *args = json_object_get(r, "arguments");
    const json_t *out = json_object_get(content, "output");

    if (json_is_string(content)) {
        add_scalar(t, content);
        return;
    }
    if (!json_is_true(json_object_get(content, "ok"))) {
        const json_t *e = json_object_get(content, "error");
        const char *msg = json_is_string(e) ? json_string_value(e) : rein__json_str(e, "message");
        if (json_is_string(json_object_get(content, "status")))
            addf(t,
                 L(lang, "%s: proposed, not run.", "%s：已提议，尚未执行。",
                   "%s：已提議，尚未執行。"),
                 tool);
        else
            addf(t, L(lang, "%s failed: %s", "%s 执行失败：%s", "%s 執行失敗：%s"), tool,
                 msg[0] ? msg : rein__json_str(content, "message"));
        return;
    }
    if (strcmp(tool, "echo") == 0 && json_is_string(out))
        addn(t, json_string_value(out), json_string_length(out)); /* all of it */
    else if (strcmp(tool, "file_search") == 0 && json_object_get(out, "matches"))
        render_search(t, out, lang);
    else if (strcmp(tool, "calculator") == 0 && json_object_get(out, "result"))
        render_calc(t, out, args, lang);
    else if (strcmp(tool, "log_transform") == 0 && json_object_get(out, "counts"))
        render_log(t, out, args, lang);
    else
        render_other(t, out ? out : content);
}

void rein__rules_compose(const struct rein__rules_state *st, struct rein__text *t)
{
    size_t n = json_array_size(st->results), i;
    json_t *r;

    json_array_foreach(st->results, i, r)
    {
        if (n > 1)
            addf(t, "%s%zu. ", i ? "\n" : "", i + 1);
        render(t, r, st->lang);
    }
}

/* ---- what rein can do offline ---- */

void rein__rules_skipped(const struct rein__rules_state *st, const struct rein__route_plan *plan,
                         struct rein__text *t)
{
    enum rein__lang lang = st->lang;

    for (size_t i = 0; i < plan->nskipped; i++)
        addf(t,
             L(lang, "\nNot done: \"%s\". Without a model I cannot read that step.",
               "\n未完成：“%s”。没有配置模型时，我读不懂这一步。",
               "\n未完成：「%s」。沒有設定模型時，我讀不懂這一步。"),
             plan->skipped[i]);
    if (plan->nskipped > 0)
        adds(t, L(lang,
                  " A model can do it: set REIN_PROVIDER and REIN_MODEL (and its API key), or "
                  "pass --provider and --model.",
                  "配置模型后可以完成：设置 REIN_PROVIDER 和 REIN_MODEL（以及 API 密钥），或使用 "
                  "--provider 和 --model 参数。",
                  "設定模型後可以完成：設定 REIN_PROVIDER 和 REIN_MODEL（以及 API 金鑰），或使用 "
                  "--provider 和 --model 參數。"));
}

void rein__rules_unroutable(const rein_model_request *req, const struct rein__rules_state *st,
                            struct rein__text *t)
{
    static const struct {
        const char *tool, *en, *hans, *hant;
    } skills[] = {
        {"echo", "repeat text: echo hello world", "回显文字：回显 你好", "回顯文字：回顯 你好"},
        {"file_search", "search files: search the docs for calculator",
         "搜索文件：搜索包含 'calculator' 的文件", "搜尋檔案：搜尋包含 'calculator' 的檔案"},
        {"calculator", "calculate: what is 2*(3+4)/5? or the average of 3, 4 and 8",
         "计算：计算 2*(3+4)/5，或 3, 4, 8 的平均值是多少",
         "計算：計算 2*(3+4)/5，或 3, 4, 8 的平均值是多少"},
        {"log_transform", "read a log: show error lines in app.log",
         "分析日志：帮我分析一下 app.log", "分析日誌：幫我分析一下 app.log"},
    };
    enum rein__lang lang = st->lang;
    size_t listed = 0;

    addf(t,
         L(lang, "Without a model I could not tell what to do with \"%s\".",
           "没有配置模型时，我不知道如何处理“%s”。", "沒有設定模型時，我不知道如何處理「%s」。"),
         st->message);
    for (size_t i = 0; req->reg && i < req->ntools; i++) {
        const rein_tool *tool = rein_registry_get(req->reg, req->tools[i].name);
        const char *id = tool ? rein_tool_id(tool) : NULL;
        const json_t *ex = json_array_get(json_object_get(rein_tool_manifest(tool), "examples"), 0);
        const char *line = NULL;
        for (size_t k = 0; id && k < REIN_ARRAY_SIZE(skills); k++) {
            if (strcmp(skills[k].tool, id) == 0)
                line = L(lang, skills[k].en, skills[k].hans, skills[k].hant);
        }
        if (!line && ex)
            line = rein__json_str(ex, "text");
        if (!line && id && rein_tool_route_count(tool) > 0)
            line = "";
        if (!line)
            continue;
        if (listed++ == 0)
            adds(t, L(lang, " Offline I can:", "不用模型，我可以：", "不用模型，我可以："));
        if (rein__router_knows(id))
            addf(t, "\n  - %s (%s)", line, id);
        else
            addf(t, "\n  - %s%s%s", id, line[0] ? ": " : "", line);
    }
    adds(t, L(lang,
              "\nTo let a model answer anything, configure a provider: set REIN_PROVIDER and "
              "REIN_MODEL (and the provider's API key, e.g. OPENAI_API_KEY, ANTHROPIC_API_KEY "
              "or DASHSCOPE_API_KEY), or pass --provider and --model.",
              "\n要让模型回答任何问题，请配置模型提供方：设置 REIN_PROVIDER 和 REIN_MODEL（以及该"
              "提供方的 API 密钥，例如 OPENAI_API_KEY、ANTHROPIC_API_KEY 或 DASHSCOPE_API_KEY），"
              "或使用 --provider 和 --model 参数。",
              "\n要讓模型回答任何問題，請設定模型提供者：設定 REIN_PROVIDER 和 REIN_MODEL（以及該"
              "提供者的 API 金鑰，例如 OPENAI_API_KEY、ANTHROPIC_API_KEY 或 DASHSCOPE_API_KEY），"
              "或使用 --provider 和 --model 參數。"));
}
