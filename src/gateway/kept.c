/*
 * The responses the gateway keeps for the Responses wire (decision 0090): a request with store
 * true (the API's default) leaves its input items and its output items here, so that a later
 * request of the same client can continue it by previous_response_id, or name one of its
 * items by item_reference, as the Vercel AI SDK's OpenAI provider does from its second step
 * on. The client can also read a kept response again, list its input and delete it
 * (GET and DELETE /v1/responses/{id}).
 *
 * Kept in memory, bounded in bytes and in age: a response is forgotten once it has not been
 * used for keep_ms, and the least recently used ones go first when the bytes would pass the
 * bound (a client's own first once it holds more than half). A client is known by a hash of the
 * key it presented; another key's responses are not found. Entries are immutable once kept; what a request takes out of them is a copy.
 *
 * The maps are jansson objects (their hash tables keep insertion order, which is the order of
 * use here: a response used again is put back at the end):
 *   responses  "owner:resp_id" -> {"prev": "owner:resp_id" or null, "input": [...],
 *              "response": the response object as answered (its "output" the items),
 *              "at": ms of last use, "bytes": n}
 *   items      "owner:item_id" -> the item (the same value as in its response's arrays)
 *   owners     "owner" -> the bytes its responses hold
 */
#include "gateway/gateway_int.h"

#include "core/internal.h"

#include <string.h>

/* The longest chain of previous_response_id a request may continue, in responses and in the
 * bytes it puts before the request's input (a small request must not make a huge one). */
#define MAX_CHAIN       1000
#define MAX_CHAIN_BYTES (16 * 1024 * 1024)

rein_err rein__gw_kept_init(struct rein__gw_kept *k, int64_t max_bytes, int64_t keep_ms)
{
    memset(k, 0, sizeof(*k));
    k->max_bytes = max_bytes;
    k->keep_ms = keep_ms;
    if (max_bytes <= 0)
        return REIN_OK;
    pthread_mutex_init(&k->mu, NULL);
    k->responses = json_object();
    k->items = json_object();
    k->owners = json_object();
    k->on = k->responses && k->items && k->owners;
    return k->on ? REIN_OK : REIN_ENOMEM;
}

void rein__gw_kept_release(struct rein__gw_kept *k)
{
    if (k->max_bytes > 0)
        pthread_mutex_destroy(&k->mu);
    json_decref(k->responses);
    json_decref(k->items);
    json_decref(k->owners);
    memset(k, 0, sizeof(*k));
}

void rein__gw_kept_owner(const char *key, char out[REIN__GW_OWNER_LEN + 1])
{
    struct rein__sha256 s;

    rein__sha256_init(&s);
    rein__sha256_add(&s, "rein-gateway-owner:", 19);
    if (key)
        rein__sha256_add(&s, key, strlen(key));
    rein__sha256_hex(&s, out, REIN__GW_OWNER_LEN);
}

static char *scoped(const char *owner, const char *id)
{
    return rein_asprintf("%s:%s", owner, id);
}

/* The bytes owner's kept responses hold. Under the lock. */
static size_t owner_bytes(const struct rein__gw_kept *k, const char *owner)
{
    return (size_t)json_integer_value(json_object_get(k->owners, owner));
}

/* Adds delta to the bytes of the owner of response key ("owner:id"). Under the lock. */
static void count_owner(struct rein__gw_kept *k, const char *key, int64_t delta)
{
    char owner[REIN__GW_OWNER_LEN + 1];
    int64_t now;

    snprintf(owner, sizeof(owner), "%.*s", (int)strcspn(key, ":"), key);
    now = (int64_t)owner_bytes(k, owner) + delta;
    if (now > 0)
        (void)json_object_set_new(k->owners, owner, json_integer(now));
    else
        (void)json_object_del(k->owners, owner);
}

/* The output items of kept entry e (borrowed). */
static json_t *output_of(const json_t *e)
{
    return json_object_get(json_object_get(e, "response"), "output");
}

