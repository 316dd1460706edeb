/*  Property tests: the blocks depend on what was said, not on how it was cut.

    - Re-splitting every content fragment into random smaller fragments
      gives the same blocks (block_start, block_end, finish, error).
    - Batching deltas into frames at random through the wire codec, and
      interleaving two streams at random, gives byte-identical output per
      stream.
    - Feeding a capture's bytes in random pieces through the whole replay
      (SSE parser, decoder, aggregator) gives the same output: on synthetic
      captures, and on every recording of a dialect this build decodes
      (tests/recordings.h: the project's own, and ../shared/corpus's when
      present).
    Seeds are fixed and every loop is bounded.
*/
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stages/sl_agg.h"
#include "common/stages/sl_replay.h"
#include "tests/recordings.h"
#include "tests/unit/recorder.h"

#define SEEDS 40                        //  random variations per script
#define MAX_PIECES 6                    //  a fragment is cut into at most this many

//  One scripted delta (or ERROR); strings are C literals, NULL = absent.
typedef struct {
    int type;                           //  SL_MSG_DELTA (0 means DELTA) or SL_MSG_ERROR
    int kind;
    int index;
    const char *id, *cid, *name, *text, *sig, *body, *finr;
    uint32_t flags;
    bool usage;
} step_t;

#define D(k, i, ...) { .kind = (k), .index = (i), __VA_ARGS__ }
#define END_OF_SCRIPT { .kind = -1 }

static const step_t s_openai [] = {
    D (SL_D_MESSAGE, -1, .id = "chatcmpl-1"),
    D (SL_D_THINKING, -1, .text = "The user wants the weather in two cities."),
    D (SL_D_TEXT, -1, .text = "Let me check both."),
    D (SL_D_TOOL_CALL, 0, .id = "call_a", .name = "get_weather", .text = ""),
    D (SL_D_TOOL_CALL, 0, .text = "{\"city\": \"Paris\", \"units\": [\"c\", \"f\"]}"),
    D (SL_D_TOOL_CALL, 1, .id = "call_b", .name = "get_weather", .text = "{\"city\":"),
    D (SL_D_TOOL_CALL, 1, .text = " \"Tromsø \\\"north\\\"\"}"),
    D (SL_D_FINISH, -1, .finr = "tool_calls"),
    D (SL_D_USAGE, -1, .usage = true),
    D (SL_D_DONE, -1),
    END_OF_SCRIPT
};

