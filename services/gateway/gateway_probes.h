/*  gateway_probes.h - the probes and metrics on the client port:
    GET /healthz and /readyz (up, and taking new streams or draining),
    answered whoever asks and while draining; GET /metrics, which tells
    how busy sluice is, with what, and how it refuses: with client keys
    configured, only for a client with a key (the metrics port is for
    operators and stays open).
*/
#ifndef GATEWAY_PROBES_H
#define GATEWAY_PROBES_H

#include "services/gateway/gateway_core.h"

typedef struct _gateway_probes_t gateway_probes_t;

//  Registers its routes.
gateway_probes_t *gateway_probes_new (gateway_core_t *core);
void gateway_probes_destroy (gateway_probes_t **self_p);

#endif
