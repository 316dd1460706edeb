/*  Unit tests: common/dialects/sl_providers (providers, model routes,
    prices; tables made by hand, or from a routes file by its loader,
    common/config/sl_routesfile, whose own tests are beside it). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config/sl_routesfile.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_providers.h"

static sl_providers_t *
s_parse (const char *text, char **error)
{
    sl_providers_t *providers = NULL;
    sl_routesfile_parse (text, strlen (text), "routes.yaml", &providers, NULL, error);
    return providers;
}

static const char *
s_match (sl_providers_t *r, const char *model, int dialect)
{
    const sl_provider_t *p = sl_providers_match (r, sl_str (model), dialect);
    return p ? p->name : "(none)";
}

Test (sl_providers, defaults_one_provider_per_dialect)
{
    const char *urls [SL_DIALECT_MAX] = {
        [SL_DIALECT_OPENAI] = "https://api.openai.com/v1/", [SL_DIALECT_RESPONSES] = "https://api.openai.com/v1/",
        [SL_DIALECT_ANTHROPIC] = "https://api.anthropic.com",
        [SL_DIALECT_GEMINI] = "https://generativelanguage.googleapis.com/v1beta",
    };
    sl_providers_t *r = sl_providers_new_default (urls);
    cr_assert_not_null (r);
    cr_expect_eq (sl_providers_provider_count (r), 4);
    cr_expect_eq (sl_providers_route_count (r), 0);
    cr_expect_str_eq (s_match (r, "gpt-4o", SL_DIALECT_OPENAI), "openai");
    cr_expect_str_eq (s_match (r, "gpt-4o", SL_DIALECT_RESPONSES), "responses");
    cr_expect_str_eq (s_match (r, "claude-sonnet-4", SL_DIALECT_ANTHROPIC), "anthropic");
    cr_expect_str_eq (s_match (r, "gemini-2.5-pro", SL_DIALECT_GEMINI), "gemini");
    const sl_provider_t *p = sl_providers_find (r, SL_STR_LIT ("openai"));
    cr_assert_not_null (p);
    cr_expect_str_eq (p->base_url, "https://api.openai.com/v1", "trailing slash dropped");
    cr_expect_str_eq (p->key_env, "OPENAI_API_KEY");
    cr_expect (p->forward_auth);
    cr_expect_str_eq (sl_providers_find (r, SL_STR_LIT ("gemini"))->key_env, "GEMINI_API_KEY");
    cr_expect_str_eq (sl_providers_find (r, SL_STR_LIT ("anthropic"))->key_env, "ANTHROPIC_API_KEY");
    cr_expect_null (sl_providers_find (r, SL_STR_LIT ("nobody")));
    sl_providers_destroy (&r);
    sl_providers_destroy (&r);
    urls [SL_DIALECT_OPENAI] = "ftp://x";
    cr_expect_null (sl_providers_new_default (urls), "a bad base URL");
}

Test (sl_providers, defaults_come_from_the_dialect_modules)
{
    sl_providers_t *r = sl_providers_new_default (NULL);
    cr_assert_not_null (r);
    //  One per dialect, each vendor's together.
    const char *names [] = { "openai", "responses", "anthropic", "gemini" };
    const char *urls [] = { "https://api.openai.com/v1", "https://api.openai.com/v1", "https://api.anthropic.com",
                            "https://generativelanguage.googleapis.com/v1beta" };
    const char *keys [] = { "OPENAI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY" };
    cr_assert_eq (sl_providers_provider_count (r), 4);
    for (size_t i = 0; i < 4; i++) {
        const sl_provider_t *p = sl_providers_provider (r, i);
        cr_expect_str_eq (p->name, names [i]);
        cr_expect_str_eq (sl_dialect_name (p->dialect), names [i]);
        cr_expect_str_eq (p->base_url, urls [i]);
        cr_expect_str_eq (p->key_env, keys [i]);
        cr_expect (p->forward_auth);
    }
    sl_providers_destroy (&r);
}

Test (sl_providers, first_matching_route_of_the_dialect_wins)
{
    char *error = NULL;
    sl_providers_t *r = s_parse (
        "version: 1\n"
        "routes:\n"
        "  - model: 'llama-*'\n"
        "    provider: local\n"
        "  - model: '*'\n"
        "    provider: cloud\n"
        "  - model: 'claude-*'\n"
        "    provider: claude\n"
        "providers:\n"
        "  - name: cloud\n"
        "    dialect: openai\n"
        "    base_url: https://api.example.com/v1\n"
        "    key_env: CLOUD_KEY\n"
        "  - name: local\n"
        "    dialect: openai\n"
        "    base_url: http://127.0.0.1:8000/v1\n"
        "    forward_client_auth: false\n"
        "  - name: claude\n"
        "    dialect: anthropic\n"
        "    base_url: https://api.anthropic.com\n", &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    cr_expect_eq (sl_providers_provider_count (r), 3);
    cr_expect_eq (sl_providers_route_count (r), 3);
    cr_expect_str_eq (sl_providers_route (r, 0)->model, "llama-*");
    cr_expect_null (sl_providers_route (r, 3));
    cr_expect_str_eq (s_match (r, "llama-3-70b", SL_DIALECT_OPENAI), "local");
    cr_expect_str_eq (s_match (r, "gpt-4o", SL_DIALECT_OPENAI), "cloud");
    cr_expect_str_eq (s_match (r, "claude-opus", SL_DIALECT_OPENAI), "cloud", "'*' comes first for openai");
    cr_expect_str_eq (s_match (r, "claude-opus", SL_DIALECT_ANTHROPIC), "claude");
    cr_expect_str_eq (s_match (r, "anything", SL_DIALECT_ANTHROPIC), "claude", "first provider of the dialect");
    cr_expect_str_eq (s_match (r, "gemini-pro", SL_DIALECT_GEMINI), "(none)");
    cr_expect_str_eq (s_match (r, "llama-3", 0), "local", "any dialect");
    const sl_provider_t *local = sl_providers_find (r, SL_STR_LIT ("local"));
    cr_expect_not (local->forward_auth);
    cr_expect_str_eq (local->key_env, "");
    sl_providers_destroy (&r);
}

Test (sl_providers, model_names_that_cannot_match)
{
    sl_providers_t *r = sl_providers_new ();
    sl_provider_t p = { .name = "a", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h", .key_env = "",
                        .forward_auth = true };
    cr_expect_eq (sl_providers_add_provider (r, &p), 0);
    cr_expect_eq (sl_providers_add_provider (r, &p), -1, "name taken");
    sl_provider_t q = { .name = "b", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h2", .key_env = "",
                        .forward_auth = true };
    cr_expect_eq (sl_providers_add_provider (r, &q), 0);
    cr_expect_eq (sl_providers_add_route (r, "x*", "b"), 0);
    cr_expect_eq (sl_providers_add_route (r, "y*", "nobody"), -1);
    cr_expect_str_eq (s_match (r, "xyz", SL_DIALECT_OPENAI), "b");
    //  A model with a NUL byte, or absent, takes the dialect's default.
    const sl_provider_t *m = sl_providers_match (r, sl_str_n ("x\0y", 3), SL_DIALECT_OPENAI);
    cr_expect_str_eq (m->name, "a");
    m = sl_providers_match (r, SL_STR_NULL, SL_DIALECT_OPENAI);
    cr_expect_str_eq (m->name, "a");
    const char *bad_keys [] = { "K1", "sk-secret-key" };
    sl_provider_t bad [] = {
        { .name = "c", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h", .key_env = "",
          .key_envs = bad_keys, .key_env_count = 2 },
        { .name = "c d", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h", .key_env = "", .forward_auth = true },
        { .name = "c", .dialect = 0, .base_url = "http://h", .key_env = "", .forward_auth = true },
        { .name = "c", .dialect = SL_DIALECT_OPENAI, .base_url = "h", .key_env = "", .forward_auth = true },
        { .name = "c", .dialect = SL_DIALECT_OPENAI, .base_url = "http://", .key_env = "", .forward_auth = true },
        { .name = "c", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h", .key_env = "sk-secret-key",
          .forward_auth = true },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        cr_expect_eq (sl_providers_add_provider (r, &bad [i]), -1, "bad provider %zu", i);
    sl_providers_destroy (&r);
}

//  A route may name a provider of any dialect: the client's own is
//  preferred when a route offers one, else the first that matches.
Test (sl_providers, pick_crosses_dialects_when_the_routes_say_so)
{
    const char text [] =
        "providers:\n"
        "  - { name: oa, dialect: openai, base_url: http://o }\n"
        "  - { name: ant, dialect: anthropic, base_url: http://a }\n"
        "  - { name: gem, dialect: gemini, base_url: http://g }\n"
        "routes:\n"
        "  - { model: 'claude-*', provider: ant }\n"
        "  - { model: shared, provider: ant }\n"
        "  - { model: shared, provider: oa }\n"
        "  - { model: '*@gemini', provider: gem }\n";
    char *error = NULL;
    sl_providers_t *r = NULL;
    sl_routesfile_parse (text, sizeof text - 1, "r", &r, NULL, &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    cr_expect_str_eq (sl_providers_pick (r, SL_STR_LIT ("claude-x"), SL_DIALECT_OPENAI)->name, "ant",
                      "the only route: another dialect");
    cr_expect_str_eq (sl_providers_pick (r, SL_STR_LIT ("shared"), SL_DIALECT_OPENAI)->name, "oa",
                      "the client's own dialect first");
    cr_expect_str_eq (sl_providers_pick (r, SL_STR_LIT ("shared"), SL_DIALECT_GEMINI)->name, "ant",
                      "none of its dialect: the first route");
    cr_expect_str_eq (sl_providers_pick (r, SL_STR_LIT ("mock-text@gemini"), SL_DIALECT_ANTHROPIC)->name, "gem");
    cr_expect_str_eq (sl_providers_pick (r, SL_STR_LIT ("gpt-x"), SL_DIALECT_ANTHROPIC)->name, "ant",
                      "no route: the default of the client's dialect");
    cr_expect_str_eq (sl_providers_pick (r, SL_STR_LIT ("gpt-x"), SL_DIALECT_RESPONSES)->name, "oa",
                      "no provider of its dialect: the first provider");
    sl_providers_destroy (&r);
    sl_providers_t *empty = sl_providers_new ();
    cr_expect_null (sl_providers_pick (empty, SL_STR_LIT ("x"), SL_DIALECT_OPENAI));
    sl_providers_destroy (&empty);
}

#define S_PROVIDER "providers:\n  - name: a\n    dialect: openai\n    base_url: http://h\n"

Test (sl_providers, prices_by_exact_name_then_first_glob)
{
    char *error = NULL;
    sl_providers_t *r = s_parse (S_PROVIDER
                                 "prices:\n"
                                 "  - model: \"gpt-4o*\"\n    input: 2.5\n    output: 10\n"
                                 "  - model: \"gpt-*\"\n    input: 1\n    output: 2\n"
                                 "  - model: gpt-4o-mini\n    input: 0.15\n    output: 0.6\n", &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    cr_expect_eq (sl_providers_price_count (r), 3);
    double in = -1, out = -1;
    //  Exact: the named entry wins over the glob listed before it.
    cr_expect_eq (sl_providers_price (r, "gpt-4o-mini", &in, &out), 0);
    cr_expect_float_eq (in, 0.15, 1e-12);
    cr_expect_float_eq (out, 0.6, 1e-12);
    //  Glob: the first that matches, in the file's order.
    cr_expect_eq (sl_providers_price (r, "gpt-4o-2024-08-06", &in, &out), 0);
    cr_expect_float_eq (in, 2.5, 1e-12);
    cr_expect_float_eq (out, 10.0, 1e-12);
    cr_expect_eq (sl_providers_price (r, "gpt-3.5-turbo", &in, &out), 0);
    cr_expect_float_eq (in, 1.0, 1e-12);
    //  None: -1 and nothing to pay.
    cr_expect_eq (sl_providers_price (r, "claude-sonnet-4", &in, &out), -1);
    cr_expect_float_eq (in, 0.0, 1e-12);
    cr_expect_float_eq (out, 0.0, 1e-12);
    cr_expect_eq (sl_providers_price (r, "", &in, &out), -1);
    cr_expect_eq (sl_providers_price (r, NULL, &in, &out), -1);
    sl_providers_destroy (&r);
    //  A table without prices (the built-in defaults) prices nothing.
    r = sl_providers_new_default (NULL);
    cr_assert_not_null (r);
    cr_expect_eq (sl_providers_price (r, "gpt-4o", &in, &out), -1);
    sl_providers_destroy (&r);
}

Test (sl_providers, prices_added_directly_are_checked)
{
    sl_providers_t *r = sl_providers_new ();
    cr_expect_eq (sl_providers_add_price (r, &(sl_price_t) { "m", 1, 1 }), 0);
    cr_expect_eq (sl_providers_add_price (r, &(sl_price_t) { "m", 1, 1 }), -1);
    cr_expect_eq (sl_providers_add_price (r, &(sl_price_t) { "", 1, 1 }), -1);
    cr_expect_eq (sl_providers_add_price (r, &(sl_price_t) { "n", -0.5, 1 }), -1);
    sl_providers_destroy (&r);
}

Test (sl_providers, what_a_url_and_a_key_variable_may_be)
{
    cr_expect (sl_providers_url_valid ("http://h"));
    cr_expect (sl_providers_url_valid ("https://api.example.com/v1/"));
    cr_expect_not (sl_providers_url_valid ("http://"));
    cr_expect_not (sl_providers_url_valid ("https://"));
    cr_expect_not (sl_providers_url_valid ("ftp://h"));
    cr_expect_not (sl_providers_url_valid ("h"));
    cr_expect_not (sl_providers_url_valid (NULL));
    cr_expect (sl_providers_env_valid (""), "no key");
    cr_expect (sl_providers_env_valid ("OPENAI_API_KEY"));
    cr_expect (sl_providers_env_valid ("_K1"));
    cr_expect_not (sl_providers_env_valid ("1KEY"));
    cr_expect_not (sl_providers_env_valid ("sk-secret"));
    cr_expect_not (sl_providers_env_valid (NULL));
}

Test (sl_providers, a_client_dialect_takes_base_url_and_a_token_and_no_cloud_field)
{
    sl_buf_t why = { 0 };
    sl_provider_t p = { .name = "a", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h" };
    cr_expect_eq (sl_providers_fields (&p, &why), 0, "%s", sl_buf_cstr (&why));
    p.token_env = "TOKEN";
    cr_expect_eq (sl_providers_fields (&p, &why), 0, "%s", sl_buf_cstr (&why));
    p.key_env = "KEY";
    cr_expect_eq (sl_providers_fields (&p, &why), -1, "a key or a token, not both");
    p = (sl_provider_t) { .name = "a", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h", .region = "us-east5" };
    sl_buf_reset (&why);
    cr_expect_eq (sl_providers_fields (&p, &why), -1);
    cr_expect_str_eq (sl_buf_cstr (&why), "dialect openai takes no region");
    p = (sl_provider_t) { .name = "a", .dialect = SL_DIALECT_ANTHROPIC };
    sl_buf_reset (&why);
    cr_expect_eq (sl_providers_fields (&p, &why), -1);
    cr_expect_str_eq (sl_buf_cstr (&why), "dialect anthropic needs base_url");
    sl_providers_t *r = sl_providers_new ();
    cr_expect_eq (sl_providers_add_provider (r, &p), -1, "refused when added too");
    sl_providers_destroy (&r);
    sl_buf_free (&why);
}

Test (sl_providers, a_provider_s_cloud_fields_are_copied_and_checked)
{
    const sl_deployment_t deployments [] = { { "gpt-4o", "prod-4o" }, { "gpt-4.1", "prod-41" } };
    sl_provider_t p = { .name = "t", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h/", .token_env = "T" };
    sl_providers_t *r = sl_providers_new ();
    cr_assert_eq (sl_providers_add_provider (r, &p), 0);
    const sl_provider_t *got = sl_providers_provider (r, 0);
    cr_expect_str_eq (got->base_url, "http://h");
    cr_expect_str_eq (got->token_env, "T");
    cr_expect_str_eq (got->region, "", "a field not given is empty, never NULL");
    cr_expect_eq (sl_provider_fields (got), SL_PROVIDER_FIELD_BASE_URL | SL_PROVIDER_FIELD_TOKEN_ENV);
    //  A deployment map, as a cloud dialect reads it.
    sl_provider_t d = { .name = "d", .deployments = deployments, .deployment_count = 2 };
    cr_expect_str_eq (sl_provider_deployment (&d, SL_STR_LIT ("gpt-4.1")), "prod-41");
    cr_expect_null (sl_provider_deployment (&d, SL_STR_LIT ("gpt-5")));
    cr_expect_str_eq (sl_provider_field_name (SL_PROVIDER_FIELD_DEPLOYMENTS), "deployments");
    //  A token variable's name is a variable's.
    p = (sl_provider_t) { .name = "u", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h", .token_env = "eyJ.x" };
    cr_expect_eq (sl_providers_add_provider (r, &p), -1);
    sl_providers_destroy (&r);
}

//  --------------------------------------------------------------------------
//  Several providers for a route: order, weights, models, keys

#define S_PLAN_PROVIDERS \
    "providers:\n" \
    "  - { name: a, dialect: anthropic, base_url: http://a, key_envs: [KA1, KA2] }\n" \
    "  - { name: b, dialect: openai, base_url: http://b/v1, key_env: KB }\n" \
    "  - { name: c, dialect: openai, base_url: http://c/v1 }\n"

//  The plan's providers, "a:model,b:model".
static void
s_plan (sl_providers_t *r, const char *model, int dialect, uint32_t draw, char *out, size_t size)
{
    sl_plan_entry_t plan [SL_ROUTE_TARGETS_MAX];
    size_t n = sl_providers_plan (r, sl_str (model), dialect, draw, plan, SL_ROUTE_TARGETS_MAX);
    out [0] = 0;
    for (size_t i = 0; i < n; i++)
        snprintf (out + strlen (out), size - strlen (out), "%s%s:%.*s", i ? "," : "", plan [i].provider->name,
                  (int) plan [i].model.len, plan [i].model.ptr);
}

Test (sl_providers_plan, providers_in_order_with_their_models)
{
    char *error = NULL;
    sl_providers_t *r = s_parse (S_PLAN_PROVIDERS
                                 "routes:\n"
                                 "  - model: claude-*\n"
                                 "    providers:\n"
                                 "      - { provider: a, model: \"anthropic.claude-x-v1:0\" }\n"
                                 "      - { provider: b }\n"
                                 "  - { model: gpt-*, provider: c }\n", &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    char plan [256];
    for (uint32_t draw = 0; draw < 8; draw++) {
        s_plan (r, "claude-y", SL_DIALECT_OPENAI, draw * 7919u, plan, sizeof plan);
        cr_expect_str_eq (plan, "a:anthropic.claude-x-v1:0,b:claude-y", "no weights: the order written");
    }
    //  The first target decides which route a client's dialect prefers.
    cr_expect_str_eq (sl_providers_pick (r, sl_str ("claude-y"), SL_DIALECT_OPENAI)->name, "a");
    s_plan (r, "gpt-4o", SL_DIALECT_OPENAI, 1, plan, sizeof plan);
    cr_expect_str_eq (plan, "c:gpt-4o", "one provider: as before");
    s_plan (r, "other", SL_DIALECT_ANTHROPIC, 1, plan, sizeof plan);
    cr_expect_str_eq (plan, "a:other", "no route: the client's dialect's first provider");
    //  Keys: a list, or key_env alone as a list of one.
    const sl_provider_t *a = sl_providers_find (r, sl_str ("a"));
    cr_assert_eq (a->key_env_count, 2);
    cr_expect_str_eq (a->key_envs [0], "KA1");
    cr_expect_str_eq (a->key_envs [1], "KA2");
    cr_expect_str_eq (a->key_env, "KA1");
    const sl_provider_t *b = sl_providers_find (r, sl_str ("b"));
    cr_assert_eq (b->key_env_count, 1);
    cr_expect_str_eq (b->key_envs [0], "KB");
    const sl_provider_t *c = sl_providers_find (r, sl_str ("c"));
    cr_expect_eq (c->key_env_count, 0);
    cr_expect_str_eq (c->key_env, "");
    sl_providers_destroy (&r);
}

Test (sl_providers_plan, weights_spread_the_first_choice_and_standbys_come_last)
{
    char *error = NULL;
    sl_providers_t *r = s_parse (S_PLAN_PROVIDERS
                                 "routes:\n"
                                 "  - model: \"*\"\n"
                                 "    providers:\n"
                                 "      - { provider: a, weight: 3 }\n"
                                 "      - { provider: b, weight: 1 }\n"
                                 "      - { provider: c, weight: 0 }\n", &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    size_t first_a = 0, first_b = 0;
    const size_t draws = 4000;
    for (uint32_t draw = 0; draw < draws; draw++) {
        char plan [256];
        s_plan (r, "m", SL_DIALECT_OPENAI, draw, plan, sizeof plan);
        if (strcmp (plan, "a:m,b:m,c:m") == 0)
            first_a++;
        else
        if (strcmp (plan, "b:m,a:m,c:m") == 0)
            first_b++;
        else
            cr_assert_fail ("draw %u: %s: every weighted provider, then the standby", draw, plan);
    }
    //  3 to 1: a first about 3000 times of 4000 (a wide band: the draw is a
    //  generator, not a coin, and the test must not flake).
    cr_expect (first_a > 2700 && first_a < 3300, "a first %zu times of %zu", first_a, draws);
    cr_expect_eq (first_a + first_b, draws);
    //  The same draw, the same plan.
    char one [256], two [256];
    s_plan (r, "m", SL_DIALECT_OPENAI, 12345, one, sizeof one);
    s_plan (r, "m", SL_DIALECT_OPENAI, 12345, two, sizeof two);
    cr_expect_str_eq (one, two);
    sl_providers_destroy (&r);
}

Test (sl_providers_plan, targets_are_checked_when_added)
{
    char *error = NULL;
    sl_providers_t *r = s_parse (S_PLAN_PROVIDERS, &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    sl_route_target_t ok [] = { { "a", NULL, 2 }, { "b", "x", 0 } };
    cr_expect_eq (sl_providers_add_route_targets (r, "m", ok, 2), 0);
    sl_route_target_t mixed [] = { { "a", NULL, 2 }, { "b", NULL, SL_ROUTE_NO_WEIGHT } };
    cr_expect_eq (sl_providers_add_route_targets (r, "m", mixed, 2), -1, "weights on some only");
    sl_route_target_t twice [] = { { "a", NULL, SL_ROUTE_NO_WEIGHT }, { "a", NULL, SL_ROUTE_NO_WEIGHT } };
    cr_expect_eq (sl_providers_add_route_targets (r, "m", twice, 2), -1, "a provider twice");
    sl_route_target_t unknown [] = { { "z", NULL, SL_ROUTE_NO_WEIGHT } };
    cr_expect_eq (sl_providers_add_route_targets (r, "m", unknown, 1), -1);
    sl_route_target_t heavy [] = { { "a", NULL, SL_ROUTE_WEIGHT_MAX + 1 } };
    cr_expect_eq (sl_providers_add_route_targets (r, "m", heavy, 1), -1);
    cr_expect_eq (sl_providers_add_route_targets (r, "m", ok, 0), -1);
    sl_providers_destroy (&r);
}
