/*  audit.c - sluice-audit's reactor (see audit.h). */
#include "services/audit/audit.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_alloc.h"
#include "common/http/sl_curlm.h"
#include "common/http/sl_httpd.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/base/sl_ratelimit.h"
#include "common/bus/sl_resolve.h"
#include "common/bus/sl_router.h"
#include "services/audit/audit_approvals.h"
#include "services/audit/recorder/audit_chain.h"
#include "services/audit/recorder/sl_archive.h"
#include "services/audit/console/sl_console.h"
#include "services/audit/console/sl_live.h"
#include "services/audit/store/sl_query.h"
#include "services/audit/recorder/sl_receiver.h"
#include "services/audit/recorder/sl_retention.h"
#include "services/audit/store/sl_store.h"
#include "services/audit/recorder/sl_webhook.h"

#define AUDIT_MAX_EMITTERS 256
#define AUDIT_HB_MS 250                 //  a RACK to every emitter this often (heartbeat, hello)
#define AUDIT_DRAIN 64                  //  ZeroMQ messages taken per wake-up (one transaction)
#define AUDIT_RECONNECT_MS 1000         //  a store that went away is tried this often
#define AUDIT_PRUNE_AGAIN_MS 100        //  retention's next step when more is due
#define AUDIT_PRUNE_BATCH 200
#define AUDIT_SSE_KEEPALIVE_MS 15000
#define AUDIT_MAX_SSE 256
#define AUDIT_SSE_CAP (4u << 20)        //  bytes buffered for one slow page
#define AUDIT_MAX_BODY (10u << 20)      //  a console request (a capture to try)
#define AUDIT_WEBHOOK_TICK_MS 200
#define AUDIT_WEBHOOK_TIMEOUT_MS 10000
#define AUDIT_LOG_BURST 5
#define AUDIT_LOG_WINDOW_MS 10000
#define AUDIT_ALIVE_MS 3000             //  an emitter heard from this lately counts as connected

typedef struct _s_conn_t s_conn_t;

struct _s_conn_t {
    audit_t *audit;
    char endpoint [SL_RESOLVE_ENDPOINT_MAX];
    zsock_t *dealer;
    sl_receiver_t rx;
    int64_t heard_ms;                   //  last record (monotonic)
    uint64_t poison_inc, poison_seq;    //  a record the store refused ...
    int poison_count;                   //  ... this many times
};

//  A record committed in this batch, for the live view and the webhook.
typedef struct {
    sl_record_meta_t meta;
    sl_msg_t *msg;                      //  owned copy
    char *emitter;                      //  owned: meta.emitter points here
} s_new_t;

typedef struct {
    audit_t *audit;
    sl_webhook_event_t *event;
    char retry_after [32];
} s_post_t;

struct _audit_t {
    sl_service_t *svc;
    audit_config_t config;
    sl_store_t *store;
    char *store_target;
    bool store_down;
    sl_archive_t *archive;
    sl_live_t *live;
    sl_console_t *console;
    sl_httpd_t *httpd;
    sl_webhook_t *webhook;
    audit_approvals_t *approvals;       //  decisions to the judges, the approvals webhook
    audit_chain_t *chain;               //  checkpoints and verification of the store's chain
    sl_curlm_t *curlm;
    struct curl_slist *webhook_headers; //  the posts' headers (the token among them)
    bool webhook_streams;               //  one post per stream (else per verdict)
    sl_codec_t *codec;
    sl_codec_t *inner;
    s_conn_t *conns [AUDIT_MAX_EMITTERS];
    size_t conn_count;
    s_new_t *fresh;
    size_t fresh_count, fresh_cap;
    sl_http_req_t *sse [AUDIT_MAX_SSE];
    size_t sse_count;
    sl_buf_t events;                    //  scratch: the SSE text of a batch
    sl_buf_t scratch;
    int prune_timer;
    int reconnect_timer;
    sl_ratelimit_t error_log;
    //  Metrics
    sl_counter_t *records, *duplicates, *holes, *malformed, *rejected, *commits, *store_errors;
    sl_counter_t *pruned, *webhook_sent, *webhook_failures, *webhook_dropped, *webhook_given_up;
    sl_counter_t *gaps, *lost;
    sl_histo_t *commit_seconds;
    bool draining;                      //  no more records are read (s_drain_start)
};

