/*
 * Replays a fuzz target's corpus without libFuzzer: every file under the folders (or files)
 * named on the command line is passed to LLVMFuzzerTestOneInput once. Built with gcc and the
 * sanitizers, this turns every seed and every past crash into a regression test.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int main(int argc, char **argv);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;

    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(buf);
        fprintf(stderr, "cannot read %s\n", path);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 1;
}

static int run_path(const char *path)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    int count = 0;

    if (stat(path, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return run_file(path);
    d = opendir(path);
    if (!d)
        return 0;
    while ((e = readdir(d))) {
        char child[4096];
        if (e->d_name[0] == '.')
            continue;
        snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
        int rc = run_path(child);
        if (rc < 0) {
            closedir(d);
            return rc;
        }
        count += rc;
    }
    closedir(d);
    return count;
}

int main(int argc, char **argv)
{
    int total = 0;

    for (int i = 1; i < argc; i++) {
        int rc = run_path(argv[i]);
        if (rc < 0)
            return 1;
        total += rc;
    }
    printf("replayed %d inputs\n", total);
    /* An empty corpus means the target is not exercised: that is a failure, not a pass. */
    return total > 0 ? 0 : 1;
}
