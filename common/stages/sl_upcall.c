/*  sl_upcall.c - the ingest's upstream calls, deadlines, retries and
    delta logs (see sl_upcall.h).

    A call's bytes go: body bytes -> the dialect's framing (sl_framing:
    SSE, or AWS's event stream) -> made
    well-formed UTF-8 -> the dialect's decoder (sl_decoder) -> DELTA and
    ERROR messages -> downstream (ops.send) and into the delta log. A
    non-2xx answer's body is kept instead, and read at the end as the
    provider's error (sl_decoder_error_body).
*/
#include "common/stages/sl_upcall.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"
#include "common/base/sl_sidmap.h"
#include "common/base/sl_utf8.h"
#include "common/dialects/sl_decoder.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_framing.h"
#include "common/dialects/sl_plan.h"
#include "common/http/sl_retry.h"
#include "common/otel/sl_trace.h"
#include "common/stages/sl_ended.h"

#define S_LOG_STEP 1024                 //  a delta log grows by a quarter, at least this (not by doubling)
#define S_REFUSAL_LOG_MS 1000           //  at most one log line a second for refused streams
#define S_STALL_DOUBLINGS 6             //  the stall deadline doubles at most this many times

typedef enum {
    PHASE_BACKOFF,                      //  waiting to start an attempt
    PHASE_AUTHORIZING,                  //  waiting for the credential source
    PHASE_CONNECTING,                   //  transfer started, not connected yet
    PHASE_WAITING,                      //  request sent, no response byte yet
    PHASE_STREAMING,                    //  response arriving
    PHASE_DONE                          //  upstream over; waiting for the final ack
} s_phase_t;

//  The deadlines of a call, in the order of their metric labels.
typedef enum {
    TIMEOUT_CONNECT,
    TIMEOUT_FIRST_BYTE,
    TIMEOUT_IDLE,
    TIMEOUT_COUNT
} s_timeout_t;

static const char *s_timeout_names [] = { "connect", "first_byte", "idle" };
_Static_assert (sizeof s_timeout_names / sizeof s_timeout_names [0] == TIMEOUT_COUNT,
                "a name for every deadline");

struct _sl_upcall_t {
    sl_upcall_config_t config;
    sl_upcall_ops_t ops;
    void *arg;
    sl_sidmap_t *calls;                 //  sid -> sl_upcall_call_t
    sl_counter_t *started;
    sl_counter_t *upstream_errors;
    sl_counter_t *deltas;
    sl_counter_t *cancels;
    sl_counter_t *unroutable;
    sl_counter_t *malformed_upstream;
    sl_counter_t *unknown;
    sl_counter_t *retries;
    sl_counter_t *timeouts [TIMEOUT_COUNT];
    sl_counter_t *resends;              //  streams sent again in a new epoch
    sl_counter_t *logs_dropped;         //  delta logs dropped over their bound
    sl_counter_t *lost;                 //  streams that stalled and could not be re-sent
    sl_counter_t *gateway_gone;         //  streams cancelled for want of acks
    sl_counter_t *unknown_acks;         //  acks for streams no longer held, answered
    sl_counter_t *paused;               //  transfers paused for back-pressure
    sl_counter_t *repaired;             //  events and error bodies that were not well-formed UTF-8
    sl_counter_t *refused;              //  streams refused over max_streams
    sl_counter_t *ended_again;          //  streams let go of early, ended again after a loss
    sl_counter_t *ended_forgotten;      //  ... forgotten over SL_ENDED_MAX
    sl_ended_t *ended;                  //  streams let go of early (sl_ended.h)
    int64_t refusal_logged;             //  ms, the last log line about a refusal
    sl_buf_t repair;                    //  a repaired event, for the decoder
    sl_codec_t *codec;                  //  reads delta logs back
    size_t log_bytes;                   //  all streams' delta logs
    size_t body_bytes;                  //  request bodies held for a retry
    sl_failover_t *failover;            //  the providers' health, shared by every stream
    sl_counter_t *failovers;            //  attempts moved to another provider
    sl_counter_t **ejections;           //  per provider of the routes, in their order
    struct s_provider_gauge *gauges;    //  per provider: its ejected state, for the gauge
};

//  What one provider's gauge reads.
struct s_provider_gauge {
    sl_upcall_t *owner;
    const char *name;
};

//  One provider a call may try: the job's, or a step of its "fo".
typedef struct {
    const sl_provider_t *provider;
    int dialect;
    sl_buf_t model;                     //  the model's id there
    sl_buf_t body;                      //  its request body; empty: the call's
    bool own_body;                      //  body holds one (else the call's)
} s_cand_t;

struct _sl_upcall_call_t {
    sl_upcall_t *owner;
    uint8_t sid [SL_SID_SIZE];
    uint32_t epoch;
    uint64_t seq;                       //  next message sequence (START is 0)
    const sl_provider_t *provider;
    sl_auth_t *auth;                    //  the attempt's provider's credential source, or NULL
    int dialect;
    sl_buf_t url;
    sl_buf_t headers;                   //  "Name: value" lines, each NUL-terminated
    size_t header_count;
    sl_buf_t auth_lines;                //  the attempt's credential lines, NUL-terminated
    size_t auth_count;
    sl_buf_t body;                      //  the request body, kept for retries
    sl_buf_t folded;                    //  the attempt's body with the client's headers folded in
    bool folded_set;                    //  ... which it sends (sl_dialect_t.fold)
    void *transfer;                     //  the current attempt's (ops.start), NULL between
    int attempt;                        //  0 for the first
    //  The providers to try (sl_failover.h)
    s_cand_t *cands;
    sl_failover_cand_t *fcands;         //  their names and keys, for the walk
    size_t cand_count;
    sl_failover_walk_t walk;
    size_t key;                         //  the key of the current attempt
    bool attempting;                    //  an attempt began, its outcome not yet told to the table
    bool committed;                     //  the call went on with a provider: no more failover
    uint8_t client_dialect;
    sl_buf_t client_auth;               //  the client's credential line (wiped when freed)
    sl_buf_t passthrough;               //  the client's headers that go as sent
    sl_buf_t trace_headers;             //  traceparent and tracestate lines, each NUL-terminated
    size_t trace_count;
    sl_msg_t *start_msg;                //  the START, sent when the call commits (owned); NULL once sent
    bool started;                       //  the START went downstream
    sl_buf_t tried;                     //  the record: JSON objects, comma-separated
    sl_buf_t tried_text;                //  the same for people: "a: HTTP 429; b: ..."
    size_t tried_count;
    bool bodies_released;               //  every request body let go (the response under way)
    s_phase_t phase;
    int64_t deadline;                   //  ms, of the current phase
    int64_t last_byte;                  //  ms, last byte from upstream
    sl_framing_t *frames;               //  the dialect's framing of the body
    sl_decoder_t *decoder;
    uint64_t unknown_seen;              //  decoder's unknown count already added
    long status;                        //  upstream HTTP status, 0 until known
    long retry_after_s;                 //  the answer's Retry-After, -1 when absent
    sl_buf_t error_body;                //  body of a non-2xx answer
    const char *failure;                //  why we stopped reading, or NULL
    const char *failure_code;
    //  An exception the provider's stream began with (AWS's event stream:
    //  throttlingException, ...), held while another provider may serve:
    //  its status (0: none), code and words.
    int exception_status;
    bool finishing;                     //  in the decoder's finish: nothing more is held
    sl_buf_t exception_code;
    sl_buf_t exception_message;
    bool ended;                         //  END sent downstream
    bool paused;                        //  transfer paused: downstream congested
    //  Re-sending
    sl_buf_t gateway;                   //  routing id of the gateway that sent the job
    sl_buf_t log;                       //  the delta log: every message sent, encoded
    bool resendable;                    //  log within its bound
    sl_buf_t start;                     //  the START, encoded (to end the stream again)
    int resends;
    uint64_t activity;                  //  the gateway's activity counter, last seen
    int64_t unacked_since;              //  ms, first send since activity last moved; 0: none
    int64_t last_ack;                   //  ms, last ack (or the job's arrival)
    int64_t last_resend;                //  ms
    //  An inline answer (REQ inl): read in place of a transfer
    bool is_inline;
    sl_buf_t inline_answer;             //  the answer, let go once read
    size_t inline_read;                 //  bytes of it decoded
    sl_buf_t inline_name;               //  the job's prov, the provider named
    sl_provider_t inline_provider;      //  what logs and errors name (no URL, no key)
};

static int64_t
s_now (sl_upcall_t *self)
{
    return self->ops.clock (self->arg);
}

//  --------------------------------------------------------------------------
//  Emitting into the pipeline

static void s_send_start (sl_upcall_call_t *c);

//  Send downstream without logging (a re-send sends from the log). The
//  stream's first message takes its START ahead of it.
static void
s_send_unlogged (sl_upcall_call_t *c, sl_msg_t *msg)
{
    sl_upcall_t *self = c->owner;
    if (!c->started && msg->type != SL_MSG_START)
        s_send_start (c);
    memcpy (msg->sid, c->sid, SL_SID_SIZE);
    msg->epoch = c->epoch;
    msg->seq = c->seq++;
    if (self->ops.send (self->arg, msg))
        sl_counter_inc (self->unroutable);
    //  The stall clock runs from a send the gateway will show activity
    //  for. A START makes none (nothing reaches the client before the
    //  model's first byte, which may take a reasoning model a minute):
    //  silence after it is the upstream's, and its deadlines judge it.
    if (!c->unacked_since && msg->type != SL_MSG_START)
        c->unacked_since = s_now (self);
}

