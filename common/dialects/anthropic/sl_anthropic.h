/*  sl_anthropic.h - the Anthropic Messages module (see sl_dialect.h):
    what its files export to the module's table. */
#ifndef SL_ANTHROPIC_H
#define SL_ANTHROPIC_H

#include "common/dialects/sl_dialect.h"

extern const sl_decoder_vt_t sl_anthropic_decoder;
extern const sl_renderer_t sl_anthropic_renderer;
extern const sl_validator_vt_t sl_anthropic_validator;

int sl_anthropic_parse (json_t *root, const sl_endpoint_t *endpoint, sl_req_t *req, sl_refusal_t *err);
int sl_anthropic_forward (sl_str_t body, const sl_req_t *req, sl_buf_t *out);
int sl_anthropic_render_request (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out);

#endif
