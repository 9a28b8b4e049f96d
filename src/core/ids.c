/*
 * Trace ids, call ids, randomness and clocks (include/rein/core.h).
 *
 * Ids come from a cryptographic random generator seeded by the kernel, so two rein processes
 * sharing a Redis store never mint the same conversation or call id. Durations use
 * CLOCK_MONOTONIC; timestamps use the wall clock.
 */
#include <rein/core.h>

#include "core/internal.h"

#include <errno.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <rein/version.h>

void rein_random_bytes(void *buf, size_t len)
{
    unsigned char *p = buf;

    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            /* getrandom() only fails this way before the kernel's pool is seeded at boot. */
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            for (size_t i = 0; i < len; i++)
                p[i] = (unsigned char)(ts.tv_nsec >> (i % 8)) ^ (unsigned char)i;
            return;
        }
        p += n;
        len -= (size_t)n;
    }
}

/*
 * Random bytes for ids, taken from a per-thread buffer filled 4 KB at a time by OpenSSL's
 * generator (seeded by the kernel; getrandom() when it fails): refilling from getrandom() cost
 * 11 us per 4 KB in the kernel, OpenSSL 1.2 us (decision 0064), and a server mints three ids
 * per request. A forked child drops the parent's buffered bytes (pthread_atfork), so parent and
 * child never hand out the same id; OpenSSL reseeds its own generator in a child.
 */
#define ID_POOL_BYTES 4096

static _Thread_local unsigned char id_pool[ID_POOL_BYTES];
static _Thread_local size_t id_pool_left;
static pthread_once_t id_pool_once = PTHREAD_ONCE_INIT;

static void id_pool_drop(void)
{
    id_pool_left = 0;
}

static void id_pool_init(void)
{
    (void)pthread_atfork(NULL, NULL, id_pool_drop);
}

static void id_bytes(unsigned char *out, size_t len)
{
    (void)pthread_once(&id_pool_once, id_pool_init);
    if (len > ID_POOL_BYTES / 4) {
        rein_random_bytes(out, len);
        return;
    }
    if (id_pool_left < len) {
        if (RAND_bytes(id_pool, ID_POOL_BYTES) != 1)
            rein_random_bytes(id_pool, ID_POOL_BYTES);
        id_pool_left = ID_POOL_BYTES;
    }
    memcpy(out, id_pool + ID_POOL_BYTES - id_pool_left, len);
    /* Bytes handed out are not kept. */
    memset(id_pool + ID_POOL_BYTES - id_pool_left, 0, len);
    id_pool_left -= len;
}

static void hex_id(char *out, size_t nhex)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[32];
    bool nonzero = false;

    do {
        id_bytes(raw, nhex / 2);
        for (size_t i = 0; i < nhex / 2; i++)
            nonzero |= raw[i] != 0;
    } while (!nonzero);
    for (size_t i = 0; i < nhex / 2; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[nhex] = '\0';
}

void rein_trace_id_new(char out[REIN_TRACE_ID_LEN + 1])
{
    hex_id(out, REIN_TRACE_ID_LEN);
}

void rein_span_id_new(char out[REIN_SPAN_ID_LEN + 1])
{
    hex_id(out, REIN_SPAN_ID_LEN);
}

/* The same byte in every byte of a word. */
#define BYTES(b) (UINT64_C(0x0101010101010101) * (b))

/*
 * 0x80 in each byte of x that is a lowercase hex digit ('0'-'9', 'a'-'f'), 0 in the others,
 * for a word whose bytes are all below 0x80: adding 0x80 - c to such a byte sets its high bit
 * exactly when it is c or more, and never carries into the next byte.
 */
static uint64_t hex_digit_bytes(uint64_t x)
{
    uint64_t digit = (x + BYTES(0x80 - '0')) & ~(x + BYTES(0x80 - '9' - 1));
    uint64_t letter = (x + BYTES(0x80 - 'a')) & ~(x + BYTES(0x80 - 'f' - 1));

    return (digit | letter) & BYTES(0x80);
}

/* Every request's span checks its trace id: 32 bytes read as four words, each checked whole
 * (a byte at a time took about 300 instructions). */
bool rein_trace_id_is_valid(const char *text)
{
    uint64_t w[REIN_TRACE_ID_LEN / 8], any_nonzero = 0;

    _Static_assert(REIN_TRACE_ID_LEN % 8 == 0, "a trace id is read in whole words");
    /* strnlen stops at the NUL, so a shorter text is never read past its end. */
    if (!text || strnlen(text, REIN_TRACE_ID_LEN + 1) != REIN_TRACE_ID_LEN)
        return false;
    memcpy(w, text, sizeof(w));
    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
        if ((w[i] & BYTES(0x80)) || hex_digit_bytes(w[i]) != BYTES(0x80))
            return false;
        any_nonzero |= w[i] ^ BYTES('0');
    }
    return any_nonzero != 0;
}

