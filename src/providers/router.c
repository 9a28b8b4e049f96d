/*
 * The rules router's engine (router_int.h): how a request becomes calls without a model.
 *
 *   1. normalise  full-width letters, digits and punctuation become ASCII, curly and corner
 *                 quotes become straight ones; a map keeps each byte's place in the request,
 *                 so text that is handed on as it was typed (echo) is cut from the original
 *   2. split      on sequence words ("then", "and then", "after that", ";", "然后", "接着",
 *                 "然後", …) and on "and" / "," / "，" when a request verb follows; when some
 *                 part does not route, the request is routed whole as one part
 *   3. polish     each part loses politeness at both ends ("please", "can you", "帮我", "请",
 *                 "谢谢", "好吗", trailing punctuation)
 *   4. route      the rows of the built-in skills (router_rows.c) in table order, then each
 *                 offered tool's manifest "examples" (utterances with their arguments, turned
 *                 into templates) and "routes" (patterns with named captures); the first that
 *                 yields arguments wins
 *
 * Everything is deterministic: the same request and tools give the same calls.
 */
#include "router_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_PARTS REIN__ROUTE_MAX_PARTS

pcre2_code *rein__router_compile(const char *pattern)
{
    int code;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_CASELESS, &code, &off, NULL);

    if (re)
        (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    return re;
}

/* ---- 1. normalising ---- */

static uint32_t utf8_next(const unsigned char *s, size_t len, size_t *n)
{
    if (s[0] < 0x80 || len < 2) {
        *n = 1;
        return s[0];
    }
    if ((s[0] & 0xE0) == 0xC0 && (s[1] & 0xC0) == 0x80) {
        *n = 2;
        return ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    }
    if ((s[0] & 0xF0) == 0xE0 && len >= 3 && (s[1] & 0xC0) == 0x80 && (s[2] & 0xC0) == 0x80) {
        *n = 3;
        return ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    }
    *n = 1;
    return s[0];
}

/* The ASCII a character stands for in matching, or 0 to keep it as it is. */
static char fold(uint32_t c)
{
    if (c >= 0xFF01 && c <= 0xFF5E)
        return (char)(c - 0xFEE0);
    switch (c) {
    case 0x3000:
    case '\t':
    case '\n':
    case '\r':
        return ' ';
    case 0x3002:
        return '.';
    case 0x201C:
    case 0x201D:
    case 0x300C:
    case 0x300D:
    case 0x300E:
    case 0x300F:
        return '"';
    case 0x2018:
    case 0x2019:
        return '\'';
    case 0x00D7:
        return '*';
    case 0x00F7:
        return '/';
    default:
        return 0;
    }
}

static rein_err normalise(const char *orig, struct rein__rtext *t)
{
    size_t len = strlen(orig), o = 0;

    t->orig = orig;
    t->norm = rein_malloc(len + 1);
    t->map = rein_calloc(len + 1, sizeof(*t->map));
    t->len = 0;
    if (!t->norm || !t->map)
        return REIN_ENOMEM;
    while (o < len) {
        size_t n;
        uint32_t c = utf8_next((const unsigned char *)orig + o, len - o, &n);
        char f = fold(c);
        if (f) {
            t->map[t->len] = o;
            t->norm[t->len++] = f;
        } else {
            for (size_t k = 0; k < n; k++) {
                t->map[t->len] = o;
                t->norm[t->len++] = orig[o + k];
            }
        }
        o += n;
    }
    t->map[t->len] = len;
    t->norm[t->len] = '\0';
    return REIN_OK;
}

/* ---- the language ---- */

/* Characters only Traditional (first) or only Simplified (second) Chinese writes, among the
 * common ones of requests like these. */
static const char hant_only[] = "個們來時會說對還這過嗎請幫謝從與學數計錯誤檔將寫讀條筆處為麼"
                                "後見區長開關門間題點結總應該運資網頁錄顯當實際據標準搜尋專"
                                "設給產單發動務變電號碼歡讓論識譯試詢認誰調談裡幾結統輸復顯"
                                "氣樣們這嗎麼種歲聽說東車問無隻紙鐘壞廣";
