/*
 * The English claim grammar: one sentence's tokens in, claims out.
 *
 * A sentence is cut into clauses (at ; — ( ), at a comma or "and" before a new subject, at
 * but/because/although/which/…). A claim needs a predicate in the realis: a past or perfect
 * verb ("saved", "have written"), a passive ("was deleted", "is now saved in"), a summary
 * fragment that starts with the verb ("Saved result.txt."), or a present verb that reports a
 * result ("file_search shows 3 matches", "the tests pass"). Base forms never claim anything,
 * which is most of what keeps imperatives ("Add parse_args …"), infinitives ("to call …"),
 * futures ("will write"), modals and do-negation ("didn't use") out. What remains is caught
 * by the clause's gates, read from the clause start up to the predicate: negation, a modal
 * or semi-modal (need to, going to), a conditional (if, unless, once, when you), a hedge
 * (probably, I think), an imperative clause start, an attempt (tried to), reported speech
 * ("the log says …", "you said …"), and a question (the clause ends in "?" or starts with an
 * inverted auxiliary).
 *
 * Then the predicate is paired with what it is about:
 *   tool      a tool as object of a use verb ("ran file_search"), after a tool preposition in
 *             a clause with a realis verb ("… with get_weather", "via send_email"), in a frame
 *             ("according to the calculator", "per file_search's output", "calculator
 *             output: 42", "based on the output of run_command"), or as subject of a result
 *             verb ("the calculator returned 2", "web_search came back with …"); a failure
 *             ("failed", "returned an error") is not a claim of a result.
 *   files     a path as direct object or after a destination preposition of a write or
 *             delete verb ("wrote the mean to result.txt", "saved as summary.md"), or as the
 *             subject of a passive ("report.pdf has been generated"); "removed X from P"
 *             changes P rather than deleting it.
 *   function  a write/add/implement verb with an identifier (snake_case, camelCase, name(),
 *             `code`, or a word after "function"/"method") and the file it went into.
 *   checks    tests, build, lint and type checks with a passing predicate ("all 57 tests
 *             pass", "compiles without warnings", "no type errors", "eslint reports no
 *             problems").
 */
#include "claims_int.h"

#include <string.h>

#define TOKENS_MAX 400
#define WINDOW     16 /* tokens between a verb and the path it governs */

struct en {
    struct rein__sent *st;
    const struct rein__tok *t;
    size_t n;
    uint16_t gc[TOKENS_MAX]; /* gating clause of each token */
    uint16_t pc[TOKENS_MAX]; /* pairing clause (a colon does not end it) */
    size_t qfrom;            /* tokens from here are in a question */
    bool all_question;
    rein__emit_fn emit;
    void *ud;
    bool ok;
    bool tests_seen; /* a tests subject earlier in the sentence ("… and they pass") */
};

struct gates {
    bool neg, modal, cond, hedge, imper, report, attempt, question;
};

enum tense { T_NO = 0, T_PAST, T_PERFECT, T_PASSIVE, T_PRESENT, T_FRAGMENT };

/* ---- token helpers ---- */

static bool word(const struct en *e, size_t i)
{
    return i < e->n && e->t[i].type == TK_WORD;
}

static uint64_t lex(const struct en *e, size_t i)
{
    return i < e->n && (e->t[i].type == TK_WORD || e->t[i].type == TK_CODE) ? e->t[i].lex : 0;
}

static bool is(const struct en *e, size_t i, const char *w)
{
    return rein__claims_is(e->st, i, w);
}

static bool punct(const struct en *e, size_t i, int c)
{
    return i < e->n && e->t[i].type == TK_PUNCT && e->t[i].punct == c;
}

static uint16_t vclass(const struct en *e, size_t i)
{
    return i < e->n && e->t[i].type == TK_WORD ? rein__claims_verb_class(e->t[i].verb) : 0;
}

static bool verb(const struct en *e, size_t i)
{
    return word(e, i) && e->t[i].verb != 0;
}

static uint8_t vform(const struct en *e, size_t i)
{
    return verb(e, i) ? e->t[i].form : 0;
}

static bool is_path(const struct en *e, size_t i)
{
    return i < e->n && e->t[i].type == TK_PATH;
}

/* A concrete value: a number, a quoted value, `code` or a path. */
static bool value(const struct en *e, size_t i)
{
    return i < e->n && (e->t[i].type == TK_NUM || e->t[i].type == TK_QUOTE ||
                        e->t[i].type == TK_CODE || e->t[i].type == TK_PATH);
}

/* An identifier a function claim can name. */
static bool ident_tok(const struct en *e, size_t i)
{
    const struct rein__tok *t = i < e->n ? &e->t[i] : NULL;

    if (!t || t->tool >= 0)
        return false;
    if (t->type == TK_CODE)
        return (t->flags & TF_IDENT) != 0;
    return t->type == TK_WORD && (t->flags & (TF_IDENT | TF_CALL));
}

static size_t clause_start(const struct en *e, size_t i)
{
    if (i >= e->n || i >= TOKENS_MAX)
        return i;
    while (i > 0 && e->gc[i - 1] == e->gc[i])
        i--;
    return i;
}

/* ---- clauses ---- */

static bool hard_punct(const struct en *e, size_t i)
{
    int c = e->t[i].punct;

    return e->t[i].type == TK_PUNCT &&
           (c == ';' || c == P_CJK_SEMI || c == P_DASH || c == '(' || c == ')' || c == '[' ||
            c == ']' || c == P_CJK_OPEN || c == P_CJK_CLOSE || c == '!' || c == '.');
}

static bool new_subject_at(const struct en *e, size_t i)
{
    uint64_t l = lex(e, i);

    return word(e, i) && (l & (L_PRON | L_CONJ | L_REL | L_COND));
}

static void clauses(struct en *e)
{
    uint16_t g = 0, p = 0;
    size_t last_hard = 0;

    for (size_t i = 0; i < e->n; i++) {
        bool hard = hard_punct(e, i), soft = false,
             colon = punct(e, i, ':') || punct(e, i, P_CJK_COLON);
        uint64_t l = lex(e, i);
        if (i > 0 && (punct(e, i - 1, ',') || punct(e, i - 1, P_CJK_COMMA)) && new_subject_at(e, i))
            soft = true;
        if (word(e, i) && (l & L_CONJ) && !(l & L_COND)) {
            /* "so" joins clauses only before a subject: "so I saved …", not "so far" */
            soft = !is(e, i, "so") || new_subject_at(e, i + 1) || is(e, i + 1, "that");
            if (is(e, i, "since") && !new_subject_at(e, i + 1) && !(lex(e, i + 1) & L_DET) &&
                !(lex(e, i + 1) & L_NEG))
                soft = false; /* "since the last release" is a time, not a clause */
        }
        if ((is(e, i, "and") || is(e, i, "or")) && i + 1 < e->n &&
            ((lex(e, i + 1) & L_PRON) || is(e, i + 1, "then")))
            soft = true;
        if (hard || soft) {
            g++;
            p++;
        }
        if (colon)
            g++;
        if (hard)
            last_hard = i + 1;
        e->gc[i] = g;
        e->pc[i] = p;
    }
    e->qfrom = e->st->question ? last_hard : e->n;
    /* An inverted auxiliary at the start asks a question even without the "?":
     * "Would you like me to save it …", "Did you mean …". */
    if (e->n >= 2 && word(e, 0) && (lex(e, 0) & (L_DO | L_MODAL | L_HAVE | L_BE)) &&
        !(lex(e, 0) & (L_PRON | L_LET | L_NEG)) &&
        ((lex(e, 1) & L_PRON) && !(lex(e, 1) & (L_BE | L_HAVE | L_MODAL))) && !is(e, 0, "got") &&
        !is(e, 0, "get"))
        e->all_question = true;
}

/* ---- gates ---- */

static bool think_verb(const struct en *e, size_t i)
{
    static const char *const w[] = {"think",  "believe", "assume", "guess",  "suppose",
                                    "expect", "hope",    "bet",    "reckon", "imagine"};

    for (size_t k = 0; k < REIN_ARRAY_SIZE(w); k++) {
        if (is(e, i, w[k]))
            return true;
    }
    return false;
}

/* The first token of the clause that is not an adverb, "please", or "then". */
static size_t clause_head(const struct en *e, size_t cs, size_t limit)
{
    size_t i = cs;

    while (i < limit && (e->t[i].type == TK_PUNCT ||
                         (word(e, i) && (lex(e, i) & (L_NOW | L_ADV)) && !verb(e, i)) ||
                         is(e, i, "and") || is(e, i, "or")))
        i++;
    return i;
}

/* Is the clause [cs, ...) an imperative: it starts with a bare verb? */
static bool imperative(const struct en *e, size_t cs, size_t p)
{
    size_t h = clause_head(e, cs, p + 1);

    if (h > p)
        return false;
    if (is(e, h, "please") || is(e, h, "kindly") || is(e, h, "let") || is(e, h, "let's"))
        return true;
    if (is(e, h, "never") || is(e, h, "always") || is(e, h, "don't") ||
        (is(e, h, "do") && is(e, h + 1, "not")))
        return h + 1 <= p;
    if (is(e, h, "to") && (vform(e, h + 1) & VF_BASE))
        return true; /* "To fix this, …" (its own clause) */
    if (h == p && (vform(e, h) & (VF_PAST | VF_PART)) && !(vform(e, h) & VF_BASE))
        return false;
    /* "Query Database returned …", "Lint is clean": the word is the subject */
    if (e->t[h].tool != -1 || (lex(e, h + 1) & (L_BE | L_MODAL | L_HAVE)) ||
        (verb(e, h + 1) && (vform(e, h + 1) & (VF_S | VF_PAST)) && !(vform(e, h + 1) & VF_BASE)))
        return false;
    return verb(e, h) && (vform(e, h) & VF_BASE) && (vclass(e, h) & V_IMP) &&
           !(e->t[h].flags & TF_POSS) && !(lex(e, h) & (L_PRON | L_DET));
}

/* "In the screenshot, the calculator shows 7.5": the sentence tells what a picture or a text
 * shows, not what ran */
static bool depicted(const struct en *e)
{
    size_t j = 0;

    while (j < e->n && !word(e, j))
        j++;
    return is(e, j, "in") && (lex(e, j + 1) & L_DET) &&
           (is(e, j + 2, "screenshot") || is(e, j + 2, "example") || is(e, j + 2, "image") ||
            is(e, j + 2, "picture") || is(e, j + 2, "docs") || is(e, j + 2, "documentation") ||
            is(e, j + 2, "readme") || is(e, j + 2, "ticket") || is(e, j + 2, "mockup"));
}

