/*
 * The conversation history (include/rein/history.h): neutral messages in order, each with
 * its wire encoding cached beside it.
 *
 * A message is checked against the neutral shape once, when it is appended, and copied so
 * that nobody can change it under its cached encoding. A wire asks for message i's piece
 * through rein__history_piece(), or for the messages array's items through
 * rein__history_joined() (one item per message) or rein__history_groups() (messages grouped
 * by role); a piece is made by the wire's encoder the first time and reused on every later
 * turn. The pieces sit in one buffer in the order and with the separators the wire's array
 * takes: a comma between items, or, for a wire that groups messages by role, the bytes that
 * close one group and open the next (a grouping wire's system messages go to a buffer of
 * their own). The items of a request body are thus one block, sent in place when it is large
 * (decision 0034), plus the encoding of what is new. A different wire or quirk set (variant)
 * re-encodes all of them.
 *
 * Removing messages from the middle (rein_history_remove, for trimming to a context window)
 * moves the later messages' pieces down and writes again only the separator at the seam, so
 * nothing is encoded, dumped or copied as JSON again.
 *
 * A message is kept as its JSON text with the call ids it makes or answers; its tree is made
 * from the text when asked for and given back when the conversation goes idle, and a short idle
 * conversation is one block (decision 0052) until it comes back for a second turn: from then on
 * it keeps its pieces, as a long one does (decision 0074).
 *
 * Two more things are kept as messages come and go, so that nothing a turn does per step has
 * to walk the whole conversation: a set of the tool-call ids of the assistant messages (the
 * agent gives a repeated provider id a fresh one), and a chained hash of the messages, made
 * for each message once, that seeds the ids of calls the provider sent without one.
 */
#include "provider_int.h"

#include <pthread.h>
#include <string.h>

/*
 * A message that is not shared keeps its own bytes in one block: its JSON text (as
 * rein_json_dump writes the tree: parsing it gives the same tree back) and after it the
 * strings the history looks up without a tree, each NUL-terminated: for an assistant
 * message each call's id and name, for a tool message its tool_call_id. A shared message
 * keeps its tree and only the strings here (len 0). An idle conversation is thus its
 * messages' text, not their jansson trees (issue 25, decision 0052).
 */
struct mtext {
    size_t len;    /* bytes of JSON text */
    uint32_t nstr; /* strings after it */
    char json[];   /* len bytes, a NUL, then the nstr strings */
};

struct hmsg {
    /* The message as a tree: a shared message's for good; any other's made from its text
     * when asked for and kept until rein_history_compact(). */
    json_t *tree;
    struct mtext *text; /* NULL only for a shared message without strings */
    uint64_t chain;     /* hash of messages 0..this one, valid below rein_history.chained */
    int64_t size;       /* rein_history_size's text bytes over messages 0..this one */
    /* Valid below rein_history.encoded: the piece is the enc_len bytes that end at enc_end in
     * enc (at sys_end in sys, for a system message of a grouping wire); enc_end and sys_end are
     * the two buffers' lengths once this message is in. */
    size_t enc_len, enc_end, sys_end;
    uint32_t calls; /* tool calls among 0..this one */
    uint32_t nsys;  /* system messages among 0..this one */
    uint32_t ex;  /* the assistant message with calls whose results this one is (or it), or NONE */
    uint32_t bad; /* the first open exchange that ended at or before this one, or NONE */
    char role;    /* the role's first letter: s, u, a or t */
    char open;    /* grouping wires: the side whose group is open after this message, or 0 */
    bool shared;  /* tree is the caller's, kept as it is (rein_history_append_shared) */
    bool stale;   /* replaced since its piece was made: made again before the next body */
};

/* Message indices are 32 bits; a history stops growing below NONE - 1 (removed, see
 * shifted()). */
#define NONE UINT32_MAX
/* Encodings shorter than this are released by rein_history_compact(): making them again
 * costs less than the request copies into its body anyway, and an idle conversation does not
 * keep them. */
#define ENC_KEEP 8192

/* One tool-call id of the set: the string is the message's own (borrowed, never modified). */
struct hid {
    const char *id; /* NULL: empty or, with dead set, removed */
    uint32_t msg;
    bool dead;
};

/*
 * Invariants: the pieces of messages 0..encoded-1 lie in enc (and sys) in order, each after
 * its separator (see place()), all made by wire ewire with variant evar; enc.len and sys.len
 * are message encoded-1's enc_end and sys_end (0 when encoded is 0); encoded <= n.
 */
struct rein_history {
    struct hmsg *m;
    size_t n, cap;
    size_t encodes;
    struct rein_buf enc;
    struct rein_buf sys; /* a grouping wire's system messages: their pieces, comma-separated */
    const struct rein__wire *ewire;
    unsigned evar;
    size_t encoded;
    /* Pieces below encoded from here on may be stale (rein_history_replace); SIZE_MAX when
     * none is. */
    size_t fresh;
    size_t chained;
    /* No message below this holds a tree rein_history_compact would give back: a turn's
     * compaction walks only what the turn touched. */
    size_t treed;
    struct hid *ids; /* open addressing, ids_cap a power of two */
    size_t ids_cap, ids_used, ids_dead;
    struct rein__sha_cache *sha; /* made for the first signed body spliced from enc, or NULL */
    /* An idle short conversation (rein_history_compact): its n messages in one block (see
     * freeze()), with m, the id set, the encodings and the signing cache given back; NULL
     * otherwise. Every function but rein_history_len thaws it first. */
    char *frozen;
    /* Messages whose pieces compaction gave back, not made again since (0: none). */
    size_t given;
    /* A piece compaction gave back was made again: the conversation came back after going
     * idle, so it is likely to come back again, and its encodings pay for the memory they take
     * (decision 0074). Compaction then keeps its pieces and its entries (no block). */
    bool hot;
};

static rein_err thaw(rein_history *h);
static bool thawed(const rein_history *h);

/* ---- a message's own strings and tree ---- */

static const char *first_str(const struct hmsg *m)
{
    return m->text ? m->text->json + m->text->len + 1 : NULL;
}

static const char *next_str(const char *s)
{
    return s + strlen(s) + 1;
}

/* The number of tool calls message m carries. */
static size_t own_calls(const struct hmsg *m)
{
    return m->role == 'a' && m->text ? m->text->nstr / 2 : 0;
}

/* A tool message's tool_call_id. */
static const char *result_id(const struct hmsg *m)
{
    return m->role == 't' ? first_str(m) : NULL;
}

/* Adds s (NULL: empty) and its NUL to b. */
static rein_err add_str(struct rein_buf *b, const char *s)
{
    return rein_buf_add(b, s ? s : "", (s ? strlen(s) : 0) + 1);
}

/* Makes m's block from msg, its tree: with json (len bytes, msg's text) when given, else with
 * msg written out, unless the message is shared. */
static rein_err text_make(struct hmsg *m, const json_t *msg, const char *json, size_t json_len)
{
    struct rein_buf b;
    size_t len = 0, k;
    uint32_t nstr = 0;
    const json_t *c;
    rein_err rc = REIN_OK;

    rein_buf_init(&b, 0);
    if (!m->shared)
        rc = json ? rein_buf_add(&b, json, json_len) : rein_json_dump(&b, msg);
    len = b.len;
    if (!rc)
        rc = rein_buf_addch(&b, '\0');
    if (!rc && m->role == 't') {
        rc = add_str(&b, json_string_value(json_object_get(msg, "tool_call_id")));
        nstr = 1;
    } else if (!rc && m->role == 'a') {
        json_array_foreach(json_object_get(msg, "tool_calls"), k, c)
        {
            if (!rc)
                rc = add_str(&b, json_string_value(json_object_get(c, "id")));
            if (!rc)
                rc = add_str(&b, json_string_value(json_object_get(c, "name")));
            nstr += 2;
        }
    }
    if (!rc && m->shared && nstr == 0) {
        rein_buf_release(&b);
        return REIN_OK;
    }
    if (!rc && !(m->text = rein_malloc(sizeof(*m->text) + b.len)))
        rc = REIN_ENOMEM;
    if (!rc) {
        m->text->len = len;
        m->text->nstr = nstr;
        memcpy(m->text->json, b.ptr, b.len);
    }
    rein_buf_release(&b);
    return rc;
}

/* Message i as a tree, made from its text the first time after a compaction; NULL when
 * memory is exhausted. */
