/*
 * The instance-form macros for jansson values, read by the texts compiled once per form
 * (verdict_run.h, record_run.h; see verdict_run.h for what each macro reads). Included right
 * before such a text; vi_doc.h defines the same names for rein_doc nodes. No include guard:
 * each inclusion switches the form.
 */
#include "schema/vi_undef.h"

#define VI          json_t *
#define VI_TYPE(v)  json_typeof(v)
#define VI_REAL(v)  json_real_value(v)
#define VI_STR(v)   json_string_value(v)
#define VI_LEN(v)   json_string_length(v)
#define VI_OSIZE(v) json_object_size(v)
#define VI_ASIZE(v) json_array_size(v)
#define VI_MEMBERS(v)                                                                              \
    struct rein__members m_;                                                                       \
    rein__members_start(&m_, v)
#define VI_MEMBER(k, n, val) rein__members_next(&m_, &(k), &(n), &(val))
#define VI_ITEMS(v)          size_t i_ = 0
#define VI_ITEM()            json_array_get(v, i_++)
#define VI_IVAL(iv, v)       rein__ival_of(iv, v)
