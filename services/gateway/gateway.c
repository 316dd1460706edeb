/*  gateway.c - the gateway put together (see gateway.h): its core, and
    the endpoint families that register routes with it, in the order the
    core tries them:

      gateway_probes     /healthz, /readyz (anyone), /metrics
      gateway_mcp        /mcp and /mcp/<server>, the MCP front (docs/mcp.md)
      gateway_models     GET /v1/models and its kin in every dialect
      gateway_approvals  /v1/approvals, answered by the judges
      gateway_dialects   the model dialects' endpoints (every other path
                         a dialect names), and the shape of the core's own
                         refusals

    and the legs (gateway_leg.h), the streams the MCP front starts. This
    is the one place that names the families; the core names none.
*/
#include "services/gateway/gateway.h"

#include <stdlib.h>

#include "common/base/sl_alloc.h"
#include "services/gateway/gateway_approvals.h"
#include "services/gateway/gateway_core.h"
#include "services/gateway/gateway_dialects.h"
#include "services/gateway/gateway_leg.h"
#include "services/gateway/gateway_mcp.h"
#include "services/gateway/gateway_models.h"
#include "services/gateway/gateway_probes.h"

struct _gateway_t {
    gateway_core_t *core;
    gateway_legs_t *legs;
    gateway_probes_t *probes;
    gateway_mcp_t *mcp;
    gateway_models_t *models;
    gateway_approvals_t *approvals;
    gateway_dialects_t *dialects;
};

gateway_t *
gateway_new (sl_service_t *service, const gateway_config_t *config)
{
    gateway_core_t *core = gateway_core_new (service, config);
    if (!core)
        return NULL;
    gateway_t *self = sl_xcalloc (1, sizeof *self);
    self->core = core;
    self->legs = gateway_legs_new (core);
    self->probes = gateway_probes_new (core);
    self->mcp = gateway_mcp_new (core, self->legs, config);
    self->models = gateway_models_new (core, config);
    self->approvals = gateway_approvals_new (core, config);
    if (!self->approvals) {
        gateway_destroy (&self);
        return NULL;
    }
    self->dialects = gateway_dialects_new (core, config);
    gateway_core_start (core);
    return self;
}

void
gateway_destroy (gateway_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_t *self = *self_p;
    //  The clients first (each route hears of its requests' end), then
    //  the families, then the streams left (the legs' among them).
    gateway_core_stop (self->core);
    gateway_mcp_destroy (&self->mcp);
    gateway_dialects_destroy (&self->dialects);
    gateway_approvals_destroy (&self->approvals);
    gateway_models_destroy (&self->models);
    gateway_probes_destroy (&self->probes);
    gateway_core_destroy (&self->core);
    gateway_legs_destroy (&self->legs);
    free (self);
    *self_p = NULL;
}

int
gateway_http_port (gateway_t *self)
{
    return gateway_core_http_port (self->core);
}

gateway_core_t *
gateway_core (gateway_t *self)
{
    return self->core;
}

gateway_legs_t *
gateway_legs (gateway_t *self)
{
    return self->legs;
}
