/*  sl_mcp_rpc.c - one JSON-RPC message an MCP client POSTs, checked.

    The order of the checks is the order of their cost: the size, then a
    zero-allocation count of what the body holds (its depth), then the
    tree, then the message's fields, then the revision and the headers
    that mirror the body (2026-07-28). See sl_mcp_rpc.h.
*/
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/mcp/sl_mcp_rpc.h"

#define SL_MCP_HTTP_BAD_REQUEST 400
#define SL_MCP_HTTP_TOO_LARGE 413
#define SL_MCP_NAME_MAX 4096            //  longest decoded Mcp-Name compared
#define SL_MCP_B64_PREFIX "=?base64?"   //  the header value sentinel of 2026-07-28
#define SL_MCP_B64_SUFFIX "?="

static const char *s_rev_names [SL_MCP_REV_COUNT] = {
    [SL_MCP_REV_UNKNOWN] = "",
    [SL_MCP_REV_2025_06_18] = "2025-06-18",
    [SL_MCP_REV_2025_11_25] = "2025-11-25",
    [SL_MCP_REV_2026_07_28] = "2026-07-28",
};
_Static_assert (sizeof s_rev_names / sizeof s_rev_names [0] == SL_MCP_REV_COUNT,
                "a name per revision");

sl_mcp_rev_t
sl_mcp_rev_parse (sl_str_t name)
{
    for (int r = SL_MCP_REV_UNKNOWN + 1; r < SL_MCP_REV_COUNT; r++)
        if (sl_str_eq (name, s_rev_names [r]))
            return (sl_mcp_rev_t) r;
    return SL_MCP_REV_UNKNOWN;
}

const char *
sl_mcp_rev_name (sl_mcp_rev_t rev)
{
    return rev > SL_MCP_REV_UNKNOWN && rev < SL_MCP_REV_COUNT ? s_rev_names [rev] : "";
}

bool
sl_mcp_rev_stateless (sl_mcp_rev_t rev)
{
    return rev == SL_MCP_REV_2026_07_28;
}

int
sl_mcp_error_set (sl_mcp_error_t *err, int status, int code, const char *reason,
                  const char *format, ...)
{
    err->status = status;
    err->code = code;
    err->reason = reason;
    va_list args;
    va_start (args, format);
    vsnprintf (err->message, sizeof err->message, format, args);
    va_end (args);
    return -1;
}

void
sl_mcp_rpc_free (sl_mcp_rpc_t *self)
{
    if (self->root)
        json_decref (self->root);
    memset (self, 0, sizeof *self);
}

static const char *
s_header (const sl_mcp_headers_t *headers, const char *name)
{
    return headers && headers->fn ? headers->fn (headers->arg, name) : NULL;
}

//  True when value holds only what 2026-07-28 allows in a plain header
//  value: visible ASCII, space and tab.
static bool
s_header_safe (const char *value)
{
    for (const unsigned char *p = (const unsigned char *) value; *p; p++)
        if (!((*p >= 0x20 && *p <= 0x7e) || *p == '\t'))
            return false;
    return true;
}

//  The value a Mcp-Name header stands for: plain, or the base64 sentinel
//  decoded into scratch. 0 ok, -1 malformed.
static int
s_header_value (const char *value, char *scratch, size_t max, sl_str_t *out)
{
    if (!s_header_safe (value))
        return -1;
    size_t n = strlen (value);
    size_t pre = strlen (SL_MCP_B64_PREFIX), suf = strlen (SL_MCP_B64_SUFFIX);
    if (n >= pre + suf && memcmp (value, SL_MCP_B64_PREFIX, pre) == 0
        && memcmp (value + n - suf, SL_MCP_B64_SUFFIX, suf) == 0) {
        size_t got = 0;
        if (sodium_base642bin ((unsigned char *) scratch, max, value + pre, n - pre - suf, NULL,
                               &got, NULL, sodium_base64_VARIANT_ORIGINAL) != 0)
            return -1;
        *out = sl_str_n (scratch, got);
        return 0;
    }
    *out = sl_str_n (value, n);
    return 0;
}

//  The field Mcp-Name mirrors for a method, or NULL when it has none.
static const char *
s_name_field (const char *method)
{
    if (strcmp (method, "tools/call") == 0 || strcmp (method, "prompts/get") == 0)
        return "name";
    if (strcmp (method, "resources/read") == 0)
        return "uri";
    return NULL;
}

