/*  Unit tests: common/dialects/sl_plan (a request's providers, in order,
    each with its body in its dialect for its model, as the job's "fo"). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "common/config/sl_routesfile.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_plan.h"

#define CLIENT_BODY "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"

static sl_providers_t *
s_routes (const char *routes)
{
    char text [2048];
    snprintf (text, sizeof text,
              "providers:\n"
              "  - { name: a, dialect: anthropic, base_url: http://a }\n"
              "  - { name: b, dialect: openai, base_url: http://b/v1 }\n"
              "  - { name: g, dialect: gemini, base_url: http://g/v1beta }\n"
              "routes:\n%s", routes);
    sl_providers_t *r = NULL;
    char *error = NULL;
    sl_routesfile_parse (text, strlen (text), "routes.yaml", &r, NULL, &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    return r;
}

//  An OpenAI client's request, prepared against routes.
static void
s_prepare (sl_providers_t *routes, sl_job_t *job)
{
    cr_assert_eq (sl_dialect_init (NULL), 0);
    sl_endpoint_t endpoint = { .dialect = SL_DIALECT_OPENAI };
    cr_assert_eq (sl_job_prepare (&endpoint, sl_str (CLIENT_BODY), routes, NULL, job), 0,
                  "%s", sl_buf_cstr (&job->error_message));
}

static char *
s_model_of (sl_str_t body)
{
    json_t *root = json_loadb (body.ptr, body.len, 0, NULL);
    cr_assert_not_null (root, "%.*s", (int) body.len, body.ptr);
    json_t *model = json_object_get (root, "model");
    char *out = strdup (model ? json_string_value (model) : "(none)");
    json_decref (root);
    return out;
}

Test (sl_plan, every_provider_of_the_route_with_its_body_in_its_dialect)
{
    sl_providers_t *routes = s_routes ("  - model: m\n"
                                       "    providers:\n"
                                       "      - { provider: a, model: claude-x }\n"
                                       "      - { provider: b }\n"
                                       "      - { provider: g, model: gemini-y }\n");
    sl_job_t job;
    s_prepare (routes, &job);
    sl_buf_t fo = { 0 };
    size_t left_out = 9;
    cr_assert_eq (sl_plan_job (&job, routes, 7, &fo, &left_out), 0);
    cr_expect_eq (left_out, 0);
    cr_expect_str_eq (job.provider, "a", "the job is the first step");
    cr_expect_eq (job.upstream_dialect, SL_DIALECT_ANTHROPIC);
    char *model = s_model_of (sl_buf_str (&job.upstream_body));
    cr_expect_str_eq (model, "claude-x", "rendered for its model");
    free (model);
    sl_plan_step_t steps [4];
    cr_assert_eq (sl_plan_read (sl_buf_str (&fo), steps, 4), 3);
    cr_expect (sl_str_eq (steps [0].provider, "a"));
    cr_expect (sl_str_eq (steps [0].model, "claude-x"));
    cr_expect_null (steps [0].body.ptr, "the job's own body");
    cr_expect (sl_str_eq (steps [1].provider, "b"));
    cr_expect_eq (steps [1].dialect, SL_DIALECT_OPENAI);
    cr_expect (sl_str_eq (steps [1].model, "m"), "no model: the client's");
    model = s_model_of (steps [1].body);
    cr_expect_str_eq (model, "m");
    free (model);
    cr_expect (strstr (steps [1].body.ptr, "\"include_usage\":true"), "forwarded with the forced fields");
    cr_expect (sl_str_eq (steps [2].model, "gemini-y"));
    model = s_model_of (steps [2].body);
    cr_expect_str_eq (model, "(none)", "Gemini names its model in the URL, not the body");
    free (model);
    cr_expect (strstr (steps [2].body.ptr, "\"contents\""), "rendered in Gemini's dialect");
    cr_expect_eq (sl_plan_read (sl_buf_str (&fo), steps, 2), -1, "more steps than room");
    cr_expect_eq (sl_plan_read (sl_str ("\x81\xa1t"), steps, 4), -1, "malformed");
    sl_buf_free (&fo);
    sl_job_clear (&job);
    sl_providers_destroy (&routes);
}

Test (sl_plan, a_client_dialect_provider_with_another_model_gets_it_in_the_body)
{
    sl_providers_t *routes = s_routes ("  - model: m\n"
                                       "    providers: [{ provider: b, model: gpt-x }, { provider: a }]\n");
    sl_job_t job;
    s_prepare (routes, &job);
    sl_buf_t fo = { 0 };
    cr_assert_eq (sl_plan_job (&job, routes, 1, &fo, NULL), 0);
    cr_expect_str_eq (job.provider, "b");
    char *model = s_model_of (sl_buf_str (&job.upstream_body));
    cr_expect_str_eq (model, "gpt-x");
    free (model);
    cr_expect (strstr (sl_buf_cstr (&job.upstream_body), "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"),
               "the client's body otherwise: %s", sl_buf_cstr (&job.upstream_body));
    sl_plan_step_t steps [4];
    cr_assert_eq (sl_plan_read (sl_buf_str (&fo), steps, 4), 2);
    model = s_model_of (steps [1].body);
    cr_expect_str_eq (model, "m", "a: the client's model, rendered for Anthropic");
    free (model);
    sl_buf_free (&fo);
    sl_job_clear (&job);
    sl_providers_destroy (&routes);
}

Test (sl_plan, one_provider_as_routed_adds_nothing)
{
    sl_providers_t *routes = s_routes ("  - { model: m, provider: b }\n");
    sl_job_t job;
    s_prepare (routes, &job);
    sl_buf_t before = { 0 };
    sl_buf_append_str (&before, sl_buf_str (&job.upstream_body));
    sl_buf_t fo = { 0 };
    cr_assert_eq (sl_plan_job (&job, routes, 1, &fo, NULL), 0);
    cr_expect_eq (fo.len, 0, "no fo: the job says it all");
    cr_expect_str_eq (sl_buf_cstr (&job.upstream_body), sl_buf_cstr (&before), "byte for byte");
    sl_buf_free (&before);
    sl_buf_free (&fo);
    sl_job_clear (&job);
    sl_providers_destroy (&routes);
}
