/*
 * Tool-name checking and repair: the first two steps of the call pipeline.
 *
 * Models misspell tool names in a handful of recurring ways (docs/DESIGN.md [pipeline]): wrong
 * case, camelCase or spaces for snake_case, a "functions." prefix copied from their own
 * training format, a one-letter slip, or something that is not a name at all ("⚙"). The
 * check refuses what cannot be a name; the repair tries each correction in a fixed order from
 * the most to the least certain and accepts a correction only when exactly one tool matches,
 * so a repair never has to guess between two tools.
 */
#include "tools_int.h"

#include <pthread.h>
#include <string.h>
#include <strings.h>

/* Decodes one UTF-8 sequence at s[0..len); returns its length, or 0 when it is malformed. */
static size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
    size_t n;
    uint32_t c;

    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        n = 2;
        c = s[0] & 0x1fu;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        n = 3;
        c = s[0] & 0x0fu;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        n = 4;
        c = s[0] & 0x07u;
    } else {
        return 0;
    }
    if (n > len)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3fu);
    }
    /* Overlong forms, surrogates and values past U+10FFFF are not UTF-8. */
    if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
        (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return n;
}

/*
 * Unicode letters and digits beyond ASCII come from PCRE2's property tables, compiled once.
 * The patterns are used only for names with non-ASCII bytes, which are rare.
 */
static pcre2_code *alnum_re, *space_re;
static pthread_once_t re_once = PTHREAD_ONCE_INIT;

static void compile_class_patterns(void)
{
    int errcode;
    PCRE2_SIZE off;

    alnum_re = pcre2_compile((PCRE2_SPTR) "[\\p{L}\\p{N}]", PCRE2_ZERO_TERMINATED,
                             PCRE2_UTF | PCRE2_UCP, &errcode, &off, NULL);
    space_re = pcre2_compile((PCRE2_SPTR) "^[\\s\\p{Z}]+$", PCRE2_ZERO_TERMINATED,
                             PCRE2_UTF | PCRE2_UCP, &errcode, &off, NULL);
}

/* 1 when the pattern matches name, 0 when not, -1 when it could not be run. */
static int class_match(pcre2_code *re, const char *name, size_t len)
{
    pcre2_match_data *md;
    int rc;

    if (!re)
        return -1;
    md = pcre2_match_data_create(1, NULL);
    if (!md)
        return -1;
    rc = pcre2_match(re, (PCRE2_SPTR)name, len, 0, PCRE2_NO_UTF_CHECK, md, NULL);
    pcre2_match_data_free(md);
    if (rc >= 0)
        return 1;
    return rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
}

/* Shows a name in a message: at most 40 bytes of it, cut on a UTF-8 boundary. */
static int shown_len(const char *name, size_t len)
{
    size_t n = len < 40 ? len : 40;

    while (n > 0 && n < len && ((unsigned char)name[n] & 0xc0) == 0x80)
        n--;
    return (int)n;
}

