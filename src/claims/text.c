/*
 * Tokens of one sentence for the claim grammars: words (with their lexicon classes and verb
 * forms), paths, `code`, numbers, quoted values, runs of CJK characters and punctuation.
 *
 * A path is told from a word by its shape: a slash with a known directory or extension, a
 * trailing slash, ./ ../ ~/ or /, or a file name with a known extension ("result.txt",
 * ".env", "Makefile"). "and/or", "Node.js", "3.5", "v1.2", URLs and e-mail addresses are not
 * paths. Everything is one pass over the bytes; a token never allocates.
 */
#include "claims_int.h"

#include <string.h>

static const char *const exts[] = {
    "a",        "ac",     "adoc",    "am",      "asm",     "avro", "bak",        "bash",  "bat",
    "bib",      "bin",    "bz2",     "c",       "cc",      "cer",  "cfg",        "cjs",   "clj",
    "cmake",    "conf",   "cpp",     "crt",     "cs",      "css",  "csv",        "cu",    "cxx",
    "dart",     "dat",    "db",      "der",     "diff",    "dll",  "doc",        "docx",  "dylib",
    "env",      "epub",   "erl",     "ex",      "exe",     "exs",  "fish",       "gif",   "go",
    "gql",      "gradle", "graphql", "gz",      "h",       "h5",   "hdf5",       "hh",    "hpp",
    "hrl",      "hs",     "htm",     "html",    "hxx",     "ico",  "in",         "ini",   "ipynb",
    "jar",      "java",   "jl",      "jpeg",    "jpg",     "js",   "json",       "jsonl", "jsx",
    "key",      "kt",     "kts",     "less",    "lock",    "log",  "lua",        "m",     "map",
    "markdown", "md",     "mdx",     "mjs",     "mk",      "ml",   "mm",         "mov",   "mp3",
    "mp4",      "mts",    "ndjson",  "nim",     "npy",     "npz",  "o",          "odt",   "ogg",
    "orc",      "otf",    "out",     "parquet", "patch",   "pdf",  "pem",        "php",   "pickle",
    "pkl",      "pl",     "plist",   "pm",      "png",     "pptx", "properties", "proto", "ps1",
    "pub",      "py",     "pyi",     "pyx",     "r",       "rar",  "rb",         "rs",    "rst",
    "s",        "sass",   "scala",   "scss",    "service", "sh",   "so",         "sql",   "sqlite",
    "sqlite3",  "svelte", "svg",     "swift",   "swp",     "tar",  "tex",        "text",  "tf",
    "tfvars",   "tgz",    "tmp",     "toml",    "ts",      "tsv",  "tsx",        "ttf",   "txt",
    "vue",      "war",    "wasm",    "wav",     "webp",    "whl",  "woff",       "woff2", "xls",
    "xlsx",     "xml",    "xz",      "yaml",    "yml",     "zig",  "zip",        "zsh",
};

static const char *const dirs[] = {
    "src",      "lib",          "libs",       "test",      "tests",      "spec",    "docs",
    "doc",      "out",          "build",      "bin",       "tmp",        "temp",    "etc",
    "usr",      "var",          "home",       "data",      "app",        "apps",    "api",
    "config",   "configs",      "scripts",    "include",   "pkg",        "cmd",     "internal",
    "web",      "public",       "static",     "assets",    "dist",       "vendor",  "examples",
    "tools",    "cache",        "logs",       "log",       "reports",    "results", "output",
    "outputs",  "fixtures",     "bench",      "cli",       "server",     "client",  "models",
    "utils",    "util",         "migrations", "charts",    "figures",    "export",  "exports",
    "net",      "node_modules", "site",       "templates", "components", "pages",   "routes",
    "handlers", "services",     "stats",      "notes",     "backup",     "backups", "archive",
    "old",
};

static const char *const dotfiles[] = {
    "env",      "gitignore",  "gitattributes", "gitmodules",    "dockerignore", "editorconfig",
    "eslintrc", "prettierrc", "babelrc",       "npmrc",         "nvmrc",        "bashrc",
    "zshrc",    "profile",    "vimrc",         "clang-format",  "clang-tidy",   "flake8",
    "pylintrc", "env.local",  "envrc",         "tool-versions",
};

