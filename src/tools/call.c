/*
 * The one call pipeline: rein_call_run() takes a tool call as a model (or a plan step, an HTTP
 * client, an MCP client, a replay) sent it and runs name check → repair → parse → preflight →
 * policy → execute → normalize, recording each step, the ledger entry and, for a call that
 * could not run, the invalid payload the model gets back (docs/DESIGN.md [pipeline]: one path
 * for every caller, so every caller gets the same checks and the same error shapes).
 *
 * The hot path allocates little: the result and its strings are one block, the arguments are
 * parsed once, validation allocates nothing unless the arguments are invalid, and the result's
 * JSON shapes are written straight into a JSON writer on demand rather than built as trees.
 */
#include "tools_int.h"

#include <rein/trace.h>

#include <assert.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_MAX_ARGS_BYTES ((size_t)4 << 20)
#define MAX_MESSAGE_BYTES      4096

/* The pipeline's steps in order, and their names in steps_json: one list. */
#define STAGES(X)                                                                                  \
    X(ST_NAME, "name_check")                                                                       \
    X(ST_REPAIR, "repair")                                                                         \
    X(ST_PARSE, "parse")                                                                           \
    X(ST_PREFLIGHT, "preflight")                                                                   \
    X(ST_POLICY, "policy")                                                                         \
    X(ST_EXECUTE, "execute")                                                                       \
    X(ST_NORMALIZE, "normalize")
#define STAGE_ENUM(id, name) id,
#define STAGE_NAME(id, name) name,
enum stage { STAGES(STAGE_ENUM) ST_COUNT };
static const char *const stage_names[ST_COUNT] = {STAGES(STAGE_NAME)};

struct step_rec {
    uint8_t stage;
    bool ok;
};

/*
 * A call's outcome. Everything a shape needs is here in C form; the strings the input lent
 * (name, call id, trace id, argument text) are copied into the block that follows the struct.
 * Invariants: ok ⇔ code == REIN_CALL_OK; status is a function of code (see status_of);
 * output is set only when ok; args and doc are both NULL only when the arguments did not parse
 * (doc: parsed from args_text into rein's document form, when no defaults can be filled in;
 * the jansson tree is then made from it only when something asks: call_args).
 */
struct rein_call_result {
    enum rein_call_code code;
    enum rein_call_status status;
    const rein_tool *tool;
    enum rein_repair repair;
    const char *sent;
    size_t sent_len;
    const char *call_id;
    const char *trace_id;
    size_t call_id_len, trace_id_len;
    const char *args_text; /* NULL when none was given */
    size_t args_len;
    json_t *args;
    rein_doc *doc; /* reads args_text; set instead of args (see above) */
    json_t *output;
    json_t *details; /* failure details, an array, or NULL */
    char *message;   /* NULL when ok */
    char *log;
    bool check_only;
    bool args_from_text; /* args were parsed from args_text (not given as a value) */
    bool args_lent;      /* args is the caller's lent value (rein_call_input.args_lent) */
    bool doc_lent;       /* doc is (or was, until the run ended) rein_call_input.args_doc */
    bool has_step;
    int step;
    int64_t start_ns, latency_ns;
    int64_t policy_ns; /* time spent in the policy step (self-check, approval): not latency */
    int64_t call_wall_ms, response_wall_ms;
    uint8_t nsteps;
    struct step_rec steps[ST_COUNT];
    json_t *available; /* the tool names, for a call whose name could not be resolved */
    json_t *j_result, *j_invalid, *j_ledger, *j_steps;
    char strings[];
};

/* True when the arguments parsed (as a tree or a document). */
static bool has_args(const rein_call_result *r)
{
    return r->args || r->doc || r->doc_lent;
}

/* The arguments as a jansson tree: args, or the document's tree (made at the first ask and
 * kept by the document, safely from any thread); NULL when they did not parse or memory ran
 * out. */
static json_t *call_args(const rein_call_result *r)
{
    return r->args ? r->args : r->doc ? (json_t *)rein_doc_tree(r->doc) : NULL;
}

/* ---- codes ---- */

#define NAME(id, name) name,
static const char *const code_names[] = {NULL, REIN_CALL_CODE_MAP(NAME)};
static const char *const repair_names[] = {REIN_REPAIR_MAP(NAME)};
#undef NAME

const char *rein_call_code_name(enum rein_call_code code)
{
    if ((size_t)code >= REIN_ARRAY_SIZE(code_names))
        return "internal";
    return code_names[code];
}

bool rein_call_code_parse(const char *text, enum rein_call_code *out)
{
    for (size_t i = 1; text && i < REIN_ARRAY_SIZE(code_names); i++) {
        if (strcmp(text, code_names[i]) == 0) {
            *out = (enum rein_call_code)i;
            return true;
        }
    }
    return false;
}

enum rein_call_code rein_call_code_from_err(rein_err rc)
{
    switch (rc) {
    case REIN_OK:
        return REIN_CALL_OK;
    case REIN_EINVALID:
    case REIN_EINVAL:
        return REIN_CALL_INVALID_ARGUMENTS;
    case REIN_EDENIED:
        return REIN_CALL_DENIED;
    case REIN_ETIMEDOUT:
        return REIN_CALL_TIMEOUT;
    case REIN_ECANCELED:
        return REIN_CALL_CANCELLED;
    case REIN_ENOMEM:
    case REIN_EINTERNAL:
        return REIN_CALL_INTERNAL;
    default:
        return REIN_CALL_EXECUTION_FAILED;
    }
}

rein_err rein_call_code_to_err(enum rein_call_code code)
{
    switch (code) {
    case REIN_CALL_OK:
        return REIN_OK;
    case REIN_CALL_INVALID_ARGUMENTS:
    case REIN_CALL_INVALID_NAME:
    case REIN_CALL_UNKNOWN_TOOL:
        return REIN_EINVALID;
    case REIN_CALL_DENIED:
        return REIN_EDENIED;
    case REIN_CALL_TIMEOUT:
        return REIN_ETIMEDOUT;
    case REIN_CALL_CANCELLED:
        return REIN_ECANCELED;
    case REIN_CALL_INTERNAL:
        return REIN_EINTERNAL;
    default:
        return REIN_EIO;
    }
}

const char *rein_repair_name(enum rein_repair how)
{
    return (size_t)how < REIN_ARRAY_SIZE(repair_names) ? repair_names[how] : "exact";
}

/* Calls that could not run are invalid; calls that started (or were stopped) are errors. */
static enum rein_call_status status_of(enum rein_call_code code)
{
    switch (code) {
    case REIN_CALL_OK:
        return REIN_CALL_SUCCESS;
    case REIN_CALL_UNKNOWN_TOOL:
    case REIN_CALL_INVALID_NAME:
    case REIN_CALL_INVALID_ARGUMENTS:
    case REIN_CALL_DENIED:
        return REIN_CALL_INVALID;
    default:
        return REIN_CALL_ERROR;
    }
}

/* ---- invocations (the runner's view of a call) ---- */

int64_t rein_invocation_remaining_ms(const struct rein_invocation *inv)
{
    int64_t left;

    if (!inv->deadline_ms)
        return -1;
    left = inv->deadline_ms - rein_now_ms();
    return left > 0 ? left : 0;
}

