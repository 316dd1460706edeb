/*  audit.h - sluice-audit's reactor: emitters in, store, console, webhook.

    Connects one DEALER (CURVE, its own key of role audit) to the audit
    socket of every emitter of --emitters (names resolved again every 2 s),
    takes their records once and in order (sl_receiver), writes each to
    the store (sl_archive) in one transaction per batch, and acknowledges
    what is committed, so the emitters can forget it. Only then are the
    records shown live (sl_live, server-sent events to the console's
    pages) and posted to the webhook (sl_webhook, over curl multi in the
    same reactor). Approvals (audit_approvals.h): stored like the rest,
    decided from the console through the judges' control link, and
    posted, signed, to their own webhook. Retention runs in bounded steps on a timer. A store
    that fails (a bad statement: the batch is rolled back and asked for
    again; a record that fails twice is set aside, counted and logged) or
    goes away (PostgreSQL restarting: records wait in the emitters' spools
    while the audit reconnects) never loses a record silently.
*/
#ifndef AUDIT_H
#define AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "common/service/sl_service.h"

typedef struct _sl_routes_t sl_providers_t;   //  common/dialects/sl_providers.h

typedef struct {
    const char *emitters;               //  the emitters' audit endpoints, comma-separated
    const char *store;                  //  a SQLite file, or a PostgreSQL DSN
    const char *console_host;
    int console_port;                   //  -1: no console
    const char *console_keys;           //  comma-separated, "" for none (loopback only)
    size_t max_text;                    //  bytes of one text kept
    int64_t retain_ms;                  //  0: no bound by age
    int64_t retain_bytes;               //  0: no bound by size
    int64_t prune_ms;                   //  retention runs this often
    const char *webhook_url;            //  "": none
    const char *webhook_on;             //  "verdict" or "stream"
    const char *webhook_actions;        //  comma-separated actions, or "all"
    size_t webhook_queue;
    int webhook_attempts;
    const char *webhook_token;          //  sent as Bearer, or NULL
    const sl_providers_t *prices;       //  the routes file's prices (borrowed), NULL: no costs
    const char *judge_approvals;        //  the judges' approvals endpoints: the console's decisions, "" : none
    const char *approvals_webhook_url;  //  "" : no approvals webhook
    const char *approvals_webhook_secret;   //  its HMAC key, from the environment
    const char *signing_key;            //  the chain's checkpoints' key file, "" unsigned
    int64_t checkpoint_records;         //  a checkpoint every this many records
    int64_t checkpoint_seconds;         //  and this often when records came
    const char *checkpoint_file;        //  "" none: checkpoints also appended here
    int64_t verify_seconds;             //  the whole chain verified again this often
    int tools_per_team;                 //  tool definitions a team keeps at most (0: the default)
} audit_config_t;

typedef struct _audit_t audit_t;

//  NULL (logged) when the store cannot be opened or a socket not made.
audit_t *audit_new (sl_service_t *svc, const audit_config_t *config);
void audit_destroy (audit_t **self_p);

#endif
