/*  gateway_leg.h - the gateway's internal streams: a request the gateway
    makes itself (an MCP request's "leg": the call, its result, a list of
    tools) and submits through its own request path, so the request
    policy, the job, the judges, the delivery with its acks, resends and
    bounds, the audit and the taps see it as they see a model's traffic.

    A leg is a stream of the core (gateway_core.h) with a sink in place of
    an HTTP client; with gateway_core.h, this is the interface the MCP
    front submits through.

    A leg is a synthetic OpenAI Chat request with an inline answer (REQ
    `inl`): the ingest decodes that answer as if an OpenAI upstream had
    sent it and calls no upstream. The job's `ud` and `cd` are openai, its
    `prov` is `mcp:<server>`, its `mcp` names the MCP request.

    Limits: the MCP front admits the MCP request once (identity, team,
    concurrency); its legs are not admitted again (a leg is never refused
    for concurrency by the MCP request that made it) and do not finish the
    caller: the caller is borrowed and stays the MCP request's. Legs do
    not count as client requests (sluice_requests_total, TTFB); they count
    in sluice_mcp_legs_total{kind,outcome}.

    Draining: legs in flight finish; a leg started while draining is
    refused (-1). A leg no ingest takes waits as a client's request does:
    until --stream-expiry-ms (then done, 504) or its cancel.

    Answered when judged: a leg whose answer is what the gateway's own
    request policy makes of it (a result leg, a list leg: the judged
    request, or its refusal) need not wait for the pipeline's answer.
    With answer_when_judged, done is called once its job has left (status
    200, or the refusal's; an empty answer; judged and refused as they
    will stay), and
    the leg goes on through the pipeline by itself for its record (the
    audit, the taps, the span), with the MCP request's caller returned to
    it (gateway_core_stream_return_caller); its end is only counted. A
    leg that fails before its job leaves ends as any other.

    done may start another leg (the result leg after the server's
    answer); it must not cancel a leg other than its own: the gateway may
    be ending several legs in one turn (an expiry sweep, a drain, an
    ingest lost) when it calls it. A leg still running when the gateway is
    destroyed is let go without its done.
*/
#ifndef GATEWAY_LEG_H
#define GATEWAY_LEG_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_str.h"
#include "proto/sl_msg.h"
#include "services/gateway/gateway_core.h"
#include "services/gateway/sl_admission.h"

typedef struct _gateway_legs_t gateway_legs_t;

//  A request the gateway makes itself and submits through its own request
//  path (request policy, job, delivery, acks, replays): its answer goes to
//  done instead of an HTTP client.
typedef struct {
    sl_str_t body;                      //  an OpenAI Chat request (the leg's synthetic request)
    sl_str_t inline_answer;             //  REQ inl: OpenAI Chat SSE the ingest decodes
    const char *mcp;                    //  REQ mcp ("tools/call create_issue")
    const char *server;                 //  the MCP server's name (REQ prov "mcp:<server>")
    sl_caller_t *caller;                //  whose request: identity and policy file (borrowed:
                                        //  the caller stays the MCP request's)
    const char *traceparent, *tracestate;   //  the MCP request's trace context, or NULL
    bool answer_when_judged;            //  done once the request policy judged it (below)
} gateway_leg_t;

//  What came of a leg: status is the HTTP status the emitter's answer
//  had (200, or the error's); answer is its body (a whole OpenAI Chat
//  response, or an error object); judged is the request as the request
//  policy left it (its JSON, redactions applied, blocked results replaced,
//  withheld tools removed), or empty when it was refused; refused: the
//  request policy refused it (answer holds the refusal). Borrowed for the
//  call.
typedef struct {
    int status;
    sl_str_t answer;
    sl_str_t judged;
    bool refused;
    uint8_t sid [SL_SID_SIZE];          //  the leg's stream id (for logs, spans)
} gateway_leg_result_t;
typedef void (gateway_leg_done_fn) (void *arg, const gateway_leg_result_t *result);

//  The legs of a gateway's core (its streams with no HTTP client). Going
//  after the core: a leg still running when the core is destroyed is let
//  go without its done.
gateway_legs_t *gateway_legs_new (gateway_core_t *core);
void gateway_legs_destroy (gateway_legs_t **self_p);
//  Start a leg; 0 (done is called exactly once, later, never from inside
//  this call), -1 when it cannot start (draining, no ingest). *id names it.
int gateway_legs_start (gateway_legs_t *self, const gateway_leg_t *leg, gateway_leg_done_fn *done, void *arg,
                        uint64_t *id);
//  The MCP request is gone (client closed): cancel its leg; done is not called.
void gateway_legs_cancel (gateway_legs_t *self, uint64_t id);

#endif
