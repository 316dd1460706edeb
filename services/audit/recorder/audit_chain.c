/*  audit_chain.c - sluice-audit's chain on its reactor (see audit_chain.h). */
#include "services/audit/recorder/audit_chain.h"

#include <czmq.h>
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/base/sl_metrics.h"
#include "services/audit/recorder/sl_verify.h"

#define S_VERIFY_MS 1000                //  a verification step this often
#define S_VERIFY_STEP 2000              //  entries per step at most
#define S_SUMMARY_STEP 500              //  summary rows compared per part at most
#define S_PASS_BUDGET_US 20000          //  a pass's checks after the walk: parts for this long a step
#define S_NEWEST_PAGE 64                //  the store's newest checkpoints read for a signed one
#define S_MS_PER_S 1000

//  What a whole pass checks once the walk caught up with the head, a part
//  per step.
typedef enum { S_WALK = 0, S_ROWS, S_CHECKPOINTS, S_SUMMARIES, S_PASSED } s_phase_t;

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
    s_phase_t phase;                    //  ... what it checks now
    sl_verify_status_t checkpoints_found;   //  the last whole pass's checkpoints (bad: 2)
    sl_verify_report_t checkpoint_report;   //  ... what it found when bad
    int64_t pass_started_ms;            //  when it began
    int64_t passed_pos;                 //  the last whole pass verified up to here
    int64_t verified_ms;                //  when the last step succeeded (0: never)
    bool broken_logged;
    sl_counter_t *checkpoints;
    sl_counter_t *checkpoint_failures;
};

static int
s_newest_row (void *arg, const sl_row_t *row)
{
    audit_chain_t *self = arg;
    sl_checkpoint_t cp;
    sl_checkpoint_from_row (&cp, row);
    //  With a key, only what it signed: a row anyone could write is no
    //  checkpoint to trust.
    if (self->signing && sl_checkpoint_check (&cp, &self->key) != SL_CHECKPOINT_GOOD)
        return 0;
    self->last = cp;
    self->has_last = true;
    return 1;
}

//  The chain is broken: its head (sl_chain) or what the pass found. Said
//  once in the log. true when it is.
static bool
s_broken (audit_chain_t *self)
{
    const char *detail = NULL;
    const sl_verify_report_t *r = sl_verify_report (self->verify);
    if (!sl_chain_problem (self->chain, NULL, NULL, &detail)) {
        if (r->status != SL_VERIFY_BROKEN)
            return false;
        detail = r->detail;
    }
    if (!self->broken_logged)
        sl_log_error ("chain_broken", "%s", detail);
    self->broken_logged = true;
    return true;
}

