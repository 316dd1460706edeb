/*  Unit tests: services/mock/sl_mock_judge (the mock playing an LLM judge).
    The answers are read with the judge's own parser, so the mock and the
    judge agree on the format. */
#include <criterion/criterion.h>
#include <math.h>

#include "common/llm/sl_llm.h"
#include "services/mock/sl_mock_judge.h"

#define OPENAI_PATH "/v1/chat/completions"
#define ANTHROPIC_PATH "/v1/messages"

static sl_mock_judge_reply_t
s_answer (const char *path, const char *model)
{
    char body [256];
    snprintf (body, sizeof body, "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", model);
    cr_expect (sl_mock_judge_wants (path, sl_str (body)), "%s is a judge request", model);
    sl_mock_judge_reply_t r;
    sl_mock_judge_answer (path, sl_str (body), &r);
    return r;
}

//  The judge's reading of a mock answer.
static sl_llm_result_t
s_read (const char *path, const char *model, long *delay_ms)
{
    sl_mock_judge_reply_t reply = s_answer (path, model);
    sl_llm_result_t result;
    sl_llm_parse_answer (strcmp (path, ANTHROPIC_PATH) == 0 ? SL_DIALECT_ANTHROPIC : SL_DIALECT_OPENAI,
                         reply.status, sl_buf_str (&reply.body), &result);
    *delay_ms = reply.delay_ms;
    sl_mock_judge_reply_clear (&reply);
    return result;
}

Test (sl_mock_judge, scenarios_in_both_formats)
{
    const char *paths [] = { OPENAI_PATH, ANTHROPIC_PATH };
    for (int i = 0; i < 2; i++) {
        long delay;
        sl_llm_result_t r = s_read (paths [i], "judge-allow", &delay);
        cr_expect_eq (r.check, SL_CHK_RAN, "%s", paths [i]);
        cr_expect_lt (r.probability, 0.5);
        cr_expect_eq (delay, 0);
        sl_llm_result_clear (&r);

        r = s_read (paths [i], "judge-block", &delay);
        cr_expect_eq (r.check, SL_CHK_RAN);
        cr_expect_gt (r.probability, 0.9);
        cr_expect_not_null (r.explanation);
        sl_llm_result_clear (&r);

        r = s_read (paths [i], "judge-slow", &delay);
        cr_expect_eq (r.check, SL_CHK_RAN);
        cr_expect_eq (delay, SL_MOCK_JUDGE_SLOW_MS);
        sl_llm_result_clear (&r);

        r = s_read (paths [i], "judge-garbage", &delay);
        cr_expect_eq (r.check, SL_CHK_ERROR, "garbage is never a pass");
        sl_llm_result_clear (&r);

        r = s_read (paths [i], "judge-error", &delay);
        cr_expect_eq (r.check, SL_CHK_ERROR);
        cr_expect_not_null (strstr (r.error, "HTTP 500"));
        sl_llm_result_clear (&r);
    }
}

Test (sl_mock_judge, delay_suffix)
{
    long delay;
    sl_llm_result_t r = s_read (OPENAI_PATH, "judge-block-250", &delay);
    cr_expect_eq (delay, 250);
    cr_expect_gt (r.probability, 0.9, "the suffix keeps the scenario");
    sl_llm_result_clear (&r);
    r = s_read (OPENAI_PATH, "judge-slow-1500", &delay);
    cr_expect_eq (delay, 1500);
    sl_llm_result_clear (&r);
    r = s_read (OPENAI_PATH, "judge-slow-99999999", &delay);
    cr_expect_eq (delay, SL_MOCK_JUDGE_MAX_DELAY_MS, "delays are bounded");
    sl_llm_result_clear (&r);
}

Test (sl_mock_judge, what_is_not_a_judge_request)
{
    cr_expect_not (sl_mock_judge_wants (OPENAI_PATH, sl_str ("{\"model\":\"mock-tools\"}")));
    cr_expect_not (sl_mock_judge_wants (OPENAI_PATH, sl_str ("{\"model\":\"mock-text\",\"x\":\"judge-allow\"}")));
    cr_expect_not (sl_mock_judge_wants ("/healthz", sl_str ("{\"model\":\"judge-allow\"}")));
    cr_expect_not (sl_mock_judge_wants (OPENAI_PATH, sl_str ("{\"model\":\"judge-allow\"")));
    cr_expect_not (sl_mock_judge_wants (OPENAI_PATH, SL_STR_NULL));
    sl_mock_judge_reply_t r = s_answer (OPENAI_PATH, "judge-nonsense");
    cr_expect_eq (r.status, 404);
    cr_expect_eq (r.delay_ms, 0);
    sl_mock_judge_reply_clear (&r);
}