rein_err rein_tool_name_check(const char *name, size_t len, rein_error *why)
{
    const unsigned char *s = (const unsigned char *)name;
    bool ascii = true, alnum = false, spaces = true;

    if (!name || len == 0)
        return rein_error_set(why, REIN_EINVALID, "the name is empty");
    if (len > REIN_TOOL_NAME_MAX)
        return rein_error_set(why, REIN_EINVALID,
                              "the name is %zu bytes long; tool names are at most %d bytes", len,
                              REIN_TOOL_NAME_MAX);
    /* The common case: printable ASCII with a letter or digit. */
    for (size_t i = 0; i < len && s[i] > 0x20 && s[i] < 0x7f; i++) {
        alnum |= (s[i] >= '0' && s[i] <= '9') || ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z');
        if (i + 1 == len && alnum)
            return REIN_OK;
    }
    alnum = false;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_decode(s + i, len - i, &cp);
        if (n == 0)
            return rein_error_set(why, REIN_EINVALID,
                                  "the name is not valid UTF-8 (byte %zu is 0x%02x)", i, s[i]);
        if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
            return rein_error_set(why, REIN_EINVALID,
                                  "the name contains a control character (U+%04X at byte %zu)",
                                  (unsigned)cp, i);
        if (cp >= 0x80)
            ascii = false;
        if ((cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z'))
            alnum = true;
        if (cp != ' ')
            spaces = false;
        i += n;
    }
    if (alnum)
        return REIN_OK;
    if (!ascii) {
        pthread_once(&re_once, compile_class_patterns);
        if (class_match(space_re, name, len) == 1)
            spaces = true;
        else if (class_match(alnum_re, name, len) == 1)
            return REIN_OK;
    }
    if (spaces)
        return rein_error_set(why, REIN_EINVALID, "the name is only whitespace");
    return rein_error_set(why, REIN_EINVALID, "the name \"%.*s\" has no letters or digits",
                          shown_len(name, len), name);
}

void rein__tools_name_lower(const char *name, size_t len, char *out)
{
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        out[i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
    }
    out[len] = '\0';
}

static bool is_sep(char c)
{
    return c == ' ' || c == '-' || c == '_' || c == '.' || c == '/' || c == ':';
}

static bool is_upper(char c)
{
    return c >= 'A' && c <= 'Z';
}

static bool is_lower_or_digit(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

size_t rein__tools_name_normalize(const char *name, size_t len, char *out)
{
    size_t n = 0;
    bool pending_sep = false;

    for (size_t i = 0; i < len && n < REIN__TOOLS_NAME_NORM_MAX; i++) {
        char c = name[i];
        if (is_sep(c)) {
            pending_sep = n > 0;
            continue;
        }
        /* A word starts at an upper-case letter after a lower-case one or a digit
         * ("fileSearch"), or before the last capital of a run ("HTTPServer" → http_server). */
        if (is_upper(c) && i > 0 &&
            (is_lower_or_digit(name[i - 1]) ||
             (is_upper(name[i - 1]) && i + 1 < len && name[i + 1] >= 'a' && name[i + 1] <= 'z')))
            pending_sep = n > 0;
        if (pending_sep && n < REIN__TOOLS_NAME_NORM_MAX - 1)
            out[n++] = '_';
        pending_sep = false;
        out[n++] = is_upper(c) ? (char)(c + 32) : c;
    }
    out[n] = '\0';
    return n;
}

size_t rein__tools_edit_distance(const char *a, size_t alen, const char *b, size_t blen,
                                 size_t limit)
{
    /* Three rows of the optimal-string-alignment table; names are at most 128 bytes here. */
    size_t rows[3][REIN__TOOLS_NAME_NORM_MAX + 2];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];

    if (alen > REIN__TOOLS_NAME_NORM_MAX || blen > REIN__TOOLS_NAME_NORM_MAX)
        return limit + 1;
    if ((alen > blen ? alen - blen : blen - alen) > limit)
        return limit + 1;
    for (size_t j = 0; j <= blen; j++)
        prev[j] = j;
    for (size_t i = 1; i <= alen; i++) {
        size_t row_min;
        cur[0] = i;
        row_min = cur[0];
        for (size_t j = 1; j <= blen; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t v = prev[j] + 1;
            if (cur[j - 1] + 1 < v)
                v = cur[j - 1] + 1;
            if (prev[j - 1] + cost < v)
                v = prev[j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < v)
                v = prev2[j - 2] + 1;
            cur[j] = v;
            if (v < row_min)
                row_min = v;
        }
        if (row_min > limit)
            return limit + 1;
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[blen];
}

/*
 * The largest distance accepted for a tool whose normalised name has len bytes: 2 in general
 * (the rule), but never more than a third of the name, so a two-letter name is never
 * "repaired" into another two-letter name ("rm" is not "ls").
 */
static size_t distance_limit(size_t len)
{
    size_t lim = len / 3;

    return lim < 2 ? lim : 2;
}

enum match_form { FORM_LOWER, FORM_NORM };

/* The one tool whose form equals key, or NULL; *several is set when more than one does. */
static const rein_tool *unique_by(const rein_registry *reg, enum match_form form, const char *key,
                                  bool *several)
{
    const rein_tool *found = NULL;

    for (size_t i = 0; i < reg->ntools; i++) {
        const rein_tool *t = reg->tools[i];
        if (strcmp(form == FORM_LOWER ? t->lower : t->norm, key) != 0)
            continue;
        if (found) {
            *several = true;
            return NULL;
        }
        found = t;
    }
    return found;
}

/* Exact, case-insensitive and separator-normalised matches of name. */
static const rein_tool *match_forms(const rein_registry *reg, const char *name, size_t len,
                                    enum rein_repair *how, bool *several)
{
    char lower[REIN_TOOL_NAME_MAX + 1], norm[REIN__TOOLS_NAME_NORM_MAX + 1];
    const rein_tool *t;

    t = rein__tools_lookup(reg, name, len);
    if (t) {
        *how = REIN_REPAIR_EXACT;
        return t;
    }
    if (len > REIN_TOOL_NAME_MAX)
        return NULL;
    rein__tools_name_lower(name, len, lower);
    t = unique_by(reg, FORM_LOWER, lower, several);
    if (t) {
        *how = REIN_REPAIR_CASE;
        return t;
    }
    rein__tools_name_normalize(name, len, norm);
    t = unique_by(reg, FORM_NORM, norm, several);
    if (t)
        *how = REIN_REPAIR_SEPARATORS;
    return t;
}

/* Length of a "functions." or "tools." prefix (any case) at the start of name, else 0. */
static size_t prefix_len(const char *name, size_t len)
{
    static const char *const prefixes[] = {"functions.", "tools."};

    for (size_t i = 0; i < REIN_ARRAY_SIZE(prefixes); i++) {
        size_t n = strlen(prefixes[i]);
        if (len > n && strncasecmp(name, prefixes[i], n) == 0)
            return n;
    }
    return 0;
}

static const rein_tool *nearest(const rein_registry *reg, const char *name, size_t len,
                                bool *several)
{
    char norm[REIN__TOOLS_NAME_NORM_MAX + 1];
    size_t nlen = rein__tools_name_normalize(name, len, norm);
    const rein_tool *found = NULL;

    for (size_t i = 0; i < reg->ntools; i++) {
        const rein_tool *t = reg->tools[i];
        size_t tlen = strlen(t->norm), lim = distance_limit(tlen);
        if (lim == 0 || rein__tools_edit_distance(norm, nlen, t->norm, tlen, lim) > lim)
            continue;
        if (found) {
            *several = true;
            return NULL;
        }
        found = t;
    }
    return found;
}

rein_err rein__tools_list_names(const rein_registry *reg, struct rein_buf *b)
{
    rein_err rc = REIN_OK;

    rein__tools_rdlock(reg);
    for (size_t i = 0; i < reg->ntools && !rc; i++)
        rc = rein_buf_addf(b, "%s%s", i ? ", " : "", reg->tools[i]->id);
    if (!rc && reg->ntools == 0)
        rc = rein_buf_adds(b, "(none)");
    rein__tools_unlock(reg);
    return rc;
}

/*
 * The repair steps proper; resolve() below adds the rule for destructive tools.
 */
static const rein_tool *repair(const rein_registry *reg, const char *name, size_t len,
                               enum rein_repair *how, rein_error *why)
{
    bool several = false;
    const rein_tool *t;
    size_t skip;

    t = match_forms(reg, name, len, how, &several);
    if (t)
        return t;
    skip = prefix_len(name, len);
    if (skip && !several) {
        enum rein_repair ignored;
        t = match_forms(reg, name + skip, len - skip, &ignored, &several);
        if (t) {
            *how = REIN_REPAIR_PREFIX;
            return t;
        }
    }
    if (!several) {
        t = nearest(reg, name + skip, len - skip, &several);
        if (t) {
            *how = REIN_REPAIR_EDIT_DISTANCE;
            return t;
        }
    }
    rein_error_set(why, REIN_ENOTFOUND, "\"%.*s\" %s", shown_len(name, len), name,
                   several ? "matches more than one tool" : "is not a tool");
    return NULL;
}

const rein_tool *rein__tools_resolve(const rein_registry *reg, const char *name, size_t len,
                                     enum rein_repair *how, rein_error *why)
{
    enum rein_repair dummy;
    const rein_tool *t;

    if (!how)
        how = &dummy;
    rein__tools_rdlock(reg);
    t = repair(reg, name, len, how, why);
    rein__tools_unlock(reg);
    /* A repaired name never runs a destructive tool: "delete_notes" or "Delete-Note" may be a
     * model's slip, or a name a host's allow/deny list does not know, and guessing wrong here
     * deletes something. The model is told the exact name and calls it again, so approval
     * and policy see the real tool. */
    if (t && *how != REIN_REPAIR_EXACT && rein_tool_is_destructive(t)) {
        rein_error_set(why, REIN_ENOTFOUND,
                       "\"%.*s\" is not a tool; the nearest is %s, which is destructive and runs "
                       "only when called by its exact name",
                       shown_len(name, len), name, t->id);
        return NULL;
    }
    return t;
}

const rein_tool *rein__tools_resolve_exact(const rein_registry *reg, const char *name, size_t len,
                                           rein_error *why)
{
    const rein_tool *t;

    rein__tools_rdlock(reg);
    t = rein__tools_lookup(reg, name, len);
    rein__tools_unlock(reg);
    if (!t)
        rein_error_set(why, REIN_ENOTFOUND, "no tool is named \"%.*s\" (names are exact here)",
                       shown_len(name, len), name);
    return t;
}

const rein_tool *rein_registry_resolve(const rein_registry *reg, const char *name,
                                       enum rein_repair *how, rein_error *why)
{
    size_t len = name ? strlen(name) : 0;

    if (!reg) {
        rein_error_set(why, REIN_EINVAL, "no registry");
        return NULL;
    }
    const rein_tool *t;
    struct rein_buf names;

    if (rein_tool_name_check(name, len, why))
        return NULL;
    t = rein__tools_resolve(reg, name, len, how, why);
    if (!t && why) {
        /* The message holds what fits of the list. */
        char reason[sizeof(why->msg)];
        memcpy(reason, why->msg, sizeof(reason));
        rein_buf_init(&names, sizeof(why->msg));
        (void)rein__tools_list_names(reg, &names);
        rein_error_set(why, REIN_ENOTFOUND, "%s; available tools: %s", reason, names.ptr);
        rein_buf_release(&names);
    }
    return t;
}
