/*  Unit tests: common/dialects/bedrock (the Converse request and its
    pairing of tool calls and results, the ConverseStream decoder fed
    through AWS's event stream framing, Claude's body and chunk frames). */
#include <criterion/criterion.h>
#include <sodium.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/cloud/sl_evstream.h"
#include "common/dialects/sl_decoder.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_framing.h"
#include "common/dialects/sl_job.h"
#include "common/dialects/bedrock/sl_bedrock.h"

//  A client's body (OpenAI Chat) prepared for Bedrock Converse: 0, or -1
//  refused (r->error_message says why).
static int
s_converse (int client, const char *body, sl_job_t *r)
{
    cr_assert_eq (sl_dialect_init (NULL), 0);
    memset (r, 0, sizeof *r);
    sl_endpoint_t endpoint = { .dialect = client };
    cr_assert_eq (sl_job_parse (&endpoint, sl_str (body), r), 0, "%s", sl_buf_cstr (&r->error_message));
    return sl_job_translate (r, SL_DIALECT_BEDROCK);
}

#define S_CALL(id) "{\"id\":\"" id "\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"{}\"}}"
#define S_TOOLS ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"read\",\"parameters\":{\"type\":\"object\"}}}]"

Test (sl_bedrock_request, renders_converse)
{
    sl_job_t r;
    cr_assert_eq (s_converse (SL_DIALECT_OPENAI,
                              "{\"model\":\"anthropic.claude-sonnet-4-5-20250929-v1:0\",\"max_tokens\":100,"
                              "\"temperature\":0.5,\"stop\":[\"X\"],\"messages\":[{\"role\":\"system\",\"content\":\"Be brief\"},"
                              "{\"role\":\"user\",\"content\":\"hi\"}]" S_TOOLS ",\"tool_choice\":\"required\"}", &r), 0);
    cr_expect_str_eq (sl_buf_cstr (&r.upstream_body),
                      "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"hi\"}]}],"
                      "\"system\":[{\"text\":\"Be brief\"}],"
                      "\"toolConfig\":{\"tools\":[{\"toolSpec\":{\"name\":\"read\",\"inputSchema\":{\"json\":"
                      "{\"type\":\"object\"}}}}],\"toolChoice\":{\"any\":{}}},"
                      "\"inferenceConfig\":{\"maxTokens\":100,\"temperature\":0.5,\"stopSequences\":[\"X\"]}}");
    sl_job_clear (&r);
}

Test (sl_bedrock_request, pairs_results_in_call_order_and_drops_a_repeat)
{
    sl_job_t r;
    cr_assert_eq (s_converse (SL_DIALECT_OPENAI,
                              "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
                              "{\"role\":\"assistant\",\"tool_calls\":[" S_CALL ("a") "," S_CALL ("b") "]},"
                              "{\"role\":\"tool\",\"tool_call_id\":\"b\",\"content\":\"B\"},"
                              "{\"role\":\"tool\",\"tool_call_id\":\"a\",\"content\":\"A\"},"
                              "{\"role\":\"tool\",\"tool_call_id\":\"a\",\"content\":\"A\"}]" S_TOOLS "}", &r), 0);
    const char *body = sl_buf_cstr (&r.upstream_body);
    const char *a = strstr (body, "{\"toolResult\":{\"toolUseId\":\"a\"");
    const char *b = strstr (body, "{\"toolResult\":{\"toolUseId\":\"b\"");
    cr_assert (a && b && a < b, "results in their calls' order: %s", body);
    cr_expect_null (strstr (a + 1, "{\"toolResult\":{\"toolUseId\":\"a\""), "the repeat is sent once: %s", body);
    bool noted = false;
    for (size_t i = 0; i < r.drop_count; i++)
        noted |= strcmp (r.dropped [i], "a repeated tool result") == 0;
    cr_expect (noted, "the repair is noted");
    sl_job_clear (&r);
}

Test (sl_bedrock_request, refuses_a_call_without_its_result)
{
    sl_job_t r;
    cr_assert_eq (s_converse (SL_DIALECT_OPENAI,
                              "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
                              "{\"role\":\"assistant\",\"tool_calls\":[" S_CALL ("call_1") "," S_CALL ("call_2") "]},"
                              "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"A\"},"
                              "{\"role\":\"user\",\"content\":\"and?\"}]" S_TOOLS "}", &r), -1);
    cr_expect_eq (r.status, 400);
    cr_expect (strstr (sl_buf_cstr (&r.error_message), "'call_2' has no tool result"), "%s",
               sl_buf_cstr (&r.error_message));
    sl_job_clear (&r);
}

