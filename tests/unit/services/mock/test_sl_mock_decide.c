/*  Unit tests: services/mock/sl_mock_decide (the scripted decision
    service in OPA's shape). */
#include <criterion/criterion.h>
#include <string.h>

#include "services/mock/sl_mock_decide.h"

#define S_INPUT "{\"input\":{\"tool\":\"get_weather\",\"rule\":\"r\",\"identity\":{\"team\":\"ops\"}," \
                "\"arguments\":{\"city\":\"Paris\",\"days\":3}}}"

static void
s_expect (const char *path, int status, long delay, const char *body, const char *cache)
{
    sl_mock_judge_reply_t r;
    sl_mock_decide_answer (path, sl_str (S_INPUT), &r);
    cr_expect_eq (r.status, status, "%s", path);
    cr_expect_eq (r.delay_ms, delay, "%s", path);
    cr_expect_str_eq (sl_buf_cstr (&r.body), body, "%s", path);
    if (cache)
        cr_expect_str_eq (r.cache_control, cache);
    else
        cr_expect_null (r.cache_control);
    sl_mock_judge_reply_clear (&r);
}

Test (sl_mock_decide, scenarios_by_the_last_path_segment)
{
    cr_expect (sl_mock_decide_wants ("/v1/data/sluice/allow"));
    cr_expect_not (sl_mock_decide_wants ("/v1/chat/completions"));
    s_expect ("/v1/data/sluice/allow", 200, 0, "{\"result\":{\"allow\":true,\"reason\":\"the mock service allows it\"}}",
              NULL);
    s_expect ("/v1/data/sluice/deny-250", 200, 250, "{\"result\":{\"allow\":false,\"reason\":\"the mock service denies "
              "get_weather (rule r, team ops)\"}}", NULL);
    s_expect ("/v1/data/x/rewrite", 200, 0, "{\"result\":{\"allow\":true,\"reason\":\"the mock service rewrites it\","
              "\"rewrite\":{\"city\":\"Paris (rewritten)\",\"days\":3}}}", NULL);
    s_expect ("/v1/data/x/rewrite-bad", 200, 0, "{\"result\":{\"allow\":true,\"reason\":\"the mock service rewrites "
              "it\",\"rewrite\":{\"city\":42,\"days\":3}}}", NULL);
    s_expect ("/v1/data/x/cached?pretty=true", 200, 0,
              "{\"result\":{\"allow\":true,\"reason\":\"the mock service allows it\"}}", SL_MOCK_DECIDE_MAX_AGE);
    s_expect ("/v1/data/x/slow", 200, SL_MOCK_JUDGE_SLOW_MS,
              "{\"result\":{\"allow\":true,\"reason\":\"the mock service allows it\"}}", NULL);
    s_expect ("/v1/data/x/noresult", 200, 0, "{}", NULL);
    s_expect ("/v1/data/x/badallow", 200, 0, "{\"result\":{\"allow\":\"yes\"}}", NULL);
    sl_mock_judge_reply_t r;
    sl_mock_decide_answer ("/v1/data/x/garbage", sl_str (S_INPUT), &r);
    cr_expect_str_eq (r.content_type, "text/html");
    sl_mock_judge_reply_clear (&r);
    sl_mock_decide_answer ("/v1/data/x/error", sl_str (S_INPUT), &r);
    cr_expect_eq (r.status, 500);
    sl_mock_judge_reply_clear (&r);
    sl_mock_decide_answer ("/v1/data/x/maybe", sl_str (S_INPUT), &r);
    cr_expect_eq (r.status, 404);
    sl_mock_judge_reply_clear (&r);
    sl_mock_decide_answer ("/v1/data/x/allow", sl_str ("{\"tool\":\"x\"}"), &r);
    cr_expect_eq (r.status, 400, "the body must be {\"input\": {...}}");
    sl_mock_judge_reply_clear (&r);
}
