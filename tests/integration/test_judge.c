/*  Integration: the judge over the real processes, with the mock upstream
    playing both the model (mock-tools: get_weather, then run_shell) and
    the LLM judges (judge-* models). Verdicts are read from the emitter's
    PUB socket, as sluice-tap reads them; client bytes over HTTP. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <czmq.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto/sl_msg.h"
#include "tests/integration/harness.h"
#include "tests/integration/verdict_tap.h"
#include "tests/integration/sse_client.h"

#define TIMEOUT_MS 20000
#define MAX_STREAMS 64
#define POLL_MS 5

static const char *
s_chat (const char *model)
{
    static char body [256];
    snprintf (body, sizeof body,
              "{\"model\":\"%s\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"tidy up\"}]}", model);
    return body;
}

//  --------------------------------------------------------------------------
//  Many streams at once (libcurl multi)

typedef struct {
    CURLM *multi;
    struct {
        CURL *easy;
        struct curl_slist *headers;
        sl_buf_t body;
        bool done;
    } reqs [MAX_STREAMS];
    int count;
} streams_t;

static size_t
s_collect (char *ptr, size_t size, size_t nmemb, void *arg)
{
    sl_buf_append ((sl_buf_t *) arg, ptr, size * nmemb);
    return size * nmemb;
}

static int
s_streams_add (streams_t *st, int port, const char *body)
{
    cr_assert_lt (st->count, MAX_STREAMS);
    if (!st->multi)
        st->multi = curl_multi_init ();
    int i = st->count++;
    CURL *easy = curl_easy_init ();
    char url [128];
    snprintf (url, sizeof url, "http://127.0.0.1:%d/v1/chat/completions", port);
    st->reqs [i].headers = curl_slist_append (NULL, "Content-Type: application/json");
    curl_easy_setopt (easy, CURLOPT_URL, url);
    curl_easy_setopt (easy, CURLOPT_COPYPOSTFIELDS, body);
    curl_easy_setopt (easy, CURLOPT_HTTPHEADER, st->reqs [i].headers);
    curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_collect);
    curl_easy_setopt (easy, CURLOPT_WRITEDATA, &st->reqs [i].body);
    curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, (long) TIMEOUT_MS);
    curl_easy_setopt (easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (easy, CURLOPT_PRIVATE, (char *) (intptr_t) i);
    st->reqs [i].easy = easy;
    curl_multi_add_handle (st->multi, easy);
    return i;
}

//  Drive the transfers for up to wait_ms.
static void
s_streams_step (streams_t *st, int wait_ms)
{
    int running;
    curl_multi_perform (st->multi, &running);
    curl_multi_poll (st->multi, NULL, 0, wait_ms, NULL);
    curl_multi_perform (st->multi, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read (st->multi, &left)))
        if (msg->msg == CURLMSG_DONE) {
            char *priv;
            curl_easy_getinfo (msg->easy_handle, CURLINFO_PRIVATE, &priv);
            st->reqs [(intptr_t) priv].done = true;
        }
}

static bool
s_streams_all_done (streams_t *st)
{
    for (int i = 0; i < st->count; i++)
        if (!st->reqs [i].done)
            return false;
    return true;
}

static void
s_streams_finish (streams_t *st)
{
    long deadline = zclock_mono () + TIMEOUT_MS;
    while (!s_streams_all_done (st) && zclock_mono () < deadline)
        s_streams_step (st, POLL_MS);
    cr_expect (s_streams_all_done (st), "every stream ended in time");
}

//  Drive until stream i received text containing needle.
static void
s_streams_wait_for (streams_t *st, int i, const char *needle)
{
    long deadline = zclock_mono () + TIMEOUT_MS;
    while (!strstr (sl_buf_cstr (&st->reqs [i].body), needle) && zclock_mono () < deadline)
        s_streams_step (st, POLL_MS);
    cr_assert_not_null (strstr (sl_buf_cstr (&st->reqs [i].body), needle), "stream %d got '%s'", i, needle);
}

static void
s_streams_free (streams_t *st)
{
    for (int i = 0; i < st->count; i++) {
        curl_multi_remove_handle (st->multi, st->reqs [i].easy);
        curl_easy_cleanup (st->reqs [i].easy);
        curl_slist_free_all (st->reqs [i].headers);
        sl_buf_free (&st->reqs [i].body);
    }
    if (st->multi)
        curl_multi_cleanup (st->multi);
    memset (st, 0, sizeof *st);
}

//  --------------------------------------------------------------------------
//  Helpers on the stack

static void
s_write (const char *path, const char *text)
{
    //  Write a new file and rename it over the old, as deploy tools do, so
    //  the judge never reads half a file.
    char tmp [600];
    snprintf (tmp, sizeof tmp, "%s.new", path);
    FILE *f = fopen (tmp, "w");
    cr_assert_not_null (f);
    fputs (text, f);
    fclose (f);
    cr_assert_eq (rename (tmp, path), 0);
}

//  Wait until the judge's metric reaches at least value.
static void
s_wait_judge_metric (sluice_stack_t *s, const char *name, double value)
{
    double v = harness_wait_metric (atoi (s->metrics [3]), name, value, TIMEOUT_MS);
    cr_assert_geq (v, value, "%s reached %g", name, value);
}

//  Does the process's log hold needle (now)?
static bool
s_log_has (proc_t *p, const char *needle)
{
    FILE *f = fopen (p->log_path, "r");
    char line [4096];
    bool found = false;
    while (f && !found && fgets (line, sizeof line, f))
        found = strstr (line, needle) != NULL;
    if (f)
        fclose (f);
    return found;
}

static const sl_msg_t *
s_verdict_for (verdict_tap_t *t, const char *tool)
{
    for (int i = 0; i < t->count; i++)
        if (sl_str_eq (t->verdicts [i]->name, tool))
            return t->verdicts [i];
    cr_assert_fail ("no verdict for %s", tool);
    return NULL;
}

static void
s_expect_reason (const sl_msg_t *v, const char *needle)
{
    char reason [512];
    snprintf (reason, sizeof reason, "%.*s", (int) v->reason.len, v->reason.ptr ? v->reason.ptr : "");
    cr_expect_not_null (strstr (reason, needle), "reason '%s' mentions '%s'", reason, needle);
}

//  --------------------------------------------------------------------------

Test (judge, parallel_slow_and_fast_judges_keep_the_order)
{
    //  get_weather comes first and has the slow judge; run_shell's fast
    //  judge answers long before, but run_shell must still come second.
    const char *policy =
        "rules:\n"
        "  - id: weather-judge\n"
        "    tool: get_weather\n"
        "    llm_judge: {url: '@MOCK@/v1/chat/completions', model: judge-slow-1500, timeout_ms: 15000}\n"
        "  - id: shell-judge\n"
        "    tool: run_shell\n"
        "    llm_judge: {url: '@MOCK@/v1/chat/completions', model: judge-block, timeout_ms: 15000}\n"
        "    message: 'sluice blocked {tool} after review'\n";
    const char *judge_args [] = { "--keepalive-ms", "100", NULL };
    stack_opts_t opts = { .policy_text = policy, .mock_delay_ms = 1, .judge_args = judge_args };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    verdict_tap_t *tap = verdict_tap_open (s);

    sl_buf_t body = { 0 };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-tools"), NULL,
                                &body, TIMEOUT_MS), 200);
    const char *raw = sl_buf_cstr (&body);
    chat_stream_t cs;
    chat_stream_parse (raw, &cs);
    cr_expect_eq (cs.malformed, 0);
    cr_assert_eq (cs.call_count, 1, "get_weather reaches the client");
    cr_expect_str_eq (sl_buf_cstr (&cs.calls [0].name), "get_weather");
    cr_expect_str_eq (sl_buf_cstr (&cs.calls [0].arguments), "{\"city\":\"Paris\"}");
    cr_expect_str_eq (sl_buf_cstr (&cs.content), "Let me check the weather and tidy up."
                                                 "\n\nsluice blocked run_shell after review");
    const char *weather = strstr (raw, "get_weather"), *notice = strstr (raw, "after review");
    cr_expect (weather && notice && weather < notice, "released in the original order");
    cr_expect_null (strstr (raw, "rm -rf"));
    cr_expect_str_eq (sl_buf_cstr (&cs.finish), "tool_calls");
    cr_expect (cs.done_last);
    cr_expect_not_null (strstr (raw, ": keep-alive"), "the client heard from sluice while the judge thought");

    cr_assert_eq (verdict_tap_wait (tap, 2, TIMEOUT_MS), 2, "two verdicts arrived");
    cr_expect (sl_str_eq (tap->verdicts [0]->name, "get_weather"), "verdicts in order too");
    const sl_msg_t *w = s_verdict_for (tap, "get_weather"), *r = s_verdict_for (tap, "run_shell");
    cr_expect_eq (w->action, SL_ACT_ALLOW);
    cr_expect_eq (w->check, SL_CHK_RAN);
    cr_expect (sl_str_eq (w->judge_model, "judge-slow-1500"));
    cr_expect_float_eq (w->probability, 0.02, 1e-9);
    cr_expect (sl_str_eq (w->rule, "weather-judge"));
    cr_expect_eq (w->index, 1, "text is block 0");
    cr_expect_eq (r->action, SL_ACT_BLOCK);
    cr_expect_eq (r->check, SL_CHK_RAN);
    cr_expect (sl_str_eq (r->judge_model, "judge-block"));
    cr_expect_float_eq (r->probability, 0.97, 1e-9);
    s_expect_reason (r, "rejects this call");
    //  Both judges were in flight at once: the fast one was asked while the
    //  slow one was still thinking.
    cr_expect_geq (metric_value (atoi (s->metrics [3]), "sluice_llm_judge_inflight_peak"), 2);
    cr_expect_gt (metric_value (atoi (s->metrics [3]), "sluice_keepalives_total"), 0);
    chat_stream_free (&cs);
    sl_buf_free (&body);
    verdict_tap_close (tap);
    cr_expect_eq (stack_stop (s), 0, "every process exits cleanly");
}

Test (judge, timeouts_take_on_error_block_or_allow)
{
    const char *policy =
        "rules:\n"
        "  - id: weather-lenient\n"
        "    tool: get_weather\n"
        "    llm_judge: {url: '@MOCK@/v1/chat/completions', model: judge-slow-10000, timeout_ms: 200,\n"
        "                on_error: allow}\n"
        "  - id: shell-strict\n"
        "    tool: run_shell\n"
        "    llm_judge: {url: '@MOCK@/v1/chat/completions', model: judge-slow-10000, timeout_ms: 200,\n"
        "                on_error: block}\n";
    stack_opts_t opts = { .policy_text = policy, .mock_delay_ms = 1 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    verdict_tap_t *tap = verdict_tap_open (s);
    sl_buf_t body = { 0 };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-tools"), NULL,
                                &body, TIMEOUT_MS), 200);
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_assert_eq (cs.call_count, 1);
    cr_expect_str_eq (sl_buf_cstr (&cs.calls [0].name), "get_weather", "on_error: allow lets it through");
    cr_expect_not_null (strstr (sl_buf_cstr (&cs.content), "sluice blocked a call to the tool \"run_shell\""),
                        "on_error: block: %s", sl_buf_cstr (&cs.content));
    cr_expect (cs.done_last);
    cr_assert_eq (verdict_tap_wait (tap, 2, TIMEOUT_MS), 2, "two verdicts arrived");
    const sl_msg_t *w = s_verdict_for (tap, "get_weather"), *r = s_verdict_for (tap, "run_shell");
    cr_expect_eq (w->action, SL_ACT_ALLOW);
    cr_expect_eq (w->check, SL_CHK_TIMEOUT, "allowed, and on record as a check that did not run");
    cr_expect (isnan (w->probability));
    cr_expect (sl_str_eq (w->judge_model, "judge-slow-10000"));
    s_expect_reason (w, "timed out");
    cr_expect_eq (r->action, SL_ACT_BLOCK);
    cr_expect_eq (r->check, SL_CHK_TIMEOUT);
    s_expect_reason (r, "on_error: block");
    chat_stream_free (&cs);
    sl_buf_free (&body);
    verdict_tap_close (tap);
    cr_expect_eq (stack_stop (s), 0);
}

Test (judge, garbage_and_failed_judges_are_never_a_pass)
{
    const char *policy =
        "rules:\n"
        "  - id: weather-garbage\n"
        "    tool: get_weather\n"
        "    llm_judge: {url: '@MOCK@/v1/chat/completions', model: judge-garbage, on_error: allow}\n"
        "  - id: shell-error\n"
        "    tool: run_shell\n"
        "    llm_judge: {url: '@MOCK@/v1/messages', api: anthropic, model: judge-error}\n";
    stack_opts_t opts = { .policy_text = policy, .mock_delay_ms = 1 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    verdict_tap_t *tap = verdict_tap_open (s);
    sl_buf_t body = { 0 };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-tools"), NULL,
                                &body, TIMEOUT_MS), 200);
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect_eq (cs.call_count, 1);
    cr_expect_null (strstr (sl_buf_cstr (&body), "rm -rf"));
    cr_assert_eq (verdict_tap_wait (tap, 2, TIMEOUT_MS), 2, "two verdicts arrived");
    const sl_msg_t *w = s_verdict_for (tap, "get_weather"), *r = s_verdict_for (tap, "run_shell");
    cr_expect_eq (w->action, SL_ACT_ALLOW);
    cr_expect_eq (w->check, SL_CHK_ERROR, "a garbage answer is an error");
    s_expect_reason (w, "not a JSON object");
    cr_expect_eq (r->action, SL_ACT_BLOCK, "on_error defaults to block");
    cr_expect_eq (r->check, SL_CHK_ERROR);
    s_expect_reason (r, "HTTP 500");
    chat_stream_free (&cs);
    sl_buf_free (&body);
    verdict_tap_close (tap);
    cr_expect_eq (stack_stop (s), 0);
}

Test (judge, anthropic_judge_and_api_keys_from_the_environment)
{
    //  The judge inherits the test's environment: one key is set, the
    //  other is not, and a missing key is an error, not a pass.
    setenv ("SLUICE_TEST_JUDGE_KEY", "test-key-not-a-secret", 1);
    unsetenv ("SLUICE_TEST_MISSING_KEY");
    const char *policy =
        "rules:\n"
        "  - id: weather-anthropic\n"
        "    tool: get_weather\n"
        "    llm_judge: {api: anthropic, url: '@MOCK@/v1/messages', model: judge-allow,\n"
        "                api_key_env: SLUICE_TEST_JUDGE_KEY}\n"
        "  - id: shell-no-key\n"
        "    tool: run_shell\n"
        "    llm_judge: {url: '@MOCK@/v1/chat/completions', model: judge-allow,\n"
        "                api_key_env: SLUICE_TEST_MISSING_KEY}\n";
    stack_opts_t opts = { .policy_text = policy, .mock_delay_ms = 1 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    verdict_tap_t *tap = verdict_tap_open (s);
    sl_buf_t body = { 0 };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-tools"), NULL,
                                &body, TIMEOUT_MS), 200);
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect_eq (cs.call_count, 1);
    cr_assert_eq (verdict_tap_wait (tap, 2, TIMEOUT_MS), 2, "two verdicts arrived");
    const sl_msg_t *w = s_verdict_for (tap, "get_weather"), *r = s_verdict_for (tap, "run_shell");
    cr_expect_eq (w->action, SL_ACT_ALLOW);
    cr_expect_eq (w->check, SL_CHK_RAN, "the Anthropic judge answered");
    cr_expect_float_eq (w->probability, 0.02, 1e-9);
    cr_expect_eq (r->action, SL_ACT_BLOCK);
    cr_expect_eq (r->check, SL_CHK_ERROR);
    s_expect_reason (r, "the API key variable SLUICE_TEST_MISSING_KEY is not set");
    //  Keys are never logged.
    cr_expect (s_log_has (s->judge, "SLUICE_TEST_MISSING_KEY is not set"), "the failure is logged");
    cr_expect_not (s_log_has (s->judge, "test-key-not-a-secret"), "the key is not");
    chat_stream_free (&cs);
    sl_buf_free (&body);
    verdict_tap_close (tap);
    cr_expect_eq (stack_stop (s), 0);
}

Test (judge, actions_on_the_wire_with_headers_and_schemas)
{
    const char *policy =
        "rules:\n"
        "  - id: schema\n"
        "    headers: [{name: x-check, equals: schema}]\n"
        "    schema_violation: true\n"
        "    action: block\n"
        "    message: 'bad arguments for {tool}: {reason}'\n"
        "  - id: quiet-shell\n"
        "    tool: run_shell\n"
        "    headers: [{name: x-team, equals: quiet}]\n"
        "    action: drop\n"
        "  - id: stop-shell\n"
        "    tool: run_shell\n"
        "    action: terminate\n"
        "  - id: metric\n"
        "    tool: get_weather\n"
        "    action: rewrite\n"
        "    set: {/unit: celsius}\n";
    stack_opts_t opts = { .policy_text = policy, .mock_delay_ms = 1 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);

    //  A header picks the drop rule: run_shell vanishes without a notice.
    const char *quiet [] = { "X-Team: quiet", NULL };
    sl_buf_t body = { 0 };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-tools"), quiet,
                                &body, TIMEOUT_MS), 200);
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_assert_eq (cs.call_count, 1);
    cr_expect_str_eq (sl_buf_cstr (&cs.calls [0].arguments), "{\"city\":\"Paris\",\"unit\":\"celsius\"}",
                      "rewritten arguments reach the client");
    cr_expect_str_eq (sl_buf_cstr (&cs.content), "Let me check the weather and tidy up.", "no notice for a drop");
    cr_expect_str_eq (sl_buf_cstr (&cs.finish), "tool_calls");
    cr_expect (cs.done_last);
    chat_stream_free (&cs);

    //  Without it, run_shell ends the response with an error.
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-tools"), NULL,
                                &body, TIMEOUT_MS), 200);
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect_eq (cs.call_count, 1, "the call before it was released");
    cr_expect_eq (cs.errors, 1);
    cr_expect_str_eq (sl_buf_cstr (&cs.error_type), "policy_violation");
    cr_expect_not (cs.saw_done, "a terminated response does not end with [DONE]");
    cr_expect_eq (cs.finish_count, 0);
    cr_expect_null (strstr (sl_buf_cstr (&body), "rm -rf"));
    chat_stream_free (&cs);

    //  The request's own tool schema: get_weather's city must be an integer.
    sl_buf_reset (&body);
    const char *check [] = { "X-Check: schema", NULL };
    const char *with_tools =
        "{\"model\":\"mock-tools\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":"
        "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"integer\"}}}}}]}";
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", with_tools, check, &body,
                                TIMEOUT_MS), 200);
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect_eq (cs.call_count, 0);
    cr_expect_not_null (strstr (sl_buf_cstr (&cs.content),
                                "bad arguments for get_weather: rule schema matched: /city: expected integer"),
                        "%s", sl_buf_cstr (&cs.content));
    cr_expect_not_null (strstr (sl_buf_cstr (&cs.content), "bad arguments for run_shell: rule schema matched: "
                                "the request declares no tool named 'run_shell'"));
    cr_expect_str_eq (sl_buf_cstr (&cs.finish), "stop", "no call left: the client is not left waiting");
    chat_stream_free (&cs);
    sl_buf_free (&body);
    cr_expect_eq (stack_stop (s), 0);
}

static const char *s_policy_a =
    "rules:\n  - id: shell\n    tool: run_shell\n    action: block\n    message: 'policy A'\n";
static const char *s_policy_b =
    "rules:\n  - id: shell\n    tool: run_shell\n    action: block\n    message: 'policy B, longer'\n";

Test (judge, streams_in_flight_finish_under_their_policy)
{
    stack_opts_t opts = { .policy_text = s_policy_a, .mock_delay_ms = 40 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    streams_t st = { 0 };
    int first = s_streams_add (&st, s->http_port, s_chat ("mock-tools"));
    //  Its text has passed the judge, so the judge has seen it start.
    s_streams_wait_for (&st, first, "Let me check");
    s_write (s->policy_path, s_policy_b);
    kill (s->judge->pid, SIGHUP);
    s_wait_judge_metric (s, "sluice_policy_reloads_total", 1);
    int second = s_streams_add (&st, s->http_port, s_chat ("mock-tools"));
    s_streams_finish (&st);
    cr_expect_not_null (strstr (sl_buf_cstr (&st.reqs [first].body), "policy A"), "the first stream kept A");
    cr_expect_null (strstr (sl_buf_cstr (&st.reqs [first].body), "policy B"));
    cr_expect_not_null (strstr (sl_buf_cstr (&st.reqs [second].body), "policy B"), "the second got B");
    s_streams_free (&st);
    cr_expect_eq (stack_stop (s), 0);
}

Test (judge, reload_under_load_loses_no_stream)
{
    const char *judge_args [] = { "--watch-ms", "50", NULL };
    stack_opts_t opts = { .policy_text = s_policy_a, .mock_delay_ms = 10, .judge_args = judge_args };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    streams_t st = { 0 };
    const int wave = 20;
    for (int i = 0; i < wave; i++)
        s_streams_add (&st, s->http_port, s_chat ("mock-tools"));
    s_streams_wait_for (&st, 0, "Let me check");
    //  Reload by signal, refuse a bad file, reload on a file change alone,
    //  while streams run; then a second wave under the last policy. (The
    //  file watch may load B before the signal does, and then both count.)
    int metrics = atoi (s->metrics [3]);
    s_write (s->policy_path, s_policy_b);
    kill (s->judge->pid, SIGHUP);
    s_wait_judge_metric (s, "sluice_policy_reloads_total", 1);
    s_streams_step (&st, POLL_MS);
    s_write (s->policy_path, "rules:\n  - id: broken\n    action: maybe\n");
    s_wait_judge_metric (s, "sluice_policy_reload_failures_total", 1);
    s_streams_step (&st, POLL_MS);
    double reloads = metric_value (metrics, "sluice_policy_reloads_total");
    s_write (s->policy_path, s_policy_a);
    s_wait_judge_metric (s, "sluice_policy_reloads_total", reloads + 1);
    for (int i = 0; i < wave; i++)
        s_streams_add (&st, s->http_port, s_chat ("mock-tools"));
    s_streams_finish (&st);
    for (int i = 0; i < st.count; i++) {
        const char *raw = sl_buf_cstr (&st.reqs [i].body);
        chat_stream_t cs;
        chat_stream_parse (raw, &cs);
        bool a = strstr (raw, "policy A") != NULL, b = strstr (raw, "policy B") != NULL;
        cr_expect (a != b, "stream %d was judged under exactly one policy", i);
        if (i >= wave)
            cr_expect (a, "stream %d started after the last reload", i);
        cr_expect_eq (cs.call_count, 1, "stream %d", i);
        cr_expect_eq (cs.errors, 0, "stream %d", i);
        cr_expect (cs.done_last, "stream %d ended properly", i);
        chat_stream_free (&cs);
    }
    cr_expect_eq (metric_value (atoi (s->metrics [3]), "sluice_streams_active"), 0, "nothing left behind");
    s_streams_free (&st);
    cr_expect_eq (stack_stop (s), 0);
}