//  Keep a copy for a re-send, within the per-stream and total bounds.
static void
s_log (sl_upcall_call_t *c, const sl_msg_t *msg)
{
    if (!c->resendable)
        return;
    sl_upcall_t *self = c->owner;
    size_t before = c->log.len, len = 0;
    //  The sender encoded it a moment ago: copy those bytes.
    const uint8_t *encoded = self->ops.encoded ? self->ops.encoded (self->arg, &len) : NULL;
    if (encoded) {
        memcpy (sl_buf_reserve_gently (&c->log, len, S_LOG_STEP), encoded, len);
        c->log.len += len;
    }
    else
        sl_msg_encode (msg, &c->log);
    self->log_bytes += c->log.len - before;
    if (c->log.len > self->config.log_max || self->log_bytes > self->config.log_total) {
        self->log_bytes -= c->log.len;
        sl_buf_free (&c->log);
        c->resendable = false;
        sl_counter_inc (self->logs_dropped);
        char hex [SL_SID_HEX_SIZE];
        sl_sid_hex (c->sid, hex);
        sl_log_warn ("replay_log_dropped", "sid=%s: over the replay log bound, no replay possible", hex);
    }
}

static void
s_send (sl_upcall_call_t *c, sl_msg_t *msg)
{
    s_send_unlogged (c, msg);
    s_log (c, msg);
}

//  The body the current attempt sends: its provider's own, or the job's.
static sl_str_t
s_base_body (sl_upcall_call_t *c)
{
    if (c->cand_count && c->cands [c->walk.at].own_body)
        return sl_buf_str (&c->cands [c->walk.at].body);
    return sl_buf_str (&c->body);
}

//  The body the current attempt sends: its provider's, with what the
//  dialect takes in the body of the client's headers folded in.
static sl_str_t
s_attempt_body (sl_upcall_call_t *c)
{
    return c->folded_set ? sl_buf_str (&c->folded) : s_base_body (c);
}

//  The START, now that the call is committed to a provider (or ends
//  before any served): it names that provider, its dialect and the
//  providers tried before it.
static void
s_send_start (sl_upcall_call_t *c)
{
    if (c->started || !c->start_msg)
        return;
    c->started = true;
    sl_upcall_t *self = c->owner;
    sl_msg_t start = *c->start_msg;
    start.provider = c->provider ? sl_str (c->provider->name) : SL_STR_NULL;
    start.upstream_dialect = (uint8_t) c->dialect;
    if (c->cand_count && !c->is_inline)
        start.request_bytes = s_attempt_body (c).len;
    sl_buf_t attempts = { 0 };
    if (c->tried_count > 1) {
        sl_buf_putc (&attempts, '[');
        sl_buf_append_str (&attempts, sl_buf_str (&c->tried));
        sl_buf_putc (&attempts, ']');
        start.attempts = sl_buf_str (&attempts);
    }
    s_send (c, &start);
    size_t len = 0;
    const uint8_t *encoded = self->ops.encoded ? self->ops.encoded (self->arg, &len) : NULL;
    if (encoded)
        sl_buf_append (&c->start, encoded, len);
    else
        sl_msg_encode (&start, &c->start);
    sl_buf_free (&attempts);
    free (c->start_msg);
    c->start_msg = NULL;
}

//  True while nothing but the START went downstream: the client has seen
//  nothing, so the call may be retried and the error is the gateway's to
//  answer with a status.
static bool
s_untouched (sl_upcall_call_t *c)
{
    return c->seq <= 1;
}

static void s_wipe (sl_buf_t *buf);

//  The request body is kept for a retry, and a retry is only possible
//  while the client has seen nothing. An agent's request carries its whole
//  conversation (hundreds of KiB): once the response is under way and the
//  transfer has sent every byte of the body (it never reads it again
//  then), let it go rather than hold it for the stream's life.
static void
s_release_body (sl_upcall_call_t *c)
{
    if (c->bodies_released || s_untouched (c))
        return;
    sl_upcall_t *self = c->owner;
    if (c->transfer && self->ops.uploaded (self->arg, c->transfer) != (int64_t) s_attempt_body (c).len)
        return;
    self->body_bytes -= c->body.len;
    sl_buf_free (&c->body);
    for (size_t i = 0; i < c->cand_count; i++) {
        self->body_bytes -= c->cands [i].body.len;
        sl_buf_free (&c->cands [i].body);
        c->cands [i].own_body = false;
    }
    sl_buf_free (&c->folded);
    c->folded_set = false;
    c->bodies_released = true;
    //  Nor can a new attempt need what one is made of: the URL, the
    //  headers, the credential lines and the client's own headers (curl
    //  keeps its copies of those it sends). Let go, the keys wiped, rather
    //  than hold them for the stream's life.
    sl_buf_free (&c->url);
    s_wipe (&c->headers);
    c->header_count = 0;
    s_wipe (&c->auth_lines);
    c->auth_count = 0;
    s_wipe (&c->client_auth);
    sl_buf_free (&c->passthrough);
    sl_buf_free (&c->trace_headers);
    c->trace_count = 0;
}

static void
s_count_unknown (sl_upcall_call_t *c)
{
    uint64_t now = sl_decoder_unknown (c->decoder);
    sl_counter_add (c->owner->unknown, now - c->unknown_seen);
    c->unknown_seen = now;
}

static void
s_send_end (sl_upcall_call_t *c)
{
    if (c->ended)
        return;
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_END);
    s_send (c, &m);
    c->ended = true;
}

static void s_outcome (sl_upcall_call_t *c, const char *result, bool counts);
static void s_commit (sl_upcall_call_t *c);

//  What the decoder made of the provider's events.
static void
s_emit_delta (void *arg, const sl_msg_t *msg)
{
    sl_upcall_call_t *c = arg;
    if (c->ended)
        return;
    sl_msg_t m = *msg;
    //  An exception frame of AWS's event stream of a kind an HTTP answer
    //  would have been retried for (429, 5xx: throttlingException,
    //  serviceUnavailableException, ...: AWS sends either), before
    //  anything went downstream: held, and reading stops here;
    //  sl_upcall_done moves the call to the next provider as it does for
    //  that HTTP status, or sends the error then. (An SSE provider's error
    //  event is its answer, as before.)
    if (m.type == SL_MSG_ERROR && !c->committed && !c->is_inline && c->cand_count && s_untouched (c)
    &&  (m.status == 429 || m.status >= 500) && !c->exception_status && !c->finishing
    &&  sl_framing_kind (c->frames) == SL_FRAMING_EVSTREAM) {
        c->exception_status = m.status;
        sl_buf_append_str (&c->exception_code, m.code);
        sl_buf_append_str (&c->exception_message, m.message);
        return;
    }
    //  The provider's answer decodes: the call is committed to it (an
    //  error it sends first ends the stream, and counts against it).
    if (m.type == SL_MSG_ERROR)
        s_outcome (c, "error_event", true);
    else
        s_commit (c);
    if (m.type == SL_MSG_DELTA)
        sl_counter_inc (c->owner->deltas);
    else
    if (m.type == SL_MSG_ERROR) {
        if (s_untouched (c))
            m.flags |= SL_F_RETRYABLE;  //  the provider failed before saying anything
        sl_counter_inc (c->owner->upstream_errors);
        sl_log_info ("upstream_error", "provider=%s code=%.*s", c->provider->name,
                     (int) m.code.len, m.code.ptr);
    }
    s_send (c, &m);
    s_release_body (c);
    //  The provider's own end (or its error) ends the stream now; the
    //  transfer may still drain its last bytes for connection reuse.
    if (m.type == SL_MSG_ERROR || (m.type == SL_MSG_DELTA && m.kind == SL_D_DONE))
        s_send_end (c);
}

//  An ERROR message (the envelope is the sender's to fill).
static void
s_error_init (sl_msg_t *m, const char *code, const char *message, int status)
{
    sl_msg_init (m, SL_MSG_ERROR);
    m->code = sl_str (code);
    m->message = sl_str (message);
    m->status = status;
}

static void
s_send_error (sl_upcall_call_t *c, const char *code, const char *message, int status, uint32_t flags)
{
    if (c->ended)
        return;
    sl_msg_t m;
    //  A stream no provider served says which were tried and why each was
    //  left, after the last one's own words.
    sl_buf_t text = { 0 };
    if (!c->started && c->cand_count > 1 && c->tried_text.len) {
        sl_buf_printf (&text, "%s (providers tried: %.*s)", message, (int) c->tried_text.len, c->tried_text.data);
        message = sl_buf_cstr (&text);
    }
    s_error_init (&m, code, message, status);
    m.flags = flags | (s_untouched (c) ? SL_F_RETRYABLE : 0);
    sl_counter_inc (c->owner->upstream_errors);
    sl_log_info ("upstream_error", "provider=%s code=%s status=%d", c->provider ? c->provider->name : "-",
                 code, status);
    s_send (c, &m);
    s_send_end (c);
    sl_buf_free (&text);
}

//  An ERROR and the END that end the stream at every hop, unless it
//  ended already (logged: a re-send carries it).
static void
s_end_with (sl_upcall_call_t *c, const char *code, const char *message)
{
    if (c->ended)
        return;
    sl_msg_t m;
    s_error_init (&m, code, message, 499);
    s_send (c, &m);
    s_send_end (c);
}

//  --------------------------------------------------------------------------
//  Stream life cycle

static void
s_drop_transfer (sl_upcall_call_t *c)
{
    if (c->transfer) {
        c->owner->ops.stop (c->owner->arg, c->transfer);
        c->transfer = NULL;
    }
}

