/*
 * Internals of the tools module (src/tools/): the registry and tool structs, name repair,
 * argument parsing and the shapes the pipeline and the ledger write. Only src/tools/,
 * the fuzz targets and the tests include this; everyone else uses <rein/tools.h>.
 */
#ifndef REIN_TOOLS_INT_H
#define REIN_TOOLS_INT_H

#include <rein/tools.h>

#include "core/internal.h"

#include <pthread.h>
#include <stdatomic.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* Room for a name with separators normalised: camelCase boundaries add at most one byte each. */
#define REIN__TOOLS_NAME_NORM_MAX (2 * REIN_TOOL_NAME_MAX)

struct rein__tools_route {
    char *pattern;
    pcre2_code *code;
};

/*
 * One registered tool. Immutable once added, so any number of threads may read it. id, lower
 * and norm are the three forms the repair steps compare; manifest owns every JSON member the
 * borrowed pointers point into.
 */
struct rein_tool {
    char id[REIN_TOOL_NAME_MAX + 1];
    size_t id_len;
    char lower[REIN_TOOL_NAME_MAX + 1];
    char norm[REIN__TOOLS_NAME_NORM_MAX + 1];
    json_t *manifest;           /* normalized copy, owned */
    json_t *parameters;         /* borrowed from manifest */
    const char *description;    /* borrowed from manifest */
    rein_schema *schema;        /* compiled parameters */
    json_t *output;             /* output_schema, borrowed from manifest; NULL when none */
    rein_schema *output_schema; /* compiled output_schema, or NULL */
    bool has_defaults;          /* the schema has a "default" somewhere: fill them */
    bool destructive, read_only, sequential;
    int64_t timeout_ms;
    const struct rein_runner_kind *kind;
    void *state; /* the runner's, closed with kind->close */
    char *source;
    struct rein__tools_route *routes;
    size_t nroutes;
    struct rein_tool *retired_next; /* in the registry's list of removed tools */
};

/*
 * The registry. tools keeps registration order; slots is an open-addressing table of
 * (index + 1) by id hash, sized to a power of two at least twice the tool count, so an exact
 * lookup is one hash and usually one comparison.
 *
 * Tools may join and leave while the registry is in use (an MCP server connects later, or
 * changes its tool list): lock guards tools, slots and meta (read for lookups and exports,
 * written for adds and removals). A removed tool moves to retired and is freed only with the
 * registry, so a pointer handed out earlier (a call in flight, a turn's tool list) stays valid.
 */
struct rein__tools_kind_entry {
    const struct rein_runner_kind *kind;
    rein_schema *schema; /* kind->schema compiled on first use */
};

struct rein__tools_watcher {
    struct rein__tools_watcher *next;
    int handle;
    rein_registry_change_fn fn;
    void *userdata;
};

struct rein_registry {
    pthread_rwlock_t lock;
    rein_tool *retired;
    pthread_mutex_t watch_mu; /* watchers; held while they are called */
    struct rein__tools_watcher *watchers;
    int next_watch;
    _Atomic uint64_t generation;
    rein_tool **tools;
    size_t ntools, cap;
    uint32_t *slots;
    size_t nslots;
    struct rein__tools_kind_entry *kinds;
    size_t nkinds, kinds_cap;
    json_t *problems;
    rein_schema *meta; /* the manifest meta-schema, compiled on first use */
};

/* The one runner kind the tools module knows: "builtin" (registry.c; its state holds the C
 * function). Every other kind is registered by the module that implements it
 * (rein_skills_register_runners, rein_mcp_register_runner). */
extern const struct rein_runner_kind rein__tools_runner_builtin;

/* True when schema says its instances are objects ("type": "object"). */
bool rein__tools_schema_is_object(const json_t *schema);

/* ---- repair.c ---- */
/* ASCII lowercase copy of name (other bytes unchanged) into out (len + 1 bytes). */
void rein__tools_name_lower(const char *name, size_t len, char *out);
/* Separators normalised: "fileSearch", "File Search", "file-search" → "file_search". Returns
 * the length written to out (at most REIN__TOOLS_NAME_NORM_MAX, NUL-terminated). */
size_t rein__tools_name_normalize(const char *name, size_t len, char *out);
/* Optimal string alignment distance, giving up (returning limit + 1) beyond limit. */
size_t rein__tools_edit_distance(const char *a, size_t alen, const char *b, size_t blen,
                                 size_t limit);
/* rein_registry_resolve with a length (the name is already checked). A repair never lands on
 * a destructive tool: such a name is not found, and why names the exact one. */
const rein_tool *rein__tools_resolve(const rein_registry *reg, const char *name, size_t len,
                                     enum rein_repair *how, rein_error *why);
/* Only the tool whose id is exactly name (protocol boundaries: rein_call_opts.exact_name). */
const rein_tool *rein__tools_resolve_exact(const rein_registry *reg, const char *name, size_t len,
                                           rein_error *why);
/* ", "-separated list of the tool names into b (at most max_names, then ", …"). */
rein_err rein__tools_list_names(const rein_registry *reg, struct rein_buf *b);
/* The registry's read lock, for the internal readers (resolve, list_names take it themselves;
 * rein__tools_lookup expects it held). */
