/*
 * Unit tests for the tools module (src/tools/): manifests and the registry, name checking and
 * repair, argument parsing, preflight, policy, execution limits, the result shapes (normalized
 * result, invalid payload, ledger entry) and concurrent calls. The seed's checks
 * (docs/DESIGN.md [pipeline]) come first: {} to a tool with a required field, "⚙", a wrong-case
 * name, a missing required field.
 */
#include "test.h"

#include "tools/tools_int.h"

#include <pthread.h>
#include <unistd.h>

/* ---- fixtures ---- */

/* A built-in that returns its arguments, counting its runs. */
static int args_runs;

static rein_err return_args(void *userdata, const struct rein_invocation *inv,
                            struct rein_tool_reply *reply, rein_error *err)
{
    (void)userdata;
    (void)err;
    __atomic_add_fetch(&args_runs, 1, __ATOMIC_SEQ_CST);
    reply->output = json_incref(inv->args);
    return REIN_OK;
}

/* Runs until the deadline or a cancel stops it, as a long built-in should. */
static rein_err spin(void *userdata, const struct rein_invocation *inv,
                     struct rein_tool_reply *reply, rein_error *err)
{
    (void)userdata;
    (void)reply;
    for (;;) {
        rein_err rc = rein_invocation_check(inv, err);
        if (rc)
            return rc;
        rein_sleep_ms(5);
    }
}

static void add(rein_registry *reg, const char *manifest, rein_tool_fn fn)
{
    rein_error err;
    json_t *m = rein_json_parse(manifest, strlen(manifest), 0, &err);

    assert_non_null(m);
    assert_rein_ok(rein_registry_add_builtin(reg, m, fn, NULL, NULL, &err), &err);
    json_decref(m);
}

static const char read_manifest[] =
    "{\"id\":\"read\",\"description\":\"Read a file\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"filePath\":{\"type\":\"string\"},\"offset\":{\"type\":\"integer\"}},"
    "\"required\":[\"filePath\"]}}";

/* A registry with read (the seed's tool), the built-in skills and a few more. */
static rein_registry *fixture(void)
{
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);

    assert_non_null(reg);
    add(reg, read_manifest, return_args);
    assert_rein_ok(rein_skills_register_builtins(reg, NULL, &err), &err);
    add(reg,
        "{\"id\":\"list_files\",\"description\":\"List\",\"parameters\":{\"type\":\"object\","
        "\"properties\":{\"dir\":{\"type\":\"string\",\"default\":\".\"},"
        "\"limit\":{\"type\":\"integer\",\"default\":20}}},\"destructive\":false}",
        return_args);
    add(reg,
        "{\"id\":\"delete_file\",\"description\":\"Delete\",\"destructive\":true,"
        "\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},"
        "\"required\":[\"path\"]}}",
        return_args);
    add(reg,
        "{\"id\":\"slow\",\"description\":\"Spins\",\"timeout_ms\":150,"
        "\"parameters\":{\"type\":\"object\"}}",
        spin);
    return reg;
}

static rein_call_result *call(const rein_registry *reg, const char *name, const char *args,
                              const struct rein_call_opts *opts)
{
    struct rein_call_input in = {
        .name = name, .args_text = args, .args_len = args ? strlen(args) : 0};
    rein_call_result *res = NULL;
    rein_error err;

    assert_rein_ok(rein_call_run(reg, &in, opts, &res, &err), &err);
    assert_non_null(res);
    return res;
}

static const char *str(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));

    assert_non_null(s);
    return s;
}

static void assert_json_eq(const json_t *a, const char *expected)
{
    json_t *b = rein_json_parse(expected, strlen(expected), 0, NULL);

    assert_non_null(b);
    if (!json_equal((json_t *)a, b)) {
        char *got = json_dumps(a, JSON_COMPACT);
        print_error("expected %s\n     got %s\n", expected, got);
        free(got);
        json_decref(b);
        fail();
    }
    json_decref(b);
}

/* ---- the seed's checks ---- */

static void test_empty_args_to_required_field_give_invalid_payload(void **state)
{
    rein_registry *reg = fixture();
    rein_ledger *ledger = rein_ledger_new();
    struct rein_call_opts opts = {.ledger = ledger};
    rein_call_result *res = call(reg, "read", "{}", &opts);
    const json_t *p = rein_call_result_invalid_json(res);
    const json_t *r = rein_call_result_json(res);

    (void)state;
    assert_false(rein_call_result_ok(res));
    assert_int_equal(rein_call_result_code(res), REIN_CALL_INVALID_ARGUMENTS);
    assert_int_equal(rein_call_result_status(res), REIN_CALL_INVALID);
    assert_non_null(p);
    assert_string_equal(str(p, "tool"), "read");
    assert_string_equal(str(p, "error"), "Invalid arguments: missing required field(s): filePath");
    assert_json_eq(json_object_get(p, "errors"),
                   "[{\"path\":\"/filePath\",\"message\":\"required property is missing\"}]");
    assert_json_eq(json_object_get(p, "receivedArgs"), "{}");
    assert_true(json_equal(json_object_get(p, "expected"),
                           (json_t *)rein_tool_parameters(rein_registry_get(reg, "read"))));
    assert_string_equal(str(p, "hint"), "Fix the arguments and call read again.");
    /* The normalized result says the same in docs/DESIGN.md's shape. */
    assert_false(json_is_true(json_object_get(r, "ok")));
    assert_string_equal(str(json_object_get(r, "error"), "code"), "invalid_arguments");
    assert_string_equal(str(json_object_get(r, "error"), "message"),
                        "missing required field(s): filePath");
    /* The model gets the payload; the tool never ran; the ledger says invalid. */
    assert_ptr_equal(rein_call_result_model_json(res), p);
    assert_int_equal(args_runs, 0);
    assert_int_equal(rein_ledger_count(ledger), 1);
    json_t *e = rein_ledger_entry_json(ledger, 0);
    assert_string_equal(str(e, "status"), "invalid");
    json_decref(e);
    rein_call_result_free(res);
    rein_ledger_free(ledger);
    rein_registry_free(reg);
}

static void test_gear_symbol_is_invalid_name(void **state)
{
    rein_registry *reg = fixture();
    rein_call_result *res = call(reg, "⚙", "{}", NULL);
    const json_t *p = rein_call_result_invalid_json(res);

    (void)state;
    assert_int_equal(rein_call_result_code(res), REIN_CALL_INVALID_NAME);
    assert_non_null(p);
    assert_string_equal(str(p, "tool"), "⚙");
    assert_non_null(strstr(str(p, "error"), "Invalid tool name: the name \"⚙\" has no letters"));
    /* The payload names what to call instead. */
    assert_true(json_array_size(json_object_get(p, "available_tools")) == rein_registry_count(reg));
    assert_true(json_is_null(json_object_get(p, "expected")));
    assert_null(rein_call_result_tool(res));
    rein_call_result_free(res);
    rein_registry_free(reg);
}

static void test_wrong_case_name_is_repaired_and_run(void **state)
{
    rein_registry *reg = fixture();
    rein_ledger *ledger = rein_ledger_new();
    struct rein_call_opts opts = {.ledger = ledger};
    rein_call_result *res = call(reg, "Echo", "{\"text\":\"hello\"}", &opts);
    size_t len;

    (void)state;
    assert_true(rein_call_result_ok(res));
    assert_string_equal(rein_call_result_tool_name(res), "echo");
    assert_string_equal(rein_call_result_sent_name(res, &len), "Echo");
    assert_int_equal(rein_call_result_repair(res), REIN_REPAIR_CASE);
    assert_string_equal(json_string_value(rein_call_result_output(res)), "hello");
    /* It ran under the real name; the ledger keeps the name the model sent. */
    json_t *e = rein_ledger_entry_json(ledger, 0);
    assert_string_equal(str(e, "tool"), "echo");
    assert_string_equal(str(e, "sent_name"), "Echo");
    assert_string_equal(str(e, "status"), "success");
    assert_string_equal(json_string_value(json_object_get(e, "result")), "hello");
    json_decref(e);
    rein_call_result_free(res);
    rein_ledger_free(ledger);
    rein_registry_free(reg);
}

