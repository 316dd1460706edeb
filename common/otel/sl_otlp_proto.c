/*  sl_otlp_proto.c - OTLP protobuf: ExportTraceServiceRequest by hand.

    The wire format of opentelemetry-proto (collector/trace/v1,
    trace/v1/trace.proto, common/v1/common.proto, resource/v1) written
    directly: varints, length-delimited fields, fixed64 for times and
    doubles. A nested message is written in place and its tag and length
    are put in front of it when it closes (a move of what it holds), so
    no size pass and no allocation per message are needed.
*/
#include "common/otel/sl_otlp_impl.h"

#include <string.h>

#include "common/otel/sl_span_impl.h"

//  Wire types.
#define S_VARINT 0
#define S_FIXED64 1
#define S_LEN 2
#define S_FIXED32 5

#define S_VARINT_MAX 10                 //  bytes of a 64-bit varint at most

//  ExportTraceServiceRequest / ExportTraceServiceResponse
#define S_REQUEST_RESOURCE_SPANS 1
#define S_RESPONSE_PARTIAL_SUCCESS 1
#define S_PARTIAL_REJECTED_SPANS 1
//  ResourceSpans
#define S_RS_RESOURCE 1
#define S_RS_SCOPE_SPANS 2
//  Resource
#define S_RESOURCE_ATTRIBUTES 1
//  ScopeSpans, InstrumentationScope
#define S_SS_SCOPE 1
#define S_SS_SPANS 2
#define S_SCOPE_NAME 1
#define S_SCOPE_VERSION 2
//  Span
#define S_SPAN_TRACE_ID 1
#define S_SPAN_SPAN_ID 2
#define S_SPAN_TRACE_STATE 3
#define S_SPAN_PARENT_SPAN_ID 4
#define S_SPAN_NAME 5
#define S_SPAN_KIND 6
#define S_SPAN_START 7
#define S_SPAN_END 8
#define S_SPAN_ATTRIBUTES 9
#define S_SPAN_DROPPED_ATTRIBUTES 10
#define S_SPAN_STATUS 15
//  Status
#define S_STATUS_MESSAGE 2
#define S_STATUS_CODE 3
#define S_STATUS_ERROR 2
//  KeyValue, AnyValue, ArrayValue
#define S_KV_KEY 1
#define S_KV_VALUE 2
#define S_ANY_STRING 1
#define S_ANY_BOOL 2
#define S_ANY_INT 3
#define S_ANY_DOUBLE 4
#define S_ANY_ARRAY 5
#define S_ARRAY_VALUES 1

static size_t
s_varint_to (uint8_t *p, uint64_t value)
{
    size_t n = 0;
    while (value >= 0x80) {
        p [n++] = (uint8_t) (value | 0x80);
        value >>= 7;
    }
    p [n++] = (uint8_t) value;
    return n;
}

static void
s_varint (sl_buf_t *out, uint64_t value)
{
    uint8_t bytes [S_VARINT_MAX];
    sl_buf_append (out, bytes, s_varint_to (bytes, value));
}

static void
s_tag (sl_buf_t *out, int field, int wire)
{
    s_varint (out, ((uint64_t) field << 3) | (uint64_t) wire);
}

static void
s_bytes (sl_buf_t *out, int field, const void *data, size_t size)
{
    s_tag (out, field, S_LEN);
    s_varint (out, size);
    sl_buf_append (out, data, size);
}

static void
s_string (sl_buf_t *out, int field, const char *s)
{
    s_bytes (out, field, s, strlen (s));
}

static void
s_fixed64 (sl_buf_t *out, int field, uint64_t value)
{
    uint8_t bytes [8];
    for (int i = 0; i < 8; i++)
        bytes [i] = (uint8_t) (value >> (8 * i));
    s_tag (out, field, S_FIXED64);
    sl_buf_append (out, bytes, sizeof bytes);
}

//  A nested message starts here: its bytes follow, s_close puts the tag
//  and length in front.
static size_t
s_open (sl_buf_t *out)
{
    return out->len;
}

