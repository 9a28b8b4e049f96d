/*
 * A process skill for the loop tests: write_file and read_file confined to one folder, the
 * tools an agent needs to change a working tree (rein has no write built-in of its own).
 *
 *   fs_skill ROOT          reads the call ({"tool", "arguments", …}) from stdin
 *     write_file {path, content}  writes ROOT/path (parent folders created) → {"path", "bytes"}
 *     read_file  {path}           → {"path", "content"}
 *
 * A path that is absolute, has a ".." component, or leads out of ROOT through a symbolic
 * link is refused with a normalized invalid_arguments error, as a real skill should.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int fail(const char *code, const char *what, const char *arg)
{
    char msg[PATH_MAX + 200];
    json_t *out;

    snprintf(msg, sizeof(msg), "%s%s", arg, what);
    out = json_pack("{s:b, s:{s:s, s:s}}", "ok", 0, "error", "code", code, "message", msg);
    json_dumpf(out, stdout, JSON_COMPACT);
    json_decref(out);
    return 0;
}

/* True when path stays inside root: relative, no "..", and its folder resolves under root. */
static bool confined(const char *root, const char *path)
{
    char real_root[PATH_MAX], dir[PATH_MAX], real_dir[PATH_MAX];
    const char *p = path;
    char *slash;

    if (path[0] == '/' || path[0] == '\0')
        return false;
    while (*p) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return false;
        p += n;
        if (*p == '/')
            p++;
    }
    if (!realpath(root, real_root))
        return false;
    snprintf(dir, sizeof(dir), "%s/%s", root, path);
    /* The deepest folder that exists must resolve under root (folders below it are made). */
    do {
        slash = strrchr(dir, '/');
        *slash = '\0';
    } while (!realpath(dir, real_dir) && errno == ENOENT && strlen(dir) > strlen(root));
    if (!realpath(dir, real_dir))
        return false;
    return strncmp(real_dir, real_root, strlen(real_root)) == 0 &&
           (real_dir[strlen(real_root)] == '\0' || real_dir[strlen(real_root)] == '/');
}

static void make_parents(const char *full)
{
    char buf[PATH_MAX];

    snprintf(buf, sizeof(buf), "%s", full);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0755);
            *p = '/';
        }
    }
}

static int write_file(const char *root, const char *path, const char *content)
{
    char full[PATH_MAX];
    FILE *f;
    size_t len = strlen(content);
    json_t *out;

    snprintf(full, sizeof(full), "%s/%s", root, path);
    make_parents(full);
    f = fopen(full, "wb");
    if (!f || fwrite(content, 1, len, f) != len) {
        if (f)
            fclose(f);
        return fail("execution_failed", ": cannot write it", path);
    }
    fclose(f);
    out = json_pack("{s:s, s:I}", "path", path, "bytes", (json_int_t)len);
    json_dumpf(out, stdout, JSON_COMPACT);
    json_decref(out);
    return 0;
}

static int read_file(const char *root, const char *path)
{
    char full[PATH_MAX], buf[65536];
    FILE *f;
    size_t n;
    json_t *out;

    snprintf(full, sizeof(full), "%s/%s", root, path);
    f = fopen(full, "rb");
    if (!f)
        return fail("execution_failed", " does not exist", path);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    out = json_pack("{s:s, s:s%}", "path", path, "content", buf, n);
    json_dumpf(out, stdout, JSON_COMPACT);
    json_decref(out);
    return 0;
}

int main(int argc, char **argv)
{
    json_error_t jerr;
    json_t *call = json_loadf(stdin, 0, &jerr);
    const char *tool = json_string_value(json_object_get(call, "tool"));
    const json_t *args = json_object_get(call, "arguments");
    const char *path = json_string_value(json_object_get(args, "path"));
    const char *content = json_string_value(json_object_get(args, "content"));
    int rc;

    if (argc < 2 || !tool || !path) {
        json_decref(call);
        return fail("invalid_arguments", "fs_skill ROOT needs a call with a path", "");
    }
    if (!confined(argv[1], path))
        rc = fail("invalid_arguments", " is outside the project", path);
    else if (strcmp(tool, "write_file") == 0 && content)
        rc = write_file(argv[1], path, content);
    else if (strcmp(tool, "read_file") == 0)
        rc = read_file(argv[1], path);
    else
        rc = fail("invalid_arguments", ": unknown tool", tool);
    json_decref(call);
    return rc;
}
