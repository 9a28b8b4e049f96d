/*
 * Checkers for "format" when it is asserted (rein_schema_options.format_assert or the
 * format-assertion vocabulary): dates and times (RFC 3339, leap seconds included), durations
 * (RFC 3339 appendix A), e-mail addresses (RFC 5321 mailbox, with IDN for idn-email), host
 * names (RFC 1123), IPv4 and IPv6 addresses, URIs and IRIs (RFC 3986/3987), URI templates
 * (RFC 6570), UUIDs, JSON Pointers and relative JSON Pointers, and ECMA-262 regexes.
 *
 * Every checker reads the string in place and allocates nothing (except "regex", which has to
 * compile the pattern). Formats rein does not know are valid, as the specification asks.
 */
#include "schema/schema_int.h"

#include <string.h>

static const struct {
    const char *name;
    enum sformat id;
} formats[] = {
    {"date-time", SF_DATE_TIME},
    {"date", SF_DATE},
    {"time", SF_TIME},
    {"duration", SF_DURATION},
    {"email", SF_EMAIL},
    {"idn-email", SF_IDN_EMAIL},
    {"hostname", SF_HOSTNAME},
    {"idn-hostname", SF_IDN_HOSTNAME},
    {"ipv4", SF_IPV4},
    {"ipv6", SF_IPV6},
    {"uri", SF_URI},
    {"uri-reference", SF_URI_REFERENCE},
    {"iri", SF_IRI},
    {"iri-reference", SF_IRI_REFERENCE},
    {"uri-template", SF_URI_TEMPLATE},
    {"uuid", SF_UUID},
    {"regex", SF_REGEX},
    {"json-pointer", SF_JSON_POINTER},
    {"relative-json-pointer", SF_RELATIVE_JSON_POINTER},
};

enum sformat rein__format_id(const char *name)
{
    for (size_t i = 0; i < REIN_ARRAY_SIZE(formats); i++) {
        if (strcmp(formats[i].name, name) == 0)
            return formats[i].id;
    }
    return SF_UNKNOWN;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!is_digit(s[i]))
            return false;
    }
    return true;
}

