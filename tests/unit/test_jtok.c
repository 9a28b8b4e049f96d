/*
 * Unit tests for the fast JSON tokenizer in front of jsmn (src/providers/jtok.c): it gives
 * jsmn's exact tokens on well-formed text, hand-written and in every real recording under
 * /work/shared/fixtures (each JSON body, JSON line and SSE data payload), declines what is
 * not well-formed so jsmn's answer and error stand, and grows the decoders' token array.
 */
#define JSMN_STATIC
#define JSMN_PARENT_LINKS
#define JSMN_STRICT
#include <jsmn.h>

#include "test.h"

#include "providers/jpull.h"

#include "../../fuzz/jtok_same.h"

#define TEXT(lit) (lit), sizeof(lit) - 1

static void test_well_formed_texts_give_jsmn_tokens(void **state)
{
    static const char *const texts[] = {
        "{}",
        "[]",
        "  {\"a\":1}\n",
        "{\"a\":{\"b\":[1,2,{\"c\":null}],\"d\":\"e\"},\"f\":[[],[{}]],\"g\":true}",
        "[1, -2.5e+3, 0, -0.0, 1E9, true, false, null, \"s\"] ",
        "{\"esc\":\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9\\uD83D\\uDE00\"}",
        "{\"utf8\":\"caf\xc3\xa9 \xe2\x82\xac\",\"long\":\"0123456789abcdefghijklmnopqrstuvwxyz\"}",
        "{\"a\":1}{\"b\":2} {\"c\":[3]}\n",
        "\"a top string\"",
        "7 ",
        "{ \"spaced\" : [ 1 , 2 ] , \"x\" : { } }",
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"choices\":"
        "[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}",
    };
    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(texts); i++) {
        if (jtok_compare(texts[i], strlen(texts[i])) != JTOK_SAME)
            fail_msg("not jsmn's tokens, or declined: %s", texts[i]);
    }
}

/* Text jsmn reads loosely or rejects: the fast path declines, and jdoc_parse answers as jsmn. */
static void test_other_texts_are_left_to_jsmn(void **state)
{
    static const struct {
        const char *s;
        size_t len;
        bool fast; /* well-formed after all */
    } texts[] = {
        {TEXT(""), true}, /* no value: no tokens, from both */
        {TEXT("{\"a\":nul}"), false},
        {TEXT("{\"a\":01}"), false},
        {TEXT("{\"a\" \"b\"}"), false},
        {TEXT("{\"a\":1,}"), false},
        {TEXT("[1,]"), false},
        {TEXT("{\"a\":\"tab\there\"}"), false},
        {TEXT("{\"a\":\"\\x\"}"), false},
        {TEXT("{\"a\":\"\\u12\"}"), false},
        {TEXT("{\"a\":1"), false},
        {TEXT("{\"a\":\"cut"), false},
        {TEXT("7"), false},
        {TEXT("{\"a\":1}\0{\"b\":2}"), false},
        {TEXT("{\"a\":1},{\"b\":2}"), false},
        {TEXT("}"), false},
        {TEXT("[1.]"), false},
        {TEXT("[-]"), false},
        {TEXT("[1e]"), false},
        {TEXT("[\"\xff\"]"), true}, /* any byte from 0x80 up is fine in a string */
    };
    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(texts); i++) {
        const char *s = texts[i].s;
        size_t len = texts[i].len;
        enum jtok_verdict v = jtok_compare(s, len);
        void *tokv = NULL;
        int cap = 0, r, rj;
        struct jdoc doc;
        jsmn_parser p;
        jsmntok_t ref[16];

        if (texts[i].fast)
            assert_int_equal(v, JTOK_SAME);
        else if (v != JTOK_DECLINED)
            fail_msg("the fast path accepted text #%zu: %s", i, s);
        r = jdoc_parse(&doc, s, len, &tokv, &cap);
        jsmn_init(&p);
        rj = jsmn_parse(&p, s, len, ref, 16);
        assert_int_equal(r, rj);
        for (int k = 0; k < r; k++) {
            const jsmntok_t *t = &doc.t[k];
            assert_int_equal(t->type, ref[k].type);
            assert_int_equal(t->start, ref[k].start);
            assert_int_equal(t->end, ref[k].end);
            assert_int_equal(t->size, ref[k].size);
            assert_int_equal(t->parent, ref[k].parent);
        }
        rein_free(tokv);
    }
}

/* More tokens than the decoders' first array (256) holds: jdoc_parse grows it. */
static void test_token_array_grows(void **state)
{
    struct rein_buf b;
    struct jdoc doc;
    void *tokv = NULL;
    int cap = 0, r;

    (void)state;
    rein_buf_init(&b, 0);
    assert_rein_ok(rein_buf_adds(&b, "{\"items\":["), NULL);
    for (int i = 0; i < 700; i++)
        assert_rein_ok(rein_buf_adds(&b, i ? ",{\"n\":1}" : "{\"n\":1}"), NULL);
    assert_rein_ok(rein_buf_adds(&b, "]}"), NULL);
    assert_int_equal(jtok_compare(b.ptr, b.len), JTOK_SAME);
    r = jdoc_parse(&doc, b.ptr, b.len, &tokv, &cap);
    assert_int_equal(r, 3 + 700 * 3);
    assert_true(cap >= r);
    assert_int_equal(doc.t[2].size, 700); /* the array, after the object and its key */
    assert_int_equal(doc.t[r - 1].parent, r - 2);
    rein_free(tokv);
    rein_buf_release(&b);
}

struct pieces {
    size_t checked, same;
};

static void check_piece(struct pieces *pc, const char *path, const char *p, size_t len)
{
    enum jtok_verdict v;

    while (len && (p[len - 1] == '\r' || p[len - 1] == '\n'))
        len--;
    if (rein_json_check(p, len, NULL) != REIN_OK)
        return; /* not one JSON value (a cut recording, a BFCL line set): jsmn's to judge */
    pc->checked++;
    v = jtok_compare(p, len);
    if (v != JTOK_SAME)
        fail_msg("%s: %s on %.80s", path, v == JTOK_DECLINED ? "declined" : "not jsmn's tokens", p);
    pc->same++;
}

/* Each whole file, each line, and each SSE "data:" line's payload. */
static void check_file(struct pieces *pc, const char *path)
{
    size_t len;
    char *text = test_read_file(path, &len);

    assert_non_null(text);
    check_piece(pc, path, text, len);
    for (char *line = text; line < text + len;) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        size_t n = nl ? (size_t)(nl - line) : (size_t)(text + len - line);
        if (n > 5 && memcmp(line, "data:", 5) == 0) {
            size_t skip = line[5] == ' ' ? 6 : 5;
            check_piece(pc, path, line + skip, n - skip);
        } else if (n > 0 && line[0] != ' ') {
            check_piece(pc, path, line, n);
        }
        line += n + 1;
    }
    rein_free(text);
}

static void check_entry(const char *path, void *ud)
{
    if (!strstr(path, ".md"))
        check_file(ud, path);
}

static void test_recordings_give_jsmn_tokens(void **state)
{
    struct pieces pc = {0, 0};

    (void)state;
    test_walk_files(test_require_shared("fixtures"), check_entry, &pc);
    print_message("%zu JSON texts in the recordings, all tokenized as jsmn does\n", pc.checked);
    assert_true(pc.checked >= 100);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_well_formed_texts_give_jsmn_tokens),
    cmocka_unit_test(test_other_texts_are_left_to_jsmn),
    cmocka_unit_test(test_token_array_grows),
    cmocka_unit_test(test_recordings_give_jsmn_tokens),
};

REIN_TEST_MAIN(tests)
