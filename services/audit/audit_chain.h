/*  audit_chain.h - sluice-audit's chain on its reactor: checkpoints, verification.

    The records' chain entries are written by sl_archive (sl_chain.h);
    this part of the service keeps the chain honest while it runs:

      - signs a checkpoint (sl_checkpoint.h) every checkpoint_records
        records and every checkpoint_seconds when records came, with the
        key of --signing-key (none: unsigned, logged once at start), into
        the store and, when asked, a file outside it;
      - walks the chain in bounded steps on a timer (sl_verify.h), new
        entries as they come and the whole chain again every
        verify_seconds, so a changed or removed record shows as
        sluice_audit_chain_broken (and an error in the log) without anyone
        running verify;
      - exports the chain's metrics and its state for the console
        (GET /api/chain).
*/
#ifndef AUDIT_CHAIN_H
#define AUDIT_CHAIN_H

#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/identity/sl_signkey.h"
#include "common/service/sl_service.h"
#include "services/audit/sl_chain.h"
#include "services/audit/sl_checkpoint.h"
#include "services/audit/sl_store.h"

typedef struct {
    const char *signing_key;            //  the secret key file (NAME.sign_secret), "" unsigned
    int64_t checkpoint_records;         //  a checkpoint after this many records
    int64_t checkpoint_seconds;         //  and this often when records came
    const char *checkpoint_file;        //  "" none: one JSON line per checkpoint appended here
    int64_t verify_seconds;             //  the whole chain walked again this often
} audit_chain_config_t;

typedef struct _audit_chain_t audit_chain_t;

//  store and chain are borrowed. NULL (logged) when the key cannot be read.
audit_chain_t *audit_chain_new (sl_service_t *svc, sl_store_t *store, sl_chain_t *chain,
                                const audit_chain_config_t *config);
void audit_chain_destroy (audit_chain_t **self_p);
//  After a batch was committed: a checkpoint when enough records came.
void audit_chain_committed (audit_chain_t *self);
//  The key retention signs its cut with (NULL: none).
const sl_signkey_t *audit_chain_key (audit_chain_t *self);
//  After retention committed a cut: into the file, counted.
void audit_chain_cut (audit_chain_t *self, const sl_checkpoint_t *cut);
//  The chain's state as JSON (GET /api/chain).
void audit_chain_json (audit_chain_t *self, sl_buf_t *out);

#endif
