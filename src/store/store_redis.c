/*
 * The Redis store backend (placeholder while the SQLite backend is brought up).
 */
#include "store/store_int.h"

rein_err rein__store_redis_open(rein_store *s, const char *url, rein_error *err)
{
    (void)s;
    return rein_error_set(err, REIN_ENOTSUP, "redis store: not built (%s)", url);
}