static void test_missing_required_field_among_others(void **state)
{
    rein_registry *reg = fixture();
    rein_call_result *res = call(reg, "read", "{\"offset\": 3}", NULL);
    const json_t *p = rein_call_result_invalid_json(res);

    (void)state;
    assert_int_equal(rein_call_result_code(res), REIN_CALL_INVALID_ARGUMENTS);
    assert_string_equal(str(p, "error"), "Invalid arguments: missing required field(s): filePath");
    assert_json_eq(json_object_get(p, "receivedArgs"), "{\"offset\":3}");
    rein_call_result_free(res);
    rein_registry_free(reg);
}

/* ---- name check ---- */

static void test_invalid_names_say_what_is_wrong(void **state)
{
    static const struct {
        const char *name;
        size_t len;
        const char *says;
    } cases[] = {
        {"", 0, "empty"},
        {"   ", 3, "only whitespace"},
        {"\xe3\x80\x80", 3, "only whitespace"}, /* U+3000 */
        {"echo\n", 5, "control character"},
        {"ec\0ho", 5, "control character"},
        {"\xc2\x85", 2, "control character"}, /* U+0085 */
        {"\xff\xfe", 2, "not valid UTF-8"},
        {"\xe2\x9a", 2, "not valid UTF-8"}, /* a cut sequence */
        {"\xe2\x9a\x99\xe2\x9a\x99", 6, "no letters or digits"},
        {"-->", 3, "no letters or digits"},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 65,
         "at most 64 bytes"},
    };
    rein_error why;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rein_error_clear(&why);
        assert_int_equal(rein_tool_name_check(cases[i].name, cases[i].len, &why), REIN_EINVALID);
        if (!strstr(why.msg, cases[i].says)) {
            print_error("case %zu: \"%s\" does not say \"%s\"\n", i, why.msg, cases[i].says);
            fail();
        }
    }
    /* Letters in any script are letters. */
    assert_rein_ok(rein_tool_name_check("搜索", strlen("搜索"), &why), &why);
    assert_rein_ok(rein_tool_name_check("File Search", 11, &why), &why);
}

static void test_invalid_name_with_nul_through_pipeline(void **state)
{
    rein_registry *reg = fixture();
    struct rein_call_input in = {.name = "ec\0ho", .name_len = 5, .args_text = "{}", .args_len = 2};
    rein_call_result *res;
    size_t len;

    (void)state;
    assert_rein_ok(rein_call_run(reg, &in, NULL, &res, NULL), NULL);
    assert_int_equal(rein_call_result_code(res), REIN_CALL_INVALID_NAME);
    rein_call_result_sent_name(res, &len);
    assert_int_equal(len, 5);
    /* The shapes stay valid JSON even for a name with a NUL byte in it. */
    assert_non_null(rein_call_result_invalid_json(res));
    assert_non_null(rein_call_result_ledger_json(res));
    rein_call_result_free(res);
    rein_registry_free(reg);
}

/* ---- repair ---- */

static void test_repair_steps_in_order(void **state)
{
    static const struct {
        const char *sent, *tool;
        enum rein_repair how;
    } cases[] = {
        {"file_search", "file_search", REIN_REPAIR_EXACT},
        {"FILE_SEARCH", "file_search", REIN_REPAIR_CASE},
        {"fileSearch", "file_search", REIN_REPAIR_SEPARATORS},
        {"file-search", "file_search", REIN_REPAIR_SEPARATORS},
        {"File Search", "file_search", REIN_REPAIR_SEPARATORS},
        {"FileSearch", "file_search", REIN_REPAIR_SEPARATORS},
        {" file_search ", "file_search", REIN_REPAIR_SEPARATORS},
        {"logTransform", "log_transform", REIN_REPAIR_SEPARATORS},
        {"functions.echo", "echo", REIN_REPAIR_PREFIX},
        {"tools.fileSearch", "file_search", REIN_REPAIR_PREFIX},
        {"Functions.Calculator", "calculator", REIN_REPAIR_PREFIX},
        {"calculater", "calculator", REIN_REPAIR_EDIT_DISTANCE},
        {"file_serch", "file_search", REIN_REPAIR_EDIT_DISTANCE},
        {"ehco", "echo", REIN_REPAIR_EDIT_DISTANCE},
        {"functions.calculatr", "calculator", REIN_REPAIR_EDIT_DISTANCE},
    };
    rein_registry *reg = fixture();
    enum rein_repair how;
    rein_error why;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const rein_tool *t = rein_registry_resolve(reg, cases[i].sent, &how, &why);
        if (!t || strcmp(rein_tool_id(t), cases[i].tool) != 0 || how != cases[i].how) {
            print_error("\"%s\": got %s (%s), want %s (%s)\n", cases[i].sent,
                        t ? rein_tool_id(t) : why.msg, rein_repair_name(how), cases[i].tool,
                        rein_repair_name(cases[i].how));
            fail();
        }
    }
    rein_registry_free(reg);
}

static void test_repair_never_guesses(void **state)
{
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    enum rein_repair how;

    (void)state;
    add(reg, "{\"id\":\"ls\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}",
        return_args);
    add(reg, "{\"id\":\"read_file\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}",
        return_args);
    add(reg, "{\"id\":\"read_files\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}",
        return_args);
    add(reg, "{\"id\":\"Echo\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}",
        return_args);
    add(reg, "{\"id\":\"echo\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}",
        return_args);
    /* Short names are not repaired by distance: "rm" is not "ls". */
    assert_null(rein_registry_resolve(reg, "rm", &how, &err));
    assert_int_equal(err.code, REIN_ENOTFOUND);
    /* Two tools within distance 2: no guess. */
    assert_null(rein_registry_resolve(reg, "read_fil", &how, &err));
    assert_non_null(strstr(err.msg, "more than one"));
    /* Two tools that differ only in case: only the exact name resolves. */
    assert_non_null(rein_registry_resolve(reg, "Echo", &how, &err));
    assert_null(rein_registry_resolve(reg, "ECHO", &how, &err));
    assert_non_null(strstr(err.msg, "available tools: ls, read_file, read_files, Echo, echo"));
    rein_registry_free(reg);
}

static void test_unknown_tool_lists_the_available_tools(void **state)
{
    rein_registry *reg = fixture();
    rein_call_result *res = call(reg, "web_browser", "{\"url\":\"x\"}", NULL);
    const json_t *p = rein_call_result_invalid_json(res);
    json_t *names = rein_registry_names_json(reg);

    (void)state;
    assert_int_equal(rein_call_result_code(res), REIN_CALL_UNKNOWN_TOOL);
    assert_string_equal(str(p, "tool"), "web_browser");
    assert_non_null(strstr(str(p, "error"), "Unknown tool: \"web_browser\" is not a tool; "
                                            "available tools: read, echo, file_search"));
    assert_true(json_equal(json_object_get(p, "available_tools"), names));
    assert_json_eq(json_object_get(p, "receivedArgs"), "{\"url\":\"x\"}");
    assert_non_null(strstr(rein_call_result_message(res), "available tools: read, echo"));
    json_decref(names);
    rein_call_result_free(res);
    rein_registry_free(reg);
}

/* ---- arguments ---- */

static void test_empty_string_means_no_arguments(void **state)
{
    rein_registry *reg = fixture();
    rein_call_result *res = call(reg, "list_files", "", NULL);
    rein_call_result *res2 = call(reg, "list_files", "  \n", NULL);
    rein_call_result *res3 = call(reg, "read", "", NULL);

    (void)state;
    assert_true(rein_call_result_ok(res));
    assert_true(rein_call_result_ok(res2));
    assert_int_equal(rein_call_result_code(res3), REIN_CALL_INVALID_ARGUMENTS);
    assert_string_equal(rein_call_result_message(res3), "missing required field(s): filePath");
    rein_call_result_free(res);
    rein_call_result_free(res2);
    rein_call_result_free(res3);
    rein_registry_free(reg);
}

static void test_broken_json_is_reported_with_position(void **state)
{
    rein_registry *reg = fixture();
    rein_ledger *ledger = rein_ledger_new();
    struct rein_call_opts opts = {.ledger = ledger};
    rein_call_result *res = call(reg, "echo", "{\"text\": \"hel", &opts);
    const json_t *p = rein_call_result_invalid_json(res);

    (void)state;
    assert_int_equal(rein_call_result_code(res), REIN_CALL_INVALID_ARGUMENTS);
    assert_null(rein_call_result_args(res));
    assert_non_null(strstr(rein_call_result_message(res), "not valid JSON"));
    assert_non_null(strstr(rein_call_result_message(res), "line 1, column"));
    /* The model sees exactly what it sent. */
    assert_string_equal(json_string_value(json_object_get(p, "receivedArgs")), "{\"text\": \"hel");
    json_t *e = rein_ledger_entry_json(ledger, 0);
    assert_string_equal(json_string_value(json_object_get(e, "args")), "{\"text\": \"hel");
    assert_string_equal(str(e, "status"), "invalid");
    json_decref(e);
    rein_call_result_free(res);
    rein_ledger_free(ledger);
    rein_registry_free(reg);
}

