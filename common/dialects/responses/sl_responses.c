/*  sl_responses.c - the OpenAI Responses dialect: its table.

    Client endpoint POST /v1/responses (also /responses); upstream POST
    {base}/responses with Authorization: Bearer. Its clients (the openai
    SDK, Codex CLI) list models with the OpenAI module's GET /v1/models,
    in the same shape. OpenAI's: the built-in provider shares the base URL
    option and the key of the OpenAI module's. Requests: sl_responses_request.c; stream decoder:
    sl_responses_decode.c; renderer: sl_responses_render.c; validator:
    sl_responses_validate.c.

    Tests: tests/unit/common/dialects/test_dialects.c, the conformance
    suite, runs over this table (endpoint, URL, credential, finish values,
    defaults, model lists), and test_sl_models.c.
*/
#include "common/dialects/responses/sl_responses.h"

#include <string.h>

#include "common/dialects/openai/sl_openai.h"

static const char *const s_paths [] = { "/v1/responses", "/responses", NULL };

//  The final status (completed, failed) and incomplete_details.reason.
static const sl_finish_name_t s_finishes [] = {
    { "completed", SL_FIN_STOP }, { "max_output_tokens", SL_FIN_LENGTH },
    { "content_filter", SL_FIN_CONTENT_FILTER }, { "failed", SL_FIN_ERROR }, { "error", SL_FIN_ERROR },
    { NULL, 0 }
};

static const char *const s_headers [] = { NULL };

const sl_dialect_t sl_responses_dialect = {
    .id = SL_DIALECT_RESPONSES,
    .name = "responses",
    SL_DIALECT_PARTS (responses),
    .paths = s_paths,
    .url_path = "/responses",
    .credential = "Authorization",
    .scheme = "Bearer ",
    .headers = s_headers,
    .finishes = s_finishes,
    .vendor = "openai",
    .base_url = SL_OPENAI_BASE_URL,
    //  No models_path: the OpenAI module answers GET /v1/models for this
    //  dialect's clients, in the same shape.
    .model_list = sl_openai_model_list,
    .model = sl_openai_model,
    .corpus = "openai-responses",
};
