/*  sl_when.h - times as people write them, for `sluice-audit export`.

    --since and --until take an ISO 8601 UTC time (2026-05-20T14:00:00Z,
    or just the date, 2026-05-20), Unix seconds (1779285600), or a time
    back from now: 30m, 24h, 7d (also written -24h). --retain takes a
    duration the same way (30d).
*/
#ifndef SL_WHEN_H
#define SL_WHEN_H

#include <stdint.h>

//  The time text means, in Unix ms, given now (Unix ms). 0 ok, -1 not a time.
int sl_when_parse (const char *text, int64_t now_ms, int64_t *out);
//  A duration: 500ms, 45s, 90m, 12h, 30d; "0" is none. In ms; 0 ok, -1 not one.
int sl_when_duration (const char *text, int64_t *out);

#endif
