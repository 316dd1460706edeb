/*  sl_alerthook.h - the limits' alerts posted to a webhook
    (--alerts-webhook) and to the audit: each threshold of a day's tokens
    or a month's budget that a stream crossed (sl_limits.h: once per day
    or month in all the gateways), as JSON,

        {"type":"limits_alert","id":"<32 hex digits>","at":1835395170000,
         "team":"payments","key":"alice-laptop",
         "user":"alice","subject":"key:alice-laptop","limit":"budget_tokens",
         "threshold":80,"used":800,"max":1000,"period":"month",
         "window":"202802"}

    ("used" and "max" in tokens, or in dollars for budget_usd; "id" the
    crossing's, sl_limits_alert_id: the same from every gateway, so a
    receiver can tell a post tried again; "at" when it crossed, Unix ms),
    through the webhook queue (sl_webhook.h) for retries.

    To the webhook, signed as the approvals webhook's posts
    (sl_webhook_sign: X-Sluice-Timestamp and X-Sluice-Signature, with the
    secret SLUICE_APPROVALS_WEBHOOK_SECRET). To the audit (POST
    /api/alerts at the origin of --keys-url, sl_alerthook_audit_url), with
    the keys token as Bearer, so each crossing is recorded in its hash
    chain and shows in the console: kept and tried again while the audit
    is unreachable (SL_ALERTHOOK_AUDIT_ATTEMPTS, about an hour), a 409
    (recorded already: an earlier post whose answer was lost) taken as
    done. A queue that is full drops the new alert, an alert whose last
    attempt failed is dropped: each counted (sluice_alerts_<name>_dropped_total,
    _given_up_total) and logged, never silent.
*/
#ifndef SL_ALERTHOOK_H
#define SL_ALERTHOOK_H

#include <stdbool.h>
#include <stddef.h>

#include "common/base/sl_buf.h"
#include "common/identity/sl_limits.h"
#include "common/service/sl_service.h"

#define SL_ALERTHOOK_QUEUE 1000         //  alerts held while the hook does not answer
#define SL_ALERTHOOK_ATTEMPTS 8         //  posts of one alert at most
#define SL_ALERTHOOK_AUDIT_ATTEMPTS 130 //  to the audit: 30 s apart after the first few, about an hour
#define SL_ALERTHOOK_URL_MAX 2048

typedef struct _sl_alerthook_t sl_alerthook_t;

typedef struct {
    const char *url;                    //  "" or NULL: no hook (NULL is returned, nothing logged)
    const char *secret;                 //  its HMAC key (required with a URL, unless bearer)
    const char *bearer;                 //  sent as Authorization: Bearer instead of a signature (the audit)
    const char *name;                   //  in metrics and logs: "webhook" (NULL) or "audit"
    int attempts;                       //  posts of one alert at most (0: SL_ALERTHOOK_ATTEMPTS)
    bool conflict_is_done;              //  a 409 answer means taken already (the audit's duplicate)
} sl_alerthook_config_t;

//  The audit's alerts endpoint for the keys URL the gateway fetches
//  (--keys-url): /api/keys/served replaced by /api/alerts (a path before
//  it kept), or else its scheme, host and port then /api/alerts. 0, or
//  -1 when keys_url is not http(s)://host... or too long.
int sl_alerthook_audit_url (const char *keys_url, char out [SL_ALERTHOOK_URL_MAX]);

//  NULL without a URL, or (logged, *failed set) with a URL and neither a
//  secret nor a bearer token.
sl_alerthook_t *sl_alerthook_new (sl_service_t *svc, const sl_alerthook_config_t *config, bool *failed);
void sl_alerthook_destroy (sl_alerthook_t **self_p);
//  Post an alert of plan (safe on NULL: nothing).
void sl_alerthook_post (sl_alerthook_t *self, const sl_limits_plan_t *plan, const sl_limits_alert_t *alert);
//  The body of an alert (above), into out.
void sl_alerthook_body (const sl_limits_plan_t *plan, const sl_limits_alert_t *alert, sl_buf_t *out);

#endif
