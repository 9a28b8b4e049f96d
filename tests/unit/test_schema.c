/*
 * Unit tests for src/schema: the messages a model reads, default filling, dialects, the
 * registry, and every bad input the validator must survive (deep nesting built in code, huge
 * numbers, invalid UTF-8, $ref cycles, bad regexes, remote refs), plus allocation failure at
 * every step of compiling and validating.
 */
#include "test.h"

#include <dirent.h>
#include <pthread.h>

static json_t *parse(const char *text)
{
    rein_error err;
    json_t *v = rein_json_parse(text, strlen(text), 0, &err);

    if (!v)
        fail_msg("cannot parse %s: %s", text, err.msg);
    return v;
}

static rein_schema *compile_text(const char *text, const struct rein_schema_options *opts)
{
    rein_error err;
    json_t *s = parse(text);
    rein_schema *schema = rein_schema_compile(s, opts, &err);

    json_decref(s);
    if (!schema)
        fail_msg("cannot compile %s: %s", text, err.msg);
    return schema;
}

/* Validates instance text against schema text; returns the code and fills res. */
static rein_err check(const char *schema_text, const char *instance_text, rein_schema_result *res)
{
    rein_schema *schema = compile_text(schema_text, NULL);
    json_t *inst = parse(instance_text);
    rein_error err;
    rein_err rc = rein_schema_validate(schema, inst, 0, res, &err);

    json_decref(inst);
    rein_schema_free(schema);
    return rc;
}

/* Asserts exactly one error with this instance path and message. */
static void one_error(const char *schema_text, const char *instance_text, const char *ipath,
                      const char *message)
{
    rein_schema_result *res = rein_schema_result_new();

    assert_int_equal(check(schema_text, instance_text, res), REIN_EINVALID);
    if (rein_schema_result_count(res) != 1) {
        for (size_t i = 0; i < rein_schema_result_count(res); i++)
            print_message("error %zu: %s: %s\n", i, rein_schema_result_instance_path(res, i),
                          rein_schema_result_message(res, i));
    }
    assert_int_equal(rein_schema_result_count(res), 1);
    assert_string_equal(rein_schema_result_instance_path(res, 0), ipath);
    assert_string_equal(rein_schema_result_message(res, 0), message);
    rein_schema_result_free(res);
}

static void test_message_type_names_expected_and_received(void **state)
{
    rein_schema_result *res = rein_schema_result_new();

    (void)state;
    assert_int_equal(
        check("{\"type\":\"object\",\"properties\":{\"limit\":{\"type\":\"integer\"}}}",
              "{\"limit\":\"20\"}", res),
        REIN_EINVALID);
    assert_int_equal(rein_schema_result_count(res), 1);
    assert_string_equal(rein_schema_result_instance_path(res, 0), "/limit");
    assert_string_equal(rein_schema_result_keyword_path(res, 0), "/properties/limit/type");
    assert_string_equal(rein_schema_result_keyword(res, 0), "type");
    assert_string_equal(rein_schema_result_message(res, 0), "must be integer, got string \"20\"");
    assert_null(rein_schema_result_property(res, 0));
    rein_schema_result_free(res);
    one_error("{\"type\":[\"string\",\"null\"]}", "1.5", "",
              "must be string or null, got number 1.5");
    one_error("{\"type\":\"number\"}", "true", "", "must be number, got boolean true");
}

static void test_message_required_names_the_property(void **state)
{
    rein_schema_result *res = rein_schema_result_new();

    (void)state;
    assert_int_equal(
        check("{\"type\":\"object\",\"required\":[\"query\"],\"properties\":{\"query\":"
              "{\"type\":\"string\"}}}",
              "{}", res),
        REIN_EINVALID);
    assert_int_equal(rein_schema_result_count(res), 1);
    assert_string_equal(rein_schema_result_instance_path(res, 0), "");
    assert_string_equal(rein_schema_result_keyword(res, 0), "required");
    assert_string_equal(rein_schema_result_property(res, 0), "query");
    assert_string_equal(rein_schema_result_message(res, 0),
                        "required property \"query\" is missing");
    rein_schema_result_free(res);
}