static const char hans_only[] = "个们来时会说对还这过吗请帮谢从与学数计错误档将写读条笔处为么"
                                "后见区长开关门间题点结总应该运资网页录显当实际据标准搜寻专"
                                "设给产单发动务变电号码欢让论识译试询认谁调谈里几结统输复显"
                                "气样们这吗么种岁听说东车问无只纸钟坏广";

static size_t count_in(const char *text, const char *set)
{
    size_t count = 0;

    for (const char *p = text; *p;) {
        size_t n;
        uint32_t c = utf8_next((const unsigned char *)p, strlen(p), &n);
        if (c >= 0x3400 && strstr(set, (char[5]){p[0], n > 1 ? p[1] : 0, n > 2 ? p[2] : 0, 0, 0}))
            count++;
        p += n;
    }
    return count;
}

enum rein__lang rein__router_language(const char *text)
{
    bool cjk = false;

    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        /* U+3000..U+9FFF and U+FF00..U+FFEF start with E3..E9 or EF BC..BF */
        if ((*p >= 0xE3 && *p <= 0xE9) || (*p == 0xEF && (p[1] == 0xBC || p[1] == 0xBD))) {
            cjk = true;
            break;
        }
    }
    if (!cjk)
        return REIN__LANG_EN;
    return count_in(text, hant_only) > count_in(text, hans_only) ? REIN__LANG_HANT
                                                                 : REIN__LANG_HANS;
}

/* ---- 2. and 3. parts and politeness ---- */

enum { RE_SPLIT, RE_WEAK_SPLIT, RE_PREFIX, RE_SUFFIX, RE_PARTICLE, RE_COUNT };

static const char *const engine_patterns[RE_COUNT] = {
    [RE_SPLIT] = "\\s*[,;]?\\s*(?:\\band\\s+then\\b|\\bthen\\b|\\bafter\\s+that\\b|"
                 "\\bafterwards\\b|\\band\\s+also\\b|\\bfinally\\b)\\s*[,:]?\\s*|\\s*;\\s*|"
                 "\\s*[,.]?\\s*(?:然后|接着|随后|之后|然後|接著|隨後|之後|并且|並且|最后|最後)"
                 "\\s*(?:再)?\\s*[,:]?\\s*|\\s*,\\s*再\\s*",
    /* "and" or a comma before a request verb: a split only when both sides route */
    /* only verbs that name a skill: "parse x.log and show lines containing y" is one request */
    [RE_WEAK_SPLIT] = "\\s*(?:,\\s*and|,|\\band|\\balso|和|并|並|、)\\s+(?=(?:echo|say|repeat|"
                      "search|find|grep|look\\s+for|locate|calculate|compute|calc|"
                      "analy[sz]e|parse|summari[sz]e|回显|搜索|"
                      "搜尋|查找|查|找|计算|計算|算|求|分析|解析|统计|統計|查看|看看)\\b)|"
                      "\\s*(?:,|和|并|並|再)\\s*(?=(?:回显|回顯|搜索|搜尋|查找|找|计算|計算|算|"
                      "求|分析|解析|统计|統計|查看|看看|检查|檢查))",
    [RE_PREFIX] =
        "^(?:\\s|[,.!?:])*(?:(?:hey|hi|hello|ok|okay|so|um|uh|rein)\\b\\s*[,!]?\\s*|"
        "please\\b\\s*|pls\\b\\s*|plz\\b\\s*|kindly\\s+|(?:can|could|would|will)\\s+(?:you|u)\\s+"
        "(?:please\\s+)?|would\\s+you\\s+mind\\s+|do\\s+you\\s+mind\\s+|"
        "i\\s+(?:want|need|would\\s+like|wanna)\\s+(?:you\\s+)?(?:to\\s+)?|"
        "i'd\\s+like\\s+(?:you\\s+)?(?:to\\s+)?|help\\s+me\\s+(?:to\\s+)?|let's\\s+|"
        "let\\s+me\\s+|go\\s+ahead\\s+and\\s+|just\\s+|quickly\\s+|now\\s+|first\\s*,?\\s+|"
        "(?:tell|show|give)\\s+me\\s+(?=the\\b|what\\b|how\\b|which\\b|where\\b)|"
        "(?:首先|先)|(?:请问|請問)|(?:请|請)(?:你|您)?|麻烦(?:你|您)?|麻煩(?:你|您)?|劳驾|勞駕|(?:"
        "帮|幫)(?:我|忙)"
        "|"
        "(?:你|您)?(?:能不能|可不可以|能否|可以|能)(?:帮我|幫我)?|我(?:想|要|需要)(?:你)?"
        "(?:知道|问问|問問|问|問)?|(?:给|給)我|(?:告诉|告訴)我)",
    /* politeness at the end: taken off everything, also the text echo returns */
    [RE_SUFFIX] = "(?:[\\s,]*(?:please|pls|plz|thanks|thank\\s+you|thx|for\\s+me|right\\s+now|"
                  "asap)\\b|\\s*,\\s*(?:ok|okay)\\b|谢谢(?:你|您)?|謝謝(?:你|您)?|好吗|好嗎|好不好|"
                  "可以吗|可以嗎|行吗|行嗎)?[\\s.!?~]*$",
    /* particles at the end: taken off for matching, kept in the text echo returns */
    [RE_PARTICLE] = "(?:吧|呢|啊|呀|哦|一下)[\\s.!?~]*$",
};

