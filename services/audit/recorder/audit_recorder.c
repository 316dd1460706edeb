/*  audit_recorder.c - sluice-audit's recorder on its reactor (see audit_recorder.h). */
#include "services/audit/recorder/audit_recorder.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"
#include "common/base/sl_ratelimit.h"
#include "common/bus/sl_resolve.h"
#include "common/bus/sl_router.h"
#include "services/audit/recorder/audit_approvals.h"
#include "services/audit/recorder/audit_chain.h"
#include "services/audit/recorder/audit_webhook.h"
#include "services/audit/recorder/sl_archive.h"
#include "services/audit/recorder/sl_receiver.h"
#include "services/audit/recorder/sl_retention.h"
#include "services/audit/store/sl_keystore.h"

#define S_MAX_EMITTERS 256
#define S_HB_MS 250                     //  a RACK to every emitter this often (heartbeat, hello)
#define S_DRAIN 64                      //  ZeroMQ messages taken per wake-up (one transaction)
#define S_RECONNECT_MS 1000             //  a store that went away is tried this often
#define S_PRUNE_AGAIN_MS 100            //  retention's next step when more is due
#define S_PRUNE_BATCH 200
#define S_PRUNE_DEFAULT_MS 60000
#define S_LOG_BURST 5
#define S_LOG_WINDOW_MS 10000
#define S_ALIVE_MS 3000                 //  an emitter heard from this lately counts as connected

typedef struct _s_conn_t s_conn_t;

struct _s_conn_t {
    audit_recorder_t *recorder;
    char endpoint [SL_RESOLVE_ENDPOINT_MAX];
    zsock_t *dealer;
    sl_receiver_t rx;
    int64_t heard_ms;                   //  last record (monotonic)
    uint64_t poison_inc, poison_seq;    //  a record the store refused ...
    int poison_count;                   //  ... this many times
};

struct _audit_recorder_t {
    sl_service_t *svc;
    audit_recorder_config_t config;
    sl_store_t *store;
    bool store_down;
    sl_archive_t *archive;
    audit_webhook_t *webhook;           //  posts to a SIEM (off without a URL)
    audit_approvals_t *approvals;       //  the approvals webhook
    audit_chain_t *chain;               //  checkpoints and verification of the store's chain
    audit_recorder_commit_fn *on_commit;
    void *on_commit_arg;
    sl_codec_t *codec;
    sl_codec_t *inner;
    s_conn_t *conns [S_MAX_EMITTERS];
    size_t conn_count;
    sl_record_t *fresh;                 //  committed in this batch: msg and meta.emitter are owned copies
    size_t fresh_count, fresh_cap;
    sl_buf_t scratch;
    int heartbeat_timer, resolve_timer, prune_timer, reconnect_timer;
    sl_ratelimit_t error_log;
    //  Metrics
    sl_counter_t *records, *duplicates, *holes, *malformed, *rejected, *commits, *store_errors;
    sl_counter_t *pruned, *gaps, *lost;
    sl_histo_t *commit_seconds;
    bool draining;                      //  no more records are read (s_drain_start)
};

static void
s_log_store_error (audit_recorder_t *self, const char *what)
{
    uint32_t held;
    if (sl_ratelimit_allow (&self->error_log, zclock_mono (), &held))
        sl_log_error ("store_failed", "%s: %s (and %u more not logged)", what, sl_store_error (self->store), held);
}

//  --------------------------------------------------------------------------
//  Acknowledgements

static void
s_send_rack (s_conn_t *c)
{
    sl_msg_t rack;
    sl_receiver_rack (&c->rx, &rack);
    sl_buf_t *out = &c->recorder->scratch;
    sl_buf_reset (out);
    sl_msg_encode (&rack, out);
    zmq_send (zsock_resolve (c->dealer), out->data, out->len, ZMQ_DONTWAIT);
}

static int
s_on_heartbeat (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    audit_recorder_t *self = arg;
    for (size_t i = 0; i < self->conn_count; i++)
        s_send_rack (self->conns [i]);
    return 0;
}

//  --------------------------------------------------------------------------
//  After a commit: the gaps' count, the webhooks, whoever was asked

static void
s_fresh_clear (audit_recorder_t *self)
{
    for (size_t i = 0; i < self->fresh_count; i++) {
        free ((void *) self->fresh [i].msg);
        free ((void *) self->fresh [i].meta.emitter.ptr);
    }
    self->fresh_count = 0;
}

