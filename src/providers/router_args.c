/*
 * The argument extractors of the rules router's rows (router_int.h): they read the words
 * people use for numbers, arithmetic, search terms, folders, limits, log files and levels, in
 * English and Chinese, and refuse what they cannot read, so a row that matched by its verb
 * still does not route a request it would misunderstand.
 */
#include "router_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

char *rein__args_trim(char *s)
{
    static const char *const edges[] = {" ", "\"", "'", ",", ":", "：", "，", "。", "、", NULL};
    size_t len = strlen(s);
    bool changed = true;

    while (changed && len) {
        changed = false;
        for (const char *const *e = edges; *e; e++) {
            size_t el = strlen(*e);
            if (len >= el && strncmp(s, *e, el) == 0) {
                memmove(s, s + el, len - el + 1);
                len -= el;
                changed = true;
            }
            if (len >= el && strncmp(s + len - el, *e, el) == 0) {
                s[len -= el] = '\0';
                changed = true;
            }
        }
    }
    return s;
}

/* ---- numbers ---- */

static const char *const en_units[] = {"zero",    "one",     "two",       "three",    "four",
                                       "five",    "six",     "seven",     "eight",    "nine",
                                       "ten",     "eleven",  "twelve",    "thirteen", "fourteen",
                                       "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
static const char *const en_tens[] = {"twenty", "thirty",  "forty",  "fifty",
                                      "sixty",  "seventy", "eighty", "ninety"};

/* An English number word at p ("seven", "forty", "hundred" multiplies); its length in *n. */
static bool en_number(const char *p, double *v, size_t *n)
{
    for (size_t i = 0; i < 20; i++) {
        size_t l = strlen(en_units[i]);
        if (strncasecmp(p, en_units[i], l) == 0 && !isalpha((unsigned char)p[l])) {
            *v = (double)i;
            *n = l;
            return true;
        }
    }
    for (size_t i = 0; i < 8; i++) {
        size_t l = strlen(en_tens[i]);
        if (strncasecmp(p, en_tens[i], l) == 0 && !isalpha((unsigned char)p[l])) {
            *v = (double)(20 + 10 * i);
            *n = l;
            return true;
        }
    }
    if (strncasecmp(p, "hundred", 7) == 0 && !isalpha((unsigned char)p[7])) {
        *v = 100;
        *n = 7;
        return true;
    }
    return false;
}

/* A Chinese numeral at p ("三", "十二", "两百五十", "一万"); its length in *n. */
static bool zh_number(const char *p, double *v, size_t *n)
{
    static const char *const digits[] = {"零", "一", "二", "三", "四",
                                         "五", "六", "七", "八", "九"};
    double total = 0, section = 0, digit = -1;
    size_t used = 0;

    for (;;) {
        const char *q = p + used;
        int d = -1;
        for (int i = 0; i < 10; i++) {
            if (strncmp(q, digits[i], 3) == 0)
                d = i;
        }
        if (strncmp(q, "两", 3) == 0 || strncmp(q, "兩", 3) == 0)
            d = 2;
        if (d >= 0) {
            digit = d;
        } else if (strncmp(q, "十", 3) == 0) {
            section += (digit < 0 ? 1 : digit) * 10;
            digit = -1;
        } else if (strncmp(q, "百", 3) == 0) {
            section += (digit < 0 ? 1 : digit) * 100;
            digit = -1;
        } else if (strncmp(q, "千", 3) == 0) {
            section += (digit < 0 ? 1 : digit) * 1000;
            digit = -1;
        } else if (strncmp(q, "万", 3) == 0 || strncmp(q, "萬", 3) == 0) {
            total += (section + (digit < 0 ? 0 : digit)) * 10000;
            section = 0;
            digit = -1;
        } else {
            break;
        }
        used += 3;
    }
    if (used == 0)
        return false;
    *v = total + section + (digit < 0 ? 0 : digit);
    *n = used;
    return true;
}

/* A number written with digits at p (sign, decimals); its length in *n. */
static bool digit_number(const char *p, double *v, size_t *n)
{
    char *end;
    const char *q = p;

    if (*q == '-' || *q == '+')
        q++;
    if (!isdigit((unsigned char)*q) && !(*q == '.' && isdigit((unsigned char)q[1])))
        return false;
    errno = 0;
    *v = strtod(p, &end);
    if (errno || !isfinite(*v) || end == p)
        return false;
    /* "1e3" reads, "3kg" stops at the unit */
    *n = (size_t)(end - p);
    return true;
}

static bool starts(const char *p, const char *word)
{
    size_t l = strlen(word);

    return strncasecmp(p, word, l) == 0 &&
           !(isalpha((unsigned char)word[l - 1]) && isalpha((unsigned char)p[l]));
}

/* Words between the numbers of a list that carry nothing. */
static size_t list_filler(const char *p)
{
    static const char *const words[] = {
        "and",    "&",        "or",        "numbers", "number", "values", "value", "the",
        "these",  "those",    "following", "list",    "set",    "of",     "data",  "和",
        "与",     "與",       "及",        "以及",    "跟",     "数字",   "數字",  "这些数",
        "這些數", "这几个数", "這幾個數",  "以下",    "下面",   "这些",   "這些",  "一组数",
        "一組數", "数据",     "數據",      "数",      "數",     ",",      ";",     "、",
        "[",      "]",        "(",         ")",       "{",      "}",      ":",     "$",
        "€",      "£",        "¥",         "￥",      "/",
    };
    for (size_t i = 0; i < REIN_ARRAY_SIZE(words); i++) {
        if (starts(p, words[i]))
            return strlen(words[i]);
    }
    return 0;
}

/* A unit after a number: ASCII letters, %, or a Chinese measure word. */
static size_t unit_after(const char *p)
{
    static const char *const zh[] = {"元",   "块",   "塊",   "个",   "個",   "分",   "秒",
                                     "米",   "次",   "人",   "度",   "斤",   "克",   "岁",
                                     "歲",   "件",   "台",   "天",   "小时", "小時", "毫秒",
                                     "公斤", "公里", "美元", "分钟", "分鐘"};
    size_t n = 0;

    while (isalpha((unsigned char)p[n]) || p[n] == '%')
        n++;
    if (n > 0 && strncasecmp(p, "and", 3) == 0 && n == 3)
        return 0;
    if (n)
        return n;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(zh); i++) {
        if (strncmp(p, zh[i], strlen(zh[i])) == 0)
            return strlen(zh[i]);
    }
    return 0;
}