static json_t *tree_of(const rein_history *h, size_t i)
{
    struct hmsg *m = &h->m[i];

    if (!m->tree) {
        m->tree = rein_json_parse(m->text->json, m->text->len, 0, NULL);
        if (i < h->treed)
            ((rein_history *)h)->treed = i; /* a cache, as thawed() says */
    }
    return m->tree;
}

rein_history *rein_history_new(void)
{
    rein_history *h = rein_calloc(1, sizeof(*h));

    if (h) {
        rein_buf_init(&h->enc, 0);
        rein_buf_init(&h->sys, 0);
        h->fresh = SIZE_MAX;
    }
    return h;
}

/* ---- the set of tool-call ids ---- */

static uint64_t id_hash(const char *id)
{
    return rein__hash64(0, id, strlen(id));
}

static void ids_put(struct hid *tab, size_t cap, const char *id, size_t msg)
{
    size_t i = (size_t)id_hash(id) & (cap - 1);

    while (tab[i].id || tab[i].dead)
        i = (i + 1) & (cap - 1);
    tab[i].id = id;
    tab[i].msg = (uint32_t)msg;
}

/* Room for `more` ids: rehashes the live entries (dropping removed ones) when the table would
 * be more than half full. */
static rein_err ids_reserve(rein_history *h, size_t more)
{
    size_t live = h->ids_used - h->ids_dead, cap = 8;
    struct hid *tab;

    if ((h->ids_used + more) * 2 <= h->ids_cap)
        return REIN_OK;
    while (cap < (live + more) * 4)
        cap *= 2;
    tab = rein_calloc(cap, sizeof(*tab));
    if (!tab)
        return REIN_ENOMEM;
    for (size_t i = 0; i < h->ids_cap; i++) {
        if (h->ids[i].id)
            ids_put(tab, cap, h->ids[i].id, h->ids[i].msg);
    }
    rein_free(h->ids);
    h->ids = tab;
    h->ids_cap = cap;
    h->ids_used = live;
    h->ids_dead = 0;
    return REIN_OK;
}

/* Adds the call ids of message msg (appended at index msg). */
static rein_err ids_add(rein_history *h, size_t msg)
{
    size_t n = own_calls(&h->m[msg]);
    const char *s = first_str(&h->m[msg]);
    rein_err rc;

    if (n == 0)
        return REIN_OK;
    rc = ids_reserve(h, n);
    if (rc)
        return rc;
    for (size_t k = 0; k < n; k++, s = next_str(next_str(s))) {
        ids_put(h->ids, h->ids_cap, s, msg);
        h->ids_used++;
    }
    return REIN_OK;
}

/* Removes the call ids of message msg (about to be released). */
static void ids_remove(rein_history *h, size_t msg)
{
    size_t n = own_calls(&h->m[msg]);
    const char *id = first_str(&h->m[msg]);

    for (size_t k = 0; k < n; k++, id = next_str(next_str(id))) {
        size_t i = (size_t)id_hash(id) & (h->ids_cap - 1);
        /* The entry is this very string of this message: a copy elsewhere stays. */
        while (h->ids[i].id || h->ids[i].dead) {
            if (h->ids[i].id == id && h->ids[i].msg == msg) {
                h->ids[i].id = NULL;
                h->ids[i].dead = true;
                h->ids_dead++;
                break;
            }
            i = (i + 1) & (h->ids_cap - 1);
        }
    }
}

/* Running sums for rein_history_size: this message's text and calls added to the previous
 * message's totals, so a truncation needs no recount (taken from the tree, at append). */
static int64_t slen(const json_t *obj, const char *key)
{
    return (int64_t)json_string_length(json_object_get(obj, key));
}

static void add_size(rein_history *h, size_t i, const json_t *m)
{
    const json_t *c;
    int64_t text = slen(m, "content") + slen(m, "reasoning");
    size_t k;

    json_array_foreach(json_object_get(m, "tool_calls"), k, c)
    {
        text += slen(c, "id") + slen(c, "name") + slen(c, "arguments");
    }
    h->m[i].size = text + (i ? h->m[i - 1].size : 0);
    h->m[i].calls = (uint32_t)own_calls(&h->m[i]) + (i ? h->m[i - 1].calls : 0);
    h->m[i].nsys = (h->m[i].role == 's') + (i ? h->m[i - 1].nsys : 0);
}

void rein_history_size(const rein_history *h, int64_t *text_bytes, size_t *calls)
{
    if (!thawed(h)) {
        /* out of memory: an estimate of 0 lets the request go and fail there */
        *text_bytes = 0;
        *calls = 0;
        return;
    }
    *text_bytes = h->n ? h->m[h->n - 1].size : 0;
    *calls = h->n ? h->m[h->n - 1].calls : 0;
}

/* ---- open exchanges: calls without their results right after them ---- */

/* A name every wire takes: ^[a-zA-Z0-9_-]{1,64}$. */
static bool wire_name(const char *s)
{
    size_t n =
        s ? strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") : 0;

    return n > 0 && n <= 64 && s[n] == '\0';
}

/* True when every call of assistant message a has a wire name and a result among the tool
 * messages a+1 .. end-1. */
static bool closed(const rein_history *h, size_t a, size_t end)
{
    size_t n = own_calls(&h->m[a]);
    const char *id = first_str(&h->m[a]);

    for (size_t k = 0; k < n; k++, id = next_str(next_str(id))) {
        size_t j = a + 1;
        if (!wire_name(next_str(id)))
            return false;
        while (j < end && (!result_id(&h->m[j]) || strcmp(result_id(&h->m[j]), id) != 0))
            j++;
        if (j == end)
            return false;
    }
    return true;
}

/* An exchange (an assistant message with calls and the tool messages after it) is judged once,
 * when the first other message follows it; only the last one is judged on each question. */
static void add_exchange(rein_history *h, size_t i)
{
    char role = h->m[i].role;
    uint32_t prev_ex = i ? h->m[i - 1].ex : NONE, bad = i ? h->m[i - 1].bad : NONE;

    if (prev_ex != NONE && role == 't') {
        h->m[i].ex = prev_ex;
        h->m[i].bad = bad;
        return;
    }
    if (prev_ex != NONE && bad == NONE && !closed(h, prev_ex, i))
        bad = prev_ex;
    h->m[i].bad = bad;
    h->m[i].ex = own_calls(&h->m[i]) > 0 ? (uint32_t)i : NONE;
}

size_t rein_history_first_open(const rein_history *h)
{
    const struct hmsg *last = thawed(h) && h->n ? &h->m[h->n - 1] : NULL;

    if (!last)
        return 0;
    if (last->bad != NONE)
        return last->bad;
    if (last->ex != NONE && !closed(h, last->ex, h->n))
        return last->ex;
    return h->n;
}

bool rein_history_has_call_id(const rein_history *h, const char *id)
{
    size_t i;

    if (!thawed(h) || !h->ids_cap || !id)
        return false;
    i = (size_t)id_hash(id) & (h->ids_cap - 1);
    while (h->ids[i].id || h->ids[i].dead) {
        if (h->ids[i].id && strcmp(h->ids[i].id, id) == 0)
            return true;
        i = (i + 1) & (h->ids_cap - 1);
    }
    return false;
}

static void hmsg_release(struct hmsg *m)
{
    json_decref(m->tree);
    rein_free(m->text);
    memset(m, 0, sizeof(*m));
}

/* ---- an idle short conversation in one block ---- */

/*
 * A frozen message: its text's length (4 bytes, host order), its role's letter, 1 when it is
 * shared, then its text or, for a shared message, its tree (a reference the block holds).
 */
#define FROZEN_HEAD 6
/* A shared message's reference in the block: the tree's address. */
#define FROZEN_REF sizeof(void *)
/* Conversations whose text is under this freeze when compacted: thawing (parsing each
 * message again, as a turn's first request encodes each again anyway) costs a few µs. */
#define FREEZE_MAX 8192

static json_t *frozen_tree(const char *at)
{
    void *ref;

    memcpy(&ref, at, sizeof(ref));
    return ref;
}

static void frozen_put_tree(char *at, const json_t *t)
{
    const void *ref = t;

    memcpy(at, &ref, sizeof(ref));
}

/* Drops the references of the n frozen messages from offset off in block b; returns the
 * offset after them. */
