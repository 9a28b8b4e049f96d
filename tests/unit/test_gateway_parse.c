/*
 * Unit tests for the request parsers' document paths (src/gateway/openai.c and anthropic.c,
 * decisions 0060 and 0067): the common shape of a body (a model, text messages, options, tools
 * known to the tools cache) is read without a jansson tree of the body, and every body, read
 * that way or handed to the general path, answers what the general path alone answers: the
 * same refusal with its parameter and message, or the same request (gateway_same.h, shared
 * with fuzz/gateway_request.c).
 */
#include "test.h"

#include "gateway/gateway_int.h"

#include "../../fuzz/gateway_same.h"

#define TEXT(lit) (lit), sizeof(lit) - 1

#define TOOLS                                                                                      \
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"By "         \
    "city\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},"  \
    "\"required\":[\"city\"]}}}]"

static void test_openai_bodies_read_alike(void **state)
{
    static const char *const bodies[] = {
        /* the common shapes */
        "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":"
        "\"user\",\"content\":\"u\"}],\"tools\":" TOOLS "}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"u\"}],\"tools\":" TOOLS
        ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
        " {\n \"tools\" : " TOOLS " ,\"messages\":[{\"content\":\"c\\u00e9\\n\",\"role\":"
        "\"developer\"},{\"role\":\"tool\",\"tool_call_id\":\"id\",\"content\":\"r\"}],"
        "\"model\":\"m\"}",
        /* members the other readers take: options, passthrough, tool_choice, stop */
        "{\"model\":\"m\",\"user\":\"u\",\"seed\":1,\"logprobs\":false,\"temperature\":0.5,"
        "\"top_p\":1,\"max_tokens\":5,\"max_completion_tokens\":7,\"parallel_tool_calls\":false,"
        "\"stop\":\"END\",\"n\":1,\"x\":{\"y\":[1,2.5,null]},\"tool_choice\":\"required\","
        "\"messages\":[{\"role\":\"user\",\"content\":\"u\"}]}",
        "{\"model\":\"m\",\"stop\":[\"a\",\"b\"],\"tool_choice\":{\"type\":\"function\","
        "\"function\":{\"name\":\"get_weather\"}},\"tools\":" TOOLS ",\"messages\":[{\"role\":"
        "\"user\",\"content\":\"u\"}]}",
        /* messages read from their own tree */
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
        "\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},{\"role\":\"assistant\",\"content\":"
        "null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":"
        "\"get_weather\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"c1\","
        "\"content\":\"r\"},{\"role\":\"assistant\",\"content\":\"ok\",\"refusal\":\"no\","
        "\"reasoning_content\":\"hm\"}]}",
        /* NULs: a C string ends there on the general path, an id keeps them */
        "{\"model\":\"m\\u0000x\",\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000b\"},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c\\u0000d\",\"content\":\"r\"}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\\u0000\",\"content\":\"a\"}]}",
        "{\"model\":\"m\",\"mo\\u0000del\":1,\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],\"st\\u0000op\":1}",
        /* an escaped name is another member */
        "{\"m\\u006fdel\":\"m\",\"messages\":[{\"r\\u006fle\":\"user\",\"content\":\"a\"}]}",
        /* refusals */
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}",
        "{\"model\":\"m\",\n\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"x\":tru}",
        "[1]",
        "{}",
        "{\"model\":5,\"messages\":[]}",
        "{\"model\":\"m\",\"messages\":[]}",
        "{\"model\":\"m\",\"messages\":{}}",
        "{\"model\":\"m\",\"messages\":[5]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}",
        "{\"model\":\"m\",\"messages\":[{\"content\":\"x\"}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"tool_call_id\":1,\"content\":\"x\"}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}"
        "]}",
        "{\"model\":\"m\",\"model\":\"n\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"role\":\"user\",\"content\":\"x\"}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":{}}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{"
        "\"type\":"
        "\"custom\"}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":5}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":\"yes\"}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream_options\":{"
        "}"
        "}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":2}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"functions\":[]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":3}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stop\":[1]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":" TOOLS
        ",\"max_tokens\":0}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":" TOOLS
        ",\"tools\":[]}",
        /* what goes up as sent to an upstream of this wire (and is refused for another) */
        "{\"model\":\"m\",\"messages\":[{\"role\":\"developer\",\"content\":\"d\"},{\"role\":"
        "\"user\",\"name\":\"ann\",\"content\":\"x\"},{\"role\":\"user\",\"content\":[{\"type\":"
        "\"text\",\"text\":\"x\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"http://"
        "x\"}}]}]}",
    };

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(bodies); i++) {
        if (!gw_paths_agree(REIN_GATEWAY_OPENAI, bodies[i], strlen(bodies[i]), false) ||
            !gw_paths_agree(REIN_GATEWAY_OPENAI, bodies[i], strlen(bodies[i]), true))
            fail_msg("the paths differ on body %zu: %s", i, bodies[i]);
    }
}

/* The common shape takes the document path (no tree of the body is kept), and what it reads
 * is the request. */