static int64_t
s_mono (void)
{
    return zclock_mono ();
}

static int64_t
s_wall (void)
{
    return zclock_time ();
}

static void
s_log_store_error (audit_t *self, const char *what)
{
    uint32_t held;
    if (sl_ratelimit_allow (&self->error_log, s_mono (), &held))
        sl_log_error ("store_failed", "%s: %s (and %u more not logged)", what, sl_store_error (self->store), held);
}

//  --------------------------------------------------------------------------
//  Acknowledgements

static void
s_send_rack (s_conn_t *c)
{
    sl_msg_t rack;
    sl_receiver_rack (&c->rx, &rack);
    sl_buf_t *out = &c->audit->scratch;
    sl_buf_reset (out);
    sl_msg_encode (&rack, out);
    zmq_send (zsock_resolve (c->dealer), out->data, out->len, ZMQ_DONTWAIT);
}

static int
s_on_heartbeat (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    audit_t *self = arg;
    for (size_t i = 0; i < self->conn_count; i++)
        s_send_rack (self->conns [i]);
    return 0;
}

//  --------------------------------------------------------------------------
//  After a commit: the live view, the pages, the webhook

static void
s_fresh_clear (audit_t *self)
{
    for (size_t i = 0; i < self->fresh_count; i++) {
        free (self->fresh [i].msg);
        free (self->fresh [i].emitter);
    }
    self->fresh_count = 0;
}

static void
s_broadcast (audit_t *self, sl_str_t text)
{
    if (!text.len)
        return;
    for (size_t i = 0; i < self->sse_count;) {
        if (sl_http_stream_write (self->sse [i], text.ptr, text.len)) {
            //  Gone, or too slow to keep up: it is closed, and
            //  on_closed takes it off the list.
            sl_http_stream_abort (self->sse [i]);
            self->sse [i] = self->sse [--self->sse_count];
            continue;
        }
        i++;
    }
    if (self->httpd)
        sl_httpd_run (self->httpd);
}

static bool
s_action_wanted (audit_t *self, const char *action)
{
    const char *list = self->config.webhook_actions;
    if (!list || !*list || strcmp (list, "all") == 0)
        return true;
    size_t n = strlen (action);
    for (const char *p = list; *p;) {
        const char *comma = strchr (p, ',');
        size_t len = comma ? (size_t) (comma - p) : strlen (p);
        if (len == n && strncmp (p, action, n) == 0)
            return true;
        p += len + (comma ? 1 : 0);
    }
    return false;
}

static void
s_put_cstr (sl_buf_t *out, const char *key, const char *value)
{
    sl_buf_printf (out, ",\"%s\":", key);
    if (value)
        sl_json_put_str (out, value, strlen (value));
    else
        sl_buf_puts (out, "null");
}

static void
s_post_verdict (audit_t *self, const s_new_t *n)
{
    const sl_msg_t *v = n->msg;
    if (!s_action_wanted (self, sl_action_name (v->action)))
        return;
    sl_live_context_t ctx;
    sl_live_context (self->live, v->sid, &ctx);
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (v->sid, hex);
    sl_buf_t *out = &self->scratch;
    sl_buf_reset (out);
    sl_buf_printf (out, "{\"type\":\"verdict\",\"sid\":\"%s\",\"at\":%lld", hex, (long long) n->meta.at);
    s_put_cstr (out, "emitter", n->emitter);
    s_put_cstr (out, "model", ctx.model);
    s_put_cstr (out, "provider", ctx.provider);
    s_put_cstr (out, "client", ctx.client);
    s_put_cstr (out, "client_key", ctx.client_key);
    sl_buf_printf (out, ",\"index\":%d,\"tool\":", v->index);
    sl_json_put_sl (out, v->name);
    sl_buf_puts (out, ",\"call_id\":");
    sl_json_put_sl (out, v->id);
    s_put_cstr (out, "action", sl_action_name (v->action));
    s_put_cstr (out, "check", sl_check_name (v->check));
    sl_buf_puts (out, ",\"rule\":");
    if (v->rule.ptr)
        sl_json_put_sl (out, v->rule);
    else
        sl_buf_puts (out, "null");
    sl_buf_puts (out, ",\"reason\":");
    sl_json_put_sl (out, v->reason);
    if (v->judge_model.ptr) {
        sl_buf_puts (out, ",\"judge_model\":");
        sl_json_put_sl (out, v->judge_model);
    }
    sl_buf_printf (out, ",\"latency_us\":%u,\"arguments\":", v->latency_us);
    sl_str_t args = v->text;
    if (args.len > self->config.max_text)
        args.len = self->config.max_text;
    sl_json_put_sl (out, args);
    sl_buf_putc (out, '}');
    if (sl_webhook_push (self->webhook, sl_buf_str (out), s_wall ()))
        sl_log_warn ("webhook_full", "the webhook's queue is full: a verdict event is dropped");
}

