/*  sl_chain.h - the audit store's hash chain: every record, in write order.

    Each record sluice-audit writes (sl_archive_apply) becomes one entry of
    one chain per store: its position (1, 2, ...), the start of the hash
    of the entry before it (prev, SL_CHAIN_LINK digits) and its own hash,

        hash = hex SHA-256 (prev || canonical form)

    The canonical form is a length-prefixed encoding (sl_chain_canon_*) of
    a version tag, the entry's position, kind, key (ref) and time, then of
    the rows the record wrote once, column by column in the order of
    sl_chain_columns (the ledger's events row; a block's, a verdict's or a
    gap's row), then of data: what a record that updates a summary row
    (a stream's start, message, finish, error, end; a policy report; an
    approval) carried, as JSON (a stream's sid aside: the entry has it),
    kept in the entry itself because later records change that row. A
    stream record's ref is not stored (sl_chain_stream_ref rebuilds it):
    an entry is written for every record, so every byte of it counts. A verifier rebuilds the same form from the
    rows (sl_verify.h): a changed row, a removed one or a changed entry no
    longer gives the hash. A stream record's events row names its entry
    (chain_pos, sl_chain_next_pos): how verify finds a row no entry names
    and the console a stream's entries, without an index on the chain
    by stream that every record would pay for.

    Writing: the record handlers describe their entry (sl_chain_begin,
    sl_chain_row, sl_chain_data, sl_chain_end); the entries of a
    transaction are written in one multi-row INSERT by sl_chain_flush just
    before the commit. sl_chain_committed makes them the head after a
    commit; sl_chain_abort forgets them after a rollback.

    Several writers: the first entry of every transaction reads the head
    from the store again, under the write lock the transaction took
    (sl_store_begin), so audits sharing a store (a rolling update) append
    in turn to one chain. Should a head ever be stale all the same, the
    position's primary key refuses the entry and the transaction rolls
    back: no entry is written whose prev is not the true head.

    Seals: the hash chain alone is no proof of who wrote it (anyone who
    can write the database can compute the next hash). With the audit's
    signing key (sl_chain_set_key), the last entry of every transaction
    carries a seal, the Ed25519 signature of its position and hash
    (sl_chain_seal_message). A writer remembers the head it left (its
    commit, or a head it checked) and, at every transaction's first entry
    (under the write lock) and whenever asked (sl_chain_check: before a
    checkpoint), compares the store's head with it: a head that went back
    (entries removed at the end), an entry at its own head that is not the
    one it left (rewritten), or a newer head without a good seal (entries
    appended by someone without the key) breaks the chain
    (sl_chain_problem). A sibling audit's transactions carry its seal: a
    head it wrote is taken. A broken chain stops sealing (and the audit
    stops signing checkpoints): the records go on being written, and
    nothing vouches for them. Without a key nothing is sealed and only
    the first two are found. A store written before seals existed (its
    newest checkpoint of version 1, or none and no seal at all) has
    unsealed heads: sl_chain_start lets them be until this writer's own
    first checkpoint (sl_chain_set_unsealed_ok).

    Everything is hashed here, nowhere else: the canonical form has one
    definition for the writer and the verifier.
*/
#ifndef SL_CHAIN_H
#define SL_CHAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/identity/sl_signkey.h"
#include "services/audit/store/sl_store.h"

#define SL_CHAIN_HEX 65                 //  a hash in hex with its NUL
#define SL_CHAIN_VERSION "sluice-chain/1"   //  first field of every canonical form
#define SL_CHAIN_REF 512                //  an entry's key as text, with its NUL
//  Hex digits of the hash before it an entry stores (prev): the hash
//  covers the whole of it; the stored part only tells verify an entry
//  that does not follow the one before from one whose record changed.
#define SL_CHAIN_LINK 16

//  The rows an entry's hash covers, besides its data.
typedef enum {
    SL_CHAIN_EVENTS = 0,                //  the ledger: every stream record
    SL_CHAIN_BLOCKS,
    SL_CHAIN_VERDICTS,
    SL_CHAIN_GAPS,
    SL_CHAIN_KEY_EVENTS,                //  a key issued, rotated or revoked (sl_keystore.h)
    SL_CHAIN_ALERTS,                    //  a budget alert a gateway posted (sl_alertstore.h)
    SL_CHAIN_TABLES
} sl_chain_table_t;

typedef struct _sl_chain_t sl_chain_t;
typedef struct sl_checkpoint_s sl_checkpoint_t;     //  services/audit/recorder/sl_checkpoint.h

//  The table's name, its hashed columns (for a SELECT, in canonical
//  order) and their types, one letter per column: I integer, R real,
//  T text.
const char *sl_chain_table_name (sl_chain_table_t table);
const char *sl_chain_columns (sl_chain_table_t table);
const char *sl_chain_types (sl_chain_table_t table);