static void gates(const struct en *e, size_t p, struct gates *g)
{
    size_t cs = clause_start(e, p);

    memset(g, 0, sizeof(*g));
    g->report = depicted(e);
    g->question = e->all_question || p >= e->qfrom;
    g->imper = imperative(e, cs, p);
    for (size_t j = cs; j < p && j < e->n; j++) {
        uint64_t l = lex(e, j);
        if (!word(e, j))
            continue;
        if ((l & L_NEG) && !(is(e, j, "not") && is(e, j + 1, "only")) &&
            !(is(e, j, "no") && is(e, j + 1, "longer") && (vclass(e, p) & V_STATE)))
            g->neg = true;
        if (l & L_MODAL) {
            /* I'd saved = I had saved */
            size_t k = j + 1;
            while (k < p && (lex(e, k) & (L_ADV | L_NOW)))
                k++;
            if (!(k == p && (l & L_PRON) && (vform(e, p) & VF_PART) && !(vform(e, p) & VF_BASE)))
                g->modal = true;
        }
        if (l & L_COND)
            g->cond = true;
        if ((is(e, j, "when") || is(e, j, "whenever")) && is(e, j + 1, "you"))
            g->cond = true;
        /* "When the job finishes, the report is saved …": a time clause in the present is
         * what usually happens, not what happened */
        if ((is(e, j, "when") || is(e, j, "whenever") || is(e, j, "after") || is(e, j, "before")) &&
            clause_head(e, cs, j) >= j) {
            for (size_t k = j + 1; k < e->n && k < j + 8 && !punct(e, k, ','); k++) {
                if (verb(e, k) && (vform(e, k) & VF_S) && !(vform(e, k) & VF_PAST)) {
                    g->cond = true;
                    break;
                }
            }
        }
        if (is(e, j, "in") && is(e, j + 1, "case"))
            g->cond = true;
        /* "Had the tests passed, …", "Had I used web_search, …": a conditional */
        if (is(e, j, "had") && (e->t[j].flags & TF_FIRST) && j + 1 < p && !verb(e, j + 1) &&
            !is(e, j + 1, "to"))
            g->cond = true;

        if (is(e, j, "as") && (is(e, j + 1, "soon") || is(e, j + 1, "long")) && is(e, j + 2, "as"))
            g->cond = true;
        if (l & L_HEDGE)
            g->hedge = true;
        if ((l & L_PRON1) && think_verb(e, j + 1))
            g->hedge = true;
        if (is(e, j, "seems") || is(e, j, "seem") || is(e, j, "appears") ||
            (is(e, j, "looks") && is(e, j + 1, "like")))
            g->hedge = true;
        if ((l & (L_SEMI | L_HAVE)) && is(e, j + 1, "to")) {
            bool realised =
                is(e, j, "able") && j > 0 && (is(e, j - 1, "was") || is(e, j - 1, "were"));
            if (is(e, j, "tried") || is(e, j, "attempted") || is(e, j, "trying") ||
                is(e, j, "try") || is(e, j, "attempt"))
                g->attempt = true;
            else if (!realised)
                g->modal = true;
        }
        if (is(e, j, "about") && is(e, j + 1, "to"))
            g->modal = true;
        if (is(e, j, "worth") || (is(e, j, "better") && j > 0 && (lex(e, j - 1) & L_MODAL)))
            g->modal = true;
        if (l & L_LET)
            g->imper = true;
        if ((vclass(e, j) & V_TRY) && !(vform(e, j) & VF_BASE))
            g->attempt = true;
        if ((l & L_SAYV) && !(j > 0 && (lex(e, j - 1) & L_PRON1)))
            g->report = true;
    }
}

static bool gated(const struct gates *g)
{
    return g->neg || g->modal || g->cond || g->hedge || g->imper || g->attempt || g->question;
}

/* ---- tense ---- */

/* Where the verb group of p starts (its auxiliaries and adverbs), within its clause. */
static size_t group_start(const struct en *e, size_t p, bool *have, bool *be, bool *doe, bool *to)
{
    size_t cs = clause_start(e, p), j = p;

    *have = *be = *doe = *to = false;
    while (j > cs) {
        uint64_t l = lex(e, j - 1);
        if (!word(e, j - 1))
            break;
        if (l & L_HAVE) {
            *have = true;
            j--;
            if (l & L_PRON)
                break;
            continue;
        }
        if (l & L_BE) {
            *be = true;
            j--;
            if (l & L_PRON)
                break;
            continue;
        }
        if (l & L_DO) {
            *doe = true;
            j--;
            continue;
        }
        if ((l & (L_ADV | L_NOW | L_MODAL)) || is(e, j - 1, "not") || is(e, j - 1, "never")) {
            j--;
            if (l & L_PRON)
                break;
            continue;
        }
        if (is(e, j - 1, "to")) {
            *to = true;
            j--;
        }
        break;
    }
    return j;
}

/*
 * A passive in the present with nothing that makes it new: "is used for arithmetic", "is
 * defined in src/cli.c", "is overwritten on every run" describe how things are, where "was
 * used", "has been written" and "is now saved in" report what happened.
 */
static bool present_state(const struct en *e, size_t p)
{
    size_t cs = clause_start(e, p);
    bool present = false;

    for (size_t j = p; j > cs && j + 3 > p; j--) {
        if (is(e, j - 1, "now") || is(e, p + 1, "now"))
            return false;
        if (is(e, j - 1, "is") || is(e, j - 1, "are") || is(e, j - 1, "am") ||
            is(e, j - 1, "it's") || is(e, j - 1, "that's"))
            present = true;
        if (lex(e, j - 1) & L_HAVE)
            return false;
    }
    return present;
}

/* Words that make a clause habitual ("on every run", "usually"): a description, no event. */
static bool habitual(const struct en *e, size_t p)
{
    static const char *const w[] = {"every",     "each",      "always",    "usually",
                                    "normally",  "typically", "generally", "often",
                                    "sometimes", "whenever",  "default",   "automatically"};
    size_t a = clause_start(e, p);

    for (size_t k = a; k < e->n && e->gc[k] == e->gc[a]; k++) {
        for (size_t i = 0; i < REIN_ARRAY_SIZE(w); i++) {
            if (is(e, k, w[i]))
                return true;
        }
    }
    return false;
}

/* True when nothing but adverbs and punctuation comes before j in its clause. */
static bool clause_initial(const struct en *e, size_t j)
{
    size_t cs = clause_start(e, j);

    return clause_head(e, cs, j) >= j;
}

static enum tense tense(const struct en *e, size_t p)
{
    uint8_t f = vform(e, p);
    bool have, be, doe, to;
    size_t g;

    if (!f)
        return T_NO;
    g = group_start(e, p, &have, &be, &doe, &to);
    if (to)
        return T_NO;
    /* the saved file, my updated notes: an adjective */
    if (p > 0 && (lex(e, p - 1) & L_DET) && !(lex(e, p - 1) & L_REL) && !have && !be)
        return T_NO;
    if ((f & VF_PART) && have)
        return T_PERFECT;
    if ((f & VF_PART) && be)
        return T_PASSIVE;
    if ((f & VF_BASE) && doe && !be && !have)
        return T_PAST;
    if (f & VF_ING)
        return T_NO;
    if ((f & VF_PAST) && !be && !have) {
        if (clause_initial(e, g))
            return (f & VF_BASE) ? T_NO : T_FRAGMENT;
        if (f & VF_BASE) /* put, set, read: past only after a subject */
            return g > 0 && (lex(e, g - 1) & L_PRON) && !(lex(e, g - 1) & L_MODAL) ? T_PAST : T_NO;
        return T_PAST;
    }
    if ((f & VF_PART) && !(f & VF_BASE)) {
        if (clause_initial(e, g))
            return T_FRAGMENT;
        /* "Output written to out.json": a noun, then the participle */
        if (g > 0 && (e->t[g - 1].type == TK_PATH ||
                      (word(e, g - 1) &&
                       (!verb(e, g - 1) || (lex(e, g - 1) & (L_OUTN | L_NOUNISH | L_FILEN))) &&
                       !(lex(e, g - 1) & ~(L_OUTN | L_NOUNISH | L_FILEN | L_TOOLN)))))
            return T_PASSIVE;
        return T_NO;
    }
    if (f & VF_S)
        return T_PRESENT;
    return T_NO;
}

static bool realis(enum tense t)
{
    return t == T_PAST || t == T_PERFECT || t == T_PASSIVE || t == T_FRAGMENT;
}

/* A realis verb in [a, b) of one pairing clause that is not gated and not a failure. */
static size_t realis_verb(const struct en *e, size_t a, size_t b, uint16_t pc)
{
    for (size_t i = a; i < b && i < e->n; i++) {
        struct gates g;
        if (e->pc[i] != pc || !verb(e, i) || (vclass(e, i) & (V_FAIL | V_TRY)))
            continue;
        if (!realis(tense(e, i)))
            continue;
        gates(e, i, &g);
        if (!gated(&g))
            return i;
    }
    return SIZE_MAX;
}

/* ---- emitting ---- */

static void emit(struct en *e, enum rein_claim_kind kind, size_t subj, const char *name_s,
                 size_t name_n, size_t path_tok, int line)
{
    struct rein__found f;
    const struct rein__tok *st = subj < e->n ? &e->t[subj] : NULL;

    if (!e->ok)
        return;
    memset(&f, 0, sizeof(f));
    f.kind = kind;
    if (kind == REIN_CLAIM_TOOL && st) {
        size_t last = subj + (st->tool_len ? st->tool_len : 1) - 1;
        f.subject = e->st->s + st->s;
        f.subject_len = e->t[last].s + e->t[last].n - st->s;
        f.tool = rein__claims_vocab_name(e->st->vocab, st->tool);
    } else if (name_s) {
        f.subject = name_s;
        f.subject_len = name_n;
    } else if (st) {
        f.subject = e->st->s + st->s;
        f.subject_len = st->n;
    }
    if (path_tok < e->n) {
        f.path = e->st->s + e->t[path_tok].s;
        f.path_len = e->t[path_tok].n;
        if (kind != REIN_CLAIM_FUNCTION) {
            f.subject = f.path;
            f.subject_len = f.path_len;
        }
        if (!line)
            line = e->t[path_tok].line;
    }
    if (kind == REIN_CLAIM_FUNCTION && st) {
        f.name = e->st->s + st->s;
        f.name_len = st->n;
        f.subject = f.name;
        f.subject_len = f.name_len;
    }
    f.line = line;
    e->ok = e->emit(e->ud, e->st, &f);
}

