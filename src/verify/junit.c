/*
 * The JUnit XML reader: the test reports that pytest (--junitxml), CTest (--output-junit),
 * Maven Surefire and Gradle, jest-junit, Vitest and `node --test` write. It reads the
 * document as a stream with expat, so a report of any size is read in bounded memory:
 * every <testcase> is counted (failed when it has a <failure> or <error> child, skipped when
 * it has <skipped>, else passed: Surefire's <flakyFailure> and <rerunFailure> are reruns of
 * a test that passed in the end) and the first failures are kept as diagnostics. A report
 * without any <testcase> (a summary only) is counted from the tests, failures, errors and
 * skipped attributes of its outermost <testsuite> elements.
 *
 * The format has no single specification; the element and attribute names are those of the
 * Ant JUnit task's schema, which the tools above follow. Entity declarations are refused (no
 * test report needs one; they are how XML bombs are built), and one start tag larger than
 * 16 MiB stops the reader.
 */
#include "output_int.h"

#include <stdio.h>
#include <string.h>

#define FEED_CHUNK    ((size_t)64 << 10)
#define TOKEN_MAX     ((size_t)16 << 20)
#define CASE_NAME_MAX 300

enum jstate {
    J_WAIT,    /* skipping bytes until a '<' starts a document */
    J_DOC,     /* inside a document */
    J_STOPPED, /* a document was malformed: the counts so far stand */
};

struct rein__junit {
    struct rein__xml_guard x; /* first: the handlers get a pointer to it */
    enum jstate state;
    bool root_open;   /* the current document's root element has been opened */
    bool root_closed; /* … and closed again */
    uint64_t fed;     /* bytes given to the current document's parser */
    bool started;     /* some document's root has been opened */
    bool oom;
    int depth;
    size_t since_event; /* bytes fed since expat last called back */
    char buf[FEED_CHUNK];
    size_t len;
    struct rein__tests t;
    struct rein__diags d;
    /* Summary attributes of the outermost suites, for reports without test cases. */
    struct rein__tests attrs;
    bool any_case;
    int suite_depth; /* depth of the outermost <testsuite> elements (0: not yet known) */
    /* The test case being read. */
    int case_depth; /* 0: not in a test case */
    bool case_failed, case_skipped;
    char case_name[CASE_NAME_MAX + 1];
    char case_msg[REIN__DIAG_MSG_MAX + 1];
    size_t msg_len;
    bool msg_from_text; /* the failure had no message attribute: its text is collected */
    int msg_depth;
    char error[160];
};

static const char *attr(const XML_Char **atts, const char *name)
{
    for (size_t i = 0; atts[i]; i += 2) {
        if (strcmp(atts[i], name) == 0)
            return atts[i + 1];
    }
    return NULL;
}

/* A non-negative count attribute; 0 when absent or not a number. */
static int64_t count_attr(const XML_Char **atts, const char *name)
{
    const char *v = attr(atts, name);
    int64_t n = 0;

    if (!v)
        return 0;
    for (; *v >= '0' && *v <= '9'; v++) {
        if (n < ((int64_t)1 << 50))
            n = n * 10 + (*v - '0');
    }
    return n;
}

static void begin_case(struct rein__junit *j, const XML_Char **atts)
{
    const char *cls = attr(atts, "classname"), *name = attr(atts, "name");

    const char *status = attr(atts, "status");

    j->case_depth = j->depth;
    j->case_failed = false;
    /* CTest marks tests it did not run with status="notrun" or "disabled" (the second
     * without a <skipped> child). */
    j->case_skipped = status && (strcmp(status, "notrun") == 0 || strcmp(status, "disabled") == 0 ||
                                 strcmp(status, "skipped") == 0);
    j->case_msg[0] = '\0';
    j->msg_len = 0;
    j->msg_from_text = false;
    snprintf(j->case_name, sizeof(j->case_name), "%s%s%s", cls && *cls ? cls : "",
             cls && *cls && name ? "." : "", name ? name : "");
}

static void begin_failure(struct rein__junit *j, const XML_Char **atts)
{
    const char *msg = attr(atts, "message");

    if (j->case_failed)
        return; /* a failure and a teardown error: the first one says what failed */
    j->case_failed = true;
    if (!msg || !*msg)
        msg = attr(atts, "type");
    if (msg && *msg) {
        snprintf(j->case_msg, sizeof(j->case_msg), "%s", msg);
    } else {
        j->msg_from_text = true;
        j->msg_depth = j->depth;
    }
}

