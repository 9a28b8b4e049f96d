/*
 * A lenient reader of text/event-stream bodies (the WHATWG "server-sent events" framing),
 * fed in arbitrary pieces.
 *
 * Real provider streams stray from the spec in small ways the fixtures record: a UTF-8 BOM,
 * "data:" without the space, comment lines (":HTTP_STATUS/200"), "event:" and "id:" lines,
 * and DashScope's events written with no blank line between them. The reader follows the
 * spec where it is clear and otherwise dispatches the pending data as soon as the next
 * event's first field arrives (an id:, or a second event:), so no event is merged into
 * another. With payload_lines it
 * reads the variant where each line is one payload (vercel's *.chunks.txt, Ollama NDJSON).
 *
 * The common case, a whole "data: …" line followed by a blank line inside one received
 * piece, is dispatched straight from the caller's bytes without a copy. A data line that
 * arrives in several pieces is gathered in the line buffer once: that buffer then becomes the
 * event's data (the two buffers trade places), so a 10 MB line is not copied a second time.
 */
#include "jscan.h"
#include "provider_int.h"

#include <string.h>

void rein__sse_init(struct rein__sse *s, size_t max, bool payload_lines, rein__sse_fn fn, void *ud)
{
    memset(s, 0, sizeof(*s));
    s->max = max ? max : ((size_t)64 << 20);
    rein_buf_init(&s->line, s->max + 1);
    rein_buf_init(&s->data, s->max + 1);
    s->fn = fn;
    s->ud = ud;
    s->payload_lines = payload_lines;
}

void rein__sse_release(struct rein__sse *s)
{
    rein_buf_release(&s->line);
    rein_buf_release(&s->data);
}

static rein_err too_big(const struct rein__sse *s, rein_error *err)
{
    return rein_error_set(err, REIN_ETOOBIG,
                          "event stream line %zu: an event is larger than %zu bytes", s->lineno + 1,
                          s->max);
}

static rein_err dispatch(struct rein__sse *s, const char *data, size_t len, rein_error *err)
{
    const char *ev = s->event[0] ? s->event : NULL;
    rein_err rc = s->fn(s->ud, ev, data, len, err);

    s->event[0] = '\0';
    return rc;
}

static rein_err dispatch_pending(struct rein__sse *s, rein_error *err)
{
    rein_err rc;

    if (!s->has_data) {
        s->event[0] = '\0';
        return REIN_OK;
    }
    s->has_data = false;
    rc = dispatch(s, s->data.ptr + s->data_off, s->data.len - s->data_off, err);
    rein_buf_reset(&s->data);
    s->data_off = 0;
    s->data.max = s->max + 1;
    return rc;
}

/*
 * The first data line of an event, gathered in s->line (val points into it): the line buffer
 * becomes the data buffer, with the value starting data_off bytes in, and the emptied data
 * buffer takes the next lines. The bound stays on the value (max grows by the offset).
 */
static void take_line_as_data(struct rein__sse *s, const char *val)
{
    struct rein_buf was = s->data;

    s->data = s->line;
    s->line = was;
    s->line.max = s->max + 1;
    s->data_off = (size_t)(val - s->data.ptr);
    s->data.max = s->max + 1 + s->data_off;
    s->has_data = true;
}

static bool field_is_(const char *line, size_t name_len, const char *name, size_t len)
{
    return len == name_len && memcmp(line, name, name_len) == 0;
}
#define field_is(line, name_len, lit) field_is_((line), (name_len), (lit), sizeof(lit) - 1)