static const char *const names[] = {
    "Makefile", "GNUmakefile", "Dockerfile",  "Jenkinsfile", "Justfile",      "Rakefile",
    "Gemfile",  "Procfile",    "Vagrantfile", "Brewfile",    "Containerfile", "Pipfile",
    "LICENSE",  "COPYING",     "README",      "CHANGELOG",   "AUTHORS",       "CODEOWNERS",
};

static bool in_list(const char *const *list, size_t n, const char *s, size_t len, bool fold)
{
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(list[i]);
        if (k != len)
            continue;
        if (fold ? strncasecmp(list[i], s, len) == 0 : memcmp(list[i], s, len) == 0)
            return true;
    }
    return false;
}

#define IN(list, s, n, fold) in_list(list, sizeof(list) / sizeof((list)[0]), s, n, fold)

size_t rein__claims_utf8_len(const char *s, size_t n, size_t i)
{
    unsigned char c = (unsigned char)s[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;

    if (i + len > n)
        return 1;
    for (size_t k = 1; k < len; k++) {
        if (((unsigned char)s[i + k] & 0xc0) != 0x80)
            return 1;
    }
    return len;
}

static uint32_t code_point(const char *s, size_t n, size_t i, size_t *len)
{
    const unsigned char *u = (const unsigned char *)s + i;

    *len = rein__claims_utf8_len(s, n, i);
    switch (*len) {
    case 2:
        return ((uint32_t)(u[0] & 0x1f) << 6) | (u[1] & 0x3f);
    case 3:
        return ((uint32_t)(u[0] & 0x0f) << 12) | ((uint32_t)(u[1] & 0x3f) << 6) | (u[2] & 0x3f);
    case 4:
        return ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3f) << 12) |
               ((uint32_t)(u[2] & 0x3f) << 6) | (u[3] & 0x3f);
    default:
        return u[0] < 0x80 ? u[0] : 0xfffd;
    }
}

static bool cjk_cp(uint32_t c)
{
    return (c >= 0x3400 && c <= 0x4dbf) || (c >= 0x4e00 && c <= 0x9fff) ||
           (c >= 0xf900 && c <= 0xfaff) || (c >= 0x3040 && c <= 0x30ff) ||
           (c >= 0x20000 && c <= 0x2ffff) || c == 0x3007;
}

bool rein__claims_is_cjk(const char *s, size_t n, size_t i)
{
    size_t len;

    return cjk_cp(code_point(s, n, i, &len));
}

/* A CJK or full-width punctuation code, 0 when c is none. */
static uint8_t cjk_punct(uint32_t c)
{
    switch (c) {
    case 0xff0c: /* ， */
    case 0xfe50:
        return P_CJK_COMMA;
    case 0x3001: /* 、 */
        return P_CJK_ENUM;
    case 0xff1b: /* ； */
        return P_CJK_SEMI;
    case 0xff1a: /* ： */
        return P_CJK_COLON;
    case 0xff08: /* （ */
    case 0x300c: /* 「 */
    case 0x300e: /* 『 */
    case 0x300a: /* 《 */
    case 0x3010: /* 【 */
        return P_CJK_OPEN;
    case 0xff09:
    case 0x300d:
    case 0x300f:
    case 0x300b:
    case 0x3011:
        return P_CJK_CLOSE;
    case 0x2014: /* — */
    case 0x2013: /* – */
        return P_DASH;
    case 0xff01: /* ！ */
        return '!';
    case 0xff1f: /* ？ */
        return '?';
    case 0x3002: /* 。 */
        return '.';
    default:
        return 0;
    }
}

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Characters of a word-or-path run. */
static bool run_char(char c)
{
    return is_alnum(c) || c == '_' || c == '.' || c == '/' || c == '-' || c == '~' || c == '@' ||
           c == ':' || c == '+' || c == '#' || c == '%' || c == '$' || c == '\'' || c == '=';
}

static bool all_digits_or(const char *p, size_t n, const char *also)
{
    for (size_t i = 0; i < n; i++) {
        if (!(p[i] >= '0' && p[i] <= '9') && !strchr(also, p[i]))
            return false;
    }
    return true;
}

