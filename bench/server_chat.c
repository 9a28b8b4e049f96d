/*
 * bench/server_chat.c: N concurrent conversations against `rein serve`, for bench/server.sh.
 *
 *   server_chat URL N PREFIX ROUND
 *
 * Opens N connections at once (libcurl multi) and sends on each one POST URL/agent/chat
 * {"message": "echo hello (round R)", "conversation_id": "PREFIX-i"}; every answer must be 200
 * with "success": true, anything else counts as an error (and is printed, the first few).
 * Prints one line: "turns errors seconds p50_ms p99_ms client_cpu_ms" (the last: this
 * process's own CPU time, which shares the machine with the server's).
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

struct conv {
    CURL *easy;
    char body[256];
    char *answer;
    size_t len;
    double started, ms;
};

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    struct conv *c = ud;
    char *grown = realloc(c->answer, c->len + size * n + 1);

    if (!grown)
        return 0;
    c->answer = grown;
    memcpy(c->answer + c->len, data, size * n);
    c->len += size * n;
    c->answer[c->len] = '\0';
    return size * n;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    struct rlimit rl;
    struct rusage ru;
    struct curl_slist *headers = NULL;
    struct conv *convs;
    double *lat, t0;
    CURLM *multi;
    char url[512];
    int n, running = 0, errors = 0, done = 0;

    if (argc != 5) {
        fprintf(stderr, "usage: server_chat URL N PREFIX ROUND\n");
        return 2;
    }
    n = (int)strtol(argv[2], NULL, 10);
    if (n <= 0)
        return 2;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    curl_global_init(CURL_GLOBAL_ALL);
    snprintf(url, sizeof(url), "%s/agent/chat", argv[1]);
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:");
    convs = calloc((size_t)n, sizeof(*convs));
    lat = calloc((size_t)n, sizeof(*lat));
    multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)n);
    t0 = now_ms();
    for (int i = 0; i < n; i++) {
        struct conv *c = &convs[i];
        snprintf(c->body, sizeof(c->body),
                 "{\"message\": \"echo hello (round %s)\", \"conversation_id\": \"%s-%d\"}",
                 argv[4], argv[3], i);
        c->easy = curl_easy_init();
        curl_easy_setopt(c->easy, CURLOPT_URL, url);
        curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, c->body);
        curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, c);
        curl_easy_setopt(c->easy, CURLOPT_PRIVATE, c);
        curl_easy_setopt(c->easy, CURLOPT_TIMEOUT, 600L);
        curl_easy_setopt(c->easy, CURLOPT_FORBID_REUSE, 1L);
        c->started = now_ms();
        curl_multi_add_handle(multi, c->easy);
    }
    do {
        CURLMsg *m;
        int left;
        curl_multi_perform(multi, &running);
        while ((m = curl_multi_info_read(multi, &left)) != NULL) {
            struct conv *c;
            long status = 0;
            if (m->msg != CURLMSG_DONE)
                continue;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c);
            curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
            c->ms = now_ms() - c->started;
            lat[done++] = c->ms;
            if (m->data.result != CURLE_OK || status != 200 || !c->answer ||
                !strstr(c->answer, "\"success\":true")) {
                if (errors++ < 5)
                    fprintf(stderr, "server_chat: %s: curl %d, status %ld: %.900s\n", c->body,
                            (int)m->data.result, status, c->answer ? c->answer : "");
            }
        }
        if (running)
            curl_multi_poll(multi, NULL, 0, 100, NULL);
    } while (running);
    qsort(lat, (size_t)done, sizeof(*lat), cmp);
    getrusage(RUSAGE_SELF, &ru);
    printf("%d %d %.3f %.1f %.1f %.1f\n", done, errors + (n - done), (now_ms() - t0) / 1000.0,
           done ? lat[done / 2] : 0.0, done ? lat[(size_t)((double)done * 0.99)] : 0.0,
           (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000.0 +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000.0);
    for (int i = 0; i < n; i++) {
        curl_multi_remove_handle(multi, convs[i].easy);
        curl_easy_cleanup(convs[i].easy);
        free(convs[i].answer);
    }
    curl_multi_cleanup(multi);
    curl_slist_free_all(headers);
    free(convs);
    free(lat);
    curl_global_cleanup();
    return errors ? 1 : 0;
}
