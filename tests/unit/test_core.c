/*
 * Unit tests for src/core: errors, buffers, the JSON writer, jansson helpers, ids, clocks,
 * logging levels and arenas, including allocation failure at every step.
 */
#include "test.h"

#include "core/internal.h"

#include <math.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void test_error_codes_have_names_and_texts(void **state)
{
    (void)state;
    assert_string_equal(rein_err_name(REIN_ENOMEM), "REIN_ENOMEM");
    assert_string_equal(rein_strerror(REIN_ETOOBIG), "size limit exceeded");
    assert_string_equal(rein_strerror(REIN_OK), "success");
    assert_string_equal(rein_err_name(-9999), "REIN_E?");
}

static void test_error_set_returns_code_and_formats(void **state)
{
    rein_error err;

    (void)state;
    rein_error_clear(&err);
    assert_int_equal(rein_error_set(&err, REIN_EPARSE, "tool_calls[%d]: missing \"name\"", 2),
                     REIN_EPARSE);
    assert_string_equal(err.msg, "tool_calls[2]: missing \"name\"");
    rein_error_prefix(&err, "%s: ", "reply.json");
    assert_string_equal(err.msg, "reply.json: tool_calls[2]: missing \"name\"");
    assert_int_equal(rein_error_set(NULL, REIN_EIO, "ignored"), REIN_EIO);
}

static void test_buf_grows_and_stays_terminated(void **state)
{
    struct rein_buf b;

    (void)state;
    rein_buf_init(&b, 0);
    assert_string_equal(b.ptr, "");
    for (int i = 0; i < 1000; i++)
        assert_rein_ok(rein_buf_addf(&b, "%d,", i), NULL);
    assert_int_equal(b.ptr[b.len], '\0');
    assert_memory_equal(b.ptr, "0,1,2,", 6);
    rein_buf_truncate(&b, 2);
    assert_string_equal(b.ptr, "0,");
    rein_buf_release(&b);
    assert_int_equal(b.len, 0);
}

static void test_buf_respects_max(void **state)
{
    struct rein_buf b;

    (void)state;
    rein_buf_init(&b, 8);
    assert_rein_ok(rein_buf_adds(&b, "1234567"), NULL);
    assert_int_equal(rein_buf_addch(&b, '8'), REIN_ETOOBIG);
    assert_string_equal(b.ptr, "1234567");
    assert_int_equal(rein_buf_addf(&b, "%s", "more"), REIN_ETOOBIG);
    assert_string_equal(b.ptr, "1234567");
    rein_buf_release(&b);
}

static void test_buf_detach_hands_over_memory(void **state)
{
    struct rein_buf b;
    size_t len;
    char *s;

    (void)state;
    rein_buf_init(&b, 0);
    s = rein_buf_detach(&b, &len);
    assert_string_equal(s, "");
    rein_free(s);
    assert_rein_ok(rein_buf_adds(&b, "abc"), NULL);
    s = rein_buf_detach(&b, &len);
    assert_int_equal(len, 3);
    assert_string_equal(s, "abc");
    assert_string_equal(b.ptr, "");
    rein_free(s);
}

/* Integers are written by hand, not through snprintf: the extremes and the signs. */
static void test_jw_integers_are_exact(void **state)
{
    struct rein_buf b;
    struct rein_jw w;

    (void)state;
    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_jw_arr_begin(&w);
    rein_jw_int(&w, 0);
    rein_jw_int(&w, 7);
    rein_jw_int(&w, -1);
    rein_jw_int(&w, 1795706488);
    rein_jw_int(&w, INT64_MAX);
    rein_jw_int(&w, INT64_MIN);
    rein_jw_uint(&w, 0);
    rein_jw_uint(&w, UINT64_MAX);
    rein_jw_arr_end(&w);
    assert_rein_ok(rein_jw_finish(&w), NULL);
    assert_string_equal(b.ptr, "[0,7,-1,1795706488,9223372036854775807,-9223372036854775808,0,"
                               "18446744073709551615]");
    rein_buf_release(&b);
}

static void test_jw_writes_nested_values(void **state)
{
    struct rein_buf b;
    struct rein_jw w;

    (void)state;
    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "a");
    rein_jw_int(&w, -5);
    rein_jw_key(&w, "list");
    rein_jw_arr_begin(&w);
    rein_jw_bool(&w, true);
    rein_jw_null(&w);
    rein_jw_double(&w, 0.1);
    rein_jw_double(&w, 3);
    rein_jw_str(&w, "q\"\\\n\x01");
    rein_jw_arr_end(&w);
    rein_jw_key(&w, "raw");
    rein_jw_raw(&w, "{\"x\":1}", 7);
    rein_jw_obj_end(&w);
    assert_rein_ok(rein_jw_finish(&w), NULL);
    assert_string_equal(b.ptr, "{\"a\":-5,\"list\":[true,null,0.1,3.0,\"q\\\"\\\\\\n\\u0001\"],"
                               "\"raw\":{\"x\":1}}");
    rein_buf_release(&b);
}

