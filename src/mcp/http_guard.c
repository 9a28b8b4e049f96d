/*
 * The checks every request to rein's Streamable HTTP endpoint passes before its body is read
 * as a message: DNS-rebinding protection (the Origin and Host headers must name a loopback
 * host, or one the operator allowed) and the Accept negotiation MCP asks for. Split from
 * http.c so the transport's message handling reads on its own; no state but the allowed list.
 */
#include "mcp/mcp_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Copies the host[:port] of an Origin ("http://localhost:3000") into out; false if none. */
static bool origin_hostport(const char *origin, char *out, size_t size)
{
    const char *p = strstr(origin, "://");
    size_t n;

    if (!p)
        return false;
    p += 3;
    n = strcspn(p, "/?#");
    if (n == 0 || n >= size)
        return false;
    memcpy(out, p, n);
    out[n] = '\0';
    return true;
}

/* Splits "host:port" / "[v6]:port" / "host": writes the lower-case host into out. */
static bool split_host(const char *hostport, char *out, size_t size)
{
    size_t n;

    if (hostport[0] == '[') {
        const char *close = strchr(hostport, ']');
        if (!close)
            return false;
        n = (size_t)(close - hostport) + 1;
        if (close[1] && close[1] != ':')
            return false;
    } else {
        n = strcspn(hostport, ":");
    }
    if (n == 0 || n >= size)
        return false;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)tolower((unsigned char)hostport[i]);
    out[n] = '\0';
    return true;
}

static bool has_port(const char *hostport)
{
    const char *close = hostport[0] == '[' ? strchr(hostport, ']') : NULL;

    return strchr(close ? close : hostport, ':') != NULL;
}

static bool hostport_allowed(const struct rein__mcp_hosts *h, const char *hostport)
{
    char host[256];

    if (h->any)
        return true;
    if (!split_host(hostport, host, sizeof(host)))
        return false;
    if (strcmp(host, "localhost") == 0 || strcmp(host, "127.0.0.1") == 0 ||
        strcmp(host, "[::1]") == 0)
        return true;
    for (size_t i = 0; i < h->n; i++) {
        const char *a = h->allowed[i];
        /* An entry with a port must match exactly; one without matches any port. */
        if (has_port(a) ? strcasecmp(a, hostport) == 0 : strcasecmp(a, host) == 0)
            return true;
    }
    return false;
}

/* ---- negotiation helpers ---------------------------------------------------------------- */

/* The q value of one media range's parameters (";q=0.5"); 1 when absent or unreadable. */
static double range_q(const char *params, size_t len)
{
    for (size_t i = 0; i + 2 < len; i++) {
        if (params[i] == ';') {
            size_t j = i + 1;
            while (j < len && (params[j] == ' ' || params[j] == '\t'))
                j++;
            if (j + 1 < len && (params[j] == 'q' || params[j] == 'Q') && params[j + 1] == '=') {
                char num[16];
                size_t n = 0;
                for (j += 2; j < len && n + 1 < sizeof(num) && params[j] != ';'; j++)
                    num[n++] = params[j];
                num[n] = '\0';
                return strtod(num, NULL);
            }
        }
    }
    return 1;
}

/*
 * True when an Accept header value admits type ("application/json"), as RFC 9110 reads it:
 * the most specific media range that matches (the type itself, then its major type with a
 * star, then star/star) decides, and q=0 refuses. No header admits nothing: MCP requires
 * clients to send one.
 */
bool rein__mcp_http_accepts(const char *accept, const char *type)
{
    size_t major = strcspn(type, "/");
    int best = 0; /* 3 the type, 2 its major type, 1 any */
    double q = 0;

    for (const char *p = accept; p && *p;) {
        size_t item = strcspn(p, ",");
        size_t start = 0, end;
        while (start < item && (p[start] == ' ' || p[start] == '\t'))
            start++;
        end = start + strcspn(p + start, ";,");
        if (end > item)
            end = item;
        while (end > start && (p[end - 1] == ' ' || p[end - 1] == '\t'))
            end--;
        const char *r = p + start;
        size_t rlen = end - start;
        int rank = 0;
        if (rlen == strlen(type) && strncasecmp(r, type, rlen) == 0)
            rank = 3;
        else if (rlen == major + 2 && strncasecmp(r, type, major + 1) == 0 && r[major + 1] == '*')
            rank = 2;
        else if (rlen == 3 && memcmp(r, "*/*", 3) == 0)
            rank = 1;
        if (rank > best) {
            best = rank;
            q = range_q(p + end, item - end);
        }
        p += item;
        if (*p == ',')
            p++;
    }
    return best > 0 && q > 0;
}

const char *rein__mcp_hosts_check(const struct rein__mcp_hosts *h, const char *origin,
                                  const char *host)
{
    char hp[256];

    if (h->any)
        return NULL;
    if (origin && (!origin_hostport(origin, hp, sizeof(hp)) || !hostport_allowed(h, hp)))
        return "Origin";
    if (host && !hostport_allowed(h, host))
        return "Host";
    return NULL;
}

void rein__mcp_hosts_release(struct rein__mcp_hosts *h)
{
    for (size_t i = 0; i < h->n; i++)
        rein_free(h->allowed[i]);
    rein_free(h->allowed);
    memset(h, 0, sizeof(*h));
}

rein_err rein__mcp_hosts_parse(struct rein__mcp_hosts *h, const char *list)
{
    memset(h, 0, sizeof(*h));
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (end - p == 1 && *p == '*') {
            h->any = true;
        } else if (end > p) {
            char **grown = rein_realloc(h->allowed, (h->n + 1) * sizeof(*grown));
            if (!grown)
                return REIN_ENOMEM;
            h->allowed = grown;
            h->allowed[h->n] = rein_strndup(p, (size_t)(end - p));
            if (!h->allowed[h->n])
                return REIN_ENOMEM;
            h->n++;
        }
        p = comma ? comma + 1 : NULL;
    }
    return REIN_OK;
}
