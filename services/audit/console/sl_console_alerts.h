/*  sl_console_alerts.h - the budget alerts in the console: posted by the
    gateways, recorded in the audit's hash chain, listed for everyone who
    may read the console (sl_alertstore.h).

        POST /api/alerts        a crossing, as the alerts webhook's body
                                (sl_alerthook.h), from a gateway: for the
                                keys token (SLUICE_KEYS_TOKEN, as Bearer)
                                only. 201 {"id","pos"} recorded; 409 an
                                alert of this id is recorded already (the
                                gateway's retry after a lost answer: done);
                                400 a bad body, saying why; 415 not JSON;
                                401 without the token; 503 the store or
                                the chain failed (the gateway tries again)
        GET  /api/alerts?since&limit   {"alerts":[...]}: the newest first
                                (since: Unix ms, the last 30 days by
                                default; limit: 100, at most 500), for
                                viewers and above: an alert holds no
                                contents

    Without the chain an alert is refused (503), never recorded unchained.
*/
#ifndef SL_CONSOLE_ALERTS_H
#define SL_CONSOLE_ALERTS_H

#include <stdbool.h>
#include <stdint.h>

#include "services/audit/console/sl_console.h"
#include "services/audit/recorder/sl_chain.h"
#include "services/audit/store/sl_store.h"

#define SL_CONSOLE_ALERTS_DAYS 30       //  GET /api/alerts without since: this many days back

typedef struct {
    sl_store_t *store;
    sl_chain_t *chain;                  //  where every alert is entered, NULL: posts refused
    const char *token;                  //  the gateways' keys token (NULL or "": no post taken)
    int64_t now;                        //  ms
    bool may_read;                      //  the caller holds a console role (viewer or above)
} sl_console_alerts_ctx_t;

//  Whether req is for /api/alerts; when it is, it is answered into resp,
//  who may ask decided here (a GET without may_read: false, left to the
//  console's refusal).
bool sl_console_alerts_handle (const sl_console_alerts_ctx_t *ctx, const sl_console_req_t *req,
                               sl_console_resp_t *resp);

#endif
