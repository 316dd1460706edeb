/*  sl_span_impl.h - the inside of a span, for the OTLP exporter only.

    sl_span.h keeps the span opaque to the stages that build it; the two
    encodings (sl_otlp_json.c, sl_otlp_proto.c) read it field by field,
    and the exporter (sl_otlp.c) asks whether it has ended. Nothing else
    includes this header.

    Bounds (what a span may hold at most, so that one stage cannot make an
    export unbounded): a string (name, value, array item, tracestate, status
    message) keeps SL_SPAN_STR_MAX bytes, cut at a UTF-8 character boundary;
    a span keeps SL_SPAN_ATTRS_MAX attributes, a string array
    SL_SPAN_ARRAY_MAX items. A string cut or an item left out is counted in
    truncated, sent as the attribute SL_SPAN_TRUNCATED_KEY; an attribute
    left out is counted in dropped, sent as OTLP's droppedAttributesCount.
    Strings are well-formed UTF-8 (ill-formed bytes become U+FFFD), as
    OTLP's string fields must be.
*/
#ifndef SL_SPAN_IMPL_H
#define SL_SPAN_IMPL_H

#include "common/otel/sl_span.h"

#define SL_SPAN_STR_MAX (64 * 1024)     //  bytes of one string at most
#define SL_SPAN_ATTRS_MAX 128           //  attributes of one span at most
#define SL_SPAN_ARRAY_MAX 128           //  items of one string array at most
#define SL_SPAN_TRUNCATED_KEY "sluice.span.truncated"

typedef enum {
    SL_SPAN_ATTR_STR = 1,
    SL_SPAN_ATTR_INT,
    SL_SPAN_ATTR_DOUBLE,
    SL_SPAN_ATTR_BOOL,
    SL_SPAN_ATTR_STR_ARRAY
} sl_span_attr_type_t;

//  A string the span owns (well-formed UTF-8, NUL-terminated).
typedef struct {
    char *ptr;
    size_t len;
} sl_span_str_t;

typedef struct {
    char *key;                          //  owned
    sl_span_attr_type_t type;
    union {
        sl_span_str_t str;
        int64_t i64;
        double dbl;
        bool flag;
        struct {
            sl_span_str_t *items;       //  owned, count of them
            size_t count;
        } arr;
    } v;
} sl_span_attr_t;

struct _sl_span_t {
    sl_span_str_t name;
    uint8_t trace [SL_TRACE_ID_SIZE];
    uint8_t id [SL_SPAN_ID_SIZE];
    uint8_t parent [SL_SPAN_ID_SIZE];
    bool has_parent;                    //  false: the root of its trace
    sl_span_kind_t kind;
    uint64_t start_ns;
    uint64_t end_ns;
    bool ended;
    sl_span_str_t tracestate;           //  ptr NULL when none
    bool error;                         //  status ERROR (else UNSET)
    sl_span_str_t message;              //  the error's description
    sl_span_attr_t *attrs;              //  in the order first set
    size_t attr_count;
    size_t attr_cap;
    uint32_t dropped;                   //  attributes left out (over the bound)
    uint32_t truncated;                 //  strings cut, array items left out
};

#endif