//  Wipe a buffer that held a credential, and free it.
static void
s_wipe (sl_buf_t *buf)
{
    if (buf->data)
        memset (buf->data, 0, buf->cap);
    sl_buf_free (buf);
}

static void
s_call_free (sl_upcall_call_t *c)
{
    s_drop_transfer (c);
    //  An attempt that never told how it went (the client left): a
    //  probe's place is free again.
    if (c->attempting && c->provider)
        sl_failover_abandoned (c->owner->failover, c->provider->name);
    for (size_t i = 0; i < c->cand_count; i++) {
        c->owner->body_bytes -= c->cands [i].body.len;
        sl_buf_free (&c->cands [i].body);
        sl_buf_free (&c->cands [i].model);
    }
    free (c->cands);
    free (c->fcands);
    s_wipe (&c->client_auth);
    sl_buf_free (&c->passthrough);
    sl_buf_free (&c->trace_headers);
    sl_buf_free (&c->tried);
    sl_buf_free (&c->tried_text);
    free (c->start_msg);
    c->owner->log_bytes -= c->log.len;
    c->owner->body_bytes -= c->body.len;
    sl_buf_free (&c->log);
    sl_buf_free (&c->start);
    sl_buf_free (&c->gateway);
    //  A key must not linger in freed memory.
    if (c->headers.data)
        memset (c->headers.data, 0, c->headers.cap);
    sl_buf_free (&c->headers);
    if (c->auth_lines.data)
        memset (c->auth_lines.data, 0, c->auth_lines.cap);
    sl_buf_free (&c->auth_lines);
    sl_framing_destroy (&c->frames);
    sl_decoder_destroy (&c->decoder);
    sl_buf_free (&c->error_body);
    sl_buf_free (&c->exception_code);
    sl_buf_free (&c->exception_message);
    sl_buf_free (&c->url);
    sl_buf_free (&c->body);
    sl_buf_free (&c->folded);
    sl_buf_free (&c->inline_answer);
    sl_buf_free (&c->inline_name);
    free (c);
}

static void
s_call_close (sl_upcall_call_t *c)
{
    sl_sidmap_remove (c->owner->calls, c->sid);
    s_call_free (c);
}

//  Let go of a stream before its gateway acknowledged its end: remembered
//  with the error it ended with, so that a loss of that end is answered
//  by ending it again (sl_ended.h).
static void
s_call_close_early (sl_upcall_call_t *c, const char *code, const char *message, int status)
{
    sl_upcall_t *self = c->owner;
    if (c->start.len
    &&  sl_ended_put (self->ended, c->sid, c->epoch, sl_buf_str (&c->start), code, message, status, s_now (self)))
        sl_counter_inc (self->ended_forgotten);
    s_call_close (c);
}

//  The upstream part is over and END went downstream: let the transfer go
//  and wait for the gateway's final ack, keeping the log for a re-send.
static void
s_call_done (sl_upcall_call_t *c)
{
    s_drop_transfer (c);
    c->phase = PHASE_DONE;
}

//  What the provider sent, made well-formed: bytes that are not UTF-8 and
//  lone surrogate escapes become U+FFFD (sl_utf8.h) here, once, so that
//  every stage after sees the text the client will see (the judge's policy
//  matches what is delivered; taps get well-formed strings). Returns data,
//  or its repaired copy in the library's buffer.
static sl_str_t
s_well_formed (sl_upcall_t *self, sl_str_t data)
{
    if (!data.ptr || sl_utf8_json_clean (data.ptr, data.len))
        return data;
    sl_counter_inc (self->repaired);
    sl_buf_reset (&self->repair);
    sl_utf8_repair_json (&self->repair, data.ptr, data.len);
    return sl_buf_str (&self->repair);
}

static int
s_on_event (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) id;
    sl_upcall_call_t *c = arg;
    data = s_well_formed (c->owner, data);
    int rc = sl_decoder_event (c->decoder, type, data, s_emit_delta, c);
    s_count_unknown (c);
    if (c->exception_status)
        return -1;                      //  held: nothing more is read of this answer
    if (rc == 0)
        return 0;
    c->failure = sl_decoder_error (c->decoder);
    c->failure_code = "upstream_malformed";
    sl_counter_inc (c->owner->malformed_upstream);
    return -1;
}

//  A byte of the answer (a header line or the body) arrived.
static void
s_on_bytes (sl_upcall_call_t *c)
{
    c->last_byte = s_now (c->owner);
    c->phase = PHASE_STREAMING;
}

//  The provider's error code and message from a non-2xx body, read by the
//  dialect's decoder.
static void
s_status_error (sl_upcall_call_t *c)
{
    sl_str_t body = s_well_formed (c->owner, sl_buf_str (&c->error_body));
    sl_str_t type, message;
    sl_decoder_error_body (c->decoder, body, &type, &message);
    sl_buf_t text = { 0 }, code = { 0 };
    if (message.ptr && message.len)
        sl_buf_append_str (&text, message);
    else
        sl_buf_printf (&text, "%s answered HTTP %ld", c->provider->name, c->status);
    if (type.ptr && type.len)
        sl_buf_append_str (&code, type);
    else
        sl_buf_puts (&code, "upstream_http_error");
    s_send_error (c, sl_buf_cstr (&code), sl_buf_cstr (&text), (int) c->status, SL_F_UPSTREAM);
    sl_buf_free (&code);
    sl_buf_free (&text);
}

//  --------------------------------------------------------------------------
//  Attempts and failover (sl_failover.h)

//  One line of the stream's record: a provider tried (result: why it was
//  left, or "ok"), or passed by ("held", "ejected": until_ms from now).
static void
s_record (sl_upcall_call_t *c, size_t index, const char *result, long status, long retry_after_s, int64_t until_ms)
{
    if (c->tried_count >= SL_UPCALL_TRIED_MAX)
        return;
    const s_cand_t *cand = &c->cands [index];
    sl_buf_t *j = &c->tried;
    if (c->tried_count++)
        sl_buf_putc (j, ',');
    sl_buf_puts (j, "{\"provider\":");
    sl_json_put_str (j, cand->provider->name, strlen (cand->provider->name));
    sl_buf_printf (j, ",\"dialect\":\"%s\",\"model\":", sl_dialect_name (cand->dialect));
    sl_json_put_sl (j, sl_buf_str (&cand->model));
    sl_buf_printf (j, ",\"result\":\"%s\"", result);
    if (status)
        sl_buf_printf (j, ",\"status\":%ld", status);
    if (retry_after_s >= 0)
        sl_buf_printf (j, ",\"retry_after_s\":%ld", retry_after_s);
    if (until_ms >= 0)
        sl_buf_printf (j, ",\"until_ms\":%lld", (long long) until_ms);
    if (cand->provider->key_env_count > 1 && until_ms < 0)
        sl_buf_printf (j, ",\"key\":%zu", c->key);
    sl_buf_putc (j, '}');
    if (strcmp (result, "ok") == 0)
        return;
    //  And for people: the error a stream no provider served ends with.
    sl_buf_t *t = &c->tried_text;
    if (t->len)
        sl_buf_puts (t, "; ");
    sl_buf_printf (t, "%s: ", cand->provider->name);
    if (status)
        sl_buf_printf (t, "HTTP %ld", status);
    else
        sl_buf_puts (t, result);
    if (retry_after_s >= 0)
        sl_buf_printf (t, " (retry after %ld s)", retry_after_s);
    if (until_ms >= 0)
        sl_buf_printf (t, " (for %lld ms more)", (long long) until_ms);
}

static void
s_on_skip (void *arg, size_t index, sl_failover_why_t why, int64_t until)
{
    sl_upcall_call_t *c = arg;
    s_record (c, index, sl_failover_why_name (why), 0, -1, until - s_now (c->owner));
}

//  The counter of ejections of a provider of the routes, or NULL.
static sl_counter_t *
s_ejections (sl_upcall_t *self, const char *name)
{
    size_t count = self->config.routes ? sl_providers_provider_count (self->config.routes) : 0;
    for (size_t i = 0; i < count && self->ejections; i++)
        if (strcmp (sl_providers_provider (self->config.routes, i)->name, name) == 0)
            return self->ejections [i];
    return NULL;
}

//  The current attempt failed (result says how): the record has it, the
//  health table too (counts: the provider's fault; with its Retry-After).
//  Once per attempt.
static void
s_outcome (sl_upcall_call_t *c, const char *result, bool counts)
{
    if (!c->attempting)
        return;
    c->attempting = false;
    sl_upcall_t *self = c->owner;
    const char *name = c->provider->name;
    long hold = c->retry_after_s >= 0 ? c->retry_after_s * 1000 : -1;
    long status = strcmp (result, "http_status") == 0 || strcmp (result, "key_refused") == 0
               || strcmp (result, "exception") == 0 ? c->status : 0;
    s_record (c, c->walk.at, result, status, c->retry_after_s, -1);
    if (sl_failover_failed (self->failover, name, s_now (self), hold, counts)) {
        sl_counter_t *ejections = s_ejections (self, name);
        if (ejections)
            sl_counter_inc (ejections);
        sl_log_warn ("provider_ejected", "provider=%s failures=%d window_ms=%ld cooldown_ms=%ld last=%s",
                     name, self->config.eject.failures, self->config.eject.window_ms,
                     self->config.eject.cooldown_ms, result);
    }
}