typedef struct {
    audit_t *audit;
    bool wanted;
} s_actions_t;

static int
s_action_row (void *arg, const sl_row_t *row)
{
    s_actions_t *a = arg;
    sl_str_t action = sl_row_text (row, 0);
    char name [16];
    snprintf (name, sizeof name, "%.*s", (int) action.len, action.ptr ? action.ptr : "");
    a->wanted |= s_action_wanted (a->audit, name);
    return a->wanted ? 1 : 0;
}

static void
s_post_stream (audit_t *self, const s_new_t *n)
{
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (n->msg->sid, hex);
    const char *list = self->config.webhook_actions;
    if (list && *list && strcmp (list, "all") != 0) {
        s_actions_t a = { self, false };
        sl_val_t p [] = { sl_val_text (hex) };
        if (sl_store_query (self->store, "SELECT action FROM verdicts WHERE sid = $1", p, 1, s_action_row, &a) == 0
        &&  !a.wanted)
            return;
    }
    sl_buf_t *out = &self->scratch;
    sl_buf_reset (out);
    sl_buf_puts (out, "{\"type\":\"stream\",\"data\":");
    if (sl_query_stream (self->store, hex, out) != 0)
        return;
    sl_buf_putc (out, '}');
    if (sl_webhook_push (self->webhook, sl_buf_str (out), s_wall ()))
        sl_log_warn ("webhook_full", "the webhook's queue is full: a stream event is dropped");
}

static void s_webhook_pump (audit_t *self);

static void
s_after_commit (audit_t *self)
{
    sl_buf_reset (&self->events);
    for (size_t i = 0; i < self->fresh_count; i++) {
        s_new_t *n = &self->fresh [i];
        sl_live_feed (self->live, &n->meta, n->msg, &self->events);
        if (n->msg->type == SL_MSG_GAP) {
            sl_counter_inc (self->gaps);
            sl_counter_add (self->lost, n->msg->count);
            sl_log_warn ("records_lost", "emitter=%s lost=%llu streams=%zu: its spool was full",
                         n->emitter, (unsigned long long) n->msg->count, n->msg->body.len / SL_SID_SIZE);
        }
        if (n->msg->type == SL_MSG_APPROVAL)
            audit_approvals_committed (self->approvals, n->msg);
        if (!self->webhook)
            continue;
        if (!self->webhook_streams && n->msg->type == SL_MSG_VERDICT)
            s_post_verdict (self, n);
        else
        if (self->webhook_streams && n->msg->type == SL_MSG_END)
            s_post_stream (self, n);
    }
    s_fresh_clear (self);
    s_broadcast (self, sl_buf_str (&self->events));
    if (self->webhook)
        s_webhook_pump (self);
}

//  --------------------------------------------------------------------------
//  Records in

static int s_on_reconnect (zloop_t *loop, int timer_id, void *arg);

//  The store failed: nothing of the batch stays; the emitter sends it again.
static void
s_store_failed (audit_t *self, s_conn_t *c, const char *what)
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
        self->reconnect_timer = zloop_timer (sl_service_loop (self->svc), AUDIT_RECONNECT_MS, 0,
                                             s_on_reconnect, self);
    }
}

static void
s_keep_fresh (audit_t *self, const sl_record_meta_t *meta, const sl_msg_t *msg)
{
    if (self->fresh_count == self->fresh_cap) {
        self->fresh_cap = self->fresh_cap ? self->fresh_cap * 2 : 64;
        self->fresh = sl_xrealloc (self->fresh, self->fresh_cap * sizeof *self->fresh);
    }
    s_new_t *n = &self->fresh [self->fresh_count++];
    n->msg = sl_msg_dup (msg);
    n->emitter = sl_xstrndup (meta->emitter.ptr ? meta->emitter.ptr : "", meta->emitter.len);
    n->meta = *meta;
    n->meta.emitter = sl_str (n->emitter);
}

