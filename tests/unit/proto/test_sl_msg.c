/*  Unit tests: proto/sl_msg (the codec). */
#include <criterion/criterion.h>
#include <math.h>
#include <msgpack.h>
#include <string.h>

#include "proto/sl_msg.h"

static sl_msg_t
s_base (sl_msg_type_t type)
{
    sl_msg_t m;
    sl_msg_init (&m, type);
    for (int i = 0; i < SL_SID_SIZE; i++)
        m.sid [i] = (uint8_t) (i * 17 + 3);
    m.epoch = 2;
    m.seq = 41;
    return m;
}

//  Encode, decode, and compare every field the message uses.
static void
s_round_trip (const sl_msg_t *in)
{
    sl_buf_t buf = { 0 };
    sl_msg_encode (in, &buf);
    sl_codec_t *codec = sl_codec_new ();
    size_t offset = 0;
    sl_msg_t out;
    cr_assert_eq (sl_codec_decode (codec, buf.data, buf.len, &offset, &out), 0,
                  "decode %s: %s", sl_msg_type_name (in->type), sl_codec_error (codec));
    cr_expect_eq (offset, buf.len);
    cr_expect_eq (out.type, in->type);
    cr_expect_eq (out.version, in->version);
    if (in->type != SL_MSG_HB)
        cr_expect (memcmp (out.sid, in->sid, SL_SID_SIZE) == 0);
    cr_expect_eq (out.epoch, in->epoch);
    cr_expect_eq (out.seq, in->seq);
    cr_expect_eq (out.kind, in->kind);
    cr_expect_eq (out.block, in->block);
    cr_expect_eq (out.index, in->index);
    cr_expect_eq (out.flags, in->flags);
    const sl_str_t *a [] = { &in->id, &in->call_id, &in->name, &in->text, &in->sig, &in->body,
                             &in->model, &in->finish_raw, &in->stop_seq, &in->code, &in->message,
                             &in->content_type, &in->provider, &in->reply_to, &in->tools,
                             &in->headers, &in->last_user, &in->auth, &in->rule, &in->reason,
                             &in->judge_model, &in->instance, &in->trace, &in->trace_state,
                             &in->inline_answer, &in->mcp };
    const sl_str_t *b [] = { &out.id, &out.call_id, &out.name, &out.text, &out.sig, &out.body,
                             &out.model, &out.finish_raw, &out.stop_seq, &out.code, &out.message,
                             &out.content_type, &out.provider, &out.reply_to, &out.tools,
                             &out.headers, &out.last_user, &out.auth, &out.rule, &out.reason,
                             &out.judge_model, &out.instance, &out.trace, &out.trace_state,
                             &out.inline_answer, &out.mcp };
    for (size_t i = 0; i < sizeof a / sizeof a [0]; i++)
        cr_expect (sl_str_eq_str (*a [i], *b [i]), "string field %zu differs", i);
    cr_expect_eq (out.ts, in->ts);
    cr_expect_eq (out.received_us, in->received_us);
    cr_expect_eq (out.finish, in->finish);
    cr_expect_eq (out.has_usage, in->has_usage);
    cr_expect (memcmp (&out.usage, &in->usage, sizeof out.usage) == 0);
    cr_expect_eq (out.status, in->status);
    cr_expect_eq (out.client_dialect, in->client_dialect);
    cr_expect_eq (out.upstream_dialect, in->upstream_dialect);
    cr_expect_eq (out.action, in->action);
    cr_expect_eq (out.check, in->check);
    cr_expect ((isnan (out.probability) && isnan (in->probability)) || out.probability == in->probability);
    cr_expect_eq (out.latency_us, in->latency_us);
    cr_expect_eq (out.credit, in->credit);
    cr_expect_eq (out.incarnation, in->incarnation);
    cr_expect_eq (sl_codec_decode (codec, buf.data, buf.len, &offset, &out), -1, "nothing left");
    sl_codec_destroy (&codec);
    sl_buf_free (&buf);
}