static void test_jw_replaces_invalid_utf8(void **state)
{
    struct rein_buf b;
    struct rein_jw w;
    json_t *v;

    (void)state;
    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    /* A valid 3-byte sequence, a lone continuation byte, a truncated sequence, a surrogate. */
    rein_jw_str(&w, "\xe4\xb8\xad|\x80|\xe4\xb8|\xed\xa0\x80");
    assert_rein_ok(rein_jw_finish(&w), NULL);
    v = rein_json_parse(b.ptr, b.len, 0, NULL);
    assert_non_null(v);
    assert_string_equal(json_string_value(v), "\xe4\xb8\xad|\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|"
                                              "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    json_decref(v);
    rein_buf_release(&b);
}

/* Random strings of plain bytes, escapes, multi-byte characters and stray bytes, written as
 * values and as keys into buffers with and without room: the output is what a byte-by-byte
 * escape gives (the eight-at-a-time scan and the copy-while-checking path must agree with it
 * at every length and offset). Integers at their limits too. */
static void test_jw_fast_paths_match_byte_by_byte(void **state)
{
    static const char *const multi[] = {"\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80"};
    uint64_t seed = 0x9e3779b97f4a7c15u;

    (void)state;
    for (int round = 0; round < 3000; round++) {
        struct rein_buf in, want, b;
        struct rein_jw w;
        size_t n;

        rein_buf_init(&in, 0);
        rein_buf_init(&want, 0);
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        n = (size_t)(seed >> 58); /* 0-63 pieces */
        for (size_t i = 0; i < n; i++) {
            unsigned r;
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            r = (unsigned)(seed >> 33);
            if (r % 16 == 0) {
                const char *m = multi[r / 16 % 3];
                assert_rein_ok(rein_buf_adds(&in, m), NULL);
                assert_rein_ok(rein_buf_adds(&want, m), NULL);
            } else if (r % 16 == 1) {
                assert_rein_ok(rein_buf_addch(&in, (char)0x80), NULL);
                assert_rein_ok(rein_buf_adds(&want, "\\ufffd"), NULL);
            } else {
                /* Mostly printable, sometimes a control byte, a quote or a backslash. */
                unsigned char c =
                    (unsigned char)(r % 8 == 2 ? (r >> 8) % 0x80 : 0x20 + (r >> 8) % 0x5f);
                assert_rein_ok(rein_buf_addch(&in, (char)c), NULL);
                if (c == '"' || c == '\\')
                    assert_rein_ok(rein_buf_addf(&want, "\\%c", c), NULL);
                else if (c == '\n')
                    assert_rein_ok(rein_buf_adds(&want, "\\n"), NULL);
                else if (c == '\r')
                    assert_rein_ok(rein_buf_adds(&want, "\\r"), NULL);
                else if (c == '\t')
                    assert_rein_ok(rein_buf_adds(&want, "\\t"), NULL);
                else if (c == '\b')
                    assert_rein_ok(rein_buf_adds(&want, "\\b"), NULL);
                else if (c == '\f')
                    assert_rein_ok(rein_buf_adds(&want, "\\f"), NULL);
                else if (c < 0x20)
                    assert_rein_ok(rein_buf_addf(&want, "\\u%04x", c), NULL);
                else
                    assert_rein_ok(rein_buf_addch(&want, (char)c), NULL);
            }
        }
        for (int key = 0; key < 2; key++) {
            struct rein_buf exp;
            rein_buf_init(&b, 0);
            /* Some rounds start with room to spare, some with none. */
            if (round % 3)
                assert_rein_ok(rein_buf_grow(&b, (size_t)(round % 97)), NULL);
            rein_jw_init(&w, &b);
            rein_jw_arr_begin(&w);
            if (key) {
                rein_jw_obj_begin(&w);
                rein_jw_keyn(&w, in.ptr, in.len);
                rein_jw_int(&w, round % 2 ? INT64_MIN : INT64_MAX);
                rein_jw_obj_end(&w);
            } else {
                rein_jw_strn(&w, in.ptr, in.len);
                rein_jw_int(&w, -(int64_t)round);
                rein_jw_uint(&w, UINT64_MAX);
            }
            rein_jw_arr_end(&w);
            assert_rein_ok(rein_jw_finish(&w), NULL);
            rein_buf_init(&exp, 0);
            if (key)
                assert_rein_ok(
                    rein_buf_addf(&exp, "[{\"%s\":%s}]", want.ptr,
                                  round % 2 ? "-9223372036854775808" : "9223372036854775807"),
                    NULL);
            else
                assert_rein_ok(
                    rein_buf_addf(&exp, "[\"%s\",%d,18446744073709551615]", want.ptr, -round),
                    NULL);
            assert_string_equal(b.ptr, exp.ptr);
            assert_int_equal(b.len, exp.len);
            rein_buf_release(&exp);
            rein_buf_release(&b);
        }
        /* rein_json_escape itself, after a few bytes already there, with room for the plain
         * copy (its word-at-a-time path, the last word overlapping) and without */
        for (int room = 0; room < 2; room++) {
            rein_buf_init(&b, 0);
            assert_rein_ok(rein_buf_adds(&b, "ab"), NULL);
            if (room)
                assert_rein_ok(rein_buf_grow(&b, in.len + (size_t)(round % 9)), NULL);
            assert_rein_ok(rein_json_escape(&b, in.ptr, in.len), NULL);
            assert_int_equal(b.len, want.len + 2);
            assert_memory_equal(b.ptr + 2, want.ptr, want.len);
            assert_int_equal(b.ptr[b.len], '\0');
            rein_buf_release(&b);
        }
        rein_buf_release(&in);
        rein_buf_release(&want);
    }
}

/* rein__json_copy_plain copies a string of 8 to 40 bytes only when rein_json_escape would
 * copy it as it is: one byte to escape (or from 0x80 up) anywhere, the overlapping last word
 * included, and it writes nothing. */
static void test_json_copy_plain_only_plain(void **state)
{
    static const unsigned char specials[] = {'"', '\\', '\n', 0x01, 0x1f, 0x80, 0xc3, 0xff};
    char s[48];
    struct rein_buf b, want;

    (void)state;
    rein_buf_init(&b, 0);
    rein_buf_init(&want, 0);
    for (size_t len = 8; len <= 40; len++) {
        for (size_t i = 0; i < len; i++)
            s[i] = (char)('a' + (i * 7 + len) % 26);
        rein_buf_reset(&b);
        assert_rein_ok(rein_buf_adds(&b, "x"), NULL);
        assert_rein_ok(rein_buf_grow(&b, len), NULL);
        assert_true(rein__json_copy_plain(&b, s, len));
        assert_int_equal(b.len, len + 1);
        assert_memory_equal(b.ptr + 1, s, len);
        assert_int_equal(b.ptr[b.len], '\0');
        for (size_t at = 0; at < len; at++) {
            for (size_t k = 0; k < sizeof(specials); k++) {
                char keep = s[at];
                s[at] = (char)specials[k];
                rein_buf_reset(&b);
                assert_rein_ok(rein_buf_adds(&b, "x"), NULL);
                assert_rein_ok(rein_buf_grow(&b, len), NULL);
                assert_false(rein__json_copy_plain(&b, s, len));
                assert_string_equal(b.ptr, "x");
                /* and rein_json_escape does not copy it as it is */
                rein_buf_reset(&want);
                assert_rein_ok(rein_json_escape(&want, s, len), NULL);
                assert_true(want.len != len || memcmp(want.ptr, s, len) != 0);
                s[at] = keep;
            }
        }
    }
    rein_buf_release(&b);
    rein_buf_release(&want);
}

static void test_jw_reports_misuse_and_depth(void **state)
{
    struct rein_buf b;
    struct rein_jw w;

    (void)state;
    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_jw_obj_end(&w);
    assert_int_equal(rein_jw_finish(&w), REIN_ESTATE);
    rein_buf_reset(&b);
    rein_jw_init(&w, &b);
    for (int i = 0; i < REIN_JW_MAX_DEPTH + 5; i++)
        rein_jw_arr_begin(&w);
    assert_int_equal(rein_jw_finish(&w), REIN_EDEPTH);
    rein_buf_reset(&b);
    rein_jw_init(&w, &b);
    rein_jw_arr_begin(&w);
    assert_int_equal(rein_jw_finish(&w), REIN_ESTATE);
    rein_buf_release(&b);
}

static void test_jw_double_round_trips(void **state)
{
    const double values[] = {0.1, 1e300, -2.5e-300, 123456789.123456789, 1.0 / 3.0, 5e-324};
    struct rein_buf b;
    struct rein_jw w;

    (void)state;
    rein_buf_init(&b, 0);
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        rein_buf_reset(&b);
        rein_jw_init(&w, &b);
        rein_jw_double(&w, values[i]);
        assert_rein_ok(rein_jw_finish(&w), NULL);
        assert_true(strtod(b.ptr, NULL) == values[i]);
    }
    rein_buf_reset(&b);
    rein_jw_init(&w, &b);
    rein_jw_double(&w, NAN);
    assert_string_equal(b.ptr, "null");
    rein_buf_release(&b);
}