//  One REC from an emitter: written, or known, or skipped. False when the
//  store failed (the rest of the batch waits for the resend).
static bool
s_take (audit_t *self, s_conn_t *c, const sl_msg_t *rec)
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
    c->heard_ms = s_mono ();
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
s_commit (audit_t *self, s_conn_t *c)
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
    audit_t *self = c->audit;
    void *sock = zsock_resolve (c->dealer);
    bool ok = true;
    for (int i = 0; i < AUDIT_DRAIN; i++) {
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
    audit_t *self = arg;
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
s_connect (audit_t *self, const char *endpoint)
{
    if (self->conn_count == AUDIT_MAX_EMITTERS || self->draining)
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
    c->audit = self;
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
    audit_t *self = arg;
    for (size_t i = 0; i < self->conn_count; i++) {
        zloop_reader_end (sl_service_loop (self->svc), self->conns [i]->dealer);
        zsock_set_linger (self->conns [i]->dealer, SL_SERVICE_GIVE_UP_MS);
    }
    self->draining = true;
}

static void
s_disconnect (audit_t *self, size_t index)
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
    return ((audit_t *) arg)->conn_count;
}

static const char *
s_conn_endpoint (void *arg, size_t index)
{
    return ((audit_t *) arg)->conns [index]->endpoint;
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
s_resolve (audit_t *self)
{
    sl_resolve_sync (self->config.emitters, AUDIT_MAX_EMITTERS, &s_emitter_set, self);
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
    audit_t *self = arg;
    if (self->store_down)
        return 0;
    sl_checkpoint_t cut;
    sl_retention_t policy = { .max_age_ms = self->config.retain_ms, .max_bytes = self->config.retain_bytes,
                              .batch = AUDIT_PRUNE_BATCH, .chain = sl_archive_chain (self->archive),
                              .key = audit_chain_key (self->chain), .cut = &cut };
    int pruned = 0;
    bool more = false;
    if (sl_retention_step (self->store, &policy, s_wall (), &pruned, &more)) {
        sl_counter_inc (self->store_errors);
        s_log_store_error (self, "retention");
        return 0;
    }
    sl_counter_add (self->pruned, (uint64_t) pruned);
    audit_chain_cut (self->chain, &cut);
    if (pruned)
        sl_log_info ("pruned", "streams=%d more=%s", pruned, more ? "yes" : "no");
    if (more)
        zloop_timer (loop, AUDIT_PRUNE_AGAIN_MS, 1, s_on_prune, self);
    sl_live_tick (self->live, s_wall ());
    return 0;
}

//  --------------------------------------------------------------------------
//  Webhook

static size_t
s_post_header (char *data, size_t size, size_t count, void *arg)
{
    s_post_t *post = arg;
    size_t n = size * count;
    if (n > 12 && strncasecmp (data, "Retry-After:", 12) == 0) {
        size_t len = n - 12 < sizeof post->retry_after - 1 ? n - 12 : sizeof post->retry_after - 1;
        memcpy (post->retry_after, data + 12, len);
        post->retry_after [len] = 0;
    }
    return n;
}

static size_t
s_post_body (char *data, size_t size, size_t count, void *arg)
{
    (void) data;
    (void) arg;
    return size * count;                //  the answer's body is not needed
}

static void
s_post_done (void *arg, CURL *easy, CURLcode result)
{
    s_post_t *post = arg;
    audit_t *self = post->audit;
    long status = 0;
    curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &status);
    bool ok = result == CURLE_OK && status >= 200 && status < 300;
    int64_t retry_ms = atoi (post->retry_after) > 0 ? (int64_t) atoi (post->retry_after) * 1000 : 0;
    if (!ok) {
        uint32_t held;
        if (sl_ratelimit_allow (&self->error_log, s_mono (), &held))
            sl_log_warn ("webhook_failed", "attempt %d: %s (status %ld) (and %u more not logged)",
                         sl_webhook_attempt (post->event), curl_easy_strerror (result), status, held);
    }
    bool again = sl_webhook_done (self->webhook, post->event, ok, retry_ms, s_wall ());
    if (!ok && !again)
        sl_log_error ("webhook_given_up", "an event is dropped after %d attempts", self->config.webhook_attempts);
    curl_easy_cleanup (easy);
    free (post);
    s_webhook_pump (self);
}

