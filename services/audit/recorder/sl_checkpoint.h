/*  sl_checkpoint.h - signed checkpoints of the audit's hash chain.

    A checkpoint states the chain's head at a position: {pos, count, head,
    at, key id, cut}, signed with the audit's Ed25519 key (sl_signkey.h;
    without one it is written unsigned and says so). The audit writes one
    every N records or M seconds (when records came), and one at each
    retention cut (cut 1: the chain's entries up to pos were removed with
    the records they named). Each goes into the store's checkpoints table
    and, when asked, as one JSON line appended (and fsynced) to a file
    outside the database: whoever edits the database cannot take back what
    that file holds.

    The signature covers the text sl_checkpoint_message gives, nothing else.

    Checkpoints are linked: a checkpoint of version 2 (written since
    migration 008) counts the entries since the checkpoint before it in
    the store (count = pos - that one's pos, 0 for the first), and every
    writer reads that one under the store's write lock, so one removed
    from between two others leaves the next one naming a position no
    checkpoint has (sl_verify_checkpoints). Its version also says that
    the writers sealed their transactions from then on (sl_chain.h): a
    store whose newest checkpoint is of version 1 was written before.
*/
#ifndef SL_CHECKPOINT_H
#define SL_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/identity/sl_signkey.h"
#include "services/audit/recorder/sl_chain.h"
#include "services/audit/store/sl_store.h"

#define SL_CHECKPOINT_VERSION 2         //  the version written (linked, sealed transactions)

typedef struct sl_checkpoint_s {
    int version;                        //  1 or 2 (0 when written: the current)
    int64_t pos;                        //  the head's position
    int64_t count;                      //  entries since the checkpoint before (version 2: in the store)
    char head [SL_CHAIN_HEX];           //  the hash at pos
    int64_t at;                         //  when, Unix ms
    bool cut;                           //  retention removed the chain up to pos
    char key_id [SL_SIGNKEY_ID_HEX];    //  "" unsigned
    char signature [SL_SIGNKEY_SIG_HEX];    //  hex, "" unsigned
} sl_checkpoint_t;

typedef enum {
    SL_CHECKPOINT_GOOD = 0,             //  signed by the key given, signature good
    SL_CHECKPOINT_BAD,                  //  the signature does not match
    SL_CHECKPOINT_OTHER_KEY,            //  signed by another key than the one given
    SL_CHECKPOINT_UNSIGNED,             //  written without a key
    SL_CHECKPOINT_UNCHECKED             //  signed, but no public key to check it with
} sl_checkpoint_check_t;

//  The text a checkpoint's signature covers.
void sl_checkpoint_message (sl_buf_t *out, const sl_checkpoint_t *cp);
//  Sign cp with key (NULL: unsigned) and insert it into the store (inside
//  the caller's transaction, when one is open), as the current version.
//  0 ok, -1 the store failed.
int sl_checkpoint_write (sl_store_t *store, const sl_signkey_t *key, sl_checkpoint_t *cp);
//  The position of the store's checkpoint before pos (0: none), the one
//  a new checkpoint at pos counts from. 0 ok, -1 the store failed.
int sl_checkpoint_before (sl_store_t *store, int64_t pos, int64_t *before);
//  cp as one JSON object (no newline).
void sl_checkpoint_json (const sl_checkpoint_t *cp, sl_buf_t *out);
//  Append cp's JSON line to the file at path and fsync. 0 ok, -1 (errno).
int sl_checkpoint_append (const char *path, const sl_checkpoint_t *cp);
//  Whether the file at path can be appended to (made when absent). 0, -1 (errno).
int sl_checkpoint_appendable (const char *path);
//  One line of the file (sl_checkpoint_json) into cp. 0 ok, -1 not a checkpoint.
int sl_checkpoint_parse (sl_str_t line, sl_checkpoint_t *cp);
//  The newest checkpoint (the highest position) among the file's last
//  lines (its last 64 KiB: writers sharing the file may append out of
//  order by a little), signed by key when one is given (lines another key
//  or nobody signed are passed over). *found false when there is none or
//  no file. 0 ok, -1 the file could not be read (errno).
int sl_checkpoint_newest_in_file (const char *path, const sl_signkey_t *key, sl_checkpoint_t *cp, bool *found);
//  Check cp's signature with key (NULL: none given).
sl_checkpoint_check_t sl_checkpoint_check (const sl_checkpoint_t *cp, const sl_signkey_t *key);
//  A row of `SELECT SL_CHECKPOINT_COLUMNS FROM checkpoints` into cp.
#define SL_CHECKPOINT_COLUMNS "pos, count, head, at, cut, key_id, signature, version"
void sl_checkpoint_from_row (sl_checkpoint_t *cp, const sl_row_t *row);

#endif
