/*  sl_bedrock_anthropic_request.c - Claude on Amazon Bedrock: the body of
    InvokeModelWithResponseStream.

    It is Anthropic's Messages body with three differences: the model is
    in the URL (POST /model/{modelId}/invoke-with-response-stream), so the
    body has no "model"; streaming is the operation's, so it has no
    "stream" (Bedrock refuses both as extraneous keys); and it says
    "anthropic_version": "bedrock-2023-05-31". Beta features, which
    Anthropic's API takes as the anthropic-beta header, belong in the
    body's "anthropic_beta" array on Bedrock: a client's anthropic-beta
    header is passed on as a header today, and not yet copied there.

    forward: an Anthropic client's own body so patched, byte for byte
    otherwise (thinking, tools with defer_loading, context_management,
    cache_control: all Bedrock's Claude takes). render: another dialect's
    request rendered by the Anthropic module, then patched the same way.
*/
#include <string.h>

#include "common/base/sl_json.h"
#include "common/dialects/sl_job.h"
#include "common/dialects/anthropic/sl_anthropic.h"
#include "common/dialects/bedrock/sl_bedrock.h"

#define S_VERSION "\"bedrock-2023-05-31\""

//  body without the members named in drop (a NULL-terminated list),
//  every other member's text as it was. 0, -1 when body is not an object.
static int
s_without (sl_str_t body, const char *const *drop, sl_buf_t *out)
{
    sl_json_iter_t it;
    sl_str_t key, value;
    int rc;
    if (sl_json_object (&it, body))
        return -1;
    sl_buf_putc (out, '{');
    bool first = true;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        bool dropped = false;
        for (int i = 0; drop [i] && !dropped; i++)
            dropped = sl_json_key_eq (key, drop [i]);
        if (dropped)
            continue;
        if (!first)
            sl_buf_putc (out, ',');
        first = false;
        //  The member's text: from its key's opening quote to its value's end.
        const char *start = key.ptr - 1;
        sl_buf_append (out, start, (size_t) (value.ptr + value.len - start));
    }
    sl_buf_putc (out, '}');
    return rc < 0 ? -1 : 0;
}

//  The body as Bedrock takes it: model and stream out, its version in.
static int
s_patch (sl_str_t body, sl_buf_t *out)
{
    static const char *const drop [] = { "model", "stream", "anthropic_version", NULL };
    static const sl_patch_t version = { "anthropic_version", S_VERSION };
    sl_buf_t stripped = { 0 };
    int rc = s_without (body, drop, &stripped);
    if (rc == 0)
        rc = sl_job_patch (sl_buf_str (&stripped), &version, 1, out);
    sl_buf_free (&stripped);
    return rc;
}

int
sl_bedrock_anthropic_forward (sl_str_t body, const sl_req_t *req, sl_buf_t *out)
{
    (void) req;
    return s_patch (body, out);
}

int
sl_bedrock_anthropic_render_request (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out)
{
    sl_buf_t messages = { 0 };
    int rc = sl_anthropic_render_request (req, x, &messages);
    if (rc == 0)
        rc = s_patch (sl_buf_str (&messages), out);
    sl_buf_free (&messages);
    return rc;
}
