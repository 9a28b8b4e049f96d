/*
 * The rows of the rules router (router_int.h): how people ask the built-in skills for
 * something, per skill and language. A row is a pattern over a polished part of a request
 * (caseless; politeness and trailing punctuation already gone) and the extractor that turns
 * its named groups into arguments. Rows are tried in table order and the first whose pattern
 * matches and whose extractor accepts the arguments wins, so the order says which reading is
 * preferred when two could apply (a log file before a search, a statistic before a search,
 * a bare expression last). To teach the router a new way of asking, add a row.
 */
#include "router_int.h"

#include <ctype.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

/* ---- extractors ---- */

/* The original text of norm[b, e): what the user typed, full-width forms and all. */
static char *original(const struct rein__rtext *t, size_t b, size_t e)
{
    return rein_strndup(t->orig + t->map[b], t->map[e] - t->map[b]);
}

static bool x_echo(const struct rein__match *m, const rein_tool *tool, struct rein__route_plan *out)
{
    const struct rein__part *p = m->part;
    size_t b, e, len;
    char *text;

    if (!rein__group(m, "text", &b, &e))
        return false;
    /* what was typed, with its punctuation, unless the request was a question to us */
    if (e == p->e && !p->question)
        e = p->raw_e;
    /* a quoted text loses its quotes, whichever kind they were ("", “”, 「」) */
    bool quoted = e - b >= 2 && strchr("\"'", p->t->norm[b]) &&
                  p->t->norm[e - 1] == p->t->norm[b] &&
                  !memchr(p->t->norm + b + 1, p->t->norm[b], e - b - 2);
    if (quoted) {
        b++;
        e--;
    }
    text = original(p->t, b, e);
    if (!text)
        return false;
    len = strlen(text);
    while (!quoted && len && isspace((unsigned char)text[len - 1]))
        text[--len] = '\0';
    bool ok = text[0] && rein__plan_add(out, tool, json_pack("{s:s}", "text", text));
    rein_free(text);
    return ok;
}

static const char *const not_local[] = {
    "web",        "internet", "online", "google", "bing",    "news",   "weather", "forecast",
    "restaurant", "hotel",    "flight", "ticket", "near me", "nearby", "recipe",  "lyrics",
    "movie",      "song",     "joke",   "poem",   "story",   "网上",   "網上",    "网络",
    "網路",       "百度",     "谷歌",   "天气",   "天氣",    "新闻",   "新聞",    "航班",
    "机票",       "機票",     "酒店",   "餐厅",   "餐廳",    "附近",   "笑话",    "笑話",
    "翻译",       "翻譯",     "故事",   "电影",   "電影",
};

static bool mentions_outside(const char *s)
{
    for (size_t i = 0; i < REIN_ARRAY_SIZE(not_local); i++) {
        if (strcasestr(s, not_local[i]))
            return true;
    }
    return false;
}

/* A folder named where ("the docs folder", "src/", "./data/docs"); NULL when where is just a
 * word for "the files" (the docs, the repo), and false when it is neither. */
static bool folder_of(const char *where, char **dir)
{
    char *w = rein__args_trim(rein_strdup(where)), *end;
    static const char *const places[] = {
        "the docs",     "docs",      "the documents", "documents",      "the documentation",
        "the files",    "files",     "the repo",      "the repository", "the project",
        "the codebase", "the code",  "my notes",      "the notes",      "notes",
        "everything",   "all files", "all the files", "文件",           "文档",
        "文檔",         "檔案",      "所有文件",      "全部文件",       "所有的文件",
        "全部的文件",   "所有檔案",  "所有的檔案",    "所有文档",       "所有的文档",
        "项目",         "項目",      "代码",          "代碼",
    };

    *dir = NULL;
    if (!w)
        return false;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(places); i++) {
        if (strcasecmp(w, places[i]) == 0) {
            rein_free(w);
            return true;
        }
    }
    for (const char *suffix = NULL, *const *s = (const char *const[]){" folder", " directory",
                                                                      " dir", " subfolder", NULL};
         *s; s++) {
        size_t l = strlen(*s), n = strlen(w);
        (void)suffix;
        if (n > l && strcasecmp(w + n - l, *s) == 0) {
            w[n - l] = '\0';
            if (strncasecmp(w, "the ", 4) == 0)
                memmove(w, w + 4, strlen(w + 4) + 1);
            *dir = w;
            return !strchr(w, ' ');
        }
    }
    end = w + strlen(w);
    if (strchr(w, '/') && !strchr(w, ' ') && end > w) {
        *dir = w;
        return true;
    }
    rein_free(w);
    return false;
}