static void
s_after_commit (audit_recorder_t *self)
{
    for (size_t i = 0; i < self->fresh_count; i++) {
        const sl_record_t *r = &self->fresh [i];
        if (r->msg->type == SL_MSG_GAP) {
            sl_counter_inc (self->gaps);
            sl_counter_add (self->lost, r->msg->count);
            sl_log_warn ("records_lost", "emitter=%.*s lost=%llu streams=%zu: its spool was full",
                         (int) r->meta.emitter.len, r->meta.emitter.ptr, (unsigned long long) r->msg->count,
                         r->msg->body.len / SL_SID_SIZE);
        }
        if (r->msg->type == SL_MSG_APPROVAL)
            audit_approvals_committed (self->approvals, r->msg);
        audit_webhook_committed (self->webhook, r);
    }
    if (self->on_commit)
        self->on_commit (self->on_commit_arg, self->fresh, self->fresh_count);
    s_fresh_clear (self);
    audit_webhook_pump (self->webhook);
}

//  --------------------------------------------------------------------------
//  Records in

static int s_on_reconnect (zloop_t *loop, int timer_id, void *arg);

//  The store failed: nothing of the batch stays; the emitter sends it again.
static void
s_store_failed (audit_recorder_t *self, s_conn_t *c, const char *what)
{
    sl_counter_inc (self->store_errors);
    s_log_store_error (self, what);
    bool broken = sl_store_broken (self->store);
    sl_archive_rollback (self->archive);
    s_fresh_clear (self);
    sl_receiver_abort (&c->rx);
    if (broken && !self->store_down) {
        self->store_down = true;
        sl_log_error ("store_down", "the store went away: records wait in the emitters' spools");
        self->reconnect_timer = zloop_timer (sl_service_loop (self->svc), S_RECONNECT_MS, 0, s_on_reconnect,
                                             self);
    }
}

static void
s_keep_fresh (audit_recorder_t *self, const sl_record_meta_t *meta, const sl_msg_t *msg)
{
    if (self->fresh_count == self->fresh_cap) {
        self->fresh_cap = self->fresh_cap ? self->fresh_cap * 2 : 64;
        self->fresh = sl_xrealloc (self->fresh, self->fresh_cap * sizeof *self->fresh);
    }
    sl_record_t *r = &self->fresh [self->fresh_count++];
    r->meta = *meta;
    r->meta.emitter = sl_str (sl_xstrndup (meta->emitter.ptr ? meta->emitter.ptr : "", meta->emitter.len));
    r->msg = sl_msg_dup (msg);
}

//  One REC from an emitter: written, or known, or skipped. False when the
//  store failed (the rest of the batch waits for the resend).
static bool
s_take (audit_recorder_t *self, s_conn_t *c, const sl_msg_t *rec)
{
    if (self->store_down)
        return true;                    //  not taken: asked for again once the store is back
    sl_receiver_verdict_t v = sl_receiver_offer (&c->rx, rec->incarnation, rec->seq);
    if (v == SL_RECEIVER_DUPLICATE) {
        sl_counter_inc (self->duplicates);
        return true;
    }
    if (v == SL_RECEIVER_HOLE) {
        sl_counter_inc (self->holes);
        return true;
    }
    c->heard_ms = zclock_mono ();
    sl_msg_t msg;
    size_t offset = 0;
    if (sl_codec_decode (self->inner, rec->body.ptr, rec->body.len, &offset, &msg) != 0) {
        sl_counter_inc (self->malformed);
        sl_log_warn ("malformed_record", "from %s: %s", c->endpoint, sl_codec_error (self->inner));
        return true;
    }
    sl_record_meta_t meta = { rec->instance, rec->incarnation, rec->seq, rec->kind, rec->ts };
    if (c->poison_count >= 2 && c->poison_inc == rec->incarnation && c->poison_seq == rec->seq) {
        //  It failed twice on its own: set aside, so the rest can go on.
        sl_counter_inc (self->rejected);
        char hex [SL_SID_HEX_SIZE];
        sl_sid_hex (msg.sid, hex);
        sl_log_error ("record_rejected", "emitter=%.*s record=%llu sid=%s type=%s: the store refused it twice",
                      (int) rec->instance.len, rec->instance.ptr ? rec->instance.ptr : "",
                      (unsigned long long) rec->seq, hex, sl_msg_type_name (msg.type));
        c->poison_count = 0;
        return true;
    }
    if (!sl_store_in_transaction (self->store) && sl_store_begin (self->store)) {
        s_store_failed (self, c, "begin");
        return false;
    }
    int rc = sl_archive_apply (self->archive, &meta, &msg);
    if (rc < 0) {
        //  A record the store refuses (not a store that went away) is
        //  set aside when it fails a second time.
        if (!sl_store_broken (self->store)) {
            if (c->poison_inc == rec->incarnation && c->poison_seq == rec->seq)
                c->poison_count++;
            else {
                c->poison_inc = rec->incarnation;
                c->poison_seq = rec->seq;
                c->poison_count = 1;
            }
        }
        s_store_failed (self, c, "a record");
        return false;
    }
    if (rc == 1) {
        sl_counter_inc (self->records);
        s_keep_fresh (self, &meta, &msg);
    }
    else
        sl_counter_inc (self->duplicates);
    return true;
}

