/*  sl_gemini_validate.c - output legality of Gemini streams and bodies.

    A stream (what every dialect obeys besides is in sl_validate.h):
    GenerateContentResponse objects of one responseId, one candidate
    (index 0) whose parts each carry a known field; a functionCall has a
    name and object args; finishReason once, in the last chunk.

    A whole body (non-streaming): one candidate (index 0) whose parts each
    carry a known field (a functionCall with a name and object args), and
    a finishReason.

    Tests: tests/unit/common/dialects/test_sl_validate.c (legal and
    illegal streams and bodies of this dialect), tests/fuzz/fuzz_validate.c.
*/
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_validate_impl.h"

static bool
s_gemini_part_known (sl_str_t key)
{
    static const char *known [] = {
        "text", "thought", "thoughtSignature", "functionCall", "functionResponse",
        "executableCode", "codeExecutionResult", "inlineData", "fileData", "videoMetadata",
        "partMetadata", NULL
    };
    for (int i = 0; known [i]; i++)
        if (sl_json_key_eq (key, known [i]))
            return true;
    return false;
}

//  A candidate's content.parts (absent: ptr NULL).
static int
s_gemini_parts (sl_validate_t *self, sl_str_t parts)
{
    sl_str_t part, key, value;
    if (!parts.ptr)
        return 0;
    sl_json_iter_t it, members;
    if (sl_json_array (&it, parts))
        return sl_vd_fail (self, "content.parts is not an array");
    int rc;
    while ((rc = sl_json_next_elem (&it, &part)) == 1) {
        if (sl_json_object (&members, part))
            return sl_vd_fail (self, "a part that is not an object");
        int known = 0, mrc;
        sl_str_t call = SL_STR_NULL;
        while ((mrc = sl_json_next_member (&members, &key, &value)) == 1) {
            if (!s_gemini_part_known (key))
                return sl_vd_fail (self, "a part with an unknown field %.*s", (int) key.len, key.ptr);
            if (sl_json_key_eq (key, "functionCall"))
                call = value;
            known++;
        }
        if (mrc != 0 || known == 0)
            return sl_vd_fail (self, "an empty or malformed part");
        if (call.ptr) {
            if (!sl_vd_string (self, call, "name").len)
                return sl_vd_fail (self, "a functionCall without a name");
            if (sl_vd_has (call, "args") && !sl_vd_type_is (call, "args", SL_JSON_OBJECT))
                return sl_vd_fail (self, "functionCall args that are not an object");
        }
    }
    return rc == 0 ? 0 : sl_vd_fail (self, "malformed parts");
}

static int
s_gemini (sl_validate_t *self, sl_vd_state_t *st, sl_str_t name, sl_str_t data)
{
    (void) name;
    enum { K_ERROR, K_ID, K_CANDIDATES, K_COUNT };
    static const char *const keys [] = { "error", "responseId", "candidates", NULL };
    sl_str_t v [K_COUNT];
    if (sl_vd_pick (data, keys, v))
        return sl_vd_fail (self, "data is not a JSON object");
    if (v [K_ERROR].ptr) {
        st->phase = SL_VD_END;
        st->errored = true;             //  the bare error object may follow
        return 0;
    }
    sl_str_t id = sl_vd_text (self, v [K_ID]);
    if (id.ptr) {
        if (st->id [0] == 0)
            sl_vd_copy (st->id, sizeof st->id, id);
        else
        if (!sl_vd_same (st->id, id))
            return sl_vd_fail (self, "the responseId changed mid-stream");
    }
    sl_json_iter_t it;
    sl_str_t candidate = SL_STR_NULL, elem;
    int count = 0, rc;
    if (!v [K_CANDIDATES].ptr || sl_json_array (&it, v [K_CANDIDATES]))
        return sl_vd_fail (self, "a chunk without candidates");
    while ((rc = sl_json_next_elem (&it, &elem)) == 1)
        if (count++ == 0)
            candidate = elem;
    if (rc != 0 || count != 1)
        return sl_vd_fail (self, "a chunk with %d candidates (one expected)", count);
    int64_t index = 0;
    if (sl_vd_has (candidate, "index") && (!sl_vd_int (candidate, "index", &index) || index != 0))
        return sl_vd_fail (self, "a candidate other than index 0");
    sl_str_t parts = SL_STR_NULL;
    if (sl_vd_path (candidate, "content.parts", &parts) != 1)
        parts = SL_STR_NULL;
    if (s_gemini_parts (self, parts))
        return -1;
    st->phase = SL_VD_OPEN;
    if (!sl_vd_null_or_absent (candidate, "finishReason")) {
        if (!sl_vd_string (self, candidate, "finishReason").len)
            return sl_vd_fail (self, "finishReason is not a string");
        st->phase = SL_VD_END;
    }
    return 0;
}

//  A Gemini stream that fails ends with the bare error object, as the API
//  ends one (after an error event, or alone); nothing else but whitespace
//  stands outside "data:" events (the Gemini SDKs read nothing else).
static int
s_gemini_bare (sl_validate_t *self, sl_vd_state_t *st, sl_str_t event)
{
    sl_str_t bare = sl_json_trim (event);
    if (!bare.len)
        return 0;
    static const char *const keys [] = { "error", NULL };
    sl_str_t v [1];
    if (sl_vd_pick (bare, keys, v) || !v [0].ptr || sl_json_type (v [0]) != SL_JSON_OBJECT)
        return sl_vd_fail (self, "bytes outside a data: event that are not the error object");
    if (st->phase == SL_VD_END && !st->errored)
        return sl_vd_fail (self, "an error object after the end of the response");
    st->phase = SL_VD_END;
    st->errored = false;
    return 0;
}

//  --------------------------------------------------------------------------
//  The whole body of a non-streaming response

static int
s_gemini_body (sl_validate_t *self, sl_str_t data)
{
    enum { K_ERROR, K_CANDIDATES, K_COUNT };
    static const char *const keys [] = { "error", "candidates", NULL };
    sl_str_t v [K_COUNT];
    if (sl_vd_pick (data, keys, v))
        return sl_vd_fail (self, "the body is not a JSON object");
    if (v [K_ERROR].ptr)
        return sl_vd_fail (self, "a response body holding an error");
    sl_str_t candidate;
    if (!sl_vd_only_elem (v [K_CANDIDATES], &candidate))
        return sl_vd_fail (self, "a response without exactly one candidate");
    enum { C_INDEX, C_CONTENT, C_FINISH, C_COUNT };
    static const char *const candidate_keys [] = { "index", "content", "finishReason", NULL };
    sl_str_t c [C_COUNT];
    int64_t index = 0;
    if (sl_vd_pick (candidate, candidate_keys, c) || (c [C_INDEX].ptr && (!sl_vd_int_of (c [C_INDEX], &index) || index != 0)))
        return sl_vd_fail (self, "a candidate other than index 0");
    //  The parts, checked as a stream's are.
    static const char *const content_keys [] = { "parts", NULL };
    sl_str_t parts [1] = { SL_STR_NULL };
    if (c [C_CONTENT].ptr && sl_vd_pick (c [C_CONTENT], content_keys, parts))
        return sl_vd_fail (self, "content is not an object");
    if (s_gemini_parts (self, parts [0]))
        return -1;
    if (!sl_vd_text (self, c [C_FINISH]).len)
        return sl_vd_fail (self, "a candidate without a finishReason");
    return 0;
}

const sl_validator_vt_t sl_gemini_validator = {
    .event = s_gemini,
    .body = s_gemini_body,
    .bare = s_gemini_bare,
};
