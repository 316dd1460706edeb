/*  sl_policy_decide.c - the question a rule's decision service is asked
    (sl_policy_decide_input, see sl_policy.h and sl_decide.h).

    The body is Open Policy Agent's data API input: {"input": {...}} with
    what a policy service needs to decide one tool call, so a Rego rule
    reads input.tool, input.arguments.command, input.identity.team. The
    call's own JSON (arguments, the request's tools, the history) goes in
    as JSON, parsed here; what is not JSON goes in as text, so the service
    still sees what the model sent. Absent values are null, never "".

    The body is also what a kept answer is found by (sl_llm_cache): it
    holds nothing that changes from one ask of the same call to the next
    (no stream id, no time), so an identical call under the same policy
    and identity is the same question.
*/
#include "common/policy/sl_policy_impl.h"

#include <stdlib.h>

#include "common/base/sl_utf8.h"

//  A text (invalid UTF-8 repaired: the body must be JSON), or null when
//  absent.
static json_t *
s_text (sl_str_t s)
{
    if (!s.ptr)
        return json_null ();
    if (sl_utf8_valid (s.ptr, s.len))
        return json_stringn (s.ptr, s.len);
    sl_buf_t repaired = { 0 };
    sl_utf8_repair (&repaired, s.ptr, s.len);
    json_t *v = json_stringn (repaired.data ? repaired.data : "", repaired.len);
    sl_buf_free (&repaired);
    return v;
}

//  JSON text parsed, or the text itself when it is not JSON (null when
//  absent).
static json_t *
s_json_or_text (sl_str_t s)
{
    if (!s.ptr)
        return json_null ();
    json_t *v = json_loadb (s.ptr, s.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    return v ? v : s_text (s);
}

void
sl_policy_decide_input (sl_policy_t *self, int rule, const sl_call_t *call, sl_buf_t *out)
{
    if (rule < 0 || rule >= self->rule_count)
        return;
    json_t *identity = json_pack ("{s:o, s:o, s:o}", "key_id", s_text (call->key_id), "team", s_text (call->team),
                                  "user", s_text (call->user));
    json_t *policy = json_pack ("{s:s, s:s}", "version", sl_policy_id (self), "file", self->name ? self->name : "");
    json_t *input = json_pack ("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:o}",
                               "identity", identity,
                               "model", s_text (call->model),
                               "tool", s_text (call->name),
                               "arguments", s_json_or_text (call->arguments),
                               "tools", call->tools.ptr ? s_json_or_text (call->tools) : json_array (),
                               "history", call->history.ptr ? s_json_or_text (call->history) : json_array (),
                               "last_user", s_text (call->last_user),
                               "rule", self->rules [rule].id,
                               "policy", policy);
    //  A call that did not end cleanly is one the rule names so (incomplete,
    //  cut): the service is told why, and sees the arguments as far as they came.
    sl_cut_t cut = call->cut > SL_CUT_NONE && call->cut < SL_CUT_MAX ? call->cut
                 : call->args_valid ? SL_CUT_NONE : SL_CUT_INVALID;
    json_object_set_new (input, "cut", cut != SL_CUT_NONE ? json_string (sl_cut_name (cut)) : json_null ());
    json_t *root = json_pack ("{s:o}", "input", input);
    char *text = root ? json_dumps (root, JSON_COMPACT) : NULL;
    if (text)
        sl_buf_puts (out, text);
    free (text);
    json_decref (root);
}