void rein__tools_rdlock(const rein_registry *reg);
void rein__tools_unlock(const rein_registry *reg);

/* ---- args.c ---- */
/*
 * Parses argument text as the pipeline does: "" (or only whitespace) is {}, anything else
 * must be one JSON object, duplicate keys refused, integers beyond 64 bits refused with a hint.
 * On success *out is a new object. On failure returns REIN_EINVALID (bad text) or REIN_ENOMEM
 * and fills msg (the message), path (a JSON Pointer to the bad place, "" when unknown) and
 * hint (extra advice or "").
 */
struct rein__tools_args_error {
    char msg[320];
    char path[128];
    char hint[128];
    size_t offset; /* byte offset of the problem */
};
rein_err rein__tools_args_parse(const char *text, size_t len, size_t max_len, json_t **out,
                                struct rein__tools_args_error *e);
/* A JSON Pointer to the token at byte offset in text (best effort, "" when unknown). */
void rein__tools_pointer_at(const char *text, size_t len, size_t offset, char *out,
                            size_t out_size);

/* ---- ledger.c: the entry shape, shared by the ledger and the call result ---- */
/*
 * An entry as JSON texts and C values. The ledger keeps texts, not jansson trees: an entry
 * holds no reference into a call's live values, costs no allocation when its strings are
 * short, and is what the store writes anyway.
 */
struct rein__tools_entry_view {
    const char *call_id;
    size_t call_id_len; /* 0: strlen(call_id) */
    const char *tool;
    size_t tool_len;
    const char *sent_name; /* NULL: same as tool */
    size_t sent_len;
    const char *args_json; /* JSON text of the arguments; NULL: see args_text */
    size_t args_json_len;
    const char *args_text; /* unparsable argument text, written as a string; NULL: null */
    size_t args_len;
    enum rein_call_status status;
    const char *result_json; /* JSON text; NULL: null */
    size_t result_len;
    int64_t call_wall_ms;
    int64_t response_wall_ms; /* 0: null */
    bool has_step;
    int step;
    const char *trace_id;
    size_t trace_id_len; /* 0: strlen(trace_id) when trace_id is set */
    int64_t latency_ms;  /* < 0: null */
    bool interrupted;
};
/* The one writer of a ledger entry's JSON (include/rein/tools.h, struct rein_ledger_entry). */
void rein__tools_entry_write(struct rein_jw *w, const struct rein__tools_entry_view *v);
/* The pipeline's own entry, updated by position rather than paired. */
rein_err rein__tools_ledger_begin(rein_ledger *ledger, const struct rein__tools_entry_view *v,
                                  size_t *index, rein_error *err);
rein_err rein__tools_ledger_finish(rein_ledger *ledger, size_t index, enum rein_call_status status,
                                   const char *result_json, size_t result_len,
                                   int64_t response_wall_ms, int64_t latency_ms, rein_error *err);

/* ---- manifest.c ---- */
/*
 * Checks manifest against the meta-schema and builds a normalized copy (*out, new): defaults
 * filled, runner.kind present (default_kind when the manifest has no runner). On failure
 * returns REIN_ESCHEMA (or REIN_ENOMEM) with err->msg "<pointer>: <problem>[; …]" and the
 * first pointer in pointer.
 */
rein_err rein__tools_manifest_check(rein_registry *reg, json_t *manifest, const char *default_kind,
                                    json_t **out, char *pointer, size_t pointer_size,
                                    rein_error *err);
/* Checks runner (borrowed) against kind's schema; same error convention, pointers under
 * "/runner". */
rein_err rein__tools_runner_check(rein_registry *reg, struct rein__tools_kind_entry *k,
                                  json_t *runner, char *pointer, size_t pointer_size,
                                  rein_error *err);
/* Formats the errors of res as "<pointer>: <message>[; …]" under prefix into err. */
rein_err rein__tools_schema_errors(const rein_schema_result *res, const char *prefix, char *pointer,
                                   size_t pointer_size, rein_error *err);
/* True when schema has a "default" keyword anywhere. */
bool rein__tools_has_defaults(const json_t *schema);
/*
 * Adds a tool. With kind NULL the runner comes from manifest.runner.kind and is opened here
 * (state must be NULL); otherwise kind and state are used as given (state is closed on
 * failure). pointer (may be NULL) receives the JSON Pointer of a manifest problem.
 */
rein_err rein__tools_add(rein_registry *reg, json_t *manifest, const struct rein_runner_kind *kind,
                         void *state, const char *base_dir, const char *source, char *pointer,
                         size_t pointer_size, rein_error *err);
/* The tool with exactly this id (len bytes, may hold any byte), or NULL. */
const rein_tool *rein__tools_lookup(const rein_registry *reg, const char *id, size_t len);
/* The runner kind named name, or NULL. */
struct rein__tools_kind_entry *rein__tools_kind(rein_registry *reg, const char *name);

/* ---- shared small helpers ---- */
/* For appends whose failure only shortens a message: the result is deliberately unused. */
static inline void rein__tools_ignore(rein_err rc)
{
    (void)rc;
}

#endif /* REIN_TOOLS_INT_H */
