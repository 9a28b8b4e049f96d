/*
 * Reading an object's members without a call per field (rein__members_next in schema_int.h).
 *
 * jansson hands out members through four calls each (key, key length, value, next), which
 * cost more than checking a typed property. It keeps each member as one record with the key
 * inline and hands out an iterator pointing into that record. rein__members_init looks, once,
 * at the records of a three-member object of its own and takes the offsets of the key, the
 * key length, the value and the next member only when each is the same in every record and
 * the only word that fits; any other layout (another jansson) leaves the layout unused and the
 * functions are called as documented. Only offsets inside a record before its key are read.
 */
#include "schema/schema_int.h"

#include <pthread.h>
#include <string.h>

struct rein__mlayout rein__mlayout;
static pthread_once_t layout_once = PTHREAD_ONCE_INIT;

static uintptr_t word_at(const void *rec, size_t off)
{
    uintptr_t w;

    memcpy(&w, (const char *)rec + off, sizeof(w));
    return w;
}

/* The one word offset below limit at which records 0..n-1 hold want[], or SIZE_MAX. */
static size_t find_offset(void *const *recs, const uintptr_t *want, size_t n, size_t limit)
{
    size_t found = SIZE_MAX;

    for (size_t off = 0; off + sizeof(uintptr_t) <= limit; off += sizeof(uintptr_t)) {
        size_t k = 0;
        while (k < n && word_at(recs[k], off) == want[k])
            k++;
        if (k < n)
            continue;
        if (found != SIZE_MAX)
            return SIZE_MAX; /* two candidates: do not guess */
        found = off;
    }
    return found;
}

/*
 * True when the list head at l->end inside an object is where the members of two more objects
 * (one member, none) end and begin. The head is read only once another object's member has
 * pointed at it, so it is known to be inside the object.
 */
static bool end_agrees(const struct rein__mlayout *l)
{
    json_t *one = json_object(), *none = json_object();
    void *it =
        one && !json_object_set_new_nocheck(one, "x", json_null()) ? json_object_iter(one) : NULL;
    bool ok = it && none && word_at(it, l->next) == (uintptr_t)one + l->end &&
              word_at(one, l->end + l->next) == (uintptr_t)it &&
              word_at(none, l->end + l->next) == (uintptr_t)none + l->end;

    json_decref(one);
    json_decref(none);
    return ok;
}

static void probe(void)
{
    static const char *const keys[] = {"a", "probe\0key", "the third member"};
    static const size_t lens[] = {1, 9, 16};
    json_t *obj = json_object();
    void *recs[3], *it;
    uintptr_t vals[3], sizes[3], nexts[2];
    struct rein__mlayout l = {0};

    for (size_t i = 0; obj && i < 3; i++) {
        if (json_object_setn_new_nocheck(obj, keys[i], lens[i], json_integer((json_int_t)i)))
            goto out;
    }
    it = obj ? json_object_iter(obj) : NULL;
    for (size_t i = 0; i < 3; i++) {
        const char *key = it ? json_object_iter_key(it) : NULL;
        /* As integers: the key may not be in the record at all (another layout). */
        uintptr_t off = (uintptr_t)key - (uintptr_t)it;
        if (!key || json_object_iter_key_len(it) != lens[i] || memcmp(key, keys[i], lens[i]) != 0 ||
            off == 0 || off > 256 || (i > 0 && off != l.key))
            goto out;
        l.key = off;
        recs[i] = it;
        vals[i] = (uintptr_t)json_object_iter_value(it);
        sizes[i] = lens[i];
        it = json_object_iter_next(obj, it);
        if (i < 2)
            nexts[i] = (uintptr_t)it;
    }
    l.value = find_offset(recs, vals, 3, l.key);
    l.key_len = find_offset(recs, sizes, 3, l.key);
    l.next = find_offset(recs, nexts, 2, l.key);
    if (it || l.value == SIZE_MAX || l.key_len == SIZE_MAX || l.next == SIZE_MAX)
        goto out;
    /* The last member's successor is the list head inside the object. */
    l.end = word_at(recs[2], l.next) - (uintptr_t)obj;
    l.direct = l.end >= sizeof(json_t) && l.end <= 256 && end_agrees(&l);
    rein__mlayout = l;
out:
    json_decref(obj);
}

void rein__members_init(void)
{
    pthread_once(&layout_once, probe);
}
