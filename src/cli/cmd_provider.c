/*
 * `rein provider`: look at what a model provider sent, and talk to one.
 *
 *   rein provider parse --format FMT [--jsonl] [--text-calls from_text|report]
 *                       [--keep-think] [--tools a,b] FILE|-
 *       Decodes a recorded response and prints the assembled response as JSON. Exit 0 when
 *       the file parsed, 2 when it could not be read as that format (the message says where).
 *   rein provider chat [--provider P] [--model M] [--base-url U] [--config FILE]
 *                      [--record FILE] [--no-stream] [--events] MESSAGE
 *       Sends one user message (settings from the config file, then the environment, then
 *       the flags) and prints the response as JSON; with --events, the events first, one
 *       JSON line each. Exit 0 on a reply, 1 when the provider failed.
 *   rein provider list
 *       The provider presets.
 *   rein provider caps MODEL
 *       The capabilities rein assumes for a model.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void parse_usage(FILE *out)
{
    fprintf(out,
            "usage: rein provider parse --format FORMAT [--jsonl] [--text-calls from_text|report]\n"
            "                           [--keep-think] [--tools NAME,NAME] FILE|-\n"
            "formats: openai-sse openai-json anthropic-sse anthropic-json ollama-ndjson "
            "ollama-json\n"
            "  --jsonl  the file has one SSE data payload per line (implied by *.stream.jsonl)\n");
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int print_json(const json_t *v)
{
    char *text = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

    if (!text)
        return CLI_EXIT_FAIL;
    puts(text);
    free(text);
    return CLI_EXIT_OK;
}

/* Names from "a,b,c" (the array and the strings point into text, which is modified). */
static size_t split_names(char *text, const char **names, size_t max)
{
    size_t n = 0;
    char *p = text;

    while (p && *p && n < max) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (*p)
            names[n++] = p;
        p = comma ? comma + 1 : NULL;
    }
    return n;
}

static int decode_file(FILE *f, const char *path, enum rein_wire_format fmt,
                       const struct rein_decoder_options *opt)
{
    rein_provider_decoder *d = rein_provider_decoder_new(fmt, opt, NULL, NULL);
    rein_model_response *resp = NULL;
    rein_error err;
    char buf[65536];
    size_t n;
    int rc = CLI_EXIT_OK;

    rein_error_clear(&err);
    if (!d) {
        fprintf(stderr, "rein: out of memory\n");
        return CLI_EXIT_FAIL;
    }
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        if (rein_provider_decoder_feed(d, buf, n, &err) != REIN_OK)
            break;
    }
    if (!err.code && ferror(f))
        rein_error_set(&err, REIN_EIO, "cannot read: %s", strerror(errno));
    if (!err.code && rein_provider_decoder_finish(d, &resp, &err) != REIN_OK && !err.code)
        rein_error_set(&err, REIN_EPARSE, "cannot decode");
    if (err.code) {
        fprintf(stderr, "rein: %s: %s\n", path, err.msg[0] ? err.msg : rein_strerror(err.code));
        rc = CLI_EXIT_USAGE;
    } else {
        const char *notes = rein_provider_decoder_notes(d);
        json_t *j = rein_model_response_to_json(resp);
        if (notes[0])
            fprintf(stderr, "rein: %s: note: %s", path, notes);
        rc = j ? print_json(j) : CLI_EXIT_FAIL;
        json_decref(j);
    }
    rein_model_response_free(resp);
    rein_provider_decoder_free(d);
    return rc;
}

