/*
 * `rein provider`: look at what a model provider sent, and talk to one.
 *
 *   rein provider parse --format FMT [--jsonl] [--text-calls from_text|report]
 *                       [--keep-think] [--tools a,b] FILE|-
 *       Decodes a recorded response and prints the assembled response as JSON. Exit 0 when
 *       the file parsed, 2 when it could not be read as that format (the message says where).
 *   rein provider chat [--provider P] [--model M] [--base-url U] [--config FILE]
 *                      [--record FILE] [--replay FILE] [--no-stream] [--events] MESSAGE|-
 *       Sends one user message (settings from the config file, then the environment, then
 *       the flags; the rules provider when none names a provider) and prints the response as
 *       JSON with the provider and model in "meta"; with --events, the events first, one JSON
 *       line each. Exit 0 on a reply, 1 when the provider failed, 2 usage.
 *   rein provider list [--json]
 *       The provider presets.
 *   rein provider caps MODEL
 *       The capabilities rein assumes for a model.
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void provider_usage(FILE *out)
{
    fprintf(out, "usage: rein provider parse --format FORMAT [options] FILE|-\n"
                 "       rein provider chat [--provider P] [--model M] [--base-url URL]\n"
                 "                          [--record FILE] [--replay FILE] MESSAGE|-\n"
                 "       rein provider list [--json]\n"
                 "       rein provider caps MODEL\n\n"
                 "  parse   decode a recorded model reply (SSE, JSON, NDJSON)\n"
                 "  chat    send one message to the configured provider and print the reply\n"
                 "  list    the provider presets\n"
                 "  caps    the capabilities rein assumes for a model\n\n"
                 "'rein provider COMMAND --help' describes a command.\n"
                 "Exit status: 0 ok, 1 the provider failed, 2 usage or unusable input.\n");
}

static void parse_usage(FILE *out)
{
    fprintf(out,
            "usage: rein provider parse --format FORMAT [--jsonl] [--text-calls from_text|report]\n"
            "                           [--keep-think] [--tools NAME,NAME] FILE|-\n\n"
            "Decodes a recorded model reply and prints the assembled response as JSON.\n"
            "formats:");
    /* Every format of every wire rein speaks: they are numbered from 1 without gaps. */
    for (int f = 1; strcmp(rein_wire_format_name((enum rein_wire_format)f), "?") != 0; f++)
        fprintf(out, " %s", rein_wire_format_name((enum rein_wire_format)f));
    fprintf(out,
            "\n\n"
            "  -f, --format FORMAT  the wire format of FILE\n"
            "  --jsonl              one SSE data payload per line (implied by *.stream.jsonl)\n"
            "  --text-calls MODE    tool calls written as text: from_text (run them) or report\n"
            "  --keep-think         keep <think> sections in the text\n"
            "  --tools NAMES        the tool names offered (for calls written as text)\n\n"
            "Exit status: 0 decoded, 2 the file cannot be read as FORMAT (the message says\n"
            "where) or usage.\n");
}

static void chat_usage(FILE *out)
{
    fprintf(out,
            "usage: rein provider chat [options] MESSAGE\n"
            "       rein provider chat [options] -     (the message from stdin)\n\n"
            "Sends one user message to the model (no tools run) and prints the response as JSON,\n"
            "with the provider and model in \"meta\". Settings come from rein's configuration\n"
            "file, then the environment (REIN_PROVIDER, REIN_MODEL, ...), then the flags; with\n"
            "none naming a provider, the rules provider answers.\n\n"
            "  --provider P, --model M, --base-url URL   the model\n"
            "  --config FILE      rein's configuration file (default REIN_CONFIG)\n"
            "  --record FILE      append the exchange to FILE (JSON lines) for replay\n"
            "  --replay FILE      answer from a recording instead of a model\n"
            "  --no-stream        ask for one JSON reply instead of a stream\n"
            "  --events           print the model's events as JSON lines first\n\n"
            "Exit status: 0 a reply came, 1 the provider failed, 2 usage or a configuration\n"
            "that cannot work.\n");
}

static void list_usage(FILE *out)
{
    fprintf(out, "usage: rein provider list [--json]\n\n"
                 "The provider presets, one per line (--json: a JSON array of names).\n\n"
                 "Exit status: 0, or 2 for usage.\n");
}

