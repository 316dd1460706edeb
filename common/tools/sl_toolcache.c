/*  sl_toolcache.c - definition digests remembered across requests (see
    sl_toolcache.h). */
#include "common/tools/sl_toolcache.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/tools/sl_tooldef.h"

#define S_MULTIPLIER 0x9E3779B97F4A7C15ull  //  2^64 / golden ratio: spreads the bits
#define S_FINAL_SHIFT 29

typedef struct {
    uint64_t hash;
    uint64_t used;                      //  the cache's clock when last found (0: empty)
    size_t name_len, description_len, schema_len;
    bool no_description;                //  absent, not empty: digested as null
    char *bytes;                        //  name, description and schema text, back to back
    char digest [SL_TOOLDEF_DIGEST_SIZE];
} s_entry_t;

struct _sl_toolcache_t {
    uint64_t seed;
    uint64_t clock;                     //  counts lookups: the least recently used is the oldest
    s_entry_t entries [SL_TOOLCACHE_BUCKETS][SL_TOOLCACHE_WAYS];
    sl_toolcache_stats_t stats;
};

sl_toolcache_t *
sl_toolcache_new (void)
{
    sl_toolcache_t *self = sl_xcalloc (1, sizeof *self);
    randombytes_buf (&self->seed, sizeof self->seed);
    return self;
}

void
sl_toolcache_destroy (sl_toolcache_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_toolcache_t *self = *self_p;
    for (size_t b = 0; b < SL_TOOLCACHE_BUCKETS; b++)
        for (size_t w = 0; w < SL_TOOLCACHE_WAYS; w++)
            free (self->entries [b][w].bytes);
    free (self);
    *self_p = NULL;
}

//  Eight bytes at a time: a multiply-xorshift step per word, the tail
//  zero-padded, the length mixed in so "ab" + "c" and "a" + "bc" differ.
static uint64_t
s_hash_bytes (uint64_t h, sl_str_t s)
{
    size_t i = 0;
    for (; i + sizeof (uint64_t) <= s.len; i += sizeof (uint64_t)) {
        uint64_t w;
        memcpy (&w, s.ptr + i, sizeof w);
        h = (h ^ w) * S_MULTIPLIER;
        h ^= h >> S_FINAL_SHIFT;
    }
    uint64_t tail = 0;
    if (i < s.len)
        memcpy (&tail, s.ptr + i, s.len - i);
    h = (h ^ tail ^ ((uint64_t) s.len << 56)) * S_MULTIPLIER;
    return h ^ (h >> S_FINAL_SHIFT);
}

static bool
s_same (const s_entry_t *e, uint64_t hash, sl_str_t name, sl_str_t description, sl_str_t schema_text)
{
    if (!e->used || e->hash != hash || e->name_len != name.len || e->description_len != description.len
    ||  e->schema_len != schema_text.len || e->no_description != !description.ptr)
        return false;
    const char *p = e->bytes;
    return (name.len == 0 || memcmp (p, name.ptr, name.len) == 0)
        && (description.len == 0 || memcmp (p + name.len, description.ptr, description.len) == 0)
        && (schema_text.len == 0 || memcmp (p + name.len + description.len, schema_text.ptr, schema_text.len) == 0);
}

//  Keep a definition's digest in the oldest entry of its bucket, when
//  its bytes fit the bounds.
static void
s_keep (sl_toolcache_t *self, s_entry_t *bucket, uint64_t hash, sl_str_t name, sl_str_t description,
        sl_str_t schema_text, const char *digest)
{
    size_t size = name.len + description.len + schema_text.len;
    if (size > SL_TOOLCACHE_MAX_ENTRY)
        return;
    s_entry_t *e = &bucket [0];
    for (size_t w = 1; w < SL_TOOLCACHE_WAYS; w++)
        if (bucket [w].used < e->used)
            e = &bucket [w];
    size_t freed = e->used ? e->name_len + e->description_len + e->schema_len : 0;
    if (self->stats.bytes - freed + size > SL_TOOLCACHE_MAX_BYTES)
        return;
    if (e->used) {
        self->stats.evictions++;
        self->stats.entries--;
        self->stats.bytes -= freed;
    }
    free (e->bytes);
    e->bytes = sl_xmalloc (size ? size : 1);
    if (name.len)
        memcpy (e->bytes, name.ptr, name.len);
    if (description.len)
        memcpy (e->bytes + name.len, description.ptr, description.len);
    if (schema_text.len)
        memcpy (e->bytes + name.len + description.len, schema_text.ptr, schema_text.len);
    e->hash = hash;
    e->used = self->clock;
    e->name_len = name.len;
    e->description_len = description.len;
    e->schema_len = schema_text.len;
    e->no_description = !description.ptr;
    memcpy (e->digest, digest, SL_TOOLDEF_DIGEST_SIZE);
    self->stats.entries++;
    self->stats.bytes += size;
}

bool
sl_toolcache_digest_hashed (sl_toolcache_t *self, uint64_t hash, sl_str_t name, sl_str_t description,
                            json_t *schema, sl_str_t schema_text, char *digest)
{
    if (!self) {
        sl_tooldef_digest (name, description, schema, digest);
        return false;
    }
    s_entry_t *bucket = self->entries [hash % SL_TOOLCACHE_BUCKETS];
    self->clock++;
    for (size_t w = 0; w < SL_TOOLCACHE_WAYS; w++)
        if (s_same (&bucket [w], hash, name, description, schema_text)) {
            bucket [w].used = self->clock;
            memcpy (digest, bucket [w].digest, SL_TOOLDEF_DIGEST_SIZE);
            self->stats.hits++;
            return true;
        }
    sl_tooldef_digest (name, description, schema, digest);
    self->stats.misses++;
    s_keep (self, bucket, hash, name, description, schema_text, digest);
    return false;
}

bool
sl_toolcache_digest (sl_toolcache_t *self, sl_str_t name, sl_str_t description, json_t *schema,
                     sl_str_t schema_text, char *digest)
{
    //  Absent and empty are one for the key: the digest tells them apart
    //  (null against ""), so an absent description is marked in the hash.
    uint64_t h = self ? self->seed : 0;
    h = s_hash_bytes (h, name);
    h = s_hash_bytes (h ^ (description.ptr ? 0 : 1), description);
    h = s_hash_bytes (h, schema_text);
    return sl_toolcache_digest_hashed (self, h, name, description, schema, schema_text, digest);
}

void
sl_toolcache_stats (const sl_toolcache_t *self, sl_toolcache_stats_t *out)
{
    *out = self ? self->stats : (sl_toolcache_stats_t) { 0 };
}
