/*
 * The verdict program (src/schema/verdict.c) against the node walker: on the BFCL tool
 * schemas with their expected arguments and random argument objects, and on random schemas
 * made of the keywords the program flattens, every way of validating must reach the walker's
 * verdict: first error without a result (the program alone), first error with one, all
 * errors with and without one; with a result, the errors recorded along the program must be
 * the walker's, message for message. (test_schema_conformance compares them on the
 * JSON-Schema-Test-Suite.)
 *
 * The random-schema comparison is about 4 s of CPU under the sanitizers; on a machine at load
 * 30 it passed the default 60 s limit, hence: */
/* rein-test-timeout: 240 */
#include "test.h"

#include <dirent.h>

#include "schema_same.h"

#include "schema/schema_int.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

/* Validates inst every way and fails when a verdict differs from the walker's. */
static void agree(const rein_schema *schema, json_t *inst, rein_schema_result *res, size_t *valid,
                  size_t *invalid)
{
    rein_error err, counted, scratch;
    rein_err walk = rein__schema_walk(schema, inst, 0, NULL, &err);
    rein_err count = rein_schema_validate(schema, inst, 0, NULL, &counted);
    rein_err modes[] = {
        rein_schema_validate(schema, inst, REIN_SCHEMA_FIRST_ERROR, NULL, NULL),
        rein_schema_validate(schema, inst, REIN_SCHEMA_FIRST_ERROR, res, &scratch),
        rein_schema_validate(schema, inst, 0, res, &scratch),
        rein__schema_walk(schema, inst, REIN_SCHEMA_FIRST_ERROR, NULL, NULL),
    };

    assert_true(walk == REIN_OK || walk == REIN_EINVALID);
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (modes[i] != walk) {
            char *s = rein_json_dumps(inst);
            fail_msg("mode %zu: %s, the walker: %s, on %s", i, rein_err_name(modes[i]),
                     rein_err_name(walk), s);
        }
    }
    /* The program counts errors as the walker does ("N validation errors"). */
    if (count != walk || (walk == REIN_EINVALID && strcmp(counted.msg, err.msg) != 0)) {
        char *s = rein_json_dumps(inst);
        fail_msg("counted: %s \"%s\", the walker: %s \"%s\", on %s", rein_err_name(count),
                 counted.msg, rein_err_name(walk), err.msg, s);
    }
    /* With a result, the errors recorded along the program are the walker's, word for word. */
    for (int f = 0; f < 2; f++) {
        char why[512];
        if (!test_schema_same_errors(schema, inst, f ? REIN_SCHEMA_FIRST_ERROR : 0, why,
                                     sizeof(why))) {
            char *s = rein_json_dumps(inst);
            fail_msg("errors (%s): %s, on %s", f ? "first" : "all", why, s);
        }
        if (!test_schema_same_doc(schema, inst, f ? REIN_SCHEMA_FIRST_ERROR : 0, why,
                                  sizeof(why))) {
            char *s = rein_json_dumps(inst);
            fail_msg("the document (%s): %s, on %s", f ? "first" : "all", why, s);
        }
    }
    if (walk == REIN_OK)
        (*valid)++;
    else
        (*invalid)++;
}