Test (sl_msg, round_trip_every_type)
{
    sl_msg_t m = s_base (SL_MSG_HB);
    m.instance = sl_str ("judge-1");
    m.incarnation = 0xfedcba9876543210ULL;
    m.credit = 1000;
    s_round_trip (&m);

    m = s_base (SL_MSG_REQ);
    m.client_dialect = SL_DIALECT_OPENAI;
    m.upstream_dialect = SL_DIALECT_ANTHROPIC;
    m.model = sl_str ("mock-tools");
    m.body = sl_str_n ("{\"a\":\0}", 7);        //  binary-safe
    m.reply_to = sl_str ("tcp://127.0.0.1:5555");
    m.flags = SL_F_STREAM | SL_F_USAGE;
    m.tools = sl_str ("[]");
    m.headers = sl_str ("{}");
    m.last_user = sl_str ("");                  //  present and empty
    m.auth = sl_str ("Authorization: Bearer x");
    m.provider = sl_str ("openai");
    s_round_trip (&m);
    //  An inline answer (binary-safe SSE) and the MCP request a leg stands for
    m.inline_answer = sl_str_n ("data: {\"x\":\0}\n\n", 15);
    m.mcp = sl_str ("tools/call create_issue");
    m.provider = sl_str ("mcp:github");
    s_round_trip (&m);

    m = s_base (SL_MSG_ACK);
    s_round_trip (&m);
    m = s_base (SL_MSG_CANCEL);
    m.code = sl_str ("client_gone");
    m.message = sl_str ("bye");
    s_round_trip (&m);

    m = s_base (SL_MSG_START);
    m.model = sl_str ("m");
    m.client_dialect = SL_DIALECT_GEMINI;
    m.trace = sl_str ("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    m.trace_state = sl_str ("rojo=00f067aa0ba902b7");
    m.received_us = 1764243000123456;
    s_round_trip (&m);
    m.mcp = sl_str ("tools/list");
    s_round_trip (&m);

    for (int k = SL_D_MESSAGE; k < SL_D_MAX; k++) {
        m = s_base (SL_MSG_DELTA);
        m.kind = (uint8_t) k;
        m.index = k - 1;
        m.id = sl_str ("call_1");
        m.call_id = sl_str ("fc_1");
        m.name = sl_str ("get_weather");
        m.text = sl_str ("{\"ci");
        m.sig = sl_str ("sig==");
        m.finish_raw = sl_str ("tool_calls");
        m.stop_seq = sl_str ("```");
        m.ts = -5;
        m.has_usage = true;
        m.usage = (sl_usage_t) { 1, 2, 3, -1, 0, 7 };
        s_round_trip (&m);
    }
    for (int k = SL_B_MESSAGE; k < SL_B_MAX; k++) {
        m = s_base (SL_MSG_BLOCK);
        m.kind = (uint8_t) k;
        m.block = SL_BK_TOOL_CALL;
        m.index = 3;
        m.flags = SL_F_ARGS_VALID | SL_F_REPAIRED;
        m.finish = SL_FIN_TOOL_CALLS;
        m.text = sl_str ("whole");
        s_round_trip (&m);
    }
    m = s_base (SL_MSG_VERDICT);
    m.index = 2;
    m.action = SL_ACT_BLOCK;
    m.check = SL_CHK_TIMEOUT;
    m.rule = sl_str ("no-rm-rf");
    m.reason = sl_str ("matched");
    m.judge_model = sl_str ("gpt");
    m.probability = 0.875;
    m.latency_us = 12345;
    s_round_trip (&m);

    m = s_base (SL_MSG_FRAME);
    m.body = sl_str ("data: {}\n\n");
    m.flags = SL_F_FIRST;
    m.status = 200;
    m.content_type = sl_str ("text/event-stream");
    s_round_trip (&m);

    m = s_base (SL_MSG_ERROR);
    m.code = sl_str ("upstream_timeout");
    m.message = sl_str ("first byte");
    m.status = 504;
    m.flags = SL_F_UPSTREAM | SL_F_RETRYABLE;
    s_round_trip (&m);

    m = s_base (SL_MSG_END);
    s_round_trip (&m);

    m = s_base (SL_MSG_LOST);
    s_round_trip (&m);

    //  The audit's messages: a judge's policy report, a record and its
    //  acknowledgement, a gap; a start with the client key's id and policy.
    m = s_base (SL_MSG_POLICY);
    m.instance = sl_str ("judge-1");
    m.incarnation = 77;
    m.policy = sl_str ("52e9e1ff7988");
    m.name = sl_str ("deploy/policy.yaml");
    m.text = sl_str ("rules: []\n");
    m.count = 3;
    m.message = sl_str ("policy.yaml:1:1: bad");
    s_round_trip (&m);
    m = s_base (SL_MSG_REC);
    m.incarnation = 0xfedcba9876543210ULL;
    m.instance = sl_str ("emitter-1");
    m.kind = 1;
    m.ts = 1790000000000;
    m.body = sl_str_n ("\x81\xa1t\x05", 4);
    s_round_trip (&m);
    m = s_base (SL_MSG_RACK);
    m.incarnation = 5;
    m.kind = 2;
    s_round_trip (&m);
    m = s_base (SL_MSG_GAP);
    m.count = UINT64_C (1) << 40;
    m.body = sl_str_n ("0123456789abcdef", 16);
    s_round_trip (&m);
    m = s_base (SL_MSG_START);
    m.key_id = sl_str ("a9993e364706");
    m.policy = sl_str ("allow-all");
    s_round_trip (&m);
}

//  round_trip_every_type sets every field of the table at least once, so a
//  key out of order in the codec's binary-searched table fails there.
Test (sl_msg, batched_messages_decode_in_order)
{
    sl_buf_t buf = { 0 };
    sl_msg_t m = s_base (SL_MSG_ACK);
    for (int i = 0; i < 3; i++) {
        m.seq = (uint64_t) i;
        sl_msg_encode (&m, &buf);
    }
    sl_codec_t *codec = sl_codec_new ();
    size_t offset = 0;
    sl_msg_t out;
    for (int i = 0; i < 3; i++) {
        cr_assert_eq (sl_codec_decode (codec, buf.data, buf.len, &offset, &out), 0);
        cr_expect_eq (out.seq, (uint64_t) i, "batched messages in order");
    }
    cr_expect_eq (sl_codec_decode (codec, buf.data, buf.len, &offset, &out), -1);
    sl_codec_destroy (&codec);
    sl_buf_free (&buf);
}

//  Pack a map by hand with msgpack-c, to build malformed messages.
static int
s_decode_raw (const msgpack_sbuffer *sb)
{
    sl_codec_t *codec = sl_codec_new ();
    size_t offset = 0;
    sl_msg_t out;
    int rc = sl_codec_decode (codec, sb->data, sb->size, &offset, &out);
    if (rc == -2)
        cr_expect_eq (offset, sb->size, "after an error the frame is not trusted");
    sl_codec_destroy (&codec);
    return rc;
}

static void
s_pack_envelope (msgpack_packer *pk, int type, int extra)
{
    msgpack_pack_map (pk, (size_t) (5 + extra));
    msgpack_pack_str_with_body (pk, "v", 1);
    msgpack_pack_uint8 (pk, 1);
    msgpack_pack_str_with_body (pk, "t", 1);
    msgpack_pack_uint8 (pk, (uint8_t) type);
    msgpack_pack_str_with_body (pk, "sid", 3);
    msgpack_pack_bin_with_body (pk, "0123456789abcdef", 16);
    msgpack_pack_str_with_body (pk, "ep", 2);
    msgpack_pack_uint8 (pk, 0);
    msgpack_pack_str_with_body (pk, "seq", 3);
    msgpack_pack_uint8 (pk, 0);
}

Test (sl_msg, rejects_malformed_input)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;

    //  Truncated: every prefix of a valid message is rejected, none crashes.
    sl_buf_t buf = { 0 };
    sl_msg_t m = s_base (SL_MSG_FRAME);
    m.body = sl_str ("data: hello\n\n");
    sl_msg_encode (&m, &buf);
    for (size_t n = 1; n < buf.len; n++) {
        sl_codec_t *codec = sl_codec_new ();
        size_t offset = 0;
        sl_msg_t out;
        cr_expect_eq (sl_codec_decode (codec, buf.data, n, &offset, &out), -2, "prefix %zu", n);
        sl_codec_destroy (&codec);
    }
    sl_buf_free (&buf);

    //  Not a map.
    msgpack_sbuffer_init (&sb);
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 0);
    cr_expect_eq (s_decode_raw (&sb), -2);
    msgpack_sbuffer_destroy (&sb);

    //  Wrong field types: sid as a string, seq as a string, text as binary.
    const char *cases [] = { "sid", "seq", "text", "i", "u" };
    for (size_t c = 0; c < sizeof cases / sizeof cases [0]; c++) {
        msgpack_sbuffer_init (&sb);
        msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
        s_pack_envelope (&pk, SL_MSG_DELTA, 2);
        msgpack_pack_str_with_body (&pk, "k", 1);
        msgpack_pack_uint8 (&pk, SL_D_TEXT);
        msgpack_pack_str_with_body (&pk, cases [c], strlen (cases [c]));
        if (strcmp (cases [c], "text") == 0)
            msgpack_pack_bin_with_body (&pk, "x", 1);
        else
            msgpack_pack_str_with_body (&pk, "x", 1);
        cr_expect_eq (s_decode_raw (&sb), -2, "wrong type for %s", cases [c]);
        msgpack_sbuffer_destroy (&sb);
    }

    //  Unknown type, unknown delta kind, out-of-range enum, bad version.
    int bad_types [] = { 0, SL_MSG_TYPE_MAX, 200 };
    for (size_t c = 0; c < 3; c++) {
        msgpack_sbuffer_init (&sb);
        msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
        s_pack_envelope (&pk, bad_types [c], 0);
        cr_expect_eq (s_decode_raw (&sb), -2, "type %d", bad_types [c]);
        msgpack_sbuffer_destroy (&sb);
    }
    msgpack_sbuffer_init (&sb);
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    s_pack_envelope (&pk, SL_MSG_DELTA, 1);
    msgpack_pack_str_with_body (&pk, "k", 1);
    msgpack_pack_uint8 (&pk, SL_D_MAX);
    cr_expect_eq (s_decode_raw (&sb), -2, "unknown delta kind");
    msgpack_sbuffer_destroy (&sb);

    msgpack_sbuffer_init (&sb);
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    s_pack_envelope (&pk, SL_MSG_BLOCK, 2);
    msgpack_pack_str_with_body (&pk, "k", 1);
    msgpack_pack_uint8 (&pk, SL_B_START);
    msgpack_pack_str_with_body (&pk, "bk", 2);
    msgpack_pack_uint8 (&pk, SL_BK_MAX);
    cr_expect_eq (s_decode_raw (&sb), -2, "block kind out of range");
    msgpack_sbuffer_destroy (&sb);

    msgpack_sbuffer_init (&sb);
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map (&pk, 2);
    msgpack_pack_str_with_body (&pk, "v", 1);
    msgpack_pack_uint8 (&pk, 99);
    msgpack_pack_str_with_body (&pk, "t", 1);
    msgpack_pack_uint8 (&pk, SL_MSG_HB);
    cr_expect_eq (s_decode_raw (&sb), -2, "unsupported version");
    msgpack_sbuffer_destroy (&sb);

    //  Missing envelope fields.
    msgpack_sbuffer_init (&sb);
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map (&pk, 2);
    msgpack_pack_str_with_body (&pk, "v", 1);
    msgpack_pack_uint8 (&pk, 1);
    msgpack_pack_str_with_body (&pk, "t", 1);
    msgpack_pack_uint8 (&pk, SL_MSG_END);
    cr_expect_eq (s_decode_raw (&sb), -2, "stream message without sid/ep/seq");
    msgpack_sbuffer_destroy (&sb);

    //  Oversized: a string longer than the message limit.
    msgpack_sbuffer_init (&sb);
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    s_pack_envelope (&pk, SL_MSG_FRAME, 1);
    msgpack_pack_str_with_body (&pk, "body", 4);
    size_t big = SL_MSG_MAX_SIZE + 1;
    char *blob = calloc (1, big);
    msgpack_pack_bin_with_body (&pk, blob, big);
    free (blob);
    cr_expect_eq (s_decode_raw (&sb), -2, "oversized message");
    msgpack_sbuffer_destroy (&sb);

    //  Garbage bytes.
    const char junk [] = "\xc1\xc1\xc1 not msgpack";
    sl_codec_t *codec = sl_codec_new ();
    size_t offset = 0;
    sl_msg_t out;
    cr_expect_eq (sl_codec_decode (codec, junk, sizeof junk - 1, &offset, &out), -2);
    sl_codec_destroy (&codec);
}