static void test_message_each_keyword(void **state)
{
    (void)state;
    one_error("{\"minimum\":1}", "0", "", "must be at least 1, got 0");
    one_error("{\"maximum\":2.5}", "3", "", "must be at most 2.5, got 3");
    one_error("{\"exclusiveMinimum\":0}", "0", "", "must be greater than 0, got 0");
    one_error("{\"multipleOf\":3}", "5", "", "must be a multiple of 3, got 5");
    one_error("{\"pattern\":\"^[a-z]+$\"}", "\"ABC\"", "",
              "must match pattern \"^[a-z]+$\", got \"ABC\"");
    one_error("{\"enum\":[\"json\",\"logfmt\"]}", "\"xml\"", "",
              "must be one of \"json\", \"logfmt\", got \"xml\"");
    one_error("{\"const\":\"x\"}", "\"y\"", "", "must be \"x\", got \"y\"");
    one_error("{\"properties\":{\"a\":true},\"additionalProperties\":false}",
              "{\"a\":1,\"colour\":2}", "", "additional property \"colour\" is not allowed");
    one_error("{\"maxItems\":3}", "[1,2,3,4,5]", "", "must have at most 3 items, got 5");
    one_error("{\"minItems\":1}", "[]", "", "must have at least 1 item, got 0");
    one_error("{\"minLength\":2}", "\"é\"", "", "must be at least 2 characters long, got 1");
    one_error("{\"maxProperties\":1}", "{\"a\":1,\"b\":2}", "",
              "must have at most 1 property, got 2");
    one_error("{\"uniqueItems\":true}", "[1,2,1]", "",
              "must not contain duplicate items, got items 0 and 2 equal");
    one_error("{\"items\":{\"type\":\"string\"}}", "[\"a\",7]", "/1",
              "must be string, got integer 7");
    one_error("{\"dependentRequired\":{\"a\":[\"b\"]}}", "{\"a\":1}", "",
              "property \"b\" is required when \"a\" is present");
    one_error("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}", "5", "",
              "must be string or null, got integer 5");
    one_error("{\"not\":{\"type\":\"string\"}}", "\"s\"", "",
              "must not match the schema in \"not\", got string \"s\"");
    one_error("{\"propertyNames\":{\"maxLength\":3}}", "{\"abcd\":1}", "",
              "property name \"abcd\": must be at most 3 characters long, got 4");
    one_error("{\"properties\":{\"a/b\":{\"type\":\"string\"}}}", "{\"a/b\":1}", "/a~1b",
              "must be string, got integer 1");
}

static void test_message_branch_of_matching_type(void **state)
{
    (void)state;
    /* Only one branch takes objects: its own error is the useful one. */
    one_error("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"object\",\"required\":[\"q\"]}]}",
              "{}", "", "required property \"q\" is missing");
    one_error("{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", "3", "",
              "must match exactly one of the 2 schemas in oneOf, but matches schemas 0 and 1");
}

static void test_message_truncates_long_strings(void **state)
{
    char text[400];
    rein_schema_result *res = rein_schema_result_new();
    const char *msg;

    (void)state;
    text[0] = '"';
    memset(text + 1, 'a', 300);
    text[301] = '"';
    text[302] = '\0';
    assert_int_equal(check("{\"type\":\"integer\"}", text, res), REIN_EINVALID);
    msg = rein_schema_result_message(res, 0);
    assert_non_null(strstr(msg, "…\" (300 characters)"));
    assert_true(strlen(msg) < 120);
    rein_schema_result_free(res);
}

static void test_first_error_flag_stops_early(void **state)
{
    rein_schema *s = compile_text("{\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":"
                                  "\"string\"}}}",
                                  NULL);
    json_t *inst = parse("{\"a\":1,\"b\":2}");
    rein_schema_result *res = rein_schema_result_new();

    (void)state;
    assert_int_equal(rein_schema_validate(s, inst, 0, res, NULL), REIN_EINVALID);
    assert_int_equal(rein_schema_result_count(res), 2);
    assert_int_equal(rein_schema_validate(s, inst, REIN_SCHEMA_FIRST_ERROR, res, NULL),
                     REIN_EINVALID);
    assert_int_equal(rein_schema_result_count(res), 1);
    /* Without a result the verdict is the same. */
    assert_int_equal(rein_schema_validate(s, inst, 0, NULL, NULL), REIN_EINVALID);
    json_decref(inst);
    rein_schema_result_free(res);
    rein_schema_free(s);
}

