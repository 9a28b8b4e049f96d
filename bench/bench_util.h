/*
 * bench_util.h: the few helpers the bench programs share (each is one .c file built by
 * bench_cc in bench/common.sh, so these are static and included, not linked). Define
 * BENCH_NAME, the program's name for its messages, before including it.
 */
#ifndef REIN_BENCH_UTIL_H
#define REIN_BENCH_UTIL_H

#include <rein/rein.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Prints "BENCH_NAME: what: detail" and exits 1. */
static inline void bench_die(const char *what, const char *detail)
{
    fprintf(stderr, "%s: %s%s%s\n", BENCH_NAME, what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

/* The process's CPU time (all threads) in µs. */
static inline double bench_cpu_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* libcurl write callbacks: drop the body, or append it to the rein_buf in ud. */
static inline size_t bench_discard(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return size * n;
}

static inline size_t bench_collect(char *p, size_t size, size_t n, void *ud)
{
    return rein_buf_add(ud, p, size * n) == REIN_OK ? size * n : 0;
}

/* A JSON request on c (POST when body is not NULL); the reply body (free with rein_free). */
static inline char *bench_request(CURL *c, const char *url, const char *body, size_t len)
{
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    struct rein_buf b;

    rein_buf_init(&b, 0);
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, bench_collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
    }
    if (curl_easy_perform(c) != CURLE_OK)
        bench_die("request failed", url);
    curl_slist_free_all(hdr);
    return rein_buf_detach(&b, NULL);
}

/* POSTs body (NULL: a GET) to the scripted model server's control endpoint base + path. */
static inline void bench_control(CURL *c, const char *base, const char *path, const char *body)
{
    char url[512];

    snprintf(url, sizeof(url), "%s%s", base, path);
    rein_free(bench_request(c, url, body, body ? strlen(body) : 0));
}

#endif