/* The shortest text that reads back, laid out as Python's repr (the oracle the table came
 * from: python3 -c 'print(repr(x))'), so every path prints a double one way. */
static void test_double_text_is_shortest(void **state)
{
    static const struct {
        double v;
        const char *text;
    } table[] = {
        {0.1 + 0.2, "0.30000000000000004"},
        {2.0 * (3 + 4) / 5, "2.8"},
        {1e-7, "1e-07"},
        {1e21, "1e+21"},
        {-0.0, "-0.0"},
        {0.0, "0.0"},
        {5e-324, "5e-324"},
        {0.6000000000000001, "0.6000000000000001"},
        {0.6, "0.6"},
        {100.0, "100.0"},
        {1e15, "1000000000000000.0"},
        {1e16, "1e+16"},
        {0.0001, "0.0001"},
        {0.00001, "1e-05"},
        {1.0 / 3.0, "0.3333333333333333"},
        {-2.5e-300, "-2.5e-300"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {123456789.123456789, "123456789.12345679"},
        {2.5, "2.5"},
        {-1.5e-7, "-1.5e-07"},
        {9007199254740993.0, "9007199254740992.0"},
    };
    char out[REIN_JSON_DOUBLE_MAX];

    (void)state;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        int n = rein_json_double_text(table[i].v, out);
        assert_string_equal(out, table[i].text);
        assert_int_equal(n, (int)strlen(table[i].text));
        assert_true(strtod(out, NULL) == table[i].v);
    }
    assert_int_equal(rein_json_double_text(INFINITY, out), 4);
    assert_string_equal(out, "null");
}

static void test_dump_indent_uses_the_one_number_writer(void **state)
{
    const char *text = "{\"a\":[2.8,1e-7,{}],\"b\":{\"c\":\"x\\u0000y\",\"d\":[]},\"e\":7}";
    json_t *v = rein_json_parse(text, strlen(text), 0, NULL);
    struct rein_buf b;

    (void)state;
    assert_non_null(v);
    rein_buf_init(&b, 0);
    assert_rein_ok(rein_json_dump_indent(&b, v, 2), NULL);
    assert_string_equal(b.ptr, "{\n  \"a\": [\n    2.8,\n    1e-07,\n    {}\n  ],\n  \"b\": {\n"
                               "    \"c\": \"x\\u0000y\",\n    \"d\": []\n  },\n  \"e\": 7\n}");
    rein_buf_reset(&b);
    assert_rein_ok(rein_json_dump_indent(&b, v, 0), NULL);
    assert_string_equal(b.ptr,
                        "{\"a\":[2.8,1e-07,{}],\"b\":{\"c\":\"x\\u0000y\",\"d\":[]},\"e\":7}");
    rein_buf_release(&b);
    json_decref(v);
}

static void test_json_locate_finds_members(void **state)
{
    const char *text = "{\"provider\": {\n  \"model\": \"x\",\n  \"caf\\u00e9\": [1, {\"k\": 2}],\n"
                       "  \"a/b\": 3}, \"é\": true}";
    int line = 0, col = 0;

    (void)state;
    assert_true(rein_json_locate(text, strlen(text), "", &line, &col));
    assert_int_equal(line, 1);
    assert_int_equal(col, 1);
    assert_true(rein_json_locate(text, strlen(text), "/provider/model", &line, &col));
    assert_int_equal(line, 2);
    assert_int_equal(col, 3);
    assert_true(rein_json_locate(text, strlen(text), "/provider/café/1/k", &line, &col));
    assert_int_equal(line, 3);
    assert_int_equal(col, 21);
    assert_true(rein_json_locate(text, strlen(text), "/provider/a~1b", &line, &col));
    assert_int_equal(line, 4);
    /* A column counts characters: "é" is one. */
    assert_true(rein_json_locate(text, strlen(text), "/é", &line, &col));
    assert_int_equal(line, 4);
    assert_int_equal(col, 14);
    assert_false(rein_json_locate(text, strlen(text), "/nope", &line, &col));
    assert_false(rein_json_locate(text, strlen(text), "/provider/café/7", &line, &col));
    assert_false(rein_json_locate(text, strlen(text), "provider", &line, &col));
    assert_false(rein_json_locate("{\"a\": ", 6, "/a/b", &line, &col));
}

static void test_utf8_prefix_and_suggestions(void **state)
{
    static const char *const names[] = {"chat", "serve", "schema", "skills", "provider", NULL};

    (void)state;
    assert_int_equal(rein_utf8_valid_prefix("caf\xc3\xa9", 5), 5);
    assert_int_equal(rein_utf8_valid_prefix("echo caf\xe9", 9), 8);
    assert_int_equal(rein_utf8_valid_prefix("\xed\xa0\x80", 3), 0); /* a surrogate */
    assert_int_equal(rein_utf8_valid_prefix("a\xc0\x80", 3), 1);    /* overlong */
    assert_int_equal(rein_utf8_valid_prefix("a\0b", 3), 3);         /* NUL is text */
    assert_string_equal(rein_suggest("chta", names, SIZE_MAX), "chat");
    assert_string_equal(rein_suggest("serv", names, SIZE_MAX), "serve");
    assert_string_equal(rein_suggest("SKILS", names, SIZE_MAX), "skills");
    assert_null(rein_suggest("zzzzzz", names, SIZE_MAX));
    assert_null(rein_suggest("", names, SIZE_MAX));
}

static void test_json_parse_reports_position(void **state)
{
    rein_error err;
    json_t *v;

    (void)state;
    rein_error_clear(&err);
    v = rein_json_parse("{\"a\": 1,\n \"b\": }", 17, 0, &err);
    assert_null(v);
    assert_int_equal(err.code, REIN_EPARSE);
    assert_int_equal(err.line, 2);
    assert_true(err.column > 0);
    assert_non_null(strstr(err.msg, "line 2"));
    v = rein_json_parse("123456789012345678901234567890", 30, 0, &err);
    assert_null(v);
}

/* rein_json_check agrees with rein_json_parse; fuzz/json_check.c holds it to that on any
 * input, these name the cases that matter to the store. */