Test (sl_bedrock_request, refuses_a_result_without_its_call)
{
    sl_job_t r;
    cr_assert_eq (s_converse (SL_DIALECT_ANTHROPIC,
                              "{\"model\":\"m\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
                              "{\"role\":\"assistant\",\"content\":\"ok\"},"
                              "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_9\","
                              "\"content\":\"x\"}]}]}", &r), -1);
    cr_expect_eq (r.status, 400);
    cr_expect (strstr (sl_buf_cstr (&r.error_message), "'toolu_9' has a tool result but no tool call"), "%s",
               sl_buf_cstr (&r.error_message));
    sl_job_clear (&r);
}

Test (sl_bedrock_request, refuses_two_different_results)
{
    sl_job_t r;
    cr_assert_eq (s_converse (SL_DIALECT_OPENAI,
                              "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
                              "{\"role\":\"assistant\",\"tool_calls\":[" S_CALL ("a") "]},"
                              "{\"role\":\"tool\",\"tool_call_id\":\"a\",\"content\":\"A\"},"
                              "{\"role\":\"tool\",\"tool_call_id\":\"a\",\"content\":\"Z\"}]" S_TOOLS "}", &r), -1);
    cr_expect (strstr (sl_buf_cstr (&r.error_message), "'a' has two different tool results"), "%s",
               sl_buf_cstr (&r.error_message));
    sl_job_clear (&r);
}

Test (sl_bedrock_request, tool_ids_made_to_fit_alike_in_call_and_result)
{
    char a [SL_BEDROCK_ID_MAX + 1], b [SL_BEDROCK_ID_MAX + 1], c [SL_BEDROCK_ID_MAX + 1];
    sl_bedrock_tool_id (SL_STR_LIT ("call.1:x"), a);
    cr_expect_str_eq (a, "call_1_x");
    char long_id [100];
    memset (long_id, 'q', sizeof long_id);
    sl_bedrock_tool_id (sl_str_n (long_id, 99), b);
    long_id [98] = 'r';
    sl_bedrock_tool_id (sl_str_n (long_id, 99), c);
    cr_expect_eq (strlen (b), SL_BEDROCK_ID_MAX);
    cr_expect_str_neq (b, c, "two long ids stay two");
}

//  --------------------------------------------------------------------------
//  The stream

static void
s_describe (void *arg, const sl_msg_t *m)
{
    sl_buf_t *out = arg;
    if (m->type == SL_MSG_ERROR) {
        sl_buf_printf (out, "error:%.*s:%.*s:%d\n", (int) m->code.len, m->code.ptr, (int) m->message.len,
                       m->message.ptr, m->status);
        return;
    }
    sl_buf_printf (out, "%s:%d:", sl_delta_kind_name (m->kind), m->index);
    sl_buf_append_str (out, m->id);
    sl_buf_putc (out, ':');
    sl_buf_append_str (out, m->name);
    sl_buf_putc (out, ':');
    sl_buf_append_str (out, m->text);
    sl_buf_append_str (out, m->sig);
    sl_buf_append_str (out, m->finish_raw);
    if (m->kind == SL_D_USAGE)
        sl_buf_printf (out, "%lld/%lld/%lld/%lld", (long long) m->usage.input, (long long) m->usage.output,
                       (long long) m->usage.cache_read, (long long) m->usage.cache_write);
    sl_buf_putc (out, '\n');
}

typedef struct {
    sl_decoder_t *dec;
    sl_buf_t out;
} s_sink_t;

static int
s_on_event (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) id;
    s_sink_t *sink = arg;
    return sl_decoder_event (sink->dec, type, data, s_describe, &sink->out);
}