/* One complete line (without its end); gathered: it is the contents of s->line. */
static rein_err process_line(struct rein__sse *s, const char *line, size_t n, bool gathered,
                             rein_error *err)
{
    const char *colon, *val;
    size_t name_len, vlen;
    rein_err rc;

    if (s->lineno++ == 0 && n >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
        line += 3;
        n -= 3;
    }
    if (s->payload_lines) {
        size_t k = 0;
        while (k < n && (line[k] == ' ' || line[k] == '\t'))
            k++;
        return k == n ? REIN_OK : dispatch(s, line, n, err);
    }
    if (n == 0)
        return dispatch_pending(s, err);
    if (line[0] == ':')
        return REIN_OK;
    colon = memchr(line, ':', n);
    name_len = colon ? (size_t)(colon - line) : n;
    val = colon ? colon + 1 : line + n;
    vlen = n - (size_t)(val - line);
    if (vlen && *val == ' ') {
        val++;
        vlen--;
    }
    if (field_is(line, name_len, "data")) {
        if (!s->has_data && gathered) {
            take_line_as_data(s, val);
            return REIN_OK;
        }
        if (s->has_data) {
            rc = rein_buf_addch(&s->data, '\n');
            if (rc)
                return rc == REIN_ETOOBIG ? too_big(s, err) : rc;
        }
        rc = rein_buf_add(&s->data, val, vlen);
        if (rc)
            return rc == REIN_ETOOBIG ? too_big(s, err) : rc;
        s->has_data = true;
        return REIN_OK;
    }
    if (field_is(line, name_len, "event")) {
        /* While data is pending, a second event type means a new event whose blank line was
         * left out; the first one belongs to the pending data, as the spec has it
         * ("data: …" then "event: error" then the blank line is one error event). */
        if (s->event[0]) {
            rc = dispatch_pending(s, err);
            if (rc)
                return rc;
        }
        if (vlen >= sizeof(s->event))
            vlen = sizeof(s->event) - 1;
        memcpy(s->event, val, vlen);
        s->event[vlen] = '\0';
        return REIN_OK;
    }
    if (field_is(line, name_len, "id"))
        return dispatch_pending(s, err);
    return REIN_OK; /* retry: and unknown fields are ignored, as the spec says */
}

/* Length of a blank line at p (LF, CRLF or CR), or 0. */
static size_t blank_line_at(const char *p, size_t len)
{
    if (len >= 1 && p[0] == '\n')
        return 1;
    if (len >= 2 && p[0] == '\r' && p[1] == '\n')
        return 2;
    return 0;
}

rein_err rein__sse_feed(struct rein__sse *s, const char *p, size_t len, rein_error *err)
{
    rein_err rc;

    while (len) {
        const char *nl, *cr, *end;
        size_t seg, eol;

        if (s->last_cr) {
            s->last_cr = false;
            if (*p == '\n') {
                p++;
                len--;
                continue;
            }
        }
        nl = memchr(p, '\n', len);
        seg = nl ? (size_t)(nl - p) : len;
        cr = memchr(p, '\r', seg);
        if (cr) {
            seg = (size_t)(cr - p);
            if (seg + 1 < len)
                eol = cr[1] == '\n' ? 2 : 1;
            else {
                eol = 1;
                s->last_cr = true;
            }
        } else if (nl) {
            eol = 1;
        } else {
            /* No line end in this piece: keep the start of the line for the next feed. */
            rc = rein_buf_add(&s->line, p, len);
            return rc == REIN_ETOOBIG ? too_big(s, err) : rc;
        }
        end = p + seg + eol;
        if (s->line.len) {
            rc = rein_buf_add(&s->line, p, seg);
            if (rc)
                return rc == REIN_ETOOBIG ? too_big(s, err) : rc;
            rc = process_line(s, s->line.ptr, s->line.len, true, err);
            rein_buf_reset(&s->line);
        } else if (!s->payload_lines && !s->has_data && s->lineno > 0 && seg >= 5 &&
                   memcmp(p, "data:", 5) == 0 && blank_line_at(end, len - seg - eol)) {
            /* The fast path: a one-line event whose blank line is in this piece too. */
            const char *val = p + 5;
            size_t vlen = seg - 5;
            if (vlen && *val == ' ')
                val++, vlen--;
            if (vlen > s->max)
                return too_big(s, err);
            s->lineno += 2;
            end += blank_line_at(end, len - seg - eol);
            rc = dispatch(s, val, vlen, err);
        } else {
            rc = process_line(s, p, seg, false, err);
        }
        if (rc)
            return rc;
        len -= (size_t)(end - p);
        p = end;
    }
    return REIN_OK;
}