json_t *rein__args_numbers(const char *text)
{
    json_t *a = json_array();
    const char *p = text;

    while (a && *p) {
        double v;
        size_t n;
        if (isspace((unsigned char)*p)) {
            p++;
            continue;
        }
        if ((n = list_filler(p)) > 0) {
            p += n;
            continue;
        }
        if (!digit_number(p, &v, &n) && !en_number(p, &v, &n) && !zh_number(p, &v, &n)) {
            json_decref(a);
            return NULL;
        }
        p += n;
        if (*p == ' ' && unit_after(p + 1) && !list_filler(p + 1))
            p++;
        p += unit_after(p);
        json_array_append_new(a, fabs(v) < 9.0e15 && v == floor(v) ? json_integer((json_int_t)v)
                                                                   : json_real(v));
    }
    if (a && json_array_size(a) == 0) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* ---- statistics ---- */

const char *rein__args_statistic(const char *word, size_t len)
{
    static const struct {
        const char *word, *op;
    } words[] = {
        {"mean", "mean"},
        {"average", "mean"},
        {"avg", "mean"},
        {"arithmetic mean", "mean"},
        {"平均值", "mean"},
        {"平均数", "mean"},
        {"平均數", "mean"},
        {"平均", "mean"},
        {"均值", "mean"},
        {"sum", "sum"},
        {"total", "sum"},
        {"summation", "sum"},
        {"总和", "sum"},
        {"總和", "sum"},
        {"和", "sum"},
        {"合计", "sum"},
        {"合計", "sum"},
        {"总数", "sum"},
        {"總數", "sum"},
        {"min", "min"},
        {"minimum", "min"},
        {"smallest", "min"},
        {"lowest", "min"},
        {"least", "min"},
        {"最小值", "min"},
        {"最小", "min"},
        {"max", "max"},
        {"maximum", "max"},
        {"largest", "max"},
        {"biggest", "max"},
        {"highest", "max"},
        {"greatest", "max"},
        {"最大值", "max"},
        {"最大", "max"},
        {"median", "median"},
        {"中位数", "median"},
        {"中位數", "median"},
        {"中值", "median"},
        {"standard deviation", "stdev"},
        {"std dev", "stdev"},
        {"stdev", "stdev"},
        {"std", "stdev"},
        {"sd", "stdev"},
        {"标准差", "stdev"},
        {"標準差", "stdev"},
        {"product", "product"},
        {"乘积", "product"},
        {"乘積", "product"},
        {"积", "product"},
        {"積", "product"},
        {"count", "count"},
        {"number of items", "count"},
        {"个数", "count"},
        {"個數", "count"},
        {"数量", "count"},
        {"數量", "count"},
    };
    char w[64];
    size_t n = 0;

    /* spaces inside the word are one space; a trailing "s" ("averages") is dropped */
    for (size_t i = 0; i < len && n + 1 < sizeof(w); i++) {
        if (isspace((unsigned char)word[i])) {
            if (n && w[n - 1] != ' ')
                w[n++] = ' ';
        } else {
            w[n++] = word[i];
        }
    }
    while (n && w[n - 1] == ' ')
        n--;
    w[n] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < REIN_ARRAY_SIZE(words); i++) {
            if (strcasecmp(w, words[i].word) == 0)
                return words[i].op;
        }
        if (n < 2 || (w[n - 1] != 's' && w[n - 1] != 'S'))
            break;
        w[--n] = '\0';
    }
    return NULL;
}

