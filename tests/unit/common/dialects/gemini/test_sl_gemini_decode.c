/*  Unit tests: common/dialects/gemini/sl_gemini_decode (through sl_decoder). The
    recorded streams are covered by test_sl_dec_corpus.c; these are the
    cases the recordings do not have. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
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
    if (m->kind == SL_D_USAGE)
        sl_buf_printf (out, "%lld/%lld/%lld/%lld", (long long) m->usage.input,
                       (long long) m->usage.output, (long long) m->usage.total,
                       (long long) m->usage.reasoning);
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
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_GEMINI);
    cr_assert_not_null (dec);
    return dec;
}

Test (sl_dec_gemini, usage_and_finish_are_held_to_the_end)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"A\"}]},\"finishReason\":\"STOP\"}],"
                 "\"usageMetadata\":{\"promptTokenCount\":3,\"candidatesTokenCount\":1,\"totalTokenCount\":4},"
                 "\"modelVersion\":\"g\",\"responseId\":\"r\"}");
    s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"B\",\"thoughtSignature\":\"S\"}]},"
                 "\"finishReason\":\"MAX_TOKENS\"}],\"usageMetadata\":{\"promptTokenCount\":3,"
                 "\"candidatesTokenCount\":2,\"totalTokenCount\":9,\"thoughtsTokenCount\":4}}");
    cr_expect_str_eq (sl_buf_cstr (&s_out), "message:-1:r::\ntext:0:::A\ntext:0:::B\nsignature:0:::S\n");
    cr_expect_not (sl_decoder_done (dec));
    sl_decoder_finish (dec, s_describe, &s_out);
    cr_expect (sl_decoder_done (dec));
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "message:-1:r::\ntext:0:::A\ntext:0:::B\nsignature:0:::S\n"
                      "usage:-1:::3/6/9/4\nfinish:-1:::MAX_TOKENS\ndone:-1:::\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_gemini, no_finish_reason_is_incomplete)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"A\"}]}}]}");
    sl_decoder_finish (dec, s_describe, &s_out);
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "text:0:::A\nerror:upstream_incomplete:the upstream ended the stream before it finished:502\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_gemini, whole_calls_with_ids_and_thoughts)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"plan\",\"thought\":true},"
                 "{\"functionCall\":{\"id\":\"c1\",\"name\":\"f\",\"args\":{\"a\":[1,2]}},\"thoughtSignature\":\"SIG\"},"
                 "{\"functionCall\":{\"name\":\"g\"}}]},\"finishReason\":\"STOP\"}]}");
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "thinking:0:::plan\ntool_call:1:c1:f:{\"a\":[1,2]}SIG\ntool_call:2::g:{}\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_gemini, streamed_partial_args_of_every_type)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"book\",\"willContinue\":true}}]}}]}");
    s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"partialArgs\":["
                 "{\"jsonPath\":\"$.who.name\",\"stringValue\":\"A \\\"q\",\"willContinue\":true}],\"willContinue\":true}}]}}]}");
    s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"partialArgs\":["
                 "{\"jsonPath\":\"$.who.name\",\"stringValue\":\"x\"},{\"jsonPath\":\"$.who.age\",\"numberValue\":41},"
                 "{\"jsonPath\":\"$.seats[0]\",\"boolValue\":true},{\"jsonPath\":\"$.seats[1]\",\"nullValue\":\"NULL_VALUE\"}],"
                 "\"willContinue\":true}}]}}]}");
    s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{}}]},\"finishReason\":\"STOP\"}]}");
    //  The fragments, concatenated, are the arguments.
    const char *text = sl_buf_cstr (&s_out);
    cr_expect_str_eq (text,
                      "tool_call:0::book:\n"
                      "tool_call:0:::{\"who\":{\"name\":\"A \\\"q\n"
                      "tool_call:0:::x\",\"age\":41},\"seats\":[true,null\n"
                      "tool_call:0:::]}\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_gemini, an_open_call_is_closed_by_a_new_call_or_the_end)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"a\",\"willContinue\":true}}]}}]}");
    s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"partialArgs\":"
                 "[{\"jsonPath\":\"$.k\",\"stringValue\":\"v\",\"willContinue\":true}],\"willContinue\":true}}]}}]}");
    s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"b\",\"willContinue\":true}}]},"
                 "\"finishReason\":\"STOP\"}]}");
    sl_decoder_finish (dec, s_describe, &s_out);
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "tool_call:0::a:\ntool_call:0:::{\"k\":\"v\ntool_call:0:::\"}\n"
                      "tool_call:0::b:\ntool_call:0:::{}\nfinish:-1:::STOP\ndone:-1:::\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_gemini, prompt_blocked_and_other_candidates)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"candidates\":[{\"index\":1,\"content\":{\"parts\":[{\"text\":\"other\"}]}}],"
                 "\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\"}}");
    sl_decoder_finish (dec, s_describe, &s_out);
    cr_expect_str_eq (sl_buf_cstr (&s_out), "finish:-1:::PROHIBITED_CONTENT\ndone:-1:::\n");
    cr_expect_eq (sl_decoder_unknown (dec), 1, "candidate 1 skipped");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_gemini, error_object_as_data_or_trailer)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"error\":{\"code\":429,\"message\":\"quota\",\"status\":\"RESOURCE_EXHAUSTED\"}}");
    cr_expect_str_eq (sl_buf_cstr (&s_out), "error:RESOURCE_EXHAUSTED:quota:429\n");
    sl_decoder_destroy (&dec);
    dec = s_new ();
    sl_decoder_event (dec, SL_STR_LIT ("error"), SL_STR_LIT ("{\"message\":\"odd\"}"), s_describe, &s_out);
    cr_expect_str_eq (sl_buf_cstr (&s_out), "error:upstream_error:odd:0\n");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_gemini, unknown_parts_and_fields_counted)
{
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"AA\"}},"
                 "{\"functionCall\":{\"partialArgs\":[]}}]}}],\"novelty\":1}");
    cr_expect_eq (sl_decoder_unknown (dec), 3);
    cr_expect_str_eq (sl_buf_cstr (&s_out), "");
    sl_decoder_destroy (&dec);
}

Test (sl_dec_gemini, malformed_chunks_end_the_stream)
{
    sl_decoder_t *dec = s_new ();
    cr_expect_eq (s_feed (dec, "\"text\""), -2);
    cr_expect_eq (s_feed (dec, "{\"candidates\":{}}"), -2);
    cr_expect_eq (s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":1}]}}]}"), -2);
    sl_decoder_destroy (&dec);
    sl_buf_free (&s_out);
}

Test (sl_dec_gemini, one_citation_per_source_and_no_empty_metadata)
{
    //  A grounded answer carries "groundingMetadata": {} on every chunk
    //  until the real one: nothing to cite. Citation metadata holds a list
    //  of sources (citationSources; citations on Vertex): one citation each.
    sl_decoder_t *dec = s_new ();
    s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"A\"}]},\"groundingMetadata\":{},"
                 "\"citationMetadata\":{ }}]}");
    s_feed (dec, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"B\"}]},\"citationMetadata\":"
                 "{\"citationSources\":[{\"uri\":\"u1\"}, {\"uri\":\"u2\"}]}}]}");
    s_feed (dec, "{\"candidates\":[{\"citationMetadata\":{\"citations\":[{\"uri\":\"v1\"}]},"
                 "\"groundingMetadata\":{\"webSearchQueries\":[\"q\"]}}]}");
    s_feed (dec, "{\"candidates\":[{\"citationMetadata\":{\"other\":1}}]}");
    cr_expect_str_eq (sl_buf_cstr (&s_out),
                      "text:0:::A\ntext:0:::B\n"
                      "citation:-1:::{\"uri\":\"u1\"}\ncitation:-1:::{\"uri\":\"u2\"}\n"
                      "citation:-1:::{\"uri\":\"v1\"}\ncitation:-1:::{\"webSearchQueries\":[\"q\"]}\n"
                      "citation:-1:::{\"other\":1}\n");
    cr_expect_eq (s_feed (dec, "{\"candidates\":[{\"citationMetadata\":{\"citationSources\":[{\"uri\":}]}}]}"),
                  -2, "a malformed source list is malformed input");
    sl_decoder_destroy (&dec);
}
