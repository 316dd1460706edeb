/*  Unit tests: common/policy/sl_annotations (what a request's job carries
    for the judge beyond the request: each annotation only when the policy
    has a rule that uses it; the digests of the definitions as they came,
    from the request judge, when a request rule withheld one). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/dialects/sl_job.h"
#include "common/policy/sl_annotations.h"
#include "common/policy/sl_reqjudge.h"
#include "tests/unit/common/policy/policy_fixture.h"

//  An OpenAI Chat request: a call of web_fetch and its result, then a
//  user's turn, with two tools defined.
static const char *s_body =
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
    "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"web_fetch\","
    "\"arguments\":\"{\\\"url\\\":\\\"http://x\\\"}\"}}]},"
    "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"page\"},"
    "{\"role\":\"user\",\"content\":\"now what\"}],"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"web_fetch\",\"description\":\"Fetch a page\","
    "\"parameters\":{\"type\":\"object\"}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"secret_tool\",\"description\":\"Never\","
    "\"parameters\":{\"type\":\"object\"}}}]}";

static void
s_parse (sl_job_t *job)
{
    sl_endpoint_t endpoint = { .dialect = SL_DIALECT_OPENAI };
    snprintf (endpoint.model, sizeof endpoint.model, "m");
    cr_assert_eq (sl_job_parse (&endpoint, sl_str (s_body), job), 0, "%s", sl_buf_cstr (&job->error_message));
}

static bool
s_has (const sl_buf_t *buf, const char *text)
{
    return buf->len && memmem (buf->data, buf->len, text, strlen (text)) != NULL;
}

Test (sl_annotations, none_without_a_policy_or_a_rule_that_uses_them)
{
    sl_job_t job;
    s_parse (&job);
    sl_annotations_t a = { 0 };
    cr_expect_not (sl_annotations_make (NULL, job.req, NULL, &a), "refused before its policy was known");
    cr_expect_eq (a.history.len + a.digests.len + a.taint.len, 0);
    sl_policy_t *p = pf_rule ("    tool: run_shell\n");
    cr_expect_not (sl_annotations_make (p, job.req, NULL, &a), "a rule of names only uses none");
    cr_expect_eq (a.history.len + a.digests.len + a.taint.len, 0);
    sl_policy_unref (&p);
    sl_annotations_clear (&a);
    sl_job_clear (&job);
}

Test (sl_annotations, each_only_when_a_rule_uses_it)
{
    sl_job_t job;
    s_parse (&job);
    sl_annotations_t a = { 0 };

    sl_policy_t *p = pf_rule ("    tool: run_shell\n    history: [{tool: web_fetch}]\n");
    cr_expect (sl_annotations_make (p, job.req, NULL, &a));
    cr_expect (s_has (&a.history, "web_fetch"), "the earlier call: %s", sl_buf_cstr (&a.history));
    cr_expect_eq (a.digests.len + a.taint.len, 0);
    sl_policy_unref (&p);

    p = pf_rule ("    tool: run_shell\n    definition: unpinned\n");
    cr_expect (sl_annotations_make (p, job.req, NULL, &a));
    cr_expect (s_has (&a.digests, "\"web_fetch\":\"") && s_has (&a.digests, "\"secret_tool\":\""), "%s",
               sl_buf_cstr (&a.digests));
    cr_expect_eq (a.history.len + a.taint.len, 0, "made again: what the last made is gone");
    sl_policy_unref (&p);

    p = pf_policy ("trust:\n  untrusted: [web_fetch]\n"
                   "rules:\n  - id: t\n    tool: run_shell\n    tainted: true\n    action: block\n");
    cr_expect (sl_annotations_make (p, job.req, NULL, &a));
    cr_expect (s_has (&a.taint, "\"tool\":\"web_fetch\""), "%s", sl_buf_cstr (&a.taint));
    cr_expect_eq (a.history.len + a.digests.len, 0);
    sl_policy_unref (&p);

    sl_annotations_clear (&a);
    sl_job_clear (&job);
}

Test (sl_annotations, digests_are_of_the_definitions_as_they_came)
{
    sl_job_t job;
    s_parse (&job);
    sl_policy_t *p = pf_policy ("rules:\n"
                                "  - id: w\n    on: request\n    part: tool\n    tool: secret_tool\n"
                                "    action: withhold\n"
                                "  - id: d\n    tool: run_shell\n    definition: unpinned\n    action: block\n");
    sl_reqjudge_t *rj = sl_reqjudge_new (p, job.req, SL_STR_LIT ("{}"));
    sl_reqjudge_run (rj, 0);
    cr_assert_eq (sl_reqjudge_pending (rj), 0);
    cr_assert_eq (job.req->tool_count, 1, "the rule withheld secret_tool");
    sl_annotations_t a = { 0 };
    cr_expect (sl_annotations_make (p, job.req, rj, &a));
    cr_expect (s_has (&a.digests, "\"secret_tool\":\""), "the judge's: the withheld one too: %s",
               sl_buf_cstr (&a.digests));
    cr_expect (sl_annotations_make (p, job.req, NULL, &a));
    cr_expect_not (s_has (&a.digests, "secret_tool"), "without the judge, only what is left: %s",
                   sl_buf_cstr (&a.digests));
    sl_annotations_clear (&a);
    sl_reqjudge_destroy (&rj);
    sl_policy_unref (&p);
    sl_job_clear (&job);
}
