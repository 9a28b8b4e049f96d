/*
 * Unit tests for the OpenAI request parser's document path (src/gateway/openai.c, decision
 * 0060): the common shape of a body (a model, text messages, options, tools known to the
 * tools cache) is read without a jansson tree of the body, and every body, read that way or
 * handed to the general path, answers what the general path alone answers: the same refusal
 * with its parameter and message, or the same request (gateway_same.h, shared with
 * fuzz/gateway_request.c).
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
    };

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(bodies); i++) {
        if (!gw_paths_agree(bodies[i], strlen(bodies[i])))
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
    gw_req_ready(&r, at, n);
    assert_int_equal(rein__gw_openai_parse(&r, TEXT(body), &bad), REIN_OK);
    assert_null(r.doc);
    assert_string_equal(r.model, "gpt-test");
    assert_int_equal(rein_history_len(r.h), 2);
    assert_true(r.stream && r.include_usage);
    assert_int_equal(r.ntools, 0);
    rein__gw_req_release(&r);
    /* tools not known: only the tools' tree is kept */
    gw_req_ready(&r, NULL, 0);
    assert_int_equal(rein__gw_openai_parse(&r, TEXT(body), &bad), REIN_OK);
    assert_true(json_is_array(r.doc));
    assert_ptr_equal(r.doc, r.tools_json);
    assert_int_equal(r.ntools, 1);
    assert_string_equal(r.tools[0].name, "get_weather");
    assert_ptr_equal(r.tools_raw, at);
    rein__gw_req_release(&r);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_openai_bodies_read_alike),
    cmocka_unit_test(test_common_shape_needs_no_tree),
};

REIN_TEST_MAIN(tests)