/* A value of a random type, sometimes one the schema expects (kind: a "type" name). */
static json_t *random_value(const char *kind, int depth)
{
    static const char *const words[] = {"a",     "abc", "abcd",         "celsius", "fahrenheit",
                                        "units", "x",   "kg/m\xc2\xb3", ""};
    unsigned pick = kind && rnd(3) ? 100 : rnd(9);

    if (pick == 100) {
        if (!strcmp(kind, "string"))
            pick = 0;
        else if (!strcmp(kind, "integer"))
            pick = rnd(2) ? 1 : 8;
        else if (!strcmp(kind, "number"))
            pick = rnd(2) ? 2 : 1;
        else if (!strcmp(kind, "boolean"))
            pick = 3;
        else if (!strcmp(kind, "array"))
            pick = 5;
        else if (!strcmp(kind, "object"))
            pick = 6;
        else
            pick = rnd(9);
    }
    switch (pick) {
    case 0:
        return json_string(words[rnd(sizeof(words) / sizeof(words[0]))]);
    case 1:
        return json_integer((json_int_t)rnd(20) - 5);
    case 2:
        return json_real((double)rnd(100) / 8.0);
    case 3:
        return json_boolean(rnd(2));
    case 4:
        return json_null();
    case 5: {
        json_t *a = json_array();
        for (unsigned i = depth < 3 ? rnd(4) : 0; i; i--)
            json_array_append_new(a, random_value(kind && rnd(2) ? NULL : "string", depth + 1));
        return a;
    }
    case 6: {
        json_t *o = json_object();
        for (unsigned i = depth < 3 ? rnd(3) : 0; i; i--)
            json_object_set_new(o, words[rnd(6)], random_value(NULL, depth + 1));
        return o;
    }
    case 7:
        return json_string("10");
    default:
        return json_real((double)rnd(10)); /* an integral real: valid as "integer" */
    }
}

/* A random argument object for an object schema: its properties, some left out, some of
 * the wrong type, sometimes an extra one. */
static json_t *random_args(json_t *schema, json_t *answer)
{
    json_t *props = json_object_get(schema, "properties");
    json_t *o = answer && rnd(2) ? json_deep_copy(answer) : json_object();
    const char *key;
    json_t *p;

    json_object_foreach(props, key, p)
    {
        json_t *items = json_object_get(p, "items");
        if (rnd(5) == 0) {
            json_object_del(o, key);
            continue;
        }
        if (json_object_get(o, key) && rnd(2))
            continue;
        json_t *enm = json_object_get(p, "enum");
        if (json_array_size(enm) && rnd(2)) {
            json_object_set(o, key, json_array_get(enm, rnd((unsigned)json_array_size(enm))));
        } else if (items && rnd(2)) {
            json_t *a = json_array();
            for (unsigned i = rnd(4); i; i--)
                json_array_append_new(
                    a, random_value(json_string_value(json_object_get(items, "type")), 1));
            json_object_set_new(o, key, a);
        } else {
            json_object_set_new(o, key,
                                random_value(json_string_value(json_object_get(p, "type")), 0));
        }
    }
    if (rnd(6) == 0)
        json_object_set_new(o, "unexpected_extra", json_integer(1));
    return o;
}

/* BFCL's types in JSON Schema words (dict, float, tuple, any), as bench/schema_cases.py. */
static json_t *bfcl_fix(json_t *v)
{
    const char *key;
    json_t *item, *out;

    if (json_is_array(v)) {
        out = json_array();
        for (size_t i = 0; i < json_array_size(v); i++)
            json_array_append_new(out, bfcl_fix(json_array_get(v, i)));
        return out;
    }
    if (!json_is_object(v))
        return json_incref(v);
    out = json_object();
    json_object_foreach(v, key, item)
    {
        if (!strcmp(key, "type") && json_is_string(item)) {
            const char *t = json_string_value(item);
            if (!strcmp(t, "any"))
                continue;
            t = !strcmp(t, "dict")    ? "object"
                : !strcmp(t, "float") ? "number"
                : !strcmp(t, "tuple") ? "array"
                                      : t;
            json_object_set_new(out, key, json_string(t));
        } else if (!strcmp(key, "properties") && json_is_object(item)) {
            json_t *props = json_object();
            const char *pk;
            json_t *pv;
            json_object_foreach(item, pk, pv)
            {
                json_object_set_new(props, pk, bfcl_fix(pv));
            }
            json_object_set_new(out, key, props);
        } else if (!strcmp(key, "items") || !strcmp(key, "additionalProperties")) {
            json_object_set_new(out, key, bfcl_fix(item));
        } else {
            json_object_set(out, key, item);
        }
    }
    return out;
}

/* One JSON value per line of path (a BFCL file), as an array. */
static json_t *load_lines(const char *path)
{
    size_t len;
    char *text = test_read_file(path, &len);
    json_t *rows = json_array();

    for (char *line = text, *end; line && *line; line = end + 1) {
        rein_error err;
        end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        if (end > line) {
            json_t *v = rein_json_parse(line, (size_t)(end - line), 0, &err);
            if (v)
                json_array_append_new(rows, v);
        }
        if (!*end)
            break;
    }
    free(text);
    return rows;
}

