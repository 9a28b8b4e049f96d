/*
 * The rein side of bench/stream.sh: decodes a long recorded stream through the same code
 * the provider adapters use (rein_provider_decoder: SSE framing, jsmn per chunk, the
 * assembler, the events), fed from memory in 16 KiB pieces as a socket would deliver it,
 * and prints "<MB/s> <events/s> <events>" for the best of the runs.
 */
#include <rein/rein.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 16384

static void on_event(const struct rein_model_event *ev, void *ud)
{
    size_t *n = ud;

    *n += ev->len; /* the caller sees every delta, as the agent loop would */
}

int main(int argc, char **argv)
{
    enum rein_wire_format fmt;
    FILE *f;
    char *data;
    long size;
    int runs;
    double best = 1e30;
    size_t events = 0;

    if (argc < 3 || rein_wire_format_parse(argv[2], &fmt) != REIN_OK) {
        fprintf(stderr, "usage: stream_bench FILE FORMAT [RUNS]\n");
        return 2;
    }
    runs = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 5;
    f = fopen(argv[1], "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) != 0)
        return 2;
    data = malloc((size_t)size);
    if (!data || fread(data, 1, (size_t)size, f) != (size_t)size)
        return 2;
    fclose(f);
    for (int r = 0; r < runs; r++) {
        size_t seen = 0;
        rein_provider_decoder *d = rein_provider_decoder_new(fmt, NULL, on_event, &seen);
        rein_model_response *resp = NULL;
        rein_error err;
        int64_t t0 = rein_now_ns();
        for (long off = 0; off < size; off += CHUNK) {
            size_t n = (size_t)(size - off < CHUNK ? size - off : CHUNK);
            if (rein_provider_decoder_feed(d, data + off, n, &err) != REIN_OK) {
                fprintf(stderr, "decode: %s\n", err.msg);
                return 1;
            }
        }
        if (rein_provider_decoder_finish(d, &resp, &err) != REIN_OK) {
            fprintf(stderr, "decode: %s\n", err.msg);
            return 1;
        }
        double secs = (double)(rein_now_ns() - t0) / 1e9;
        events = rein_provider_decoder_event_count(d);
        rein_model_response_free(resp);
        rein_provider_decoder_free(d);
        if (secs < best)
            best = secs;
    }
    printf("%.1f %.0f %zu\n", (double)size / 1e6 / best, (double)events / best, events);
    free(data);
    return 0;
}