static void
s_webhook_pump (audit_t *self)
{
    sl_webhook_event_t *event;
    while ((event = sl_webhook_next (self->webhook, s_wall ()))) {
        CURL *easy = curl_easy_init ();
        s_post_t *post = sl_xcalloc (1, sizeof *post);
        post->audit = self;
        post->event = event;
        sl_str_t body = sl_webhook_body (event);
        curl_easy_setopt (easy, CURLOPT_URL, self->config.webhook_url);
        curl_easy_setopt (easy, CURLOPT_POST, 1L);
        curl_easy_setopt (easy, CURLOPT_POSTFIELDS, body.ptr);
        curl_easy_setopt (easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) body.len);
        curl_easy_setopt (easy, CURLOPT_HTTPHEADER, self->webhook_headers);
        curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, (long) AUDIT_WEBHOOK_TIMEOUT_MS);
        curl_easy_setopt (easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt (easy, CURLOPT_HEADERFUNCTION, s_post_header);
        curl_easy_setopt (easy, CURLOPT_HEADERDATA, post);
        curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_post_body);
        if (sl_curlm_add (self->curlm, easy, s_post_done, post)) {
            sl_webhook_done (self->webhook, event, false, 0, s_wall ());
            curl_easy_cleanup (easy);
            free (post);
            break;
        }
    }
    const sl_webhook_stats_t *st = sl_webhook_stats (self->webhook);
    self->webhook_sent->value = st->sent;
    self->webhook_failures->value = st->failures;
    self->webhook_dropped->value = st->dropped;
    self->webhook_given_up->value = st->given_up;
}

static int
s_on_webhook (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_webhook_pump (arg);
    return 0;
}

//  --------------------------------------------------------------------------
//  Console

static const char *
s_req_query (void *arg, const char *name)
{
    return sl_http_req_query (arg, name);
}

static const char *
s_req_header (void *arg, const char *name)
{
    return sl_http_req_header (arg, name);
}

static void
s_on_request (void *arg, sl_http_req_t *req)
{
    audit_t *self = arg;
    sl_console_req_t creq = {
        .method = sl_http_req_method (req),
        .path = sl_http_req_path (req),
        .query = s_req_query,
        .header = s_req_header,
        .arg = req,
        .body = sl_http_req_body (req),
        .loopback = sl_http_req_loopback (req)
    };
    sl_console_resp_t resp = { 0 };
    if (sl_http_req_too_large (req) || sl_http_req_bad_framing (req)) {
        sl_http_respond (req, sl_http_req_too_large (req) ? 413 : 400, "text/plain", "refused\n", 8);
        return;
    }
    //  Probes of the console's port (an orchestrator's readiness is the
    //  console's): as on the metrics port, no more than up, and taking
    //  records or draining.
    if (strcmp (creq.method, "GET") == 0 && sl_service_answer_probe (self->svc, req, creq.path))
        return;
    sl_console_handle (self->console, &creq, &resp);
    if (resp.cookie [0])
        sl_http_add_header (req, "Set-Cookie", resp.cookie);
    if (resp.cache)
        sl_http_add_header (req, "Cache-Control", resp.cache);
    sl_http_add_header (req, "X-Content-Type-Options", "nosniff");
    sl_http_add_header (req, "Content-Security-Policy",
                        "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
                        "connect-src 'self'; frame-ancestors 'none'");
    if (resp.kind == SL_CONSOLE_DECIDE) {
        audit_approvals_decide (self->approvals, req, resp.approval, &resp.decision.decision);
        sl_approvals_parsed_clear (&resp.decision);
    }
    else
    if (resp.kind == SL_CONSOLE_LIVE) {
        if (self->sse_count == AUDIT_MAX_SSE) {
            sl_http_respond (req, 503, "text/plain", "too many live pages\n", 20);
        }
        else
        if (sl_http_stream_start (req, 200, "text/event-stream") == 0) {
            //  The snapshot first, then whatever is committed from now on.
            sl_buf_t first = { 0 };
            sl_buf_puts (&first, "retry: 1000\n\nevent: snapshot\ndata: ");
            sl_live_snapshot (self->live, &first);
            sl_buf_puts (&first, "\n\n");
            sl_http_stream_write (req, first.data, first.len);
            sl_buf_free (&first);
            self->sse [self->sse_count++] = req;
        }
    }
    else
        sl_http_respond (req, resp.status, resp.content_type, resp.body.data, resp.body.len);
    sl_buf_free (&resp.body);
}

