/*  sl_azure.c - the Azure OpenAI dialect: its table.

    Upstream only (clients call sluice in OpenAI's dialects); its bodies
    are Chat Completions (format openai: an OpenAI client's body goes as
    it came). The provider's base_url is the resource's endpoint,
    https://{resource}.openai.azure.com, and the path follows it:

      api_version "2024-10-21" (any but v1): the deployments API,
          {base}/openai/deployments/{deployment}/chat/completions
          ?api-version={api_version}, the deployment the provider's
          deployments map names for the model (a model without one is
          refused, never sent to a deployment of another model);
      api_version absent or "v1": the v1 API,
          {base}/openai/v1/chat/completions, the model (the deployment's
          name) in the body.

    The credential is the api-key header (key_env), an Entra ID bearer
    token from a variable (token_env), or else Entra ID's tokens fetched
    from the environment's client secret or workload identity
    (SL_AUTH_AZURE: common/cloud/sl_azauth).
    Stream decoder: sl_azure_decode.c. gen_ai.provider.name is
    azure.ai.openai.

    Tests: tests/unit/common/dialects/azure/test_sl_azure.c, and the
    conformance suite (tests/unit/common/dialects/test_dialects.c).
*/
#include "common/dialects/azure/sl_azure.h"

#include <string.h>

#include "common/dialects/openai/sl_openai.h"
#include "common/http/sl_auth.h"

#define S_MODEL_MAX 256                 //  longest model name put in an upstream URL

static bool
s_v1 (const sl_provider_t *p)
{
    return !p->api_version || !*p->api_version || strcmp (p->api_version, SL_AZURE_V1) == 0;
}

static int
s_url (const sl_provider_t *p, sl_str_t model, sl_buf_t *out, sl_buf_t *why)
{
    if (!p->base_url || !*p->base_url) {
        sl_buf_printf (why, "provider '%s' has no base_url (https://{resource}.openai.azure.com)", p->name);
        return -1;
    }
    if (s_v1 (p)) {
        sl_buf_printf (out, "%s/openai/v1/chat/completions", p->base_url);
        return 0;
    }
    const char *deployment = model.len <= S_MODEL_MAX ? sl_provider_deployment (p, model) : NULL;
    if (!deployment) {
        sl_buf_printf (why, "model '%.*s' has no deployment at provider '%s' (its deployments: map)",
                       (int) (model.len <= S_MODEL_MAX ? model.len : S_MODEL_MAX), model.ptr ? model.ptr : "",
                       p->name);
        return -1;
    }
    sl_buf_printf (out, "%s/openai/deployments/", p->base_url);
    sl_dialect_put_segment (sl_str (deployment), NULL, out);
    sl_buf_puts (out, "/chat/completions?api-version=");
    sl_dialect_put_segment (sl_str (p->api_version), NULL, out);
    return 0;
}

//  The v1 API takes the deployment's name as the model: a deployments
//  map would be read by nothing.
static int
s_provider_check (const sl_provider_t *p, sl_buf_t *why)
{
    if (p->deployment_count && s_v1 (p)) {
        sl_buf_puts (why, "deployments need an api_version (the v1 API takes the deployment's name as the model)");
        return -1;
    }
    return 0;
}

//  Chat Completions' finish reasons (content_filter: Azure's filter
//  stopped the answer).
static const sl_finish_name_t s_finishes [] = {
    { "stop", SL_FIN_STOP }, { "length", SL_FIN_LENGTH }, { "tool_calls", SL_FIN_TOOL_CALLS },
    { "function_call", SL_FIN_TOOL_CALLS }, { "content_filter", SL_FIN_CONTENT_FILTER },
    { NULL, 0 }
};

static const char *const s_headers [] = { NULL };

const sl_dialect_t sl_azure_dialect = {
    .id = SL_DIALECT_AZURE,
    .name = "azure",
    .upstream_only = true,
    .format = SL_DIALECT_OPENAI,
    .forward = sl_openai_forward,
    .render = sl_openai_render_request,
    .url = s_url,
    .provider_fields = SL_PROVIDER_FIELD_BASE_URL | SL_PROVIDER_FIELD_API_VERSION | SL_PROVIDER_FIELD_DEPLOYMENTS,
    .provider_needs = SL_PROVIDER_FIELD_BASE_URL,
    .provider_check = s_provider_check,
    .credential = "api-key",
    .auth = SL_AUTH_AZURE,
    .scheme = "",
    .headers = s_headers,
    .decoder = &sl_azure_decoder,
    .finishes = s_finishes,
    .genai_provider = "azure.ai.openai",
};
