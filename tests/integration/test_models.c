/*  Integration: GET /v1/models lists what the routes file offers. The
    ingest and the gateway read the same file (--routes); the listed models
    are served through it. Real processes on loopback. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"

#define TIMEOUT_MS 15000

//  The mock in every dialect, three named models and a glob.
static const char s_routes [] =
    HARNESS_MOCK_PROVIDERS
    "routes:\n"
    "  - { model: mock-text, provider: mock-openai }\n"
    "  - { model: mock-tools, provider: mock-openai }\n"
    "  - { model: \"mock-*\", provider: mock-openai }\n"
    "  - { model: mock-text, provider: mock-responses }\n"
    "  - { model: mock-tools, provider: mock-anthropic }\n"
    "  - { model: mock-text, provider: mock-gemini }\n";

static json_t *
s_get (sluice_stack_t *s, const char *path, const char *const *headers, int *status)
{
    sl_buf_t body = { 0 };
    *status = http_request (s->http_port, "GET", path, NULL, headers, &body, TIMEOUT_MS);
    json_t *j = json_loads (sl_buf_cstr (&body), 0, NULL);
    cr_expect_not_null (j, "%s: JSON: %s", path, sl_buf_cstr (&body));
    sl_buf_free (&body);
    return j;
}

static const char *
s_field (json_t *list, size_t i, const char *key)
{
    json_t *v = json_object_get (json_array_get (list, i), key);
    return json_is_string (v) ? json_string_value (v) : "(none)";
}

Test (models, the_routes_file_is_what_clients_see)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .routes_text = s_routes, .mock_delay_ms = 1 });
    cr_assert_not_null (s);
    int status;
    json_t *j = s_get (s, "/v1/models", NULL, &status);
    cr_expect_eq (status, 200);
    json_t *data = json_object_get (j, "data");
    cr_assert_eq (json_array_size (data), 2, "the named OpenAI models, once each");
    cr_expect_str_eq (s_field (data, 0, "id"), "mock-text");
    cr_expect_str_eq (s_field (data, 0, "owned_by"), "mock-openai");
    cr_expect_str_eq (s_field (data, 1, "id"), "mock-tools");
    json_decref (j);

    const char *anthropic [] = { "anthropic-version: 2023-06-01", NULL };
    j = s_get (s, "/v1/models", anthropic, &status);
    cr_expect_eq (status, 200);
    //  Every routed model: an Anthropic client reaches mock-text too (on
    //  the OpenAI provider, translated).
    cr_expect_eq (json_array_size (json_object_get (j, "data")), 2);
    cr_expect_str_eq (s_field (json_object_get (j, "data"), 1, "type"), "model");
    cr_expect_str_eq (s_field (json_object_get (j, "data"), 1, "id"), "mock-tools");
    json_decref (j);

    j = s_get (s, "/v1beta/models", NULL, &status);
    cr_expect_eq (status, 200);
    cr_expect_str_eq (s_field (json_object_get (j, "models"), 0, "name"), "models/mock-text");
    json_decref (j);

    j = s_get (s, "/v1/models/mock-tools", NULL, &status);
    cr_expect_eq (status, 200);
    cr_expect_str_eq (json_string_value (json_object_get (j, "id")), "mock-tools");
    json_decref (j);

    //  A listed model is served through the same routes.
    sl_buf_t body = { 0 };
    const char *chat = "{\"model\":\"mock-text\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", chat, NULL, &body, TIMEOUT_MS), 200);
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "\"chat.completion\""), "%s", sl_buf_cstr (&body));
    sl_buf_free (&body);
    char dialect [32] = "";
    cr_expect (proc_wait_log (s->ingest, "name=mock-gemini", "dialect=", dialect, sizeof dialect, 1000),
               "the ingest read the same file");
    cr_expect_str_eq (dialect, "gemini");
    cr_expect_eq (stack_stop (s), 0);
}

Test (models, the_list_needs_a_client_key_when_keys_are_set)
{
    setenv ("SLUICE_CLIENT_KEYS", "sk-models", 1);
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .routes_text = s_routes });
    unsetenv ("SLUICE_CLIENT_KEYS");
    cr_assert_not_null (s);
    int status;
    json_t *j = s_get (s, "/v1/models", NULL, &status);
    cr_expect_eq (status, 401);
    json_decref (j);
    const char *key [] = { "Authorization: Bearer sk-models", NULL };
    j = s_get (s, "/v1/models", key, &status);
    cr_expect_eq (status, 200);
    cr_expect_eq (json_array_size (json_object_get (j, "data")), 2);
    json_decref (j);
    const char *goog [] = { "x-goog-api-key: nope", NULL };
    j = s_get (s, "/v1beta/models", goog, &status);
    cr_expect_eq (status, 401);
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (j, "error"), "status")), "UNAUTHENTICATED");
    json_decref (j);
    cr_expect_eq (stack_stop (s), 0);
}

Test (models, a_bad_routes_file_stops_the_gateway)
{
    char dir [] = "/tmp/sluice-models-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    char path [128];
    snprintf (path, sizeof path, "%s/routes.yaml", dir);
    FILE *f = fopen (path, "w");
    cr_assert_not_null (f);
    fputs ("providers:\n  - name: x\n    dialect: klingon\n", f);
    fclose (f);
    const char *args [] = { "--http-port", "0", "--bind", "tcp://127.0.0.1:*", "--metrics-port", "off",
                            "--routes", path, NULL };
    proc_t *gw = proc_start (dir, "gateway", args);
    cr_assert_not_null (gw);
    //  It exits by itself: wait for that (bounded), then read why.
    int status = -1;
    bool exited = false;
    for (int i = 0; i < 2000 && !exited; i++) {
        exited = waitpid (gw->pid, &status, WNOHANG) == gw->pid;
        if (!exited)
            nanosleep (&(struct timespec) { 0, 5 * 1000000L }, NULL);
    }
    cr_expect (exited, "the gateway does not start");
    if (exited)
        gw->pid = 0;
    else
        proc_kill (gw);
    cr_expect (exited && WIFEXITED (status) && WEXITSTATUS (status) == 2, "it exits with 2");
    char where [64] = "";
    cr_expect (proc_wait_log (gw, "\"bad_routes\"", "routes.yaml:", where, sizeof where, 1000),
               "it says where and why");
    unlink (gw->log_path);
    free (gw);
    unlink (path);
    rmdir (dir);
}