//  The canonical form, piece by piece (the writer and the verifier both
//  build it with these).
void sl_chain_canon_begin (sl_buf_t *out, int64_t pos, const char *kind, const char *ref, int64_t at);
//  A row: the table's name, then each value (count must be the table's
//  column count). Values are encoded by the column's declared type, so a
//  number read back as text (PostgreSQL) encodes as the number written.
void sl_chain_canon_row (sl_buf_t *out, sl_chain_table_t table, const sl_val_t *vals, int count);
//  The same from a row of `SELECT sl_chain_columns (table) ...`.
void sl_chain_canon_row_of (sl_buf_t *out, sl_chain_table_t table, const sl_row_t *row, int first);
void sl_chain_canon_data (sl_buf_t *out, sl_str_t data);
//  hex SHA-256 (prev || canon) into out.
void sl_chain_hash (const char *prev, sl_str_t canon, char out [SL_CHAIN_HEX]);
//  A stream record's key as text (sid:seq:sub): its entry's ref, which
//  the chain does not store (the entry has sid, seq and sub).
void sl_chain_stream_ref (char out [SL_CHAIN_REF], const char *sid, int64_t seq, int sub);
//  hex SHA-256 of a text (a start's big texts are kept by digest).
void sl_chain_digest (sl_str_t text, char out [SL_CHAIN_HEX]);
//  The hash before the first entry: 64 zeros.
const char *sl_chain_genesis (void);
//  The text an entry's seal signs: its position and hash.
void sl_chain_seal_message (sl_buf_t *out, int64_t pos, const char *hash);
//  Whether seal (hex) is key's seal of the entry at pos with hash.
bool sl_chain_seal_good (const sl_signkey_t *key, int64_t pos, const char *hash, const char *seal);

//  The store is borrowed.
sl_chain_t *sl_chain_new (sl_store_t *store);
void sl_chain_destroy (sl_chain_t **self_p);
//  Seal transactions with key and check the heads other writers left
//  with it (borrowed, outliving the chain; NULL: neither).
void sl_chain_set_key (sl_chain_t *self, const sl_signkey_t *key);
//  Whether a head without a seal is taken (a store written before seals).
void sl_chain_set_unsealed_ok (sl_chain_t *self, bool ok);
//  Read the head from the store (the last entry, or the last cut). The
//  first read is taken as it is; every later one is compared with the
//  head this writer left (see above). 0 ok (also when that broke the
//  chain), -1 the store failed.
int sl_chain_load (sl_chain_t *self);
//  At start: the head read, then compared with the newest checkpoint
//  known (newest; NULL: none), from the checkpoint file when there is
//  one: the chain must reach its position with its hash there, and a
//  head past it must be sealed (unless the store was written before
//  seals: newest of version 1, or none and no seal in the chain; then
//  unsealed heads are taken, sl_chain_set_unsealed_ok). 0 ok (also when
//  broken), -1 the store failed.
int sl_chain_start (sl_chain_t *self, const sl_checkpoint_t *newest);
//  Before a checkpoint (in the caller's transaction): the head read
//  again and compared (sl_chain_load), and the entry at the last
//  checkpoint's position (last; NULL: none) still the one it named.
//  0 ok (also when broken), -1 the store failed.
int sl_chain_check (sl_chain_t *self, const sl_checkpoint_t *last);
//  The chain no longer holds (sticky): kind ("removed", "changed",
//  "inserted"), the first position concerned, one sentence. false when
//  it holds. Any pointer may be NULL.
bool sl_chain_problem (sl_chain_t *self, const char **kind, int64_t *pos, const char **detail);

//  Break the chain from outside its own checks (sticky, as above): a
//  record found not to match its entry elsewhere (a key's row served to
//  the gateways, sl_keystore.h). detail is copied.
void sl_chain_break (sl_chain_t *self, const char *kind, int64_t pos, const char *detail);

//  The position the next entry will take (a stream record's events row
//  names it: chain_pos); -1 when the head cannot be read.
int64_t sl_chain_next_pos (sl_chain_t *self);

//  An entry: kind, its stream key (sid NULL for records of no stream),
//  ref (its key as text, shown and hashed) and time. Then its rows and
//  data, then sl_chain_end. -1 when the head cannot be read.
int sl_chain_begin (sl_chain_t *self, const char *kind, const char *sid, int64_t seq, int sub, const char *ref,
                    int64_t at);
void sl_chain_row (sl_chain_t *self, sl_chain_table_t table, const sl_val_t *vals, int count);
//  The values a summary record carried, as a JSON array (text, numbers,
//  null); written to the entry's data column.
void sl_chain_data (sl_chain_t *self, const sl_val_t *vals, int count);
void sl_chain_end (sl_chain_t *self);
//  Write the pending entries (one INSERT per up to a few hundred), inside
//  the caller's transaction. 0 ok (also with none), -1 the store failed.
int sl_chain_flush (sl_chain_t *self);
//  After the commit: the pending entries are the head.
void sl_chain_committed (sl_chain_t *self);
//  After a rollback: the pending entries are gone.
void sl_chain_abort (sl_chain_t *self);
//  Entries pending (not flushed and committed yet).
int sl_chain_pending (sl_chain_t *self);

//  The committed head: position (0: empty) and hash (the genesis when empty).
int64_t sl_chain_head_pos (sl_chain_t *self);
const char *sl_chain_head_hash (sl_chain_t *self);

#endif