rein_err rein_invocation_check(const struct rein_invocation *inv, rein_error *err)
{
    if (rein_cancel_is_set(inv->cancel))
        return rein_error_set(err, REIN_ECANCELED, "cancelled: %s",
                              rein_cancel_reason(inv->cancel));
    if (inv->deadline_ms && rein_now_ms() >= inv->deadline_ms)
        return rein_error_set(err, REIN_ETIMEDOUT, "timed out after %lld ms",
                              (long long)inv->timeout_ms);
    return REIN_OK;
}

void rein_invocation_event(const struct rein_invocation *inv, struct rein_call_event *ev)
{
    if (!inv || !inv->on_event || !ev)
        return;
    ev->tool = inv->tool;
    ev->call_id = inv->call_id;
    inv->on_event(inv->event_data, ev);
}

rein_err rein_invocation_ask(const struct rein_invocation *inv, const char *key, const char *method,
                             const json_t *params, json_t **result, rein_error *err)
{
    int64_t left = rein_invocation_remaining_ms(inv);

    *result = NULL;
    if (!inv->ask)
        return rein_error_set(err, REIN_ENOTSUP,
                              "no MCP client can be asked for %s: this call does not come from "
                              "an MCP client (rein chat, an agent turn, POST /skills/{id}/invoke)",
                              method);
    if (left == 0)
        return rein_error_set(err, REIN_ETIMEDOUT, "timed out after %lld ms before asking for %s",
                              (long long)inv->timeout_ms, method);
    return inv->ask(inv->ask_data, key, method, params, left, result, err);
}

rein_err rein_invocation_write(const struct rein_invocation *inv, struct rein_buf *b)
{
    struct rein_jw w;
    int64_t left = rein_invocation_remaining_ms(inv);

    rein_jw_init(&w, b);
    rein_jw_obj_begin(&w);
    rein_jw_key(&w, "tool");
    rein_jw_str(&w, rein_tool_id(inv->tool));
    rein_jw_key(&w, "call_id");
    rein_jw_str(&w, inv->call_id);
    rein_jw_key(&w, "trace_id");
    rein_jw_str(&w, inv->trace_id);
    rein_jw_key(&w, "arguments");
    if (inv->args_text)
        rein_jw_raw(&w, inv->args_text, inv->args_len);
    else
        rein_jw_json(&w, inv->args);
    if (inv->has_step) {
        rein_jw_key(&w, "step");
        rein_jw_int(&w, inv->step);
    }
    if (left >= 0) {
        rein_jw_key(&w, "timeout_ms");
        rein_jw_int(&w, left);
    }
    rein_jw_obj_end(&w);
    return rein_jw_finish(&w);
}

/* ---- building a result ---- */

static void step_done(rein_call_result *r, enum stage st, bool ok)
{
    if (r->nsteps < ST_COUNT)
        r->steps[r->nsteps++] = (struct step_rec){(uint8_t)st, ok};
}

/* Records the failure of step st. The message is formatted; details (taken) may be NULL. */
static void fail(rein_call_result *r, enum stage st, enum rein_call_code code, json_t *details,
                 const char *fmt, ...) REIN_PRINTF(5, 6);

static void fail(rein_call_result *r, enum stage st, enum rein_call_code code, json_t *details,
                 const char *fmt, ...)
{
    struct rein_buf b;
    va_list ap;

    r->code = code;
    r->status = status_of(code);
    json_decref(r->details);
    r->details = details;
    rein_buf_init(&b, MAX_MESSAGE_BYTES);
    va_start(ap, fmt);
    if (rein_buf_addvf(&b, fmt, ap))
        rein_buf_reset(&b);
    va_end(ap);
    rein_free(r->message);
    r->message = b.len ? rein_buf_detach(&b, NULL) : rein_strdup(rein_call_code_name(code));
    rein_buf_release(&b);
    step_done(r, st, false);
}

/*
 * Allocates the result with the input's strings copied behind it. Every member is set here
 * one by one rather than by a memset of the whole struct: the compiler turns a memset of this
 * size into "rep stos", whose start-up cost is a measurable share of a call, while the
 * stores below merge into a few vector stores. steps[] is not cleared: nsteps says how much of
 * it is written.
 */
static rein_call_result *result_new(const struct rein_call_input *in, const char *call_id,
                                    const char *trace_id, const char *args_text, size_t args_len)
{
    size_t name_len = in->name ? (in->name_len ? in->name_len : strlen(in->name)) : 0;
    size_t id_len = strlen(call_id), trace_len = strlen(trace_id);
    size_t extra = name_len + id_len + trace_len + (args_text ? args_len : 0) + 4;
    rein_call_result *r;
    char *p;

    if (extra > SIZE_MAX - sizeof(*r))
        return NULL;
    r = rein_malloc(sizeof(*r) + extra);
    if (!r)
        return NULL;
    r->code = REIN_CALL_OK;
    r->status = REIN_CALL_SUCCESS; /* until a step fails */
    r->tool = NULL;
    r->repair = REIN_REPAIR_EXACT;
    r->args = NULL;
    r->doc = NULL;
    r->args_lent = false;
    r->doc_lent = false;
    r->output = NULL;
    r->details = NULL;
    r->message = NULL;
    r->log = NULL;
    r->check_only = false;
    r->args_from_text = false;
    r->has_step = in->has_step;
    r->step = in->step;
    r->start_ns = 0;
    r->latency_ns = 0;
    r->policy_ns = 0; /* no policy step ran (yet) */
    r->call_wall_ms = 0;
    r->response_wall_ms = 0;
    r->nsteps = 0;
    r->available = NULL;
    r->j_result = NULL;
    r->j_invalid = NULL;
    r->j_ledger = NULL;
    r->j_steps = NULL;
    p = r->strings;
    if (name_len)
        memcpy(p, in->name, name_len);
    p[name_len] = '\0';
    r->sent = p;
    r->sent_len = name_len;
    p += name_len + 1;
    memcpy(p, call_id, id_len + 1);
    r->call_id = p;
    r->call_id_len = id_len;
    p += id_len + 1;
    memcpy(p, trace_id, trace_len + 1);
    r->trace_id = p;
    r->trace_id_len = trace_len;
    p += trace_len + 1;
    r->args_text = NULL;
    r->args_len = 0;
    if (args_text) {
        memcpy(p, args_text, args_len);
        p[args_len] = '\0';
        r->args_text = p;
        r->args_len = args_len;
    }
    return r;
}

void rein_call_result_free(rein_call_result *r)
{
    if (!r)
        return;
    if (!r->args_lent)
        json_decref(r->args);
    if (!r->doc_lent)
        rein_doc_free(r->doc);
    json_decref(r->output);
    json_decref(r->details);
    json_decref(r->j_result);
    json_decref(r->j_invalid);
    json_decref(r->j_ledger);
    json_decref(r->j_steps);
    json_decref(r->available);
    rein_free(r->message);
    rein_free(r->log);
    rein_free(r);
}

static rein_err result_text(const rein_call_result *r, struct rein_buf *b);

/* ---- the steps ---- */

/*
 * Readies an error record for a step. Only code and msg are read afterwards, so this stands
 * in for rein_error_clear(), whose memset of the whole record is measurable on a path that
 * runs six times per call.
 */
static void err_reset(rein_error *e)
{
    e->code = 0;
    e->detail = 0;
    e->msg[0] = '\0';
    e->where[0] = '\0';
}

/*
 * For a call whose name did not resolve: the tool names for the invalid payload, and the
 * arguments as a value when they parse, so receivedArgs shows what the model sent.
 */
