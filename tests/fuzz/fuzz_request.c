/*  Fuzz target: a client's request body, in every dialect, must be either
    refused with a status and a reason or turned into a job whose upstream
    body and tools are valid JSON (common/dialects/sl_request). The first
    byte picks the dialect. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../common/sl_json.h"
#include "../../common/dialects/sl_request.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    sl_str_t body = sl_str_n (data + 1, size - 1);
    sl_request_t r;
    sl_route_t route;
    int rc;
    switch (data [0] % 4) {
        case 0:  rc = sl_request_parse_openai (body, &r); break;
        case 1:  rc = sl_request_parse_anthropic (body, &r); break;
        case 2:  rc = sl_request_parse_responses (body, &r); break;
        default:
            sl_request_route ("/v1beta/models/m:streamGenerateContent", &route);
            rc = sl_request_parse_gemini (body, &route, true, &r);
            break;
    }
    if (rc == 0) {
        if (!sl_json_valid (sl_buf_str (&r.upstream_body)) || !sl_json_valid (sl_buf_str (&r.tools)))
            __builtin_trap ();
    }
    else
    if (r.status < 400 || !r.error_type || r.error_message.len == 0)
        __builtin_trap ();
    sl_request_clear (&r);
    //  Paths: anything goes, nothing crashes.
    char path [256];
    size_t n = size - 1 < sizeof path - 1 ? size - 1 : sizeof path - 1;
    memcpy (path, data + 1, n);
    path [n] = 0;
    sl_request_route (path, &route);
    return 0;
}