//  The provider's answer decodes: the call goes on with it, for good.
static void
s_commit (sl_upcall_call_t *c)
{
    if (!c->attempting)
        return;
    c->attempting = false;
    c->committed = true;
    sl_upcall_t *self = c->owner;
    const char *name = c->provider->name;
    int64_t now = s_now (self);
    bool was_ejected = sl_failover_state (self->failover, name, now) != SL_FAILOVER_HEALTHY;
    sl_failover_succeeded (self->failover, name, now);
    if (was_ejected)
        sl_log_info ("provider_readmitted", "provider=%s", name);
    s_record (c, c->walk.at, "ok", 0, -1, -1);
}

static void s_start_attempt (sl_upcall_call_t *c);

//  The current attempt failed before anything went downstream (result:
//  how): another one, at once or after a wait, when the walk allows
//  (true), else false and the caller ends the stream with the failure.
static bool
s_fail_over (sl_upcall_call_t *c, sl_failover_fault_t fault, const char *result)
{
    sl_upcall_t *self = c->owner;
    s_outcome (c, result, fault != SL_FAILOVER_AUTH);
    if (c->is_inline || c->committed || !c->cand_count || !s_untouched (c))
        return false;
    const s_cand_t *before = &c->cands [c->walk.at];
    sl_failover_step_t step;
    if (sl_failover_next (self->failover, &c->walk, fault, s_now (self), s_on_skip, c, &step))
        return false;
    const s_cand_t *next = &c->cands [step.index];
    sl_log_info ("upstream_retry", "provider=%s attempt=%d status=%ld result=%s next=%s key=%zu wait_ms=%ld",
                 before->provider->name, c->attempt + 1, c->status, result, next->provider->name, step.key,
                 step.wait_ms);
    sl_counter_inc (self->retries);
    if (next != before)
        sl_counter_inc (self->failovers);
    s_drop_transfer (c);
    c->attempt++;
    c->key = step.key;
    if (step.wait_ms > 0) {
        c->phase = PHASE_BACKOFF;
        c->deadline = s_now (self) + step.wait_ms;
    }
    else
        s_start_attempt (c);
    return true;
}

//  URL and headers for the current attempt: its provider, dialect, model
//  and key (sl_upstream.h). A provider with a credential source takes
//  neither a key nor the client's credential: the source's lines go at
//  each attempt. False when the request cannot be made (why says why).
static bool
s_prepare (sl_upcall_call_t *c, sl_buf_t *why)
{
    const s_cand_t *cand = &c->cands [c->walk.at];
    const sl_provider_t *p = cand->provider;
    const char *var = !c->auth && p->key_env_count ? p->key_envs [c->key % p->key_env_count] : NULL;
    const char *key = var ? getenv (var) : NULL;
    sl_buf_reset (&c->url);
    if (c->headers.data)
        memset (c->headers.data, 0, c->headers.cap);
    sl_buf_reset (&c->headers);
    c->header_count = 0;
    //  The client's own headers go to a provider of its own dialect only.
    sl_str_t passthrough = sl_dialect_same_format (cand->dialect, c->client_dialect) ? sl_buf_str (&c->passthrough)
                                                                                  : SL_STR_NULL;
    sl_upstream_t up;
    int rc = sl_upstream_prepare (sl_dialect_get (cand->dialect), p, sl_buf_str (&cand->model), key,
                                  p->forward_auth && !c->auth, sl_buf_str (&c->client_auth), passthrough, &up);
    //  Beta features the client asked for that this upstream does not
    //  take are left out (it would refuse the request): said, not silent.
    sl_buf_t left_out = { 0 };
    if (rc == 0 && sl_dialect_betas_left_out (sl_dialect_get (cand->dialect), passthrough, &left_out)) {
        char hex [SL_SID_HEX_SIZE];
        sl_sid_hex (c->sid, hex);
        sl_log_info ("upstream_betas_left_out", "sid=%s provider=%s betas=%.*s", hex, p->name,
                     (int) left_out.len, left_out.data);
    }
    sl_buf_free (&left_out);
    //  A dialect that takes client headers in its body: folded in.
    sl_buf_reset (&c->folded);
    c->folded_set = false;
    const sl_dialect_t *d = sl_dialect_get (cand->dialect);
    if (rc == 0 && d && d->fold && passthrough.len) {
        int folded = d->fold (s_base_body (c), passthrough, &c->folded);
        c->folded_set = folded == 0;
        if (folded < 0) {
            sl_buf_puts (why, "the request body is not a JSON object");
            rc = -1;
        }
    }
    if (rc == 0) {
        sl_buf_append_str (&c->url, sl_buf_str (&up.url));
        for (size_t i = 0; i < up.header_count; i++) {
            sl_buf_append_str (&c->headers, sl_buf_str (&up.header [i]));
            sl_buf_putc (&c->headers, 0);
        }
        sl_buf_append_str (&c->headers, sl_buf_str (&c->trace_headers));
        c->header_count = up.header_count + c->trace_count;
    }
    else
    if (!why->len)
        sl_buf_append_str (why, up.why.len ? sl_buf_str (&up.why) : SL_STR_LIT ("the request names no usable model"));
    sl_upstream_clear (&up);
    return rc == 0;
}

static void s_launch (sl_upcall_call_t *c);

//  Ask the attempt's credential source for its lines: start the transfer
//  when they are ready, wait in AUTHORIZING while they are fetched, move
//  to the next provider (or end the stream) when they cannot be had.
static void
s_authorize (sl_upcall_call_t *c)
{
    sl_upcall_t *self = c->owner;
    const char *lines [SL_UPSTREAM_HEADERS_MAX + SL_UPCALL_TRACE_HEADERS];
    const char *line = c->headers.data;
    for (size_t i = 0; i < c->header_count; i++) {
        lines [i] = line;
        line += strlen (line) + 1;
    }
    sl_auth_request_t req = {
        .method = "POST",
        .url = sl_buf_cstr (&c->url),
        .headers = lines,
        .header_count = c->header_count,
        .body = s_attempt_body (c),
        .now_ms = s_now (self),
        .wall_s = self->ops.wall (self->arg)
    };
    if (c->auth_lines.data)
        memset (c->auth_lines.data, 0, c->auth_lines.cap);
    sl_buf_reset (&c->auth_lines);
    c->auth_count = 0;
    sl_buf_t why = { 0 };
    int state = sl_auth_authorize (c->auth, &req, &c->auth_lines, &c->auth_count, &why);
    if (state == SL_AUTH_READY && c->auth_count <= SL_UPCALL_AUTH_LINES)
        s_launch (c);
    else
    if (state == SL_AUTH_PENDING) {
        if (c->phase != PHASE_AUTHORIZING) {
            long limit = self->config.auth_timeout_ms ? self->config.auth_timeout_ms
                                                      : self->config.connect_timeout_ms;
            c->phase = PHASE_AUTHORIZING;
            c->deadline = s_now (self) + limit;
            sl_log_debug ("upstream_authorizing", "provider=%s", c->provider->name);
        }
    }
    else {
        char text [320];
        snprintf (text, sizeof text, "no credentials for provider '%s': %s", c->provider->name,
                  why.len ? sl_buf_cstr (&why) : "too many credential headers");
        sl_buf_free (&why);
        if (s_fail_over (c, SL_FAILOVER_MOVE, "credentials"))
            return;
        s_send_error (c, "upstream_credentials", text, 502, 0);
        s_call_done (c);
        return;
    }
    sl_buf_free (&why);
}

static void
s_start_attempt (sl_upcall_call_t *c)
{
    sl_upcall_t *self = c->owner;
    const s_cand_t *cand = &c->cands [c->walk.at];
    c->provider = cand->provider;
    c->dialect = cand->dialect;
    c->status = 0;
    c->retry_after_s = -1;
    c->failure = NULL;
    c->failure_code = NULL;
    c->exception_status = 0;
    c->finishing = false;
    sl_buf_reset (&c->exception_code);
    sl_buf_reset (&c->exception_message);
    sl_buf_reset (&c->error_body);
    //  Nothing went downstream: the framing and the decoder (of this
    //  provider's dialect: SSE, or AWS's event stream) start afresh.
    int framing = sl_dialect_get (c->dialect) ? sl_dialect_get (c->dialect)->framing : SL_FRAMING_SSE;
    if (c->frames && sl_framing_kind (c->frames) == framing)
        sl_framing_reset (c->frames);
    else {
        sl_framing_destroy (&c->frames);
        c->frames = sl_framing_new (framing, self->config.max_event);
    }
    sl_decoder_destroy (&c->decoder);
    c->decoder = sl_decoder_new (c->dialect);
    c->unknown_seen = 0;
    c->auth = self->ops.auth ? self->ops.auth (self->arg, c->provider) : NULL;
    sl_buf_t why = { 0 };
    if (!c->frames || !c->decoder || !s_prepare (c, &why)) {
        s_send_error (c, "invalid_request_error", why.len ? sl_buf_cstr (&why) : "the request names no usable model",
                      400, 0);
        sl_buf_free (&why);
        s_call_done (c);
        return;
    }
    sl_buf_free (&why);
    sl_failover_begin (self->failover, c->provider->name, s_now (self));
    c->attempting = true;
    if (c->auth)
        s_authorize (c);
    else
        s_launch (c);
}

