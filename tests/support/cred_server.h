/*
 * cred_server.h: a scripted HTTP endpoint for the credential sources the providers ask (the
 * AWS container endpoint and instance metadata, an OAuth token endpoint): real sockets on
 * 127.0.0.1, routes answered from a table, every request logged. libmicrohttpd, one thread per
 * connection.
 *
 *   cs_server *s = cs_start();
 *   cs_route(s, "GET", "/creds", 200, "{...}", "authorization: Bearer x");
 *   ... rein asks cs_url(s) ...
 *   cs_count(s, "GET", "/creds") == 1
 *   cs_stop(s);
 *
 * A request that matches no route is answered 404; one whose route names a header it lacks
 * (name case-insensitive, value exact) 401. Routes are tried latest first, so a later cs_route
 * for the same method and path replaces what it answers.
 */
#ifndef REIN_TEST_CRED_SERVER_H
#define REIN_TEST_CRED_SERVER_H

#include <stddef.h>

typedef struct cs_server cs_server;

/* NULL when it cannot start. */
cs_server *cs_start(void);
void cs_stop(cs_server *s);
/* "http://127.0.0.1:PORT" (borrowed). */
const char *cs_url(const cs_server *s);
/* Adds a route; strings are copied. need: "name: value" the request must carry, or NULL. */
void cs_route(cs_server *s, const char *method, const char *path, int status, const char *body,
              const char *need);
/* Requests seen for method and path (NULL: any). */
size_t cs_count(cs_server *s, const char *method, const char *path);
/* The body of the latest request to path, or "" (copied into a buffer the server keeps until
 * the next call). */
const char *cs_last_body(cs_server *s, const char *path);

#endif /* REIN_TEST_CRED_SERVER_H */
