/*
 * Claim extraction time against text size (issue 14: "extraction of a 1 MB text stays
 * linear"). Texts of 64 KiB to 4 MiB are built from the labelled corpus (tests/data/claims),
 * in three shapes: ordinary sentences, one run with no sentence end at all (the splitter's
 * worst case), and Chinese only. Each is extracted with the corpus's tool vocabulary, timed in
 * CPU time of this process (best of several runs), and printed as MB/s; a linear extractor
 * shows the same rate at every size.
 *
 * Usage: claims_bench CORPUS.tsv [ROUNDS]
 */
#include <rein/rein.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The sentences of the corpus (third column), those of one language or all. */
static char **sentences(const char *path, const char *lang, size_t *n)
{
    FILE *f = fopen(path, "r");
    char line[4096], **v = NULL;
    size_t cap = 0;

    *n = 0;
    if (!f)
        return NULL;
    while (fgets(line, sizeof(line), f)) {
        char *a = strchr(line, '\t'), *b = a ? strchr(a + 1, '\t') : NULL;
        if (line[0] == '#' || !b)
            continue;
        *a = '\0';
        *b = '\0';
        if (lang && strncmp(a + 1, lang, strlen(lang)) != 0)
            continue;
        b[strcspn(b + 1, "\n") + 1] = '\0';
        if (*n == cap) {
            cap = cap ? cap * 2 : 256;
            v = realloc(v, cap * sizeof(*v));
        }
        v[(*n)++] = strdup(b + 1);
    }
    fclose(f);
    return v;
}

/* size bytes of the sentences one after the other; without ends, every . ! ? 。is dropped. */
static char *text_of(char **s, size_t n, size_t size, int shape)
{
    char *t = malloc(size + 1);
    size_t k = 0, i = 0;

    while (k < size) {
        const char *x = s[i++ % n];
        for (size_t j = 0; x[j] && k < size; j++) {
            if (shape == 1 && (x[j] == '.' || x[j] == '!' || x[j] == '?'))
                continue;
            t[k++] = x[j];
        }
        if (k < size)
            t[k++] = shape == 1 ? ' ' : (i % 7 == 0 ? '\n' : ' ');
    }
    /* never end inside a UTF-8 character */
    while (k > 0 && ((unsigned char)t[k - 1] & 0xc0) == 0x80)
        k--;
    if (k > 0 && (unsigned char)t[k - 1] >= 0xc0)
        k--;
    t[k] = '\0';
    return t;
}

int main(int argc, char **argv)
{
    static const char *const tools[] = {
        "write_file",  "read_file",      "web_search",     "get_weather",   "send_email",
        "run_command", "query_database", "translate_text", "create_ticket", "fetch_url"};
    static const size_t sizes[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20};
    static const char *const shapes[] = {"sentences", "no sentence end", "Chinese only"};
    rein_error err;
    rein_registry *reg;
    rein_claims_vocab *v;
    int rounds = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 3;

    if (argc < 2) {
        fprintf(stderr, "usage: claims_bench CORPUS.tsv [ROUNDS]\n");
        return 2;
    }
    reg = rein_registry_new(&err);
    if (!reg || rein_skills_register_builtins(reg, NULL, &err) != REIN_OK ||
        !(v = rein_claims_vocab_new(reg, &err)))
        return 1;
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
        if (rein_claims_vocab_add(v, tools[i]) != REIN_OK)
            return 1;
    }
    for (int shape = 0; shape < 3; shape++) {
        size_t n;
        char **s = sentences(argv[1], shape == 2 ? "zh" : NULL, &n);
        if (!s || !n) {
            fprintf(stderr, "claims_bench: no sentences in %s\n", argv[1]);
            return 1;
        }
        for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
            char *t = text_of(s, n, sizes[z], shape);
            size_t len = strlen(t), claims = 0;
            double best = 1e9;
            for (int r = 0; r < rounds; r++) {
                double t0 = cpu_seconds(), dt;
                rein_claims *c = rein_claims_extract(t, len, v, &err);
                dt = cpu_seconds() - t0;
                if (!c)
                    return 1;
                claims = rein_claims_count(c);
                rein_claims_free(c);
                if (dt < best)
                    best = dt;
            }
            printf("%-16s %5zu KiB  %8.2f ms  %6.2f MB/s  %zu claims kept\n", shapes[shape],
                   len >> 10, best * 1e3, (double)len / 1e6 / best, claims);
            free(t);
        }
        for (size_t i = 0; i < n; i++)
            free(s[i]);
        free(s);
    }
    rein_claims_vocab_free(v);
    rein_registry_free(reg);
    return 0;
}
