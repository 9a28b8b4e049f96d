/*
 * A scripted MCP server on stdio for the client tests: well-behaved by default, with tools
 * that misbehave on purpose. Usage: mcp_fake_server MODE [TOOL...]
 *
 * Modes:
 *   ok            answers initialize and tools/list (the TOOL names given, each taking
 *                 {"x": string}) and tools/call as below
 *   garbage_only  writes a line that is not JSON for every line it reads, nothing else
 *   exit          writes "fatal: cannot start" on stderr and exits with status 4
 *   version       answers initialize with protocol version 1999-01-01
 *   paged         as ok, but tools/list gives one tool per page (nextCursor is the next
 *                 index; a cursor that is not one it gave is refused with -32602)
 *   pageloop      as paged, but a page's nextCursor is the cursor it was asked with
 *   pagemany      as paged, but every page has a nextCursor (the next index, without end)
 *   mute          reads everything and answers nothing (a hung server)
 *   flaky         exits like exit unless the file named by FAKE_READY exists, then as ok
 *   modern        speaks only 2026-07-28, the stateless revision: initialize is an unknown
 *                 method (-32601), server/discover answers, and every other request must name
 *                 2026-07-28 in params._meta with clientCapabilities (-32602 else); otherwise
 *                 as ok
 *
 * Tools (any name works; these behave specially):
 *   env       returns PATH, HOME, FAKE_VAR and whether OPENAI_API_KEY is set
 *   slow      answers nothing until a notifications/cancelled for it arrives (then nothing)
 *   progress  sends three progress notifications and a log message, then answers
 *   fail      answers isError with the text "the fake failed"
 *   die       writes "fatal: fake crash" on stderr and exits with status 3
 *   pingback  asks the client ping, sampling/createMessage, roots/list and elicitation/create;
 *             answers "pong ok" once all are answered as MCP asks of a client without those
 *             capabilities (ping: an empty result; the rest: error -32601), else says which
 *             answer was wrong
 *   hold      logs "holding", then waits for a call of release and answers that one first
 *             (so the client sees its responses out of order), then itself ("held")
 *   wrongid   first answers an id that was never sent, then the real one
 *   huge      answers with 2 MiB of text
 *   garbage   writes a line that is not JSON, then answers
 *   ticking   sends a progress notification every 100 ms for a second, then answers "ticked"
 *   meta      answers with the call's params._meta as structuredContent {"_meta": ...}
 *   grow      adds the tool "grown" to its list, sends notifications/tools/list_changed, answers
 *   typed     declares an outputSchema its structuredContent keeps (answers as any tool)
 *   mistyped  declares an outputSchema ({n: integer} required) its structuredContent breaks
 * Any other tool answers {"content": [{"type": "text", "text": "<tool> got <arguments>"}],
 * "structuredContent": {"tool", "arguments"}}.
 *
 * FAKE_LOG (a file) receives one line per start ("start") and per cancellation
 * ("cancelled <request id>").
 */
#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *mode = "ok";
static char **tools;
static int ntools;
static bool grown; /* the grow tool ran: "grown" is listed too */

static void log_line(const char *word, const char *arg)
{
    const char *path = getenv("FAKE_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;

    if (!f)
        return;
    fprintf(f, "%s%s%s\n", word, arg ? " " : "", arg ? arg : "");
    fclose(f);
}

static void send_json(json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);

    if (text) {
        fputs(text, stdout);
        fputc('\n', stdout);
        fflush(stdout);
        free(text);
    }
    json_decref(msg);
}