static void test_json_check_without_a_tree(void **state)
{
    static const char *const good[] = {
        "{\"a\": [1, 2.5, true, null], \"b\": \"\\u00e9\"}", " 7 ", "\"\\u0000\"",
        "-9223372036854775808", "1e-400", "\"\\ud83d\\ude00\"",
        /* decided by their digits alone, and just past that */
        "123456789012345678", "-9223372036854775807", "-1.5e99", "1e-99999",
        "[\"sixteen plain bytes, then \\u00e9 and \xc3\xa9\"]"};
    static const char *const bad[] = {
        "", "{} x", "[1,]", "9223372036854775808", "1e400", "\"\\ud800\"", "{\"\\u0000\":1}",
        "\"\xc0\xaf\"", "[truex]", "{\"a\" 1}", "9999999999999999999", "-1e999",
        /* a control byte, an end and a NUL key past eight plain bytes */
        "\"eight plain bytes\x01\"", "\"sixteen plain bytes",
        "{\"sixteen plain bytes\\u0000\": 1}"};
    rein_error err;

    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        json_t *v = rein_json_parse(good[i], strlen(good[i]), 0, NULL);
        assert_non_null(v);
        json_decref(v);
        assert_rein_ok(rein_json_check(good[i], strlen(good[i]), &err), &err);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_null(rein_json_parse(bad[i], strlen(bad[i]), 0, NULL));
        assert_int_equal(rein_json_check(bad[i], strlen(bad[i]), &err), REIN_EPARSE);
        assert_true(err.msg[0] != '\0');
    }
    /* Where it went wrong, as a person counts. */
    assert_int_equal(rein_json_check("{\"a\": 1,\n \"b\": tru}", 21, &err), REIN_EPARSE);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.column, 7);
    assert_non_null(strstr(err.msg, "invalid token"));
    assert_int_equal(rein_json_check(NULL, 0, NULL), REIN_EPARSE);
    /* A real without an exponent overflows only past 308 digits: converted, not assumed. */
    {
        char big[400];
        memset(big, '9', 320);
        memcpy(big + 320, ".5", 3);
        assert_int_equal(rein_json_check(big, strlen(big), &err), REIN_EPARSE);
        assert_non_null(strstr(err.msg, "overflow"));
        memcpy(big + 300, ".5", 3);
        assert_rein_ok(rein_json_check(big, strlen(big), &err), &err);
    }
}

/* REIN_JW_KEY writes what rein_jw_key writes, separators included, and refuses the same
 * misuse (a key outside an object, two keys in a row). */
static void test_jw_literal_key_matches_key(void **state)
{
    struct rein_buf a, b;
    struct rein_jw wa, wb;

    (void)state;
    rein_buf_init(&a, 0);
    rein_buf_init(&b, 0);
    rein_jw_init(&wa, &a);
    rein_jw_init(&wb, &b);
    rein_jw_obj_begin(&wa);
    rein_jw_obj_begin(&wb);
    for (int i = 0; i < 3; i++) {
        rein_jw_key(&wa, "created_at");
        REIN_JW_KEY(&wb, "created_at");
        rein_jw_int(&wa, i);
        rein_jw_int(&wb, i);
    }
    rein_jw_obj_end(&wa);
    rein_jw_obj_end(&wb);
    assert_rein_ok(rein_jw_finish(&wb), NULL);
    assert_string_equal(b.ptr, a.ptr);
    assert_string_equal(b.ptr, "{\"created_at\":0,\"created_at\":1,\"created_at\":2}");
    rein_buf_release(&b);
    rein_buf_init(&b, 0);
    rein_jw_init(&wb, &b);
    REIN_JW_KEY(&wb, "outside");
    assert_int_equal(wb.err, REIN_ESTATE);
    rein_jw_init(&wb, &b);
    rein_jw_obj_begin(&wb);
    REIN_JW_KEY(&wb, "one");
    REIN_JW_KEY(&wb, "two");
    assert_int_equal(wb.err, REIN_ESTATE);
    rein_buf_release(&a);
    rein_buf_release(&b);
}

/* What rein_json_is_written_form accepts is exactly what parsing and writing give back, and a
 * text rein's writer made is accepted (here: trees of random strings, integers and nesting). */
static void test_json_written_form_matches_parse_and_write(void **state)
{
    static const char *const yes[] = {"{\"role\":\"user\",\"content\":\"echo hello\"}",
                                      "[]",
                                      "{}",
                                      "0",
                                      "-12",
                                      "\"\"",
                                      "true",
                                      "[null,false,{\"a\":{\"a\":1}}]",
                                      "\"\\\"\\\\\\n\\r\\t\\b\\f\\u001f\\u0001\"",
                                      "\"caf\xc3\xa9 \xf0\x9f\x98\x80\x7f\"",
                                      "{\"a\":1,\"b\":{\"a\":2},\"c\":[{\"a\":3}]}",
                                      "123456789012345678"};
    static const char *const no[] = {"{\"a\": 1}",
                                     " {}",
                                     "{}\n",
                                     "{\"a\":1,\"a\":2}",
                                     "\"\\/\"",
                                     "\"\\u00e9\"",
                                     "\"\\u000a\"",
                                     "\"\\u001F\"",
                                     "\"\\u0000\"",
                                     "-0",
                                     "01",
                                     "1.5",
                                     "1e3",
                                     "-",
                                     "1234567890123456789",
                                     "\"\xed\xa0\x80\"",
                                     "\"\xc3\"",
                                     "\"a\x01\"",
                                     "[1,]",
                                     "{\"a\"}",
                                     "tru",
                                     "",
                                     "[1]x",
                                     "{\"a\":1,\"b\":2,\"a\":3}"};
    uint64_t seed = 0x2545f4914f6cdd1du;

    (void)state;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        json_t *v = rein_json_parse(yes[i], strlen(yes[i]), 0, NULL);
        struct rein_buf b;
        assert_true(rein_json_is_written_form(yes[i], strlen(yes[i])));
        assert_non_null(v);
        rein_buf_init(&b, 0);
        assert_rein_ok(rein_json_dump(&b, v), NULL);
        assert_string_equal(b.ptr, yes[i]);
        rein_buf_release(&b);
        json_decref(v);
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        assert_false(rein_json_is_written_form(no[i], strlen(no[i])));
    assert_false(rein_json_is_written_form(NULL, 0));
    /* Random trees, written by rein's writer: each text is accepted and reads back alike. */
    for (int round = 0; round < 500; round++) {
        json_t *root = json_object(), *arr = json_array();
        struct rein_buf b, again;
        json_t *back;
        for (int k = 0; k < 6; k++) {
            char key[8], val[24];
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            snprintf(key, sizeof(key), "k%d", k);
            for (size_t j = 0; j < sizeof(val) - 1; j++)
                val[j] = (char)(1 + (seed >> (j % 7 * 8)) % 0x7f); /* every ASCII byte but NUL */
            val[sizeof(val) - 1] = '\0';
            json_object_set_new(
                root, key,
                (seed & 1) ? json_string(val)
                           : json_integer((json_int_t)(seed >> 20) - (json_int_t)(seed >> 21)));
            json_array_append_new(arr, json_string(val + k));
        }
        json_object_set_new(root, "list", arr);
        rein_buf_init(&b, 0);
        assert_rein_ok(rein_json_dump(&b, root), NULL);
        assert_true(rein_json_is_written_form(b.ptr, b.len));
        back = rein_json_parse(b.ptr, b.len, 0, NULL);
        assert_non_null(back);
        rein_buf_init(&again, 0);
        assert_rein_ok(rein_json_dump(&again, back), NULL);
        assert_string_equal(again.ptr, b.ptr);
        rein_buf_release(&again);
        rein_buf_release(&b);
        json_decref(back);
        json_decref(root);
    }
}