bool rein__claims_path_like(const char *p, size_t n)
{
    const char *slash = memchr(p, '/', n), *last = p, *dot = NULL;
    size_t nslash = 0;

    if (n < 2 || n > 512)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '/') {
            nslash++;
            last = p + i + 1;
        }
        if (c == '@' || c == ' ' || c == '=' || c == '\'')
            return false;
    }
    if (n >= 3 && memmem(p, n, "://", 3))
        return false;
    for (const char *q = p + n; q > last; q--) {
        if (q[-1] == '.') {
            dot = q - 1;
            break;
        }
    }
    if (slash) {
        size_t first = (size_t)(slash - p);
        if (all_digits_or(p, n, "/.-"))
            return false; /* 3/4, 2024/01/02 */
        if (p[0] == '/' ||
            (p[0] == '.' && (p[1] == '/' || (p[1] == '.' && n > 2 && p[2] == '/'))) ||
            (p[0] == '~' && p[1] == '/'))
            return n > 2;
        if (p[n - 1] == '/')
            return true; /* a directory: out/, tests/ */
        if (dot && dot > last && IN(exts, dot + 1, (size_t)(p + n - dot - 1), true))
            return true;
        if (nslash >= 2)
            return true;
        /* One slash and no extension: a path when the first part is a usual directory or
         * the last a usual file name (docker/Dockerfile), so "and/or", "read/write" and
         * "TCP/IP" are not. */
        return IN(dirs, p, first, true) || (first > 0 && p[0] == '.') ||
               IN(names, last, (size_t)(p + n - last), false);
    }
    if (IN(names, p, n, false))
        return true;
    if (p[0] == '.') {
        return IN(dotfiles, p + 1, n - 1, true) ||
               (dot && dot > p && IN(exts, dot + 1, (size_t)(p + n - dot - 1), true));
    }
    if (!dot || dot == p || dot == p + n - 1)
        return false;
    if (!IN(exts, dot + 1, (size_t)(p + n - dot - 1), true))
        return false;
    /* Node.js, Vue.js, Three.js: product names. */
    if (p[0] >= 'A' && p[0] <= 'Z' && (size_t)(p + n - dot) == 3 && dot[1] == 'j' && dot[2] == 's')
        return false;
    return !all_digits_or(p, (size_t)(dot - p), "");
}

/* Lexicon bits and verb form of word token t (its lower-cased text, ’ read as '). */
static void classify_word(struct rein__sent *st, struct rein__tok *t)
{
    char w[48];
    size_t n = 0;

    for (size_t i = t->s; i < t->s + t->n && n < sizeof(w); i++) {
        char c = st->low[i];
        if ((unsigned char)c == 0xe2 && i + 2 < t->s + t->n &&
            (unsigned char)st->s[i + 1] == 0x80 && (unsigned char)st->s[i + 2] == 0x99) {
            c = '\'';
            i += 2;
        }
        w[n++] = c;
    }
    if (n == sizeof(w))
        return;
    t->lex = rein__claims_lex(w, n);
    t->verb = rein__claims_verb(w, n, &t->form);
}

static void word_flags(const struct rein__sent *st, struct rein__tok *t)
{
    const char *p = st->s + t->s;
    bool lower_seen = false;

    if (p[0] >= 'A' && p[0] <= 'Z')
        t->flags |= TF_CAP;
    for (size_t i = 0; i < t->n; i++) {
        if (p[i] == '_' && i > 0 && i + 1 < t->n)
            t->flags |= TF_IDENT;
        if (p[i] >= 'a' && p[i] <= 'z')
            lower_seen = true;
        else if (p[i] >= 'A' && p[i] <= 'Z' && lower_seen && i > 0)
            t->flags |= TF_IDENT; /* camelCase */
        else if (p[i] == '.' && i > 0 && i + 1 < t->n)
            t->flags |= TF_DOTTED;
    }
}

/* True when bytes p[0..n) are an identifier (letters, digits, _, ::, $). */
static bool ident(const char *p, size_t n)
{
    if (n == 0 || !(is_alpha(p[0]) || p[0] == '_' || p[0] == '$'))
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!(is_alnum(p[i]) || p[i] == '_' || p[i] == '$' || p[i] == ':' || p[i] == '.'))
            return false;
    }
    return true;
}