/* The ids of a kept response's items leave the index with it. */
static void drop(struct rein__gw_kept *k, const char *key)
{
    json_t *e = json_object_get(k->responses, key);
    size_t colon = strcspn(key, ":");

    if (!e)
        return;
    for (size_t a = 0; a < 2; a++) {
        size_t i;
        json_t *item;
        json_array_foreach(a ? output_of(e) : json_object_get(e, "input"), i, item)
        {
            const char *id = json_string_value(json_object_get(item, "id"));
            char *ik = id ? rein_asprintf("%.*s:%s", (int)colon, key, id) : NULL;
            /* an id another response holds now is that one's */
            if (ik && json_object_get(k->items, ik) == item)
                (void)json_object_del(k->items, ik);
            rein_free(ik);
        }
    }
    k->bytes -= (size_t)json_integer_value(json_object_get(e, "bytes"));
    count_owner(k, key, -json_integer_value(json_object_get(e, "bytes")));
    (void)json_object_del(k->responses, key);
}

/* The key of owner's least recently used response, or anyone's for NULL; NULL when none. */
static const char *oldest(const struct rein__gw_kept *k, const char *owner)
{
    size_t n = owner ? strlen(owner) : 0;
    const char *key;
    json_t *e;

    json_object_foreach(k->responses, key, e)
    {
        if (!owner || (strncmp(key, owner, n) == 0 && key[n] == ':'))
            return key;
    }
    return NULL;
}

/*
 * Forgets what has not been used for keep_ms, then makes room for need more bytes of owner:
 * the least recently used response goes first, but a client that would hold more than half
 * the bound makes room from its own, so one client cannot push out every other's. Under the
 * lock.
 */
static void trim(struct rein__gw_kept *k, const char *owner, size_t need)
{
    int64_t now = rein_now_ms();
    const char *key;
    json_t *e;
    void *tmp;

    json_object_foreach_safe(k->responses, tmp, key, e)
    {
        if (now - json_integer_value(json_object_get(e, "at")) <= k->keep_ms)
            break;
        drop(k, key);
    }
    while (k->bytes + need > (size_t)k->max_bytes && json_object_size(k->responses)) {
        bool hog = owner_bytes(k, owner) + need > (size_t)k->max_bytes / 2;
        const char *victim = hog ? oldest(k, owner) : NULL;
        drop(k, victim ? victim : oldest(k, NULL));
    }
}

static void index_items(struct rein__gw_kept *k, const char *owner, const json_t *items)
{
    size_t i;
    json_t *item;

    json_array_foreach(items, i, item)
    {
        const char *id = json_string_value(json_object_get(item, "id"));
        char *ik = id ? scoped(owner, id) : NULL;
        if (ik)
            (void)json_object_set(k->items, ik, item);
        rein_free(ik);
    }
}

rein_err rein__gw_kept_put(struct rein__gw_kept *k, const char *owner, const char *id,
                           const char *prev, const json_t *input, const json_t *response)
{
    json_t *e;
    struct rein_buf b;
    char *key, *pkey = NULL;
    size_t bytes;
    rein_err rc;

    if (!k->on)
        return REIN_OK;
    rein_buf_init(&b, 0);
    rc = rein_json_dump(&b, input);
    if (!rc)
        rc = rein_json_dump(&b, response);
    bytes = b.len + strlen(id) + 64;
    rein_buf_release(&b);
    if (rc)
        return rc;
    if (bytes > (size_t)k->max_bytes)
        return REIN_OK; /* larger than everything kept may be: not kept */
    key = scoped(owner, id);
    if (prev)
        pkey = scoped(owner, prev);
    e = json_pack("{s:s?, s:o, s:o, s:I, s:I}", "prev", pkey, "input", json_deep_copy(input),
                  "response", json_deep_copy(response), "at", (json_int_t)rein_now_ms(), "bytes",
                  (json_int_t)bytes);
    rein_free(pkey);
    if (!key || !e) {
        rein_free(key);
        json_decref(e);
        return REIN_ENOMEM;
    }
    pthread_mutex_lock(&k->mu);
    drop(k, key);
    trim(k, owner, bytes);
    if (json_object_set(k->responses, key, e) == 0) {
        k->bytes += bytes;
        count_owner(k, key, (int64_t)bytes);
        index_items(k, owner, json_object_get(e, "input"));
        index_items(k, owner, output_of(e));
    } else {
        rc = REIN_ENOMEM;
    }
    pthread_mutex_unlock(&k->mu);
    json_decref(e);
    rein_free(key);
    return rc;
}