static void result(json_t *id, json_t *res)
{
    send_json(json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", res));
}

static json_t *text_result(const char *text)
{
    return json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text", text);
}

/* Reads one line from stdin into a new JSON value (NULL at end of input or for non-JSON). */
static json_t *read_msg(int timeout_ms, int *eof)
{
    static char buf[1 << 20];
    static size_t len;
    char *nl;

    *eof = 0;
    for (;;) {
        nl = memchr(buf, '\n', len);
        if (nl) {
            size_t n = (size_t)(nl - buf);
            json_t *v = json_loadb(buf, n, 0, NULL);
            memmove(buf, nl + 1, len - n - 1);
            len -= n + 1;
            return v ? v : json_null();
        }
        struct pollfd pfd = {0, POLLIN, 0};
        if (poll(&pfd, 1, timeout_ms) <= 0)
            return NULL;
        ssize_t r = read(0, buf + len, sizeof(buf) - len);
        if (r <= 0) {
            *eof = 1;
            return NULL;
        }
        len += (size_t)r;
    }
}

static json_t *tool_list(void)
{
    json_t *arr = json_array();

    for (int i = 0; i < ntools + (grown ? 1 : 0); i++) {
        const char *name = i < ntools ? tools[i] : "grown";
        json_t *t = json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s}}}}", "name", name, "description",
                              "a fake tool", "inputSchema", "type", "object", "properties", "x",
                              "type", "string");
        /* typed keeps the shape it declares; mistyped declares one it does not keep. */
        if (strcmp(name, "typed") == 0)
            json_object_set_new(t, "outputSchema",
                                json_pack("{s:s, s:[s], s:{s:{s:s}}}", "type", "object", "required",
                                          "tool", "properties", "tool", "type", "string"));
        else if (strcmp(name, "mistyped") == 0)
            json_object_set_new(t, "outputSchema",
                                json_pack("{s:s, s:[s], s:{s:{s:s}}}", "type", "object", "required",
                                          "n", "properties", "n", "type", "integer"));
        json_array_append_new(arr, t);
    }
    return arr;
}

/* tools/list in paged mode: one tool per page. */
static void paged_list(json_t *id, json_t *params)
{
    const char *cursor = json_string_value(json_object_get(params, "cursor"));
    char *end = NULL, next[32];
    long i = cursor ? strtol(cursor, &end, 10) : 0;

    if (strcmp(mode, "pageloop") == 0 && cursor) {
        result(id, json_pack("{s:[], s:s}", "tools", "nextCursor", cursor));
        return;
    }
    if (strcmp(mode, "pagemany") == 0) {
        snprintf(next, sizeof(next), "%ld", cursor ? strtol(cursor, NULL, 10) + 1 : 1);
        result(id, json_pack("{s:[], s:s}", "tools", "nextCursor", next));
        return;
    }
    if (cursor && (!*cursor || *end || i < 0 || i >= ntools)) {
        send_json(json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                            -32602, "message", "invalid cursor"));
        return;
    }
    json_t *all = tool_list();
    json_t *page = json_pack("{s:[O]}", "tools", json_array_get(all, (size_t)i));
    if (i + 1 < ntools) {
        snprintf(next, sizeof(next), "%ld", i + 1);
        json_object_set_new(page, "nextCursor", json_string(next));
    }
    json_decref(all);
    result(id, page);
}

/* Waits for the answers to the four requests pingback sent; NULL when they are right, else
 * what was wrong. */
static const char *await_client_answers(void)
{
    static char wrong[256];
    int got = 0, eof;

    wrong[0] = '\0';
    while (got < 4) {
        json_t *m = read_msg(30000, &eof);
        if (!m)
            exit(5);
        const char *id = json_string_value(json_object_get(m, "id"));
        json_t *res = json_object_get(m, "result"), *err = json_object_get(m, "error");
        if (id && (res || err)) {
            got++;
            bool ok = strcmp(id, "srv-1") == 0
                          ? json_is_object(res) && json_object_size(res) == 0
                          : json_integer_value(json_object_get(err, "code")) == -32601;
            if (!ok && !wrong[0]) {
                char *t = json_dumps(m, JSON_COMPACT);
                snprintf(wrong, sizeof(wrong), "wrong answer to %s: %s", id, t ? t : "?");
                free(t);
            }
        }
        json_decref(m);
    }
    return wrong[0] ? wrong : NULL;
}

/* hold: waits for release's call, answers it, then hold's own id. */
static void hold(json_t *id)
{
    int eof;

    log_line("holding", NULL);
    for (;;) {
        json_t *m = read_msg(30000, &eof);
        if (!m)
            exit(6);
        const char *method = json_string_value(json_object_get(m, "method"));
        const char *name = json_string_value(json_object_get(json_object_get(m, "params"), "name"));
        if (method && strcmp(method, "tools/call") == 0 && name && strcmp(name, "release") == 0) {
            result(json_object_get(m, "id"), text_result("released"));
            json_decref(m);
            break;
        }
        json_decref(m);
    }
    result(id, text_result("held"));
}