//  Decode a body fed in pieces of at most step bytes; the framing's or
//  the decoder's failure in *why. 0, or -1.
static int
s_decode (int dialect, sl_str_t body, size_t step, sl_buf_t *out, const char **why)
{
    cr_assert_eq (sl_dialect_init (NULL), 0);
    s_sink_t sink = { .dec = sl_decoder_new (dialect) };
    cr_assert_not_null (sink.dec);
    sl_framing_t *frames = sl_framing_new (sl_dialect_get (dialect)->framing, 0);
    int rc = 0;
    for (size_t at = 0; at < body.len && rc == 0; at += step)
        rc = sl_framing_feed (frames, body.ptr + at, body.len - at < step ? body.len - at : step, s_on_event, &sink);
    if (rc == 0)
        rc = sl_framing_finish (frames, s_on_event, &sink);
    if (rc == 0)
        sl_decoder_finish (sink.dec, s_describe, &sink.out);
    *why = rc == 0 ? "" : *sl_framing_error (frames) ? sl_framing_error (frames) : sl_decoder_error (sink.dec);
    sl_buf_append_str (out, sl_buf_str (&sink.out));
    sl_buf_free (&sink.out);
    sl_framing_destroy (&frames);
    sl_decoder_destroy (&sink.dec);
    return rc ? -1 : 0;
}

static void
s_event (sl_buf_t *body, const char *type, const char *payload)
{
    cr_assert_eq (sl_evstream_encode_event (body, type, sl_str (payload)), 0);
}

static void
s_converse_stream (sl_buf_t *b)
{
    s_event (b, "messageStart", "{\"p\":\"abc\",\"role\":\"assistant\"}");
    s_event (b, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"reasoningContent\":{\"text\":\"hmm\"}}}");
    s_event (b, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"reasoningContent\":{\"signature\":\"sig\"}}}");
    s_event (b, "contentBlockStop", "{\"contentBlockIndex\":0}");
    s_event (b, "contentBlockDelta", "{\"contentBlockIndex\":1,\"delta\":{\"text\":\"Hi \\u00e9\"},\"p\":\"xy\"}");
    s_event (b, "contentBlockStop", "{\"contentBlockIndex\":1}");
    s_event (b, "contentBlockStart", "{\"contentBlockIndex\":2,\"start\":{\"toolUse\":{\"toolUseId\":\"tooluse_1\","
                                     "\"name\":\"read\"}}}");
    s_event (b, "contentBlockDelta", "{\"contentBlockIndex\":2,\"delta\":{\"toolUse\":{\"input\":\"{\\\"a\\\":\"}}}");
    s_event (b, "contentBlockDelta", "{\"contentBlockIndex\":2,\"delta\":{\"toolUse\":{\"input\":\"1}\"}}}");
    s_event (b, "contentBlockStop", "{\"contentBlockIndex\":2}");
    s_event (b, "messageStop", "{\"stopReason\":\"tool_use\"}");
    s_event (b, "metadata", "{\"usage\":{\"inputTokens\":7,\"outputTokens\":9,\"totalTokens\":16,"
                            "\"cacheReadInputTokens\":3,\"cacheWriteInputTokens\":2},\"metrics\":{\"latencyMs\":5}}");
}

static const char s_converse_expected [] =
    "message:-1:::\n"
    "thinking:0:::hmm\n"
    "signature:0:::sig\n"
    "block_stop:0:::\n"
    "text:1:::Hi \xc3\xa9\n"
    "block_stop:1:::\n"
    "tool_call:2:tooluse_1:read:\n"
    "tool_call:2:::{\"a\":\n"
    "tool_call:2:::1}\n"
    "block_stop:2:::\n"
    "usage:-1:::7/9/3/2\n"
    "finish:-1:::tool_use\n"
    "done:-1:::\n";

Test (sl_bedrock_decode, converse_stream_split_at_every_byte)
{
    sl_buf_t body = { 0 };
    s_converse_stream (&body);
    for (size_t step = 1; step <= body.len; step += step < 64 ? 1 : 97) {
        sl_buf_t out = { 0 };
        const char *why;
        cr_assert_eq (s_decode (SL_DIALECT_BEDROCK, sl_buf_str (&body), step, &out, &why), 0, "step %zu: %s",
                      step, why);
        cr_assert_str_eq (sl_buf_cstr (&out), s_converse_expected, "step %zu: %s", step, sl_buf_cstr (&out));
        sl_buf_free (&out);
    }
    sl_buf_free (&body);
}