const char *rein__args_statistic_at(const char *p, size_t *len)
{
    const char *best = NULL;

    *len = 0;
    /* the longest word that is a statistic, with a plural "s" */
    for (size_t n = 1; p[n - 1] && n <= 24; n++) {
        const char *op;
        if ((unsigned char)p[n] >= 0x80 && (unsigned char)p[n] < 0xC0)
            continue; /* inside a character */
        if (isalpha((unsigned char)p[n - 1]) && isalpha((unsigned char)p[n]))
            continue; /* inside a word */
        op = rein__args_statistic(p, n);
        if (op) {
            best = op;
            *len = n;
        }
    }
    return best;
}

/* ---- arithmetic in words ---- */

struct expr {
    struct rein_buf out;
    size_t operand;  /* where the last operand starts in out */
    int close_after; /* ")" to add after the next operand */
    bool failed, has_op;
};

static void emit(struct expr *x, const char *s)
{
    if (rein_buf_adds(&x->out, s))
        x->failed = true;
}

static void operand_done(struct expr *x)
{
    while (x->close_after > 0) {
        emit(x, ")");
        x->close_after--;
    }
}

static void operand_start(struct expr *x)
{
    x->operand = x->out.len;
}

/* Wraps the last operand: "16" → "sqrt(16)", "2" → "(2)^2" */
static void wrap_last(struct expr *x, const char *before, const char *after)
{
    struct rein_buf b;

    rein_buf_init(&b, 0);
    if (rein_buf_add(&b, x->out.ptr, x->operand) || rein_buf_adds(&b, before) ||
        rein_buf_add(&b, x->out.ptr + x->operand, x->out.len - x->operand) ||
        rein_buf_adds(&b, after)) {
        x->failed = true;
    } else {
        rein_buf_reset(&x->out);
        if (rein_buf_add(&x->out, b.ptr, b.len))
            x->failed = true;
    }
    rein_buf_release(&b);
    x->has_op = true;
}

struct phrase {
    const char *words; /* lower case; a space matches any run of spaces */
    const char *emit;  /* what it becomes; NULL for the special ones below */
    int kind; /* 0 plain, 1 function of the next operand, 2 postfix wrap, 3 skip, 4 power */
};