static void test_fill_defaults(void **state)
{
    rein_schema *s = compile_text(
        "{\"type\":\"object\",\"properties\":{\"limit\":{\"type\":\"integer\",\"default\":20},"
        "\"format\":{\"$ref\":\"#/$defs/fmt\"},\"opts\":{\"type\":\"object\",\"default\":{},"
        "\"properties\":{\"deep\":{\"default\":true}}},\"query\":{\"type\":\"string\"}},"
        "\"required\":[\"query\"],\"$defs\":{\"fmt\":{\"enum\":[\"json\",\"text\"],\"default\":"
        "\"json\"}}}",
        NULL);
    json_t *inst = parse("{\"query\":\"x\",\"limit\":5}");
    json_t *bad = parse("{\"limit\":5}");
    char *out;

    (void)state;
    assert_rein_ok(rein_schema_validate(s, inst, REIN_SCHEMA_FILL_DEFAULTS, NULL, NULL), NULL);
    out = rein_json_dumps(inst);
    assert_string_equal(out, "{\"query\":\"x\",\"limit\":5,\"format\":\"json\",\"opts\":{\"deep\":"
                             "true}}");
    rein_free(out);
    /* An invalid instance is left as it was. */
    assert_int_equal(rein_schema_validate(s, bad, REIN_SCHEMA_FILL_DEFAULTS, NULL, NULL),
                     REIN_EINVALID);
    assert_int_equal(json_object_size(bad), 1);
    json_decref(inst);
    json_decref(bad);
    rein_schema_free(s);
}

static void test_dialects(void **state)
{
    struct rein_schema_options o = {0};
    rein_schema *s;
    json_t *inst = parse("[1,\"x\"]");

    (void)state;
    s = compile_text(
        "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"items\":[{\"type\":"
        "\"integer\"}],\"additionalItems\":false}",
        NULL);
    assert_int_equal(rein_schema_dialect_of(s), REIN_SCHEMA_DIALECT_DRAFT7);
    assert_int_equal(rein_schema_validate(s, inst, 0, NULL, NULL), REIN_EINVALID);
    rein_schema_free(s);
    o.dialect = REIN_SCHEMA_DIALECT_DRAFT7;
    s = compile_text("{\"definitions\":{\"i\":{\"type\":\"integer\"}},\"items\":[{\"$ref\":"
                     "\"#/definitions/i\"}]}",
                     &o);
    assert_int_equal(rein_schema_dialect_of(s), REIN_SCHEMA_DIALECT_DRAFT7);
    assert_rein_ok(rein_schema_validate(s, inst, 0, NULL, NULL), NULL);
    rein_schema_free(s);
    /* draft-04 reads as draft-07, its boolean exclusiveMinimum included. */
    s = compile_text("{\"$schema\":\"http://json-schema.org/draft-04/schema#\",\"minimum\":1,"
                     "\"exclusiveMinimum\":true}",
                     NULL);
    json_t *one = parse("1");
    assert_int_equal(rein_schema_validate(s, one, 0, NULL, NULL), REIN_EINVALID);
    json_decref(one);
    rein_schema_free(s);
    s = compile_text("{\"prefixItems\":[{\"type\":\"integer\"}],\"items\":false}", NULL);
    assert_int_equal(rein_schema_dialect_of(s), REIN_SCHEMA_DIALECT_2020_12);
    assert_int_equal(rein_schema_validate(s, inst, 0, NULL, NULL), REIN_EINVALID);
    rein_schema_free(s);
    json_decref(inst);
}

static void expect_compile_error(const char *text, int code, const char *needle)
{
    json_t *s = parse(text);
    rein_error err;
    rein_schema *schema = rein_schema_compile(s, NULL, &err);

    json_decref(s);
    assert_null(schema);
    assert_int_equal(err.code, code);
    if (!strstr(err.msg, needle))
        fail_msg("message \"%s\" does not contain \"%s\"", err.msg, needle);
}

