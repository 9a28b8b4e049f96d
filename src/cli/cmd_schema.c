/*
 * `rein schema check SCHEMA.json INSTANCE.json [--json] [--format-assert]`: validates one JSON
 * document against a JSON Schema (2020-12 by default, draft-07 by $schema) and prints `valid`
 * or one error per line, "<instance path>: <message>", the same words a model reads when it
 * has to fix its tool arguments. Exit 0 valid, 1 invalid, 2 when a file or the schema cannot
 * be used (the message says which file and where).
 */
#include "cli.h"

#include <string.h>

static void schema_usage(FILE *out)
{
    fprintf(out, "usage: rein schema check SCHEMA.json INSTANCE.json [--json] [--format-assert]\n\n"
                 "Validates INSTANCE.json against SCHEMA.json and prints `valid` or one error per\n"
                 "line (`/path: message`). --json prints {\"valid\", \"errors\": [...]} instead;\n"
                 "--format-assert checks \"format\" (date-time, email, uri, ...) instead of\n"
                 "treating it as an annotation. Exit 0 valid, 1 invalid, 2 unusable input.\n");
}

static void print_json(const rein_schema_result *res, bool valid)
{
    struct rein_buf b;
    struct rein_jw w;

    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "valid");
    rein_jw_bool(&w, valid);
    rein_jw_key(&w, "errors");
    rein_jw_arr_begin(&w);
    for (size_t i = 0; i < rein_schema_result_count(res); i++) {
        const char *prop = rein_schema_result_property(res, i);
        rein_jw_obj_begin(&w);
        rein_jw_key(&w, "instance_path");
        rein_jw_str(&w, rein_schema_result_instance_path(res, i));
        rein_jw_key(&w, "keyword_path");
        rein_jw_str(&w, rein_schema_result_keyword_path(res, i));
        rein_jw_key(&w, "keyword");
        rein_jw_str(&w, rein_schema_result_keyword(res, i));
        rein_jw_key(&w, "message");
        rein_jw_str(&w, rein_schema_result_message(res, i));
        if (prop) {
            rein_jw_key(&w, "property");
            rein_jw_str(&w, prop);
        }
        rein_jw_obj_end(&w);
    }
    rein_jw_arr_end(&w);
    rein_jw_obj_end(&w);
    if (rein_jw_finish(&w) == REIN_OK)
        printf("%s\n", b.ptr);
    rein_buf_release(&b);
}

static int check(const char *schema_path, const char *inst_path, bool as_json, bool format_assert)
{
    struct rein_schema_options opts = {0};
    rein_schema_result *res = NULL;
    rein_schema *schema = NULL;
    json_t *schema_doc, *inst = NULL;
    rein_error err;
    int status = CLI_EXIT_USAGE;
    rein_err rc;

    schema_doc = rein_json_load_file(schema_path, &err);
    if (!schema_doc) {
        fprintf(stderr, "rein: schema file %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    inst = rein_json_load_file(inst_path, &err);
    if (!inst) {
        fprintf(stderr, "rein: instance file %s\n", err.msg);
        goto out;
    }
    opts.format_assert = format_assert;
    schema = rein_schema_compile(schema_doc, &opts, &err);
    if (!schema) {
        fprintf(stderr, "rein: %s: unusable schema: %s\n", schema_path, err.msg);
        goto out;
    }
    res = rein_schema_result_new();
    if (!res) {
        fprintf(stderr, "rein: out of memory\n");
        goto out;
    }
    rc = rein_schema_validate(schema, inst, 0, res, &err);
    if (rc != REIN_OK && rc != REIN_EINVALID) {
        fprintf(stderr, "rein: %s: cannot validate against %s: %s\n", inst_path, schema_path,
                err.msg);
        goto out;
    }
    if (as_json) {
        print_json(res, rc == REIN_OK);
    } else if (rc == REIN_OK) {
        printf("valid\n");
    } else {
        for (size_t i = 0; i < rein_schema_result_count(res); i++) {
            const char *ip = rein_schema_result_instance_path(res, i);
            printf("%s: %s\n", ip[0] ? ip : "/", rein_schema_result_message(res, i));
        }
    }
    status = rc == REIN_OK ? CLI_EXIT_OK : CLI_EXIT_FAIL;
out:
    rein_schema_result_free(res);
    rein_schema_free(schema);
    json_decref(inst);
    json_decref(schema_doc);
    return status;
}

int cmd_schema(int argc, char **argv)
{
    const char *files[2];
    size_t nfiles = 0;
    bool as_json = false, format_assert = false;

    if (argc < 2 || cli_is_flag(argv[1], "-h", "--help")) {
        schema_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "check") != 0)
        return cli_usage_error("schema: unknown subcommand '%s' (try 'rein schema --help')",
                               argv[1]);
    for (int i = 2; i < argc; i++) {
        if (cli_is_flag(argv[i], NULL, "--json")) {
            as_json = true;
        } else if (cli_is_flag(argv[i], NULL, "--format-assert")) {
            format_assert = true;
        } else if (cli_is_flag(argv[i], "-h", "--help")) {
            schema_usage(stdout);
            return CLI_EXIT_OK;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("schema check: unknown option '%s'", argv[i]);
        } else if (nfiles < 2) {
            files[nfiles++] = argv[i];
        } else {
            return cli_usage_error("schema check: too many arguments");
        }
    }
    if (nfiles != 2)
        return cli_usage_error("schema check: need SCHEMA.json and INSTANCE.json");
    return check(files[0], files[1], as_json, format_assert);
}
