/*
 * Does a function exist in a source file? A claim like "I added validate_token to src/auth.c"
 * is checked by scanning the file for a definition of that name.
 *
 * C-family sources (C, C++, Objective-C, CUDA, Java, C#) get a careful scanner rather than a
 * grep: comments, string and character literals (raw strings too) and preprocessor lines are
 * skipped, so a name in a comment or a string is not a definition; function bodies are
 * skipped as a whole, so a call inside a body is not one either. Outside bodies, the name
 * followed by a balanced parameter list and then (after qualifiers, attributes, a trailing
 * return type or a constructor's initializer list) by `{` is a definition, and by `;` a
 * declaration. `#define name(` counts as a definition too, when no function is found.
 * Other languages are matched line by line with their definition keywords (def, fn, func,
 * function, fun) and JavaScript's assignment and method forms.
 */
#include <rein/claims.h>

#include <string.h>

#define NAME_MAX_LEN 128

enum tok_kind {
    TK_END,
    TK_IDENT,
    TK_PUNCT,
    TK_OTHER, /* numbers, literals */
};

struct lexer {
    const char *s;
    size_t n, i;
    int line;
    bool bol; /* only blanks since the start of the line */
    /* A `#define name(` seen on the way, as a fallback result. */
    const char *name;
    size_t name_len;
    int macro_line;
};

struct token {
    enum tok_kind kind;
    const char *p;
    size_t len;
    int line;
};

static bool ident_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
           (!first && c >= '0' && c <= '9');
}

static void skip_block_comment(struct lexer *x)
{
    x->i += 2;
    while (x->i + 1 < x->n && !(x->s[x->i] == '*' && x->s[x->i + 1] == '/')) {
        if (x->s[x->i] == '\n')
            x->line++;
        x->i++;
    }
    x->i = x->i + 1 < x->n ? x->i + 2 : x->n;
}

static void skip_line_comment(struct lexer *x)
{
    while (x->i < x->n && x->s[x->i] != '\n')
        x->i++;
}

/* A quoted literal; a newline ends it too, so a stray quote cannot swallow the file. */
static void skip_quoted(struct lexer *x, char q)
{
    x->i++;
    while (x->i < x->n && x->s[x->i] != q && x->s[x->i] != '\n') {
        if (x->s[x->i] == '\\' && x->i + 1 < x->n) {
            if (x->s[x->i + 1] == '\n')
                x->line++;
            x->i++;
        }
        x->i++;
    }
    if (x->i < x->n && x->s[x->i] == q)
        x->i++;
}

/* C++ R"delim( … )delim" starting at the quote. */
static void skip_raw_string(struct lexer *x)
{
    char delim[20];
    size_t dn = 0, start = ++x->i;

    while (x->i < x->n && x->s[x->i] != '(' && dn < sizeof(delim) - 1 && x->s[x->i] != '\n')
        delim[dn++] = x->s[x->i++];
    if (x->i >= x->n || x->s[x->i] != '(') {
        x->i = start; /* not a raw string after all */
        return;
    }
    for (x->i++; x->i < x->n; x->i++) {
        if (x->s[x->i] == '\n')
            x->line++;
        if (x->s[x->i] == ')' && x->i + dn + 1 < x->n && memcmp(x->s + x->i + 1, delim, dn) == 0 &&
            x->s[x->i + 1 + dn] == '"') {
            x->i += dn + 2;
            return;
        }
    }
}

/* A preprocessor line (with continuations); notes `#define <name>(`. */
static void skip_directive(struct lexer *x)
{
    size_t i = x->i + 1, start;

    while (i < x->n && (x->s[i] == ' ' || x->s[i] == '\t'))
        i++;
    if (x->n - i > 6 && memcmp(x->s + i, "define", 6) == 0) {
        i += 6;
        while (i < x->n && (x->s[i] == ' ' || x->s[i] == '\t'))
            i++;
        start = i;
        while (i < x->n && ident_char(x->s[i], i == start))
            i++;
        if (i - start == x->name_len && memcmp(x->s + start, x->name, x->name_len) == 0 &&
            i < x->n && x->s[i] == '(' && !x->macro_line)
            x->macro_line = x->line;
    }
    while (x->i < x->n && x->s[x->i] != '\n') {
        if (x->s[x->i] == '\\' && x->i + 1 < x->n && x->s[x->i + 1] == '\n') {
            x->line++;
            x->i += 2;
            continue;
        }
        if (x->s[x->i] == '/' && x->i + 1 < x->n && x->s[x->i + 1] == '*') {
            skip_block_comment(x);
            continue;
        }
        x->i++;
    }
}

static struct token next_token(struct lexer *x)
{
    struct token t = {TK_END, NULL, 0, 0};

