/*  sl_otlp_json.c - OTLP/JSON: ExportTraceServiceRequest as JSON.

    The protobuf message mapped to JSON the way OTLP/HTTP specifies it:
    lowerCamelCase field names, trace and span ids as lowercase hex
    (not base64), enums as integers, 64-bit integers (times, intValue) as
    decimal strings, fields at their default left out.
*/
#include "common/otel/sl_otlp_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_hex.h"
#include "common/base/sl_json.h"
#include "common/otel/sl_span_impl.h"

static void
s_put_hex (sl_buf_t *out, const uint8_t *bytes, size_t size)
{
    sl_buf_putc (out, '"');
    sl_hex_write (sl_buf_reserve (out, size * 2), bytes, size);
    out->len += size * 2;
    sl_buf_putc (out, '"');
}

//  A double as JSON allows: finite numbers in full precision, the others
//  as the strings the protobuf JSON mapping uses for them.
static void
s_put_double (sl_buf_t *out, double value)
{
    if (isnan (value))
        sl_buf_puts (out, "\"NaN\"");
    else
    if (isinf (value))
        sl_buf_puts (out, value > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    else
        sl_buf_printf (out, "%.17g", value);
}

static void
s_put_string_value (sl_buf_t *out, const sl_span_str_t *s)
{
    sl_buf_puts (out, "{\"stringValue\":");
    sl_json_put_str (out, s->ptr, s->len);
    sl_buf_putc (out, '}');
}

static void
s_put_value (sl_buf_t *out, const sl_span_attr_t *attr)
{
    switch (attr->type) {
        case SL_SPAN_ATTR_STR:
            s_put_string_value (out, &attr->v.str);
            break;
        case SL_SPAN_ATTR_INT:
            sl_buf_puts (out, "{\"intValue\":\"");
            sl_buf_put_i64 (out, attr->v.i64);
            sl_buf_puts (out, "\"}");
            break;
        case SL_SPAN_ATTR_DOUBLE:
            sl_buf_puts (out, "{\"doubleValue\":");
            s_put_double (out, attr->v.dbl);
            sl_buf_putc (out, '}');
            break;
        case SL_SPAN_ATTR_BOOL:
            sl_buf_puts (out, attr->v.flag ? "{\"boolValue\":true}" : "{\"boolValue\":false}");
            break;
        case SL_SPAN_ATTR_STR_ARRAY:
            sl_buf_puts (out, "{\"arrayValue\":{\"values\":[");
            for (size_t i = 0; i < attr->v.arr.count; i++) {
                if (i)
                    sl_buf_putc (out, ',');
                s_put_string_value (out, &attr->v.arr.items [i]);
            }
            sl_buf_puts (out, "]}}");
            break;
    }
}

static void
s_put_key (sl_buf_t *out, const char *key)
{
    sl_buf_puts (out, "{\"key\":");
    sl_json_put_str (out, key, strlen (key));
    sl_buf_puts (out, ",\"value\":");
}

static void
s_put_str_attr (sl_buf_t *out, const char *key, const char *value)
{
    s_put_key (out, key);
    sl_buf_puts (out, "{\"stringValue\":");
    sl_json_put_str (out, value, strlen (value));
    sl_buf_puts (out, "}}");
}

static void
s_put_span (sl_buf_t *out, const sl_span_t *span)
{
    sl_buf_puts (out, "{\"traceId\":");
    s_put_hex (out, span->trace, SL_TRACE_ID_SIZE);
    sl_buf_puts (out, ",\"spanId\":");
    s_put_hex (out, span->id, SL_SPAN_ID_SIZE);
    if (span->tracestate.ptr) {
        sl_buf_puts (out, ",\"traceState\":");
        sl_json_put_str (out, span->tracestate.ptr, span->tracestate.len);
    }
    if (span->has_parent) {
        sl_buf_puts (out, ",\"parentSpanId\":");
        s_put_hex (out, span->parent, SL_SPAN_ID_SIZE);
    }
    sl_buf_puts (out, ",\"name\":");
    sl_json_put_str (out, span->name.ptr, span->name.len);
    sl_buf_printf (out, ",\"kind\":%d,\"startTimeUnixNano\":\"", (int) span->kind);
    sl_buf_put_u64 (out, span->start_ns);
    sl_buf_puts (out, "\",\"endTimeUnixNano\":\"");
    sl_buf_put_u64 (out, span->end_ns);
    sl_buf_puts (out, "\",\"attributes\":[");
    for (size_t i = 0; i < span->attr_count; i++) {
        if (i)
            sl_buf_putc (out, ',');
        s_put_key (out, span->attrs [i].key);
        s_put_value (out, &span->attrs [i]);
        sl_buf_putc (out, '}');
    }
    if (span->truncated) {
        if (span->attr_count)
            sl_buf_putc (out, ',');
        s_put_key (out, SL_SPAN_TRUNCATED_KEY);
        sl_buf_printf (out, "{\"intValue\":\"%u\"}}", (unsigned) span->truncated);
    }
    sl_buf_putc (out, ']');
    if (span->dropped)
        sl_buf_printf (out, ",\"droppedAttributesCount\":%u", (unsigned) span->dropped);
    if (span->error) {
        sl_buf_puts (out, ",\"status\":{\"message\":");
        sl_json_put_str (out, span->message.ptr, span->message.len);
        sl_buf_puts (out, ",\"code\":2}");
    }
    sl_buf_putc (out, '}');
}

static void
s_encode (const sl_otlp_resource_t *resource, sl_span_t *const *spans, size_t count, sl_buf_t *out)
{
    sl_buf_puts (out, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
    s_put_str_attr (out, "service.name", resource->service_name);
    if (resource->instance) {
        sl_buf_putc (out, ',');
        s_put_str_attr (out, "service.instance.id", resource->instance);
    }
    sl_buf_putc (out, ',');
    s_put_str_attr (out, "service.version", resource->version);
    sl_buf_puts (out, "]},\"scopeSpans\":[{\"scope\":{\"name\":");
    sl_json_put_str (out, SL_OTLP_SCOPE_NAME, strlen (SL_OTLP_SCOPE_NAME));
    sl_buf_puts (out, ",\"version\":");
    sl_json_put_str (out, resource->version, strlen (resource->version));
    sl_buf_puts (out, "},\"spans\":[");
    for (size_t i = 0; i < count; i++) {
        if (i)
            sl_buf_putc (out, ',');
        s_put_span (out, spans [i]);
    }
    sl_buf_puts (out, "]}]}]}");
}

//  rejectedSpans is an int64: a decimal string by the mapping, a number
//  from some servers; both are read.
static int
s_response (sl_str_t body, int64_t *rejected)
{
    *rejected = 0;
    sl_str_t text = sl_json_trim (body);
    if (text.len == 0)
        return 0;
    if (sl_json_type (text) != SL_JSON_OBJECT || !sl_json_valid (text))
        return -2;
    sl_str_t partial, value;
    int found = sl_json_find (text, "partialSuccess", &partial);
    if (found < 0)
        return -2;
    if (found == 0 || sl_json_is_null (partial))
        return 0;
    if (sl_json_type (partial) != SL_JSON_OBJECT)
        return -2;
    found = sl_json_find (partial, "rejectedSpans", &value);
    if (found < 0)
        return -2;
    if (found == 0 || sl_json_is_null (value))
        return 0;
    if (sl_json_type (value) == SL_JSON_STRING) {
        sl_buf_t scratch = { 0 };
        sl_str_t digits;
        char text_value [24];
        int rc = sl_json_str (value, &scratch, &digits);
        if (rc == 0 && digits.len > 0 && digits.len < sizeof text_value) {
            memcpy (text_value, digits.ptr, digits.len);
            text_value [digits.len] = 0;
            char *end;
            long long n = strtoll (text_value, &end, 10);
            rc = *end || n < 0 ? -2 : 0;
            *rejected = n;
        }
        else
            rc = -2;
        sl_buf_free (&scratch);
        return rc;
    }
    int64_t n;
    if (sl_json_i64 (value, &n) || n < 0)
        return -2;
    *rejected = n;
    return 0;
}

const sl_otlp_codec_t sl_otlp_json_codec = {
    .name = "http/json",
    .content_type = "application/json",
    .encode = s_encode,
    .response = s_response
};
