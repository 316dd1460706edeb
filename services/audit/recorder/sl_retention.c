/*  sl_retention.c - deleting what is too old or too much (see sl_retention.h). */
#include "services/audit/recorder/sl_retention.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "proto/sl_msg.h"
#include "services/audit/recorder/sl_chain.h"

#define S_GAPS_MAX 256                  //  gaps deleted per step at most
#define S_REF_SIZE 512                  //  a prune entry's key

typedef struct {
    char (*sids) [SL_SID_HEX_SIZE];
    int count;
    int cap;
} s_victims_t;

static int
s_victim (void *arg, const sl_row_t *row)
{
    s_victims_t *v = arg;
    if (v->count == v->cap)
        return 1;
    sl_str_t sid = sl_row_text (row, 0);
    size_t n = sid.len < SL_SID_HEX_SIZE - 1 ? sid.len : SL_SID_HEX_SIZE - 1;
    memcpy (v->sids [v->count], sid.ptr ? sid.ptr : "", n);
    v->sids [v->count][n] = 0;
    v->count++;
    return 0;
}

static int
s_delete (sl_store_t *store, const s_victims_t *v)
{
    static const char *tables [] = {
        "DELETE FROM events WHERE sid = $1", "DELETE FROM blocks WHERE sid = $1",
        "DELETE FROM verdicts WHERE sid = $1", "DELETE FROM streams WHERE sid = $1"
    };
    for (int i = 0; i < v->count; i++)
        for (size_t t = 0; t < sizeof tables / sizeof tables [0]; t++) {
            sl_val_t p [] = { sl_val_text (v->sids [i]) };
            if (sl_store_exec (store, tables [t], p, 1, NULL))
                return -1;
        }
    return 0;
}

//  --------------------------------------------------------------------------
//  The chain: what is deleted is entered, then the chain is cut

typedef struct {
    char *keys [S_GAPS_MAX];            //  emitter:incarnation:rseq
    int count;
} s_gap_keys_t;

static int
s_gap_key (void *arg, const sl_row_t *row)
{
    s_gap_keys_t *g = arg;
    sl_str_t key = sl_row_text (row, 0);
    g->keys [g->count++] = sl_xstrndup (key.ptr ? key.ptr : "", key.len);
    return g->count == S_GAPS_MAX;
}

//  Gaps older than the cutoff, each entered in the chain and deleted, at
//  most S_GAPS_MAX a step (*more when that many went). 0, -1.
static int
s_prune_gaps (sl_store_t *store, const sl_retention_t *policy, int64_t cutoff, int64_t now, bool *more)
{
    s_gap_keys_t g = { 0 };
    sl_val_t p [] = { sl_val_int (cutoff), sl_val_int (S_GAPS_MAX) };
    int rc = sl_store_query (store, "SELECT emitter || ':' || incarnation || ':' || rseq FROM gaps WHERE at < $1 "
                                    "LIMIT $2", p, 2, s_gap_key, &g);
    char ref [S_REF_SIZE];
    for (int i = 0; i < g.count && rc == 0; i++) {
        snprintf (ref, sizeof ref, "gap %s", g.keys [i]);
        sl_val_t k [] = { sl_val_text (g.keys [i]) };
        rc = sl_chain_begin (policy->chain, "prune", NULL, 0, 0, ref, now);
        if (rc == 0) {
            sl_chain_end (policy->chain);
            rc = sl_store_exec (store, "DELETE FROM gaps WHERE emitter || ':' || incarnation || ':' || rseq = $1",
                                k, 1, NULL);
        }
    }
    *more = *more || g.count == S_GAPS_MAX;
    for (int i = 0; i < g.count; i++)
        free (g.keys [i]);
    return rc;
}

//  Each stream about to go, entered in the chain. 0, -1.
static int
s_prune_streams (const sl_retention_t *policy, const s_victims_t *v, int64_t now)
{
    char ref [S_REF_SIZE];
    for (int i = 0; i < v->count; i++) {
        snprintf (ref, sizeof ref, "stream %s", v->sids [i]);
        if (sl_chain_begin (policy->chain, "prune", v->sids [i], 0, 0, ref, now))
            return -1;
        sl_chain_end (policy->chain);
    }
    return 0;
}

typedef struct {
    bool found;
    int64_t pos;
    char hash [SL_CHAIN_HEX];
} s_at_t;

static int
s_at_row (void *arg, const sl_row_t *row)
{
    s_at_t *a = arg;
    sl_str_t hash = sl_row_text (row, 1);
    a->found = true;
    a->pos = sl_row_int (row, 0);
    snprintf (a->hash, sizeof a->hash, "%.*s", (int) hash.len, hash.ptr ? hash.ptr : "");
    return 1;
}