    while (x->i < x->n) {
        char c = x->s[x->i];
        if (c == '\n') {
            x->line++;
            x->bol = true;
            x->i++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            x->i++;
        } else if (c == '/' && x->i + 1 < x->n && x->s[x->i + 1] == '/') {
            skip_line_comment(x);
        } else if (c == '/' && x->i + 1 < x->n && x->s[x->i + 1] == '*') {
            skip_block_comment(x);
        } else if (c == '#' && x->bol) {
            skip_directive(x);
        } else {
            break;
        }
    }
    if (x->i >= x->n)
        return t;
    x->bol = false;
    t.p = x->s + x->i;
    t.line = x->line;
    if (ident_char(*t.p, true)) {
        while (x->i < x->n && ident_char(x->s[x->i], false))
            x->i++;
        t.kind = TK_IDENT;
        t.len = (size_t)(x->s + x->i - t.p);
        /* R"(…)", u8R"(…)", LR"(…)": a raw string literal follows the prefix. */
        if (x->i < x->n && x->s[x->i] == '"' && t.p[t.len - 1] == 'R' && t.len <= 3) {
            skip_raw_string(x);
            t.kind = TK_OTHER;
        }
        return t;
    }
    if (*t.p >= '0' && *t.p <= '9') {
        /* Numbers, with C++14 digit separators (1'000) and exponents (1e+5). */
        while (x->i < x->n &&
               (ident_char(x->s[x->i], false) || x->s[x->i] == '.' || x->s[x->i] == '\'' ||
                ((x->s[x->i] == '+' || x->s[x->i] == '-') && x->s[x->i - 1] &&
                 strchr("eEpP", x->s[x->i - 1]))))
            x->i++;
        t.kind = TK_OTHER;
        t.len = (size_t)(x->s + x->i - t.p);
        return t;
    }
    if (*t.p == '"' || *t.p == '\'') {
        skip_quoted(x, *t.p);
        t.kind = TK_OTHER;
        t.len = (size_t)(x->s + x->i - t.p);
        return t;
    }
    x->i++;
    t.kind = TK_PUNCT;
    t.len = 1;
    if (x->i < x->n && ((*t.p == ':' && x->s[x->i] == ':') || (*t.p == '-' && x->s[x->i] == '>'))) {
        x->i++;
        t.len = 2;
    }
    return t;
}

static bool is_punct(const struct token *t, const char *p)
{
    return t->kind == TK_PUNCT && t->len == strlen(p) && memcmp(t->p, p, t->len) == 0;
}

/* Skips tokens up to the `}` matching an already consumed `{`. */
static void skip_braces(struct lexer *x)
{
    struct token t;
    int depth = 1;

    while (depth > 0 && (t = next_token(x)).kind != TK_END)
        depth += is_punct(&t, "{") ? 1 : is_punct(&t, "}") ? -1 : 0;
}

/* Is the first non-blank byte at or after i equal to c? (text need not end with a NUL.) */
static bool next_char_is(const char *text, size_t len, size_t i, char c)
{
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
        i++;
    return i < len && text[i] == c;
}

/* May this token sit between a declarator's `)` and its body? */
static bool declarator_tail(const struct token *t)
{
    return t->kind == TK_IDENT || is_punct(t, "->") || is_punct(t, "::") || is_punct(t, "<") ||
           is_punct(t, ">") || is_punct(t, "*") || is_punct(t, "&") || is_punct(t, "[") ||
           is_punct(t, "]") || is_punct(t, ".");
}

/*
 * The C-family scan. Outside function bodies, a `(` opens a parenthesised group; when it
 * closes we are "after a declarator" until `{` (a function body), `;`, `,` or `=` (a
 * declaration), or a token that cannot follow a declarator. When the group followed the name
 * we look for, a body makes it a definition. A constructor's initializer list (`: a(1), b{2}`)
 * and a Java throws list (`throws A, B`) may sit between the `)` and the body.
 */
