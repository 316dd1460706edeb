/*  sl_vertex.h - Vertex AI's doors (see sl_dialect.h): Gemini (the vertex
    module, sl_vertex.c) and Claude (vertex-anthropic, sl_vertex_anthropic.c),
    both upstream-only, at one URL scheme:

        {base}/v1/projects/{project}/locations/{region}/publishers/
        {publisher}/models/{model}:{method}

    where base is the provider's base_url, or Vertex AI's own endpoint of
    the region: https://{region}-aiplatform.googleapis.com, and for the
    region "global" https://aiplatform.googleapis.com. The credential is a
    Google OAuth2 access token (Authorization: Bearer): from token_env or
    key_env, or Google's own sources (SL_AUTH_GOOGLE: sl_auths.h).
*/
#ifndef SL_VERTEX_H
#define SL_VERTEX_H

#include "common/dialects/sl_dialect.h"

#define SL_VERTEX_GLOBAL "global"       //  the region of Vertex AI's global endpoint

//  The URL of a model's method at a Vertex AI provider (its base_url or
//  its region's endpoint, its project and region). 0, or -1 with why.
int sl_vertex_url (const sl_provider_t *provider, const char *publisher, sl_str_t model, const char *method,
                   sl_buf_t *out, sl_buf_t *why);

//  The Anthropic body as Vertex AI takes it (sl_vertex_anthropic.c).
int sl_vertex_anthropic_forward (sl_str_t body, const sl_req_t *req, sl_buf_t *out);
int sl_vertex_anthropic_render_request (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out);

#endif
