/*  audit_chain.c - sluice-audit's chain on its reactor (see audit_chain.h). */
#include "services/audit/audit_chain.h"

#include <czmq.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/base/sl_metrics.h"
#include "services/audit/sl_verify.h"

#define S_VERIFY_MS 1000                //  a verification step this often
#define S_VERIFY_STEP 2000              //  entries per step at most
#define S_MS_PER_S 1000

struct _audit_chain_t {
    sl_service_t *svc;
    sl_store_t *store;
    sl_chain_t *chain;
    audit_chain_config_t config;
    sl_signkey_t key;
    bool signing;                       //  a key was given
    int64_t checkpoint_pos;             //  the last checkpoint's position
    sl_checkpoint_t last;               //  the last checkpoint made or read
    bool has_last;
    sl_verify_t *verify;                //  the pass under way
    int64_t pass_started_ms;            //  when it began
    int64_t passed_pos;                 //  the last whole pass verified up to here
    int64_t verified_ms;                //  when the last step succeeded (0: never)
    bool broken_logged;
    sl_counter_t *checkpoints;
    sl_counter_t *checkpoint_failures;
};

static int
s_last_row (void *arg, const sl_row_t *row)
{
    audit_chain_t *self = arg;
    sl_checkpoint_from_row (&self->last, row);
    self->has_last = true;
    self->checkpoint_pos = self->last.pos;
    return 1;
}

//  A checkpoint at the head, into the store and the file.
static void
s_checkpoint (audit_chain_t *self)
{
    int64_t head = sl_chain_head_pos (self->chain);
    if (head <= self->checkpoint_pos)
        return;
    sl_checkpoint_t cp = { .pos = head, .count = head - self->checkpoint_pos, .at = zclock_time () };
    snprintf (cp.head, sizeof cp.head, "%s", sl_chain_head_hash (self->chain));
    if (sl_checkpoint_write (self->store, self->signing ? &self->key : NULL, &cp)) {
        sl_counter_inc (self->checkpoint_failures);
        sl_log_error ("checkpoint_failed", "pos=%lld: %s", (long long) cp.pos, sl_store_error (self->store));
        return;
    }
    if (*self->config.checkpoint_file && sl_checkpoint_append (self->config.checkpoint_file, &cp)) {
        sl_counter_inc (self->checkpoint_failures);
        sl_log_error ("checkpoint_file_failed", "cannot append to %s", self->config.checkpoint_file);
    }
    self->checkpoint_pos = cp.pos;
    self->last = cp;
    self->has_last = true;
    sl_counter_inc (self->checkpoints);
}

static int
s_on_checkpoint (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_checkpoint (arg);
    return 0;
}

static int
s_on_verify (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    audit_chain_t *self = arg;
    int rc = sl_verify_step (self->verify, S_VERIFY_STEP);
    const sl_verify_report_t *r = sl_verify_report (self->verify);
    if (r->status == SL_VERIFY_BROKEN) {
        if (!self->broken_logged)
            sl_log_error ("chain_broken", "%s", r->detail);
        self->broken_logged = true;
        return 0;                       //  broken stays broken: a restart walks again
    }
    if (rc < 0)
        return 0;
    self->verified_ms = zclock_time ();
    if (rc == 0) {
        //  Caught up with the head: the whole chain is verified to here.
        //  Rows already verified may be edited later: walk it all again.
        self->passed_pos = r->checked_pos;
        if (self->verified_ms - self->pass_started_ms >= self->config.verify_seconds * S_MS_PER_S) {
            sl_verify_destroy (&self->verify);
            self->verify = sl_verify_new (self->store, NULL);
            self->pass_started_ms = self->verified_ms;
        }
    }
    return 0;
}

static double
s_gauge_records (void *arg)
{
    return (double) sl_chain_head_pos (((audit_chain_t *) arg)->chain);
}

static double
s_gauge_verified (void *arg)
{
    audit_chain_t *self = arg;
    int64_t walking = sl_verify_report (self->verify)->checked_pos;
    return (double) (walking > self->passed_pos ? walking : self->passed_pos);
}

static double
s_gauge_broken (void *arg)
{
    return sl_verify_report (((audit_chain_t *) arg)->verify)->status == SL_VERIFY_BROKEN ? 1 : 0;
}

static double
s_gauge_verified_ts (void *arg)
{
    return (double) ((audit_chain_t *) arg)->verified_ms / S_MS_PER_S;
}

