/*
 * rein/schema.h: a JSON Schema validator (2020-12 and draft-07).
 *
 * A schema is compiled once and validates many instances. Compiling resolves every $ref,
 * checks every keyword and precompiles every pattern, so validation does no parsing and
 * allocates nothing beyond the error list in the caller's rein_schema_result (exceptions, all
 * bounded: a property-name string for "propertyNames", a sort buffer for "uniqueItems" on
 * arrays longer than 32 items, a pattern's match data when no result is passed and more
 * than four threads validate with the same schema at once, and values copied by
 * REIN_SCHEMA_FILL_DEFAULTS).
 *
 * Dialects: 2020-12 (the default) and draft-07, chosen by $schema; draft-06 and draft-04 are
 * read as draft-07 (draft-04's boolean exclusiveMinimum/exclusiveMaximum included), 2019-09
 * well enough for references into it. Patterns follow ECMA-262 (run by PCRE2 in UTF mode).
 * "format" is an annotation unless format_assert is set (or the format-assertion vocabulary
 * is in use). Nothing is fetched: $refs to other documents need rein_schema_registry_add();
 * the draft-07 and 2020-12 metaschemas are built in.
 *
 * Errors name the instance location (JSON Pointer), the keyword location and a message in
 * plain words naming what was expected and what was received, e.g.
 *   /limit: must be integer, got string "20"
 *   /: required property "query" is missing
 * These messages are what a model reads when it has to fix its arguments.
 *
 * Threading: a compiled rein_schema is immutable and may validate on many threads at once.
 * A rein_schema_result and a rein_schema_registry belong to one thread at a time (a registry
 * may be shared read-only once compiling is done).
 */
#ifndef REIN_SCHEMA_H
#define REIN_SCHEMA_H

#include <rein/doc.h>
#include <rein/json.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_schema rein_schema;
typedef struct rein_schema_registry rein_schema_registry;
typedef struct rein_schema_result rein_schema_result;

enum rein_schema_dialect {
    REIN_SCHEMA_DIALECT_DEFAULT = 0, /* from $schema; 2020-12 when absent */
    REIN_SCHEMA_DIALECT_2020_12 = 1,
    REIN_SCHEMA_DIALECT_DRAFT7 = 2,
    REIN_SCHEMA_DIALECT_2019_09 = 3, /* items/additionalItems arrays; $recursiveRef read as $ref */
};

struct rein_schema_options {
    /* Used when the schema has no $schema; $schema, when present, wins. */
    enum rein_schema_dialect dialect;
    /* Treat "format" as an assertion (date-time, date, time, email, hostname, ipv4, ipv6,
     * uri, uuid, regex, …) instead of an annotation. */
    bool format_assert;
    /* Documents that remote $refs may resolve to; borrowed, must outlive the schema. */
    const rein_schema_registry *registry;
    /* Base URI of the schema when it has no $id (for resolving relative refs); borrowed. */
    const char *base_uri;
};

/* A set of schema documents known by URI, for $refs that leave the document. */
REIN_EXTERN rein_schema_registry *rein_schema_registry_new(void);
REIN_EXTERN void rein_schema_registry_free(rein_schema_registry *reg);
/*
 * Registers doc (borrowed; the registry takes its own reference) under uri (copied). Any $id
 * inside doc is registered too. REIN_EEXIST when uri is taken.
 */
REIN_EXTERN rein_err rein_schema_registry_add(rein_schema_registry *reg, const char *uri,
                                              json_t *doc, rein_error *err) REIN_WUR;

/*
 * Compiles schema (borrowed; the compiled schema keeps what it needs). opts may be NULL.
 * Returns a new schema, or NULL with err set: REIN_ESCHEMA with the JSON Pointer of the bad
 * keyword in the message (e.g. `/properties/limit/minimum: must be a number`; also an invalid
 * pattern, an unknown $schema, or a schema that reaches itself through $ref/allOf alone),
 * REIN_ENOTFOUND for a $ref that cannot be resolved (remote documents are never fetched),
 * REIN_EDEPTH for nesting beyond the limit (512 levels), REIN_ENOMEM.
 */
