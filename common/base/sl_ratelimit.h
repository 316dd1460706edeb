/*  sl_ratelimit.h - at most a few log lines per window for events a peer
    can cause at will (refused handshakes, frames nobody can take).

    A refusal is counted every time (metrics), but logged only while the
    window's budget lasts; the next line that is allowed says how many were
    held back meanwhile, so the log stays readable under a flood and still
    tells the whole story. Pure: the caller passes the time.
*/
#ifndef SL_RATELIMIT_H
#define SL_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int64_t window_ms;                  //  length of a window
    uint32_t burst;                     //  lines allowed per window
    int64_t window_start;               //  ms, start of the current window
    uint32_t used;                      //  lines allowed in the current window
    uint32_t held;                      //  lines held back since the last allowed one
} sl_ratelimit_t;

#define SL_RATELIMIT_INIT(burst_, window_ms_) \
    { .window_ms = (window_ms_), .burst = (burst_), .window_start = INT64_MIN }

//  True when a line may be logged at now_ms; then *held is the number of
//  lines held back since the last one allowed (and the count restarts).
bool sl_ratelimit_allow (sl_ratelimit_t *self, int64_t now_ms, uint32_t *held);

#endif
