/*  sl_limits.c - limits' arithmetic, and the store of one process (see
    sl_limits.h). */
#include "common/identity/sl_limits.h"

#include <czmq.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_hex.h"

#define S_MINUTE 60
#define S_DAY 86400
#define S_KEEP_S 3600                   //  a counter outlives its window by this (clocks of gateways differ)
#define S_CONCURRENT_RETRY_S 1          //  a stream's place frees when some stream ends: try again soon

static const char *s_kind_names [] = { "rpm", "concurrent", "tokens_per_day", "budget_tokens", "budget_usd" };
_Static_assert (sizeof s_kind_names / sizeof s_kind_names [0] == SL_LIMIT_KIND_MAX, "a name for every limit");
static const char *s_key_names [] = { "rpm", "conc", "tpd", "btok", "busd" };
_Static_assert (sizeof s_key_names / sizeof s_key_names [0] == SL_LIMIT_KIND_MAX, "a key for every limit");

const char *
sl_limits_kind_name (int kind)
{
    return kind >= 0 && kind < SL_LIMIT_KIND_MAX ? s_kind_names [kind] : "?";
}

//  Days since 1970-01-01 of a civil date (proleptic Gregorian).
static int64_t
s_days_from_civil (int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

//  The civil date of a day since 1970-01-01.
static void
s_civil_from_days (int64_t z, int64_t *y, int64_t *m, int64_t *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp + (mp < 10 ? 3 : -9);
    *y = yoe + era * 400 + (*m <= 2);
}

void
sl_limits_windows (int64_t now, sl_limits_windows_t *out)
{
    int64_t days = now >= 0 ? now / S_DAY : -((-now + S_DAY - 1) / S_DAY);
    int64_t y, m, d;
    s_civil_from_days (days, &y, &m, &d);
    out->minute = now / S_MINUTE;
    out->minute_end = (out->minute + 1) * S_MINUTE;
    out->day = y * 10000 + m * 100 + d;
    out->day_end = (days + 1) * S_DAY;
    out->month = y * 100 + m;
    out->month_end = s_days_from_civil (m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) * S_DAY;
}

static void
s_counter (sl_limits_plan_t *plan, int kind, int subject, int64_t window, int64_t limit, int64_t add,
           int64_t window_end)
{
    sl_limits_counter_t *c = &plan->counters [plan->count++];
    c->kind = kind;
    c->subject = subject;
    c->limit = limit;
    c->add = add;
    char name [sizeof plan->subjects [0].name];
    memcpy (name, plan->subjects [subject].name, sizeof name);
    if (kind == SL_LIMIT_CONCURRENT) {
        snprintf (c->key, sizeof c->key, "sluice:%s:%s", s_key_names [kind], name);
        c->expire_at = plan->now + SL_LIMITS_LEASE_S;
        c->retry_at = plan->now + S_CONCURRENT_RETRY_S;
    }
    else {
        snprintf (c->key, sizeof c->key, "sluice:%s:%s:%lld", s_key_names [kind], name, (long long) window);
        c->expire_at = window_end + S_KEEP_S;
        c->retry_at = window_end;
    }
}

void
sl_limits_plan (sl_limits_plan_t *plan, const sl_limits_subject_t *subjects, size_t count, int64_t now,
                const char *stream)
{
    memset (plan, 0, sizeof *plan);
    plan->now = now;
    snprintf (plan->stream, sizeof plan->stream, "%s", stream ? stream : "");
    sl_limits_windows_t w;
    sl_limits_windows (now, &w);
    for (size_t i = 0; i < count && plan->subject_count < SL_LIMITS_SUBJECTS_MAX; i++) {
        if (!subjects [i].spec)
            continue;
        int s = (int) plan->subject_count++;
        plan->subjects [s] = subjects [i];
        const sl_limits_spec_t *l = subjects [i].spec;
        if (l->rpm > 0)
            s_counter (plan, SL_LIMIT_RPM, s, w.minute, l->rpm, 1, w.minute_end);
        if (l->concurrent > 0)
            s_counter (plan, SL_LIMIT_CONCURRENT, s, 0, l->concurrent, 1, 0);
        if (l->tokens_per_day > 0)
            s_counter (plan, SL_LIMIT_TOKENS_PER_DAY, s, w.day, l->tokens_per_day, 0, w.day_end);
        if (l->budget_tokens > 0)
            s_counter (plan, SL_LIMIT_BUDGET_TOKENS, s, w.month, l->budget_tokens, 0, w.month_end);
        if (l->budget_usd > 0)
            s_counter (plan, SL_LIMIT_BUDGET_USD, s, w.month, (int64_t) llround (l->budget_usd * SL_LIMITS_USD_MICRO),
                       0, w.month_end);
    }
}

int64_t
sl_limits_usd_micro (int64_t input_tokens, int64_t output_tokens, double input_per_m, double output_per_m)
{
    double usd = (double) (input_tokens > 0 ? input_tokens : 0) * input_per_m / 1e6
               + (double) (output_tokens > 0 ? output_tokens : 0) * output_per_m / 1e6;
    return (int64_t) llround (usd * SL_LIMITS_USD_MICRO);
}

//  --------------------------------------------------------------------------
//  The store of one process

typedef struct {
    int64_t value;
    int64_t expire_at;
    zhash_t *members;                   //  concurrency: stream id -> its lease's end (int64_t *)
} s_entry_t;

typedef struct {
    sl_limits_store_t base;             //  first: the store's table
    zhash_t *counters;                  //  key -> s_entry_t
} s_memory_t;

static void
s_entry_free (void *data)
{
    s_entry_t *e = data;
    zhash_destroy (&e->members);
    free (e);
}

static s_entry_t *
s_entry (s_memory_t *self, const char *key, int64_t now, bool make)
{
    s_entry_t *e = zhash_lookup (self->counters, key);
    if (e && e->expire_at <= now) {
        zhash_delete (self->counters, key);
        e = NULL;
    }
    if (!e && make) {
        e = sl_xcalloc (1, sizeof *e);
        zhash_insert (self->counters, key, e);
        zhash_freefn (self->counters, key, s_entry_free);
    }
    return e;
}

//  The live members of a concurrency set at now (the expired ones go).
static int64_t
s_live (s_entry_t *e, int64_t now)
{
    if (!e || !e->members)
        return 0;
    zlist_t *keys = zhash_keys (e->members);
    for (const char *k = zlist_first (keys); k; k = zlist_next (keys))
        if (*(int64_t *) zhash_lookup (e->members, k) <= now)
            zhash_delete (e->members, k);
    zlist_destroy (&keys);
    return (int64_t) zhash_size (e->members);
}

static int64_t
s_value (s_memory_t *self, const sl_limits_counter_t *c, int64_t now)
{
    s_entry_t *e = s_entry (self, c->key, now, false);
    return c->kind == SL_LIMIT_CONCURRENT ? s_live (e, now) : e ? e->value : 0;
}

static void
s_memory_admit (sl_limits_store_t *base, const sl_limits_plan_t *plan, sl_limits_done_fn *done, void *arg)
{
    s_memory_t *self = (s_memory_t *) base;
    sl_limits_answer_t answer = { SL_LIMITS_ADMITTED, -1, 0, NULL };
    //  Every counter first: either all have room, or none is touched.
    for (size_t i = 0; i < plan->count && answer.refused < 0; i++) {
        const sl_limits_counter_t *c = &plan->counters [i];
        int64_t v = s_value (self, c, plan->now);
        bool room = c->add ? v + c->add <= c->limit : v < c->limit;
        if (!room) {
            answer.outcome = SL_LIMITS_REFUSED;
            answer.refused = (int) i;
            answer.retry_after = c->retry_at > plan->now ? c->retry_at - plan->now : 1;
        }
    }
    for (size_t i = 0; i < plan->count && answer.refused < 0; i++) {
        const sl_limits_counter_t *c = &plan->counters [i];
        if (!c->add)
            continue;
        s_entry_t *e = s_entry (self, c->key, plan->now, true);
        if (c->kind == SL_LIMIT_CONCURRENT) {
            if (!e->members)
                e->members = zhash_new ();
            int64_t *lease = sl_xmalloc (sizeof *lease);
            *lease = plan->now + SL_LIMITS_LEASE_S;
            zhash_update (e->members, plan->stream, lease);
            zhash_freefn (e->members, plan->stream, free);
            e->expire_at = plan->now + SL_LIMITS_LEASE_S;
        }
        else {
            e->value += c->add;
            e->expire_at = c->expire_at;
        }
    }
    done (arg, &answer);
}

size_t
sl_limits_crossed (const sl_limits_spec_t *spec, int64_t before, int64_t after, int64_t limit, int *out)
{
    size_t n = 0;
    if (!spec || limit <= 0)
        return 0;
    for (size_t i = 0; i < spec->alert_count && i < SL_LIMITS_ALERTS_MAX; i++) {
        int64_t at = spec->alert_at [i];
        //  ceil (limit * at / 100) without overflow (limit up to INT64_MAX / 2).
        int64_t mark = limit / 100 * at + (limit % 100 * at + 99) / 100;
        if (before < mark && after >= mark)
            out [n++] = (int) at;
    }
    return n;
}

void
sl_limits_store_alerts (sl_limits_store_t *self, sl_limits_alert_fn *fn, void *arg)
{
    self->alert = fn;
    self->alert_arg = arg;
}

void
sl_limits_store_used (sl_limits_store_t *self, sl_limits_used_fn *fn, void *arg)
{
    self->used = fn;
    self->used_arg = arg;
}

//  Tell the store's hooks what counter i of plan holds now, and the
//  thresholds it crossed.
static void
s_alerts (sl_limits_store_t *store, const sl_limits_plan_t *plan, size_t i, int64_t before, int64_t after)
{
    const sl_limits_counter_t *c = &plan->counters [i];
    if (store->used)
        store->used (store->used_arg, plan, (int) i, after);
    if (!store->alert || c->subject < 0 || (size_t) c->subject >= plan->subject_count)
        return;
    int at [SL_LIMITS_ALERTS_MAX];
    size_t n = sl_limits_crossed (plan->subjects [c->subject].spec, before, after, c->limit, at);
    for (size_t k = 0; k < n; k++) {
        sl_limits_alert_t alert = { (int) i, at [k], after, c->limit };
        store->alert (store->alert_arg, plan, &alert);
    }
}

static void
s_memory_finish (sl_limits_store_t *base, const sl_limits_plan_t *plan, int64_t tokens, int64_t usd_micro)
{
    s_memory_t *self = (s_memory_t *) base;
    for (size_t i = 0; i < plan->count; i++) {
        const sl_limits_counter_t *c = &plan->counters [i];
        int64_t add = c->kind == SL_LIMIT_TOKENS_PER_DAY || c->kind == SL_LIMIT_BUDGET_TOKENS ? tokens
                    : c->kind == SL_LIMIT_BUDGET_USD ? usd_micro : 0;
        if (c->kind == SL_LIMIT_CONCURRENT) {
            s_entry_t *e = s_entry (self, c->key, plan->now, false);
            if (e && e->members)
                zhash_delete (e->members, plan->stream);
        }
        else
        if (add > 0) {
            s_entry_t *e = s_entry (self, c->key, plan->now, true);
            int64_t before = e->value;
            e->value += add;
            e->expire_at = c->expire_at;
            s_alerts (base, plan, i, before, e->value);
        }
    }
}

static void
s_memory_renew (sl_limits_store_t *base, const sl_limits_plan_t *plan, int64_t now)
{
    s_memory_t *self = (s_memory_t *) base;
    for (size_t i = 0; i < plan->count; i++) {
        const sl_limits_counter_t *c = &plan->counters [i];
        if (c->kind != SL_LIMIT_CONCURRENT)
            continue;
        //  Held again even when its lease ran out meanwhile: the stream
        //  lives, so it takes a place.
        s_entry_t *e = s_entry (self, c->key, now, true);
        if (!e->members)
            e->members = zhash_new ();
        int64_t *lease = sl_xmalloc (sizeof *lease);
        *lease = now + SL_LIMITS_LEASE_S;
        zhash_update (e->members, plan->stream, lease);
        zhash_freefn (e->members, plan->stream, free);
        if (e->expire_at < *lease)
            e->expire_at = *lease;
    }
}

static void
s_memory_destroy (sl_limits_store_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    s_memory_t *self = (s_memory_t *) *self_p;
    zhash_destroy (&self->counters);
    free (self);
    *self_p = NULL;
}

void
sl_limits_store_destroy (sl_limits_store_t **self_p)
{
    if (self_p && *self_p)
        (*self_p)->destroy (self_p);
}

sl_limits_store_t *
sl_limits_memory_new (void)
{
    s_memory_t *self = sl_xcalloc (1, sizeof *self);
    self->base.admit = s_memory_admit;
    self->base.finish = s_memory_finish;
    self->base.renew = s_memory_renew;
    self->base.destroy = s_memory_destroy;
    self->counters = zhash_new ();
    return &self->base;
}

int64_t
sl_limits_memory_value (sl_limits_store_t *base, const char *key, int64_t now)
{
    s_memory_t *self = (s_memory_t *) base;
    s_entry_t *e = s_entry (self, key, now, false);
    return e && e->members ? s_live (e, now) : e ? e->value : 0;
}

void
sl_limits_alert_id (const char *subject, const char *limit, int threshold, const char *window,
                    char out [SL_LIMITS_ALERT_ID_HEX + 1])
{
    crypto_hash_sha256_state st;
    unsigned char digest [crypto_hash_sha256_BYTES];
    char number [16];
    snprintf (number, sizeof number, "%d", threshold);
    const char *parts [] = { subject, limit, number, window };
    crypto_hash_sha256_init (&st);
    for (size_t i = 0; i < sizeof parts / sizeof parts [0]; i++) {
        crypto_hash_sha256_update (&st, (const unsigned char *) parts [i], strlen (parts [i]));
        crypto_hash_sha256_update (&st, (const unsigned char *) "\n", 1);
    }
    crypto_hash_sha256_final (&st, digest);
    sl_hex_write (out, digest, SL_LIMITS_ALERT_ID_HEX / 2);
    out [SL_LIMITS_ALERT_ID_HEX] = 0;
}
