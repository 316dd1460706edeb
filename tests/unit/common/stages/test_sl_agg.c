/*  Unit tests: common/stages/sl_agg (the block state machine).

    Synthetic deltas, one test per identity convention seen in real streams
    and per block kind, independent of any decoder; then arguments, finish,
    usage, errors, limits and the snapshot.
*/
#include <criterion/criterion.h>
#include <stdio.h>

#include "common/base/sl_json.h"
#include "common/stages/sl_agg.h"
#include "tests/unit/recorder.h"

static sl_agg_t *agg;
static recorder_t rec;

static void
s_start (void)
{
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.model = sl_str ("m");
    sl_agg_feed (agg, &start, recorder_emit, &rec);
}

static void
s_setup (void)
{
    agg = sl_agg_new ();
    memset (&rec, 0, sizeof rec);
    s_start ();
}

static void
s_teardown (void)
{
    sl_agg_destroy (&agg);
    recorder_clear (&rec);
}

//  --------------------------------------------------------------------------
//  Building deltas

static sl_msg_t
s_d (int kind, int index)
{
    sl_msg_t d = recorder_msg (SL_MSG_DELTA, kind);
    d.index = index;
    return d;
}

static void
s_feed (sl_msg_t d)
{
    sl_agg_feed (agg, &d, recorder_emit, &rec);
}

static void
s_text (int index, const char *text)
{
    sl_msg_t d = s_d (SL_D_TEXT, index);
    d.text = sl_str (text);
    s_feed (d);
}

static void
s_thinking (int index, const char *text, uint32_t flags)
{
    sl_msg_t d = s_d (SL_D_THINKING, index);
    d.text = sl_str (text);
    d.flags = flags;
    s_feed (d);
}

static void
s_kind_text (int kind, int index, const char *text)
{
    sl_msg_t d = s_d (kind, index);
    d.text = sl_str (text);
    s_feed (d);
}

static void
s_signature (int index, const char *sig)
{
    sl_msg_t d = s_d (SL_D_SIGNATURE, index);
    d.sig = sl_str (sig);
    s_feed (d);
}

static void
s_call_kind (int kind, int index, const char *id, const char *call_id, const char *name,
             const char *args)
{
    sl_msg_t d = s_d (kind, index);
    d.id = sl_str (id);
    d.call_id = sl_str (call_id);
    d.name = sl_str (name);
    d.text = sl_str (args);
    s_feed (d);
}

static void
s_call (int index, const char *id, const char *name, const char *args)
{
    s_call_kind (SL_D_TOOL_CALL, index, id, NULL, name, args);
}

static void
s_body_delta (int kind, int index, const char *id, const char *name, const char *body)
{
    sl_msg_t d = s_d (kind, index);
    d.id = sl_str (id);
    d.name = sl_str (name);
    d.body = sl_str (body);
    s_feed (d);
}

static void
s_stop (int index)
{
    s_feed (s_d (SL_D_BLOCK_STOP, index));
}

static void
s_finish (const char *raw)
{
    sl_msg_t d = s_d (SL_D_FINISH, -1);
    d.finish_raw = sl_str (raw);
    s_feed (d);
}

static void
s_usage (int64_t in, int64_t out, int64_t total, int64_t cache_read, int64_t cache_write,
         int64_t reasoning)
{
    sl_msg_t d = s_d (SL_D_USAGE, -1);
    d.has_usage = true;
    d.usage = (sl_usage_t) { in, out, total, cache_read, cache_write, reasoning };
    s_feed (d);
}

static void
s_done (void)
{
    s_feed (s_d (SL_D_DONE, -1));
}

static void
s_error (const char *code)
{
    sl_msg_t e = recorder_msg (SL_MSG_ERROR, 0);
    e.code = sl_str (code);
    e.message = sl_str ("it failed");
    e.flags = SL_F_UPSTREAM;
    sl_agg_feed (agg, &e, recorder_emit, &rec);
}

static void
s_end (void)
{
    sl_msg_t e = recorder_msg (SL_MSG_END, 0);
    sl_agg_feed (agg, &e, recorder_emit, &rec);
}

//  --------------------------------------------------------------------------
//  Reading the output

//  The n-th message of a type and kind (kind < 0: any), or NULL.
static sl_msg_t *
s_nth (int type, int kind, int n)
{
    for (size_t i = 0; i < rec.count; i++)
        if (rec.msgs [i]->type == type && (kind < 0 || rec.msgs [i]->kind == kind) && n-- == 0)
            return rec.msgs [i];
    return NULL;
}

static int
s_count (int type, int kind)
{
    int n = 0;
    for (size_t i = 0; i < rec.count; i++)
        if (rec.msgs [i]->type == type && (kind < 0 || rec.msgs [i]->kind == kind))
            n++;
    return n;
}

static sl_msg_t *
s_end_block (int n)
{
    return s_nth (SL_MSG_BLOCK, SL_B_END, n);
}

static sl_msg_t *
s_fin (void)
{
    return s_nth (SL_MSG_BLOCK, SL_B_FINISH, 0);
}

static int
s_blocks (void)
{
    return s_count (SL_MSG_BLOCK, SL_B_END);
}

//  What every stream's output must satisfy, whatever it holds.
static void
s_check_invariants (void)
{
    int32_t next = 0;
    bool open = false;
    int32_t open_index = -1;
    for (size_t i = 0; i < rec.count; i++) {
        const sl_msg_t *m = rec.msgs [i];
        cr_assert_eq (m->seq, i, "sequence numbers are contiguous");
        if (m->type != SL_MSG_BLOCK)
            continue;
        if (m->kind == SL_B_START) {
            cr_assert_not (open, "blocks are sequential");
            cr_assert_eq (m->index, next, "indices are contiguous from 0");
            next++;
            open = true;
            open_index = m->index;
        }
        else
        if (m->kind == SL_B_DELTA)
            cr_assert (open && m->index == open_index, "a delta belongs to the open block");
        else
        if (m->kind == SL_B_END) {
            cr_assert (open && m->index == open_index, "an end closes the open block");
            open = false;
            if (m->flags & SL_F_ARGS_VALID)
                cr_assert (sl_json_valid (m->text) && sl_json_type (m->text) == SL_JSON_OBJECT,
                           "ARGS_VALID arguments are a JSON object: %.*s", (int) m->text.len, m->text.ptr);
            if (m->flags & SL_F_INCOMPLETE)
                cr_assert_not (m->flags & SL_F_ARGS_VALID, "incomplete is never valid");
        }
        else
        if (m->kind == SL_B_FINISH)
            cr_assert_not (open, "the finish comes after every block closed");
    }
}

static bool
s_eq (sl_str_t s, const char *expected)
{
    return expected ? sl_str_eq (s, expected) : s.ptr == NULL;
}

//  Check a block_end: kind, index, id, name, content.
static void
s_expect_block (int n, int kind, const char *id, const char *name, const char *text)
{
    sl_msg_t *b = s_end_block (n);
    cr_assert_not_null (b, "block %d exists", n);
    cr_expect_eq (b->block, kind, "block %d kind %s", n, sl_block_kind_name (b->block));
    cr_expect_eq (b->index, n, "block %d index", n);
    cr_expect (s_eq (b->id, id), "block %d id '%.*s'", n, (int) b->id.len, b->id.ptr);
    cr_expect (s_eq (b->name, name), "block %d name '%.*s'", n, (int) b->name.len, b->name.ptr);
    cr_expect (s_eq (b->text, text), "block %d text '%.*s' expected '%s'", n, (int) b->text.len,
               b->text.ptr, text ? text : "(absent)");
}

TestSuite (sl_agg, .init = s_setup, .fini = s_teardown);

//  --------------------------------------------------------------------------
//  Identity conventions

