/*  Unit tests: common/stages/sl_auths (which providers get a credential
    source, and which source: a token from a variable, a key in a header,
    a cloud's own from the maker given). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/stages/sl_auths.h"
#include "proto/sl_msg.h"

static const char *
s_env (void *arg, const char *name)
{
    (void) arg;
    if (strcmp (name, "ENTRA_TOKEN") == 0)
        return "eyJ-entra";
    return NULL;
}

static sl_providers_t *
s_providers (const sl_provider_t *list, size_t count)
{
    sl_providers_t *p = sl_providers_new ();
    for (size_t i = 0; i < count; i++)
        cr_assert_eq (sl_providers_add_provider (p, &list [i]), 0, "%s", list [i].name);
    return p;
}

static int
s_authorize (sl_auth_t *a, sl_buf_t *lines, sl_buf_t *why)
{
    static const sl_auth_request_t req = { .method = "POST", .url = "https://h/x" };
    size_t count = 0;
    return sl_auth_authorize (a, &req, lines, &count, why);
}

Test (sl_auths, a_token_variable_makes_a_bearer_source_and_a_key_none)
{
    const sl_provider_t list [] = {
        { .name = "keyed", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h", .key_env = "K" },
        { .name = "entra", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h", .token_env = "ENTRA_TOKEN" },
        { .name = "empty", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h", .token_env = "NOT_SET" },
        { .name = "plain", .dialect = SL_DIALECT_ANTHROPIC, .base_url = "http://h" },
    };
    sl_providers_t *providers = s_providers (list, 4);
    const sl_auths_config_t config = { .env = s_env };
    sl_auths_t *auths = sl_auths_new (providers, &config);
    cr_expect_null (sl_auths_get (auths, sl_providers_provider (providers, 0)), "a key goes in its header");
    cr_expect_null (sl_auths_get (auths, sl_providers_provider (providers, 3)));
    cr_expect_eq (sl_auths_kind (sl_providers_provider (providers, 1)), SL_AUTH_BEARER);
    sl_buf_t lines = { 0 }, why = { 0 };
    sl_auth_t *entra = sl_auths_get (auths, sl_providers_provider (providers, 1));
    cr_assert_not_null (entra);
    cr_expect_eq (s_authorize (entra, &lines, &why), SL_AUTH_READY);
    cr_expect_str_eq (lines.data, "Authorization: Bearer eyJ-entra");
    sl_auth_t *empty = sl_auths_get (auths, sl_providers_provider (providers, 2));
    cr_assert_not_null (empty, "a token variable that is empty fails each call, never sends without");
    cr_expect_eq (s_authorize (empty, &lines, &why), SL_AUTH_FAILED);
    cr_expect_not_null (strstr (sl_buf_cstr (&why), "NOT_SET"), "%s", sl_buf_cstr (&why));
    //  A provider of another table is no provider of these.
    sl_provider_t other = list [1];
    cr_expect_null (sl_auths_get (auths, &other));
    sl_buf_free (&lines);
    sl_buf_free (&why);
    sl_auths_destroy (&auths);
    cr_expect_null (auths);
    sl_providers_destroy (&providers);
}

Test (sl_auths, an_azure_provider_without_key_or_token_takes_entra_ids_tokens)
{
    const sl_provider_t list [] = {
        { .name = "az-key", .dialect = SL_DIALECT_AZURE, .base_url = "http://h", .key_env = "AZ_KEY" },
        { .name = "az-token", .dialect = SL_DIALECT_AZURE, .base_url = "http://h", .token_env = "ENTRA_TOKEN" },
        { .name = "az-entra", .dialect = SL_DIALECT_AZURE, .base_url = "http://h" },
    };
    sl_providers_t *providers = s_providers (list, 3);
    cr_expect_eq (sl_auths_kind (sl_providers_provider (providers, 0)), SL_AUTH_KEY);
    cr_expect_eq (sl_auths_kind (sl_providers_provider (providers, 1)), SL_AUTH_BEARER);
    cr_expect_eq (sl_auths_kind (sl_providers_provider (providers, 2)), SL_AUTH_AZURE);
    //  No cloud maker here: a source that fails every call saying why,
    //  never a call without credentials (nor with the client's key).
    const sl_auths_config_t config = { .env = s_env };
    sl_auths_t *auths = sl_auths_new (providers, &config);
    sl_auth_t *entra = sl_auths_get (auths, sl_providers_provider (providers, 2));
    cr_assert_not_null (entra);
    sl_buf_t lines = { 0 }, why = { 0 };
    cr_expect_eq (s_authorize (entra, &lines, &why), SL_AUTH_FAILED);
    cr_expect_not_null (strstr (sl_buf_cstr (&why), "Entra ID credentials"), "%s", sl_buf_cstr (&why));
    sl_buf_free (&lines);
    sl_buf_free (&why);
    sl_auths_destroy (&auths);
    sl_providers_destroy (&providers);
}
