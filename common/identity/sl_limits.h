/*  sl_limits.h - what callers may spend: requests a minute, streams at
    once, tokens a day, a budget a month; checked before a request goes
    upstream, counted when it ends.

    A request has subjects, each with its limits (sl_limits_spec_t): its
    key (or its token's user) and its team. sl_limits_plan turns them and
    the time into counters, one per limit that is set:

      rpm             requests in the current UTC minute
      concurrent      streams under way (a set of stream ids, each held
                      for a lease that its gateway renews while the stream
                      lives, so a gateway that dies does not hold its
                      streams' places for ever)
      tokens_per_day  input + output tokens of the current UTC day
      budget_tokens   tokens of the current UTC month
      budget_usd      money of the current UTC month, in micro-dollars

    A store (sl_limits_store_t: in this process, or Redis for several
    gateways) admits a plan atomically: either every counter has room and
    the request's own counts are added (a request, a stream), or none is
    touched and the first counter without room is named, with when it will
    have room again (Retry-After). Tokens and money are added when the
    stream ends (sl_limits_usage), with the same counters' keys; a stream
    already under way is never cut by a limit it crossed.

    Alerts: a subject's spec may name thresholds (percents, alert_at).
    When usage added at a stream's end moves a day's tokens or a month's
    budget from below a threshold to at or above it, the store reports the
    crossing to its alert hook (sl_limits_store_alerts). Counters only rise
    within their window and each addition is one step, so exactly one
    addition sees a threshold crossed: once per window (day or month),
    whatever the number of requests or gateways, and the next window's
    counter starts again from zero (re-armed). One addition crossing
    several thresholds reports each.

    Counter keys are "sluice:<limit>:<subject>:<window>" (the window: the
    minute, day or month number), so every gateway counts in the same
    places, and each expires after its window.
*/
#ifndef SL_LIMITS_H
#define SL_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/identity/sl_keyring.h"

#define SL_LIMITS_KEY_MAX 256           //  bytes of a counter's key
#define SL_LIMITS_SUBJECTS_MAX 4        //  subjects of one request
#define SL_LIMITS_COUNTERS_MAX (SL_LIMITS_SUBJECTS_MAX * 5)
#define SL_LIMITS_LEASE_S 900           //  a stream's place in a concurrency set, unless renewed
#define SL_LIMITS_RENEW_S 300           //  how often a live stream's places are renewed
#define SL_LIMITS_USD_MICRO 1000000.0   //  budgets in money are counted in micro-dollars

typedef enum {
    SL_LIMIT_RPM = 0,
    SL_LIMIT_CONCURRENT,
    SL_LIMIT_TOKENS_PER_DAY,
    SL_LIMIT_BUDGET_TOKENS,
    SL_LIMIT_BUDGET_USD,
    SL_LIMIT_KIND_MAX
} sl_limit_kind_t;

//  One subject of a request: "key:<id>", "user:<team>/<user>", "team:<name>".
typedef struct {
    char name [SL_LIMITS_KEY_MAX / 2];
    const sl_limits_spec_t *spec;
} sl_limits_subject_t;

//  One counter a request is checked against.
typedef struct {
    int kind;                           //  sl_limit_kind_t
    char key [SL_LIMITS_KEY_MAX];
    int64_t limit;                      //  the most it may hold
    int64_t add;                        //  what the request adds on admission (1 request; 0 for usage)
    int64_t expire_at;                  //  seconds since the epoch: the counter goes after its window
    int64_t retry_at;                   //  when it has room again at the latest (the window's end; a
                                        //  lease's for concurrency)
    int subject;                        //  index in the plan's subjects
} sl_limits_counter_t;

typedef struct {
    sl_limits_subject_t subjects [SL_LIMITS_SUBJECTS_MAX];
    size_t subject_count;
    sl_limits_counter_t counters [SL_LIMITS_COUNTERS_MAX];
    size_t count;
    int64_t now;                        //  seconds since the epoch
    char stream [40];                   //  the stream's id (hex), a member of concurrency sets
    //  Whom the plan counts for, as alerts name them: set by the caller
    //  ("" unless it does; sl_limits_plan leaves them empty).
    char team [SL_LIMITS_KEY_MAX / 2], key_id [SL_LIMITS_KEY_MAX / 2], user [SL_LIMITS_KEY_MAX / 2];
} sl_limits_plan_t;

//  The windows of a time (UTC): its minute, day (yyyymmdd) and month
//  (yyyymm), and the seconds at which each ends.
typedef struct {
    int64_t minute, day, month;
    int64_t minute_end, day_end, month_end;
} sl_limits_windows_t;

void sl_limits_windows (int64_t now, sl_limits_windows_t *out);
//  The plan of a request at now: a counter for every limit its subjects
//  set. stream: the stream id (hex) for concurrency.
void sl_limits_plan (sl_limits_plan_t *plan, const sl_limits_subject_t *subjects, size_t count, int64_t now,
                     const char *stream);