static void test_json_dump_keeps_key_order(void **state)
{
    const char *text = "{\"z\":1,\"a\":[1.5,\"x\",null,false],\"m\":{}}";
    json_t *v = rein_json_parse(text, strlen(text), 0, NULL);
    char *s;

    (void)state;
    assert_non_null(v);
    s = rein_json_dumps(v);
    assert_string_equal(s, "{\"z\":1,\"a\":[1.5,\"x\",null,false],\"m\":{}}");
    assert_string_equal(rein_json_type_name(json_object_get(v, "a")), "array");
    rein_free(s);
    json_decref(v);
}

/* The W3C rule as written: 32 lowercase hex digits, not all zero. */
static bool trace_id_reference(const char *text)
{
    bool nonzero = false;

    if (strlen(text) != REIN_TRACE_ID_LEN)
        return false;
    for (size_t i = 0; i < REIN_TRACE_ID_LEN; i++) {
        if (!strchr("0123456789abcdef", text[i]) || text[i] == '\0')
            return false;
        nonzero |= text[i] != '0';
    }
    return nonzero;
}

/* Every byte value at every position of a valid id, and of an all-zero one, and one byte
 * past the end: the table-driven check says what the rule says. */
static void trace_id_agrees_with_reference(void)
{
    for (int base = 0; base < 2; base++) {
        for (size_t pos = 0; pos <= REIN_TRACE_ID_LEN; pos++) {
            for (int c = 0; c < 256; c++) {
                char id[REIN_TRACE_ID_LEN + 2];
                memcpy(id,
                       base ? "00000000000000000000000000000000"
                            : "4bf92f3577b34da6a3ce929d0e0e4736",
                       REIN_TRACE_ID_LEN);
                id[REIN_TRACE_ID_LEN] = '\0';
                id[REIN_TRACE_ID_LEN + 1] = '\0';
                id[pos] = (char)c;
                if (rein_trace_id_is_valid(id) != trace_id_reference(id))
                    fail_msg("trace id check disagrees at %zu for byte %d (base %d)", pos, c, base);
            }
        }
    }
}

static void test_ids_are_well_formed_and_distinct(void **state)
{
    char a[REIN_TRACE_ID_LEN + 1], b[REIN_TRACE_ID_LEN + 1];
    char c[REIN_ID_MAX], d[REIN_ID_MAX];
    char span[REIN_SPAN_ID_LEN + 1];

    (void)state;
    rein_trace_id_new(a);
    rein_trace_id_new(b);
    assert_true(rein_trace_id_is_valid(a));
    assert_string_not_equal(a, b);
    assert_false(rein_trace_id_is_valid("00000000000000000000000000000000"));
    assert_false(rein_trace_id_is_valid("4BF92F3577B34DA6A3CE929D0E0E4736"));
    assert_true(rein_trace_id_is_valid("4bf92f3577b34da6a3ce929d0e0e4736"));
    assert_true(rein_trace_id_is_valid("00000000000000000000000000000001"));
    assert_false(rein_trace_id_is_valid("4bf92f3577b34da6a3ce929d0e0e473"));
    assert_false(rein_trace_id_is_valid("4bf92f3577b34da6a3ce929d0e0e47366"));
    assert_false(rein_trace_id_is_valid(""));
    assert_false(rein_trace_id_is_valid(NULL));
    trace_id_agrees_with_reference();
    rein_id_new("call_", c);
    rein_id_new("call_", d);
    assert_int_equal(strlen(c), 5 + 24);
    assert_memory_equal(c, "call_", 5);
    assert_string_not_equal(c, d);
    rein_span_id_new(span);
    assert_int_equal(strlen(span), 16);
}

/*
 * Every digit of an id is one of the 62 letters and digits, each as likely as any other at
 * every position (each id digit is drawn uniformly): counted over 20,000 ids, every symbol's
 * count stays within 8% of the mean overall (about 7 standard deviations) and within 40% at
 * each position (about 7 as well), far outside what chance produces, while a skewed draw (a
 * digit taken modulo 62 from a byte without redrawing, or a digit that repeats another) lands
 * outside.
 */
static void test_id_digits_are_uniform(void **state)
{
    enum { N = 20000, DIGITS = 24 };
    static const char alnum[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    static unsigned at[DIGITS][62];
    unsigned all[62] = {0};
    char id[REIN_ID_MAX];

    (void)state;
    memset(at, 0, sizeof(at));
    for (int n = 0; n < N; n++) {
        rein_id_new("c_", id);
        assert_int_equal(strlen(id), 2 + DIGITS);
        for (int i = 0; i < DIGITS; i++) {
            const char *d = strchr(alnum, id[2 + i]);
            assert_true(d && *d);
            at[i][d - alnum]++;
            all[d - alnum]++;
        }
    }
    for (int k = 0; k < 62; k++) {
        double mean_all = (double)N * DIGITS / 62, mean_at = (double)N / 62;
        if (all[k] < mean_all * 0.92 || all[k] > mean_all * 1.08)
            fail_msg("'%c' came %u times in %d digits (expected about %.0f)", alnum[k], all[k],
                     N * DIGITS, mean_all);
        for (int i = 0; i < DIGITS; i++)
            if (at[i][k] < mean_at * 0.6 || at[i][k] > mean_at * 1.4)
                fail_msg("'%c' came %u times at position %d (expected about %.0f)", alnum[k],
                         at[i][k], i, mean_at);
    }
}

/* A forked child and its parent mint different ids, across several refills of the
 * per-thread buffer (pthread_atfork drops the parent's bytes; the generator reseeds). */
static void test_ids_differ_after_fork(void **state)
{
    enum { N = 400 }; /* 400 ids of 24 bytes: more than two 4 KB refills */
    static char parent[N][REIN_ID_MAX], child[N][REIN_ID_MAX];
    int fds[2];
    pid_t pid;
    size_t got = 0;
    int status = 0;

    (void)state;
    rein_id_new("x_", parent[0]); /* the buffer is filled before the fork */
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        for (int i = 0; i < N; i++)
            rein_id_new("x_", child[i]);
        _exit(write(fds[1], child, sizeof(child)) == (ssize_t)sizeof(child) ? 0 : 1);
    }
    close(fds[1]);
    for (int i = 0; i < N; i++)
        rein_id_new("x_", parent[i]);
    while (got < sizeof(child)) {
        ssize_t n = read(fds[0], (char *)child + got, sizeof(child) - got);
        assert_true(n > 0);
        got += (size_t)n;
    }
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            if (strcmp(parent[i], child[j]) == 0)
                fail_msg("parent id %d equals child id %d: %s", i, j, parent[i]);
}

static void test_clock_is_monotonic_and_iso_formats(void **state)
{
    char iso[REIN_TIME_ISO_LEN];
    int64_t t0 = rein_now_ms();

    (void)state;
    rein_sleep_ms(5);
    assert_true(rein_now_ms() - t0 >= 5);
    assert_string_equal(rein_time_iso(0, iso), "1970-01-01T00:00:00.000Z");
    assert_string_equal(rein_time_iso(1795302423120LL, iso), "2026-11-21T23:07:03.120Z");
}