static const struct phrase phrases[] = {
    {"multiplied by", "*", 0},
    {"divided by", "/", 0},
    {"to the power of", "^", 0},
    {"raised to the power of", "^", 0},
    {"raised to", "^", 0},
    {"to the", "^", 0},
    {"square root of", "sqrt", 1},
    {"the square root of", "sqrt", 1},
    {"cube root of", "cbrt", 1},
    {"sqrt of", "sqrt", 1},
    {"root of", "sqrt", 1},
    {"absolute value of", "abs", 1},
    {"log of", "log10", 1},
    {"natural log of", "ln", 1},
    {"plus", "+", 0},
    {"add", "+", 0},
    {"minus", "-", 0},
    {"less", "-", 0},
    {"times", "*", 0},
    {"multiply", "*", 0},
    {"over", "/", 0},
    {"mod", "%", 0},
    {"modulo", "%", 0},
    {"power", "^", 0},
    {"squared", "^2", 2},
    {"cubed", "^3", 2},
    {"of", "*", 0}, /* "half of", "15% of 200": a multiplication */
    {"x", "*", 0},
    {"加上", "+", 0},
    {"加", "+", 0},
    {"減去", "-", 0},
    {"减去", "-", 0},
    {"減", "-", 0},
    {"减", "-", 0},
    {"乘以", "*", 0},
    {"乘上", "*", 0},
    {"乘", "*", 0},
    {"除以", "/", 0},
    {"次方", "^", 4},
    {"次幂", "^", 4},
    {"次冪", "^", 4},
    {"的平方根", "sqrt", 2},
    {"的立方根", "cbrt", 2},
    {"的平方", "^2", 2},
    {"的立方", "^3", 2},
    {"平方根", "sqrt", 1},
    {"根号", "sqrt", 1},
    {"根號", "sqrt", 1},
    {"开根号", "sqrt", 1},
    {"的", "*", 0}, /* "200 的 15%" */
    {"the", "", 3},
    {"value", "", 3},
    {"result", "", 3},
    {"answer", "", 3},
};

static const char *const functions[] = {"sqrt",  "cbrt", "abs", "ln",  "log10", "log",
                                        "sin",   "cos",  "tan", "exp", "floor", "ceil",
                                        "round", "min",  "max", "pi",  NULL};

/* Matches a phrase at p (spaces in it match runs of spaces); its length in *n. */
static bool phrase_at(const char *p, const char *words, size_t *n)
{
    size_t i = 0, j = 0;

    while (words[j]) {
        if (words[j] == ' ') {
            if (!isspace((unsigned char)p[i]))
                return false;
            while (isspace((unsigned char)p[i]))
                i++;
            j++;
            continue;
        }
        if (tolower((unsigned char)p[i]) != (unsigned char)words[j])
            return false;
        i++;
        j++;
    }
    if (isalpha((unsigned char)words[j - 1]) && isalpha((unsigned char)p[i]))
        return false;
    *n = i;
    return true;
}

/* A number at p with its percent sign or word: "15%" → "(15/100)". */
static bool expr_number(struct expr *x, const char **pp)
{
    const char *p = *pp;
    double v = 0;
    size_t n = 0;
    char num[64];

    if (!(isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) &&
        !en_number(p, &v, &n) && !zh_number(p, &v, &n))
        return false;
    if (isdigit((unsigned char)*p) || *p == '.') {
        char *end;
        errno = 0;
        v = strtod(p, &end);
        n = (size_t)(end - p);
        if (errno)
            return false;
    }
    if (strncmp(p, "百分之", 9) == 0)
        return false;
    p += n;
    while (*p == ' ' && (p[1] == '%' || strncasecmp(p + 1, "percent", 7) == 0))
        p++;
    if (fabs(v) >= 1e15)
        return false;
    operand_start(x);
    snprintf(num, sizeof(num), "%.15g", v);
    if (*p == '%' || strncasecmp(p, "percent", 7) == 0) {
        p += *p == '%' ? 1 : 7;
        emit(x, "(");
        emit(x, num);
        emit(x, "/100)");
    } else {
        emit(x, num);
    }
    *pp = p;
    operand_done(x);
    return true;
}

