/*  sl_responses.h - the OpenAI Responses module (see sl_dialect.h): what
    its files export to the module's table. */
#ifndef SL_RESPONSES_H
#define SL_RESPONSES_H

#include "common/dialects/sl_dialect.h"

extern const sl_decoder_vt_t sl_responses_decoder;
extern const sl_renderer_t sl_responses_renderer;
extern const sl_validator_vt_t sl_responses_validator;

int sl_responses_parse (json_t *root, const sl_endpoint_t *endpoint, sl_req_t *req, sl_refusal_t *err);
int sl_responses_forward (sl_str_t body, const sl_req_t *req, sl_buf_t *out);
int sl_responses_render_request (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out);

#endif
