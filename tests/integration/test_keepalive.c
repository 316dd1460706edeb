/*  Integration: a call the judge holds for a minute, clients of every
    dialect waiting for it at once.

    The policy sends the mock's shell command (mock-agent-slow: the call is
    the response's first block) to an LLM judge, the mock's, that answers
    after HOLD_MS; the judge keeps its default keep-alive interval. While
    it thinks, a plain HTTP client of each dialect (OpenAI chat, Anthropic
    messages, Responses, Gemini) and the official SDKs (tests/sdk/hold,
    each with its default timeouts) wait on the same stack, so the minute
    is spent once. Each must hear keep-alives in its dialect's form (an SSE
    comment; for Gemini line ends only, the one thing its SDKs and Gemini
    CLI skip), and then the call, released whole. The SDK part is skipped,
    saying why, when the packages are not installed (make sdk-deps).
*/
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sl_msg.h"
#include "tests/integration/harness.h"
#include "tests/integration/sdk_runner.h"
#include "tests/integration/verdict_tap.h"

#define HOLD_MS 60000                   //  the judge's answer comes this late
#define HOLD_JUDGE "judge-allow-60000"
#define CLIENT_TIMEOUT_MS 150000        //  a client gives up (the hold, a loaded machine)
#define SDK_TEST_TIMEOUT_MS 150000
#define SDK_RUN_TIMEOUT_MS 170000
#define VERDICT_WAIT_MS 20000
#define MIN_KEEPALIVES 2                //  more than the one that opened the response
#define SHELL_COMMAND "touch sluice-slow.marker"

static const char s_policy [] =
    "rules:\n"
    "  - id: minute-review\n"
    "    tool: run_shell\n"
    "    args:\n"
    "      - pointer: /command\n"
    "        regex: 'sluice-slow'\n"
    "    llm_judge: {url: '@MOCK@/v1/chat/completions', model: " HOLD_JUDGE ", timeout_ms: 120000}\n"
    "    action: block\n";

#define SCHEMA "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}}}"

//  One client of a dialect: its request, and what it must receive.
typedef struct {
    const char *name;
    const char *path;
    const char *body;
    const char *keepalive;              //  the dialect's keep-alive, as it reaches the client
    const char *first_event;            //  how the first event of the response begins
    const char *call;                   //  the released call, as the dialect writes it
    const char *end;                    //  what ends the response
} s_client_t;

//  What a client's thread got.
typedef struct {
    const s_client_t *client;
    int port;
    int status;
    sl_buf_t bytes;
} s_result_t;

static const s_client_t s_clients [] = {
    { "openai chat", "/v1/chat/completions",
      "{\"model\":\"mock-agent-slow\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"tidy up\"}],"
      "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"run_shell\",\"parameters\":" SCHEMA "}}]}",
      ": keep-alive\n\n", "data: ", "\"name\":\"run_shell\"", "data: [DONE]\n\n" },
    { "anthropic", "/v1/messages",
      "{\"model\":\"mock-agent-slow\",\"max_tokens\":256,\"stream\":true,"
      "\"messages\":[{\"role\":\"user\",\"content\":\"tidy up\"}],"
      "\"tools\":[{\"name\":\"run_shell\",\"input_schema\":" SCHEMA "}]}",
      ": keep-alive\n\n", "event: message_start\n", "\"name\":\"run_shell\"", "event: message_stop\n" },
    { "responses", "/v1/responses",
      "{\"model\":\"mock-agent-slow\",\"stream\":true,\"input\":\"tidy up\","
      "\"tools\":[{\"type\":\"function\",\"name\":\"run_shell\",\"parameters\":" SCHEMA "}]}",
      ": keep-alive\n\n", "event: response.created\n", "\"name\":\"run_shell\"", "event: response.completed\n" },
    { "gemini", "/v1beta/models/mock-agent-slow:streamGenerateContent?alt=sse",
      "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"tidy up\"}]}],"
      "\"tools\":[{\"functionDeclarations\":[{\"name\":\"run_shell\",\"parameters\":" SCHEMA "}]}]}",
      "\n", "data: ", "\"functionCall\":{\"name\":\"run_shell\"", "\"finishReason\":\"STOP\"" },
};
#define CLIENTS (sizeof s_clients / sizeof s_clients [0])

static void *
s_client_run (void *arg)
{
    s_result_t *r = arg;
    r->status = http_request (r->port, "POST", r->client->path, r->client->body, NULL, &r->bytes, CLIENT_TIMEOUT_MS);
    return NULL;
}

