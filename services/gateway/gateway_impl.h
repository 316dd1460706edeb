/*  gateway_impl.h - the gateway's insides, shared by its two halves and
    not for other files:

      gateway.c          client HTTP, frames from the emitters and what
                         they are to each client, the streams' lives;
      gateway_request.c  a request's way in: who sent it (identity), may it
                         (models, limits), what the request policy says of
                         it, and the job it becomes;
      gateway_approvals.c  /v1/approvals, answered by the judges;
      gateway_leg.c      the gateway's own requests (gateway_leg.h): a
                         stream with no HTTP client, its end given back.
*/
#ifndef GATEWAY_IMPL_H
#define GATEWAY_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "services/gateway/gateway.h"
#include "common/approval/sl_approvals_link.h"
#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/base/sl_sidmap.h"
#include "common/bus/sl_router.h"
#include "common/dialects/sl_clientkey.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_job.h"
#include "common/dialects/sl_models.h"
#include "common/dialects/sl_render.h"
#include "common/dialects/sl_upstream.h"
#include "common/http/sl_httpd.h"
#include "common/http/sl_loopback.h"
#include "common/identity/sl_keyid.h"
#include "common/identity/sl_teamlabel.h"
#include "common/llm/sl_llm_cache.h"
#include "common/llm/sl_llm_client.h"
#include "common/llm/sl_llm_tickets.h"
#include "common/policy/sl_reqjudge.h"
#include "common/service/sl_policyset.h"
#include "common/service/sl_stage.h"
#include "common/stages/sl_delivery.h"
#include "services/gateway/gateway_mcp.h"
#include "services/gateway/parse_worker.h"
#include "services/gateway/sl_admission.h"

#define GATEWAY_ACK_MS 100              //  period of the acks of every live stream
#define GATEWAY_RETRY_AFTER_S "1"       //  Retry-After of a 503 (an ingest at its stream limit)
#define GATEWAY_ALONE_POLL_MS 1         //  looks again whether an ALONE frame may go
#define GATEWAY_DEFAULT_DIALECT SL_DIALECT_OPENAI   //  the shape of answers to paths no dialect claims
#define GATEWAY_VERDICTS_HELP "Request verdicts by action, whether the check ran, and team"

//  A stream the gateway made itself (gateway_leg.c).
typedef struct _gateway_leg_state_t gateway_leg_state_t;

typedef struct {
    uint8_t sid [SL_SID_SIZE];
    gateway_t *owner;
    gateway_leg_state_t *leg;           //  a leg's (req is NULL), NULL for a client's
    sl_http_req_t *req;                 //  NULL once the client is gone
    int dialect;                        //  the client's
    int64_t started_us;                 //  when the request was dispatched (TTFB)
    int64_t received_us;                //  the same, Unix µs: where the stream's span starts
    sl_delivery_t *delivery;            //  its frames: order, epochs, acks, the job, its bounds
    //  Until the job leaves (the request policy may be asking LLM judges)
    sl_job_t parsed;                    //  the request, owned until the job leaves
    sl_buf_t headers;                   //  its headers for the policy, JSON
    sl_policy_t *policy;                //  the version it is judged under
    sl_reqjudge_t *rj;                  //  its request judge, when the policy has request rules
    //  Who asked, and what it spent (sl_admission.h)
    sl_caller_t *caller;                //  its identity and limits; given back at the end
    char *model;                        //  as asked for (prices)
    int64_t retry_after;                //  seconds, of an admission refusal (its Retry-After)
    size_t request_bytes;               //  the job's body, for a usage estimate
    size_t response_bytes;              //  written to the client, for a usage estimate
    bool refused;                       //  refused before any upstream call: nothing spent
    bool has_usage;                     //  the last frame said what the stream spent
    bool usage_estimated;
    sl_usage_t usage;
} gateway_stream_t;

struct _gateway_t {
    gateway_config_t config;
    sl_service_t *service;
    sl_httpd_t *httpd;
    sl_stage_t *stage;
    sl_router_t *router;
    sl_sidmap_t *streams;
    sl_buf_t scratch;
    sl_counter_t *refused;
    sl_counter_t *foreign;              //  requests refused without keys for another site's Host or Origin
    sl_httpd_counters_t http;           //  the front door's (sl_httpd.h)
    sl_counter_t *streams_total;
    sl_histo_t *ttfb;
    sl_admission_t *admission;          //  who may call, and within what limits
    sl_counter_t *frames;
    sl_counter_t *duplicates;
    sl_counter_t *gaps;
    sl_counter_t *cancels;
    sl_counter_t *slow_readers;
    sl_counter_t *unroutable;
    sl_counter_t *unknown_frames;
    sl_counter_t *keepalives;
    sl_counter_t *resent;               //  jobs sent again after their ingest died
    sl_counter_t *ingest_lost;          //  responses ended because their ingest died
    sl_counter_t *stale_frames;         //  frames of an epoch replayed since
    sl_counter_t *expired;              //  streams ended after --stream-expiry-ms of nothing
    sl_counter_t *translated;           //  requests sent to a provider of another dialect
    sl_counter_t *untranslated;         //  requests refused: something they need cannot cross
    sl_counter_t *bad_traceparent;      //  client traceparents ignored as malformed
    sl_counter_t *bad_tracestate;       //  client tracestates dropped as invalid
    sl_metrics_t *metrics;              //  for the translation drop counters, made as they come
    sl_codec_t *codec;
    sl_policyset_t *policies;           //  the default and the keys' files (request rules, history)
    sl_keyring_t *policy_keys;          //  the keyring whose files the set holds (a reference)
    sl_counter_t *denied;               //  requests refused by the request policy
    sl_counter_t *unjudged;             //  requests whose policy file is not loaded here
    sl_histo_t *judge_latency;          //  request to its last request verdict
    sl_llm_client_t *llm;               //  LLM judges of tool results
    sl_llm_cache_t *llm_cache;          //  their answers, by content
    sl_llm_tickets_t *tickets;          //  asks in flight: their stream, their ask's index
    int ack_timer;
    parse_worker_t *parse_worker;       //  large bodies are parsed off the reactor
    sl_toolcache_t *toolcache;          //  tool definition digests, for bodies parsed here
    zlistx_t *parsing;                  //  their tasks, until they come back
    int alone_timer;                    //  while ALONE frames wait, -1 otherwise
    int renew_timer;                    //  live streams' places among the concurrent renewed
    sl_approvals_link_t *approvals;     //  the judges' control link, NULL without --judge-approvals
    zlistx_t *approval_calls;           //  /v1/approvals requests waiting for the judges
    bool approvals_in_call;             //  inside a link call: an answer now must not run MHD
    uint64_t leg_next_id;               //  the last leg's id
    int leg_timer;                      //  legs that ended while starting, -1 while none
    gateway_mcp_t *mcp;                 //  the MCP front, NULL without MCP servers (gateway_mcp.h)
};