static size_t frozen_unref(const char *b, size_t off, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t len;
        memcpy(&len, b + off, sizeof(len));
        if (b[off + 5]) {
            json_decref(frozen_tree(b + off + FROZEN_HEAD));
            len = FROZEN_REF;
        }
        off += FROZEN_HEAD + len;
    }
    return off;
}

/* Drops the references of the n messages in block b (NULL: none), and b. */
static void frozen_release(char *b, size_t n)
{
    if (b)
        (void)frozen_unref(b, 0, n);
    rein_free(b);
}

static rein_err append_msg(rein_history *h, json_t *msg, bool own, bool shared, const char *json,
                           size_t json_len);

/* Where frozen message i starts in block b. */
static size_t frozen_at(const char *b, size_t i)
{
    size_t off = 0;

    while (i-- > 0) {
        uint32_t len;
        memcpy(&len, b + off, sizeof(len));
        off += FROZEN_HEAD + (b[off + 5] ? FROZEN_REF : len);
    }
    return off;
}

/* Removes frozen messages from..to-1 (to <= n) in place: nothing is allocated. */
static void frozen_remove(rein_history *h, size_t from, size_t to)
{
    size_t a = frozen_at(h->frozen, from), z = frozen_at(h->frozen, to);
    size_t end = to < h->n ? frozen_at(h->frozen, h->n) : z;
    char *gone = h->frozen + a;

    /* The removed messages' references go; their bytes are written over. */
    (void)frozen_unref(h->frozen, a, to - from);
    memmove(gone, h->frozen + z, end - z);
    h->n -= to - from;
    if (h->n == 0) {
        rein_free(h->frozen);
        h->frozen = NULL;
    }
}

static void ids_clear(rein_history *h)
{
    rein_free(h->ids);
    h->ids = NULL;
    h->ids_cap = h->ids_used = h->ids_dead = 0;
}

/* Back to one entry per message, each with its tree (a turn is about to use them). Out of
 * memory h stays frozen, nothing lost. */
static rein_err thaw(rein_history *h)
{
    char *b = h->frozen;
    size_t n = h->n, off = 0;
    rein_err rc = REIN_OK;

    if (!b)
        return REIN_OK;
    h->frozen = NULL;
    h->n = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        uint32_t len;
        memcpy(&len, b + off, sizeof(len));
        if (b[off + 5]) {
            rc = append_msg(h, frozen_tree(b + off + FROZEN_HEAD), false, true, NULL, 0);
            len = FROZEN_REF;
        } else {
            rc = append_msg(h, rein_json_parse(b + off + FROZEN_HEAD, len, 0, NULL), true, false,
                            b + off + FROZEN_HEAD, len);
        }
        off += FROZEN_HEAD + len;
    }
    if (rc) {
        while (h->n > 0)
            hmsg_release(&h->m[--h->n]);
        ids_clear(h);
        h->frozen = b;
        h->n = n;
        return rc;
    }
    frozen_release(b, n);
    return REIN_OK;
}

/* thaw() for the functions that only read h: the block is a cache of h's messages. */
static bool thawed(const rein_history *h)
{
    return !h->frozen || thaw((rein_history *)h) == REIN_OK;
}

/* Puts a short conversation's messages in one block and gives back everything else it keeps
 * per message. Out of memory it stays as it is. */
static void freeze(rein_history *h)
{
    size_t total = 0, off = 0;
    char *b;

    if (h->frozen || h->hot || h->n == 0 || h->m[h->n - 1].size >= FREEZE_MAX ||
        h->enc.len + h->sys.len >= ENC_KEEP)
        return;
    for (size_t i = 0; i < h->n; i++)
        total += FROZEN_HEAD + (h->m[i].shared ? FROZEN_REF : h->m[i].text->len);
    if (total >= FREEZE_MAX * 2 || !(b = rein_malloc(total)))
        return;
    for (size_t i = 0; i < h->n; i++) {
        struct hmsg *m = &h->m[i];
        uint32_t len = m->shared ? (uint32_t)FROZEN_REF : (uint32_t)m->text->len;
        memcpy(b + off, &len, sizeof(len));
        b[off + 4] = m->role;
        b[off + 5] = m->shared;
        if (m->shared)
            frozen_put_tree(b + off + FROZEN_HEAD, m->tree);
        else
            memcpy(b + off + FROZEN_HEAD, m->text->json, len);
        if (m->shared)
            m->tree = NULL; /* the block's reference now */
        hmsg_release(m);
        off += FROZEN_HEAD + len;
    }
    rein_free(h->m);
    h->m = NULL;
    h->cap = 0;
    ids_clear(h);
    rein_buf_release(&h->enc);
    rein_buf_release(&h->sys);
    if (h->encoded > h->given)
        h->given = h->encoded;
    h->encoded = 0;
    h->fresh = SIZE_MAX;
    h->chained = 0;
    if (h->sha)
        rein_free(h->sha->marks);
    rein_free(h->sha);
    h->sha = NULL;
    h->frozen = b;
}

void rein_history_free(rein_history *h)
{
    if (!h)
        return;
    frozen_release(h->frozen, h->n);
    for (size_t i = 0; h->m && i < h->n; i++)
        hmsg_release(&h->m[i]);
    rein_free(h->m);
    rein_free(h->ids);
    rein_buf_release(&h->enc);
    rein_buf_release(&h->sys);
    if (h->sha)
        rein_free(h->sha->marks);
    rein_free(h->sha);
    rein_free(h);
}

size_t rein_history_len(const rein_history *h)
{
    return h->n;
}

const json_t *rein_history_get(const rein_history *h, size_t i)
{
    return i < h->n && thawed(h) ? tree_of(h, i) : NULL;
}

const char *rein_history_text(const rein_history *h, size_t i, size_t *len)
{
    const struct hmsg *m;

    if (!h || i >= h->n || !thawed(h))
        return NULL;
    m = &h->m[i];
    if (m->shared || !m->text)
        return NULL;
    if (len)
        *len = m->text->len;
    return m->text->json;
}

/* The block's first len bytes are all that is left of what the signing cache hashed. */
static void sha_keep(rein_history *h, size_t len)
{
    if (h->sha && h->sha->upto > len)
        h->sha->upto = len;
}

/* Keeps the encodings of messages 0..n-1 only. */
static void unencode_from(rein_history *h, size_t n)
{
    if (h->encoded > n) {
        h->encoded = n;
        rein_buf_truncate(&h->enc, n ? h->m[n - 1].enc_end : 0);
        rein_buf_truncate(&h->sys, n ? h->m[n - 1].sys_end : 0);
        sha_keep(h, h->enc.len);
    }
    if (h->fresh >= h->encoded)
        h->fresh = SIZE_MAX;
}

void rein_history_truncate(rein_history *h, size_t n)
{
    if (n < h->n && h->frozen) {
        frozen_remove(h, n, h->n);
        return;
    }
    unencode_from(h, n);
    while (h->n > n) {
        ids_remove(h, h->n - 1);
        hmsg_release(&h->m[--h->n]);
    }
    if (h->chained > h->n)
        h->chained = h->n;
}

size_t rein__history_encode_count(const rein_history *h)
{
    return h->encodes;
}

/* ---- the neutral shape ---- */

static rein_err want(rein_error *err, const char *where, const char *what)
{
    return rein_error_set(err, REIN_EINVAL, "message: %s %s", where, what);
}

static rein_err check_string(const json_t *msg, const char *key, bool required, rein_error *err)
{
    const json_t *v = json_object_get(msg, key);

    if (!v)
        return required ? rein_error_set(err, REIN_EINVAL, "message: \"%s\" is missing", key)
                        : REIN_OK;
    if (!json_is_string(v) && !(json_is_null(v) && !required))
        return rein_error_set(err, REIN_EINVAL, "message: \"%s\" must be a string, got %s", key,
                              rein_json_type_name(v));
    return REIN_OK;
}

