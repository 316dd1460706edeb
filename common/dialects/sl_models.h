/*  sl_models.h - the models clients can ask for: GET /v1/models.

    A pure library: what routing offers, from the same routes table the
    gateway routes requests with (common/dialects/sl_providers.h), in the shape each
    SDK's models.list() and models.retrieve() read. Which list a GET is,
    and its shape, are the dialect modules' (sl_dialect_t.models,
    model_list, model):

      GET /v1/models              OpenAI {"object":"list","data":[...]}, or
                                  Anthropic {"data":[...],"has_more":false,...}
                                  when the request carries anthropic-version
                                  (the Anthropic SDK always sends it)
      GET /v1/models/{id}         one model in the same shapes; 404 in the
                                  dialect when no provider would serve it
      GET /v1beta/models          Gemini {"models":[...]} (also /v1beta/models/{id})

    A list names every model of the routes, whatever its provider's
    dialect (a client of any dialect reaches a provider of any other),
    whose model is a plain name, not a glob: a glob ("llama-*") names no
    one model a client could pick. Each model is listed once, in route
    order, owned by the provider a client of the list's dialect is sent to
    (sl_providers_pick: one of its own dialect when a route offers one).
    Without a routes file there are no routes, so the lists are empty; a
    single model is found whenever routing sends its name somewhere (a
    route, a glob, a default provider), since it can then be used: 404
    only without any provider.
*/
#ifndef SL_MODELS_H
#define SL_MODELS_H

#include <stdbool.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_dialect.h"

typedef struct _sl_routes_t sl_providers_t;   //  common/dialects/sl_providers.h

//  Answer a GET for path (no query string), whose headers header reads.
//  Returns false when the path is not a models path (nothing written);
//  otherwise true, with the HTTP status in *status, the dialect of the
//  list in *dialect (for an error answer) and the JSON body appended to
//  out.
bool sl_models_answer (sl_providers_t *routes, const char *path, sl_header_fn *header, void *arg,
                       int *status, int *dialect, sl_buf_t *out);

#endif
