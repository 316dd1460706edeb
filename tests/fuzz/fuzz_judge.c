/*  Fuzz target: the judge library must survive any sequence of block-hop
    messages from its peers, LLM judge outcomes and ticks, interleaved
    over a few streams and epochs (common/stages/sl_judge), with a policy
    that uses every kind of rule. Its own invariants are checked: the
    messages of a stream's epoch leave numbered 0, 1, 2 ... without gaps,
    and no tool call over the per-call bound leaves (a rewrite may add a
    few bytes to one under it).

    Input: a list of operations, one opcode byte each, followed by the
    bytes that operation reads (stream, index, kind, a text of up to 63
    bytes taken from the input, ...).
*/
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/stages/sl_judge.h"

#define STREAMS 4
#define MAX_ASKS 64
#define MAX_CALL_BYTES 48               //  the judge's per-call bound, small enough to pass
#define REWRITE_SLACK 64                //  what the rewrite rule may add to a call

static const char *s_policy_text =
    "default: allow\n"
    "on_incomplete: block\n"
    "rules:\n"
    "  - {id: cut-reads, tool: get, cut: [length, eof], action: allow}\n"
    "  - {id: cut-judged, tool: k, incomplete: true, llm_judge: {model: m3, url: 'http://127.0.0.1:1/z'}}\n"
    "  - {id: shell, tool: [run_shell, 'sh*'], args: [{pointer: /command, regex: 'rm.*-rf'}], action: block}\n"
    "  - {id: schema, schema_violation: true, headers: [{name: x-s, exists: true}], action: block}\n"
    "  - {id: quiet, tool: 't*', action: drop}\n"
    "  - {id: fix, tool: w, action: rewrite, set: {/a/b/-: 1, /c: x}, delete: [/d/0]}\n"
    "  - {id: stop, tool: up, action: terminate}\n"
    "  - {id: many, max_calls: 3, action: drop}\n"
    "  - {id: judge, tool: [j, k], llm_judge: {model: m, url: 'http://127.0.0.1:1/x', on_error: allow}}\n"
    "  - {id: judge2, args_invalid: true, llm_judge: {model: m2, url: 'http://127.0.0.1:1/y'}}\n";

static const char *s_names [] = { "run_shell", "w", "up", "j", "k", "t1", "get", "" };
static const char *s_codes [] = { "length", "filter", "error", "eof", "size", "invalid", "?", NULL };
static const char *s_errors [] = { "x", "stream_too_large", "upstream_incomplete", "overloaded_error" };

typedef struct {
    const uint8_t *p, *end;
} s_in_t;

static uint8_t
s_byte (s_in_t *in)
{
    return in->p < in->end ? *in->p++ : 0;
}

static sl_str_t
s_text (s_in_t *in)
{
    size_t n = s_byte (in) % 64;
    if (n > (size_t) (in->end - in->p))
        n = (size_t) (in->end - in->p);
    sl_str_t s = sl_str_n (in->p, n);
    in->p += n;
    return s;
}

static struct {
    uint64_t tickets [MAX_ASKS];
    int count;
} s_asks;

static int64_t s_time;
static uint32_t s_epoch_of [STREAMS];  //  epoch of the output seen last, per stream
static uint64_t s_next_seq [STREAMS];

static int64_t
s_clock (void *arg)
{
    (void) arg;
    return s_time;
}

static int
s_ask (void *arg, const sl_judge_ask_t *ask)
{
    (void) arg;
    if (s_asks.count == MAX_ASKS || !ask->spec || !ask->body.ptr)
        return -1;
    s_asks.tickets [s_asks.count++] = ask->ticket;
    return 0;
}

static void
s_cancel (void *arg, uint64_t ticket)
{
    (void) arg;
    for (int i = 0; i < s_asks.count; i++)
        if (s_asks.tickets [i] == ticket)
            s_asks.tickets [i] = s_asks.tickets [--s_asks.count];
}