static void caps_usage(FILE *out)
{
    fprintf(out,
            "usage: rein provider caps MODEL\n\n"
            "Prints, as JSON, the capabilities rein assumes for MODEL: tools, parallel_tools,\n"
            "streaming, confidence, context_window, reasoning (whether it takes a reasoning\n"
            "effort or thinking budget) and max_output (the most tokens one reply may ask for,\n"
            "0 when not known); a configuration file's \"capabilities\" can override them.\n\n"
            "Exit status: 0, or 2 for usage.\n");
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int print_json(const json_t *v)
{
    if (!v)
        return CLI_EXIT_FAIL;
    cli_print_json(v);
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
    rein_error err = {0};
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

struct parse_opts {
    struct cli_setup setup;
    struct rein_decoder_options opt;
    enum rein_wire_format fmt;
    const char *path;
    char *tools;
    bool jsonl;
};

static int parse_option(void *opts, const char *flag, const char *v)
{
    struct parse_opts *o = opts;

    if (strcmp(flag, "--jsonl") == 0) {
        o->jsonl = true;
    } else if (strcmp(flag, "--keep-think") == 0) {
        o->opt.keep_think_tags = true;
    } else if (strcmp(flag, "--format") == 0) {
        if (rein_wire_format_parse(v, &o->fmt) != REIN_OK)
            return cli_usage_error("provider parse: unknown format '%s' (see --help)", v);
    } else if (strcmp(flag, "--text-calls") == 0) {
        if (strcmp(v, "from_text") == 0)
            o->opt.text_calls = REIN_TEXT_CALLS_FROM_TEXT;
        else if (strcmp(v, "report") == 0)
            o->opt.text_calls = REIN_TEXT_CALLS_REPORT;
        else
            return cli_usage_error("--text-calls takes from_text or report, not '%s'", v);
    } else {
        o->tools = (char *)v; /* --tools: split in place below (argv is ours to change) */
    }
    return CLI_EXIT_OK;
}

static int cmd_parse(int argc, char **argv)
{
    static const char *const valued[] = {"--format", "--text-calls", "--tools", NULL};
    static const char *const switches[] = {"--jsonl", "--keep-think", NULL};
    static const struct cli_alias aliases[] = {{"-f", "--format", true}, {NULL, NULL, false}};
    static const struct cli_args args = {
        .name = "provider parse",
        .usage = parse_usage,
        .shared = CLI_OPT_JSON,
        .valued = valued,
        .switches = switches,
        .aliases = aliases,
        .option = parse_option,
        .positional = "file",
        .min_pos = 1,
        .max_pos = 1,
        .path_pos = 1u,
    };
    struct parse_opts o;
    const char *names[256];
    FILE *f;
    int rc;

    memset(&o, 0, sizeof(o));
    rc = cli_args_parse(&args, argc, argv, &o, &o.setup, &o.path, NULL);
    if (rc)
        return rc == CLI_ARGS_HELP ? CLI_EXIT_OK : rc;
    if (!o.fmt) {
        parse_usage(stderr);
        return cli_usage_error("provider parse: --format is required");
    }
    if (o.tools) {
        o.opt.tool_names = names;
        o.opt.tool_name_count = split_names(o.tools, names, REIN_ARRAY_SIZE(names));
    }
    /* One payload per line applies to every SSE format (the -sse names). */
    if ((o.jsonl || ends_with(o.path, ".stream.jsonl") || ends_with(o.path, ".chunks.txt")) &&
        (ends_with(rein_wire_format_name(o.fmt), "-sse") ||
         ends_with(rein_wire_format_name(o.fmt), "-eventstream"))) /* every stream format */
        o.opt.payload_lines = true;
    f = strcmp(o.path, "-") == 0 ? stdin : fopen(o.path, "rb");
    if (!f) {
        fprintf(stderr, "rein: %s: %s\n", o.path, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    rc = decode_file(f, o.path, o.fmt, &o.opt);
    if (f != stdin)
        fclose(f);
    return rc;
}

/* The options of a command that takes nothing but --json (and prints JSON anyway). */
static int parse_plain(const char *name, void (*usage)(FILE *), unsigned npos, int argc,
                       char **argv, struct cli_setup *s, const char **pos)
{
    struct cli_args args = {
        .name = name,
        .usage = usage,
        .shared = CLI_OPT_JSON,
        .positional = "model",
        .min_pos = npos,
        .max_pos = npos,
    };

    return cli_args_parse(&args, argc, argv, NULL, s, pos, NULL);
}

static int cmd_list(int argc, char **argv)
{
    const char *const *names = rein_provider_names();
    struct cli_setup s;
    json_t *list;
    int rc = parse_plain("provider list", list_usage, 0, argc, argv, &s, NULL);

    if (rc)
        return rc == CLI_ARGS_HELP ? CLI_EXIT_OK : rc;
    if (!s.json) {
        for (size_t i = 0; names[i]; i++)
            puts(names[i]);
        return CLI_EXIT_OK;
    }
    list = json_array();
    for (size_t i = 0; list && names[i]; i++)
        json_array_append_new(list, json_string(names[i]));
    rc = print_json(list);
    json_decref(list);
    return rc;
}

static int cmd_caps(int argc, char **argv)
{
    struct rein_model_caps caps;
    struct cli_setup s;
    const char *model = NULL;
    json_t *j;
    int rc = parse_plain("provider caps", caps_usage, 1, argc, argv, &s, &model);

    if (rc)
        return rc == CLI_ARGS_HELP ? CLI_EXIT_OK : rc;
    rein_model_caps_lookup(model, &caps);
    j = json_pack("{s:s, s:b, s:b, s:b, s:b, s:I, s:b, s:I}", "model", model, "tools", caps.tools,
                  "parallel_tools", caps.parallel_tools, "streaming", caps.streaming, "confidence",
                  caps.confidence, "context_window", (json_int_t)caps.context_window, "reasoning",
                  caps.reasoning, "max_output", (json_int_t)caps.max_output);
    rc = print_json(j);
    json_decref(j);
    return rc;
}

/* The upstream's kept headers (its request id, its rate limits) as {name: value}. */
static json_t *headers_json(const rein_model_headers *h)
{
    json_t *o = json_object();
    const char *name, *value;

    for (size_t i = 0; o && rein_model_headers_at(h, i, &name, &value); i++)
        json_object_set_new(o, name, json_string(value));
    return o;
}

static void print_event(const struct rein_model_event *ev, void *userdata)
{
    json_t *j = json_object();

    (void)userdata;
    if (!j)
        return;
    json_object_set_new(j, "event", json_string(rein_model_event_type_name(ev->type)));
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
    if (ev->type == REIN_MEV_HEADERS)
        json_object_set_new(j, "headers", headers_json(ev->headers));
    cli_print_json_line(j);
    json_decref(j);
}

struct chat_opts {
    struct cli_setup setup;
    const char *message;
    bool no_stream;
};

static int chat_option(void *opts, const char *flag, const char *v)
{
    struct chat_opts *o = opts;
    struct cli_setup *s = &o->setup;

    if (!v) {
        o->no_stream = true; /* --no-stream */
        return CLI_EXIT_OK;
    }
    if (s->nflags + 2 > CLI_MAX_FLAGS)
        return cli_usage_error("provider chat: too many provider settings");
    if (strcmp(flag, "--replay") == 0) {
        s->flags[s->nflags][0] = "provider";
        s->flags[s->nflags++][1] = "replay";
    }
    /* flag is the parser's copy, gone after this call: the key must be a literal. */
    s->flags[s->nflags][0] = strcmp(flag, "--replay") == 0 ? "replay" : "record";
    s->flags[s->nflags++][1] = v;
    return CLI_EXIT_OK;
}

static int cmd_chat(int argc, char **argv)
{
    static const char *const valued[] = {"--record", "--replay", NULL};
    static const char *const switches[] = {"--no-stream", NULL};
    static const struct cli_args args = {
        .name = "provider chat",
        .usage = chat_usage,
        .shared = CLI_OPT_MODEL | CLI_OPT_JSON | CLI_OPT_EVENTS,
        .valued = valued,
        .switches = switches,
        .option = chat_option,
        .positional = "message",
        .min_pos = 1,
        .max_pos = 1,
        .stdin_pos = 1u,
    };
    rein_model_request *req = rein_model_request_new();
    rein_history *h = rein_history_new();
    rein_provider *p = NULL;
    rein_model_response *resp = NULL;
    struct chat_opts o;
    rein_error err = {0};
    int rc;

    memset(&o, 0, sizeof(o));
    rein_error_clear(&err);
    rc = cli_args_parse(&args, argc, argv, &o, &o.setup, &o.message, NULL);
    if (rc) {
        rc = rc == CLI_ARGS_HELP ? CLI_EXIT_OK : rc;
        goto out;
    }
    if (!o.message[0]) {
        rc = cli_usage_error("provider chat: the message is empty");
        goto out;
    }
    rc = CLI_EXIT_FAIL;
    if (!req || !h) {
        fprintf(stderr, "rein: out of memory\n");
        goto out;
    }
    p = cli_provider_new(&o.setup, NULL, &err);
    if (!p) {
        cli_print_error(&err);
        rc = err.code == REIN_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
        goto out;
    }
    cli_log_provider(NULL, p);
    if (o.no_stream)
        rein_model_request_set_stream(req, false);
    if (rein_history_add_user(h, o.message) != REIN_OK) {
        fprintf(stderr, "rein: out of memory\n");
        goto out;
    }
    if (o.setup.events)
        rein_model_request_set_events(req, print_event, NULL);
    rein_error_clear(&err);
    rc = rein_provider_send(p, req, h, &resp, &err) == REIN_OK ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    if (resp) {
        json_t *j = rein_model_response_to_json(resp);
        json_t *meta = json_pack("{s:s, s:s?}", "provider", rein_provider_name(p), "model",
                                 rein_provider_model(p));
        if (j && meta)
            json_object_set_new(j, "meta", meta);
        else
            json_decref(meta);
        print_json(j);
        json_decref(j);
    }
    if (rc != CLI_EXIT_OK)
        cli_print_error(&err);
out:
    rein_model_response_free(resp);
    rein_provider_free(p);
    rein_history_free(h);
    rein_model_request_free(req);
    return rc;
}

int cmd_provider(int argc, char **argv)
{
    static const struct cli_command subs[] = {
        {"parse", "decode a recorded model reply", cmd_parse},
        {"chat", "send one message to the configured provider", cmd_chat},
        {"list", "the provider presets", cmd_list},
        {"caps", "the capabilities rein assumes for a model", cmd_caps},
        {NULL, NULL, NULL},
    };

    return cli_dispatch("provider", subs, provider_usage, argc, argv);
}
