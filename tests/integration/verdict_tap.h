/*  verdict_tap.h - the judge's verdicts as a monitoring subscriber sees
    them, for integration tests: a SUB socket on a stack's full tap feed,
    with the stack's tap key, that keeps every verdict in order (and the
    judges' approval records, apart).
*/
#ifndef VERDICT_TAP_H
#define VERDICT_TAP_H

#include "proto/sl_msg.h"
#include "tests/integration/harness.h"

#define VERDICT_TAP_MAX 64              //  verdicts kept; later ones are not

typedef struct {
    void *sub;                          //  zsock_t *
    sl_codec_t *codec;
    sl_msg_t *verdicts [VERDICT_TAP_MAX];
    int count;
    sl_msg_t *approvals [VERDICT_TAP_MAX];  //  approval records (action ask), in order
    int approval_count;
} verdict_tap_t;

//  Subscribe to every event and make sure the subscription is live (a SUB
//  socket misses what is published before it is connected) by sending
//  mock-text requests until their events show up; verdicts seen meanwhile
//  are forgotten. Asserts (Criterion) when the feed stays silent.
verdict_tap_t *verdict_tap_open (sluice_stack_t *s);
//  The same, the warm-up requests sending headers (a client key).
verdict_tap_t *verdict_tap_open_as (sluice_stack_t *s, const char *const *headers);
//  Read what arrived within wait_ms; true when anything did.
bool verdict_tap_read (verdict_tap_t *t, int wait_ms);
//  Wait (at most timeout_ms) until want verdicts arrived; the count.
int verdict_tap_wait (verdict_tap_t *t, int want, int timeout_ms);
//  The verdict after the *seen first ones (at most timeout_ms), advancing
//  *seen; NULL when none came.
const sl_msg_t *verdict_tap_next (verdict_tap_t *t, int *seen, int timeout_ms);
//  The first approval record in state (its code: "pending", "failed", ...),
//  waiting at most timeout_ms; NULL when none came.
const sl_msg_t *verdict_tap_approval (verdict_tap_t *t, const char *state, int timeout_ms);
void verdict_tap_close (verdict_tap_t *t);

#endif
