/*  sl_azure_decode.c - Azure OpenAI's stream: OpenAI's chunks with the
    content filter's annotations around them.

    What Azure adds to a Chat Completions stream:

      - a first chunk with empty choices, an empty id and model, created 0
        and prompt_filter_results (the prompt's categories, each
        {filtered, severity}): read for a filtered prompt, never taken as
        the response's identity;
      - content_filter_results on choices (and, with the asynchronous
        filter, annotation chunks whose choices carry only those and
        content_filter_offsets): the answer's categories as the filter
        judged them;
      - finish_reason content_filter: the filter stopped the answer.

    A filtered answer (or prompt) is the provider's refusal: a REFUSAL
    delta naming the filter and its categories, then the finish
    content_filter, which every client's renderer writes as its own
    dialect's refusal (stop_reason refusal, finish_reason content_filter,
    SAFETY, an incomplete response). The rest is the OpenAI decoder's: this
    decoder wraps it (its table's event, on no state of its own).
*/
#include <string.h>

#include "common/dialects/azure/sl_azure.h"
#include "common/dialects/openai/sl_openai.h"
#include "common/dialects/sl_decoder_impl.h"

#define S_REFUSAL_MAX 512               //  bytes of a refusal's text (the categories named)

#define S_CHUNK(X) X (K_CHOICES, "choices") X (K_PROMPT, "prompt_filter_results")
SL_DECODER_MEMBERS (s_chunk_members, S_CHUNK)
#define S_CHOICE(X) X (K_FINISH, "finish_reason") X (K_FILTER, "content_filter_results")
SL_DECODER_MEMBERS (s_choice_members, S_CHOICE)

//  Append the names of the filtered categories of a content filter
//  result ({"hate":{"filtered":true,"severity":"high"},...}) to out,
//  comma-joined. The number of them, or -2 when it is malformed.
static int
s_filtered (sl_decoder_t *dec, sl_str_t results, sl_buf_t *out)
{
    sl_json_iter_t it;
    sl_str_t key, value;
    int rc, count = 0;
    if (!results.ptr || sl_json_is_null (results))
        return 0;
    if (sl_json_object (&it, results))
        return sl_decoder_fail (dec, "content_filter_results is not an object");
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        sl_str_t flag;
        bool filtered = false;
        if (sl_json_find (value, "filtered", &flag) != 1 || sl_json_bool (flag, &filtered) || !filtered)
            continue;
        if (out->len + key.len + 2 < S_REFUSAL_MAX) {
            if (count)
                sl_buf_puts (out, ", ");
            sl_buf_append (out, key.ptr, key.len);
        }
        count++;
    }
    return rc < 0 ? sl_decoder_fail (dec, "malformed content_filter_results") : count;
}

//  The categories of every prompt's result (prompt_filter_results:
//  [{prompt_index, content_filter_results}]).
static int
s_prompt_filtered (sl_decoder_t *dec, sl_str_t prompts, sl_buf_t *out)
{
    sl_json_iter_t it;
    sl_str_t prompt, results;
    int rc, count = 0;
    if (sl_json_is_null (prompts))
        return 0;
    if (sl_json_array (&it, prompts))
        return sl_decoder_fail (dec, "prompt_filter_results is not an array");
    while ((rc = sl_json_next_elem (&it, &prompt)) == 1) {
        int found = sl_json_find (prompt, "content_filter_results", &results);
        if (found < 0)
            return sl_decoder_fail (dec, "malformed prompt_filter_results");
        int n = found ? s_filtered (dec, results, out) : 0;
        if (n < 0)
            return -2;
        count += n;
    }
    return rc < 0 ? sl_decoder_fail (dec, "malformed prompt_filter_results") : count;
}

static void
s_refuse (sl_decoder_t *dec, const char *what, const sl_buf_t *categories)
{
    char text [S_REFUSAL_MAX + 128];
    int n = snprintf (text, sizeof text, "Azure OpenAI's content filter stopped the %s (%s)", what,
                      categories->len ? sl_buf_cstr ((sl_buf_t *) categories) : "no category named");
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.text = sl_str_n (text, n > 0 && (size_t) n < sizeof text ? (size_t) n : sizeof text - 1);
    sl_decoder_emit_delta (dec, SL_D_REFUSAL, &d);
}

//  Choice 0's finish and filter results: a refusal first when the filter
//  stopped the answer. 0, or -2.
static int
s_choices (sl_decoder_t *dec, sl_str_t choices)
{
    sl_json_iter_t it;
    sl_str_t choice;
    if (sl_json_array (&it, choices) || sl_json_next_elem (&it, &choice) != 1)
        return 0;                       //  the OpenAI decoder says what is wrong with it
    static const sl_decoder_object_t shape = { NULL, "choice is not an object", "malformed choice" };
    sl_str_t v [s_choice_members_count];
    if (s_choice_members (dec, choice, &shape, v))
        return -2;
    if (!v [K_FINISH].ptr || !sl_str_eq (v [K_FINISH], "\"content_filter\""))
        return 0;
    sl_buf_t categories = { 0 };
    int rc = s_filtered (dec, v [K_FILTER], &categories);
    if (rc >= 0)
        s_refuse (dec, "answer", &categories);
    sl_buf_free (&categories);
    return rc < 0 ? -2 : 0;
}

static int
s_event (void *state, sl_decoder_t *dec, sl_str_t type, sl_str_t data)
{
    sl_str_t body = sl_json_trim (data);
    if (sl_str_eq (body, "[DONE]") || sl_str_eq (type, "error"))
        return sl_openai_decoder.event (state, dec, type, data);
    static const sl_decoder_object_t shape = { NULL, "chunk is not a JSON object", "chunk is not valid JSON" };
    sl_str_t v [s_chunk_members_count];
    if (s_chunk_members (dec, body, &shape, v))
        return -2;
    sl_json_iter_t it;
    sl_str_t first;
    bool no_choices = !v [K_CHOICES].ptr || sl_json_is_null (v [K_CHOICES])
                   || (sl_json_array (&it, v [K_CHOICES]) == 0 && sl_json_next_elem (&it, &first) == 0);
    if (v [K_PROMPT].ptr && no_choices) {
        //  The prompt's annotation: no identity in it (its id is ""). A
        //  filtered prompt is refused: nothing of an answer follows.
        sl_buf_t categories = { 0 };
        int n = s_prompt_filtered (dec, v [K_PROMPT], &categories);
        if (n > 0) {
            s_refuse (dec, "prompt", &categories);
            sl_msg_t fin;
            sl_msg_init (&fin, SL_MSG_DELTA);
            fin.finish_raw = SL_STR_LIT ("content_filter");
            sl_decoder_emit_finish (dec, &fin);
        }
        sl_buf_free (&categories);
        return n < 0 ? -2 : 0;
    }
    if (!no_choices && s_choices (dec, v [K_CHOICES]))
        return -2;
    return sl_openai_decoder.event (state, dec, type, data);
}

//  No state of its own (the OpenAI decoder has none either), and the
//  body's end is sl_decoder_end's, as OpenAI's.
const sl_decoder_vt_t sl_azure_decoder = {
    .event = s_event,
};