/* ---- checks: tests, build, lint, types ---- */

enum check {
    C_NONE = -1,
    C_TESTS = REIN_CLAIM_TESTS_PASS,
    C_BUILD = REIN_CLAIM_BUILD_PASSES,
    C_LINT = REIN_CLAIM_LINT_CLEAN,
    C_TYPES = REIN_CLAIM_NO_TYPE_ERRORS
};

static const char *const lint_tools[] = {
    "lint",      "linter",   "linters",    "linting",       "eslint",   "flake8",
    "ruff",      "pylint",   "clang-tidy", "golangci-lint", "rubocop",  "shellcheck",
    "stylelint", "cppcheck", "clippy",     "checkstyle",    "prettier", "markdownlint",
    "hadolint",  "tslint",   "biome",      "swiftlint",     "ktlint",   "credo"};
static const char *const test_tools[] = {
    "tests",  "test",  "suite", "specs",    "spec",    "pytest", "ctest",     "jest",
    "vitest", "mocha", "rspec", "unittest", "phpunit", "junit",  "testsuite", "checks"};
static const char *const type_tools[] = {
    "tsc",          "mypy",          "pyright",     "typecheck", "type-check",
    "typechecking", "type-checking", "typechecker", "pytype",    "sorbet"};
static const char *const build_tools[] = {"compiler", "gcc",     "clang",  "rustc",
                                          "javac",    "ninja",   "gradle", "bazel",
                                          "webpack",  "msbuild", "cmake",  "xcodebuild"};

static void emit_check(struct en *e, enum check c)
{
    const char *what = c == C_TYPES   ? "types"
                       : c == C_LINT  ? "lint"
                       : c == C_BUILD ? "build"
                                      : "tests";

    emit(e, (enum rein_claim_kind)c, SIZE_MAX, what, strlen(what), SIZE_MAX, 0);
}

static bool in(const struct en *e, size_t i, const char *const *list, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (is(e, i, list[k]))
            return true;
    }
    return false;
}

#define IN(e, i, list) in(e, i, list, sizeof(list) / sizeof((list)[0]))

/* A command in `code` that runs a check: `make test`, `cargo build`, `npm run lint`, `tsc`. */
static enum check code_check(const struct en *e, size_t i)
{
    static const struct {
        const char *prefix;
        enum check c;
    } cmds[] = {{"make test", C_TESTS},     {"make check", C_TESTS},    {"npm test", C_TESTS},
                {"npm run test", C_TESTS},  {"yarn test", C_TESTS},     {"pnpm test", C_TESTS},
                {"cargo test", C_TESTS},    {"go test", C_TESTS},       {"pytest", C_TESTS},
                {"ctest", C_TESTS},         {"dotnet test", C_TESTS},   {"mvn test", C_TESTS},
                {"cargo build", C_BUILD},   {"npm run build", C_BUILD}, {"make", C_BUILD},
                {"cmake --build", C_BUILD}, {"go build", C_BUILD},      {"dotnet build", C_BUILD},
                {"make lint", C_LINT},      {"npm run lint", C_LINT},   {"cargo clippy", C_LINT},
                {"eslint", C_LINT},         {"ruff", C_LINT},           {"flake8", C_LINT},
                {"tsc", C_TYPES},           {"mypy", C_TYPES},          {"pyright", C_TYPES}};
    const struct rein__tok *t = &e->t[i];
    const char *w = e->st->low + t->s;

    for (size_t k = 0; k < REIN_ARRAY_SIZE(cmds); k++) {
        size_t n = strlen(cmds[k].prefix);
        if (t->n >= n && memcmp(w, cmds[k].prefix, n) == 0 && (t->n == n || w[n] == ' '))
            return cmds[k].c;
    }
    return C_NONE;
}

static bool passing_at(const struct en *e, size_t k, enum check c, size_t *end);

/* The check named at token i, and how many tokens name it. */
static enum check check_subject(const struct en *e, size_t i, size_t *len)
{
    size_t end;

    *len = 1;
    if (i < e->n && e->t[i].type == TK_CODE && e->t[i].n)
        return code_check(e, i);
    if (!word(e, i) && !(i < e->n && e->t[i].type == TK_CODE))
        return C_NONE;
    if ((is(e, i, "make") || is(e, i, "npm") || is(e, i, "cargo") || is(e, i, "go") ||
         is(e, i, "yarn") || is(e, i, "pnpm") || is(e, i, "dotnet") || is(e, i, "mvn")) &&
        i + 1 < e->n) {
        size_t k = i + 1;
        if (is(e, k, "run"))
            k++;
        *len = k - i + 1;
        if (is(e, k, "test") || is(e, k, "tests") || is(e, k, "check"))
            return C_TESTS;
        if (is(e, k, "build"))
            return C_BUILD;
        if (is(e, k, "lint") || is(e, k, "clippy"))
            return C_LINT;
        *len = 1;
        /* "make finished with no errors": the bare build command, its pass right after */
        if (is(e, i, "make") && passing_at(e, i + 1, C_BUILD, &end))
            return C_BUILD;
        return C_NONE;
    }
    if (is(e, i, "type") && (is(e, i + 1, "check") || is(e, i + 1, "checks") ||
                             is(e, i + 1, "checking") || is(e, i + 1, "checker"))) {
        *len = 2;
        return C_TYPES;
    }
    if (is(e, i, "test") &&
        (is(e, i + 1, "suite") || is(e, i + 1, "cases") || is(e, i + 1, "run"))) {
        *len = 2;
        return C_TESTS;
    }
    if ((is(e, i, "unit") || is(e, i, "integration") || is(e, i, "regression") || is(e, i, "e2e") ||
         is(e, i, "end-to-end")) &&
        (is(e, i + 1, "tests") || is(e, i + 1, "test"))) {
        *len = 2;
        return C_TESTS;
    }
    if (IN(e, i, test_tools))
        return C_TESTS;
    if (IN(e, i, lint_tools))
        return C_LINT;
    if (IN(e, i, type_tools))
        return C_TYPES;
    if (IN(e, i, build_tools))
        return C_BUILD;
    if (is(e, i, "build") || is(e, i, "compilation") || is(e, i, "builds") ||
        (is(e, i, "ci") && !is(e, i + 1, "build")))
        return C_BUILD;
    if (e->tests_seen && (is(e, i, "they") || is(e, i, "all") || is(e, i, "both")))
        return C_TESTS;
    return C_NONE;
}

/* "zero failing tests", "no failed tests", "0 test failures": tests pass. */
static bool no_failing_tests(const struct en *e, size_t i, size_t *end)
{
    if (!(is(e, i, "no") || is(e, i, "zero") ||
          (i < e->n && e->t[i].type == TK_NUM && e->t[i].n == 1 && e->st->s[e->t[i].s] == '0')))
        return false;
    if ((is(e, i + 1, "failing") || is(e, i + 1, "failed") || is(e, i + 1, "broken")) &&
        (is(e, i + 2, "tests") || is(e, i + 2, "test") || is(e, i + 2, "specs"))) {
        *end = i + 3;
        return true;
    }
    if ((is(e, i + 1, "test") || is(e, i + 1, "tests")) && is(e, i + 2, "failures")) {
        *end = i + 3;
        return true;
    }
    return false;
}

/* "no", "zero", "0" or "without" then an issue word: an all-clear. */
static bool all_clear_at(const struct en *e, size_t i, size_t *end)
{
    size_t k = i + 1;

    if (!(is(e, i, "no") || is(e, i, "zero") || is(e, i, "without") ||
          (i < e->n && e->t[i].type == TK_NUM && e->t[i].n == 1 && e->st->s[e->t[i].s] == '0')))
        return false;
    if (is(e, k, "more") || is(e, k, "new") || is(e, k, "remaining") || is(e, k, "outstanding"))
        k++;
    for (size_t m = 0;
         m < 2 && k < e->n && word(e, k) && !(lex(e, k) & L_FAILN) && !is(e, k, "warnings") &&
         !is(e, k, "issues") && !is(e, k, "problems") && !is(e, k, "failures");
         m++)
        k++;
    if (is(e, k, "errors") || is(e, k, "error") || is(e, k, "warnings") || is(e, k, "warning") ||
        is(e, k, "issues") || is(e, k, "problems") || is(e, k, "failures") ||
        is(e, k, "complaints") || is(e, k, "findings") || is(e, k, "violations") ||
        is(e, k, "diagnostics")) {
        *end = k + 1;
        return true;
    }
    return false;
}

/* The category an all-clear names itself ("no type errors", "no lint warnings"). */
static enum check all_clear_kind(const struct en *e, size_t i, size_t end)
{
    for (size_t k = i + 1; k < end; k++) {
        if (is(e, k, "type") || is(e, k, "typing") || is(e, k, "typescript"))
            return C_TYPES;
        if (IN(e, k, lint_tools) || is(e, k, "style"))
            return C_LINT;
        if (is(e, k, "build") || is(e, k, "compile") || is(e, k, "compiler") ||
            is(e, k, "compilation"))
            return C_BUILD;
        if (is(e, k, "test") || is(e, k, "tests"))
            return C_TESTS;
    }
    return C_NONE;
}

