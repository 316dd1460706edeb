/*  sl_otlp_impl.h - the exporter's parts, for sl_otlp.c and its tests.

    The two encodings of OTLP/HTTP are variants behind one table of
    operations (sl_otlp_codec_t): sl_otlp_json.c (OTLP/JSON) and
    sl_otlp_proto.c (protobuf). sl_otlp_codec registers both in one place
    and checks every entry; the exporter never asks which one it has.

    The pure rules the exporter follows are here too, so that tests can
    hold them: what an answer means (sl_otlp_outcome), how long to wait
    before sending a batch again (sl_otlp_backoff_ms), and the header list
    of SLUICE_OTLP_HEADERS (sl_otlp_headers_parse).
*/
#ifndef SL_OTLP_IMPL_H
#define SL_OTLP_IMPL_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/otel/sl_otlp.h"
#include "common/otel/sl_span.h"

#define SL_OTLP_SCOPE_NAME "sluice"     //  the instrumentation scope of every span
#define SL_OTLP_RESPONSE_MAX (64 * 1024) //  bytes of an answer read at most
#define SL_OTLP_TRACES_PATH "/v1/traces"

//  What the resource of every export says about the process.
typedef struct {
    const char *service_name;
    const char *instance;               //  NULL: not sent
    const char *version;
} sl_otlp_resource_t;

typedef struct {
    const char *name;                   //  "http/protobuf", as SLUICE_OTLP_PROTOCOL says it
    const char *content_type;           //  of the request
    //  Append an ExportTraceServiceRequest holding count spans.
    void (*encode) (const sl_otlp_resource_t *resource, sl_span_t *const *spans, size_t count, sl_buf_t *out);
    //  Read an ExportTraceServiceResponse (a 2xx answer's body; empty is
    //  an empty response): 0 with *rejected (partial_success's
    //  rejected_spans, 0 when absent), -2 when the body cannot be read.
    int (*response) (sl_str_t body, int64_t *rejected);
} sl_otlp_codec_t;

//  The codec of protocol; NULL for a protocol with none (never a default).
const sl_otlp_codec_t *sl_otlp_codec (sl_otlp_protocol_t protocol);
//  The protocol named name ("http/protobuf", "http/json"); -1 when none.
int sl_otlp_protocol_find (const char *name, sl_otlp_protocol_t *protocol);

extern const sl_otlp_codec_t sl_otlp_json_codec;
extern const sl_otlp_codec_t sl_otlp_proto_codec;

//  What to do with a batch after one attempt.
typedef enum {
    SL_OTLP_ACCEPTED = 0,               //  2xx: done (less what was rejected)
    SL_OTLP_REJECTED,                   //  refused for good: drop, count rejected
    SL_OTLP_RETRY                       //  send again after a wait
} sl_otlp_outcome_t;

//  The outcome of an attempt: curl's result, the HTTP status, and for a
//  2xx whether its body could be read (body_ok).
sl_otlp_outcome_t sl_otlp_outcome (CURLcode result, long status, bool body_ok);

//  The wait before attempt number attempts + 1 (attempts: made so far,
//  from 1): Retry-After's seconds when the answer had one (retry_after_s
//  >= 0; capped at backoff_max_ms), else backoff_min_ms doubled per
//  attempt after the first plus a spread (jitter, from spread) of up to a
//  quarter of it, at most backoff_max_ms.
long sl_otlp_backoff_ms (const sl_otlp_config_t *cfg, int attempts, long retry_after_s, unsigned char spread);

//  Parse "name=value,name=value" (spaces around items trimmed, values
//  percent-decoded) into curl header lines appended to *list. 0 ok; -1
//  with *error (the caller's to free) on an item without '=', an empty or
//  non-token name, a bad %-escape, or a control character in a value.
int sl_otlp_headers_parse (const char *text, struct curl_slist **list, char **error);

#endif