static void test_bad_schema_names_the_keyword(void **state)
{
    (void)state;
    expect_compile_error("{\"properties\":{\"x\":{\"pattern\":\"([a-z\"}}}", REIN_ESCHEMA,
                         "/properties/x/pattern: invalid regular expression");
    expect_compile_error("{\"properties\":{\"limit\":{\"minimum\":\"1\"}}}", REIN_ESCHEMA,
                         "/properties/limit/minimum: must be a number, got string");
    expect_compile_error("{\"type\":\"dict\"}", REIN_ESCHEMA, "/type: unknown type \"dict\"");
    expect_compile_error("{\"required\":\"a\"}", REIN_ESCHEMA, "/required: must be an array");
    expect_compile_error("{\"minLength\":-1}", REIN_ESCHEMA, "/minLength: must be a non-negative");
    expect_compile_error("{\"allOf\":[]}", REIN_ESCHEMA, "/allOf: must be a non-empty array");
    expect_compile_error("{\"items\":{\"not\":3}}", REIN_ESCHEMA,
                         "/items/not: a schema must be an object or a boolean");
    expect_compile_error("{\"patternProperties\":{\"(?>x)\":true}}", REIN_ESCHEMA,
                         "/patternProperties/(?>x): invalid regular expression");
    expect_compile_error("{\"$ref\":\"#/$defs/missing\"}", REIN_ENOTFOUND, "points at nothing");
}

static void test_remote_ref_needs_registration(void **state)
{
    const char *text = "{\"properties\":{\"a\":{\"$ref\":\"http://example.com/int.json\"}}}";
    rein_schema_registry *reg = rein_schema_registry_new();
    json_t *doc = parse("{\"type\":\"integer\"}");
    struct rein_schema_options o = {0};
    json_t *inst = parse("{\"a\":\"no\"}");
    rein_error err;
    rein_schema *s;

    (void)state;
    expect_compile_error(text, REIN_ENOTFOUND, "remote documents are not fetched");
    assert_rein_ok(rein_schema_registry_add(reg, "http://example.com/int.json", doc, &err), &err);
    assert_int_equal(rein_schema_registry_add(reg, "http://example.com/int.json", doc, &err),
                     REIN_EEXIST);
    o.registry = reg;
    s = compile_text(text, &o);
    assert_int_equal(rein_schema_validate(s, inst, 0, NULL, NULL), REIN_EINVALID);
    rein_schema_free(s);
    /* The embedded metaschemas need no registration. */
    s = compile_text("{\"$ref\":\"https://json-schema.org/draft/2020-12/schema\"}", NULL);
    assert_int_equal(rein_schema_validate(s, doc, 0, NULL, NULL), REIN_OK);
    assert_int_equal(rein_schema_validate(s, inst, 0, NULL, NULL), REIN_OK);
    json_t *bad = parse("{\"minimum\":\"x\"}");
    assert_int_equal(rein_schema_validate(s, bad, 0, NULL, NULL), REIN_EINVALID);
    json_decref(bad);
    rein_schema_free(s);
    json_decref(inst);
    json_decref(doc);
    rein_schema_registry_free(reg);
}

static void test_ref_cycle_is_an_error_not_a_loop(void **state)
{
    json_t *inst = parse("{\"a\":[1]}");
    rein_error err;
    rein_schema *s;

    (void)state;
    /* Cycles through $ref and allOf alone are found when compiling. */
    expect_compile_error("{\"$ref\":\"#\"}", REIN_ESCHEMA, "reference cycle");
    expect_compile_error("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"allOf\":[{\"$ref\":"
                         "\"#/$defs/a\"}]}},\"$ref\":\"#/$defs/a\"}",
                         REIN_ESCHEMA, "reference cycle");
    /* Through a conditional applicator it is caught while validating, without looping. */
    s = compile_text("{\"anyOf\":[{\"$ref\":\"#\"}]}", NULL);
    rein_schema_result *res = rein_schema_result_new();
    assert_int_equal(rein_schema_validate(s, inst, 0, res, &err), REIN_ESCHEMA);
    assert_non_null(strstr(err.msg, "reference cycle"));
    rein_schema_result_free(res);
    rein_schema_free(s);
    s = compile_text("{\"if\":{\"type\":\"object\"},\"then\":{\"$ref\":\"#\"}}", NULL);
    assert_int_equal(rein_schema_validate(s, inst, 0, NULL, &err), REIN_ESCHEMA);
    json_t *num = parse("1");
    assert_rein_ok(rein_schema_validate(s, num, 0, NULL, &err), &err);
    json_decref(num);
    rein_schema_free(s);
    /* Recursion that consumes the instance is fine. */
    s = compile_text("{\"type\":\"object\",\"properties\":{\"child\":{\"$ref\":\"#\"}}}", NULL);
    json_t *tree = parse("{\"child\":{\"child\":{\"child\":{}}}}");
    assert_rein_ok(rein_schema_validate(s, tree, 0, NULL, &err), &err);
    json_decref(tree);
    rein_schema_free(s);
    json_decref(inst);
}

