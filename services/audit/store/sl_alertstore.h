/*  sl_alertstore.h - the budget alerts the gateways post, in the audit's
    store (SQLite or PostgreSQL, migration 011_alerts.sql).

    A gateway that sees a stream's usage cross a threshold of a day's
    tokens or a month's budget (common/identity/sl_limits.h: once per
    window in all the gateways) posts it to the audit (POST /api/alerts,
    sl_console_alerts.h) as the alerts webhook's body
    (services/gateway/sl_alerthook.h):

        {"type":"limits_alert","id":"<32 hex digits>","at":<ms>,
         "team":"payments","key":"alice-laptop","user":"alice",
         "subject":"key:alice-laptop","limit":"budget_usd","threshold":80,
         "used":8.1,"max":10,"period":"month","window":"202612"}

    id names the crossing (a hash of its subject, limit, threshold and
    window: the same in every post of it, from any gateway), so a post
    tried again after an answer that was lost is refused as a duplicate,
    never recorded twice. Every other member is checked (an unknown one
    refused, sl_alertstore_parse).

    Each alert is a row of alerts and an entry of the audit's hash chain
    (sl_chain.h: kind "alert", its ref the row's pos, the row's columns
    hashed), written in the same transaction: verify names an alert
    changed, removed or inserted like a key event (sl_verify.h). The chain
    is the recorder's (borrowed; it must have no entry pending, the alert
    is refused otherwise); NULL writes no entry (tests of the store alone).

    An alert holds no contents (who, which limit, how much): every console
    role may list them (GET /api/alerts).
*/
#ifndef SL_ALERTSTORE_H
#define SL_ALERTSTORE_H

#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"
#include "services/audit/store/sl_store.h"

typedef struct _sl_chain_t sl_chain_t;  //  services/audit/recorder/sl_chain.h

#define SL_ALERTSTORE_WHY_MAX 160
#define SL_ALERTSTORE_ID_HEX 32         //  hex digits of an alert's id
#define SL_ALERTSTORE_TEXT_MAX 256      //  a team, key, user or subject, bytes
#define SL_ALERTSTORE_LIST_MAX 500      //  alerts one list gives at most
#define SL_ALERTSTORE_LIST_DEFAULT 100

//  One alert as posted (owned; sl_alert_clear).
typedef struct {
    char id [SL_ALERTSTORE_ID_HEX + 1];
    int64_t crossed_at;                 //  ms, as the gateway saw it
    char *team, *key, *user;            //  NULL: none
    char *subject;
    char limit [16];                    //  tokens_per_day, budget_tokens, budget_usd
    int threshold;                      //  percent, 1 to 100
    double used, max;                   //  tokens, or dollars for budget_usd
    char period [8];                    //  day, month
    char window [16];                   //  yyyymmdd, yyyymm
} sl_alert_t;

//  Parse and check a posted alert. 0 ok; -1 with the reason.
int sl_alert_parse (sl_str_t body, sl_alert_t *out, char why [SL_ALERTSTORE_WHY_MAX]);
void sl_alert_clear (sl_alert_t *self);

//  Record alert at now (ms), with its chain entry. 0 recorded (*pos its
//  row), 1 an alert of this id is recorded already (nothing written),
//  -1 the store failed.
int sl_alertstore_record (sl_store_t *store, sl_chain_t *chain, const sl_alert_t *alert, int64_t now,
                          int64_t *pos);
//  The newest alerts recorded at or after since (ms), at most limit
//  (SL_ALERTSTORE_LIST_MAX; 0: SL_ALERTSTORE_LIST_DEFAULT), newest first:
//  [{"id","at","crossed_at","team","key","user","subject","limit",
//    "threshold","used","max","period","window"}] appended to out.
//  0 ok, -1 store failed.
int sl_alertstore_list (sl_store_t *store, int64_t since, int limit, sl_buf_t *out);

#endif