static void test_arguments_must_be_one_object(void **state)
{
    static const char *const cases[][2] = {
        {"[1, 2]", "got array"},
        {"\"hello\"", "got string"},
        {"42", "got integer"},
        {"null", "got null"},
        {"{\"text\": \"a\", \"text\": \"b\"}", "duplicate"},
        {"{\"text\": \"a\"} {\"x\": 1}", "not valid JSON"},
        {"{'text': 'a'}", "not valid JSON"},
    };
    rein_registry *reg = fixture();

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rein_call_result *res = call(reg, "echo", cases[i][0], NULL);
        assert_int_equal(rein_call_result_code(res), REIN_CALL_INVALID_ARGUMENTS);
        if (!strstr(rein_call_result_message(res), cases[i][1])) {
            print_error("%s: \"%s\"\n", cases[i][0], rein_call_result_message(res));
            fail();
        }
        rein_call_result_free(res);
    }
    rein_registry_free(reg);
}

static void test_integers_beyond_64_bits_are_refused_with_a_hint(void **state)
{
    rein_registry *reg = fixture();
    rein_call_result *res = call(
        reg, "list_files", "{\"dir\": \"a\", \"limit\": 123456789012345678901234567890}", NULL);
    const json_t *p = rein_call_result_invalid_json(res);

    (void)state;
    assert_int_equal(rein_call_result_code(res), REIN_CALL_INVALID_ARGUMENTS);
    assert_non_null(strstr(rein_call_result_message(res), "as strings"));
    assert_string_equal(str(json_array_get(json_object_get(p, "errors"), 0), "path"), "/limit");
    rein_call_result_free(res);
    rein_registry_free(reg);
}

static void test_arguments_as_a_value(void **state)
{
    rein_registry *reg = fixture();
    json_t *obj = json_pack("{s:s}", "text", "from an object");
    json_t *text = json_string("{\"text\": \"from a string\"}");
    json_t *arr = json_pack("[i]", 1);
    struct rein_call_input in = {.name = "echo", .args = obj};
    rein_call_result *res;

    (void)state;
    assert_rein_ok(rein_call_run(reg, &in, NULL, &res, NULL), NULL);
    assert_string_equal(json_string_value(rein_call_result_output(res)), "from an object");
    rein_call_result_free(res);
    in.args = text;
    assert_rein_ok(rein_call_run(reg, &in, NULL, &res, NULL), NULL);
    assert_string_equal(json_string_value(rein_call_result_output(res)), "from a string");
    assert_string_equal(rein_call_result_args_text(res, NULL), "{\"text\": \"from a string\"}");
    rein_call_result_free(res);
    in.args = arr;
    assert_rein_ok(rein_call_run(reg, &in, NULL, &res, NULL), NULL);
    assert_int_equal(rein_call_result_code(res), REIN_CALL_INVALID_ARGUMENTS);
    rein_call_result_free(res);
    /* The caller's value is not touched. */
    assert_int_equal(json_object_size(obj), 1);
    json_decref(obj);
    json_decref(text);
    json_decref(arr);
    rein_registry_free(reg);
}

static void test_arguments_over_the_size_limit(void **state)
{
    rein_registry *reg = fixture();
    struct rein_call_opts opts = {.max_args_bytes = 32};
    rein_call_result *res =
        call(reg, "echo", "{\"text\": \"a long text that is over the limit\"}", &opts);

    (void)state;
    assert_int_equal(rein_call_result_code(res), REIN_CALL_INVALID_ARGUMENTS);
    assert_non_null(strstr(rein_call_result_message(res), "the limit is 32 bytes"));
    rein_call_result_free(res);
    rein_registry_free(reg);
}

/* ---- preflight ---- */

static void test_preflight_reports_every_error(void **state)
{
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    rein_call_result *res;
    const json_t *details;

    (void)state;
    add(reg,
        "{\"id\":\"book\",\"description\":\"d\",\"parameters\":{\"type\":\"object\","
        "\"properties\":{\"city\":{\"type\":\"string\"},\"nights\":{\"type\":\"integer\","
        "\"minimum\":1},\"guest\":{\"type\":\"object\",\"required\":[\"name\"]}},"
        "\"required\":[\"city\",\"date\"]}}",
        return_args);
    res = call(reg, "book", "{\"nights\": \"2\", \"guest\": {}}", NULL);
    details = json_object_get(rein_call_result_json(res), "error");
    details = json_object_get(details, "details");
    (void)state;
    assert_int_equal(rein_call_result_code(res), REIN_CALL_INVALID_ARGUMENTS);
    assert_int_equal(json_array_size(details), 4);
    const char *m = rein_call_result_message(res);
    assert_non_null(strstr(m, "missing required field(s): "));
    assert_non_null(strstr(m, "city"));
    assert_non_null(strstr(m, "date"));
    assert_non_null(strstr(m, "/guest/name"));
    assert_non_null(strstr(m, "/nights: "));
    rein_call_result_free(res);
    rein_registry_free(reg);
}

static void test_defaults_are_filled_in(void **state)
{
    rein_registry *reg = fixture();
    rein_call_result *res = call(reg, "list_files", "{\"dir\": \"src\"}", NULL);

    (void)state;
    assert_true(rein_call_result_ok(res));
    assert_json_eq(rein_call_result_output(res), "{\"dir\":\"src\",\"limit\":20}");
    assert_json_eq(rein_call_result_args(res), "{\"dir\":\"src\",\"limit\":20}");
    rein_call_result_free(res);
    rein_registry_free(reg);
}

/* Lent arguments are read in place when nothing changes them, and copied when the tool fills
 * in defaults: the caller's value is never written to. */
static void test_lent_args_read_in_place_unless_defaults(void **state)
{
    rein_registry *reg = fixture();
    json_t *args = json_pack("{s:s}", "path", "a.txt");
    json_t *partial = json_pack("{s:s}", "dir", "src");
    struct rein_call_input in = {.name = "delete_file", .args = args, .args_lent = true};
    rein_call_result *res = NULL;
    rein_error err;

    (void)state;
    assert_rein_ok(rein_call_run(reg, &in, NULL, &res, &err), &err);
    assert_true(rein_call_result_ok(res));
    assert_ptr_equal(rein_call_result_args(res), args);
    rein_call_result_free(res);
    assert_int_equal(args->refcount, 1); /* neither taken nor dropped */

    in = (struct rein_call_input){.name = "list_files", .args = partial, .args_lent = true};
    assert_rein_ok(rein_call_run(reg, &in, NULL, &res, &err), &err);
    assert_true(rein_call_result_ok(res));
    assert_ptr_not_equal(rein_call_result_args(res), partial);
    assert_json_eq(rein_call_result_args(res), "{\"dir\":\"src\",\"limit\":20}");
    assert_json_eq(partial, "{\"dir\":\"src\"}");
    rein_call_result_free(res);
    json_decref(args);
    json_decref(partial);
    rein_registry_free(reg);
}

/* ---- policy, cancel, timeout ---- */

struct policy_seen {
    char tool[64], sent[64];
    enum rein_repair repair;
    bool destructive;
};

static rein_err deny_destructive(void *userdata, const struct rein_policy_check *check,
                                 rein_error *why)
{
    struct policy_seen *seen = userdata;

    snprintf(seen->tool, sizeof(seen->tool), "%s", rein_tool_id(check->tool));
    snprintf(seen->sent, sizeof(seen->sent), "%s", check->sent_name);
    seen->repair = check->repair;
    seen->destructive = rein_tool_is_destructive(check->tool);
    if (seen->destructive)
        return rein_error_set(why, REIN_EDENIED, "deleting files needs the user's approval");
    return REIN_OK;
}