static int64_t ts_ns(struct timespec ts)
{
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A deadline lies ms after a reading taken before it and no further than ms after one taken
 * after it, with tv_nsec a valid nanosecond count, on both clocks a condition may wait on; the
 * ms values cross every place where the nanoseconds carry into seconds. */
static void test_deadline_ts_is_ms_from_now(void **state)
{
    static const clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC};

    (void)state;
    for (size_t c = 0; c < REIN_ARRAY_SIZE(clocks); c++) {
        for (int64_t ms = -3; ms < 3100; ms += 7) {
            struct timespec before, after, d;
            int64_t want = (ms < 0 ? 0 : ms) * 1000000;

            clock_gettime(clocks[c], &before);
            d = rein__deadline_ts(clocks[c], ms);
            clock_gettime(clocks[c], &after);
            assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
            assert_true(ts_ns(d) >= ts_ns(before) + want);
            assert_true(ts_ns(d) <= ts_ns(after) + want);
        }
    }
}

/* The formatter's own calendar against the C library's, over leap days, century years, the
 * ends of the range it handles itself and a spread of times in between. */
static void iso_as_libc(int64_t ms, char out[96])
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;

    gmtime_r(&secs, &tm);
    snprintf(out, 96, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

static void test_time_iso_matches_the_c_library(void **state)
{
    static const int64_t fixed[] = {0,
                                    999,
                                    86399999,
                                    951782400000LL,  /* 2000-02-29 */
                                    951868799999LL,  /* its last millisecond */
                                    4107456000000LL, /* 2100-02-28: not a leap year */
                                    4107542400000LL, /* 2100-03-01 */
                                    253402300799999LL,
                                    253402300800000LL}; /* 10000-01-01: the C library's */
    char iso[REIN_TIME_ISO_LEN], want[96];
    uint64_t x = 88172645463325252ULL;

    (void)state;
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        iso_as_libc(fixed[i], want);
        want[REIN_TIME_ISO_LEN - 1] = '\0';
        assert_string_equal(rein_time_iso(fixed[i], iso), want);
    }
    for (int i = 0; i < 100000; i++) {
        int64_t ms;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ms = (int64_t)(x % 253402300800000ULL);
        iso_as_libc(ms, want);
        assert_string_equal(rein_time_iso(ms, iso), want);
    }
}

/* a and b are written out alike (members in order, integers and reals as such). */
static void assert_written_alike(const json_t *a, const json_t *b)
{
    char *ta = rein_json_dumps(a), *tb = rein_json_dumps(b);

    assert_non_null(ta);
    assert_non_null(tb);
    assert_string_equal(ta, tb);
    rein_free(ta);
    rein_free(tb);
}

/* rein_doc_parse(text) against rein_json_parse(text, 0): the same value written out alike,
 * or the same error; true when the document holds nodes (rein's own form). */
static bool expect_doc_as_tree(const char *text, size_t len)
{
    rein_error derr = {0}, jerr = {0};
    rein_doc *doc = rein_doc_parse(text, len, &derr);
    json_t *want = rein_json_parse(text, len, 0, &jerr);
    bool nodes = doc && rein_doc_root(doc);

    if (!doc || !want) {
        if (doc || want) {
            print_error("%.60s: the document %s, the tree %s\n", text, doc ? "parses" : "fails",
                        want ? "parses" : "fails");
            fail();
        }
        assert_int_equal(derr.code, jerr.code);
        assert_string_equal(derr.msg, jerr.msg);
        return false;
    }
    assert_written_alike(rein_doc_tree(doc), want);
    assert_int_equal(rein_doc_type(doc), json_typeof(want));
    rein_doc_free(doc);
    json_decref(want);
    return nodes;
}

/* rein_json_parse(text) against jansson's loader with the same flags: the same document
 * written out alike, or an error at the same line and column; with no flags, rein_doc_parse
 * too. */
static void expect_as_jansson(const char *text, size_t len, size_t flags)
{
    rein_error err;
    json_error_t jerr;
    json_t *got = rein_json_parse(text, len, flags, &err);
    json_t *want = json_loadb(text, len, flags | JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);

    if (!flags)
        expect_doc_as_tree(text, len);
    if (!got || !want) {
        if (got || want) {
            print_error("%.60s: rein %s, jansson %s\n", text, got ? "accepts" : "refuses",
                        want ? "accepts" : "refuses");
            fail();
        }
        assert_int_equal(err.line, jerr.line);
        assert_int_equal(err.column, jerr.column);
        return;
    }
    assert_written_alike(got, want);
    json_decref(got);
    json_decref(want);
}

/*
 * rein_json_parse tries rein's own parser first (src/core/json_fast.c) and leaves the rest to
 * jansson: for every text, valid or not, the answer is jansson's, with and without
 * JSON_REJECT_DUPLICATES; and the plain ones (the first group) take the fast path.
 */