void rein__gw_kept_stats(struct rein__gw_kept *k, size_t *bytes, size_t *responses)
{
    *bytes = *responses = 0;
    if (!k->on)
        return;
    pthread_mutex_lock(&k->mu);
    *bytes = k->bytes;
    *responses = json_object_size(k->responses);
    pthread_mutex_unlock(&k->mu);
}

/* Puts entry e of key back at the end of the order of use. Under the lock. */
static void touch(struct rein__gw_kept *k, const char *key, json_t *e)
{
    char *copy = rein_strdup(key);

    json_incref(e);
    if (copy && json_object_del(k->responses, copy) == 0) {
        (void)json_object_set_new(e, "at", json_integer(rein_now_ms()));
        (void)json_object_set(k->responses, copy, e);
    }
    json_decref(e);
    rein_free(copy);
}

/* The kept response id of owner, used now; NULL when it is not kept (or too old). */
static json_t *find(struct rein__gw_kept *k, const char *key)
{
    json_t *e = json_object_get(k->responses, key);

    if (!e)
        return NULL;
    if (rein_now_ms() - json_integer_value(json_object_get(e, "at")) > k->keep_ms) {
        drop(k, key);
        return NULL;
    }
    touch(k, key, e);
    return json_object_get(k->responses, key);
}