Test (sl_msg, ignores_unknown_fields)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init (&sb);
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    s_pack_envelope (&pk, SL_MSG_END, 1);
    msgpack_pack_str_with_body (&pk, "future_field", 12);
    msgpack_pack_array (&pk, 1);
    msgpack_pack_nil (&pk);
    cr_expect_eq (s_decode_raw (&sb), 0);
    msgpack_sbuffer_destroy (&sb);
}

Test (sl_msg, dup_owns_its_strings)
{
    char text [] = "mutable";
    sl_msg_t m = s_base (SL_MSG_BLOCK);
    m.kind = SL_B_DELTA;
    m.text = sl_str (text);
    m.name = sl_str ("");
    sl_msg_t *copy = sl_msg_dup (&m);
    text [0] = 'X';
    cr_expect (sl_str_eq (copy->text, "mutable"));
    cr_expect (copy->name.ptr && copy->name.len == 0, "empty stays present");
    cr_expect_null (copy->id.ptr, "absent stays absent");
    free (copy);
}

Test (sl_msg, names_and_sids)
{
    cr_expect_str_eq (sl_msg_type_name (SL_MSG_VERDICT), "verdict");
    cr_expect_str_eq (sl_msg_type_name (99), "?");
    cr_expect_eq (sl_action_parse ("rewrite"), SL_ACT_REWRITE);
    cr_expect_eq (sl_action_parse ("none"), 0);
    cr_expect_str_eq (sl_cut_name (SL_CUT_EOF), "eof");
    cr_expect_eq (sl_cut_parse (SL_STR_LIT ("length")), SL_CUT_LENGTH);
    cr_expect_eq (sl_cut_parse (SL_STR_LIT ("none")), 0, "none is no cut to parse");
    cr_expect_eq (sl_cut_parse (SL_STR_NULL), 0);
    cr_expect_eq (sl_cut_for_error (SL_STR_LIT ("stream_too_large")), SL_CUT_SIZE);
    cr_expect_eq (sl_cut_for_error (SL_STR_LIT ("upstream_event_too_large")), SL_CUT_SIZE);
    cr_expect_eq (sl_cut_for_error (SL_STR_LIT ("upstream_incomplete")), SL_CUT_EOF);
    cr_expect_eq (sl_cut_for_error (SL_STR_LIT ("upstream_connection_lost")), SL_CUT_EOF);
    cr_expect_eq (sl_cut_for_error (SL_STR_LIT ("overloaded_error")), SL_CUT_ERROR);
    cr_expect_eq (sl_cut_for_error (SL_STR_NULL), SL_CUT_ERROR);
    uint8_t sid [SL_SID_SIZE], back [SL_SID_SIZE];
    sl_sid_new (sid);
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (sid, hex);
    cr_expect_eq (strlen (hex), 32);
    cr_assert_eq (sl_sid_parse (hex, back), 0);
    cr_expect (memcmp (sid, back, SL_SID_SIZE) == 0);
    cr_expect_eq (sl_sid_parse ("xyz", back), -1);
}

