/*
 * Ends one instance form's macros (vi_tree.h, vi_doc.h), so that the next inclusion can define
 * its own. No include guard: included once per switch.
 */
#undef VI
#undef VI_TYPE
#undef VI_REAL
#undef VI_STR
#undef VI_LEN
#undef VI_OSIZE
#undef VI_ASIZE
#undef VI_MEMBERS
#undef VI_MEMBER
#undef VI_ITEMS
#undef VI_ITEM
#undef VI_IVAL
