/*
 * The rein side of bench/bigarg.sh: one model reply (OpenAI SSE) whose only tool call carries
 * one large `arguments` value, decoded as the provider adapters decode it (SSE framing, the
 * chunk's fields, the assembler, the arguments parsed into a document) and the arguments then
 * validated against the tool's parameter schema, fed from memory in 16 KiB pieces. Prints
 * "<MB/s of the reply> <MB/s of the arguments> <page faults>" for the best of RUNS runs (the
 * faults: the pages the run touched first, most of them the document's jansson values);
 * freeing the reply and the document is not timed (Node's side does not time its garbage
 * collection either).
 * MODE "doc" (the default) validates the call's document (rein_model_call_document,
 * rein_schema_validate_doc: no jansson tree is made for a valid argument), as the gateway's
 * check and a caller of the library do; "tree" asks for the arguments as a jansson tree
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
    bool tree;

    if (argc < 3) {
        fprintf(stderr, "usage: bigarg_bench SSE-FILE SCHEMA-FILE [RUNS [doc|tree]]\n");
        return 2;
    }
    runs = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 3;
    tree = argc > 4 && strcmp(argv[4], "tree") == 0;
    data = slurp(argv[1], &size);
    schema_text = slurp(argv[2], &schema_size);
    schema_doc = schema_text ? rein_json_parse(schema_text, (size_t)schema_size, 0, &err) : NULL;
    schema = schema_doc ? rein_schema_compile(schema_doc, NULL, &err) : NULL;
    if (!data || !schema) {
        fprintf(stderr, "bigarg_bench: cannot read %s or %s\n", argv[1], argv[2]);
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
        if (tree)
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
    json_decref(schema_doc);
    free(schema_text);
    free(data);
    return 0;
}
