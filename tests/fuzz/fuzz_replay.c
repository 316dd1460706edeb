/*  Fuzz target: sluice-replay's pipeline (common/stages/sl_replay) over
    any capture bytes of any dialect, cut in two at a point the input
    chooses. Whatever
    comes in, nothing crashes and every line written is one JSON value.
*/
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
#include "common/stages/sl_replay.h"

static void
s_collect (void *arg, const char *data, size_t size)
{
    sl_buf_append ((sl_buf_t *) arg, data, size);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    sl_buf_t out = { 0 };
    sl_replay_opts_t opts = {
        .dialect = SL_DIALECT_OPENAI + (data [0] >> 2) % 4,  //  openai .. gemini
        .input = data [0] % 4,          //  auto, SSE, JSONL, JSON array
        .max_event = 4096,
    };
    sl_replay_t *r = sl_replay_new (&opts, s_collect, &out, NULL);
    const char *text = (const char *) data + 1;
    size_t len = size - 1, cut = len ? data [0] % (len + 1) : 0;
    if (sl_replay_feed (r, text, cut) == 0 && sl_replay_feed (r, text + cut, len - cut) == 0)
        sl_replay_finish (r);
    sl_replay_destroy (&r);
    const char *p = out.data, *end = out.data + out.len;
    while (p < end) {
        const char *nl = memchr (p, '\n', (size_t) (end - p));
        if (!nl || !sl_json_valid (sl_str_n (p, (size_t) (nl - p))))
            __builtin_trap ();
        p = nl + 1;
    }
    sl_buf_free (&out);
    return 0;
}
