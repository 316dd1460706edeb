/*  sl_archive.h - records into the audit store, each written once.

    The emitters send the audit every record it needs (sl_spool.h): a
    stream's start, its blocks' ends, the finish, verdicts, errors, the
    end; the judges' policy reports; gap notices. sl_archive_apply turns one
    into rows, inside the caller's transaction:

      - a stream record is first entered in the ledger (table events) under
        its key: stream id, its position in the judged stream (seq), and
        its origin (sub). When the key is there already, the record was
        delivered before (a resend after a lost acknowledgement, the same
        stream re-sent to another emitter after a crash): nothing else
        changes, and apply returns 0. Otherwise its rows are written (the
        stream's row, a block, a verdict) and the stream's counts move.
      - a stream's start also records its tool definitions in the
        inventory (sl_inventory.h).
      - a policy report updates the row of its judge and policy.
      - a gap notice (its key: emitter, incarnation, record number) counts
        a loss against every stream it names, making a row for a stream
        whose start was among the lost records.

    Text (block content, arguments, the last user message, the tools'
    definitions) is kept up to max_text bytes, cut on a character
    boundary; the whole size and the cut are recorded. Text is made valid
    UTF-8 without NUL bytes first (PostgreSQL takes nothing else;
    sl_record_clean).

    Every record written joins the store's hash chain (sl_chain.h): its
    entry is pending until sl_archive_commit writes the transaction's
    entries and commits; sl_archive_rollback forgets them with the rest.
*/
#ifndef SL_ARCHIVE_H
#define SL_ARCHIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/sl_msg.h"
#include "services/audit/store/sl_record.h"
#include "services/audit/store/sl_store.h"

#define SL_ARCHIVE_DEFAULT_MAX_TEXT 65536   //  bytes of one text kept

typedef struct _sl_archive_t sl_archive_t;
typedef struct _sl_chain_t sl_chain_t;  //  services/audit/recorder/sl_chain.h

typedef struct _sl_routes_t sl_providers_t;   //  common/dialects/sl_providers.h

//  The store is borrowed. max_text 0: the default.
sl_archive_t *sl_archive_new (sl_store_t *store, size_t max_text);
void sl_archive_destroy (sl_archive_t **self_p);
//  The prices a stream's cost is counted at (the routes file's, borrowed,
//  outliving the archive; NULL: costs are not recorded). A stream's cost
//  follows its usage: set again whenever usage is recorded, from its
//  model (as the client asked for it) and its tokens so far.
void sl_archive_set_prices (sl_archive_t *self, const sl_providers_t *prices);
//  Tool definitions kept per team at most (sl_inventory_set_cap; 0: the default).
void sl_archive_set_tools_cap (sl_archive_t *self, int per_team);
//  Write one record (msg is the REC's inner message). 1 written, 0 known
//  already (or nothing to write), -1 the store failed (the caller rolls
//  back: a PostgreSQL transaction is over after a failed statement).
int sl_archive_apply (sl_archive_t *self, const sl_record_meta_t *meta, const sl_msg_t *msg);
//  Write the transaction's chain entries, then commit. 0 ok, -1 failed
//  (the caller rolls back).
int sl_archive_commit (sl_archive_t *self);
//  Roll the store's transaction back and forget its chain entries.
void sl_archive_rollback (sl_archive_t *self);
//  The archive's chain (borrowed): its head, and for retention's entries.
sl_chain_t *sl_archive_chain (sl_archive_t *self);
//  Records join the chain (the default). Off only to measure what the
//  chain costs (tests/bench): a store written so does not verify.
void sl_archive_set_chained (sl_archive_t *self, bool on);

#endif