/* The first acceptable argument object for function fname in a BFCL answer row, or NULL. */
static json_t *answer_args(json_t *answers, const char *id, const char *fname)
{
    size_t i, k;
    json_t *row, *call;

    json_array_foreach(answers, i, row)
    {
        if (strcmp(json_string_value(json_object_get(row, "id")), id) != 0)
            continue;
        json_array_foreach(json_object_get(row, "ground_truth"), k, call)
        {
            json_t *params = json_object_get(call, fname), *args, *opts;
            const char *pname;
            if (!params)
                continue;
            args = json_object();
            json_object_foreach(params, pname, opts)
            {
                for (size_t j = 0; j < json_array_size(opts); j++) {
                    json_t *o = json_array_get(opts, j);
                    if (json_is_string(o) && !json_string_length(o))
                        continue;
                    json_object_set(args, pname, o);
                    break;
                }
            }
            return args;
        }
    }
    return NULL;
}

static void verdict_matches_walker_on_bfcl(void **state)
{
    static const char *const files[] = {
        "BFCL_v4_simple_python.json",     "BFCL_v4_multiple.json",    "BFCL_v4_parallel.json",
        "BFCL_v4_parallel_multiple.json", "BFCL_v4_live_simple.json", "BFCL_v4_live_parallel.json",
    };
    const char *dir = test_require_shared("fixtures/bfcl");
    rein_schema_result *res = rein_schema_result_new();
    size_t valid = 0, invalid = 0, schemas = 0;

    (void)state;
    for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, files[f]);
        json_t *rows = load_lines(path);
        snprintf(path, sizeof(path), "%s/possible_answer/%s", dir, files[f]);
        json_t *answers = load_lines(path);
        size_t i, k;
        json_t *row, *fn;
        json_array_foreach(rows, i, row)
        {
            json_array_foreach(json_object_get(row, "function"), k, fn)
            {
                json_t *schema_doc = bfcl_fix(json_object_get(fn, "parameters"));
                json_t *answer = answer_args(answers, json_string_value(json_object_get(row, "id")),
                                             json_string_value(json_object_get(fn, "name")));
                rein_error err;
                rein_schema *schema = rein_schema_compile(schema_doc, NULL, &err);
                if (schema) {
                    schemas++;
                    if (answer)
                        agree(schema, answer, res, &valid, &invalid);
                    for (int r = 0; r < 12; r++) {
                        json_t *inst = random_args(schema_doc, answer);
                        agree(schema, inst, res, &valid, &invalid);
                        json_decref(inst);
                    }
                    rein_schema_free(schema);
                }
                json_decref(answer);
                json_decref(schema_doc);
            }
        }
        json_decref(rows);
        json_decref(answers);
    }
    print_message("%zu BFCL schemas: %zu valid and %zu invalid instances agree\n", schemas, valid,
                  invalid);
    assert_true(schemas > 1000);
    assert_true(valid > 1000 && invalid > 1000);
    rein_schema_result_free(res);
}

