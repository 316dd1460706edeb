/*  sl_span.h - one finished OpenTelemetry span, as the exporter takes it.

    A span is built by the stage that knows what it describes (the
    emitter's stream and verdict spans, sl_genai.h), then handed to the
    exporter (sl_otlp.h), which owns it from then on. Everything set on a
    span is copied: the caller's strings may go away at once.

    Ids are raw bytes (16 for a trace, 8 for a span), never all zero; a
    span without a parent (parent NULL) is the root of its trace. Times
    are Unix nanoseconds. Attributes keep the order they were set in; a
    key set twice keeps its last value. A string-array attribute grows
    with sl_span_add_str (e.g. gen_ai.response.finish_reasons).
*/
#ifndef SL_SPAN_H
#define SL_SPAN_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_str.h"

#define SL_TRACE_ID_SIZE 16
#define SL_SPAN_ID_SIZE 8

//  The span kinds of OTLP (their numbers are the protocol's).
typedef enum {
    SL_SPAN_INTERNAL = 1,
    SL_SPAN_SERVER = 2,
    SL_SPAN_CLIENT = 3
} sl_span_kind_t;

typedef struct _sl_span_t sl_span_t;

sl_span_t *sl_span_new (const char *name, const uint8_t trace [SL_TRACE_ID_SIZE], const uint8_t id [SL_SPAN_ID_SIZE],
                        const uint8_t *parent, sl_span_kind_t kind, uint64_t start_ns);
void sl_span_destroy (sl_span_t **self_p);
void sl_span_set_str (sl_span_t *self, const char *key, sl_str_t value);
void sl_span_set_int (sl_span_t *self, const char *key, int64_t value);
void sl_span_set_double (sl_span_t *self, const char *key, double value);
void sl_span_set_bool (sl_span_t *self, const char *key, bool value);
//  Append value to the string-array attribute key (made on first use).
void sl_span_add_str (sl_span_t *self, const char *key, sl_str_t value);
//  The W3C tracestate the span was continued with (kept as given).
void sl_span_set_tracestate (sl_span_t *self, sl_str_t tracestate);
//  Status ERROR with a description (unset: status UNSET).
void sl_span_set_error (sl_span_t *self, sl_str_t message);
void sl_span_end (sl_span_t *self, uint64_t end_ns);

#endif