static void
s_commit (audit_recorder_t *self, s_conn_t *c)
{
    if (sl_store_in_transaction (self->store)) {
        int64_t started = zclock_usecs ();
        if (sl_archive_commit (self->archive)) {
            s_store_failed (self, c, "commit");
            return;
        }
        sl_counter_inc (self->commits);
        sl_histo_observe (self->commit_seconds, (double) (zclock_usecs () - started) / 1e6);
        audit_chain_committed (self->chain);
    }
    sl_receiver_commit (&c->rx);
    if (sl_receiver_news (&c->rx))
        s_send_rack (c);
    if (self->fresh_count)
        s_after_commit (self);
}

static int
s_on_records (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    (void) reader;
    s_conn_t *c = arg;
    audit_recorder_t *self = c->recorder;
    void *sock = zsock_resolve (c->dealer);
    bool ok = true;
    for (int i = 0; i < S_DRAIN; i++) {
        zmq_msg_t frame;
        zmq_msg_init (&frame);
        if (zmq_msg_recv (&frame, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&frame);
            break;
        }
        size_t offset = 0;
        sl_msg_t rec;
        int rc;
        const uint8_t *data = zmq_msg_data (&frame);
        size_t size = zmq_msg_size (&frame);
        while (ok && (rc = sl_codec_decode (self->codec, data, size, &offset, &rec)) == 0)
            if (rec.type == SL_MSG_REC)
                ok = s_take (self, c, &rec);
        if (ok && rc == -2) {
            sl_counter_inc (self->malformed);
            sl_log_warn ("malformed_message", "from %s: %s", c->endpoint, sl_codec_error (self->codec));
        }
        zmq_msg_close (&frame);
        //  After a failure the rest of what waits is asked for again.
    }
    if (ok)
        s_commit (self, c);
    else
        s_send_rack (c);
    return 0;
}