static void test_policy_denies_before_execution(void **state)
{
    rein_registry *reg = fixture();
    rein_ledger *ledger = rein_ledger_new();
    struct policy_seen seen = {0};
    struct rein_call_opts opts = {
        .ledger = ledger, .policy = deny_destructive, .policy_data = &seen};
    int runs = args_runs;
    rein_call_result *res = call(reg, "delete_file", "{\"path\": \"a.txt\"}", &opts);
    const json_t *p = rein_call_result_invalid_json(res);

    (void)state;
    assert_int_equal(rein_call_result_code(res), REIN_CALL_DENIED);
    assert_int_equal(args_runs, runs);
    assert_string_equal(seen.tool, "delete_file");
    assert_string_equal(seen.sent, "delete_file");
    assert_int_equal(seen.repair, REIN_REPAIR_EXACT);
    assert_string_equal(str(p, "error"), "Denied: deleting files needs the user's approval");
    assert_non_null(strstr(str(p, "hint"), "Do not repeat this call to delete_file unchanged"));
    json_t *e = rein_ledger_entry_json(ledger, 0);
    assert_string_equal(str(e, "status"), "invalid");
    assert_string_equal(str(json_object_get(e, "result"), "code"), "denied");
    json_decref(e);
    rein_call_result_free(res);
    /* A tool the policy allows runs. */
    res = call(reg, "read", "{\"filePath\": \"a\"}", &opts);
    assert_true(rein_call_result_ok(res));
    rein_call_result_free(res);
    rein_ledger_free(ledger);
    rein_registry_free(reg);
}

/* Issue 20: "delete_notes" and "Delete-Note" ran delete_note. A repaired name never reaches a
 * destructive tool; the model is told the exact name. */
static void test_repair_never_lands_on_a_destructive_tool(void **state)
{
    rein_registry *reg = fixture();
    rein_ledger *ledger = rein_ledger_new();
    struct policy_seen seen = {0};
    struct rein_call_opts opts = {
        .ledger = ledger, .policy = deny_destructive, .policy_data = &seen};
    const char *names[] = {"deleteFile", "Delete-File", "delete_files", "DELETE_FILE",
                           "functions.delete_file"};
    int runs = args_runs;

    (void)state;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        rein_call_result *res = call(reg, names[i], "{\"path\": \"a.txt\"}", &opts);
        const json_t *p = rein_call_result_invalid_json(res);
        assert_int_equal(rein_call_result_code(res), REIN_CALL_UNKNOWN_TOOL);
        assert_null(rein_call_result_tool(res));
        assert_non_null(strstr(str(p, "error"), "delete_file"));
        assert_non_null(strstr(str(p, "error"), "exact name"));
        rein_call_result_free(res);
    }
    assert_int_equal(args_runs, runs);
    assert_string_equal(seen.tool, ""); /* the policy was never asked */
    assert_null(rein_registry_resolve(reg, "deleteFile", NULL, NULL));
    /* The ledger records what was sent, also for the calls that did not run. */
    assert_int_equal(rein_ledger_count(ledger), 5);
    json_t *e = rein_ledger_entry_json(ledger, 0);
    assert_string_equal(str(e, "sent_name"), "deleteFile");
    assert_string_equal(str(e, "status"), "invalid");
    json_decref(e);
    /* Repair still helps with tools that change nothing. */
    rein_call_result *res = call(reg, "Read", "{\"filePath\": \"a\"}", &opts);
    assert_true(rein_call_result_ok(res));
    assert_int_equal(rein_call_result_repair(res), REIN_REPAIR_CASE);
    rein_call_result_free(res);
    rein_ledger_free(ledger);
    rein_registry_free(reg);
}

/* rein_call_opts.exact_name (MCP tools/call): nothing is repaired, not even the case. */
static void test_exact_name_repairs_nothing(void **state)
{
    rein_registry *reg = fixture();
    struct rein_call_opts opts = {.exact_name = true};
    rein_call_result *res = call(reg, "Read", "{\"filePath\": \"a\"}", &opts);

    (void)state;
    assert_int_equal(rein_call_result_code(res), REIN_CALL_UNKNOWN_TOOL);
    assert_non_null(strstr(rein_call_result_message(res), "no tool is named \"Read\""));
    rein_call_result_free(res);
    res = call(reg, "read", "{\"filePath\": \"a\"}", &opts);
    assert_true(rein_call_result_ok(res));
    rein_call_result_free(res);
    rein_registry_free(reg);
}

/* Tools join and leave while calls run (an MCP server connecting later or changing its list). */
struct churn {
    rein_registry *reg;
    atomic_bool stop;
    atomic_int calls, changes, bad;
};

static void count_change(void *ud, const rein_registry *reg)
{
    struct churn *c = ud;

    (void)reg;
    atomic_fetch_add(&c->changes, 1);
}

/* Calls, exports and walks the registry until told to stop; counts what went wrong (cmocka's
 * asserts belong to the main thread). */
static void *churn_callers(void *arg)
{
    struct churn *c = arg;
    struct rein_call_input in = {.name = "read", .args_text = "{\"filePath\": \"a\"}"};

    in.args_len = strlen(in.args_text);
    /* At least one round each, however the threads are scheduled (a busy machine may run the
     * whole churn of the main thread before these start). */
    do {
        rein_call_result *res = NULL;
        if (rein_call_run(c->reg, &in, NULL, &res, NULL) != REIN_OK || !rein_call_result_ok(res))
            atomic_fetch_add(&c->bad, 1);
        rein_call_result_free(res);
        json_t *tools = rein_registry_tools_json(c->reg, REIN_TOOLS_MCP);
        if (!tools)
            atomic_fetch_add(&c->bad, 1);
        json_decref(tools);
        for (size_t i = 0; i < rein_registry_count(c->reg); i++) {
            const rein_tool *t = rein_registry_at(c->reg, i);
            if (t && strlen(rein_tool_id(t)) == 0)
                atomic_fetch_add(&c->bad, 1);
        }
        atomic_fetch_add(&c->calls, 1);
    } while (!atomic_load(&c->stop));
    return NULL;
}

static void test_tools_join_and_leave_while_in_use(void **state)
{
    struct churn c = {.reg = fixture()};
    pthread_t th[3];
    rein_error err;
    int handle = rein_registry_watch(c.reg, count_change, &c);
    uint64_t gen0 = rein_registry_generation(c.reg);
    const rein_tool *kept;

    (void)state;
    atomic_init(&c.stop, false);
    assert_true(handle > 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&th[i], NULL, churn_callers, &c), 0);
    add(c.reg,
        "{\"id\":\"late\",\"description\":\"joins late\",\"parameters\":{\"type\":\"object\"}}",
        return_args);
    kept = rein_registry_get(c.reg, "late");
    assert_non_null(kept);
    for (int round = 0; round < 50; round++) {
        char m[160];
        snprintf(
            m, sizeof(m),
            "{\"id\":\"t%d\",\"description\":\"round %d\",\"parameters\":{\"type\":\"object\"}}",
            round, round);
        add(c.reg, m, return_args);
        snprintf(m, sizeof(m), "t%d", round);
        assert_rein_ok(rein_registry_remove(c.reg, m, &err), &err);
        assert_null(rein_registry_get(c.reg, m));
    }
    assert_rein_ok(rein_registry_remove(c.reg, "late", &err), &err);
    assert_int_equal(rein_registry_remove(c.reg, "late", &err), REIN_ENOTFOUND);
    /* A tool handed out before it left stays readable (a call in flight). */
    assert_string_equal(rein_tool_id(kept), "late");
    assert_null(rein_registry_resolve(c.reg, "late", NULL, NULL));
    atomic_store(&c.stop, true);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    assert_true(atomic_load(&c.calls) > 0);
    assert_int_equal(atomic_load(&c.bad), 0);
    assert_int_equal(atomic_load(&c.changes), 102);
    assert_int_equal(rein_registry_generation(c.reg), gen0 + 102);
    rein_registry_unwatch(c.reg, handle);
    add(c.reg,
        "{\"id\":\"after\",\"description\":\"unwatched\",\"parameters\":{\"type\":\"object\"}}",
        return_args);
    assert_int_equal(atomic_load(&c.changes), 102);
    rein_registry_free(c.reg);
}

/* output_schema: a successful output must have the shape the tool declares (the output itself,
 * or the structuredContent of MCP content). */
