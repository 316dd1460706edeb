/*  Unit tests: common/dialects/azure/sl_azure (its table: the URL of the
    deployments API and of the v1 API, a model without a deployment, what
    a provider must hold together, its credential). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_upstream.h"

static const sl_deployment_t s_deployments [] = { { "gpt-4o", "prod-4o" }, { "gpt 5", "prod five" } };

static int
s_url (const sl_provider_t *p, const char *model, sl_buf_t *url, sl_buf_t *why)
{
    sl_buf_reset (url);
    sl_buf_reset (why);
    return sl_dialect_url (sl_dialect_get (SL_DIALECT_AZURE), p, sl_str (model), url, why);
}

Test (sl_azure, the_deployments_api_names_the_model_s_deployment)
{
    sl_provider_t p = { .name = "az", .dialect = SL_DIALECT_AZURE, .base_url = "https://r.openai.azure.com",
                        .api_version = "2024-10-21", .deployments = s_deployments, .deployment_count = 2 };
    sl_buf_t url = { 0 }, why = { 0 };
    cr_assert_eq (s_url (&p, "gpt-4o", &url, &why), 0, "%s", sl_buf_cstr (&why));
    cr_expect_str_eq (sl_buf_cstr (&url),
                      "https://r.openai.azure.com/openai/deployments/prod-4o/chat/completions?api-version=2024-10-21");
    cr_assert_eq (s_url (&p, "gpt 5", &url, &why), 0);
    cr_expect_str_eq (sl_buf_cstr (&url),
                      "https://r.openai.azure.com/openai/deployments/prod%20five/chat/completions?api-version=2024-10-21");
    //  A model without one is refused, never sent to another's deployment.
    cr_expect_eq (s_url (&p, "gpt-4.1", &url, &why), -1);
    cr_expect_str_eq (sl_buf_cstr (&why), "model 'gpt-4.1' has no deployment at provider 'az' (its deployments: map)");
    sl_buf_free (&url);
    sl_buf_free (&why);
}

Test (sl_azure, the_v1_api_takes_the_model_in_the_body)
{
    const char *versions [] = { NULL, "", "v1" };
    sl_buf_t url = { 0 }, why = { 0 };
    for (size_t i = 0; i < 3; i++) {
        sl_provider_t p = { .name = "az", .dialect = SL_DIALECT_AZURE, .base_url = "https://r.openai.azure.com",
                            .api_version = versions [i] };
        cr_assert_eq (s_url (&p, "anything", &url, &why), 0);
        cr_expect_str_eq (sl_buf_cstr (&url), "https://r.openai.azure.com/openai/v1/chat/completions");
    }
    sl_provider_t none = { .name = "az", .dialect = SL_DIALECT_AZURE };
    cr_expect_eq (s_url (&none, "m", &url, &why), -1, "the resource is the provider's to say");
    sl_buf_free (&url);
    sl_buf_free (&why);
}

Test (sl_azure, a_provider_holds_together_or_is_refused)
{
    sl_buf_t why = { 0 };
    sl_provider_t p = { .name = "az", .dialect = SL_DIALECT_AZURE, .base_url = "https://r.openai.azure.com",
                        .deployments = s_deployments, .deployment_count = 2 };
    cr_expect_eq (sl_providers_fields (&p, &why), -1, "deployments without an api_version");
    p.api_version = "2024-10-21";
    sl_buf_reset (&why);
    cr_expect_eq (sl_providers_fields (&p, &why), 0, "%s", sl_buf_cstr (&why));
    p.region = "eastus";
    cr_expect_eq (sl_providers_fields (&p, &why), -1, "Azure reads no region");
    sl_buf_free (&why);
}

Test (sl_azure, the_key_goes_in_api_key_and_an_openai_client_s_key_is_moved_there)
{
    const sl_dialect_t *d = sl_dialect_get (SL_DIALECT_AZURE);
    cr_assert (d->upstream_only);
    cr_expect_eq (d->format, SL_DIALECT_OPENAI);
    cr_expect_str_eq (d->genai_provider, "azure.ai.openai");
    sl_provider_t p = { .name = "az", .dialect = SL_DIALECT_AZURE, .base_url = "https://r.openai.azure.com",
                        .key_env = "" };
    sl_upstream_t up;
    cr_assert_eq (sl_upstream_prepare (d, &p, SL_STR_LIT ("m"), "K1", false, SL_STR_NULL, SL_STR_NULL, &up), 0);
    cr_expect_str_eq (sl_buf_cstr (&up.header [up.header_count - 1]), "api-key: K1");
    sl_upstream_clear (&up);
    cr_assert_eq (sl_upstream_prepare (d, &p, SL_STR_LIT ("m"), NULL, true, SL_STR_LIT ("Authorization: Bearer ck"),
                                       SL_STR_NULL, &up), 0);
    cr_expect_str_eq (sl_buf_cstr (&up.header [up.header_count - 1]), "api-key: ck");
    sl_upstream_clear (&up);
}