/* True when text holds something besides JSON whitespace. */
static bool has_content(const char *text, size_t len)
{
    for (size_t i = 0; text && i < len; i++) {
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r')
            return true;
    }
    return false;
}

static void keep_names(rein_call_result *r, const rein_registry *reg,
                       const struct rein_call_input *in, struct rein_buf *list)
{
    struct rein__tools_args_error e;

    r->available = rein_registry_names_json(reg);
    if (rein__tools_list_names(reg, list))
        rein_buf_reset(list);
    if (json_is_object(in->args))
        r->args = json_deep_copy(in->args);
    else if (r->args_text && rein__tools_args_parse(r->args_text, r->args_len, 0, &r->args, &e))
        r->args = NULL;
    else if (r->args_text)
        r->args_from_text = has_content(r->args_text, r->args_len);
}

static bool step_name(rein_call_result *r, const rein_registry *reg,
                      const struct rein_call_input *in)
{
    struct rein_buf list;
    rein_error why;

    err_reset(&why);
    if (rein_tool_name_check(r->sent, r->sent_len, &why) == REIN_OK) {
        step_done(r, ST_NAME, true);
        return true;
    }
    rein_buf_init(&list, MAX_MESSAGE_BYTES);
    keep_names(r, reg, in, &list);
    fail(r, ST_NAME, REIN_CALL_INVALID_NAME, NULL, "invalid tool name: %s; available tools: %s",
         why.msg, list.ptr);
    rein_buf_release(&list);
    return false;
}

static bool step_repair(rein_call_result *r, const rein_registry *reg,
                        const struct rein_call_input *in, bool exact)
{
    struct rein_buf list;
    rein_error why;

    err_reset(&why);
    r->repair = REIN_REPAIR_EXACT;
    r->tool = exact ? rein__tools_resolve_exact(reg, r->sent, r->sent_len, &why)
                    : rein__tools_resolve(reg, r->sent, r->sent_len, &r->repair, &why);
    if (r->tool) {
        if (r->repair != REIN_REPAIR_EXACT)
            /* Every repair leaves a trace, also where no ledger is kept (the ledger entry has
             * the name as sent next to the tool). */
            rein_log(REIN_LOG_INFO, "tools/call",
                     "call %.*s: tool name \"%.*s\" repaired to %s (%s)", (int)r->call_id_len,
                     r->call_id, (int)(r->sent_len > 64 ? 64 : r->sent_len), r->sent, r->tool->id,
                     rein_repair_name(r->repair));
        step_done(r, ST_REPAIR, true);
        return true;
    }
    rein_buf_init(&list, MAX_MESSAGE_BYTES);
    keep_names(r, reg, in, &list);
    fail(r, ST_REPAIR, REIN_CALL_UNKNOWN_TOOL, NULL, "unknown tool: %s; available tools: %s",
         why.msg, list.ptr);
    rein_buf_release(&list);
    return false;
}

static json_t *detail(const char *path, const char *message)
{
    return json_pack("[{s:s, s:s}]", "path", path, "message", message);
}

/*
 * The model's text read into rein's document form (decision 0056): the validator reads it in
 * place, and a jansson tree is made only if something asks for one (a policy hook, a runner).
 * Only for text the result keeps (args_text), a tool without defaults (filling them changes
 * the value), and text that parses as an object of rein's own nodes; anything else, errors
 * included, takes rein__tools_args_parse as before (which also refuses duplicate keys, as the
 * document's nodes never hold them).
 */
static bool parse_doc(rein_call_result *r, const struct rein_call_input *in, const char *text,
                      size_t len, size_t max_bytes)
{
    rein_doc *doc;

    if (text != r->args_text || !r->tool || r->tool->has_defaults || !has_content(text, len) ||
        (max_bytes && len > max_bytes))
        return false;
    /* The caller's document of the same text (a check: see rein_call_input.args_doc). */
    if (in->args_doc && r->check_only && rein_doc_root(in->args_doc) &&
        rein_doc_type(in->args_doc) == JSON_OBJECT) {
        r->doc = (rein_doc *)in->args_doc;
        r->doc_lent = true;
        r->args_from_text = true;
        step_done(r, ST_PARSE, true);
        return true;
    }
    doc = rein_doc_parse(text, len, NULL);
    if (!doc || !rein_doc_root(doc) || rein_doc_type(doc) != JSON_OBJECT) {
        rein_doc_free(doc);
        return false;
    }
    r->doc = doc;
    r->args_from_text = true;
    step_done(r, ST_PARSE, true);
    return true;
}

static bool step_parse(rein_call_result *r, const struct rein_call_input *in, size_t max_bytes)
{
    struct rein__tools_args_error e;
    const char *text = r->args_text;
    size_t len = r->args_len;
    rein_err rc;

    if (in->args && !json_is_string(in->args)) {
        if (!json_is_object(in->args)) {
            fail(r, ST_PARSE, REIN_CALL_INVALID_ARGUMENTS,
                 detail("", "the arguments must be a JSON object"),
                 "the arguments must be a JSON object, got %s", rein_json_type_name(in->args));
            return false;
        }
        /* A copy: defaults may be filled in, and the caller keeps its own value. A value
         * lent until the result is freed is read in place when nothing will change it. */
        r->args_lent = in->args_lent && r->tool && !r->tool->has_defaults;
        r->args = r->args_lent ? (json_t *)in->args : json_deep_copy(in->args);
        if (!r->args) {
            fail(r, ST_PARSE, REIN_CALL_INTERNAL, NULL, "out of memory copying the arguments");
            return false;
        }
        step_done(r, ST_PARSE, true);
        return true;
    }
    if (in->args && in->args_text) {
        /* Both given: the value is what is parsed (r->args_text is the other one). */
        text = json_string_value(in->args);
        len = json_string_length(in->args);
    }
    if (parse_doc(r, in, text, len, max_bytes))
        return true;
    rc = rein__tools_args_parse(text, len, max_bytes, &r->args, &e);
    if (rc == REIN_ENOMEM) {
        fail(r, ST_PARSE, REIN_CALL_INTERNAL, NULL, "%s", e.msg);
        return false;
    }
    if (rc) {
        fail(r, ST_PARSE, REIN_CALL_INVALID_ARGUMENTS, detail(e.path, e.msg), "%s%s%s", e.msg,
             e.hint[0] ? "; " : "", e.hint);
        return false;
    }
    /* The ledger may keep the model's own text when it is what was parsed. */
    r->args_from_text = text == r->args_text && has_content(text, len);
    step_done(r, ST_PARSE, true);
    return true;
}

/* Appends "/" + escaped segment to a JSON Pointer in b. */
static rein_err pointer_add(struct rein_buf *b, const char *seg)
{
    rein_err rc = rein_buf_addch(b, '/');

    for (; !rc && *seg; seg++) {
        if (*seg == '~' || *seg == '/')
            rc = rein_buf_adds(b, *seg == '~' ? "~0" : "~1");
        else
            rc = rein_buf_addch(b, *seg);
    }
    return rc;
}

/*
 * Turns the validator's errors into details and the message. Missing required properties are
 * gathered into one "missing required field(s): a, b" clause (the seed's wording), each with
 * its own detail at the property's path; every other error follows as "<path>: <message>".
 */