static bool push(struct rein__sent *st, size_t max, uint8_t type, size_t s, size_t n)
{
    struct rein__tok *t;

    if (st->nt >= max)
        return false;
    t = &st->t[st->nt++];
    memset(t, 0, sizeof(*t));
    t->s = (uint32_t)s;
    t->n = (uint32_t)n;
    t->type = type;
    t->tool = -1;
    return true;
}

/* A `…` span at i: pushes a PATH or CODE token and returns the bytes used (0: none). */
static size_t code_span(struct rein__sent *st, size_t max, size_t i)
{
    const char *s = st->s;
    const char *end = memchr(s + i + 1, '`', st->n - i - 1);
    size_t a = i + 1, b;
    struct rein__tok *t;

    if (!end || end == s + i + 1 || (size_t)(end - s) - a > 200)
        return 0;
    b = (size_t)(end - s);
    if (memchr(s + a, '\n', b - a))
        return 0;
    if (!push(st, max, TK_CODE, a, b - a))
        return b + 1 - i;
    t = &st->t[st->nt - 1];
    if (rein__claims_path_like(s + a, b - a)) {
        t->type = TK_PATH;
    } else {
        size_t k = b - a;
        const char *paren = memchr(s + a, '(', k);
        if (paren && s[b - 1] == ')') {
            t->flags |= TF_CALL | TF_IDENT;
            t->n = (uint32_t)(paren - (s + a));
        }
        if (ident(s + a, t->n)) {
            word_flags(st, t);
            t->flags |= TF_IDENT;
            classify_word(st, t);
        }
    }
    return b + 1 - i;
}

/* A "…" or “…” value at i (open bytes long): pushes a token, returns bytes used (0: none). */
static size_t quoted(struct rein__sent *st, size_t max, size_t i, size_t open, const char *close)
{
    size_t cl = strlen(close), a = i + open;
    const char *end = NULL;

    for (size_t k = a; k + cl <= st->n && k < a + 300; k++) {
        if (memcmp(st->s + k, close, cl) == 0) {
            end = st->s + k;
            break;
        }
    }
    if (!end)
        return 0;
    if (rein__claims_path_like(st->s + a, (size_t)(end - st->s) - a))
        push(st, max, TK_PATH, a, (size_t)(end - st->s) - a);
    else
        push(st, max, TK_QUOTE, a, (size_t)(end - st->s) - a);
    return (size_t)(end - st->s) + cl - i;
}

/* Takes trailing punctuation off a run [a, *b); records a ":N" line suffix in *line. */
static void trim_run(const char *s, size_t a, size_t *b, int *line)
{
    for (;;) {
        size_t e = *b;
        while (e > a && strchr(".,:;!?'", s[e - 1]))
            e--;
        /* src/a.c:12 → src/a.c, line 12 */
        if (e > a && s[e - 1] >= '0' && s[e - 1] <= '9') {
            size_t d = e;
            while (d > a && s[d - 1] >= '0' && s[d - 1] <= '9')
                d--;
            if (d > a + 1 && s[d - 1] == ':' && e - d <= 7 &&
                rein__claims_path_like(s + a, d - 1 - a)) {
                int v = 0;
                for (size_t k = d; k < e; k++)
                    v = v * 10 + (s[k] - '0');
                *line = v;
                e = d - 1;
            }
        }
        if (e == *b)
            return;
        *b = e;
    }
}