static bool x_search(const struct rein__match *m, const rein_tool *tool,
                     struct rein__route_plan *out)
{
    const struct rein__part *p = m->part;
    char *whole = rein_strndup(p->t->norm + p->b, p->e - p->b);
    char *q = rein__group_dup(m, "q"), *where = rein__group_dup(m, "where");
    char *quoted = NULL, *dir = NULL, *qdir = NULL, *term = NULL, *wdir = NULL;
    long limit = 0;
    bool ok = false;
    json_t *args;

    if (!whole || !q)
        goto out;
    rein__args_modifiers(whole, &limit, &dir, &quoted);
    long qlimit = 0;
    rein__args_modifiers(q, &qlimit, &qdir, NULL);
    size_t db, de;
    if (where && rein__group(m, "dirword", &db, &de)) {
        wdir = rein__args_trim(rein_strdup(where));
    } else if (where && !folder_of(where, &wdir)) {
        goto out;
    }
    term = quoted ? rein_strdup(quoted) : rein__args_search_term(q);
    if (!term || mentions_outside(term))
        goto out;
    args = json_pack("{s:s}", "query", term);
    if (args && (wdir || dir))
        json_object_set_new(args, "root_dir", json_string(wdir ? wdir : dir));
    if (args && limit > 0 && limit <= 1000)
        json_object_set_new(args, "limit", json_integer(limit));
    ok = rein__plan_add(out, tool, args);
out:
    rein_free(whole);
    rein_free(q);
    rein_free(where);
    rein_free(quoted);
    rein_free(dir);
    rein_free(qdir);
    rein_free(wdir);
    rein_free(term);
    return ok;
}

/* One call per statistic named ("the mean, max and min of …"), over the same numbers. */
static bool stats(const rein_tool *tool, const char *ops, const char *vals,
                  struct rein__route_plan *out)
{
    static const char *const joins[] = {",",  "、", "&",    "and ", "plus ", "the ", "和",
                                        "与", "與", "以及", "及",   "跟",    " ",    NULL};
    json_t *values = rein__args_numbers(vals);
    const char *p = ops;
    bool ok = values != NULL;

    while (ok && *p) {
        size_t n;
        const char *op = rein__args_statistic_at(p, &n);
        /* "和" between two statistics joins them; at the end it is the sum */
        size_t next;
        if (op && strncmp(p, "和", 3) == 0 && n == 3 && rein__args_statistic_at(p + 3, &next))
            op = NULL;
        if (!op) {
            bool skipped = false;
            for (const char *const *j = joins; *j && !skipped; j++) {
                if (strncasecmp(p, *j, strlen(*j)) == 0) {
                    p += strlen(*j);
                    skipped = true;
                }
            }
            ok = skipped;
            continue;
        }
        ok = rein__plan_add(out, tool, json_pack("{s:s, s:O}", "op", op, "values", values));
        p += n;
    }
    json_decref(values);
    return ok && out->n > 0;
}

static bool x_stats(const struct rein__match *m, const rein_tool *tool,
                    struct rein__route_plan *out)
{
    char *ops = rein__group_dup(m, "ops"), *vals = rein__group_dup(m, "vals");
    bool ok = ops && vals && stats(tool, ops, vals, out);

    rein_free(ops);
    rein_free(vals);
    return ok;
}

static bool x_sum(const struct rein__match *m, const rein_tool *tool, struct rein__route_plan *out)
{
    char *vals = rein__group_dup(m, "vals");
    bool ok = vals && stats(tool, "sum", vals, out);

    rein_free(vals);
    return ok;
}

static bool x_expr(const struct rein__match *m, const rein_tool *tool, struct rein__route_plan *out)
{
    char *text = rein__group_dup(m, "expr");
    char *expr = text ? rein__args_expression(text) : NULL;
    bool ok = expr && rein__plan_add(out, tool, json_pack("{s:s}", "expression", expr));

    rein_free(text);
    rein_free(expr);
    return ok;
}

static bool x_log_text(const struct rein__match *m, const rein_tool *tool,
                       struct rein__route_plan *out)
{
    size_t b, e;
    char *text;
    bool ok;

    if (!rein__group(m, "text", &b, &e))
        return false;
    text = original(m->part->t, b, m->part->raw_e > e ? m->part->raw_e : e);
    ok = text && rein__plan_add(out, tool, json_pack("{s:s}", "text", text));
    rein_free(text);
    return ok;
}