REIN_EXTERN rein_schema *rein_schema_compile(json_t *schema, const struct rein_schema_options *opts,
                                             rein_error *err);
REIN_EXTERN void rein_schema_free(rein_schema *schema);
/* The dialect the schema was compiled as. */
REIN_EXTERN enum rein_schema_dialect rein_schema_dialect_of(const rein_schema *schema);

/* The error list of one validation; reusable across validations (it keeps its memory). */
REIN_EXTERN rein_schema_result *rein_schema_result_new(void);
REIN_EXTERN void rein_schema_result_free(rein_schema_result *res);
REIN_EXTERN size_t rein_schema_result_count(const rein_schema_result *res);
/*
 * Parts of error i (i < count). All returned strings are borrowed from res and valid until
 * the next validation with res or rein_schema_result_free().
 *  instance_path: JSON Pointer into the instance ("" is the root; shown as "/" in messages)
 *  keyword_path:  JSON Pointer into the schema of the failing keyword ("/properties/limit/type")
 *  keyword:       the keyword's name ("type", "required", …)
 *  message:       the plain-words message without the location ("must be integer, got string
 *                 \"20\"")
 *  property:      for "required" and "dependentRequired", the missing property; else NULL
 */
REIN_EXTERN const char *rein_schema_result_instance_path(const rein_schema_result *res, size_t i);
REIN_EXTERN const char *rein_schema_result_keyword_path(const rein_schema_result *res, size_t i);
REIN_EXTERN const char *rein_schema_result_keyword(const rein_schema_result *res, size_t i);
REIN_EXTERN const char *rein_schema_result_message(const rein_schema_result *res, size_t i);
REIN_EXTERN const char *rein_schema_result_property(const rein_schema_result *res, size_t i);

enum rein_schema_validate_flags {
    /* Stop at the first error (faster when only valid/invalid matters). */
    REIN_SCHEMA_FIRST_ERROR = 1u << 0,
    /* Add "default" values of absent optional properties to the instance (which is modified;
     * only when the whole instance is valid). */
    REIN_SCHEMA_FILL_DEFAULTS = 1u << 1,
};

/*
 * Validates instance (borrowed; modified only with REIN_SCHEMA_FILL_DEFAULTS). res (may be
 * NULL) receives the errors, replacing what it held (at most 200 are kept). Returns REIN_OK
 * when valid, REIN_EINVALID when not, or another negative code when validation itself failed,
 * with err set and res emptied: REIN_EDEPTH for nesting beyond the limit, REIN_ESCHEMA for a
 * reference cycle that makes no progress (e.g. through anyOf), REIN_ETOOBIG for a pattern
 * that needs too much backtracking, REIN_EINVAL for a string that is not UTF-8 (only possible
 * for values built in code), REIN_ENOMEM.
 */
REIN_EXTERN rein_err rein_schema_validate(const rein_schema *schema, json_t *instance,
                                          unsigned flags, rein_schema_result *res,
                                          rein_error *err) REIN_WUR;
/*
 * Validates a parsed document (borrowed; rein/doc.h) without making it a jansson tree: the
 * answer, the errors in res, their messages and err are exactly those of rein_schema_validate
 * on rein_doc_tree(doc). The errors are recorded on the document's nodes; a keyword the
 * compact program leaves to the general validator gets a temporary tree of just the value it
 * applies to. A schema the program cannot check at all (its root uses such a keyword), a
 * document that holds a jansson tree (rein/doc.h), or a validation nested too deep is
 * validated as rein_doc_tree(doc) (made once and kept by the document).
 * REIN_SCHEMA_FILL_DEFAULTS is refused (REIN_EINVAL): a document does not change; fill
 * defaults into a copy of its tree.
 */
REIN_EXTERN rein_err rein_schema_validate_doc(const rein_schema *schema, const rein_doc *doc,
                                              unsigned flags, rein_schema_result *res,
                                              rein_error *err) REIN_WUR;

#ifdef __cplusplus
}
#endif
#endif /* REIN_SCHEMA_H */