/* Appends a copy of each item of items to out: what a request takes out is its own. */
static rein_err copy_items(json_t *out, const json_t *items)
{
    size_t i;
    json_t *item;

    json_array_foreach(items, i, item)
    {
        if (json_array_append_new(out, json_deep_copy(item)))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

/* Whether kept entry e holds an answer: a response in the background is kept while it runs,
 * and kept failed or cancelled when it did not complete (decision 0093). */
static bool ended(const json_t *e)
{
    const char *status =
        json_string_value(json_object_get(json_object_get(e, "response"), "status"));

    return !status || strcmp(status, "completed") == 0 || strcmp(status, "incomplete") == 0;
}

/* The conversation response key continues, oldest first: each response's input then output.
 * Under the lock. */
static rein_err chain(struct rein__gw_kept *k, const char *key, const char *id, json_t *out,
                      struct rein__gw_bad *bad)
{
    json_t *entries[MAX_CHAIN];
    size_t n = 0, bytes = 0;
    rein_err rc = REIN_OK;

    for (const char *at = key; at && !rc; n++) {
        json_t *e = n < MAX_CHAIN ? find(k, at) : NULL;
        bytes += (size_t)json_integer_value(json_object_get(e, "bytes"));
        if (n == MAX_CHAIN || bytes > MAX_CHAIN_BYTES)
            rc = rein__gw_bad(bad, "previous_response_id",
                              "Previous response with id '%s' continues more than %d "
                              "responses or %d MiB; rein's gateway follows at most that much: "
                              "send the conversation in 'input'.",
                              id, MAX_CHAIN, MAX_CHAIN_BYTES >> 20);
        else if (!e)
            rc = rein__gw_bad(bad, "previous_response_id",
                              n ? "Previous response with id '%s' continues a response rein's "
                                  "gateway no longer keeps."
                                : "Previous response with id '%s' not found.",
                              id);
        else if (!ended(e))
            rc = rein__gw_bad(bad, "previous_response_id",
                              "Previous response with id '%s' %s: only a response that "
                              "completed can be continued.",
                              id, n ? "continues one that did not complete" : "did not complete");
        if (rc)
            break;
        entries[n] = json_incref(e);
        at = json_string_value(json_object_get(e, "prev"));
    }
    for (size_t i = n; i-- > 0;) {
        if (!rc)
            rc = copy_items(out, json_object_get(entries[i], "input"));
        if (!rc)
            rc = copy_items(out, output_of(entries[i]));
        json_decref(entries[i]);
    }
    return rc;
}

/* Each item_reference of input (an array) becomes a copy of the item it names. Under the
 * lock. */
static rein_err references(struct rein__gw_kept *k, const char *owner, json_t *input,
                           struct rein__gw_bad *bad)
{
    size_t i;
    json_t *item;

    json_array_foreach(input, i, item)
    {
        const char *type = json_string_value(json_object_get(item, "type"));
        const char *id = json_string_value(json_object_get(item, "id"));
        json_t *found;
        char *ik;

        if (!type || strcmp(type, "item_reference") != 0)
            continue;
        if (!id)
            return rein__gw_bad(bad, "input", "Invalid 'input[%zu].id': expected a string.", i);
        if (!(ik = scoped(owner, id)))
            return REIN_ENOMEM;
        found = json_object_get(k->items, ik);
        rein_free(ik);
        if (!found)
            return rein__gw_bad(bad, "input", "Item with id '%s' not found.", id);
        if (json_array_set_new(input, i, json_deep_copy(found)))
            return REIN_ENOMEM;
    }
    return REIN_OK;
}

rein_err rein__gw_kept_resolve(struct rein__gw_kept *k, const char *owner, json_t *body,
                               json_t **own, struct rein__gw_bad *bad)
{
    json_t *input = json_object_get(body, "input");
    const char *prev = json_string_value(json_object_get(body, "previous_response_id"));
    json_t *whole = NULL;
    char *key = NULL;
    rein_err rc = REIN_OK;

    *own = NULL;
    if (json_is_string(input)) {
        if (json_object_set_new(body, "input",
                                json_pack("[{s:s, s:O}]", "role", "user", "content", input)))
            return REIN_ENOMEM;
        input = json_object_get(body, "input");
    }
    if (!k || !k->on) {
        if (prev)
            return rein__gw_bad(bad, "previous_response_id",
                                "Previous response with id '%s' not found: this gateway keeps "
                                "no responses (--gateway-keep-bytes 0).",
                                prev);
        /* an item_reference is refused with the other items the converter cannot take */
        *own = json_is_array(input) ? json_incref(input) : NULL;
        return REIN_OK;
    }
    if (prev && !(key = scoped(owner, prev)))
        return REIN_ENOMEM;
    if (prev && !(whole = json_array())) {
        rein_free(key);
        return REIN_ENOMEM;
    }
    pthread_mutex_lock(&k->mu);
    if (json_is_array(input))
        rc = references(k, owner, input, bad);
    if (!rc && prev)
        rc = chain(k, key, prev, whole, bad);
    pthread_mutex_unlock(&k->mu);
    rein_free(key);
    /* the request's own input is kept with its answer; the conversation before it is not
     * kept again */
    if (!rc && json_is_array(input))
        *own = json_incref(input);
    if (!rc && prev) {
        if (json_is_array(input) && json_array_extend(whole, input))
            rc = REIN_ENOMEM;
        else if (json_object_set(body, "input", whole))
            rc = REIN_ENOMEM;
    }
    json_decref(whole);
    if (rc) {
        json_decref(*own);
        *own = NULL;
    }
    return rc;
}

rein_err rein__gw_kept_get(struct rein__gw_kept *k, const char *owner, const char *id,
                           json_t **response, json_t **input)
{
    char *key;
    json_t *e;
    rein_err rc = REIN_ENOTFOUND;

    *response = NULL;
    if (input)
        *input = NULL;
    if (!k->on)
        return REIN_ENOTFOUND;
    if (!(key = scoped(owner, id)))
        return REIN_ENOMEM;
    pthread_mutex_lock(&k->mu);
    if ((e = find(k, key)) != NULL) {
        /* copies: the entry may be forgotten as soon as the lock is let go */
        *response = json_deep_copy(json_object_get(e, "response"));
        if (input)
            *input = json_deep_copy(json_object_get(e, "input"));
        rc = *response && (!input || *input) ? REIN_OK : REIN_ENOMEM;
    }
    pthread_mutex_unlock(&k->mu);
    rein_free(key);
    if (rc == REIN_ENOMEM) {
        json_decref(*response);
        *response = NULL;
        if (input) {
            json_decref(*input);
            *input = NULL;
        }
    }
    return rc;
}

rein_err rein__gw_kept_delete(struct rein__gw_kept *k, const char *owner, const char *id)
{
    char *key;
    rein_err rc = REIN_ENOTFOUND;

    if (!k->on)
        return REIN_ENOTFOUND;
    if (!(key = scoped(owner, id)))
        return REIN_ENOMEM;
    pthread_mutex_lock(&k->mu);
    if (find(k, key)) {
        drop(k, key);
        rc = REIN_OK;
    }
    pthread_mutex_unlock(&k->mu);
    rein_free(key);
    return rc;
}
