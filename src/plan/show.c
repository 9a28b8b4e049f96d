/*
 * Showing a plan to a person (`rein plan --show`): a text table of the steps with their
 * status, dependencies, replans and notes, or a Graphviz DOT digraph with one node per step,
 * coloured by status, and an edge from each dependency to the step that needs it.
 */
#include "plan_int.h"

#include <string.h>

#define DOT_LABEL_MAX 60

/* Bytes of s to show when at most max bytes fit, cut at a UTF-8 character boundary. */
static size_t cut(const char *s, size_t max)
{
    size_t n = strlen(s);

    if (n <= max)
        return n;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

/* Appends s with newlines and tabs shown as spaces (one line per step in the table). */
static rein_err add_flat(struct rein_buf *b, const char *s, size_t len)
{
    rein_err rc = REIN_OK;

    for (size_t k = 0; !rc && k < len; k++)
        rc = rein_buf_addch(b, s[k] == '\n' || s[k] == '\r' || s[k] == '\t' ? ' ' : s[k]);
    return rc;
}

static rein_err add_deps(struct rein_buf *b, const struct rein__plan_step *s)
{
    rein_err rc = REIN_OK;

    for (size_t k = 0; !rc && k < s->ndeps; k++)
        rc = rein_buf_addf(b, "%s%d", k ? ", " : "", s->deps[k]);
    return rc;
}

rein_err rein_plan_write_text(const rein_plan *p, struct rein_buf *out)
{
    rein_err rc;

    if (!p || !out)
        return REIN_EINVAL;
    rc = rein_buf_addf(out, "Plan: %s\n", p->title);
    if (!rc && p->query[0])
        rc = rein_buf_adds(out, "Request: ");
    if (!rc && p->query[0])
        rc = add_flat(out, p->query, strlen(p->query));
    if (!rc && p->query[0])
        rc = rein_buf_addch(out, '\n');
    for (size_t i = 0; !rc && i < p->n; i++) {
        const struct rein__plan_step *s = &p->steps[i];
        rc = rein_buf_addf(out, "%3zu  %-11s  ", i, rein_plan_status_name(s->status));
        if (!rc)
            rc = add_flat(out, s->desc, strlen(s->desc));
        if (!rc && s->ndeps)
            rc = rein_buf_adds(out, "  (needs ");
        if (!rc && s->ndeps)
            rc = add_deps(out, s);
        if (!rc && s->ndeps)
            rc = rein_buf_addch(out, ')');
        if (!rc && s->replans)
            rc = rein_buf_addf(out, "  [%d replan%s]", s->replans, s->replans == 1 ? "" : "s");
        if (!rc)
            rc = rein_buf_addch(out, '\n');
        if (!rc && s->note) {
            rc = rein_buf_adds(out, "                  note: ");
            if (!rc)
                rc = add_flat(out, s->note, strlen(s->note));
            if (!rc)
                rc = rein_buf_addch(out, '\n');
        }
    }
    if (!rc && p->answer) {
        rc = rein_buf_adds(out, "Answer: ");
        if (!rc)
            rc = rein_buf_adds(out, p->answer);
        if (!rc)
            rc = rein_buf_addch(out, '\n');
    }
    return rc;
}

/* Appends len bytes of s escaped for a DOT quoted string. */
static rein_err add_dot_string(struct rein_buf *b, const char *s, size_t len)
{
    rein_err rc = REIN_OK;

    for (size_t k = 0; !rc && k < len; k++) {
        char c = s[k];
        if (c == '"' || c == '\\')
            rc = rein_buf_addch(b, '\\');
        if (!rc)
            rc =
                c == '\n' || c == '\r' || c == '\t' ? rein_buf_addch(b, ' ') : rein_buf_addch(b, c);
    }
    return rc;
}

static const char *fill(enum rein_plan_status s)
{
    switch (s) {
    case REIN_PLAN_IN_PROGRESS:
        return "#fff59d";
    case REIN_PLAN_COMPLETED:
        return "#c8e6c9";
    case REIN_PLAN_BLOCKED:
        return "#ef9a9a";
    case REIN_PLAN_SKIPPED:
        return "#e0e0e0";
    default:
        return "#ffffff";
    }
}

rein_err rein_plan_write_dot(const rein_plan *p, struct rein_buf *out)
{
    rein_err rc;

    if (!p || !out)
        return REIN_EINVAL;
    rc = rein_buf_adds(out, "digraph plan {\n  graph [label=\"");
    if (!rc)
        rc = add_dot_string(out, p->title, cut(p->title, 200));
    if (!rc)
        rc =
            rein_buf_adds(out, "\", labelloc=t];\n  node [shape=box, style=\"rounded,filled\"];\n");
    for (size_t i = 0; !rc && i < p->n; i++) {
        const struct rein__plan_step *s = &p->steps[i];
        size_t n = cut(s->desc, DOT_LABEL_MAX);
        rc = rein_buf_addf(out, "  s%zu [label=\"%zu: ", i, i);
        if (!rc)
            rc = add_dot_string(out, s->desc, n);
        if (!rc && n < strlen(s->desc))
            rc = rein_buf_adds(out, "…");
        if (!rc)
            rc = rein_buf_addf(out, "\\n(%s%s)\", fillcolor=\"%s\"];\n",
                               rein_plan_status_name(s->status), s->replans ? ", replanned" : "",
                               fill(s->status));
    }
    for (size_t i = 0; !rc && i < p->n; i++) {
        const struct rein__plan_step *s = &p->steps[i];
        for (size_t k = 0; !rc && k < s->ndeps; k++)
            rc = rein_buf_addf(out, "  s%d -> s%zu;\n", s->deps[k], i);
    }
    if (!rc)
        rc = rein_buf_adds(out, "}\n");
    return rc;
}
