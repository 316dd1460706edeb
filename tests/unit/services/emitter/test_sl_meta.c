/*  Unit tests: services/emitter/sl_meta - a metadata-only tap gets no
    content of any field of any message type, and keeps what it needs. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <string.h>

#include "services/emitter/sl_meta.h"

#define MARK "S3CR3T"

//  A message of type with every field set, every string holding MARK.
static void
s_full (sl_msg_t *m, uint8_t type)
{
    sl_msg_init (m, type);
    memset (m->sid, 0xab, SL_SID_SIZE);
    m->epoch = 2;
    m->seq = 9;
    m->kind = SL_B_END;
    m->block = SL_BK_TOOL_CALL;
    m->index = 3;
    m->flags = SL_F_ARGS_VALID;
    sl_str_t mark = SL_STR_LIT ("id-" MARK);
    m->id = SL_STR_LIT ("call_1");
    m->call_id = SL_STR_LIT ("fc_1");
    m->name = SL_STR_LIT ("run_shell");
    m->text = mark;
    m->sig = mark;
    m->body = mark;
    m->model = SL_STR_LIT ("gpt-x");
    m->ts = 1234;
    m->finish = SL_FIN_STOP;
    m->finish_raw = SL_STR_LIT ("stop");
    m->stop_seq = mark;
    m->has_usage = true;
    m->usage = (sl_usage_t) { 1, 2, 3, 4, 5, 6 };
    m->status = 403;
    m->code = SL_STR_LIT ("policy_violation");
    m->key_id = SL_STR_LIT ("a9993e364706");
    m->team = SL_STR_LIT ("payments");
    m->user = SL_STR_LIT ("ada");
    m->policy_name = SL_STR_LIT ("/etc/sluice/payments.yaml");
    m->request_bytes = 777;
    m->mcp = SL_STR_LIT ("tools/call create_issue");
    m->policy = SL_STR_LIT ("52e9e1ff7988");
    m->instance = SL_STR_LIT ("judge-1");
    m->count = 2;
    m->message = mark;
    m->content_type = mark;
    m->client_dialect = SL_DIALECT_OPENAI;
    m->upstream_dialect = SL_DIALECT_ANTHROPIC;
    m->provider = SL_STR_LIT ("anthropic");
    m->reply_to = mark;
    m->tools = SL_STR_LIT ("[{\"name\":\"run_shell\",\"schema\":{\"description\":\"" MARK "\"}},"
                           "{\"name\":\"get_weather\"},{\"schema\":{}}]");
    m->headers = SL_STR_LIT ("{\"x-team\":\"" MARK "\"}");
    m->last_user = mark;
    m->auth = mark;
    m->action = SL_ACT_BLOCK;
    m->check = SL_CHK_RAN;
    m->rule = SL_STR_LIT ("no-rm-rf");
    m->reason = mark;
    m->judge_model = SL_STR_LIT ("judge-m");
    m->probability = 0.75;
    m->latency_us = 12;
    m->approver = SL_STR_LIT ("alice@platform");
    m->digest = SL_STR_LIT ("0123abcd");
    m->expires = 99;
    m->stream = SL_STR_LIT ("00112233445566778899aabbccddeeff");
}

//  Whether a string or bytes field of m holds MARK.
static bool
s_holds_mark (const sl_msg_t *m)
{
    static const struct { bool text; size_t offset; } fields [] = {
#define S_TEXT_STR   true
#define S_TEXT_BIN   true
#define S_TEXT_U8    false
#define S_TEXT_U32   false
#define S_TEXT_U64   false
#define S_TEXT_I32   false
#define S_TEXT_I64   false
#define S_TEXT_F64   false
#define S_TEXT_SID   false
#define S_TEXT_USAGE false
#define S_FIELD(key, wire, member, when) { S_TEXT_##wire, offsetof (sl_msg_t, member) },
        SL_MSG_FIELDS (S_FIELD)
#undef S_FIELD
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields [0]; i++)
        if (fields [i].text) {
            const sl_str_t *s = (const sl_str_t *) ((const char *) m + fields [i].offset);
            if (s->ptr && memmem (s->ptr, s->len, MARK, strlen (MARK)))
                return true;
        }
    return false;
}

Test (sl_meta, no_content_of_any_type_passes)
{
    //  What the emitter publishes, as it goes on the wire.
    const uint8_t types [] = { SL_MSG_START, SL_MSG_BLOCK, SL_MSG_VERDICT, SL_MSG_ERROR, SL_MSG_END,
                               SL_MSG_LOST, SL_MSG_POLICY, SL_MSG_APPROVAL };
    sl_buf_t scratch = { 0 }, wire = { 0 };
    for (size_t i = 0; i < sizeof types; i++) {
        sl_msg_t in, out;
        s_full (&in, types [i]);
        sl_meta_strip (&in, &out, &scratch);
        sl_buf_reset (&wire);
        sl_msg_encode (&out, &wire);
        cr_expect_null (memmem (wire.data, wire.len, MARK, strlen (MARK)),
                        "nothing of the content of a %s passes", sl_msg_type_name (types [i]));
    }
    //  Every type, those that never reach the feed too (a delta, a frame, a
    //  req, a ctl are left with their envelope, which is no message of
    //  theirs to send): no field of what is left holds any content.
    for (int type = 1; type < SL_MSG_TYPE_MAX; type++) {
        sl_msg_t in, out;
        s_full (&in, (uint8_t) type);
        sl_meta_strip (&in, &out, &scratch);
        cr_expect (!s_holds_mark (&out), "nothing of the content of a %s is left", sl_msg_type_name (type));
        cr_expect_eq (out.type, type);
        cr_expect_eq (memcmp (out.sid, in.sid, SL_SID_SIZE), 0);
        cr_expect_eq (out.seq, 9);
        cr_expect_eq (out.epoch, 2);
    }
    sl_buf_free (&scratch);
    sl_buf_free (&wire);
}

Test (sl_meta, what_monitoring_needs_stays)
{
    sl_buf_t scratch = { 0 };
    sl_msg_t in, out;
    s_full (&in, SL_MSG_START);
    sl_meta_strip (&in, &out, &scratch);
    cr_expect (sl_str_eq (out.model, "gpt-x"));
    cr_expect (sl_str_eq (out.provider, "anthropic"));
    cr_expect_eq (out.client_dialect, SL_DIALECT_OPENAI);
    cr_expect_eq (out.upstream_dialect, SL_DIALECT_ANTHROPIC);
    cr_expect (sl_str_eq (out.tools, "[{\"name\":\"run_shell\"},{\"name\":\"get_weather\"}]"),
               "tool names only: %.*s", (int) out.tools.len, out.tools.ptr);
    cr_expect_null (out.last_user.ptr);
    cr_expect_null (out.headers.ptr);
    cr_expect (sl_str_eq (out.key_id, "a9993e364706"), "whose request: the key's id");
    cr_expect (sl_str_eq (out.policy, "52e9e1ff7988"));
    cr_expect (sl_str_eq (out.team, "payments"), "whose request: the team");
    cr_expect (sl_str_eq (out.user, "ada"), "and the user");
    cr_expect (sl_str_eq (out.policy_name, "/etc/sluice/payments.yaml"), "the policy file it runs under");
    cr_expect_eq (out.request_bytes, 777, "a size, for a usage estimate");
    cr_expect (sl_str_eq (out.mcp, "tools/call create_issue"), "the MCP request a stream stands for");

    s_full (&in, SL_MSG_POLICY);
    sl_meta_strip (&in, &out, &scratch);
    cr_expect (sl_str_eq (out.instance, "judge-1"));
    cr_expect (sl_str_eq (out.policy, "52e9e1ff7988"));
    cr_expect_eq (out.count, 2);
    cr_expect_null (out.text.ptr, "not the policy's text");
    cr_expect_null (out.message.ptr, "not the reload error");

    s_full (&in, SL_MSG_APPROVAL);
    sl_meta_strip (&in, &out, &scratch);
    cr_expect (sl_str_eq (out.name, "run_shell"), "which tool waits");
    cr_expect (sl_str_eq (out.code, "policy_violation"), "its state");
    cr_expect (sl_str_eq (out.stream, "00112233445566778899aabbccddeeff"));
    cr_expect (sl_str_eq (out.approver, "alice@platform"));
    cr_expect (sl_str_eq (out.team, "payments"));
    cr_expect_eq (out.expires, 99);
    cr_expect_null (out.text.ptr, "not the arguments");
    cr_expect_null (out.message.ptr, "not the message quoting them");
    cr_expect_null (out.reason.ptr, "not the comment");

    s_full (&in, SL_MSG_VERDICT);
    sl_meta_strip (&in, &out, &scratch);
    cr_expect (sl_str_eq (out.approver, "alice@platform"));
    cr_expect (sl_str_eq (out.name, "run_shell"));
    cr_expect_eq (out.action, SL_ACT_BLOCK);
    cr_expect_eq (out.check, SL_CHK_RAN);
    cr_expect (sl_str_eq (out.rule, "no-rm-rf"));
    cr_expect (sl_str_eq (out.judge_model, "judge-m"));
    cr_expect_eq (out.latency_us, 12);
    cr_expect_null (out.reason.ptr, "a reason may quote the arguments");
    cr_expect (sl_str_eq (out.team, "payments"), "a verdict says whose call it judged");
    cr_expect (sl_str_eq (out.user, "ada"));

    s_full (&in, SL_MSG_BLOCK);
    sl_meta_strip (&in, &out, &scratch);
    cr_expect_eq (out.kind, SL_B_END);
    cr_expect_eq (out.block, SL_BK_TOOL_CALL);
    cr_expect_eq (out.index, 3);
    cr_expect (sl_str_eq (out.name, "run_shell"));
    cr_expect (sl_str_eq (out.id, "call_1"));
    cr_expect_eq (out.flags, SL_F_ARGS_VALID);
    cr_expect (out.has_usage);
    cr_expect_eq (out.usage.output, 2);
    cr_expect_null (out.text.ptr);
    cr_expect_null (out.body.ptr);

    s_full (&in, SL_MSG_ERROR);
    sl_meta_strip (&in, &out, &scratch);
    cr_expect (sl_str_eq (out.code, "policy_violation"));
    cr_expect_eq (out.status, 403);
    cr_expect_null (out.message.ptr);

    //  A start without tools has none; tools that are not an array give [].
    s_full (&in, SL_MSG_START);
    in.tools = SL_STR_NULL;
    sl_meta_strip (&in, &out, &scratch);
    cr_expect_null (out.tools.ptr);
    in.tools = SL_STR_LIT ("{\"not\":\"an array\"}");
    sl_meta_strip (&in, &out, &scratch);
    cr_expect (sl_str_eq (out.tools, "[]"));
    sl_buf_free (&scratch);
}