//  2026-07-28: the headers that mirror the body must equal it.
static int
s_check_mirrors (const sl_mcp_rpc_t *rpc, const sl_mcp_headers_t *headers, sl_mcp_error_t *err)
{
    const char *method = s_header (headers, "Mcp-Method");
    if (!method)
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_HEADER_MISMATCH,
                                 "header_mismatch", "Header mismatch: Mcp-Method header missing");
    if (!s_header_safe (method) || strcmp (method, rpc->method) != 0)
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_HEADER_MISMATCH,
                                 "header_mismatch",
                                 "Header mismatch: Mcp-Method header does not match body method");
    const char *field = s_name_field (rpc->method);
    if (!field || rpc->kind != SL_MCP_REQUEST)
        return 0;
    const char *name = s_header (headers, "Mcp-Name");
    if (!name)
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_HEADER_MISMATCH,
                                 "header_mismatch", "Header mismatch: Mcp-Name header missing");
    char scratch [SL_MCP_NAME_MAX];
    sl_str_t value;
    if (s_header_value (name, scratch, sizeof scratch, &value) != 0)
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_HEADER_MISMATCH,
                                 "header_mismatch", "Header mismatch: Mcp-Name header malformed");
    if (!rpc->name || !sl_str_eq (value, rpc->name) || strlen (rpc->name) != value.len)
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_HEADER_MISMATCH,
                                 "header_mismatch",
                                 "Header mismatch: Mcp-Name header does not match body %s", field);
    return 0;
}

//  The revision: the header, and the body's _meta (2026-07-28), which
//  must agree.
static int
s_check_revision (sl_mcp_rpc_t *rpc, const json_t *meta, const sl_mcp_headers_t *headers,
                  sl_mcp_error_t *err)
{
    const char *header = s_header (headers, "MCP-Protocol-Version");
    const json_t *body = meta ? json_object_get (meta, SL_MCP_META_VERSION) : NULL;
    if (body && !json_is_string (body))
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_INVALID_PARAMS,
                                 "bad_request", "_meta protocolVersion is not a string");
    const char *said = header ? header : body ? json_string_value (body) : NULL;
    if (!said)
        return 0;                       //  the session's, or initialize's: the caller's to know
    sl_mcp_rev_t rev = sl_mcp_rev_parse (sl_str (said));
    if (rev == SL_MCP_REV_UNKNOWN) {
        snprintf (err->requested, sizeof err->requested, "%s", said);
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_UNSUPPORTED_VERSION,
                                 "bad_version",
                                 "Unsupported protocol version");
    }
    bool stateless = sl_mcp_rev_stateless (rev)
                  || (body && sl_mcp_rev_stateless (sl_mcp_rev_parse (sl_str (json_string_value (body)))));
    if (stateless) {
        //  The header is required and the body's _meta must carry the same.
        if (!header)
            return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_HEADER_MISMATCH,
                                     "header_mismatch",
                                     "Header mismatch: MCP-Protocol-Version header missing");
        if (!body || strcmp (json_string_value (body), header) != 0)
            return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_HEADER_MISMATCH,
                                     "header_mismatch",
                                     "Header mismatch: MCP-Protocol-Version header does not match body _meta");
    }
    rpc->rev = rev;
    return 0;
}