static void test_output_schema_is_checked(void **state)
{
    rein_registry *reg = fixture();
    rein_call_result *res;

    (void)state;
    add(reg,
        "{\"id\":\"shaped\",\"description\":\"returns its arguments\",\"parameters\":{"
        "\"type\":\"object\"},\"output_schema\":{\"type\":\"object\",\"required\":[\"n\"],"
        "\"properties\":{\"n\":{\"type\":\"integer\"}}}}",
        return_args);
    res = call(reg, "shaped", "{\"n\": 3}", NULL);
    assert_true(rein_call_result_ok(res));
    rein_call_result_free(res);
    res = call(reg, "shaped", "{\"n\": \"three\"}", NULL);
    assert_int_equal(rein_call_result_code(res), REIN_CALL_EXECUTION_FAILED);
    assert_non_null(strstr(rein_call_result_message(res), "does not match its output schema"));
    assert_null(rein_call_result_output(res));
    assert_string_equal(
        str(json_array_get(
                json_object_get(json_object_get(rein_call_result_json(res), "error"), "details"),
                0),
            "path"),
        "/n");
    rein_call_result_free(res);
    /* MCP content: its structuredContent is what is checked, and it must be there. */
    res = call(reg, "shaped", "{\"content\": [], \"structuredContent\": {\"n\": 1}}", NULL);
    assert_true(rein_call_result_ok(res));
    rein_call_result_free(res);
    res = call(reg, "shaped", "{\"content\": [{\"type\": \"text\", \"text\": \"x\"}]}", NULL);
    assert_int_equal(rein_call_result_code(res), REIN_CALL_EXECUTION_FAILED);
    assert_non_null(strstr(rein_call_result_message(res), "no structured content"));
    rein_call_result_free(res);
    /* A schema that does not compile refuses the manifest, with its pointer. */
    rein_error err;
    json_t *bad = json_loads("{\"id\":\"badshape\",\"description\":\"x\",\"parameters\":"
                             "{\"type\":\"object\"},\"output_schema\":{\"type\":7}}",
                             0, NULL);
    assert_int_equal(rein_registry_add_builtin(reg, bad, return_args, NULL, NULL, &err),
                     REIN_ESCHEMA);
    assert_non_null(strstr(err.msg, "/output_schema"));
    json_decref(bad);
    rein_registry_free(reg);
}

static void test_timeout_stops_a_builtin(void **state)
{
    rein_registry *reg = fixture();
    int64_t t0 = rein_now_ms();
    rein_call_result *res = call(reg, "slow", "{}", NULL);

    (void)state;
    assert_int_equal(rein_call_result_code(res), REIN_CALL_TIMEOUT);
    assert_int_equal(rein_call_result_status(res), REIN_CALL_ERROR);
    assert_null(rein_call_result_invalid_json(res));
    assert_true(rein_now_ms() - t0 < 5000);
    rein_call_result_free(res);
    /* The caller's limit applies when it is shorter. */
    struct rein_call_opts opts = {.timeout_ms = 20};
    res = call(reg, "slow", "{}", &opts);
    assert_int_equal(rein_call_result_code(res), REIN_CALL_TIMEOUT);
    assert_string_equal(rein_call_result_message(res), "timed out after 20 ms");
    rein_call_result_free(res);
    rein_registry_free(reg);
}

struct canceller {
    rein_cancel *c;
};

static void *cancel_soon(void *arg)
{
    struct canceller *k = arg;

    rein_sleep_ms(30);
    rein_cancel_trigger(k->c, "the user pressed stop");
    return NULL;
}

static void test_cancel_stops_a_running_call(void **state)
{
    rein_registry *reg = fixture();
    struct canceller k = {rein_cancel_new()};
    struct rein_call_opts opts = {.cancel = k.c};
    pthread_t t;
    rein_call_result *res;

    (void)state;
    assert_int_equal(pthread_create(&t, NULL, cancel_soon, &k), 0);
    res = call(reg, "slow", "{}", &opts);
    pthread_join(t, NULL);
    assert_int_equal(rein_call_result_code(res), REIN_CALL_CANCELLED);
    assert_non_null(strstr(rein_call_result_message(res), "the user pressed stop"));
    rein_call_result_free(res);
    /* Already cancelled: the tool does not start. */
    int runs = args_runs;
    res = call(reg, "read", "{\"filePath\": \"x\"}", &opts);
    assert_int_equal(rein_call_result_code(res), REIN_CALL_CANCELLED);
    assert_int_equal(args_runs, runs);
    rein_call_result_free(res);
    rein_cancel_unref(k.c);
    rein_registry_free(reg);
}

/* ---- shapes ---- */