char *rein__args_expression(const char *text)
{
    struct expr x = {.operand = 0};
    const char *p = text;
    size_t digits = 0;

    rein_buf_init(&x.out, 0);
    while (*p && !x.failed) {
        size_t n = 0;
        bool matched = false;
        if (isspace((unsigned char)*p)) {
            p++;
            continue;
        }
        if (strncmp(p, "百分之", 9) == 0) { /* 百分之十五 → (15/100) */
            const char *q = p + 9;
            double v;
            char num[64];
            if (!digit_number(q, &v, &n) && !zh_number(q, &v, &n))
                break;
            operand_start(&x);
            snprintf(num, sizeof(num), "(%.15g/100)", v);
            emit(&x, num);
            p = q + n;
            operand_done(&x);
            digits++;
            continue;
        }
        if (expr_number(&x, &p)) {
            digits++;
            continue;
        }
        if (strchr("+-*/^%", *p)) {
            if (p[0] == '*' && p[1] == '*') {
                emit(&x, "^");
                p += 2;
            } else {
                emit(&x, (char[2]){*p, 0});
                p++;
            }
            x.has_op = true;
            continue;
        }
        if (*p == '(') {
            operand_start(&x);
            emit(&x, "(");
            p++;
            continue;
        }
        if (*p == ')' || *p == ',') {
            emit(&x, (char[2]){*p, 0});
            p++;
            if (x.out.ptr[x.out.len - 1] == ')')
                operand_done(&x);
            continue;
        }
        if (*p == '=' || *p == '?') { /* "2+2=", "2+2=?" */
            p++;
            continue;
        }
        for (size_t i = 0; i < REIN_ARRAY_SIZE(phrases) && !matched; i++) {
            if (!phrase_at(p, phrases[i].words, &n))
                continue;
            matched = true;
            p += n;
            if (phrases[i].kind == 1) { /* a function of what follows */
                operand_start(&x);
                emit(&x, phrases[i].emit);
                emit(&x, "(");
                x.close_after++;
                x.has_op = true;
            } else if (phrases[i].kind == 2) { /* wraps what came before */
                if (phrases[i].emit[0] == '^')
                    wrap_last(&x, "(", phrases[i].emit[0] ? ")" : "");
                if (phrases[i].emit[0] == '^')
                    emit(&x, phrases[i].emit);
                else
                    wrap_last(&x, phrases[i].emit[0] == 's' ? "sqrt(" : "cbrt(", ")");
            } else if (phrases[i].kind == 4) { /* "2的10次方": the "的" before was a power */
                char *star = strrchr(x.out.ptr, '*');
                if (star)
                    *star = '^';
                else
                    x.failed = true;
            } else if (phrases[i].kind == 0) {
                /* "of" after a number is a product only when a number follows */
                emit(&x, phrases[i].emit);
                x.has_op = true;
            }
        }
        if (matched)
            continue;
        for (const char *const *f = functions; *f && !matched; f++) {
            size_t l = strlen(*f);
            if (strncasecmp(p, *f, l) == 0 && !isalpha((unsigned char)p[l])) {
                operand_start(&x);
                emit(&x, *f);
                p += l;
                matched = true;
                x.has_op = true;
                if (strcmp(*f, "pi") == 0)
                    digits++;
            }
        }
        if (!matched && x.out.len > 0 && isdigit((unsigned char)x.out.ptr[x.out.len - 1]) &&
            (n = unit_after(p)) > 0 && !isalpha((unsigned char)p[n])) {
            p += n; /* a unit right after a number: "3.5kg", "10 km", "5 元" */
            continue;
        }
        if (!matched)
            break; /* a word that is not arithmetic */
    }
    operand_done(&x);
    if (*p || x.failed || !x.has_op || digits == 0 || x.out.len == 0) {
        rein_buf_release(&x.out);
        return NULL;
    }
    /* "of" and "的" stand for * only between operands: drop the ones that ended up elsewhere */
    char *s = rein_buf_detach(&x.out, NULL);
    size_t len;

    if (!s)
        return NULL;
    len = strlen(s);
    while (len && strchr("*+/^", s[len - 1]))
        s[--len] = '\0';
    if (len == 0 || strchr("*/^", s[0]) || strstr(s, "**") || strstr(s, "(*") || strstr(s, "*)") ||
        strstr(s, "+*") || strstr(s, "-*") || strstr(s, "/*")) {
        rein_free(s);
        return NULL;
    }
    /* a bare number is not a calculation */
    bool op = false;
    for (size_t i = 1; i < len; i++)
        op |= strchr("+-*/^%(", s[i]) != NULL;
    if (!op && !isalpha((unsigned char)s[0])) {
        rein_free(s);
        return NULL;
    }
    return s;
}

