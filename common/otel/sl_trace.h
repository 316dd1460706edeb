/*  sl_trace.h - W3C trace context: the traceparent a stream continues,
    its tracestate, and the span ids sluice derives for what it reports.

    A pure library. The gateway parses the client's traceparent and
    tracestate (sl_trace_parse, sl_trace_state_valid) and puts the
    normalized form on the stream's REQ as "tc" (proto/PROTOCOL.md); the
    ingest sends the upstream the child's traceparent (sl_trace_child);
    the emitter makes the spans (sl_genai.h) with the ids below.

    Ids are derived, never drawn: a stream's span id comes from its
    stream id, a verdict's from the stream id and the verdict's place, so
    a resent or replayed stream reports the same spans, not new ones.
*/
#ifndef SL_TRACE_H
#define SL_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_str.h"
#include "common/otel/sl_span.h"

#define SL_TRACEPARENT_LEN 55           //  "00-" 32 hex "-" 16 hex "-" 2 hex
#define SL_TRACEPARENT_SIZE (SL_TRACEPARENT_LEN + 1)
#define SL_TRACESTATE_MAX 512           //  bytes of a tracestate kept at most
#define SL_TRACESTATE_MEMBERS_MAX 32    //  list-members, as W3C bounds them
#define SL_TRACE_SAMPLED 0x01           //  trace-flags bit: the caller records this trace

typedef struct {
    uint8_t trace [SL_TRACE_ID_SIZE];
    uint8_t parent [SL_SPAN_ID_SIZE];   //  all zero: the stream's span is the trace's root
    uint8_t flags;                      //  trace-flags as received
} sl_trace_ctx_t;

//  Parse a traceparent header as W3C Trace Context level 1 says: version
//  00 at its exact length, lower-case hex, trace and parent id not all
//  zero, version ff invalid, a later version read by its first fields
//  (with a '-' after them when longer). 0 ok, -1 malformed. root_ok
//  also takes an all-zero parent id: the form "tc" has when the gateway
//  began the trace itself.
int sl_trace_parse (sl_str_t header, bool root_ok, sl_trace_ctx_t *out);
//  A new trace for a stream whose client sent none: trace id = the
//  stream id, no parent, sampled.
void sl_trace_begin (const uint8_t sid [SL_TRACE_ID_SIZE], sl_trace_ctx_t *out);
//  Whether the stream's span has no parent.
bool sl_trace_is_root (const sl_trace_ctx_t *self);
//  The normalized form, "00-<trace>-<parent>-<flags>" and a NUL.
void sl_trace_format (const sl_trace_ctx_t *self, char out [SL_TRACEPARENT_SIZE]);
//  The traceparent of a call made inside the stream's span (the upstream
//  request's): the same trace and flags, the stream's span as parent.
void sl_trace_child (const sl_trace_ctx_t *self, const uint8_t sid [SL_TRACE_ID_SIZE],
                     char out [SL_TRACEPARENT_SIZE]);
//  Whether a tracestate is one W3C accepts: comma-separated list-members
//  "key=value" (empty members and optional blanks allowed), at most
//  SL_TRACESTATE_MEMBERS_MAX members and SL_TRACESTATE_MAX bytes, keys
//  not repeated.
bool sl_trace_state_valid (sl_str_t tracestate);

//  What a stream continues, from its client's headers (NULL: not sent).
typedef struct {
    bool has_trace;                     //  tc is set: the stream is traced
    char tc [SL_TRACEPARENT_SIZE];      //  the normalized traceparent ("tc")
    bool keep_state;                    //  the tracestate goes on ("tcs")
    bool bad_parent;                    //  a traceparent was sent, malformed (count it)
    bool bad_state;                     //  a tracestate was sent with a good traceparent, refused (count it)
} sl_trace_in_t;

//  The client's traceparent when well-formed; else, when tracing, a trace
//  begun for the stream (sl_trace_begin); else none. Its tracestate goes
//  on only with its own traceparent and only when valid.
void sl_trace_accept (const char *traceparent, const char *tracestate, const uint8_t sid [SL_TRACE_ID_SIZE],
                      bool tracing, sl_trace_in_t *out);

//  Unix time in µs (the wall clock spans are stamped with; zclock_usecs
//  is monotonic, with no fixed origin).
int64_t sl_trace_now_us (void);

//  The span id of a stream: its stream id's first 8 bytes (the last 8
//  when those are all zero), never all zero.
void sl_trace_stream_span (const uint8_t sid [SL_TRACE_ID_SIZE], uint8_t out [SL_SPAN_ID_SIZE]);
//  The span id of a stream's verdict number n (its seq in the stream),
//  a 64-bit mix of both, never all zero nor the stream's own.
void sl_trace_verdict_span (const uint8_t sid [SL_TRACE_ID_SIZE], uint64_t n, uint8_t out [SL_SPAN_ID_SIZE]);

#endif
