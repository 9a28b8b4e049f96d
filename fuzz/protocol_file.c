/*
 * Fuzz target for protocol files (src/verify/doc.c, config.c): the same bytes are read as
 * YAML and as JSON, through libyaml, jansson and jsmn into the position-tracking tree and
 * then validated into a config. Any input must give a config or an error with a message,
 * never a crash, a leak or a hang (aliases are shared, not expanded).
 */
#include <rein/verify.h>

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"rein-verify.yaml", "rein-verify.json"};

    for (size_t i = 0; i < 2; i++) {
        rein_error err;
        rein_verify_config *cfg =
            rein_verify_config_parse((const char *)data, size, names[i], &err);
        if (cfg) {
            size_t n = rein_verify_config_protocol_count(cfg);
            for (size_t k = 0; k < n; k++)
                (void)rein_verify_config_has_protocol(cfg,
                                                      rein_verify_config_protocol_name(cfg, k));
            rein_verify_config_free(cfg);
        } else if (err.msg[0] == '\0') {
            __builtin_trap(); /* a failure must always say why */
        }
    }
    return 0;
}
