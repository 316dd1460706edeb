/*  audit.h - sluice-audit: the recorder and the console over one store.

    Two parts, each a folder with an interface of its own, sharing the
    store and nothing else (docs/architecture.md says why they are one
    program):

      - the recorder (services/audit/recorder/audit_recorder.h): the
        emitters' records, once, into the store; the chain, its
        checkpoints and its running verification; retention; the
        webhooks;
      - the console (services/audit/console/audit_console.h): the web
        console, its API over the store, the live pages, the decisions.

    This is the wiring between them: it opens the store both use, gives
    the console every batch the recorder commits (its live view), and
    answers what the console and the health check ask of the recorder
    (its emitters, whether the store answers, the webhook, the chain).
    With --console-port off there is no console: the recorder alone.
*/
#ifndef AUDIT_H
#define AUDIT_H

#include "common/service/sl_service.h"
#include "services/audit/console/sl_oidc.h"
#include "services/audit/recorder/audit_recorder.h"

typedef struct {
    const char *store;                  //  a SQLite file, or a PostgreSQL DSN
    audit_recorder_config_t recorder;
    const char *console_host;
    int console_port;                   //  -1: no console
    const char *console_keys;           //  comma-separated, "" for none (loopback only)
    const char *keys_token;             //  the gateways fetch the keys in force with it, NULL: none
    const char *keys_file;              //  the gateways' keys file, listed read-only, "": none
    sl_oidc_config_t console_oidc;      //  sign-in with a provider; issuer NULL: none
    const char *judge_approvals;        //  the judges' approvals endpoints: the console's decisions, "" : none
} audit_config_t;

typedef struct _audit_t audit_t;

//  NULL (logged) when the store cannot be opened, a part not made.
audit_t *audit_new (sl_service_t *svc, const audit_config_t *config);
void audit_destroy (audit_t **self_p);

#endif
