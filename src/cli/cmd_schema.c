/*
 * `rein schema check SCHEMA.json INSTANCE.json [--json] [--format-assert] [--draft D]
 * [--ref-dir DIR]`: validates one JSON document against a JSON Schema (the draft its $schema
 * names, else --draft, else 2020-12) and prints `valid` or one error per line, "<instance
 * path>: <message>", the same words a model reads when it has to fix its tool arguments. Exit
 * 0 valid, 1 invalid, 2 when a file or the schema cannot be used (the message says which file
 * and where). Either file may be "-" (stdin). Remote $refs resolve to the schemas in --ref-dir
 * (by their $id); nothing is fetched.
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SCHEMA_MAX_BYTES ((size_t)64 << 20)
#define REF_DIR_DEPTH    8

struct check_opts {
    struct cli_setup setup; /* --json */
    struct rein_schema_options schema;
    const char *ref_dir;
    const char *files[2];
    unsigned nfiles;
};

static void schema_usage(FILE *out)
{
    fprintf(out, "usage: rein schema check [options] SCHEMA.json INSTANCE.json\n\n"
                 "  check   validate a JSON document against a JSON Schema\n\n"
                 "'rein schema check --help' describes its options.\n"
                 "Exit status: 0 valid, 1 invalid, 2 usage or unusable input.\n");
}

static void check_usage(FILE *out)
{
    fprintf(out,
            "usage: rein schema check [--json] [--format-assert] [--draft D] [--ref-dir DIR]\n"
            "                         SCHEMA.json INSTANCE.json\n\n"
            "Validates INSTANCE.json against SCHEMA.json and prints `valid` or one error per\n"
            "line (`/path: message`). Either file may be - (stdin).\n\n"
            "  --json            print {\"valid\", \"errors\": [...]} instead\n"
            "  --format-assert   check \"format\" (date-time, email, uri, ...) instead of\n"
            "                    treating it as an annotation\n"
            "  --draft D         the dialect of a schema without $schema: 2020-12 (default),\n"
            "                    2019-09 or 7 (draft-07; 4 and 6 are read as 7)\n"
            "  --ref-dir DIR     schemas that remote $refs resolve to: every *.json under DIR,\n"
            "                    known by its $id (or its file:// path); nothing is fetched\n"
            "  --config FILE     rein's configuration file (default REIN_CONFIG)\n\n"
            "Exit status: 0 valid, 1 invalid, 2 usage or unusable input (the message names the\n"
            "file and the place).\n");
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

/* The JSON document at path ("-": stdin; what: "schema" or "instance" for messages). */
static json_t *load_doc(const char *path, const char *what)
{
    char *text = NULL;
    size_t len = 0, good;
    rein_error err = {0};
    json_t *doc;

    rein_error_clear(&err);
    if (strcmp(path, "-") == 0) {
        if (cli_read_stdin(&text, &len) != CLI_EXIT_OK)
            return NULL;
        path = "stdin";
    } else if (rein_read_file(path, SCHEMA_MAX_BYTES, &text, &len, &err) != REIN_OK) {
        fprintf(stderr, "rein: schema check: %s file %s\n", what, err.msg);
        return NULL;
    }
    good = rein_utf8_valid_prefix(text, len);
    if (good < len) {
        fprintf(stderr, "rein: schema check: %s file %s: not valid UTF-8 at byte %zu\n", what, path,
                good + 1);
        rein_free(text);
        return NULL;
    }
    /* \u0000 is valid JSON: a string may hold it (rein_json_parse allows it). */
    doc = rein_json_parse(text, len, 0, &err);
    if (!doc) {
        char *tail = strstr(err.msg, " at line ");
        if (tail)
            *tail = '\0';
        fprintf(stderr, "rein: schema check: %s file %s:%d:%d: %s\n", what, path, err.line,
                err.column, err.msg);
    }
    rein_free(text);
    return doc;
}

/* Registers every *.json under dir (depth levels deep) by its $id, else its file:// URI. */
static int add_ref_dir(rein_schema_registry *reg, const char *dir, int depth)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int rc = CLI_EXIT_OK;

    if (!d)
        return cli_usage_error("schema check: --ref-dir %s: %s", dir, strerror(errno));
    while (rc == CLI_EXIT_OK && (e = readdir(d)) != NULL) {
        char path[PATH_MAX], abs[PATH_MAX], uri[PATH_MAX + 8] = "";
        size_t n = strlen(e->d_name);
        struct stat st;
        const char *id;
        json_t *doc;
        rein_error err = {0};
        if (e->d_name[0] == '.' ||
            (size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path) ||
            stat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth > 0)
                rc = add_ref_dir(reg, path, depth - 1);
            continue;
        }
        if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0)
            continue;
        doc = load_doc(path, "--ref-dir");
        if (!doc) {
            rc = CLI_EXIT_USAGE;
            break;
        }
        id = json_string_value(json_object_get(doc, "$id"));
        if (!id && realpath(path, abs))
            snprintf(uri, sizeof(uri), "file://%s", abs);
        else if (!id)
            snprintf(uri, sizeof(uri), "file://%s", path);
        rein_error_clear(&err);
        if (rein_schema_registry_add(reg, id ? id : uri, doc, &err) != REIN_OK &&
            err.code != REIN_EEXIST)
            rc = cli_usage_error("schema check: --ref-dir %s: %s", path, err.msg);
        json_decref(doc);
    }
    closedir(d);
    return rc;
}