//  Start the attempt's transfer, its credential lines (if any) last.
static void
s_launch (sl_upcall_call_t *c)
{
    sl_upcall_t *self = c->owner;
    sl_upcall_attempt_t attempt = {
        .url = sl_buf_cstr (&c->url),
        .body = s_attempt_body (c)
    };
    const char *line = c->headers.data;
    for (size_t i = 0; i < c->header_count; i++) {
        attempt.header [attempt.header_count++] = line;
        line += strlen (line) + 1;
    }
    line = c->auth_lines.data;
    for (size_t i = 0; c->auth && i < c->auth_count; i++) {
        attempt.header [attempt.header_count++] = line;
        line += strlen (line) + 1;
    }
    sl_log_debug ("upstream_call", "provider=%s dialect=%s", c->provider->name, sl_dialect_name (c->dialect));
    c->phase = PHASE_CONNECTING;
    c->deadline = s_now (self) + self->config.connect_timeout_ms;
    c->transfer = self->ops.start (self->arg, c, &attempt);
    if (!c->transfer) {
        s_outcome (c, "unreachable", false);
        s_send_error (c, "upstream_unreachable", "the upstream call could not be started", 502, 0);
        s_call_done (c);
    }
}

//  A deadline passed: the phase says which one.
static void
s_on_deadline (sl_upcall_call_t *c)
{
    sl_upcall_t *self = c->owner;
    if (c->phase == PHASE_BACKOFF) {
        s_start_attempt (c);
        return;
    }
    if (c->phase == PHASE_AUTHORIZING) {
        if (s_fail_over (c, SL_FAILOVER_MOVE, "credentials_timeout"))
            return;
        char text [256];
        snprintf (text, sizeof text, "%s: no credentials within %ld ms (the credential source did not answer)",
                  c->provider->name, self->config.auth_timeout_ms ? self->config.auth_timeout_ms
                                                                  : self->config.connect_timeout_ms);
        s_send_error (c, "upstream_credentials_timeout", text, 504, 0);
        s_call_done (c);
        return;
    }
    s_drop_transfer (c);
    if (c->ended) {
        s_call_done (c);                //  the response was complete; only the body hung
        return;
    }
    s_timeout_t which = c->phase == PHASE_CONNECTING ? TIMEOUT_CONNECT
                      : c->phase == PHASE_WAITING ? TIMEOUT_FIRST_BYTE : TIMEOUT_IDLE;
    long limit = which == TIMEOUT_CONNECT ? self->config.connect_timeout_ms
               : which == TIMEOUT_FIRST_BYTE ? self->config.first_byte_timeout_ms
               : self->config.idle_timeout_ms;
    sl_counter_inc (self->timeouts [which]);
    //  A connect that never completed is a connection error: retried, or
    //  the next provider. A first byte that did not come moves on to the
    //  next provider, and is not waited for again.
    if (which == TIMEOUT_CONNECT && s_fail_over (c, SL_FAILOVER_FAULT, "connect_timeout"))
        return;
    if (which == TIMEOUT_FIRST_BYTE && s_fail_over (c, SL_FAILOVER_MOVE, "first_byte_timeout"))
        return;
    if (which == TIMEOUT_IDLE)
        s_outcome (c, "idle_timeout", true);
    char code [64], text [256];
    snprintf (code, sizeof code, "upstream_%s_timeout", s_timeout_names [which]);
    snprintf (text, sizeof text,
              which == TIMEOUT_CONNECT ? "%s: no connection within %ld ms (connect timeout)"
            : which == TIMEOUT_FIRST_BYTE ? "%s: no response within %ld ms of the request (first byte timeout)"
            : "%s: nothing received for %ld ms mid-stream (idle timeout)",
              c->provider->name, limit);
    s_send_error (c, code, text, 504, 0);
    s_call_done (c);
}

//  A stream stalled with no log to re-send from: tell its gateway directly
//  (the pipeline path is what broke), and let the upstream go.
static void
s_lose (sl_upcall_call_t *c, const char *why)
{
    sl_upcall_t *self = c->owner;
    sl_counter_inc (self->lost);
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (c->sid, hex);
    sl_log_warn ("stream_lost", "sid=%s: %s", hex, why);
    sl_msg_t m;
    s_error_init (&m, "stream_lost", why, 502);
    memcpy (m.sid, c->sid, SL_SID_SIZE);
    m.epoch = c->epoch;
    self->ops.reply (self->arg, sl_buf_str (&c->gateway), &m);
    //  The stages that still hold the stream let go of it too.
    s_drop_transfer (c);
    if (!c->ended) {
        s_send_unlogged (c, &m);
        sl_msg_init (&m, SL_MSG_END);
        s_send_unlogged (c, &m);
        c->ended = true;
    }
    s_call_close_early (c, "stream_lost", why, 502);
}

//  Send the stream again from its delta log, in a new epoch.
static void
s_resend (sl_upcall_call_t *c, const char *why)
{
    sl_upcall_t *self = c->owner;
    if (!c->resendable) {
        s_lose (c, "a stage died and the stream's replay log was over its bound");
        return;
    }
    if (c->resends >= SL_UPCALL_MAX_RESENDS) {
        s_lose (c, "the stream stalled again after every replay");
        return;
    }
    c->resends++;
    c->epoch++;
    c->seq = 0;
    c->unacked_since = 0;
    c->last_resend = s_now (self);
    sl_counter_inc (self->resends);
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (c->sid, hex);
    sl_log_info ("stream_replay", "sid=%s epoch=%u why=%s", hex, c->epoch, why);
    size_t offset = 0;
    sl_msg_t m;
    while (sl_codec_decode (self->codec, c->log.data, c->log.len, &offset, &m) == 0)
        s_send_unlogged (c, &m);
}

//  No ack for the gateway deadline: the gateway (and its client) are gone.
static void
s_gateway_gone (sl_upcall_call_t *c)
{
    sl_upcall_t *self = c->owner;
    sl_counter_inc (self->gateway_gone);
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (c->sid, hex);
    sl_log_warn ("gateway_gone", "sid=%s: no ack for %ld ms, cancelling", hex, self->config.gateway_dead_ms);
    s_drop_transfer (c);
    s_end_with (c, "client_cancelled", "the gateway holding the client went away");
    s_call_close_early (c, "client_cancelled", "the gateway holding the client went away", 499);
}

//  Over max_streams: the request goes no further. Its gateway hears at once,
//  directly (nothing entered the pipeline), and answers the client with a
//  503 in its dialect.
static void
s_refuse (sl_upcall_t *self, const sl_msg_t *req, sl_str_t peer)
{
    sl_counter_inc (self->refused);
    int64_t now = s_now (self);
    if (now - self->refusal_logged >= S_REFUSAL_LOG_MS) {
        self->refusal_logged = now;
        sl_log_warn ("streams_refused", "at the limit of %zu streams (--max-streams): %llu refused so far",
                     self->config.max_streams, (unsigned long long) self->refused->value);
    }
    char text [160];
    snprintf (text, sizeof text, "sluice is serving as many streams as it may at once (%zu); try again shortly",
              self->config.max_streams);
    sl_msg_t m;
    s_error_init (&m, "overloaded_error", text, 503);
    memcpy (m.sid, req->sid, SL_SID_SIZE);
    m.epoch = req->epoch;
    m.flags = SL_F_RETRYABLE;
    self->ops.reply (self->arg, peer, &m);
}

//  A traced stream's upstream call is a child of the stream's span: its
//  traceparent names that span, and the client's tracestate goes along.
//  The client's own headers never go as sent (the gateway does not put
//  them in "fwd"); a "tc" that does not parse sends nothing.
static void
s_trace_headers (sl_upcall_call_t *c, const sl_msg_t *req)
{
    sl_trace_ctx_t ctx;
    if (!req->trace.ptr || sl_trace_parse (req->trace, true, &ctx) != 0)
        return;
    char child [SL_TRACEPARENT_SIZE];
    sl_trace_child (&ctx, c->sid, child);
    sl_buf_printf (&c->trace_headers, "traceparent: %s", child);
    sl_buf_putc (&c->trace_headers, 0);
    c->trace_count++;
    if (req->trace_state.len && req->trace_state.len <= SL_TRACESTATE_MAX
    &&  sl_trace_state_valid (req->trace_state)) {
        sl_buf_printf (&c->trace_headers, "tracestate: %.*s", (int) req->trace_state.len, req->trace_state.ptr);
        sl_buf_putc (&c->trace_headers, 0);
        c->trace_count++;
    }
}

//  --------------------------------------------------------------------------
//  From gateways

//  The provider an inline answer's stream names: the job's prov (the
//  gateway's "mcp:<server>"), with no URL and no key.
static const sl_provider_t *
s_inline_provider (sl_upcall_call_t *c, const sl_msg_t *req)
{
    if (req->provider.len)
        sl_buf_append_str (&c->inline_name, req->provider);
    else
        sl_buf_puts (&c->inline_name, "inline");
    c->inline_provider = (sl_provider_t) {
        .name = sl_buf_cstr (&c->inline_name),
        .dialect = c->dialect,
        .base_url = "",
        .key_env = ""
    };
    return &c->inline_provider;
}

//  A job that carries its answer: kept, and read from the reactor
//  (sl_upcall_inline), never from inside the job's own handling.
static void
s_inline_begin (sl_upcall_call_t *c, const sl_msg_t *req)
{
    sl_upcall_t *self = c->owner;
    if (!c->decoder || !self->ops.later) {
        s_send_error (c, !c->decoder ? "unsupported_dialect" : "inline_unsupported",
                      !c->decoder ? "no decoder for the inline answer's dialect"
                                  : "this ingest does not read inline answers", 400, 0);
        s_call_done (c);
        return;
    }
    c->frames = sl_framing_new (sl_dialect_get (c->dialect) ? sl_dialect_get (c->dialect)->framing : 0,
                                 self->config.max_event);
    sl_buf_append_str (&c->inline_answer, req->inline_answer);
    c->status = 200;                    //  what a network answer of this body would have said
    c->phase = PHASE_STREAMING;
    c->last_byte = s_now (self);
    sl_log_debug ("inline_answer", "provider=%s bytes=%zu", c->provider->name, req->inline_answer.len);
    self->ops.later (self->arg, c->sid);
}

