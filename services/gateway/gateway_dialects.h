/*  gateway_dialects.h - the model dialects' endpoints: a client's request
    for a completion in any dialect (the endpoints of docs/clients.md),
    from its path and body to a stream of the core.

    The route takes every path a dialect names (sl_job_route) and declines
    the rest; a POST is identified (401 in the dialect), counted by dialect
    and team, checked against the body limit (413), parsed and routed to a
    provider (translated when the provider speaks another dialect; a body
    over PARSE_WORKER_INLINE_BYTES is parsed off the reactor by the
    parse worker), and becomes a stream (gateway_core_stream_start). The
    core's own refusals take the shape of the dialect their path names
    (this family is the core's refuse hook).
*/
#ifndef GATEWAY_DIALECTS_H
#define GATEWAY_DIALECTS_H

#include "services/gateway/gateway_core.h"

typedef struct _gateway_dialects_t gateway_dialects_t;

//  Registers the route (on every path: it declines what no dialect
//  names) and the core's refuse hook.
gateway_dialects_t *gateway_dialects_new (gateway_core_t *core, const gateway_config_t *config);
//  After gateway_core_stop: the bodies still being parsed are let go.
void gateway_dialects_destroy (gateway_dialects_t **self_p);

#endif