static const step_t s_anthropic [] = {
    D (SL_D_THINKING, 0, .text = "I should search first, then answer with sources."),
    D (SL_D_SIGNATURE, 0, .sig = "EqQBCkYIBRgCKkB"),
    D (SL_D_BLOCK_STOP, 0),
    D (SL_D_REDACTED, 1, .text = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVy"),
    D (SL_D_BLOCK_STOP, 1),
    D (SL_D_SERVER_TOOL_USE, 2, .id = "srvtoolu_1", .name = "web_search", .text = ""),
    D (SL_D_SERVER_TOOL_USE, 2, .text = "{\"query\": \"sluice proxy\"}"),
    D (SL_D_BLOCK_STOP, 2),
    D (SL_D_SERVER_TOOL_RESULT, 3, .id = "srvtoolu_1", .name = "web_search_tool_result",
       .body = "[{\"type\":\"web_search_result\",\"url\":\"https://example.org\"}]"),
    D (SL_D_BLOCK_STOP, 3),
    D (SL_D_TEXT, 4, .text = "Sluice holds tool calls until they are complete."),
    D (SL_D_CITATION, 4, .body = "{\"url\":\"https://example.org\",\"cited_text\":\"holds\"}"),
    D (SL_D_BLOCK_STOP, 4),
    D (SL_D_TOOL_CALL, 5, .id = "toolu_1", .name = "run_shell", .text = ""),
    D (SL_D_TOOL_CALL, 5, .text = "{\"command\": \"ls -la /tmp\"}"),
    D (SL_D_BLOCK_STOP, 5),
    D (SL_D_FINISH, -1, .finr = "tool_use"),
    D (SL_D_DONE, -1),
    END_OF_SCRIPT
};

static const step_t s_gemini [] = {
    D (SL_D_THINKING, 0, .text = "**Planning** I will read the theme first.", .flags = SL_F_SUMMARY),
    D (SL_D_TEXT, 1, .text = "Reading the theme and the screens."),
    D (SL_D_SIGNATURE, 1, .sig = "CiIB0e2Kb6Syj1a961Ef"),
    D (SL_D_TOOL_CALL, 0, .name = "read_theme", .text = "{}"),
    D (SL_D_TOOL_CALL, 1, .name = "read_screen", .text = "{\"id\":\"A\"}"),
    D (SL_D_TOOL_CALL, 0, .name = "read_screen", .text = ""),
    D (SL_D_TOOL_CALL, 0, .text = "{\"id\":\"B\",\"deep\":{\"x\":[1,2,{\"y\":null}]}}"),
    D (SL_D_FINISH, -1, .finr = "STOP"),
    D (SL_D_USAGE, -1, .usage = true),
    D (SL_D_DONE, -1),
    END_OF_SCRIPT
};

static const step_t s_responses [] = {
    D (SL_D_THINKING, 0, .id = "rs_1", .text = "Summary of the plan.", .flags = SL_F_SUMMARY),
    D (SL_D_SIGNATURE, 0, .sig = "gAAAAABencrypted"),
    D (SL_D_BLOCK_STOP, 0),
    D (SL_D_TOOL_CALL, 1, .id = "fc_1", .cid = "call_1", .name = "lookup", .text = ""),
    D (SL_D_TOOL_CALL, 1, .id = "fc_1", .text = "{\"q\":\"double \\\\ backslash\"}"),
    D (SL_D_BLOCK_STOP, 1),
    D (SL_D_TEXT, 2, .id = "msg_1", .text = "Here is what I found."),
    D (SL_D_BLOCK_STOP, 2),
    D (SL_D_FINISH, -1, .finr = "completed"),
    D (SL_D_DONE, -1),
    END_OF_SCRIPT
};

static const step_t s_index0_and_fragments [] = {
    D (SL_D_TOOL_CALL, 0, .id = "tooluse_", .name = "get_", .text = ""),
    D (SL_D_TOOL_CALL, 0, .id = "Ab12", .text = ""),
    D (SL_D_TOOL_CALL, 0, .name = "weather", .text = ""),
    D (SL_D_TOOL_CALL, 0, .text = "{\"city\":\"Oslo\"}"),
    D (SL_D_TOOL_CALL, 0, .id = "call_2", .name = "get_time", .text = "\"{\\\"tz\\\":\\\"CET\\\"}\""),
    D (SL_D_TOOL_CALL, 0, .id = "call_3", .name = "noop", .text = ""),
    D (SL_D_DONE, -1),
    END_OF_SCRIPT
};

static const step_t s_cut_short [] = {
    D (SL_D_TEXT, -1, .text = "Writing the file now."),
    D (SL_D_TOOL_CALL, 0, .id = "call_w", .name = "write_file", .text = "{\"path\":\"/tmp/x\",\"body\":\"lo"),
    D (SL_D_FINISH, -1, .finr = "length"),
    D (SL_D_DONE, -1),
    END_OF_SCRIPT
};

static const step_t s_failed [] = {
    D (SL_D_THINKING, -1, .text = "We need to call the tool with invalid parameters."),
    { .type = SL_MSG_ERROR, .id = "invalid_request_error", .text = "Tool call validation failed" },
    D (SL_D_TEXT, -1, .text = "never seen"),
    END_OF_SCRIPT
};

static const step_t *s_scripts [] = {
    s_openai, s_anthropic, s_gemini, s_responses, s_index0_and_fragments, s_cut_short, s_failed
};
#define SCRIPTS (sizeof s_scripts / sizeof s_scripts [0])

//  --------------------------------------------------------------------------
//  Turning scripts into messages

typedef struct {
    sl_msg_t *msgs;
    size_t count;
} list_t;

static void
s_list_add (list_t *l, const sl_msg_t *m)
{
    l->msgs = realloc (l->msgs, (l->count + 1) * sizeof (sl_msg_t));
    l->msgs [l->count++] = *m;
}

static sl_msg_t
s_message (const step_t *st, uint8_t sid_byte)
{
    sl_msg_t m;
    sl_msg_init (&m, st->type == SL_MSG_ERROR ? SL_MSG_ERROR : SL_MSG_DELTA);
    memset (m.sid, sid_byte, SL_SID_SIZE);
    if (st->type == SL_MSG_ERROR) {
        m.code = sl_str (st->id);
        m.message = sl_str (st->text);
        m.flags = SL_F_UPSTREAM;
        return m;
    }
    m.kind = (uint8_t) st->kind;
    m.index = st->index;
    m.id = sl_str (st->id);
    m.call_id = sl_str (st->cid);
    m.name = sl_str (st->name);
    m.text = sl_str (st->text);
    m.sig = sl_str (st->sig);
    m.body = sl_str (st->body);
    m.finish_raw = sl_str (st->finr);
    m.flags = st->flags;
    if (st->usage) {
        m.has_usage = true;
        m.usage = (sl_usage_t) { 120, 33, 153, 100, -1, 12 };
    }
    return m;
}

//  START, the script's messages (fragments cut at random when seed != 0),
//  END. Strings point into the script literals.
static void
s_build (const step_t *script, unsigned seed, uint8_t sid_byte, list_t *out)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_START);
    memset (m.sid, sid_byte, SL_SID_SIZE);
    s_list_add (out, &m);
    for (const step_t *st = script; st->kind >= 0; st++) {
        m = s_message (st, sid_byte);
        size_t len = m.text.len;
        bool cuttable = m.type == SL_MSG_DELTA && len >= 2;
        int pieces = seed && cuttable ? 1 + rand_r (&seed) % MAX_PIECES : 1;
        if (cuttable && (size_t) pieces > len)
            pieces = (int) len;
        size_t at = 0;
        for (int p = 0; p < pieces; p++) {
            size_t left = len - at;
            size_t take = p == pieces - 1 ? left : 1 + (size_t) rand_r (&seed) % (left - (size_t) (pieces - p - 1));
            sl_msg_t piece = m;
            piece.text = sl_str_n (m.text.ptr + at, take);
            if (p > 0) {
                //  Later pieces carry only the content, as providers send them.
                piece.id = piece.call_id = piece.name = piece.sig = SL_STR_NULL;
                if (m.kind == SL_D_TEXT && m.id.ptr)
                    piece.id = m.id;    //  Responses repeats the item id
            }
            s_list_add (out, &piece);
            at += take;
            if (at == len)
                break;
        }
    }
    sl_msg_init (&m, SL_MSG_END);
    memset (m.sid, sid_byte, SL_SID_SIZE);
    s_list_add (out, &m);
    for (size_t i = 0; i < out->count; i++)
        out->msgs [i].seq = 0;          //  numbered below, per stream
}