static void preflight_failed(rein_call_result *r, const rein_schema_result *res)
{
    struct rein_buf missing, others, path;
    json_t *details = json_array();
    size_t n = rein_schema_result_count(res);
    bool oom = !details;

    rein_buf_init(&missing, MAX_MESSAGE_BYTES);
    rein_buf_init(&others, MAX_MESSAGE_BYTES);
    rein_buf_init(&path, 2048);
    for (size_t i = 0; i < n && !oom; i++) {
        const char *ip = rein_schema_result_instance_path(res, i);
        const char *prop = rein_schema_result_property(res, i);
        const char *msg =
            prop ? "required property is missing" : rein_schema_result_message(res, i);
        rein_buf_reset(&path);
        if (rein_buf_adds(&path, ip) || (prop && pointer_add(&path, prop))) {
            oom = true;
            break;
        }
        if (json_array_append_new(details,
                                  json_pack("{s:s, s:s}", "path", path.ptr, "message", msg))) {
            oom = true;
            break;
        }
        /* The message keeps what fits; details keep everything. */
        if (prop)
            rein__tools_ignore(
                rein_buf_addf(&missing, "%s%s", missing.len ? ", " : "", ip[0] ? path.ptr : prop));
        else
            rein__tools_ignore(rein_buf_addf(&others, "%s%s: %s", others.len ? "; " : "",
                                             path.len ? path.ptr : "/", msg));
    }
    if (oom) {
        json_decref(details);
        fail(r, ST_PREFLIGHT, REIN_CALL_INTERNAL, NULL,
             "out of memory describing invalid arguments");
    } else {
        fail(r, ST_PREFLIGHT, REIN_CALL_INVALID_ARGUMENTS, details, "%s%s%s%s",
             missing.len ? "missing required field(s): " : "", missing.ptr,
             missing.len && others.len ? "; " : "", others.ptr);
    }
    rein_buf_release(&missing);
    rein_buf_release(&others);
    rein_buf_release(&path);
}

/* Validates the arguments in whichever form step_parse left them (document or tree). */
static rein_err validate_args(const rein_call_result *r, unsigned flags, rein_schema_result *res,
                              rein_error *err)
{
    return r->doc ? rein_schema_validate_doc(r->tool->schema, r->doc, flags, res, err)
                  : rein_schema_validate(r->tool->schema, r->args, flags, res, err);
}

static bool step_preflight(rein_call_result *r)
{
    unsigned flags =
        REIN_SCHEMA_FIRST_ERROR | (r->tool->has_defaults ? REIN_SCHEMA_FILL_DEFAULTS : 0);
    rein_schema_result *res;
    rein_error verr;
    rein_err rc;

    /* Valid arguments, the common case, validate without an error list. */
    err_reset(&verr);
    rc = validate_args(r, flags, NULL, &verr);
    if (rc == REIN_OK) {
        step_done(r, ST_PREFLIGHT, true);
        return true;
    }
    if (rc != REIN_EINVALID) {
        fail(r, ST_PREFLIGHT, rc == REIN_EDEPTH ? REIN_CALL_INVALID_ARGUMENTS : REIN_CALL_INTERNAL,
             NULL, "%s", verr.msg[0] ? verr.msg : rein_strerror(rc));
        return false;
    }
    res = rein_schema_result_new();
    if (!res) {
        fail(r, ST_PREFLIGHT, REIN_CALL_INTERNAL, NULL, "out of memory validating the arguments");
        return false;
    }
    rc = validate_args(r, 0, res, &verr);
    if (rc == REIN_EINVALID)
        preflight_failed(r, res);
    else
        fail(r, ST_PREFLIGHT, REIN_CALL_INTERNAL, NULL, "validation failed: %s",
             verr.msg[0] ? verr.msg : rein_strerror(rc));
    rein_schema_result_free(res);
    return false;
}

static bool step_policy(rein_call_result *r, const struct rein_call_opts *o, struct rein_span *span)
{
    struct rein_policy_check check;
    rein_error why;
    rein_err rc;

    if (!o->policy) {
        step_done(r, ST_POLICY, true);
        return true;
    }
    if (!call_args(r)) {
        fail(r, ST_POLICY, REIN_CALL_INTERNAL, NULL, "out of memory reading the arguments");
        return false;
    }
    check = (struct rein_policy_check){
        .tool = r->tool,
        .args = call_args(r),
        .call_id = r->call_id,
        .trace_id = r->trace_id,
        .sent_name = r->sent,
        .repair = r->repair,
        .has_step = r->has_step,
        .step = r->step,
        .cancel = o->cancel,
        .span = span,
    };
    err_reset(&why);
    {
        int64_t t0 = rein_now_ns();
        rc = o->policy(o->policy_data, &check, &why);
        /* Waiting for a person (or a judge) is not the call's latency. */
        r->policy_ns = rein_now_ns() - t0;
    }
    if (rc == REIN_OK) {
        step_done(r, ST_POLICY, true);
        return true;
    }
    if (rc == REIN_EDENIED)
        fail(r, ST_POLICY, REIN_CALL_DENIED, NULL, "%s",
             why.msg[0] ? why.msg : "the call was denied by policy");
    else if (rc == REIN_ECANCELED)
        fail(r, ST_POLICY, REIN_CALL_CANCELLED, NULL, "cancelled while waiting for approval%s%s",
             why.msg[0] ? ": " : "", why.msg);
    else
        fail(r, ST_POLICY, REIN_CALL_INTERNAL, NULL, "the policy check failed: %s",
             why.msg[0] ? why.msg : rein_strerror(rc));
    return false;
}

static int64_t effective_timeout(const rein_tool *t, const struct rein_call_opts *o)
{
    int64_t ms = t->timeout_ms;

    if (o->timeout_ms > 0 && (ms <= 0 || o->timeout_ms < ms))
        ms = o->timeout_ms;
    return ms;
}

/*
 * Checks a successful output against the tool's output_schema: the output itself, or the
 * structuredContent of an output that is MCP content ({"content": [...], ...}: a process
 * skill's images, another MCP server's result). A mismatch fails the call (execution_failed)
 * with the problems as details: a tool that promises a shape and breaks it is broken, and the
 * caller must not read on as if it had kept its word.
 */
static bool output_matches(rein_call_result *r)
{
    const json_t *content = json_object_get(r->output, "content");
    json_t *structured = r->output, *details = NULL;
    rein_schema_result *sr;
    rein_error verr;
    rein_err rc;

    if (json_is_object(r->output) && json_is_array(content)) {
        structured = json_object_get(r->output, "structuredContent");
        if (!structured) {
            fail(r, ST_EXECUTE, REIN_CALL_EXECUTION_FAILED, NULL,
                 "%s declares an output schema but returned no structured content", r->tool->id);
            json_decref(r->output);
            r->output = NULL;
            return false;
        }
    }
    /* A matching output, the common case, is checked without an error list (as the
     * arguments are); only a mismatch is validated again to list its problems. */
    err_reset(&verr);
    rc = rein_schema_validate(r->tool->output_schema, structured, REIN_SCHEMA_FIRST_ERROR, NULL,
                              &verr);
    if (rc == REIN_OK)
        return true;
    sr = rein_schema_result_new();
    err_reset(&verr);
    rc = sr ? rein_schema_validate(r->tool->output_schema, structured, 0, sr, &verr) : REIN_ENOMEM;
    if (rc == REIN_OK) {
        rein_schema_result_free(sr);
        return true;
    }
    if (rc == REIN_EINVALID) {
        details = json_array();
        for (size_t i = 0; details && i < rein_schema_result_count(sr); i++) {
            if (json_array_append_new(details,
                                      json_pack("{s:s, s:s}", "path",
                                                rein_schema_result_instance_path(sr, i), "message",
                                                rein_schema_result_message(sr, i)))) {
                json_decref(details);
                details = NULL;
            }
        }
    }
    fail(r, ST_EXECUTE, rc == REIN_ENOMEM ? REIN_CALL_INTERNAL : REIN_CALL_EXECUTION_FAILED,
         details, "the output of %s does not match its output schema%s%s", r->tool->id,
         rc == REIN_EINVALID && rein_schema_result_count(sr) ? ": " : "",
         rc == REIN_EINVALID && rein_schema_result_count(sr) ? rein_schema_result_message(sr, 0)
                                                             : "");
    rein_schema_result_free(sr);
    json_decref(r->output); /* a failed call has no output */
    r->output = NULL;
    return false;
}