//  Cut the chain before the first entry naming something kept (after the
//  prune entries were written). 0, -1.
static int
s_cut (sl_store_t *store, const sl_retention_t *policy, int64_t now)
{
    s_at_t kept = { 0 }, at = { 0 };
    if (sl_store_query (store, "SELECT pos, hash FROM chain c WHERE c.kind <> 'prune' AND ("
                               "(c.sid IS NOT NULL AND EXISTS (SELECT 1 FROM streams s WHERE s.sid = c.sid)) "
                               "OR (c.kind = 'gap' AND EXISTS (SELECT 1 FROM gaps g "
                               "WHERE g.emitter || ':' || g.incarnation || ':' || g.rseq = c.ref))) "
                               "ORDER BY pos LIMIT 1", NULL, 0, s_at_row, &kept))
        return -1;
    //  Nothing kept: the whole chain may go, up to its last entry.
    sl_val_t p [] = { sl_val_int (kept.found ? kept.pos - 1 : INT64_MAX) };
    if (sl_store_query (store, "SELECT pos, hash FROM chain WHERE pos <= $1 ORDER BY pos DESC LIMIT 1", p, 1,
                        s_at_row, &at))
        return -1;
    if (!at.found)
        return 0;                       //  nothing before the first kept entry
    //  Linked like every checkpoint: counted from the one before it.
    int64_t before = 0;
    if (sl_checkpoint_before (store, at.pos, &before))
        return -1;
    sl_checkpoint_t cp = { .pos = at.pos, .count = at.pos - before, .at = now, .cut = true };
    snprintf (cp.head, sizeof cp.head, "%s", at.hash);
    sl_val_t q [] = { sl_val_int (at.pos) };
    if (sl_checkpoint_write (store, policy->key, &cp)
    ||  sl_store_exec (store, "DELETE FROM chain WHERE pos <= $1", q, 1, NULL))
        return -1;
    if (policy->cut)
        *policy->cut = cp;
    return 0;
}

int
sl_retention_size (sl_store_t *store, int64_t *bytes)
{
    return sl_store_query_int (store, "SELECT SUM(bytes) FROM streams", NULL, 0, 0, bytes);
}

int
sl_retention_step (sl_store_t *store, const sl_retention_t *policy, int64_t now_ms, int *pruned, bool *more)
{
    *pruned = 0;
    *more = false;
    if (policy->cut)
        memset (policy->cut, 0, sizeof *policy->cut);
    int batch = policy->batch > 0 ? policy->batch : 200;
    s_victims_t v = { sl_xcalloc ((size_t) batch, SL_SID_HEX_SIZE), 0, batch };
    int rc = -1;
    if (sl_store_begin (store))
        goto done;
    if (policy->max_age_ms > 0) {
        sl_val_t p [] = { sl_val_int (now_ms - policy->max_age_ms), sl_val_int (batch) };
        if (sl_store_query (store, "SELECT sid FROM streams WHERE started_at < $1 ORDER BY started_at LIMIT $2",
                            p, 2, s_victim, &v)
        ||  sl_store_exec (store, "DELETE FROM policies WHERE last_seen < $1", p, 1, NULL)
        ||  sl_store_exec (store, "DELETE FROM tools WHERE last_seen < $1", p, 1, NULL))
            goto failed;
    }
    if (v.count < batch && policy->max_bytes > 0) {
        int64_t size = 0;
        if (sl_retention_size (store, &size))
            goto failed;
        if (size > policy->max_bytes) {
            //  The oldest go first, as many as the excess, about: their
            //  sizes are summed in the order they would go.
            int before = v.count;
            sl_val_t p [] = { sl_val_int (batch - before) };
            s_victims_t more_v = { v.sids + before, 0, batch - before };
            if (sl_store_query (store, "SELECT sid FROM streams ORDER BY started_at LIMIT $1", p, 1, s_victim,
                                &more_v))
                goto failed;
            //  Keep only as many as needed (each costs at least its bytes).
            int64_t excess = size - policy->max_bytes;
            int keep = 0;
            for (int i = 0; i < more_v.count && excess > 0; i++, keep++) {
                sl_val_t q [] = { sl_val_text (more_v.sids [i]) };
                int64_t bytes = 0;
                if (sl_store_query_int (store, "SELECT bytes FROM streams WHERE sid = $1", q, 1, 0, &bytes))
                    goto failed;
                excess -= bytes > 0 ? bytes : 1;
            }
            //  A stream picked by age may come again here: count it once.
            for (int i = 0; i < keep; i++) {
                bool dup = false;
                for (int j = 0; j < before && !dup; j++)
                    dup = strcmp (v.sids [j], more_v.sids [i]) == 0;
                if (!dup)
                    memmove (v.sids [v.count++], more_v.sids [i], SL_SID_HEX_SIZE);
            }
            *more = excess > 0;
        }
    }
    int64_t cutoff = now_ms - policy->max_age_ms;
    bool more_gaps = false;
    if (policy->chain && s_prune_streams (policy, &v, now_ms))
        goto failed;
    if (policy->max_age_ms > 0) {
        sl_val_t p [] = { sl_val_int (cutoff) };
        if (policy->chain ? s_prune_gaps (store, policy, cutoff, now_ms, &more_gaps)
                          : sl_store_exec (store, "DELETE FROM gaps WHERE at < $1", p, 1, NULL))
            goto failed;
    }
    if (s_delete (store, &v))
        goto failed;
    if (policy->chain) {
        if ((sl_chain_pending (policy->chain) && sl_chain_flush (policy->chain))
        ||  s_cut (store, policy, now_ms))
            goto failed;
    }
    if (sl_store_commit (store))
        goto failed;
    if (policy->chain)
        sl_chain_committed (policy->chain);
    *pruned = v.count;
    *more = *more || v.count == batch || more_gaps;
    rc = 0;
    goto done;
failed:
    sl_store_rollback (store);
    if (policy->chain)
        sl_chain_abort (policy->chain);
    if (policy->cut)
        memset (policy->cut, 0, sizeof *policy->cut);
done:
    free (v.sids);
    return rc;
}