/* A random schema from the keywords the program flattens, with a general node now and then. */
static json_t *random_schema(int depth)
{
    static const char *const types[] = {"string", "integer", "number", "boolean",
                                        "null",   "array",   "object"};
    static const char *const names[] = {
        "a",         "abc",   "abcd",  "abcdefg",           "abcdefgh",
        "abcdefghi", "units", "a/b~c", "abcdefghijklmnopq", "x"};
    unsigned pick = depth > 2 ? rnd(3) : rnd(8);
    json_t *s;

    if (rnd(8) == 0)
        return json_boolean(rnd(2));
    s = json_object();
    if (pick < 3 && rnd(2)) {
        json_t *t = json_array();
        json_array_append_new(t, json_string(types[rnd(5)]));
        json_array_append_new(t, json_string(types[rnd(5)]));
        json_object_set_new(s, "type", t);
    } else if (pick < 3) {
        json_object_set_new(s, "type", json_string(types[rnd(5)]));
    }
    if (pick == 2) {
        json_t *e = json_array();
        json_array_append_new(e, json_string("abc"));
        json_array_append_new(e, json_string("units"));
        json_array_append_new(e, json_string(rnd(2) ? "" : "kg/m\xc2\xb3"));
        json_object_set_new(s, "enum", e);
    }
    if (pick == 3 || pick == 4) {
        json_object_set_new(s, "type", json_string("array"));
        if (rnd(3))
            json_object_set_new(s, "items", random_schema(depth + 1));
        if (rnd(3) == 0)
            json_object_set_new(s, "minItems", json_integer(rnd(3)));
        if (rnd(3) == 0)
            json_object_set_new(s, "maxItems", json_integer(rnd(4)));
    }
    if (pick >= 5) {
        json_t *props = json_object(), *req = json_array();
        unsigned n = rnd(2) ? rnd(4) : 9 + rnd(4); /* the hash-table path above 8 */
        if (rnd(4)) /* now and then a type the object keywords do not go with */
            json_object_set_new(s, "type", json_string(rnd(8) ? "object" : "string"));
        for (unsigned i = 0; i < n; i++) {
            const char *name = names[rnd(10)];
            char buf[32];
            if (n > 8) {
                snprintf(buf, sizeof(buf), "%s%u", name, i);
                name = buf;
            }
            json_object_set_new(props, name, random_schema(depth + 1));
            if (rnd(2))
                json_array_append_new(req, json_string(name));
        }
        if (rnd(5) == 0)
            json_array_append_new(req, json_string("only_required"));
        json_object_set_new(s, "properties", props);
        json_object_set_new(s, "required", req);
        if (rnd(3) == 0)
            json_object_set_new(s, "additionalProperties",
                                rnd(2) ? json_false() : random_schema(depth + 1));
        if (rnd(5) == 0)
            json_object_set_new(s, "minProperties", json_integer(rnd(3)));
        if (rnd(5) == 0)
            json_object_set_new(s, "maxProperties", json_integer(rnd(5)));
    }
    if (rnd(10) == 0) /* a keyword the program leaves to the walker */
        json_object_set_new(s, "minLength", json_integer(2));
    return s;
}

/* An instance shaped after schema (mostly), with random changes. */
static json_t *random_instance(json_t *schema, int depth)
{
    json_t *props = json_object_get(schema, "properties");
    json_t *items = json_object_get(schema, "items");
    json_t *type = json_object_get(schema, "type");
    const char *key;
    json_t *p;

    if (props && rnd(6)) {
        json_t *o = json_object();
        json_object_foreach(props, key, p)
        {
            if (rnd(5))
                json_object_set_new(o, key, random_instance(p, depth + 1));
        }
        if (rnd(6) == 0)
            json_object_set_new(o, rnd(2) ? "extra" : "only_required", json_integer(3));
        return o;
    }
    if (items && rnd(6)) {
        json_t *a = json_array();
        for (unsigned i = rnd(4); i; i--)
            json_array_append_new(a, random_instance(items, depth + 1));
        return a;
    }
    if (json_is_array(json_object_get(schema, "enum")) && rnd(2))
        return json_string(rnd(2) ? "units" : "unit");
    return random_value(json_is_string(type) ? json_string_value(type) : NULL, depth);
}

static void verdict_matches_walker_on_random_schemas(void **state)
{
    rein_schema_result *res = rein_schema_result_new();
    size_t valid = 0, invalid = 0;

    (void)state;
    for (int i = 0; i < 3000; i++) {
        json_t *doc = random_schema(0);
        rein_error err;
        rein_schema *schema = rein_schema_compile(doc, NULL, &err);
        if (!schema)
            fail_msg("cannot compile a random schema: %s", err.msg);
        for (int k = 0; k < 10; k++) {
            json_t *inst = random_instance(doc, 0);
            agree(schema, inst, res, &valid, &invalid);
            json_decref(inst);
        }
        rein_schema_free(schema);
        json_decref(doc);
    }
    print_message("random schemas: %zu valid and %zu invalid instances agree\n", valid, invalid);
    assert_true(valid > 3000 && invalid > 3000);
    rein_schema_result_free(res);
}