static pcre2_code *engine_re[RE_COUNT];
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void engine_compile(void)
{
    for (int i = 0; i < RE_COUNT; i++)
        engine_re[i] = rein__router_compile(engine_patterns[i]);
}

/* Runs re on norm[b, e) from offset at; the match's [*mb, *me) in norm. */
static bool find(pcre2_code *re, const struct rein__rtext *t, size_t b, size_t e, size_t at,
                 pcre2_match_data *md, size_t *mb, size_t *me)
{
    PCRE2_SIZE *ov;

    if (!re || pcre2_match(re, (PCRE2_SPTR)t->norm + b, e - b, at - b, 0, md, NULL) < 0)
        return false;
    ov = pcre2_get_ovector_pointer(md);
    *mb = b + ov[0];
    *me = b + ov[1];
    return true;
}

/* Takes politeness off both ends of p, again until nothing changes. */
static void polish(struct rein__part *p, pcre2_match_data *md)
{
    bool changed = true;
    size_t mb, me;

    while (p->b < p->e && isspace((unsigned char)p->t->norm[p->b]))
        p->b++;
    while (p->e > p->b && isspace((unsigned char)p->t->norm[p->e - 1]))
        p->e--;
    p->raw_e = p->e;
    while (changed && p->b < p->e) {
        changed = false;
        if (find(engine_re[RE_PREFIX], p->t, p->b, p->e, p->b, md, &mb, &me) && me > mb) {
            p->question |= strchr("cwCW", p->t->norm[mb]) != NULL;
            p->b = me;
            changed = true;
        }
        if (find(engine_re[RE_SUFFIX], p->t, p->b, p->e, p->b, md, &mb, &me) && me > mb &&
            mb > p->b) {
            /* the raw end keeps trailing punctuation ("Hello, World!"), not "please" */
            for (size_t i = mb; i < me; i++) {
                unsigned char c = (unsigned char)p->t->norm[i];
                if (isalpha(c) || c >= 0x80)
                    p->raw_e = mb;
            }
            p->e = mb;
            changed = true;
        }
        if (find(engine_re[RE_PARTICLE], p->t, p->b, p->e, p->b, md, &mb, &me) && me > mb &&
            mb > p->b) {
            p->e = mb;
            changed = true;
        }
    }
}

/* Splits t on re into parts (at most max); returns how many. */
static size_t split_on(pcre2_code *re, const struct rein__rtext *t, struct rein__part *parts,
                       size_t max, pcre2_match_data *md)
{
    size_t n = 0, start = 0, at = 0, mb, me;

    while (n + 1 < max && find(re, t, 0, t->len, at, md, &mb, &me)) {
        if (me == mb || mb == 0) { /* a sequence word at the very start is not a split */
            at = me > at ? me : at + 1;
            if (at >= t->len)
                break;
            continue;
        }
        parts[n++] = (struct rein__part){.t = t, .b = start, .e = mb};
        start = at = me;
    }
    parts[n++] = (struct rein__part){.t = t, .b = start, .e = t->len};
    return n;
}

/* ---- 4. routing a part ---- */

bool rein__group(const struct rein__match *m, const char *name, size_t *b, size_t *e)
{
    int n = pcre2_substring_number_from_name(m->code, (PCRE2_SPTR)name);
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);

    if (n <= 0 || (uint32_t)n >= pcre2_get_ovector_count(m->md) || ov[2 * n] == PCRE2_UNSET)
        return false;
    *b = m->part->b + ov[2 * n];
    *e = m->part->b + ov[2 * n + 1];
    return true;
}