/* A run of word characters at i: pushes its token(s), returns the bytes used. */
static size_t word_run(struct rein__sent *st, size_t max, size_t i)
{
    const char *s = st->s;
    size_t b = i, a = i;
    int line = 0;
    uint8_t type;
    struct rein__tok *t;

    while (b < st->n) {
        if (run_char(s[b])) {
            b++;
        } else if (b + 3 <= st->n && (unsigned char)s[b] == 0xe2 &&
                   (unsigned char)s[b + 1] == 0x80 && (unsigned char)s[b + 2] == 0x99 && b > a &&
                   is_alpha(s[b - 1]) && b + 3 < st->n && is_alpha(s[b + 3])) {
            b += 3; /* ’ inside a word: didn’t */
        } else {
            break;
        }
    }
    trim_run(s, a, &b, &line);
    if (b == a)
        return 1;
    if (memmem(s + a, b - a, "://", 3) || (memchr(s + a, '@', b - a) && s[a] != '@'))
        type = TK_OTHER;
    else if (rein__claims_path_like(s + a, b - a))
        type = TK_PATH;
    else if (s[a] >= '0' && s[a] <= '9')
        type = TK_NUM;
    else if (memchr(s + a, '/', b - a) || !(is_alpha(s[a]) || s[a] == '_' || s[a] == '\''))
        type = TK_OTHER;
    else
        type = TK_WORD;
    if (!push(st, max, type, a, b - a))
        return b - i;
    t = &st->t[st->nt - 1];
    t->line = line;
    if (type != TK_WORD)
        return b - i;
    /* possessive: calculator's, file_search’s */
    if (t->n > 2 && s[b - 2] == '\'' && (s[b - 1] == 's' || s[b - 1] == 'S')) {
        char w[16];
        size_t k = t->n < sizeof(w) ? t->n : 0;
        for (size_t j = 0; j < k; j++)
            w[j] = st->low[a + j];
        /* it's, that's, there's, let's are not possessives */
        if (!k || !(rein__claims_lex(w, k) & (L_PRON | L_BE | L_MODAL))) {
            t->n -= 2;
            t->flags |= TF_POSS;
        }
    } else if (t->n > 4 && (unsigned char)s[b - 4] == 0xe2 && (unsigned char)s[b - 3] == 0x80 &&
               (unsigned char)s[b - 2] == 0x99 && s[b - 1] == 's') {
        t->n -= 4;
        t->flags |= TF_POSS;
    }
    word_flags(st, t);
    /* name(…) right after: a call or a function */
    if (b < st->n && s[b] == '(') {
        const char *close = memchr(s + b, ')', st->n - b < 80 ? st->n - b : 80);
        if (close && !memchr(s + b + 1, '(', (size_t)(close - (s + b + 1)))) {
            t->flags |= TF_CALL | TF_IDENT;
            b = (size_t)(close - s) + 1;
        }
    }
    classify_word(st, t);
    return b - i;
}

bool rein__claims_tokenize(struct rein__sent *st, size_t max)
{
    const char *s = st->s;
    size_t i = 0;

    st->nt = 0;
    st->cjk = false;
    for (size_t k = 0; k < st->n; k++)
        st->low[k] = (s[k] >= 'A' && s[k] <= 'Z') ? (char)(s[k] + 32) : s[k];
    while (i < st->n && st->nt < max) {
        unsigned char c = (unsigned char)s[i];
        size_t len = 1, used = 0;
        uint32_t cp;
        uint8_t pc;

        if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '*') {
            i++;
            continue;
        }
        if (c == '`') {
            used = code_span(st, max, i);
        } else if (c == '"') {
            used = quoted(st, max, i, 1, "\"");
        } else if (c == '\'' && (i == 0 || !is_alnum(s[i - 1]))) {
            used = quoted(st, max, i, 1, "'");
        } else if (c < 0x80 && run_char((char)c) && c != ':' && c != '\'' && c != '=') {
            used = word_run(st, max, i);
        } else if (c >= 0x80) {
            cp = code_point(s, st->n, i, &len);
            if (cjk_cp(cp)) {
                size_t a = i;
                while (i < st->n && c >= 0x80 && cjk_cp(code_point(s, st->n, i, &len))) {
                    i += len;
                    c = (unsigned char)(i < st->n ? s[i] : 0);
                }
                push(st, max, TK_CJK, a, i - a);
                st->cjk = true;
                continue;
            }
            if (cp == 0x201c) { /* “…” */
                used = quoted(st, max, i, 3, "\xe2\x80\x9d");
            } else if (cp == 0x2018) { /* ‘…’ */
                used = quoted(st, max, i, 3, "\xe2\x80\x99");
            } else if ((pc = cjk_punct(cp)) != 0) {
                push(st, max, TK_PUNCT, i, len);
                st->t[st->nt - 1].punct = pc;
                used = len;
            }
            if (!used) {
                push(st, max, TK_OTHER, i, len);
                used = len;
            }
        }
        if (!used) {
            /* ASCII punctuation (a lone '-' or "--" is a dash) */
            if (push(st, max, TK_PUNCT, i, 1))
                st->t[st->nt - 1].punct = (c == '-') ? P_DASH : c;
            used = 1;
            while (c == '-' && i + used < st->n && s[i + used] == '-')
                used++;
        }
        i += used;
    }
    return true;
}
