/*
 * Private to src/claims/: the claims list, the token stream the grammar reads, the English
 * word lexicon, the Chinese marker lexicon and the tool vocabulary. Nothing here is public
 * (include/rein/claims.h is).
 */
#ifndef REIN_CLAIMS_INT_H
#define REIN_CLAIMS_INT_H

#include <rein/claims.h>

#include <stdint.h>
#include <string.h>

#define CLAIM_TEXT_MAX 300 /* bytes of the sentence kept with a claim */
#define CLAIMS_MAX     500 /* claims kept per text; more are dropped (said enough) */

/* ---- the list ---- */

/* One claim; the strings are owned, pub's pointers point at them. */
struct rein__claim {
    struct rein_claim pub;
    char *text, *subject, *tool, *path, *name, *evidence;
};

/* Invariant: n <= cap; v holds n initialised claims. */
struct rein_claims {
    struct rein__claim *v;
    size_t n, cap;
};

/* What the grammar found, before it becomes a list entry. Strings point into the text. */
struct rein__found {
    enum rein_claim_kind kind;
    const char *subject;
    size_t subject_len;
    const char *tool; /* NUL-terminated registered name, or NULL */
    const char *path;
    size_t path_len;
    const char *name;
    size_t name_len;
    int line;
};

/* ---- tokens ---- */

enum rein__tok_type {
    TK_WORD = 1, /* ASCII letters, digits, _ - ' (a word or an identifier) */
    TK_PATH,     /* a file or directory */
    TK_CODE,     /* `…` that is not a path (an identifier, a command) */
    TK_NUM,      /* starts with a digit */
    TK_CJK,      /* a run of CJK characters */
    TK_PUNCT,    /* punctuation, ASCII or CJK (punct holds which) */
    TK_QUOTE,    /* a quoted value "…" or '…' (treated as a concrete value) */
    TK_OTHER,    /* anything else: a URL, an e-mail, a symbol */
};

/* Punctuation codes for TK_PUNCT (ASCII ones are the character itself). */
enum {
    P_CJK_COMMA = 0x80, /* ， */
    P_CJK_ENUM,         /* 、 */
    P_CJK_SEMI,         /* ； */
    P_CJK_COLON,        /* ： */
    P_CJK_OPEN,         /* （「『“‘《【 */
    P_CJK_CLOSE,        /* ）」』”’》】 */
    P_DASH,             /* — – or a lone - */
};

enum {
    TF_CAP = 1 << 0,    /* starts with an upper-case letter */
    TF_IDENT = 1 << 1,  /* looks like a code identifier: _ inside, camelCase, or () after */
    TF_CALL = 1 << 2,   /* followed by (…) */
    TF_POSS = 1 << 3,   /* a possessive 's was taken off */
    TF_FIRST = 1 << 4,  /* the first token of the sentence (after list markers) */
    TF_DOTTED = 1 << 5, /* a word with a '.' inside (x.y) that is not a path */
};

struct rein__tok {
    uint32_t s, n;    /* bytes [s, s + n) of the sentence (for TK_CODE: inside the ticks) */
    uint8_t type;     /* enum rein__tok_type */
    uint8_t punct;    /* TK_PUNCT: the character or a P_* code */
    uint16_t flags;   /* TF_* */
    uint64_t lex;     /* English lexicon bits (L_*) of the word, 0 when none */
    uint16_t verb;    /* 1 + index of the verb lemma, 0 when not a verb form */
    uint8_t form;     /* VF_* of the verb form */
    int16_t tool;     /* index of a tool mention starting here, -1 when none */
    uint8_t tool_len; /* tokens the mention covers */
    int line;         /* TK_PATH: a ":N" line suffix, else 0 */
};

/* One sentence being read. */
struct rein__sent {
    const char *s; /* the sentence (not NUL-terminated) */
    size_t n;
    size_t offset;       /* in the whole text */
    struct rein__tok *t; /* tokens */
    size_t nt;           /* count */
    char *low;           /* s lower-cased (ASCII), n bytes */
    bool question;       /* ends with ? or ？ */
    bool cjk;            /* has CJK characters */
    const struct rein__vocab_view *vocab;
};