static void
s_on_closed (void *arg, sl_http_req_t *req, bool aborted)
{
    (void) aborted;
    audit_t *self = arg;
    if (audit_approvals_closed (self->approvals, req))
        return;
    for (size_t i = 0; i < self->sse_count; i++)
        if (self->sse [i] == req) {
            self->sse [i] = self->sse [--self->sse_count];
            break;
        }
}

static int
s_on_sse_keepalive (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_broadcast (arg, SL_STR_LIT (": keep-alive\n\n"));
    return 0;
}

static size_t
s_connected (audit_t *self)
{
    size_t n = 0;
    int64_t now = s_mono ();
    for (size_t i = 0; i < self->conn_count; i++)
        n += self->conns [i]->heard_ms && now - self->conns [i]->heard_ms < AUDIT_ALIVE_MS;
    return n;
}

static void
s_meta (void *arg, sl_buf_t *out)
{
    audit_t *self = arg;
    sl_buf_printf (out, ",\"emitters\":%zu,\"emitters_sending\":%zu,\"live_streams\":%zu,\"store_ok\":%s",
                   self->conn_count, s_connected (self), sl_live_streams (self->live),
                   self->store_down ? "false" : "true");
    if (self->webhook)
        sl_buf_printf (out, ",\"webhook\":{\"queued\":%zu,\"sent\":%llu,\"given_up\":%llu}",
                       sl_webhook_queued (self->webhook),
                       (unsigned long long) sl_webhook_stats (self->webhook)->sent,
                       (unsigned long long) sl_webhook_stats (self->webhook)->given_up);
}

static void
s_chain_state (void *arg, sl_buf_t *out)
{
    audit_chain_json (((audit_t *) arg)->chain, out);
}

static int64_t
s_console_clock (void *arg)
{
    (void) arg;
    return s_wall ();
}

//  --------------------------------------------------------------------------
//  Health and metrics

static void
s_health (void *arg, sl_buf_t *out)
{
    audit_t *self = arg;
    sl_buf_printf (out, ",\"store\":\"%s\",\"store_ok\":%s,\"emitters\":%zu,\"emitters_sending\":%zu,"
                        "\"live_streams\":%zu,\"console_port\":%d",
                   sl_store_kind (self->store), self->store_down ? "false" : "true", self->conn_count,
                   s_connected (self), sl_live_streams (self->live),
                   self->httpd ? sl_httpd_port (self->httpd) : -1);
}

static double
s_gauge_emitters (void *arg)
{
    return (double) s_connected (arg);
}

static double
s_gauge_live (void *arg)
{
    return (double) sl_live_streams (((audit_t *) arg)->live);
}

static double
s_gauge_pages (void *arg)
{
    return (double) ((audit_t *) arg)->sse_count;
}

static double
s_gauge_store_up (void *arg)
{
    return ((audit_t *) arg)->store_down ? 0 : 1;
}

static double
s_gauge_queue (void *arg)
{
    audit_t *self = arg;
    return self->webhook ? (double) sl_webhook_queued (self->webhook) : 0;
}

static double
s_gauge_size (void *arg)
{
    audit_t *self = arg;
    int64_t bytes = 0;
    if (!self->store_down)
        sl_retention_size (self->store, &bytes);
    return (double) bytes;
}

