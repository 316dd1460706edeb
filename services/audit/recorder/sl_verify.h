/*  sl_verify.h - walking the audit's hash chain against the store.

    sluice-audit verify and the running audit (in bounded steps on its
    reactor) re-walk the chain (sl_chain.h) by position, a page at a time
    (bounded memory whatever the store holds): each entry must follow the
    one before (position, prev) and give its hash again from the rows it
    names (rebuilt from the ledger's, a block's, a verdict's, a gap's row)
    and its data. The first entry that does not is reported:

      - changed: a row or an entry no longer gives the hash;
      - removed: a position is missing, or a row an entry names is gone
        (unless a later retention entry, kind prune, removed it);
      - inserted: a row of events, blocks, verdicts or gaps that no entry
        names (sl_verify_rows), or an entry that does not follow the one
        before.

    A key's row (api_keys) is compared with the grant its newest key
    event's entry carries (sl_keystore_check): one edited is "changed"
    (the first column that differs named), one no entry carries
    "inserted", one whose events are chained but the row gone "removed".

    The walk starts at the latest retention cut (a checkpoint with cut 1:
    its head is the prev of the first entry kept) or at the genesis.
    sl_verify_checkpoints checks every checkpoint of the range: its head
    against the chain's hash at its position (a checkpoint past the head:
    entries removed at the end), its signature with the public key given
    (with a key given, an unsigned checkpoint is a bad one: the audit
    signs, so its signature was taken away), and its link: the checkpoint
    its count names (pos - count) must be there (one removed from between
    two others is found). A checkpoint file outside the database
    (sl_verify_checkpoint, line by line) adds what the store cannot: its
    newest line past the chain's end is entries removed with their
    checkpoints. sl_verify_head checks that the chain's head was left by
    an audit holding the key: its seal (sl_chain.h), or a checkpoint
    naming it; a head without either was appended by someone else.
    sl_verify_summaries compares the rows later records update (a
    stream's streams row, approvals, policies) with what the chain's
    entries carried (sl_summary.h). Rows older than the chain (dated
    before migration 006 was applied and before the chain's first entry,
    whose time its hash covers) are counted, not covered.

    The running audit takes the checks in bounded steps
    (sl_verify_rows_step, sl_verify_checkpoints_step,
    sl_verify_summaries_step): its reactor never waits on a whole table.
*/
#ifndef SL_VERIFY_H
#define SL_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/identity/sl_signkey.h"
#include "services/audit/store/sl_store.h"

//  sluice-audit verify's exit status (docs/audit.md).
typedef enum {
    SL_VERIFY_INTACT = 0,               //  nothing changed, removed or inserted; checkpoints match
    SL_VERIFY_BROKEN = 1,               //  the chain: a record changed, removed or inserted
    SL_VERIFY_BAD_CHECKPOINT = 2,       //  a checkpoint's signature or head does not match
    SL_VERIFY_UNREADABLE = 3            //  the store could not be read
} sl_verify_status_t;

typedef struct {
    int64_t from_pos;                   //  0: from the start (the last cut)
    int64_t to_pos;                     //  0: to the head
    const sl_signkey_t *public_key;     //  NULL: signatures are not checked (and said so)
    //  Unsigned checkpoints before the first one signed with the key (a
    //  store kept before it had one) are counted, not bad; the latest cut
    //  must be signed all the same (the walk starts there). The running
    //  audit's: sluice-audit verify, given a key, takes every unsigned one
    //  as bad.
    bool unsigned_before_key_ok;
} sl_verify_opts_t;

//  What a walk found so far.
typedef struct {
    sl_verify_status_t status;
    const char *problem;                //  "changed", "removed", "inserted", "checkpoint", "" when none
    char table [32];                    //  the table of the record named, "" when none
    char key [256];                     //  its key
    int64_t pos;                        //  the chain position concerned (0: none)
    char detail [512];                  //  one sentence
    int64_t start_pos;                  //  first position walked
    bool from_cut;                      //  the walk started at a retention cut
    int64_t checked_pos;                //  verified up to this position (start_pos - 1: nothing yet)
    int64_t checked_at;                 //  that entry's time, Unix ms
    int64_t entries;                    //  entries verified
    int64_t pruned;                     //  of them, naming rows retention removed (linkage checked)
    int64_t checkpoints;                //  checkpoints checked
    int64_t signed_good;                //  of them, with a good signature
    int64_t unsigned_count;             //  written without a key
    int64_t unchecked;                  //  signed, no public key given
    int64_t before_chain;               //  rows older than the chain, not covered
    const char *head_seal;              //  the head: "sealed", "checkpoint", "before_seals", "unchecked", ""
    int64_t summaries;                  //  rows compared with what the chain recorded
} sl_verify_report_t;

typedef struct _sl_verify_t sl_verify_t;

//  The store is borrowed; so is opts->public_key.
sl_verify_t *sl_verify_new (sl_store_t *store, const sl_verify_opts_t *opts);
void sl_verify_destroy (sl_verify_t **self_p);
//  Positions of the first entry at or after a time, of the last before
//  a time (Unix ms). 0 ok, -1 the store failed.
int sl_verify_pos_at (sl_store_t *store, int64_t at, bool after, int64_t *pos);
//  Verify up to max entries. 1 more is due, 0 caught up with the head (or
//  to_pos), or stopped at a problem; -1 the store failed (status 3; a
//  later call tries again).
int sl_verify_step (sl_verify_t *self, int max);
//  The rows no entry names (inserted), table by table. 0, -1 failed.
int sl_verify_rows (sl_verify_t *self);
//  The same, a part at a time (a range of stream ids; the gaps): 1 more
//  is due, 0 done, -1 failed.
int sl_verify_rows_step (sl_verify_t *self);
//  Every checkpoint of the range. 0, -1 failed.
int sl_verify_checkpoints (sl_verify_t *self);
//  The same, a page at a time: 1 more, 0 done, -1 failed.
int sl_verify_checkpoints_step (sl_verify_t *self);
//  The head left by an audit holding the key (the whole chain walked,
//  a public key given; after the checkpoints, the file's too). 0, -1.
int sl_verify_head (sl_verify_t *self);
//  The rows later records update against the chain (sl_summary.h). 0, -1.
int sl_verify_summaries (sl_verify_t *self);
//  The same, up to max rows: 1 more, 0 done (or a problem), -1 failed.
int sl_verify_summaries_step (sl_verify_t *self, int max);
//  One checkpoint (from the store, or a line of the checkpoint file):
//  its signature, and its head against the chain. 0, -1 failed.
typedef struct sl_checkpoint_s sl_checkpoint_t;
int sl_verify_checkpoint (sl_verify_t *self, const sl_checkpoint_t *cp);
const sl_verify_report_t *sl_verify_report (sl_verify_t *self);
//  The report as text lines or one JSON object.
void sl_verify_text (const sl_verify_report_t *r, sl_buf_t *out);
void sl_verify_json (const sl_verify_report_t *r, sl_buf_t *out);
//  The problem alone as a JSON object: kind, table, key, pos, detail.
void sl_verify_problem_json (const sl_verify_report_t *r, sl_buf_t *out);

#endif