//  OpenAI: a unique index per call, the id and name on the first fragment.
Test (sl_agg, openai_index_per_call_id_on_first_fragment)
{
    s_text (-1, "Hel");
    s_text (-1, "lo");
    s_call (0, "c1", "f", "");
    s_call (0, NULL, NULL, "{\"a\":");
    s_call (0, NULL, NULL, "1}");
    s_call (1, "c2", "g", "");
    s_call (1, NULL, NULL, "{}");
    s_finish ("tool_calls");
    s_done ();
    s_end ();
    cr_assert_eq (s_blocks (), 3);
    s_expect_block (0, SL_BK_TEXT, NULL, NULL, "Hello");
    s_expect_block (1, SL_BK_TOOL_CALL, "c1", "f", "{\"a\":1}");
    s_expect_block (2, SL_BK_TOOL_CALL, "c2", "g", "{}");
    cr_expect (s_end_block (1)->flags & SL_F_ARGS_VALID);
    cr_expect_eq (s_fin ()->finish, SL_FIN_TOOL_CALLS);
    cr_expect (sl_str_eq (s_fin ()->finish_raw, "tool_calls"));
    cr_expect_eq (rec.msgs [rec.count - 1]->type, SL_MSG_END, "end is last");
    cr_expect_eq (sl_agg_streams (agg), 0, "stream state freed at end");
    s_check_invariants ();
}

//  Ollama and some OpenAI-compatible servers: every call at index 0, told
//  apart by a new id, arguments streamed.
Test (sl_agg, every_call_at_index_0_told_apart_by_a_new_id)
{
    s_call (0, "a", "f", "{\"x\":");
    s_call (0, NULL, NULL, "1}");
    s_call (0, "b", "g", "{\"y\"");
    s_call (0, NULL, NULL, ":2}");
    s_call (0, "c", "h", "{}");
    s_done ();
    cr_assert_eq (s_blocks (), 3);
    s_expect_block (0, SL_BK_TOOL_CALL, "a", "f", "{\"x\":1}");
    s_expect_block (1, SL_BK_TOOL_CALL, "b", "g", "{\"y\":2}");
    s_expect_block (2, SL_BK_TOOL_CALL, "c", "h", "{}");
    s_check_invariants ();
}

//  At the same index, a new id while the arguments are still open is a
//  piece of the same call's identity, not a new call: a new call at the
//  same index is told by complete arguments only. A server that drops a
//  call half-way and starts another there gets one call that is not
//  valid (never released as the model sent it), not a cut-off call the
//  client could be given.
Test (sl_agg, new_id_while_arguments_are_open_is_a_piece_of_the_same_call)
{
    s_call (0, "a", "f", "{\"x\":");
    s_call (0, "b", "g", "{}");
    s_done ();
    cr_assert_eq (s_blocks (), 1);
    s_expect_block (0, SL_BK_TOOL_CALL, "ab", "fg", "{\"x\":{}");
    cr_expect_not (s_end_block (0)->flags & SL_F_ARGS_VALID);
    s_check_invariants ();
}

//  Bedrock models behind OpenAI-compatible layers: the id and the name in
//  pieces at the same index, arriving while the arguments are still
//  incomplete JSON. Each call is one block whose block_start carries the
//  whole identity; the next call at index 0 is told apart by the first
//  one's complete arguments.
Test (sl_agg, id_and_name_in_pieces_between_argument_fragments_at_index_0)
{
    s_text (-1, "Let me look.");
    s_call (0, "tooluse_", "get_", "{\"ci");
    s_call (0, "Ab12", "wea", "ty\":");
    s_call (0, "Cd", "ther", "\"Paris\"}");
    s_call (0, "tooluse_", "read_", "");
    s_call (0, "Zz9", "fi", "{\"pa");
    s_call (0, "y", "le", "th\":\"/tmp\"}");
    s_finish ("tool_calls");
    s_done ();
    cr_assert_eq (s_blocks (), 3);
    s_expect_block (1, SL_BK_TOOL_CALL, "tooluse_Ab12Cd", "get_weather", "{\"city\":\"Paris\"}");
    s_expect_block (2, SL_BK_TOOL_CALL, "tooluse_Zz9y", "read_file", "{\"path\":\"/tmp\"}");
    for (int k = 1; k <= 2; k++) {
        cr_expect (s_end_block (k)->flags & SL_F_ARGS_VALID, "call %d valid", k);
        sl_msg_t *start = s_nth (SL_MSG_BLOCK, SL_B_START, k);
        cr_assert_not_null (start);
        cr_expect (sl_str_eq (start->id, k == 1 ? "tooluse_Ab12Cd" : "tooluse_Zz9y"), "block_start %d: whole id", k);
        cr_expect (sl_str_eq (start->name, k == 1 ? "get_weather" : "read_file"), "block_start %d: whole name", k);
    }
    cr_expect_eq (s_fin ()->finish, SL_FIN_TOOL_CALLS);
    s_check_invariants ();
}

//  The same with the first call at index 1 (a text block first, as
//  Anthropic's OpenAI-compatible layer numbers calls), the next at 2.
Test (sl_agg, id_and_name_in_pieces_between_argument_fragments_at_index_1)
{
    s_text (-1, "Reading it.");
    s_call (1, "call_", "read", "");
    s_call (1, "x7", NULL, "{\"path\"");
    s_call (1, "Q", "_file", ":\"/etc/hosts\"");
    s_call (1, NULL, NULL, "}");
    s_call (2, "call_", "get_", "{\"city\":");
    s_call (2, "k2", "weather", "\"Oslo\"}");
    s_finish ("tool_calls");
    s_done ();
    cr_assert_eq (s_blocks (), 3);
    s_expect_block (1, SL_BK_TOOL_CALL, "call_x7Q", "read_file", "{\"path\":\"/etc/hosts\"}");
    s_expect_block (2, SL_BK_TOOL_CALL, "call_k2", "get_weather", "{\"city\":\"Oslo\"}");
    cr_expect (s_end_block (1)->flags & SL_F_ARGS_VALID);
    cr_expect (s_end_block (2)->flags & SL_F_ARGS_VALID);
    sl_msg_t *start = s_nth (SL_MSG_BLOCK, SL_B_START, 1);
    cr_expect (sl_str_eq (start->id, "call_x7Q") && sl_str_eq (start->name, "read_file"));
    start = s_nth (SL_MSG_BLOCK, SL_B_START, 2);
    cr_expect (sl_str_eq (start->id, "call_k2") && sl_str_eq (start->name, "get_weather"));
    s_check_invariants ();
}

//  Bedrock through LiteLLM: the id and the name themselves in pieces,
//  before the arguments. block_start waits for the whole identity.
Test (sl_agg, id_and_name_arriving_in_fragments)
{
    s_text (-1, "Let me look.");
    s_call (0, "tooluse_", "get_", "");
    s_call (0, "Ab12", NULL, "");
    s_call (0, NULL, "weather", "");
    s_call (0, NULL, NULL, "{\"city\":");
    s_call (0, NULL, NULL, "\"Paris\"}");
    s_done ();
    cr_assert_eq (s_blocks (), 2);
    s_expect_block (1, SL_BK_TOOL_CALL, "tooluse_Ab12", "get_weather", "{\"city\":\"Paris\"}");
    sl_msg_t *start = s_nth (SL_MSG_BLOCK, SL_B_START, 1);
    cr_assert_not_null (start);
    cr_expect (sl_str_eq (start->id, "tooluse_Ab12"), "block_start has the whole id");
    cr_expect (sl_str_eq (start->name, "get_weather"), "block_start has the whole name");
    s_check_invariants ();
}

//  Servers that repeat the name (or id) on every fragment: one call.
Test (sl_agg, identity_repeated_on_every_fragment_is_one_call)
{
    s_call (0, "c1", "f", "{\"a\"");
    s_call (0, "c1", "f", ":");
    s_call (0, NULL, "f", "1}");
    s_done ();
    cr_assert_eq (s_blocks (), 1);
    s_expect_block (0, SL_BK_TOOL_CALL, "c1", "f", "{\"a\":1}");
}

//  Anthropic's OpenAI-compatible endpoint: the first call has index 1.
Test (sl_agg, first_index_1)
{
    s_text (-1, "Reading it.");
    s_call (1, "toolu_1", "read_file", "");
    s_call (1, NULL, NULL, "");
    s_call (1, NULL, NULL, "{\"pa");
    s_call (1, NULL, NULL, "th\": \"a.txt\"}");
    s_finish ("tool_calls");
    s_done ();
    cr_assert_eq (s_blocks (), 2);
    s_expect_block (0, SL_BK_TEXT, NULL, NULL, "Reading it.");
    s_expect_block (1, SL_BK_TOOL_CALL, "toolu_1", "read_file", "{\"path\": \"a.txt\"}");
    cr_expect (s_end_block (1)->flags & SL_F_ARGS_VALID);
    s_check_invariants ();
}