static void call_tool(json_t *id, json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
    char text[512];

    if (!name)
        name = "";
    if (strcmp(name, "env") == 0) {
        const char *p = getenv("PATH"), *h = getenv("HOME"), *f = getenv("FAKE_VAR");
        result(id, json_pack("{s:[{s:s, s:s}], s:{s:s, s:s, s:s, s:b}}", "content", "type", "text",
                             "text", "env", "structuredContent", "PATH", p ? p : "", "HOME",
                             h ? h : "", "FAKE_VAR", f ? f : "", "OPENAI_API_KEY",
                             getenv("OPENAI_API_KEY") != NULL));
    } else if (strcmp(name, "slow") == 0) {
        /* Wait for the cancellation; a slow call never answers. */
        for (;;) {
            int eof;
            json_t *m = read_msg(30000, &eof);
            if (!m)
                exit(0);
            const char *method = json_string_value(json_object_get(m, "method"));
            if (method && strcmp(method, "notifications/cancelled") == 0) {
                char *rid = json_dumps(json_object_get(json_object_get(m, "params"), "requestId"),
                                       JSON_ENCODE_ANY);
                log_line("cancelled", rid ? rid : "?");
                free(rid);
                json_decref(m);
                return;
            }
            json_decref(m);
        }
    } else if (strcmp(name, "progress") == 0) {
        for (int i = 1; i <= 3; i++)
            send_json(json_pack("{s:s, s:s, s:{s:O, s:i, s:i}}", "jsonrpc", "2.0", "method",
                                "notifications/progress", "params", "progressToken",
                                token ? token : json_null(), "progress", i, "total", 3));
        send_json(json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "jsonrpc", "2.0", "method",
                            "notifications/message", "params", "level", "warning", "logger", "fake",
                            "data", "almost there"));
        result(id, text_result("progress done"));
    } else if (strcmp(name, "ticking") == 0) {
        for (int i = 1; i <= 10; i++) {
            struct timespec ts = {0, 100 * 1000000L};
            nanosleep(&ts, NULL);
            send_json(json_pack("{s:s, s:s, s:{s:O, s:i}}", "jsonrpc", "2.0", "method",
                                "notifications/progress", "params", "progressToken",
                                token ? token : json_null(), "progress", i));
        }
        result(id, text_result("ticked"));
    } else if (strcmp(name, "meta") == 0) {
        json_t *meta = json_object_get(params, "_meta");
        json_t *r = text_result("meta");
        json_object_set_new(r, "structuredContent",
                            json_pack("{s:O}", "_meta", meta ? meta : json_null()));
        result(id, r);
    } else if (strcmp(name, "grow") == 0) {
        grown = true;
        send_json(json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method",
                            "notifications/tools/list_changed"));
        result(id, text_result("grown"));
    } else if (strcmp(name, "fail") == 0) {
        json_t *r = text_result("the fake failed");
        json_object_set_new(r, "isError", json_true());
        result(id, r);
    } else if (strcmp(name, "die") == 0) {
        fprintf(stderr, "fatal: fake crash\n");
        _exit(3); /* no exit handlers: a sanitizer's report would bury the last words */
    } else if (strcmp(name, "pingback") == 0) {
        send_json(json_pack("{s:s, s:s, s:s}", "jsonrpc", "2.0", "id", "srv-1", "method", "ping"));
        send_json(json_pack("{s:s, s:s, s:s, s:{s:[], s:i}}", "jsonrpc", "2.0", "id", "srv-2",
                            "method", "sampling/createMessage", "params", "messages", "maxTokens",
                            10));
        send_json(
            json_pack("{s:s, s:s, s:s}", "jsonrpc", "2.0", "id", "srv-3", "method", "roots/list"));
        send_json(json_pack("{s:s, s:s, s:s, s:{s:s, s:{s:s}}}", "jsonrpc", "2.0", "id", "srv-4",
                            "method", "elicitation/create", "params", "message", "name?",
                            "requestedSchema", "type", "object"));
        const char *wrong = await_client_answers();
        result(id, text_result(wrong ? wrong : "pong ok"));
    } else if (strcmp(name, "hold") == 0) {
        hold(id);
    } else if (strcmp(name, "wrongid") == 0) {
        result(json_integer(999999), text_result("not for you"));
        result(id, text_result("the right one"));
    } else if (strcmp(name, "huge") == 0) {
        size_t n = (size_t)2 << 20;
        char *big = malloc(n + 1);
        memset(big, 'a', n);
        big[n] = '\0';
        result(id, text_result(big));
        free(big);
    } else {
        if (strcmp(name, "garbage") == 0) {
            fputs("<html>this is not JSON</html>\n", stdout);
            fflush(stdout);
        }
        char *a = json_dumps(args ? args : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
        snprintf(text, sizeof(text), "%s got %s", name, a ? a : "null");
        json_t *r = text_result(text);
        json_object_set_new(
            r, "structuredContent",
            json_pack("{s:s, s:O}", "tool", name, "arguments", args ? args : json_null()));
        result(id, r);
        free(a);
    }
}