static rein_err check_calls(const json_t *calls, rein_error *err)
{
    size_t i;
    json_t *c;

    if (!json_is_array(calls))
        return want(err, "\"tool_calls\"", "must be an array");
    json_array_foreach(calls, i, c)
    {
        static const char *const keys[] = {"id", "name", "arguments"};
        if (!json_is_object(c))
            return rein_error_set(err, REIN_EINVAL, "message: tool_calls[%zu] must be an object",
                                  i);
        for (size_t k = 0; k < 3; k++) {
            const json_t *v = json_object_get(c, keys[k]);
            if (!json_is_string(v))
                return rein_error_set(err, REIN_EINVAL,
                                      "message: tool_calls[%zu].%s must be a string%s", i, keys[k],
                                      k == 2 ? " (the raw argument text the model sent)" : "");
        }
        if (!json_string_value(json_object_get(c, "id"))[0])
            return rein_error_set(err, REIN_EINVAL, "message: tool_calls[%zu].id is empty", i);
    }
    return REIN_OK;
}

static bool attachments_ok(const json_t *v)
{
    size_t i;
    json_t *a;

    if (!json_is_array(v))
        return false;
    json_array_foreach((json_t *)v, i, a)
    {
        if (!json_is_string(json_object_get(a, "type")) ||
            !json_is_string(json_object_get(a, "mime_type")) ||
            !json_is_string(json_object_get(a, "data")) ||
            !json_is_integer(json_object_get(a, "index")))
            return false;
    }
    return true;
}

static rein_err check_message(const json_t *msg, rein_error *err)
{
    const char *role;
    const json_t *v;
    rein_err rc;

    if (!json_is_object(msg))
        return rein_error_set(err, REIN_EINVAL, "a message must be a JSON object, got %s",
                              rein_json_type_name(msg));
    rc = check_string(msg, "role", true, err);
    if (rc)
        return rc;
    role = json_string_value(json_object_get(msg, "role"));
    if (strcmp(role, "system") != 0 && strcmp(role, "user") != 0 &&
        strcmp(role, "assistant") != 0 && strcmp(role, "tool") != 0)
        return rein_error_set(err, REIN_EINVAL,
                              "message: role \"%s\" is not system, user, assistant or tool", role);
    rc = check_string(msg, "content", false, err);
    if (!rc && strcmp(role, "tool") == 0) {
        rc = check_string(msg, "tool_call_id", true, err);
        if (!rc)
            rc = check_string(msg, "name", false, err);
        v = json_object_get(msg, "is_error");
        if (!rc && v && !json_is_boolean(v))
            rc = want(err, "\"is_error\"", "must be a boolean");
    }
    /* A tool's media and a user's (an image pasted into the prompt) have one shape. */
    v = json_object_get(msg, "attachments");
    if (!rc && v && strcmp(role, "tool") != 0 && strcmp(role, "user") != 0)
        rc = want(err, "\"attachments\"", "are carried by user and tool messages only");
    if (!rc && v && !attachments_ok(v))
        rc = want(err, "\"attachments\"",
                  "must be an array of {type, mime_type, data (base64), index}");
    if (!rc && strcmp(role, "assistant") == 0) {
        v = json_object_get(msg, "tool_calls");
        if (v && !json_is_null(v))
            rc = check_calls(v, err);
        if (!rc)
            rc = check_string(msg, "reasoning", false, err);
        if (!rc)
            rc = check_string(msg, "reasoning_signature", false, err);
        if (!rc)
            rc = check_string(msg, "refusal", false, err);
        v = json_object_get(msg, "redacted_reasoning");
        if (!rc && v && !json_is_array(v))
            rc = want(err, "\"redacted_reasoning\"", "must be an array of strings");
        v = json_object_get(msg, "server_blocks");
        if (!rc && v && !json_is_array(v))
            rc = want(err, "\"server_blocks\"", "must be an array of objects");
        v = json_object_get(msg, "thinking_blocks");
        if (!rc && v && !json_is_array(v))
            rc = want(err, "\"thinking_blocks\"", "must be an array of objects");
        v = json_object_get(msg, "reasoning_details");
        if (!rc && v && !json_is_array(v))
            rc = want(err, "\"reasoning_details\"", "must be an array of objects");
        v = json_object_get(msg, "reasoning_items");
        if (!rc && v && !json_is_array(v))
            rc = want(err, "\"reasoning_items\"", "must be an array of objects");
        if (!rc)
            rc = check_string(msg, "response_id", false, err);
    }
    v = json_object_get(msg, "anthropic_blocks");
    if (!rc && v && !json_is_array(v))
        rc = want(err, "\"anthropic_blocks\"", "must be an array of content blocks");
    v = json_object_get(msg, "openai_message");
    if (!rc && v && !json_is_object(v))
        rc = want(err, "\"openai_message\"", "must be an object");
    return rc;
}

/*
 * Appends msg, checked. own: msg is a private copy, taken whatever happens, and kept as the
 * message's tree until the next compaction; shared: msg is kept for good, a reference taken;
 * neither: msg is borrowed and only its text kept. json: msg's text (json_len bytes) when the
 * caller has it, else NULL.
 */
static rein_err append_msg(rein_history *h, json_t *msg, bool own, bool shared, const char *json,
                           size_t json_len)
{
    struct hmsg *m;
    rein_err rc = msg ? thaw(h) : REIN_ENOMEM;

    if (rc) {
        if (own)
            json_decref(msg);
        return rc;
    }
    if (h->n == h->cap || h->n >= NONE - 2) {
        size_t cap = h->cap ? h->cap * 2 : 8;
        struct hmsg *v = h->n < NONE - 2 ? rein_realloc(h->m, cap * sizeof(*v)) : NULL;
        if (!v) {
            if (own)
                json_decref(msg);
            return REIN_ENOMEM;
        }
        h->m = v;
        h->cap = cap;
    }
    m = &h->m[h->n];
    memset(m, 0, sizeof(*m));
    m->role = *rein__json_str(msg, "role");
    m->shared = shared;
    rc = text_make(m, msg, json, json_len);
    if (rc) {
        if (own)
            json_decref(msg);
        return rc;
    }
    m->tree = own ? msg : shared ? json_incref(msg) : NULL;
    if (own && h->treed > h->n)
        h->treed = h->n;
    add_size(h, h->n, msg);
    add_exchange(h, h->n);
    if (ids_add(h, h->n) != REIN_OK) {
        hmsg_release(m);
        return REIN_ENOMEM;
    }
    h->n++;
    return REIN_OK;
}

static rein_err append_take(rein_history *h, json_t *msg)
{
    return append_msg(h, msg, true, false, NULL, 0);
}

rein_err rein_history_append(rein_history *h, const json_t *msg, rein_error *err)
{
    rein_err rc = check_message(msg, err);

    if (rc)
        return rc;
    return append_msg(h, (json_t *)msg, false, false, NULL, 0);
}

static rein_err shared_message_of_text(rein_history *h, const char *json, size_t len, bool *done);

rein_err rein_history_append_text(rein_history *h, const char *json, size_t len, rein_error *err)
{
    json_t *msg;
    rein_err rc;
    bool done = false;

    if (!h || !json)
        return rein_error_set(err, REIN_EINVAL, "no history or no text");
    rc = shared_message_of_text(h, json, len, &done);
    if (done)
        return rc;
    msg = rein_json_parse(json, len, 0, NULL);
    if (!msg)
        return rein_error_set(err, REIN_EPARSE, "a message that is not JSON");
    rc = check_message(msg, err);
    if (rc) {
        json_decref(msg);
        return rc;
    }
    /* The text stands for itself when it is what rein_json_dump writes of the tree (the history
     * keeps exactly those bytes): it is not written out again. */
    return rein_json_is_written_form(json, len) ? append_msg(h, msg, true, false, json, len)
                                                : append_take(h, msg);
}

rein_err rein_history_append_shared(rein_history *h, json_t *msg, rein_error *err)
{
    rein_err rc = check_message(msg, err);

    if (rc)
        return rc;
    return append_msg(h, msg, false, true, NULL, 0);
}

/* Judges the exchanges again from message i on, until they agree with what they were past
 * every exchange that reaches back to i. */
static void rejudge(rein_history *h, size_t i)
{
    for (size_t j = i; j < h->n; j++) {
        uint32_t ex = h->m[j].ex, bad = h->m[j].bad;
        add_exchange(h, j);
        if (j > i && h->m[j].ex == ex && h->m[j].bad == bad && (ex == NONE || ex > i))
            break;
    }
}

