/*
 * The MCP client's OAuth 2.1 (the MCP authorization spec, 2025-06-18 and 2025-11-25): what the
 * parsers of untrusted documents give (oauth_parse.c), the loopback redirect listener and the
 * token file (oauth_local.c), and the flow the HTTP transport runs on a 401 or a 403
 * insufficient_scope (oauth.c). Only src/mcp/ files, the fuzz targets and the tests include it.
 * Decision record: docs/decisions/0024-mcp-oauth-client.md.
 */
#ifndef REIN_MCP_OAUTH_INT_H
#define REIN_MCP_OAUTH_INT_H

#include "mcp/mcp_int.h"

/* ---- oauth_parse.c: parsers of what servers send ---------------------------------------- */

/* The Bearer challenge of a WWW-Authenticate header (RFC 6750 §3, RFC 9728 §5.1). Each member
 * is a new string or NULL when the challenge does not carry it. */
struct rein__oauth_challenge {
    char *resource_metadata;
    char *scope;
    char *error;
};
/*
 * Reads the Bearer challenge out of a WWW-Authenticate value of len bytes (other schemes and
 * unknown parameters are skipped). REIN_ENOTFOUND when there is no Bearer challenge,
 * REIN_EINVAL when the value is malformed; out is then empty. Release with
 * rein__oauth_challenge_release().
 */
rein_err rein__oauth_challenge_parse(const char *value, size_t len,
                                     struct rein__oauth_challenge *out);
void rein__oauth_challenge_release(struct rein__oauth_challenge *ch);

/* What kind of metadata document rein__oauth_doc_parse() checks. */
enum rein__oauth_doc {
    REIN__OAUTH_PRM,       /* protected resource metadata (RFC 9728) */
    REIN__OAUTH_ASM,       /* authorization server metadata (RFC 8414, OpenID discovery) */
    REIN__OAUTH_CLIENT,    /* a client registration response (RFC 7591) */
    REIN__OAUTH_TOKEN,     /* a token endpoint response (RFC 6749 §5.1) */
    REIN__OAUTH_TOKEN_ERR, /* a token endpoint error (RFC 6749 §5.2) */
    REIN__OAUTH_EXCHANGE   /* a token exchange response (RFC 8693 §2.2.1) */
};
/*
 * Parses len bytes of text as the document kind and checks its shape: the members rein reads
 * have their types (strings, arrays of strings, a positive expires_in), the required ones are
 * there (resource; issuer and the endpoints; client_id; access_token and a Bearer token_type;
 * error). *out receives a new reference. REIN_EINVAL with err naming the member at fault.
 */
rein_err rein__oauth_doc_parse(enum rein__oauth_doc kind, const char *text, size_t len,
                               json_t **out, rein_error *err);
/*
 * The rule for every OAuth endpoint rein talks to or sends a browser to (MCP authorization:
 * authorization server endpoints MUST be https): true for an https URL with a host, and for
 * http to this machine only (localhost, 127.0.0.1, [::1], any port), never with userinfo.
 */
bool rein__oauth_endpoint_ok(const char *url);
/* True when the array of strings arr (borrowed; may be NULL) holds s. */
bool rein__oauth_has(const json_t *arr, const char *s);

/*
 * The value of name in an application/x-www-form-urlencoded query (percent-decoded, '+' as a
 * space) into out; false when it is absent, does not fit, or decodes to a NUL byte.
 */
bool rein__oauth_query_get(const char *query, const char *name, char *out, size_t size);
/* "name=value" percent-encoded for a query or a form body (RFC 3986's unreserved characters
 * kept), after a '&' unless b is empty. */
rein_err rein__oauth_form_add(struct rein_buf *b, const char *name, const char *value);
/* s percent-encoded the same way, appended to b. */
rein_err rein__oauth_escape(struct rein_buf *b, const char *s);
/* len random bytes from getrandom() as base64url without padding (a new string), for PKCE
 * verifiers and state values; NULL when out of memory. */
char *rein__oauth_random(size_t len);
/* The S256 code challenge of verifier: base64url(SHA-256(verifier)), 43 characters + NUL. */
void rein__oauth_s256(const char *verifier, char out[44]);

/* ---- oauth_local.c: the loopback redirect and the token file ---------------------------- */

/* A listener on 127.0.0.1 for the authorization server's redirect (RFC 8252 §7.3). */
struct rein__oauth_loopback {
    int fd;
    int port;
};
/* Binds 127.0.0.1 on port (0: any free port). */
rein_err rein__oauth_loopback_open(struct rein__oauth_loopback *lb, int port, rein_error *err);
void rein__oauth_loopback_close(struct rein__oauth_loopback *lb);
/*
 * Waits up to timeout_ms for the redirect to /callback: answers other requests 404 and keeps
 * waiting; a redirect whose state is not state is refused (REIN_EDENIED: the page says why); an
 * error the authorization server sent is REIN_EDENIED with its error code. On success the code is
 * in code (size bytes).
 */
rein_err rein__oauth_loopback_wait(struct rein__oauth_loopback *lb, const char *state,
                                   int64_t timeout_ms, rein_cancel *cancel, char *code, size_t size,
                                   rein_error *err);
/*
 * The token file: $REIN_STATE_DIR, else $XDG_STATE_HOME/rein, else ~/.local/state/rein, then
 * mcp-oauth.json (mode 0600, its folder 0700), one object per protected resource URL. load
 * gives a new reference to the entry for key (NULL when there is none); a file others can read
 * is refused (REIN_EDENIED). save replaces the entry (NULL: removes it), under a lock, through a
 * new file renamed into place.
 */
rein_err rein__oauth_store_load(const char *key, json_t **out, rein_error *err);
rein_err rein__oauth_store_save(const char *key, json_t *entry, rein_error *err);
/* The token file's path into out; false when no state folder can be named. */
bool rein__oauth_store_path(char *out, size_t size);

/* ---- oauth.c: the flow ------------------------------------------------------------------ */

struct rein__mcp_conn;
/* The Authorization header line for c's current access token into out ("" when there is
 * none); *gen receives the token's generation (it changes with every new token). */
void rein__oauth_header(struct rein__mcp_conn *c, char *out, size_t size, uint64_t *gen);
/*
 * A request sent with token generation gen got HTTP status (401, or 403 with
 * insufficient_scope) and the WWW-Authenticate value www (may be NULL). Gets a token the
 * server should accept: another request's new token, a refresh, client credentials, or (when
 * c's owner allows logins) the browser flow. REIN_OK: send the request again. At most three
 * authorizations are tried for one request (attempt counts them).
 */
rein_err rein__oauth_authorize(struct rein__mcp_conn *c, long status, const char *www, uint64_t gen,
                               int *attempt, int64_t deadline, rein_cancel *cancel,
                               rein_error *err);
/* Frees what c keeps for OAuth. */
void rein__oauth_conn_release(struct rein__mcp_conn *c);

#endif /* REIN_MCP_OAUTH_INT_H */