/* Words that show a request is about a log's content, not something else that names a file. */
static const char log_cues[] =
    "\\b(?:analy[sz]|pars|summari[sz]|inspect|check|review|read|scan|look|go\\s+through|"
    "examin|process|digest|tail|show|list|find|get|give|count|what|any|how\\s+many|"
    "are\\s+there|errors?|warn|fatal|crash|fail|problem|issue|level|lines?|entries|search|grep|"
    "filter|explain)|分析|解析|查看|看看|看一下|检查|檢查|统计|統計|汇总|彙總|总结|總結|"
    "读取|讀取|过滤|過濾|筛选|篩選|找|列出|显示|顯示|有哪些|有什么|有什麼|有没有|有沒有|错误|"
    "錯誤|警告|日志|日誌|多少|处理|處理|看|查";
/* The text a request wants matched in the lines: "containing X", "for X", "包含 X 的". */
static const char log_match[] =
    "(?:\\b(?:matching|containing|mentioning|about|with\\s+the\\s+word|that\\s+(?:contain|"
    "mention)s?|for)\\s+(?:(?:anything|everything|something|lines?|entries|mentions?)\\s+"
    "(?:about|on|with|containing|mentioning|of)\\s+|the\\s+word\\s+)?(?<m>[^\\s,]+)|"
    "包含\\s*(?<m2>[^\\s,的]+))";

static pcre2_code *cue_re, *match_re;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void log_compile(void)
{
    cue_re = rein__router_compile(log_cues);
    match_re = rein__router_compile(log_match);
}

/* The match argument: the term as a regular expression that matches it literally. */
static json_t *literal_regex(const char *term)
{
    struct rein_buf b;
    json_t *v = NULL;

    rein_buf_init(&b, 0);
    for (const char *s = term; *s; s++) {
        if (strchr("\\^$.|?*+()[]{}", *s) && rein_buf_addch(&b, '\\'))
            break;
        if (rein_buf_addch(&b, *s))
            break;
    }
    if (b.len == strlen(term) || b.len > strlen(term))
        v = json_string(b.ptr);
    rein_buf_release(&b);
    return v;
}

static char *log_match_term(const char *text, pcre2_match_data *md)
{
    PCRE2_SIZE *ov;
    int rc;

    if (!match_re ||
        (rc = pcre2_match(match_re, (PCRE2_SPTR)text, strlen(text), 0, 0, md, NULL)) < 0)
        return NULL;
    ov = pcre2_get_ovector_pointer(md);
    for (int i = 1; i < rc; i++) {
        if (ov[2 * i] != PCRE2_UNSET && ov[2 * i + 1] > ov[2 * i]) {
            char *t = rein_strndup(text + ov[2 * i], ov[2 * i + 1] - ov[2 * i]);
            /* "look for errors": a level, not a term */
            if (t && rein__args_log_level(t)) {
                rein_free(t);
                return NULL;
            }
            return t;
        }
    }
    return NULL;
}

static bool x_log(const struct rein__match *m, const rein_tool *tool, struct rein__route_plan *out)
{
    const struct rein__part *p = m->part;
    char *whole = rein_strndup(p->t->norm + p->b, p->e - p->b), *path, *quoted = NULL, *term;
    const char *level;
    long limit = 0;
    json_t *args = NULL;
    char *at;

    pthread_once(&log_once, log_compile);
    if (!whole || !(path = rein__args_log_path(whole))) {
        rein_free(whole);
        return false;
    }
    at = strstr(whole, path);
    if (at)
        memset(at, ' ', strlen(path));
    if (!cue_re || pcre2_match(cue_re, (PCRE2_SPTR)whole, strlen(whole), 0, 0, m->md, NULL) < 0) {
        /* a bare file name is a request about it only when nothing else is said */
        if (*rein__args_trim(whole)) {
            rein_free(whole);
            rein_free(path);
            return false;
        }
    }
    level = rein__args_log_level(whole);
    rein__args_modifiers(whole, &limit, NULL, &quoted);
    term = quoted ? quoted : log_match_term(whole, m->md);
    args = json_pack("{s:s}", "path", path);
    if (args && level)
        json_object_set_new(args, "level", json_string(level));
    if (args && term)
        json_object_set_new(args, "match", literal_regex(term));
    if (args && limit > 0 && limit <= 10000)
        json_object_set_new(args, "limit", json_integer(limit));
    if (term != quoted)
        rein_free(term);
    rein_free(quoted);
    rein_free(whole);
    rein_free(path);
    return rein__plan_add(out, tool, args);
}

/* ---- the rows ---- */

#define EN   REIN__LANG_EN
#define HANS REIN__LANG_HANS
#define HANT REIN__LANG_HANT