Test (sl_bedrock_decode, bad_crc_is_a_clean_error)
{
    sl_buf_t body = { 0 }, out = { 0 };
    s_converse_stream (&body);
    body.data [body.len - 1] ^= 0x5a;   //  the last message's CRC
    const char *why;
    cr_expect_eq (s_decode (SL_DIALECT_BEDROCK, sl_buf_str (&body), 7, &out, &why), -1);
    cr_expect (strstr (why, "CRC"), "%s", why);
    cr_expect_null (strstr (sl_buf_cstr (&out), "done:"), "no clean end: %s", sl_buf_cstr (&out));
    sl_buf_free (&body);
    sl_buf_free (&out);
}

Test (sl_bedrock_decode, truncated_stream_is_an_error)
{
    sl_buf_t body = { 0 }, out = { 0 };
    s_converse_stream (&body);
    const char *why;
    cr_expect_eq (s_decode (SL_DIALECT_BEDROCK, sl_str_n (body.data, body.len - 5), 5, &out, &why), -1);
    cr_expect (strstr (why, "ended inside a message"), "%s", why);
    sl_buf_free (&body);
    sl_buf_free (&out);
}

Test (sl_bedrock_decode, exceptions_have_their_status)
{
    static const struct { const char *type; int status; } cases [] = {
        { "throttlingException", 429 }, { "serviceUnavailableException", 503 },
        { "internalServerException", 500 }, { "modelStreamErrorException", 502 },
        { "validationException", 400 }, { "someNewException", 502 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_buf_t body = { 0 }, out = { 0 }, want = { 0 };
        cr_assert_eq (sl_evstream_encode_exception (&body, cases [i].type, SL_STR_LIT ("{\"message\":\"slow down\"}")),
                      0);
        const char *why;
        cr_expect_eq (s_decode (SL_DIALECT_BEDROCK, sl_buf_str (&body), 3, &out, &why), 0, "%s", why);
        sl_buf_printf (&want, "error:%s:slow down:%d\n", cases [i].type, cases [i].status);
        cr_expect_str_eq (sl_buf_cstr (&out), sl_buf_cstr (&want));
        sl_buf_free (&body);
        sl_buf_free (&out);
        sl_buf_free (&want);
    }
}

Test (sl_bedrock_decode, finish_without_metadata_still_ends)
{
    sl_buf_t body = { 0 }, out = { 0 };
    s_event (&body, "messageStart", "{\"role\":\"assistant\"}");
    s_event (&body, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"x\"}}");
    s_event (&body, "messageStop", "{\"stopReason\":\"guardrail_intervened\"}");
    const char *why;
    cr_expect_eq (s_decode (SL_DIALECT_BEDROCK, sl_buf_str (&body), 1000, &out, &why), 0);
    cr_expect_str_eq (sl_buf_cstr (&out), "message:-1:::\ntext:0:::x\nfinish:-1:::guardrail_intervened\ndone:-1:::\n");
    cr_expect_eq (sl_dialect_finish (SL_DIALECT_BEDROCK, SL_STR_LIT ("guardrail_intervened")), SL_FIN_CONTENT_FILTER);
    sl_buf_free (&body);
    sl_buf_free (&out);
}

//  --------------------------------------------------------------------------
//  Claude on Bedrock

static void
s_chunk (sl_buf_t *b, const char *event)
{
    char b64 [1024];
    sodium_bin2base64 (b64, sizeof b64, (const unsigned char *) event, strlen (event), sodium_base64_VARIANT_ORIGINAL);
    sl_buf_t payload = { 0 };
    sl_buf_printf (&payload, "{\"bytes\":\"%s\",\"p\":\"abcd\"}", b64);
    s_event (b, "chunk", sl_buf_cstr (&payload));
    sl_buf_free (&payload);
}

Test (sl_bedrock_anthropic, chunks_decode_as_anthropic_events_split_anywhere)
{
    sl_buf_t body = { 0 };
    s_chunk (&body, "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_bdrk_1\",\"model\":\"claude\","
                    "\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}");
    s_chunk (&body, "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}");
    s_chunk (&body, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hey\"}}");
    s_chunk (&body, "{\"type\":\"content_block_stop\",\"index\":0}");
    s_chunk (&body, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}");
    s_chunk (&body, "{\"type\":\"message_stop\",\"amazon-bedrock-invocationMetrics\":{\"inputTokenCount\":4,"
                    "\"outputTokenCount\":3}}");
    for (size_t step = 1; step <= body.len; step += step < 40 ? 1 : 61) {
        sl_buf_t out = { 0 };
        const char *why;
        cr_assert_eq (s_decode (SL_DIALECT_BEDROCK_ANTHROPIC, sl_buf_str (&body), step, &out, &why), 0, "%s", why);
        cr_assert_str_eq (sl_buf_cstr (&out), "message:-1:msg_bdrk_1::\nusage:-1:::4/1/-1/-1\ntext:0:::Hey\n"
                                              "block_stop:0:::\nusage:-1:::-1/3/-1/-1\nfinish:-1:::end_turn\ndone:-1:::\n",
                          "step %zu: %s", step, sl_buf_cstr (&out));
        sl_buf_free (&out);
    }
    sl_buf_free (&body);
}

Test (sl_bedrock_anthropic, chunk_that_is_not_base64_fails)
{
    sl_buf_t body = { 0 }, out = { 0 };
    s_event (&body, "chunk", "{\"bytes\":\"!!!not base64\"}");
    const char *why;
    cr_expect_eq (s_decode (SL_DIALECT_BEDROCK_ANTHROPIC, sl_buf_str (&body), 100, &out, &why), -1);
    cr_expect_str_eq (why, "chunk bytes are not base64");
    sl_buf_free (&body);
    sl_buf_free (&out);
}

Test (sl_bedrock_anthropic, chunk_bytes_with_json_escapes_decode_the_same)
{
    //  A JSON writer may escape "/" as "\/" and any character as \uXXXX:
    //  the base64 is the string's value, not its bytes as sent.
    const char *event = "{\"type\":\"content_block_delta\",\"index\":0,"
                        "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hey ? ? ? > > >\"}}";
    char b64 [1024];
    sodium_bin2base64 (b64, sizeof b64, (const unsigned char *) event, strlen (event), sodium_base64_VARIANT_ORIGINAL);
    cr_assert (strchr (b64, '/') && strchr (b64, '+'), "the base64 has characters to escape: %s", b64);
    sl_buf_t payload = { 0 }, body = { 0 }, out = { 0 };
    sl_buf_puts (&payload, "{\"bytes\":\"");
    for (const char *c = b64; *c; c++)
        if (*c == '/')
            sl_buf_puts (&payload, "\\/");
        else
        if (*c == '+')
            sl_buf_puts (&payload, "\\u002B");
        else
            sl_buf_putc (&payload, *c);
    sl_buf_puts (&payload, "\"}");
    s_event (&body, "chunk", sl_buf_cstr (&payload));
    //  The same chunk with its members spaced and in another order.
    sl_buf_reset (&payload);
    sl_buf_printf (&payload, "{ \"p\" : \"abc\", \"bytes\" : \"%s\" }", b64);
    s_event (&body, "chunk", sl_buf_cstr (&payload));
    s_event (&body, "chunk", "{\"bytes\":12}");
    const char *why;
    cr_expect_eq (s_decode (SL_DIALECT_BEDROCK_ANTHROPIC, sl_buf_str (&body), 100, &out, &why), -1);
    cr_expect_str_eq (sl_buf_cstr (&out), "text:0:::Hey ? ? ? > > >\ntext:0:::Hey ? ? ? > > >\n");
    cr_expect_str_eq (why, "chunk without its bytes", "a number is no base64 string");
    sl_buf_free (&payload);
    sl_buf_free (&body);
    sl_buf_free (&out);
}

Test (sl_bedrock_anthropic, forward_drops_model_and_stream_and_says_the_version)
{
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_bedrock_anthropic_forward (SL_STR_LIT ("{\"model\":\"claude\",\"max_tokens\":5,\"stream\":true,"
                                                            "\"thinking\":{\"type\":\"adaptive\"},\"messages\":[]}"),
                                                NULL, &out), 0);
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"max_tokens\":5,\"thinking\":{\"type\":\"adaptive\"},\"messages\":[],"
                                          "\"anthropic_version\":\"bedrock-2023-05-31\"}");
    sl_buf_free (&out);
}

