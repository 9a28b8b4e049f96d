/*
 * rein/cancel.h: cancellation handles shared by a turn, its provider request and its tools.
 *
 * A handle is triggered once, with a reason; after that it stays triggered. Code that blocks
 * polls rein_cancel_fd() next to its own descriptors; code that cannot poll registers a
 * callback (curl transfers, child processes). A child handle is triggered when its parent is,
 * so a turn's cancel reaches every call it started, while a call's own timeout stays local.
 *
 * Threading: all functions may be called from any thread. Callbacks run on the thread that
 * triggers the handle, and never while rein_cancel_off() for that callback is returning.
 */
#ifndef REIN_CANCEL_H
#define REIN_CANCEL_H

#include <rein/core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_cancel rein_cancel;
typedef void (*rein_cancel_fn)(void *userdata);

/* New handle with one reference; NULL when memory is exhausted. */
REIN_EXTERN rein_cancel *rein_cancel_new(void);
/*
 * New handle that is triggered when parent (borrowed; may be NULL) is. The child keeps a
 * reference to the parent until it is freed.
 */
REIN_EXTERN rein_cancel *rein_cancel_new_child(rein_cancel *parent);
/* Adds a reference; returns c. */
REIN_EXTERN rein_cancel *rein_cancel_ref(rein_cancel *c);
/* Drops a reference; the last one frees. NULL is a no-op. */
REIN_EXTERN void rein_cancel_unref(rein_cancel *c);
/* Triggers c with reason (copied; may be NULL). Later calls do nothing. */
REIN_EXTERN void rein_cancel_trigger(rein_cancel *c, const char *reason);
/* c may be NULL (never triggered). */
REIN_EXTERN bool rein_cancel_is_set(const rein_cancel *c);
/* The reason given to the first trigger ("cancelled" when none); borrowed, valid while c is. */
REIN_EXTERN const char *rein_cancel_reason(const rein_cancel *c);
/* A descriptor that becomes readable once c is triggered; owned by c, made on the first call.
 * -1 when c is NULL or no descriptor can be made (then poll with a short timeout and look at
 * rein_cancel_is_set()). */
REIN_EXTERN int rein_cancel_fd(const rein_cancel *c);
/*
 * Registers fn(userdata); it runs once when c is triggered, or at once (on this thread) when
 * c already is. Returns an id > 0 for rein_cancel_off(), or a negative REIN_E* code.
 */
REIN_EXTERN int rein_cancel_on(rein_cancel *c, rein_cancel_fn fn, void *userdata) REIN_WUR;
/* Unregisters a callback; after return it will not run and is not running. */
REIN_EXTERN void rein_cancel_off(rein_cancel *c, int id);
/*
 * Waits until c is triggered or timeout_ms passes (negative: forever). Returns true when
 * triggered. c may be NULL (just sleeps).
 */
REIN_EXTERN bool rein_cancel_wait(rein_cancel *c, int64_t timeout_ms);

#ifdef __cplusplus
}
#endif
#endif /* REIN_CANCEL_H */
