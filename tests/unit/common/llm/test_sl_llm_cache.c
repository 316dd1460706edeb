/*  Unit tests: common/llm/sl_llm_cache (an LLM judge's answer kept by its
    rule and what was asked, so it is not asked again: only answers, the
    oldest going past the capacity, a decision service's for as long as
    it said). */
#include <criterion/criterion.h>

#include "common/llm/sl_llm_cache.h"

static sl_llm_result_t
s_answer (double probability, const char *explanation)
{
    return (sl_llm_result_t) { .check = SL_CHK_RAN, .probability = probability, .explanation = (char *) explanation };
}

Test (sl_llm_cache, an_answer_is_found_by_its_rule_and_body_and_nothing_else)
{
    sl_llm_cache_t *cache = sl_llm_cache_new (8);
    sl_llm_result_t in = s_answer (0.9, "exfiltration"), out;
    sl_llm_cache_put (cache, "r1", SL_STR_LIT ("{\"q\":1}"), &in);
    cr_assert (sl_llm_cache_get (cache, "r1", SL_STR_LIT ("{\"q\":1}"), &out));
    cr_expect_eq (out.check, SL_CHK_RAN);
    cr_expect_eq (out.probability, 0.9);
    cr_expect_str_eq (out.explanation, "exfiltration");
    cr_expect_neq (out.explanation, in.explanation, "the caller's own copy");
    sl_llm_result_clear (&out);
    cr_expect_not (sl_llm_cache_get (cache, "r2", SL_STR_LIT ("{\"q\":1}"), &out), "another rule");
    cr_expect_not (sl_llm_cache_get (cache, "r1", SL_STR_LIT ("{\"q\":2}"), &out), "another question");
    //  Only answers: a timeout is asked again.
    sl_llm_result_t timeout = { .check = SL_CHK_TIMEOUT };
    sl_llm_cache_put (cache, "r1", SL_STR_LIT ("slow"), &timeout);
    cr_expect_not (sl_llm_cache_get (cache, "r1", SL_STR_LIT ("slow"), &out));
    sl_llm_cache_destroy (&cache);
    sl_llm_cache_destroy (&cache);
    cr_expect_null (cache);
}

Test (sl_llm_cache, past_its_capacity_the_oldest_answer_goes)
{
    sl_llm_cache_t *cache = sl_llm_cache_new (2);
    sl_llm_result_t in = s_answer (0.1, NULL), out;
    sl_llm_cache_put (cache, "r", SL_STR_LIT ("a"), &in);
    sl_llm_cache_put (cache, "r", SL_STR_LIT ("b"), &in);
    sl_llm_cache_put (cache, "r", SL_STR_LIT ("c"), &in);
    cr_expect_not (sl_llm_cache_get (cache, "r", SL_STR_LIT ("a"), &out), "the oldest went");
    cr_expect (sl_llm_cache_get (cache, "r", SL_STR_LIT ("b"), &out));
    sl_llm_result_clear (&out);
    cr_expect (sl_llm_cache_get (cache, "r", SL_STR_LIT ("c"), &out));
    cr_expect_null (out.explanation);
    sl_llm_result_clear (&out);
    sl_llm_cache_destroy (&cache);
}

Test (sl_llm_cache, a_decision_is_kept_for_as_long_as_the_service_said)
{
    sl_llm_cache_t *cache = sl_llm_cache_new (4);
    sl_llm_result_t in = { .check = SL_CHK_RAN, .allow = true, .rewrite = "{\"path\":\"/tmp\"}" }, out;
    sl_llm_cache_put_until (cache, "svc", SL_STR_LIT ("call"), &in, 1000);
    cr_assert (sl_llm_cache_get_at (cache, "svc", SL_STR_LIT ("call"), 999, &out));
    cr_expect (out.allow);
    cr_expect_str_eq (out.rewrite, "{\"path\":\"/tmp\"}", "kept whole");
    sl_llm_result_clear (&out);
    cr_expect_not (sl_llm_cache_get_at (cache, "svc", SL_STR_LIT ("call"), 1000, &out), "past its time");
    //  Asked again: the new answer takes its place.
    in.allow = false;
    sl_llm_cache_put_until (cache, "svc", SL_STR_LIT ("call"), &in, 5000);
    cr_assert (sl_llm_cache_get_at (cache, "svc", SL_STR_LIT ("call"), 1000, &out));
    cr_expect_not (out.allow);
    sl_llm_result_clear (&out);
    //  An answer kept for good stays as it was.
    sl_llm_cache_put (cache, "judge", SL_STR_LIT ("q"), &in);
    in.allow = true;
    sl_llm_cache_put_until (cache, "judge", SL_STR_LIT ("q"), &in, 10);
    cr_assert (sl_llm_cache_get_at (cache, "judge", SL_STR_LIT ("q"), 20, &out));
    cr_expect_not (out.allow, "for good: not replaced");
    sl_llm_result_clear (&out);
    sl_llm_cache_destroy (&cache);
}