static int num(const char *s, size_t n)
{
    int v = 0;

    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

/* ---- dates and times ---------------------------------------------------------------------- */

static bool check_date(const char *s, size_t len)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, m, d, max;

    if (len != 10 || s[4] != '-' || s[7] != '-' || !digits(s, 4) || !digits(s + 5, 2) ||
        !digits(s + 8, 2))
        return false;
    y = num(s, 4);
    m = num(s + 5, 2);
    d = num(s + 8, 2);
    if (m < 1 || m > 12 || d < 1)
        return false;
    max = mdays[m - 1];
    if (m == 2 && (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
        max = 29;
    return d <= max;
}

static bool check_time(const char *s, size_t len)
{
    int h, mi, sec, oh = 0, om = 0, sign = 0;
    size_t i = 8;

    if (len < 9 || s[2] != ':' || s[5] != ':' || !digits(s, 2) || !digits(s + 3, 2) ||
        !digits(s + 6, 2))
        return false;
    h = num(s, 2);
    mi = num(s + 3, 2);
    sec = num(s + 6, 2);
    if (h > 23 || mi > 59 || sec > 60)
        return false;
    if (s[i] == '.') {
        size_t start = ++i;
        while (i < len && is_digit(s[i]))
            i++;
        if (i == start)
            return false;
    }
    if (i >= len)
        return false;
    if (s[i] == 'Z' || s[i] == 'z') {
        if (i + 1 != len)
            return false;
    } else if (s[i] == '+' || s[i] == '-') {
        sign = s[i] == '+' ? 1 : -1;
        if (len - i != 6 || s[i + 3] != ':' || !digits(s + i + 1, 2) || !digits(s + i + 4, 2))
            return false;
        oh = num(s + i + 1, 2);
        om = num(s + i + 4, 2);
        if (oh > 23 || om > 59)
            return false;
    } else {
        return false;
    }
    if (sec == 60) {
        /* A leap second exists only at 23:59:60 UTC. */
        int utc = ((h * 60 + mi - sign * (oh * 60 + om)) % 1440 + 1440) % 1440;
        if (utc != 23 * 60 + 59)
            return false;
    }
    return true;
}

static bool check_date_time(const char *s, size_t len)
{
    return len > 11 && (s[10] == 'T' || s[10] == 't') && check_date(s, 10) &&
           check_time(s + 11, len - 11);
}

static bool check_duration(const char *s, size_t len)
{
    static const char units[] = "YMDHMS";
    int last = -1, count = 0;
    bool in_time = false, time_parts = false;
    size_t i = 1;

    if (len < 3 || s[0] != 'P')
        return false;
    if (s[len - 1] == 'W')
        return len > 2 && digits(s + 1, len - 2);
    while (i < len) {
        size_t start = i;
        if (s[i] == 'T') {
            if (in_time)
                return false;
            in_time = true;
            last = 2;
            i++;
            continue;
        }
        while (i < len && is_digit(s[i]))
            i++;
        if (i == start || i >= len)
            return false;
        const char *u = strchr(in_time ? units + 3 : units, s[i]);
        if (!u || !*u || (!in_time && u >= units + 3))
            return false;
        int idx = (int)(u - units);
        /* Components are consecutive: Y then M then D (no "P1Y2D"), H then M then S. */
        if (idx <= last || (last >= 0 && last != 2 && idx != last + 1) || (last == 2 && !in_time))
            return false;
        last = idx;
        count++;
        time_parts |= in_time;
        i++;
    }
    return count > 0 && (!in_time || time_parts);
}

/* ---- network names and addresses ---------------------------------------------------------- */

static bool check_ipv4(const char *s, size_t len)
{
    size_t i = 0;

    for (int part = 0; part < 4; part++) {
        if (part && (i >= len || s[i++] != '.'))
            return false;
        size_t start = i;
        while (i < len && is_digit(s[i]) && i - start < 4)
            i++;
        size_t n = i - start;
        if (n == 0 || n > 3 || (n > 1 && s[start] == '0') || num(s + start, n) > 255)
            return false;
    }
    return i == len;
}

static bool check_ipv6(const char *s, size_t len)
{
    int groups = 0;
    bool compressed = false;
    size_t i = 0;

    if (len < 2)
        return false;
    if (s[0] == ':') {
        if (s[1] != ':')
            return false;
        compressed = true;
        i = 2;
        if (i == len)
            return true;
    }
    while (i < len) {
        size_t start = i;
        while (i < len && is_hex(s[i]) && i - start < 5)
            i++;
        size_t n = i - start;
        if (i < len && s[i] == '.') {
            /* Embedded IPv4 at the end counts as two groups. */
            if (!check_ipv4(s + start, len - start))
                return false;
            groups += 2;
            break;
        }
        if (n == 0 || n > 4)
            return false;
        groups++;
        if (i == len)
            break;
        if (s[i] != ':')
            return false;
        i++;
        if (i < len && s[i] == ':') {
            if (compressed)
                return false;
            compressed = true;
            i++;
            if (i == len)
                break;
        } else if (i == len) {
            return false;
        }
    }
    return compressed ? groups < 8 : groups == 8;
}

/* RFC 1123 host name; with idn, non-ASCII labels are allowed (not checked further). */
static bool check_hostname(const char *s, size_t len, bool idn)
{
    size_t label = 0;
    /* RFC 1123 names have no trailing dot (that is DNS presentation syntax). */
    if (len == 0 || len > 253)
        return false;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == '.') {
            if (label == 0 || label > 63 || s[i - label] == '-' || s[i - 1] == '-')
                return false;
            /* "xn--" labels are A-labels; "ab--" in positions 3-4 is reserved. */
            if (label >= 4 && s[i - label + 2] == '-' && s[i - label + 3] == '-' &&
                !((s[i - label] == 'x' || s[i - label] == 'X') &&
                  (s[i - label + 1] == 'n' || s[i - label + 1] == 'N')))
                return false;
            label = 0;
            continue;
        }
        unsigned char c = (unsigned char)s[i];
        if (!(is_alpha((char)c) || is_digit((char)c) || c == '-' || (idn && c >= 0x80)))
            return false;
        label++;
    }
    return true;
}

