/*  sl_admission.h - who may start a stream, now: the gateway's identity
    and limits.

    Before a request goes anywhere the gateway asks three things:

      1. Whose is it (sl_admission_identify, as soon as the headers are
         in): the credential against the keys (--keys-file, else
         SLUICE_CLIENT_KEYS; sl_keywatch reloads the file). A caller, or
         a refusal with its reason, counted in
         sluice_requests_unauthorized_total{reason}. Without keys nobody
         is checked and every request is an anonymous caller.
      2. May it, once the request is parsed (sl_admission_admit): the model
         against the key's or team's globs (403 permission_error), then its
         limits in the store (this process's, or Redis with --redis-url /
         SLUICE_REDIS_URL, waited for at most --limits-timeout-ms). Refused:
         429 rate_limit_error with Retry-After. A store that cannot answer:
         the team's limits_on_error, allow (counted, logged) or 503; never
         silent. The answer may come at once or later, from the reactor.
      3. What it spent, at its stream's end (sl_admission_finish): tokens
         and money (at the routes file's prices) added to the day's and the
         month's counters, its place among the concurrent streams let go.
         A stream already under way is never cut by a limit it crossed: the
         next request is refused.

    A caller holds the keyring it was identified by (a reload does not pull
    it away) and, once admitted, its limits plan. Finishing a caller whose
    admission is still waiting for the store lets it go when the answer
    comes (an admitted one gives its place back).
*/
#ifndef SL_ADMISSION_H
#define SL_ADMISSION_H

#include <stdbool.h>
#include <stdint.h>

#include "common/identity/sl_identity.h"
#include "common/service/sl_service.h"
#include "proto/sl_msg.h"

typedef struct _sl_routes_t sl_providers_t;   //  common/dialects/sl_providers.h

#define SL_ADMISSION_TIMEOUT_MS 50      //  --limits-timeout-ms: the longest wait for Redis
#define SL_ADMISSION_RETRY_S 1          //  Retry-After of a 503 when the store cannot answer
#define SL_ADMISSION_BYTES_PER_TOKEN 4  //  a usage estimate from bytes (none reported)

typedef struct _sl_admission_t sl_admission_t;
typedef struct _sl_caller_t sl_caller_t;

typedef struct {
    const char *keys_path;              //  --keys-file, "" or NULL: none
    const char *client_keys;            //  SLUICE_CLIENT_KEYS, without a keys file
    const char *keys_url;               //  the keys the console issued ("" or NULL: none)
    const char *keys_token;             //  its Bearer token (NULL: none)
    bool open_until_issued;             //  on loopback: open while the console has issued no key
    int64_t watch_ms;                   //  how often the keys file is looked at
    const char *redis_url;              //  "" or NULL: limits in this process
    int limits_timeout_ms;              //  the longest wait for the store
    const char *alerts_url;             //  --alerts-webhook: limits alerts posted there ("" or NULL: none)
    const char *alerts_secret;          //  its HMAC key (SLUICE_APPROVALS_WEBHOOK_SECRET)
    const sl_providers_t *routes;       //  prices (borrowed, outlives the admission)
} sl_admission_config_t;

typedef enum {
    SL_ADMITTED = 0,
    SL_ADMIT_FORBIDDEN,                 //  a model the key may not ask for (403)
    SL_ADMIT_LIMITED,                   //  a limit has no room (429)
    SL_ADMIT_UNAVAILABLE                //  the store cannot answer and the team says deny (503)
} sl_admit_outcome_t;

typedef struct {
    int outcome;                        //  sl_admit_outcome_t
    int status;                         //  the HTTP status of a refusal
    const char *code;                   //  its error type, in every dialect's words
    char message [256];                 //  what the client reads
    char rule [48];                     //  the verdict's rule: "models", "limit:rpm", "limits_store"
    int64_t retry_after;                //  seconds, 0: none
} sl_admission_answer_t;

//  The answer (borrowed for the call); caller is the one given to admit.
typedef void (sl_admission_done_fn) (void *arg, sl_caller_t *caller, const sl_admission_answer_t *answer);

//  NULL when the keys file does not load or the Redis URL is not one
//  (logged): the gateway must not start.
sl_admission_t *sl_admission_new (sl_service_t *service, const sl_admission_config_t *config);
void sl_admission_destroy (sl_admission_t **self_p);
//  True when credentials are checked (a keys file or SLUICE_CLIENT_KEYS).
bool sl_admission_checks (sl_admission_t *self);
//  The running keyring (borrowed: sl_keyring_ref to keep it; a reload
//  makes a new one), NULL without keys.
sl_keyring_t *sl_admission_keyring (sl_admission_t *self);

//  The caller of a credential (NULL or "": none), or NULL when it is
//  refused (*reason: the metric label, static). Without keys every
//  credential is an anonymous caller.
sl_caller_t *sl_admission_identify (sl_admission_t *self, const char *credential, const char **reason);
const sl_identity_t *sl_caller_identity (const sl_caller_t *caller);
//  The caller's team as a metric label (sl_teamlabel.h): "default" for an
//  anonymous one.
const char *sl_caller_team_label (const sl_caller_t *caller);

//  May the caller start a stream (sid) asking for model? done is called
//  exactly once, maybe before this returns. model NULL: no model to
//  check, the limits only (an MCP request: its server's teams decide).
void sl_admission_admit (sl_admission_t *self, sl_caller_t *caller, const char *model, const uint8_t *sid,
                         sl_admission_done_fn *done, void *arg);
//  The caller's stream lives on: its places among the concurrent streams
//  are held for another lease (sl_limits.h); called every
//  SL_LIMITS_RENEW_S for every live stream. Nothing when it holds none.
void sl_admission_renew (sl_admission_t *self, sl_caller_t *caller);
//  The caller's stream ended (or never started): add what it spent (usage
//  NULL: nothing known), then let the caller go. estimated: the usage is
//  an estimate. *caller_p is NULL after.
void sl_admission_finish (sl_admission_t *self, sl_caller_t **caller_p, const char *model, const sl_usage_t *usage,
                          bool estimated);

#endif