char *rein__group_dup(const struct rein__match *m, const char *name)
{
    size_t b, e;

    if (!rein__group(m, name, &b, &e))
        return NULL;
    return rein_strndup(m->part->t->norm + b, e - b);
}

bool rein__plan_add(struct rein__route_plan *out, const rein_tool *tool, json_t *args)
{
    if (!args)
        return false;
    if (out->n >= REIN__ROUTE_MAX_CALLS) {
        json_decref(args);
        return false;
    }
    out->calls[out->n].tool = tool;
    out->calls[out->n++].args = args;
    return true;
}

static pcre2_code *row_re[256];
static pthread_once_t rows_once = PTHREAD_ONCE_INIT;

static void rows_compile(void)
{
    for (size_t i = 0; i < rein__router_nrows && i < 256; i++)
        row_re[i] = rein__router_compile(rein__router_rows[i].pattern);
}

bool rein__router_knows(const char *id)
{
    for (size_t i = 0; i < rein__router_nrows; i++) {
        if (strcmp(rein__router_rows[i].tool, id) == 0)
            return true;
    }
    return false;
}

static const rein_tool *offered(const rein_registry *reg, const char *const *names, size_t n,
                                const char *id)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], id) == 0)
            return rein_registry_get(reg, id);
    }
    return NULL;
}

/* The rows of the built-in skills. */
static bool route_rows(const rein_registry *reg, const char *const *names, size_t n,
                       const struct rein__part *p, struct rein__route_plan *out,
                       pcre2_match_data *md)
{
    for (size_t i = 0; i < rein__router_nrows && i < 256; i++) {
        const struct rein__row *row = &rein__router_rows[i];
        const rein_tool *tool = offered(reg, names, n, row->tool);
        struct rein__match m = {p, row_re[i], md};
        size_t had = out->n;
        if (!tool || !row_re[i] ||
            pcre2_match(row_re[i], (PCRE2_SPTR)p->t->norm + p->b, p->e - p->b, 0, 0, md, NULL) < 0)
            continue;
        if (row->extract(&m, tool, out))
            return true;
        while (out->n > had) /* a row that fails adds nothing */
            json_decref(out->calls[--out->n].args);
    }
    return false;
}

/* ---- coercing captured text to a parameter's type (examples and routes) ---- */

static const char *schema_type(const json_t *schema)
{
    const json_t *t = json_object_get(schema, "type");
    size_t i;
    json_t *v;

    if (json_is_string(t))
        return json_string_value(t);
    json_array_foreach(t, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), "null") != 0)
            return json_string_value(v);
    }
    return NULL;
}

/* An enum member for word: itself, case-insensitively, or through the manifest's aliases. */
static json_t *enum_member(const json_t *schema, const json_t *aliases, const char *word)
{
    const json_t *e = json_object_get(schema, "enum"), *v;
    const char *key;
    size_t i;

    json_array_foreach(e, i, v)
    {
        if (json_is_string(v) && strcasecmp(json_string_value(v), word) == 0)
            return json_incref((json_t *)v);
    }
    json_object_foreach((json_t *)aliases, key, v)
    {
        if (strcasecmp(key, word) == 0)
            return json_incref((json_t *)v);
    }
    return NULL;
}

