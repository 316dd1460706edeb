/*  Unit tests: common/dialects/azure/sl_azure_decode (Azure's content
    filter around OpenAI's chunks, through sl_decoder). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_decoder.h"

//  Deltas described compactly: "kind:text" per line (the finish: its raw
//  value; the identity: id@model).
static void
s_describe (void *arg, const sl_msg_t *m)
{
    sl_buf_t *out = arg;
    if (m->type == SL_MSG_ERROR) {
        sl_buf_printf (out, "error:%.*s\n", (int) m->code.len, m->code.ptr);
        return;
    }
    sl_buf_printf (out, "%s:", sl_delta_kind_name (m->kind));
    if (m->kind == SL_D_MESSAGE)
        sl_buf_printf (out, "%.*s@%.*s", (int) m->id.len, m->id.ptr, (int) m->model.len, m->model.ptr);
    else
        sl_buf_append_str (out, m->kind == SL_D_FINISH ? m->finish_raw : m->text);
    sl_buf_putc (out, '\n');
}

static sl_buf_t s_out;

static int
s_event (sl_decoder_t *dec, const char *data)
{
    return sl_decoder_event (dec, SL_STR_LIT ("message"), sl_str (data), s_describe, &s_out);
}

#define S_SAFE "{\"hate\":{\"filtered\":false,\"severity\":\"safe\"},\"violence\":{\"filtered\":false,\"severity\":\"safe\"}}"
#define S_PROMPT_CHUNK "{\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\"," \
                       "\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":" S_SAFE "}]}"

Test (sl_dec_azure, the_prompt_annotation_is_no_identity_and_the_rest_is_openai_s)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_AZURE);
    cr_assert_not_null (dec);
    cr_assert_eq (s_event (dec, S_PROMPT_CHUNK), 0);
    cr_expect_eq (s_out.len, 0, "nothing from the prompt's annotation: %s", sl_buf_cstr (&s_out));
    cr_assert_eq (s_event (dec, "{\"id\":\"chatcmpl-1\",\"model\":\"gpt-4o\",\"created\":5,\"choices\":[{\"index\":0,"
                                "\"content_filter_results\":{},\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
                                "\"finish_reason\":null}]}"), 0);
    cr_assert_eq (s_event (dec, "{\"id\":\"chatcmpl-1\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,"
                                "\"content_filter_results\":" S_SAFE ",\"delta\":{\"content\":\"Hi\"},"
                                "\"finish_reason\":null}]}"), 0);
    cr_assert_eq (s_event (dec, "{\"id\":\"chatcmpl-1\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,"
                                "\"content_filter_results\":{},\"delta\":{},\"finish_reason\":\"stop\"}]}"), 0);
    cr_assert_eq (s_event (dec, "[DONE]"), 0);
    cr_expect_str_eq (sl_buf_cstr (&s_out), "message:chatcmpl-1@gpt-4o\ntext:Hi\nfinish:stop\ndone:\n");
    cr_expect_eq (sl_decoder_unknown (dec), 0, "Azure's annotations are known members");
    sl_decoder_destroy (&dec);
    sl_buf_free (&s_out);
}

Test (sl_dec_azure, a_filtered_answer_is_the_provider_s_refusal)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_AZURE);
    cr_assert_eq (s_event (dec, S_PROMPT_CHUNK), 0);
    cr_assert_eq (s_event (dec, "{\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"content_filter_results\":"
                                S_SAFE ",\"delta\":{\"content\":\"Once\"},\"finish_reason\":null}]}"), 0);
    cr_assert_eq (s_event (dec, "{\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"content_filter_results\":"
                                "{\"hate\":{\"filtered\":false,\"severity\":\"safe\"},\"violence\":{\"filtered\":true,"
                                "\"severity\":\"high\"},\"jailbreak\":{\"filtered\":true,\"detected\":true}},"
                                "\"delta\":{},\"finish_reason\":\"content_filter\"}]}"), 0);
    cr_assert_eq (s_event (dec, "[DONE]"), 0);
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "message:c@m\ntext:Once\n"
                      "refusal:Azure OpenAI's content filter stopped the answer (violence, jailbreak)\n"
                      "finish:content_filter\ndone:\n");
    sl_decoder_destroy (&dec);
    sl_buf_free (&s_out);
}

Test (sl_dec_azure, a_filtered_prompt_is_refused_and_finished)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_AZURE);
    cr_assert_eq (s_event (dec, "{\"choices\":[],\"id\":\"\",\"prompt_filter_results\":[{\"prompt_index\":0,"
                                "\"content_filter_results\":{\"self_harm\":{\"filtered\":true,\"severity\":\"medium\"}}}]}"),
                  0);
    cr_assert_eq (s_event (dec, "[DONE]"), 0);
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "refusal:Azure OpenAI's content filter stopped the prompt (self_harm)\n"
                      "finish:content_filter\ndone:\n");
    sl_decoder_destroy (&dec);
    sl_buf_free (&s_out);
}

Test (sl_dec_azure, malformed_annotations_are_malformed_events)
{
    const char *bad [] = {
        "{\"choices\":[],\"prompt_filter_results\":{}}",
        "{\"choices\":[],\"prompt_filter_results\":[{\"content_filter_results\":[]}]}",
        "{\"id\":\"c\",\"choices\":[{\"index\":0,\"content_filter_results\":7,\"finish_reason\":\"content_filter\"}]}",
        "{\"choices\":[{\"index\":0,\"finish_reason\":\"content_filter\",",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        sl_buf_reset (&s_out);
        sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_AZURE);
        cr_expect_eq (s_event (dec, bad [i]), -2, "case %zu", i);
        sl_decoder_destroy (&dec);
    }
    sl_buf_free (&s_out);
}