static void
s_close (sl_buf_t *out, int field, size_t start)
{
    uint8_t head [2 * S_VARINT_MAX];
    size_t len = out->len - start;
    size_t n = s_varint_to (head, ((uint64_t) field << 3) | S_LEN);
    n += s_varint_to (head + n, len);
    sl_buf_reserve (out, n);
    memmove (out->data + start + n, out->data + start, len);
    memcpy (out->data + start, head, n);
    out->len += n;
}

static void
s_string_value (sl_buf_t *out, int field, const sl_span_str_t *s)
{
    size_t any = s_open (out);
    s_bytes (out, S_ANY_STRING, s->ptr, s->len);
    s_close (out, field, any);
}

static void
s_attr (sl_buf_t *out, int field, const sl_span_attr_t *attr)
{
    size_t kv = s_open (out);
    s_string (out, S_KV_KEY, attr->key);
    if (attr->type == SL_SPAN_ATTR_STR)
        s_string_value (out, S_KV_VALUE, &attr->v.str);
    else {
        size_t any = s_open (out);
        switch (attr->type) {
            case SL_SPAN_ATTR_INT:
                s_tag (out, S_ANY_INT, S_VARINT);
                s_varint (out, (uint64_t) attr->v.i64);
                break;
            case SL_SPAN_ATTR_DOUBLE: {
                uint64_t bits;
                memcpy (&bits, &attr->v.dbl, sizeof bits);
                s_fixed64 (out, S_ANY_DOUBLE, bits);
                break;
            }
            case SL_SPAN_ATTR_BOOL:
                s_tag (out, S_ANY_BOOL, S_VARINT);
                s_varint (out, attr->v.flag ? 1 : 0);
                break;
            case SL_SPAN_ATTR_STR_ARRAY: {
                size_t array = s_open (out);
                for (size_t i = 0; i < attr->v.arr.count; i++)
                    s_string_value (out, S_ARRAY_VALUES, &attr->v.arr.items [i]);
                s_close (out, S_ANY_ARRAY, array);
                break;
            }
            case SL_SPAN_ATTR_STR:
                break;
        }
        s_close (out, S_KV_VALUE, any);
    }
    s_close (out, field, kv);
}

static void
s_str_attr (sl_buf_t *out, int field, const char *key, const char *value)
{
    sl_span_attr_t attr = { .key = (char *) key, .type = SL_SPAN_ATTR_STR,
                            .v.str = { (char *) value, strlen (value) } };
    s_attr (out, field, &attr);
}

static void
s_span (sl_buf_t *out, const sl_span_t *span)
{
    size_t start = s_open (out);
    s_bytes (out, S_SPAN_TRACE_ID, span->trace, SL_TRACE_ID_SIZE);
    s_bytes (out, S_SPAN_SPAN_ID, span->id, SL_SPAN_ID_SIZE);
    if (span->tracestate.ptr)
        s_bytes (out, S_SPAN_TRACE_STATE, span->tracestate.ptr, span->tracestate.len);
    if (span->has_parent)
        s_bytes (out, S_SPAN_PARENT_SPAN_ID, span->parent, SL_SPAN_ID_SIZE);
    s_bytes (out, S_SPAN_NAME, span->name.ptr, span->name.len);
    s_tag (out, S_SPAN_KIND, S_VARINT);
    s_varint (out, (uint64_t) span->kind);
    s_fixed64 (out, S_SPAN_START, span->start_ns);
    s_fixed64 (out, S_SPAN_END, span->end_ns);
    for (size_t i = 0; i < span->attr_count; i++)
        s_attr (out, S_SPAN_ATTRIBUTES, &span->attrs [i]);
    if (span->truncated) {
        sl_span_attr_t cut = { .key = SL_SPAN_TRUNCATED_KEY, .type = SL_SPAN_ATTR_INT,
                               .v.i64 = span->truncated };
        s_attr (out, S_SPAN_ATTRIBUTES, &cut);
    }
    if (span->dropped) {
        s_tag (out, S_SPAN_DROPPED_ATTRIBUTES, S_VARINT);
        s_varint (out, span->dropped);
    }
    if (span->error) {
        size_t status = s_open (out);
        s_bytes (out, S_STATUS_MESSAGE, span->message.ptr, span->message.len);
        s_tag (out, S_STATUS_CODE, S_VARINT);
        s_varint (out, S_STATUS_ERROR);
        s_close (out, S_SPAN_STATUS, status);
    }
    s_close (out, S_SS_SPANS, start);
}

