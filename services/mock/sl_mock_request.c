/*  sl_mock_request.c - what the mock makes of a request (see
    sl_mock_request.h). What each provider's API is (its path, its
    max-tokens field, what it refuses) is its module's
    (sl_mock_provider.h).
*/
#include "services/mock/sl_mock_request.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "proto/sl_msg.h"
#include "services/mock/sl_mock_agent.h"
#include "services/mock/sl_mock_provider.h"

#define MOCK_DEFAULT_DIALECT SL_DIALECT_OPENAI  //  the error shape of a path no API of the mock has
#define MOCK_WHY_MAX 512
#define MOCK_FIELD_MAX 64               //  longest member name of a max-tokens field

//  The request's max-tokens field, wherever its API has it.
static long
s_max_tokens (json_t *root, const sl_mock_provider_t *provider)
{
    for (const char *const *field = provider->max_tokens; *field; field++) {
        const char *path = *field, *dot = strchr (path, '.');
        json_t *v = root;
        if (dot) {
            char outer [MOCK_FIELD_MAX];
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
    const sl_mock_provider_t *provider = sl_mock_provider_of_path (path, model, sizeof model);
    return provider ? provider->dialect : 0;
}

int
sl_mock_request_read (const char *method, const char *path, sl_str_t body, const char *betas,
                      sl_mock_call_t *call, sl_mock_script_t *error)
{
    memset (call, 0, sizeof *call);
    const sl_mock_provider_t *provider = sl_mock_provider_of_path (path, call->model, sizeof call->model);
    if (!provider) {
        sl_buf_t served = { 0 };
        sl_buf_puts (&served, "the mock serves ");
        sl_mock_provider_paths (&served);
        sl_mock_script_not_found (MOCK_DEFAULT_DIALECT, sl_buf_cstr (&served), error);
        sl_buf_free (&served);
        return -1;
    }
    call->dialect = provider->dialect;
    if (strcmp (method, "POST") != 0) {
        sl_mock_script_not_found (provider->dialect, "use POST", error);
        return -1;
    }
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, 0, NULL);
    json_t *model = json_object_get (root, "model");
    if (!provider->model_in_path && json_is_string (model))
        snprintf (call->model, sizeof call->model, "%s", json_string_value (model));
    call->chunks = s_max_tokens (root, provider);
    json_decref (root);
    if (!call->model [0]) {
        sl_mock_script_not_found (provider->dialect, "the body must be JSON with a model", error);
        return -1;
    }
    //  "<scenario>@<anything>": the scenario (routes send one scenario to
    //  the mock of each dialect with a suffix of their own).
    char *at = strrchr (call->model, '@');
    if (at)
        *at = 0;
    //  A request its provider would refuse (sl_mock_provider_check) is
    //  refused, streaming or not.
    char why [MOCK_WHY_MAX];
    if (sl_mock_provider_check (provider->dialect, body, why, sizeof why)
    ||  sl_mock_provider_check_betas (provider->dialect, body, betas, why, sizeof why)) {
        sl_mock_script_bad_request (provider->dialect, why, error);
        return -1;
    }
    return 0;
}

int
sl_mock_request_answer (const sl_mock_call_t *call, sl_str_t body, unsigned attempt, sl_mock_script_t *out)
{
    sl_str_t model = sl_str (call->model);
    if (sl_mock_agent_is (model))
        return sl_mock_agent_build (call->dialect, model, body, out);
    return sl_mock_script_build (call->dialect, model, body, call->chunks, attempt, out);
}