/* A passing predicate at k for a check: true, and *end after it. */
static bool passing_at(const struct en *e, size_t k, enum check c, size_t *end)
{
    uint16_t cls = vclass(e, k);
    uint8_t f = vform(e, k);

    *end = k + 1;
    if (verb(e, k) && (cls & V_FAIL))
        return false;
    if (is(e, k, "pass") || is(e, k, "passes") || is(e, k, "passed") || is(e, k, "passing") ||
        is(e, k, "succeed") || is(e, k, "succeeds") || is(e, k, "succeeded") ||
        is(e, k, "succeeding") || is(e, k, "green") || is(e, k, "clean") ||
        is(e, k, "successful") || is(e, k, "happy") || is(e, k, "ok") || is(e, k, "okay"))
        return true;
    if ((is(e, k, "ran") || is(e, k, "run") || is(e, k, "runs") || is(e, k, "went") ||
         is(e, k, "turned") || is(e, k, "came") || is(e, k, "comes") || is(e, k, "come")) &&
        (is(e, k + 1, "green") || is(e, k + 1, "clean") ||
         (is(e, k + 1, "back") && (is(e, k + 2, "clean") || is(e, k + 2, "green"))))) {
        *end = k + (is(e, k + 1, "back") ? 3 : 2);
        return true;
    }
    if ((is(e, k, "completed") || is(e, k, "completes") || is(e, k, "finished") ||
         is(e, k, "finishes") || is(e, k, "works") || is(e, k, "worked") || is(e, k, "compiles") ||
         is(e, k, "compiled") || is(e, k, "builds") || is(e, k, "built")) &&
        (is(e, k + 1, "successfully") || is(e, k + 1, "cleanly") || is(e, k + 1, "fine") ||
         is(e, k + 1, "without") ||
         (is(e, k + 1, "with") && (is(e, k + 2, "no") || is(e, k + 2, "zero") ||
                                   (k + 2 < e->n && e->t[k + 2].type == TK_NUM &&
                                    e->t[k + 2].n == 1 && e->st->s[e->t[k + 2].s] == '0'))) ||
         (c == C_BUILD && (is(e, k, "works") || is(e, k, "worked"))))) {
        *end = k + 2;
        return true;
    }
    /* "reports no problems", "found no issues", "has zero errors", "shows 0 warnings" */
    if (verb(e, k) && (f & (VF_S | VF_PAST | VF_PART | VF_BASE)) &&
        ((cls & (V_SAY | V_RES)) || is(e, k, "has") || is(e, k, "had") || is(e, k, "have") ||
         is(e, k, "gives") || is(e, k, "gave"))) {
        size_t k2 = k + 1;
        if (is(e, k2, "back"))
            k2++;
        if (is(e, k2, "with")) /* "came back with 0 errors" */
            k2++;
        if (all_clear_at(e, k2, end))
            return true;
        if (is(e, k2, "nothing") || is(e, k2, "zero") ||
            (is(e, k2, "no") && is(e, k2 + 1, "issues"))) {
            *end = k2 + 1;
            return true;
        }
    }
    if (is(e, k, "lint-clean") || is(e, k, "type-clean"))
        return true;
    return false;
}

static void check_claims(struct en *e)
{
    for (size_t i = 0; i < e->n && e->ok; i++) {
        size_t len, end = 0, k;
        enum check c;
        struct gates g;
        bool neg_between = false, found = false;

        /* an all-clear that names its check: "no type errors", "zero lint warnings" */
        if (all_clear_at(e, i, &end) && (c = all_clear_kind(e, i, end)) != C_NONE) {
            gates(e, i, &g);
            if (!gated(&g))
                emit_check(e, c);
            i = end - 1;
            continue;
        }
        if (no_failing_tests(e, i, &end)) {
            gates(e, i, &g);
            if (!gated(&g))
                emit_check(e, C_TESTS);
            i = end - 1;
            continue;
        }
        /* "it compiles cleanly", "builds without warnings": the build, whatever the subject */
        if ((is(e, i, "compiles") || is(e, i, "compiled") || is(e, i, "builds") ||
             is(e, i, "built")) &&
            passing_at(e, i, C_BUILD, &end) && !(lex(e, i - 1) & L_DET)) {
            gates(e, i, &g);
            if (!gated(&g))
                emit_check(e, C_BUILD);
            i = end - 1;
            continue;
        }
        c = check_subject(e, i, &len);
        if (c == C_NONE)
            continue;
        if (c == C_TESTS && !is(e, i, "they") && !is(e, i, "all") && !is(e, i, "both"))
            e->tests_seen = true;
        /* the predicate, a few tokens on: "tests are all passing", "every test in tests/
         * passes", "ran pytest: 34 passed, 0 failed" */
        for (k = i + len; k < e->n && k < i + len + 7 && e->pc[k] == e->pc[i]; k++) {
            /* "pyright: 0 errors, 0 warnings" */
            if (k == i + len && punct(e, k, ':') && all_clear_at(e, k + 1, &end)) {
                found = true;
                break;
            }
            if (word(e, k) && (lex(e, k) & L_NEG))
                neg_between = true;
            if (passing_at(e, k, c, &end)) {
                found = true;
                break;
            }
            if (verb(e, k) && !(lex(e, k) & (L_BE | L_HAVE | L_DO)) && !(vform(e, k) & VF_ING) &&
                !(lex(e, k - 1) & L_DET) && !is(e, k, "run") && !is(e, k, "test"))
                k = e->n; /* another verb: this subject's predicate is not a pass */
            if (word(e, k) && (lex(e, k) & (L_REL | L_CONJ)))
                k = e->n;
        }
        if (!found || neg_between)
            continue;
        gates(e, i, &g);
        if (g.imper && clause_head(e, clause_start(e, i), i) == i)
            g.imper = false; /* "Test suite passes": a subject, not an order */
        if (!gated(&g) && !g.report) {
            struct gates g2;
            gates(e, k, &g2);
            if (!g2.neg && !g2.modal && !g2.cond && !g2.hedge && !g2.report)
                emit_check(e, c);
        }
        i = end - 1;
    }
}

/* ---- tools ---- */

static bool fail_object(const struct en *e, size_t k)
{
    while (k < e->n && word(e, k) && (lex(e, k) & (L_DET | L_ADV)))
        k++;
    if (is(e, k, "http") || is(e, k, "status"))
        k++;
    /* "returned a 404", "returned 503 Service Unavailable": an HTTP error, not "500 rows" */
    if (k < e->n && e->t[k].type == TK_NUM && e->t[k].n == 3 &&
        (e->st->s[e->t[k].s] == '4' || e->st->s[e->t[k].s] == '5') &&
        (k + 1 >= e->n || !word(e, k + 1) ||
         (lex(e, k + 1) & (L_PREP | L_DEST | L_CONJ | L_FAILN)) || (e->t[k + 1].flags & TF_CAP) ||
         is(e, k + 1, "not")))
        return true;
    return word(e, k) && (lex(e, k) & L_FAILN);
}

/* A concrete result follows p: a value, "that …", ": …", "no …", a count. */
static bool specific_after(const struct en *e, size_t p)
{
    if (p + 1 >= e->n)
        return false;
    if (punct(e, p + 1, ':') || is(e, p + 1, "that") || is(e, p + 1, "nothing") ||
        is(e, p + 1, "no") || (lex(e, p + 1) & L_NUMW))
        return true;
    for (size_t k = p + 1; k < e->n && k < p + 9 && e->gc[k] == e->gc[p]; k++) {
        if (value(e, k))
            return true;
    }
    return false;
}

/* May a mention of a one-word ordinary name ("echo") be taken for the tool here? */
static bool mention_ok(const struct en *e, size_t m, size_t me)
{
    size_t b = m;

    if (e->t[m].tool == -2 || !rein__claims_vocab_is_common(e->st->vocab, e->t[m].tool))
        return true;
    if (e->t[m].type == TK_CODE || e->t[m].type == TK_QUOTE || (e->t[me - 1].flags & TF_POSS))
        return true;
    if (word(e, me) && (lex(e, me) & (L_TOOLN | L_OUTN)))
        return true;
    /* "Echo responded with …": the name as the subject of what a tool does */
    if (clause_initial(e, m) && verb(e, me) && (vclass(e, me) & (V_RES | V_SAY)) &&
        (vform(e, me) & VF_PAST))
        return true;
    while (b > 0 && (lex(e, b - 1) & L_DET))
        b--;
    return b > 0 && ((vclass(e, b - 1) & (V_USE | V_GIVE)) || (lex(e, b - 1) & L_TPREP));
}

/* A concrete value anywhere after token p in the sentence. */
static bool value_later(const struct en *e, size_t p)
{
    for (size_t k = p + 1; k < e->n; k++) {
        if (value(e, k) || (word(e, k) && (lex(e, k) & L_NUMW)))
            return true;
    }
    return false;
}

/* Is the mention at m inside what someone else is reported to have said ("the ticket says
 * the calculator returned …", "you mentioned that …")? */
static bool reported(const struct en *e, size_t m)
{
    if (depicted(e))
        return true;
    for (size_t j = clause_start(e, m); j < m; j++) {
        if (word(e, j) && (lex(e, j) & L_SAYV) && !(j > 0 && (lex(e, j - 1) & L_PRON1)) &&
            e->t[j].tool == -1)
            return true;
    }
    return false;
}

/* Does anything after k say it failed or did not happen (failed, an error, not, but)? */
static bool failure_later(const struct en *e, size_t k)
{
    for (; k < e->n; k++) {
        if (word(e, k) && ((vclass(e, k) & V_FAIL) || (lex(e, k) & (L_FAILN | L_NEG)) ||
                           is(e, k, "but") || is(e, k, "however") || is(e, k, "unfortunately")))
            return true;
    }
    return false;
}

/* An arrow between a call and its result: → ⇒ -> => */
static bool arrow(const struct en *e, size_t k)
{
    const struct rein__tok *t = k < e->n ? &e->t[k] : NULL;
    const char *p = t ? e->st->s + t->s : NULL;

    if (!t)
        return false;
    if (t->type == TK_OTHER && t->n == 3 &&
        (memcmp(p, "\xe2\x86\x92", 3) == 0 || memcmp(p, "\xe2\x87\x92", 3) == 0))
        return true;
    /* -> and => (the - or = is read as a one-character token) */
    return t->n == 1 && (p[0] == '-' || p[0] == '=') && punct(e, k + 1, '>');
}

