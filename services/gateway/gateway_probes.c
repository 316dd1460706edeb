/*  gateway_probes.c - /healthz, /readyz and /metrics on the client port
    (see gateway_probes.h). What they say is the service's
    (sl_service_answer_probe, sl_service_render_metrics). */
#include "services/gateway/gateway_probes.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"

#define S_HEALTHZ "/healthz"
#define S_READYZ "/readyz"
#define S_METRICS "/metrics"

struct _gateway_probes_t {
    gateway_core_t *core;
    sl_buf_t scratch;                   //  the metrics' text
};

static bool
s_serve (void *arg, sl_http_req_t *req, const char *method, const char *path)
{
    gateway_probes_t *self = arg;
    bool metrics = strcmp (path, S_METRICS) == 0;
    if (!metrics && strcmp (path, S_HEALTHZ) != 0 && strcmp (path, S_READYZ) != 0)
        return false;
    if (metrics && !gateway_core_authorized (self->core, req, GATEWAY_DEFAULT_DIALECT))
        return true;
    if (strcmp (method, "GET") != 0) {
        sl_http_add_header (req, "Allow", "GET");
        gateway_core_respond_error (req, GATEWAY_DEFAULT_DIALECT, 405, "invalid_request_error", "use GET");
        return true;
    }
    sl_service_t *service = gateway_core_service (self->core);
    if (sl_service_answer_probe (service, req, path))
        return true;
    sl_buf_reset (&self->scratch);
    sl_service_render_metrics (service, &self->scratch);
    sl_http_respond (req, 200, "text/plain; version=0.0.4", self->scratch.data, self->scratch.len);
    return true;
}

gateway_probes_t *
gateway_probes_new (gateway_core_t *core)
{
    gateway_probes_t *self = sl_xcalloc (1, sizeof *self);
    self->core = core;
    //  The probes say no more than up or not, whoever asks; the metrics
    //  are a client's like any endpoint. Both while draining.
    gateway_route_t probe = { .prefix = S_HEALTHZ, .serve = s_serve, .arg = self, .open = true, .draining = true };
    gateway_core_route (core, &probe);
    probe.prefix = S_READYZ;
    gateway_core_route (core, &probe);
    gateway_route_t metrics = { .prefix = S_METRICS, .serve = s_serve, .arg = self, .draining = true };
    gateway_core_route (core, &metrics);
    return self;
}

void
gateway_probes_destroy (gateway_probes_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_probes_t *self = *self_p;
    sl_buf_free (&self->scratch);
    free (self);
    *self_p = NULL;
}