//  The name of a limit ("rpm", "concurrent", "tokens_per_day", ...).
const char *sl_limits_kind_name (int kind);

//  What a store answers for a plan.
typedef enum {
    SL_LIMITS_ADMITTED = 0,
    SL_LIMITS_REFUSED,                  //  a counter had no room: refused names it
    SL_LIMITS_UNREACHABLE               //  the store did not answer in time, or answered garbage
} sl_limits_outcome_t;

typedef struct {
    int outcome;                        //  sl_limits_outcome_t
    int refused;                        //  the counter without room (index in the plan), -1 otherwise
    int64_t retry_after;                //  seconds, when refused
    const char *why;                    //  static text, when unreachable
} sl_limits_answer_t;

typedef void (sl_limits_done_fn) (void *arg, const sl_limits_answer_t *answer);

//  A threshold crossed at a stream's end.
typedef struct {
    int counter;                        //  index in the plan's counters (its kind, key, subject)
    int at;                             //  the threshold, in percent of the limit
    int64_t used;                       //  the counter after the addition
    int64_t limit;                      //  the counter's limit
} sl_limits_alert_t;

typedef void (sl_limits_alert_fn) (void *arg, const sl_limits_plan_t *plan, const sl_limits_alert_t *alert);
//  Usage a finish added to a counter of tokens or money: the counter's
//  value after it (Redis's answer, or this process's).
typedef void (sl_limits_used_fn) (void *arg, const sl_limits_plan_t *plan, int counter, int64_t used);

//  The thresholds of spec that a counter of limit going from before to
//  after crosses (reaches or passes for the first time), rising, into out
//  (room for SL_LIMITS_ALERTS_MAX); their number.
size_t sl_limits_crossed (const sl_limits_spec_t *spec, int64_t before, int64_t after, int64_t limit, int *out);

//  The id of a crossing (its alert's, sl_alerthook.h): 32 hex digits of
//  the SHA-256 of its subject, limit, threshold and window, each ended by
//  a newline, so every post of one crossing, from any gateway, names it
//  alike and the audit records it once (sl_alertstore.h).
#define SL_LIMITS_ALERT_ID_HEX 32
void sl_limits_alert_id (const char *subject, const char *limit, int threshold, const char *window,
                         char out [SL_LIMITS_ALERT_ID_HEX + 1]);

//  A store of counters: in this process (sl_limits_memory_new) or in
//  Redis (sl_limits_redis.h). Calls may answer at once or later (done is
//  called exactly once, from the caller's reactor).
typedef struct _sl_limits_store_t sl_limits_store_t;
struct _sl_limits_store_t {
    //  Admit a plan atomically (see above). The plan stays the caller's,
    //  and must live until done is called.
    void (*admit) (sl_limits_store_t *self, const sl_limits_plan_t *plan, sl_limits_done_fn *done, void *arg);
    //  Add usage at a stream's end to the plan's usage counters (tokens a
    //  day and a month, money a month) and let the stream's places in the
    //  concurrency sets go. Nothing is answered.
    void (*finish) (sl_limits_store_t *self, const sl_limits_plan_t *plan, int64_t tokens, int64_t usd_micro);
    //  The stream lives on at now: its places in the concurrency sets are
    //  held for another lease from now (a stream longer than a lease keeps
    //  counting). Nothing is answered.
    void (*renew) (sl_limits_store_t *self, const sl_limits_plan_t *plan, int64_t now);
    void (*destroy) (sl_limits_store_t **self_p);
    sl_limits_alert_fn *alert;          //  the alert hook (sl_limits_store_alerts), NULL: none
    void *alert_arg;
    sl_limits_used_fn *used;            //  the usage hook (sl_limits_store_used), NULL: none
    void *used_arg;
};

//  Report every threshold a finish crosses to fn (NULL: none), called
//  from finish, in the caller's reactor.
void sl_limits_store_alerts (sl_limits_store_t *self, sl_limits_alert_fn *fn, void *arg);
//  Tell fn (NULL: none) every counter of tokens or money a finish added
//  to, with its value after (a budget's use, for a gauge).
void sl_limits_store_used (sl_limits_store_t *self, sl_limits_used_fn *fn, void *arg);

//  Destroy any store (safe on NULL and twice).
void sl_limits_store_destroy (sl_limits_store_t **self_p);

//  The store of one process: counters in a hash table, admitted at once.
sl_limits_store_t *sl_limits_memory_new (void);
//  Its counter's value now (tests): concurrency sets count their live
//  members at now.
int64_t sl_limits_memory_value (sl_limits_store_t *self, const char *key, int64_t now);

//  The money a stream costs at a model's prices (per million tokens), in
//  micro-dollars.
int64_t sl_limits_usd_micro (int64_t input_tokens, int64_t output_tokens, double input_per_m, double output_per_m);

#endif