static void step_execute(rein_call_result *r, const struct rein_call_opts *o)
{
    struct rein_tool_reply reply = {0};
    struct rein_invocation inv;
    const char *text = NULL;
    rein_error rerr;
    int64_t timeout = effective_timeout(r->tool, o);
    rein_err rc;

    if (rein_cancel_is_set(o->cancel)) {
        fail(r, ST_EXECUTE, REIN_CALL_CANCELLED, NULL, "cancelled before it started: %s",
             rein_cancel_reason(o->cancel));
        return;
    }
    /* The model's validated text goes as it is to a runner that only sends it on, unless a
     * line break in it would split a line-framed call document; others get the tree. */
    if (r->doc && r->tool->kind->text_args && !memchr(r->args_text, '\n', r->args_len) &&
        !memchr(r->args_text, '\r', r->args_len)) {
        text = r->args_text;
    } else if (!call_args(r)) {
        fail(r, ST_EXECUTE, REIN_CALL_INTERNAL, NULL, "out of memory reading the arguments");
        return;
    }
    inv = (struct rein_invocation){
        .tool = r->tool,
        .args = text ? NULL : call_args(r),
        .args_text = text,
        .args_len = text ? r->args_len : 0,
        .call_id = r->call_id,
        .trace_id = r->trace_id,
        .has_step = r->has_step,
        .step = r->step,
        .deadline_ms = timeout > 0 ? r->start_ns / 1000000 + timeout : 0,
        .timeout_ms = timeout > 0 ? timeout : 0,
        .cancel = o->cancel,
        .on_event = o->on_event,
        .event_data = o->event_data,
        .ask = o->ask,
        .ask_data = o->ask_data,
        .asker = o->asker,
    };
    err_reset(&rerr);
    rc = r->tool->kind->invoke(r->tool->state, &inv, &reply, &rerr);
    r->log = reply.log;
    if (rc == REIN_OK) {
        json_decref(reply.details);
        r->output = reply.output ? reply.output : json_null();
        if (r->tool->output_schema && !output_matches(r))
            return;
        step_done(r, ST_EXECUTE, true);
        return;
    }
    json_decref(reply.output);
    fail(r, ST_EXECUTE, rein_call_code_from_err(rc), reply.details, "%s",
         rerr.msg[0] ? rerr.msg : rein_strerror(rc));
}

/*
 * The result text of a call whose output is a short string needing no escapes (echo's, and
 * many tools'), written into small without touching the heap; false when it does not apply.
 */
static bool small_result_text(const rein_call_result *r, char *small, size_t size, size_t *len)
{
    const char *s;
    size_t n;

    if (r->code != REIN_CALL_OK || !json_is_string(r->output))
        return false;
    s = json_string_value(r->output);
    n = json_string_length(r->output);
    if (n + 2 >= size)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == '"' || c == '\\')
            return false;
    }
    small[0] = '"';
    memcpy(small + 1, s, n);
    small[n + 1] = '"';
    *len = n + 2;
    return true;
}

/*
 * The ledger's texts for this call. args: the model's own text when it is exactly what ran
 * (it parsed, was not blank, and no defaults could have been added), else the arguments
 * written compactly into b; NULL when they did not parse (the view then carries the raw
 * text). result (when asked): the output, or the error object, into small or b.
 */
static rein_err ledger_texts(const rein_call_result *r, struct rein_buf *b, char *small,
                             size_t small_size, struct rein__tools_entry_view *v, bool with_result)
{
    size_t args_end;
    rein_err rc = REIN_OK;
    bool in_small = false;

    if (has_args(r) && r->args_from_text && !(r->tool && r->tool->has_defaults)) {
        v->args_json = r->args_text;
        v->args_json_len = r->args_len;
    } else if (has_args(r)) {
        rc = call_args(r) ? rein_json_dump(b, call_args(r)) : REIN_ENOMEM;
    }
    args_end = b->len;
    if (!rc && with_result) {
        in_small = small_result_text(r, small, small_size, &v->result_len);
        if (!in_small)
            rc = result_text(r, b);
    }
    /* b may have moved while growing: point into it only now. */
    if (has_args(r) && !v->args_json) {
        v->args_json = b->ptr;
        v->args_json_len = args_end;
    }
    if (with_result && !in_small) {
        v->result_json = b->ptr + args_end;
        v->result_len = b->len - args_end;
    } else if (with_result) {
        v->result_json = small;
    }
    return rc;
}

static struct rein__tools_entry_view entry_view(const rein_call_result *r)
{
    bool resolved = r->tool != NULL;

    return (struct rein__tools_entry_view){
        .call_id = r->call_id,
        .call_id_len = r->call_id_len,
        .tool = resolved ? r->tool->id : r->sent,
        .tool_len = resolved ? r->tool->id_len : r->sent_len,
        .sent_name = r->sent,
        .sent_len = r->sent_len,
        .args_text = has_args(r) ? NULL : r->args_text,
        .args_len = r->args_len,
        .status = r->check_only ? REIN_CALL_PENDING : r->status,
        .call_wall_ms = r->call_wall_ms,
        .response_wall_ms = r->response_wall_ms,
        .has_step = r->has_step,
        .step = r->step,
        .trace_id = r->trace_id,
        .trace_id_len = r->trace_id_len,
        .latency_ms = r->latency_ns / 1000000,
    };
}

/* Records the pending entry before policy and execution. false when the call must not run. */
static bool ledger_begin(rein_call_result *r, rein_ledger *l, size_t *index)
{
    struct rein__tools_entry_view v = entry_view(r);
    struct rein_buf b;
    rein_error lerr;
    rein_err rc;

    v.status = REIN_CALL_PENDING;
    v.response_wall_ms = 0;
    v.latency_ms = -1;
    *index = SIZE_MAX;
    err_reset(&lerr);
    rein_buf_init(&b, 0);
    rc = ledger_texts(r, &b, NULL, 0, &v, false);
    if (!rc)
        rc = rein__tools_ledger_begin(l, &v, index, &lerr);
    rein_buf_release(&b);
    if (rc == REIN_OK)
        return true;
    /* A call that cannot be recorded does not run: an unrecorded side effect is what the
     * ledger exists to prevent. */
    fail(r, ST_EXECUTE, REIN_CALL_INTERNAL, NULL, "the call could not be recorded: %s",
         lerr.msg[0] ? lerr.msg : rein_strerror(rc));
    return false;
}