/* The value of captured text for its parameter schema (new), or NULL when it does not fit. */
static json_t *coerce(const json_t *schema, const json_t *aliases, const char *s)
{
    const char *type = schema_type(schema);
    char *end;

    if (json_object_get(schema, "enum"))
        return enum_member(schema, aliases, s);
    if (!type || strcmp(type, "string") == 0)
        return json_string(s);
    if (strcmp(type, "integer") == 0 || strcmp(type, "number") == 0) {
        double d;
        errno = 0;
        d = strtod(s, &end);
        if (end == s || *end || errno || !isfinite(d))
            return NULL;
        if (type[0] == 'i')
            return d == floor(d) && fabs(d) < 9.0e15 ? json_integer((json_int_t)d) : NULL;
        return json_real(d);
    }
    if (strcmp(type, "boolean") == 0) {
        static const char *const yes[] = {"true", "yes", "on", "1", "是", "对"};
        static const char *const no[] = {"false", "no", "off", "0", "否", "不"};
        for (size_t i = 0; i < REIN_ARRAY_SIZE(yes); i++) {
            if (strcasecmp(s, yes[i]) == 0)
                return json_true();
            if (strcasecmp(s, no[i]) == 0)
                return json_false();
        }
        return NULL;
    }
    if (strcmp(type, "array") == 0 || strcmp(type, "object") == 0) {
        json_t *v = rein_json_parse(s, strlen(s), 0, NULL);
        bool array = type[0] == 'a';
        if (v && (array ? json_is_array(v) : json_is_object(v)))
            return v;
        json_decref(v);
        if (array) {
            const char *it = schema_type(json_object_get(schema, "items"));
            if (it && (strcmp(it, "number") == 0 || strcmp(it, "integer") == 0))
                return rein__args_numbers(s);
        }
    }
    return NULL;
}

/* Arguments from named captures: each coerced to its parameter's schema. */
static json_t *captured_args(const rein_tool *tool, const struct rein__match *m,
                             const json_t *consts)
{
    const json_t *props = json_object_get(rein_tool_parameters(tool), "properties");
    const json_t *aliases = json_object_get(rein_tool_manifest(tool), "x-route-aliases");
    json_t *args = consts ? json_deep_copy(consts) : json_object(), *v;
    const char *key;

    json_object_foreach((json_t *)props, key, v)
    {
        char *s = rein__group_dup(m, key);
        json_t *c;
        if (!s)
            continue;
        c = coerce(v, json_object_get(aliases, key), rein__args_trim(s));
        rein_free(s);
        if (!c || json_object_set_new(args, key, c) != 0) {
            json_decref(args);
            return NULL;
        }
    }
    return args;
}

/* Escapes text for a pattern: letters, digits and non-ASCII as they are, spaces as \s+,
 * punctuation optional with the spaces around it. */
static rein_err escape_literal(struct rein_buf *b, const char *p, size_t n)
{
    rein_err rc = REIN_OK;

    for (size_t i = 0; i < n && !rc; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == ' ') {
            while (i + 1 < n && p[i + 1] == ' ')
                i++;
            rc = rein_buf_adds(b, "\\s+");
        } else if (c >= 0x80 || isalnum(c)) {
            rc = rein_buf_addch(b, (char)c);
        } else {
            rc = rein_buf_addf(b, "\\s*\\%c?\\s*", c);
        }
    }
    return rc;
}

/* The slot for a parameter: its text where the example had the value. */
static const char *slot_for(const json_t *schema)
{
    const char *type = schema_type(schema);

    if (type && strcmp(type, "integer") == 0)
        return "-?\\d+";
    if (type && strcmp(type, "number") == 0)
        return "-?\\d+(?:\\.\\d+)?";
    return ".+?";
}

/* The text of a value as an example writes it, or NULL for values that are not scalars. */
static char *value_text(const json_t *v)
{
    if (json_is_string(v))
        return rein_strdup(json_string_value(v));
    if (json_is_integer(v) || json_is_real(v) || json_is_boolean(v))
        return rein_json_dumps(v);
    return NULL;
}

/*
 * An example as a pattern: each argument's value, found in the example's text, becomes a
 * named slot; what is around the values must be there as written (up to case, spaces and
 * punctuation). Arguments whose value is not in the text are constants (*consts, new).
 */
