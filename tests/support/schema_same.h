/*
 * Compares the errors rein_schema_validate records (along the verdict program, decision 0051)
 * with the node walker's (rein__schema_walk), for the schema tests.
 */
#ifndef REIN_TEST_SCHEMA_SAME_H
#define REIN_TEST_SCHEMA_SAME_H

#include <rein/rein.h>

#include <stdbool.h>
#include <stddef.h>

/*
 * Validates inst (borrowed) with flags both ways, each with a result and a rein_error. True
 * when the codes, the rein_error messages of an invalid instance, and every error's instance
 * path, keyword path, keyword, property and message are the same; otherwise false with what
 * differs in why (why_size bytes, NUL-terminated).
 */
bool test_schema_same_errors(const rein_schema *schema, json_t *inst, unsigned flags, char *why,
                             size_t why_size);

/*
 * inst (borrowed) written out as text and parsed into a rein_doc (rein/doc.h), then validated
 * with rein_schema_validate_doc and flags, with a result and a rein_error, with a rein_error
 * only, and with neither: true when each gives what the node walker (with a result) or
 * rein_schema_validate (without) gives on inst (codes, the rein_error message, every part of
 * every error) and the document's tree equals inst; otherwise false with what differs in why.
 */
bool test_schema_same_doc(const rein_schema *schema, json_t *inst, unsigned flags, char *why,
                          size_t why_size);

#endif