static void ledger_end(rein_call_result *r, rein_ledger *l, size_t index)
{
    struct rein__tools_entry_view v = entry_view(r);
    char small[256];
    struct rein_buf b;
    rein_error lerr;
    rein_err rc;

    err_reset(&lerr);
    rein_buf_init(&b, 0);
    rc = ledger_texts(r, &b, small, sizeof(small), &v, true);
    if (rc)
        rein_error_set(&lerr, rc, "the result could not be written");
    else if (index == SIZE_MAX)
        rc = rein__tools_ledger_begin(l, &v, NULL,
                                      &lerr); /* refused before it could run: one entry */
    else
        rc = rein__tools_ledger_finish(l, index, r->status, v.result_json, v.result_len,
                                       r->response_wall_ms, r->latency_ns / 1000000, &lerr);
    if (rc)
        rein_log(REIN_LOG_ERROR, "tools/call", "ledger: call %s: %s", r->call_id, lerr.msg);
    rein_buf_release(&b);
}

/*
 * Wall-clock milliseconds for the monotonic time mono_ns. The ledger's times need only
 * milliseconds, and a clock read costs as much as validating small arguments, so the offset
 * between the two clocks is read at most once a second (a step of the wall clock shows within
 * a second). Races between threads refreshing it are benign: each writes a correct offset.
 */
static int64_t wall_ms_at(int64_t mono_ns)
{
    static _Atomic int64_t offset_ms, refreshed_ns;
    int64_t last = atomic_load_explicit(&refreshed_ns, memory_order_relaxed);

    if (last == 0 || mono_ns - last > 1000000000) {
        int64_t off = rein_wall_ms() - mono_ns / 1000000;
        atomic_store_explicit(&offset_ms, off, memory_order_relaxed);
        atomic_store_explicit(&refreshed_ns, mono_ns, memory_order_relaxed);
        return off + mono_ns / 1000000;
    }
    return atomic_load_explicit(&offset_ms, memory_order_relaxed) + mono_ns / 1000000;
}

/*
 * The attributes of an execute_tool span: the GenAI conventions' tool name, call id and type,
 * and rein's pipeline stages (the name as sent and its repair, preflight errors, the wait for
 * a policy or a person, the ledger status).
 */
static void span_attributes(struct rein_span *span, const rein_call_result *r)
{
    const char *name = rein_call_result_tool_name(r);
    const char *kind = r->tool ? rein_tool_runner_kind(r->tool) : NULL;
    char title[REIN_TOOL_NAME_MAX + 16];

    if (r->tool) {
        snprintf(title, sizeof(title), "execute_tool %s", r->tool->id);
        rein_span_set_name(span, title);
    }
    rein_span_set_str(span, "gen_ai.operation.name", "execute_tool");
    if (r->tool)
        rein_span_set_str(span, "gen_ai.tool.name", name);
    rein_span_set_strn(span, "gen_ai.tool.call.id", r->call_id, r->call_id_len);
    /* MCP tools are the conventions' "extension" (run by an outside agent), the rest run
     * here as functions. */
    rein_span_set_str(span, "gen_ai.tool.type",
                      kind && strcmp(kind, "mcp") == 0 ? "extension" : "function");
    if (r->sent)
        rein_span_set_strn(span, "rein.tool.sent_name", r->sent, r->sent_len);
    rein_span_set_str(span, "rein.call.status", rein_call_status_name(r->status));
    if (r->tool && r->repair != REIN_REPAIR_EXACT) {
        rein_span_event(span, "rein.repair");
        rein_span_event_str(span, "rein.repair.kind", rein_repair_name(r->repair));
        rein_span_event_str(span, "rein.repair.from", r->sent);
        rein_span_event_str(span, "rein.repair.to", r->tool->id);
    }
    if (r->code == REIN_CALL_INVALID_ARGUMENTS)
        rein_span_set_int(span, "rein.preflight.errors", (int64_t)json_array_size(r->details));
    if (r->policy_ns > 0)
        rein_span_set_double(span, "rein.policy.wait_ms", (double)r->policy_ns / 1e6);
    if (rein_trace_capture_content()) {
        if (r->args_text)
            rein_span_set_strn(span, "gen_ai.tool.call.arguments", r->args_text, r->args_len);
        char *out = r->output ? rein_json_dumps(r->output) : NULL;
        rein_span_set_str(span, "gen_ai.tool.call.result", out);
        rein_free(out);
    }
    if (r->code != REIN_CALL_OK)
        rein_span_fail(span, rein_call_code_name(r->code), r->message);
}

rein_err rein_call_run(const rein_registry *reg, const struct rein_call_input *in,
                       const struct rein_call_opts *opts, rein_call_result **out, rein_error *err)
{
    static const struct rein_call_opts no_opts;
    const struct rein_call_opts *o = opts ? opts : &no_opts;
    char call_id[REIN_ID_MAX], trace_id[REIN_TRACE_ID_LEN + 1];
    const char *cid = in ? in->call_id : NULL, *tid = in ? in->trace_id : NULL;
    const char *text = in ? in->args_text : NULL;
    size_t index = SIZE_MAX;
    int64_t start = rein_now_ns();
    struct rein_span span;
    rein_call_result *r;

    if (out)
        *out = NULL;
    if (!reg || !in || !out)
        return rein_error_set(err, REIN_EINVAL,
                              "rein_call_run needs a registry, a call and a "
                              "place for the result");
    if (!cid || !cid[0]) {
        rein_id_new("call_", call_id);
        cid = call_id;
    }
    if (!tid || !tid[0]) {
        rein_trace_id_new(trace_id);
        tid = trace_id;
    }
    size_t text_len = text ? in->args_len : 0;
    if (json_is_string(in->args) && !text) {
        text = json_string_value(in->args);
        text_len = json_string_length(in->args);
    }
    r = result_new(in, cid, tid, text, text_len);
    if (!r)
        return rein_error_set(err, REIN_ENOMEM, "out of memory starting a call");
    r->start_ns = start;
    r->call_wall_ms = wall_ms_at(start);
    r->check_only = o->check_only;
    /* Every call that may run is one "execute_tool" span, whichever path it came by; it is
     * the current context while the runner works, so a process or HTTP skill joins it. */
    if (!o->check_only)
        rein_span_start(&span, "execute_tool", REIN_SPAN_INTERNAL, tid);

    if (step_name(r, reg, in) && step_repair(r, reg, in, o->exact_name) &&
        step_parse(r, in, o->max_args_bytes ? o->max_args_bytes : DEFAULT_MAX_ARGS_BYTES) &&
        step_preflight(r) && !o->check_only && (!o->ledger || ledger_begin(r, o->ledger, &index)) &&
        step_policy(r, o, &span))
        step_execute(r, o);

    r->latency_ns = rein_now_ns() - start;
    /* One wall-clock reading per call: the response time is the call time plus the time it
     * took; the latency leaves out the policy step, where the call waited for a person. */
    r->response_wall_ms = r->call_wall_ms + r->latency_ns / 1000000;
    r->latency_ns -= r->policy_ns;
    step_done(r, ST_NORMALIZE, true);
    /* The result's invariants (the struct above), which every shape writer relies on. */
    assert(r->status == status_of(r->code));
    assert(!r->output || r->code == REIN_CALL_OK);
    if (o->ledger && !o->check_only)
        ledger_end(r, o->ledger, index);
    /* The caller's document is borrowed only until here (doc_lent still says the arguments
     * parsed). An invalid call's payload shows them as a value (receivedArgs): it gets a
     * document of the result's own copy of the text; a valid one keeps none. */
    if (r->doc_lent) {
        r->doc = r->code == REIN_CALL_OK ? NULL : rein_doc_parse(r->args_text, r->args_len, NULL);
        r->doc_lent = !r->doc;
    }
    if (!o->check_only) {
        if (rein_span_is_recording(&span))
            span_attributes(&span, r);
        rein_span_end(&span);
    }
    *out = r;
    return REIN_OK;
}

