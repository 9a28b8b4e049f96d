/*
 * Process skills for the plan engine's tests (the "process" runner's protocol: the call as
 * JSON on stdin, the output as JSON on stdout). argv[1] picks the tool:
 *   write ROOT   write_file {path, content}: writes content to ROOT/path. The path must be
 *                relative and stay inside ROOT (no "..", no absolute path); anything else is
 *                answered with a normalized "denied" error. Prints {"path", "bytes"}.
 *   block        block {ms?}: waits ms milliseconds (default 60000), or until the process that
 *                started it is gone (a killed rein), then prints {"slept_ms": n}.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void deny(const char *why)
{
    json_t *r =
        json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "code", "denied", "message", why);

    json_dumpf(r, stdout, JSON_COMPACT);
    json_decref(r);
}

static int write_file(const char *root, const json_t *args)
{
    const char *path = json_string_value(json_object_get(args, "path"));
    const char *content = json_string_value(json_object_get(args, "content"));
    char full[4096];
    FILE *f;
    size_t n;

    if (!path || !content) {
        deny("write_file needs path and content (strings)");
        return 0;
    }
    if (path[0] == '/' || strstr(path, "..")) {
        deny("the path must be relative and stay inside the skill's folder");
        return 0;
    }
    snprintf(full, sizeof(full), "%s/%s", root, path);
    f = fopen(full, "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s: %s\n", full, strerror(errno));
        return 3;
    }
    n = fwrite(content, 1, strlen(content), f);
    fclose(f);
    printf("{\"path\": \"%s\", \"bytes\": %zu}\n", path, n);
    return 0;
}

/* Read before stdin is: a rein killed while writing the call must not leave this behind. */
static pid_t parent;

static int block(const json_t *args)
{
    json_int_t ms = json_integer_value(json_object_get(args, "ms"));
    long slept = 0;
    struct timespec ts = {0, 20 * 1000 * 1000};

    if (ms <= 0)
        ms = 60000;
    while (slept < ms && getppid() == parent) {
        nanosleep(&ts, NULL);
        slept += 20;
    }
    printf("{\"slept_ms\": %ld}\n", slept);
    return 0;
}

int main(int argc, char **argv)
{
    json_error_t jerr;
    json_t *call;
    const json_t *args;
    int rc = 2;

    parent = getppid();
    call = json_loadf(stdin, 0, &jerr);
    args = json_object_get(call, "arguments");
    if (!call) {
        fprintf(stderr, "the call is not JSON: %s\n", jerr.text);
        return 2;
    }
    if (argc > 2 && strcmp(argv[1], "write") == 0)
        rc = write_file(argv[2], args);
    else if (argc > 1 && strcmp(argv[1], "block") == 0)
        rc = block(args);
    else
        fprintf(stderr, "usage: plan_skill write ROOT | block\n");
    json_decref(call);
    return rc;
}
