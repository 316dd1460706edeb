/*  audit_chain.h - sluice-audit's chain on its reactor: checkpoints, verification.

    The records' chain entries are written by sl_archive (sl_chain.h);
    this part of the service keeps the chain honest while it runs:

      - at start, compares the store's head with the newest checkpoint it
        knows (the checkpoint file's, outside the database, or the
        store's; signed with its key when it has one): a chain that ends
        before it, rewritten under it, or with a head past it that no
        audit holding the key sealed, is broken (sl_chain_start);
      - seals its transactions with the key, and compares the store's
        head with the one it left at each of them (sl_chain.h);
      - signs a checkpoint (sl_checkpoint.h) every checkpoint_records
        records and every checkpoint_seconds when records came, with the
        key of --signing-key (none: unsigned, logged once at start), at
        the store's head under its write lock, linked to the checkpoint
        before it, into the store and, when asked, a file outside it;
        never over a broken chain (sl_chain_check first);
      - walks the chain in bounded steps on a timer (sl_verify.h), new
        entries as they come and the whole chain again every
        verify_seconds; each whole pass also looks for rows no entry
        names, checks every checkpoint (signature, head, link) and
        compares the rows later records update with the chain, a part at
        a time; so a changed, removed or inserted record, or a bad
        checkpoint, shows as sluice_audit_chain_broken (and an error in
        the log) without anyone running verify;
      - exports the chain's metrics and its state for the console
        (GET /api/chain).

    A broken chain (its head, a record) stays broken until the audit
    restarts; a bad checkpoint is looked for again at each pass.
*/
#ifndef AUDIT_CHAIN_H
#define AUDIT_CHAIN_H

#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/identity/sl_signkey.h"
#include "common/service/sl_service.h"
#include "services/audit/recorder/sl_chain.h"
#include "services/audit/recorder/sl_checkpoint.h"
#include "services/audit/store/sl_store.h"

typedef struct {
    const char *signing_key;            //  the secret key file (NAME.sign_secret), "" unsigned
    int64_t checkpoint_records;         //  a checkpoint after this many records
    int64_t checkpoint_seconds;         //  and this often when records came
    const char *checkpoint_file;        //  "" none: one JSON line per checkpoint appended here
    int64_t verify_seconds;             //  the whole chain walked again this often
} audit_chain_config_t;

typedef struct _audit_chain_t audit_chain_t;

//  store and chain are borrowed. NULL (logged) when the key cannot be
//  read, the checkpoint file cannot be appended to or the store read.
audit_chain_t *audit_chain_new (sl_service_t *svc, sl_store_t *store, sl_chain_t *chain,
                                const audit_chain_config_t *config);
void audit_chain_destroy (audit_chain_t **self_p);
//  After a batch was committed: a checkpoint when enough records came.
void audit_chain_committed (audit_chain_t *self);
//  As the audit stops (what it took is committed): a last checkpoint at
//  the head when records came since the last one, so the checkpoint file
//  names everything it wrote.
void audit_chain_stop (audit_chain_t *self);
//  The key retention signs its cut with (NULL: none, or the chain is broken).
const sl_signkey_t *audit_chain_key (audit_chain_t *self);
//  After retention committed a cut: into the file, counted.
void audit_chain_cut (audit_chain_t *self, const sl_checkpoint_t *cut);
//  The chain's state as JSON (GET /api/chain).
void audit_chain_json (audit_chain_t *self, sl_buf_t *out);

#endif