Test (sl_msg, lying_length_headers_are_rejected_without_allocating)
{
    //  Containers and strings that declare more than the bytes present.
    const char *cases [] = {
        "\xdd\xdd\xdd\xdd\xdd",                 //  array32 of 3.7 billion
        "\xdf\x7f\xff\xff\xff\x00",             //  map32
        "\xdc\xff\xff",                         //  array16
        "\x81\xa1v\xdb\xff\xff\xff\xff",        //  str32 value
        "\x81\xa1v\xc6\x00\x10\x00\x00",        //  bin32 value
        "\x9f\x01",                             //  fixarray of 15 with one element
        "\xc1",                                 //  never-used byte
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_codec_t *codec = sl_codec_new ();
        size_t offset = 0;
        sl_msg_t out;
        cr_expect_eq (sl_codec_decode (codec, cases [i], strlen (cases [i]) ? strlen (cases [i]) : 1,
                                       &offset, &out), -2, "case %zu", i);
        sl_codec_destroy (&codec);
    }
}

//  msgpack-c is the reference: what we write, it reads as the same map.
Test (sl_msg, msgpack_c_reads_our_bytes)
{
    sl_msg_t m = s_base (SL_MSG_BLOCK);
    m.kind = SL_B_END;
    m.block = SL_BK_TOOL_CALL;
    m.index = 300;
    m.text = sl_str ("{\"city\":\"Paris\"}");
    m.ts = -70000;
    m.has_usage = true;
    m.usage = (sl_usage_t) { 70000, 3, -1, -1, -1, 4294967296LL };
    char long_text [70000];
    memset (long_text, 'x', sizeof long_text);
    m.body = sl_str_n (long_text, sizeof long_text);    //  bin32
    sl_buf_t buf = { 0 };
    sl_msg_encode (&m, &buf);

    msgpack_unpacked up;
    msgpack_unpacked_init (&up);
    size_t off = 0;
    cr_assert_eq (msgpack_unpack_next (&up, buf.data, buf.len, &off), MSGPACK_UNPACK_SUCCESS);
    cr_expect_eq (off, buf.len);
    msgpack_object *o = &up.data;
    cr_assert_eq (o->type, MSGPACK_OBJECT_MAP);
    int seen = 0;
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        msgpack_object *k = &o->via.map.ptr [i].key, *v = &o->via.map.ptr [i].val;
        cr_assert_eq (k->type, MSGPACK_OBJECT_STR);
        char key [8] = { 0 };
        memcpy (key, k->via.str.ptr, k->via.str.size < 7 ? k->via.str.size : 7);
        if (strcmp (key, "i") == 0) {
            cr_expect (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 == 300);
            seen++;
        }
        else
        if (strcmp (key, "ts") == 0) {
            cr_expect (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER && v->via.i64 == -70000);
            seen++;
        }
        else
        if (strcmp (key, "text") == 0) {
            cr_expect (v->type == MSGPACK_OBJECT_STR && v->via.str.size == m.text.len
                       && memcmp (v->via.str.ptr, m.text.ptr, m.text.len) == 0);
            seen++;
        }
        else
        if (strcmp (key, "body") == 0) {
            cr_expect (v->type == MSGPACK_OBJECT_BIN && v->via.bin.size == sizeof long_text);
            seen++;
        }
        else
        if (strcmp (key, "sid") == 0) {
            cr_expect (v->type == MSGPACK_OBJECT_BIN && v->via.bin.size == SL_SID_SIZE
                       && memcmp (v->via.bin.ptr, m.sid, SL_SID_SIZE) == 0);
            seen++;
        }
        else
        if (strcmp (key, "u") == 0) {
            cr_expect_eq (v->type, MSGPACK_OBJECT_MAP);
            cr_expect_eq (v->via.map.size, 3, "absent usage fields are not written");
            seen++;
        }
    }
    cr_expect_eq (seen, 6);
    msgpack_unpacked_destroy (&up);

    //  A probability is a float64 (a verdict's: a block has none).
    sl_msg_t v = s_base (SL_MSG_VERDICT);
    v.action = SL_ACT_ALLOW;
    v.probability = 0.5;
    sl_buf_reset (&buf);
    sl_msg_encode (&v, &buf);
    msgpack_unpacked_init (&up);
    off = 0;
    cr_assert_eq (msgpack_unpack_next (&up, buf.data, buf.len, &off), MSGPACK_UNPACK_SUCCESS);
    o = &up.data;
    cr_assert_eq (o->type, MSGPACK_OBJECT_MAP);
    seen = 0;
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        msgpack_object *k = &o->via.map.ptr [i].key, *val = &o->via.map.ptr [i].val;
        if (k->via.str.size == 1 && k->via.str.ptr [0] == 'p') {
            cr_expect (val->type == MSGPACK_OBJECT_FLOAT64 && val->via.f64 == 0.5);
            seen++;
        }
    }
    cr_expect_eq (seen, 1);
    msgpack_unpacked_destroy (&up);

    //  And what msgpack-c writes (its own widths), we read.
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init (&sb);
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    s_pack_envelope (&pk, SL_MSG_VERDICT, 4);
    msgpack_pack_str_with_body (&pk, "act", 3);
    msgpack_pack_uint64 (&pk, SL_ACT_REWRITE);      //  a wide encoding of a small value
    msgpack_pack_str_with_body (&pk, "i", 1);
    msgpack_pack_int64 (&pk, 7);
    msgpack_pack_str_with_body (&pk, "p", 1);
    msgpack_pack_float (&pk, 0.25f);
    msgpack_pack_str_with_body (&pk, "text", 4);
    msgpack_pack_str_with_body (&pk, long_text, 300);   //  str16
    sl_codec_t *codec = sl_codec_new ();
    size_t offset = 0;
    sl_msg_t out;
    cr_assert_eq (sl_codec_decode (codec, sb.data, sb.size, &offset, &out), 0, "%s", sl_codec_error (codec));
    cr_expect_eq (out.action, SL_ACT_REWRITE);
    cr_expect_eq (out.index, 7);
    cr_expect_eq (out.probability, 0.25);
    cr_expect_eq (out.text.len, 300);
    sl_codec_destroy (&codec);
    msgpack_sbuffer_destroy (&sb);
    sl_buf_free (&buf);
}