static int cmd_parse(int argc, char **argv)
{
    struct rein_decoder_options opt;
    enum rein_wire_format fmt = 0;
    const char *path = NULL, *names[256];
    char *tools = NULL;
    bool jsonl = false;
    FILE *f;
    int rc;

    memset(&opt, 0, sizeof(opt));
    for (int i = 1; i < argc; i++) {
        if (cli_is_flag(argv[i], "-h", "--help")) {
            parse_usage(stdout);
            return CLI_EXIT_OK;
        } else if (cli_is_flag(argv[i], "-f", "--format") && i + 1 < argc) {
            if (rein_wire_format_parse(argv[++i], &fmt) != REIN_OK)
                return cli_usage_error("unknown format '%s' (see --help)", argv[i]);
        } else if (cli_is_flag(argv[i], NULL, "--jsonl")) {
            jsonl = true;
        } else if (cli_is_flag(argv[i], NULL, "--keep-think")) {
            opt.keep_think_tags = true;
        } else if (cli_is_flag(argv[i], NULL, "--text-calls") && i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(v, "from_text") == 0)
                opt.text_calls = REIN_TEXT_CALLS_FROM_TEXT;
            else if (strcmp(v, "report") == 0)
                opt.text_calls = REIN_TEXT_CALLS_REPORT;
            else
                return cli_usage_error("--text-calls takes from_text or report, not '%s'", v);
        } else if (cli_is_flag(argv[i], NULL, "--tools") && i + 1 < argc) {
            tools = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cli_usage_error("provider parse: unknown option '%s'", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage_error("provider parse: one file at a time");
        }
    }
    if (!fmt || !path) {
        parse_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (tools) {
        opt.tool_names = names;
        opt.tool_name_count = split_names(tools, names, sizeof(names) / sizeof(names[0]));
    }
    if ((jsonl || ends_with(path, ".stream.jsonl") || ends_with(path, ".chunks.txt")) &&
        (fmt == REIN_WIRE_OPENAI_SSE || fmt == REIN_WIRE_ANTHROPIC_SSE))
        opt.payload_lines = true;
    f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "rein: %s: %s\n", path, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    rc = decode_file(f, path, fmt, &opt);
    if (f != stdin)
        fclose(f);
    return rc;
}

static int cmd_list(void)
{
    const char *const *names = rein_provider_names();

    for (size_t i = 0; names[i]; i++)
        puts(names[i]);
    return CLI_EXIT_OK;
}

static int cmd_caps(int argc, char **argv)
{
    struct rein_model_caps caps;
    json_t *j;
    int rc;

    if (argc != 2)
        return cli_usage_error("usage: rein provider caps MODEL");
    rein_model_caps_lookup(argv[1], &caps);
    j = json_pack("{s:s, s:b, s:b, s:b, s:b, s:I}", "model", argv[1], "tools", caps.tools,
                  "parallel_tools", caps.parallel_tools, "streaming", caps.streaming, "confidence",
                  caps.confidence, "context_window", (json_int_t)caps.context_window);
    rc = j ? print_json(j) : CLI_EXIT_FAIL;
    json_decref(j);
    return rc;
}

static void print_event(const struct rein_model_event *ev, void *userdata)
{
    static const char *const names[] = {"",
                                        "text_delta",
                                        "reasoning_delta",
                                        "refusal_delta",
                                        "tool_call_start",
                                        "tool_call_delta",
                                        "tool_call_end",
                                        "usage",
                                        "finish",
                                        "retry"};
    json_t *j = json_object();

    (void)userdata;
    if (!j)
        return;
    json_object_set_new(j, "event", json_string(names[ev->type]));
    if (ev->text)
        json_object_set_new(j, "text", json_stringn(ev->text, ev->len));
    if (ev->type >= REIN_MEV_TOOL_CALL_START && ev->type <= REIN_MEV_TOOL_CALL_END)
        json_object_set_new(j, "index", json_integer((json_int_t)ev->index));
    if (ev->name)
        json_object_set_new(j, "name", json_string(ev->name));
    if (ev->call)
        json_object_set_new(
            j, "status",
            json_string(rein_model_call_status_name(rein_model_call_status(ev->call))));
    if (ev->type == REIN_MEV_FINISH && ev->finish_reason)
        json_object_set_new(j, "finish_reason", json_string(ev->finish_reason));
    if (ev->type == REIN_MEV_RETRY)
        json_object_set_new(j, "attempt", json_integer(ev->attempt));
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (s)
        puts(s);
    free(s);
    json_decref(j);
}

static int cmd_chat(int argc, char **argv)
{
    rein_provider_config *cfg = rein_provider_config_new();
    rein_model_request *req = rein_model_request_new();
    rein_history *h = rein_history_new();
    rein_provider *p = NULL;
    rein_model_response *resp = NULL;
    const char *message = NULL, *config = getenv("REIN_CONFIG");
    const char *flags[16][2];
    size_t nflags = 0;
    bool events = false;
    rein_error err;
    int rc = CLI_EXIT_FAIL;

    rein_error_clear(&err);
    if (!cfg || !req || !h)
        goto out;
    for (int i = 1; i < argc; i++) {
        static const char *const keys[][2] = {{"--provider", "provider"},
                                              {"--model", "model"},
                                              {"--base-url", "base_url"},
                                              {"--record", "record"},
                                              {"--replay", "replay"}};
        bool matched = false;
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
            if (strcmp(argv[i], keys[k][0]) == 0 && i + 1 < argc && nflags < 16) {
                flags[nflags][0] = keys[k][1];
                flags[nflags++][1] = argv[++i];
                matched = true;
            }
        }
        if (matched)
            continue;
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            config = argv[++i];
        else if (strcmp(argv[i], "--no-stream") == 0)
            rein_model_request_set_stream(req, false);
        else if (strcmp(argv[i], "--events") == 0)
            events = true;
        else if (argv[i][0] == '-') {
            rc = cli_usage_error("provider chat: unknown option '%s'", argv[i]);
            goto out;
        } else
            message = argv[i];
    }
    if (!message) {
        rc = cli_usage_error("usage: rein provider chat [--provider P] [--model M] "
                             "[--base-url URL] [--config FILE] [--record FILE] MESSAGE");
        goto out;
    }
    if (config && rein_provider_config_load_file(cfg, config, &err) != REIN_OK)
        goto fail;
    if (rein_provider_config_from_env(cfg, &err) != REIN_OK)
        goto fail;
    for (size_t i = 0; i < nflags; i++) {
        if (rein_provider_config_set(cfg, flags[i][0], flags[i][1], &err) != REIN_OK)
            goto fail;
    }
    p = rein_provider_new(cfg, &err);
    if (!p)
        goto fail;
    if (rein_history_add_user(h, message) != REIN_OK)
        goto out;
    if (events)
        rein_model_request_set_events(req, print_event, NULL);
    rc = rein_provider_send(p, req, h, &resp, &err) == REIN_OK ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    if (resp) {
        json_t *j = rein_model_response_to_json(resp);
        if (j)
            print_json(j);
        json_decref(j);
    }
    if (rc != CLI_EXIT_OK)
        cli_print_error(&err);
    goto out;
fail:
    cli_print_error(&err);
    rc = err.code == REIN_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
out:
    rein_model_response_free(resp);
    rein_provider_free(p);
    rein_history_free(h);
    rein_model_request_free(req);
    rein_provider_config_free(cfg);
    return rc;
}

int cmd_provider(int argc, char **argv)
{
    if (argc < 2 || cli_is_flag(argv[1], "-h", "--help")) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: rein provider parse --format FORMAT [--jsonl] FILE\n"
                "       rein provider chat [--provider P] [--model M] [--base-url URL] "
                "[--record FILE] MESSAGE\n"
                "       rein provider list\n"
                "       rein provider caps MODEL\n");
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "parse") == 0)
        return cmd_parse(argc - 1, argv + 1);
    if (strcmp(argv[1], "chat") == 0)
        return cmd_chat(argc - 1, argv + 1);
    if (strcmp(argv[1], "list") == 0)
        return cmd_list();
    if (strcmp(argv[1], "caps") == 0)
        return cmd_caps(argc - 1, argv + 1);
    return cli_usage_error("provider: unknown subcommand '%s'", argv[1]);
}