static bool check_email(const char *s, size_t len, bool idn)
{
    const char *at = NULL;
    size_t llen;

    for (size_t i = len; i > 0; i--) {
        if (s[i - 1] == '@') {
            at = s + i - 1;
            break;
        }
    }
    if (!at)
        return false;
    llen = (size_t)(at - s);
    if (llen == 0 || llen > 64)
        return false;
    if (s[0] == '"') {
        if (llen < 2 || s[llen - 1] != '"')
            return false;
        for (size_t i = 1; i + 1 < llen; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c == '\\') {
                if (++i + 1 >= llen)
                    return false;
                continue;
            }
            if (c == '"' || (c < 0x20 && c != '\t') || c == 0x7f)
                return false;
        }
    } else {
        for (size_t i = 0; i < llen; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c == '.') {
                if (i == 0 || i + 1 == llen || s[i + 1] == '.')
                    return false;
                continue;
            }
            if (!(is_alpha((char)c) || is_digit((char)c) || strchr("!#$%&'*+/=?^_`{|}~-", c) ||
                  (idn && c >= 0x80)) ||
                c == 0)
                return false;
        }
    }
    const char *d = at + 1;
    size_t dlen = len - llen - 1;
    if (dlen >= 2 && d[0] == '[' && d[dlen - 1] == ']') {
        if (dlen > 7 && strncmp(d + 1, "IPv6:", 5) == 0)
            return check_ipv6(d + 6, dlen - 7);
        return check_ipv4(d + 1, dlen - 2);
    }
    return check_hostname(d, dlen, idn);
}

/* ---- URIs, IRIs and templates ------------------------------------------------------------- */

#define SUB_DELIMS "!$&'()*+,;="

/* Consumes one allowed character at s[*i]: unreserved, sub-delims, one of extra, a
 * percent-encoded octet, or (for IRIs) a non-ASCII character. */
static bool uchar(const char *s, size_t len, size_t *i, const char *extra, bool iri)
{
    unsigned char c = (unsigned char)s[*i];

    if (c == '%') {
        if (*i + 2 >= len || !is_hex(s[*i + 1]) || !is_hex(s[*i + 2]))
            return false;
        *i += 3;
        return true;
    }
    if (is_alpha((char)c) || is_digit((char)c) || (c && strchr("-._~" SUB_DELIMS, c)) ||
        (c && strchr(extra, c)) || (iri && c >= 0x80)) {
        (*i)++;
        return true;
    }
    return false;
}

static bool run(const char *s, size_t len, size_t *i, const char *stop, const char *extra, bool iri)
{
    while (*i < len && !strchr(stop, s[*i])) {
        if (!uchar(s, len, i, extra, iri))
            return false;
    }
    return true;
}

static bool check_authority(const char *s, size_t len, bool iri)
{
    const char *at = memchr(s, '@', len);
    size_t i = 0;

    if (at) {
        size_t ulen = (size_t)(at - s);
        if (!run(s, ulen, &i, "", ":", iri))
            return false;
        i = ulen + 1;
    }
    if (i < len && s[i] == '[') {
        const char *close = memchr(s + i, ']', len - i);
        if (!close)
            return false;
        size_t hl = (size_t)(close - (s + i)) - 1;
        const char *h = s + i + 1;
        if (hl > 0 && (h[0] == 'v' || h[0] == 'V')) {
            size_t k = 1;
            while (k < hl && is_hex(h[k]))
                k++;
            if (k == 1 || k >= hl || h[k] != '.' || k + 1 >= hl)
                return false;
            k++;
            if (!run(h, hl, &k, "", ":", false))
                return false;
        } else if (!check_ipv6(h, hl)) {
            return false;
        }
        i = (size_t)(close - s) + 1;
    } else if (!run(s, len, &i, ":", "", iri)) {
        return false;
    }
    if (i < len) {
        if (s[i] != ':')
            return false;
        return digits(s + i + 1, len - i - 1);
    }
    return true;
}

/* hier-part or relative-part, then query and fragment. */
static bool check_uri_rest(const char *s, size_t len, size_t i, bool relative, bool iri)
{
    if (i + 1 < len && s[i] == '/' && s[i + 1] == '/') {
        size_t start = i + 2;
        i = start;
        while (i < len && s[i] != '/' && s[i] != '?' && s[i] != '#')
            i++;
        if (!check_authority(s + start, i - start, iri))
            return false;
    } else if (relative) {
        /* path-noscheme: no ':' in the first segment. */
        size_t k = i;
        while (k < len && s[k] != '/' && s[k] != '?' && s[k] != '#') {
            if (s[k] == ':')
                return false;
            k++;
        }
    }
    if (!run(s, len, &i, "?#", ":@/", iri))
        return false;
    if (i < len && s[i] == '?') {
        i++;
        if (!run(s, len, &i, "#", ":@/?", iri))
            return false;
    }
    if (i < len && s[i] == '#') {
        i++;
        if (!run(s, len, &i, "", ":@/?", iri))
            return false;
    }
    return i == len;
}