/* ---- accessors ---- */

bool rein_call_result_ok(const rein_call_result *r)
{
    return r->code == REIN_CALL_OK;
}

enum rein_call_code rein_call_result_code(const rein_call_result *r)
{
    return r->code;
}

enum rein_call_status rein_call_result_status(const rein_call_result *r)
{
    return r->status;
}

const char *rein_call_result_message(const rein_call_result *r)
{
    return r->message ? r->message : "";
}

const rein_tool *rein_call_result_tool(const rein_call_result *r)
{
    return r->tool;
}

const char *rein_call_result_tool_name(const rein_call_result *r)
{
    return r->tool ? r->tool->id : r->sent;
}

const char *rein_call_result_sent_name(const rein_call_result *r, size_t *len)
{
    if (len)
        *len = r->sent_len;
    return r->sent;
}

enum rein_repair rein_call_result_repair(const rein_call_result *r)
{
    return r->repair;
}

const char *rein_call_result_call_id(const rein_call_result *r)
{
    return r->call_id;
}

const char *rein_call_result_trace_id(const rein_call_result *r)
{
    return r->trace_id;
}

int64_t rein_call_result_latency_ms(const rein_call_result *r)
{
    return r->latency_ns / 1000000;
}

const json_t *rein_call_result_args(const rein_call_result *r)
{
    return call_args(r);
}

const char *rein_call_result_args_text(const rein_call_result *r, size_t *len)
{
    if (len)
        *len = r->args_len;
    return r->args_text;
}

const json_t *rein_call_result_output(const rein_call_result *r)
{
    return r->code == REIN_CALL_OK ? r->output : NULL;
}

const char *rein_call_result_log(const rein_call_result *r)
{
    return r->log;
}

/* ---- shapes ---- */

static void write_tool_name(const rein_call_result *r, struct rein_jw *w)
{
    if (r->tool)
        rein_jw_str(w, r->tool->id);
    else
        rein_jw_strn(w, r->sent, r->sent_len);
}

/*
 * The normalized result is written with few, large appends rather than one writer call per
 * token: it is the tool message of every call, on the agent's hot path. rein_jw_raw() of
 * nothing places the separator the writer's position needs and marks the value as written;
 * the object's text then goes straight into the writer's buffer, failures recorded in the
 * writer as its own calls would.
 */
static void emit(struct rein_jw *w, const char *s, size_t n)
{
    if (!w->err)
        w->err = rein_buf_add(w->buf, s, n);
}

#define EMIT(w, lit) emit((w), (lit), sizeof(lit) - 1)

static void emit_str(struct rein_jw *w, const char *s, size_t n)
{
    EMIT(w, "\"");
    if (!w->err)
        w->err = rein_json_escape(w->buf, s, n);
    EMIT(w, "\"");
}

static void emit_json(struct rein_jw *w, const json_t *v)
{
    struct rein_jw inner;

    if (w->err)
        return;
    if (json_is_string(v)) {
        emit_str(w, json_string_value(v), json_string_length(v));
        return;
    }
    rein_jw_init(&inner, w->buf);
    rein_jw_json(&inner, v);
    w->err = rein_jw_finish(&inner);
}

