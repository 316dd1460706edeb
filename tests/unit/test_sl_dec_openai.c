/*  Unit tests: services/ingest/sl_dec_openai (through sl_decoder). */
#include <criterion/criterion.h>
#include <string.h>

#include "../../common/sl_buf.h"
#include "../../services/ingest/sl_decoder.h"

//  Deltas described compactly: "kind:index:id:name:text" per line.
static void
s_describe (void *arg, const sl_msg_t *m)
{
    sl_buf_t *out = arg;
    if (m->type == SL_MSG_ERROR) {
        sl_buf_printf (out, "error:%.*s:%.*s\n", (int) m->code.len, m->code.ptr,
                       (int) m->message.len, m->message.ptr);
        return;
    }
    sl_buf_printf (out, "%s:%d:", sl_delta_kind_name (m->kind), m->index);
    sl_buf_append_str (out, m->id);
    sl_buf_putc (out, ':');
    sl_buf_append_str (out, m->name);
    sl_buf_putc (out, ':');
    sl_buf_append_str (out, m->kind == SL_D_FINISH ? m->finish_raw : m->text);
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
    sl_decoder_destroy (&dec);
}

Test (sl_dec_openai, error_chunk_and_malformed_json)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_OPENAI);
    cr_expect_eq (s_event (dec, "{\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}"), 0);
    cr_expect_str_eq (sl_buf_cstr (&s_out), "error:server_error:boom\n");
    cr_expect (sl_decoder_done (dec));
    sl_decoder_destroy (&dec);

    dec = sl_decoder_new (SL_DIALECT_OPENAI);
    cr_expect_eq (s_event (dec, "{\"choices\":[{\"delta\":{\"content\":\"x\"}"), -2);
    cr_expect_eq (s_event (dec, "not json"), -2);
    cr_expect_eq (s_event (dec, "{\"choices\":[{\"delta\":{\"content\":5}}]}"), -2);
    cr_expect_neq (strlen (sl_decoder_error (dec)), 0);
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
                      "text:-1:::cut\nerror:upstream_incomplete:the upstream ended the stream before it finished\n");
    sl_decoder_destroy (&dec);
    sl_buf_free (&s_out);
}

Test (sl_dec_openai, unknown_dialect_has_no_decoder)
{
    cr_expect_null (sl_decoder_new (SL_DIALECT_NONE));
    cr_expect_null (sl_decoder_new (77));
}
