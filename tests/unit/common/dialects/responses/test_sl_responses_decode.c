/*  Unit tests: common/dialects/responses/sl_responses_decode (through sl_decoder). The
    recorded streams are covered by test_sl_dec_corpus.c; these are the
    cases the recordings do not have. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_decoder.h"

//  "kind:index:flags:id:cid:name:text|sig|body|finish" per line.
static void
s_describe (void *arg, const sl_msg_t *m)
{
    sl_buf_t *out = arg;
    if (m->type == SL_MSG_ERROR) {
        sl_buf_printf (out, "error:%.*s:%.*s:%d\n", (int) m->code.len, m->code.ptr,
                       (int) m->message.len, m->message.ptr, m->status);
        return;
    }
    sl_buf_printf (out, "%s:%d:%u:", sl_delta_kind_name (m->kind), m->index, m->flags);
    sl_buf_append_str (out, m->id);
    sl_buf_putc (out, ':');
    sl_buf_append_str (out, m->call_id);
    sl_buf_putc (out, ':');
    sl_buf_append_str (out, m->name);
    sl_buf_putc (out, ':');
    sl_buf_append_str (out, m->text);
    sl_buf_append_str (out, m->sig);
    sl_buf_append_str (out, m->body);
    sl_buf_append_str (out, m->finish_raw);
    if (m->kind == SL_D_USAGE)
        sl_buf_printf (out, "%lld/%lld", (long long) m->usage.input, (long long) m->usage.output);
    sl_buf_putc (out, '\n');
}

static sl_buf_t s_out;

static int
s_feed (sl_decoder_t *dec, const char *data)
{
    return sl_decoder_event (dec, SL_STR_LIT ("message"), sl_str (data), s_describe, &s_out);
}

static sl_decoder_t *
s_new (void)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_RESPONSES);
    cr_assert_not_null (dec);
    return dec;
}

Test (sl_dec_responses, refusal_and_incomplete_with_reason)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"type\":\"response.created\",\"response\":{\"id\":\"r1\",\"model\":\"m\",\"created_at\":9}}");
    s_feed (dec, "{\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\"}}");
    s_feed (dec, "{\"type\":\"response.refusal.delta\",\"output_index\":0,\"item_id\":\"msg_1\",\"delta\":\"No.\"}");
    s_feed (dec, "{\"type\":\"response.refusal.done\",\"output_index\":0,\"item_id\":\"msg_1\",\"refusal\":\"No.\"}");
    s_feed (dec, "{\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\"}}");
    s_feed (dec, "{\"type\":\"response.incomplete\",\"response\":{\"id\":\"r1\",\"incomplete_details\":"
                 "{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":4,\"output_tokens\":16}}}");
    cr_expect (sl_decoder_done (dec));
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "message:-1:0:r1:::\n"
                      "refusal:0:0:msg_1:::No.\n"
                      "block_stop:0:0::::\n"
                      "usage:-1:0::::4/16\n"
                      "finish:-1:0::::max_output_tokens\n"
                      "done:-1:0::::\n");
    cr_expect_eq (sl_decoder_unknown (dec), 0);
    sl_decoder_destroy (&dec);
}

Test (sl_dec_responses, function_call_arguments_only_in_the_done_item)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"type\":\"function_call\","
                 "\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"\"}}");
    s_feed (dec, "{\"type\":\"response.output_item.done\",\"output_index\":1,\"item\":{\"type\":\"function_call\","
                 "\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"{\\\"x\\\":1}\"}}");
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "tool_call:1:0:fc_1:call_1:f:\n"
                      "tool_call:1:0:fc_1:::{\"x\":1}\n"
                      "block_stop:1:0::::\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_responses, reasoning_text_and_summary_are_kept_apart)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\"}}");
    s_feed (dec, "{\"type\":\"response.reasoning_text.delta\",\"output_index\":0,\"item_id\":\"rs_1\",\"delta\":\"raw\"}");
    s_feed (dec, "{\"type\":\"response.reasoning_summary_text.delta\",\"output_index\":0,\"item_id\":\"rs_1\",\"delta\":\"sum\"}");
    s_feed (dec, "{\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\","
                 "\"encrypted_content\":\"ENC\"}}");
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "thinking:0:0:rs_1:::raw\n"
                      "thinking:0:16:rs_1:::sum\n"
                      "signature:0:0:rs_1:::ENC\n"
                      "block_stop:0:0::::\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_responses, failed_and_flat_error)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"type\":\"response.failed\",\"response\":{\"id\":\"r\",\"error\":{\"code\":\"server_error\","
                 "\"message\":\"oops\"}}}");
    cr_expect_str_eq (sl_buf_cstr (&s_out), "message:-1:0:r:::\nerror:server_error:oops:500\n");
    sl_decoder_destroy (&dec);
    dec = s_new ();
    s_feed (dec, "{\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"slow\",\"param\":null}");
    cr_expect_str_eq (sl_buf_cstr (&s_out), "error:rate_limit_exceeded:slow:0\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_responses, server_tools_and_unknown_items)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_1\"}}");
    s_feed (dec, "{\"type\":\"response.web_search_call.searching\",\"output_index\":0,\"item_id\":\"ws_1\"}");
    s_feed (dec, "{\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_1\","
                 "\"action\":{\"type\":\"search\",\"query\":\"q\"}}}");
    s_feed (dec, "{\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"type\":\"mcp_call\",\"id\":\"m_1\"}}");
    s_feed (dec, "{\"type\":\"response.output_item.done\",\"output_index\":1,\"item\":{\"type\":\"mcp_call\",\"id\":\"m_1\","
                 "\"arguments\":\"{}\",\"output\":\"42\"}}");
    cr_expect_eq (sl_decoder_unknown (dec), 0);
    s_feed (dec, "{\"type\":\"response.output_item.added\",\"output_index\":2,\"item\":{\"type\":\"teleport_call\",\"id\":\"t\"}}");
    s_feed (dec, "{\"type\":\"response.output_item.done\",\"output_index\":2,\"item\":{\"type\":\"teleport_call\",\"id\":\"t\"}}");
    s_feed (dec, "{\"type\":\"response.brand_new\"}");
    cr_expect_eq (sl_decoder_unknown (dec), 3);
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "server_tool_use:0:0:ws_1::web_search:\n"
                      "server_tool_use:0:0:ws_1::web_search:{\"type\":\"search\",\"query\":\"q\"}\n"
                      "block_stop:0:0::::\n"
                      "server_tool_use:1:0:m_1::mcp:\n"
                      "server_tool_use:1:0:m_1::mcp:{}\n"
                      "server_tool_result:1:0:m_1::mcp_call:\"42\"\n"
                      "block_stop:1:0::::\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_responses, end_without_a_terminal_event_is_incomplete)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}");
    sl_decoder_finish (dec, s_describe, &s_out);
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "message:-1:0:r:::\nerror:upstream_incomplete:the upstream ended the stream before it finished:502\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_responses, malformed_events_end_the_stream)
{
    sl_decoder_t *dec = s_new ();
    cr_expect_eq (s_feed (dec, "[1,2]"), -2);
    cr_expect_eq (s_feed (dec, "{\"type\":\"response.output_item.added\",\"item\":{}}"), -2, "no output_index");
    cr_expect_eq (s_feed (dec, "{\"type\":\"response.completed\"}"), -2, "no response");
    cr_expect_eq (s_feed (dec, "{\"type\":\"response.output_text.delta\",\"output_index\":-4,\"delta\":\"x\"}"), -2);
    sl_decoder_destroy (&dec);
    sl_buf_free (&s_out);
}