rein_err rein_history_replace(rein_history *h, size_t i, const json_t *msg, rein_error *err)
{
    struct hmsg *m, nm;
    int64_t size, prev_size;
    uint32_t calls, prev_calls;
    bool media;
    rein_err rc = check_message(msg, err);

    if (rc)
        return rc;
    if (i >= h->n)
        return rein_error_set(err, REIN_EINVAL, "message %zu: the history has %zu messages", i,
                              h->n);
    if (thaw(h) != REIN_OK)
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    m = &h->m[i];
    if (*rein__json_str(msg, "role") != m->role)
        return rein_error_set(err, REIN_EINVAL,
                              "message %zu: a replacement keeps the role (\"%s\" is not it)", i,
                              rein__json_str(msg, "role"));
    memset(&nm, 0, sizeof(nm));
    nm.role = m->role;
    if (text_make(&nm, msg, NULL, 0) != REIN_OK || ids_reserve(h, own_calls(&nm)) != REIN_OK) {
        rein_free(nm.text);
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    }
    /* A tool result's media may sit in the piece of the message after its run (the OpenAI
     * wire's, decision 0098): that piece is made again when the old or the new result has
     * some (out of memory, taken to have some). */
    media = m->role == 't' && i < h->encoded &&
            (json_array_size(json_object_get(msg, "attachments")) || !tree_of(h, i) ||
             json_array_size(json_object_get(tree_of(h, i), "attachments")));
    ids_remove(h, i);
    prev_size = i ? h->m[i - 1].size : 0;
    prev_calls = i ? h->m[i - 1].calls : 0;
    size = m->size - prev_size;
    calls = m->calls - prev_calls;
    json_decref(m->tree);
    rein_free(m->text);
    m->tree = NULL;
    m->text = nm.text;
    m->shared = false;
    add_size(h, i, msg);
    (void)ids_add(h, i); /* room reserved above */
    size = m->size - prev_size - size;
    calls = m->calls - prev_calls - calls;
    for (size_t j = i + 1; j < h->n; j++) {
        h->m[j].size += size;
        h->m[j].calls += calls;
    }
    rejudge(h, i);
    if (h->chained > i)
        h->chained = i;
    if (i < h->encoded) {
        /* A tool result's piece reads back to its call (Gemini): after an assistant message
         * everything is made again. */
        if (m->role == 'a') {
            unencode_from(h, i);
        } else {
            m->stale = true;
            if (h->fresh > i)
                h->fresh = i;
        }
        for (size_t j = i + 1; media && h->ewire && h->ewire->encode_in && j < h->encoded; j++) {
            if (h->m[j].role != 't') {
                h->m[j].stale = true;
                break;
            }
        }
    }
    return REIN_OK;
}

/* Gives back b's room past its bytes and its NUL (an idle conversation's pieces do not grow
 * until it comes back); a failed shrink keeps the larger block. */
static void buf_fit(struct rein_buf *b)
{
    char *p;

    if (b->alloc == 0 || b->alloc <= b->len + 1)
        return;
    if ((p = rein_realloc(b->ptr, b->len + 1))) {
        b->ptr = p;
        b->alloc = b->len + 1;
    }
}

void rein_history_compact(rein_history *h)
{
    freeze(h);
    if (h->frozen)
        return;
    if (h->enc.len + h->sys.len < ENC_KEEP) {
        if (h->hot) {
            /* short: growing it again costs a copy of a few KB at most */
            buf_fit(&h->enc);
            buf_fit(&h->sys);
        } else {
            if (h->encoded > h->given)
                h->given = h->encoded;
            unencode_from(h, 0);
            rein_buf_release(&h->enc);
            rein_buf_release(&h->sys);
        }
    }
    /* An idle message is its text; its tree is made again when asked for. */
    for (size_t i = h->treed; i < h->n; i++) {
        if (!h->m[i].shared) {
            json_decref(h->m[i].tree);
            h->m[i].tree = NULL;
        }
    }
    h->treed = h->n;
    if (h->n == 0) {
        rein_free(h->m);
        h->m = NULL;
        h->cap = 0;
    } else if (h->cap > h->n) {
        /* The next append doubles it again; a failed shrink keeps the larger array. */
        struct hmsg *v = rein_realloc(h->m, h->n * sizeof(*v));
        if (v) {
            h->m = v;
            h->cap = h->n;
        }
    }
}

void rein_history_freeze(rein_history *h)
{
    h->hot = false;
    rein_history_compact(h);
}

/* A new {"role": role, "content": text} (the tree json_pack made of it, without the format's
 * reading: about 3,000 instructions a message, issue 25), or NULL when memory is exhausted.
 * role is a literal; text was found to be UTF-8 (jansson's check would say it again). */
static json_t *text_message(const char *role, const char *text, size_t len)
{
    json_t *m = json_object();

    if (m && (json_object_set_new_nocheck(m, "role", json_string_nocheck(role)) != 0 ||
              json_object_set_new_nocheck(m, "content", json_stringn_nocheck(text, len)) != 0)) {
        json_decref(m);
        m = NULL;
    }
    return m;
}

static rein_err add_text(rein_history *h, const char *role, const char *text)
{
    size_t len = text ? strlen(text) : 0;

    /* jansson refuses text that is not UTF-8 as if memory had run out: say what it is. */
    if (text && rein_utf8_valid_prefix(text, len) != len)
        return REIN_EINVAL;
    return append_take(h, text_message(role, text ? text : "", len));
}

rein_err rein_history_add_system(rein_history *h, const char *text)
{
    return add_text(h, "system", text);
}

rein_err rein_history_add_user(rein_history *h, const char *text)
{
    return add_text(h, "user", text);
}

rein_err rein_history_add_response(rein_history *h, const rein_model_response *r)
{
    return append_take(h, rein_model_response_message(r));
}

rein_err rein_history_add_tool_result(rein_history *h, const char *call_id, const char *name,
                                      const char *content, bool is_error)
{
    json_t *m;

    if (!call_id || !call_id[0])
        return REIN_EINVAL;
    /* json_pack("{s:s, s:s, s:s}") without the format's reading; json_string checks UTF-8 as
     * it did (NULL, which append_take reports, when a text is not). */
    m = json_object();
    if (m &&
        (json_object_set_new_nocheck(m, "role", json_string_nocheck("tool")) != 0 ||
         json_object_set_new_nocheck(m, "tool_call_id", json_string(call_id)) != 0 ||
         json_object_set_new_nocheck(m, "content", json_string(content ? content : "")) != 0)) {
        json_decref(m);
        m = NULL;
    }
    if (m && name && json_object_set_new(m, "name", json_string(name)) != 0) {
        json_decref(m);
        return REIN_ENOMEM;
    }
    if (m && is_error && json_object_set_new(m, "is_error", json_true()) != 0) {
        json_decref(m);
        return REIN_ENOMEM;
    }
    return append_take(h, m);
}

rein_err rein_history_add_tool_result_media(rein_history *h, const char *call_id, const char *name,
                                            const char *content, bool is_error, json_t *attachments)
{
    json_t *m;
    rein_error err;
    rein_err rc;

    if (!call_id || !call_id[0]) {
        json_decref(attachments);
        return REIN_EINVAL;
    }
    m = json_pack("{s:s, s:s, s:s, s:b}", "role", "tool", "tool_call_id", call_id, "content",
                  content ? content : "", "is_error", is_error);
    if (m && name && json_object_set_new(m, "name", json_string(name)) != 0) {
        json_decref(m);
        m = NULL;
    }
    if (m && attachments && json_object_set(m, "attachments", attachments) != 0) {
        json_decref(m);
        m = NULL;
    }
    json_decref(attachments);
    if (!m)
        return REIN_ENOMEM;
    if (!is_error)
        json_object_del(m, "is_error");
    rein_error_clear(&err);
    rc = check_message(m, &err);
    if (rc) {
        json_decref(m);
        return rc;
    }
    return append_take(h, m);
}

/* Where an attachment of msg sits, for its note: a tool's result or a user's message. */
static const char *attachment_place(const json_t *msg)
{
    return strcmp(rein__json_str(msg, "role"), "user") == 0 ? "a user message" : "a tool result";
}

static void attachment_note_in(struct rein_buf *b, const json_t *att, const char *wire,
                               const char *place)
{
    /* Out of memory the note is left out; the text still names the attachment. */
    rein_err rc =
        rein_buf_addf(b, "\n(attachment %lld, %s, was not sent: %s takes no %s in %s)",
                      (long long)json_integer_value(json_object_get(att, "index")),
                      rein__json_str(att, "mime_type"), wire, rein__json_str(att, "type"), place);
    (void)rc;
}