static void test_common_shape_needs_no_tree(void **state)
{
    static const char body[] =
        "{\"model\":\"gpt-test\",\"messages\":[{\"role\":\"system\",\"content\":\"s\"},"
        "{\"role\":\"user\",\"content\":\"u\"}],\"tools\":" TOOLS
        ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
    const char *at;
    size_t n;
    struct rein__gw_req r;
    struct rein__gw_bad bad;

    (void)state;
    assert_true(rein__gw_raw_member(TEXT(body), "tools", &at, &n));
    /* tools known: nothing of the body is kept as a tree */
    gw_req_ready(&r, REIN_GATEWAY_OPENAI, at, n, false);
    assert_int_equal(rein__gw_openai_parse(&r, TEXT(body), &bad), REIN_OK);
    assert_null(r.doc);
    assert_string_equal(r.model, "gpt-test");
    assert_int_equal(rein_history_len(r.h), 2);
    assert_true(r.stream && r.include_usage);
    assert_int_equal(r.ntools, 0);
    rein__gw_req_release(&r);
    /* tools not known: only the tools' tree is kept */
    gw_req_ready(&r, REIN_GATEWAY_OPENAI, NULL, 0, false);
    assert_int_equal(rein__gw_openai_parse(&r, TEXT(body), &bad), REIN_OK);
    assert_true(json_is_array(r.doc));
    assert_ptr_equal(r.doc, r.tools_json);
    assert_int_equal(r.ntools, 1);
    assert_string_equal(r.tools[0].name, "get_weather");
    assert_ptr_equal(r.tools_raw, at);
    rein__gw_req_release(&r);
}

#define ATOOLS                                                                                     \
    "[{\"name\":\"get_weather\",\"description\":\"By city\",\"input_schema\":{\"type\":"           \
    "\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}]"
#define AUSER "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]"

static void test_anthropic_bodies_read_alike(void **state)
{
    static const char *const bodies[] = {
        /* the common shapes */
        "{\"model\":\"m\",\"max_tokens\":64,\"system\":\"s\"," AUSER ",\"tools\":" ATOOLS "}",
        "{\"model\":\"m\",\"max_tokens\":64,\"stream\":true,\"messages\":[{\"role\":\"user\","
        "\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\","
        "\"cache_control\":{\"type\":\"ephemeral\"}}]}],\"tools\":" ATOOLS "}",
        " {\n \"tools\" : " ATOOLS " ,\"messages\":[{\"content\":\"c\\u00e9\\n\",\"role\":"
        "\"user\"}],\"max_tokens\":1,\"model\":\"m\",\"system\":null}",
        /* empty texts: no message from blocks, an empty one from a string */
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":[{"
        "\"type\":\"text\",\"text\":\"\"}]},{\"role\":\"user\",\"content\":\"\"},{\"role\":"
        "\"user\",\"content\":[]}]}",
        /* members the other readers take: options, passthrough, tool_choice, stop */
        "{\"model\":\"m\",\"max_tokens\":5,\"temperature\":0.5,\"top_p\":1,\"stop_sequences\":"
        "[\"END\"],\"metadata\":{\"user_id\":\"u\"},\"x\":{\"y\":[1,2.5,null]},\"tool_choice\":{"
        "\"type\":\"any\",\"disable_parallel_tool_use\":true}," AUSER ",\"tools\":" ATOOLS "}",
        "{\"model\":\"m\",\"max_tokens\":5,\"service_tier\":\"auto\",\"tool_choice\":{\"type\":"
        "\"tool\",\"name\":\"get_weather\"}," AUSER "}",
        /* a system of blocks, messages read from their own tree */
        "{\"model\":\"m\",\"max_tokens\":5,\"system\":[{\"type\":\"text\",\"text\":\"a\"},{"
        "\"type\":\"text\",\"text\":\"b\"}],\"messages\":[{\"role\":\"user\",\"content\":"
        "\"q\"},{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\","
        "\"signature\":\"s\"},{\"type\":\"text\",\"text\":\"ok\"},{\"type\":\"tool_use\",\"id\":"
        "\"t1\",\"name\":\"get_weather\",\"input\":{\"city\":\"P\"}}]},{\"role\":\"user\","
        "\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"r\"},{"
        "\"type\":\"text\",\"text\":\"and?\"}]},{\"role\":\"assistant\",\"content\":\"fine\"}]}",
        /* NULs: a C string ends there on the general path (blocks), a string content keeps them */
        "{\"model\":\"m\\u0000x\",\"max_tokens\":1,\"system\":\"s\\u0000t\",\"messages\":[{"
        "\"role\":\"user\",\"content\":\"a\\u0000b\"},{\"role\":\"user\",\"content\":[{\"type\":"
        "\"text\",\"text\":\"c\\u0000d\"},{\"type\":\"text\",\"text\":\"e\"}]}]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\\u0000\",\"content\":"
        "\"a\"}]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":[{"
        "\"type\":\"text\\u0000x\",\"text\":\"a\"}]}]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"mo\\u0000del\":1," AUSER "}",
        /* an escaped name is another member */
        "{\"m\\u006fdel\":\"m\",\"max_tokens\":1,\"messages\":[{\"r\\u006fle\":\"user\","
        "\"content\":\"a\"}]}",
        /* refusals */
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}",
        "[1]",
        "{}",
        "{\"model\":5,\"max_tokens\":1," AUSER "}",
        "{\"model\":\"m\"," AUSER "}",
        "{\"model\":\"m\",\"max_tokens\":0," AUSER "}",
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":{}}",
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[5]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"system\",\"content\":\"x\"}]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\"}]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":5}]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":[{"
        "\"type\":\"image\"}]}]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":[5]}]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":[{"
        "\"type\":\"text\",\"text\":5}]}]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"system\":5," AUSER "}",
        "{\"model\":\"m\",\"max_tokens\":1,\"system\":[{\"type\":\"image\"}]," AUSER "}",
        "{\"model\":\"m\",\"model\":\"n\",\"max_tokens\":1," AUSER "}",
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"role\":\"user\","
        "\"content\":\"x\"}]}",
        "{\"model\":\"m\",\"max_tokens\":1," AUSER ",\"tools\":{}}",
        "{\"model\":\"m\",\"max_tokens\":1," AUSER ",\"tools\":[{\"type\":\"bash_20250124\","
        "\"name\":\"bash\"}]}",
        "{\"model\":\"m\",\"max_tokens\":1," AUSER ",\"tool_choice\":{\"type\":\"maybe\"}}",
        "{\"model\":\"m\",\"max_tokens\":1," AUSER ",\"stream\":\"yes\"}",
        "{\"model\":\"m\",\"max_tokens\":1," AUSER ",\"temperature\":3}",
        "{\"model\":\"m\",\"max_tokens\":1," AUSER ",\"stop_sequences\":[1]}",
        "{\"model\":\"m\",\"max_tokens\":1," AUSER ",\"tools\":" ATOOLS ",\"tools\":[]}",
        /* what goes up as sent to an upstream of this wire (and is refused for another) */
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":[{"
        "\"type\":\"text\",\"text\":\"x\",\"cache_control\":{\"type\":\"ephemeral\"}},{\"type\":"
        "\"image\",\"source\":{\"type\":\"url\",\"url\":\"http://x\"}}]}]}",
        "{\"model\":\"m\",\"max_tokens\":1,\"system\":[{\"type\":\"text\",\"text\":\"s\","
        "\"cache_control\":{\"type\":\"ephemeral\"}}]," AUSER ",\"tools\":[{\"type\":"
        "\"web_search_20250305\",\"name\":\"web_search\"}]}",
    };

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(bodies); i++) {
        if (!gw_paths_agree(REIN_GATEWAY_ANTHROPIC, bodies[i], strlen(bodies[i]), false) ||
            !gw_paths_agree(REIN_GATEWAY_ANTHROPIC, bodies[i], strlen(bodies[i]), true))
            fail_msg("the paths differ on body %zu: %s", i, bodies[i]);
    }
}