static void test_unique_items_long_arrays(void **state)
{
    rein_schema *s = compile_text("{\"uniqueItems\":true}", NULL);
    json_t *arr = json_array();
    rein_schema_result *res = rein_schema_result_new();

    (void)state;
    for (int i = 0; i < 5000; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "k", json_integer(i));
        json_object_set_new(o, "s", json_string(i % 2 ? "odd" : "even"));
        json_array_append_new(arr, o);
    }
    assert_rein_ok(rein_schema_validate(s, arr, 0, res, NULL), NULL);
    /* 1.0 equals 1, and member order does not matter. */
    json_t *dup = parse("{\"s\":\"odd\",\"k\":4001.0}");
    json_array_append_new(arr, dup);
    assert_int_equal(rein_schema_validate(s, arr, 0, res, NULL), REIN_EINVALID);
    assert_string_equal(rein_schema_result_message(res, 0),
                        "must not contain duplicate items, got items 4001 and 5000 equal");
    json_decref(arr);
    rein_schema_result_free(res);
    rein_schema_free(s);
}

/* Frees a chain of nested arrays without jansson's recursion. */
static void free_chain(json_t **levels, size_t n)
{
    for (size_t k = n - 1; k-- > 0;)
        json_array_clear(levels[k]);
    json_decref(levels[0]);
}

static json_t **deep_chain(size_t n)
{
    json_t **levels = malloc(n * sizeof(*levels));

    assert_non_null(levels);
    levels[0] = json_array();
    for (size_t i = 1; i < n; i++) {
        levels[i] = json_array();
        assert_int_equal(json_array_append_new(levels[i - 1], levels[i]), 0);
    }
    return levels;
}

static void test_deep_instance_built_in_code(void **state)
{
    const size_t depth = 100000;
    json_t **levels = deep_chain(depth);
    json_t **other = deep_chain(depth);
    rein_schema *s;
    rein_error err;

    (void)state;
    s = compile_text("{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}}", NULL);
    assert_int_equal(rein_schema_validate(s, levels[0], 0, NULL, &err), REIN_EDEPTH);
    rein_schema_free(s);
    /* Equality (enum, const, uniqueItems) is depth-limited too. */
    s = compile_text("{\"uniqueItems\":true}", NULL);
    json_t *pair = json_array();
    json_array_append(pair, levels[0]);
    json_array_append(pair, other[0]);
    assert_int_equal(rein_schema_validate(s, pair, 0, NULL, &err), REIN_EDEPTH);
    json_decref(pair);
    rein_schema_free(s);
    /* A schema that does not descend does not care. */
    s = compile_text("{\"type\":\"array\",\"minItems\":1}", NULL);
    assert_rein_ok(rein_schema_validate(s, levels[0], 0, NULL, &err), &err);
    rein_schema_free(s);
    free_chain(levels, depth);
    free_chain(other, depth);
    free(levels);
    free(other);
}

static void test_deep_schema_built_in_code(void **state)
{
    const size_t depth = 100000;
    json_t *root = json_object();
    json_t *cur = root;
    json_t **levels = malloc(depth * sizeof(*levels));
    rein_error err;

    (void)state;
    for (size_t i = 0; i < depth; i++) {
        json_t *next = json_object();
        levels[i] = cur;
        json_object_set_new(cur, "items", next);
        cur = next;
    }
    assert_null(rein_schema_compile(root, NULL, &err));
    assert_int_equal(err.code, REIN_EDEPTH);
    for (size_t k = depth; k-- > 0;)
        json_object_clear(levels[k]);
    json_decref(root);
    free(levels);
}

static void test_huge_numbers(void **state)
{
    rein_error err;
    rein_schema *s;
    json_t *inst;

    (void)state;
    /* jansson refuses numbers beyond double range or 64-bit integers: a parse error. */
    assert_null(rein_json_parse("{\"n\":1e400}", 11, 0, &err));
    assert_int_equal(err.code, REIN_EPARSE);
    assert_null(rein_json_parse("123456789012345678901234567890", 30, 0, &err));
    /* Large values that do parse are compared exactly. */
    s = compile_text("{\"maximum\":9223372036854775807,\"minimum\":-1e308}", NULL);
    inst = parse("9223372036854775807");
    assert_rein_ok(rein_schema_validate(s, inst, 0, NULL, &err), &err);
    json_decref(inst);
    inst = parse("9.3e18");
    assert_int_equal(rein_schema_validate(s, inst, 0, NULL, &err), REIN_EINVALID);
    json_decref(inst);
    rein_schema_free(s);
    s = compile_text("{\"multipleOf\":0.5}", NULL);
    inst = parse("1e308");
    assert_rein_ok(rein_schema_validate(s, inst, 0, NULL, &err), &err);
    json_decref(inst);
    rein_schema_free(s);
}

