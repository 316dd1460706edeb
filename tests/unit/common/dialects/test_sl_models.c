/*  Unit tests: common/dialects/sl_models - GET /v1/models from the routes. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "common/config/sl_routesfile.h"
#include "common/dialects/sl_providers.h"
#include "proto/sl_msg.h"
#include "common/dialects/sl_models.h"

static const char s_file [] =
    "providers:\n"
    "  - name: oa\n"
    "    dialect: openai\n"
    "    base_url: http://127.0.0.1:1/v1\n"
    "  - name: rsp\n"
    "    dialect: responses\n"
    "    base_url: http://127.0.0.1:1/v1\n"
    "  - name: ant\n"
    "    dialect: anthropic\n"
    "    base_url: http://127.0.0.1:2\n"
    "  - name: gem\n"
    "    dialect: gemini\n"
    "    base_url: http://127.0.0.1:3/v1beta\n"
    "routes:\n"
    "  - model: gpt-small\n"
    "    provider: oa\n"
    "  - model: \"llama-*\"\n"
    "    provider: oa\n"
    "  - model: gpt-small\n"
    "    provider: rsp\n"
    "  - model: o-reasoner\n"
    "    provider: rsp\n"
    "  - model: claude-x\n"
    "    provider: ant\n"
    "  - model: gemini-x\n"
    "    provider: gem\n";

static sl_providers_t *
s_routes (void)
{
    char *error = NULL;
    sl_providers_t *r = NULL;
    sl_routesfile_parse (s_file, sizeof s_file - 1, "routes.yaml", &r, NULL, &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    return r;
}

//  The request's headers: anthropic-version when arg says so.
static const char *
s_header (void *arg, const char *name)
{
    return *(bool *) arg && strcmp (name, "anthropic-version") == 0 ? "2023-06-01" : NULL;
}

//  Answer path; the status, the parsed body in *out (caller frees).
static int
s_answer (sl_providers_t *r, const char *path, bool anthropic, json_t **out)
{
    sl_buf_t body = { 0 };
    int status = 0, dialect = 0;
    cr_assert (sl_models_answer (r, path, s_header, &anthropic, &status, &dialect, &body), "%s is a models path",
               path);
    *out = json_loadb (body.data, body.len, 0, NULL);
    cr_assert_not_null (*out, "%s: JSON: %.*s", path, (int) body.len, body.data);
    sl_buf_free (&body);
    return status;
}

static const char *
s_id (json_t *list, size_t i, const char *key)
{
    json_t *v = json_object_get (json_array_get (list, i), key);
    return json_is_string (v) ? json_string_value (v) : "(none)";
}

Test (sl_models, openai_list_names_each_plain_model_once)
{
    sl_providers_t *r = s_routes ();
    json_t *j;
    cr_expect_eq (s_answer (r, "/v1/models", false, &j), 200);
    cr_expect_str_eq (json_string_value (json_object_get (j, "object")), "list");
    json_t *data = json_object_get (j, "data");
    //  Every routed model, whatever its provider's dialect: a client
    //  reaches them all.
    cr_assert_eq (json_array_size (data), 4, "gpt-small once, o-reasoner, claude-x, gemini-x; not the glob");
    cr_expect_str_eq (s_id (data, 0, "id"), "gpt-small");
    cr_expect_str_eq (s_id (data, 0, "object"), "model");
    cr_expect_str_eq (s_id (data, 0, "owned_by"), "oa", "the provider an OpenAI client goes to");
    cr_expect_str_eq (s_id (data, 1, "id"), "o-reasoner");
    cr_expect_str_eq (s_id (data, 1, "owned_by"), "rsp");
    cr_expect_str_eq (s_id (data, 2, "id"), "claude-x");
    cr_expect_str_eq (s_id (data, 2, "owned_by"), "ant", "translated: its only provider");
    cr_expect_str_eq (s_id (data, 3, "id"), "gemini-x");
    json_decref (j);
    sl_providers_destroy (&r);
}

Test (sl_models, anthropic_and_gemini_lists)
{
    sl_providers_t *r = s_routes ();
    json_t *j;
    cr_expect_eq (s_answer (r, "/v1/models", true, &j), 200);
    json_t *data = json_object_get (j, "data");
    cr_assert_eq (json_array_size (data), 4);
    cr_expect_str_eq (s_id (data, 2, "type"), "model");
    cr_expect_str_eq (s_id (data, 2, "id"), "claude-x");
    cr_expect (json_is_string (json_object_get (json_array_get (data, 2), "created_at")));
    cr_expect (json_is_false (json_object_get (j, "has_more")));
    cr_expect_str_eq (json_string_value (json_object_get (j, "first_id")), "gpt-small");
    cr_expect_str_eq (json_string_value (json_object_get (j, "last_id")), "gemini-x");
    json_decref (j);
    cr_expect_eq (s_answer (r, "/v1beta/models", false, &j), 200);
    json_t *models = json_object_get (j, "models");
    cr_assert_eq (json_array_size (models), 4);
    cr_expect_str_eq (s_id (models, 3, "name"), "models/gemini-x");
    cr_expect_str_eq (s_id (models, 0, "name"), "models/gpt-small");
    cr_expect_eq (json_array_size (json_object_get (json_array_get (models, 3), "supportedGenerationMethods")), 2);
    json_decref (j);
    sl_providers_destroy (&r);
}

Test (sl_models, one_model_when_routing_serves_it)
{
    sl_providers_t *r = s_routes ();
    json_t *j;
    cr_expect_eq (s_answer (r, "/v1/models/llama-3", false, &j), 200, "a glob's model is served");
    cr_expect_str_eq (json_string_value (json_object_get (j, "id")), "llama-3");
    cr_expect_str_eq (json_string_value (json_object_get (j, "owned_by")), "oa");
    json_decref (j);
    cr_expect_eq (s_answer (r, "/v1beta/models/gemini-x", false, &j), 200);
    cr_expect_str_eq (json_string_value (json_object_get (j, "name")), "models/gemini-x");
    json_decref (j);

    //  No Anthropic provider: an Anthropic client's claude-x goes to the
    //  OpenAI provider, translated.
    sl_providers_t *openai_only = sl_providers_new ();
    sl_provider_t p = { .name = "oa", .dialect = SL_DIALECT_OPENAI, .base_url = "http://127.0.0.1:1/v1",
                        .key_env = "", .forward_auth = true };
    cr_assert_eq (sl_providers_add_provider (openai_only, &p), 0);
    cr_expect_eq (s_answer (openai_only, "/v1/models/claude-x", true, &j), 200);
    cr_expect_str_eq (json_string_value (json_object_get (j, "id")), "claude-x");
    json_decref (j);
    cr_expect_eq (s_answer (openai_only, "/v1/models", false, &j), 200);
    cr_expect_eq (json_array_size (json_object_get (j, "data")), 0, "no routes: nothing named");
    json_decref (j);
    sl_providers_destroy (&openai_only);
    //  No provider at all: nobody serves anything.
    sl_providers_t *none = sl_providers_new ();
    cr_expect_eq (s_answer (none, "/v1/models/claude-x", true, &j), 404);
    cr_expect_str_eq (json_string_value (json_object_get (j, "type")), "error", "Anthropic's error shape");
    json_decref (j);
    cr_expect_eq (s_answer (none, "/v1beta/models/gemini-x", false, &j), 404);
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (j, "error"), "status")), "NOT_FOUND");
    json_decref (j);
    sl_providers_destroy (&none);
    sl_providers_destroy (&r);
}

Test (sl_models, other_paths_are_not_models)
{
    sl_providers_t *r = s_routes ();
    sl_buf_t body = { 0 };
    int status = 0, dialect = 0;
    bool anthropic = false;
    const char *paths [] = { "/v1/chat/completions", "/v1/modelsx", "/v1/models/gemini-x:generateContent",
                             "/v1beta/models/gemini-x:streamGenerateContent", "/healthz", NULL };
    for (int i = 0; paths [i]; i++)
        cr_expect_not (sl_models_answer (r, paths [i], s_header, &anthropic, &status, &dialect, &body), "%s",
                       paths [i]);
    cr_expect_eq (body.len, 0, "nothing written");
    sl_buf_free (&body);
    sl_providers_destroy (&r);
}
