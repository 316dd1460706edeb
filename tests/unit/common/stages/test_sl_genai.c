/*  Unit tests: common/stages/sl_genai (stream and guardrail spans). The
    spans are read through sl_span_impl.h, as the encoders read them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/stages/sl_genai.h"
#include "common/otel/sl_span_impl.h"
#include "common/otel/sl_trace.h"

#define CLIENT_TP "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
#define RQT 1764000000000000LL          //  the gateway's receipt, Unix µs
#define MAX_SPANS 16

typedef struct {
    sl_span_t *spans [MAX_SPANS];
    size_t count;
} s_sink_t;

static void
s_keep (void *arg, sl_span_t **span_p)
{
    s_sink_t *sink = arg;
    cr_assert_lt (sink->count, MAX_SPANS);
    sink->spans [sink->count++] = *span_p;
    *span_p = NULL;
}

static void
s_sink_free (s_sink_t *sink)
{
    for (size_t i = 0; i < sink->count; i++)
        sl_span_destroy (&sink->spans [i]);
    sink->count = 0;
}

static const sl_span_attr_t *
s_attr (const sl_span_t *span, const char *key)
{
    for (size_t i = 0; i < span->attr_count; i++)
        if (strcmp (span->attrs [i].key, key) == 0)
            return &span->attrs [i];
    return NULL;
}

static const char *
s_str (const sl_span_t *span, const char *key)
{
    const sl_span_attr_t *a = s_attr (span, key);
    cr_assert (a && a->type == SL_SPAN_ATTR_STR, "string attribute %s", key);
    return a->v.str.ptr;
}

static int64_t
s_int (const sl_span_t *span, const char *key)
{
    const sl_span_attr_t *a = s_attr (span, key);
    cr_assert (a && a->type == SL_SPAN_ATTR_INT, "int attribute %s", key);
    return a->v.i64;
}

static void
s_sid (uint8_t sid [SL_SID_SIZE])
{
    for (int i = 0; i < SL_SID_SIZE; i++)
        sid [i] = (uint8_t) (0xa0 + i);
}

static sl_msg_t
s_msg (sl_msg_type_t type, uint64_t seq)
{
    sl_msg_t m;
    sl_msg_init (&m, type);
    s_sid (m.sid);
    m.seq = seq;
    return m;
}

//  A span maker into sink that follows one traced stream (its START
//  only, at RQT, without rqt).
static sl_genai_t *
s_traced (s_sink_t *sink)
{
    sl_genai_config_t cfg = { 0 };
    sl_genai_t *g = sl_genai_new (&cfg, s_keep, sink);
    sl_msg_t m = s_msg (SL_MSG_START, 0);
    m.trace = SL_STR_LIT (CLIENT_TP);
    sl_genai_feed (g, &m, RQT);
    return g;
}

//  A traced stream: start, message, text, a blocked call's verdict,
//  finish with usage, end.
static void
s_feed_stream (sl_genai_t *g, const char *tc, uint32_t epoch)
{
    sl_msg_t m = s_msg (SL_MSG_START, 0);
    m.epoch = epoch;
    m.trace = sl_str (tc);
    m.trace_state = SL_STR_LIT ("rojo=1");
    m.received_us = RQT;
    m.model = SL_STR_LIT ("mock-tools");
    m.client_dialect = SL_DIALECT_OPENAI;
    m.upstream_dialect = SL_DIALECT_ANTHROPIC;
    m.flags = SL_F_STREAM;
    m.provider = SL_STR_LIT ("anthropic");
    m.policy = SL_STR_LIT ("0123456789ab");
    m.team = SL_STR_LIT ("payments");
    m.user = SL_STR_LIT ("ada");
    m.last_user = SL_STR_LIT ("delete [REDACTED]");
    sl_genai_feed (g, &m, RQT + 1000);
    m = s_msg (SL_MSG_BLOCK, 1);
    m.epoch = epoch;
    m.kind = SL_B_MESSAGE;
    m.id = SL_STR_LIT ("msg_1");
    m.model = SL_STR_LIT ("claude-x");
    m.has_usage = true;
    m.usage = (sl_usage_t) { 10, -1, -1, 4, 2, -1 };
    sl_genai_feed (g, &m, RQT + 2000);
    m = s_msg (SL_MSG_BLOCK, 2);
    m.epoch = epoch;
    m.kind = SL_B_START;
    sl_genai_feed (g, &m, RQT + 250000);
    m = s_msg (SL_MSG_VERDICT, 3);
    m.epoch = epoch;
    m.action = SL_ACT_BLOCK;
    m.rule = SL_STR_LIT ("no-rm");
    m.name = SL_STR_LIT ("shell");
    m.id = SL_STR_LIT ("call_1");
    m.text = SL_STR_LIT ("{\"cmd\":\"rm -rf /\"}");
    m.reason = SL_STR_LIT ("rm -rf is not allowed");
    m.latency_us = 40;
    sl_genai_feed (g, &m, RQT + 300000);
    m = s_msg (SL_MSG_BLOCK, 4);
    m.epoch = epoch;
    m.kind = SL_B_FINISH;
    m.finish = SL_FIN_STOP;
    m.has_usage = true;
    m.usage = (sl_usage_t) { -1, 20, 30, -1, -1, 5 };
    sl_genai_feed (g, &m, RQT + 400000);
    m = s_msg (SL_MSG_END, 5);
    m.epoch = epoch;
    sl_genai_feed (g, &m, RQT + 500000);
}

Test (sl_genai, stream_and_verdict_spans_continue_the_client_trace)
{
    s_sink_t sink = { 0 };
    sl_genai_config_t cfg = { 0 };
    sl_genai_t *g = sl_genai_new (&cfg, s_keep, &sink);
    s_feed_stream (g, CLIENT_TP, 0);
    cr_assert_eq (sink.count, 2, "a verdict span, then the stream's");
    cr_assert_eq (sl_genai_streams (g), 0, "freed at END");
    sl_trace_ctx_t client;
    sl_trace_parse (SL_STR_LIT (CLIENT_TP), false, &client);
    uint8_t sid [SL_SID_SIZE], stream_id [8];
    s_sid (sid);
    sl_trace_stream_span (sid, stream_id);

    const sl_span_t *v = sink.spans [0], *s = sink.spans [1];
    cr_assert_str_eq (s->name.ptr, "chat mock-tools");
    cr_assert_eq (s->kind, SL_SPAN_CLIENT);
    cr_assert_eq (memcmp (s->trace, client.trace, 16), 0, "the client's trace");
    cr_assert (s->has_parent);
    cr_assert_eq (memcmp (s->parent, client.parent, 8), 0, "child of the client's span");
    cr_assert_eq (memcmp (s->id, stream_id, 8), 0);
    cr_assert_eq (s->start_ns, (uint64_t) RQT * 1000, "starts at the gateway's receipt");
    cr_assert_eq (s->end_ns, (uint64_t) (RQT + 500000) * 1000);
    cr_assert_str_eq (s->tracestate.ptr, "rojo=1");
    cr_assert_str_eq (s_str (s, "gen_ai.operation.name"), "chat");
    cr_assert_str_eq (s_str (s, "gen_ai.provider.name"), "anthropic");
    cr_assert_str_eq (s_str (s, "gen_ai.request.model"), "mock-tools");
    cr_assert_str_eq (s_str (s, "gen_ai.response.model"), "claude-x");
    cr_assert_str_eq (s_str (s, "gen_ai.response.id"), "msg_1");
    const sl_span_attr_t *fin = s_attr (s, "gen_ai.response.finish_reasons");
    cr_assert (fin && fin->type == SL_SPAN_ATTR_STR_ARRAY && fin->v.arr.count == 1);
    cr_assert_str_eq (fin->v.arr.items [0].ptr, "stop");
    cr_assert_eq (s_int (s, "gen_ai.usage.input_tokens"), 10, "from the message");
    cr_assert_eq (s_int (s, "gen_ai.usage.output_tokens"), 20, "from the finish");
    cr_assert_eq (s_int (s, "gen_ai.usage.cache_read.input_tokens"), 4);
    cr_assert_eq (s_int (s, "gen_ai.usage.cache_creation.input_tokens"), 2);
    cr_assert_eq (s_int (s, "gen_ai.usage.reasoning.output_tokens"), 5);
    const sl_span_attr_t *ttfc = s_attr (s, "gen_ai.response.time_to_first_chunk");
    cr_assert (ttfc && fabs (ttfc->v.dbl - 0.25) < 1e-9, "counted from rqt");
    cr_assert_str_eq (s_str (s, "sluice.team"), "payments");
    cr_assert_str_eq (s_str (s, "user.id"), "ada");
    cr_assert_str_eq (s_str (s, "sluice.client.dialect"), "openai");
    cr_assert_str_eq (s_str (s, "sluice.stream.id"), "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
    cr_assert_null (s_attr (s, "gen_ai.input.messages"), "no content unless captured");
    cr_assert_not (s->error);

    cr_assert_str_eq (v->name.ptr, "apply_guardrail no-rm");
    cr_assert_eq (v->kind, SL_SPAN_INTERNAL);
    cr_assert_eq (memcmp (v->trace, client.trace, 16), 0);
    cr_assert (v->has_parent);
    cr_assert_eq (memcmp (v->parent, stream_id, 8), 0, "child of the stream's span");
    cr_assert_eq (v->end_ns - v->start_ns, 40 * 1000, "its latency");
    cr_assert_str_eq (s_str (v, "gen_ai.security.decision.type"), "deny");
    cr_assert_str_eq (s_str (v, "gen_ai.security.target.type"), "tool_call");
    cr_assert_str_eq (s_str (v, "gen_ai.security.policy.id"), "default");
    cr_assert_str_eq (s_str (v, "gen_ai.security.policy.version"), "0123456789ab");
    cr_assert_str_eq (s_str (v, "gen_ai.tool.name"), "shell");
    cr_assert_str_eq (s_str (v, "gen_ai.security.target.id"), "call_1");
    cr_assert_str_eq (s_str (v, "sluice.verdict.action"), "block");
    cr_assert_null (s_attr (v, "gen_ai.tool.call.arguments"), "no arguments unless captured");
    cr_assert_null (s_attr (v, "gen_ai.security.decision.reason"), "a reason may quote them");
    s_sink_free (&sink);
    sl_genai_destroy (&g);
}

Test (sl_genai, content_only_when_captured)
{
    s_sink_t sink = { 0 };
    sl_genai_config_t cfg = { .capture_content = true };
    sl_genai_t *g = sl_genai_new (&cfg, s_keep, &sink);
    s_feed_stream (g, CLIENT_TP, 0);
    cr_assert_eq (sink.count, 2);
    cr_assert_str_eq (s_str (sink.spans [0], "gen_ai.tool.call.arguments"), "{\"cmd\":\"rm -rf /\"}");
    cr_assert_str_eq (s_str (sink.spans [0], "gen_ai.security.decision.reason"), "rm -rf is not allowed");
    cr_assert_str_eq (s_str (sink.spans [1], "gen_ai.input.messages"),
                      "[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"content\":\"delete [REDACTED]\"}]}]");
    s_sink_free (&sink);
    sl_genai_destroy (&g);
}

Test (sl_genai, a_begun_trace_is_a_root_and_unsampled_or_absent_ones_are_not_followed)
{
    s_sink_t sink = { 0 };
    sl_genai_config_t cfg = { 0 };
    sl_genai_t *g = sl_genai_new (&cfg, s_keep, &sink);
    s_feed_stream (g, "00-a0a1a2a3a4a5a6a7a8a9aaabacadaeaf-0000000000000000-01", 0);
    cr_assert_eq (sink.count, 2);
    cr_assert_not (sink.spans [1]->has_parent, "the root of its trace");
    s_sink_free (&sink);
    s_feed_stream (g, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", 0);
    cr_assert_eq (sink.count, 0, "not sampled: no span");
    sl_msg_t m = s_msg (SL_MSG_START, 0);
    sl_genai_feed (g, &m, RQT);
    cr_assert_eq (sl_genai_streams (g), 0, "no tc: not followed");
    sl_genai_destroy (&g);
}

Test (sl_genai, a_resent_stream_reports_each_span_once)
{
    s_sink_t sink = { 0 };
    //  Epoch 0 runs to its verdict, then the stream is resent whole.
    sl_genai_t *g = s_traced (&sink);
    sl_msg_t m = s_msg (SL_MSG_VERDICT, 3);
    m.action = SL_ACT_ALLOW;
    sl_genai_feed (g, &m, RQT + 10);
    cr_assert_eq (sink.count, 1);
    s_feed_stream (g, CLIENT_TP, 1);
    cr_assert_eq (sink.count, 2, "the verdict again is not reported again; the stream once");
    cr_assert_str_eq (sink.spans [0]->name.ptr, "apply_guardrail default");
    cr_assert_str_eq (sink.spans [1]->name.ptr, "chat");
    //  Its start was taken from the first START (no rqt there).
    cr_assert_eq (sink.spans [1]->start_ns, (uint64_t) RQT * 1000);
    s_sink_free (&sink);
    sl_genai_destroy (&g);
}

Test (sl_genai, errors_and_unrun_checks_say_so)
{
    s_sink_t sink = { 0 };
    sl_genai_t *g = s_traced (&sink);
    sl_msg_t m = s_msg (SL_MSG_VERDICT, 1);
    m.action = SL_ACT_ALLOW;
    m.check = SL_CHK_TIMEOUT;
    m.part = SL_STR_LIT ("messages[1].parts[0]");
    m.text = SL_STR_LIT ("secret");
    sl_genai_feed (g, &m, RQT + 10);
    m = s_msg (SL_MSG_ERROR, 2);
    m.code = SL_STR_LIT ("upstream_timeout");
    m.message = SL_STR_LIT ("no answer");
    sl_genai_feed (g, &m, RQT + 20);
    m = s_msg (SL_MSG_END, 3);
    sl_genai_feed (g, &m, RQT + 30);
    cr_assert_eq (sink.count, 2);
    const sl_span_t *v = sink.spans [0], *s = sink.spans [1];
    cr_assert (v->error, "a check that timed out is not a clean pass");
    cr_assert_str_eq (s_str (v, "error.type"), "timeout");
    cr_assert_str_eq (s_str (v, "gen_ai.security.target.type"), "llm_input");
    cr_assert_str_eq (s_str (v, "gen_ai.security.target.id"), "messages[1].parts[0]");
    cr_assert (s->error);
    cr_assert_str_eq (s_str (s, "error.type"), "upstream_timeout");
    s_sink_free (&sink);
    sl_genai_destroy (&g);
}

Test (sl_genai, bounded_streams_and_expiry)
{
    s_sink_t sink = { 0 };
    sl_genai_config_t cfg = { .max_streams = 2, .expiry_us = 1000 };
    sl_genai_t *g = sl_genai_new (&cfg, s_keep, &sink);
    for (int i = 0; i < 3; i++) {
        sl_msg_t m = s_msg (SL_MSG_START, 0);
        m.sid [0] = (uint8_t) i;
        m.trace = SL_STR_LIT (CLIENT_TP);
        sl_genai_feed (g, &m, RQT);
    }
    cr_assert_eq (sl_genai_streams (g), 2);
    cr_assert_eq (sl_genai_stats (g)->untraced_full, 1);
    cr_assert_eq (sl_genai_expire (g, RQT + 500), 0, "not silent long enough");
    cr_assert_eq (sl_genai_expire (g, RQT + 2000), 2);
    cr_assert_eq (sl_genai_streams (g), 0);
    cr_assert_eq (sink.count, 0, "no span for a stream that never ended");
    sl_genai_destroy (&g);
}

Test (sl_genai, capture_env)
{
    cr_assert_eq (sl_genai_capture_env ("1"), 1);
    cr_assert_eq (sl_genai_capture_env ("TRUE"), 1);
    cr_assert_eq (sl_genai_capture_env ("0"), 0);
    cr_assert_eq (sl_genai_capture_env ("False"), 0);
    cr_assert_eq (sl_genai_capture_env (""), 0);
    cr_assert_eq (sl_genai_capture_env (NULL), 0);
    cr_assert_eq (sl_genai_capture_env ("yes"), -1, "a value that is neither is refused, not taken as off");
}

//  An MCP request's stream: named and described by the MCP conventions.
static sl_span_t *
s_mcp_span (s_sink_t *sink, sl_genai_t *g, const char *mcp)
{
    sl_msg_t m = s_msg (SL_MSG_START, 0);
    m.trace = SL_STR_LIT (CLIENT_TP);
    m.received_us = RQT;
    m.model = SL_STR_LIT ("mcp");
    m.client_dialect = SL_DIALECT_OPENAI;
    m.upstream_dialect = SL_DIALECT_OPENAI;
    m.provider = SL_STR_LIT ("mcp:github");
    m.mcp = sl_str (mcp);
    sl_genai_feed (g, &m, RQT + 10);
    m = s_msg (SL_MSG_END, 1);
    sl_genai_feed (g, &m, RQT + 20);
    cr_assert_eq (sink->count, 1);
    return sink->spans [0];
}

Test (sl_genai, an_mcp_request_s_stream_is_named_by_its_method_and_tool)
{
    s_sink_t sink = { 0 };
    sl_genai_config_t cfg = { 0 };
    sl_genai_t *g = sl_genai_new (&cfg, s_keep, &sink);
    sl_span_t *span = s_mcp_span (&sink, g, "tools/call create_issue");
    cr_expect_str_eq (span->name.ptr, "tools/call create_issue");
    cr_expect_str_eq (s_str (span, "mcp.method.name"), "tools/call");
    cr_expect_str_eq (s_str (span, "gen_ai.tool.name"), "create_issue");
    cr_expect_str_eq (s_str (span, "gen_ai.operation.name"), "execute_tool");
    cr_expect_str_eq (s_str (span, "sluice.mcp.server"), "github");
    cr_expect_null (s_attr (span, "gen_ai.provider.name"), "no model provider took part");
    s_sink_free (&sink);
    span = s_mcp_span (&sink, g, "tools/call create_issue result");
    cr_expect_str_eq (s_str (span, "gen_ai.tool.name"), "create_issue", "the tool, without the word after it");
    s_sink_free (&sink);
    span = s_mcp_span (&sink, g, "tools/list");
    cr_expect_str_eq (span->name.ptr, "tools/list");
    cr_expect_str_eq (s_str (span, "mcp.method.name"), "tools/list");
    cr_expect_null (s_attr (span, "gen_ai.tool.name"), "a list names no tool");
    s_sink_free (&sink);
    sl_genai_destroy (&g);
}
