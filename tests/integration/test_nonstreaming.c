/*  Integration: non-streaming requests in every dialect through the whole
    stack. The upstream call streams; the client gets one JSON body in its
    own format, after the judge (the default policy blocks run_shell), or
    an HTTP error in its dialect; a client that leaves while it waits
    cancels the upstream call. Every wait is bounded and polls. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"

#define TIMEOUT_MS 15000
#define POLL_MS 5
#define NOTICE "\n\nsluice blocked a call to run_shell: the command deletes files recursively (rule no-rm-rf)."

//  The value at "a.b.0.c" in j.
static json_t *
s_get (json_t *j, const char *path)
{
    char key [64];
    const char *p = path;
    while (j && *p) {
        size_t n = strcspn (p, ".");
        snprintf (key, sizeof key, "%.*s", (int) n, p);
        j = key [0] >= '0' && key [0] <= '9' ? json_array_get (j, (size_t) atoi (key)) : json_object_get (j, key);
        p += n + (p [n] == '.');
    }
    return j;
}

static const char *
s_str (json_t *j, const char *path)
{
    json_t *v = s_get (j, path);
    return json_is_string (v) ? json_string_value (v) : "(none)";
}

typedef struct {
    const char *name;
    const char *path;                   //  %s: the model
    const char *body;                   //  %s: the model
    const char *text_path;              //  the first text, the notice, the call's name and arguments
    const char *notice_path;
    const char *call_name_path;
    const char *call_args_path;         //  a JSON string, or an object
    const char *finish_path;
    const char *finish;
    const char *error_path;
} s_dialect_t;

static const s_dialect_t s_dialects [] = {
    { "openai", "/v1/chat/completions",
      "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
      "choices.0.message.content", NULL, "choices.0.message.tool_calls.0.function.name",
      "choices.0.message.tool_calls.0.function.arguments", "choices.0.finish_reason", "tool_calls", "error.message" },
    { "anthropic", "/v1/messages",
      "{\"model\":\"%s\",\"max_tokens\":100,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
      "content.0.text", "content.1.text", "content.2.name", "content.2.input", "stop_reason", "tool_use",
      "error.message" },
    { "responses", "/v1/responses",
      "{\"model\":\"%s\",\"input\":\"hi\"}",
      "output.0.content.0.text", "output.2.content.0.text", "output.1.name", "output.1.arguments", "status",
      "completed", "error.message" },
    { "gemini", "/v1beta/models/%s:generateContent",
      "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}]}",
      "candidates.0.content.parts.0.text", "candidates.0.content.parts.2.text",
      "candidates.0.content.parts.1.functionCall.name", "candidates.0.content.parts.1.functionCall.args",
      "candidates.0.finishReason", "STOP", "error.message" },
};

//  POST a request of dialect d for model; the status, the parsed body in *out.
static int
s_call (sluice_stack_t *s, const s_dialect_t *d, const char *model, json_t **out)
{
    char path [256], body [512];
    snprintf (path, sizeof path, d->path, model);
    snprintf (body, sizeof body, d->body, model);
    sl_buf_t resp = { 0 };
    int status = http_request (s->http_port, "POST", path, body, NULL, &resp, TIMEOUT_MS);
    *out = json_loads (sl_buf_cstr (&resp), 0, NULL);
    cr_expect_not_null (*out, "%s: the answer is one JSON body: %s", d->name, sl_buf_cstr (&resp));
    sl_buf_free (&resp);
    return status;
}

Test (nonstreaming, every_dialect_gets_one_judged_body)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .policy = "deploy/policy.yaml", .mock_delay_ms = 1 });
    cr_assert_not_null (s);
    for (size_t i = 0; i < sizeof s_dialects / sizeof s_dialects [0]; i++) {
        const s_dialect_t *d = &s_dialects [i];
        json_t *b = NULL;
        cr_expect_eq (s_call (s, d, "mock-tools", &b), 200, "%s: mock-tools", d->name);
        char *text = b ? json_dumps (b, JSON_COMPACT) : NULL;
        cr_expect_not_null (text && strstr (text, NOTICE + 2), "%s: the blocked call is the notice: %s", d->name, text);
        cr_expect_null (text ? strstr (text, "rm -rf") : NULL, "%s: the blocked arguments never arrive", d->name);
        cr_expect_str_eq (s_str (b, d->call_name_path), "get_weather", "%s: %s", d->name, text);
        json_t *args = s_get (b, d->call_args_path);
        json_t *parsed = json_is_string (args) ? json_loads (json_string_value (args), 0, NULL) : json_incref (args);
        cr_expect_str_eq (s_str (parsed, "city"), "Paris", "%s: the call's arguments", d->name);
        json_decref (parsed);
        if (d->notice_path) {
            cr_expect_str_eq (s_str (b, d->text_path), "Let me check the weather and tidy up.", "%s", d->name);
            cr_expect_str_eq (s_str (b, d->notice_path), NOTICE, "%s", d->name);
        }
        else
            cr_expect_str_eq (s_str (b, d->text_path), "Let me check the weather and tidy up." NOTICE, "%s", d->name);
        cr_expect_str_eq (s_str (b, d->finish_path), d->finish, "%s: the finish, a call being left", d->name);
        free (text);
        json_decref (b);

        cr_expect_eq (s_call (s, d, "mock-text", &b), 200, "%s: mock-text", d->name);
        text = b ? json_dumps (b, JSON_COMPACT) : NULL;
        cr_expect_not_null (text && strstr (text, "so you can watch the proxy work."), "%s: %s", d->name, text);
        free (text);
        json_decref (b);

        int status = s_call (s, d, "mock-error", &b);
        cr_expect (status == 500 || status == 529, "%s: mock-error is an HTTP error (%d)", d->name, status);
        cr_expect_str_eq (s_str (b, d->error_path), "The mock upstream failed mid-stream.", "%s", d->name);
        text = b ? json_dumps (b, JSON_COMPACT) : NULL;
        cr_expect_null (text ? strstr (text, "This answer") : NULL, "%s: nothing of the unfinished answer", d->name);
        free (text);
        json_decref (b);
    }
    int emitter = atoi (s->metrics [4]);
    cr_expect_eq (metric_value (emitter, "sluice_illegal_events_total"), 0, "every body was legal");
    cr_expect_geq (metric_value (emitter, "sluice_http_error_responses_total"), 4);
    cr_expect_eq (stack_stop (s), 0);
}

//  A client waiting for a whole body that leaves: the upstream call ends.
Test (nonstreaming, a_client_that_leaves_cancels_its_upstream)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .mock_delay_ms = 2 });
    cr_assert_not_null (s);
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) s->http_port) };
    inet_pton (AF_INET, "127.0.0.1", &addr.sin_addr);
    cr_assert_eq (connect (fd, (struct sockaddr *) &addr, sizeof addr), 0);
    const char *body = "{\"model\":\"mock-bench\",\"max_tokens\":5000,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    char head [512];
    int n = snprintf (head, sizeof head, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                         "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                      strlen (body), body);
    cr_assert_eq (write (fd, head, (size_t) n), n);
    //  The response is under way: progress frames reach the gateway.
    int gateway = atoi (s->metrics [5]);
    cr_assert_geq (harness_wait_metric (gateway, "sluice_frames_total", 50, TIMEOUT_MS), 50, "the upstream streams");
    cr_expect_eq (metric_value (s->mock_port, "mock_streams_abandoned_total"), 0);
    close (fd);
    cr_expect_eq (harness_wait_metric (s->mock_port, "mock_streams_abandoned_total", 1, 10000), 1,
                  "the upstream connection was closed");
    cr_expect_geq (metric_value (gateway, "sluice_cancels_total"), 1);
    cr_expect_eq (stack_stop (s), 0);
}
