/*  sl_retention.c - deleting what is too old or too much (see sl_retention.h). */
#include "services/audit/sl_retention.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "proto/sl_msg.h"

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
    int batch = policy->batch > 0 ? policy->batch : 200;
    s_victims_t v = { sl_xcalloc ((size_t) batch, SL_SID_HEX_SIZE), 0, batch };
    int rc = -1;
    if (sl_store_begin (store))
        goto done;
    if (policy->max_age_ms > 0) {
        sl_val_t p [] = { sl_val_int (now_ms - policy->max_age_ms), sl_val_int (batch) };
        if (sl_store_query (store, "SELECT sid FROM streams WHERE started_at < $1 ORDER BY started_at LIMIT $2",
                            p, 2, s_victim, &v)
        ||  sl_store_exec (store, "DELETE FROM gaps WHERE at < $1", p, 1, NULL)
        ||  sl_store_exec (store, "DELETE FROM policies WHERE last_seen < $1", p, 1, NULL))
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
    if (s_delete (store, &v) || sl_store_commit (store))
        goto failed;
    *pruned = v.count;
    *more = *more || v.count == batch;
    rc = 0;
    goto done;
failed:
    sl_store_rollback (store);
done:
    free (v.sids);
    return rc;
}