static void
s_metrics (audit_t *self, sl_metrics_t *m)
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
    self->webhook_sent = sl_metrics_counter (m, "sluice_audit_webhook_sent_total", NULL,
                                             "Events the webhook took");
    self->webhook_failures = sl_metrics_counter (m, "sluice_audit_webhook_failures_total", NULL,
                                                 "Webhook attempts that failed (retried with backoff)");
    self->webhook_dropped = sl_metrics_counter (m, "sluice_audit_webhook_dropped_total", NULL,
                                                "Webhook events dropped: the queue was full");
    self->webhook_given_up = sl_metrics_counter (m, "sluice_audit_webhook_given_up_total", NULL,
                                                 "Webhook events dropped after their last attempt");
    self->commit_seconds = sl_metrics_histogram (m, "sluice_audit_commit_seconds", NULL,
                                                 "Time to commit a batch of records",
                                                 sl_metrics_latency_bounds, sl_metrics_latency_bounds_count);
    sl_metrics_gauge_fn (m, "sluice_audit_emitters_sending", NULL, "Emitters whose records arrived lately",
                         s_gauge_emitters, self);
    sl_metrics_gauge_fn (m, "sluice_audit_live_streams", NULL, "Streams in flight in the live view",
                         s_gauge_live, self);
    sl_metrics_gauge_fn (m, "sluice_audit_console_live_pages", NULL, "Console pages watching live",
                         s_gauge_pages, self);
    sl_metrics_gauge_fn (m, "sluice_audit_store_up", NULL, "1 while the store answers", s_gauge_store_up, self);
    sl_metrics_gauge_fn (m, "sluice_audit_webhook_queue", NULL, "Webhook events waiting or in flight",
                         s_gauge_queue, self);
    sl_metrics_gauge_fn (m, "sluice_audit_store_bytes", NULL,
                         "What the store holds by its own count (retention by size)", s_gauge_size, self);
}

//  --------------------------------------------------------------------------
//  Life cycle

audit_t *
audit_new (sl_service_t *svc, const audit_config_t *config)
{
    char *error = NULL;
    sl_store_t *store = sl_store_open (config->store, &error);
    if (!store) {
        sl_log_error ("store_failed", "cannot open the store: %s", error);
        free (error);
        return NULL;
    }
    audit_t *self = sl_xcalloc (1, sizeof *self);
    self->svc = svc;
    self->config = *config;
    self->store = store;
    self->archive = sl_archive_new (store, config->max_text);
    sl_archive_set_prices (self->archive, config->prices);
    sl_archive_set_tools_cap (self->archive, config->tools_per_team);
    self->live = sl_live_new ();
    self->codec = sl_codec_new ();
    self->inner = sl_codec_new ();
    self->reconnect_timer = -1;
    self->error_log = (sl_ratelimit_t) SL_RATELIMIT_INIT (AUDIT_LOG_BURST, AUDIT_LOG_WINDOW_MS);
    zloop_t *loop = sl_service_loop (svc);
    s_metrics (self, sl_service_metrics (svc));
    sl_log_info ("store_open", "store=%s target=%s schema=%d", sl_store_kind (store), sl_store_target (store),
                 sl_store_version (store));
    audit_approvals_config_t approvals = {
        .judges = config->judge_approvals,
        .webhook_url = config->approvals_webhook_url,
        .webhook_secret = config->approvals_webhook_secret,
        .webhook_queue = config->webhook_queue,
        .webhook_attempts = config->webhook_attempts,
    };
    audit_chain_config_t chain = {
        .signing_key = config->signing_key,
        .checkpoint_records = config->checkpoint_records,
        .checkpoint_seconds = config->checkpoint_seconds,
        .checkpoint_file = config->checkpoint_file,
        .verify_seconds = config->verify_seconds,
    };
    self->chain = audit_chain_new (svc, store, sl_archive_chain (self->archive), &chain);
    if (!self->chain) {
        audit_destroy (&self);
        return NULL;
    }
    self->approvals = audit_approvals_new (svc, &approvals);
    if (!self->approvals) {
        audit_destroy (&self);
        return NULL;
    }
    if (config->console_port >= 0) {
        self->console = sl_console_new (store, config->console_keys);
        sl_console_on_meta (self->console, s_meta, self);
        sl_console_on_chain (self->console, s_chain_state, self);
        sl_console_set_clock (self->console, s_console_clock, NULL);
        self->httpd = sl_httpd_new (loop, config->console_host, config->console_port, AUDIT_MAX_BODY,
                                    s_on_request, s_on_closed, self);
        if (!self->httpd) {
            sl_log_error ("bind_failed", "cannot listen on %s:%d for the console", config->console_host,
                          config->console_port);
            audit_destroy (&self);
            return NULL;
        }
        sl_httpd_set_stream_cap (self->httpd, AUDIT_SSE_CAP);
        audit_approvals_set_httpd (self->approvals, self->httpd);
        sl_httpd_set_counters (self->httpd, &(sl_httpd_counters_t) {
            .bad_framing = sl_service_framing_counter (svc, "console") });
        zloop_timer (loop, AUDIT_SSE_KEEPALIVE_MS, 0, s_on_sse_keepalive, self);
        sl_log_info ("console_listening", "url=http://%s:%d/ keys=%s", config->console_host,
                     sl_httpd_port (self->httpd),
                     sl_console_has_keys (self->console) ? "yes" : "none (loopback clients only)");
    }
    if (config->webhook_url && *config->webhook_url) {
        sl_webhook_opts_t opts = { config->webhook_queue, config->webhook_attempts, 500, 30000, 4 };
        self->webhook = sl_webhook_new (&opts);
        self->curlm = sl_curlm_new (loop);
        self->webhook_headers = curl_slist_append (NULL, "Content-Type: application/json");
        self->webhook_headers = curl_slist_append (self->webhook_headers, "User-Agent: sluice-audit");
        if (config->webhook_token && *config->webhook_token) {
            sl_buf_t line = { 0 };
            sl_buf_printf (&line, "Authorization: Bearer %s", config->webhook_token);
            self->webhook_headers = curl_slist_append (self->webhook_headers, sl_buf_cstr (&line));
            sl_buf_free (&line);
        }
        self->webhook_streams = config->webhook_on && strcmp (config->webhook_on, "stream") == 0;
        zloop_timer (loop, AUDIT_WEBHOOK_TICK_MS, 0, s_on_webhook, self);
        sl_log_info ("webhook", "one post per %s, actions %s", self->webhook_streams ? "stream" : "verdict",
                     config->webhook_actions && *config->webhook_actions ? config->webhook_actions : "all");
    }
    zloop_timer (loop, AUDIT_HB_MS, 0, s_on_heartbeat, self);
    zloop_timer (loop, SL_RESOLVE_MS, 0, s_on_resolve, self);
    if (config->retain_ms > 0 || config->retain_bytes > 0)
        self->prune_timer = zloop_timer (loop, (size_t) (config->prune_ms > 0 ? config->prune_ms : 60000), 0,
                                         s_on_prune, self);
    sl_service_on_health (svc, s_health, self);
    sl_service_on_drain (svc, s_drain_start, NULL, NULL, self);
    s_resolve (self);
    sl_log_info ("emitters", "list=%s connected=%zu", config->emitters, self->conn_count);
    return self;
}

