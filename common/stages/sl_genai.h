/*  sl_genai.h - a stream's OpenTelemetry spans in the GenAI conventions.

    A pure library (the emitter's): feed it every judged event of the
    streams it sees, with the time it arrived; it makes

    - one span per traced stream, "chat {gen_ai.request.model}", kind
      CLIENT, from the gateway's receipt of the request ("rqt") to the
      stream's END, child of the client's span ("tc"), with the request
      and response model, finish reasons, usage, time to first chunk,
      error.type, and sluice's own (stream id, dialects, route, policy,
      team and user);
    - one span per verdict, "apply_guardrail {rule}", kind INTERNAL,
      child of the stream's span, from the verdict's time less its
      latency to its time, with the decision, its target, the policy and
      the tool;

    and hands each, ended, to emit. docs/telemetry.md ("Spans") lists
    every attribute and where its name comes from.

    Only streams whose "tc" is sampled (trace-flags bit 0) are followed;
    every other event costs one map lookup. Span ids are derived from the
    stream id (sl_trace.h), so a stream resent in a new epoch reports the
    same spans, and a verdict already reported is not reported again.
    Content (tool call arguments, the last user message as the request
    policy left it, verdict reasons) goes on a span only with
    capture_content. State is bounded: at most max_streams streams are
    followed (more are counted and not traced), and a stream that ends
    without an END (its state lost upstream) is dropped by
    sl_genai_expire after expiry_us of silence, its span not made.
*/
#ifndef SL_GENAI_H
#define SL_GENAI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/otel/sl_span.h"
#include "proto/sl_msg.h"

#define SL_GENAI_STREAMS_DEFAULT 65536  //  streams followed at once
#define SL_GENAI_EXPIRY_US_DEFAULT (30LL * 60 * 1000000)   //  a stream's silence before its state goes

typedef struct _sl_genai_t sl_genai_t;

//  A finished span: the callee owns it (*span_p, set NULL).
typedef void (sl_genai_emit_fn) (void *arg, sl_span_t **span_p);

typedef struct {
    size_t max_streams;                 //  0: SL_GENAI_STREAMS_DEFAULT
    int64_t expiry_us;                  //  0: SL_GENAI_EXPIRY_US_DEFAULT
    bool capture_content;               //  SLUICE_OTEL_CAPTURE_CONTENT
} sl_genai_config_t;

typedef struct {
    uint64_t streams;                   //  traced streams begun
    uint64_t spans;                     //  spans made (stream and verdict)
    uint64_t untraced_full;             //  sampled streams not followed: at max_streams
    uint64_t expired;                   //  followed streams dropped without an END
} sl_genai_stats_t;

sl_genai_t *sl_genai_new (const sl_genai_config_t *config, sl_genai_emit_fn *emit, void *arg);
void sl_genai_destroy (sl_genai_t **self_p);
//  One judged event (msg and its strings are borrowed for the call);
//  now_us: Unix µs when it arrived.
void sl_genai_feed (sl_genai_t *self, const sl_msg_t *msg, int64_t now_us);
//  Drop the state of streams silent since now_us - expiry_us; how many.
size_t sl_genai_expire (sl_genai_t *self, int64_t now_us);
size_t sl_genai_streams (sl_genai_t *self);
const sl_genai_stats_t *sl_genai_stats (sl_genai_t *self);
//  SLUICE_OTEL_CAPTURE_CONTENT's value: 1 on ("1", "true", any case), 0
//  off (unset, empty, "0", "false"), -1 anything else: an error at start,
//  never taken for either.
int sl_genai_capture_env (const char *value);

#endif