/* modern mode: answers initialize, server/discover and requests without the revision's _meta
 * itself (true: answered); false for a well-formed request the ok mode answers. */
static bool modern_request(json_t *id, const char *method, const json_t *m)
{
    const json_t *meta = json_object_get(json_object_get(m, "params"), "_meta");
    const char *v =
        json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion"));

    if (strcmp(method, "initialize") == 0) {
        send_json(json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                            -32601, "message",
                            "initialize is not a method of 2026-07-28, the only revision here"));
    } else if (!v || strcmp(v, "2026-07-28") != 0 ||
               !json_is_object(
                   json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"))) {
        send_json(json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                            -32602, "message", "params._meta must name 2026-07-28"));
    } else if (strcmp(method, "server/discover") == 0) {
        result(id, json_pack("{s:s, s:[s], s:{s:{}}, s:{s:{s:s, s:s}}, s:i, s:s}", "resultType",
                             "complete", "supportedVersions", "2026-07-28", "capabilities", "tools",
                             "_meta", "io.modelcontextprotocol/serverInfo", "name", "fake-modern",
                             "version", "1.0", "ttlMs", 0, "cacheScope", "public"));
    } else {
        return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    int eof = 0;

    if (argc > 1)
        mode = argv[1];
    tools = argv + 2;
    ntools = argc > 2 ? argc - 2 : 0;
    log_line("start", NULL);
    if (strcmp(mode, "exit") == 0 ||
        (strcmp(mode, "flaky") == 0 && access(getenv("FAKE_READY") ?: "", F_OK) != 0)) {
        fprintf(stderr, "fatal: cannot start\n");
        return 4;
    }
    for (;;) {
        json_t *m = read_msg(60000, &eof);
        if (!m) {
            if (eof)
                return 0;
            continue;
        }
        if (strcmp(mode, "mute") == 0) {
            json_decref(m);
            continue;
        }
        if (strcmp(mode, "garbage_only") == 0) {
            fputs("Traceback (most recent call last): not a message\n", stdout);
            fflush(stdout);
            json_decref(m);
            continue;
        }
        const char *method = json_string_value(json_object_get(m, "method"));
        json_t *id = json_object_get(m, "id");
        if (strcmp(mode, "modern") == 0 && method && id && modern_request(id, method, m)) {
            /* answered */
        } else if (method && id && strcmp(method, "initialize") == 0) {
            const char *v = strcmp(mode, "version") == 0 ? "1999-01-01" : "2025-06-18";
            result(id,
                   json_pack("{s:s, s:{s:{}}, s:{s:s, s:s}}", "protocolVersion", v, "capabilities",
                             "tools", "serverInfo", "name", "fake", "version", "1.0"));
        } else if (method && id && strcmp(method, "tools/list") == 0) {
            if (strncmp(mode, "page", 4) == 0)
                paged_list(id, json_object_get(m, "params"));
            else
                result(id, json_pack("{s:o}", "tools", tool_list()));
        } else if (method && id && strcmp(method, "tools/call") == 0) {
            call_tool(id, json_object_get(m, "params"));
        } else if (method && id) {
            send_json(json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
                                "code", -32601, "message", "no such method"));
        }
        json_decref(m);
    }
}