/* (A) the object of a use verb: "I called file_search", "ran the log-transform tool". */
static bool tool_object(struct en *e, size_t m, size_t me)
{
    size_t u = m, fill = 0;
    struct gates g;
    enum tense t;

    while (u > 0 && fill < 3 && word(e, u - 1) &&
           ((lex(e, u - 1) & (L_DET | L_QUANT)) || is(e, u - 1, "quick") || is(e, u - 1, "brief") ||
            is(e, u - 1, "thorough") || is(e, u - 1, "second") || is(e, u - 1, "another") ||
            is(e, u - 1, "final") || is(e, u - 1, "fresh") || is(e, u - 1, "full") ||
            is(e, u - 1, "targeted"))) {
        u--;
        fill++;
    }
    if (u == 0)
        return false;
    u--;
    /* "kicked off run_command", "fired up the calculator": a particle after the verb */
    if ((is(e, u, "off") || is(e, u, "up")) && u > 0 && verb(e, u - 1))
        u--;
    /* "I had the calculator add the numbers": the tool did it */
    if ((is(e, u, "had") || is(e, u, "got") || is(e, u, "made") || is(e, u, "let")) && u > 0 &&
        (lex(e, u - 1) & L_PRON) && (vform(e, me) & VF_BASE)) {
        gates(e, u, &g);
        return !gated(&g);
    }
    /* "Tools used: calculator, file_search", "Sources: web_search (3 results)" */
    if ((punct(e, u, ':') || punct(e, u, P_CJK_COLON)) && u > 0 &&
        (((vclass(e, u - 1) & V_USE) && verb(e, u - 1) && realis(tense(e, u - 1))) ||
         ((is(e, u - 1, "sources") || is(e, u - 1, "source")) && clause_initial(e, u - 1)))) {
        gates(e, u - 1, &g);
        return !gated(&g);
    }
    /* "turned to web_search", "relied on query_database", "a query to query_database" */
    if ((is(e, u, "to") || is(e, u, "on") || is(e, u, "upon")) && u > 0 &&
        (is(e, u - 1, "turned") || is(e, u - 1, "resorted") || is(e, u - 1, "switched") ||
         is(e, u - 1, "relied") || is(e, u - 1, "depended") || is(e, u - 1, "leaned") ||
         is(e, u - 1, "drew") || is(e, u - 1, "counted") ||
         ((lex(e, u - 1) & L_TOOLN) && is(e, u, "to") &&
          realis_verb(e, clause_start(e, u), u - 1, e->pc[u]) != SIZE_MAX))) {
        size_t w =
            (lex(e, u - 1) & L_TOOLN) ? realis_verb(e, clause_start(e, u), u - 1, e->pc[u]) : u - 1;
        if (!realis(tense(e, w)))
            return false;
        gates(e, w, &g);
        return !gated(&g);
    }
    /* "passed the numbers to the calculator", "sent it to send_email" */
    if ((is(e, u, "to") || is(e, u, "into") || is(e, u, "through")) && u > 0) {
        size_t k = u;
        while (k > 0 && k + 7 > u && e->pc[k - 1] == e->pc[u] &&
               !(verb(e, k - 1) && (vclass(e, k - 1) & V_GIVE)))
            k--;
        if (k == 0 || !(vclass(e, k - 1) & V_GIVE) || e->pc[k - 1] != e->pc[u])
            return false;
        u = k - 1;
    } else if ((is(e, u, "did") || is(e, u, "performed") || is(e, u, "conducted") ||
                is(e, u, "ran")) &&
               fill > 0) {
        /* "I did a file search", "performed a quick web_search": the tool as an act */
    } else if ((vclass(e, u) & V_TRY) && (vform(e, u) & VF_PAST) && !failure_later(e, me)) {
        /* "I tried file_search and it found …": tried, with the tool as its object, and
         * nothing in the sentence says it failed */
    } else if ((vclass(e, u) & V_GIVE) && verb(e, u) && (lex(e, me) & L_DET)) {
        /* "I gave get_weather the coordinates": the tool as the one given to */
    } else if (!(vclass(e, u) & V_USE) || !verb(e, u)) {
        return false;
    }
    /* "a helper called slugify": naming, not calling */
    if ((is(e, u, "called") || is(e, u, "named")) && u > 0 &&
        (lex(e, u - 1) & (L_FNN | L_FILEN | L_TOOLN)))
        return false;
    if (vform(e, u) & VF_ING) {
        size_t v;
        if (u > 0 && (lex(e, u - 1) & L_BE))
            return false; /* "I am running file_search": under way */
        /* "I avoided calling send_email", "without calling web_search" */
        if (u > 0 && (is(e, u - 1, "avoided") || is(e, u - 1, "avoid") || is(e, u - 1, "skipped") ||
                      is(e, u - 1, "without") || is(e, u - 1, "of") || is(e, u - 1, "stopped") ||
                      is(e, u - 1, "from") || is(e, u - 1, "postponed") || is(e, u - 1, "before")))
            return false;
        gates(e, u, &g);
        if (gated(&g))
            return false;
        /* "After invoking create_ticket, …": done, unless what follows is still to come */
        if (u > 0 && (is(e, u - 1, "after") || is(e, u - 1, "upon"))) {
            for (size_t k = me; k < e->n; k++) {
                /* "I can confirm …", "I can tell you …": what is known now */
                if ((is(e, k, "can") || is(e, k, "could")) &&
                    (is(e, k + 1, "confirm") || is(e, k + 1, "tell") || is(e, k + 1, "see") ||
                     is(e, k + 1, "report") || is(e, k + 1, "say")))
                    continue;
                if (word(e, k) && (lex(e, k) & (L_MODAL | L_COND | L_NEG | L_SEMI)))
                    return false;
            }
            return !e->all_question && e->qfrom == e->n;
        }
        /* "Calling the calculator gave 144", "After calling fetchUrl, I got …" */
        for (v = me; v < e->n; v++) {
            if (verb(e, v) && !(vclass(e, v) & (V_FAIL | V_TRY)) && realis(tense(e, v))) {
                struct gates g2;
                gates(e, v, &g2);
                return !gated(&g2);
            }
        }
        return false;
    }
    t = is(e, u, "did") ? T_PAST : tense(e, u);
    if (!realis(t))
        return false;
    gates(e, u, &g);
    return !gated(&g);
}

/* Does the tool preposition at prep open its clause, alone ("Via web_search, …") or after a
 * participle and its object ("Looking it up with web_search, …")? */
static bool fronted(const struct en *e, size_t prep)
{
    size_t cs = clause_start(e, prep), h = clause_head(e, cs, prep);

    if (h >= prep)
        return true;
    if (!verb(e, h) || !(vform(e, h) & VF_ING) || (vclass(e, h) & (V_FAIL | V_TRY)) || h + 4 < prep)
        return false;
    for (size_t k = h + 1; k < prep; k++) {
        if (!word(e, k) || verb(e, k) ||
            (lex(e, k) & (L_BE | L_HAVE | L_MODAL | L_NEG | L_CONJ | L_REL)))
            return false;
    }
    return true;
}

/* (B) after a tool preposition or in a frame: "with get_weather", "according to the
 * calculator", "per file_search's output", "based on the output of run_command". */
static bool tool_frame(struct en *e, size_t m, size_t me)
{
    size_t b = m;
    struct gates g;

    while (b > 0 && word(e, b - 1) && (lex(e, b - 1) & L_DET))
        b--;
    /* "the output of", "the results from", "the help of" */
    if (b >= 2 && (is(e, b - 1, "of") || is(e, b - 1, "from")) &&
        ((lex(e, b - 2) & L_OUTN) || is(e, b - 2, "help"))) {
        size_t o = b - 2;
        size_t ob = o;
        while (ob > 0 && word(e, ob - 1) && (lex(e, ob - 1) & L_DET))
            ob--;
        if (is(e, o, "help")) {
            b = ob; /* "with the help of M" is "with M" */
        } else {
            gates(e, o, &g);
            if (gated(&g))
                return false;
            /* a frame word before it, or a concrete value after the mention */
            if (ob > 0 && ((lex(e, ob - 1) & (L_TPREP | L_DEST)) || is(e, ob - 1, "on")))
                return true;
            return value_later(e, me - 1);
        }
    }
    if (b == 0)
        return false;
    if (is(e, b - 1, "per") || (is(e, b - 1, "to") && b >= 2 && is(e, b - 2, "according")) ||
        (is(e, b - 1, "to") && b >= 2 && is(e, b - 2, "thanks")) ||
        (is(e, b - 1, "of") && b >= 2 && is(e, b - 2, "courtesy")) ||
        (is(e, b - 1, "on") && b >= 2 && is(e, b - 2, "based"))) {
        gates(e, b - 1, &g);
        return !gated(&g);
    }
    if (!(lex(e, b - 1) & L_TPREP) || is(e, b - 1, "according"))
        return false;
    /* "The mean is 4.5 (via calculator)": a source given in brackets */
    if (b >= 2 && punct(e, b - 2, '(') && b >= 3) {
        gates(e, b - 3, &g);
        return !gated(&g) && !g.report;
    }
    {
        size_t prep = b - 1, v;
        uint16_t pc = e->pc[prep];
        /* the verb the preposition belongs to: before it, or (a fronted "Using M, …",
         * "With M, …") after the mention */
        v = realis_verb(e, clause_start(e, prep), prep, pc);
        /* "The figure comes from the calculator: 12.75": a present verb, a value given */
        if (v == SIZE_MAX && prep > 0 && verb(e, prep - 1) && (vform(e, prep - 1) & VF_S) &&
            !(vclass(e, prep - 1) & (V_FAIL | V_NORUN)) && value_later(e, me - 1)) {
            gates(e, prep - 1, &g);
            if (!gated(&g))
                return true;
        }
        /* "Quick check with file_search: no other callers": a verbless head, a result */
        if (v == SIZE_MAX && (punct(e, me, ':') || punct(e, me, P_CJK_COLON)) && me + 1 < e->n) {
            bool verbless = !imperative(e, clause_start(e, prep), prep);
            for (size_t k = clause_start(e, prep); k < prep; k++)
                verbless &= !(vform(e, k) & (VF_PAST | VF_PART | VF_S));
            gates(e, prep, &g);
            if (verbless && !gated(&g))
                return true;
        }
        if (v == SIZE_MAX && (fronted(e, prep) || is(e, prep, "using")))
            v = realis_verb(e, me, e->n, e->pc[me < e->n ? me : prep]);
        if (v == SIZE_MAX && fronted(e, prep)) {
            for (size_t k = me; k < e->n && v == SIZE_MAX; k++) {
                if (verb(e, k) && realis(tense(e, k)) && !(vclass(e, k) & (V_FAIL | V_TRY))) {
                    gates(e, k, &g);
                    v = gated(&g) ? e->n : k;
                }
            }
        }
        /* "Via web_search, the release date is March 3": a fronted frame, then a result
         * stated in the present with a concrete value */
        if (v == SIZE_MAX && fronted(e, prep) && punct(e, me, ',')) {
            for (size_t k = me + 1; k < e->n && k < me + 8; k++) {
                if (verb(e, k) || (lex(e, k) & (L_MODAL | L_HAVE | L_DO)))
                    break;
                if ((is(e, k, "is") || is(e, k, "are")) && !(lex(e, k) & L_PRON)) {
                    gates(e, k, &g);
                    return !gated(&g) && !g.report && specific_after(e, k) && !habitual(e, k);
                }
            }
        }
        return v != SIZE_MAX && v < e->n;
    }
}

