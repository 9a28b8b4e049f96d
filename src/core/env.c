/*
 * ${VAR} expansion for values written in manifests and configuration files (HTTP headers,
 * process environments, MCP server settings): the file names the variable, rein's environment
 * holds the secret.
 */
#include "core/internal.h"

#include <rein/buf.h>

#include <stdlib.h>
#include <string.h>

char *rein__expand_env(const char *prefix, const char *value)
{
    struct rein_buf b;

    rein_buf_init(&b, 64 << 10);
    if (rein_buf_adds(&b, prefix))
        goto fail;
    for (const char *p = value; *p;) {
        const char *close = p[0] == '$' && p[1] == '{' ? strchr(p + 2, '}') : NULL;
        if (close) {
            char var[256];
            size_t n = (size_t)(close - p - 2);
            const char *v = NULL;
            if (n < sizeof(var)) {
                memcpy(var, p + 2, n);
                var[n] = '\0';
                v = getenv(var);
            }
            if (v && rein_buf_adds(&b, v))
                goto fail;
            p = close + 1;
        } else if (rein_buf_addch(&b, *p++)) {
            goto fail;
        }
    }
    return rein_buf_detach(&b, NULL);
fail:
    rein_buf_release(&b);
    return NULL;
}
