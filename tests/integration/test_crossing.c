/*  Integration: requests of today's clients through the whole stack, to
    the mock in the client's own dialect and in every other one (routes
    "<scenario>@<dialect>"). What the mock received (its --record file) is
    what the provider would have: the mock refuses what its provider
    refuses (services/mock/sl_mock_provider.h).

    The request is the shape today's Claude Code sends to /v1/messages: a
    system message among the turns (a mid-conversation system message),
    adaptive thinking, an effort in output_config, context management. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/shapes/claude_code.h"

#define TIMEOUT_MS 15000

//  Every dialect's mock; "<scenario>@<dialect>" to one of another dialect.
static const char s_routes [] = HARNESS_MOCK_PROVIDERS "routes:\n" HARNESS_MOCK_DIALECT_ROUTES;

typedef struct {
    sluice_stack_t *stack;
    char dir [64];
    char record [128];                  //  the mock's --record file
    char record_arg [128];
} s_rig_t;

static void
s_rig_start (s_rig_t *rig)
{
    memset (rig, 0, sizeof *rig);
    snprintf (rig->dir, sizeof rig->dir, "/tmp/sluice-crossing-XXXXXX");
    cr_assert_not_null (mkdtemp (rig->dir));
    snprintf (rig->record, sizeof rig->record, "%s/received.txt", rig->dir);
    snprintf (rig->record_arg, sizeof rig->record_arg, "%s", rig->record);
    const char *mock_args [] = { "--record", rig->record_arg, "--record-header", "anthropic-beta", NULL };
    rig->stack = stack_start (&(stack_opts_t) { .mock_delay_ms = 1, .routes_text = s_routes, .mock_args = mock_args });
    cr_assert_not_null (rig->stack, "the stack starts");
}

static void
s_rig_stop (s_rig_t *rig)
{
    cr_expect_eq (stack_stop (rig->stack), 0, "every process exits cleanly");
    unlink (rig->record);
    rmdir (rig->dir);
}

//  The last request the mock received: its path, a tab, its body.
static void
s_last_received (const s_rig_t *rig, sl_buf_t *out)
{
    sl_buf_reset (out);
    FILE *f = fopen (rig->record, "rb");
    char line [1 << 16];
    while (f && fgets (line, sizeof line, f)) {
        sl_buf_reset (out);
        sl_buf_puts (out, line);
    }
    if (f)
        fclose (f);
    sl_buf_cstr (out);
}

typedef struct {
    const char *suffix;                 //  the route to the mock of a dialect
    const char *path;                   //  the upstream path it is called at
    const char *says;                   //  the system message where that dialect puts it
} s_upstream_t;

Test (crossing, claude_codes_system_message_same_dialect_and_to_every_upstream)
{
    static const s_upstream_t upstreams [] = {
        { "", "/v1/messages", "{\"role\":\"system\",\"content\":\"" CLAUDE_CODE_SYSTEM_MESSAGE "\"}" },
        { "@openai", "/v1/chat/completions",
          "{\"role\":\"system\",\"content\":\"" CLAUDE_CODE_SYSTEM_MESSAGE "\"},{\"role\":\"assistant\"" },
        { "@responses", "/v1/responses",
          "{\"role\":\"developer\",\"content\":\"" CLAUDE_CODE_SYSTEM_MESSAGE "\"}" },
        { "@gemini", "/v1beta/models/mock-text@gemini:streamGenerateContent",
          "\"systemInstruction\":{\"parts\":[{\"text\":\"You are a coding agent.\"},"
          "{\"text\":\"" CLAUDE_CODE_SYSTEM_MESSAGE "\"}]}" },
    };
    s_rig_t rig;
    s_rig_start (&rig);
    sl_buf_t out = { 0 }, seen = { 0 };
    //  The beta features the body uses (context management, effort), named
    //  in the header today's Claude Code sends with them.
    const char *headers [] = { "Content-Type: application/json", "anthropic-version: 2023-06-01",
                               "anthropic-beta: " CLAUDE_CODE_BETAS, NULL };
    for (size_t i = 0; i < sizeof upstreams / sizeof upstreams [0]; i++) {
        const s_upstream_t *u = &upstreams [i];
        char model [64], body [2048];
        snprintf (model, sizeof model, "mock-text%s", u->suffix);
        snprintf (body, sizeof body, CLAUDE_CODE_REQUEST_FMT, model);
        sl_buf_reset (&out);
        int status = http_request (rig.stack->http_port, "POST", "/v1/messages", body, headers, &out, TIMEOUT_MS);
        cr_expect_eq (status, 200, "%s: %d %s", model, status, sl_buf_cstr (&out));
        cr_expect_not_null (strstr (sl_buf_cstr (&out), "event: message_stop"), "%s: the whole answer: %s", model,
                            sl_buf_cstr (&out));
        cr_expect_null (strstr (sl_buf_cstr (&out), "event: error"), "%s: %s", model, sl_buf_cstr (&out));
        s_last_received (&rig, &seen);
        const char *received = sl_buf_cstr (&seen);
        cr_expect (strncmp (received, u->path, strlen (u->path)) == 0, "%s: called at %s: %.200s", model, u->path,
                   received);
        cr_expect_not_null (strstr (received, u->says), "%s: the system message as %s says it:\n%s", model,
                            u->path, received);
        //  Its own provider gets the betas as sent; another gets a body of
        //  its own dialect, without them.
        const char *betas = strstr (received, "\tanthropic-beta: " CLAUDE_CODE_BETAS "\n");
        if (u->suffix [0])
            cr_expect_null (strstr (received, "anthropic-beta"), "%s: %s", model, received);
        else
            cr_expect_not_null (betas, "%s: anthropic-beta goes to its own upstream as sent: %s", model, received);
    }
    sl_buf_free (&out);
    sl_buf_free (&seen);
    s_rig_stop (&rig);
}

//  A system message where the provider takes none is the provider's 400,
//  in the client's format: sluice passes it on, the mock lives.
Test (crossing, a_misplaced_system_message_is_the_providers_400)
{
    s_rig_t rig;
    s_rig_start (&rig);
    sl_buf_t out = { 0 };
    const char *headers [] = { "Content-Type: application/json", "anthropic-version: 2023-06-01", NULL };
    const char *body = "{\"model\":\"mock-text\",\"max_tokens\":100,\"stream\":true,\"messages\":["
                       "{\"role\":\"system\",\"content\":\"first\"},{\"role\":\"user\",\"content\":\"hi\"}]}";
    int status = http_request (rig.stack->http_port, "POST", "/v1/messages", body, headers, &out, TIMEOUT_MS);
    cr_expect_eq (status, 400, "%d %s", status, sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "cannot be the first message"), "%s", sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "\"type\":\"error\""), "%s", sl_buf_cstr (&out));
    body = "{\"model\":\"mock-text\",\"max_tokens\":100,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    sl_buf_reset (&out);
    cr_expect_eq (http_request (rig.stack->http_port, "POST", "/v1/messages", body, headers, &out, TIMEOUT_MS), 200,
                  "the next request is served");
    sl_buf_free (&out);
    s_rig_stop (&rig);
}
