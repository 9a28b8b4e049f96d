/*
 * A process skill for the runner tests, with one behaviour per mode (argv[1]):
 *   echo     reads the call from stdin and prints {"call": <the call>, "env": {...}}
 *   error    prints a normalized error of its own (invalid_arguments with a detail)
 *   hang     starts a grandchild that sleeps too, writes its pid to argv[2], sleeps forever
 *   crash    dies of SIGSEGV
 *   garbage  prints text that is not JSON
 *   flood    prints without end
 *   fail     writes a reason to stderr and exits with status 3
 *   nothing  prints nothing and exits 0
 *   two      prints two JSON documents
 *   cwd      prints {"cwd": "<its working directory>"}
 *   events   writes progress and log notifications (and lines that are not events) on
 *            stderr, then prints {"done": true}
 *   touch    appends one line to the file argv[2] (a trace that it ran), prints {"done": true}
 *   ask      asks the client (the asking protocol of runner_process.c): reads the call line,
 *            then for each method in argv[2...] writes a request (id "q<i>", params
 *            {"asked": i}) on stderr and reads the answer line from stdin; prints
 *            {"call": <the call>, "answers": [<each answer, null when stdin ended>]}
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *read_stdin(void)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t n;

    while (buf && (n = fread(buf + len, 1, cap - len - 1, stdin)) > 0) {
        len += n;
        if (cap - len < 2) {
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                return NULL;
            }
            buf = b;
            cap *= 2;
        }
    }
    if (buf)
        buf[len] = '\0';
    return buf;
}

static void print_env(const char *name)
{
    const char *v = getenv(name);

    /* The test values are plain words, so no escaping is needed. */
    printf("\"%s\": \"%s\"", name, v ? v : "");
}

/* The next line of stdin without its newline (a new string), or NULL at its end. */
static char *read_line(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);

    if (n <= 0) {
        free(line);
        return NULL;
    }
    if (line[n - 1] == '\n')
        line[n - 1] = '\0';
    return line;
}

static int ask(int n, char **methods)
{
    char *call = read_line();

    printf("{\"call\": %s, \"answers\": [", call ? call : "null");
    for (int i = 0; i < n; i++) {
        fprintf(stderr,
                "{\"jsonrpc\":\"2.0\",\"id\":\"q%d\",\"method\":\"%s\","
                "\"params\":{\"asked\":%d}}\n",
                i, methods[i], i);
        fflush(stderr);
        char *answer = read_line();
        printf("%s%s", i ? ", " : "", answer ? answer : "null");
        free(answer);
    }
    printf("]}\n");
    free(call);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "echo";
    char *in;

    if (strcmp(mode, "hang") == 0) {
        pid_t child = fork();
        if (child == 0) {
            for (;;)
                pause();
        }
        if (argc > 2) {
            FILE *f = fopen(argv[2], "w");
            if (f) {
                fprintf(f, "%d\n", (int)child);
                fclose(f);
            }
        }
        for (;;)
            pause();
    }
    if (strcmp(mode, "ask") == 0)
        return ask(argc - 2, argv + 2);
    in = read_stdin();
    if (strcmp(mode, "echo") == 0) {
        printf("{\"call\": %s, \"env\": {", in ? in : "null");
        print_env("REIN_TOOL");
        printf(", ");
        print_env("REIN_CALL_ID");
        printf(", ");
        print_env("REIN_TRACE_ID");
        printf(", ");
        print_env("TRACEPARENT");
        printf(", ");
        print_env("SKILL_GREETING");
        printf(", ");
        print_env("OPENAI_API_KEY");
        printf(", ");
        print_env("HANDED_TOKEN");
        /* Variables that held secrets and reached skills before the allowlist. */
        static const char *const leaks[] = {"DATABASE_URL", "PGPASSWORD",     "GITHUB_PAT",
                                            "SECRET",       "openai_api_key", "REIN_STORE",
                                            "REIN_API_KEYS"};
        for (size_t i = 0; i < sizeof(leaks) / sizeof(leaks[0]); i++) {
            printf(", ");
            print_env(leaks[i]);
        }
        printf(", ");
        print_env("PATH");
        printf(", ");
        print_env("HOME");
        printf("}}\n");
    } else if (strcmp(mode, "stdin") == 0) {
        /* The call document byte for byte, as a JSON string. */
        printf("{\"stdin\": \"");
        for (const char *c = in ? in : ""; *c; c++) {
            if (*c == '"' || *c == '\\')
                printf("\\%c", *c);
            else if ((unsigned char)*c < 0x20)
                printf("\\u%04x", (unsigned)(unsigned char)*c);
            else
                putchar(*c);
        }
        printf("\"}\n");
    } else if (strcmp(mode, "error") == 0) {
        printf("{\"ok\": false, \"error\": {\"code\": \"invalid_arguments\", \"message\": "
               "\"city is not known\", \"details\": [{\"path\": \"/city\", \"message\": "
               "\"unknown city\"}]}}\n");
    } else if (strcmp(mode, "crash") == 0) {
        fflush(stdout);
        signal(SIGSEGV, SIG_DFL); /* a sanitizer's handler would turn the crash into exit(1) */
        raise(SIGSEGV);
    } else if (strcmp(mode, "garbage") == 0) {
        printf("Traceback (most recent call last): this is not JSON\n");
    } else if (strcmp(mode, "flood") == 0) {
        static char chunk[65536];
        memset(chunk, 'x', sizeof(chunk));
        for (;;) {
            if (fwrite(chunk, 1, sizeof(chunk), stdout) != sizeof(chunk))
                break;
        }
    } else if (strcmp(mode, "fail") == 0) {
        fprintf(stderr, "warming up\nfatal: the index is corrupt\n");
        free(in);
        return 3;
    } else if (strcmp(mode, "two") == 0) {
        printf("{\"a\": 1}\n{\"b\": 2}\n");
    } else if (strcmp(mode, "events") == 0) {
        fprintf(stderr, "starting up\n");
        fprintf(stderr, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
                        "\"params\":{\"progress\":0,\"total\":100}}\n");
        fflush(stderr);
        fprintf(stderr, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\","
                        "\"params\":{\"level\":\"info\",\"logger\":\"skill\","
                        "\"data\":\"half way\"}}\n");
        /* Not events: a bad level, a progress without a number, a broken line. */
        fprintf(stderr, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\","
                        "\"params\":{\"level\":\"loud\",\"data\":1}}\n");
        fprintf(stderr, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
                        "\"params\":{\"progress\":\"50\"}}\n");
        fprintf(stderr, "{\"jsonrpc\":\"2.0\",\"method\":\n");
        fprintf(stderr, "  {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
                        "\"params\":{\"progress\":100,\"total\":100,\"message\":\"done\"}}\n");
        printf("{\"done\": true}\n");
    } else if (strcmp(mode, "cwd") == 0) {
        char dir[4096];
        printf("{\"cwd\": \"%s\"}\n", getcwd(dir, sizeof(dir)) ? dir : "");
    } else if (strcmp(mode, "touch") == 0) {
        FILE *f = argc > 2 ? fopen(argv[2], "a") : NULL;
        if (f) {
            fputs("ran\n", f);
            fclose(f);
        }
        printf("{\"done\": true}\n");
    }
    free(in);
    return 0;
}