/* statistics: English words, Chinese words (both scripts) */
#define OP_EN                                                                                      \
    "(?:arithmetic\\s+mean|mean|average|avg|sum|total|summation|min(?:imum)?|smallest|lowest|"     \
    "least|max(?:imum)?|largest|biggest|highest|greatest|median|standard\\s+deviation|"            \
    "std\\.?\\s*dev|stdev|std|product|count)s?"
#define OP_ZH                                                                                                                         \
    "(?:平均值|平均数|平均數|平均|均值|总和|總和|和|合计|合計|总数|總數|最大值|最大|最小值|最小|" \
    "中位数|中位數|中值|标准差|標準差|乘积|乘積|积|積|个数|個數|数量|數量)"
#define ASK_EN                                                                                     \
    "(?:calculate|compute|calc|find|get|give\\s+me|tell\\s+me|work\\s+out|figure\\s+out|"          \
    "determine|show(?:\\s+me)?|what(?:'s|\\s+is|\\s+are|\\s+was|\\s+would\\s+be)|whats|"           \
    "how\\s+much\\s+is)"
#define ASK_ZH "(?:计算|計算|求|算|算算|求出|算出|统计|統計|计算出|計算出)"
#define SEARCH_ZH                                                                                                                  \
    "(?:搜索|搜尋|查找|搜一下|搜一搜|搜|找一下|找找|找出|找到|寻找|尋找|检索|檢索|查一下|查询|" \
    "查詢|查)"

