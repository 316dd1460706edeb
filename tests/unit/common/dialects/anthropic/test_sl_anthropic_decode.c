/*  Unit tests: common/dialects/anthropic/sl_anthropic_decode (through sl_decoder). The
    recorded streams are covered by test_sl_dec_corpus.c; these are the
    cases the recordings do not have. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_decoder.h"

//  "kind:index:id:name:text|sig|body|finish" per line.
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
    sl_buf_append_str (out, m->text);
    sl_buf_append_str (out, m->sig);
    sl_buf_append_str (out, m->body);
    sl_buf_append_str (out, m->finish_raw);
    if (m->stop_seq.ptr)
        sl_buf_printf (out, "/%.*s", (int) m->stop_seq.len, m->stop_seq.ptr);
    if (m->kind == SL_D_USAGE)
        sl_buf_printf (out, "%lld/%lld/%lld/%lld", (long long) m->usage.input,
                       (long long) m->usage.output, (long long) m->usage.cache_read,
                       (long long) m->usage.cache_write);
    sl_buf_putc (out, '\n');
}

static sl_buf_t s_out;

//  Feed events given as data only (the type is read from the data).
static int
s_feed (sl_decoder_t *dec, const char *data)
{
    return sl_decoder_event (dec, SL_STR_LIT ("message"), sl_str (data), s_describe, &s_out);
}

static sl_decoder_t *
s_new (void)
{
    sl_buf_reset (&s_out);
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_ANTHROPIC);
    cr_assert_not_null (dec);
    return dec;
}

Test (sl_dec_anthropic, overloaded_error_mid_stream)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"c\",\"usage\":"
                 "{\"input_tokens\":5,\"output_tokens\":1,\"cache_read_input_tokens\":2,"
                 "\"cache_creation_input_tokens\":3}}}");
    s_feed (dec, "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}");
    s_feed (dec, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}");
    cr_expect_eq (sl_decoder_event (dec, SL_STR_LIT ("error"),
                  SL_STR_LIT ("{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"),
                  s_describe, &s_out), 0);
    cr_expect (sl_decoder_done (dec));
    cr_expect_eq (sl_decoder_finish (dec, s_describe, &s_out), 0, "nothing more after the error");
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "message:-1:msg_1::\n"
                      "usage:-1:::5/1/2/3\n"
                      "text:0:::Hi\n"
                      "error:overloaded_error:Overloaded:529\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_anthropic, tool_input_from_start_when_no_delta_carries_it)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\","
                 "\"id\":\"t1\",\"name\":\"f\",\"input\":{\"preset\": true}}}");
    s_feed (dec, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}");
    s_feed (dec, "{\"type\":\"content_block_stop\",\"index\":0}");
    s_feed (dec, "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\","
                 "\"id\":\"t2\",\"name\":\"g\",\"input\":{}}}");
    s_feed (dec, "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}");
    s_feed (dec, "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"1}\"}}");
    s_feed (dec, "{\"type\":\"content_block_stop\",\"index\":1}");
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "tool_call:0:t1:f:\ntool_call:0:::{\"preset\": true}\nblock_stop:0:::\n"
                      "tool_call:1:t2:g:\ntool_call:1:::{\"a\":\ntool_call:1:::1}\nblock_stop:1:::\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_anthropic, citations_in_start_and_as_deltas)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"pre\","
                 "\"citations\":[{\"type\":\"char_location\",\"cited_text\":\"x\"}]}}");
    s_feed (dec, "{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"citations_delta\","
                 "\"citation\":{\"type\":\"page_location\"}}}");
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "text:2:::pre\ncitation:2:::{\"type\":\"char_location\",\"cited_text\":\"x\"}\n"
                      "citation:2:::{\"type\":\"page_location\"}\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_anthropic, stop_reason_and_sequence_then_finish_without_message_stop)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"stop_sequence\",\"stop_sequence\":\"END\"},"
                 "\"usage\":{\"output_tokens\":9}}");
    cr_expect_not (sl_decoder_done (dec));
    sl_decoder_finish (dec, s_describe, &s_out);
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "usage:-1:::-1/9/-1/-1\nfinish:-1:::stop_sequence/END\ndone:-1:::\n");
    sl_decoder_destroy (&dec);
    dec = s_new ();
    s_feed (dec, "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}");
    sl_decoder_finish (dec, s_describe, &s_out);
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "error:upstream_incomplete:the upstream ended the stream before it finished:502\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_anthropic, event_name_used_when_data_has_no_type)
{
    sl_decoder_t *dec = s_new ();
    sl_decoder_event (dec, SL_STR_LIT ("message_stop"), SL_STR_LIT ("{}"), s_describe, &s_out);
    cr_expect_str_eq (sl_buf_cstr (&s_out), "done:-1:::\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_anthropic, unknown_types_and_blocks_are_counted_and_skipped)
{
    sl_decoder_t *dec = s_new ();
    cr_expect_eq (s_feed (dec, "{\"type\":\"brand_new_event\",\"x\":1}"), 0);
    cr_expect_eq (s_feed (dec, "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"hologram\"}}"), 0);
    cr_expect_eq (s_feed (dec, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}"), 0);
    cr_expect_eq (s_feed (dec, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"hologram_delta\"}}"), 0);
    cr_expect_eq (s_feed (dec, "{\"type\":\"content_block_start\",\"index\":99999,\"content_block\":{\"type\":\"text\"}}"), 0);
    cr_expect_eq (sl_decoder_unknown (dec), 5);
    cr_expect_eq (s_feed (dec, "{\"type\":\"ping\"}"), 0);
    cr_expect_eq (sl_decoder_unknown (dec), 5, "ping is known");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_anthropic, malformed_events_end_the_stream)
{
    sl_decoder_t *dec = s_new ();
    cr_expect_eq (s_feed (dec, "not json"), -2);
    cr_expect_eq (s_feed (dec, "{\"type\":\"content_block_delta\",\"delta\":{}}"), -2, "no index");
    cr_expect_eq (s_feed (dec, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":7}}"), -2);
    cr_expect_eq (s_feed (dec, "{\"type\":\"content_block_start\",\"index\":\"0\",\"content_block\":{}}"), -2);
    cr_expect_neq (strlen (sl_decoder_error (dec)), 0);
    sl_decoder_destroy (&dec);
    sl_buf_free (&s_out);
}
