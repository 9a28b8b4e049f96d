/*
 * A small HTTP skill host for the HTTP runner tests (libmicrohttpd on 127.0.0.1, a port the
 * kernel picks). POST paths:
 *   /ok       200 JSON normalized result {ok: true, output: {received: <body>, trace: <X-Trace-Id>}}
 *   /headers  200 JSON normalized result {ok: true, output: {traceparent, tracestate}} (the
 *             request's W3C Trace Context headers; null when absent)
 *   /raw      200 JSON plain output {"answer": 42}
 *   /hang     never answers (until the server stops)
 *   /html     200 text/html login page
 *   /error    500 JSON normalized error (denied, "quota exceeded")
 *   /gateway  502 text/plain
 *   /big      200 JSON, about 2 MiB
 *   /broken   200 application/json that is not JSON
 *   /mcp-asks a scripted MCP server (JSON answers, no session) with one tool, "ask", whose
 *             tools/call answers with an event stream that first asks the client ping,
 *             roots/list, sampling/createMessage and elicitation/create (ids srv-0..3), then
 *             answers "asked"; the client's POSTed answers are checked and counted
 */
#ifndef REIN_TEST_SKILL_HTTP_H
#define REIN_TEST_SKILL_HTTP_H

struct skill_http;

/* Starts the server; NULL when it cannot. */
struct skill_http *skill_http_start(void);
int skill_http_port(const struct skill_http *s);
/* Requests received so far (counted once each body has arrived). */
int skill_http_requests(struct skill_http *s);
/* /mcp-asks: answers that were right (ping: an empty result; the rest: -32601) and wrong. */
void skill_http_mcp_answers(struct skill_http *s, int *good, int *bad);
/* Stops the server (releasing any hanging request) and frees it. */
void skill_http_stop(struct skill_http *s);

#endif /* REIN_TEST_SKILL_HTTP_H */
