/*  Benchmark: what judging a request adds in the gateway, one core.

    A coding agent's request late in a session: 200 KB of conversation,
    50 tool results of about 4 KB each (file contents, command output,
    web pages), a system prompt, user turns, ten tool definitions. The
    gateway parses and prepares it (sl_job_parse: what it does today
    for every request); with a policy that has request rules it then
    judges every part (sl_reqjudge_run) and, when something changed,
    prepares the upstream body again (sl_job_refresh). This measures
    the added time: the judging and the refresh, per request, p50 and p99
    over ROUNDS requests, for

      none      a policy without request rules: the gateway checks
                sl_policy_request_count and goes on (today's path);
      rules     a rule-only request policy of the kind docs/policy.md shows:
                a terminate on a user message's text, a block_result on
                a tool's results holding a phrase, a size rule, an AWS-key
                redaction (nothing in the request matches: nothing changes);
      secrets   deploy/policies/secrets.yaml: eighteen secret patterns over
                every part (nothing matches);
      redact    the same request with one AWS key in each of the 50 results:
                50 redactions, and the body prepared again.

    The parse itself is printed for scale. Run from the repository root
    (make bench does): the secrets preset is read from deploy/policies/.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_job.h"
#include "common/policy/sl_reqjudge.h"

#define ROUNDS 400
#define RESULTS 50
#define RESULT_BYTES 4000
#define TOOLS 10

static double
s_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
s_cmp (const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

//  Text that reads like a file or a page: words, lines, some JSON.
static void
s_filler (sl_buf_t *out, size_t bytes, unsigned seed)
{
    static const char *words [] = {
        "the", "function", "returns", "a", "value", "when", "config", "path", "server", "request",
        "error", "handler", "module", "import", "from", "const", "let", "user", "data", "items",
        "{\\\"id\\\": 42,", "\\\"name\\\": \\\"widget\\\"}", "=>", "if", "else", "return", "self", "async"
    };
    size_t start = out->len;
    while (out->len - start < bytes) {
        seed = seed * 1103515245u + 12345u;
        sl_buf_puts (out, words [(seed >> 16) % (sizeof words / sizeof words [0])]);
        sl_buf_puts (out, (seed >> 8) % 11 == 0 ? "\\n" : " ");
    }
}

//  The agent's request, OpenAI Chat; with_keys: an AWS key in each result.
static void
s_request (sl_buf_t *out, bool with_keys)
{
    sl_buf_puts (out, "{\"model\":\"gpt-x\",\"stream\":true,\"messages\":[{\"role\":\"system\",\"content\":\"");
    s_filler (out, 3000, 1);
    sl_buf_puts (out, "\"},{\"role\":\"user\",\"content\":\"Refactor the handler and run the tests.\"}");
    for (int i = 0; i < RESULTS; i++) {
        sl_buf_printf (out, ",{\"role\":\"assistant\",\"content\":\"Reading the next file.\",\"tool_calls\":[{\"id\":"
                       "\"call_%d\",\"type\":\"function\",\"function\":{\"name\":\"%s\",\"arguments\":"
                       "\"{\\\"path\\\":\\\"src/file_%d.c\\\"}\"}}]}", i, i % 5 == 0 ? "web_fetch" : "read_file", i);
        sl_buf_printf (out, ",{\"role\":\"tool\",\"tool_call_id\":\"call_%d\",\"content\":\"", i);
        s_filler (out, RESULT_BYTES, (unsigned) i + 7);
        if (with_keys)
            sl_buf_puts (out, " AWS_ACCESS_KEY=AKIAIOSFODNN7EXAMPLE ");
        sl_buf_puts (out, "\"}");
    }
    sl_buf_puts (out, ",{\"role\":\"user\",\"content\":\"Now commit it.\"}],\"tools\":[");
    for (int t = 0; t < TOOLS; t++)
        sl_buf_printf (out, "%s{\"type\":\"function\",\"function\":{\"name\":\"tool_%d\",\"description\":\"Does "
                       "thing %d.\",\"parameters\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":"
                       "\"string\"}},\"required\":[\"path\"]}}}", t ? "," : "", t, t);
    sl_buf_puts (out, "]}");
}

static const char *s_rules =
    "rules:\n"
    "  - id: no-exfil-words\n    on: request\n    part: user\n    text: {regex: 'upload (the|all) (keys|secrets)'}\n"
    "    action: terminate\n"
    "  - id: web-injection\n    on: request\n    tool: [web_fetch, 'browser_*']\n"
    "    text: {contains: 'IGNORE PREVIOUS INSTRUCTIONS'}\n    action: block_result\n"
    "  - id: huge-result\n    on: request\n    part: tool_result\n    size: {gt: 1000000}\n    action: block_result\n"
    "  - id: aws-key\n    on: request\n    action: redact\n"
    "    redact: {regex: 'AKIA[0-9A-Z]{16}', placeholder: '[REDACTED:aws-key]'}\n";

//  Added time per request (judge + refresh), and the parse, in µs.
static void
s_measure (const char *label, sl_policy_t *policy, sl_str_t body)
{
    static double added [ROUNDS], parse [ROUNDS];
    size_t verdicts = 0;
    bool changed = false;
    for (int i = 0; i < ROUNDS; i++) {
        sl_endpoint_t endpoint = { .dialect = SL_DIALECT_OPENAI };
        sl_job_t r;
        double t0 = s_now ();
        if (sl_job_parse (&endpoint, body, &r)) {
            fprintf (stderr, "bench_reqjudge: the request does not parse: %s\n", sl_buf_cstr (&r.error_message));
            exit (1);
        }
        double t1 = s_now ();
        if (sl_policy_request_count (policy)) {
            sl_reqjudge_t *rj = sl_reqjudge_new (policy, r.req, SL_STR_LIT ("{}"));
            sl_reqjudge_run (rj, 0);
            changed = sl_reqjudge_changed (rj);
            if (changed && sl_job_refresh (&r)) {
                fprintf (stderr, "bench_reqjudge: refresh failed\n");
                exit (1);
            }
            verdicts = sl_reqjudge_verdicts (rj);
            sl_reqjudge_destroy (&rj);
        }
        double t2 = s_now ();
        sl_job_clear (&r);
        parse [i] = (t1 - t0) * 1e6;
        added [i] = (t2 - t1) * 1e6;
    }
    qsort (added, ROUNDS, sizeof (double), s_cmp);
    qsort (parse, ROUNDS, sizeof (double), s_cmp);
    printf ("reqjudge %-8s %zu KB, %d results: added p50 %7.1f us  p99 %7.1f us  (parse p50 %6.0f us; "
            "%zu verdicts%s)\n", label, body.len >> 10, RESULTS, added [ROUNDS / 2], added [ROUNDS * 99 / 100],
            parse [ROUNDS / 2], verdicts, changed ? ", body prepared again" : "");
}

int
main (void)
{
    sl_buf_t clean = { 0 }, keyed = { 0 };
    s_request (&clean, false);
    s_request (&keyed, true);
    char *error = NULL;
    const char *no_request_rules = "rules:\n  - {id: r, tool: run_shell, action: block}\n";
    sl_policy_t *none = sl_policy_parse (no_request_rules, strlen (no_request_rules), "none", &error);
    sl_policy_t *rules = sl_policy_parse (s_rules, strlen (s_rules), "rules", &error);
    sl_policy_t *secrets = sl_policy_load ("deploy/policies/secrets.yaml", &error);
    if (!none || !rules || !secrets) {
        fprintf (stderr, "bench_reqjudge: %s\n", error ? error : "a policy does not parse");
        return 1;
    }
    s_measure ("none", none, sl_buf_str (&clean));
    s_measure ("rules", rules, sl_buf_str (&clean));
    s_measure ("secrets", secrets, sl_buf_str (&clean));
    s_measure ("redact", rules, sl_buf_str (&keyed));
    sl_policy_unref (&none);
    sl_policy_unref (&rules);
    sl_policy_unref (&secrets);
    sl_buf_free (&clean);
    sl_buf_free (&keyed);
    return 0;
}