static int
s_on_reconnect (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    audit_recorder_t *self = arg;
    if (sl_store_reconnect (self->store) == 0) {
        sl_log_info ("store_back", "the store answers again: the emitters send what it lacks");
        self->store_down = false;
        zloop_timer_end (sl_service_loop (self->svc), timer_id);
        self->reconnect_timer = -1;
        for (size_t i = 0; i < self->conn_count; i++) {
            self->conns [i]->rx.resend = true;
            s_send_rack (self->conns [i]);
        }
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Emitters: connections by resolution

static s_conn_t *
s_connect (audit_recorder_t *self, const char *endpoint)
{
    if (self->conn_count == S_MAX_EMITTERS || self->draining)
        return NULL;
    zsock_t *dealer = zsock_new (ZMQ_DEALER);
    if (!dealer)
        return NULL;
    zsock_set_rcvhwm (dealer, 10000);
    zsock_set_sndhwm (dealer, 1000);
    zsock_set_maxmsgsize (dealer, SL_MSG_MAX_SIZE);
    zsock_set_heartbeat_ivl (dealer, 1000);
    zsock_set_heartbeat_timeout (dealer, 3000);
    zsock_set_linger (dealer, 0);
    if (sl_bus_client (sl_service_bus (self->svc), dealer, "emitter") || zsock_connect (dealer, "%s", endpoint)) {
        sl_log_error ("connect_failed", "cannot connect to the emitter at %s", endpoint);
        zsock_destroy (&dealer);
        return NULL;
    }
    s_conn_t *c = sl_xcalloc (1, sizeof *c);
    c->recorder = self;
    snprintf (c->endpoint, sizeof c->endpoint, "%s", endpoint);
    c->dealer = dealer;
    zloop_reader (sl_service_loop (self->svc), dealer, s_on_records, c);
    self->conns [self->conn_count++] = c;
    s_send_rack (c);                    //  hello
    sl_log_info ("emitter_added", "endpoint=%s", endpoint);
    return c;
}

//  Drain (sl_service.h): what was taken is committed and acknowledged in
//  the turn that took it (s_on_records), so stopping now loses nothing:
//  no more records are read, and the acknowledgements already sent get
//  up to SL_SERVICE_GIVE_UP_MS to leave. The emitters keep the rest in
//  their spools for the next audit.
static void
s_drain_start (void *arg)
{
    audit_recorder_t *self = arg;
    for (size_t i = 0; i < self->conn_count; i++) {
        zloop_reader_end (sl_service_loop (self->svc), self->conns [i]->dealer);
        zsock_set_linger (self->conns [i]->dealer, SL_SERVICE_GIVE_UP_MS);
    }
    self->draining = true;
}

static void
s_disconnect (audit_recorder_t *self, size_t index)
{
    s_conn_t *c = self->conns [index];
    if (!self->draining)
        zloop_reader_end (sl_service_loop (self->svc), c->dealer);
    zsock_destroy (&c->dealer);
    sl_log_info ("emitter_removed", "endpoint=%s", c->endpoint);
    free (c);
    self->conns [index] = self->conns [--self->conn_count];
}

static size_t
s_conn_count (void *arg)
{
    return ((audit_recorder_t *) arg)->conn_count;
}

static const char *
s_conn_endpoint (void *arg, size_t index)
{
    return ((audit_recorder_t *) arg)->conns [index]->endpoint;
}

static void
s_conn_add (void *arg, const char *endpoint)
{
    s_connect (arg, endpoint);
}

static void
s_conn_remove (void *arg, size_t index)
{
    s_disconnect (arg, index);
}

static const sl_resolve_set_t s_emitter_set = { s_conn_count, s_conn_endpoint, s_conn_add, s_conn_remove };

static void
s_resolve (audit_recorder_t *self)
{
    sl_resolve_sync (self->config.emitters, S_MAX_EMITTERS, &s_emitter_set, self);
}

static int
s_on_resolve (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_resolve (arg);
    return 0;
}

//  --------------------------------------------------------------------------
//  Retention

static int
s_on_prune (zloop_t *loop, int timer_id, void *arg)
{
    (void) timer_id;
    audit_recorder_t *self = arg;
    if (self->store_down)
        return 0;
    sl_checkpoint_t cut;
    sl_retention_t policy = { .max_age_ms = self->config.retain_ms, .max_bytes = self->config.retain_bytes,
                              .batch = S_PRUNE_BATCH, .chain = sl_archive_chain (self->archive),
                              .key = audit_chain_key (self->chain), .cut = &cut };
    int pruned = 0;
    bool more = false;
    if (sl_retention_step (self->store, &policy, zclock_time (), &pruned, &more)) {
        sl_counter_inc (self->store_errors);
        s_log_store_error (self, "retention");
        return 0;
    }
    sl_counter_add (self->pruned, (uint64_t) pruned);
    audit_chain_cut (self->chain, &cut);
    if (pruned)
        sl_log_info ("pruned", "streams=%d more=%s", pruned, more ? "yes" : "no");
    if (more)
        zloop_timer (loop, S_PRUNE_AGAIN_MS, 1, s_on_prune, self);
    return 0;
}

//  --------------------------------------------------------------------------
//  What the console and the service see

void
audit_recorder_on_commit (audit_recorder_t *self, audit_recorder_commit_fn *fn, void *arg)
{
    self->on_commit = fn;
    self->on_commit_arg = arg;
}

size_t
audit_recorder_emitters (audit_recorder_t *self)
{
    return self->conn_count;
}

size_t
audit_recorder_sending (audit_recorder_t *self)
{
    size_t n = 0;
    int64_t now = zclock_mono ();
    for (size_t i = 0; i < self->conn_count; i++)
        n += self->conns [i]->heard_ms && now - self->conns [i]->heard_ms < S_ALIVE_MS;
    return n;
}

bool
audit_recorder_store_ok (audit_recorder_t *self)
{
    return !self->store_down;
}

bool
audit_recorder_webhook (audit_recorder_t *self, size_t *queued, sl_webhook_stats_t *stats)
{
    if (!audit_webhook_on (self->webhook))
        return false;
    *queued = audit_webhook_queued (self->webhook);
    *stats = *audit_webhook_stats (self->webhook);
    return true;
}

void
audit_recorder_chain_json (audit_recorder_t *self, sl_buf_t *out)
{
    audit_chain_json (self->chain, out);
}

//  --------------------------------------------------------------------------
//  Metrics

static double
s_gauge_emitters (void *arg)
{
    return (double) audit_recorder_sending (arg);
}

static double
s_gauge_store_up (void *arg)
{
    return ((audit_recorder_t *) arg)->store_down ? 0 : 1;
}

static double
s_gauge_size (void *arg)
{
    audit_recorder_t *self = arg;
    int64_t bytes = 0;
    if (!self->store_down)
        sl_retention_size (self->store, &bytes);
    return (double) bytes;
}

static void
s_metrics (audit_recorder_t *self, sl_metrics_t *m)
{
    self->records = sl_metrics_counter (m, "sluice_audit_records_total", NULL, "Records written to the store");
    self->duplicates = sl_metrics_counter (m, "sluice_audit_duplicates_total", NULL,
                                           "Records delivered again (a resend, a replay): written once already");
    self->holes = sl_metrics_counter (m, "sluice_audit_out_of_order_total", NULL,
                                      "Records that came after a hole: skipped, asked for again");
    self->malformed = sl_metrics_counter (m, "sluice_malformed_messages_total", NULL,
                                          "Messages that could not be decoded");
    self->rejected = sl_metrics_counter (m, "sluice_audit_records_rejected_total", NULL,
                                         "Records the store refused twice, set aside (logged)");
    self->commits = sl_metrics_counter (m, "sluice_audit_commits_total", NULL, "Store transactions committed");
    self->store_errors = sl_metrics_counter (m, "sluice_audit_store_errors_total", NULL,
                                             "Store failures (the records are asked for again)");
    self->pruned = sl_metrics_counter (m, "sluice_audit_pruned_streams_total", NULL,
                                       "Streams deleted by retention (age, size)");
    self->gaps = sl_metrics_counter (m, "sluice_audit_gaps_total", NULL,
                                     "Gap notices from emitters whose spool was full");
    self->lost = sl_metrics_counter (m, "sluice_audit_records_lost_total", NULL,
                                     "Records the emitters could not keep (from their gap notices)");
    self->commit_seconds = sl_metrics_histogram (m, "sluice_audit_commit_seconds", NULL,
                                                 "Time to commit a batch of records",
                                                 sl_metrics_latency_bounds, sl_metrics_latency_bounds_count);
    sl_metrics_gauge_fn (m, "sluice_audit_emitters_sending", NULL, "Emitters whose records arrived lately",
                         s_gauge_emitters, self);
    sl_metrics_gauge_fn (m, "sluice_audit_store_up", NULL, "1 while the store answers", s_gauge_store_up, self);
    sl_metrics_gauge_fn (m, "sluice_audit_store_bytes", NULL,
                         "What the store holds by its own count (retention by size)", s_gauge_size, self);
}

//  --------------------------------------------------------------------------
//  Life cycle

//  The keys issued before their grants were chained, sealed once
//  (sl_keystore_reseal): a row that no longer gives its chained create
//  is left unsealed, and so served to no gateway.
static void
s_reseal_keys (audit_recorder_t *self)
{
    int resealed = 0, refused = 0;
    sl_keystore_problem_t problem;
    if (sl_keystore_reseal (self->store, sl_archive_chain (self->archive), zclock_time (), &resealed, &refused,
                            &problem))
        sl_log_error ("key_reseal_failed", "%s", sl_store_error (self->store));
    if (resealed)
        sl_log_info ("keys_resealed", "count=%d", resealed);
    if (refused)
        sl_log_error ("chain_broken", "keys not resealed: %d; the first: %s", refused, problem.detail);
}

audit_recorder_t *
audit_recorder_new (sl_service_t *svc, sl_store_t *store, const audit_recorder_config_t *config)
{
    audit_recorder_t *self = sl_xcalloc (1, sizeof *self);
    self->svc = svc;
    self->config = *config;
    self->store = store;
    self->archive = sl_archive_new (store, config->max_text);
    sl_archive_set_prices (self->archive, config->prices);
    sl_archive_set_tools_cap (self->archive, config->tools_per_team);
    self->codec = sl_codec_new ();
    self->inner = sl_codec_new ();
    self->heartbeat_timer = self->resolve_timer = self->prune_timer = self->reconnect_timer = -1;
    self->error_log = (sl_ratelimit_t) SL_RATELIMIT_INIT (S_LOG_BURST, S_LOG_WINDOW_MS);
    zloop_t *loop = sl_service_loop (svc);
    s_metrics (self, sl_service_metrics (svc));
    audit_chain_config_t chain = {
        .signing_key = config->signing_key,
        .checkpoint_records = config->checkpoint_records,
        .checkpoint_seconds = config->checkpoint_seconds,
        .checkpoint_file = config->checkpoint_file,
        .verify_seconds = config->verify_seconds,
    };
    self->chain = audit_chain_new (svc, store, sl_archive_chain (self->archive), &chain);
    if (!self->chain) {
        audit_recorder_destroy (&self);
        return NULL;
    }
    s_reseal_keys (self);
    audit_approvals_config_t approvals = {
        .webhook_url = config->approvals_webhook_url,
        .webhook_secret = config->approvals_webhook_secret,
        .webhook_queue = config->webhook_queue,
        .webhook_attempts = config->webhook_attempts,
    };
    self->approvals = audit_approvals_new (svc, &approvals);
    if (!self->approvals) {
        audit_recorder_destroy (&self);
        return NULL;
    }
    audit_webhook_config_t webhook = {
        .url = config->webhook_url,
        .on = config->webhook_on,
        .actions = config->webhook_actions,
        .queue = config->webhook_queue,
        .attempts = config->webhook_attempts,
        .token = config->webhook_token,
        .max_text = config->max_text,
    };
    self->webhook = audit_webhook_new (svc, store, &webhook);
    self->heartbeat_timer = zloop_timer (loop, S_HB_MS, 0, s_on_heartbeat, self);
    self->resolve_timer = zloop_timer (loop, SL_RESOLVE_MS, 0, s_on_resolve, self);
    if (config->retain_ms > 0 || config->retain_bytes > 0)
        self->prune_timer = zloop_timer (loop, (size_t) (config->prune_ms > 0 ? config->prune_ms : S_PRUNE_DEFAULT_MS),
                                         0, s_on_prune, self);
    sl_service_on_drain (svc, s_drain_start, NULL, NULL, self);
    s_resolve (self);
    sl_log_info ("emitters", "list=%s connected=%zu", config->emitters, self->conn_count);
    return self;
}

void
audit_recorder_destroy (audit_recorder_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    audit_recorder_t *self = *self_p;
    zloop_t *loop = sl_service_loop (self->svc);
    int timers [] = { self->heartbeat_timer, self->resolve_timer, self->prune_timer, self->reconnect_timer };
    for (size_t i = 0; i < sizeof timers / sizeof timers [0]; i++)
        if (timers [i] >= 0)
            zloop_timer_end (loop, timers [i]);
    while (self->conn_count)
        s_disconnect (self, self->conn_count - 1);
    audit_webhook_destroy (&self->webhook);
    audit_approvals_destroy (&self->approvals);
    s_fresh_clear (self);
    free (self->fresh);
    //  What was taken is committed: a last checkpoint covers it all.
    if (self->chain && !self->store_down)
        audit_chain_stop (self->chain);
    audit_chain_destroy (&self->chain);
    sl_archive_destroy (&self->archive);
    sl_codec_destroy (&self->codec);
    sl_codec_destroy (&self->inner);
    sl_buf_free (&self->scratch);
    free (self);
    *self_p = NULL;
}

sl_chain_t *
audit_recorder_chain (audit_recorder_t *self)
{
    return sl_archive_chain (self->archive);
}