static void test_invalid_utf8(void **state)
{
    char *dir = test_tmpdir();
    char *path = test_write_file(dir, "bad.json", "{\"pattern\":\"\xff\xfe\"}");
    rein_error err;
    rein_schema *s;
    json_t *inst;

    (void)state;
    assert_null(rein_json_load_file(path, &err));
    assert_int_equal(err.code, REIN_EPARSE);
    /* A string built in code with invalid UTF-8 gives an error, not a crash. */
    s = compile_text("{\"pattern\":\"^a\",\"minLength\":1}", NULL);
    inst = json_stringn_nocheck("a\xff", 2);
    rein_err rc = rein_schema_validate(s, inst, 0, NULL, &err);
    assert_true(rc == REIN_EINVAL || rc == REIN_EINVALID);
    json_decref(inst);
    rein_schema_free(s);
    free(path);
    test_rmtree(dir);
    free(dir);
}

static void test_catastrophic_regex_does_not_hang(void **state)
{
    rein_schema *s = compile_text("{\"pattern\":\"^(a+)+$\"}", NULL);
    char text[64];
    json_t *inst;
    rein_error err;
    int64_t t0 = rein_now_ms();

    (void)state;
    memset(text, 'a', 40);
    text[40] = '!';
    text[41] = '\0';
    inst = json_string(text);
    rein_err rc = rein_schema_validate(s, inst, 0, NULL, &err);
    assert_true(rc == REIN_EINVALID || rc == REIN_ETOOBIG);
    assert_true(rein_now_ms() - t0 < 20000);
    json_decref(inst);
    rein_schema_free(s);
}

static void test_ecma_regex_semantics(void **state)
{
    rein_schema_result *res = rein_schema_result_new();

    (void)state;
    /* \s is ECMA's Unicode white space, \d stays ASCII, $ does not match before "\n". */
    assert_int_equal(check("{\"pattern\":\"^\\\\s$\"}", "\"\\u00a0\"", res), REIN_OK);
    assert_int_equal(check("{\"pattern\":\"^\\\\d$\"}", "\"\\u0969\"", res), REIN_EINVALID);
    assert_int_equal(check("{\"pattern\":\"^abc$\"}", "\"abc\\n\"", res), REIN_EINVALID);
    assert_int_equal(check("{\"pattern\":\"^\\\\p{Letter}+$\"}", "\"élan\"", res), REIN_OK);
    assert_int_equal(check("{\"pattern\":\"^🐲*$\"}", "\"🐲🐲\"", res), REIN_OK);
    rein_schema_result_free(res);
}

static void test_format_annotation_and_assertion(void **state)
{
    struct rein_schema_options o = {0};
    const char *text = "{\"format\":\"date-time\"}";
    json_t *bad = parse("\"2024-13-01T00:00:00Z\"");
    json_t *good = parse("\"2024-02-29T23:59:60Z\"");
    rein_schema *s = compile_text(text, NULL);
    rein_schema_result *res = rein_schema_result_new();

    (void)state;
    assert_rein_ok(rein_schema_validate(s, bad, 0, NULL, NULL), NULL);
    rein_schema_free(s);
    o.format_assert = true;
    s = compile_text(text, &o);
    assert_int_equal(rein_schema_validate(s, bad, 0, res, NULL), REIN_EINVALID);
    assert_string_equal(rein_schema_result_message(res, 0),
                        "must be a valid date-time, got \"2024-13-01T00:00:00Z\"");
    assert_rein_ok(rein_schema_validate(s, good, 0, NULL, NULL), NULL);
    rein_schema_free(s);
    rein_schema_result_free(res);
    json_decref(bad);
    json_decref(good);
}

struct shared_schema {
    rein_schema *schema;
    int failures;
};