//  Add one provider the call may try. False when it cannot be (unknown
//  here, another dialect than the gateway rendered for, no decoder).
static bool
s_add_candidate (sl_upcall_call_t *c, const sl_provider_t *p, int dialect, sl_str_t model, sl_str_t body)
{
    if (!p || p->dialect != dialect || !sl_dialect_get (dialect) || !sl_dialect_get (dialect)->decoder)
        return false;
    for (size_t i = 0; i < c->cand_count; i++)
        if (c->cands [i].provider == p)
            return false;               //  once in a plan
    s_cand_t *cand = &c->cands [c->cand_count];
    *cand = (s_cand_t) { .provider = p, .dialect = dialect };
    sl_buf_append_str (&cand->model, model);
    if (body.ptr) {
        sl_buf_append_str (&cand->body, body);
        cand->own_body = true;
        c->owner->body_bytes += cand->body.len;
    }
    c->fcands [c->cand_count] = (sl_failover_cand_t) { p->name, p->key_env_count };
    c->cand_count++;
    return true;
}

//  The providers the call may try: the job's "fo" (a route's providers,
//  each with its model and body), else the job's provider alone (the
//  gateway may have routed already; otherwise the model decides). The
//  first, or NULL when none serves here.
static const sl_provider_t *
s_candidates (sl_upcall_call_t *c, const sl_msg_t *req)
{
    sl_providers_t *routes = c->owner->config.routes;
    sl_plan_step_t steps [SL_ROUTE_TARGETS_MAX];
    int n = req->failover.len ? sl_plan_read (req->failover, steps, SL_ROUTE_TARGETS_MAX) : 0;
    if (n < 0) {
        sl_log_warn ("bad_failover", "a job's providers list is malformed: its own provider alone");
        n = 0;
    }
    c->cands = sl_xcalloc ((size_t) n + 1, sizeof *c->cands);
    c->fcands = sl_xcalloc ((size_t) n + 1, sizeof *c->fcands);
    for (int i = 0; i < n; i++)
        if (!s_add_candidate (c, sl_providers_find (routes, steps [i].provider), steps [i].dialect,
                              steps [i].model, steps [i].body))
            sl_log_info ("failover_skipped", "provider=%.*s: not one of this ingest's of dialect %s",
                         (int) steps [i].provider.len, steps [i].provider.ptr, sl_dialect_name (steps [i].dialect));
    if (c->cand_count == 0) {
        const sl_provider_t *p = req->provider.ptr ? sl_providers_find (routes, req->provider) : NULL;
        if (!p || p->dialect != c->dialect)
            p = sl_providers_match (routes, req->model, c->dialect);
        s_add_candidate (c, p, c->dialect, req->model, SL_STR_NULL);
    }
    return c->cand_count ? c->cands [0].provider : NULL;
}

void
sl_upcall_request (sl_upcall_t *self, const sl_msg_t *req, sl_str_t peer)
{
    if (sl_sidmap_get (self->calls, req->sid)) {
        //  A gateway sends a request again to an ingest that was taken for
        //  dead and speaks again (it may have lost it with its connection).
        sl_log_debug ("duplicate_request", "stream already running");
        return;
    }
    if (self->config.max_streams && sl_sidmap_size (self->calls) >= self->config.max_streams) {
        s_refuse (self, req, peer);
        return;
    }
    sl_upcall_call_t *c = sl_xcalloc (1, sizeof *c);
    c->owner = self;
    memcpy (c->sid, req->sid, SL_SID_SIZE);
    c->epoch = req->epoch;
    c->dialect = req->upstream_dialect;
    c->resendable = true;
    c->last_ack = s_now (self);
    sl_buf_append_str (&c->gateway, peer);
    sl_sidmap_put (self->calls, c->sid, c);
    sl_counter_inc (self->started);
    c->client_dialect = req->client_dialect;
    const sl_provider_t *p = NULL;
    if (req->inline_answer.ptr) {
        //  The answer came with the job (refused or not): no provider, no
        //  route, no key.
        c->is_inline = true;
        p = s_inline_provider (c, req);
    }
    else
        p = s_candidates (c, req);
    c->provider = p;

    //  The stream's first message carries what later stages need to know;
    //  it goes when the call is committed to a provider (s_send_start).
    sl_msg_t start = *req;
    start.type = SL_MSG_START;
    start.body = SL_STR_NULL;
    start.auth = SL_STR_NULL;           //  credentials stop here
    start.passthrough = SL_STR_NULL;    //  so do the client's headers
    start.inline_answer = SL_STR_NULL;  //  the answer goes on as deltas
    start.failover = SL_STR_NULL;       //  the providers to try: "att" says which were
    start.provider = SL_STR_NULL;
    start.flags &= ~SL_F_DENIED;
    //  What the upstream is sent: the input side of a usage estimate when
    //  the upstream reports no usage (a refused request sends nothing).
    start.request_bytes = (req->flags & SL_F_DENIED) ? 0 : req->body.len;
    start.code = start.message = SL_STR_NULL;
    start.status = 0;
    c->start_msg = sl_msg_dup (&start);

    if (req->flags & SL_F_DENIED) {
        //  The request policy refused it at the gateway: no upstream call.
        //  The stream still runs the pipeline, so its verdicts reach the
        //  taps and the client gets the refusal in its dialect.
        sl_msg_t m;
        sl_msg_init (&m, SL_MSG_ERROR);
        m.code = req->code.ptr ? req->code : SL_STR_LIT ("policy_violation");
        m.message = req->message;
        m.status = req->status ? req->status : 403;
        m.flags = SL_F_RETRYABLE;       //  nothing reached the client
        s_send (c, &m);
        s_send_end (c);
        s_call_done (c);
        return;
    }

    if (c->is_inline) {
        s_send_start (c);
        c->decoder = sl_decoder_new (c->dialect);
        s_inline_begin (c, req);
        return;
    }
    if (!p) {
        char text [160];
        snprintf (text, sizeof text, "no provider serves the %s dialect", sl_dialect_name (c->dialect));
        s_send_error (c, "no_provider", text, 400, 0);
        s_call_done (c);
        return;
    }
    c->frames = sl_framing_new (sl_dialect_get (c->dialect) ? sl_dialect_get (c->dialect)->framing : 0,
                                 self->config.max_event);
    sl_buf_append_str (&c->body, req->body);
    self->body_bytes += c->body.len;
    sl_buf_append_str (&c->client_auth, req->auth);
    if (req->passthrough.len)
        sl_buf_append_str (&c->passthrough, req->passthrough);
    s_trace_headers (c, req);
    c->walk = (sl_failover_walk_t) {
        .cands = c->fcands,
        .count = c->cand_count,
        .max_rounds = self->config.max_retries,
        .base_ms = self->config.retry_base_ms,
        .max_ms = self->config.retry_max_ms,
        .spread = c->sid [0]
    };
    sl_failover_step_t step;
    if (sl_failover_next (self->failover, &c->walk, SL_FAILOVER_START, s_now (self), s_on_skip, c, &step)) {
        //  Every provider asked to be left alone for longer than we wait.
        s_send_error (c, "upstream_unavailable", "every provider of the model asked to wait before it is "
                      "called again", 503, 0);
        s_call_done (c);
        return;
    }
    c->key = step.key;
    if (step.wait_ms > 0) {
        c->phase = PHASE_BACKOFF;
        c->deadline = s_now (self) + step.wait_ms;
    }
    else
        s_start_attempt (c);
}

void
sl_upcall_cancel (sl_upcall_t *self, const sl_msg_t *msg)
{
    sl_upcall_call_t *c = sl_sidmap_get (self->calls, msg->sid);
    if (!c)
        return;
    sl_counter_inc (self->cancels);
    //  Closing the stream frees the upstream connection now; the error and
    //  end tell the later stages to let go of it too.
    s_drop_transfer (c);
    s_end_with (c, "client_cancelled", "the client went away");
    s_call_close_early (c, "client_cancelled", "the client went away", 499);
}

void
sl_upcall_ack (sl_upcall_t *self, const sl_msg_t *msg, sl_str_t peer)
{
    sl_upcall_call_t *c = sl_sidmap_get (self->calls, msg->sid);
    if (!c) {
        //  The gateway waits for a stream this ingest no longer holds: it
        //  gave it up while the gateway was silent (stopped, starved, its
        //  connection dropped), or it restarted. A stream is held until
        //  its last frame is acknowledged, so nothing else is lost here:
        //  say so, and the gateway ends the response.
        sl_msg_t m;
        s_error_init (&m, "upstream_lost", "the sluice instance calling the model let the model's answer go "
                      "while it heard nothing from this gateway", 502);
        memcpy (m.sid, msg->sid, SL_SID_SIZE);
        self->ops.reply (self->arg, peer, &m);
        sl_counter_inc (self->unknown_acks);
        return;
    }
    if (!sl_str_eq_str (peer, sl_buf_str (&c->gateway))) {
        //  The gateway's connection came back (a new routing id): what we
        //  tell it directly goes there now.
        sl_buf_reset (&c->gateway);
        sl_buf_append_str (&c->gateway, peer);
    }
    c->last_ack = s_now (self);
    if ((uint64_t) msg->ts != c->activity) {
        c->activity = (uint64_t) msg->ts;
        c->unacked_since = 0;
    }
    if (!(msg->flags & SL_F_LAST))
        return;
    //  The client has the whole response. When it ended before the
    //  upstream did (the judge terminated it, the emitter cut it), the
    //  later stages still hold the stream: stop the upstream and end the
    //  stream at every hop, as a cancel does.
    if (!c->ended) {
        s_drop_transfer (c);
        s_end_with (c, "response_closed", "the client's response ended before the upstream's");
        s_call_close_early (c, "response_closed", "the client's response ended before the upstream's", 499);
    }
    else
        s_call_close (c);
}