static bool check_uri(const char *s, size_t len, bool iri)
{
    size_t i = 0;

    if (len == 0 || !is_alpha(s[0]))
        return false;
    while (i < len &&
           (is_alpha(s[i]) || is_digit(s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.'))
        i++;
    if (i >= len || s[i] != ':')
        return false;
    return check_uri_rest(s, len, i + 1, false, iri);
}

static bool check_uri_reference(const char *s, size_t len, bool iri)
{
    return check_uri(s, len, iri) || check_uri_rest(s, len, 0, true, iri);
}

static bool check_uri_template(const char *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        if (c == '{') {
            size_t j = ++i;
            if (j < len && strchr("+#./;?&=,!@|", s[j]) && s[j])
                j++;
            for (;;) {
                size_t start = j;
                while (j < len &&
                       (is_alpha(s[j]) || is_digit(s[j]) || s[j] == '_' ||
                        (s[j] == '.' && j > start && s[j - 1] != '.') ||
                        (s[j] == '%' && j + 2 < len && is_hex(s[j + 1]) && is_hex(s[j + 2])))) {
                    j += s[j] == '%' ? 3 : 1;
                }
                if (j == start || s[j - 1] == '.')
                    return false;
                if (j < len && s[j] == ':') {
                    size_t d = ++j;
                    while (j < len && is_digit(s[j]))
                        j++;
                    if (j == d || j - d > 4 || s[d] == '0')
                        return false;
                } else if (j < len && s[j] == '*') {
                    j++;
                }
                if (j < len && s[j] == ',') {
                    j++;
                    continue;
                }
                break;
            }
            if (j >= len || s[j] != '}')
                return false;
            i = j + 1;
            continue;
        }
        if (c == '%') {
            if (i + 2 >= len || !is_hex(s[i + 1]) || !is_hex(s[i + 2]))
                return false;
            i += 3;
            continue;
        }
        if (c <= 0x20 || c == 0x7f || strchr("\"<>\\^`{|}", c))
            return false;
        i++;
    }
    return true;
}

/* ---- the rest ----------------------------------------------------------------------------- */

static bool check_uuid(const char *s, size_t len)
{
    if (len != 36)
        return false;
    for (size_t i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !is_hex(s[i]))
            return false;
    }
    return true;
}

static bool check_json_pointer(const char *s, size_t len)
{
    if (len && s[0] != '/')
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '~' && (i + 1 >= len || (s[i + 1] != '0' && s[i + 1] != '1')))
            return false;
    }
    return true;
}

static bool check_relative_json_pointer(const char *s, size_t len)
{
    size_t i = 0;

    while (i < len && is_digit(s[i]))
        i++;
    if (i == 0 || (i > 1 && s[0] == '0'))
        return false;
    if (i < len && (s[i] == '+' || s[i] == '-')) {
        size_t start = ++i;
        while (i < len && is_digit(s[i]))
            i++;
        if (i == start || (i - start > 1 && s[start] == '0') || (i - start == 1 && s[start] == '0'))
            return false;
    }
    if (i < len && s[i] == '#')
        return i + 1 == len;
    return check_json_pointer(s + i, len - i);
}

bool rein__format_check(enum sformat f, const char *s, size_t len)
{
    switch (f) {
    case SF_DATE_TIME:
        return check_date_time(s, len);
    case SF_DATE:
        return check_date(s, len);
    case SF_TIME:
        return check_time(s, len);
    case SF_DURATION:
        return check_duration(s, len);
    case SF_EMAIL:
        return check_email(s, len, false);
    case SF_IDN_EMAIL:
        return check_email(s, len, true);
    case SF_HOSTNAME:
        return check_hostname(s, len, false);
    case SF_IPV4:
        return check_ipv4(s, len);
    case SF_IPV6:
        return check_ipv6(s, len);
    case SF_URI:
        return check_uri(s, len, false);
    case SF_URI_REFERENCE:
        return check_uri_reference(s, len, false);
    case SF_IRI:
        return check_uri(s, len, true);
    case SF_IRI_REFERENCE:
        return check_uri_reference(s, len, true);
    case SF_URI_TEMPLATE:
        return check_uri_template(s, len);
    case SF_UUID:
        return check_uuid(s, len);
    case SF_REGEX:
        return rein__regex_is_valid(s, len);
    case SF_JSON_POINTER:
        return check_json_pointer(s, len);
    case SF_RELATIVE_JSON_POINTER:
        return check_relative_json_pointer(s, len);
    default:
        return true;
    }
}