/* The Anthropic body of the common shape takes the document path too. */
static void test_anthropic_common_shape_needs_no_tree(void **state)
{
    static const char body[] =
        "{\"model\":\"gpt-test\",\"max_tokens\":64,\"system\":\"s\",\"messages\":[{\"role\":"
        "\"user\",\"content\":[{\"type\":\"text\",\"text\":\"u\"}]}],\"tools\":" ATOOLS
        ",\"stream\":true}";
    const char *at;
    size_t n;
    struct rein__gw_req r;
    struct rein__gw_bad bad;

    (void)state;
    assert_true(rein__gw_raw_member(TEXT(body), "tools", &at, &n));
    gw_req_ready(&r, REIN_GATEWAY_ANTHROPIC, at, n, false);
    assert_int_equal(rein__gw_anthropic_parse(&r, TEXT(body), &bad), REIN_OK);
    assert_null(r.doc);
    assert_string_equal(r.model, "gpt-test");
    assert_int_equal(rein_history_len(r.h), 2);
    assert_string_equal(json_string_value(json_object_get(rein_history_get(r.h, 1), "content")),
                        "u");
    assert_true(r.stream);
    assert_int_equal(r.max_tokens, 64);
    rein__gw_req_release(&r);
    gw_req_ready(&r, REIN_GATEWAY_ANTHROPIC, NULL, 0, false);
    assert_int_equal(rein__gw_anthropic_parse(&r, TEXT(body), &bad), REIN_OK);
    assert_ptr_equal(r.doc, r.tools_json);
    assert_int_equal(r.ntools, 1);
    assert_ptr_equal(r.tools_raw, at);
    rein__gw_req_release(&r);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_openai_bodies_read_alike),
    cmocka_unit_test(test_common_shape_needs_no_tree),
    cmocka_unit_test(test_anthropic_bodies_read_alike),
    cmocka_unit_test(test_anthropic_common_shape_needs_no_tree),
};

REIN_TEST_MAIN(tests)
