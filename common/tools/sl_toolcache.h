/*  sl_toolcache.h - definition digests remembered across requests.

    Agents send the same dozens of tool definitions with every request;
    digesting each again (its canonical JSON, keys sorted, then SHA-256:
    sl_tooldef_digest) would cost more than the rest of preparing the
    request. The cache keys a definition by its bytes as the request
    holds them (name, description, and the schema's compact text in the
    order the client wrote it), hashed with a fast seeded 64-bit hash,
    and holds the digest. A hit is verified by comparing the bytes, so two
    definitions whose hashes collide never share a digest; the hash's
    seed is random per cache, so a client cannot aim collisions at it.

    A fixed table of SL_TOOLCACHE_WAYS-way buckets: a new definition takes
    the least recently used entry of its bucket. The bytes it holds are
    bounded (SL_TOOLCACHE_MAX_BYTES); a definition over
    SL_TOOLCACHE_MAX_ENTRY is digested every time, never kept.

    Not thread-safe: one cache per thread that prepares requests.
*/
#ifndef SL_TOOLCACHE_H
#define SL_TOOLCACHE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_str.h"

#define SL_TOOLCACHE_BUCKETS 512        //  buckets of the table
#define SL_TOOLCACHE_WAYS 4             //  entries per bucket
#define SL_TOOLCACHE_MAX_ENTRY (64u << 10)  //  a definition's bytes kept at most
#define SL_TOOLCACHE_MAX_BYTES (16u << 20)  //  all definitions' bytes kept at most

typedef struct _sl_toolcache_t sl_toolcache_t;

typedef struct {
    uint64_t hits;                      //  digests found
    uint64_t misses;                    //  digests computed
    uint64_t evictions;                 //  entries replaced by another definition
    size_t entries;                     //  entries held
    size_t bytes;                       //  their bytes
} sl_toolcache_stats_t;

sl_toolcache_t *sl_toolcache_new (void);
void sl_toolcache_destroy (sl_toolcache_t **self_p);
//  The digest of a definition (sl_tooldef_digest of name, description
//  and schema) into digest (SL_TOOLDEF_DIGEST_SIZE bytes); schema_text is
//  the schema's compact JSON text as the request holds it (the key).
//  self NULL: computed, nothing kept. True when it was found.
bool sl_toolcache_digest (sl_toolcache_t *self, sl_str_t name, sl_str_t description, json_t *schema,
                          sl_str_t schema_text, char *digest);
void sl_toolcache_stats (const sl_toolcache_t *self, sl_toolcache_stats_t *out);
//  For tests: the same with the hash given (to make collisions).
bool sl_toolcache_digest_hashed (sl_toolcache_t *self, uint64_t hash, sl_str_t name, sl_str_t description,
                                 json_t *schema, sl_str_t schema_text, char *digest);

#endif