//  Gemini: the index is the part's position in its chunk and restarts in
//  every chunk. Text continues across chunks; a call at the same position
//  in the next chunk is another call (its arguments came whole).
Test (sl_agg, indices_restarting_per_chunk)
{
    s_thinking (0, "Thinking ", 0);
    s_thinking (0, "more.", 0);
    s_text (1, "The ");                 //  chunk: [thought, text]
    s_text (0, "answer ");              //  next chunk: [text]
    s_text (0, "is:");
    s_call (0, NULL, "f", "{\"a\":1}"); //  chunk: [call, call]
    s_call (1, NULL, "g", "{\"b\":2}");
    s_call (0, NULL, "h", "{}");        //  chunk: [call]
    s_finish ("STOP");
    s_done ();
    cr_assert_eq (s_blocks (), 5);
    s_expect_block (0, SL_BK_THINKING, NULL, NULL, "Thinking more.");
    s_expect_block (1, SL_BK_TEXT, NULL, NULL, "The answer is:");
    s_expect_block (2, SL_BK_TOOL_CALL, NULL, "f", "{\"a\":1}");
    s_expect_block (3, SL_BK_TOOL_CALL, NULL, "g", "{\"b\":2}");
    s_expect_block (4, SL_BK_TOOL_CALL, NULL, "h", "{}");
    cr_expect_eq (s_fin ()->finish, SL_FIN_TOOL_CALLS, "Gemini says STOP; calls make it tool_calls");
    cr_expect (sl_str_eq (s_fin ()->finish_raw, "STOP"), "the raw value is kept");
    s_check_invariants ();
}

//  Gemini: whole calls in one chunk, every one at position 0, no ids.
Test (sl_agg, whole_calls_in_one_chunk)
{
    s_call (0, NULL, "read_theme", "{}");
    s_call (0, NULL, "read_screen", "{\"id\":\"A\"}");
    s_call (0, NULL, "read_screen", "{\"id\":\"B\"}");
    s_done ();
    cr_assert_eq (s_blocks (), 3);
    s_expect_block (0, SL_BK_TOOL_CALL, NULL, "read_theme", "{}");
    s_expect_block (1, SL_BK_TOOL_CALL, NULL, "read_screen", "{\"id\":\"A\"}");
    s_expect_block (2, SL_BK_TOOL_CALL, NULL, "read_screen", "{\"id\":\"B\"}");
    for (int i = 0; i < 3; i++)
        cr_expect (s_end_block (i)->flags & SL_F_ARGS_VALID);
}

//  Gemini streamed arguments: a call named in one chunk at one position,
//  its argument fragments in later chunks at another.
Test (sl_agg, call_fragments_renumbered_by_the_provider)
{
    s_text (0, "Sure.");
    s_call (1, NULL, "get_weather", "");    //  chunk: [text, call start]
    s_call (0, NULL, NULL, "{\"city\":");   //  next chunks: [args]
    s_call (0, NULL, NULL, "\"Oslo\"}");
    s_call (0, NULL, "get_time", "");       //  a new call: the last one was complete
    s_call (0, NULL, NULL, "{\"tz\":\"CET\"}");
    s_done ();
    cr_assert_eq (s_blocks (), 3);
    s_expect_block (1, SL_BK_TOOL_CALL, NULL, "get_weather", "{\"city\":\"Oslo\"}");
    s_expect_block (2, SL_BK_TOOL_CALL, NULL, "get_time", "{\"tz\":\"CET\"}");
    s_check_invariants ();
}

//  Gemini streamed arguments: the same tool called again and again at
//  index 0, each call named first, its arguments after.
Test (sl_agg, same_tool_called_again_at_the_same_index)
{
    const char *ids [] = { "A", "B", "C" };
    for (int i = 0; i < 3; i++) {
        char args [32];
        snprintf (args, sizeof args, "{\"id\":\"%s\"}", ids [i]);
        s_call (0, NULL, "read_screen", "");
        s_call (0, NULL, NULL, "{\"id\":");
        s_call (0, NULL, NULL, args + 6);
    }
    s_done ();
    cr_assert_eq (s_blocks (), 3);
    s_expect_block (0, SL_BK_TOOL_CALL, NULL, "read_screen", "{\"id\":\"A\"}");
    s_expect_block (1, SL_BK_TOOL_CALL, NULL, "read_screen", "{\"id\":\"B\"}");
    s_expect_block (2, SL_BK_TOOL_CALL, NULL, "read_screen", "{\"id\":\"C\"}");
    s_check_invariants ();
}

//  The rule the others rest on: at the same index, once the arguments are
//  complete JSON, more non-blank text is a new call; whitespace is not.
Test (sl_agg, new_call_at_same_index_when_arguments_are_complete)
{
    s_call (0, NULL, "f", "{\"a\":");
    s_call (0, NULL, NULL, "1}");
    s_call (0, NULL, NULL, "\n ");
    s_call (0, NULL, NULL, "{\"b\":2}");
    s_done ();
    cr_assert_eq (s_blocks (), 2);
    s_expect_block (0, SL_BK_TOOL_CALL, NULL, "f", "{\"a\":1}");
    s_expect_block (1, SL_BK_TOOL_CALL, NULL, NULL, "{\"b\":2}");
    cr_expect (s_end_block (0)->flags & SL_F_ARGS_VALID);
    cr_expect (s_end_block (1)->flags & SL_F_ARGS_VALID);
}

//  The Responses API: an item id and a call_id, both kept; the argument
//  fragments carry the item id and the output index.
Test (sl_agg, responses_item_id_and_call_id)
{
    s_thinking (0, "Plan.", SL_F_SUMMARY);
    s_stop (0);
    s_call_kind (SL_D_TOOL_CALL, 1, "fc_1", "call_1", "get_weather", "");
    s_call_kind (SL_D_TOOL_CALL, 1, "fc_1", NULL, NULL, "{\"loc");
    s_call_kind (SL_D_TOOL_CALL, 1, "fc_1", NULL, NULL, "\":\"Rome\"}");
    s_stop (1);
    s_call_kind (SL_D_TOOL_CALL, 2, "fc_2", "call_2", "get_time", "");
    s_call_kind (SL_D_TOOL_CALL, 2, "fc_2", NULL, NULL, "{}");
    s_stop (2);
    s_finish ("completed");
    s_done ();
    cr_assert_eq (s_blocks (), 3);
    s_expect_block (1, SL_BK_TOOL_CALL, "fc_1", "get_weather", "{\"loc\":\"Rome\"}");
    cr_expect (sl_str_eq (s_end_block (1)->call_id, "call_1"));
    s_expect_block (2, SL_BK_TOOL_CALL, "fc_2", "get_time", "{}");
    cr_expect (sl_str_eq (s_end_block (2)->call_id, "call_2"));
    sl_msg_t *start = s_nth (SL_MSG_BLOCK, SL_B_START, 1);
    cr_expect (sl_str_eq (start->call_id, "call_1"), "block_start carries the call_id");
    cr_expect_eq (s_fin ()->finish, SL_FIN_TOOL_CALLS);
    s_check_invariants ();
}

//  Providers with explicit block ends: a stop closes the block at once,
//  and a stop for a block never opened (it was empty) changes nothing.
Test (sl_agg, block_stop_closes_the_named_block)
{
    s_text (0, "Hi");
    s_stop (0);
    cr_expect_eq (s_blocks (), 1, "closed by its stop, before anything else arrives");
    s_stop (5);
    cr_expect_eq (sl_agg_ignored (agg), 1);
    s_text (1, "again");
    s_stop (1);
    s_done ();
    cr_assert_eq (s_blocks (), 2, "two text blocks, separated by the stop");
    s_expect_block (1, SL_BK_TEXT, NULL, NULL, "again");
    s_check_invariants ();
}

//  --------------------------------------------------------------------------
//  Kinds