static void test_json_parse_agrees_with_jansson(void **state)
{
    static const char *const texts[] = {
        "{\"a\": 1, \"b\": [true, false, null], \"c\": {\"d\": \"e\"}, \"\xc3\xa9\": {}}",
        "[0, -0, 1.5, -0.0, 0.0, 2.5e3, 1E-7, 0.1, 123456789.125, 9007199254740993.0, 1e22]",
        "\"caf\xc3\xa9 \\u00e9 \\ud83d\\ude00 \\n\\t\\\"\\\\\\/ \\u0000 \xf0\x9f\x98\x80\"",
        "{\"n\": 9223372036854775807, \"m\": -9223372036854775808, \"x\": 1e-22}",
        "  {\"a\" : [ 1 , 2 ] , \"b\":\"\\u0041\\u00e9\\u4e2d\"}  ",
        "[1.7976931348623157e308, 2.2250738585072014e-308, 0.30000000000000004, 3.14159]",
        " {\"a\" : [1, -0, 2.5e-3, 1E+2, true, false, null, {}, []]} ",
        "{\"s\": \"\\\"q\\\" \\\\ \\/ \\b\\f\\n\\r\\t\", \"k\\\"ey\": 1, \"\\u00e9\": 2}",
        "{\"\u00e9t\u00e9\": \"\u6c49\u5b57\"}",
        /* jansson's to decide */
        "{\"a\": \"\\x\"}",
        "{\"\xc3\": 1}",
        "{\"a\": 1, \"a\": 2}",
        "{\"n\": 9223372036854775808}",
        "[-9223372036854775809]",
        "[1e400]",
        "[1e-400]",
        "[5e-324]",
        "[123456789012345678901234567890.5]",
        "\"\xc0\xaf\"",
        "\"\xed\xa0\x80\"",
        "\"\xf4\x90\x80\x80\"",
        "\"\xff\"",
        "{\"\xff\": 1}",
        "{\"k\\u0000\": 1}",
        "\"\\ud800\"",
        "\"\\udc00 x\"",
        "\"tab\there\"",
        "[01]",
        "[1.]",
        "[.5]",
        "[+1]",
        "[1,]",
        "{\"a\" 1}",
        "{\"a\": 1,}",
        "",
        "   ",
        "{} {}",
        "\"unterminated",
        "tru",
        "[nul]",
        "{\"a\": [1, 2}",
    };
    const size_t fast_ones = 9;
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    struct rein_buf b;

    (void)state;
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        size_t len = strlen(texts[i]);
        json_t *fast = rein__json_parse_fast(texts[i], len);
        if (i < fast_ones && !fast) {
            print_error("case %zu: rein's parser gave up on %s\n", i, texts[i]);
            fail();
        }
        json_decref(fast);
        /* What rein's parser is sure of, the document holds as its own nodes. */
        if (i < fast_ones && !expect_doc_as_tree(texts[i], len)) {
            print_error("case %zu: the document declined %s\n", i, texts[i]);
            fail();
        }
        expect_as_jansson(texts[i], len, 0);
        expect_as_jansson(texts[i], len, JSON_REJECT_DUPLICATES);
    }
    /* "1" then a NUL byte: jansson drops the NUL, rein's parser leaves it to jansson. */
    expect_as_jansson("1\0", 2, 0);

    /* Reals with few and many digits, small and large powers: the same doubles as strtod. */
    for (int i = 0; i < 20000; i++) {
        char text[96];
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        snprintf(text, sizeof(text), "[%s%llu.%0*llue%d]", x & 1 ? "-" : "",
                 (unsigned long long)(x >> 40), (int)(x % 19),
                 (unsigned long long)((x >> 8) % 1000000000000ULL), (int)((x >> 20) % 61) - 30);
        expect_as_jansson(text, strlen(text), 0);
        snprintf(text, sizeof(text), "[%.17g, %.15g, %g]", (double)x / 3.0, (double)(x >> 11) / 7.0,
                 (double)(x >> 30) / 1e5);
        expect_as_jansson(text, strlen(text), 0);
    }

    /* Nesting past rein's parser's depth (jansson builds it) and past jansson's (an error). */
    rein_buf_init(&b, 0);
    for (int depth = 300; depth <= 3000; depth += 2700) {
        rein_buf_reset(&b);
        for (int i = 0; i < depth; i++)
            assert_rein_ok(rein_buf_addch(&b, '['), NULL);
        for (int i = 0; i < depth; i++)
            assert_rein_ok(rein_buf_addch(&b, ']'), NULL);
        expect_as_jansson(b.ptr, b.len, 0);
    }
    /* One long string (eight bytes at a time, escapes, UTF-8), and many small records. */
    rein_buf_reset(&b);
    assert_rein_ok(rein_buf_adds(&b, "{\"content\": \""), NULL);
    for (int i = 0; i < 5000; i++)
        assert_rein_ok(rein_buf_adds(&b, "plain ascii text, then a \\\"quote\\\", caf\xc3\xa9 "
                                         "\\u00e9\\n\xe6\x97\xa5\xe6\x9c\xac \\\\ "),
                       NULL);
    assert_rein_ok(rein_buf_adds(&b, "\"}"), NULL);
    expect_as_jansson(b.ptr, b.len, 0);
    /* The same with one byte broken in the middle: jansson's error, at its position. */
    b.ptr[b.len / 2] = (char)0xff;
    expect_as_jansson(b.ptr, b.len, 0);
    rein_buf_reset(&b);
    assert_rein_ok(rein_buf_addch(&b, '['), NULL);
    for (int i = 0; i < 5000; i++)
        assert_rein_ok(rein_buf_addf(&b,
                                     "%s{\"id\": %d, \"name\": \"item %d\", \"price\": %d.%02d, "
                                     "\"tags\": [\"a\", \"b\"], \"ok\": %s}",
                                     i ? ", " : "", i, i, i % 1000, i % 100,
                                     i % 2 ? "true" : "false"),
                       NULL);
    assert_rein_ok(rein_buf_addch(&b, ']'), NULL);
    expect_as_jansson(b.ptr, b.len, 0);
    rein_buf_release(&b);
}

/* A document keeps duplicate keys out of its own form (jansson keeps the last value), whether
 * two keys' signatures collide or the object is large; distinct keys stay in it. Skips lead
 * from a container to the value after it. */
static bool nodes_of(const char *text)
{
    return expect_doc_as_tree(text, strlen(text));
}

static void test_doc_duplicates_and_skips(void **state)
{
    const char *nested = "[[1, [2]], {\"a\": {\"b\": 1}}, \"s\"]", *broken = "{\"a\": [1, 2}";
    struct rein_buf b;
    rein_error err;
    rein_doc *doc;
    const struct rein_doc_node *root, *it;

    (void)state;
    assert_false(nodes_of("{\"a\": 1, \"a\": 2}"));
    /* same length and last byte, different keys */
    assert_true(nodes_of("{\"ab\": 1, \"cb\": 2, \"b\": 3}"));
    assert_false(nodes_of("{\"ab\": 1, \"cb\": 2, \"ab\": 3}"));
    rein_buf_init(&b, 0);
    for (int dup = 0; dup < 2; dup++) {
        rein_buf_reset(&b);
        assert_rein_ok(rein_buf_addch(&b, '{'), NULL);
        for (int i = 0; i < 40; i++)
            assert_rein_ok(rein_buf_addf(&b, "%s\"key%d\": %d", i ? ", " : "", i, i), NULL);
        if (dup)
            assert_rein_ok(rein_buf_adds(&b, ", \"key17\": null"), NULL);
        assert_rein_ok(rein_buf_addch(&b, '}'), NULL);
        assert_int_equal(expect_doc_as_tree(b.ptr, b.len), !dup);
    }
    rein_buf_release(&b);

    doc = rein_doc_parse(nested, strlen(nested), &err);
    assert_non_null(doc);
    root = rein_doc_root(doc);
    assert_non_null(root);
    assert_int_equal(root->type, JSON_ARRAY);
    assert_int_equal(root->n, 3);
    it = rein_doc_next(root + 1);
    assert_int_equal(it->type, JSON_OBJECT);
    assert_int_equal(it[1].type, JSON_STRING);
    assert_int_equal(it[1].n, 1);
    assert_memory_equal(it[1].u.str, "a", 1);
    it = rein_doc_next(it);
    assert_int_equal(it->type, JSON_STRING);
    assert_memory_equal(it->u.str, "s", 1);
    assert_ptr_equal(rein_doc_next(it), rein_doc_next(root));
    rein_doc_free(doc);
    /* A text that does not parse: rein_json_parse's error. */
    assert_null(rein_doc_parse(broken, strlen(broken), &err));
    assert_int_equal(err.code, REIN_EPARSE);
    assert_int_equal(err.line, 1);
}

/* A short text's first nodes live in the document's own allocation: texts around that limit
 * (2 KB), with more nodes than the first guess (dense arrays move to their own array while
 * parsing) or fewer, blank-heavy, declined (a duplicate key) or broken, read as the tree. */