/* "2020-12", "2019-09", "7" (and the other ways people write them). */
static bool parse_draft(const char *v, enum rein_schema_dialect *out)
{
    static const struct {
        const char *name;
        enum rein_schema_dialect d;
    } names[] = {
        {"2020-12", REIN_SCHEMA_DIALECT_2020_12}, {"2020", REIN_SCHEMA_DIALECT_2020_12},
        {"2019-09", REIN_SCHEMA_DIALECT_2019_09}, {"2019", REIN_SCHEMA_DIALECT_2019_09},
        {"7", REIN_SCHEMA_DIALECT_DRAFT7},        {"07", REIN_SCHEMA_DIALECT_DRAFT7},
        {"draft-07", REIN_SCHEMA_DIALECT_DRAFT7}, {"draft7", REIN_SCHEMA_DIALECT_DRAFT7},
        {"6", REIN_SCHEMA_DIALECT_DRAFT7},        {"draft-06", REIN_SCHEMA_DIALECT_DRAFT7},
        {"4", REIN_SCHEMA_DIALECT_DRAFT7},        {"draft-04", REIN_SCHEMA_DIALECT_DRAFT7}};

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(v, names[i].name) == 0) {
            *out = names[i].d;
            return true;
        }
    }
    return false;
}

static int check(const struct check_opts *o)
{
    const char *schema_path = o->files[0], *inst_path = o->files[1];
    struct rein_schema_options so = o->schema;
    rein_schema_registry *reg = NULL;
    rein_schema_result *res = NULL;
    rein_schema *schema = NULL;
    json_t *schema_doc, *inst = NULL;
    char abs[PATH_MAX], base[PATH_MAX + 8];
    rein_error err = {0};
    int status = CLI_EXIT_USAGE;
    rein_err rc;

    rein_error_clear(&err);
    if (strcmp(schema_path, "-") == 0 && strcmp(inst_path, "-") == 0)
        return cli_usage_error("schema check: only one of the files can be - (stdin)");
    schema_doc = load_doc(schema_path, "schema");
    if (!schema_doc)
        return CLI_EXIT_USAGE;
    inst = load_doc(inst_path, "instance");
    if (!inst)
        goto out;
    if (o->ref_dir) {
        reg = rein_schema_registry_new();
        if (!reg) {
            fprintf(stderr, "rein: out of memory\n");
            goto out;
        }
        if (add_ref_dir(reg, o->ref_dir, REF_DIR_DEPTH) != CLI_EXIT_OK)
            goto out;
        so.registry = reg;
    }
    /* Relative $refs of a schema without $id resolve next to its file. */
    if (strcmp(schema_path, "-") != 0 && realpath(schema_path, abs)) {
        snprintf(base, sizeof(base), "file://%s", abs);
        so.base_uri = base;
    }
    schema = rein_schema_compile(schema_doc, &so, &err);
    if (!schema) {
        char *lib_hint = strstr(err.msg, "; register it with");
        if (lib_hint)
            *lib_hint = '\0';
        fprintf(stderr, "rein: schema check: %s: unusable schema: %s%s\n", schema_path, err.msg,
                err.code == REIN_ENOTFOUND && !o->ref_dir
                    ? " (put the referenced schemas in a folder and pass --ref-dir DIR)"
                    : "");
        goto out;
    }
    res = rein_schema_result_new();
    if (!res) {
        fprintf(stderr, "rein: out of memory\n");
        goto out;
    }
    rc = rein_schema_validate(schema, inst, 0, res, &err);
    if (rc != REIN_OK && rc != REIN_EINVALID) {
        fprintf(stderr, "rein: schema check: %s: cannot validate against %s: %s\n", inst_path,
                schema_path, err.msg);
        goto out;
    }
    if (o->setup.json) {
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
    rein_schema_registry_free(reg);
    json_decref(inst);
    json_decref(schema_doc);
    return status;
}

static int check_option(void *opts, const char *flag, const char *v)
{
    struct check_opts *o = opts;

    if (!v) {
        o->schema.format_assert = true; /* --format-assert */
    } else if (strcmp(flag, "--ref-dir") == 0) {
        o->ref_dir = v;
    } else if (!parse_draft(v, &o->schema.dialect)) {
        return cli_usage_error("schema check: --draft takes 2020-12, 2019-09 or 7, not '%s'", v);
    }
    return CLI_EXIT_OK;
}

static int cmd_check(int argc, char **argv)
{
    static const char *const valued[] = {"--draft", "--ref-dir", NULL};
    static const char *const switches[] = {"--format-assert", NULL};
    static const struct cli_args args = {
        .name = "schema check",
        .usage = check_usage,
        .shared = CLI_OPT_JSON,
        .valued = valued,
        .switches = switches,
        .option = check_option,
        .positional = "SCHEMA.json and INSTANCE.json",
        .min_pos = 2,
        .max_pos = 2,
        .path_pos = 3u,
    };
    struct check_opts o;
    int rc;

    memset(&o, 0, sizeof(o));
    rc = cli_args_parse(&args, argc, argv, &o, &o.setup, o.files, &o.nfiles);
    if (rc)
        return rc == CLI_ARGS_HELP ? CLI_EXIT_OK : rc;
    return check(&o);
}

int cmd_schema(int argc, char **argv)
{
    static const struct cli_command subs[] = {
        {"check", "validate a JSON document against a JSON Schema", cmd_check},
        {NULL, NULL, NULL},
    };

    return cli_dispatch("schema", subs, schema_usage, argc, argv);
}