/* The count in err is the walker's, whichever way the verdict was reached. */
static void invalid_counts_every_error(void **state)
{
    rein_error err;
    json_t *doc =
        json_pack("{s:s, s:{s:{s:s}, s:{s:s}}, s:[s, s, s]}", "type", "object", "properties", "a",
                  "type", "integer", "b", "type", "string", "required", "a", "b", "c");
    json_t *three = json_pack("{s:s, s:i}", "a", "x", "b", 1);
    json_t *one = json_pack("{s:i, s:s}", "a", 1, "b", "x");
    rein_schema *schema = rein_schema_compile(doc, NULL, &err);

    (void)state;
    assert_non_null(schema);
    assert_int_equal(rein_schema_validate(schema, three, 0, NULL, &err), REIN_EINVALID);
    assert_string_equal(err.msg, "3 validation errors");
    assert_int_equal(rein_schema_validate(schema, one, 0, NULL, &err), REIN_EINVALID);
    assert_string_equal(err.msg, "1 validation error");
    assert_int_equal(rein_schema_validate(schema, three, REIN_SCHEMA_FIRST_ERROR, NULL, &err),
                     REIN_EINVALID);
    assert_string_equal(err.msg, "1 validation error");
    rein_schema_free(schema);
    json_decref(doc);
    json_decref(three);
    json_decref(one);
}

/* A $dynamicRef resolves to the outermost resource with the anchor, through members the
 * verdict program would otherwise walk without the walker's frames. */
static void dynamic_scope_seen_through_members(void **state)
{
    static const char schema_text[] =
        "{\"$id\": \"https://example.com/root\", \"$dynamicAnchor\": \"meta\","
        " \"type\": \"object\", \"maxProperties\": 1,"
        " \"properties\": {\"p\": {\"$id\": \"https://example.com/inner\","
        " \"$dynamicAnchor\": \"meta\", \"type\": \"object\","
        " \"properties\": {\"q\": {\"$dynamicRef\": \"#meta\"}}}}}";
    static const char inst_text[] = "{\"p\": {\"q\": {\"a\": 1, \"b\": 2}}}";
    rein_error err;
    json_t *doc = rein_json_parse(schema_text, sizeof(schema_text) - 1, 0, &err);
    json_t *inst = rein_json_parse(inst_text, sizeof(inst_text) - 1, 0, &err);
    rein_schema *schema = doc ? rein_schema_compile(doc, NULL, &err) : NULL;
    rein_schema_result *res = rein_schema_result_new();
    size_t valid = 0, invalid = 0;

    (void)state;
    assert_non_null(inst);
    if (!schema)
        fail_msg("cannot compile: %s", err.msg);
    /* q is checked against the root (at most one property), not against "inner". */
    assert_int_equal(rein__schema_walk(schema, inst, 0, NULL, NULL), REIN_EINVALID);
    agree(schema, inst, res, &valid, &invalid);
    rein_schema_result_free(res);
    rein_schema_free(schema);
    json_decref(doc);
    json_decref(inst);
}

/* Members read through the layout found at start are the members jansson's functions give,
 * in the same order: keys with NULs, long keys, after deletions and replacements. */
