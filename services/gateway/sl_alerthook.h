/*  sl_alerthook.h - the limits' alerts posted to a webhook
    (--alerts-webhook): each threshold of a day's tokens or a month's
    budget that a stream crossed (sl_limits.h: once per day or month in
    all the gateways), as JSON,

        {"type":"limits_alert","team":"payments","key":"alice-laptop",
         "user":"alice","subject":"key:alice-laptop","limit":"budget_tokens",
         "threshold":80,"used":800,"max":1000,"period":"month",
         "window":"202802"}

    ("used" and "max" in tokens, or in dollars for budget_usd), signed as
    the approvals webhook's posts (sl_webhook_sign: X-Sluice-Timestamp and
    X-Sluice-Signature, with the secret SLUICE_APPROVALS_WEBHOOK_SECRET),
    through the webhook queue (sl_webhook.h) for retries.
*/
#ifndef SL_ALERTHOOK_H
#define SL_ALERTHOOK_H

#include <stddef.h>

#include "common/base/sl_buf.h"
#include "common/identity/sl_limits.h"
#include "common/service/sl_service.h"

#define SL_ALERTHOOK_QUEUE 1000         //  alerts held while the hook does not answer
#define SL_ALERTHOOK_ATTEMPTS 8         //  posts of one alert at most

typedef struct _sl_alerthook_t sl_alerthook_t;

typedef struct {
    const char *url;                    //  "" or NULL: no hook (NULL is returned, nothing logged)
    const char *secret;                 //  its HMAC key (required with a URL)
} sl_alerthook_config_t;

//  NULL without a URL, or (logged, *failed set) with a URL and no secret.
sl_alerthook_t *sl_alerthook_new (sl_service_t *svc, const sl_alerthook_config_t *config, bool *failed);
void sl_alerthook_destroy (sl_alerthook_t **self_p);
//  Post an alert of plan (safe on NULL: nothing).
void sl_alerthook_post (sl_alerthook_t *self, const sl_limits_plan_t *plan, const sl_limits_alert_t *alert);
//  The body of an alert (above), into out.
void sl_alerthook_body (const sl_limits_plan_t *plan, const sl_limits_alert_t *alert, sl_buf_t *out);

#endif
