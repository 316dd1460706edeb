/*  Fuzz target: a client's request body, in every dialect, must be either
    refused with a status and a reason or turned into a job whose upstream
    body and tools are valid JSON (common/dialects/sl_job), and so must
    its translation for an upstream of any other dialect. The first byte
    picks the client's dialect, the second the upstream's (registered
    dialects, so a new one is fuzzed by being registered). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/dialects/sl_job.h"

static void
s_check (int rc, sl_job_t *r)
{
    if (rc == 0) {
        if (!sl_json_valid (sl_buf_str (&r->upstream_body)) || !sl_json_valid (sl_buf_str (&r->tools)))
            __builtin_trap ();
    }
    else
    if (r->status < 400 || !r->error_type || r->error_message.len == 0)
        __builtin_trap ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t count = sl_dialect_count ();
    const sl_dialect_t *client = sl_dialect_at (data [0] % count);
    const sl_dialect_t *upstream = sl_dialect_at (data [1] % count);
    if (client->upstream_only)
        return 0;                       //  no client speaks it: its requests are only rendered
    sl_str_t body = sl_str_n (data + 2, size - 2);
    sl_endpoint_t endpoint = { .dialect = client->id, .stream = true, .sse = true, .model = "m" };
    sl_job_t r;
    int rc = sl_job_parse (&endpoint, body, &r);
    s_check (rc, &r);
    if (rc == 0) {
        rc = sl_job_translate (&r, upstream->id);
        s_check (rc, &r);
    }
    sl_job_clear (&r);
    //  Paths: anything goes, nothing crashes.
    char path [256];
    size_t n = size - 2 < sizeof path - 1 ? size - 2 : sizeof path - 1;
    memcpy (path, data + 2, n);
    path [n] = 0;
    sl_job_route (path, &endpoint);
    return 0;
}
