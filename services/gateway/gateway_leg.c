/*  gateway_leg.c - the gateway's internal streams (gateway_leg.h).
*/
#include "services/gateway/gateway_leg.h"
#include "services/gateway/gateway_impl.h"

int
gateway_leg_start (gateway_t *self, const gateway_leg_t *leg, gateway_leg_done_fn *done, void *arg, uint64_t *id)
{
    (void) self; (void) leg; (void) done; (void) arg;
    if (id)
        *id = 0;
    return -1;
}

void
gateway_leg_cancel (gateway_t *self, uint64_t id)
{
    (void) self; (void) id;
}