//  How many times the keep-alive makes up the bytes before the first
//  event; -1 when anything else is there.
static int
s_keepalives_before (const char *bytes, const char *first_event, const char *keepalive)
{
    const char *first = strstr (bytes, first_event);
    size_t before = first ? (size_t) (first - bytes) : strlen (bytes);
    size_t n = strlen (keepalive);
    if (before % n)
        return -1;
    for (size_t at = 0; at < before; at += n)
        if (memcmp (bytes + at, keepalive, n) != 0)
            return -1;
    return (int) (before / n);
}

Test (keepalive, a_call_held_a_minute_keeps_every_dialect_and_sdk_waiting, .timeout = 240)
{
    stack_opts_t opts = { .policy_text = s_policy, .mock_delay_ms = 1 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    verdict_tap_t *tap = verdict_tap_open (s);

    //  The SDKs first: they wait while the plain clients are started.
    const char *missing = sdk_runner_missing ();
    sdk_run_t *sdks = NULL;
    char openai [128], anthropic [128], gemini [128], hold [64], log [512];
    if (missing)
        fprintf (stderr, "keepalive: the SDK part is skipped: %s\n", missing);
    else {
        snprintf (openai, sizeof openai, "SLUICE_OPENAI_BASE_URL=http://127.0.0.1:%d/v1", s->http_port);
        snprintf (anthropic, sizeof anthropic, "SLUICE_ANTHROPIC_BASE_URL=http://127.0.0.1:%d", s->http_port);
        snprintf (gemini, sizeof gemini, "SLUICE_GEMINI_BASE_URL=http://127.0.0.1:%d", s->http_port);
        snprintf (hold, sizeof hold, "SLUICE_HOLD_SECONDS=%d", HOLD_MS / 1000);
        snprintf (log, sizeof log, "%s/sdk-hold.log", s->dir);
        const char *env [] = { openai, anthropic, gemini, hold, NULL };
        sdks = sdk_run_start (SDK_RUNNER_DIR "/hold", env, log, SDK_TEST_TIMEOUT_MS);
    }
    pthread_t threads [CLIENTS];
    s_result_t results [CLIENTS];
    memset (results, 0, sizeof results);
    for (size_t i = 0; i < CLIENTS; i++) {
        results [i].client = &s_clients [i];
        results [i].port = s->http_port;
        cr_assert_eq (pthread_create (&threads [i], NULL, s_client_run, &results [i]), 0);
    }
    for (size_t i = 0; i < CLIENTS; i++)
        pthread_join (threads [i], NULL);

    for (size_t i = 0; i < CLIENTS; i++) {
        const s_client_t *c = &s_clients [i];
        const char *bytes = sl_buf_cstr (&results [i].bytes);
        cr_expect_eq (results [i].status, 200, "%s: the response came whole", c->name);
        int keepalives = s_keepalives_before (bytes, c->first_event, c->keepalive);
        cr_expect_geq (keepalives, MIN_KEEPALIVES, "%s: keep-alives in the dialect's form, and nothing else, "
                       "while the call was held (%d):\n%.400s", c->name, keepalives, bytes);
        const char *first = strstr (bytes, c->first_event), *call = strstr (bytes, c->call);
        cr_expect (first && call && first <= call, "%s: then the call, released:\n%.2000s", c->name, bytes);
        cr_expect_not_null (strstr (bytes, SHELL_COMMAND), "%s: its arguments whole", c->name);
        const char *end = strstr (bytes, c->end);
        cr_expect (end && call && call < end, "%s: and the end of the response", c->name);
        fprintf (stderr, "keepalive: %s heard %d keep-alives\n", c->name, keepalives);
    }
    if (sdks)
        cr_expect (sdk_run_wait (sdks, SDK_RUN_TIMEOUT_MS), "every SDK waited and received the call");

    //  Every held call was judged by the slow judge, not timed out.
    int want = (int) CLIENTS + (sdks ? 4 : 0);
    cr_expect_eq (verdict_tap_wait (tap, want, VERDICT_WAIT_MS), want, "a verdict for each held call");
    for (int i = 0; i < tap->count; i++) {
        const sl_msg_t *v = tap->verdicts [i];
        cr_expect (sl_str_eq (v->rule, "minute-review"), "the rule that held it");
        cr_expect_eq (v->action, SL_ACT_ALLOW, "the judge allowed it");
        cr_expect_eq (v->check, SL_CHK_RAN, "the judge ran, no timeout");
        cr_expect (sl_str_eq (v->judge_model, HOLD_JUDGE));
    }
    cr_expect_gt (metric_value (atoi (s->metrics [3]), "sluice_keepalives_total"), 0);
    for (size_t i = 0; i < CLIENTS; i++)
        sl_buf_free (&results [i].bytes);
    verdict_tap_close (tap);
    cr_expect_eq (stack_stop (s), 0, "every process exits cleanly");
}
