/*
 * The rein side of bench/bigarg.sh: one model reply (OpenAI SSE) whose only tool call carries
 * one large `arguments` value, decoded as the provider adapters decode it (SSE framing, the
 * chunk's fields, the assembler, the arguments parsed into a document) and the arguments then
 * validated against the tool's parameter schema, fed from memory in 16 KiB pieces. Prints
 * "<MB/s of the reply> <MB/s of the arguments> <page faults>" for the best of RUNS runs (the
 * faults: the pages the run touched first, most of them the document's jansson values);
 * freeing the reply and the document is not timed (Node's side does not time its garbage
 * collection either).
 * MODE "check" (the default) hands the call to the call pipeline as the gateway's check does
 * (rein_call_run with the argument text, check_only, a tool of that schema): it reads the text
 * into a document of its own and validates that, making no jansson tree for a valid argument;
 * "doc" validates the decoder's document (rein_model_call_document, rein_schema_validate_doc),
 * as a library caller can; "tree" asks for the arguments as a jansson tree
 * (rein_model_call_arguments) and validates that, as a caller that needs the tree does.
 * Usage: bigarg_bench SSE-FILE SCHEMA-FILE [RUNS [MODE]]
 */
#include <rein/rein.h>

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define CHUNK 16384

static long minor_faults(void)
{
    struct rusage u;

    return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_minflt : 0;
}

static char *slurp(const char *path, long *size)
{
    FILE *f = fopen(path, "rb");
    char *data = NULL;

    if (f && fseek(f, 0, SEEK_END) == 0 && (*size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (data = malloc((size_t)*size + 1)) && fread(data, 1, (size_t)*size, f) == (size_t)*size)
        data[*size] = '\0';
    else {
        free(data);
        data = NULL;
    }
    if (f)
        fclose(f);
    return data;
}

/* Never runs: the check stops before a tool would. */
static rein_err never(void *userdata, const struct rein_invocation *inv,
                      struct rein_tool_reply *reply, rein_error *err)
{
    (void)userdata;
    (void)inv;
    (void)reply;
    return rein_error_set(err, REIN_EINTERNAL, "not run");
}

/* A registry with one tool, "write", whose parameters are schema (borrowed). */
static rein_registry *check_registry(json_t *schema)
{
    rein_error err;
    rein_registry *reg = rein_registry_new(&err);
    json_t *m = json_pack("{s:s, s:s, s:O}", "id", "write", "description", "the tool called",
                          "parameters", schema);

    if (!reg || !m || rein_registry_add_builtin(reg, m, never, NULL, NULL, &err) != REIN_OK) {
        rein_registry_free(reg);
        reg = NULL;
    }
    json_decref(m);
    return reg;
}

/* The gateway's check of one call: the pipeline up to the validation, with the raw text. */
static rein_err check_call(const rein_registry *reg, const rein_model_call *call)
{
    const char *raw = rein_model_call_raw_arguments(call);
    struct rein_call_input in = {
        .call_id = rein_model_call_id(call),
        .name = rein_model_call_name(call),
        .args_text = raw,
        .args_len = strlen(raw),
        .args_doc = rein_model_call_document(call),
    };
    /* The pipeline refuses arguments above 4 MiB unless the caller raises the limit. */
    struct rein_call_opts o = {.check_only = true, .max_args_bytes = (size_t)64 << 20};
    rein_call_result *res = NULL;
    rein_error err;
    rein_err rc = rein_call_run(reg, &in, &o, &res, &err);

    if (rc == REIN_OK && !rein_call_result_ok(res)) {
        fprintf(stderr, "bigarg_bench: %s\n", rein_call_result_message(res));
        rc = REIN_EINVALID;
    }
    rein_call_result_free(res);
    return rc;
}

int main(int argc, char **argv)
{
    long size = 0, schema_size = 0;
    char *data, *schema_text;
    json_t *schema_doc;
    rein_schema *schema;
    rein_error err;
    double best = 1e30;
    size_t args_len = 0;
    long best_faults = 0;
    int runs;
    const char *mode;
    bool tree, check;
    rein_registry *reg;

    if (argc < 3) {
        fprintf(stderr, "usage: bigarg_bench SSE-FILE SCHEMA-FILE [RUNS [doc|tree]]\n");
        return 2;
    }
    runs = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 3;
    mode = argc > 4 ? argv[4] : "check";
    tree = strcmp(mode, "tree") == 0;
    check = strcmp(mode, "check") == 0;

    data = slurp(argv[1], &size);
    schema_text = slurp(argv[2], &schema_size);
    schema_doc = schema_text ? rein_json_parse(schema_text, (size_t)schema_size, 0, &err) : NULL;
    schema = schema_doc ? rein_schema_compile(schema_doc, NULL, &err) : NULL;
    if (!data || !schema) {
        fprintf(stderr, "bigarg_bench: cannot read %s or %s\n", argv[1], argv[2]);
        return 2;
    }
    reg = check ? check_registry(schema_doc) : NULL;
    if (check && !reg) {
        fprintf(stderr, "bigarg_bench: cannot make the tool\n");
        return 2;
    }
    for (int r = 0; r < runs; r++) {
        rein_provider_decoder *d =
            rein_provider_decoder_new(REIN_WIRE_OPENAI_SSE, NULL, NULL, NULL);
        rein_model_response *resp = NULL;
        const rein_model_call *call;
        long f0 = minor_faults();
        int64_t t0 = rein_now_ns();
        rein_err rc = REIN_OK;

        for (long off = 0; off < size && rc == REIN_OK; off += CHUNK) {
            size_t n = (size_t)(size - off < CHUNK ? size - off : CHUNK);
            rc = rein_provider_decoder_feed(d, data + off, n, &err);
        }
        if (rc == REIN_OK)
            rc = rein_provider_decoder_finish(d, &resp, &err);
        if (rc != REIN_OK) {
            fprintf(stderr, "bigarg_bench: decode: %s\n", err.msg);
            return 1;
        }
        call = rein_model_response_call_count(resp) == 1 ? rein_model_response_call(resp, 0) : NULL;
        if (!call || !rein_model_call_document(call)) {
            fprintf(stderr, "bigarg_bench: the reply has no parsed call: %s\n",
                    call ? rein_model_call_error(call) : "no call");
            return 1;
        }
        if (check)
            rc = check_call(reg, call);
        else if (tree)
            rc = rein_schema_validate(schema, (json_t *)rein_model_call_arguments(call), 0, NULL,
                                      &err);
        else
            rc = rein_schema_validate_doc(schema, rein_model_call_document(call), 0, NULL, &err);
        if (rc != REIN_OK) {
            fprintf(stderr, "bigarg_bench: the arguments do not validate (%d)\n", rc);
            return 1;
        }
        double secs = (double)(rein_now_ns() - t0) / 1e9;
        long faults = minor_faults() - f0;
        args_len = strlen(rein_model_call_raw_arguments(call));
        rein_model_response_free(resp);
        rein_provider_decoder_free(d);
        /* The next run should not pay for this one's frees (glibc merges freed small chunks
         * at the next large allocation): as in a server, where that happens after the answer. */
        malloc_trim(0);
        if (secs < best) {
            best = secs;
            best_faults = faults;
        }
    }
    printf("%.1f %.1f %ld\n", (double)size / 1e6 / best, (double)args_len / 1e6 / best,
           best_faults);
    rein_schema_free(schema);
    rein_registry_free(reg);
    json_decref(schema_doc);
    free(schema_text);
    free(data);
    return 0;
}