static void on_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    struct rein__junit *j = ud;

    j->since_event = 0;
    j->depth++;
    if (!j->root_open) {
        j->root_open = j->started = true;
        if (strcmp(name, "testsuites") != 0 && strcmp(name, "testsuite") != 0) {
            /* Not a test report: stop reading this document. */
            snprintf(j->error, sizeof(j->error),
                     "the document's root is <%.40s>, not "
                     "<testsuites> or <testsuite>",
                     name);
            XML_StopParser(j->x.parser, XML_FALSE);
            return;
        }
        j->t.found = true;
    }
    if (strcmp(name, "testsuite") == 0) {
        if (!j->suite_depth)
            j->suite_depth = j->depth;
        if (j->depth == j->suite_depth) {
            int64_t tests = count_attr(atts, "tests");
            int64_t failed = count_attr(atts, "failures") + count_attr(atts, "errors");
            int64_t skipped = count_attr(atts, "skipped") + count_attr(atts, "disabled");
            j->attrs.total += tests;
            j->attrs.failed += failed;
            j->attrs.skipped += skipped;
        }
    } else if (strcmp(name, "testcase") == 0 && !j->case_depth) {
        j->any_case = true;
        begin_case(j, atts);
    } else if (j->case_depth && j->depth == j->case_depth + 1) {
        if (strcmp(name, "failure") == 0 || strcmp(name, "error") == 0)
            begin_failure(j, atts);
        else if (strcmp(name, "skipped") == 0)
            j->case_skipped = true;
    }
}

/* The first non-blank line of the failure's text, as its message. */
static void text_message(struct rein__junit *j)
{
    char *s = j->case_msg, *nl;

    j->case_msg[j->msg_len] = '\0';
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    nl = strpbrk(s, "\r\n");
    if (nl)
        *nl = '\0';
    memmove(j->case_msg, s, strlen(s) + 1);
}

static void end_case(struct rein__junit *j)
{
    j->t.total++;
    if (j->case_failed) {
        j->t.failed++;
        rein__diag_test(&j->d, j->case_name, strlen(j->case_name), j->case_msg);
    } else if (j->case_skipped) {
        j->t.skipped++;
    } else {
        j->t.passed++;
    }
    j->case_depth = 0;
}

static void on_end(void *ud, const XML_Char *name)
{
    struct rein__junit *j = ud;

    (void)name;
    j->since_event = 0;
    if (j->msg_from_text && j->depth == j->msg_depth) {
        j->msg_from_text = false;
        text_message(j);
    }
    if (j->case_depth && j->depth == j->case_depth)
        end_case(j);
    j->depth--;
    if (j->depth == 0)
        j->root_closed = true; /* what follows (but blanks and comments) is not this
                                  document's: expat will call it junk */
}

static void on_text(void *ud, const XML_Char *s, int len)
{
    struct rein__junit *j = ud;
    size_t room = sizeof(j->case_msg) - 1 - j->msg_len;
    size_t n = (size_t)len < room ? (size_t)len : room;

    j->since_event = 0;
    if (!j->msg_from_text || n == 0)
        return;
    memcpy(j->case_msg + j->msg_len, s, n);
    j->msg_len += n;
}

static bool parser_start(struct rein__junit *j)
{
    if (!rein__xml_start(&j->x, on_start, on_end, on_text)) {
        j->oom = true;
        return false;
    }
    j->depth = 0;
    j->root_open = j->root_closed = false;
    j->fed = 0;
    j->case_depth = 0;
    j->since_event = 0;
    return true;
}

/* A document ended or broke: back to waiting for the next, or stopped. */
static void parser_end(struct rein__junit *j, bool broken)
{
    if (j->x.entity && !j->error[0])
        snprintf(j->error, sizeof(j->error),
                 "the document declares an entity; test reports have none, so it is not read");
    if (broken && (j->root_open || j->x.entity)) {
        if (!j->error[0])
            snprintf(j->error, sizeof(j->error), "line %lu: %s",
                     (unsigned long)XML_GetCurrentLineNumber(j->x.parser),
                     XML_ErrorString(XML_GetErrorCode(j->x.parser)));
        j->state = J_STOPPED;
        return;
    }
    /* Text with a '<' that was not a report ("a < b"), or a finished document. */
    j->state = J_WAIT;
}