int
sl_mcp_rpc_parse (sl_str_t body, const sl_mcp_headers_t *headers, sl_mcp_rpc_t *out,
                  sl_mcp_error_t *err)
{
    memset (out, 0, sizeof *out);
    memset (err, 0, sizeof *err);
    if (body.len > SL_MCP_MAX_BODY)
        return sl_mcp_error_set (err, SL_MCP_HTTP_TOO_LARGE, SL_MCP_ERR_INVALID_REQUEST,
                                 "too_large", "Message over %u bytes", SL_MCP_MAX_BODY);
    //  Count before building: a deep or malformed body never reaches jansson.
    sl_json_stats_t stats;
    if (sl_json_stats (body, &stats) != 0) {
        if (stats.too_deep)
            return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_INVALID_REQUEST,
                                     "too_deep", "Message nested deeper than %d", SL_MCP_MAX_DEPTH);
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_PARSE, "bad_json",
                                 "Parse error");
    }
    if (stats.depth > SL_MCP_MAX_DEPTH)
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_INVALID_REQUEST,
                                 "too_deep", "Message nested deeper than %d", SL_MCP_MAX_DEPTH);
    sl_json_type_t type = sl_json_type (body);
    if (type == SL_JSON_ARRAY)
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_INVALID_REQUEST,
                                 "bad_request", "Batches are not supported");
    if (type != SL_JSON_OBJECT)
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_INVALID_REQUEST,
                                 "bad_request", "A message is a JSON object");
    json_error_t jerr;
    out->root = json_loadb (body.ptr, body.len, JSON_REJECT_DUPLICATES, &jerr);
    if (!out->root)
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_PARSE, "bad_json",
                                 "Parse error");
    //  The id first, so every later refusal can answer it.
    const json_t *id = json_object_get (out->root, "id");
    if (id && (json_is_string (id) || json_is_integer (id)))
        out->id = id;
    const json_t *version = json_object_get (out->root, "jsonrpc");
    if (!json_is_string (version) || strcmp (json_string_value (version), "2.0") != 0)
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_INVALID_REQUEST,
                                 "bad_request", "jsonrpc must be \"2.0\"");
    const json_t *method = json_object_get (out->root, "method");
    if (!method) {
        bool response = json_object_get (out->root, "result") || json_object_get (out->root, "error");
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_INVALID_REQUEST,
                                 "bad_request", response
                                 ? "Responses are not accepted: no request was sent to the client"
                                 : "method is required");
    }
    if (!json_is_string (method) || json_string_length (method) == 0)
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_INVALID_REQUEST,
                                 "bad_request", "method must be a string");
    out->method = json_string_value (method);
    if (id && !out->id)
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_INVALID_REQUEST,
                                 "bad_request", "id must be a string or an integer");
    out->kind = id ? SL_MCP_REQUEST : SL_MCP_NOTIFICATION;
    const json_t *params = json_object_get (out->root, "params");
    if (params && !json_is_object (params))
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_INVALID_REQUEST,
                                 "bad_request", "params must be an object");
    out->params = params;
    const char *field = s_name_field (out->method);
    if (field && params) {
        const json_t *name = json_object_get (params, field);
        if (name && !json_is_string (name))
            return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_INVALID_PARAMS,
                                     "bad_request", "params.%s must be a string", field);
        out->name = name ? json_string_value (name) : NULL;
    }
    const json_t *meta = params ? json_object_get (params, "_meta") : NULL;
    if (meta && !json_is_object (meta))
        return sl_mcp_error_set (err, SL_MCP_HTTP_BAD_REQUEST, SL_MCP_ERR_INVALID_PARAMS,
                                 "bad_request", "params._meta must be an object");
    if (meta) {
        const json_t *tp = json_object_get (meta, "traceparent");
        const json_t *ts = json_object_get (meta, "tracestate");
        out->traceparent = json_is_string (tp) ? json_string_value (tp) : NULL;
        out->tracestate = json_is_string (ts) ? json_string_value (ts) : NULL;
    }
    if (s_check_revision (out, meta, headers, err) != 0)
        return -1;
    if (sl_mcp_rev_stateless (out->rev) && s_check_mirrors (out, headers, err) != 0)
        return -1;
    return 0;
}

//  {"jsonrpc":"2.0","id":<id or null>, then the caller's member.
static void
s_put_head (const sl_mcp_rpc_t *rpc, sl_buf_t *out)
{
    sl_buf_puts (out, "{\"jsonrpc\":\"2.0\",\"id\":");
    char *id = rpc && rpc->id ? json_dumps (rpc->id, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    sl_buf_puts (out, id ? id : "null");
    free (id);
}

void
sl_mcp_error_json (const sl_mcp_rpc_t *rpc, const sl_mcp_error_t *err, sl_buf_t *out)
{
    s_put_head (rpc, out);
    sl_buf_puts (out, ",\"error\":{\"code\":");
    sl_buf_put_i64 (out, err->code);
    sl_buf_puts (out, ",\"message\":");
    sl_json_put_str (out, err->message, strlen (err->message));
    if (err->code == SL_MCP_ERR_UNSUPPORTED_VERSION) {
        sl_buf_puts (out, ",\"data\":{\"supported\":[");
        for (int r = SL_MCP_REV_COUNT - 1; r > SL_MCP_REV_UNKNOWN; r--)
            sl_buf_printf (out, "\"%s\"%s", s_rev_names [r], r > SL_MCP_REV_UNKNOWN + 1 ? "," : "");
        sl_buf_puts (out, "],\"requested\":");
        sl_json_put_str (out, err->requested, strlen (err->requested));
        sl_buf_putc (out, '}');
    }
    sl_buf_puts (out, "}}");
}

void
sl_mcp_result_json (const sl_mcp_rpc_t *rpc, const json_t *result, sl_buf_t *out)
{
    s_put_head (rpc, out);
    sl_buf_puts (out, ",\"result\":");
    json_t *copy = json_is_object (result) ? json_copy ((json_t *) result) : json_object ();
    if (rpc && sl_mcp_rev_stateless (rpc->rev) && !json_object_get (copy, "resultType"))
        json_object_set_new (copy, "resultType", json_string ("complete"));
    char *text = json_dumps (copy, JSON_COMPACT);
    sl_buf_puts (out, text ? text : "{}");
    free (text);
    json_decref (copy);
    sl_buf_putc (out, '}');
}