static int scan_c(const char *text, size_t len, const char *name, size_t name_len, int *line)
{
    struct lexer x = {
        .s = text, .n = len, .line = 1, .bol = true, .name = name, .name_len = name_len};
    struct token t, prev = {TK_END, NULL, 0, 0};
    int paren = 0, cand_line = 0, decl_line = 0;
    bool after_decl = false, init_list = false, throws = false, cand = false;

    while ((t = next_token(&x)).kind != TK_END) {
        if (paren > 0) {
            paren += is_punct(&t, "(") ? 1 : is_punct(&t, ")") ? -1 : 0;
            after_decl = paren == 0;
        } else if (t.kind == TK_IDENT && t.len == name_len && memcmp(t.p, name, name_len) == 0 &&
                   !is_punct(&prev, ".") && !is_punct(&prev, "->") && !init_list &&
                   next_char_is(text, len, x.i, '(')) {
            cand = true;
            cand_line = t.line;
            after_decl = throws = false;
        } else if (is_punct(&t, "(")) {
            paren = 1;
        } else if (is_punct(&t, "{")) {
            if (init_list && after_decl && prev.kind == TK_IDENT) {
                skip_braces(&x); /* a member's brace initializer */
                t.p = "}";
            } else {
                if (after_decl && cand) {
                    *line = cand_line;
                    return 2;
                }
                if (after_decl)
                    skip_braces(&x); /* another function's body */
                /* else a struct, namespace, extern "C" or initializer: stay outside bodies */
                cand = after_decl = init_list = throws = false;
            }
        } else if (is_punct(&t, ",") && after_decl && (init_list || throws)) {
            /* the next initializer or exception type */
        } else if (is_punct(&t, ";") || is_punct(&t, ",") || is_punct(&t, "=")) {
            if (cand && after_decl && !decl_line)
                decl_line = cand_line;
            cand = after_decl = init_list = throws = false;
        } else if (is_punct(&t, ":") && after_decl && !init_list) {
            init_list = true;
        } else if (t.kind == TK_IDENT && after_decl && t.len == 6 &&
                   memcmp(t.p, "throws", 6) == 0) {
            throws = true;
        } else if (after_decl && !declarator_tail(&t)) {
            cand = after_decl = init_list = throws = false;
        } else if (!after_decl && is_punct(&t, "}")) {
            cand = false;
        }
        prev = t;
    }
    if (x.macro_line) {
        *line = x.macro_line;
        return 2;
    }
    if (decl_line) {
        *line = decl_line;
        return 1;
    }
    return 0;
}

/* ---- other languages, line by line ---- */

enum lang {
    L_C,
    L_PYTHON,
    L_JS,
    L_GO,
    L_RUST,
    L_RUBY,
    L_PHP,
    L_KOTLIN,
    L_SWIFT,
    L_UNKNOWN,
};

static enum lang lang_of(const char *lang)
{
    static const struct {
        const char *ext;
        enum lang l;
    } map[] = {
        {"c", L_C},         {"h", L_C},     {"cc", L_C},    {"cpp", L_C},     {"cxx", L_C},
        {"c++", L_C},       {"hpp", L_C},   {"hh", L_C},    {"hxx", L_C},     {"h++", L_C},
        {"inl", L_C},       {"ipp", L_C},   {"tcc", L_C},   {"m", L_C},       {"mm", L_C},
        {"cu", L_C},        {"cuh", L_C},   {"java", L_C},  {"cs", L_C},      {"py", L_PYTHON},
        {"pyi", L_PYTHON},  {"js", L_JS},   {"mjs", L_JS},  {"cjs", L_JS},    {"jsx", L_JS},
        {"ts", L_JS},       {"tsx", L_JS},  {"mts", L_JS},  {"cts", L_JS},    {"go", L_GO},
        {"rs", L_RUST},     {"rb", L_RUBY}, {"php", L_PHP}, {"kt", L_KOTLIN}, {"kts", L_KOTLIN},
        {"swift", L_SWIFT},
    };
    const char *dot = lang ? strrchr(lang, '.') : NULL;
    const char *slash = lang ? strrchr(lang, '/') : NULL;
    const char *ext = dot && (!slash || dot > slash) ? dot + 1 : lang;

    for (size_t i = 0; ext && i < REIN_ARRAY_SIZE(map); i++) {
        if (strcmp(map[i].ext, ext) == 0)
            return map[i].l;
    }
    return L_UNKNOWN;
}

/* Does text[0..n) end with the word w (after trimming blanks)? */
static bool ends_with_word(const char *text, size_t n, const char *w)
{
    size_t wn = strlen(w);

    while (n && (text[n - 1] == ' ' || text[n - 1] == '\t'))
        n--;
    return n >= wn && memcmp(text + n - wn, w, wn) == 0 &&
           (n == wn || !ident_char(text[n - wn - 1], false));
}

/* After the name: optional generics <…> or […], then '('. */
static bool params_follow(const char *p, const char *end, bool parens_optional)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p < end && (*p == '<' || *p == '[')) {
        char open = *p, close = open == '<' ? '>' : ']';
        int depth = 0;
        for (; p < end; p++) {
            depth += *p == open ? 1 : *p == close ? -1 : 0;
            if (depth == 0)
                break;
        }
        p++;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
    }
    if (p < end && *p == '(')
        return true;
    return parens_optional && (p >= end || *p == ' ' || *p == '\r' || *p == ';');
}

