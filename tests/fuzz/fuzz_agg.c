/*  Fuzz target: the aggregator (common/stages/sl_agg) over any
    sequence of deltas, and its streaming JSON validator (sl_jsonv) over
    any text in any split.

    The input is a little program: each step takes a delta kind, an index,
    which identity pieces to carry, and a slice of the input as its text.
    Whatever the deltas, the output must keep the block protocol: contiguous
    sequence numbers, blocks opened one at a time with contiguous indices,
    deltas and ends only for the open block, ARGS_VALID only on a complete
    JSON object, never on an incomplete block, and the stream freed at END.
*/
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/stages/sl_agg.h"
#include "common/stages/sl_jsonv.h"

#define FUZZ_MAX_BLOCKS 8               //  small limits, so they are reached
#define FUZZ_MAX_BYTES 512

typedef struct {
    uint64_t seq;
    int32_t next;                       //  next block index
    int32_t open;                       //  open block index, -1 none
    bool ended;
} s_check_t;

static void
s_check (void *arg, const sl_msg_t *m)
{
    s_check_t *c = arg;
    if (m->seq != c->seq++ || c->ended)
        __builtin_trap ();
    if (m->type == SL_MSG_END)
        c->ended = true;
    if (m->type != SL_MSG_BLOCK)
        return;
    switch (m->kind) {
        case SL_B_START:
            if (c->open >= 0 || m->index != c->next)
                __builtin_trap ();
            c->open = c->next++;
            break;
        case SL_B_DELTA:
            if (m->index != c->open || m->index < 0)
                __builtin_trap ();
            break;
        case SL_B_END:
            if (m->index != c->open || m->index < 0)
                __builtin_trap ();
            c->open = -1;
            if ((m->flags & SL_F_ARGS_VALID)
            &&  (!sl_json_valid (m->text) || sl_json_type (m->text) != SL_JSON_OBJECT
              || (m->flags & SL_F_INCOMPLETE)))
                __builtin_trap ();
            break;
        case SL_B_FINISH:
            if (c->open >= 0)
                __builtin_trap ();
            break;
        default:
            break;
    }
}

//  The validator must agree with the scanner on the whole text, whatever
//  the split.
static void
s_fuzz_jsonv (const uint8_t *data, size_t size)
{
    if (size < 2)
        return;
    size_t cut = data [0] % size;
    const char *text = (const char *) data + 1;
    size_t len = size - 1;
    if (cut > len)
        cut = len;
    sl_jsonv_t *v = sl_jsonv_new ();
    sl_jsonv_feed (v, text, cut);
    sl_jsonv_status_t st = sl_jsonv_feed (v, text + cut, len - cut);
    bool valid = sl_json_valid (sl_str_n (text, len));
    if ((st == SL_JSONV_COMPLETE) != valid || (st == SL_JSONV_INVALID && valid))
        __builtin_trap ();
    sl_jsonv_destroy (&v);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    s_fuzz_jsonv (data, size);
    static const char *ids [] = { NULL, "a", "b", "" };
    static const char *names [] = { NULL, "f", "g", "get_" };
    sl_agg_t *agg = sl_agg_new ();
    sl_agg_set_limits (agg, FUZZ_MAX_BLOCKS, FUZZ_MAX_BYTES);
    s_check_t check = { .open = -1 };
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_START);
    sl_agg_feed (agg, &m, s_check, &check);
    size_t at = 0;
    while (at + 4 <= size) {
        uint8_t op = data [at], where = data [at + 1], who = data [at + 2], len = data [at + 3] % 24;
        at += 4;
        if (len > size - at)
            len = (uint8_t) (size - at);
        sl_msg_init (&m, op % 16 == 15 ? SL_MSG_ERROR : SL_MSG_DELTA);
        m.kind = (uint8_t) (1 + op % 14);
        m.index = (int32_t) (where % 4) - 1;
        m.id = sl_str (ids [who & 3]);
        m.call_id = sl_str (ids [(who >> 2) & 3]);
        m.name = sl_str (names [(who >> 4) & 3]);
        m.flags = (who & 0x40) ? SL_F_SUMMARY : 0;
        m.text = sl_str_n (data + at, len);
        m.sig = (who & 0x80) ? m.text : SL_STR_NULL;
        m.body = (op & 0x40) ? m.text : SL_STR_NULL;
        m.finish_raw = (op & 0x20) ? sl_str ("length") : sl_str ("stop");
        if (op & 0x10) {
            m.has_usage = true;
            m.usage.output = where;
        }
        if (m.type == SL_MSG_ERROR)
            m.code = sl_str ("boom");
        sl_agg_feed (agg, &m, s_check, &check);
        at += len;
    }
    sl_msg_init (&m, SL_MSG_END);
    sl_agg_feed (agg, &m, s_check, &check);
    if (!check.ended || sl_agg_streams (agg) != 0)
        __builtin_trap ();
    sl_agg_destroy (&agg);
    return 0;
}