static void test_normalized_result_shape(void **state)
{
    rein_registry *reg = fixture();
    struct rein_call_input in = {.call_id = "call_7",
                                 .name = "echo",
                                 .args_text = "{\"text\":\"hi\"}",
                                 .args_len = 13,
                                 .trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"};
    rein_call_result *res;
    const json_t *r;
    struct rein_buf b;
    struct rein_jw w;

    (void)state;
    assert_rein_ok(rein_call_run(reg, &in, NULL, &res, NULL), NULL);
    r = rein_call_result_json(res);
    assert_int_equal(json_object_size(r), 6);
    assert_true(json_is_true(json_object_get(r, "ok")));
    assert_string_equal(str(r, "tool"), "echo");
    assert_string_equal(str(r, "call_id"), "call_7");
    assert_string_equal(str(r, "trace_id"), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_string_equal(str(r, "output"), "hi");
    assert_true(json_is_integer(json_object_get(json_object_get(r, "meta"), "latency_ms")));
    assert_null(rein_call_result_invalid_json(res));
    assert_ptr_equal(rein_call_result_model_json(res), r);
    /* The writer produces the same object with no tree. */
    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_call_result_write_for_model(res, &w);
    assert_rein_ok(rein_jw_finish(&w), NULL);
    json_t *again = rein_json_parse(b.ptr, b.len, 0, NULL);
    assert_true(json_equal(again, (json_t *)r));
    json_decref(again);
    rein_buf_release(&b);
    /* Steps, in order. */
    const json_t *steps = rein_call_result_steps_json(res);
    static const char *const names[] = {"name_check", "repair",  "parse",    "preflight",
                                        "policy",     "execute", "normalize"};
    assert_int_equal(json_array_size(steps), 7);
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(str(json_array_get(steps, i), "step"), names[i]);
    rein_call_result_free(res);
    rein_registry_free(reg);
}

static void test_ids_are_made_when_missing(void **state)
{
    rein_registry *reg = fixture();
    rein_call_result *res = call(reg, "echo", "{\"text\":\"x\"}", NULL);

    (void)state;
    assert_true(strncmp(rein_call_result_call_id(res), "call_", 5) == 0);
    assert_true(rein_trace_id_is_valid(rein_call_result_trace_id(res)));
    rein_call_result_free(res);
    rein_registry_free(reg);
}

static void test_check_only_runs_nothing(void **state)
{
    rein_registry *reg = fixture();
    rein_ledger *ledger = rein_ledger_new();
    struct rein_call_opts opts = {.ledger = ledger, .check_only = true};
    int runs = args_runs;
    rein_call_result *res = call(reg, "Read", "{\"filePath\": \"a\"}", &opts);

    (void)state;
    assert_true(rein_call_result_ok(res));
    assert_string_equal(rein_call_result_tool_name(res), "read");
    assert_int_equal(args_runs, runs);
    assert_int_equal(rein_ledger_count(ledger), 0);
    rein_call_result_free(res);
    res = call(reg, "read", "{}", &opts);
    assert_int_equal(rein_call_result_code(res), REIN_CALL_INVALID_ARGUMENTS);
    rein_call_result_free(res);
    rein_ledger_free(ledger);
    rein_registry_free(reg);
}

/* A check that reads the caller's document of the text (rein_call_input.args_doc, as the
 * gateway hands over the decoder's) answers what a check parsing the text answers: the same
 * code, message, result and payload for the model, and keeps no reference to the document. */
/* A result's JSON without meta.latency_ms: two runs of the same call may take a different
 * number of milliseconds (on a busy machine one passed 1 ms and the other did not). */
static json_t *result_json_without_latency(rein_call_result *r)
{
    json_t *j = json_deep_copy(rein_call_result_json(r));

    assert_non_null(j);
    json_object_del(json_object_get(j, "meta"), "latency_ms");
    return j;
}

/* The same in a written result: the number after "latency_ms" becomes 0, in place. */
static void latency_zeroed(char *text)
{
    char *p = strstr(text, "\"latency_ms\":");
    size_t digits;

    if (!p)
        return;
    p += strlen("\"latency_ms\":");
    digits = strspn(p, "0123456789");
    if (digits == 0)
        return;
    *p = '0';
    memmove(p + 1, p + digits, strlen(p + digits) + 1);
}

static void test_check_reads_the_callers_document(void **state)
{
    static const char *const texts[] = {
        "{\"filePath\": \"a\", \"offset\": 2}",
        "{}",
        "{\"filePath\": 5}",
        "{\"filePath\": \"a\", \"filePath\": \"b\"}",
        "[1]",
        "  ",
        "{\"filePath\": \"caf\\u00e9\"}",
    };
    rein_registry *reg = fixture();
    struct rein_call_opts opts = {.check_only = true};

    (void)state;
    for (size_t i = 0; i < REIN_ARRAY_SIZE(texts); i++) {
        for (int k = 0; k < 2; k++) {
            const char *name = k ? "list_files" : "read"; /* list_files fills in defaults */
            rein_doc *doc = rein_doc_parse(texts[i], strlen(texts[i]), NULL);
            struct rein_call_input in = {.call_id = "call_1",
                                         .trace_id = "0123456789abcdef0123456789abcdef",
                                         .name = name,
                                         .args_text = texts[i],
                                         .args_len = strlen(texts[i])};
            rein_call_result *plain = NULL, *lent = NULL;
            json_t *ja, *jb;
            struct rein_buf a, b;
            struct rein_jw wa, wb;
            rein_error err;

            assert_rein_ok(rein_call_run(reg, &in, &opts, &plain, &err), &err);
            in.args_doc = doc;
            assert_rein_ok(rein_call_run(reg, &in, &opts, &lent, &err), &err);
            rein_doc_free(doc); /* the result must not read it any more */
            assert_int_equal(rein_call_result_code(plain), rein_call_result_code(lent));
            assert_string_equal(rein_call_result_message(plain), rein_call_result_message(lent));
            rein_buf_init(&a, 0);
            rein_buf_init(&b, 0);
            rein_jw_init(&wa, &a);
            rein_jw_init(&wb, &b);
            rein_call_result_write_for_model(plain, &wa);
            rein_call_result_write_for_model(lent, &wb);
            assert_rein_ok(rein_jw_finish(&wa), NULL);
            assert_rein_ok(rein_jw_finish(&wb), NULL);
            latency_zeroed(a.ptr);
            latency_zeroed(b.ptr);
            assert_string_equal(a.ptr, b.ptr);
            ja = result_json_without_latency(plain);
            jb = result_json_without_latency(lent);
            assert_true(json_equal(ja, jb));
            json_decref(ja);
            json_decref(jb);
            if (!rein_call_result_ok(plain) || k)
                assert_true(json_equal(rein_call_result_args(plain), rein_call_result_args(lent)) ||
                            (!rein_call_result_args(plain) && !rein_call_result_args(lent)));
            rein_buf_release(&a);
            rein_buf_release(&b);
            rein_call_result_free(plain);
            rein_call_result_free(lent);
        }
    }
    rein_registry_free(reg);
}

/* ---- ledger through the pipeline ---- */

struct hook_log {
    pthread_mutex_t lock;
    json_t *seen;
    rein_err fail_with;
};

static rein_err record_hook(void *userdata, const struct rein_ledger_entry *entry)
{
    struct hook_log *h = userdata;

    pthread_mutex_lock(&h->lock);
    json_array_append_new(h->seen, rein_ledger_entry_to_json(entry));
    pthread_mutex_unlock(&h->lock);
    return h->fail_with;
}

static void test_ledger_is_pending_before_execution(void **state)
{
    rein_registry *reg = fixture();
    rein_ledger *ledger = rein_ledger_new();
    struct hook_log h = {PTHREAD_MUTEX_INITIALIZER, json_array(), REIN_OK};
    struct rein_call_opts opts = {.ledger = ledger};
    struct rein_call_input in = {.name = "echo",
                                 .args_text = "{\"text\":\"x\"}",
                                 .args_len = 12,
                                 .has_step = true,
                                 .step = 2};
    rein_call_result *res;

    (void)state;
    rein_ledger_set_hook(ledger, record_hook, &h);
    assert_rein_ok(rein_call_run(reg, &in, &opts, &res, NULL), NULL);
    assert_int_equal(json_array_size(h.seen), 2);
    json_t *first = json_array_get(h.seen, 0), *second = json_array_get(h.seen, 1);
    assert_string_equal(str(first, "status"), "pending");
    assert_true(json_is_null(json_object_get(first, "result")));
    assert_true(json_is_null(json_object_get(first, "response_time")));
    assert_string_equal(str(second, "status"), "success");
    assert_string_equal(str(second, "result"), "x");
    assert_int_equal(json_integer_value(json_object_get(second, "step")), 2);
    assert_string_equal(str(second, "call_id"), rein_call_result_call_id(res));
    assert_non_null(strchr(str(second, "response_time"), 'T'));
    assert_true(rein_ledger_verify(ledger, true, 2));
    /* The result carries the same entry. */
    assert_true(json_equal(second, (json_t *)rein_call_result_ledger_json(res)));
    rein_call_result_free(res);
    json_decref(h.seen);
    rein_ledger_free(ledger);
    rein_registry_free(reg);
}

static void test_unrecorded_call_does_not_run(void **state)
{
    rein_registry *reg = fixture();
    rein_ledger *ledger = rein_ledger_new();
    struct hook_log h = {PTHREAD_MUTEX_INITIALIZER, json_array(), REIN_ESTORE};
    struct rein_call_opts opts = {.ledger = ledger};
    int runs = args_runs;
    rein_call_result *res;

    (void)state;
    rein_ledger_set_hook(ledger, record_hook, &h);
    res = call(reg, "read", "{\"filePath\": \"a\"}", &opts);
    assert_int_equal(rein_call_result_code(res), REIN_CALL_INTERNAL);
    assert_non_null(strstr(rein_call_result_message(res), "could not be recorded"));
    assert_int_equal(args_runs, runs);
    /* The entry that was written pending is closed, not left pending. */
    assert_int_equal(rein_ledger_pending_count(ledger, true, false, 0), 0);
    rein_call_result_free(res);
    json_decref(h.seen);
    rein_ledger_free(ledger);
    rein_registry_free(reg);
}

struct par {
    const rein_registry *reg;
    rein_ledger *ledger;
    int ok;
};

static void *many_calls(void *arg)
{
    struct par *p = arg;
    struct rein_call_opts opts = {.ledger = p->ledger};

    for (int i = 0; i < 200; i++) {
        char args[64];
        snprintf(args, sizeof(args), "{\"text\": \"%d\"}", i);
        struct rein_call_input in = {
            .name = i % 2 ? "echo" : "Echo", .args_text = args, .args_len = strlen(args)};
        rein_call_result *res = NULL;
        char want[16];
        snprintf(want, sizeof(want), "%d", i);
        if (rein_call_run(p->reg, &in, &opts, &res, NULL) == REIN_OK && rein_call_result_ok(res) &&
            strcmp(json_string_value(rein_call_result_output(res)), want) != 0)
            p->ok = -1;
        else if (res && rein_call_result_ok(res) && p->ok >= 0)
            p->ok++;
        rein_call_result_free(res);
    }
    return NULL;
}

static void test_parallel_calls_on_one_registry_and_ledger(void **state)
{
    rein_registry *reg = fixture();
    rein_ledger *ledger = rein_ledger_new();
    pthread_t t[8];
    struct par p[8];

    (void)state;
    for (int i = 0; i < 8; i++) {
        p[i] = (struct par){reg, ledger, 0};
        assert_int_equal(pthread_create(&t[i], NULL, many_calls, &p[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(p[i].ok, 200);
    }
    assert_int_equal(rein_ledger_count(ledger), 1600);
    assert_int_equal(rein_ledger_pending_count(ledger, true, false, 0), 0);
    rein_ledger_free(ledger);
    rein_registry_free(reg);
}

/* ---- manifests and the registry ---- */

static void test_bad_manifests_are_refused_with_a_pointer(void **state)
{
    static const struct {
        const char *manifest, *pointer;
    } cases[] = {
        {"{\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}", "/id"},
        {"{\"id\":\"has space\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}",
         "/id"},
        {"{\"id\":\"t\",\"description\":\"d\",\"parameters\":{\"type\":\"array\"}}",
         "/parameters/type"},
        {"{\"id\":\"t\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"},"
         "\"destuctive\":true}",
         "/: additional property \"destuctive\""},
        {"{\"id\":\"t\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"},"
         "\"timeout_ms\":\"fast\"}",
         "/timeout_ms"},
        {"{\"id\":\"t\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"},"
         "\"routes\":[\"ok\",\"(unclosed\"]}",
         "/routes/1"},
        {"{\"id\":\"t\",\"description\":\"d\",\"parameters\":{\"type\":\"object\","
         "\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":\"one\"}}}}",
         "/parameters/properties/n/minimum"},
        {"{\"id\":\"t\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"},"
         "\"runner\":{\"kind\":\"ftp\"}}",
         "/runner/kind"},
        {"{\"id\":\"t\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"},"
         "\"runner\":{\"kind\":\"process\"}}",
         "/runner/command"},
        {"{\"id\":\"t\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"},"
         "\"runner\":{\"kind\":\"http\",\"url\":\"ftp://x\"}}",
         "/runner/url"},
        {"{\"id\":\"t\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"},"
         "\"read_only\":true,\"destructive\":true}",
         "/read_only"},
        {"{\"id\":\"t\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}",
         "/runner/kind"}, /* a file has no C function behind it */
    };
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);

    (void)state;
    assert_rein_ok(rein_skills_register_runners(reg, &err), &err);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *m = rein_json_parse(cases[i].manifest, strlen(cases[i].manifest), 0, NULL);
        assert_non_null(m);
        rein_error_clear(&err);
        assert_true(rein_registry_add_manifest(reg, m, NULL, "test", &err) < 0);
        if (strncmp(err.msg, cases[i].pointer, strlen(cases[i].pointer)) != 0) {
            print_error("case %zu: \"%s\" does not start with %s\n", i, err.msg, cases[i].pointer);
            fail();
        }
        json_decref(m);
    }
    /* A pointer longer than the message still leads it (found by fuzz_manifest). */
    char *m = NULL;
    char key[301];
    memset(key, 'k', 300);
    key[300] = '\0';
    assert_true(asprintf(&m,
                         "{\"id\":\"t\",\"description\":\"d\",\"parameters\":{\"type\":"
                         "\"object\"},\"runner\":{\"kind\":\"http\",\"url\":\"http://x\","
                         "\"headers\":{\"%s\":5}}}",
                         key) > 0);
    json_t *doc = rein_json_parse(m, strlen(m), 0, NULL);
    free(m);
    rein_error_clear(&err);
    assert_int_equal(rein_registry_add_manifest(reg, doc, NULL, "test", &err), REIN_ESCHEMA);
    assert_true(strncmp(err.msg, "/runner/headers/kkkk", 20) == 0);
    json_decref(doc);
    assert_int_equal(rein_registry_count(reg), 0);
    rein_registry_free(reg);
}

