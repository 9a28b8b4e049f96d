/*
 * A client's inline media read into a neutral user or tool message's attachments (decisions
 * 0097 and 0098), for an upstream of another wire: each parser finds its wire's parts (OpenAI's
 * image_url, file and input_audio, the Responses API's input_image and input_file in a user
 * message or a function_call_output, Anthropic's image and document blocks in a user message or
 * a tool_result, Gemini's inlineData in a user content or a functionResponse) and hands the media
 * type and the base64 bytes here, where they are checked (a media type, base64) and asked of
 * the upstream's provider (rein_provider_takes_media): what it cannot carry is refused with a
 * 400 naming the part, never dropped. An upstream of the client's own wire gets the parts as
 * written (decision 0085) and never comes here. Media given by reference (a URL, a file id)
 * is refused: rein does not fetch for the client, and another wire could not read the
 * reference.
 */
#include "gateway/gateway_int.h"

#include "core/internal.h"

#include <rein/provider.h>

#include <stdarg.h>
#include <stdio.h>

/* The refusal's text in the client's wire's words: OpenAI's "Invalid 'param': …", the others'
 * "param: …". */
static rein_err refuse(const struct rein__gw_req *r, struct rein__gw_bad *bad, const char *param,
                       const char *fmt, ...) REIN_PRINTF(4, 5);

static rein_err refuse(const struct rein__gw_req *r, struct rein__gw_bad *bad, const char *param,
                       const char *fmt, ...)
{
    char why[300];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    if (r->api == REIN_GATEWAY_OPENAI)
        return rein__gw_bad(bad, param, "Invalid '%s': %s", param, why);
    return rein__gw_bad(bad, param, "%s: %s", param, why);
}

/* A media type as RFC 6838 writes one: type "/" subtype, each of letters, digits and
 * !#$&-^_.+ (no parameters). */
static bool mime_ok(const char *s, size_t n)
{
    static const char tok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                              "!#$&-^_.+";
    const char *slash = memchr(s, '/', n);
    size_t a = slash ? (size_t)(slash - s) : 0;

    if (!slash || a == 0 || a + 1 >= n || n > 127)
        return false;
    for (size_t i = 0; i < n; i++)
        if (i != a && !memchr(tok, s[i], sizeof(tok) - 1))
            return false;
    return true;
}

/* The neutral attachment's kind of a media type. */
static const char *kind_of(const char *mime)
{
    if (strncmp(mime, "image/", 6) == 0)
        return "image";
    if (strncmp(mime, "audio/", 6) == 0)
        return "audio";
    return "document";
}

rein_err rein__gw_media(const struct rein__gw_req *r, json_t **atts, const char *mime,
                        size_t mime_len, const char *data, size_t data_len, const char *param,
                        struct rein__gw_bad *bad)
{
    char type[128];
    json_t *a;

    if (!mime_ok(mime, mime_len))
        return refuse(r, bad, param, "'%.*s' is not a media type (type/subtype).",
                      (int)(mime_len > 64 ? 64 : mime_len), mime);
    memcpy(type, mime, mime_len);
    type[mime_len] = '\0';
    for (char *c = type; *c; c++) /* media types are case-insensitive; the wires write them low */
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    /* standard base64 with its padding (RFC 4648 §4), and something: what every wire takes */
    if (data_len == 0 || !rein__base64_valid(data, data_len))
        return refuse(r, bad, param, "the %s data is not base64 (RFC 4648, with its padding).",
                      type);
    if (r->upstream && !rein_provider_takes_media(r->upstream, type))
        return refuse(r, bad, param,
                      "the upstream (provider %s, the %s wire) takes no %s, and rein's gateway "
                      "does not drop what the client sent.",
                      rein_provider_name(r->upstream), rein_provider_wire(r->upstream), type);
    if (!*atts && !(*atts = json_array()))
        return REIN_ENOMEM;
    a = json_pack("{s:s, s:s, s:s%, s:I}", "type", kind_of(type), "mime_type", type, "data", data,
                  data_len, "index", (json_int_t)json_array_size(*atts) + 1);
    return a && !json_array_append_new(*atts, a) ? REIN_OK : REIN_ENOMEM;
}

rein_err rein__gw_media_url(const struct rein__gw_req *r, json_t **atts, const char *url,
                            const char *param, struct rein__gw_bad *bad)
{
    const char *mime = url + 5, *comma, *semi;

    if (strncmp(url, "data:", 5) != 0)
        return rein__gw_media_ref(r, param, "a URL", bad);
    /* the comma is looked for after the prefix: one before it ("a,b") would make a negative
     * length of the media type */
    comma = strchr(mime, ',');
    semi = comma ? memchr(mime, ';', (size_t)(comma - mime)) : NULL;
    /* data:MIME;base64,DATA: the one form of data URL the wires take (no parameters) */
    if (!semi || (size_t)(comma - semi) != 7 || strncmp(semi, ";base64", 7) != 0)
        return refuse(r, bad, param, "a data: URL must be data:<media type>;base64,<base64 data>.");
    return rein__gw_media(r, atts, mime, (size_t)(semi - mime), comma + 1, strlen(comma + 1), param,
                          bad);
}

rein_err rein__gw_media_ref(const struct rein__gw_req *r, const char *param, const char *what,
                            struct rein__gw_bad *bad)
{
    return refuse(r, bad, param,
                  "rein's gateway cannot carry media given by %s to an upstream of another wire; "
                  "send it inline (base64 / a data: URL) for an upstream of another wire.",
                  what);
}

json_t *rein__gw_user_msg(const char *text, size_t len, json_t *atts)
{
    json_t *msg = rein__gw_text_msg("user", text, len);

    if (msg && atts && json_object_set(msg, "attachments", atts)) {
        json_decref(msg);
        return NULL;
    }
    return msg;
}