Test (sl_agg, kind_text)
{
    s_text (-1, "");                    //  OpenAI's opening empty content opens nothing
    s_text (-1, "a");
    s_text (-1, "b");
    s_done ();
    cr_assert_eq (s_blocks (), 1);
    s_expect_block (0, SL_BK_TEXT, NULL, NULL, "ab");
    cr_expect_eq (s_count (SL_MSG_BLOCK, SL_B_DELTA), 2, "one block_delta per fragment");
    cr_expect_eq (s_fin ()->finish, SL_FIN_STOP, "no finish reason: stop");
}

Test (sl_agg, kind_thinking_with_signature)
{
    s_thinking (0, "Let me ", 0);
    s_thinking (0, "think.", 0);
    s_signature (0, "EqQB");
    s_stop (0);
    s_text (1, "Done.");
    s_stop (1);
    s_done ();
    cr_assert_eq (s_blocks (), 2);
    s_expect_block (0, SL_BK_THINKING, NULL, NULL, "Let me think.");
    cr_expect (sl_str_eq (s_end_block (0)->sig, "EqQB"));
    cr_expect_not (s_end_block (0)->flags & SL_F_SUMMARY);
    s_check_invariants ();
}

Test (sl_agg, kind_thinking_signature_only_block_is_kept)
{
    s_thinking (0, "", 0);              //  the provider's empty block start
    s_signature (0, "sig-only");
    s_stop (0);
    s_text (1, "Answer.");
    s_done ();
    cr_assert_eq (s_blocks (), 2);
    s_expect_block (0, SL_BK_THINKING, NULL, NULL, "");
    cr_expect (sl_str_eq (s_end_block (0)->sig, "sig-only"));
    s_check_invariants ();
}

Test (sl_agg, kind_thinking_encrypted_reasoning_with_an_id)
{
    //  Responses: a reasoning item with no summary, only encrypted content.
    sl_msg_t d = s_d (SL_D_THINKING, 0);
    d.id = sl_str ("rs_1");
    d.text = sl_str ("");
    d.sig = sl_str ("gAAAA");
    s_feed (d);
    s_stop (0);
    s_done ();
    cr_assert_eq (s_blocks (), 1);
    s_expect_block (0, SL_BK_THINKING, "rs_1", NULL, "");
    cr_expect (sl_str_eq (s_end_block (0)->sig, "gAAAA"));
}

Test (sl_agg, kind_thinking_summary_and_reasoning_text_stay_apart)
{
    s_thinking (0, "Summary.", SL_F_SUMMARY);
    s_thinking (0, "Raw reasoning.", 0);
    s_thinking (0, "More summary.", SL_F_SUMMARY);
    s_done ();
    cr_assert_eq (s_blocks (), 3);
    s_expect_block (0, SL_BK_THINKING, NULL, NULL, "Summary.");
    cr_expect (s_end_block (0)->flags & SL_F_SUMMARY);
    cr_expect (s_nth (SL_MSG_BLOCK, SL_B_START, 0)->flags & SL_F_SUMMARY, "block_start says summary");
    s_expect_block (1, SL_BK_THINKING, NULL, NULL, "Raw reasoning.");
    cr_expect_not (s_end_block (1)->flags & SL_F_SUMMARY);
    s_expect_block (2, SL_BK_THINKING, NULL, NULL, "More summary.");
}

Test (sl_agg, kind_redacted_thinking)
{
    s_kind_text (SL_D_REDACTED, 0, "EmwKAhgB");
    s_stop (0);
    s_kind_text (SL_D_REDACTED, 1, "EqgBCkYI");
    s_stop (1);
    s_text (2, "Hi.");
    s_done ();
    cr_assert_eq (s_blocks (), 3);
    s_expect_block (0, SL_BK_REDACTED_THINKING, NULL, NULL, "EmwKAhgB");
    s_expect_block (1, SL_BK_REDACTED_THINKING, NULL, NULL, "EqgBCkYI");
    s_expect_block (2, SL_BK_TEXT, NULL, NULL, "Hi.");
}

Test (sl_agg, kind_refusal)
{
    s_kind_text (SL_D_REFUSAL, -1, "I'm sorry, ");
    s_kind_text (SL_D_REFUSAL, -1, "I can't.");
    s_finish ("refusal");
    s_done ();
    cr_assert_eq (s_blocks (), 1);
    s_expect_block (0, SL_BK_REFUSAL, NULL, NULL, "I'm sorry, I can't.");
    cr_expect_eq (s_fin ()->finish, SL_FIN_REFUSAL);
}

Test (sl_agg, kind_tool_call_start_waits_for_complete_arguments)
{
    s_call (0, "c1", "f", "");
    cr_expect_eq (s_count (SL_MSG_BLOCK, SL_B_START), 0, "identity may still grow");
    s_call (0, NULL, NULL, "{");
    cr_expect_eq (s_count (SL_MSG_BLOCK, SL_B_START), 0, "and while the arguments are open");
    s_call (0, NULL, NULL, "}");
    cr_expect_eq (s_count (SL_MSG_BLOCK, SL_B_START), 1);
    cr_expect_eq (s_count (SL_MSG_BLOCK, SL_B_DELTA), 1, "the arguments so far, in one fragment");
    cr_expect (sl_str_eq (s_nth (SL_MSG_BLOCK, SL_B_DELTA, 0)->text, "{}"));
    s_done ();
    s_expect_block (0, SL_BK_TOOL_CALL, "c1", "f", "{}");
    s_check_invariants ();
}

Test (sl_agg, kind_server_tool_use_and_result)
{
    s_call_kind (SL_D_SERVER_TOOL_USE, 1, "srvtoolu_1", NULL, "web_search", "");
    s_call_kind (SL_D_SERVER_TOOL_USE, 1, NULL, NULL, NULL, "{\"query\": \"sluice\"}");
    s_stop (1);
    s_body_delta (SL_D_SERVER_TOOL_RESULT, 2, "srvtoolu_1", "web_search_tool_result",
                  "[{\"type\":\"web_search_result\",\"url\":\"https://example.org\"}]");
    s_stop (2);
    s_finish ("end_turn");
    s_done ();
    cr_assert_eq (s_blocks (), 2);
    s_expect_block (0, SL_BK_SERVER_TOOL_USE, "srvtoolu_1", "web_search", "{\"query\": \"sluice\"}");
    cr_expect (s_end_block (0)->flags & SL_F_ARGS_VALID);
    s_expect_block (1, SL_BK_SERVER_TOOL_RESULT, "srvtoolu_1", "web_search_tool_result", "");
    cr_expect (sl_str_eq (s_end_block (1)->body,
                          "[{\"type\":\"web_search_result\",\"url\":\"https://example.org\"}]"));
    cr_expect_eq (s_fin ()->finish, SL_FIN_STOP, "server tools are not the client's calls");
    s_check_invariants ();
}

Test (sl_agg, kind_citation_attached_to_its_text)
{
    s_text (3, "Sluice is a proxy.");
    s_body_delta (SL_D_CITATION, 3, NULL, NULL, "{\"url\":\"https://a\"}");
    s_body_delta (SL_D_CITATION, 3, NULL, NULL, " {\"url\":\"https://b\"} ");
    s_stop (3);
    s_done ();
    cr_assert_eq (s_blocks (), 1);
    s_expect_block (0, SL_BK_TEXT, NULL, NULL, "Sluice is a proxy.");
    cr_expect (sl_str_eq (s_end_block (0)->body,
                          "{\"citations\":[{\"url\":\"https://a\"},{\"url\":\"https://b\"}]}"),
               "%.*s", (int) s_end_block (0)->body.len, s_end_block (0)->body.ptr);
}

Test (sl_agg, kind_citation_block_when_no_text_is_open)
{
    //  Gemini's citation metadata names no part: with no text open, the
    //  citations are a block of their own.
    s_call (0, NULL, "f", "{}");
    s_body_delta (SL_D_CITATION, -1, NULL, NULL, "{\"uri\":\"https://a\"}");
    s_body_delta (SL_D_CITATION, -1, NULL, NULL, "{\"uri\":\"https://b\"}");
    s_body_delta (SL_D_CITATION, -1, NULL, NULL, "not json");
    s_done ();
    cr_assert_eq (s_blocks (), 2);
    s_expect_block (1, SL_BK_CITATION, NULL, NULL, "");
    cr_expect (sl_str_eq (s_end_block (1)->body,
                          "{\"citations\":[{\"uri\":\"https://a\"},{\"uri\":\"https://b\"}]}"));
    cr_expect_eq (sl_agg_ignored (agg), 1, "an unreadable citation is dropped");
    s_check_invariants ();
}