audit_chain_t *
audit_chain_new (sl_service_t *svc, sl_store_t *store, sl_chain_t *chain, const audit_chain_config_t *config)
{
    audit_chain_t *self = sl_xcalloc (1, sizeof *self);
    self->svc = svc;
    self->store = store;
    self->chain = chain;
    self->config = *config;
    if (!self->config.checkpoint_file)
        self->config.checkpoint_file = "";
    if (config->signing_key && *config->signing_key) {
        char *error = NULL;
        if (sl_signkey_load_secret (&self->key, config->signing_key, &error)) {
            sl_log_error ("bad_signing_key", "%s", error);
            free (error);
            free (self);
            return NULL;
        }
        self->signing = true;
        sl_log_info ("chain_signing", "checkpoints signed with key %s", self->key.id);
    }
    else
        sl_log_warn ("chain_unsigned", "no --signing-key: the chain's checkpoints are written unsigned");
    if (sl_chain_load (chain)
    ||  sl_store_query (store, "SELECT " SL_CHECKPOINT_COLUMNS " FROM checkpoints ORDER BY pos DESC LIMIT 1",
                        NULL, 0, s_last_row, self)) {
        sl_log_error ("store_failed", "cannot read the chain: %s", sl_store_error (store));
        free (self);
        return NULL;
    }
    self->verify = sl_verify_new (store, NULL);
    self->pass_started_ms = zclock_time ();
    sl_metrics_t *m = sl_service_metrics (svc);
    self->checkpoints = sl_metrics_counter (m, "sluice_audit_chain_checkpoints_total", NULL,
                                            "Checkpoints of the chain written (signed when a key was given)");
    self->checkpoint_failures = sl_metrics_counter (m, "sluice_audit_chain_checkpoint_failures_total", NULL,
                                                    "Checkpoints the store or the checkpoint file did not take");
    sl_metrics_gauge_fn (m, "sluice_audit_chain_records", NULL, "The chain's head position", s_gauge_records, self);
    sl_metrics_gauge_fn (m, "sluice_audit_chain_verified_records", NULL,
                         "Chain position verified up to by the running audit", s_gauge_verified, self);
    sl_metrics_gauge_fn (m, "sluice_audit_chain_broken", NULL,
                         "1 when the running verification found a record changed, removed or inserted",
                         s_gauge_broken, self);
    sl_metrics_gauge_fn (m, "sluice_audit_chain_verified_timestamp_seconds", NULL,
                         "When the last verification step succeeded (Unix seconds)", s_gauge_verified_ts, self);
    zloop_t *loop = sl_service_loop (svc);
    if (config->checkpoint_seconds > 0)
        zloop_timer (loop, (size_t) (config->checkpoint_seconds * S_MS_PER_S), 0, s_on_checkpoint, self);
    zloop_timer (loop, S_VERIFY_MS, 0, s_on_verify, self);
    return self;
}

void
audit_chain_destroy (audit_chain_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    audit_chain_t *self = *self_p;
    sl_verify_destroy (&self->verify);
    sodium_memzero (&self->key, sizeof self->key);
    free (self);
    *self_p = NULL;
}

void
audit_chain_committed (audit_chain_t *self)
{
    if (self->config.checkpoint_records > 0
    &&  sl_chain_head_pos (self->chain) - self->checkpoint_pos >= self->config.checkpoint_records)
        s_checkpoint (self);
}

const sl_signkey_t *
audit_chain_key (audit_chain_t *self)
{
    return self->signing ? &self->key : NULL;
}

void
audit_chain_cut (audit_chain_t *self, const sl_checkpoint_t *cut)
{
    if (cut->pos <= 0)
        return;
    sl_counter_inc (self->checkpoints);
    if (*self->config.checkpoint_file && sl_checkpoint_append (self->config.checkpoint_file, cut)) {
        sl_counter_inc (self->checkpoint_failures);
        sl_log_error ("checkpoint_file_failed", "cannot append to %s", self->config.checkpoint_file);
    }
    if (cut->pos >= self->checkpoint_pos) {
        self->last = *cut;
        self->has_last = true;
        self->checkpoint_pos = cut->pos;
    }
    sl_log_info ("chain_cut", "retention cut the chain at %lld", (long long) cut->pos);
}

void
audit_chain_json (audit_chain_t *self, sl_buf_t *out)
{
    const sl_verify_report_t *r = sl_verify_report (self->verify);
    sl_buf_printf (out, "{\"head\":{\"pos\":%lld,\"hash\":\"%s\"},\"verified\":{\"pos\":%lld,\"record_at\":%lld,"
                   "\"checked_at\":%lld,\"from\":%lld,\"from_cut\":%s},\"broken\":",
                   (long long) sl_chain_head_pos (self->chain), sl_chain_head_hash (self->chain),
                   (long long) r->checked_pos, (long long) r->checked_at, (long long) self->verified_ms,
                   (long long) r->start_pos, r->from_cut ? "true" : "false");
    if (r->status == SL_VERIFY_BROKEN)
        sl_verify_problem_json (r, out);
    else
        sl_buf_puts (out, "null");
    sl_buf_printf (out, ",\"signed\":%s,\"key_id\":", self->signing ? "true" : "false");
    if (self->signing)
        sl_buf_printf (out, "\"%s\"", self->key.id);
    else
        sl_buf_puts (out, "null");
    sl_buf_puts (out, ",\"checkpoint\":");
    if (self->has_last)
        sl_checkpoint_json (&self->last, out);
    else
        sl_buf_puts (out, "null");
    sl_buf_putc (out, '}');
}