//  Every stream's output at one epoch is numbered without gaps (a
//  keep-alive carries the next number without taking it).
static void
s_check (void *arg, const sl_msg_t *msg)
{
    (void) arg;
    int k = msg->sid [0] % STREAMS;
    if (msg->type == SL_MSG_START) {
        s_epoch_of [k] = msg->epoch;
        s_next_seq [k] = 0;
    }
    if (msg->epoch != s_epoch_of [k] || msg->seq != s_next_seq [k])
        __builtin_trap ();
    if (!(msg->type == SL_MSG_BLOCK && msg->kind == SL_B_KEEPALIVE))
        s_next_seq [k]++;
    if (msg->type == SL_MSG_BLOCK && msg->block == SL_BK_TOOL_CALL
    &&  msg->text.len > MAX_CALL_BYTES + REWRITE_SLACK)
        __builtin_trap ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    static sl_policy_t *policy;
    if (!policy) {
        char *error = NULL;
        policy = sl_policy_parse (s_policy_text, strlen (s_policy_text), "fuzz", &error);
        if (!policy)
            __builtin_trap ();
    }
    memset (&s_asks, 0, sizeof s_asks);
    memset (s_epoch_of, 0, sizeof s_epoch_of);
    memset (s_next_seq, 0, sizeof s_next_seq);
    s_time = 0;
    sl_judge_t *judge = sl_judge_new (policy);
    sl_judge_set_clock (judge, s_clock, NULL);
    sl_judge_set_llm (judge, s_ask, s_cancel, NULL);
    sl_judge_set_keepalive (judge, 100);
    sl_judge_set_max_call_bytes (judge, MAX_CALL_BYTES);
    s_in_t in = { data, data + size };
    while (in.p < in.end) {
        uint8_t op = s_byte (&in);
        uint8_t arg = s_byte (&in);
        sl_msg_t m;
        memset (&m, 0, sizeof m);
        if (op % 10 < 7) {
            sl_msg_init (&m, SL_MSG_BLOCK);
            m.sid [0] = (uint8_t) (arg % STREAMS);
            m.epoch = (arg >> 2) % 3;
        }
        switch (op % 10) {
            case 0:
                m.type = SL_MSG_START;
                m.model = sl_str ("gpt");
                m.tools = (arg & 0x10) ? sl_str ("[{\"name\":\"w\",\"schema\":{\"type\":\"object\"}}]") : s_text (&in);
                m.headers = (arg & 0x20) ? sl_str ("{\"x-s\":\"1\"}") : s_text (&in);
                m.last_user = s_text (&in);
                break;
            case 1:
            case 2:
            case 3:
                m.kind = (uint8_t) (op % 10 == 1 ? SL_B_START : op % 10 == 2 ? SL_B_DELTA : SL_B_END);
                m.block = (uint8_t) ((arg & 0x40) ? SL_BK_TEXT : SL_BK_TOOL_CALL);
                m.index = (int32_t) (s_byte (&in) % 6) - 1;
                m.name = sl_str (s_names [s_byte (&in) % 8]);
                m.text = s_text (&in);
                m.flags = s_byte (&in) & (SL_F_ARGS_VALID | SL_F_REPAIRED | SL_F_INCOMPLETE);
                m.code = sl_str (s_codes [s_byte (&in) % 8]);
                break;
            case 4:
                m.kind = SL_B_FINISH;
                m.finish = (uint8_t) (s_byte (&in) % SL_FIN_MAX);
                break;
            case 5:
                m.type = SL_MSG_ERROR;
                m.code = sl_str (s_errors [s_byte (&in) % 4]);
                break;
            case 6:
                m.type = SL_MSG_END;
                break;
            case 7:
            case 8: {
                if (!s_asks.count)
                    break;
                int i = s_byte (&in) % s_asks.count;
                uint64_t ticket = s_asks.tickets [i];
                s_asks.tickets [i] = s_asks.tickets [--s_asks.count];
                sl_llm_result_t r = { 0 };
                if (arg % 3 == 0) {
                    r.check = SL_CHK_RAN;
                    r.probability = (double) s_byte (&in) / 255.0;
                    r.probability = isfinite (r.probability) ? r.probability : 0;
                }
                else
                    sl_llm_result_fail (&r, arg % 3 == 1 ? SL_CHK_TIMEOUT : SL_CHK_ERROR, "fuzz");
                sl_judge_llm_done (judge, ticket, &r, s_check, NULL);
                sl_llm_result_clear (&r);
                break;
            }
            default:
                s_time += arg;
                sl_judge_tick (judge, s_check, NULL);
                break;
        }
        if (op % 10 < 7)
            sl_judge_feed (judge, &m, s_check, NULL);
    }
    sl_judge_destroy (&judge);
    return 0;
}