/* "A typical web_search returns ten results", "any file_search lists …": a kind of call, in
 * general. A bare "a" only with a result verb ("A web_search shows …" reports one). */
static bool indefinite(const struct en *e, size_t m, uint16_t cls)
{
    size_t b = m;

    while (b > 0 && (is(e, b - 1, "typical") || is(e, b - 1, "usual") || is(e, b - 1, "normal") ||
                     is(e, b - 1, "single") || is(e, b - 1, "regular")))
        b--;
    if (b < m || (b > 0 && (is(e, b - 1, "any") || is(e, b - 1, "each") || is(e, b - 1, "every"))))
        return true;
    return b > 0 && (is(e, b - 1, "a") || is(e, b - 1, "an")) && !(cls & V_SAY);
}

/* "exited with code 1", "exits with a non-zero status": the run failed */
static bool nonzero_exit(const struct en *e, size_t k)
{
    if (!(is(e, k, "exited") || is(e, k, "exits") || is(e, k, "exit")))
        return false;
    for (size_t j = k + 1; j < e->n && j < k + 6; j++) {
        if (is(e, j, "non-zero") || is(e, j, "nonzero"))
            return true;
        if (e->t[j].type == TK_NUM)
            return !(e->t[j].n == 1 && e->st->s[e->t[j].s] == '0');
    }
    return false;
}

/* (C) the subject of a result verb: "the calculator returned 2", "echo's output was …",
 * "Calculator output: 42", "the query_database call returned 12 rows". */
static bool tool_subject(struct en *e, size_t m, size_t me)
{
    size_t k = me;
    bool out = false;
    struct gates g;
    enum tense t;
    uint16_t cls;

    /* "Weather lookup (get_weather) says …": the name in brackets after its label */
    if (m > 0 && punct(e, m - 1, '(') && punct(e, k, ')'))
        k++;
    while (k < e->n && word(e, k) && (lex(e, k) & L_TOOLN) && !(vform(e, k) & (VF_PAST | VF_S)) &&
           k < me + 2)
        k++;
    if (k < e->n && word(e, k) && (lex(e, k) & L_OUTN)) {
        out = true;
        k++;
    }
    if (out && (punct(e, k, ':') || punct(e, k, P_CJK_COLON))) {
        gates(e, k - 1, &g);
        return !gated(&g) && k + 1 < e->n;
    }
    /* "get_weather's forecast for Rome: 30°C": what the tool gave, labelling a value */
    if (!out && me > m && (e->t[me - 1].flags & TF_POSS)) {
        for (size_t j = me; j < e->n && j < me + 5 && !(verb(e, j) && !(vform(e, j) & VF_ING));
             j++) {
            if (punct(e, j, ':') || punct(e, j, P_CJK_COLON)) {
                if (!(value(e, j + 1) || (word(e, j + 1) && (lex(e, j + 1) & L_NUMW))))
                    break;
                gates(e, j, &g);
                return !gated(&g);
            }
        }
    }
    /* "Calculator: 42", "**file_search:** 2 hits", "calculator → 4": a tool as the label of
     * a result */
    if ((punct(e, k, ':') || punct(e, k, P_CJK_COLON) || arrow(e, k)) && clause_initial(e, m) &&
        k + 1 < e->n) {
        size_t r = arrow(e, k) && e->t[k].n == 1 ? k + 2 : k + 1;
        /* "send_email: delivered" */
        bool done = verb(e, r) && (vform(e, r) & (VF_PAST | VF_PART)) && !(vform(e, r) & VF_BASE) &&
                    !(vclass(e, r) & (V_FAIL | V_TRY | V_NORUN));
        if (!(value(e, r) || (word(e, r) && (lex(e, r) & L_NUMW)) || done))
            return false;
        gates(e, k, &g);
        return !gated(&g);
    }
    /* "the calculator, which returned 7" */
    if (punct(e, k, ',') && (is(e, k + 1, "which") || is(e, k + 1, "who")))
        k += 2;
    while (k < e->n && word(e, k) && (lex(e, k) & (L_ADV | L_NOW)) && !verb(e, k))
        k++;
    if (out && k < e->n && (lex(e, k) & L_BE) && !(lex(e, k) & L_PRON)) {
        gates(e, k, &g);
        return !gated(&g) && (is(e, k, "was") || is(e, k, "were") || specific_after(e, k));
    }
    /* "log_transform's output has 12 error lines" */
    if (out && (is(e, k, "has") || is(e, k, "had")) && specific_after(e, k)) {
        gates(e, k, &g);
        return !gated(&g);
    }
    /* skip auxiliaries to the verb: "has returned", "was not run" */
    {
        size_t a = k;
        while (a < e->n && word(e, a) &&
               (lex(e, a) & (L_HAVE | L_BE | L_DO | L_NEG | L_ADV | L_NOW | L_MODAL)) &&
               !(lex(e, a) & L_PRON) && a < k + 4)
            a++;
        k = a;
    }
    if (!verb(e, k) || (lex(e, k) & (L_BE | L_HAVE)))
        return false;
    cls = vclass(e, k);
    if ((cls & (V_FAIL | V_TRY)) || nonzero_exit(e, k))
        return false;
    t = tense(e, k);
    gates(e, k, &g);
    if (gated(&g))
        return false;
    if (t == T_PRESENT && indefinite(e, m, cls))
        return false;
    if (t == T_PASSIVE)
        return (cls & V_USE) && !(cls & V_RES) && !present_state(e, k) && !habitual(e, k);
    if (t == T_PAST || t == T_PERFECT || t == T_FRAGMENT) {
        if (cls & V_NORUN)
            return false;
        return !fail_object(e, k + 1) &&
               !((is(e, k, "came") || is(e, k, "come")) && is(e, k + 1, "with"));
    }
    if (t == T_PRESENT ||
        (out && t == T_NO && (vform(e, k) & VF_BASE) && k > 0 && (lex(e, k - 1) & L_OUTN))) {
        /* "web search results show …": the plural takes the bare form */
        if (cls & V_SAY)
            return true;
        if (cls & (V_RES | V_PASS))
            return specific_after(e, k) && !fail_object(e, k + 1);
    }
    return false;
}

static size_t mention_end(const struct en *e, size_t m)
{
    size_t me = m + (e->t[m].tool_len ? e->t[m].tool_len : 1);

    return me > e->n ? e->n : me;
}

/* The next mention coordinated with the one ending at me ("X and Y", "X, Y", "X, then Y"),
 * or SIZE_MAX. */
static size_t coordinated(const struct en *e, size_t me)
{
    size_t k = me;

    while (k < e->n && word(e, k) && (lex(e, k) & (L_TOOLN | L_OUTN)) && k < me + 2)
        k++;
    bool comma = punct(e, k, ',');
    size_t m2, after;

    if (!(comma || is(e, k, "and") || is(e, k, "or") || is(e, k, "&")))
        return SIZE_MAX;
    k++;
    if (is(e, k, "and") || is(e, k, "then"))
        k++;
    while (k < e->n && word(e, k) && (lex(e, k) & L_DET))
        k++;
    if (k >= e->n || e->t[k].tool == -1)
        return SIZE_MAX;
    /* ", and echo is not needed": a mention with its own predicate after a comma stands
     * alone */
    m2 = k;
    after = mention_end(e, m2);
    while (after < e->n && word(e, after) && (lex(e, after) & L_TOOLN))
        after++;
    if (comma && (verb(e, after) || (lex(e, after) & (L_BE | L_MODAL | L_NEG | L_HAVE))))
        return SIZE_MAX;
    return m2;
}

static void tool_claims(struct en *e)
{
    size_t chain[16], n = 0;

    for (size_t m = 0; m < e->n && e->ok; m++) {
        size_t me, c;
        bool claimed = false;
        if (e->t[m].tool == -1)
            continue;
        /* a chain of coordinated mentions shares what is said of any of them */
        n = 0;
        for (c = m; c != SIZE_MAX && n < 16; c = coordinated(e, mention_end(e, c)))
            chain[n++] = c;
        for (size_t i = 0; i < n && !claimed; i++) {
            size_t a = chain[i], ae = mention_end(e, a);
            claimed = !reported(e, a) && (n > 1 || mention_ok(e, a, ae)) &&
                      (tool_object(e, a, ae) || tool_frame(e, a, ae) || tool_subject(e, a, ae));
        }
        for (size_t i = 0; i < n && claimed; i++)
            emit(e, REIN_CLAIM_TOOL, chain[i], NULL, 0, SIZE_MAX, 0);
        me = mention_end(e, chain[n - 1]);
        m = me - 1;
    }
}

/* ---- files and functions ---- */

struct pairing {
    size_t paths[8];
    bool from[8]; /* the path came after "from" */
    bool dest[8]; /* the path came after to, into, onto or as */
    size_t np;
    size_t name;     /* identifier token, or SIZE_MAX */
    bool name_after; /* the name came after an object path ("created P with a mul() …") */
    int line;
};

static bool dest_word(const struct en *e, size_t k, bool strong_only)
{
    if (is(e, k, "to") || is(e, k, "into") || is(e, k, "onto") || is(e, k, "as"))
        return true;
    return !strong_only && (lex(e, k) & L_DEST);
}