/* JavaScript: `const name = (…) =>`, `name: function`, `name = async (x) =>`, methods. */
static bool js_definition(const char *ls, const char *le, const char *at, const char *after)
{
    const char *p = after;
    size_t before = (size_t)(at - ls);

    if (ends_with_word(ls, before, "function") ||
        (before && ls[before - 1] == '*' && ends_with_word(ls, before - 1, "function")))
        return params_follow(after, le, false);
    while (p < le && (*p == ' ' || *p == '\t'))
        p++;
    if (p < le && (*p == '=' || *p == ':') && !(p + 1 < le && p[1] == '=')) {
        const char *r = p + 1;
        while (r < le && (*r == ' ' || *r == '\t'))
            r++;
        if (le - r >= 6 && memcmp(r, "async ", 6) == 0)
            r += 6;
        if (le - r >= 8 && memcmp(r, "function", 8) == 0)
            return true;
        return memmem(r, (size_t)(le - r), "=>", 2) != NULL;
    }
    /* A class or object method: `name(args) {` with nothing but modifiers before it. */
    for (const char *q = ls; q < at; q++) {
        if (!(ident_char(*q, false) || *q == ' ' || *q == '\t'))
            return false;
    }
    if (!params_follow(after, le, false))
        return false;
    while (le > after && (le[-1] == ' ' || le[-1] == '\t' || le[-1] == '\r'))
        le--;
    return le > after && le[-1] == '{';
}

static bool line_defines(enum lang l, const char *ls, const char *le, const char *at,
                         const char *after)
{
    size_t before = (size_t)(at - ls);
    const char *t = ls;

    while (t < at && (*t == ' ' || *t == '\t'))
        t++;
    switch (l) {
    case L_PYTHON:
        return (ends_with_word(ls, before, "def")) && params_follow(after, le, false);
    case L_RUBY:
        if (before >= 5 && memcmp(at - 5, "self.", 5) == 0)
            before -= 5;
        return ends_with_word(ls, before, "def") && params_follow(after, le, true);
    case L_GO:
        /* func name(…), func (r *T) name(…) */
        return (size_t)(at - t) >= 5 && memcmp(t, "func ", 5) == 0 &&
               (ends_with_word(ls, before, "func") ||
                (before && ls[before - 1] == ' ' && memchr(t, ')', (size_t)(at - t)))) &&
               params_follow(after, le, false);
    case L_RUST:
        return ends_with_word(ls, before, "fn") && params_follow(after, le, false);
    case L_PHP:
        return ends_with_word(ls, before, "function") && params_follow(after, le, false);
    case L_KOTLIN:
        return (ends_with_word(ls, before, "fun") ||
                ((size_t)(at - t) >= 4 && memcmp(t, "fun ", 4) == 0 && before &&
                 (ls[before - 1] == '.' || ls[before - 1] == ' '))) &&
               params_follow(after, le, false);
    case L_SWIFT:
        return ends_with_word(ls, before, "func") && params_follow(after, le, false);
    case L_JS:
        return js_definition(ls, le, at, after);
    case L_C:
    case L_UNKNOWN:
        break;
    }
    return false;
}

static int scan_lines(enum lang l, const char *text, size_t len, const char *name, size_t name_len,
                      int *line)
{
    int ln = 1, first_use = 0;

    for (const char *ls = text, *end = text + len; ls < end;) {
        const char *le = memchr(ls, '\n', (size_t)(end - ls));
        if (!le)
            le = end;
        for (const char *p = ls; p + name_len <= le;) {
            const char *at = memmem(p, (size_t)(le - p), name, name_len);
            if (!at)
                break;
            p = at + 1;
            if ((at > ls && ident_char(at[-1], false)) ||
                (at + name_len < le && ident_char(at[name_len], false)))
                continue;
            if (l == L_UNKNOWN) {
                if (!first_use && params_follow(at + name_len, le, false))
                    first_use = ln;
                continue;
            }
            if (line_defines(l, ls, le, at, at + name_len)) {
                *line = ln;
                return 2;
            }
        }
        ls = le + 1;
        ln++;
    }
    if (l == L_UNKNOWN) {
        *line = first_use;
        return -1;
    }
    return 0;
}

int rein_claims_find_function(const char *text, size_t len, const char *lang, const char *name,
                              int *line)
{
    enum lang l = lang_of(lang);
    const char *last = name ? strrchr(name, ':') : NULL;
    size_t n;

    *line = 0;
    /* "Class::method" is found by its last part, as definitions are written either way. */
    if (last)
        name = last + 1;
    n = name ? strlen(name) : 0;
    if (n == 0 || n > NAME_MAX_LEN || !ident_char(name[0], true))
        return l == L_UNKNOWN ? -1 : 0;
    for (size_t i = 1; i < n; i++) {
        if (!ident_char(name[i], false))
            return l == L_UNKNOWN ? -1 : 0;
    }
    if (l == L_C)
        return scan_c(text, len, name, n, line);
    return scan_lines(l, text, len, name, n, line);
}
