/*  Unit tests: common/llm/sl_decide (a decision service's answers, OPA's
    data API shape) and the kept answers of sl_llm_cache with a time. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/llm/sl_decide.h"
#include "common/llm/sl_llm_cache.h"

static int
s_read (int status, const char *body, sl_llm_result_t *out)
{
    return sl_decide_parse_answer (status, sl_str (body), out);
}

Test (sl_decide, allow_deny_and_the_services_reason)
{
    sl_llm_result_t r;
    cr_expect_eq (s_read (200, "{\"result\": {\"allow\": true}}", &r), 0);
    cr_expect_eq (r.check, SL_CHK_RAN);
    cr_expect (r.allow);
    cr_expect_null (r.explanation);
    cr_expect_null (r.rewrite);
    cr_expect (isnan (r.probability), "a decision is no estimate");
    sl_llm_result_clear (&r);

    cr_expect_eq (s_read (200, "{\"decision_id\": \"x\", \"result\": {\"allow\": false, "
                               "\"reason\": \"force pushes need a ticket\", \"extra\": 1}}", &r), 0);
    cr_expect_eq (r.check, SL_CHK_RAN);
    cr_expect_not (r.allow);
    cr_expect_str_eq (r.explanation, "force pushes need a ticket");
    sl_llm_result_clear (&r);

    //  A null reason or rewrite is one not given (Rego's undefined).
    cr_expect_eq (s_read (200, "{\"result\": {\"allow\": true, \"reason\": null, \"rewrite\": null}}", &r), 0);
    cr_expect (r.allow);
    cr_expect_null (r.explanation);
    cr_expect_null (r.rewrite);
    sl_llm_result_clear (&r);
}

Test (sl_decide, a_rewrite_is_kept_as_compact_json)
{
    sl_llm_result_t r;
    cr_expect_eq (s_read (200, "{\"result\": {\"allow\": true, \"reason\": \"dry run\", "
                               "\"rewrite\": { \"command\" : \"ls\", \"n\": [1, 2] }}}", &r), 0);
    cr_expect (r.allow);
    cr_expect_str_eq (r.rewrite, "{\"command\":\"ls\",\"n\":[1,2]}");
    cr_expect_str_eq (r.explanation, "dry run");
    sl_llm_result_clear (&r);
}

Test (sl_decide, a_long_reason_is_clipped)
{
    char body [2048];
    char reason [SL_DECIDE_MAX_REASON * 2];
    memset (reason, 'x', sizeof reason - 1);
    reason [sizeof reason - 1] = 0;
    snprintf (body, sizeof body, "{\"result\": {\"allow\": false, \"reason\": \"%s\"}}", reason);
    sl_llm_result_t r;
    cr_expect_eq (s_read (200, body, &r), 0);
    cr_expect_eq (strlen (r.explanation), SL_DECIDE_MAX_REASON);
    sl_llm_result_clear (&r);
}

Test (sl_decide, every_bad_answer_is_an_error_that_says_which)
{
    struct { int status; const char *body; const char *why; } cases [] = {
        { 500, "{\"code\": \"internal_error\"}", "the decision service answered HTTP 500: {\"code\"" },
        { 404, "", "the decision service answered HTTP 404" },
        { 200, "<html><body>Bad gateway</body></html>", "the decision service's answer is not a JSON object: <html>" },
        { 200, "", "the decision service's answer is not a JSON object" },
        { 200, "[true]", "the decision service's answer is not a JSON object" },
        { 200, "{}", "the decision service's answer has no result" },
        { 200, "{\"allow\": true}", "the decision service's answer has no result" },
        { 200, "{\"result\": true}", "the decision service's result is not an object" },
        { 200, "{\"result\": {\"reason\": \"fine\"}}", "the decision service's result has no allow" },
        { 200, "{\"result\": {\"allow\": \"true\"}}", "the decision service's allow is not a boolean" },
        { 200, "{\"result\": {\"allow\": 1}}", "the decision service's allow is not a boolean" },
        { 200, "{\"result\": {\"allow\": null}}", "the decision service's allow is not a boolean" },
        { 200, "{\"result\": {\"allow\": false, \"reason\": 7}}", "the decision service's reason is not a string" },
        { 200, "{\"result\": {\"allow\": true, \"rewrite\": [\"ls\"]}}",
          "the decision service's rewrite is not an object" },
        { 200, "{\"result\": {\"allow\": true, \"rewrite\": \"{}\"}}",
          "the decision service's rewrite is not an object" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_llm_result_t r;
        cr_expect_eq (s_read (cases [i].status, cases [i].body, &r), -1, "case %zu is refused", i);
        cr_expect_eq (r.check, SL_CHK_ERROR, "case %zu: the check did not run", i);
        cr_expect_not (r.allow, "case %zu: never an allow", i);
        cr_assert_not_null (r.error);
        cr_expect (strncmp (r.error, cases [i].why, strlen (cases [i].why)) == 0, "case %zu: got '%s', want '%s'",
                   i, r.error, cases [i].why);
        sl_llm_result_clear (&r);
    }
}

Test (sl_decide, cache_control_max_age)
{
    cr_expect_eq (sl_decide_max_age (NULL), 0, "no header: not kept");
    cr_expect_eq (sl_decide_max_age ("max-age=60"), 60);
    cr_expect_eq (sl_decide_max_age ("public, Max-Age=30"), 30);
    cr_expect_eq (sl_decide_max_age ("max-age=\"15\", must-revalidate"), 15);
    cr_expect_eq (sl_decide_max_age ("max-age=0"), 0);
    cr_expect_eq (sl_decide_max_age ("max-age=99999999999"), SL_DECIDE_MAX_AGE_S, "bounded");
    cr_expect_eq (sl_decide_max_age ("no-store, max-age=60"), 0);
    cr_expect_eq (sl_decide_max_age ("max-age=60, no-cache"), 0);
    cr_expect_eq (sl_decide_max_age ("max-age=ten"), 0);
    cr_expect_eq (sl_decide_max_age ("max-age=10s"), 0);
    cr_expect_eq (sl_decide_max_age ("max-age=-5"), 0);
    cr_expect_eq (sl_decide_max_age ("private"), 0);
}

Test (sl_decide, a_kept_answer_lasts_as_long_as_the_service_said)
{
    sl_llm_cache_t *cache = sl_llm_cache_new (2);
    sl_llm_result_t answer = { .check = SL_CHK_RAN, .probability = NAN, .allow = true,
                               .explanation = (char *) "ok", .rewrite = (char *) "{\"a\":1}" };
    sl_llm_cache_put_until (cache, "r", sl_str ("{\"input\":1}"), &answer, 1000);
    sl_llm_result_t got;
    cr_assert (sl_llm_cache_get_at (cache, "r", sl_str ("{\"input\":1}"), 999, &got));
    cr_expect (got.allow);
    cr_expect_str_eq (got.explanation, "ok");
    cr_expect_str_eq (got.rewrite, "{\"a\":1}");
    sl_llm_result_clear (&got);
    cr_expect_not (sl_llm_cache_get_at (cache, "r", sl_str ("{\"input\":1}"), 1000, &got), "past its time");
    cr_expect_not (sl_llm_cache_get_at (cache, "s", sl_str ("{\"input\":1}"), 0, &got), "another rule's");
    cr_expect_not (sl_llm_cache_get_at (cache, "r", sl_str ("{\"input\":2}"), 0, &got), "another question");
    //  Asked again after its time, the new answer takes its place.
    answer.allow = false;
    answer.rewrite = NULL;
    sl_llm_cache_put_until (cache, "r", sl_str ("{\"input\":1}"), &answer, 5000);
    cr_assert (sl_llm_cache_get_at (cache, "r", sl_str ("{\"input\":1}"), 2000, &got));
    cr_expect_not (got.allow);
    cr_expect_null (got.rewrite);
    sl_llm_result_clear (&got);
    //  A failed check is never kept.
    sl_llm_result_t failed = { .check = SL_CHK_TIMEOUT, .probability = NAN };
    sl_llm_cache_put_until (cache, "r", sl_str ("{\"input\":3}"), &failed, 5000);
    cr_expect_not (sl_llm_cache_get_at (cache, "r", sl_str ("{\"input\":3}"), 0, &got));
    sl_llm_cache_destroy (&cache);
}