rein_err rein__sse_finish(struct rein__sse *s, rein_error *err)
{
    rein_err rc = REIN_OK;

    if (s->line.len) {
        rc = process_line(s, s->line.ptr, s->line.len, true, err);
        rein_buf_reset(&s->line);
    }
    if (!rc && !s->payload_lines)
        rc = dispatch_pending(s, err);
    return rc;
}

/* ---- text events read straight from the stream (decision 0077) ---- */

void rein__text_tmpl_keep(struct rein_provider_decoder *d, const char *event, const char *p,
                          size_t len, size_t start, size_t end)
{
    struct rein__text_tmpl *t = d->text_tmpl;
    size_t elen = event ? strlen(event) : 0;

    if (d->general_only || len > REIN__TEXT_TMPL_MAX || elen >= sizeof(t->event) || start > end ||
        end > len || memchr(p, '\n', len) || memchr(p, '\r', len))
        return;
    if (!t && !(t = d->text_tmpl = rein_malloc(sizeof(*t))))
        return; /* no template: each event is read by the reader */
    memcpy(t->event, event ? event : "", elen + 1);
    memcpy(t->text, p, len);
    t->len = len;
    t->start = start;
    t->end = end;
}

/* Past "name:" and the one space the reader takes off at p[at], or 0 when it is not there. */
static inline size_t field_at(const char *p, size_t len, size_t at, const char *name, size_t n)
{
    if (len - at < n + 1 || memcmp(p + at, name, n) != 0 || p[at + n] != ':')
        return 0;
    at += n + 1;
    return at < len && p[at] == ' ' ? at + 1 : at;
}

/*
 * One event of t's shape at p: its length, with the text's span in *text; 0 for anything
 * else. The template holds no line break and the hole's string no control byte, so each line
 * ends where the template's bytes say, as the reader would find it; the event line is the
 * reader's "event:" field with the template's name, whole.
 */
static size_t text_event(const struct rein__text_tmpl *t, const char *p, size_t len,
                         struct rein__jstr *text)
{
    size_t at = 0, e, n;
    bool esc = false;

    if (t->event[0]) {
        n = strlen(t->event);
        at = field_at(p, len, 0, "event", 5);
        if (!at || len - at < n || memcmp(p + at, t->event, n) != 0 ||
            !(e = rein__sse_line_end(p + at + n, len - at - n)))
            return 0;
        at += n + e;
    }
    at = field_at(p, len, at, "data", 4);
    if (!at || len - at < t->start || memcmp(p + at, t->text, t->start) != 0)
        return 0;
    at += t->start;
    e = string_end_wide(p, len, at, &esc);
    if (e == JS_NONE)
        return 0;
    text->p = p + at;
    text->len = e - at;
    text->esc = esc;
    n = t->len - t->end;
    if (len - e < n || memcmp(p + e, t->text + t->end, n) != 0)
        return 0;
    return rein__sse_event_end(p, len, e + n);
}

bool rein__sse_between_events(const struct rein_provider_decoder *d, size_t tmpl_len)
{
    const struct rein__sse *s = &d->sse;

    return !d->general_only && d->state == 0 && !d->body && !d->evs_framing && !s->payload_lines &&
           !s->line.len && !s->has_data && !s->last_cr && !s->event[0] && s->lineno != 0 &&
           tmpl_len <= s->max;
}

size_t rein__text_events(struct rein_provider_decoder *d, const char *p, size_t len, rein_err *rc)
{
    const struct rein__text_tmpl *t = d->text_tmpl;
    size_t done = 0;

    *rc = REIN_OK;
    if (!t || !rein__sse_between_events(d, t->len))
        return 0;
    while (done < len) {
        struct rein__jstr text = {"", 0, false};
        size_t n = text_event(t, p + done, len - done, &text);

        if (!n)
            break;
        done += n;
        /* an event line, the data line and the blank one */
        if ((*rc = rein__sse_took_text(d, t->event[0] ? 3 : 2, text)) != REIN_OK)
            break;
    }
    return done;
}
