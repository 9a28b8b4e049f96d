/*
 * The upstream's response headers that rein keeps for its caller (include/rein/provider.h,
 * rein_model_headers): the request's id and the rate limits. A gateway's client needs them
 * (the id is what the provider's support asks for, the limits are what an SDK or an agent
 * like Claude Code paces itself by), and without this they ended at rein.
 *
 * provider.c's header callback offers every line of every attempt's response here. Only the
 * names on the list below are kept, so what must never leave rein (hop-by-hop headers,
 * content-length and -encoding, set-cookie, anything carrying a credential) cannot be among
 * them; a line of another name costs a few compares and no allocation. What is kept goes into
 * one fixed-size buffer, made for the first header kept, bounded in count and bytes so an
 * upstream cannot make rein hold more (decision 0086).
 */
#include "provider_int.h"

#include "core/internal.h"

#include <string.h>
#include <strings.h>

/* The names kept: exact, or a prefix followed by at least one more character. */
struct kept_name {
    const char *name;
    size_t len;
    bool prefix;
};

#define KEPT(lit, prefix)                                                                          \
    {                                                                                              \
        lit, sizeof(lit) - 1, prefix                                                               \
    }
static const struct kept_name kept[] = {
    KEPT("request-id", false),           /* Anthropic */
    KEPT("x-request-id", false),         /* OpenAI and most servers of its wire */
    KEPT("openai-processing-ms", false), /* how long OpenAI worked on the request */
    KEPT("x-ratelimit-", true),          /* OpenAI's limit-, remaining-, reset- requests/tokens */
    KEPT("anthropic-ratelimit-", true),  /* requests, tokens, input-/output-tokens, unified-* */
};
#undef KEPT

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

static bool is_kept(const char *name, size_t n)
{
    for (size_t i = 0; i < REIN_ARRAY_SIZE(kept); i++) {
        const struct kept_name *k = &kept[i];
        if (n < k->len || (n == k->len) == k->prefix || strncasecmp(name, k->name, k->len) != 0)
            continue;
        /* a prefix's rest is a name the client's side can take as it is */
        for (size_t j = k->len; j < n; j++) {
            if (!name_char(name[j]))
                return false;
        }
        return true;
    }
    return false;
}

/* Printable ASCII and tabs only: a value goes into the client's answer as it is. */
static bool value_is_clean(const char *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if ((c < 0x20 && c != '\t') || c >= 0x7f)
            return false;
    }
    return true;
}

static bool holds_key(const char *v, size_t n, const char *const *keys, size_t nkeys)
{
    for (size_t i = 0; i < nkeys; i++) {
        size_t k = keys[i] ? strlen(keys[i]) : 0;
        /* as scrub_json in provider.c: a shorter "key" is no secret worth a false match */
        if (k >= 4 && k <= n && memmem(v, n, keys[i], k))
            return true;
    }
    return false;
}

/* Appends name (lower-cased) and value, each with its NUL; the caller checked the room. */
static void append(struct rein_model_headers *h, const char *name, size_t nlen, const char *v,
                   size_t vlen)
{
    char *p = h->buf + h->len;

    h->at[h->n++] = h->len;
    for (size_t i = 0; i < nlen; i++)
        p[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
    p[nlen] = '\0';
    memcpy(p + nlen + 1, v, vlen);
    p[nlen + 1 + vlen] = '\0';
    h->len = (uint16_t)(h->len + nlen + vlen + 2);
}

rein_err rein__headers_offer(struct rein_model_headers *h, const char *line, size_t n,
                             const char *const *keys, size_t nkeys)
{
    const char *colon = memchr(line, ':', n);
    const char *v;
    size_t nlen, vlen;

    if (!colon)
        return REIN_OK;
    nlen = (size_t)(colon - line);
    if (!is_kept(line, nlen))
        return REIN_OK;
    v = colon + 1;
    vlen = n - nlen - 1;
    while (vlen && (*v == ' ' || *v == '\t'))
        v++, vlen--;
    while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' ' ||
                    v[vlen - 1] == '\t'))
        vlen--;
    /* What does not fit is left out: the bound is what an upstream can make rein hold. */
    if (h->n >= REIN_MODEL_HEADERS_MAX || vlen > REIN__HEADER_VALUE_MAX ||
        h->len + nlen + vlen + 2 > REIN__HEADERS_BYTES || !value_is_clean(v, vlen) ||
        holds_key(v, vlen, keys, nkeys))
        return REIN_OK;
    if (!h->buf && !(h->buf = rein_malloc(REIN__HEADERS_BYTES)))
        return REIN_ENOMEM;
    append(h, line, nlen, v, vlen);
    return REIN_OK;
}

void rein__headers_clear(struct rein_model_headers *h)
{
    h->n = 0;
    h->len = 0;
}

void rein__headers_release(struct rein_model_headers *h)
{
    rein_free(h->buf);
    memset(h, 0, sizeof(*h));
}

size_t rein_model_headers_count(const rein_model_headers *h)
{
    return h ? h->n : 0;
}

bool rein_model_headers_at(const rein_model_headers *h, size_t i, const char **name,
                           const char **value)
{
    if (!h || i >= h->n)
        return false;
    *name = h->buf + h->at[i];
    *value = *name + strlen(*name) + 1;
    return true;
}

const char *rein_model_headers_get(const rein_model_headers *h, const char *name)
{
    for (size_t i = 0; h && name && i < h->n; i++) {
        const char *k = h->buf + h->at[i];
        if (strcasecmp(k, name) == 0)
            return k + strlen(k) + 1;
    }
    return NULL;
}