//  A checkpoint at the store's head, into the store and the file: under
//  the store's write lock, after the head was compared with the one this
//  audit left and the last checkpoint (never over a broken chain), linked
//  to the newest checkpoint in the store.
static void
s_checkpoint (audit_chain_t *self)
{
    if (sl_store_in_transaction (self->store) || s_broken (self))
        return;
    int64_t newest = 0;
    if (sl_store_begin (self->store)
    ||  sl_chain_check (self->chain, self->has_last ? &self->last : NULL)) {
        sl_store_rollback (self->store);
        sl_counter_inc (self->checkpoint_failures);
        sl_log_error ("checkpoint_failed", "reading the chain's head: %s", sl_store_error (self->store));
        return;
    }
    int64_t head = sl_chain_head_pos (self->chain);
    if (s_broken (self) || head <= 0 || sl_checkpoint_before (self->store, head + 1, &newest) || newest == head) {
        sl_store_rollback (self->store);
        return;                         //  nothing to sign, or a checkpoint there already (a sibling's)
    }
    sl_checkpoint_t cp = { .pos = head, .count = head - newest, .at = zclock_time () };
    snprintf (cp.head, sizeof cp.head, "%s", sl_chain_head_hash (self->chain));
    if (sl_checkpoint_write (self->store, self->signing ? &self->key : NULL, &cp) || sl_store_commit (self->store)) {
        sl_store_rollback (self->store);
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
    //  From its first checkpoint on, every head is sealed.
    sl_chain_set_unsealed_ok (self->chain, false);
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

static sl_verify_t *
s_new_pass (audit_chain_t *self)
{
    sl_verify_opts_t opts = { .public_key = self->signing ? &self->key : NULL, .unsigned_before_key_ok = true };
    self->phase = S_WALK;
    return sl_verify_new (self->store, &opts);
}

//  One part of the pass's checks after the walk. 1 more, 0 done, -1 failed.
static int
s_pass_part (audit_chain_t *self)
{
    int rc = 0;
    switch (self->phase) {
        case S_ROWS:        rc = sl_verify_rows_step (self->verify); break;
        case S_CHECKPOINTS: rc = sl_verify_checkpoints_step (self->verify); break;
        case S_SUMMARIES:   rc = sl_verify_summaries_step (self->verify, S_SUMMARY_STEP); break;
        default:            return 0;
    }
    if (rc == 0) {
        if (self->phase == S_CHECKPOINTS && sl_verify_report (self->verify)->status != SL_VERIFY_BAD_CHECKPOINT)
            self->checkpoints_found = SL_VERIFY_INTACT;
        self->phase++;
    }
    return rc < 0 ? -1 : self->phase < S_PASSED;
}

static int
s_on_verify (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    audit_chain_t *self = arg;
    if (s_broken (self))
        return 0;                       //  broken stays broken: a restart walks again
    int rc = sl_verify_step (self->verify, S_VERIFY_STEP);
    if (rc == 0 && self->phase == S_WALK && sl_verify_report (self->verify)->status != SL_VERIFY_BROKEN)
        self->phase = S_ROWS;
    //  Parts of the pass's other checks, for a bounded time: the reactor
    //  never waits on a whole table.
    int64_t until = zclock_usecs () + S_PASS_BUDGET_US;
    int part = 0;
    while (rc == 0 && self->phase > S_WALK && self->phase < S_PASSED
       &&  sl_verify_report (self->verify)->status != SL_VERIFY_BROKEN && zclock_usecs () < until
       &&  (part = s_pass_part (self)) == 1)
        ;
    if (part < 0)
        rc = -1;
    const sl_verify_report_t *r = sl_verify_report (self->verify);
    if (r->status == SL_VERIFY_BAD_CHECKPOINT && (self->checkpoints_found != SL_VERIFY_BAD_CHECKPOINT
                                                  || strcmp (self->checkpoint_report.detail, r->detail) != 0)) {
        self->checkpoints_found = SL_VERIFY_BAD_CHECKPOINT;
        self->checkpoint_report = *r;
        sl_log_error ("chain_bad_checkpoint", "%s", r->detail);
    }
    if (s_broken (self) || rc < 0)
        return 0;
    self->verified_ms = zclock_time ();
    if (rc == 0 && self->phase == S_PASSED) {
        //  Caught up with the head: the whole chain is verified to here.
        //  Rows already verified may be edited later: walk it all again.
        self->passed_pos = r->checked_pos;
        if (self->verified_ms - self->pass_started_ms >= self->config.verify_seconds * S_MS_PER_S) {
            sl_verify_destroy (&self->verify);
            self->verify = s_new_pass (self);
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
    audit_chain_t *self = arg;
    return sl_chain_problem (self->chain, NULL, NULL, NULL)
        || sl_verify_report (self->verify)->status == SL_VERIFY_BROKEN
        || self->checkpoints_found == SL_VERIFY_BAD_CHECKPOINT ? 1 : 0;
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
        sl_log_warn ("chain_unsigned", "no --signing-key: the chain's checkpoints are written unsigned, its "
                     "transactions unsealed");
    if (*self->config.checkpoint_file && sl_checkpoint_appendable (self->config.checkpoint_file)) {
        sl_log_error ("checkpoint_file_failed", "cannot append to %s: %s", self->config.checkpoint_file,
                      strerror (errno));
        sodium_memzero (&self->key, sizeof self->key);
        free (self);
        return NULL;
    }
    sl_chain_set_key (chain, self->signing ? &self->key : NULL);
    //  The newest checkpoint known: the file's (outside the database),
    //  or the store's, whichever is further; signed with the key.
    sl_checkpoint_t in_file;
    bool found = false;
    sl_val_t page [] = { sl_val_int (S_NEWEST_PAGE) };
    if ((*self->config.checkpoint_file
         && sl_checkpoint_newest_in_file (self->config.checkpoint_file, self->signing ? &self->key : NULL, &in_file,
                                          &found))
    ||  sl_store_query (store, "SELECT " SL_CHECKPOINT_COLUMNS " FROM checkpoints ORDER BY pos DESC LIMIT $1",
                        page, 1, s_newest_row, self)) {
        sl_log_error ("store_failed", "cannot read the newest checkpoint: %s", sl_store_error (store));
        sodium_memzero (&self->key, sizeof self->key);
        free (self);
        return NULL;
    }
    if (found && (!self->has_last || in_file.pos >= self->last.pos)) {
        self->last = in_file;
        self->has_last = true;
    }
    self->checkpoint_pos = self->has_last ? self->last.pos : 0;
    if (sl_chain_start (chain, self->has_last ? &self->last : NULL)) {
        sl_log_error ("store_failed", "cannot read the chain: %s", sl_store_error (store));
        sodium_memzero (&self->key, sizeof self->key);
        free (self);
        return NULL;
    }
    self->verify = s_new_pass (self);
    s_broken (self);
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
    sl_chain_set_key (self->chain, NULL);
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

void
audit_chain_stop (audit_chain_t *self)
{
    s_checkpoint (self);
}

const sl_signkey_t *
audit_chain_key (audit_chain_t *self)
{
    //  Nothing is signed over a broken chain: a cut then is unsigned.
    return self->signing && !s_broken (self) ? &self->key : NULL;
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
    const char *kind, *detail;
    int64_t pos;
    if (sl_chain_problem (self->chain, &kind, &pos, &detail)) {
        sl_buf_printf (out, "{\"kind\":\"%s\",\"table\":\"chain\",\"key\":\"\",\"pos\":%lld,\"detail\":", kind,
                       (long long) pos);
        sl_json_put_str (out, detail, strlen (detail));
        sl_buf_putc (out, '}');
    }
    else
    if (r->status == SL_VERIFY_BROKEN)
        sl_verify_problem_json (r, out);
    else
    if (self->checkpoints_found == SL_VERIFY_BAD_CHECKPOINT)
        sl_verify_problem_json (&self->checkpoint_report, out);
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