//  --------------------------------------------------------------------------
//  From the next stages

//  A stream let go of early was lost at a stage (its ERROR and END may
//  never have come there): end it again, in a new epoch.
static bool
s_end_again (sl_upcall_t *self, const uint8_t *sid, uint32_t epoch, const char *why)
{
    sl_ended_stream_t ended;
    if (!sl_ended_lost (self->ended, sid, epoch, &ended, s_now (self)))
        return false;
    sl_msg_t m;
    size_t offset = 0;
    if (sl_codec_decode (self->codec, ended.start.ptr, ended.start.len, &offset, &m) != 0)
        return false;
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (sid, hex);
    sl_log_info ("stream_ended_again", "sid=%s epoch=%u why=%s", hex, ended.epoch, why);
    sl_counter_inc (self->ended_again);
    uint64_t seq = 0;
    m.epoch = ended.epoch;
    m.seq = seq++;
    int rc = self->ops.send (self->arg, &m);
    sl_msg_init (&m, SL_MSG_ERROR);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.epoch = ended.epoch;
    m.seq = seq++;
    m.code = ended.code;
    m.message = ended.message;
    m.status = ended.status;
    rc |= self->ops.send (self->arg, &m);
    sl_msg_init (&m, SL_MSG_END);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.epoch = ended.epoch;
    m.seq = seq++;
    rc |= self->ops.send (self->arg, &m);
    if (rc)
        sl_counter_inc (self->unroutable);
    return true;
}

void
sl_upcall_lost (sl_upcall_t *self, const uint8_t *sid, uint32_t epoch, const char *why)
{
    sl_upcall_call_t *c = sl_sidmap_get (self->calls, sid);
    if (c && c->epoch == epoch)
        s_resend (c, why);
    else
    if (!c && s_end_again (self, sid, epoch, why))
        return;
    else
    if (sl_log_enabled (SL_LOG_DEBUG)) {
        char hex [SL_SID_HEX_SIZE];
        sl_sid_hex (sid, hex);
        sl_log_debug ("replay_skipped", "sid=%s epoch=%u current=%d why=%s", hex, epoch,
                      c ? (int) c->epoch : -1, why);
    }
}

//  --------------------------------------------------------------------------
//  From a transfer

void
sl_upcall_connected (sl_upcall_t *self, sl_upcall_call_t *call)
{
    if (call->phase == PHASE_CONNECTING) {
        call->phase = PHASE_WAITING;
        call->deadline = s_now (self) + self->config.first_byte_timeout_ms;
    }
}

void
sl_upcall_header (sl_upcall_t *self, sl_upcall_call_t *call, const char *line, size_t len)
{
    static const char name [] = "retry-after:";
    s_on_bytes (call);
    if (len > sizeof name - 1 && strncasecmp (line, name, sizeof name - 1) == 0)
        call->retry_after_s = sl_retry_after (line + sizeof name - 1, len - (sizeof name - 1),
                                              self->ops.wall (self->arg));
}

sl_upcall_take_t
sl_upcall_body (sl_upcall_t *self, sl_upcall_call_t *call, const char *data, size_t len)
{
    s_on_bytes (call);
    if (!call->status)
        call->status = self->ops.status (self->arg, call->transfer);
    if (call->status < 200 || call->status >= 300) {
        size_t room = SL_UPCALL_ERROR_BODY_MAX - call->error_body.len;
        sl_buf_append (&call->error_body, data, len < room ? len : room);
        return SL_UPCALL_TAKEN;
    }
    if (call->ended)
        return SL_UPCALL_TAKEN;         //  draining after the provider's end
    if (self->ops.congested (self->arg)) {
        //  The next stage holds back credit: stop reading the upstream
        //  (TCP pushes back to the provider) until sl_upcall_resume.
        call->paused = true;
        sl_counter_inc (self->paused);
        return SL_UPCALL_PAUSE;
    }
    int rc = sl_framing_feed (call->frames, data, len, s_on_event, call);
    if (rc == -1 && !call->failure && !call->exception_status) {
        call->failure = sl_framing_error (call->frames);
        call->failure_code = sl_framing_code (call->frames);
    }
    return rc ? SL_UPCALL_STOP : SL_UPCALL_TAKEN;
}

void
sl_upcall_done (sl_upcall_t *self, sl_upcall_call_t *c, const char *error, const char *detail)
{
    if (!c->status)
        c->status = self->ops.status (self->arg, c->transfer);
    if (c->ended) {
        //  The provider's end already went downstream.
    }
    else
    if (c->exception_status) {
        //  The stream began with an exception: the next provider, as for
        //  its HTTP status; else the provider's own error.
        c->status = c->exception_status;
        if (s_fail_over (c, SL_FAILOVER_FAULT, "exception"))
            return;
        s_send_error (c, sl_buf_cstr (&c->exception_code), sl_buf_cstr (&c->exception_message),
                      c->exception_status, SL_F_UPSTREAM);
    }
    else
    if (c->failure) {
        //  An answer that does not decode is not tried again: it counts
        //  against its provider (which later streams then pass by).
        s_outcome (c, "malformed", true);
        s_send_error (c, c->failure_code, c->failure, 502, 0);
    }
    else
    if (error) {
        bool connected = c->phase != PHASE_CONNECTING;
        if (s_fail_over (c, SL_FAILOVER_FAULT, connected ? "connection_lost" : "unreachable"))
            return;
        //  The transport's own detail names the host and port it tried
        //  ("Failed to connect to 10.0.0.5 port 9090"): that stays in the
        //  log. The client gets the provider's name and the generic reason.
        sl_log_info ("upstream_transport_error", "provider=%s phase=%s detail=%s", c->provider->name,
                     connected ? "connected" : "connecting", detail && detail [0] ? detail : error);
        sl_buf_t text = { 0 };
        sl_buf_printf (&text, "%s: %s %s", c->provider->name,
                       connected ? "the connection broke:" : "cannot connect:", error);
        s_send_error (c, connected ? "upstream_connection_lost" : "upstream_unreachable",
                      sl_buf_cstr (&text), 502, 0);
        sl_buf_free (&text);
    }
    else
    if (c->status < 200 || c->status >= 300) {
        //  Overloaded, limited or broken: the next provider (or a retry).
        //  A refused key: the provider's next key. Anything else is the
        //  request's own fault, and the provider's answer to it.
        if ((c->status == 429 || c->status >= 500) && s_fail_over (c, SL_FAILOVER_FAULT, "http_status"))
            return;
        if ((c->status == 401 || c->status == 403) && s_fail_over (c, SL_FAILOVER_AUTH, "key_refused"))
            return;
        s_outcome (c, "http_status", false);
        s_status_error (c);
    }
    else {
        c->finishing = true;            //  what the end brings out is sent, never held
        int rc = sl_framing_finish (c->frames, s_on_event, c);
        if (rc == 0)
            sl_decoder_finish (c->decoder, s_emit_delta, c);
        else
            s_send_error (c, c->failure_code ? c->failure_code : sl_framing_code (c->frames),
                          c->failure ? c->failure : sl_framing_error (c->frames), 502, 0);
        s_count_unknown (c);
    }
    s_send_end (c);
    s_call_done (c);
}

void
sl_upcall_inline (sl_upcall_t *self, const uint8_t *sid)
{
    sl_upcall_call_t *c = sl_sidmap_get (self->calls, sid);
    if (!c || !c->is_inline || c->paused || c->phase == PHASE_DONE)
        return;
    //  In pieces, as a network answer would come, so that credit is
    //  looked at between them.
    while (c->inline_read < c->inline_answer.len) {
        size_t len = c->inline_answer.len - c->inline_read;
        if (len > SL_UPCALL_INLINE_PIECE)
            len = SL_UPCALL_INLINE_PIECE;
        sl_upcall_take_t take = sl_upcall_body (self, c, c->inline_answer.data + c->inline_read, len);
        if (take == SL_UPCALL_PAUSE)
            return;                     //  sl_upcall_resume asks for the rest
        c->inline_read += len;
        if (take == SL_UPCALL_STOP)
            break;
    }
    sl_buf_free (&c->inline_answer);
    sl_upcall_done (self, c, NULL, NULL);
}

//  --------------------------------------------------------------------------
//  Time

//  Call fn for every call held, at now; fn may close the call it is given.
static void
s_each (sl_upcall_t *self, void (*fn) (sl_upcall_call_t *c, int64_t now))
{
    int64_t now = s_now (self);
    size_t count;
    void **calls = sl_sidmap_values (self->calls, &count);
    for (size_t i = 0; i < count; i++)
        fn (calls [i], now);
    free (calls);
}

//  The deadlines of one call, in order: the gateway's, the stall net's,
//  the phase's.
static void
s_check_deadlines (sl_upcall_call_t *c, int64_t now)
{
    const sl_upcall_config_t *config = &c->owner->config;
    if (now - c->last_ack >= config->gateway_dead_ms) {
        s_gateway_gone (c);
        return;
    }
    //  The safety net: a stream that stays silent long after a send,
    //  though no instance was seen dying. Each re-send doubles the
    //  wait, so an overloaded pipeline is not answered with more load.
    long stall = config->stall_ms << (c->resends < S_STALL_DOUBLINGS ? c->resends : S_STALL_DOUBLINGS);
    if (c->unacked_since && now - c->unacked_since >= stall
    &&  now - c->last_resend >= stall) {
        s_resend (c, "stalled");
        return;
    }
    if (c->phase == PHASE_DONE || c->paused)
        return;
    bool due = c->phase == PHASE_STREAMING
             ? now - c->last_byte >= config->idle_timeout_ms
             : now >= c->deadline;
    if (due)
        s_on_deadline (c);
}

