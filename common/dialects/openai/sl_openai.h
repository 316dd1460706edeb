/*  sl_openai.h - the OpenAI Chat Completions module (see sl_dialect.h).

    What its files export to the module's table (SL_DIALECT_DECLARE:
    sl_openai_parse, _forward and _render_request, sl_openai_decoder,
    _renderer and _validator), and the model list shape the OpenAI SDK
    reads (the Responses module lists models the same way: one SDK reads
    both).
*/
#ifndef SL_OPENAI_H
#define SL_OPENAI_H

#include "common/dialects/sl_dialect.h"

//  OpenAI's endpoint: the default base URL of both its dialects.
#define SL_OPENAI_BASE_URL "https://api.openai.com/v1"

SL_DIALECT_DECLARE (openai);

//  An error response's body in the Chat Completions shape
//  ({"error":{"message","type","param","code"}}), which the Responses
//  API answers with too.
void sl_openai_error_body (int status, sl_str_t code, sl_str_t message, sl_buf_t *out);
//  {"object":"list","data":[...]} and one {"id","object":"model",...}.
void sl_openai_model_list (const sl_model_entry_t *models, size_t count, sl_buf_t *out);
void sl_openai_model (const sl_model_entry_t *model, sl_buf_t *out);

#endif
