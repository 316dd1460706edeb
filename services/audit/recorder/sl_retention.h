/*  sl_retention.h - the audit store kept to its age and size.

    Streams older than max_age and, past max_bytes, the oldest streams are
    deleted with everything recorded of them (ledger, blocks, verdicts),
    and gaps, policy reports and tool definitions (last seen) older than
    max_age. The size is the store's
    own count of what it holds (streams.bytes: the text kept plus a little
    per row), the same on SQLite and PostgreSQL, whose files do not shrink
    when rows go.

    The chain (sl_chain.h) stays verifiable: each stream and gap deleted
    is entered in it (kind prune, its key), in the same transaction, so a
    verifier knows the rows retention took from those someone deleted.
    Then the chain itself is cut: at P, the last position before the first
    entry that names something kept (a stream still in the store, a gap
    still there), so nothing kept depends on a removed entry. A checkpoint
    with cut 1 is signed at P (its head: the hash at P) and the entries up
    to P are deleted; verification starts there. Entries of a deleted
    stream after P (its records straddled a kept stream's) stay, their
    rows gone, named by its prune entry.

    Work is done in bounded steps, so the audit's reactor never stalls: a
    call deletes at most `batch` streams, in one transaction, and says
    whether more is due (the service then calls again soon).
*/
#ifndef SL_RETENTION_H
#define SL_RETENTION_H

#include <stdbool.h>
#include <stdint.h>

#include "services/audit/recorder/sl_checkpoint.h"
#include "services/audit/store/sl_store.h"

typedef struct {
    int64_t max_age_ms;                 //  0: no bound by age
    int64_t max_bytes;                  //  0: no bound by size
    int batch;                          //  streams deleted per step at most
    sl_chain_t *chain;                  //  the store's chain (borrowed); NULL: a store without one
    const sl_signkey_t *key;            //  signs the cut's checkpoint (NULL: unsigned)
    sl_checkpoint_t *cut;               //  out: the cut made (cut->pos 0: none); may be NULL
} sl_retention_t;

//  One step at now_ms (Unix ms). *pruned gets the streams deleted, *more
//  whether another step is due. 0 ok, -1 the store failed (rolled back).
int sl_retention_step (sl_store_t *store, const sl_retention_t *policy, int64_t now_ms, int *pruned, bool *more);
//  What the store holds by its own count, bytes.
int sl_retention_size (sl_store_t *store, int64_t *bytes);

#endif
