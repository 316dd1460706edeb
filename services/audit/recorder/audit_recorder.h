/*  audit_recorder.h - sluice-audit's recorder: every emitter's records
    into the store, once.

    Connects one DEALER (CURVE, its own key of role audit) to the audit
    socket of every emitter of --emitters (names resolved again every 2 s),
    takes their records once and in order (sl_receiver), writes each to
    the store (sl_archive) in one transaction per batch, and acknowledges
    what is committed, so the emitters can forget it. Only then is the
    batch handed on (audit_recorder_on_commit: the console's live view)
    and posted to the webhooks (audit_webhook.h, audit_approvals.h). The
    chain is kept honest on the reactor (audit_chain.h: checkpoints, the
    running verification); retention runs in bounded steps on a timer. A
    store that fails (a bad statement: the batch is rolled back and asked
    for again; a record that fails twice is set aside, counted and logged)
    or goes away (PostgreSQL restarting: records wait in the emitters'
    spools while the recorder reconnects) never loses a record silently.
    On drain (sl_service.h) no more records are read; what was taken is
    committed and acknowledged already.

    It shares the store with the console (services/audit/console/) and
    nothing else: what the console shows of it (its emitters, whether the
    store answers, the webhook, the chain) is read through this interface.
*/
#ifndef AUDIT_RECORDER_H
#define AUDIT_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/service/sl_service.h"
#include "common/http/sl_webhook.h"
#include "services/audit/recorder/sl_chain.h"
#include "services/audit/store/sl_record.h"
#include "services/audit/store/sl_store.h"

typedef struct _sl_routes_t sl_providers_t;   //  common/dialects/sl_providers.h

typedef struct {
    const char *emitters;               //  the emitters' audit endpoints, comma-separated
    size_t max_text;                    //  bytes of one text kept
    int64_t retain_ms;                  //  0: no bound by age
    int64_t retain_bytes;               //  0: no bound by size
    int64_t prune_ms;                   //  retention runs this often
    const char *webhook_url;            //  "": none
    const char *webhook_on;             //  "verdict" or "stream"
    const char *webhook_actions;        //  comma-separated actions, or "all"
    size_t webhook_queue;               //  events held at most (both webhooks)
    int webhook_attempts;               //  tries per event (both webhooks)
    const char *webhook_token;          //  sent as Bearer, or NULL
    const sl_providers_t *prices;       //  the routes file's prices (borrowed), NULL: no costs
    const char *approvals_webhook_url;  //  "" : no approvals webhook
    const char *approvals_webhook_secret;   //  its HMAC key, from the environment
    const char *signing_key;            //  the chain's checkpoints' key file, "" unsigned
    int64_t checkpoint_records;         //  a checkpoint every this many records
    int64_t checkpoint_seconds;         //  and this often when records came
    const char *checkpoint_file;        //  "" none: checkpoints also appended here
    int64_t verify_seconds;             //  the whole chain verified again this often
    int tools_per_team;                 //  tool definitions a team keeps at most (0: the default)
} audit_recorder_config_t;

typedef struct _audit_recorder_t audit_recorder_t;

//  A batch of records the store has just committed, in order (borrowed
//  for the call).
typedef void (audit_recorder_commit_fn) (void *arg, const sl_record_t *records, size_t count);

//  The store is borrowed (the recorder keeps its connection: it
//  reconnects when it went away). NULL (logged) when the chain cannot be
//  read, the key or the checkpoint file used, or an option is wrong.
audit_recorder_t *audit_recorder_new (sl_service_t *svc, sl_store_t *store, const audit_recorder_config_t *config);
//  Stops taking records; a last checkpoint covers what was taken.
void audit_recorder_destroy (audit_recorder_t **self_p);
//  Who is given each committed batch (one; NULL: nobody).
void audit_recorder_on_commit (audit_recorder_t *self, audit_recorder_commit_fn *fn, void *arg);
//  The emitters connected to, and of them those heard from lately.
size_t audit_recorder_emitters (audit_recorder_t *self);
size_t audit_recorder_sending (audit_recorder_t *self);
//  Whether the store answers (false while it is away).
bool audit_recorder_store_ok (audit_recorder_t *self);
//  The webhook's queue and counts; false when there is no webhook.
bool audit_recorder_webhook (audit_recorder_t *self, size_t *queued, sl_webhook_stats_t *stats);
//  The chain's state as JSON (GET /api/chain; audit_chain.h).
void audit_recorder_chain_json (audit_recorder_t *self, sl_buf_t *out);
//  The chain the recorder writes (borrowed): the console's key events
//  are entries of it (sl_keystore.h).
sl_chain_t *audit_recorder_chain (audit_recorder_t *self);

#endif