Test (sl_agg, a_citation_before_its_text_starts_the_text_block)
{
    //  Anthropic: a text content block's citations_delta comes before its
    //  text_delta, at the block's index. The citation belongs to that text,
    //  not to a block of its own.
    s_text (0, "According to the forecast, ");
    s_stop (0);
    s_body_delta (SL_D_CITATION, 1, NULL, NULL, "{\"url\":\"https://a\",\"cited_text\":\"76F\"}");
    s_text (1, "the high is 76F");
    s_stop (1);
    s_text (2, ".");
    s_stop (2);
    s_finish ("end_turn");
    s_done ();
    cr_assert_eq (s_blocks (), 3);
    s_expect_block (0, SL_BK_TEXT, NULL, NULL, "According to the forecast, ");
    s_expect_block (1, SL_BK_TEXT, NULL, NULL, "the high is 76F");
    s_expect_block (2, SL_BK_TEXT, NULL, NULL, ".");
    cr_expect_null (s_end_block (0)->body.ptr);
    cr_expect (sl_str_eq (s_end_block (1)->body,
                          "{\"citations\":[{\"url\":\"https://a\",\"cited_text\":\"76F\"}]}"),
               "%.*s", (int) s_end_block (1)->body.len, s_end_block (1)->body.ptr);
    cr_expect_null (s_end_block (2)->body.ptr);
    s_check_invariants ();
}

Test (sl_agg, each_citation_goes_out_at_once_as_a_delta_of_its_block)
{
    //  Renderers stream citations inside the text they belong to: each one
    //  is a citation block_delta at the index of the block that took it,
    //  sent when it arrives, its body the one citation.
    s_text (0, "Sluice ");
    s_body_delta (SL_D_CITATION, 0, NULL, NULL, " {\"url\":\"https://a\"} ");
    s_text (0, "holds calls.");
    s_body_delta (SL_D_CITATION, 0, NULL, NULL, "{\"url\":\"https://b\"}");
    s_done ();
    cr_assert_eq (s_count (SL_MSG_BLOCK, SL_B_DELTA), 4);
    const sl_msg_t *d [4];
    for (int i = 0; i < 4; i++)
        d [i] = s_nth (SL_MSG_BLOCK, SL_B_DELTA, i);
    cr_expect_eq (d [0]->block, SL_BK_TEXT);
    cr_expect_eq (d [1]->block, SL_BK_CITATION);
    cr_expect_eq (d [1]->index, 0, "at the index of its text block");
    cr_expect (sl_str_eq (d [1]->body, "{\"url\":\"https://a\"}"), "%.*s",
               (int) d [1]->body.len, d [1]->body.ptr);
    cr_expect_eq (d [2]->block, SL_BK_TEXT);
    cr_expect_eq (d [3]->block, SL_BK_CITATION);
    cr_expect (sl_str_eq (d [3]->body, "{\"url\":\"https://b\"}"));
    cr_expect (sl_str_eq (s_end_block (0)->body,
                          "{\"citations\":[{\"url\":\"https://a\"},{\"url\":\"https://b\"}]}"),
               "the end still carries them all");
    s_check_invariants ();
}

Test (sl_agg, signature_attaches_to_the_block_its_index_names)
{
    //  Gemini puts a thought signature on the first answer part.
    s_thinking (0, "thoughts", 0);
    s_text (0, "Answer");
    s_signature (0, "CiIB");
    s_call (1, NULL, "f", "{}");
    s_signature (1, "EpwI");
    s_done ();
    cr_assert_eq (s_blocks (), 3);
    cr_expect_null (s_end_block (0)->sig.ptr);
    cr_expect (sl_str_eq (s_end_block (1)->sig, "CiIB"));
    cr_expect (sl_str_eq (s_end_block (2)->sig, "EpwI"));
}

Test (sl_agg, message_identity_once_and_when_it_changes)
{
    sl_msg_t m = s_d (SL_D_MESSAGE, -1);
    m.id = sl_str ("chatcmpl-1");
    m.model = sl_str ("gpt-x");
    m.ts = 1700000000;
    s_feed (m);
    s_feed (m);                         //  repeated on every chunk
    cr_expect_eq (s_count (SL_MSG_BLOCK, SL_B_MESSAGE), 1);
    m.model = sl_str ("gpt-x-2024");
    s_feed (m);
    cr_expect_eq (s_count (SL_MSG_BLOCK, SL_B_MESSAGE), 2);
    sl_msg_t *b = s_nth (SL_MSG_BLOCK, SL_B_MESSAGE, 1);
    cr_expect (sl_str_eq (b->id, "chatcmpl-1") && sl_str_eq (b->model, "gpt-x-2024"));
    cr_expect_eq (b->ts, 1700000000);
}

//  --------------------------------------------------------------------------
//  Arguments

Test (sl_agg, empty_arguments_become_an_empty_object)
{
    s_call (0, "a", "f", "");
    s_call (0, NULL, NULL, "");
    s_done ();
    s_expect_block (0, SL_BK_TOOL_CALL, "a", "f", "{}");
    cr_expect (s_end_block (0)->flags & SL_F_ARGS_VALID);
}

Test (sl_agg, double_encoded_arguments_are_repaired)
{
    s_call (0, "a", "f", "\"{\\\"city\\\":");
    s_call (0, NULL, NULL, " \\\"Paris\\\"}\"");
    s_done ();
    s_expect_block (0, SL_BK_TOOL_CALL, "a", "f", "{\"city\": \"Paris\"}");
    cr_expect (s_end_block (0)->flags & SL_F_REPAIRED);
    cr_expect (s_end_block (0)->flags & SL_F_ARGS_VALID);
}

Test (sl_agg, a_string_that_is_not_an_object_is_not_repaired)
{
    s_call (0, "a", "f", "\"[1,2]\"");
    s_call (1, "b", "g", "[1,2]");
    s_done ();
    s_expect_block (0, SL_BK_TOOL_CALL, "a", "f", "\"[1,2]\"");
    cr_expect_not (s_end_block (0)->flags & (SL_F_REPAIRED | SL_F_ARGS_VALID));
    cr_expect_not (s_end_block (1)->flags & SL_F_ARGS_VALID, "arguments are an object");
}

Test (sl_agg, invalid_arguments_not_flagged_valid)
{
    s_call (0, "a", "f", "{\"a\":");
    s_done ();
    cr_expect_not (s_end_block (0)->flags & SL_F_ARGS_VALID);
    cr_expect_not (s_end_block (0)->flags & SL_F_INCOMPLETE, "not cut off: the model wrote it so");
}

Test (sl_agg, arguments_cut_by_a_length_finish_are_incomplete)
{
    s_text (-1, "Calling.");
    s_call (0, "a", "f", "{\"path\":\"/tmp/");
    s_finish ("length");
    s_done ();
    cr_assert_eq (s_blocks (), 2);
    cr_expect_not (s_end_block (0)->flags & SL_F_INCOMPLETE, "the text was closed before");
    s_expect_block (1, SL_BK_TOOL_CALL, "a", "f", "{\"path\":\"/tmp/");
    cr_expect (s_end_block (1)->flags & SL_F_INCOMPLETE);
    cr_expect_not (s_end_block (1)->flags & SL_F_ARGS_VALID);
    cr_expect_eq (s_fin ()->finish, SL_FIN_LENGTH, "length stays length with a call");
    s_check_invariants ();
}

Test (sl_agg, complete_looking_arguments_at_a_length_finish_are_still_incomplete)
{
    s_call (0, "a", "f", "{}");
    s_finish ("max_tokens");
    s_done ();
    cr_expect (s_end_block (0)->flags & SL_F_INCOMPLETE);
    cr_expect_not (s_end_block (0)->flags & SL_F_ARGS_VALID, "never passed as valid");
    cr_expect_eq (s_fin ()->finish, SL_FIN_LENGTH);
}

