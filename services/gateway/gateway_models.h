/*  gateway_models.h - GET /v1/models and its kin in every dialect: what
    routing offers (sl_models.h, from the routes file), to a client the
    admission lets in.
*/
#ifndef GATEWAY_MODELS_H
#define GATEWAY_MODELS_H

#include "services/gateway/gateway_core.h"

typedef struct _gateway_models_t gateway_models_t;

//  Registers its route (GET, on every path: it declines what is not a
//  models path).
gateway_models_t *gateway_models_new (gateway_core_t *core, const gateway_config_t *config);
void gateway_models_destroy (gateway_models_t **self_p);

#endif