static void test_duplicate_ids_are_refused(void **state)
{
    rein_registry *reg = fixture();
    json_t *m = json_pack("{s:s, s:s, s:{s:s}}", "id", "echo", "description", "again", "parameters",
                          "type", "object");
    rein_error err;

    (void)state;
    assert_int_equal(rein_registry_add_builtin(reg, m, return_args, NULL, NULL, &err), REIN_EEXIST);
    json_decref(m);
    rein_registry_free(reg);
}

static void test_load_dir_keeps_good_and_reports_bad(void **state)
{
    char *dir = test_tmpdir(), manifest[1024];
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    size_t loaded = 0;
    const json_t *problems;

    (void)state;
    assert_rein_ok(rein_skills_register_runners(reg, &err), &err);
    snprintf(manifest, sizeof(manifest),
             "{\"id\":\"proc_echo\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"},"
             "\"runner\":{\"kind\":\"process\",\"command\":[\"%s/skill_proc\",\"echo\"]}}",
             test_bin_dir());
    free(test_write_file(dir, "a_good/manifest.json", manifest));
    free(test_write_file(dir, "b_bad/manifest.json",
                         "{\"id\":\"bad\",\"description\":\"d\",\"parameters\":{\"type\":"
                         "\"object\"},\"timeout_ms\":-5,\"runner\":{\"kind\":\"process\","
                         "\"command\":[\"x\"]}}"));
    free(test_write_file(dir, "c_broken/manifest.json", "{\"id\": "));
    free(test_write_file(dir, "d_no_manifest/readme.txt", "nothing here"));
    assert_rein_ok(rein_registry_load_dir(reg, dir, &loaded, &err), &err);
    assert_int_equal(loaded, 1);
    assert_non_null(rein_registry_get(reg, "proc_echo"));
    problems = rein_registry_problems(reg);
    assert_int_equal(json_array_size(problems), 2);
    assert_non_null(strstr(str(json_array_get(problems, 0), "file"), "b_bad/manifest.json"));
    assert_string_equal(str(json_array_get(problems, 0), "pointer"), "/timeout_ms");
    assert_non_null(strstr(str(json_array_get(problems, 1), "file"), "c_broken/manifest.json"));
    /* A path list skips what is missing and records it. */
    char list[2048];
    snprintf(list, sizeof(list), "%s/nope::%s", dir, dir);
    assert_rein_ok(rein_registry_load_path(reg, list, &loaded, &err), &err);
    assert_int_equal(loaded, 0); /* proc_echo is already there: refused as a duplicate */
    assert_true(json_array_size(problems) >= 4);
    test_rmtree(dir);
    free(dir);
    rein_registry_free(reg);
}

static void test_tool_lists_for_each_wire_format(void **state)
{
    rein_registry *reg = fixture();
    json_t *openai = rein_registry_tools_json(reg, REIN_TOOLS_OPENAI);
    json_t *anthropic = rein_registry_tools_json(reg, REIN_TOOLS_ANTHROPIC);
    json_t *mcp = rein_registry_tools_json(reg, REIN_TOOLS_MCP);
    const json_t *params = rein_tool_parameters(rein_registry_get(reg, "read"));

    (void)state;
    assert_int_equal(json_array_size(openai), rein_registry_count(reg));
    json_t *o = json_array_get(openai, 0);
    assert_string_equal(str(o, "type"), "function");
    assert_string_equal(str(json_object_get(o, "function"), "name"), "read");
    assert_true(json_equal(json_object_get(json_object_get(o, "function"), "parameters"),
                           (json_t *)params));
    json_t *a = json_array_get(anthropic, 0);
    assert_string_equal(str(a, "name"), "read");
    assert_true(json_equal(json_object_get(a, "input_schema"), (json_t *)params));
    json_t *m = json_array_get(mcp, 1); /* echo */
    assert_string_equal(str(m, "name"), "echo");
    assert_true(json_equal(json_object_get(m, "inputSchema"),
                           (json_t *)rein_tool_parameters(rein_registry_get(reg, "echo"))));
    json_t *ann = json_object_get(m, "annotations");
    assert_true(json_is_true(json_object_get(ann, "readOnlyHint")));
    assert_true(json_is_false(json_object_get(ann, "destructiveHint")));
    json_t *del = json_array_get(mcp, 6); /* delete_file */
    assert_string_equal(str(del, "name"), "delete_file");
    assert_true(
        json_is_true(json_object_get(json_object_get(del, "annotations"), "destructiveHint")));
    json_decref(openai);
    json_decref(anthropic);
    json_decref(mcp);
    rein_registry_free(reg);
}

static void test_routes_capture_named_groups(void **state)
{
    /* the built-in skills are routed by the rules router's rows; "routes" are for the others */
    static const char manifest[] =
        "{\"id\": \"say\", \"description\": \"Say it\", \"parameters\": {\"type\": "
        "\"object\", \"properties\": {\"text\": {\"type\": \"string\"}}},"
        " \"runner\": {\"kind\": \"process\", \"command\": [\"true\"]},"
        " \"routes\": [\"^(?:say|说)\\\\s*(?:包含)?\\\\s*['\\\"]?(?<text>[^'\\\"]+?)['\\\"]?"
        "\\\\s*(?:的文件)?$\"]}";
    rein_registry *reg = fixture();
    const rein_tool *say;
    const char *zh = "说包含 'calculator' 的文件";
    json_t *cap = NULL, *m = json_loads(manifest, 0, NULL);
    rein_error err;

    (void)state;
    assert_non_null(m);
    assert_rein_ok(rein_skills_register_runners(reg, &err), &err);
    assert_rein_ok(rein_registry_add_manifest(reg, m, "/tmp", "test", &err), &err);
    json_decref(m);
    say = rein_registry_get(reg, "say");
    assert_int_equal(rein_tool_route_count(say), 1);
    assert_rein_ok(rein_tool_route_match(say, 0, "say hello", 9, &cap, &err), &err);
    assert_json_eq(cap, "{\"text\":\"hello\"}");
    json_decref(cap);
    assert_int_equal(rein_tool_route_match(say, 0, "hello", 5, &cap, &err), REIN_ENOTFOUND);
    assert_null(cap);
    assert_rein_ok(rein_tool_route_match(say, 0, zh, strlen(zh), &cap, &err), &err);
    assert_json_eq(cap, "{\"text\":\"calculator\"}");
    json_decref(cap);
    assert_int_equal(rein_tool_route_match(say, 9, "x", 1, NULL, &err), REIN_EINVAL);
    rein_registry_free(reg);
}