void
audit_destroy (audit_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    audit_t *self = *self_p;
    while (self->conn_count)
        s_disconnect (self, self->conn_count - 1);
    if (self->webhook && sl_webhook_queued (self->webhook))
        sl_log_warn ("webhook_unsent", "%zu webhook events are lost with this process (the store has the records)",
                     sl_webhook_queued (self->webhook));
    sl_curlm_destroy (&self->curlm);
    curl_slist_free_all (self->webhook_headers);
    sl_webhook_destroy (&self->webhook);
    //  Live pages wait in suspended connections: end them first (MHD
    //  refuses to stop with a connection suspended).
    for (size_t i = 0; i < self->sse_count; i++)
        sl_http_stream_abort (self->sse [i]);
    if (self->httpd && self->sse_count)
        sl_httpd_run (self->httpd);
    sl_httpd_destroy (&self->httpd);
    audit_approvals_destroy (&self->approvals);      //  after its requests were closed
    sl_console_destroy (&self->console);
    s_fresh_clear (self);
    free (self->fresh);
    sl_live_destroy (&self->live);
    //  What was taken is committed: a last checkpoint covers it all.
    if (self->chain && !self->store_down)
        audit_chain_stop (self->chain);
    audit_chain_destroy (&self->chain);
    sl_archive_destroy (&self->archive);
    sl_store_close (&self->store);
    sl_codec_destroy (&self->codec);
    sl_codec_destroy (&self->inner);
    sl_buf_free (&self->events);
    sl_buf_free (&self->scratch);
    free (self);
    *self_p = NULL;
}