/* The note of an attachment the wire carries elsewhere: where tells where. */
static void taken_note_in(struct rein_buf *b, const json_t *att, const char *where)
{
    /* Out of memory the note is left out, as attachment_note_in's is. */
    rein_err rc = rein_buf_addf(b, "\n(attachment %lld, %s, %s)",
                                (long long)json_integer_value(json_object_get(att, "index")),
                                rein__json_str(att, "mime_type"), where);
    (void)rc;
}

void rein__jw_data_url(struct rein_jw *w, const char *key, const json_t *att)
{
    char *url = rein_asprintf("data:%s;base64,%s", rein__json_str(att, "mime_type"),
                              rein__json_str(att, "data"));

    rein_jw_key(w, key);
    rein_jw_str(w, url ? url : "");
    if (!url)
        w->err = REIN_ENOMEM;
    rein_free(url);
}

void rein__jw_file_data(struct rein_jw *w, const json_t *att)
{
    char name[48];

    snprintf(name, sizeof(name), "attachment-%lld.pdf",
             (long long)json_integer_value(json_object_get(att, "index")));
    rein_jw_key(w, "filename");
    rein_jw_str(w, name);
    rein__jw_data_url(w, "file_data", att);
}

void rein__jw_attachments(struct rein_jw *w, const json_t *msg, const char *wire,
                          const char *note_type,
                          bool (*block)(struct rein_jw *w, const json_t *att))
{
    struct rein_buf note;
    size_t i;
    json_t *a;

    rein_buf_init(&note, 0);
    json_array_foreach(json_object_get(msg, "attachments"), i, a)
    {
        if (!block || !block(w, a))
            attachment_note_in(&note, a, wire, attachment_place(msg));
    }
    if (note.len) {
        rein_jw_obj_begin(w);
        if (note_type) {
            rein_jw_key(w, "type");
            rein_jw_str(w, note_type);
        }
        rein_jw_key(w, "text");
        rein_jw_str(w, note.ptr + 1); /* without its leading newline */
        rein_jw_obj_end(w);
    }
    rein_buf_release(&note);
}

void rein__jw_tool_text(struct rein_jw *w, const json_t *msg, const char *wire)
{
    rein__jw_text_notes(w, msg, wire, NULL, NULL);
}

void rein__jw_text_notes(struct rein_jw *w, const json_t *msg, const char *wire,
                         bool (*taken)(const char *mime), const char *taken_where)
{
    const json_t *atts = json_object_get(msg, "attachments");
    struct rein_buf text;
    size_t i;
    json_t *a;
    bool blank;

    rein_buf_init(&text, 0);
    if (!json_array_size(atts) || rein_buf_adds(&text, rein__json_str(msg, "content")) != REIN_OK) {
        rein_buf_release(&text);
        rein_jw_str(w, rein__json_str(msg, "content"));
        return;
    }
    blank = text.len == 0;
    json_array_foreach(atts, i, a)
    {
        if (!taken || !taken(rein__json_str(a, "mime_type")))
            attachment_note_in(&text, a, wire, attachment_place(msg));
        else if (taken_where)
            taken_note_in(&text, a, taken_where);
    }
    /* a message of media alone: the notes without the newline that would follow its text */
    rein_jw_strn(w, text.ptr + (blank && text.len), text.len - (blank && text.len));
    rein_buf_release(&text);
}

