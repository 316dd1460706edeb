/*  sl_llm_cache.c - LLM judge answers by content (see sl_llm_cache.h).

    A czmq hash of hex digests to answers, and a ring of the digests in
    the order they came, for eviction.
*/
#include "common/llm/sl_llm_cache.h"

#include <czmq.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

#define S_KEY_SIZE 41                   //  40 hex digits and a NUL

typedef struct {
    double probability;
    char *explanation;
    bool allow;                         //  a decision service's answer
    char *rewrite;                      //  and its rewrite, or NULL
    int64_t until_us;                   //  kept until then, 0: for good
} s_entry_t;

struct _sl_llm_cache_t {
    zhashx_t *entries;                  //  key -> s_entry_t
    char (*ring) [S_KEY_SIZE];          //  keys in arrival order
    size_t capacity;
    size_t next;                        //  the ring's oldest slot once it is full
};

static void
s_entry_free (void **item)
{
    s_entry_t *e = *item;
    if (e) {
        free (e->explanation);
        free (e->rewrite);
        free (e);
    }
    *item = NULL;
}

sl_llm_cache_t *
sl_llm_cache_new (size_t capacity)
{
    sl_llm_cache_t *self = sl_xcalloc (1, sizeof *self);
    self->capacity = capacity ? capacity : SL_LLM_CACHE_DEFAULT;
    self->entries = zhashx_new ();
    zhashx_set_destructor (self->entries, s_entry_free);
    self->ring = sl_xcalloc (self->capacity, S_KEY_SIZE);
    return self;
}

void
sl_llm_cache_destroy (sl_llm_cache_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_llm_cache_t *self = *self_p;
    zhashx_destroy (&self->entries);
    free (self->ring);
    free (self);
    *self_p = NULL;
}

static void
s_key (const char *rule, sl_str_t body, char key [S_KEY_SIZE])
{
    zdigest_t *digest = zdigest_new ();
    zdigest_update (digest, (const byte *) (rule ? rule : ""), strlen (rule ? rule : "") + 1);
    zdigest_update (digest, (const byte *) (body.ptr ? body.ptr : ""), body.len);
    snprintf (key, S_KEY_SIZE, "%s", zdigest_string (digest));
    zdigest_destroy (&digest);
}

bool
sl_llm_cache_get_at (sl_llm_cache_t *self, const char *rule, sl_str_t body, int64_t now_us, sl_llm_result_t *out)
{
    char key [S_KEY_SIZE];
    s_key (rule, body, key);
    s_entry_t *e = zhashx_lookup (self->entries, key);
    if (!e || (e->until_us && now_us >= e->until_us))
        return false;
    memset (out, 0, sizeof *out);
    out->check = SL_CHK_RAN;
    out->probability = e->probability;
    out->explanation = e->explanation ? sl_xstrdup (e->explanation) : NULL;
    out->allow = e->allow;
    out->rewrite = e->rewrite ? sl_xstrdup (e->rewrite) : NULL;
    return true;
}

bool
sl_llm_cache_get (sl_llm_cache_t *self, const char *rule, sl_str_t body, sl_llm_result_t *out)
{
    return sl_llm_cache_get_at (self, rule, body, 0, out);
}

void
sl_llm_cache_put (sl_llm_cache_t *self, const char *rule, sl_str_t body, const sl_llm_result_t *result)
{
    sl_llm_cache_put_until (self, rule, body, result, 0);
}

void
sl_llm_cache_put_until (sl_llm_cache_t *self, const char *rule, sl_str_t body, const sl_llm_result_t *result,
                        int64_t until_us)
{
    if (result->check != SL_CHK_RAN)
        return;
    char key [S_KEY_SIZE];
    s_key (rule, body, key);
    s_entry_t *old = zhashx_lookup (self->entries, key);
    if (old && !old->until_us)
        return;                         //  kept for good already
    if (old) {
        //  An answer past its time is asked again: the new one takes its
        //  place in the ring (which keeps the key).
        free (old->explanation);
        free (old->rewrite);
        old->probability = result->probability;
        old->explanation = result->explanation ? sl_xstrdup (result->explanation) : NULL;
        old->allow = result->allow;
        old->rewrite = result->rewrite ? sl_xstrdup (result->rewrite) : NULL;
        old->until_us = until_us;
        return;
    }
    char *slot = self->ring [self->next];
    if (*slot)
        zhashx_delete (self->entries, slot);    //  the oldest goes
    memcpy (slot, key, S_KEY_SIZE);
    self->next = (self->next + 1) % self->capacity;
    s_entry_t *e = sl_xcalloc (1, sizeof *e);
    e->probability = result->probability;
    e->explanation = result->explanation ? sl_xstrdup (result->explanation) : NULL;
    e->allow = result->allow;
    e->rewrite = result->rewrite ? sl_xstrdup (result->rewrite) : NULL;
    e->until_us = until_us;
    zhashx_insert (self->entries, key, e);
}

