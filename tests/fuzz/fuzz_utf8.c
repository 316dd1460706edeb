/*  Fuzz target: whatever bytes come in, what sluice writes into JSON is
    well-formed (common/base/sl_utf8, common/base/sl_json's writers), and the
    counting scan agrees with the validating one.

    - a repair gives well-formed UTF-8 (and, for JSON text, no lone
      surrogate escape), and leaves well-formed input as it was;
    - a string written with sl_json_put_str is one valid JSON string whose
      bytes are well-formed;
    - sl_json_stats accepts exactly what sl_json_valid accepts. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/base/sl_utf8.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    const char *s = (const char *) data;
    sl_buf_t out = { 0 };
    sl_utf8_repair (&out, s, size);
    if (!sl_utf8_valid (out.data, out.len))
        __builtin_trap ();
    if (sl_utf8_valid (s, size) && (out.len != size || (size && memcmp (out.data, s, size))))
        __builtin_trap ();
    sl_buf_reset (&out);
    sl_utf8_repair_json (&out, s, size);
    if (!sl_utf8_json_clean (out.data, out.len) || !sl_utf8_valid (out.data, out.len))
        __builtin_trap ();
    if (sl_utf8_json_clean (s, size) && (out.len != size || (size && memcmp (out.data, s, size))))
        __builtin_trap ();
    sl_buf_reset (&out);
    sl_json_put_str (&out, s, size);
    if (!sl_json_valid (sl_buf_str (&out)) || !sl_utf8_json_clean (out.data, out.len))
        __builtin_trap ();
    sl_json_stats_t st;
    if ((sl_json_stats (sl_str_n (s, size), &st) == 0) != sl_json_valid (sl_str_n (s, size)))
        __builtin_trap ();
    sl_buf_reset (&out);
    sl_json_put_raw (&out, sl_str_n (s, size));
    if (!sl_utf8_json_clean (out.data, out.len))
        __builtin_trap ();
    sl_buf_free (&out);
    return 0;
}