/*
 * Hands n bytes of data to expat; returns how many belong to the document (all, unless the
 * document ended inside them: expat then reports the first byte after its root element as
 * "junk", and that byte is where the next document may start).
 */
static size_t parse(struct rein__junit *j, const char *data, size_t n)
{
    uint64_t before = j->fed;

    j->fed += n;
    j->since_event += n;
    if (XML_Parse(j->x.parser, data, (int)n, XML_FALSE) == XML_STATUS_ERROR) {
        XML_Index at = XML_GetCurrentByteIndex(j->x.parser);
        if (XML_GetErrorCode(j->x.parser) == XML_ERROR_NO_MEMORY)
            j->oom = true;
        if (j->x.entity) { /* refused: the rest is not read */
            parser_end(j, true);
            return n;
        }
        if ((j->root_closed || !j->root_open) && at >= 0 && (uint64_t)at >= before) {
            /* After the document, or text with a '<' that was no document ("a < b"):
             * look for the next one from there (past the bad byte in the second case). */
            uint64_t used = (uint64_t)at - before + (j->root_open ? 0 : 1);
            parser_end(j, false);
            return used < n ? (size_t)used : n;
        }
        parser_end(j, true);
        return n;
    }
    if (j->since_event > TOKEN_MAX) {
        snprintf(j->error, sizeof(j->error),
                 "one XML element is larger than 16 MiB; the report is not read further");
        j->state = J_STOPPED;
    }
    return n;
}

static void flush(struct rein__junit *j, bool final)
{
    size_t pos = 0;

    while (pos < j->len && j->state != J_STOPPED && !j->oom) {
        if (j->state == J_WAIT) {
            const char *lt = memchr(j->buf + pos, '<', j->len - pos);
            if (!lt)
                break;
            pos = (size_t)(lt - j->buf);
            if (!parser_start(j))
                break;
            j->state = J_DOC;
        }
        pos += parse(j, j->buf + pos, j->len - pos);
    }
    if (final && j->state == J_DOC && !j->oom) {
        /* The input ended inside a document: a cut report still counts what it showed. */
        if (XML_Parse(j->x.parser, "", 0, XML_TRUE) == XML_STATUS_ERROR && j->root_open &&
            !j->root_closed)
            parser_end(j, true);
    }
    j->len = 0;
}

struct rein__junit *rein__junit_new(bool want_diags)
{
    struct rein__junit *j = rein_calloc(1, sizeof(*j));

    if (!j)
        return NULL;
    if (want_diags) {
        j->d.arr = json_array();
        if (!j->d.arr) {
            rein_free(j);
            return NULL;
        }
    }
    return j;
}

void rein__junit_free(struct rein__junit *j)
{
    if (!j)
        return;
    if (j->x.parser)
        XML_ParserFree(j->x.parser);
    json_decref(j->d.arr);
    rein_free(j);
}

void rein__junit_feed(struct rein__junit *j, const char *data, size_t len)
{
    while (len && j->state != J_STOPPED && !j->oom) {
        size_t n = sizeof(j->buf) - j->len < len ? sizeof(j->buf) - j->len : len;
        memcpy(j->buf + j->len, data, n);
        j->len += n;
        data += n;
        len -= n;
        if (j->len == sizeof(j->buf))
            flush(j, false);
    }
}

bool rein__junit_finish(struct rein__junit *j, struct rein__tests *t, json_t **diags)
{
    flush(j, true);
    if (j->oom || j->d.oom)
        return false;
    *t = j->t;
    if (!j->any_case && j->t.found) {
        t->total = j->attrs.total;
        t->failed = j->attrs.failed;
        t->skipped = j->attrs.skipped;
        t->passed = t->total - t->failed - t->skipped;
        if (t->passed < 0)
            t->passed = 0;
    }
    if (diags) {
        *diags = j->d.arr;
        j->d.arr = NULL;
    }
    return true;
}

const char *rein__junit_error(const struct rein__junit *j)
{
    return j->error;
}

bool rein__junit_started(const struct rein__junit *j)
{
    return j->started;
}
