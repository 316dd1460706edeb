/*  sl_retry.h - when to try an upstream call again.

    Pure functions (the ingest's): the Retry-After header of an answer,
    and the wait before the next attempt, from the answer's Retry-After or
    an exponential backoff with a spread, bounded.
*/
#ifndef SL_RETRY_H
#define SL_RETRY_H

#include <stddef.h>
#include <time.h>

//  Retry-After: delay-seconds or an HTTP date (seconds from now, 0 for a
//  date past), spaces and a line end around it allowed. -1 when it is
//  neither.
long sl_retry_after (const char *value, size_t len, time_t now);

//  How long to wait before attempt number attempt + 1 (attempt: attempts
//  made so far, from 0), ms: what Retry-After asked for (retry_after_s,
//  -1 when absent), else base_ms doubled per attempt plus a spread of up
//  to a quarter of it from spread (any byte: streams failing together do
//  not come back together), at most max_ms. -1 when Retry-After asks for
//  longer than max_ms (not waited for).
long sl_retry_backoff_ms (long base_ms, long max_ms, int attempt, long retry_after_s, unsigned char spread);

#endif
