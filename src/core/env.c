/*
 * ${VAR} expansion for values written in manifests and configuration files (HTTP headers,
 * process environments, MCP server settings): the file names the variable, rein's environment
 * holds the secret.
 */
#include "core/internal.h"

#include <rein/buf.h>

#include <stdlib.h>
#include <string.h>

rein_err rein__expand_env_checked(const char *prefix, const char *value, rein__env_check check,
                                  void *ud, char **out, rein_error *err)
{
    struct rein_buf b;

    *out = NULL;
    rein_buf_init(&b, 64 << 10);
    if (rein_buf_adds(&b, prefix))
        goto nomem;
    for (const char *p = value; *p;) {
        const char *close = p[0] == '$' && p[1] == '{' ? strchr(p + 2, '}') : NULL;
        if (close) {
            char var[256];
            size_t n = (size_t)(close - p - 2);
            const char *v = NULL;
            rein_err rc = check ? check(p + 2, n, ud, err) : REIN_OK;
            if (rc != REIN_OK) {
                rein_buf_release(&b);
                return rc;
            }
            if (n < sizeof(var)) {
                memcpy(var, p + 2, n);
                var[n] = '\0';
                v = getenv(var);
            }
            if (v && rein_buf_adds(&b, v))
                goto nomem;
            p = close + 1;
        } else if (rein_buf_addch(&b, *p++)) {
            goto nomem;
        }
    }
    *out = rein_buf_detach(&b, NULL);
    return REIN_OK;
nomem:
    rein_buf_release(&b);
    return rein_error_set(err, REIN_ENOMEM, "out of memory expanding ${...}");
}

char *rein__expand_env(const char *prefix, const char *value)
{
    char *out;

    return rein__expand_env_checked(prefix, value, NULL, NULL, &out, NULL) == REIN_OK ? out : NULL;
}
