/*  audit_console.h - sluice-audit's console: its HTTP server, live pages
    and decisions.

    Serves the web console on --console-host:--console-port from the
    reactor (libmicrohttpd, sl_httpd.h): every request is answered by
    sl_console.h (who may ask, the pages, the API over the store), but
    for the probes of the console's port (the service's, sl_service.h),
    the live pages and the decisions:

      - GET /api/live: a page watching live gets the view's snapshot
        (sl_live.h), then every record the store commits, as server-sent
        events, with a keep-alive comment every 15 s; a page that cannot
        keep up is dropped (its browser reconnects and gets a snapshot);
      - POST /api/approvals/<id>: the judges decide (audit_decisions.h);
      - GET /login, /login/callback: the OpenID provider is asked through
        libcurl multi on the reactor (sl_curlm.h, SL_OIDC_TIMEOUT_MS a
        request), the browser waits, suspended, and is answered when the
        provider has answered, or sent to the refusal page after
        signin_wait_ms: a slow provider never holds up the recording.

    Records reach the live view from whoever commits them
    (audit_console_committed: the recorder, through the program's
    wiring, audit.h); what /api/meta and /api/chain say beyond the store,
    the program tells it (audit_console_on_meta, audit_console_on_chain).
    The console shares the store with the recorder and nothing else.
*/
#ifndef AUDIT_CONSOLE_H
#define AUDIT_CONSOLE_H

#include <stddef.h>

#include "common/service/sl_service.h"
#include "services/audit/console/sl_console.h"
#include "services/audit/store/sl_record.h"
#include "services/audit/store/sl_store.h"

typedef struct {
    const char *host;                   //  address to listen on
    int port;                           //  0: any free port
    const char *keys;                   //  comma-separated console keys, "" for none (loopback only)
    sl_oidc_config_t oidc;              //  sign-in with a provider (issuer NULL: none); redirect_uri
                                        //  NULL: http://host:port/login/callback
    const char *judges;                 //  the judges' approvals endpoints, "": decisions are refused
    const char *keys_token;             //  the gateways' token for GET /api/keys/served, NULL: none
    const char *keys_file;              //  the gateways' keys file, listed read-only ("" or NULL: none);
                                        //  reloaded as the gateways reload it (sl_keywatch.h)
    int signin_wait_ms;                 //  a sign-in waits this long for the provider, then
                                        //  is refused (0: SL_OIDC_WAIT_MS)
} audit_console_config_t;

typedef struct _audit_console_t audit_console_t;

//  The store is borrowed. NULL (logged) when the port cannot be had, the
//  judges' endpoints are malformed, or sign-in is half configured (an
//  issuer without a client id).
audit_console_t *audit_console_new (sl_service_t *svc, sl_store_t *store, const audit_console_config_t *config);
void audit_console_destroy (audit_console_t **self_p);
//  What /api/meta says beyond the store, and /api/chain (sl_console.h).
void audit_console_on_meta (audit_console_t *self, sl_console_meta_fn *fn, void *arg);
void audit_console_on_chain (audit_console_t *self, sl_console_meta_fn *fn, void *arg);
//  The recorder's hash chain, where a key's change is entered (borrowed).
void audit_console_set_chain (audit_console_t *self, sl_chain_t *chain);
//  Records the store has just committed, in order: the live view, and the
//  pages watching it.
void audit_console_committed (audit_console_t *self, const sl_record_t *records, size_t count);
//  Streams in flight in the live view.
size_t audit_console_live_streams (audit_console_t *self);
//  The port it listens on.
int audit_console_port (audit_console_t *self);

#endif
