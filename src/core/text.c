/*
 * Small text checks every front end needs alike (include/rein/core.h): how much of a text is
 * valid UTF-8, and which of a list of known words a mistyped one was meant to be.
 *
 * The UTF-8 check is the one JSON applies (RFC 8259 §8.1 with RFC 3629): no overlong forms,
 * no surrogates, nothing above U+10FFFF. A front end runs it over text a person typed before
 * anything else sees it, so the person hears "not valid UTF-8 at byte N" instead of a failure
 * deeper down that has lost the reason.
 *
 * The suggestion is the nearest word by optimal string alignment distance (Levenshtein with
 * adjacent transpositions, as git uses for "did you mean"), accepted only when it is close
 * for the word's length, so a word nothing resembles gets no suggestion.
 */
#include <rein/core.h>

#include "core/internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

size_t rein__utf8_seq_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t n;
    uint32_t cp;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    if (n > avail)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

size_t rein_utf8_valid_prefix(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;

    while (i < len) {
        size_t n;
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        n = rein__utf8_seq_len(s + i, len - i);
        if (n == 0)
            return i;
        i += n;
    }
    return len;
}

#define SUGGEST_MAX_LEN 64

/* Optimal string alignment distance between a and b (both at most SUGGEST_MAX_LEN bytes),
 * case-insensitive for ASCII letters. */
static size_t distance(const char *a, size_t la, const char *b, size_t lb)
{
    size_t d[SUGGEST_MAX_LEN + 1][SUGGEST_MAX_LEN + 1];

    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            char ca = a[i - 1] | (char)((a[i - 1] >= 'A' && a[i - 1] <= 'Z') ? 0x20 : 0);
            char cb = b[j - 1] | (char)((b[j - 1] >= 'A' && b[j - 1] <= 'Z') ? 0x20 : 0);
            size_t best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

const char *rein_suggest(const char *word, const char *const *choices, size_t n)
{
    size_t lw = word ? strlen(word) : 0, best = (size_t)-1;
    const char *pick = NULL;

    if (lw == 0 || lw > SUGGEST_MAX_LEN)
        return NULL;
    for (size_t i = 0; i < n && choices[i]; i++) {
        size_t lc = strlen(choices[i]), dist, room;
        if (lc == 0 || lc > SUGGEST_MAX_LEN)
            continue;
        dist = distance(word, lw, choices[i], lc);
        /* A word that is a prefix of exactly one choice ("--verif") is that choice. */
        if (lw >= 3 && lc > lw && strncmp(word, choices[i], lw) == 0)
            dist = 1;
        /* Close for its length: one edit in short words, a third of the longer one. */
        room = (lw > lc ? lw : lc) / 3;
        if (room < 1)
            room = 1;
        if (dist <= room && dist < best) {
            best = dist;
            pick = choices[i];
        }
    }
    return pick;
}

rein_err rein_read_file(const char *path, size_t max, char **text, size_t *len, rein_error *err)
{
    char *buf = NULL, *grown;
    size_t cap = 0, used = 0, n;
    struct stat st;
    FILE *f;
    rein_err rc = REIN_OK;

    *text = NULL;
    if (len)
        *len = 0;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return rein_error_set(err, REIN_EINVAL, "%s: is a directory", path);
    f = fopen(path, "rb");
    if (!f)
        return rein_error_set(err, errno == ENOENT ? REIN_ENOTFOUND : REIN_EIO, "%s: %s", path,
                              strerror(errno));
    for (;;) {
        if (used + 1 >= cap) {
            size_t want = cap ? cap * 2 : 8192;
            if (cap > max) {
                rc = rein_error_set(err, REIN_ETOOBIG, "%s: larger than %zu bytes", path, max);
                break;
            }
            grown = rein_realloc(buf, want);
            if (!grown) {
                rc = rein_error_set(err, REIN_ENOMEM, "out of memory");
                break;
            }
            buf = grown;
            cap = want;
        }
        n = fread(buf + used, 1, cap - used - 1, f);
        used += n;
        if (n == 0)
            break;
    }
    if (!rc && ferror(f))
        rc = rein_error_set(err, REIN_EIO, "%s: cannot read: %s", path, strerror(errno));
    if (!rc && used > max)
        rc = rein_error_set(err, REIN_ETOOBIG, "%s: larger than %zu bytes", path, max);
    fclose(f);
    if (rc) {
        rein_free(buf);
        return rc;
    }
    if (!buf && !(buf = rein_malloc(1)))
        return rein_error_set(err, REIN_ENOMEM, "out of memory");
    buf[used] = '\0';
    *text = buf;
    if (len)
        *len = used;
    return REIN_OK;
}
