/*
 * The tool vocabulary of claim extraction: which words in a text name a tool.
 *
 * It is derived from the registry (and the ledger's tool names), never written by hand per
 * tool. A name is split into words at separators, case changes and digits ("fetchUrl",
 * "file-search", "FILE_SEARCH" → fetch url, file search), and matched in a text
 *   - as one token in any case or separator style: file_search, FileSearch, file-search,
 *     `filesearch`;
 *   - as the words in sequence: "file search", "Translate Text";
 *   - without a leading generic verb when a tool noun follows: "the weather tool" for
 *     get_weather, "the email tool" for send_email;
 *   - with a leading verb as its noun before a tool noun: "the translation tool", "the text
 *     translation tool", "the translator service" for translate_text;
 *   - in Chinese, each word through a small glossary, concatenated: 文件搜索, 计算器, and
 *     天气工具 or 翻译工具 (a dropped verb or object needs 工具 after it).
 * A one-word name that is also an ordinary English word ("echo", "read", "search") is only
 * taken for the tool where the sentence treats it as one (english.c checks the context).
 *
 * Lookups go through a hash of the normalised forms, so marking a text is linear in its
 * length whatever the registry's size.
 */
#include "claims_int.h"

#include <string.h>

#define WORDS_MAX     6
#define CJK_FORMS_MAX 48
#define HASH_MIN      64

struct tool {
    char *name; /* the registered name */
    char *key;  /* lower-case, separators removed: "filesearch" */
    char *words[WORDS_MAX];
    size_t nwords;
    size_t plain; /* index of the first word of the plain form (1 when a verb is dropped) */
    char *stem;   /* the leading verb without a final e ("translat"), or NULL */
    bool common;  /* one word that is also an ordinary English word */
};

struct cjk_form {
    char *s;
    size_t n;
    int tool;
    bool needs_noun; /* 工具 must follow (a verb was dropped) */
};

/* Invariant: every key in slots points at a tool's key or word[0]; slots has nslots
 * entries, a power of two, at most half full. */
struct rein_claims_vocab {
    struct tool *v;
    size_t n, cap;
    struct cjk_form *cjk;
    size_t ncjk, capcjk;
    int *slots; /* tool index + 1 by key, 0 empty */
    size_t nslots;
    int *first; /* tool index + 1 by first word (multi-word names), chained through next */
    int *next;
    int *sfirst; /* tool index + 1 by stem, chained through snext */
    int *snext;
};

struct gloss {
    const char *en;
    const char *zh[6];
};

/* English word → Chinese words (Simplified and Traditional forms). */
static const struct gloss glossary[] = {
    {"file", {"文件", "檔案", "档案"}},
    {"files", {"文件", "檔案"}},
    {"search", {"搜索", "搜尋", "检索", "檢索", "查找", "搜寻"}},
    {"calculator", {"计算器", "計算器", "計算機"}},
    {"calc", {"计算器", "計算器"}},
    {"weather", {"天气", "天氣"}},
    {"web", {"网页", "網頁", "网络", "網路", "联网", "網絡"}},
    {"email", {"邮件", "郵件", "电子邮件", "電子郵件"}},
    {"mail", {"邮件", "郵件"}},
    {"send", {"发送", "發送", "寄送"}},
    {"log", {"日志", "日誌"}},
    {"logs", {"日志", "日誌"}},
    {"transform", {"转换", "轉換"}},
    {"convert", {"转换", "轉換", "换算", "換算"}},
    {"converter", {"转换", "轉換", "换算", "換算"}},
    {"echo", {"回显", "回顯", "回声", "回聲"}},
    {"text", {"文本", "文字"}},
    {"translate", {"翻译", "翻譯"}},
    {"translator", {"翻译", "翻譯"}},
    {"database", {"数据库", "資料庫", "數據庫"}},
    {"db", {"数据库", "資料庫"}},
    {"query", {"查询", "查詢"}},
    {"command", {"命令", "指令"}},
    {"shell", {"终端", "終端", "命令行"}},
    {"ticket", {"工单", "工單"}},
    {"url", {"网址", "網址", "链接", "連結"}},
    {"page", {"网页", "網頁"}},
    {"code", {"代码", "程式碼", "代碼"}},
    {"image", {"图片", "圖片", "图像", "圖像"}},
    {"map", {"地图", "地圖"}},
    {"maps", {"地图", "地圖"}},
    {"time", {"时间", "時間"}},
    {"date", {"日期"}},
    {"stock", {"股票"}},
    {"price", {"价格", "價格"}},
    {"news", {"新闻", "新聞"}},
    {"directory", {"目录", "目錄"}},
    {"dir", {"目录", "目錄"}},
    {"read", {"读取", "讀取"}},
    {"write", {"写入", "寫入"}},
    {"calendar", {"日历", "日曆"}},
    {"note", {"笔记", "筆記"}},
    {"notes", {"笔记", "筆記"}},
    {"memory", {"记忆", "記憶"}},
    {"browser", {"浏览器", "瀏覽器"}},
    {"currency", {"货币", "貨幣"}},
    {"summary", {"摘要", "总结", "總結"}},
    {"summarize", {"摘要", "总结", "總結"}},
    {"user", {"用户", "用戶", "使用者"}},
    {"location", {"位置", "定位"}},
    {"translation", {"翻译", "翻譯"}},
};