/* ---- the English lexicon ---- */

/* Word classes (bits). */
#define L_PRON    (1ULL << 0)  /* I, we, you, it, they, he, she (subjects) */
#define L_PRON1   (1ULL << 1)  /* I, we */
#define L_DET     (1ULL << 2)  /* the, a, an, this, my, … */
#define L_HAVE    (1ULL << 3)  /* have, has, had, 've */
#define L_BE      (1ULL << 4)  /* am, is, are, was, were, be, been, being, 's */
#define L_DO      (1ULL << 5)  /* do, does, did */
#define L_MODAL   (1ULL << 6)  /* will, would, can, could, should, may, might, must, shall */
#define L_NEG     (1ULL << 7)  /* not, never, no, nothing, none, n't forms */
#define L_COND    (1ULL << 8)  /* if, unless, whether, once, … */
#define L_HEDGE   (1ULL << 9)  /* probably, maybe, perhaps, … */
#define L_REL     (1ULL << 10) /* which, who, that (relative) */
#define L_CONJ    (1ULL << 11) /* but, although, because, so, … (clause boundary) */
#define L_DEST    (1ULL << 12) /* to, into, in, as, at, onto, under, inside, within */
#define L_PREP    (1ULL << 13) /* other prepositions: of, for, from, with, about, … */
#define L_TPREP   (1ULL << 14) /* with, via, using, through, from, per, by (tools) */
#define L_ADV     (1ULL << 15) /* adverbs that sit inside a verb group */
#define L_WH      (1ULL << 16) /* what, which, who, where, when, why, how */
#define L_TOOLN   (1ULL << 17) /* tool, skill, function, call, api, command, … (after a name) */
#define L_OUTN    (1ULL << 18) /* output, result, response, answer, reply, … */
#define L_FILEN   (1ULL << 19) /* file, files, folder, directory, script, … */
#define L_FNN     (1ULL << 20) /* function, method, helper, routine, … */
#define L_PAST_T  (1ULL << 21) /* time words that make a clause historic (yesterday) */
#define L_FAILN   (1ULL << 22) /* error, errors, exception, failure, timeout */
#define L_SEMI    (1ULL << 23) /* need, want, plan, going, about, try, … followed by "to" */
#define L_QUANT   (1ULL << 24) /* all, every, each, both, none (before a subject) */
#define L_NOUNISH (1ULL << 25) /* common nouns that can head a subject (result, value, …) */
#define L_LET     (1ULL << 26) /* let, let's, please, kindly */
#define L_SAYV    (1ULL << 27) /* say, said, mention, state, ask, tell (reported speech) */
#define L_COMMON  (1ULL << 28) /* ordinary English word (a tool of that name needs context) */
#define L_NOW     (1ULL << 29) /* now, already, just, successfully, also, then, … */
#define L_NUMW    (1ULL << 30) /* one, two, … twelve, zero, no (as a count) */

/* Verb classes (bits of a lemma). */
#define V_WRITE  (1U << 0)  /* a file written, created, saved, … */
#define V_DELETE (1U << 1)  /* a file deleted */
#define V_FN     (1U << 2)  /* a function added, implemented, … */
#define V_USE    (1U << 3)  /* a tool used, called, run, … (tool as object) */
#define V_RES    (1U << 4)  /* a tool's result (tool as subject): return, give, find, … */
#define V_SAY    (1U << 5)  /* say, show, report, indicate, confirm (present counts) */
#define V_FAIL   (1U << 6)  /* fail, error, crash, time out, reject, … */
#define V_PASS   (1U << 7)  /* pass, succeed (checks) */
#define V_TRY    (1U << 8)  /* try, attempt (no claim of success) */
#define V_STATE  (1U << 9)  /* exist, contain, hold, include, live (file states) */
#define V_IMP    (1U << 10) /* used as an imperative at the start of a clause */
#define V_NORUN  (1U << 11) /* past forms with a tool as subject that do not say it ran */
#define V_GIVE   (1U << 12) /* pass, send, feed, give, hand (X to the tool) */
#define V_PUT    (1U << 13) /* write, save, store, export: "results are stored in P" reports */