static pcre2_code *example_pattern(const rein_tool *tool, const json_t *example, json_t **consts)
{
    const json_t *props = json_object_get(rein_tool_parameters(tool), "properties");
    const json_t *args = json_object_get(example, "arguments");
    const char *text = json_string_value(json_object_get(example, "text")), *key;
    json_t *v;
    struct rein_buf b;
    struct {
        size_t at, len;
        const char *key;
    } slots[16];
    size_t nslots = 0, pos = 0;
    struct rein__rtext t = {0};
    pcre2_code *re = NULL;

    *consts = json_object();
    if (!text || !*consts || normalise(text, &t) != REIN_OK)
        goto out;
    json_object_foreach((json_t *)args, key, v)
    {
        char *s = value_text(v);
        const char *hit = s && *s ? strcasestr(t.norm, s) : NULL;
        if (hit && nslots < 16 && json_object_get(props, key)) {
            slots[nslots].at = (size_t)(hit - t.norm);
            slots[nslots].len = strlen(s);
            slots[nslots++].key = key;
        } else {
            json_object_set(*consts, key, v);
        }
        rein_free(s);
    }
    /* in text order, overlapping ones dropped */
    for (size_t i = 1; i < nslots; i++) {
        for (size_t j = i; j > 0 && slots[j].at < slots[j - 1].at; j--) {
            __typeof__(slots[0]) tmp = slots[j];
            slots[j] = slots[j - 1];
            slots[j - 1] = tmp;
        }
    }
    rein_buf_init(&b, 0);
    rein_err rc = rein_buf_adds(&b, "^\\s*");
    for (size_t i = 0; i < nslots && !rc; i++) {
        if (slots[i].at < pos) {
            json_object_set(*consts, slots[i].key, (json_t *)json_object_get(args, slots[i].key));
            continue;
        }
        rc = escape_literal(&b, t.norm + pos, slots[i].at - pos);
        if (!rc)
            rc = rein_buf_addf(&b, "(?<%s>%s)", slots[i].key,
                               slot_for(json_object_get(props, slots[i].key)));
        pos = slots[i].at + slots[i].len;
    }
    if (!rc)
        rc = escape_literal(&b, t.norm + pos, t.len - pos);
    if (!rc)
        rc = rein_buf_adds(&b, "\\s*[.!?]*\\s*$");
    if (!rc)
        re = rein__router_compile(b.ptr);
    rein_buf_release(&b);
out:
    rein_free(t.norm);
    rein_free(t.map);
    return re;
}

/* The offered tools' manifest examples, then their routes. */
static bool route_manifests(const rein_registry *reg, const char *const *names, size_t n,
                            const struct rein__part *p, struct rein__route_plan *out,
                            pcre2_match_data *md)
{
    char *text = rein_strndup(p->t->norm + p->b, p->e - p->b);
    bool found = false;

    for (size_t i = 0; text && i < n && !found; i++) {
        const rein_tool *tool = rein_registry_get(reg, names[i]);
        const json_t *examples = json_object_get(rein_tool_manifest(tool), "examples"), *ex;
        size_t k;
        /* the rows read the built-in skills better than their examples could */
        if (rein__router_knows(names[i]))
            continue;
        json_array_foreach(examples, k, ex)
        {
            json_t *consts = NULL;
            pcre2_code *re = example_pattern(tool, ex, &consts);
            struct rein__match m = {p, re, md};
            if (re && pcre2_match(re, (PCRE2_SPTR)text, strlen(text), 0, 0, md, NULL) >= 0)
                found = rein__plan_add(out, tool, captured_args(tool, &m, consts));
            json_decref(consts);
            pcre2_code_free(re);
            if (found)
                break;
        }
    }
    for (size_t i = 0; text && i < n && !found; i++) {
        const rein_tool *tool = rein_registry_get(reg, names[i]);
        for (size_t r = 0; tool && r < rein_tool_route_count(tool) && !found; r++) {
            pcre2_code *re = rein__router_compile(rein_tool_route_pattern(tool, r));
            struct rein__match m = {p, re, md};
            if (re && pcre2_match(re, (PCRE2_SPTR)text, strlen(text), 0, 0, md, NULL) >= 0)
                found = rein__plan_add(out, tool, captured_args(tool, &m, NULL));
            pcre2_code_free(re);
        }
    }
    rein_free(text);
    return found;
}

static bool route_part(const rein_registry *reg, const char *const *names, size_t n,
                       const struct rein__part *p, struct rein__route_plan *out,
                       pcre2_match_data *md)
{
    if (p->e <= p->b)
        return false;
    return route_rows(reg, names, n, p, out, md) || route_manifests(reg, names, n, p, out, md);
}

void rein__route_plan_release(struct rein__route_plan *plan)
{
    for (size_t i = 0; i < plan->n; i++)
        json_decref(plan->calls[i].args);
    plan->n = 0;
    for (size_t i = 0; i < plan->nskipped; i++)
        rein_free(plan->skipped[i]);
    plan->nskipped = 0;
}