//  gateway.c: a message to the ingest of its stream; a stream's request
//  let go once its job left (or it was refused); a stream ended and freed.
void gateway_send (gateway_t *self, sl_msg_t *msg);
void gateway_stream_release (gateway_t *self, gateway_stream_t *s);
void gateway_stream_forget (gateway_t *self, gateway_stream_t *s);
//  Tell its ingest a dispatched stream's requester is gone (why: logged).
void gateway_stream_cancel (gateway_t *self, gateway_stream_t *s, const char *why);
//  The streams' clock (sl_delivery): monotonic µs.
int64_t gateway_clock (void *arg);

//  gateway_request.c
//  An error answer in the client's dialect (for a path no dialect claims,
//  GATEWAY_DEFAULT_DIALECT's).
void gateway_respond_error (sl_http_req_t *req, int dialect, int status, const char *type, const char *message);
//  A request header (arg: the request), for the libraries that read them.
const char *gateway_header (void *arg, const char *name);
//  A query parameter of the request (arg: the request), likewise.
const char *gateway_query (void *arg, const char *name);
//  Who sent req: its caller, or NULL when the credential is refused
//  (answered: 401 in dialect, counted by reason). The caller is the
//  request's until its stream ends (sl_admission_finish).
sl_caller_t *gateway_identify (gateway_t *self, sl_http_req_t *req, int dialect);
//  A request that needs a caller only to be let in (/metrics, /v1/models):
//  false when it was refused (and answered).
bool gateway_authorized (gateway_t *self, sl_http_req_t *req, int dialect);
//  The counter of requests whose caller is known, by dialect and team.
sl_counter_t *gateway_request_counter (gateway_t *self, int dialect, const char *team);
//  A parsed request becomes a stream: admitted (or refused), judged by the
//  caller's request policy, sent to an ingest. The stream takes parsed's
//  contents and the caller.
void gateway_start_stream (gateway_t *self, sl_http_req_t *req, sl_job_t *parsed, sl_caller_t *caller);
//  An admitted stream's request policy, then its job (a leg's way in).
void gateway_judge_request (gateway_t *self, gateway_stream_t *s);
//  The policy set follows the keys file the admission runs.
void gateway_policies_follow_keys (gateway_t *self);
//  gateway_approvals.c
//  Serve /v1/approvals and /v1/approvals/{id}: false when path is neither.
bool gateway_approvals_serve (gateway_t *self, sl_http_req_t *req, const char *method, const char *path);
//  A request's client left: true when it was an approvals request (forgotten).
bool gateway_approvals_closed (gateway_t *self, sl_http_req_t *req);
//  The client of stream sid left: the judges cancel its pending approvals.
void gateway_approvals_cancel (gateway_t *self, const uint8_t *sid);
//  Connect to the judges of --judge-approvals (none: the API answers 503).
//  -1 (logged) when the list is malformed.
int gateway_approvals_start (gateway_t *self);
void gateway_approvals_stop (gateway_t *self);
//  gateway_leg.c: a leg's side of the places that would write to a client.
//  A frame of its answer (its end ends the leg); an error ending it; what
//  its job carries (prov, mcp, inl; the judged request kept unless the
//  job is refused); the trace context it continues (NULL: none); its
//  stream is being forgotten (its end given to done unless it was
//  already, or cancelled), or dropped with the gateway (done not called).
void gateway_leg_metrics (gateway_t *self);
void gateway_leg_frame (gateway_t *self, gateway_stream_t *s, const sl_delivery_write_t *w);
void gateway_leg_fail (gateway_t *self, gateway_stream_t *s, int status, const char *code, const char *message);
void gateway_leg_job (gateway_stream_t *s, sl_msg_t *job, bool refused_by_policy);
const char *gateway_leg_traceparent (const gateway_stream_t *s);
const char *gateway_leg_tracestate (const gateway_stream_t *s);
void gateway_leg_forget (gateway_t *self, gateway_stream_t *s);
void gateway_leg_drop (gateway_stream_t *s);
//  The LLM judges' answers (sl_llm_client callbacks).
void gateway_llm_done (void *arg, uint64_t ticket, const sl_llm_result_t *result);
void gateway_llm_after (void *arg);

#endif
