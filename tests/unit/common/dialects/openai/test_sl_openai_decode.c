/*  Unit tests: common/dialects/openai/sl_openai_decode (through sl_decoder). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_decoder.h"

//  Deltas described compactly: "kind:index:id:name:text" per line.
static void
s_describe (void *arg, const sl_msg_t *m)
{
    sl_buf_t *out = arg;
    if (m->type == SL_MSG_ERROR) {
        sl_buf_printf (out, "error:%.*s:%.*s:%d\n", (int) m->code.len, m->code.ptr,
                       (int) m->message.len, m->message.ptr, m->status);
        return;
    }
    sl_buf_printf (out, "%s:%d:", sl_delta_kind_name (m->kind), m->index);
    sl_buf_append_str (out, m->id);
    sl_buf_putc (out, ':');
    sl_buf_append_str (out, m->name);
    sl_buf_putc (out, ':');
    sl_buf_append_str (out, m->kind == SL_D_FINISH ? m->finish_raw
                          : m->kind == SL_D_SIGNATURE ? m->sig : m->text);
    if (m->kind == SL_D_USAGE)
        sl_buf_printf (out, "%lld/%lld/%lld/%lld/%lld", (long long) m->usage.input,
                       (long long) m->usage.output, (long long) m->usage.total,
                       (long long) m->usage.cache_read, (long long) m->usage.reasoning);
    if (m->kind == SL_D_MESSAGE)
        sl_buf_printf (out, "%.*s@%lld", (int) m->model.len, m->model.ptr, (long long) m->ts);
    sl_buf_putc (out, '\n');
}

static sl_buf_t s_out;

static int
s_event (sl_decoder_t *dec, const char *data)
{
    return sl_decoder_event (dec, SL_STR_LIT ("message"), sl_str (data), s_describe, &s_out);
}

Test (sl_dec_openai, text_tools_finish_usage_done)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_OPENAI);
    cr_assert_not_null (dec);
    cr_expect_str_eq (sl_decoder_name (dec), "openai");
    cr_assert_eq (s_event (dec, "{\"id\":\"c1\",\"created\":5,\"model\":\"m\",\"choices\":[{\"index\":0,"
                                "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}"), 0);
    cr_assert_eq (s_event (dec, "{\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi \\\"you\\\"\"}}]}"), 0);
    cr_assert_eq (s_event (dec, "{\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                                "\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}"), 0);
    cr_assert_eq (s_event (dec, "{\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                                "\"function\":{\"arguments\":\"{\\\"a\\\":1}\"}}]}}]}"), 0);
    cr_assert_eq (s_event (dec, "{\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}"), 0);
    cr_assert_eq (s_event (dec, "{\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,"
                                "\"total_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":1},"
                                "\"completion_tokens_details\":{\"reasoning_tokens\":2}}}"), 0);
    cr_assert_eq (s_event (dec, "[DONE]"), 0);
    cr_expect (sl_decoder_done (dec));
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "message:-1:c1::m@5\n"
                      "text:-1:::Hi \"you\"\n"
                      "tool_call:0:call_1:f:\n"
                      "tool_call:0:::{\"a\":1}\n"
                      "finish:-1:::tool_calls\n"
                      "usage:-1:::3/4/7/1/2\n"
                      "done:-1:::\n");
    cr_expect_eq (sl_decoder_unknown (dec), 0);
    sl_decoder_destroy (&dec);
}

Test (sl_dec_openai, error_chunk_and_malformed_json)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_OPENAI);
    cr_expect_eq (s_event (dec, "{\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}"), 0);
    cr_expect_str_eq (sl_buf_cstr (&s_out), "error:server_error:boom:500\n");
    cr_expect (sl_decoder_done (dec));
    sl_decoder_destroy (&dec);

    dec = sl_decoder_new (SL_DIALECT_OPENAI);
    cr_expect_eq (s_event (dec, "{\"choices\":[{\"delta\":{\"content\":\"x\"}"), -2);
    cr_expect_eq (s_event (dec, "not json"), -2);
    cr_expect_eq (s_event (dec, "{\"choices\":[{\"delta\":{\"content\":5}}]}"), -2);
    cr_expect_eq (s_event (dec, "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-1}]}}]}"), -2);
    cr_expect_neq (strlen (sl_decoder_error (dec)), 0);
    sl_decoder_destroy (&dec);
}

Test (sl_dec_openai, event_named_error_and_numeric_codes)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_OPENAI);
    cr_expect_eq (sl_decoder_event (dec, SL_STR_LIT ("error"),
                                    SL_STR_LIT ("{\"error\":{\"message\":\"slow down\",\"code\":429}}"),
                                    s_describe, &s_out), 0);
    cr_expect_str_eq (sl_buf_cstr (&s_out), "error:429:slow down:429\n");
    sl_decoder_destroy (&dec);
    sl_buf_reset (&s_out);
    dec = sl_decoder_new (SL_DIALECT_OPENAI);
    cr_expect_eq (sl_decoder_event (dec, SL_STR_LIT ("error"), SL_STR_LIT ("{\"message\":\"bare\"}"),
                                    s_describe, &s_out), 0);
    cr_expect_str_eq (sl_buf_cstr (&s_out), "error:upstream_error:bare:0\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_openai, finish_without_done)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_OPENAI);
    s_event (dec, "{\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}");
    sl_decoder_finish (dec, s_describe, &s_out);
    cr_expect_str_eq (sl_buf_cstr (&s_out), "finish:-1:::stop\ndone:-1:::\n",
                      "a finish reason means the response was complete");
    sl_decoder_destroy (&dec);

    sl_buf_reset (&s_out);
    dec = sl_decoder_new (SL_DIALECT_OPENAI);
    s_event (dec, "{\"choices\":[{\"delta\":{\"content\":\"cut\"}}]}");
    sl_decoder_finish (dec, s_describe, &s_out);
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "text:-1:::cut\nerror:upstream_incomplete:the upstream ended the stream before it finished:502\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_openai, other_choices_are_never_mixed_in)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_OPENAI);
    s_event (dec, "{\"choices\":[{\"index\":1,\"delta\":{\"content\":\"B\"}},{\"index\":0,\"delta\":{\"content\":\"A\"}},"
                  "{\"delta\":{\"content\":\"a\"},\"index\":0},{\"index\":2,\"finish_reason\":\"stop\",\"delta\":{}}]}");
    cr_expect_str_eq (sl_buf_cstr (&s_out), "text:-1:::A\ntext:-1:::a\n");
    cr_expect_eq (sl_decoder_unknown (dec), 2, "two foreign choices counted");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_openai, reasoning_refusal_and_fixed_order)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_OPENAI);
    //  Members in an unusual order still come out reasoning, text, refusal, calls.
    s_event (dec, "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":3,\"function\":{\"arguments\":\"{}\"}}],"
                  "\"refusal\":\"no\",\"content\":\"t\",\"reasoning_content\":\"r1\"}}]}");
    s_event (dec, "{\"choices\":[{\"delta\":{\"reasoning\":\"r2\",\"reasoning_content\":null}}]}");
    s_event (dec, "{\"choices\":[{\"delta\":{\"reasoning\":\"x\",\"reasoning_content\":\"r3\"}}]}");
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "thinking:-1:::r1\ntext:-1:::t\nrefusal:-1:::no\ntool_call:3:::{}\n"
                      "thinking:-1:::r2\nthinking:-1:::r3\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_openai, deprecated_function_call_is_one_call)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_OPENAI);
    s_event (dec, "{\"choices\":[{\"delta\":{\"function_call\":{\"name\":\"f\",\"arguments\":\"\"}}}]}");
    s_event (dec, "{\"choices\":[{\"delta\":{\"function_call\":{\"arguments\":\"{\\\"a\\\"\"}}}]}");
    s_event (dec, "{\"choices\":[{\"delta\":{\"function_call\":{\"arguments\":\":1}\"}}}]}");
    s_event (dec, "{\"choices\":[{\"delta\":{},\"finish_reason\":\"function_call\"}]}");
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "tool_call:0::f:\ntool_call:0:::{\"a\"\ntool_call:0::::1}\n"
                      "finish:-1:::function_call\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_openai, litellm_thinking_blocks_with_signatures)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_OPENAI);
    //  Text both in reasoning_content and in the block: once.
    s_event (dec, "{\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\",\"thinking_blocks\":"
                  "[{\"type\":\"thinking\",\"thinking\":\"hm\",\"signature\":\"\"}]}}]}");
    //  The signature arrives alone at the end of the block.
    s_event (dec, "{\"choices\":[{\"delta\":{\"thinking_blocks\":[{\"type\":\"thinking\",\"thinking\":\"\","
                  "\"signature\":\"SIG\"}]}}]}");
    //  Text only in the block; then a redacted block.
    s_event (dec, "{\"choices\":[{\"delta\":{\"thinking_blocks\":[{\"type\":\"thinking\",\"thinking\":\"ok\"},"
                  "{\"type\":\"redacted_thinking\",\"data\":\"XYZ\"}]}}]}");
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "thinking:-1:::hm\nsignature:-1:::SIG\nthinking:-1:::ok\nredacted:-1:::XYZ\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_openai, unknown_fields_counted_and_nothing_after_the_end)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_OPENAI);
    s_event (dec, "{\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"novel\":1,\"choices\":[{\"index\":0,"
                  "\"logprobs\":null,\"extra\":true,\"delta\":{\"content\":\"a\",\"mystery\":[1]}}]}");
    cr_expect_eq (sl_decoder_unknown (dec), 3);
    s_event (dec, "{\"choices\":[],\"usage\":{\"prompt_tokens\":1}}");
    s_event (dec, "{\"choices\":[],\"moderation\":{}}");
    cr_expect_eq (sl_decoder_unknown (dec), 4, "an extra chunk after usage is fine");
    s_event (dec, "[DONE]");
    cr_expect_eq (s_event (dec, "{\"choices\":[{\"delta\":{\"content\":\"late\"}}]}"), 0);
    cr_expect_eq (s_event (dec, "garbage after the end"), 0);
    cr_expect_eq (sl_decoder_unknown (dec), 6);
    cr_expect_null (strstr (sl_buf_cstr (&s_out), "late"));
    sl_decoder_destroy (&dec);
    sl_buf_free (&s_out);
}

Test (sl_dec_openai, unknown_dialect_has_no_decoder)
{
    cr_expect_null (sl_decoder_new (SL_DIALECT_NONE));
    cr_expect_null (sl_decoder_new (77));
    sl_decoder_t *dec = NULL;
    sl_decoder_destroy (&dec);
}