static void
s_number (list_t *l)
{
    for (size_t i = 0; i < l->count; i++)
        l->msgs [i].seq = i;
}

//  --------------------------------------------------------------------------
//  Collecting output

//  Encoded output messages. With skip_deltas, block_delta messages are left
//  out and sequence numbers zeroed (cutting fragments changes both).
typedef struct {
    sl_buf_t bytes [2];                 //  per stream, by sid byte parity
    bool skip_deltas;
} sink_t;

static void
s_sink (void *arg, const sl_msg_t *msg)
{
    sink_t *sink = arg;
    sl_msg_t m = *msg;
    if (sink->skip_deltas) {
        if (m.type == SL_MSG_BLOCK && m.kind == SL_B_DELTA)
            return;
        m.seq = 0;
    }
    sl_msg_encode (&m, &sink->bytes [m.sid [0] & 1]);
}

static void
s_sink_free (sink_t *sink)
{
    sl_buf_free (&sink->bytes [0]);
    sl_buf_free (&sink->bytes [1]);
}

static void
s_feed_all (const list_t *l, sink_t *sink)
{
    sl_agg_t *agg = sl_agg_new ();
    for (size_t i = 0; i < l->count; i++)
        sl_agg_feed (agg, &l->msgs [i], s_sink, sink);
    cr_assert_eq (sl_agg_streams (agg), 0, "every stream ended");
    sl_agg_destroy (&agg);
}

static bool
s_same (const sl_buf_t *a, const sl_buf_t *b)
{
    return a->len == b->len && (a->len == 0 || memcmp (a->data, b->data, a->len) == 0);
}

//  --------------------------------------------------------------------------
//  Properties

Test (sl_agg_props, random_resplits_of_fragments_give_identical_blocks)
{
    for (size_t s = 0; s < SCRIPTS; s++) {
        list_t whole = { 0 };
        s_build (s_scripts [s], 0, 0x10, &whole);
        s_number (&whole);
        sink_t expected = { .skip_deltas = true };
        s_feed_all (&whole, &expected);
        cr_assert_gt (expected.bytes [0].len, 0);
        for (unsigned seed = 1; seed <= SEEDS; seed++) {
            list_t cut = { 0 };
            s_build (s_scripts [s], seed * 7919 + (unsigned) s, 0x10, &cut);
            s_number (&cut);
            sink_t got = { .skip_deltas = true };
            s_feed_all (&cut, &got);
            cr_assert (s_same (&expected.bytes [0], &got.bytes [0]),
                       "script %zu seed %u: %zu deltas instead of %zu change the blocks",
                       s, seed, cut.count, whole.count);
            s_sink_free (&got);
            free (cut.msgs);
        }
        s_sink_free (&expected);
        free (whole.msgs);
    }
}

