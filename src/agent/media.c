/*
 * What the model reads of a tool's MCP-shaped output ({"content": [blocks],
 * "structuredContent"?}, from MCP servers and skills that print MCP content): images, audio and
 * binary resources leave the JSON text for the tool message's "attachments" (each provider
 * sends them as its own content blocks where its wire takes them, else says they were not
 * sent), and a structuredContent is sent once, not beside its text copy (the MCP spec asks
 * tools to repeat it as a text block for older clients). Everything else is left as it is.
 */
#include "agent/agent_int.h"

#include <string.h>

/* An attachment larger than this is named but not sent (providers refuse ~5 MB images). */
#define MAX_ATTACHMENT_B64 ((size_t)5 << 20)

/* The size of the bytes len characters of base64 stand for. */
static size_t decoded_size(const char *b64, size_t len)
{
    size_t pad = 0;

    while (pad < 2 && len > pad && b64[len - 1 - pad] == '=')
        pad++;
    return len / 4 * 3 - (len % 4 == 0 ? pad : 0);
}

static const char *kind_of(const char *type, const char *mime)
{
    if (strcmp(type, "image") == 0)
        return "image";
    if (strcmp(type, "audio") == 0)
        return "audio";
    if (mime && strncmp(mime, "image/", 6) == 0)
        return "image";
    if (mime && strncmp(mime, "audio/", 6) == 0)
        return "audio";
    return "document";
}

/*
 * The text that stands for a binary block, and the attachment it becomes (appended to atts);
 * a new string or NULL when out of memory.
 */
static json_t *media_block(const json_t *block, const char *type, json_t *atts)
{
    const json_t *res = json_object_get(block, "resource");
    const json_t *src = strcmp(type, "resource") == 0 ? res : block;
    const char *data = json_string_value(json_object_get(src, "data"));
    const char *mime = json_string_value(json_object_get(src, "mimeType"));
    const char *uri = json_string_value(json_object_get(res, "uri"));
    size_t len, n = json_array_size(atts) + 1;
    const char *kind;
    char text[600];

    if (!data)
        data = json_string_value(json_object_get(src, "blob"));
    len = data ? strlen(data) : 0;
    kind = kind_of(type, mime);
    if (!data || !mime || len > MAX_ATTACHMENT_B64) {
        snprintf(text, sizeof(text), "[%s (%s), %zu bytes, not shown: %s]", kind,
                 mime ? mime : "no type", decoded_size(data, len),
                 !data || !mime ? "no data or no type" : "larger than 5 MB");
        return json_string(text);
    }
    json_t *att = json_pack("{s:s, s:s, s:s, s:I}", "type", kind, "mime_type", mime, "data", data,
                            "index", (json_int_t)n);
    if (!att || (uri && json_object_set_new(att, "uri", json_string(uri))) ||
        json_array_append_new(atts, att)) {
        return NULL;
    }
    snprintf(text, sizeof(text), "[attachment %zu (%s): %s, %zu bytes%s%.300s]", n, kind, mime,
             decoded_size(data, len), uri ? ", " : "", uri ? uri : "");
    return json_string(text);
}

static bool is_media(const json_t *block, const char **type)
{
    const json_t *res = json_object_get(block, "resource");

    *type = json_string_value(json_object_get(block, "type"));
    if (!*type)
        return false;
    if (strcmp(*type, "image") == 0 || strcmp(*type, "audio") == 0)
        return true;
    return strcmp(*type, "resource") == 0 && json_is_string(json_object_get(res, "blob"));
}

/*
 * The output the model reads instead of o (a new reference), with media moved to atts; NULL
 * when o is not MCP content with something to change (or memory ran out: then the caller
 * keeps the output as it was).
 */
static json_t *reshape(const json_t *o, json_t *atts)
{
    const json_t *content = json_object_get(o, "content");
    const json_t *sc = json_object_get(o, "structuredContent");
    bool media = false, all_text = true;
    json_t *parts, *b, *out;
    struct rein_buf text;
    const char *type;
    size_t i;

    if (!json_is_array(content))
        return NULL;
    json_array_foreach(content, i, b)
    {
        media = media || is_media(b, &type);
    }
    if (!media && !sc)
        return NULL;
    parts = json_array();
    json_array_foreach(content, i, b)
    {
        json_t *part;
        if (!parts)
            break;
        if (is_media(b, &type))
            part = media_block(b, type, atts);
        else if (sc && type && strcmp(type, "text") == 0)
            continue; /* the text copy of structuredContent */
        else if (type && strcmp(type, "text") == 0)
            part = json_incref(json_object_get(b, "text"));
        else
            part = json_incref(b);
        all_text = all_text && json_is_string(part);
        if (!part || json_array_append_new(parts, part)) {
            json_decref(parts);
            parts = NULL;
        }
    }
    if (!parts)
        return NULL;
    if (sc) {
        /* Sent once: the structured value, and what stands for any media after it. */
        out = json_array_size(parts)
                  ? json_pack("{s:O, s:o}", "structuredContent", sc, "attachments", parts)
                  : json_incref((json_t *)sc);
        if (json_array_size(parts) == 0)
            json_decref(parts);
        return out;
    }
    if (!all_text)
        return parts;
    rein_buf_init(&text, 0);
    json_array_foreach(parts, i, b)
    {
        if ((i && rein_buf_adds(&text, "\n\n")) ||
            rein_buf_add(&text, json_string_value(b), json_string_length(b))) {
            rein_buf_release(&text);
            json_decref(parts);
            return NULL;
        }
    }
    out = json_stringn(text.ptr ? text.ptr : "", text.len);
    rein_buf_release(&text);
    json_decref(parts);
    return out;
}

rein_err rein__calls_media(struct call_slot *s, json_t **attachments)
{
    const json_t *output = s->res ? rein_call_result_output(s->res) : NULL;
    json_t *doc, *atts, *shaped;
    char *text;

    *attachments = NULL;
    if (!json_is_object(output) || !json_is_array(json_object_get(output, "content")) ||
        s->proposed || !rein_call_result_ok(s->res))
        return REIN_OK;
    doc = rein_json_parse(s->content.ptr, s->content.len, 0, NULL);
    atts = json_array();
    shaped = doc && atts ? reshape(json_object_get(doc, "output"), atts) : NULL;
    if (!shaped || json_object_set_new(doc, "output", shaped)) {
        json_decref(doc);
        json_decref(atts);
        return REIN_OK; /* nothing to change (or no memory to change it: sent as it was) */
    }
    text = rein_json_dumps(doc);
    json_decref(doc);
    if (!text) {
        json_decref(atts);
        return REIN_OK;
    }
    rein_buf_reset(&s->content);
    if (rein_buf_adds(&s->content, text) != REIN_OK) {
        rein_free(text);
        json_decref(atts);
        return REIN_ENOMEM;
    }
    rein_free(text);
    if (json_array_size(atts))
        *attachments = atts;
    else
        json_decref(atts);
    return REIN_OK;
}