/* ---- search terms, folders, limits ---- */

enum {
    A_QUOTED,
    A_LIMIT,
    A_DIR,
    A_NOISE_PLACE,
    A_LEAD,
    A_TAIL,
    A_LOG_PATH,
    A_LEVEL_ERROR,
    A_LEVEL_WARN,
    A_LEVEL_FATAL,
    A_LEVEL_INFO,
    A_LEVEL_DEBUG,
    A_COUNT
};

#define PLACE_WORDS                                                                                                 \
    "(?:docs|documents|documentation|files|repo|repository|project|codebase|code|notes|source|"                     \
    "sources|workspace|folder|directory|everything|文件|文档|文檔|檔案|资料|資料|项目|項目|代码|" \
    "代碼|笔记|筆記)"
#define PATH_CHARS "[\\w.~/\\-]"

static const char *const arg_patterns[A_COUNT] = {
    [A_QUOTED] = "\"([^\"]+)\"|(?:^|(?<=[\\s:(,]))'([^']+)'(?=$|[\\s,.?!:;)])|'([^']+)'$",
    [A_LIMIT] = "\\b(?:at\\s+most|up\\s+to|no\\s+more\\s+than|limit(?:ed)?(?:\\s+to)?|"
                "max(?:imum)?(?:\\s+of)?|top|first|only(?:\\s+the\\s+first)?|return|show)\\s+"
                "(\\d+)(?:\\s+(?:results?|matches|hits|lines|files|entries|items|records|ones|"
                "errors|warnings|occurrences))?\\b|\\b(\\d+)\\s+(?:results?|matches|hits)\\b|"
                "(?:最多|至多|不超过|不超過|只要?|仅|僅|前)\\s*(?:返回|显示|顯示|列出|给出|給出|"
                "要|看)?\\s*前?\\s*(\\d+)\\s*(?:条|條|个|個|处|處|项|項|筆|行)?(?:结果|結果|记录|"
                "記錄|匹配)?|(?:返回|显示|顯示|列出)\\s*(\\d+)\\s*(?:条|條|个|個|处|處|项|項|筆)"
                "(?:结果|結果|记录|記錄)?",
    [A_DIR] =
        "\\b(?:in|under|inside|within|from|across|at)\\s+(?:the\\s+|my\\s+|our\\s+)?"
        "(?:folder|directory|dir)\\s+(" PATH_CHARS "+)|"
        "\\b(?:in|under|inside|within|from|across)\\s+(?:the\\s+|my\\s+|our\\s+)?"
        "(" PATH_CHARS "+?)\\s+(?:folder|directory|dir|subfolder|subdirectory)\\b|"
        "\\b(?:in|under|inside|within|from)\\s+((?:\\.{1,2}/|/|~/)?[\\w.\\-]+/[\\w./\\-]*|"
        "\\.{1,2}/[\\w./\\-]*)|"
        "(?:在|到|从|從)\\s*(" PATH_CHARS "+?)\\s*(?:目录|目錄|文件夹|文件夾|資料夾|"
        "路径|路徑)\\s*(?:下面|下|里面|裡面|里|裡|中|内|內)?|"
        "(?:在|到|从|從)\\s*((?:\\.{1,2}/|/)?[\\w.\\-]+/[\\w./\\-]*)\\s*(?:下面|下|里面|"
        "裡面|里|裡|中|内|內)?|(?:目录|目錄|文件夹|文件夾|資料夾)\\s*(" PATH_CHARS
        "+)\\s*(?:下面|下|里面|裡面|里|裡|中|内|內)?|"
        "(" PATH_CHARS "+)\\s*(?:目录|目錄|文件夹|文件夾|資料夾)\\s*(?:下面|下|里面|裡面|里|裡|"
        "中|内|內)?\\s*的?",
    [A_NOISE_PLACE] = "\\b(?:in|across|through|within|inside|throughout)\\s+(?:the\\s+|my\\s+|"
                      "our\\s+|all\\s+(?:the\\s+|my\\s+)?|any\\s+)?" PLACE_WORDS "\\b|"
                      "(?:在|从|從)\\s*(?:(?:所有|全部|各个|各個)\\s*的?\\s*)?" PLACE_WORDS
                      "\\s*(?:里面|裡面|里|裡|中|内|內)?",
    [A_LEAD] = "^\\s*(?:for\\s+|(?:and|or|then|also|with)\\s+|the\\s+(?:words?|text|strings?|terms?"
               "|phrase)\\s+|"
               "(?:all\\s+|any\\s+)?(?:mentions?|occurrences?|references?|instances?|uses?)\\s+"
               "(?:of|to)\\s+|(?:all\\s+|any\\s+|the\\s+)?(?:files?|lines?|places?|documents?|"
               "docs?|notes?|matches)\\s+(?:that\\s+|which\\s+|where\\s+)?(?:contain(?:s|ing)?|"
               "mention(?:s|ing)?|with|having|include|includes|including|matching|about|"
               "referencing|say(?:s|ing)?)\\s+|(?:anything|everything|something|stuff|things|"
               "info(?:rmation)?)\\s+(?:about|on|regarding|related\\s+to|with)\\s+|"
               "(?:the\\s+)?(?:docs?|documentation|files?|notes?|repo|code|codebase|project)\\s+"
               "for\\s+|where\\s+|(?:the\\s+|a\\s+|an\\s+)|包含|含有|包括|有关|有關|关于|關於|"
               "所有|全部|一下|一遍|内容|內容)",
    [A_TAIL] = "(?:\\s+(?:and|or|then|also|with)|\\s+(?:is|are)\\s+(?:mentioned|used|defined|"
               "referenced|written)|"
               "\\s+(?:mentioned|used|defined|referenced)|\\s+(?:appears?|shows?\\s+up|occurs?)|"
               "\\s+(?:in\\s+)?(?:any|which|what)\\s+files?|\\s+(?:files?|docs?|lines?)|"
               "\\s*的?(?:文件|文档|文檔|檔案|行|内容|內容|地方|位置|资料|資料)|"
               "\\s*(?:在|出现在|出現在)?(?:哪些|哪个|哪個|哪里|哪裡|哪儿|哪兒)(?:文件|文档|檔案)?"
               "(?:里|裡|中)?(?:出现|出現|提到|用到)?(?:过|過)?|\\s*(?:出现|出現)(?:过|過)?)\\s*$",
    [A_LOG_PATH] = "(?<![\\w./~\\-])((?:~|\\.{1,2})?/?(?:[\\w.\\-]+/)*[\\w.\\-]*[\\w\\-]\\."
                   "(?:log|logs|out|err|jsonl|ndjson)(?:\\.\\d+)?|/var/log/[\\w./\\-]+|"
                   "(?:[\\w.\\-]+/)*[\\w.\\-]*logs?/[\\w.\\-]+\\.(?:txt|json)|"
                   "(?:[\\w.\\-]+/)+[\\w\\-]+\\.(?:txt|json)(?=.*(?:log|日志|日誌)))(?![\\w/])",
    [A_LEVEL_ERROR] =
        "\\b(?:errors?|err|failures?|failed|fails|exceptions?|problems?|issues?|"
        "bad\\s+lines?)\\b|错误|錯誤|报错|報錯|异常|異常|失败|失敗|出错|出錯|问题|問題",
    [A_LEVEL_WARN] = "\\b(?:warnings?|warn|warns)\\b|警告|告警",
    [A_LEVEL_FATAL] = "\\b(?:fatal|critical|crit|crash(?:es)?|panics?|emergenc(?:y|ies))\\b|"
                      "严重|嚴重|致命|崩溃|崩潰",
    [A_LEVEL_INFO] = "\\b(?:info(?:rmational)?)\\b|信息级别|資訊",
    [A_LEVEL_DEBUG] = "\\b(?:debug|trace)\\b|调试|調試|除錯",
};