static void emit_int(struct rein_jw *w, int64_t v)
{
    char digits[24];
    size_t n = sizeof(digits);
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

    do {
        digits[--n] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        digits[--n] = '-';
    emit(w, digits + n, sizeof(digits) - n);
}

/* The error object {code, message, details}; details NULL is []. */
static void emit_error_of(struct rein_jw *w, enum rein_call_code c, const char *msg,
                          const json_t *details)
{
    const char *code = rein_call_code_name(c);

    EMIT(w, "{\"code\":");
    emit_str(w, code, strlen(code));
    EMIT(w, ",\"message\":");
    emit_str(w, msg, strlen(msg));
    EMIT(w, ",\"details\":");
    if (details)
        emit_json(w, details);
    else
        EMIT(w, "[]");
    EMIT(w, "}");
}

static void emit_error(struct rein_jw *w, const rein_call_result *r)
{
    emit_error_of(w, r->code, r->message ? r->message : "", r->details);
}

/*
 * The normalized result's members up to its output or error: {"ok":…,"tool":…,"call_id":…,
 * "trace_id":…, the one place that writes them (trace_id NULL is null).
 */
static void emit_head(struct rein_jw *w, bool ok, const char *tool, size_t tool_len,
                      const char *call_id, size_t call_id_len, const char *trace_id,
                      size_t trace_len)
{
    rein_jw_raw(w, "", 0);
    if (!w->err)
        w->err = rein_buf_grow(w->buf, 160 + tool_len + call_id_len + trace_len);
    if (ok)
        EMIT(w, "{\"ok\":true,\"tool\":");
    else
        EMIT(w, "{\"ok\":false,\"tool\":");
    emit_str(w, tool, tool_len);
    EMIT(w, ",\"call_id\":");
    emit_str(w, call_id, call_id_len);
    EMIT(w, ",\"trace_id\":");
    if (trace_id)
        emit_str(w, trace_id, trace_len);
    else
        EMIT(w, "null");
}

/* ,"meta":{"latency_ms":N} */
static void emit_meta(struct rein_jw *w, int64_t latency_ms)
{
    EMIT(w, ",\"meta\":{\"latency_ms\":");
    emit_int(w, latency_ms);
    EMIT(w, "}");
}

/* The ledger's result: the output, or the error object, as JSON text appended to b. */
static rein_err result_text(const rein_call_result *r, struct rein_buf *b)
{
    struct rein_jw w = {.buf = b};

    if (r->code != REIN_CALL_OK)
        emit_error(&w, r);
    else if (r->output)
        emit_json(&w, r->output);
    else
        EMIT(&w, "null");
    return w.err;
}

static void write_invalid(const rein_call_result *r, struct rein_jw *w);

void rein_call_result_write(const rein_call_result *r, struct rein_jw *w)
{
    const char *tool = r->tool ? r->tool->id : r->sent;
    size_t tool_len = r->tool ? r->tool->id_len : r->sent_len;

    emit_head(w, r->code == REIN_CALL_OK, tool, tool_len, r->call_id, r->call_id_len, r->trace_id,
              r->trace_id_len);
    if (r->code == REIN_CALL_OK) {
        EMIT(w, ",\"output\":");
        if (r->output)
            emit_json(w, r->output);
        else
            EMIT(w, "null");
    } else {
        EMIT(w, ",\"error\":");
        emit_error(w, r);
    }
    emit_meta(w, r->latency_ns / 1000000);
    if (r->status == REIN_CALL_INVALID && !w->err) {
        /* What the model was told, next to the result: one shape for every path. */
        struct rein_jw inner;
        EMIT(w, ",\"invalid_payload\":");
        rein_jw_init(&inner, w->buf);
        write_invalid(r, &inner);
        w->err = rein_jw_finish(&inner);
    }
    EMIT(w, "}");
}

void rein_call_result_write_error(struct rein_jw *w, const char *tool, const char *call_id,
                                  const char *trace_id, enum rein_call_code code,
                                  const char *message)
{
    assert(status_of(code) == REIN_CALL_ERROR);
    if (!tool)
        tool = "";
    if (!call_id)
        call_id = "";
    emit_head(w, false, tool, strlen(tool), call_id, strlen(call_id), trace_id,
              trace_id ? strlen(trace_id) : 0);
    EMIT(w, ",\"error\":");
    emit_error_of(w, code, message ? message : "", NULL);
    emit_meta(w, 0);
    EMIT(w, "}");
}

static const char *payload_prefix(enum rein_call_code code)
{
    switch (code) {
    case REIN_CALL_INVALID_NAME:
        return "Invalid tool name: ";
    case REIN_CALL_UNKNOWN_TOOL:
        return "Unknown tool: ";
    case REIN_CALL_DENIED:
        return "Denied: ";
    default:
        return "Invalid arguments: ";
    }
}

/* The message without the lower-case lead fail() gave it ("unknown tool: "). */
static const char *payload_message(const rein_call_result *r)
{
    const char *m = r->message ? r->message : "";
    static const char *const leads[] = {"invalid tool name: ", "unknown tool: "};

    for (size_t i = 0; i < REIN_ARRAY_SIZE(leads); i++) {
        size_t n = strlen(leads[i]);
        if (strncmp(m, leads[i], n) == 0)
            return m + n;
    }
    return m;
}

/* The invalid payload (docs/DESIGN.md), plus available_tools when the name was the problem. */
static void write_invalid(const rein_call_result *r, struct rein_jw *w)
{
    struct rein_buf text;
    bool name_problem = r->code == REIN_CALL_INVALID_NAME || r->code == REIN_CALL_UNKNOWN_TOOL;

    rein_buf_init(&text, 2 * MAX_MESSAGE_BYTES);
    rein_jw_obj_begin(w);
    rein_jw_key(w, "tool");
    write_tool_name(r, w);
    rein_jw_key(w, "error");
    if (rein_buf_adds(&text, payload_prefix(r->code)) || rein_buf_adds(&text, payload_message(r)))
        rein_jw_str(w, payload_message(r));
    else
        rein_jw_strn(w, text.ptr, text.len);
    rein_jw_key(w, "errors");
    if (r->details)
        rein_jw_json(w, r->details);
    else {
        rein_jw_arr_begin(w);
        rein_jw_arr_end(w);
    }
    rein_jw_key(w, "receivedArgs");
    if (call_args(r))
        rein_jw_json(w, call_args(r));
    else if (r->args_text)
        rein_jw_strn(w, r->args_text, r->args_len);
    else {
        rein_jw_obj_begin(w);
        rein_jw_obj_end(w);
    }
    rein_jw_key(w, "expected");
    if (r->tool)
        rein_jw_json(w, r->tool->parameters);
    else
        rein_jw_null(w);
    if (name_problem && r->available) {
        rein_jw_key(w, "available_tools");
        rein_jw_json(w, r->available);
    }
    rein_jw_key(w, "hint");
    rein_buf_reset(&text);
    if (name_problem)
        rein__tools_ignore(
            rein_buf_adds(&text, "Call one of the available_tools by its exact name."));
    else if (r->code == REIN_CALL_DENIED)
        rein__tools_ignore(
            rein_buf_addf(&text,
                          "Do not repeat this call to %s unchanged; choose a different "
                          "action or ask the user.",
                          r->tool ? r->tool->id : "the tool"));
    else
        rein__tools_ignore(rein_buf_addf(&text, "Fix the arguments and call %s again.",
                                         r->tool ? r->tool->id : "the tool"));
    rein_jw_strn(w, text.ptr, text.len);
    rein_jw_obj_end(w);
    rein_buf_release(&text);
}

void rein_call_result_write_for_model(const rein_call_result *r, struct rein_jw *w)
{
    if (r->status == REIN_CALL_INVALID)
        write_invalid(r, w);
    else
        rein_call_result_write(r, w);
}

/* Writes a shape with fn and parses it back into a cached tree. */
static const json_t *cached(json_t **slot, const rein_call_result *r,
                            void (*fn)(const rein_call_result *r, struct rein_jw *w))
{
    struct rein_buf b;
    struct rein_jw w;

    json_t *have = *slot;

    if (have)
        return have;
    rein_buf_init(&b, 0);
    rein_jw_init(&w, &b);
    fn(r, &w);
    if (rein_jw_finish(&w) == REIN_OK)
        *slot = rein_json_parse(b.ptr, b.len, 0, NULL);
    rein_buf_release(&b);
    return *slot;
}

static void write_ledger(const rein_call_result *r, struct rein_jw *w)
{
    struct rein__tools_entry_view v = entry_view(r);
    char small[256];
    struct rein_buf b;

    rein_buf_init(&b, 0);
    if (ledger_texts(r, &b, small, sizeof(small), &v, !r->check_only) == REIN_OK)
        rein__tools_entry_write(w, &v);
    else if (!w->err)
        w->err = REIN_ENOMEM;
    rein_buf_release(&b);
}

static void write_steps(const rein_call_result *r, struct rein_jw *w)
{
    rein_jw_arr_begin(w);
    for (size_t i = 0; i < r->nsteps; i++) {
        enum stage st = (enum stage)r->steps[i].stage;
        rein_jw_obj_begin(w);
        rein_jw_key(w, "step");
        rein_jw_str(w, stage_names[st]);
        rein_jw_key(w, "ok");
        rein_jw_bool(w, r->steps[i].ok);
        if (!r->steps[i].ok) {
            rein_jw_key(w, "code");
            rein_jw_str(w, rein_call_code_name(r->code));
        }
        if (st == ST_REPAIR && r->steps[i].ok) {
            rein_jw_key(w, "how");
            rein_jw_str(w, rein_repair_name(r->repair));
            rein_jw_key(w, "from");
            rein_jw_strn(w, r->sent, r->sent_len);
            rein_jw_key(w, "to");
            rein_jw_str(w, r->tool->id);
        }
        if (st == ST_PREFLIGHT && r->steps[i].ok && r->tool->has_defaults) {
            rein_jw_key(w, "defaults_filled");
            rein_jw_bool(w, true);
        }
        if (st == ST_EXECUTE) {
            rein_jw_key(w, "runner");
            rein_jw_str(w, r->tool->kind->name);
        }
        rein_jw_obj_end(w);
    }
    rein_jw_arr_end(w);
}

const json_t *rein_call_result_json(rein_call_result *r)
{
    return cached(&r->j_result, r, rein_call_result_write);
}

const json_t *rein_call_result_invalid_json(rein_call_result *r)
{
    if (r->status != REIN_CALL_INVALID)
        return NULL;
    return cached(&r->j_invalid, r, write_invalid);
}

const json_t *rein_call_result_model_json(rein_call_result *r)
{
    return r->status == REIN_CALL_INVALID ? rein_call_result_invalid_json(r)
                                          : rein_call_result_json(r);
}

const json_t *rein_call_result_ledger_json(rein_call_result *r)
{
    return cached(&r->j_ledger, r, write_ledger);
}

const json_t *rein_call_result_steps_json(rein_call_result *r)
{
    return cached(&r->j_steps, r, write_steps);
}
