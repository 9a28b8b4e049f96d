/*
 * Fuzz target for the answers of the credential sources the providers ask (untrusted bytes
 * from a local process or an HTTP endpoint): AWS credentials as credential_process, the
 * container endpoint and the instance metadata print them (src/providers/awscreds.c), and,
 * for an input starting with 'G', the rest as a Google token endpoint's answer
 * (src/providers/gcpcreds.c), or with 'S', STS's XML answer to AssumeRoleWithWebIdentity. What parses has its keys or token, non-empty and on one line;
 * what does not leaves nothing behind; nothing may crash or read out of bounds.
 */
#include "providers/provider_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rein__aws_creds c;
    rein_error err;

    if (size > 0 && data[0] == 'G') {
        char *token;
        int64_t exp;
        if (rein__gcp_token_parse((const char *)data + 1, size - 1, &token, &exp, &err) ==
            REIN_OK) {
            if (!token || !token[0] || strpbrk(token, "\r\n") || exp <= 0)
                abort();
            rein_free(token);
        } else if (token || !err.msg[0]) {
            abort();
        }
        return 0;
    }
    if ((size > 0 && data[0] == 'S'
             ? rein__aws_sts_parse((const char *)data + 1, size - 1, &c, &err)
             : rein__aws_creds_parse((const char *)data, size, &c, &err)) == REIN_OK) {
        if (!c.key_id || !c.key_id[0] || !c.secret || !c.secret[0] || c.expires_ms < 0)
            abort();
        rein__aws_creds_release(&c);
    } else if (c.key_id || c.secret || c.token || !err.msg[0]) {
        abort();
    }
    return 0;
}
