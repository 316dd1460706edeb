/*  sl_openai.h - the OpenAI Chat Completions module (see sl_dialect.h).

    What its files export to the module's table, and the model list shape
    the OpenAI SDK reads (the Responses module lists models the same way:
    one SDK reads both).
*/
#ifndef SL_OPENAI_H
#define SL_OPENAI_H

#include "common/dialects/sl_dialect.h"

//  OpenAI's endpoint: the default base URL of both its dialects.
#define SL_OPENAI_BASE_URL "https://api.openai.com/v1"

extern const sl_decoder_vt_t sl_openai_decoder;
extern const sl_renderer_t sl_openai_renderer;
extern const sl_validator_vt_t sl_openai_validator;

int sl_openai_parse (json_t *root, const sl_endpoint_t *endpoint, sl_req_t *req, sl_refusal_t *err);
int sl_openai_forward (sl_str_t body, const sl_req_t *req, sl_buf_t *out);
int sl_openai_render_request (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out);

//  {"object":"list","data":[...]} and one {"id","object":"model",...}.
void sl_openai_model_list (const sl_model_entry_t *models, size_t count, sl_buf_t *out);
void sl_openai_model (const sl_model_entry_t *model, sl_buf_t *out);

#endif
