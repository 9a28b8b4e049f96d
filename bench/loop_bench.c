/*
 * bench/loop_bench.c: rein's side of bench/loop.sh.
 *
 *   loop_bench URL TURNS OUT_DIR
 *
 * Runs TURNS agent turns of the three-step scenario (a call to echo, a call to calculator,
 * the answer: three model calls per turn) against the scripted model server at URL, each on
 * a new history, and then replays the three request bodies of one turn TURNS times with a
 * bare libcurl client (one connection kept alive, the streamed reply read and thrown away):
 * that is the server's time plus the loopback, which both rein's and the SDK's totals contain.
 * Then it keeps the histories of TURNS turns alive to measure the memory of a conversation
 * (mallinfo2: bytes in use before and after).
 *
 * Prints one line: "rein_ms baseline_ms turns steps_per_turn bytes_per_conversation".
 * Writes OUT_DIR/system_prompt.txt (the prompt rein sends, so the peer sends the same).
 */
#include <rein/rein.h>

#include <curl/curl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 3

static const char *const tools[] = {"echo", "calculator"};

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    *(size_t *)ud += size * n;
    return size * n;
}

static void check(const rein_agent_result *r)
{
    if (rein_agent_result_stop(r) != REIN_AGENT_STOP_FINAL_ANSWER ||
        rein_agent_result_tool_call_count(r) != 2 || rein_agent_result_model_calls(r) != STEPS ||
        strcmp(rein_agent_result_text(r), "All three steps are done.") != 0) {
        fprintf(stderr, "loop_bench: unexpected turn: %s (%s) %zu calls, %d model calls\n",
                rein_agent_stop_name(rein_agent_result_stop(r)), rein_agent_result_detail(r),
                rein_agent_result_tool_call_count(r), rein_agent_result_model_calls(r));
        exit(1);
    }
}

static rein_history *turn(rein_agent *a, bool keep)
{
    /* Self-verification off: it would ask the model about each call, which the SDK does
     * not (and the scenario has no answer for). */
    struct rein_agent_turn_opts o = {
        .tools = tools, .tool_count = 2, .verification = REIN_AGENT_VERIFY_OFF};
    rein_history *h = rein_history_new();
    rein_agent_result *r = NULL;
    rein_error err;

    if (rein_agent_run(a, h, "Run the three steps.", &o, &r, &err) != REIN_OK) {
        fprintf(stderr, "loop_bench: %s\n", err.msg);
        exit(1);
    }
    check(r);
    rein_agent_result_free(r);
    if (keep)
        return h;
    rein_history_free(h);
    return NULL;
}

static size_t collect(char *p, size_t size, size_t n, void *ud)
{
    return rein_buf_add(ud, p, size * n) == REIN_OK ? size * n : 0;
}

/* GET url into a new string (free with rein_free). */
static char *get(CURL *c, const char *url)
{
    struct rein_buf b;

    rein_buf_init(&b, 0);
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    if (curl_easy_perform(c) != CURLE_OK) {
        fprintf(stderr, "loop_bench: GET %s failed\n", url);
        exit(1);
    }
    return rein_buf_detach(&b, NULL);
}

/* The bodies of the first turn's requests, from the server's log. */
static json_t *first_bodies(CURL *c, const char *base)
{
    char url[512];
    char *text;
    json_t *log, *bodies = json_array();

    snprintf(url, sizeof(url), "%s/__requests", base);
    text = get(c, url);
    log = text ? json_loads(text, 0, NULL) : NULL;
    rein_free(text);
    for (size_t i = 0; i < STEPS; i++)
        json_array_append(bodies, json_object_get(json_array_get(log, i), "body"));
    json_decref(log);
    if (json_array_size(bodies) != STEPS) {
        fprintf(stderr, "loop_bench: the server logged no requests\n");
        exit(1);
    }
    return bodies;
}

static double baseline(CURL *c, const char *base, const json_t *bodies, int turns)
{
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    char url[512];
    size_t got = 0;
    int64_t t0;

    snprintf(url, sizeof(url), "%s/v1/chat/completions", base);
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &got);
    t0 = rein_now_ns();
    for (int t = 0; t < turns; t++) {
        for (size_t i = 0; i < STEPS; i++) {
            const json_t *b = json_array_get(bodies, i);
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, json_string_value(b));
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)json_string_length(b));
            if (curl_easy_perform(c) != CURLE_OK) {
                fprintf(stderr, "loop_bench: baseline request failed\n");
                exit(1);
            }
        }
    }
    curl_slist_free_all(hdr);
    return (double)(rein_now_ns() - t0) / 1e6;
}

int main(int argc, char **argv)
{
    rein_provider_config *cfg;
    rein_provider *p;
    rein_registry *reg;
    rein_agent *a;
    rein_history **kept;
    rein_error err;
    char openai[512], path[1024];
    int turns;
    int64_t t0;
    double rein_ms, base_ms;
    size_t before, after;
    CURL *c;
    FILE *f;

    if (argc != 4) {
        fprintf(stderr, "usage: loop_bench URL TURNS OUT_DIR\n");
        return 2;
    }
    turns = (int)strtol(argv[2], NULL, 10);
    snprintf(openai, sizeof(openai), "%s/v1", argv[1]);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    cfg = rein_provider_config_new();
    if (rein_provider_config_set_provider(cfg, "openai-compatible", &err) ||
        rein_provider_config_set_base_url(cfg, openai) ||
        rein_provider_config_set_model(cfg, "bench-model") || !(p = rein_provider_new(cfg, &err))) {
        fprintf(stderr, "loop_bench: provider: %s\n", err.msg);
        return 1;
    }
    reg = rein_registry_new(&err);
    if (!reg || rein_skills_register_builtins(reg, NULL, &err) ||
        !(a = rein_agent_new(p, reg, &err))) {
        fprintf(stderr, "loop_bench: %s\n", err.msg);
        return 1;
    }
    snprintf(path, sizeof(path), "%s/system_prompt.txt", argv[3]);
    f = fopen(path, "w");
    if (!f || fputs(rein_agent_system_prompt(a), f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "loop_bench: cannot write %s\n", path);
        return 1;
    }

    /* Warm up (connections, caches), then the measured turns. */
    for (int i = 0; i < 20; i++)
        (void)turn(a, false);
    t0 = rein_now_ns();
    for (int i = 0; i < turns; i++)
        (void)turn(a, false);
    rein_ms = (double)(rein_now_ns() - t0) / 1e6;

    c = curl_easy_init();
    json_t *bodies = first_bodies(c, argv[1]);
    (void)baseline(c, argv[1], bodies, 20);
    base_ms = baseline(c, argv[1], bodies, turns);
    json_decref(bodies);
    curl_easy_cleanup(c);

    /* Memory of a conversation: the histories of `turns` turns kept alive. */
    kept = calloc((size_t)turns, sizeof(*kept));
    malloc_trim(0);
    before = mallinfo2().uordblks;
    for (int i = 0; i < turns; i++)
        kept[i] = turn(a, true);
    after = mallinfo2().uordblks;
    for (int i = 0; i < turns; i++)
        rein_history_free(kept[i]);
    free(kept);

    printf("%.3f %.3f %d %d %zu\n", rein_ms, base_ms, turns, STEPS,
           (after - before) / (size_t)turns);
    rein_agent_free(a);
    rein_registry_free(reg);
    rein_provider_free(p);
    rein_provider_config_free(cfg);
    curl_global_cleanup();
    return 0;
}