/* Verb forms (bits: one spelling may be several). */
#define VF_BASE 1
#define VF_S    2
#define VF_PAST 4
#define VF_PART 8
#define VF_ING  16

struct rein__verb {
    const char *forms[5]; /* base, -s, past, participle, -ing */
    uint16_t cls;
};

/* Looks up a lower-cased word (n bytes): its class bits. */
uint64_t rein__claims_lex(const char *w, size_t n);
/* The verb lemma index + 1 and the form bits of a lower-cased word; 0 when not a verb. */
uint16_t rein__claims_verb(const char *w, size_t n, uint8_t *form);
/* The class bits of verb lemma v (1-based), 0 for 0. */
uint16_t rein__claims_verb_class(uint16_t v);
/* The base form of verb lemma v (1-based). */
const char *rein__claims_verb_base(uint16_t v);

/* ---- the tool vocabulary ---- */

struct rein__vocab_view; /* the matcher over a vocabulary (vocab.c) */

/*
 * Finds tool mentions in the sentence's tokens: sets tok.tool/tool_len at the first token of
 * each mention. Chinese forms inside TK_CJK tokens are found by rein__claims_vocab_cjk.
 */
void rein__claims_vocab_mark(const struct rein__vocab_view *v, struct rein__sent *st);
/*
 * A tool named in the CJK bytes s[0..n) at byte i: its index (and *len its bytes), or -1.
 */
int rein__claims_vocab_cjk(const struct rein__vocab_view *v, const char *s, size_t n, size_t i,
                           size_t *len);
/* The registered name of tool i (NUL-terminated), NULL when i < 0. */
const char *rein__claims_vocab_name(const struct rein__vocab_view *v, int i);
/* True when tool i is one ordinary English word ("echo"): the grammar wants context. */
bool rein__claims_vocab_is_common(const struct rein__vocab_view *v, int i);
/* The matcher of a vocabulary (NULL: an empty one). */
const struct rein__vocab_view *rein__claims_vocab_view(const rein_claims_vocab *v);
/* True when the normalised forms of a and b (case and separators ignored) are equal. */
bool rein__claims_same_tool(const char *a, size_t an, const char *b, size_t bn);

/* ---- the grammars ---- */

/* Called for every claim found; false stops (out of memory). */
typedef bool (*rein__emit_fn)(void *ud, const struct rein__sent *st, const struct rein__found *f);

bool rein__claims_english(struct rein__sent *st, rein__emit_fn emit, void *ud);
bool rein__claims_chinese(struct rein__sent *st, rein__emit_fn emit, void *ud);

/* ---- text ---- */

/*
 * Tokenizes st->s[0..st->n) into st->t (max tokens; the rest ignored), filling lexicon bits.
 * Returns false when memory is exhausted.
 */
bool rein__claims_tokenize(struct rein__sent *st, size_t max);
/* True when the token is the (lower-cased) word w. Inline: the grammars ask it hundreds of
 * times a sentence, nearly always of a literal, whose length the compiler then knows (out of
 * line with strlen it was about 5% of a short answer's check, issue 25). */
static inline bool rein__claims_is(const struct rein__sent *st, size_t i, const char *w)
{
    const struct rein__tok *t;
    size_t n = strlen(w);

    if (i >= st->nt)
        return false;
    t = &st->t[i];
    return (t->type == TK_WORD || t->type == TK_CJK) && t->n == n &&
           memcmp(st->low + t->s, w, n) == 0;
}
/* True when bytes [a, b) of a sentence look like a path with a known extension etc. */
bool rein__claims_path_like(const char *p, size_t n);
/* Bytes of the UTF-8 character at s[i] (1 for an invalid byte). */
size_t rein__claims_utf8_len(const char *s, size_t n, size_t i);
/* True when the code point starting at s[i] is a CJK ideograph. */
bool rein__claims_is_cjk(const char *s, size_t n, size_t i);

#endif /* REIN_CLAIMS_INT_H */