static void test_doc_outgrows_its_own_room(void **state)
{
    struct rein_buf b;

    (void)state;
    rein_buf_init(&b, 0);
    for (size_t want = 1; want < 2200; want += want < 1990 ? 37 : 1) {
        for (int shape = 0; shape < 4; shape++) {
            rein_buf_reset(&b);
            assert_rein_ok(rein_buf_adds(&b, shape == 3 ? "{\"k\": [" : "["), NULL);
            for (size_t i = 0; b.len + 8 < want; i++)
                assert_rein_ok(rein_buf_adds(&b, i == 0       ? "1"
                                                 : shape == 1 ? " ,\t\n 1"
                                                 : shape == 2 ? ",\"s\\n\""
                                                              : ",1"),
                               NULL);
            assert_rein_ok(rein_buf_adds(&b, shape == 3 ? "], \"k\": 0}" : "]"), NULL);
            assert_int_equal(expect_doc_as_tree(b.ptr, b.len), shape != 3);
            /* cut short: an error, whichever room the nodes were in */
            assert_false(expect_doc_as_tree(b.ptr, b.len - 1));
        }
    }
    rein_buf_release(&b);
}

static void test_log_level_parses(void **state)
{
    enum rein_log_level lvl = REIN_LOG_WARN;

    (void)state;
    assert_true(rein_log_level_parse("debug", &lvl));
    assert_int_equal(lvl, REIN_LOG_DEBUG);
    assert_true(rein_log_level_parse("ERROR", &lvl));
    assert_int_equal(lvl, REIN_LOG_ERROR);
    assert_false(rein_log_level_parse("loud", &lvl));
    assert_int_equal(lvl, REIN_LOG_ERROR);
    rein_log_set_level(REIN_LOG_INFO);
    assert_true(rein_log_enabled(REIN_LOG_INFO));
    assert_false(rein_log_enabled(REIN_LOG_DEBUG));
}

static int cleanups_run;
static char logged[1024];

static void capture_log(enum rein_log_level level, const char *where, const char *msg, void *ud)
{
    (void)level;
    (void)where;
    (void)ud;
    snprintf(logged, sizeof(logged), "%s", msg);
}

/* What a client sends (a method, a path) can neither forge a log line nor drive a terminal:
 * control bytes are written as \xNN. */
static void test_log_escapes_control_bytes(void **state)
{
    (void)state;
    rein_log_set_sink(capture_log, NULL);
    rein_log_set_level(REIN_LOG_INFO);
    rein_log(REIN_LOG_INFO, "t", "GET %s", "/a\x1b[31m\b\r\nfake line\x7f");
    assert_string_equal(logged, "GET /a\\x1b[31m\\x08\\x0d\\x0afake line\\x7f");
    rein_log_set_sink(NULL, NULL);
}

static void count_cleanup(void *data)
{
    (void)data;
    cleanups_run++;
}

/* rein_asprintf formats short texts once on the stack and longer ones a second time: every
 * length around the stack buffer's (256) comes out whole. */
static void test_asprintf_every_length(void **state)
{
    char want[1100];

    (void)state;
    for (size_t n = 0; n < sizeof(want) - 1; n++) {
        memset(want, 'x', n);
        want[n] = '\0';
        char *got = rein_asprintf("%s%d", want + (n ? 1 : 0), n ? 7 : 0);
        assert_non_null(got);
        assert_int_equal(strlen(got), n ? n : 1);
        if (n) {
            assert_memory_equal(got, want + 1, n - 1);
            assert_int_equal(got[n - 1], '7');
        }
        rein_free(got);
    }
}

static void test_arena_allocates_and_cleans_up(void **state)
{
    rein_arena *a = rein_arena_new(64);
    char *big;

    (void)state;
    assert_non_null(a);
    for (int i = 0; i < 100; i++)
        assert_non_null(rein_arena_printf(a, "item %d", i));
    big = rein_arena_alloc(a, 10000);
    assert_non_null(big);
    memset(big, 'x', 10000);
    assert_string_equal(rein_arena_strdup(a, "after big"), "after big");
    assert_rein_ok(rein_arena_on_free(a, count_cleanup, NULL), NULL);
    assert_true(((uintptr_t)rein_arena_alloc(a, 3) & 15) == 0);
    cleanups_run = 0;
    rein_arena_free(a);
    assert_int_equal(cleanups_run, 1);
}

static void jw_under_pressure(void *arg)
{
    struct rein_buf b;
    struct rein_jw w;
    json_t *v;

    (void)arg;
    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    v = json_pack("{s:s, s:[i,f,b]}", "name", "echo", "args", 1, 2.5, 1);
    if (v)
        rein_jw_json(&w, v);
    if (v && rein_jw_finish(&w) == REIN_OK)
        assert_non_null(strstr(b.ptr, "\"echo\""));
    json_decref(v);
    rein_buf_release(&b);
}

static void test_jw_survives_every_allocation_failure(void **state)
{
    (void)state;
    test_alloc_torture(jw_under_pressure, NULL);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_error_codes_have_names_and_texts),
    cmocka_unit_test(test_error_set_returns_code_and_formats),
    cmocka_unit_test(test_buf_grows_and_stays_terminated),
    cmocka_unit_test(test_buf_respects_max),
    cmocka_unit_test(test_buf_detach_hands_over_memory),
    cmocka_unit_test(test_jw_writes_nested_values),
    cmocka_unit_test(test_jw_integers_are_exact),
    cmocka_unit_test(test_jw_replaces_invalid_utf8),
    cmocka_unit_test(test_jw_fast_paths_match_byte_by_byte),
    cmocka_unit_test(test_json_copy_plain_only_plain),
    cmocka_unit_test(test_jw_reports_misuse_and_depth),
    cmocka_unit_test(test_jw_double_round_trips),
    cmocka_unit_test(test_double_text_is_shortest),
    cmocka_unit_test(test_dump_indent_uses_the_one_number_writer),
    cmocka_unit_test(test_json_locate_finds_members),
    cmocka_unit_test(test_utf8_prefix_and_suggestions),
    cmocka_unit_test(test_json_parse_reports_position),
    cmocka_unit_test(test_json_dump_keeps_key_order),
    cmocka_unit_test(test_json_written_form_matches_parse_and_write),
    cmocka_unit_test(test_jw_literal_key_matches_key),
    cmocka_unit_test(test_ids_are_well_formed_and_distinct),
    cmocka_unit_test(test_ids_differ_after_fork),
    cmocka_unit_test(test_id_digits_are_uniform),
    cmocka_unit_test(test_clock_is_monotonic_and_iso_formats),
    cmocka_unit_test(test_deadline_ts_is_ms_from_now),
    cmocka_unit_test(test_time_iso_matches_the_c_library),
    cmocka_unit_test(test_json_parse_agrees_with_jansson),
    cmocka_unit_test(test_doc_duplicates_and_skips),
    cmocka_unit_test(test_doc_outgrows_its_own_room),
    cmocka_unit_test(test_log_level_parses),
    cmocka_unit_test(test_log_escapes_control_bytes),
    cmocka_unit_test(test_arena_allocates_and_cleans_up),
    cmocka_unit_test(test_asprintf_every_length),
    cmocka_unit_test(test_jw_survives_every_allocation_failure),
    cmocka_unit_test(test_json_check_without_a_tree),
};

REIN_TEST_MAIN(tests)