const struct rein__row rein__router_rows[] = {
    /* log_transform: log lines given in the request */
    {"log_transform", EN,
     "^(?:parse|analy[sz]e|read|check|process|look\\s+at)\\s+(?:this|the\\s+following|these|the)"
     "\\s+(?:log\\s+)?(?:lines?|entries|entry|log|logs|output)\\s*:\\s*(?<text>.+)$",
     x_log_text},
    {"log_transform", HANS,
     "^(?:分析|解析|检查|檢查|看看|读|讀)(?:一下)?(?:这|這|以下|下面)(?:条|條|行|段|些|几行|幾行)?"
     "(?:日志|日誌|记录|記錄|log)\\s*:\\s*(?<text>.+)$",
     x_log_text},

    /* echo */
    {"echo", EN,
     "^(?:echo|say|repeat|parrot)(?:\\s+back)?(?:\\s+after\\s+me)?(?:\\s+(?:this|these\\s+words|"
     "the\\s+following(?:\\s+text)?)(?=\\s*:)|\\s+the\\s+(?:text|words?|phrase))?\\s*[:,]?\\s+"
     "(?<text>.+)$",
     x_echo},
    {"echo", HANS,
     "^(?:回显|回顯|复述|複述|重复|重複|跟我(?:说|說|念|唸)|跟着我(?:说|說)|跟著我(?:说|說)|"
     "照着(?:说|說)|照著(?:說|说)|原样(?:返回|输出)|原樣(?:返回|輸出))(?:一下|一遍|下)?\\s*"
     "[:,]?\\s*(?<text>.+)$",
     x_echo},

    /* log_transform: a request about a log file */
    {"log_transform", EN, "^(?<all>.+)$", x_log},

    /* calculator: statistics of a list */
    {"calculator", EN,
     "^(?:" ASK_EN "\\s+)?(?:the\\s+)?(?<ops>" OP_EN "(?:\\s*(?:,|and|&|plus)\\s*(?:the\\s+)?" OP_EN
     ")*)\\s+(?:value\\s+)?(?:of|for|in|across|over|from)\\s+(?<vals>.+)$",
     x_stats},
    {"calculator", EN,
     "^(?:(?:calculate|compute|calc|find|get)\\s+)?(?:the\\s+)?(?<ops>" OP_EN
     ")\\s*[:=]?\\s+(?<vals>[-+$€£¥\\d\\[(].*)$",
     x_stats},
    {"calculator", EN, "^(?:sum|add|total)\\s+(?:up\\s+)?(?<vals>.+)$", x_sum},
    {"calculator", HANS,
     "^(?:" ASK_ZH ")?(?:一下)?\\s*(?<vals>.+?)\\s*(?:的|之|这几个数的|這幾個數的|这些数的|"
     "這些數的)?\\s*(?<ops>" OP_ZH "(?:\\s*(?:、|,|和|与|與|及|以及|跟)\\s*" OP_ZH
     ")*)\\s*(?:是多少|"
     "是什么|是什麼|等于多少|等於多少|为多少|為多少|多少|是几|是幾|是)?$",
     x_stats},
    {"calculator", HANS, "^" ASK_ZH "(?:一下)?\\s*(?<ops>" OP_ZH ")\\s*[:,]?\\s*(?<vals>.+)$",
     x_stats},

    /* calculator: an expression after a verb or a question */
    {"calculator", EN,
     "^(?:calculate|compute|calc|evaluate|eval|solve|work\\s+out|figure\\s+out|"
     "what(?:'s|\\s+is|\\s+are|\\s+does|\\s+do)?|whats|how\\s+much\\s+(?:is|are|does)|"
     "tell\\s+me|give\\s+me)\\s*:?\\s+(?<expr>.+?)(?:\\s+(?:is|are|equal|equals|come\\s+to|"
     "make|give|gives))?$",
     x_expr},
    {"calculator", HANS,
     "^(?:计算|計算|算|算算|算一算|求|求值)(?:一下)?\\s*[:,]?\\s*(?<expr>.+?)\\s*(?:(?:等于|等於|"
     "是|为|為|=)\\s*(?:多少|几|幾|什么|什麼|啥)?)?$",
     x_expr},
    {"calculator", HANS,
     "^(?<expr>.+?)\\s*(?:等于|等於|是|为|為|=|得)\\s*(?:多少|几|幾|什么|什麼|啥)$", x_expr},
    {"calculator", HANS, "^(?<expr>.+?)\\s*的(?:结果|結果|值|答案)(?:是多少|是什么|是什麼)?$",
     x_expr},

    /* file_search */
    {"file_search", EN,
     "^(?:search|grep|scan|look|check|go)\\s+(?:through\\s+|in\\s+|inside\\s+|within\\s+)?"
     "(?<where>.+?)\\s+for\\s+(?<q>.+)$",
     x_search},
    {"file_search", EN,
     "^(?:search(?:\\s+for)?|find(?:\\s+me)?|grep(?:\\s+for)?|look\\s+for|look\\s+up|locate|"
     "hunt\\s+for|scan\\s+for|check\\s+for|seek)\\s+(?<q>.+)$",
     x_search},
    {"file_search", EN,
     "^(?:which|what)\\s+(?:files?|docs?|documents?|notes?|lines?)\\s+(?:contain|mention|include|"
     "reference|have|has|say|talk\\s+about|use)s?\\s+(?<q>.+)$",
     x_search},
    {"file_search", EN,
     "^where\\s+(?:is|are|does|do|did)\\s+(?<q>.+?)\\s+(?:get\\s+)?(?:mentioned|used|defined|"
     "referenced|appear|appears|show\\s+up|come\\s+up|occur)(?<rest>.*)$",
     x_search},
    {"file_search", EN,
     "^(?:(?:list|show|give|get|display)\\s+)?(?:me\\s+)?(?:all\\s+)?(?:the\\s+)?(?:files?|lines?|"
     "places?|matches|occurrences|documents?)\\s+(?:that\\s+|which\\s+|where\\s+)?(?:contain(?:s|"
     "ing)?|mention(?:s|ing)?|with|matching|including|referencing|for|of|about)\\s+(?<q>.+)$",
     x_search},
    {"file_search", HANS,
     "^(?:在|到|从|從)\\s*(?<where>.+?)\\s*(?<dirword>目录|目錄|文件夹|文件夾|資料夾|路径|路徑)?"
     "\\s*"
     "(?:下面|下|里面|裡面|里|裡|中|内|內)\\s*(?:的\\s*(?:所有|全部)?(?:文件|文档|文檔|檔案|资料|"
     "資料)\\s*(?:里面|裡面|里|裡|中)?)?\\s*" SEARCH_ZH "(?:一下)?\\s*(?<q>.+)$",
     x_search},
    {"file_search", HANS, "^" SEARCH_ZH "(?:一下)?\\s*(?<q>.+)$", x_search},
    {"file_search", HANS,
     "^(?:哪些|哪个|哪個)(?:文件|文档|文檔|檔案|笔记|筆記)\\s*(?:里|裡|中)?\\s*(?:包含|含有|提到|"
     "提及|有|用到|出现|出現)(?:了)?\\s*(?<q>.+)$",
     x_search},
    {"file_search", HANS,
     "^(?<q>.+?)\\s*(?:在|出现在|出現在)\\s*(?:哪些|哪个|哪個|哪里|哪裡|哪儿|哪兒).*$", x_search},
    {"file_search", HANS,
     "^(?:包含|含有|提到)\\s*(?<q>.+?)\\s*的(?:文件|文档|文檔|檔案|行|内容|內容)(?<rest>.*)$",
     x_search},

    /* calculator: a bare expression ("2+2", "2 times 21", "15% of 200"), last */
    {"calculator", EN, "^(?<expr>.+)$", x_expr},
};

const size_t rein__router_nrows = REIN_ARRAY_SIZE(rein__router_rows);