static void members_read_as_jansson_gives_them(void **state)
{
    json_t *obj = json_object();
    char key[64];

    (void)state;
    rein__members_init();
#if JANSSON_VERSION_HEX == 0x020e00
    assert_true(rein__mlayout.direct); /* Debian's jansson 2.14, which this was written for */
#else
    print_message("jansson %s: members read %s\n", JANSSON_VERSION,
                  rein__mlayout.direct ? "directly" : "through its functions");
#endif
    for (int i = 0; i < 300; i++) {
        int n = snprintf(key, sizeof(key), "k%d%s", i, i % 3 ? "" : "-a-longer-key-than-sixteen");
        if (i % 7 == 0)
            key[1] = '\0'; /* a NUL inside the key */
        json_object_setn_new_nocheck(obj, key, (size_t)n, json_integer(i));
    }
    for (int i = 0; i < 300; i += 5) {
        snprintf(key, sizeof(key), "k%d", i);
        json_object_del(obj, key);
        json_object_set_new(obj, key, json_string("again"));
    }
    for (int round = 0; round < 2; round++) {
        struct rein__members m;
        const char *k;
        size_t len, count = 0;
        json_t *val;
        void *it = json_object_iter(obj);
        rein__members_start(&m, obj);
        while (rein__members_next(&m, &k, &len, &val)) {
            assert_non_null(it);
            assert_ptr_equal(k, json_object_iter_key(it));
            assert_int_equal(len, json_object_iter_key_len(it));
            assert_ptr_equal(val, json_object_iter_value(it));
            it = json_object_iter_next(obj, it);
            count++;
        }
        assert_null(it);
        assert_int_equal(count, json_object_size(obj));
        json_object_clear(obj);
        json_object_set_new(obj, "only", json_true());
    }
    {
        /* No members: the list head points at itself. */
        struct rein__members m;
        const char *k;
        size_t len;
        json_t *val;
        json_object_clear(obj);
        rein__members_start(&m, obj);
        assert_false(rein__members_next(&m, &k, &len, &val));
    }
    json_decref(obj);
}

/*
 * A document has no index of its members by name: which required names it lacks is found by
 * marking its members in a bit per property, kept on the stack up to 512 properties and
 * allocated beyond. Both sizes, with names missing at either end and members in a shuffled
 * order, must give the walker's errors in the keyword's order.
 */
static void document_finds_missing_required_names(void **state)
{
    (void)state;
    for (int wide = 0; wide < 2; wide++) {
        size_t nprops = wide ? 700 : 40;
        json_t *props = json_object(), *req = json_array(), *inst = json_object();
        char name[32];
        size_t valid = 0, invalid = 0;
        unsigned *order = calloc(nprops, sizeof(*order));

        assert_non_null(order);
        for (size_t i = 0; i < nprops; i++) {
            snprintf(name, sizeof(name), "p%zu", i);
            json_object_set_new(props, name,
                                json_pack("{s:s}", "type", i % 3 ? "string" : "integer"));
            /* required in reverse order, every name but a few */
            snprintf(name, sizeof(name), "p%zu", nprops - 1 - i);
            if (i % 7)
                json_array_append_new(req, json_string(name));
            order[i] = (unsigned)i;
        }
        for (size_t i = nprops - 1; i > 0; i--) {
            unsigned j = rnd((unsigned)i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        json_t *doc =
            json_pack("{s:s,s:o,s:o}", "type", "object", "properties", props, "required", req);
        rein_error err;
        rein_schema *schema = rein_schema_compile(doc, NULL, &err);
        rein_schema_result *res = rein_schema_result_new();
        assert_non_null(schema);
        for (size_t i = 0; i < nprops; i++) {
            unsigned k = order[i];
            /* leave out the first and last names and every fifth one; a wrong type now and then */
            if (k == 0 || k == nprops - 1 || k % 5 == 0)
                continue;
            snprintf(name, sizeof(name), "p%u", k);
            json_object_set_new(inst, name,
                                k % 11 == 0 ? json_true()
                                : k % 3     ? json_string("x")
                                            : json_integer(k));
        }
        json_object_set_new(inst, "extra", json_null());
        agree(schema, inst, res, &valid, &invalid);
        assert_int_equal(invalid, 1);
        rein_schema_result_free(res);
        rein_schema_free(schema);
        json_decref(inst);
        json_decref(doc);
        free(order);
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(members_read_as_jansson_gives_them),
    cmocka_unit_test(dynamic_scope_seen_through_members),
    cmocka_unit_test(invalid_counts_every_error),
    cmocka_unit_test(verdict_matches_walker_on_bfcl),
    cmocka_unit_test(verdict_matches_walker_on_random_schemas),
    cmocka_unit_test(document_finds_missing_required_names),
};

REIN_TEST_MAIN(tests)