Test (sl_agg, content_filter_cuts_the_open_block)
{
    s_text (0, "Partial");
    s_finish ("SAFETY");
    s_done ();
    cr_expect (s_end_block (0)->flags & SL_F_INCOMPLETE);
    cr_expect_eq (s_fin ()->finish, SL_FIN_CONTENT_FILTER);
}

//  An INCOMPLETE block says why it was cut, in its code.
Test (sl_agg, a_cut_block_says_why_in_its_code)
{
    const struct { const char *finish; const char *error; const char *cut; } cases [] = {
        { "length", NULL, "length" }, { "max_tokens", NULL, "length" },
        { "content_filter", NULL, "filter" }, { "refusal", NULL, "filter" },
        { "MALFORMED_FUNCTION_CALL", NULL, "error" },
        { NULL, "overloaded_error", "error" }, { NULL, "upstream_incomplete", "eof" },
        { NULL, "upstream_connection_lost", "eof" }, { NULL, "upstream_event_too_large", "size" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        recorder_clear (&rec);
        s_start ();
        s_call (0, "a", "run_shell", "{\"command\":\"rm -rf /\"}");
        if (cases [i].finish) {
            s_finish (cases [i].finish);
            s_done ();
        }
        else
            s_error (cases [i].error);
        sl_msg_t *end = s_end_block (0);
        cr_assert_not_null (end);
        cr_expect (end->flags & SL_F_INCOMPLETE, "case %zu", i);
        cr_expect (sl_str_eq (end->code, cases [i].cut), "case %zu: code '%.*s', want %s", i,
                   (int) end->code.len, end->code.ptr ? end->code.ptr : "", cases [i].cut);
        s_end ();
    }
    //  A block that ended cleanly has no code.
    recorder_clear (&rec);
    s_start ();
    s_call (0, "a", "f", "{}");
    s_finish ("tool_calls");
    s_done ();
    cr_expect_null (s_end_block (0)->code.ptr);
    cr_expect (s_end_block (0)->flags & SL_F_ARGS_VALID);
}

Test (sl_agg, a_stream_over_its_bound_cuts_the_open_block_for_size)
{
    sl_agg_set_limits (agg, 0, 30);    //  id, name and the first piece fit, not the second
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    memset (start.sid, 0x55, SL_SID_SIZE);
    recorder_clear (&rec);
    sl_agg_feed (agg, &start, recorder_emit, &rec);
    const char *pieces [] = { "{\"command\":", "\"rm -rf /\"}" };
    for (int i = 0; i < 2; i++) {
        sl_msg_t d = s_d (SL_D_TOOL_CALL, 0);
        memset (d.sid, 0x55, SL_SID_SIZE);
        d.id = sl_str (i == 0 ? "a" : NULL);
        d.name = sl_str (i == 0 ? "run_shell" : NULL);
        d.text = sl_str (pieces [i]);
        s_feed (d);
    }
    cr_assert_eq (s_blocks (), 1);
    cr_expect (s_end_block (0)->flags & SL_F_INCOMPLETE);
    cr_expect (sl_str_eq (s_end_block (0)->code, "size"));
    cr_expect (sl_str_eq (s_nth (SL_MSG_ERROR, -1, 0)->code, "stream_too_large"));
}

//  Anthropic and Responses close a call's block before the response ends.
//  Whether it ended cleanly shows only after: another block, or the finish.
Test (sl_agg, a_stopped_call_ends_with_what_follows)
{
    s_call (0, "a", "run_shell", "{\"command\":\"rm -rf /\"}");
    s_stop (0);
    cr_expect_eq (s_blocks (), 0, "its end waits");
    s_call (1, "b", "get_weather", "{\"city\":\"Paris\"}");
    cr_expect_eq (s_blocks (), 1, "another block began: the first call ended cleanly");
    cr_expect_not (s_end_block (0)->flags & SL_F_INCOMPLETE);
    cr_expect (s_end_block (0)->flags & SL_F_ARGS_VALID);
    s_stop (1);
    s_finish ("max_tokens");
    s_done ();
    cr_assert_eq (s_blocks (), 2);
    cr_expect (s_end_block (1)->flags & SL_F_INCOMPLETE, "the last call was cut by the length finish");
    cr_expect (sl_str_eq (s_end_block (1)->code, "length"));
    cr_expect_not (s_end_block (1)->flags & SL_F_ARGS_VALID);
    s_check_invariants ();
    s_end ();

    //  A normal finish after it: clean.
    recorder_clear (&rec);
    s_start ();
    s_call (0, "a", "f", "{\"x\":1}");
    s_stop (0);
    s_finish ("tool_use");
    s_done ();
    cr_expect (s_end_block (0)->flags & SL_F_ARGS_VALID);
    cr_expect_eq (s_fin ()->finish, SL_FIN_TOOL_CALLS);
    s_check_invariants ();
    s_end ();

    //  An error after it (or a body that ends): cut.
    recorder_clear (&rec);
    s_start ();
    s_call (0, "a", "f", "{\"x\":1}");
    s_stop (0);
    s_error ("upstream_incomplete");
    cr_expect (s_end_block (0)->flags & SL_F_INCOMPLETE);
    cr_expect (sl_str_eq (s_end_block (0)->code, "eof"));
    s_end ();
    s_check_invariants ();
}

Test (sl_agg, a_stopped_call_takes_no_more_content)
{
    s_call (0, "a", "f", "{\"x\":");
    s_stop (0);
    s_call (0, NULL, NULL, "1}");       //  after its stop: not part of it
    s_stop (0);                         //  a second stop for it: nothing
    s_done ();
    cr_assert_eq (s_blocks (), 2);
    cr_expect (sl_str_eq (s_end_block (0)->text, "{\"x\":"));
    cr_expect_not (s_end_block (0)->flags & SL_F_ARGS_VALID);
    cr_expect (sl_str_eq (s_end_block (1)->text, "1}"));
    s_check_invariants ();
    s_end ();
    //  A call stopped before any argument byte still gets its start.
    recorder_clear (&rec);
    s_start ();
    s_call (0, "a", "f", NULL);
    s_stop (0);
    s_text (1, "after");
    s_done ();
    cr_expect_eq (s_count (SL_MSG_BLOCK, SL_B_START), 2);
    s_expect_block (0, SL_BK_TOOL_CALL, "a", "f", "{}");
    s_check_invariants ();
}

//  --------------------------------------------------------------------------
//  Finish and usage

Test (sl_agg, finish_normalized_with_raw_kept)
{
    const struct { const char *raw; sl_finish_t finish; } cases [] = {
        { "stop", SL_FIN_STOP }, { "end_turn", SL_FIN_STOP }, { "STOP", SL_FIN_STOP },
        { "stop_sequence", SL_FIN_STOP }, { "completed", SL_FIN_STOP },
        { "length", SL_FIN_LENGTH }, { "max_tokens", SL_FIN_LENGTH },
        { "MAX_TOKENS", SL_FIN_LENGTH }, { "max_output_tokens", SL_FIN_LENGTH },
        { "tool_calls", SL_FIN_TOOL_CALLS }, { "tool_use", SL_FIN_TOOL_CALLS },
        { "function_call", SL_FIN_TOOL_CALLS },
        { "content_filter", SL_FIN_CONTENT_FILTER }, { "SAFETY", SL_FIN_CONTENT_FILTER },
        { "RECITATION", SL_FIN_CONTENT_FILTER }, { "refusal", SL_FIN_REFUSAL },
        { "pause_turn", SL_FIN_PAUSE }, { "MALFORMED_FUNCTION_CALL", SL_FIN_ERROR },
        { "something_new", SL_FIN_STOP },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++)
        cr_expect_eq (sl_agg_normalize_finish (sl_str (cases [i].raw)), cases [i].finish,
                      "%s", cases [i].raw);
    cr_expect_eq (sl_agg_normalize_finish (SL_STR_NULL), SL_FIN_NONE);
}

Test (sl_agg, stop_sequence_and_raw_finish_pass_through)
{
    s_text (0, "```python\nprint(1)\n");
    sl_msg_t d = s_d (SL_D_FINISH, -1);
    d.finish_raw = sl_str ("stop_sequence");
    d.stop_seq = sl_str ("```");
    s_feed (d);
    s_done ();
    cr_expect_eq (s_fin ()->finish, SL_FIN_STOP);
    cr_expect (sl_str_eq (s_fin ()->finish_raw, "stop_sequence"));
    cr_expect (sl_str_eq (s_fin ()->stop_seq, "```"));
}

Test (sl_agg, last_finish_reason_wins)
{
    s_text (-1, "x");
    s_finish ("length");
    s_finish ("stop");
    s_done ();
    cr_expect_eq (s_fin ()->finish, SL_FIN_STOP);
}

Test (sl_agg, usage_merged_from_several_reports)
{
    s_usage (100, -1, -1, 80, 20, -1);      //  Anthropic message_start
    s_text (0, "x");
    s_usage (-1, 42, -1, -1, -1, 7);        //  message_delta
    s_usage (-1, 45, 145, -1, -1, -1);      //  a later, fuller report
    s_done ();
    sl_msg_t *fin = s_fin ();
    cr_assert (fin->has_usage);
    cr_expect_eq (fin->usage.input, 100);
    cr_expect_eq (fin->usage.output, 45, "a later value replaces an earlier one");
    cr_expect_eq (fin->usage.total, 145);
    cr_expect_eq (fin->usage.cache_read, 80);
    cr_expect_eq (fin->usage.cache_write, 20);
    cr_expect_eq (fin->usage.reasoning, 7);
}

//  Anthropic counts the input at the start (message_start): that usage
//  goes out with the response's message event, before any block, so a
//  client can read it where the provider gave it.
Test (sl_agg, usage_before_the_first_block_goes_with_the_message)
{
    sl_msg_t m = s_d (SL_D_MESSAGE, -1);
    m.id = sl_str ("msg_1");
    m.model = sl_str ("claude-x");
    s_feed (m);
    s_usage (472, 2, -1, 80, 20, -1);
    s_text (0, "x");
    s_usage (-1, 42, -1, -1, -1, -1);       //  later usage waits for the finish
    s_done ();
    cr_assert_eq (s_count (SL_MSG_BLOCK, SL_B_MESSAGE), 2, "the identity, then with its usage");
    sl_msg_t *b = s_nth (SL_MSG_BLOCK, SL_B_MESSAGE, 1);
    cr_assert (b->has_usage);
    cr_expect (sl_str_eq (b->id, "msg_1") && sl_str_eq (b->model, "claude-x"));
    cr_expect_eq (b->usage.input, 472);
    cr_expect_eq (b->usage.output, 2);
    cr_expect_eq (b->usage.cache_read, 80);
    cr_expect_eq (b->usage.cache_write, 20);
    cr_expect_not (s_nth (SL_MSG_BLOCK, SL_B_MESSAGE, 0)->has_usage);
    cr_expect_eq (s_fin ()->usage.output, 42);
    cr_expect_eq (s_fin ()->usage.input, 472);
    s_check_invariants ();
}

Test (sl_agg, no_usage_reported_means_none)
{
    s_text (0, "x");
    s_done ();
    cr_expect_not (s_fin ()->has_usage);
}

Test (sl_agg, end_without_done_still_finishes)
{
    s_text (0, "x");
    s_end ();
    cr_expect_not_null (s_fin ());
    cr_expect_eq (rec.msgs [rec.count - 1]->type, SL_MSG_END);
    s_check_invariants ();
}

//  --------------------------------------------------------------------------
//  Errors

Test (sl_agg, error_closes_open_block_incomplete_and_ends_the_stream)
{
    s_call (0, "a", "f", "{\"a\":");
    s_error ("server_error");
    s_call (0, NULL, NULL, "1}");       //  nothing after the error counts
    s_done ();
    s_error ("again");
    s_end ();
    cr_assert_eq (s_blocks (), 1);
    cr_expect (s_end_block (0)->flags & SL_F_INCOMPLETE);
    cr_expect_not (s_end_block (0)->flags & SL_F_ARGS_VALID);
    cr_expect_eq (s_count (SL_MSG_ERROR, -1), 1, "one error ends a stream");
    cr_expect (sl_str_eq (s_nth (SL_MSG_ERROR, -1, 0)->code, "server_error"));
    cr_expect (s_nth (SL_MSG_ERROR, -1, 0)->flags & SL_F_UPSTREAM, "the error passes as it came");
    cr_expect_null (s_fin (), "no finish after an error");
    cr_expect_eq (sl_agg_ignored (agg), 3);
    s_check_invariants ();
}

Test (sl_agg, error_with_no_block_open)
{
    s_error ("rate_limit_error");
    s_end ();
    cr_expect_eq (s_blocks (), 0);
    cr_expect_eq (s_count (SL_MSG_ERROR, -1), 1);
    cr_expect_eq (rec.msgs [rec.count - 1]->type, SL_MSG_END);
}

//  --------------------------------------------------------------------------
//  Limits

Test (sl_agg, too_many_blocks_end_the_stream_with_an_error)
{
    sl_agg_set_limits (agg, 3, 0);
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    memset (start.sid, 0x33, SL_SID_SIZE);
    recorder_clear (&rec);
    sl_agg_feed (agg, &start, recorder_emit, &rec);
    for (int i = 0; i < 10; i++) {
        char id [16];
        snprintf (id, sizeof id, "c%d", i);
        sl_msg_t d = s_d (SL_D_TOOL_CALL, i);
        memset (d.sid, 0x33, SL_SID_SIZE);
        d.id = sl_str (id);
        d.name = sl_str ("f");
        d.text = sl_str ("{\"a\"");
        s_feed (d);
    }
    cr_expect_eq (s_blocks (), 3);
    cr_expect (s_end_block (2)->flags & SL_F_INCOMPLETE, "the open block is cut");
    sl_msg_t *e = s_nth (SL_MSG_ERROR, -1, 0);
    cr_assert_not_null (e);
    cr_expect (sl_str_eq (e->code, "stream_too_large"));
    cr_expect_eq (e->status, 502);
    cr_expect_eq (sl_agg_too_large (agg), 1);
    s_check_invariants ();
}

Test (sl_agg, too_many_bytes_end_the_stream_with_an_error)
{
    sl_agg_set_limits (agg, 0, 10);
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    memset (start.sid, 0x44, SL_SID_SIZE);
    recorder_clear (&rec);
    sl_agg_feed (agg, &start, recorder_emit, &rec);
    size_t held = sl_agg_streams (agg);
    const char *pieces [] = { "12345", "6789", "0", "x" };
    for (int i = 0; i < 4; i++) {
        sl_msg_t d = s_d (SL_D_TEXT, -1);
        memset (d.sid, 0x44, SL_SID_SIZE);
        d.text = sl_str (pieces [i]);
        s_feed (d);
    }
    cr_assert_eq (s_blocks (), 1);
    cr_expect (sl_str_eq (s_end_block (0)->text, "1234567890"), "exactly the limit passes");
    cr_expect (s_end_block (0)->flags & SL_F_INCOMPLETE);
    cr_expect (sl_str_eq (s_nth (SL_MSG_ERROR, -1, 0)->code, "stream_too_large"));
    cr_expect_not_null (strstr (s_nth (SL_MSG_ERROR, -1, 0)->message.ptr, "10 bytes"));
    //  Its END follows the error at once: every stage lets go of it now,
    //  not when the upstream (which may go on for megabytes) ends.
    cr_expect_eq (rec.msgs [rec.count - 1]->type, SL_MSG_END);
    cr_expect_eq (sl_agg_streams (agg), held - 1, "the aggregator holds nothing of it");
    size_t emitted = rec.count;
    uint64_t dropped = sl_agg_dropped (agg);
    sl_msg_t more = s_d (SL_D_TEXT, -1);
    memset (more.sid, 0x44, SL_SID_SIZE);
    more.text = sl_str ("more");
    s_feed (more);
    sl_msg_t end = recorder_msg (SL_MSG_END, 0);
    memset (end.sid, 0x44, SL_SID_SIZE);
    s_feed (end);
    cr_expect_eq (rec.count, emitted, "what the ingest still sends makes nothing");
    cr_expect_eq (sl_agg_dropped (agg), dropped + 2, "and is counted as dropped");
}

Test (sl_agg, limits_apply_to_streams_that_start_afterwards)
{
    sl_agg_set_limits (agg, 1, 0);
    s_text (0, "a");
    s_stop (0);
    s_text (1, "b");                    //  the stream started with the defaults
    s_done ();
    cr_expect_eq (s_blocks (), 2);
    cr_expect_eq (s_count (SL_MSG_ERROR, -1), 0);
}

//  --------------------------------------------------------------------------
//  Streams, epochs, snapshots

Test (sl_agg, stale_epoch_and_unknown_stream_dropped)
{
    sl_msg_t d = recorder_msg (SL_MSG_DELTA, SL_D_TEXT);
    d.text = sl_str ("x");
    memset (d.sid, 0x22, SL_SID_SIZE);
    sl_agg_feed (agg, &d, recorder_emit, &rec);
    cr_expect_eq (sl_agg_dropped (agg), 1);
    size_t before = rec.count;
    //  A new epoch restarts the stream; the old epoch is then stale.
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.epoch = 1;
    sl_agg_feed (agg, &start, recorder_emit, &rec);
    cr_expect_eq (rec.count, before + 1);
    cr_expect_eq (rec.msgs [before]->seq, 0, "numbering restarts with the epoch");
    sl_msg_t old = recorder_msg (SL_MSG_DELTA, SL_D_TEXT);
    old.text = sl_str ("x");
    sl_agg_feed (agg, &old, recorder_emit, &rec);
    cr_expect_eq (sl_agg_dropped (agg), 2);
    sl_agg_feed (agg, &start, recorder_emit, &rec);
    cr_expect_eq (sl_agg_dropped (agg), 3, "a duplicate start is dropped");
}

typedef struct {
    int calls;
    sl_buf_t json;
} s_snap_sink_t;

static void
s_on_snapshot (void *arg, const uint8_t *sid, const sl_snapshot_t *snapshot)
{
    s_snap_sink_t *sink = arg;
    cr_expect_eq (sid [0], 0x11);
    sink->calls++;
    sl_snapshot_to_json (snapshot, &sink->json);
}

Test (sl_agg, final_snapshot_at_stream_end)
{
    s_snap_sink_t sink = { 0 };
    sl_agg_on_snapshot (agg, s_on_snapshot, &sink);
    //  Snapshots are kept for streams that start afterwards.
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.epoch = 1;
    start.model = sl_str ("asked-model");
    sl_agg_feed (agg, &start, recorder_emit, &rec);
    sl_msg_t m = s_d (SL_D_MESSAGE, -1);
    m.epoch = 1;
    m.id = sl_str ("msg_1");
    m.model = sl_str ("real-model");
    m.ts = 42;
    s_feed (m);
    const char *frags [] = { "Hi", "!" };
    for (int i = 0; i < 2; i++) {
        sl_msg_t d = s_d (SL_D_TEXT, 0);
        d.epoch = 1;
        d.text = sl_str (frags [i]);
        s_feed (d);
    }
    sl_msg_t c = s_d (SL_D_TOOL_CALL, 1);
    c.epoch = 1;
    c.id = sl_str ("toolu_1");
    c.name = sl_str ("f");
    c.text = sl_str ("{\"a\":1}");
    s_feed (c);
    sl_msg_t u = s_d (SL_D_USAGE, -1);
    u.epoch = 1;
    u.has_usage = true;
    u.usage.input = 3;
    u.usage.output = 4;
    s_feed (u);
    sl_msg_t f = s_d (SL_D_FINISH, -1);
    f.epoch = 1;
    f.finish_raw = sl_str ("tool_use");
    s_feed (f);
    sl_msg_t done = s_d (SL_D_DONE, -1);
    done.epoch = 1;
    s_feed (done);
    cr_expect_eq (sink.calls, 0, "only at the end");
    sl_msg_t end = recorder_msg (SL_MSG_END, 0);
    end.epoch = 1;
    sl_agg_feed (agg, &end, recorder_emit, &rec);
    cr_expect_eq (sink.calls, 1);
    cr_expect_str_eq (sl_buf_cstr (&sink.json),
        "{\"id\":\"msg_1\",\"model\":\"real-model\",\"created\":42,\"blocks\":["
        "{\"kind\":\"text\",\"index\":0,\"text\":\"Hi!\"},"
        "{\"kind\":\"tool_call\",\"index\":1,\"id\":\"toolu_1\",\"name\":\"f\","
        "\"arguments\":\"{\\\"a\\\":1}\",\"args_valid\":true,\"repaired\":false}],"
        "\"finish\":\"tool_calls\",\"finish_raw\":\"tool_use\",\"usage\":{\"input\":3,\"output\":4}}");
    sl_buf_free (&sink.json);
}

Test (sl_agg, same_input_same_output)
{
    //  Two aggregators fed the same deltas emit byte-identical messages.
    sl_buf_t out [2] = { { 0 }, { 0 } };
    for (int run = 0; run < 2; run++) {
        sl_agg_t *a = sl_agg_new ();
        recorder_t r = { 0 };
        sl_msg_t start = recorder_msg (SL_MSG_START, 0);
        sl_agg_feed (a, &start, recorder_emit, &r);
        const char *args [] = { "{\"q\":", "\"x\"}" };
        for (int i = 0; i < 2; i++) {
            sl_msg_t d = recorder_msg (SL_MSG_DELTA, SL_D_TOOL_CALL);
            d.index = 0;
            d.id = i ? SL_STR_NULL : sl_str ("c");
            d.name = i ? SL_STR_NULL : sl_str ("f");
            d.text = sl_str (args [i]);
            sl_agg_feed (a, &d, recorder_emit, &r);
        }
        sl_msg_t end = recorder_msg (SL_MSG_END, 0);
        sl_agg_feed (a, &end, recorder_emit, &r);
        for (size_t i = 0; i < r.count; i++)
            sl_msg_encode (r.msgs [i], &out [run]);
        recorder_clear (&r);
        sl_agg_destroy (&a);
    }
    cr_expect_eq (out [0].len, out [1].len);
    cr_expect (out [0].len && memcmp (out [0].data, out [1].data, out [0].len) == 0);
    sl_buf_free (&out [0]);
    sl_buf_free (&out [1]);
}

//  A response with no block at all (a refusal): the usage of its end is
//  not the usage of its start.
Test (sl_agg, only_the_first_usage_is_the_usage_of_the_start)
{
    sl_msg_t m = s_d (SL_D_MESSAGE, -1);
    m.id = sl_str ("msg_1");
    s_feed (m);
    s_usage (18, 1, -1, -1, -1, -1);
    s_usage (-1, 5, -1, -1, -1, -1);
    s_finish ("refusal");
    s_done ();
    cr_assert_eq (s_count (SL_MSG_BLOCK, SL_B_MESSAGE), 2);
    cr_expect_eq (s_nth (SL_MSG_BLOCK, SL_B_MESSAGE, 1)->usage.output, 1);
    cr_expect_eq (s_fin ()->usage.output, 5);
}

//  A call's block_start waits for its identity only so long: after 4 KiB
//  of arguments it goes, and the arguments stream on (a huge call must
//  not sit whole in the aggregator).
Test (sl_agg, a_long_call_starts_after_4_kib_of_arguments)
{
    s_call (0, "c1", "write_file", "{\"text\":\"");
    char piece [1025];
    memset (piece, 'x', 1024);
    piece [1024] = 0;
    for (int i = 0; i < 3; i++)
        s_call (0, NULL, NULL, piece);
    cr_expect_eq (s_count (SL_MSG_BLOCK, SL_B_START), 0, "3 KiB: the identity may still grow");
    s_call (0, NULL, NULL, piece);
    cr_expect_eq (s_count (SL_MSG_BLOCK, SL_B_START), 1, "4 KiB: the call starts");
    cr_expect_eq (s_count (SL_MSG_BLOCK, SL_B_DELTA), 1, "with the arguments so far in one fragment");
    s_call (0, NULL, NULL, piece);
    cr_expect_eq (s_count (SL_MSG_BLOCK, SL_B_DELTA), 2, "then fragment by fragment");
    s_call (0, NULL, NULL, "\"}");
    s_done ();
    cr_expect (s_end_block (0)->flags & SL_F_ARGS_VALID);
    s_check_invariants ();
}
