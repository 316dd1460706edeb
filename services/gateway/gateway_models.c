/*  gateway_models.c - the models lists (see gateway_models.h). */
#include "services/gateway/gateway_models.h"

#include <stdlib.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/dialects/sl_models.h"

struct _gateway_models_t {
    gateway_core_t *core;
    sl_providers_t *routes;             //  borrowed, outlives the gateway; NULL: no list
    sl_buf_t scratch;                   //  the list being answered
};

//  A models path (sl_models.h): answered in the dialect the path names.
static bool
s_serve (void *arg, sl_http_req_t *req, const char *method, const char *path)
{
    (void) method;
    gateway_models_t *self = arg;
    int status, dialect;
    sl_buf_reset (&self->scratch);
    if (!self->routes
    ||  !sl_models_answer (self->routes, path, gateway_core_header, req, &status, &dialect, &self->scratch))
        return false;
    if (!gateway_core_authorized (self->core, req, dialect))
        return true;
    sl_http_respond (req, status, "application/json", self->scratch.data, self->scratch.len);
    return true;
}

gateway_models_t *
gateway_models_new (gateway_core_t *core, const gateway_config_t *config)
{
    gateway_models_t *self = sl_xcalloc (1, sizeof *self);
    self->core = core;
    self->routes = config->routes;
    gateway_route_t route = { .method = "GET", .prefix = "/", .serve = s_serve, .arg = self };
    gateway_core_route (core, &route);
    return self;
}

void
gateway_models_destroy (gateway_models_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_models_t *self = *self_p;
    sl_buf_free (&self->scratch);
    free (self);
    *self_p = NULL;
}
