/*  sl_mock_request.c - what the mock makes of a request (see
    sl_mock_request.h).
*/
#include "services/mock/sl_mock_request.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "proto/sl_msg.h"
#include "services/mock/sl_mock_check.h"

#define MOCK_DEFAULT_DIALECT SL_DIALECT_OPENAI  //  the error shape of a path no API of the mock has
#define MOCK_WHY_MAX 512

//  The providers the mock plays: the path each API is called at (its end;
//  the model before a ":" method when it is in the path), and where its
//  requests say their max tokens ("a.b": a member of a member).
typedef struct {
    int dialect;
    const char *path_end;
    bool model_in_path;
    const char *max_tokens [2];
} s_api_t;

static const s_api_t s_apis [] = {
    { SL_DIALECT_OPENAI, "/chat/completions", false, { "max_tokens", "max_completion_tokens" } },
    { SL_DIALECT_RESPONSES, "/responses", false, { "max_output_tokens", NULL } },
    { SL_DIALECT_ANTHROPIC, "/messages", false, { "max_tokens", "max_completion_tokens" } },
    { SL_DIALECT_GEMINI, ":streamGenerateContent", true, { "generationConfig.maxOutputTokens", NULL } },
};

static bool
s_ends_with (const char *s, const char *suffix)
{
    size_t n = strlen (s), m = strlen (suffix);
    return n >= m && strcmp (s + n - m, suffix) == 0;
}

//  The API a path calls, and the model it names when it names one (model
//  is left as it is otherwise).
static const s_api_t *
s_api_of (const char *path, char *model, size_t size)
{
    for (size_t i = 0; i < sizeof s_apis / sizeof s_apis [0]; i++) {
        const s_api_t *api = &s_apis [i];
        if (!s_ends_with (path, api->path_end))
            continue;
        if (!api->model_in_path)
            return api;
        const char *models = strstr (path, "/models/");
        if (!models)
            continue;
        const char *name = models + strlen ("/models/");
        size_t n = strlen (name) - strlen (api->path_end);
        if (n == 0 || n >= size)
            return NULL;
        memcpy (model, name, n);
        model [n] = 0;
        return api;
    }
    return NULL;
}

//  The request's max-tokens field, wherever its API has it.
static long
s_max_tokens (json_t *root, const s_api_t *api)
{
    for (int i = 0; i < 2 && api->max_tokens [i]; i++) {
        const char *path = api->max_tokens [i], *dot = strchr (path, '.');
        json_t *v = root;
        if (dot) {
            char outer [64];
            snprintf (outer, sizeof outer, "%.*s", (int) (dot - path), path);
            v = json_object_get (v, outer);
            path = dot + 1;
        }
        v = json_object_get (v, path);
        if (json_is_integer (v))
            return (long) json_integer_value (v);
    }
    return 0;
}

int
sl_mock_request_dialect (const char *path)
{
    char model [SL_MOCK_MODEL_MAX];
    const s_api_t *api = s_api_of (path, model, sizeof model);
    return api ? api->dialect : 0;
}

int
sl_mock_request_read (const char *method, const char *path, sl_str_t body, sl_mock_call_t *call,
                      sl_mock_script_t *error)
{
    memset (call, 0, sizeof *call);
    const s_api_t *api = s_api_of (path, call->model, sizeof call->model);
    if (!api) {
        sl_mock_script_not_found (MOCK_DEFAULT_DIALECT,
                                  "the mock serves POST .../chat/completions, .../responses, .../messages "
                                  "and .../models/{model}:streamGenerateContent", error);
        return -1;
    }
    call->dialect = api->dialect;
    if (strcmp (method, "POST") != 0) {
        sl_mock_script_not_found (api->dialect, "use POST", error);
        return -1;
    }
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, 0, NULL);
    json_t *model = json_object_get (root, "model");
    if (!api->model_in_path && json_is_string (model))
        snprintf (call->model, sizeof call->model, "%s", json_string_value (model));
    call->chunks = s_max_tokens (root, api);
    json_decref (root);
    if (!call->model [0]) {
        sl_mock_script_not_found (api->dialect, "the body must be JSON with a model", error);
        return -1;
    }
    //  "<scenario>@<anything>": the scenario (routes send one scenario to
    //  the mock of each dialect with a suffix of their own).
    char *at = strrchr (call->model, '@');
    if (at)
        *at = 0;
    //  A request its provider would refuse (sl_mock_check.h) is refused,
    //  streaming or not.
    char why [MOCK_WHY_MAX];
    if (sl_mock_check (api->dialect, body, why, sizeof why)) {
        sl_mock_script_bad_request (api->dialect, why, error);
        return -1;
    }
    return 0;
}