Test (sl_agg_props, random_batching_and_interleaving_give_identical_output)
{
    sl_codec_t *codec = sl_codec_new ();
    for (size_t s = 0; s < SCRIPTS; s++) {
        size_t t = (s + 3) % SCRIPTS;   //  the other stream's script
        for (unsigned seed = 1; seed <= SEEDS; seed++) {
            unsigned r = seed * 104729 + (unsigned) s;
            list_t a = { 0 }, b = { 0 };
            s_build (s_scripts [s], r, 0x20, &a);
            s_build (s_scripts [t], r + 1, 0x21, &b);
            s_number (&a);
            s_number (&b);
            //  Each stream alone, straight into an aggregator.
            sink_t expected = { 0 };
            s_feed_all (&a, &expected);
            s_feed_all (&b, &expected);
            //  Both interleaved at random, batched into frames at random,
            //  through the codec.
            sink_t got = { 0 };
            sl_agg_t *agg = sl_agg_new ();
            size_t ia = 0, ib = 0;
            sl_buf_t frame = { 0 };
            while (ia < a.count || ib < b.count) {
                int batch = 1 + rand_r (&r) % 8;
                sl_buf_reset (&frame);
                for (int k = 0; k < batch && (ia < a.count || ib < b.count); k++) {
                    bool take_a = ib == b.count || (ia < a.count && rand_r (&r) % 2);
                    sl_msg_encode (take_a ? &a.msgs [ia++] : &b.msgs [ib++], &frame);
                }
                size_t offset = 0;
                sl_msg_t m;
                int rc;
                while ((rc = sl_codec_decode (codec, frame.data, frame.len, &offset, &m)) == 0)
                    sl_agg_feed (agg, &m, s_sink, &got);
                cr_assert_eq (rc, -1, "the frame decodes whole: %s", sl_codec_error (codec));
            }
            cr_assert_eq (sl_agg_streams (agg), 0);
            sl_agg_destroy (&agg);
            sl_buf_free (&frame);
            for (int k = 0; k < 2; k++)
                cr_assert (s_same (&expected.bytes [k], &got.bytes [k]),
                           "scripts %zu+%zu seed %u: stream %d differs", s, t, seed, k);
            s_sink_free (&expected);
            s_sink_free (&got);
            free (a.msgs);
            free (b.msgs);
        }
    }
    sl_codec_destroy (&codec);
}

//  --------------------------------------------------------------------------
//  Byte re-splits through the whole replay

static void
s_collect (void *arg, const char *data, size_t size)
{
    sl_buf_append ((sl_buf_t *) arg, data, size);
}

//  Replay input in random pieces (seed 0: at once); the output.
static int
s_replay (const char *dialect, const char *input, size_t len, unsigned seed, sl_buf_t *out)
{
    sl_replay_opts_t opts = { .dialect = sl_dialect_parse (dialect) };
    sl_replay_t *r = sl_replay_new (&opts, s_collect, out, NULL);
    cr_assert_not_null (r);
    int rc = 0;
    for (size_t at = 0; at < len && rc == 0;) {
        size_t n = seed ? 1 + (size_t) rand_r (&seed) % 97 : len;
        if (n > len - at)
            n = len - at;
        rc = sl_replay_feed (r, input + at, n);
        at += n;
    }
    if (rc == 0)
        rc = sl_replay_finish (r);
    sl_replay_destroy (&r);
    return rc;
}

static void
s_check_resplits (const char *dialect, const char *name, const char *input, size_t len)
{
    sl_buf_t expected = { 0 };
    int rc = s_replay (dialect, input, len, 0, &expected);
    for (unsigned seed = 1; seed <= 8; seed++) {
        sl_buf_t got = { 0 };
        cr_assert_eq (s_replay (dialect, input, len, seed * 31337, &got), rc, "%s", name);
        cr_assert (s_same (&expected, &got), "%s: pieces (seed %u) change the output:\n%s\nvs\n%s",
                   name, seed, sl_buf_cstr (&expected), sl_buf_cstr (&got));
        sl_buf_free (&got);
    }
    sl_buf_free (&expected);
}

Test (sl_agg_props, random_byte_splits_of_a_capture_give_identical_output)
{
    const char *capture =
        "\xEF\xBB\xBF: keep-alive\r\n\r\n"
        "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Think.\"}}]}\r\n\r\n"
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Caf\\u00e9 \\ud83d\\ude00\"}}]}\r\r"
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"x\","
            "\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n"
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
            "\"function\":{\"arguments\":\"[1, 2]}\"}}]}}]}\n\n"
        "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
        "data: [DONE]";
    s_check_resplits ("openai", "synthetic capture", capture, strlen (capture));
}

Test (sl_agg_props, random_byte_splits_of_every_decodable_recording)
{
    static rec_file_t files [256];
    size_t count = rec_list (files, 256, "sl_agg_props");
    int checked = 0;
    for (size_t f = 0; f < count; f++) {
        if (!sl_replay_can_decode (files [f].dialect))
            continue;
        sl_buf_t content = { 0 };
        cr_assert (rec_read (files [f].path, &content), "%s", files [f].path);
        s_check_resplits (files [f].dialect_name, files [f].name, content.data, content.len);
        sl_buf_free (&content);
        checked++;
    }
    cr_expect_gt (checked, 0, "at least one dialect is decodable");
}