static void
s_resume_call (sl_upcall_call_t *c, int64_t now)
{
    if (c->paused && c->transfer) {
        c->paused = false;
        c->last_byte = now;             //  the pause is not upstream idleness
        c->owner->ops.resume (c->owner->arg, c->transfer);
    }
    else
    if (c->paused && c->is_inline) {
        c->paused = false;
        c->last_byte = now;
        c->owner->ops.later (c->owner->arg, c->sid);
    }
}

static void
s_reauthorize (sl_upcall_call_t *c, int64_t now)
{
    (void) now;
    if (c->phase == PHASE_AUTHORIZING)
        s_authorize (c);
}

void
sl_upcall_authorized (sl_upcall_t *self)
{
    s_each (self, s_reauthorize);
}

void
sl_upcall_tick (sl_upcall_t *self)
{
    s_each (self, s_check_deadlines);
    sl_ended_expire (self->ended, s_now (self));
}

void
sl_upcall_resume (sl_upcall_t *self)
{
    s_each (self, s_resume_call);
}

//  --------------------------------------------------------------------------
//  The object

static double
s_log_bytes (void *arg)
{
    return (double) ((sl_upcall_t *) arg)->log_bytes;
}

static double
s_body_bytes (void *arg)
{
    return (double) ((sl_upcall_t *) arg)->body_bytes;
}

static double
s_active (void *arg)
{
    return (double) sl_sidmap_size (((sl_upcall_t *) arg)->calls);
}

static double
s_ejected_count (void *arg)
{
    sl_upcall_t *self = arg;
    return (double) sl_failover_ejected_count (self->failover, s_now (self));
}

static double
s_provider_state (void *arg)
{
    struct s_provider_gauge *g = arg;
    return (double) sl_failover_state (g->owner->failover, g->name, s_now (g->owner));
}

//  The providers' health, per provider of the routes.
static void
s_provider_metrics (sl_upcall_t *self, sl_metrics_t *m)
{
    size_t count = self->config.routes ? sl_providers_provider_count (self->config.routes) : 0;
    self->ejections = sl_xcalloc (count + 1, sizeof *self->ejections);
    self->gauges = sl_xcalloc (count + 1, sizeof *self->gauges);
    for (size_t i = 0; i < count; i++) {
        const char *name = sl_providers_provider (self->config.routes, i)->name;
        char labels [160];
        snprintf (labels, sizeof labels, "provider=\"%s\"", name);
        self->ejections [i] = sl_metrics_counter (m, "sluice_provider_ejections_total", labels,
                                                  "Providers ejected for failing repeatedly (--eject-failures "
                                                  "within --eject-window-ms)");
        self->gauges [i] = (struct s_provider_gauge) { self, name };
        sl_metrics_gauge_fn (m, "sluice_provider_state", labels,
                             "A provider's health at this ingest: 0 healthy, 1 ejected (cooling down), "
                             "2 half-open (one probe may go)", s_provider_state, &self->gauges [i]);
    }
    sl_metrics_gauge_fn (m, "sluice_providers_ejected", NULL, "Providers ejected or half-open at this ingest",
                         s_ejected_count, self);
}

sl_upcall_t *
sl_upcall_new (const sl_upcall_config_t *config, const sl_upcall_ops_t *ops, void *arg, sl_metrics_t *m)
{
    sl_failover_t *failover = sl_failover_new (&config->eject);
    if (!failover)
        return NULL;
    sl_upcall_t *self = sl_xcalloc (1, sizeof *self);
    self->failover = failover;
    self->config = *config;
    self->ops = *ops;
    self->arg = arg;
    self->calls = sl_sidmap_new ();
    self->codec = sl_codec_new ();
    self->ended = sl_ended_new (SL_ENDED_MAX, SL_ENDED_KEEP_MS);
    self->ended_again = sl_metrics_counter (m, "sluice_streams_ended_again_total", NULL,
                                            "Streams let go of early whose end a stage lost, ended again");
    self->ended_forgotten = sl_metrics_counter (m, "sluice_streams_ended_forgotten_total", NULL,
                                                "Streams let go of early forgotten before their time (over 4096)");
    self->started = sl_metrics_counter (m, "sluice_streams_total", NULL, "Upstream streams started");
    self->upstream_errors = sl_metrics_counter (m, "sluice_upstream_errors_total", NULL,
                                                "Streams ended by an upstream or transport error");
    self->deltas = sl_metrics_counter (m, "sluice_deltas_total", NULL, "Delta events decoded");
    self->cancels = sl_metrics_counter (m, "sluice_cancels_total", NULL, "Streams cancelled by the gateway");
    self->unroutable = sl_metrics_counter (m, "sluice_unroutable_total", NULL,
                                           "Messages with no aggregator to go to");
    self->malformed_upstream = sl_metrics_counter (m, "sluice_upstream_malformed_total", NULL,
                                                   "Upstream events that could not be decoded");
    self->unknown = sl_metrics_counter (m, "sluice_upstream_unknown_total", NULL,
                                        "Upstream event types and fields not known, skipped");
    self->retries = sl_metrics_counter (m, "sluice_upstream_retries_total", NULL,
                                        "Upstream calls retried, on the same provider or another (connection "
                                        "error, 429, 5xx, no first byte, a refused key)");
    self->failovers = sl_metrics_counter (m, "sluice_upstream_failovers_total", NULL,
                                          "Upstream calls moved to another provider of the route before the "
                                          "first byte reached the client");
    s_provider_metrics (self, m);
    for (int i = 0; i < TIMEOUT_COUNT; i++) {
        char labels [64];
        snprintf (labels, sizeof labels, "kind=\"%s\"", s_timeout_names [i]);
        self->timeouts [i] = sl_metrics_counter (m, "sluice_upstream_timeouts_total", labels,
                                                 "Upstream calls ended by a deadline");
    }
    self->resends = sl_metrics_counter (m, "sluice_replays_total", NULL,
                                        "Streams sent again from their log in a new epoch (a stage died)");
    self->logs_dropped = sl_metrics_counter (m, "sluice_replay_logs_dropped_total", NULL,
                                             "Replay logs dropped over their bound (the stream is not replayable)");
    self->lost = sl_metrics_counter (m, "sluice_streams_lost_total", NULL,
                                     "Streams that stalled and could not be replayed");
    self->gateway_gone = sl_metrics_counter (m, "sluice_gateway_gone_total", NULL,
                                             "Streams cancelled because their gateway stopped acknowledging");
    self->unknown_acks = sl_metrics_counter (m, "sluice_acks_unknown_total", NULL,
                                             "Acks for streams this ingest no longer held (it told the gateway)");
    self->paused = sl_metrics_counter (m, "sluice_upstream_paused_total", NULL,
                                       "Upstream reads paused because the aggregators held back credit");
    self->refused = sl_metrics_counter (m, "sluice_streams_refused_total", NULL,
                                        "Requests refused at once: the ingest held --max-streams streams");
    self->repaired = sl_metrics_counter (m, "sluice_upstream_repaired_total", NULL,
                                         "Upstream events (and error bodies) that were not well-formed UTF-8 "
                                         "or held a lone surrogate escape, repaired to U+FFFD");
    sl_metrics_gauge_fn (m, "sluice_replay_log_bytes", NULL, "Bytes held in replay logs", s_log_bytes, self);
    sl_metrics_gauge_fn (m, "sluice_request_body_bytes", NULL,
                         "Bytes of request bodies held for a retry (until the response is under way)",
                         s_body_bytes, self);
    sl_metrics_gauge_fn (m, "sluice_streams_active", NULL, "Streams in progress", s_active, self);
    return self;
}

void
sl_upcall_destroy (sl_upcall_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_upcall_t *self = *self_p;
    size_t count;
    void **calls = sl_sidmap_values (self->calls, &count);
    for (size_t i = 0; i < count; i++)
        s_call_free (calls [i]);
    free (calls);
    sl_sidmap_destroy (&self->calls);
    sl_ended_destroy (&self->ended);
    sl_codec_destroy (&self->codec);
    sl_buf_free (&self->repair);
    sl_failover_destroy (&self->failover);
    free (self->ejections);
    free (self->gauges);
    free (self);
    *self_p = NULL;
}

sl_failover_t *
sl_upcall_failover (sl_upcall_t *self)
{
    return self->failover;
}

size_t
sl_upcall_count (sl_upcall_t *self)
{
    return sl_sidmap_size (self->calls);
}

size_t
sl_upcall_log_bytes (sl_upcall_t *self)
{
    return self->log_bytes;
}

size_t
sl_upcall_body_bytes (sl_upcall_t *self)
{
    return self->body_bytes;
}

size_t
sl_upcall_attempt_bytes (sl_upcall_t *self)
{
    size_t bytes = 0, cursor = 0;
    const uint8_t *sid;
    sl_upcall_call_t *c;
    while ((c = sl_sidmap_next (self->calls, &cursor, &sid)))
        bytes += c->url.cap + c->headers.cap + c->auth_lines.cap + c->client_auth.cap
               + c->passthrough.cap + c->trace_headers.cap;
    return bytes;
}