Test (sl_bedrock, url_encodes_the_model_once)
{
    cr_assert_eq (sl_dialect_init (NULL), 0);
    sl_provider_t p = { .name = "east", .dialect = SL_DIALECT_BEDROCK, .region = "us-east-1" };
    sl_buf_t url = { 0 }, why = { 0 };
    cr_assert_eq (sl_dialect_url (sl_dialect_get (SL_DIALECT_BEDROCK), &p,
                                  SL_STR_LIT ("anthropic.claude-sonnet-4-5-20250929-v1:0"), &url, &why), 0);
    cr_expect_str_eq (sl_buf_cstr (&url), "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
                                          "anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream");
    sl_buf_reset (&url);
    p.base_url = "http://127.0.0.1:9";
    cr_assert_eq (sl_dialect_url (sl_dialect_get (SL_DIALECT_BEDROCK_ANTHROPIC), &p,
                                  SL_STR_LIT ("arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.x"), &url,
                                  &why), 0);
    cr_expect_str_eq (sl_buf_cstr (&url), "http://127.0.0.1:9/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3A"
                                          "inference-profile%2Fus.anthropic.x/invoke-with-response-stream");
    sl_buf_free (&url);
    sl_buf_free (&why);
}

//  A client's anthropic-beta header goes in the body's anthropic_beta
//  array for Claude on Bedrock: each name once, the body's own kept, the
//  rest of the body byte for byte; never as a header.
Test (sl_bedrock_anthropic, the_beta_header_folded_into_the_body)
{
    const sl_dialect_t *d = sl_dialect_get (SL_DIALECT_BEDROCK_ANTHROPIC);
    cr_assert_not_null (d->fold);
    cr_expect_null (d->passthrough, "no header of the client's goes as sent");
    sl_buf_t out = { 0 };
    const char *body = "{\"max_tokens\":5,\"messages\":[]}";
    cr_assert_eq (d->fold (sl_str (body), SL_STR_LIT ("anthropic-beta: context-1m-2025-08-07 , "
                                                      "interleaved-thinking-2025-05-14\n"), &out), 0);
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"max_tokens\":5,\"messages\":[],\"anthropic_beta\":"
                                          "[\"context-1m-2025-08-07\",\"interleaved-thinking-2025-05-14\"]}");
    sl_buf_reset (&out);