/* What verb v governs, forward: its object and destination paths, and a function name. */
static void pair_forward(const struct en *e, size_t v, struct pairing *pr)
{
    bool other_prep = false, after_fn_noun = false, strong_dest = false, with_prep = false;
    int prep = 0; /* 0 none, 1 a destination, 2 another preposition, 3 from */

    memset(pr, 0, sizeof(*pr));
    pr->name = SIZE_MAX;
    for (size_t k = v + 1; k < e->n && k < v + WINDOW && e->pc[k] == e->pc[v]; k++) {
        const struct rein__tok *t = &e->t[k];
        uint64_t l = lex(e, k);
        if (t->type == TK_PATH) {
            if ((prep == 0 || prep == 1 || prep == 3) && pr->np < 8) {
                pr->from[pr->np] = prep == 3;
                pr->dest[pr->np] = prep == 1 && strong_dest;
                pr->paths[pr->np++] = k;
            }
            continue;
        }
        if (t->type == TK_PUNCT) {
            if (t->punct == ',' || t->punct == ':' || t->punct == P_CJK_COMMA ||
                t->punct == P_CJK_ENUM || t->punct == P_CJK_COLON || t->punct == '(' ||
                t->punct == ')')
                continue;
            break;
        }
        if (ident_tok(e, k) && pr->name == SIZE_MAX &&
            (prep == 0 || after_fn_noun || (pr->np && with_prep))) {
            pr->name = k;
            pr->name_after = pr->np > 0;
            continue;
        }
        if (t->type != TK_WORD)
            continue;
        if (after_fn_noun && pr->name == SIZE_MAX && !(l & (L_DET | L_DEST | L_PREP)) &&
            !verb(e, k)) {
            pr->name = k; /* "a helper called slugify" */
            after_fn_noun = false;
            continue;
        }
        if (is(e, k, "which") || is(e, k, "who") || (l & L_CONJ) ||
            (is(e, k, "that") && (verb(e, k + 1) || (lex(e, k + 1) & (L_PRON | L_DET)))))
            break;
        if (is(e, k, "line") && k + 1 < e->n && e->t[k + 1].type == TK_NUM) {
            int n = 0;
            for (uint32_t c = 0; c < e->t[k + 1].n && c < 7; c++) {
                char d = e->st->s[e->t[k + 1].s + c];
                if (d < '0' || d > '9')
                    break;
                n = n * 10 + (d - '0');
            }
            pr->line = n;
            k++;
            continue;
        }
        if ((l & L_FNN) && !verb(e, k)) {
            after_fn_noun = true;
            continue;
        }
        if ((is(e, k, "called") || is(e, k, "named")) && k > 0 &&
            (lex(e, k - 1) & (L_FNN | L_FILEN | L_TOOLN))) {
            after_fn_noun = !(lex(e, k - 1) & L_FILEN);
            continue;
        }
        /* "the folder's contents, including tmp/cache.bin": members of the object */
        if (is(e, k, "including") || is(e, k, "namely")) {
            prep = 0;
            continue;
        }
        /* Another verb ends the phrase ("a script that reads data.csv", "then deleted x",
         * "to add …"), unless it is used as a noun or an adjective: after a determiner ("the
         * updated file", "a clean target"), a bare or -s form inside the object ("test
         * results", "the logs"), or an -ing noun ("error handling to src/cli.c"). */
        if (verb(e, k) && !(l & (L_DET | L_DEST | L_PREP | L_BE | L_HAVE)) &&
            !(lex(e, k - 1) & L_DET)) {
            uint8_t f = vform(e, k);
            bool past = (f & (VF_PAST | VF_PART)) && !(f & (VF_BASE | VF_S));
            bool ing = (f & VF_ING) && k + 1 < e->n &&
                       (e->t[k + 1].type == TK_PATH ||
                        (word(e, k + 1) && !(lex(e, k + 1) & (L_DEST | L_PREP))));
            if (past || ing || ((f & VF_BASE) && is(e, k - 1, "to")))
                break;
        }
        if (is(e, k, "from")) {
            prep = 3;
            continue;
        }
        if (dest_word(e, k, other_prep)) {
            prep = 1;
            strong_dest = dest_word(e, k, true);
            continue;
        }
        if (l & (L_PREP | L_DEST)) {
            prep = 2;
            other_prep = true;
            with_prep = is(e, k, "with");
            continue;
        }
    }
}

/* The path (or identifier) a passive or perfect verb at v is about, before it. */
static size_t subject_before(const struct en *e, size_t v, bool *is_name)
{
    bool have, be, doe, to;
    size_t g = group_start(e, v, &have, &be, &doe, &to), s;

    *is_name = false;
    if (g == 0)
        return SIZE_MAX;
    s = g - 1;
    /* "api/routes.py, which I just created" */
    if ((lex(e, s) & L_PRON) && s >= 2 && (is(e, s - 1, "which") || is(e, s - 1, "that"))) {
        size_t p = s - 2;
        if (punct(e, p, ',') && p > 0)
            p--;
        return is_path(e, p) ? p : SIZE_MAX;
    }
    /* the subject of a passive or a perfect only: "report.pdf has been generated" */
    if (!have && !be)
        return SIZE_MAX;
    /* "A new helper, normalize_path(), is now defined …" */
    if (punct(e, s, ',') && s > 0)
        s--;
    /* "report.pdf file", "the config file config.yaml" */
    if (word(e, s) && (lex(e, s) & L_FILEN) && s > 0 && is_path(e, s - 1))
        s--;
    /* "a `retry()` function", "the parse_args helper" */
    if (word(e, s) && (lex(e, s) & L_FNN) && !verb(e, s) && s > 0 &&
        (ident_tok(e, s - 1) || e->t[s - 1].type == TK_CODE))
        s--;
    if (is_path(e, s))
        return s;
    if (ident_tok(e, s) || (e->t[s].type == TK_CODE)) {
        *is_name = true;
        return s;
    }
    return SIZE_MAX;
}

/*
 * Was it done by someone else, or long ago? "report.pdf was generated last week by the
 * nightly job" reports a fact, not the agent's work: a passive with "by" and an agent that is
 * not the speaker or a tool, or a time in the past (yesterday, ago, last week).
 */
static bool someone_else(const struct en *e, size_t v)
{
    size_t a = clause_start(e, v);

    for (size_t k = a; k < e->n && e->gc[k] == e->gc[a]; k++) {
        if (!word(e, k))
            continue;
        if ((lex(e, k) & L_PAST_T) ||
            (is(e, k, "last") &&
             (is(e, k + 1, "week") || is(e, k + 1, "month") || is(e, k + 1, "year") ||
              is(e, k + 1, "night") || is(e, k + 1, "time"))))
            return true;
        if (k > v && is(e, k, "by") && (vform(e, v) & VF_PART)) {
            size_t b = k + 1;
            while (b < e->n && word(e, b) && (lex(e, b) & L_DET))
                b++;
            if (b < e->n && e->t[b].tool == -1 && !(lex(e, b) & (L_PRON1)) &&
                !(vform(e, b) & VF_ING) && e->t[b].type == TK_WORD)
                return true;
        }
    }
    return false;
}

static void file_claim(struct en *e, uint16_t cls, size_t path, bool from, int line)
{
    enum rein_claim_kind k =
        (cls & V_DELETE) && !from ? REIN_CLAIM_FILE_DELETED : REIN_CLAIM_FILE_WRITTEN;
    (void)line;
    emit(e, k, path, NULL, 0, path, 0);
}

static void verb_files(struct en *e, size_t v)
{
    uint16_t cls = vclass(e, v);
    enum tense t;
    struct gates g;
    struct pairing pr;
    bool is_name;
    size_t s;

    if (!(cls & (V_WRITE | V_DELETE | V_FN)))
        return;
    t = tense(e, v);
    /* "by removing scratch.txt": the tense of the verb it explains */
    if (t == T_NO && (vform(e, v) & VF_ING) && v > 0 && v < TOKENS_MAX && is(e, v - 1, "by")) {
        size_t mv = realis_verb(e, clause_start(e, v), v - 1, e->pc[v]);
        if (mv == SIZE_MAX)
            return;
        t = T_PAST;
    }
    if (!realis(t))
        return;
    gates(e, v, &g);
    if (gated(&g) || g.report || someone_else(e, v))
        return;
    /* "is defined in src/cli.c", "is configured in CMakeLists.txt", "is overwritten on every
     * run": how things are; only putting something somewhere ("results are stored in …") is
     * reported that way */
    if (t == T_PASSIVE && present_state(e, v) && (!(cls & (V_PUT | V_DELETE)) || habitual(e, v)))
        return;
    pair_forward(e, v, &pr);
    s = subject_before(e, v, &is_name);
    if ((cls & V_FN) && (pr.name != SIZE_MAX || (is_name && s != SIZE_MAX)) &&
        !(pr.name != SIZE_MAX && e->t[pr.name].type == TK_PATH)) {
        size_t nm = pr.name != SIZE_MAX ? pr.name : s;
        size_t path = pr.np ? pr.paths[0] : (!is_name && s != SIZE_MAX ? s : SIZE_MAX);
        emit(e, REIN_CLAIM_FUNCTION, nm, NULL, 0, path, pr.line);
        /* "created src/mul.c with a mul() function": the file is a claim of its own */
        if (!pr.name_after)
            return;
    }
    {
        bool dest = false;
        for (size_t i = 0; i < pr.np; i++)
            dest |= pr.dest[i];
        /* "converted data.csv to data.json", "copied a.txt to b/": the destination was
         * written, the object is where it came from */
        for (size_t i = 0; i < pr.np; i++) {
            if (!dest || pr.dest[i] || (cls & V_DELETE))
                file_claim(e, cls, pr.paths[i], pr.from[i], 0);
        }
    }
    if (s != SIZE_MAX && !is_name && (t == T_PASSIVE || t == T_PERFECT || t == T_PAST))
        file_claim(e, cls, s, false, 0);
}

