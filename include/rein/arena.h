/*
 * rein/arena.h: memory for one request or one agent turn, released all at once.
 *
 * Allocations come from blocks that are freed together by rein_arena_free(); cleanup
 * callbacks registered on the arena run first, in reverse order, for resources that are not
 * memory (nginx pools work this way).
 *
 * Threading: one arena, one thread at a time.
 */
#ifndef REIN_ARENA_H
#define REIN_ARENA_H

#include <rein/core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rein_arena rein_arena;

/* New arena whose blocks hold block_size bytes (0: 16 KiB). NULL when memory is exhausted. */
REIN_EXTERN rein_arena *rein_arena_new(size_t block_size);
/* Runs the cleanups, then frees every block. NULL is a no-op. */
REIN_EXTERN void rein_arena_free(rein_arena *a);
/* Memory aligned for any type, owned by the arena; NULL when memory is exhausted. */
REIN_EXTERN void *rein_arena_alloc(rein_arena *a, size_t size);
/* Zeroed n * size bytes; NULL on overflow or exhaustion. */
REIN_EXTERN void *rein_arena_calloc(rein_arena *a, size_t n, size_t size);
/* Copies owned by the arena. s may be NULL (returns NULL). */
REIN_EXTERN char *rein_arena_strdup(rein_arena *a, const char *s);
REIN_EXTERN char *rein_arena_strndup(rein_arena *a, const char *s, size_t len);
REIN_EXTERN char *rein_arena_printf(rein_arena *a, const char *fmt, ...) REIN_PRINTF(2, 3);
/* fn(data) runs when the arena is freed. data is borrowed until then. */
REIN_EXTERN rein_err rein_arena_on_free(rein_arena *a, void (*fn)(void *data), void *data) REIN_WUR;
/* Bytes handed out so far (for tests and metrics). */
REIN_EXTERN size_t rein_arena_used(const rein_arena *a);

#ifdef __cplusplus
}
#endif
#endif /* REIN_ARENA_H */