static pcre2_code *arg_re[A_COUNT];
static pthread_once_t args_once = PTHREAD_ONCE_INIT;

static void args_compile(void)
{
    for (int i = 0; i < A_COUNT; i++)
        arg_re[i] = rein__router_compile(arg_patterns[i]);
}

/* Finds re in s; the whole match in [*b, *e) and the first group that took part in [*gb, *ge). */
static bool search(int which, const char *s, size_t *b, size_t *e, size_t *gb, size_t *ge)
{
    pcre2_match_data *md;
    PCRE2_SIZE *ov;
    int rc;

    pthread_once(&args_once, args_compile);
    if (!arg_re[which] || !(md = pcre2_match_data_create_from_pattern(arg_re[which], NULL)))
        return false;
    rc = pcre2_match(arg_re[which], (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL);
    if (rc >= 0) {
        ov = pcre2_get_ovector_pointer(md);
        *b = ov[0];
        *e = ov[1];
        *gb = *ge = ov[0];
        for (int i = 1; i < rc; i++) {
            if (ov[2 * i] != PCRE2_UNSET) {
                *gb = ov[2 * i];
                *ge = ov[2 * i + 1];
                break;
            }
        }
    }
    pcre2_match_data_free(md);
    return rc >= 0;
}

/* Blanks s[b, e) out with spaces (its length stays). */
static void blank(char *s, size_t b, size_t e)
{
    memset(s + b, ' ', e - b);
}

void rein__args_modifiers(char *text, long *limit, char **dir, char **quoted)
{
    size_t b, e, gb, ge;

    if (quoted && search(A_QUOTED, text, &b, &e, &gb, &ge) && ge > gb) {
        *quoted = rein_strndup(text + gb, ge - gb);
        blank(text, b, e);
        memset(text + b, '\x01', 1); /* where the term was */
    }
    if (limit && search(A_LIMIT, text, &b, &e, &gb, &ge) && ge > gb) {
        *limit = strtol(text + gb, NULL, 10);
        blank(text, b, e);
    }
    if (dir && search(A_DIR, text, &b, &e, &gb, &ge) && ge > gb) {
        *dir = rein_strndup(text + gb, ge - gb);
        blank(text, b, e);
    }
    while (search(A_NOISE_PLACE, text, &b, &e, &gb, &ge) && e > b)
        blank(text, b, e);
}

char *rein__args_search_term(const char *text)
{
    char *s = rein_strdup(text);
    bool changed = true;
    size_t b, e, gb, ge, words = 1;

    if (!s)
        return NULL;
    /* runs of spaces (where modifiers were taken out) are one space */
    size_t w = 0;
    for (size_t r = 0; s[r]; r++) {
        if (s[r] == ' ' && w > 0 && s[w - 1] == ' ')
            continue;
        s[w++] = s[r];
    }
    s[w] = '\0';
    rein__args_trim(s);
    while (changed && *s) {
        changed = false;
        if (search(A_LEAD, s, &b, &e, &gb, &ge) && e > b && b == 0) {
            memmove(s, s + e, strlen(s + e) + 1);
            changed = true;
        }
        if (search(A_TAIL, s, &b, &e, &gb, &ge) && e > b && b > 0) {
            s[b] = '\0';
            changed = true;
        }
        rein__args_trim(s);
    }
    for (const char *p = s; *p; p++)
        words += *p == ' ';
    /* a term is a few words; a sentence means the request was not a search */
    if (!*s || strlen(s) > 80 || words > 5 || strchr(s, '\x01')) {
        rein_free(s);
        return NULL;
    }
    return s;
}

char *rein__args_log_path(const char *text)
{
    size_t b, e, gb, ge;

    if (!search(A_LOG_PATH, text, &b, &e, &gb, &ge) || ge <= gb)
        return NULL;
    return rein_strndup(text + gb, ge - gb);
}

const char *rein__args_log_level(const char *text)
{
    static const struct {
        int which;
        const char *level;
    } levels[] = {
        {A_LEVEL_DEBUG, "debug"}, {A_LEVEL_INFO, "info"},   {A_LEVEL_WARN, "warn"},
        {A_LEVEL_ERROR, "error"}, {A_LEVEL_FATAL, "fatal"},
    };
    size_t b, e, gb, ge;

    /* the least severe level named is the minimum: "warnings and errors" is warn */
    for (size_t i = 0; i < REIN_ARRAY_SIZE(levels); i++) {
        if (search(levels[i].which, text, &b, &e, &gb, &ge))
            return levels[i].level;
    }
    return NULL;
}