/* 62^10: ten base-62 digits come out of one 64-bit draw. */
#define B62_POW10 UINT64_C(839299365868340224)
/* The largest multiple of 62^10 a 64-bit draw can reach: a draw at or past it is drawn again
 * (4.5% of draws), so the value modulo 62^10, and with it each of its ten digits, is uniform. */
#define B62_LIMIT (UINT64_MAX / B62_POW10 * B62_POW10)

void rein_id_new(const char *prefix, char out[REIN_ID_MAX])
{
    static const char alnum[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    size_t plen = prefix ? strlen(prefix) : 0;
    char *p;

    if (plen > REIN_ID_MAX - 25)
        plen = REIN_ID_MAX - 25;
    if (plen)
        memcpy(out, prefix, plen);
    p = out + plen;
    /* 24 digits from three draws of 8 bytes (10 + 10 + 4 digits), as many random bytes as a
     * byte per digit took, with a division by a constant per digit instead of a draw each. */
    for (size_t left = 24; left > 0;) {
        size_t k = left < 10 ? left : 10;
        uint64_t v;
        do
            id_bytes((unsigned char *)&v, sizeof(v));
        while (v >= B62_LIMIT);
        v %= B62_POW10;
        for (size_t i = 0; i < k; i++) {
            *p++ = alnum[v % 62];
            v /= 62;
        }
        left -= k;
    }
    *p = '\0';
}

int64_t rein_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t rein_now_ms(void)
{
    return rein_now_ns() / 1000000;
}

struct timespec rein__deadline_ts(clockid_t clock, int64_t ms)
{
    struct timespec ts;

    if (ms < 0)
        ms = 0;
    clock_gettime(clock, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

int64_t rein_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The last millisecond of the year 9999: past it the year has five digits. */
#define ISO_FAST_MAX_MS INT64_C(253402300799999)

static char *put_digits(char *p, unsigned v, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        p[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return p + n;
}

/*
 * The common case without gmtime_r and snprintf: glibc's gmtime_r takes the time zone lock,
 * which every thread formatting a timestamp (a conversation list writes two per row) then
 * queues on. Days to a civil date as in Howard Hinnant's days_from_civil inverse, for days
 * counted from 1970-01-01 (never negative here).
 */
static char *time_iso_fast(int64_t wall_ms, char out[REIN_TIME_ISO_LEN])
{
    int64_t secs = wall_ms / 1000, days = secs / 86400, sod = secs % 86400;
    int64_t z = days + 719468, era = z / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
    unsigned year = (unsigned)(yoe + era * 400) + (month <= 2);
    char *p = out;

    p = put_digits(p, year, 4);
    *p++ = '-';
    p = put_digits(p, month, 2);
    *p++ = '-';
    p = put_digits(p, day, 2);
    *p++ = 'T';
    p = put_digits(p, (unsigned)(sod / 3600), 2);
    *p++ = ':';
    p = put_digits(p, (unsigned)(sod / 60 % 60), 2);
    *p++ = ':';
    p = put_digits(p, (unsigned)(sod % 60), 2);
    *p++ = '.';
    p = put_digits(p, (unsigned)(wall_ms % 1000), 3);
    *p++ = 'Z';
    *p = '\0';
    return out;
}

/* Any other time (before 1970, after 9999) as the C library formats it. */
static char *time_iso_libc(int64_t wall_ms, char out[REIN_TIME_ISO_LEN])
{
    time_t secs = (time_t)(wall_ms / 1000);
    struct tm tm;

    char tmp[96];

    gmtime_r(&secs, &tm);
    snprintf(tmp, sizeof(tmp), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(wall_ms % 1000));
    memcpy(out, tmp, REIN_TIME_ISO_LEN - 1);
    out[REIN_TIME_ISO_LEN - 1] = '\0';
    return out;
}

char *rein_time_iso(int64_t wall_ms, char out[REIN_TIME_ISO_LEN])
{
    if (wall_ms >= 0 && wall_ms <= ISO_FAST_MAX_MS)
        return time_iso_fast(wall_ms, out);
    return time_iso_libc(wall_ms, out);
}

void rein_sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

    while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

const char *rein_version(void)
{
    return REIN_VERSION_STRING;
}