#define A "claude-code-20250219"
#define B "effort-2025-11-24"
#define C "context-management-2025-06-27"
    body = "{\"anthropic_beta\":[\"" A "\"],\"max_tokens\":5}";
    cr_assert_eq (d->fold (sl_str (body), SL_STR_LIT ("Anthropic-Beta: " A "," B "\nanthropic-beta: " B "," C "\n"),
                           &out), 0);
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"anthropic_beta\":[\"" A "\",\"" B "\",\"" C "\"],\"max_tokens\":5}",
                      "the body's own first, each name once");
    sl_buf_reset (&out);
    cr_expect_eq (d->fold (sl_str (body), SL_STR_LIT ("anthropic-beta: " A "\n"), &out), 1, "nothing new");
    cr_expect_eq (d->fold (sl_str (body), SL_STR_LIT ("x-other: " A "\n"), &out), 1, "no beta header");
    cr_expect_eq (d->fold (SL_STR_LIT ("[1]"), SL_STR_LIT ("anthropic-beta: " A "\n"), &out), -1);
    sl_buf_free (&out);
}

//  Bedrock refuses a request with a beta feature it does not take: what
//  Claude Code sends for Anthropic's API only is left out of the body's
//  array, and tool search goes under Bedrock's name for it (once, however
//  the client named it).
Test (sl_bedrock_anthropic, only_the_betas_bedrock_takes)
{
    const sl_dialect_t *d = sl_dialect_get (SL_DIALECT_BEDROCK_ANTHROPIC);
    sl_buf_t out = { 0 };
    const char *body = "{\"max_tokens\":5}";
    cr_assert_eq (d->fold (sl_str (body), SL_STR_LIT ("anthropic-beta: " A ",thinking-token-count-2026-05-13,"
                                                      "mid-conversation-tool-changes-2026-07-01,"
                                                      "advanced-tool-use-2025-11-20," B
                                                      ",tool-search-tool-2025-10-19\n"), &out), 0);
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"max_tokens\":5,\"anthropic_beta\":[\"" A "\","
                                          "\"tool-search-tool-2025-10-19\",\"" B "\"]}");
    sl_buf_reset (&out);
    cr_expect_eq (d->fold (sl_str (body), SL_STR_LIT ("anthropic-beta: prompt-caching-scope-2026-01-05\n"), &out), 1,
                  "none taken: the body as it was");
    sl_buf_free (&out);
}
#undef A
#undef B
#undef C