/* Verbs that may be left out of a name's plain form ("the weather tool" for get_weather). */
static const char *const generic_verbs[] = {
    "get",    "fetch",   "retrieve", "lookup",  "look",      "find",   "check", "do",
    "run",    "make",    "call",     "create",  "read",      "write",  "list",  "post",
    "put",    "update",  "delete",   "compute", "execute",   "exec",   "send",  "query",
    "search", "perform", "load",     "show",    "calculate", "invoke", "use",   "open",
};

static size_t hash_str(const char *s, size_t n)
{
    size_t h = 2166136261u;

    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* Lower-case with separators ( _ - . space ' ) removed, into out (cap bytes); its length. */
static size_t normalise(const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0;

    for (size_t i = 0; i < n && k < cap; i++) {
        char c = s[i];
        if (c == '_' || c == '-' || c == '.' || c == ' ' || c == '\'' || c == '`')
            continue;
        out[k++] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
    }
    return k;
}

bool rein__claims_same_tool(const char *a, size_t an, const char *b, size_t bn)
{
    char x[REIN_TOOL_NAME_MAX * 2], y[REIN_TOOL_NAME_MAX * 2];
    size_t xn = normalise(a, an, x, sizeof(x)), yn = normalise(b, bn, y, sizeof(y));

    return xn > 0 && xn == yn && memcmp(x, y, xn) == 0;
}

/* Splits a name into lower-case words at separators, case changes and digit runs. */
static size_t split_words(const char *name, char *buf, size_t cap, char **words)
{
    size_t nw = 0, k = 0, n = strlen(name);

    for (size_t i = 0; i < n && nw < WORDS_MAX;) {
        size_t start;
        while (i < n && !((name[i] >= 'a' && name[i] <= 'z') ||
                          (name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9')))
            i++;
        if (i == n || k + 1 >= cap)
            break;
        start = k;
        words[nw++] = buf + k;
        do {
            char c = name[i];
            buf[k++] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
            i++;
        } while (i < n && k + 1 < cap &&
                 ((name[i] >= 'a' && name[i] <= 'z') ||
                  (name[i] >= '0' && name[i] <= '9' && name[i - 1] >= '0' && name[i - 1] <= '9') ||
                  (name[i] >= 'A' && name[i] <= 'Z' && name[i - 1] >= 'A' && name[i - 1] <= 'Z' &&
                   !(i + 1 < n && name[i + 1] >= 'a' && name[i + 1] <= 'z'))));
        buf[k++] = '\0';
        (void)start;
    }
    return nw;
}

static bool generic_verb(const char *w)
{
    for (size_t i = 0; i < REIN_ARRAY_SIZE(generic_verbs); i++) {
        if (strcmp(w, generic_verbs[i]) == 0)
            return true;
    }
    return false;
}

static const struct gloss *gloss_of(const char *w)
{
    for (size_t i = 0; i < REIN_ARRAY_SIZE(glossary); i++) {
        if (strcmp(glossary[i].en, w) == 0)
            return &glossary[i];
    }
    return NULL;
}

static rein_err add_cjk(rein_claims_vocab *v, const char *s, size_t n, int tool, bool noun)
{
    struct cjk_form *f;

    for (size_t i = 0; i < v->ncjk; i++) {
        if (v->cjk[i].n == n && memcmp(v->cjk[i].s, s, n) == 0)
            return REIN_OK; /* first tool wins */
    }
    if (v->ncjk == v->capcjk) {
        size_t cap = v->capcjk ? v->capcjk * 2 : 16;
        struct cjk_form *p = rein_realloc(v->cjk, cap * sizeof(*p));
        if (!p)
            return REIN_ENOMEM;
        v->cjk = p;
        v->capcjk = cap;
    }
    f = &v->cjk[v->ncjk];
    f->s = rein_strndup(s, n);
    if (!f->s)
        return REIN_ENOMEM;
    f->n = n;
    f->tool = tool;
    f->needs_noun = noun;
    v->ncjk++;
    return REIN_OK;
}

/* The Chinese forms of tool t: every combination of its words' glossary entries. */
static rein_err cjk_forms(rein_claims_vocab *v, int ti)
{
    const struct tool *t = &v->v[ti];
    const struct gloss *g[WORDS_MAX];
    size_t idx[WORDS_MAX] = {0}, count = 0, first = t->plain;
    char buf[160];

    for (size_t w = first; w < t->nwords; w++) {
        g[w] = gloss_of(t->words[w]);
        if (!g[w])
            return REIN_OK; /* a word the glossary does not know: no Chinese form */
    }
    if (first >= t->nwords)
        return REIN_OK;
    /* the leading verb alone, before 工具: 翻译工具 */
    for (size_t k = 0; t->stem && !t->plain && k < 3 && g[0]->zh[k]; k++) {
        rein_err rc = add_cjk(v, g[0]->zh[k], strlen(g[0]->zh[k]), ti, true);
        if (rc)
            return rc;
    }
    for (;;) {
        size_t k = 0;
        rein_err rc;
        for (size_t w = first; w < t->nwords; w++) {
            const char *z = g[w]->zh[idx[w]];
            size_t zn = strlen(z);
            if (k + zn >= sizeof(buf))
                return REIN_OK;
            memcpy(buf + k, z, zn);
            k += zn;
        }
        rc = add_cjk(v, buf, k, ti, first > 0);
        if (rc || ++count == CJK_FORMS_MAX)
            return rc;
        /* next combination (odometer over the first three synonyms of each word) */
        for (size_t w = t->nwords; w-- > first;) {
            if (idx[w] + 1 < 3 && g[w]->zh[idx[w] + 1]) {
                idx[w]++;
                break;
            }
            idx[w] = 0;
            if (w == first)
                return REIN_OK;
        }
    }
}

static rein_err rehash(rein_claims_vocab *v)
{
    size_t ns = HASH_MIN;
    int *slots, *first, *next, *sfirst, *snext;

    while (ns < v->n * 4)
        ns *= 2;
    slots = rein_calloc(ns, sizeof(*slots));
    first = rein_calloc(ns, sizeof(*first));
    next = rein_calloc(v->n + 1, sizeof(*next));
    sfirst = rein_calloc(ns, sizeof(*sfirst));
    snext = rein_calloc(v->n + 1, sizeof(*snext));
    if (!slots || !first || !next || !sfirst || !snext) {
        rein_free(slots);
        rein_free(first);
        rein_free(next);
        rein_free(sfirst);
        rein_free(snext);
        return REIN_ENOMEM;
    }
    for (size_t i = 0; i < v->n; i++) {
        const struct tool *t = &v->v[i];
        size_t h = hash_str(t->key, strlen(t->key)) & (ns - 1);
        while (slots[h] && strcmp(v->v[slots[h] - 1].key, t->key) != 0)
            h = (h + 1) & (ns - 1);
        if (!slots[h])
            slots[h] = (int)i + 1;
        if (t->nwords - t->plain >= 2 || t->plain > 0) {
            const char *w0 = t->words[t->plain];
            h = hash_str(w0, strlen(w0)) & (ns - 1);
            next[i] = first[h];
            first[h] = (int)i + 1;
        }
        if (t->stem) {
            h = hash_str(t->stem, strlen(t->stem)) & (ns - 1);
            snext[i] = sfirst[h];
            sfirst[h] = (int)i + 1;
        }
    }
    rein_free(v->slots);
    rein_free(v->first);
    rein_free(v->next);
    rein_free(v->sfirst);
    rein_free(v->snext);
    v->slots = slots;
    v->first = first;
    v->next = next;
    v->sfirst = sfirst;
    v->snext = snext;
    v->nslots = ns;
    return REIN_OK;
}

static void tool_release(struct tool *t)
{
    rein_free(t->name);
    rein_free(t->key);
    rein_free(t->words[0]);
    rein_free(t->stem);
}

bool rein_claims_vocab_covers(const rein_claims_vocab *v, const char *name)
{
    char key[REIN_TOOL_NAME_MAX * 2];
    size_t kn;

    if (!v || !name)
        return false;
    kn = normalise(name, strlen(name), key, sizeof(key));
    if (kn == 0 || kn >= sizeof(key))
        return true; /* rein_claims_vocab_add ignores it */
    for (size_t i = 0; i < v->n; i++) {
        if (strlen(v->v[i].key) == kn && memcmp(v->v[i].key, key, kn) == 0)
            return true;
    }
    return false;
}

rein_err rein_claims_vocab_add(rein_claims_vocab *v, const char *name)
{
    char key[REIN_TOOL_NAME_MAX * 2], buf[REIN_TOOL_NAME_MAX * 2 + WORDS_MAX];
    size_t kn;
    struct tool *t;
    rein_err rc;

    if (!v || !name)
        return REIN_EINVAL;
    kn = normalise(name, strlen(name), key, sizeof(key));
    if (kn == 0 || kn >= sizeof(key))
        return REIN_OK; /* nothing to match by, or longer than any tool name */
    for (size_t i = 0; i < v->n; i++) {
        if (strlen(v->v[i].key) == kn && memcmp(v->v[i].key, key, kn) == 0)
            return REIN_OK;
    }
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        struct tool *p = rein_realloc(v->v, cap * sizeof(*p));
        if (!p)
            return REIN_ENOMEM;
        v->v = p;
        v->cap = cap;
    }
    t = &v->v[v->n];
    memset(t, 0, sizeof(*t));
    t->name = rein_strdup(name);
    t->key = rein_strndup(key, kn);
    t->nwords = split_words(name, buf, sizeof(buf), t->words);
    if (t->nwords) {
        /* one allocation for all the words; the pointers are rebased into it */
        size_t total =
            (size_t)(t->words[t->nwords - 1] - buf) + strlen(t->words[t->nwords - 1]) + 1;
        char *copy = rein_malloc(total);
        if (copy) {
            memcpy(copy, buf, total);
            for (size_t w = 0; w < t->nwords; w++)
                t->words[w] = copy + (t->words[w] - buf);
        } else {
            t->words[0] = NULL;
        }
    }
    if (!t->name || !t->key || (t->nwords && !t->words[0])) {
        tool_release(t);
        return REIN_ENOMEM;
    }
    if (t->nwords >= 2 && generic_verb(t->words[0]))
        t->plain = 1;
    if (t->nwords >= 2 && t->words[0]) {
        uint8_t form;
        size_t wn = strlen(t->words[0]);
        if (wn >= 4 && rein__claims_verb(t->words[0], wn, &form)) {
            t->stem = rein_strndup(t->words[0], t->words[0][wn - 1] == 'e' ? wn - 1 : wn);
            if (!t->stem) {
                tool_release(t);
                return REIN_ENOMEM;
            }
        }
    }
    t->common = t->nwords == 1 && (rein__claims_lex(t->key, kn) & ~(uint64_t)L_NOUNISH) != 0;
    if (t->nwords == 1 && !t->common) {
        uint8_t form;
        t->common = rein__claims_verb(t->key, kn, &form) != 0;
    }
    v->n++;
    rc = rehash(v);
    if (!rc)
        rc = cjk_forms(v, (int)v->n - 1);
    if (rc) {
        tool_release(&v->v[--v->n]);
        (void)rehash(v);
    }
    return rc;
}

rein_claims_vocab *rein_claims_vocab_new(const rein_registry *reg, rein_error *err)
{
    rein_claims_vocab *v = rein_calloc(1, sizeof(*v));

    if (!v)
        goto out_oom;
    for (size_t i = 0; reg && i < rein_registry_count(reg); i++) {
        const rein_tool *tool = rein_registry_at(reg, i); /* NULL: it left meanwhile */
        if (tool && rein_claims_vocab_add(v, rein_tool_id(tool)) != REIN_OK)
            goto out_oom;
    }
    if (!v->slots && rehash(v) != REIN_OK)
        goto out_oom;
    return v;

out_oom:
    rein_claims_vocab_free(v);
    rein_error_set(err, REIN_ENOMEM, "out of memory building the tool vocabulary");
    return NULL;
}

rein_err rein_claims_vocab_add_ledger(rein_claims_vocab *v, const json_t *ledger)
{
    size_t i;
    const json_t *e;

    if (!v)
        return REIN_EINVAL;
    json_array_foreach(ledger, i, e)
    {
        const char *t = json_string_value(json_object_get(e, "tool"));
        rein_err rc = t ? rein_claims_vocab_add(v, t) : REIN_OK;
        if (rc)
            return rc;
    }
    return REIN_OK;
}

void rein_claims_vocab_free(rein_claims_vocab *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++)
        tool_release(&v->v[i]);
    for (size_t i = 0; i < v->ncjk; i++)
        rein_free(v->cjk[i].s);
    rein_free(v->v);
    rein_free(v->cjk);
    rein_free(v->slots);
    rein_free(v->first);
    rein_free(v->next);
    rein_free(v->sfirst);
    rein_free(v->snext);
    rein_free(v);
}

/* ---- matching ---- */

struct rein__vocab_view {
    rein_claims_vocab v;
};

const struct rein__vocab_view *rein__claims_vocab_view(const rein_claims_vocab *v)
{
    return (const struct rein__vocab_view *)v;
}

const char *rein__claims_vocab_name(const struct rein__vocab_view *vv, int i)
{
    return vv && i >= 0 && (size_t)i < vv->v.n ? vv->v.v[i].name : NULL;
}

static int by_key(const rein_claims_vocab *v, const char *k, size_t kn)
{
    size_t h;

    if (!v->nslots || kn == 0)
        return -1;
    h = hash_str(k, kn) & (v->nslots - 1);
    while (v->slots[h]) {
        const struct tool *t = &v->v[v->slots[h] - 1];
        if (strlen(t->key) == kn && memcmp(t->key, k, kn) == 0)
            return v->slots[h] - 1;
        h = (h + 1) & (v->nslots - 1);
    }
    return -1;
}

/* The words of tool t from its word w match tokens i.. of the sentence: tokens used, or 0. */
static size_t words_match(const struct rein__sent *st, const struct tool *t, size_t w, size_t i)
{
    size_t k = 0;

    for (; w < t->nwords; w++, k++) {
        const struct rein__tok *tok = i + k < st->nt ? &st->t[i + k] : NULL;
        size_t wn = strlen(t->words[w]);
        if (!tok || tok->type != TK_WORD || tok->n != wn ||
            memcmp(st->low + tok->s, t->words[w], wn) != 0)
            return 0;
        if ((tok->flags & TF_POSS) && w + 1 < t->nwords)
            return 0;
    }
    return k;
}

/* Is the token after a mention of a plain-form tool a tool noun? */
static bool tool_noun_at(const struct rein__sent *st, size_t i)
{
    return i < st->nt && st->t[i].type == TK_WORD && (st->t[i].lex & L_TOOLN) &&
           !rein__claims_is(st, i, "function") && !rein__claims_is(st, i, "query") &&
           !rein__claims_is(st, i, "run") && !rein__claims_is(st, i, "request");
}

static void mark(struct rein__sent *st, size_t i, int tool, size_t len)
{
    st->t[i].tool = (int16_t)tool;
    st->t[i].tool_len = (uint8_t)len;
}

/*
 * Token i as the noun of a tool's leading verb, before a tool noun: "translation tool",
 * "translator service" for translate_text; with the rest of the name before it ("text
 * translation tool", "database query tool") the mention starts there. A generic verb
 * ("query") names its tool only with the rest. Marks it and returns true.
 */
static bool mark_derived(const rein_claims_vocab *v, struct rein__sent *st, size_t i)
{
    static const char *const suffixes[] = {"", "ation", "ion", "or", "er", "ing"};
    const struct rein__tok *tok = &st->t[i];
    const char *w = st->low + tok->s;

    if (!v->nslots || tok->type != TK_WORD || !tool_noun_at(st, i + 1))
        return false;
    for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++) {
        size_t sn = strlen(suffixes[k]), stn;
        if (tok->n < sn + 4 || memcmp(w + tok->n - sn, suffixes[k], sn) != 0)
            continue;
        stn = tok->n - sn - (sn == 0 && w[tok->n - 1] == 'e');
        for (int c = v->sfirst[hash_str(w, stn) & (v->nslots - 1)]; c; c = v->snext[c - 1]) {
            const struct tool *t = &v->v[c - 1];
            size_t rest = t->nwords - 1;
            if (strlen(t->stem) != stn || memcmp(t->stem, w, stn) != 0)
                continue;
            if (i >= rest && words_match(st, t, 1, i - rest) == rest)
                mark(st, i - rest, c - 1, rest + 1);
            else if (!t->plain)
                mark(st, i, c - 1, 1);
            else
                continue;
            return true;
        }
    }
    return false;
}

void rein__claims_vocab_mark(const struct rein__vocab_view *vv, struct rein__sent *st)
{
    const rein_claims_vocab *v = vv ? &vv->v : NULL;

    for (size_t i = 0; i < st->nt; i++) {
        struct rein__tok *tok = &st->t[i];
        char key[REIN_TOOL_NAME_MAX * 2];
        size_t kn;
        int ti;

        if (tok->type != TK_WORD && tok->type != TK_CODE && tok->type != TK_QUOTE)
            continue;
        /* multi-word names first: "file search", "get weather", "the weather tool" */
        if (v && v->nslots && tok->type == TK_WORD) {
            size_t h = hash_str(st->low + tok->s, tok->n) & (v->nslots - 1), best = 0, at = i;
            int bt = -1;
            for (int c = v->first[h]; c; c = v->next[c - 1]) {
                const struct tool *t = &v->v[c - 1];
                size_t used = 0, from = i;
                if (t->plain > 0 && i >= t->plain &&
                    words_match(st, t, 0, i - t->plain) == t->nwords) {
                    used = t->nwords;
                    from = i - t->plain;
                } else {
                    size_t u = words_match(st, t, t->plain, i);
                    if (u && (t->plain ? tool_noun_at(st, i + u) : u >= 2))
                        used = u;
                }
                if (used > best) {
                    best = used;
                    bt = c - 1;
                    at = from;
                }
            }
            if (bt >= 0) {
                mark(st, at, bt, best);
                i = at + best - 1;
                continue;
            }
        }
        if (tok->type == TK_QUOTE && tok->n > REIN_TOOL_NAME_MAX)
            continue;
        kn = normalise(st->s + tok->s, tok->n, key, sizeof(key));
        ti = v && kn < sizeof(key) ? by_key(v, key, kn) : -1;
        if (ti >= 0) {
            mark(st, i, ti, 1);
            continue;
        }
        if (v && mark_derived(v, st, i))
            continue;
        /* a tool the vocabulary does not know, called a tool: "the get_stock tool" */
        if ((tok->type == TK_CODE || (tok->flags & TF_IDENT)) && !(tok->flags & TF_CALL) &&
            i + 1 < st->nt && st->t[i + 1].type == TK_WORD &&
            (rein__claims_is(st, i + 1, "tool") || rein__claims_is(st, i + 1, "skill") ||
             rein__claims_is(st, i + 1, "plugin")))
            mark(st, i, -2, 1);
    }
}

bool rein__claims_vocab_is_common(const struct rein__vocab_view *vv, int i)
{
    return vv && i >= 0 && (size_t)i < vv->v.n && vv->v.v[i].common;
}

int rein__claims_vocab_cjk(const struct rein__vocab_view *vv, const char *s, size_t n, size_t i,
                           size_t *len)
{
    const rein_claims_vocab *v = vv ? &vv->v : NULL;
    size_t best = 0;
    int bt = -1;

    for (size_t k = 0; v && k < v->ncjk; k++) {
        const struct cjk_form *f = &v->cjk[k];
        size_t used = f->n;
        if (f->n <= best || i + f->n > n || memcmp(s + i, f->s, f->n) != 0)
            continue;
        if (f->needs_noun) {
            if (i + f->n + 6 <= n && (memcmp(s + i + f->n, "工具", 6) == 0))
                used += 6;
            else
                continue;
        }
        if (used > best) {
            best = used;
            bt = f->tool;
        }
    }
    *len = best;
    return bt;
}
