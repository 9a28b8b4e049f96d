/*
 * Fuzz target for the W3C Trace Context parsers (src/trace/context.c): the input is split on
 * the first newline into a traceparent and a tracestate value. Whatever parses must write
 * back as a well-formed version-00 traceparent that parses again to the same ids and flags,
 * and a tracestate that was kept must itself be valid; nothing may crash or read out of
 * bounds.
 */
#include <rein/trace.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), *state, *nl;
    struct rein_trace_context c, again;
    char tp[REIN_TRACEPARENT_LEN + 1];

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    nl = strchr(text, '\n');
    state = nl ? nl + 1 : NULL;
    if (nl)
        *nl = '\0';
    (void)rein_tracestate_is_valid(state);
    if (rein_trace_context_parse(text, state, &c, NULL) == REIN_OK) {
        rein_trace_context_format(&c, tp);
        if (strlen(tp) != REIN_TRACEPARENT_LEN || !rein_trace_id_is_valid(c.trace_id))
            abort();
        if (rein_trace_context_parse(tp, c.state, &again, NULL) != REIN_OK ||
            strcmp(again.trace_id, c.trace_id) != 0 || strcmp(again.span_id, c.span_id) != 0 ||
            again.flags != c.flags || strcmp(again.state, c.state) != 0)
            abort();
        if (c.state[0] && !rein_tracestate_is_valid(c.state))
            abort();
    }
    free(text);
    return 0;
}