static void
s_encode (const sl_otlp_resource_t *resource, sl_span_t *const *spans, size_t count, sl_buf_t *out)
{
    size_t rs = s_open (out);
    size_t res = s_open (out);
    s_str_attr (out, S_RESOURCE_ATTRIBUTES, "service.name", resource->service_name);
    if (resource->instance)
        s_str_attr (out, S_RESOURCE_ATTRIBUTES, "service.instance.id", resource->instance);
    s_str_attr (out, S_RESOURCE_ATTRIBUTES, "service.version", resource->version);
    s_close (out, S_RS_RESOURCE, res);
    size_t ss = s_open (out);
    size_t scope = s_open (out);
    s_string (out, S_SCOPE_NAME, SL_OTLP_SCOPE_NAME);
    s_string (out, S_SCOPE_VERSION, resource->version);
    s_close (out, S_SS_SCOPE, scope);
    for (size_t i = 0; i < count; i++)
        s_span (out, spans [i]);
    s_close (out, S_RS_SCOPE_SPANS, ss);
    s_close (out, S_REQUEST_RESOURCE_SPANS, rs);
}

//  Read a varint at *p (before end); -2 when cut short or too long.
static int
s_read_varint (const uint8_t **p, const uint8_t *end, uint64_t *value)
{
    *value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return -2;
        uint8_t byte = *(*p)++;
        *value |= (uint64_t) (byte & 0x7F) << shift;
        if (!(byte & 0x80))
            return 0;
    }
    return -2;
}

//  Walk the fields of one message, handing field number wanted (of wire
//  type wire) to *found; skip the others. 0 ok, -2 malformed.
static int
s_find (const uint8_t *p, const uint8_t *end, int wanted, int wire, const uint8_t **found, uint64_t *value)
{
    *found = NULL;
    while (p < end) {
        uint64_t key, n;
        if (s_read_varint (&p, end, &key))
            return -2;
        int field = (int) (key >> 3), type = (int) (key & 7);
        if (field == 0)
            return -2;
        switch (type) {
            case S_VARINT:
                if (s_read_varint (&p, end, &n))
                    return -2;
                if (field == wanted && type == wire) {
                    *found = p;
                    *value = n;
                }
                break;
            case S_FIXED64:
            case S_FIXED32:
                n = type == S_FIXED64 ? 8 : 4;
                if ((uint64_t) (end - p) < n)
                    return -2;
                p += n;
                break;
            case S_LEN:
                if (s_read_varint (&p, end, &n) || (uint64_t) (end - p) < n)
                    return -2;
                if (field == wanted && type == wire) {
                    *found = p;
                    *value = n;
                }
                p += n;
                break;
            default:
                return -2;
        }
    }
    return 0;
}

static int
s_response (sl_str_t body, int64_t *rejected)
{
    *rejected = 0;
    const uint8_t *p = (const uint8_t *) (body.ptr ? body.ptr : ""), *end = p + body.len;
    const uint8_t *partial, *unused;
    uint64_t size, count;
    if (s_find (p, end, S_RESPONSE_PARTIAL_SUCCESS, S_LEN, &partial, &size))
        return -2;
    if (!partial)
        return 0;
    if (s_find (partial, partial + size, S_PARTIAL_REJECTED_SPANS, S_VARINT, &unused, &count))
        return -2;
    if (unused) {
        if ((int64_t) count < 0)
            return -2;
        *rejected = (int64_t) count;
    }
    return 0;
}

const sl_otlp_codec_t sl_otlp_proto_codec = {
    .name = "http/protobuf",
    .content_type = "application/x-protobuf",
    .encode = s_encode,
    .response = s_response
};