/* A runner kind of its own, as the MCP module will add: a vtable and nothing else. */
static rein_err constant_invoke(void *state, const struct rein_invocation *inv,
                                struct rein_tool_reply *reply, rein_error *err)
{
    (void)err;
    reply->output = json_pack("{s:s, s:s, s:O}", "from", state ? (const char *)state : "open-less",
                              "tool", rein_tool_id(inv->tool), "args", inv->args);
    return REIN_OK;
}

static rein_err constant_open(const json_t *runner, const char *base_dir, void **state,
                              rein_error *err)
{
    (void)base_dir;
    (void)err;
    *state = rein_strdup(json_string_value(json_object_get(runner, "reply")));
    return REIN_OK;
}

static void constant_close(void *state)
{
    rein_free(state);
}

static const struct rein_runner_kind constant_kind = {
    .name = "constant",
    .schema = "{\"type\":\"object\",\"required\":[\"kind\",\"reply\"],"
              "\"properties\":{\"reply\":{\"type\":\"string\"}}}",
    .open = constant_open,
    .invoke = constant_invoke,
    .close = constant_close,
};

static const struct rein_runner_kind bare_kind = {.name = "bare", .invoke = constant_invoke};

static void test_a_new_runner_kind_is_one_vtable(void **state)
{
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    rein_call_result *res;
    json_t *m;

    (void)state;
    assert_rein_ok(rein_registry_add_runner_kind(reg, &constant_kind, &err), &err);
    assert_rein_ok(rein_registry_add_runner_kind(reg, &bare_kind, &err), &err);
    assert_int_equal(rein_registry_add_runner_kind(reg, &bare_kind, &err), REIN_EEXIST);
    /* From a manifest: the kind's schema checks its runner object, then open runs. */
    m = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s}}", "id", "const", "description", "d",
                  "parameters", "type", "object", "runner", "kind", "constant", "reply", "hi");
    assert_rein_ok(rein_registry_add_manifest(reg, m, NULL, "test", &err), &err);
    json_decref(m);
    m = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "id", "const2", "description", "d", "parameters",
                  "type", "object", "runner", "kind", "constant");
    assert_int_equal(rein_registry_add_manifest(reg, m, NULL, "test", &err), REIN_ESCHEMA);
    assert_true(strncmp(err.msg, "/runner/reply", 13) == 0);
    json_decref(m);
    /* A kind without open runs with no state; one given directly runs with the caller's. */
    m = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "id", "bare", "description", "d", "parameters",
                  "type", "object", "runner", "kind", "bare");
    assert_rein_ok(rein_registry_add_manifest(reg, m, NULL, "test", &err), &err);
    json_decref(m);
    m = json_pack("{s:s, s:s, s:{s:s}}", "id", "direct", "description", "d", "parameters", "type",
                  "object");
    assert_rein_ok(rein_registry_add_tool(reg, m, &constant_kind, rein_strdup("direct"), &err),
                   &err);
    json_decref(m);
    res = call(reg, "const", "{\"x\": 1}", NULL);
    assert_json_eq(rein_call_result_output(res),
                   "{\"from\":\"hi\",\"tool\":\"const\",\"args\":{\"x\":1}}");
    rein_call_result_free(res);
    res = call(reg, "bare", "{}", NULL);
    assert_json_eq(rein_call_result_output(res),
                   "{\"from\":\"open-less\",\"tool\":\"bare\",\"args\":{}}");
    rein_call_result_free(res);
    res = call(reg, "direct", "{}", NULL);
    assert_json_eq(rein_call_result_output(res),
                   "{\"from\":\"direct\",\"tool\":\"direct\",\"args\":{}}");
    assert_string_equal(rein_tool_runner_kind(rein_registry_get(reg, "direct")), "constant");
    rein_call_result_free(res);
    rein_registry_free(reg);
}

/* ---- fault injection ---- */

static void run_calls(void *arg)
{
    rein_registry *reg = arg;
    rein_ledger *ledger = rein_ledger_new();
    struct rein_call_opts opts = {.ledger = ledger};
    static const char *const calls[][2] = {
        {"Echo", "{\"text\":\"hi\"}"},     {"read", "{}"}, {"⚙", ""}, {"nope", "{"},
        {"list_files", "{\"dir\":\"x\"}"},
    };

    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        struct rein_call_input in = {.call_id = "call_1",
                                     .name = calls[i][0],
                                     .args_text = calls[i][1],
                                     .args_len = strlen(calls[i][1]),
                                     .trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"};
        rein_call_result *res = NULL;
        if (rein_call_run(reg, &in, ledger ? &opts : NULL, &res, NULL) == REIN_OK) {
            (void)rein_call_result_model_json(res);
            (void)rein_call_result_ledger_json(res);
        }
        rein_call_result_free(res);
    }
    rein_ledger_free(ledger);
}

static void test_calls_survive_every_allocation_failure(void **state)
{
    rein_registry *reg = fixture();

    (void)state;
    test_alloc_install();
    test_alloc_torture(run_calls, reg);
    rein_set_allocator(NULL);
    rein_registry_free(reg);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_empty_args_to_required_field_give_invalid_payload),
    cmocka_unit_test(test_gear_symbol_is_invalid_name),
    cmocka_unit_test(test_wrong_case_name_is_repaired_and_run),
    cmocka_unit_test(test_missing_required_field_among_others),
    cmocka_unit_test(test_invalid_names_say_what_is_wrong),
    cmocka_unit_test(test_invalid_name_with_nul_through_pipeline),
    cmocka_unit_test(test_repair_steps_in_order),
    cmocka_unit_test(test_repair_never_guesses),
    cmocka_unit_test(test_unknown_tool_lists_the_available_tools),
    cmocka_unit_test(test_empty_string_means_no_arguments),
    cmocka_unit_test(test_broken_json_is_reported_with_position),
    cmocka_unit_test(test_arguments_must_be_one_object),
    cmocka_unit_test(test_integers_beyond_64_bits_are_refused_with_a_hint),
    cmocka_unit_test(test_arguments_as_a_value),
    cmocka_unit_test(test_arguments_over_the_size_limit),
    cmocka_unit_test(test_preflight_reports_every_error),
    cmocka_unit_test(test_defaults_are_filled_in),
    cmocka_unit_test(test_lent_args_read_in_place_unless_defaults),
    cmocka_unit_test(test_policy_denies_before_execution),
    cmocka_unit_test(test_repair_never_lands_on_a_destructive_tool),
    cmocka_unit_test(test_exact_name_repairs_nothing),
    cmocka_unit_test(test_tools_join_and_leave_while_in_use),
    cmocka_unit_test(test_output_schema_is_checked),
    cmocka_unit_test(test_timeout_stops_a_builtin),
    cmocka_unit_test(test_cancel_stops_a_running_call),
    cmocka_unit_test(test_normalized_result_shape),
    cmocka_unit_test(test_ids_are_made_when_missing),
    cmocka_unit_test(test_check_only_runs_nothing),
    cmocka_unit_test(test_check_reads_the_callers_document),
    cmocka_unit_test(test_ledger_is_pending_before_execution),
    cmocka_unit_test(test_unrecorded_call_does_not_run),
    cmocka_unit_test(test_parallel_calls_on_one_registry_and_ledger),
    cmocka_unit_test(test_bad_manifests_are_refused_with_a_pointer),
    cmocka_unit_test(test_duplicate_ids_are_refused),
    cmocka_unit_test(test_load_dir_keeps_good_and_reports_bad),
    cmocka_unit_test(test_tool_lists_for_each_wire_format),
    cmocka_unit_test(test_routes_capture_named_groups),
    cmocka_unit_test(test_a_new_runner_kind_is_one_vtable),
    cmocka_unit_test(test_calls_survive_every_allocation_failure),
};

REIN_TEST_MAIN(tests)