static void *validate_many(void *arg)
{
    struct shared_schema *sh = arg;
    rein_schema_result *res = rein_schema_result_new();
    json_t *good = json_pack("{s:s, s:i}", "query", "abc", "limit", 3);
    json_t *bad = json_pack("{s:s, s:s}", "query", "ABC", "limit", "3");

    for (int i = 0; i < 2000; i++) {
        if (rein_schema_validate(sh->schema, good, 0, res, NULL) != REIN_OK ||
            rein_schema_validate(sh->schema, bad, 0, res, NULL) != REIN_EINVALID ||
            rein_schema_result_count(res) != 2)
            __atomic_add_fetch(&sh->failures, 1, __ATOMIC_RELAXED);
    }
    json_decref(good);
    json_decref(bad);
    rein_schema_result_free(res);
    return NULL;
}

static void test_one_schema_many_threads(void **state)
{
    struct shared_schema sh = {0};
    pthread_t threads[4];

    (void)state;
    sh.schema = compile_text("{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\","
                             "\"pattern\":\"^[a-z]+$\"},\"limit\":{\"type\":\"integer\"}}}",
                             NULL);
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, validate_many, &sh), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    assert_int_equal(sh.failures, 0);
    rein_schema_free(sh.schema);
}

static void compile_and_validate(void *arg)
{
    static const char *schema_text =
        "{\"$defs\":{\"n\":{\"type\":\"integer\",\"minimum\":1,\"default\":3}},\"type\":\"object\","
        "\"properties\":{\"q\":{\"type\":\"string\",\"pattern\":\"^[a-z]+$\"},\"n\":{\"$ref\":"
        "\"#/$defs/n\"},\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\"]},"
        "\"uniqueItems\":true}},\"required\":[\"q\",\"z\"],\"propertyNames\":{\"maxLength\":4},"
        "\"unevaluatedProperties\":false}";
    rein_error err;
    json_t *s = rein_json_parse(schema_text, strlen(schema_text), 0, &err);
    json_t *bad = rein_json_parse("{\"q\":\"A\",\"n\":0,\"tags\":[\"c\",\"a\",\"a\"],\"extra\":1}",
                                  52, 0, &err);
    json_t *good = rein_json_parse("{\"q\":\"a\",\"z\":1}", 15, 0, &err);
    rein_schema *schema = NULL;
    rein_schema_result *res = NULL;

    (void)arg;
    if (!s || !bad || !good)
        goto out;
    schema = rein_schema_compile(s, NULL, &err);
    res = rein_schema_result_new();
    if (!schema || !res)
        goto out;
    if (rein_schema_validate(schema, bad, 0, res, &err) == REIN_OK)
        fail_msg("the bad instance passed");
    if (rein_schema_validate(schema, good, REIN_SCHEMA_FILL_DEFAULTS, res, &err) == REIN_EINVALID)
        fail_msg("the good instance failed");
out:
    rein_schema_result_free(res);
    rein_schema_free(schema);
    json_decref(s);
    json_decref(bad);
    json_decref(good);
}

/* A registry, a remote $ref, the embedded metaschema and a long uniqueItems array. */
static void registry_and_refs(void *arg)
{
    rein_error err;
    rein_schema_registry *reg = rein_schema_registry_new();
    json_t *remote = json_pack("{s:s, s:{s:{s:s}}}", "$id", "http://example.com/r.json", "$defs",
                               "n", "type", "integer");
    json_t *schema_doc = json_pack("{s:{s:{s:s}, s:{s:s}}, s:b, s:{s:s}}", "properties", "a",
                                   "$ref", "http://example.com/r.json#/$defs/n", "m", "$ref",
                                   "https://json-schema.org/draft/2020-12/schema", "uniqueItems", 1,
                                   "items", "format", "regex");
    json_t *inst = json_array();
    struct rein_schema_options o = {0};
    rein_schema *s = NULL;
    rein_schema_result *res = rein_schema_result_new();

    (void)arg;
    for (int i = 0; inst && i < 40; i++)
        json_array_append_new(inst, json_integer(i % 39));
    /* An append that failed leaves no duplicate to find: nothing to check then. */
    if (!reg || !remote || !schema_doc || json_array_size(inst) != 40 || !res)
        goto out;
    if (rein_schema_registry_add(reg, "http://example.com/r.json", remote, &err))
        goto out;
    o.registry = reg;
    o.format_assert = true;
    s = rein_schema_compile(schema_doc, &o, &err);
    if (s && rein_schema_validate(s, inst, 0, res, &err) == REIN_OK)
        fail_msg("duplicates not found");
out:
    rein_schema_free(s);
    rein_schema_result_free(res);
    rein_schema_registry_free(reg);
    json_decref(remote);
    json_decref(schema_doc);
    json_decref(inst);
}

