/*  Unit tests: common/dialects/sl_baseurls (the options that move the
    built-in providers). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_opts.h"
#include "common/dialects/sl_baseurls.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_providers.h"

static const sl_opt_t *
s_find (const sl_opt_t *opts, const char *name)
{
    for (; opts->name; opts++)
        if (strcmp (opts->name, name) == 0)
            return opts;
    return NULL;
}

Test (sl_baseurls, one_option_per_vendor_after_the_services_own)
{
    sl_baseurls_t *urls = sl_baseurls_new ();
    cr_assert_not_null (urls);
    const char *bind = "tcp://x";
    sl_opt_t own [] = { { "bind", NULL, &bind, "inbox" }, SL_OPT_END };
    const sl_opt_t *opts = sl_baseurls_opts (urls, own);
    cr_expect_str_eq (opts [0].name, "bind", "the service's own options first");
    size_t count = 0;
    while (opts [count].name)
        count++;
    cr_expect_eq (count, 1 + 3, "openai (with responses), anthropic, gemini");
    const sl_opt_t *openai = s_find (opts, "openai-base-url");
    cr_assert_not_null (openai);
    cr_expect_str_eq (openai->env, "SLUICE_OPENAI_BASE_URL");
    cr_expect_str_eq (*openai->value, "https://api.openai.com/v1");
    cr_expect_not_null (strstr (openai->help, "openai and responses"), "%s", openai->help);
    cr_expect_not_null (s_find (opts, "anthropic-base-url"));
    cr_expect_not_null (s_find (opts, "gemini-base-url"));
    sl_baseurls_destroy (&urls);
    sl_baseurls_destroy (&urls);
}

Test (sl_baseurls, a_flag_or_a_variable_moves_its_vendors_providers)
{
    sl_baseurls_t *urls = sl_baseurls_new ();
    sl_opt_t *opts = sl_baseurls_opts (urls, NULL);
    setenv ("SLUICE_ANTHROPIC_BASE_URL", "http://127.0.0.1:1/a", 1);
    char *argv [] = { "sluice-test", "--openai-base-url", "http://127.0.0.1:2/v1", NULL };
    cr_assert_eq (sl_opts_parse ("test", opts, 3, argv), 0);
    unsetenv ("SLUICE_ANTHROPIC_BASE_URL");
    const char *const *table = sl_baseurls_table (urls);
    cr_expect_str_eq (table [SL_DIALECT_OPENAI], "http://127.0.0.1:2/v1");
    cr_expect_str_eq (table [SL_DIALECT_RESPONSES], "http://127.0.0.1:2/v1", "one option for OpenAI's two");
    cr_expect_str_eq (table [SL_DIALECT_ANTHROPIC], "http://127.0.0.1:1/a");
    cr_expect_str_eq (table [SL_DIALECT_GEMINI], "https://generativelanguage.googleapis.com/v1beta");
    sl_providers_t *providers = sl_providers_new_default (table);
    cr_assert_not_null (providers);
    cr_expect_str_eq (sl_providers_find (providers, SL_STR_LIT ("responses"))->base_url, "http://127.0.0.1:2/v1");
    cr_expect_str_eq (sl_providers_find (providers, SL_STR_LIT ("anthropic"))->base_url, "http://127.0.0.1:1/a");
    sl_providers_destroy (&providers);
    sl_baseurls_destroy (&urls);
}
