/*
 * Fuzz target: the log line parsers of log_transform (src/skills/logparse.c). The first byte
 * picks the format (auto, json, logfmt, syslog, apache, plain); the rest is the line. A record,
 * when there is one, always has a format, an object of fields and a normalised level.
 */
#include <rein/rein.h>

#include "skills/skills_int.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool oom = false;
    json_t *rec;

    if (size < 1 || size > 65536)
        return 0;
    rec = rein__skills_log_parse_line(
        (enum rein__skills_log_format)(data[0] % REIN__SKILLS_LOG_COUNT), (const char *)data + 1,
        size - 1, &oom);
    if (rec) {
        json_t *level = json_object_get(rec, "level");
        if (!json_is_string(json_object_get(rec, "format")) ||
            !json_is_object(json_object_get(rec, "fields")) ||
            (level && rein__skills_log_level_rank(json_string_value(level)) < 0))
            abort();
        json_decref(rec);
    }
    return 0;
}
