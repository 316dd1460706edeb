/*  sl_ratelimit.c - a fixed-window log budget (see sl_ratelimit.h). */
#include "common/base/sl_ratelimit.h"

bool
sl_ratelimit_allow (sl_ratelimit_t *self, int64_t now_ms, uint32_t *held)
{
    if (self->window_start == INT64_MIN || now_ms - self->window_start >= self->window_ms) {
        self->window_start = now_ms;
        self->used = 0;
    }
    if (self->used >= self->burst) {
        self->held++;
        return false;
    }
    self->used++;
    *held = self->held;
    self->held = 0;
    return true;
}