/* Routes every part; false (and nothing in plan) unless all route. */
static bool route_all(const rein_registry *reg, const char *const *names, size_t n,
                      struct rein__part *parts, size_t nparts, struct rein__route_plan *plan,
                      pcre2_match_data *md)
{
    for (size_t i = 0; i < nparts; i++) {
        polish(&parts[i], md);
        if (!route_part(reg, names, n, &parts[i], plan, md)) {
            rein__route_plan_release(plan);
            return false;
        }
    }
    return true;
}

/* Routes the parts that route and keeps the others, as typed, in plan->skipped; false (and
 * nothing in plan) unless some routed and some did not. */
static bool route_some(const rein_registry *reg, const char *const *names, size_t n,
                       struct rein__part *parts, size_t nparts, struct rein__route_plan *plan,
                       pcre2_match_data *md)
{
    const struct rein__rtext *t = parts[0].t;

    for (size_t i = 0; i < nparts; i++) {
        polish(&parts[i], md);
        if (route_part(reg, names, n, &parts[i], plan, md))
            continue;
        if (parts[i].e <= parts[i].b)
            continue; /* nothing was asked there ("A, then") */
        char *typed =
            rein_strndup(t->orig + t->map[parts[i].b], t->map[parts[i].e] - t->map[parts[i].b]);
        if (!typed) {
            rein__route_plan_release(plan);
            return false;
        }
        plan->skipped[plan->nskipped++] = typed;
    }
    if (plan->n == 0 || plan->nskipped == 0) {
        rein__route_plan_release(plan);
        return false;
    }
    return true;
}

/* True when some string argument of plan's calls holds text: a request routed whole that
 * carries a step in an argument ("echo A, then B") accounts for that step. */
static bool plan_carries(const struct rein__route_plan *plan, const char *text)
{
    for (size_t i = 0; i < plan->n; i++) {
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)plan->calls[i].args, key, v)
        {
            if (json_is_string(v) && strstr(json_string_value(v), text))
                return true;
        }
    }
    return false;
}

/* A request in steps that route only in part: the routed steps and the skipped ones, unless
 * routing it whole (whole, already routed) accounts for every step. */
static bool prefer_steps(const struct rein__route_plan *whole, const struct rein__route_plan *steps)
{
    if (steps->n == 0)
        return false;
    for (size_t i = 0; i < steps->nskipped; i++) {
        if (!plan_carries(whole, steps->skipped[i]))
            return true;
    }
    return whole->n == 0;
}

rein_err rein__router_route(const rein_registry *reg, const char *const *names, size_t n,
                            const char *text, struct rein__route_plan *plan)
{
    struct rein__rtext t = {0};
    struct rein__part parts[MAX_PARTS], steps[MAX_PARTS];
    pcre2_match_data *md = pcre2_match_data_create(32, NULL);
    size_t nparts, nsteps = 0;
    rein_err rc = REIN_OK;

    memset(plan, 0, sizeof(*plan));
    plan->lang = rein__router_language(text);
    pthread_once(&engine_once, engine_compile);
    pthread_once(&rows_once, rows_compile);
    if (!md || normalise(text, &t) != REIN_OK) {
        rc = REIN_ENOMEM;
        goto out;
    }
    if (!reg)
        goto out;
    /* sequence words first; then "and"/"," before a verb; then the request as one part */
    nparts = split_on(engine_re[RE_SPLIT], &t, parts, MAX_PARTS, md);
    if (nparts > 1 && route_all(reg, names, n, parts, nparts, plan, md))
        goto out;
    if (nparts > 1) {
        nsteps = nparts;
        memcpy(steps, parts, sizeof(parts));
    }
    nparts = split_on(engine_re[RE_WEAK_SPLIT], &t, parts, MAX_PARTS, md);
    if (nparts > 1 && route_all(reg, names, n, parts, nparts, plan, md))
        goto out;
    parts[0] = (struct rein__part){.t = &t, .b = 0, .e = t.len};
    (void)route_all(reg, names, n, parts, 1, plan, md);
    if (nsteps > 1) {
        struct rein__route_plan some = {.lang = plan->lang};
        if (route_some(reg, names, n, steps, nsteps, &some, md) && prefer_steps(plan, &some)) {
            rein__route_plan_release(plan);
            *plan = some;
        } else {
            rein__route_plan_release(&some);
        }
    }
out:
    pcre2_match_data_free(md);
    rein_free(t.norm);
    rein_free(t.map);
    return rc;
}
