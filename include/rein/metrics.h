/*
 * rein/metrics.h: a small metrics registry rendered in the Prometheus text format (0.0.4).
 *
 * Families are counters, gauges or histograms with up to four labels; each distinct set of
 * label values is one series. `rein serve` renders the registry at GET /metrics. The server
 * records through the helpers at the bottom (turns running, tool calls by tool and status,
 * provider errors and retries), passing NULL for the process-wide registry; an agent's turns
 * reach them through the observer rein_metrics_observe_agent() installs, so the agent itself
 * knows nothing of metrics.
 *
 * Threading: every function may be called from any thread.
 */
#ifndef REIN_METRICS_H
#define REIN_METRICS_H

#include <rein/agent.h>
#include <rein/buf.h>
#include <rein/trace.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_metrics rein_metrics;
typedef struct rein_metric rein_metric; /* one family; owned by its registry */

enum rein_metric_kind {
    REIN_METRIC_COUNTER = 0,
    REIN_METRIC_GAUGE = 1,
    REIN_METRIC_HISTOGRAM = 2,
};

#define REIN_METRIC_MAX_LABELS  5
#define REIN_METRIC_MAX_BUCKETS 16
/* Series one family holds at most; label sets past it are counted under values "other". */
#define REIN_METRIC_MAX_SERIES 1000

/* New empty registry, or NULL when memory is exhausted. */
REIN_EXTERN rein_metrics *rein_metrics_new(void);
/* Frees the registry and its families. NULL is a no-op. Never free the global one. */
REIN_EXTERN void rein_metrics_free(rein_metrics *m);
/* The process-wide registry (created on first use, lives until exit); NULL on exhaustion. */
REIN_EXTERN rein_metrics *rein_metrics_global(void);

/*
 * Registers a family, or returns the one already registered under name when kind and labels
 * match (so modules can register lazily). name: [a-zA-Z_:][a-zA-Z0-9_:]*; counters should end
 * in _total. label_names: NULL-terminated, at most REIN_METRIC_MAX_LABELS. buckets (upper
 * bounds, increasing) only for histograms; NULL uses latency buckets from 5 ms to 60 s. All
 * strings are copied. Returns a borrowed family (valid while m is) or NULL (err says why).
 * m NULL means the global registry.
 */
REIN_EXTERN rein_metric *rein_metrics_family(rein_metrics *m, enum rein_metric_kind kind,
                                             const char *name, const char *help,
                                             const char *const *label_names, const double *buckets,
                                             size_t nbuckets, rein_error *err);
/* Adds v to the series with these label values (one per label name; borrowed). Counters
 * ignore negative v. f NULL is a no-op. */
REIN_EXTERN void rein_metric_add(rein_metric *f, const char *const *label_values, double v);
/* Sets a gauge. */
REIN_EXTERN void rein_metric_set(rein_metric *f, const char *const *label_values, double v);
/* Records one observation in a histogram. */
REIN_EXTERN void rein_metric_observe(rein_metric *f, const char *const *label_values, double v);
/* Current value of a counter or gauge series (0 when absent); for tests and health output. */
REIN_EXTERN double rein_metric_value(rein_metric *f, const char *const *label_values);

/* Appends the whole registry in the text exposition format 0.0.4 to out. */
REIN_EXTERN rein_err rein_metrics_render(rein_metrics *m, struct rein_buf *out) REIN_WUR;

/* ---- the standard series (m NULL: the global registry) ---------------------------------- */

/* rein_http_requests_total{method,route,status} and rein_http_request_duration_seconds{route}.
 * method: any text (methods HTTP does not define are counted as "other"); route: a route
 * pattern or "unmatched", never a raw path. */
REIN_EXTERN void rein_metrics_http_request(rein_metrics *m, const char *method, const char *route,
                                           int status, double seconds);
/* rein_turns_running (gauge): +1 when a turn starts, -1 when it ends. */
REIN_EXTERN void rein_metrics_turns_running(rein_metrics *m, int delta);
/* rein_tool_calls_total{tool,status}; status as in the ledger (success, error, invalid, ...).
 * tool: a registered tool's id, never a name a model invented; NULL counts as "unknown". */
REIN_EXTERN void rein_metrics_tool_call(rein_metrics *m, const char *tool, const char *status);
/* rein_provider_errors_total{provider,kind} (kind: http_429, timeout, parse, ...). */
REIN_EXTERN void rein_metrics_provider_error(rein_metrics *m, const char *provider,
                                             const char *kind);
/* rein_provider_retries_total{provider}. */
REIN_EXTERN void rein_metrics_provider_retry(rein_metrics *m, const char *provider);
/*
 * Makes a's turns record in m (borrowed; must outlive a; NULL: the global registry): turns
 * running, tool calls and provider errors above, and the GenAI client metrics
 * gen_ai_client_token_usage{gen_ai_operation_name,gen_ai_provider_name,gen_ai_request_model,
 * gen_ai_token_type} and gen_ai_client_operation_duration_seconds{...,error_type}
 * (histograms), through rein_agent_set_observer().
 */
REIN_EXTERN void rein_metrics_observe_agent(rein_agent *a, rein_metrics *m);

/*
 * The registry (a rein_metrics *; NULL: the global one) as OpenTelemetry metrics, for
 * rein_trace_metrics_setup(): counters as monotonic sums, gauges, histograms with their
 * bounds, all cumulative since each series was created. The GenAI client metrics take the
 * semantic conventions' names (gen_ai.client.token.usage in {token}, gen_ai.client.operation.
 * duration in s) and attribute keys (gen_ai.operation.name, ..., error.type); rein's own keep
 * their Prometheus name without _total or _seconds (unit s). Label values that are empty are
 * left out. Everything is copied into ar under the registry's lock.
 */
REIN_EXTERN rein_err rein_metrics_otel_collect(void *registry, rein_arena *ar,
                                               struct rein_otel_metric **out, size_t *n);

#ifdef __cplusplus
}
#endif
#endif /* REIN_METRICS_H */
