/*  sl_bedrock_anthropic_request.c - Claude on Amazon Bedrock: the body of
    InvokeModelWithResponseStream.

    It is Anthropic's Messages body with three differences: the model is
    in the URL (POST /model/{modelId}/invoke-with-response-stream), so the
    body has no "model"; streaming is the operation's, so it has no
    "stream" (Bedrock refuses both as extraneous keys); and it says
    "anthropic_version": "bedrock-2023-05-31". Beta features, which
    Anthropic's API takes as the anthropic-beta header, belong in the
    body's "anthropic_beta" array on Bedrock: a client's anthropic-beta
    header (its comma-separated names) is folded into that array at each
    attempt (fold), never sent as a header; only the names Bedrock takes
    (sl_bedrock_anthropic_dialect.betas, a client's name for one renamed
    as Bedrock names it), since it refuses a request with any other.

    forward: an Anthropic client's own body so patched, byte for byte
    otherwise (thinking, tools with defer_loading, context_management,
    cache_control: all Bedrock's Claude takes). render: another dialect's
    request rendered by the Anthropic module, then patched the same way.
*/
#include <string.h>
#include <strings.h>

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

#define S_BETA_HEADER "anthropic-beta"
#define S_BETA_MEMBER "anthropic_beta"

//  Is name (n bytes) among the strings of the JSON array list?
static bool
s_listed (sl_str_t list, const char *name, size_t n)
{
    sl_json_iter_t it;
    sl_str_t value;
    if (!list.ptr || sl_json_array (&it, list))
        return false;
    bool found = false;
    sl_buf_t text = { 0 };
    while (!found && sl_json_next_elem (&it, &value) == 1) {
        sl_buf_reset (&text);
        found = sl_json_unescape (value, &text) == 0 && text.len == n && memcmp (text.data, name, n) == 0;
    }
    sl_buf_free (&text);
    return found;
}

int
sl_bedrock_anthropic_fold (sl_str_t body, sl_str_t passthrough, sl_buf_t *out)
{
    //  The body's own array, if any, then each name of every
    //  anthropic-beta line not already in it.
    sl_str_t own = SL_STR_NULL;
    int found = sl_json_find (body, S_BETA_MEMBER, &own);
    if (found < 0)
        return -1;
    if (found == 1 && (!own.len || own.ptr [0] != '['))
        own = SL_STR_NULL;              //  not an array: replaced by the header's
    sl_buf_t list = { 0 };
    sl_buf_putc (&list, '[');
    size_t added = 0;
    sl_json_iter_t it;
    sl_str_t value;
    if (own.ptr && sl_json_array (&it, own) == 0)
        while (sl_json_next_elem (&it, &value) == 1) {
            if (list.len > 1)
                sl_buf_putc (&list, ',');
            sl_buf_append_str (&list, value);
        }
    const char *p = passthrough.ptr, *end = passthrough.ptr + passthrough.len;
    while (p && p < end) {
        const char *eol = memchr (p, '\n', (size_t) (end - p));
        const char *line_end = eol ? eol : end;
        size_t name_len = strlen (S_BETA_HEADER);
        if ((size_t) (line_end - p) > name_len && strncasecmp (p, S_BETA_HEADER, name_len) == 0
        &&  p [name_len] == ':') {
            const char *v = p + name_len + 1;
            while (v < line_end) {
                const char *comma = memchr (v, ',', (size_t) (line_end - v));
                const char *stop = comma ? comma : line_end;
                const char *a = v, *b = stop;
                while (a < b && (*a == ' ' || *a == '\t'))
                    a++;
                while (b > a && (b [-1] == ' ' || b [-1] == '\t' || b [-1] == '\r'))
                    b--;
                //  Taken by Bedrock (under its name there), and not among
                //  the names so far (the body's, and those added)?
                const char *name;
                size_t n;
                bool taken = b > a && sl_dialect_beta (&sl_bedrock_anthropic_dialect, a, (size_t) (b - a), &name, &n);
                sl_buf_putc (&list, ']');
                bool seen = taken && s_listed (sl_buf_str (&list), name, n);
                list.len--;
                if (taken && !seen) {
                    if (list.len > 1)
                        sl_buf_putc (&list, ',');
                    sl_json_put_str (&list, name, n);
                    added++;
                }
                v = stop + 1;
            }
        }
        p = eol ? eol + 1 : end;
    }
    sl_buf_putc (&list, ']');
    int rc = 1;
    if (added) {
        sl_patch_t patch = { S_BETA_MEMBER, sl_buf_cstr (&list) };
        rc = sl_job_patch (body, &patch, 1, out) ? -1 : 0;
    }
    sl_buf_free (&list);
    return rc;
}