json_t *rein_history_to_json(const rein_history *h)
{
    json_t *a = thawed(h) ? json_array() : NULL;

    /* A message without its tree gets one for the array, not kept by the history. */
    for (size_t i = 0; a && i < h->n; i++) {
        const struct hmsg *m = &h->m[i];
        if (json_array_append_new(
                a, m->tree ? json_incref(m->tree)
                           : rein_json_parse(m->text->json, m->text->len, 0, NULL)) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

rein_history *rein_history_from_json(const json_t *messages, rein_error *err)
{
    rein_history *h;
    size_t i;
    json_t *m;

    if (!json_is_array(messages)) {
        rein_error_set(err, REIN_EINVAL, "a history must be a JSON array of messages");
        return NULL;
    }
    h = rein_history_new();
    if (!h) {
        rein_error_set(err, REIN_ENOMEM, "out of memory");
        return NULL;
    }
    json_array_foreach(messages, i, m)
    {
        rein_err rc = rein_history_append(h, m, err);
        if (rc) {
            rein_error_prefix(err, "messages[%zu]: ", i);
            rein_history_free(h);
            return NULL;
        }
    }
    return h;
}

/*
 * Writes the separator of message m, and after it its piece (len bytes, not inside enc or
 * sys), after the message before it, whose group was `open` (first: m is message 0), and
 * records where they went. The separator: for a wire with one item per message, a comma
 * before every message but the first; for a grouping wire, a comma between pieces of one
 * group or of the system list, and between groups the bytes that close the open one and open
 * the next; an empty piece is left out there, separator and all.
 */
static rein_err place(rein_history *h, const struct rein__wire *w, struct hmsg *m, char open,
                      bool first, const char *piece, size_t len)
{
    bool grouped = w->group_user != NULL;
    struct rein_buf *out = grouped && m->role == 's' ? &h->sys : &h->enc;
    size_t mark = out->len;
    char side = m->role == 'a' ? 'a' : 'u';
    rein_err rc = REIN_OK;

    m->open = open;
    if (!grouped) {
        if (!first)
            rc = rein_buf_addch(out, ',');
    } else if (len == 0) {
        /* nothing: the piece is left out */
    } else if (m->role == 's' || side == open) {
        if (out->len)
            rc = rein_buf_addch(out, ',');
    } else {
        if (open)
            rc = rein_buf_add(out, "]},", 3);
        if (!rc)
            rc = rein_buf_adds(out, side == 'a' ? w->group_model : w->group_user);
        m->open = side;
    }
    if (!rc)
        rc = rein_buf_add(out, piece, len);
    if (rc) {
        rein_buf_truncate(out, mark);
        m->open = open;
        return rc;
    }
    m->enc_len = len;
    m->enc_end = h->enc.len;
    m->sys_end = h->sys.len;
    return REIN_OK;
}

/*
 * The pieces of shared messages, kept across histories (decision 0080). An agent's system
 * prompt is one message every history of the agent shares (decision 0046), but each history
 * made its piece again: rein serve starts a history for every turn, so every turn wrote the
 * same prompt out anew (about 11,000 instructions for the default prompt, and the self-check's
 * prompt too; issue 25). A piece is a function of the message, the wire and its variant, as
 * the history's own cache already takes it to be. An entry holds a reference to its message,
 * so the pointer cannot come to name another message while the entry is kept; a few entries,
 * replaced in turn, so at most that many messages outlive their agents here. Guarded by
 * shared_mu: the turns of many threads share one prompt.
 */
#define SHARED_PIECES 8

static struct shared_piece {
    json_t *msg; /* a reference; NULL: the entry is free */
    const struct rein__wire *w;
    unsigned var;
    char *piece;
    size_t len;
    char *text; /* msg as rein_json_dump writes it (rein_history_append_text), or NULL */
    size_t text_len;
} shared_pieces[SHARED_PIECES];
static size_t shared_next;
static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;

/* Appends the kept piece of msg for (w, var) to out; false when none is kept (or out of
 * memory: then the caller makes it). */
static bool shared_piece_get(const json_t *msg, const struct rein__wire *w, unsigned var,
                             struct rein_buf *out)
{
    bool found = false;

    pthread_mutex_lock(&shared_mu);
    for (size_t k = 0; k < SHARED_PIECES && !found; k++) {
        const struct shared_piece *e = &shared_pieces[k];
        if (e->msg == msg && e->w == w && e->var == var)
            found = rein_buf_add(out, e->piece, e->len) == REIN_OK;
    }
    pthread_mutex_unlock(&shared_mu);
    return found;
}

/* Keeps piece (len bytes) as msg's for (w, var); out of memory nothing is kept. */
static void shared_piece_put(json_t *msg, const struct rein__wire *w, unsigned var,
                             const char *piece, size_t len)
{
    char *copy = rein_malloc(len ? len : 1), *old_piece, *old_text;
    struct rein_buf text;
    json_t *old_msg;
    struct shared_piece *e;

    rein_buf_init(&text, 0);
    if (!copy || rein_json_dump(&text, msg) != REIN_OK) {
        rein_free(copy);
        rein_buf_release(&text);
        return;
    }
    memcpy(copy, piece, len);
    pthread_mutex_lock(&shared_mu);
    e = &shared_pieces[shared_next];
    shared_next = (shared_next + 1) % SHARED_PIECES;
    old_msg = e->msg;
    old_piece = e->piece;
    old_text = e->text;
    *e = (struct shared_piece){json_incref(msg), w, var, copy, len, NULL, text.len};
    e->text = rein_buf_detach(&text, NULL);
    pthread_mutex_unlock(&shared_mu);
    json_decref(old_msg);
    rein_free(old_piece);
    rein_free(old_text);
    rein_buf_release(&text);
}

/* A new reference to the kept shared message whose rein_json_dump text is json (len bytes),
 * or NULL when none is kept. */
static json_t *shared_message_of(const char *json, size_t len)
{
    json_t *msg = NULL;

    pthread_mutex_lock(&shared_mu);
    for (size_t k = 0; k < SHARED_PIECES && !msg; k++) {
        const struct shared_piece *e = &shared_pieces[k];
        if (e->msg && e->text && e->text_len == len && memcmp(e->text, json, len) == 0)
            msg = json_incref(e->msg);
    }
    pthread_mutex_unlock(&shared_mu);
    return msg;
}

/* rein_history_append_text's first step: when json is a kept shared message's text, that
 * message is appended (shared, as rein_history_append_shared would: it has been checked) and
 * *done says so, with what the append returned. */
static rein_err shared_message_of_text(rein_history *h, const char *json, size_t len, bool *done)
{
    json_t *msg = shared_message_of(json, len);
    rein_err rc;

    *done = msg != NULL;
    if (!msg)
        return REIN_OK;
    rc = append_msg(h, msg, false, true, NULL, 0);
    json_decref(msg);
    return rc;
}

/* Encodes message i (all before it encoded) into the empty buffer out. */
static rein_err encode_one(rein_history *h, size_t i, const rein_provider *p,
                           const struct rein__wire *w, struct rein_buf *out)
{
    const json_t *m = tree_of(h, i);
    size_t start = out->len;
    /* A shared message's tree is its own for good (never a copy of its text). Only a tool
     * result's piece, and the piece of the message right after tool results (the OpenAI
     * wire's carries their media: decision 0098), may depend on the messages before it
     * (encode_in). */
    bool kept = h->m[i].shared && h->m[i].role != 't' && (i == 0 || h->m[i - 1].role != 't');
    rein_err rc;

    if (!m)
        return REIN_ENOMEM;
    h->encodes++;
    if (kept && shared_piece_get(m, w, h->evar, out))
        return REIN_OK;
    rc = w->encode_in ? w->encode_in(p, h, i, out) : w->encode_message(p, m, out);
    if (rc == REIN_OK && kept)
        shared_piece_put((json_t *)m, w, h->evar, out->ptr + start, out->len - start);
    return rc;
}

/* Appends the first len bytes of src to b (len may be 0 with src unallocated). */
static rein_err keep_prefix(struct rein_buf *b, const struct rein_buf *src, size_t len)
{
    return len ? rein_buf_add(b, src->ptr, len) : REIN_OK;
}

/*
 * Lays the encoded messages from h->fresh on out again: a stale one's piece made anew, the
 * others' copied as they are (nothing else is encoded). Out of memory, the pieces from there
 * on are dropped, to be made again.
 */
static rein_err relay_stale(rein_history *h, const rein_provider *p, const struct rein__wire *w)
{
    size_t from = h->fresh;
    struct rein_buf old_enc = h->enc, old_sys = h->sys, one;
    rein_err rc;

    sha_keep(h, from ? h->m[from - 1].enc_end : 0);
    rein_buf_init(&h->enc, 0);
    rein_buf_init(&h->sys, 0);
    rein_buf_init(&one, 0);
    rc = keep_prefix(&h->enc, &old_enc, from ? h->m[from - 1].enc_end : 0);
    if (!rc)
        rc = keep_prefix(&h->sys, &old_sys, from ? h->m[from - 1].sys_end : 0);
    for (size_t i = from; !rc && i < h->encoded; i++) {
        struct hmsg *m = &h->m[i];
        bool in_sys = w->group_user && m->role == 's';
        const struct rein_buf *src = in_sys ? &old_sys : &old_enc;
        const char *piece = "";
        size_t len = m->enc_len;
        if (m->stale) {
            rein_buf_reset(&one);
            rc = encode_one(h, i, p, w, &one);
            piece = one.ptr;
            len = one.len;
        } else if (len) {
            piece = src->ptr + (in_sys ? m->sys_end : m->enc_end) - len;
        }
        if (!rc)
            rc = place(h, w, m, i ? h->m[i - 1].open : 0, i == 0, piece, len);
        m->stale = false;
    }
    rein_buf_release(&one);
    if (rc) {
        rein_buf_release(&h->enc);
        rein_buf_release(&h->sys);
        h->enc = old_enc;
        h->sys = old_sys;
        unencode_from(h, from);
        return rc;
    }
    rein_buf_release(&old_enc);
    rein_buf_release(&old_sys);
    return REIN_OK;
}

/* Makes the pieces of messages 0..n-1 for wire w. */
static rein_err encode_upto(rein_history *h, size_t n, const rein_provider *p,
                            const struct rein__wire *w)
{
    unsigned v = w->variant ? w->variant(p) : 0;
    struct rein_buf one; /* one message's encoding, before it joins enc */
    rein_err rc = thaw(h);

    if (rc)
        return rc;
    if (h->ewire != w || h->evar != v) {
        unencode_from(h, 0);
        h->ewire = w;
        h->evar = v;
    }
    if (h->encoded < h->given)
        h->hot = true;
    h->given = 0;
    rein_buf_init(&one, 0);
    if (h->fresh < h->encoded)
        rc = relay_stale(h, p, w);
    h->fresh = SIZE_MAX;
    for (; !rc && h->encoded < n; h->encoded++) {
        size_t i = h->encoded;
        h->m[i].stale = false;
        rein_buf_reset(&one);
        rc = encode_one(h, i, p, w, &one);
        if (!rc)
            rc = place(h, w, &h->m[i], i ? h->m[i - 1].open : 0, i == 0, one.ptr, one.len);
        if (rc)
            break;
    }
    rein_buf_release(&one);
    return rc;
}

/* Where message i's piece is (encoded). */
static const char *piece_at(const rein_history *h, size_t i)
{
    const struct hmsg *m = &h->m[i];
    bool in_sys = h->ewire->group_user && m->role == 's';

    return in_sys ? h->sys.ptr + m->sys_end - m->enc_len : h->enc.ptr + m->enc_end - m->enc_len;
}

rein_err rein__history_piece(rein_history *h, size_t i, const rein_provider *p,
                             const struct rein__wire *w, const char **out, size_t *len)
{
    rein_err rc = encode_upto(h, i + 1, p, w);

    if (rc)
        return rc;
    *out = piece_at(h, i);
    *len = h->m[i].enc_len;
    return REIN_OK;
}

const char *rein_history_role(const rein_history *h, size_t i)
{
    switch (rein__history_role(h, i)) {
    case 's':
        return "system";
    case 'u':
        return "user";
    case 'a':
        return "assistant";
    case 't':
        return "tool";
    default:
        return NULL;
    }
}

char rein__history_role(const rein_history *h, size_t i)
{
    return i < h->n && thawed(h) ? h->m[i].role : '\0';
}

rein_err rein__history_joined(rein_history *h, const rein_provider *p, const struct rein__wire *w,
                              const char **out, size_t *len)
{
    rein_err rc = encode_upto(h, h->n, p, w);

    if (rc)
        return rc;
    *out = h->enc.ptr;
    *len = h->enc.len;
    return REIN_OK;
}

rein_err rein__history_groups(rein_history *h, const rein_provider *p, const struct rein__wire *w,
                              struct rein__groups *g)
{
    rein_err rc = encode_upto(h, h->n, p, w);

    if (rc)
        return rc;
    g->h = h;
    g->items = h->enc.ptr;
    g->items_len = h->enc.len;
    g->open = h->n && h->m[h->n - 1].open;
    g->system = h->sys.ptr;
    g->system_len = h->sys.len;
    g->has_system = rein__history_has_system(h);
    return REIN_OK;
}

/* The hash of message m's JSON text (a shared message's is written out for it). */
static uint64_t self_hash(const struct hmsg *m)
{
    struct rein_buf b;
    size_t len;
    uint64_t self;

    if (m->text && m->text->len) {
        len = m->text->len;
        return rein__hash64(rein__hash64(0, &len, sizeof(len)), m->text->json, len);
    }
    rein_buf_init(&b, 0);
    if (rein_json_dump(&b, m->tree) != REIN_OK) {
        rein_buf_release(&b);
        return 0; /* out of memory: a weaker seed, never a wrong answer */
    }
    len = b.len;
    self = rein__hash64(rein__hash64(0, &len, sizeof(len)), b.ptr, len);
    rein_buf_release(&b);
    return self;
}

uint64_t rein__history_chain(rein_history *h)
{
    /* Each message's text is hashed once; the chain over them costs a hash of 8 bytes per
     * message not yet chained (after a removal, those after the seam; after a thaw, all of a
     * short conversation's). */
    if (thaw(h) != REIN_OK)
        return 0; /* out of memory: a weaker seed, never a wrong answer */
    for (; h->chained < h->n; h->chained++) {
        struct hmsg *m = &h->m[h->chained];
        uint64_t prev = h->chained ? h->m[h->chained - 1].chain : 0, self = self_hash(m);
        m->chain = rein__hash64(prev, &self, sizeof(self));
    }
    return h->n ? h->m[h->n - 1].chain : 0;
}

struct rein__sha_cache *rein__history_sha_cache(rein_history *h)
{
    if (!h->sha && thaw(h) == REIN_OK)
        h->sha = rein_calloc(1, sizeof(*h->sha));
    return h->sha;
}

bool rein__history_has_system(const rein_history *h)
{
    return h->n && thawed(h) && h->m[h->n - 1].nsys > 0;
}

/* ---- removing messages from the middle ---- */

/* old shifted down by d when it lies at or after `to`; kept below `from`; gone (NONE + 1, which
 * matches nothing) when it was removed. */
static uint32_t shifted(uint32_t old, size_t from, size_t to)
{
    if (old == NONE || old < from)
        return old;
    return old >= to ? (uint32_t)(old - (to - from)) : NONE - 1;
}

/* The ids of the removed messages leave the set; later ones' indices move down. */
static void ids_shift(rein_history *h, size_t from, size_t to)
{
    for (size_t k = from; k < to; k++)
        ids_remove(h, k);
    for (size_t i = 0; i < h->ids_cap; i++) {
        if (h->ids[i].id && h->ids[i].msg >= to)
            h->ids[i].msg -= (uint32_t)(to - from);
    }
}

/* After messages moved down to `from`: the running sums less what left, and the exchanges,
 * judged again from the seam until they agree with the moved ones. */
static void sums_shift(rein_history *h, size_t from, int64_t text, size_t calls, uint32_t nsys,
                       size_t to)
{
    bool same = false;

    for (size_t i = from; i < h->n; i++) {
        struct hmsg *m = &h->m[i];
        uint32_t ex = shifted(m->ex, from, to), bad = shifted(m->bad, from, to);
        m->size -= text;
        m->calls -= (uint32_t)calls;
        m->nsys -= nsys;
        if (!same) {
            add_exchange(h, i);
            same = m->ex == ex && m->bad == bad && (ex == NONE || ex >= from);
        } else {
            m->ex = ex;
            m->bad = bad;
        }
    }
}

/*
 * Lays the encoded messages from..encoded-1 (moved down; their pieces still where old_enc and
 * old_sys held them) out again after message from-1, with new separators.
 */
static rein_err relay(rein_history *h, size_t from, const struct rein_buf *old_enc,
                      const struct rein_buf *old_sys)
{
    const struct rein__wire *w = h->ewire;
    rein_err rc = REIN_OK;

    for (size_t i = from; !rc && i < h->encoded; i++) {
        struct hmsg *m = &h->m[i];
        bool in_sys = w->group_user && m->role == 's';
        const struct rein_buf *src = in_sys ? old_sys : old_enc;
        const char *piece = src->ptr + (in_sys ? m->sys_end : m->enc_end) - m->enc_len;
        rc = place(h, w, m, i ? h->m[i - 1].open : 0, i == 0, piece, m->enc_len);
    }
    return rc;
}

void rein_history_remove(rein_history *h, size_t from, size_t to)
{
    size_t n = h->n, d, encoded = h->encoded;
    bool after_tool;
    int64_t text;
    size_t calls;
    uint32_t nsys;
    struct rein_buf old_enc, old_sys;

    if (to > n)
        to = n;
    if (from >= to)
        return;
    if (h->frozen) {
        frozen_remove(h, from, to);
        return;
    }
    if (to == n) {
        rein_history_truncate(h, from);
        return;
    }
    d = to - from;
    /* whether the message after the seam followed a tool result (see below) */
    after_tool = h->m[to - 1].role == 't';
    /* A stale piece moves with its message, still marked; from the seam on all are laid out
     * again anyway. */
    if (h->fresh != SIZE_MAX && h->fresh > from)
        h->fresh = from;
    if (h->treed > from)
        h->treed = from;
    /* The pieces before the seam stay, byte for byte, where they are. */
    sha_keep(h, from ? h->m[from - 1].enc_end : 0);
    text = h->m[to - 1].size - (from ? h->m[from - 1].size : 0);
    calls = h->m[to - 1].calls - (from ? h->m[from - 1].calls : 0);
    nsys = h->m[to - 1].nsys - (from ? h->m[from - 1].nsys : 0);
    ids_shift(h, from, to);
    /* The buffers as they were: the moved pieces are read from them. */
    old_enc = h->enc;
    old_sys = h->sys;
    rein_buf_init(&h->enc, 0);
    rein_buf_init(&h->sys, 0);
    for (size_t i = from; i < to; i++)
        hmsg_release(&h->m[i]);
    memmove(&h->m[from], &h->m[to], (n - to) * sizeof(*h->m));
    h->n = n - d;
    sums_shift(h, from, text, calls, nsys, to);
    if (h->chained > from)
        h->chained = from;
    h->encoded = encoded <= from ? encoded : encoded <= to ? from : encoded - d;
    /* A wire whose encoder reads the history (encode_in: a Gemini tool result that does not
     * name its call looks back to the last assistant message before it) encodes again from
     * the seam when a tool result comes after it before any assistant message; the exchanges
     * a trim drops, each from a user message to the next, never leave one there. So does the
     * message at the seam when a tool result comes before it, now or before the removal (the
     * OpenAI wire writes the media of tool results before the message after them: decision
     * 0098). */
    after_tool |= from > 0 && h->m[from - 1].role == 't';
    for (size_t i = from; h->ewire && h->ewire->encode_in && i < h->encoded; i++) {
        if (h->m[i].role == 't' || (i == from && after_tool)) {
            h->encoded = from;
            break;
        }
        if (h->m[i].role == 'a')
            break;
    }
    /* The pieces before the seam are copied as they are; the others are laid out after
     * them. */
    if (keep_prefix(&h->enc, &old_enc, from ? h->m[from - 1].enc_end : 0) != REIN_OK ||
        keep_prefix(&h->sys, &old_sys, from ? h->m[from - 1].sys_end : 0) != REIN_OK ||
        (h->encoded > from && relay(h, from, &old_enc, &old_sys) != REIN_OK)) {
        /* Out of memory: the moved messages are encoded again when next sent. */
        rein_buf_release(&h->enc);
        rein_buf_release(&h->sys);
        h->enc = old_enc;
        h->sys = old_sys;
        h->encoded = from;
        rein_buf_truncate(&h->enc, from ? h->m[from - 1].enc_end : 0);
        rein_buf_truncate(&h->sys, from ? h->m[from - 1].sys_end : 0);
        return;
    }
    rein_buf_release(&old_enc);
    rein_buf_release(&old_sys);
}

const json_t *rein__history_answered_call(const rein_history *h, size_t i, const char *id)
{
    while (i-- > 0) {
        const json_t *m = rein_history_get(h, i), *c;
        size_t k;
        if (strcmp(rein__json_str(m, "role"), "assistant") != 0)
            continue;
        json_array_foreach(json_object_get(m, "tool_calls"), k, c)
        {
            if (!strcmp(rein__json_str(c, "id"), id))
                return c;
        }
        break;
    }
    return NULL;
}