static void test_allocation_failures(void **state)
{
    (void)state;
    test_alloc_torture(compile_and_validate, NULL);
    test_alloc_torture(registry_and_refs, NULL);
}

/* One case: the lines `rein schema check` would print for schema.json and instance.json. */
static char *case_output(const char *dir)
{
    char path[4096];
    rein_error err;
    json_t *schema_doc, *inst;
    rein_schema *schema;
    rein_schema_result *res = rein_schema_result_new();
    struct rein_buf out;

    snprintf(path, sizeof(path), "%s/schema.json", dir);
    schema_doc = rein_json_load_file(path, &err);
    snprintf(path, sizeof(path), "%s/instance.json", dir);
    inst = rein_json_load_file(path, &err);
    assert_non_null(schema_doc);
    assert_non_null(inst);
    schema = rein_schema_compile(schema_doc, NULL, &err);
    if (!schema)
        fail_msg("%s: %s", dir, err.msg);
    rein_buf_init(&out, 0);
    if (rein_schema_validate(schema, inst, 0, res, &err) == REIN_OK)
        assert_rein_ok(rein_buf_adds(&out, "valid\n"), NULL);
    for (size_t i = 0; i < rein_schema_result_count(res); i++) {
        const char *ip = rein_schema_result_instance_path(res, i);
        assert_rein_ok(
            rein_buf_addf(&out, "%s: %s\n", ip[0] ? ip : "/", rein_schema_result_message(res, i)),
            NULL);
    }
    rein_schema_result_free(res);
    rein_schema_free(schema);
    json_decref(schema_doc);
    json_decref(inst);
    return rein_buf_detach(&out, NULL);
}

/* tests/data/schema/<case>/{schema.json, instance.json, output}: the messages, case by case. */
static void test_data_driven_messages(void **state)
{
    char root[4096];
    DIR *d;
    struct dirent *e;
    int cases = 0, failures = 0;

    (void)state;
    snprintf(root, sizeof(root), "%s/tests/data/schema", REIN_SOURCE_DIR);
    d = opendir(root);
    assert_non_null(d);
    while ((e = readdir(d))) {
        char dir[4400], path[4500];
        if (e->d_name[0] == '.')
            continue;
        snprintf(dir, sizeof(dir), "%s/%s", root, e->d_name);
        snprintf(path, sizeof(path), "%s/output", dir);
        char *want = test_read_file(path, NULL);
        char *got = case_output(dir);
        assert_non_null(want);
        if (strcmp(want, got) != 0) {
            print_message("case %s:\n want: %s got:  %s", e->d_name, want, got);
            failures++;
        }
        cases++;
        free(want);
        rein_free(got);
    }
    closedir(d);
    assert_true(cases >= 20);
    assert_int_equal(failures, 0);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_data_driven_messages),
    cmocka_unit_test(test_message_type_names_expected_and_received),
    cmocka_unit_test(test_message_required_names_the_property),
    cmocka_unit_test(test_message_each_keyword),
    cmocka_unit_test(test_message_branch_of_matching_type),
    cmocka_unit_test(test_message_truncates_long_strings),
    cmocka_unit_test(test_first_error_flag_stops_early),
    cmocka_unit_test(test_fill_defaults),
    cmocka_unit_test(test_dialects),
    cmocka_unit_test(test_bad_schema_names_the_keyword),
    cmocka_unit_test(test_remote_ref_needs_registration),
    cmocka_unit_test(test_ref_cycle_is_an_error_not_a_loop),
    cmocka_unit_test(test_unique_items_long_arrays),
    cmocka_unit_test(test_deep_instance_built_in_code),
    cmocka_unit_test(test_deep_schema_built_in_code),
    cmocka_unit_test(test_huge_numbers),
    cmocka_unit_test(test_invalid_utf8),
    cmocka_unit_test(test_catastrophic_regex_does_not_hang),
    cmocka_unit_test(test_ecma_regex_semantics),
    cmocka_unit_test(test_format_annotation_and_assertion),
    cmocka_unit_test(test_one_schema_many_threads),
    cmocka_unit_test(test_allocation_failures),
};

REIN_TEST_MAIN(tests)
