/*  Unit tests: common/dialects/sl_req (the normalized request: building
    it, reading it as the judge and the renderers do, the changes a
    request policy makes in the model and in the client's body, its dump,
    translation notes and signatures tagged with their provider). Every
    dialect's parser and renderer runs on it too: the request tests of
    tests/unit/common/dialects/<name>/ and the conformance suite's round
    trips (test_dialects.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_req.h"
#include "proto/sl_msg.h"

//  A small conversation: instructions, a user's words, a call and its
//  result, a second call of the same tool not answered yet.
static sl_req_t *
s_conversation (void)
{
    json_t *root = json_pack ("{s:s,s:{s:s}}", "text", "the user's words", "result", "content", "done");
    sl_req_t *req = sl_req_new (SL_DIALECT_ANTHROPIC, root);
    sl_req_add_part (sl_req_add_message (req, SL_ROLE_SYSTEM), SL_PART_TEXT)->text = SL_STR_LIT ("be brief");
    sl_message_t *user = sl_req_add_message (req, SL_ROLE_USER);
    sl_req_set_text (sl_req_add_part (user, SL_PART_TEXT), json_object_get (root, "text"));
    sl_message_t *assistant = sl_req_add_message (req, SL_ROLE_ASSISTANT);
    sl_part_t *call = sl_req_add_part (assistant, SL_PART_TOOL_CALL);
    call->id = SL_STR_LIT ("c1");
    call->name = SL_STR_LIT ("bash");
    call->arguments = SL_STR_LIT ("{ \"cmd\" : \"ls\" }");
    sl_part_t *result = sl_req_add_part (sl_req_add_message (req, SL_ROLE_USER), SL_PART_TOOL_RESULT);
    result->id = SL_STR_LIT ("c1");
    result->is_error = true;
    sl_req_set_source (result, json_object_get (root, "result"), "content");
    sl_req_add_content (result, SL_PART_TEXT)->text = SL_STR_LIT ("line 1");
    sl_req_add_content (result, SL_PART_TEXT)->text = SL_STR_LIT ("line 2");
    sl_part_t *again = sl_req_add_part (sl_req_last_message (req, SL_ROLE_ASSISTANT), SL_PART_TOOL_CALL);
    again->id = SL_STR_LIT ("c2");
    again->name = SL_STR_LIT ("bash");
    return req;
}

Test (sl_req, a_request_is_read_as_the_judge_and_the_renderers_read_it)
{
    sl_req_t *req = s_conversation ();
    cr_assert_eq (req->message_count, 5, "the last assistant message was a new one");
    cr_expect_eq (req->temperature != req->temperature, 1, "sampling not given is NAN");
    cr_expect_eq (req->max_tokens, -1);
    cr_expect_eq (req->parallel_tools, -1);
    //  Whose call a result answers, and what no result answered yet.
    cr_expect (sl_str_eq (sl_req_call_name (req, SL_STR_LIT ("c1")), "bash"));
    cr_expect_null (sl_req_call_name (req, SL_STR_LIT ("c9")).ptr);
    cr_expect (sl_str_eq (sl_req_open_call (req, req->message_count, SL_STR_LIT ("bash")), "c2"),
               "c1 has its result");
    cr_expect_null (sl_req_open_call (req, 2, SL_STR_LIT ("bash")).ptr, "before the calls");
    //  Texts.
    sl_buf_t out = { 0 };
    sl_req_result_text (&req->messages [3].parts [0], true, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "Error: line 1\nline 2", "for a dialect without an error flag");
    sl_buf_reset (&out);
    sl_req_last_user (req, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "the user's words", "a message of results only is skipped");
    sl_buf_reset (&out);
    sl_req_join (req->messages [0].parts, req->messages [0].count, SL_PART_TEXT, "|", &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "be brief");
    cr_expect (sl_req_has (req->messages [3].parts, 1, SL_PART_TEXT), "a result's content counts");
    cr_expect_not (sl_req_has (req->messages [1].parts, 1, SL_PART_IMAGE));
    sl_buf_free (&out);
    sl_req_destroy (&req);
    sl_req_destroy (&req);
    cr_expect_null (req);
}

//  An edit: the text in capitals (changed when any letter was small).
static bool
s_shout (void *arg, sl_str_t text, sl_buf_t *out)
{
    (void) arg;
    bool changed = false;
    for (size_t i = 0; i < text.len; i++) {
        char c = text.ptr [i];
        char u = c >= 'a' && c <= 'z' ? (char) (c - 'a' + 'A') : c;
        changed |= u != c;
        sl_buf_putc (out, u);
    }
    return changed;
}

Test (sl_req, a_policy_s_changes_reach_the_client_s_body)
{
    sl_req_t *req = s_conversation ();
    //  An edit of a text read from the body changes it there too.
    sl_part_t *words = &req->messages [1].parts [0];
    cr_expect (sl_req_edit_text (req, words, s_shout, NULL));
    cr_expect (sl_str_eq (words->text, "THE USER'S WORDS"));
    cr_expect_str_eq (json_string_value (json_object_get (req->root, "text")), "THE USER'S WORDS");
    cr_expect (req->edited);
    cr_expect_not (req->edited_unsourced);
    //  One the parser made up changes the model only.
    cr_expect (sl_req_edit_text (req, &req->messages [0].parts [0], s_shout, NULL));
    cr_expect (sl_str_eq (req->messages [0].parts [0].text, "BE BRIEF"));
    cr_expect (req->edited_unsourced, "the body no longer says what the request says");
    //  A result replaced: an object's content becomes {"output": text}.
    sl_part_t *result = &req->messages [3].parts [0];
    sl_req_replace_result (req, result, "withheld by policy");
    cr_assert_eq (result->content_count, 1);
    cr_expect (sl_str_eq (result->content [0].text, "withheld by policy"));
    json_t *content = json_object_get (json_object_get (req->root, "result"), "content");
    cr_expect_str_eq (json_string_value (content), "withheld by policy", "a string where a string was");
    sl_req_destroy (&req);
}

Test (sl_req, fields_the_model_does_not_hold_are_noted_once_by_a_known_name)
{
    static const char *const matters [] = { "audio", NULL };
    static const char *const informative [] = { "store", NULL };
    sl_req_t *req = sl_req_new (SL_DIALECT_OPENAI, NULL);
    sl_req_field (req, "audio", matters, informative);
    sl_req_field (req, "store", matters, informative);
    sl_req_field (req, "my_own_key", matters, informative);
    sl_req_field (req, "another_key", matters, informative);
    sl_req_feature (req, "audio", true);
    cr_assert_eq (req->feature_count, 3, "each once; a client's own keys as one");
    cr_expect_str_eq (req->features [2].name, SL_REQ_OTHER_FIELDS);
    cr_expect_not (req->features [2].matters);
    const sl_feature_t *f = sl_req_mattering (req);
    cr_assert_not_null (f);
    cr_expect_str_eq (f->name, "audio");
    sl_req_destroy (&req);
}

Test (sl_req, values_images_and_signatures)
{
    json_t *v = json_pack ("{s:f,s:i,s:s}", "r", 0.5, "i", 7, "s", "x");
    cr_expect_eq (sl_req_real (json_object_get (v, "r")), 0.5);
    cr_expect (isnan (sl_req_real (json_object_get (v, "s"))));
    cr_expect_eq (sl_req_int (json_object_get (v, "i")), 7);
    cr_expect_eq (sl_req_int (json_object_get (v, "r")), -1);
    cr_expect (sl_str_eq (sl_req_str (json_object_get (v, "s")), "x"));
    cr_expect_null (sl_req_str (json_object_get (v, "i")).ptr);
    json_decref (v);
    sl_str_t media, data;
    cr_assert (sl_req_data_url (SL_STR_LIT ("data:image/png;base64,iVBOR"), &media, &data));
    cr_expect (sl_str_eq (media, "image/png"));
    cr_expect (sl_str_eq (data, "iVBOR"));
    cr_expect_not (sl_req_data_url (SL_STR_LIT ("https://x/a.png"), &media, &data));
    sl_part_t image = { .kind = SL_PART_IMAGE, .media_type = SL_STR_LIT ("image/png"), .data = SL_STR_LIT ("iVBOR") };
    sl_buf_t out = { 0 };
    sl_req_put_image_url (&image, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "data:image/png;base64,iVBOR");
    //  A signature goes to a client of another dialect tagged, and back
    //  only to its own provider.
    sl_buf_reset (&out);
    sl_sig_tag ("anthropic", SL_STR_LIT ("EqX"), &out);
    cr_expect_str_eq (sl_buf_cstr (&out), SL_SIG_TAG "anthropic:EqX");
    cr_expect (sl_str_eq (sl_sig_for ("anthropic", sl_buf_str (&out)), "EqX"));
    cr_expect_null (sl_sig_for ("gemini", sl_buf_str (&out)).ptr, "another provider's");
    cr_expect_null (sl_sig_for ("anthropic", SL_STR_LIT ("EqX")).ptr, "a native one of the client's own");
    sl_buf_free (&out);
}

Test (sl_req, a_translation_notes_drops_once_and_refuses_naming_the_feature)
{
    sl_xlate_t x = { .from = "openai", .to = "gemini" };
    sl_xlate_drop (&x, "seed");
    sl_xlate_drop (&x, "seed");
    sl_xlate_drop (&x, "penalties");
    cr_expect_eq (x.drop_count, 2);
    cr_expect_eq (sl_xlate_refuse (&x, "audio", "Gemini takes none"), -1);
    cr_expect_eq (x.status, 400);
    cr_expect_str_eq (x.type, "invalid_request_error");
    cr_expect_str_eq (sl_buf_cstr (&x.message), "audio cannot cross from a openai client to the gemini upstream this "
                                                "model is routed to: Gemini takes none");
    sl_xlate_clear (&x);
}

Test (sl_req, the_dump_is_one_stable_shape)
{
    sl_req_t *req = s_conversation ();
    req->model = SL_STR_LIT ("m");
    sl_tool_t *t = sl_req_add_tool (req);
    t->name = SL_STR_LIT ("bash");
    sl_buf_t out = { 0 };
    sl_req_dump (req, &out);
    json_t *dump = json_loadb (out.data, out.len, 0, NULL);
    cr_assert_not_null (dump, "%s", sl_buf_cstr (&out));
    json_t *call = json_array_get (json_object_get (json_array_get (json_object_get (dump, "messages"), 2), "parts"), 0);
    cr_expect_str_eq (json_string_value (json_object_get (call, "kind")), "tool_call");
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (call, "arguments"), "cmd")), "ls",
                      "arguments as JSON, whatever their spacing");
    cr_expect_str_eq (json_string_value (json_object_get (json_array_get (json_object_get (dump, "tools"), 0), "name")),
                      "bash");
    json_decref (dump);
    sl_buf_free (&out);
    sl_req_destroy (&req);
}