/* States: "notes.txt now contains …", "report.html is ready", "tests/x.py is gone now". */
static void state_claims(struct en *e, size_t p)
{
    size_t k = p + 1, v;
    struct gates g;
    bool now = false, name = ident_tok(e, p);

    if (!is_path(e, p) && !name)
        return;
    if (punct(e, k, ',') && is(e, k + 1, "now"))
        k++; /* "docs/api.md, now documents …" */
    while (k < e->n && ((word(e, k) && (lex(e, k) & (L_NOW | L_ADV)) && !verb(e, k)) ||
                        (is(e, k, "no") && is(e, k + 1, "longer")) || is(e, k, "longer"))) {
        now |= is(e, k, "now");
        k++;
    }
    v = k;
    if (name) {
        /* "parse_args() now lives in src/cli.c", "`slugify()` is now in utils/text.py" */
        if ((lex(e, v) & L_BE) && is(e, v + 1, "now") && (lex(e, v + 2) & L_DEST) &&
            is_path(e, v + 3)) {
            gates(e, v, &g);
            if (!gated(&g) && !g.report)
                emit(e, REIN_CLAIM_FUNCTION, p, NULL, 0, v + 3, 0);
            return;
        }
        if (!now || !(vclass(e, v) & V_STATE) || !(vform(e, v) & VF_S))
            return;
        gates(e, v, &g);
        if (gated(&g) || g.report)
            return;
        for (size_t n = v + 1; n < e->n && n < v + 6 && e->pc[n] == e->pc[v]; n++) {
            if (is_path(e, n)) {
                emit(e, REIN_CLAIM_FUNCTION, p, NULL, 0, n, 0);
                return;
            }
        }
        emit(e, REIN_CLAIM_FUNCTION, p, NULL, 0, SIZE_MAX, 0);
        return;
    }
    if (now && (is(e, v, "has") || is(e, v, "have")) && !(vform(e, v + 1) & VF_PART)) {
        gates(e, v, &g);
        if (!gated(&g) && !g.report)
            emit(e, REIN_CLAIM_FILE_WRITTEN, p, NULL, 0, p, 0);
        return;
    }
    if (k < e->n && (lex(e, k) & L_BE) && !(lex(e, k) & L_PRON)) {
        size_t r = k + 1;
        while (r < e->n && word(e, r) && (lex(e, r) & (L_NOW | L_ADV)) && !verb(e, r))
            r++;
        if (is(e, r, "gone") || is(e, r, "ready") || is(e, r, "available") ||
            (is(e, r, "in") && is(e, r + 1, "place")) ||
            (is(e, r, "up") && is(e, r + 1, "to") && is(e, r + 2, "date"))) {
            gates(e, r, &g);
            if (!gated(&g) && !g.report)
                emit(e, is(e, r, "gone") ? REIN_CLAIM_FILE_DELETED : REIN_CLAIM_FILE_WRITTEN, p,
                     NULL, 0, p, 0);
        }
        return;
    }
    /* "notes/todo.md now lists the remaining work": any present verb, after "now" */
    if (now && verb(e, v) && (vform(e, v) & VF_S) &&
        !(vclass(e, v) & (V_STATE | V_FAIL | V_NORUN))) {
        gates(e, v, &g);
        if (!gated(&g) && !g.report && !habitual(e, v))
            emit(e, REIN_CLAIM_FILE_WRITTEN, p, NULL, 0, p, 0);
        return;
    }
    if (!verb(e, v) || !(vclass(e, v) & V_STATE) || !(vform(e, v) & VF_S))
        return;
    now |= is(e, v + 1, "now");
    if (is(e, v - 1, "longer") && is(e, v - 2, "no")) {
        gates(e, v - 2, &g);
        if (!gated(&g) && !g.report)
            emit(e, REIN_CLAIM_FILE_DELETED, p, NULL, 0, p, 0);
        return;
    }
    if (!now)
        return;
    gates(e, v, &g);
    if (gated(&g) || g.report)
        return;
    for (size_t n = v + 1; n < e->n && n < v + 8 && e->pc[n] == e->pc[v]; n++) {
        if (ident_tok(e, n) && (e->t[n].flags & TF_CALL || (lex(e, n + 1) & L_FNN) ||
                                (n > 0 && (lex(e, n - 1) & L_FNN)))) {
            emit(e, REIN_CLAIM_FUNCTION, n, NULL, 0, p, 0);
            return;
        }
    }
    emit(e, REIN_CLAIM_FILE_WRITTEN, p, NULL, 0, p, 0);
}

/* A path as the label of what was done to it: "notes.md: created", "- src/app.py — added
 * input validation", "old.log: deleted". */
static void path_label(struct en *e, size_t p)
{
    size_t v = p + 1;
    uint16_t cls;
    struct gates g;

    if (!is_path(e, p) || !clause_initial(e, p) ||
        !(punct(e, v, ':') || punct(e, v, P_CJK_COLON) || punct(e, v, P_DASH)))
        return;
    v++;
    while (v < e->n && word(e, v) && (lex(e, v) & (L_NOW | L_ADV)) && !verb(e, v))
        v++;
    cls = vclass(e, v);
    if (!verb(e, v) || !(cls & (V_WRITE | V_DELETE)) || !realis(tense(e, v)))
        return;
    gates(e, v, &g);
    if (gated(&g) || g.report)
        return;
    /* "removed unused imports": the file was changed, not deleted */
    emit(e,
         (cls & V_DELETE) && (v + 1 >= e->n || e->t[v + 1].type == TK_PUNCT)
             ? REIN_CLAIM_FILE_DELETED
             : REIN_CLAIM_FILE_WRITTEN,
         p, NULL, 0, p, 0);
}

/* "The cleaned CSV now lives at data/cleaned.csv": a state that is new, at a path. */
static void state_at(struct en *e, size_t v)
{
    bool now = is(e, v - 1, "now") || is(e, v + 1, "now");
    struct gates g;
    size_t k = v + 1;

    if (!verb(e, v) || !(vclass(e, v) & V_STATE) || !(vform(e, v) & VF_S) || !now ||
        is_path(e, v - 1) || (v >= 2 && is(e, v - 1, "now") && is_path(e, v - 2)))
        return;
    while (k < e->n && is(e, k, "now"))
        k++;
    if (!(lex(e, k) & L_DEST) || !is_path(e, k + 1))
        return;
    gates(e, v, &g);
    if (gated(&g) || g.report)
        return;
    /* "A `flatten()` helper now lives in lib/array.js": a function, in that file */
    for (size_t n = clause_start(e, v); n < v; n++) {
        if (ident_tok(e, n) &&
            ((e->t[n].flags & TF_CALL) || (lex(e, n + 1) & L_FNN) || (lex(e, n - 1) & L_FNN))) {
            emit(e, REIN_CLAIM_FUNCTION, n, NULL, 0, k + 1, 0);
            return;
        }
    }
    emit(e, REIN_CLAIM_FILE_WRITTEN, k + 1, NULL, 0, k + 1, 0);
}

/* "The updated requirements are in requirements.txt now", "Your report is ready at
 * reports/q3.pdf", "The new Dockerfile is in docker/": something that is newly in a file.
 * Without "now" or "new" only "ready" says so ("The reference is available at docs/api.md"
 * describes). */
static void be_at(struct en *e, size_t v)
{
    bool now = false, ready = false;
    size_t r = v + 1;
    struct gates g;

    if (!(is(e, v, "is") || is(e, v, "are")) || v == 0)
        return;
    now = is(e, v - 1, "now");
    for (size_t k = clause_start(e, v); k < v; k++)
        now |= is(e, k, "new");
    while (r < e->n && (is(e, r, "now") || is(e, r, "already"))) {
        now |= is(e, r, "now");
        r++;
    }
    if (is(e, r, "ready") || is(e, r, "available")) {
        ready = is(e, r, "ready");
        r++;
    }
    if (!(is(e, r, "in") || is(e, r, "at")) || !is_path(e, r + 1))
        return;
    now |= is(e, r + 2, "now");
    if (!now && !ready)
        return;
    gates(e, v, &g);
    if (gated(&g) || g.report || habitual(e, v))
        return;
    /* "The new `toCamelCase()` utility is in src/strings.ts": a function, in that file */
    for (size_t n = clause_start(e, v); n < v; n++) {
        if (ident_tok(e, n) &&
            ((e->t[n].flags & TF_CALL) || (lex(e, n + 1) & L_FNN) || (lex(e, n - 1) & L_FNN))) {
            emit(e, REIN_CLAIM_FUNCTION, n, NULL, 0, r + 1, 0);
            return;
        }
    }
    emit(e, REIN_CLAIM_FILE_WRITTEN, r + 1, NULL, 0, r + 1, 0);
}

/* "The final table went into summary.csv", "ended up in out/": something put into a file. */
static void went_into(struct en *e, size_t v)
{
    struct gates g;
    size_t k = v + 1;

    if (!(is(e, v, "went") || is(e, v, "ended")))
        return;
    if (is(e, v, "ended") && is(e, k, "up"))
        k++;
    if (!(is(e, k, "into") || (is(e, v, "ended") && is(e, k, "in"))) || !is_path(e, k + 1) ||
        (v > 0 && (lex(e, v - 1) & L_PRON1)))
        return;
    gates(e, v, &g);
    if (!gated(&g) && !g.report && !someone_else(e, v))
        emit(e, REIN_CLAIM_FILE_WRITTEN, k + 1, NULL, 0, k + 1, 0);
}

/* "There is now a validate() function in checks.py", "there's now a report at out/r.html":
 * something new, in a file. Without "now" it only describes what is there. */
static void there_now(struct en *e, size_t i)
{
    size_t k, fn = SIZE_MAX;
    struct gates g;

    if (is(e, i, "there's"))
        k = i + 1;
    else if (is(e, i, "there") && (is(e, i + 1, "is") || is(e, i + 1, "are")))
        k = i + 2;
    else
        return;
    /* "There's a new `validate()` method …" says the same */
    if (!is(e, k, "now") && !((is(e, k, "a") || is(e, k, "an")) && is(e, k + 1, "new")))
        return;
    gates(e, k, &g);
    if (gated(&g) || g.report)
        return;
    for (size_t n = k + 1; n < e->n && n < k + 10 && e->pc[n] == e->pc[k]; n++) {
        if (ident_tok(e, n) && fn == SIZE_MAX &&
            ((e->t[n].flags & TF_CALL) || (lex(e, n + 1) & L_FNN) || (lex(e, n - 1) & L_FNN)))
            fn = n;
        if (is_path(e, n)) {
            if (fn != SIZE_MAX)
                emit(e, REIN_CLAIM_FUNCTION, fn, NULL, 0, n, 0);
            else
                emit(e, REIN_CLAIM_FILE_WRITTEN, n, NULL, 0, n, 0);
            return;
        }
    }
}

/* "got rid of debug.log" */
static void rid_claims(struct en *e, size_t i)
{
    struct gates g;

    if (!(is(e, i, "rid") && i > 0 && (is(e, i - 1, "got") || is(e, i - 1, "gotten")) &&
          is(e, i + 1, "of")))
        return;
    gates(e, i - 1, &g);
    if (gated(&g) || g.report)
        return;
    for (size_t k = i + 2; k < e->n && k < i + 8 && e->pc[k] == e->pc[i]; k++) {
        if (is_path(e, k))
            emit(e, REIN_CLAIM_FILE_DELETED, k, NULL, 0, k, 0);
    }
}

bool rein__claims_english(struct rein__sent *st, rein__emit_fn fn, void *ud)
{
    struct en e;

    memset(&e, 0, sizeof(e));
    e.st = st;
    e.t = st->t;
    e.n = st->nt < TOKENS_MAX ? st->nt : TOKENS_MAX;
    e.emit = fn;
    e.ud = ud;
    e.ok = true;
    if (e.n == 0)
        return true;
    clauses(&e);
    check_claims(&e);
    tool_claims(&e);
    for (size_t i = 0; i < e.n && e.ok; i++) {
        if (verb(&e, i)) {
            verb_files(&e, i);
            state_at(&e, i);
            went_into(&e, i);
        }
        if (is_path(&e, i) || ident_tok(&e, i))
            state_claims(&e, i);
        path_label(&e, i);
        rid_claims(&e, i);
        there_now(&e, i);
        be_at(&e, i);
    }
    return e.ok;
}
