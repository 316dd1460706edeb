/*  Unit tests: common/dialects/sl_effort - one scale of reasoning effort,
    one table of budgets. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/dialects/sl_effort.h"

Test (sl_effort, words_and_budgets_go_both_ways)
{
    for (int e = SL_EFFORT_NONE; e < SL_EFFORT_COUNT; e++) {
        const char *word = sl_effort_name (e);
        cr_assert_not_null (word);
        cr_expect_eq (sl_effort_parse (sl_str (word)), e, "%s", word);
        cr_expect_eq (sl_effort_of_budget (sl_effort_budget (e)), e, "a level's own budget is that level: %s", word);
        if (e > SL_EFFORT_NONE)
            cr_expect_gt (sl_effort_budget (e), sl_effort_budget (e - 1), "budgets rise with the level");
    }
    cr_expect_eq (sl_effort_parse (sl_str ("extreme")), SL_EFFORT_UNSET);
    cr_expect_eq (sl_effort_parse ((sl_str_t) { 0 }), SL_EFFORT_UNSET);
    cr_expect_null (sl_effort_name (SL_EFFORT_UNSET));
    cr_expect_eq (sl_effort_budget (SL_EFFORT_UNSET), -1);
    cr_expect_eq (sl_effort_of_budget (-1), SL_EFFORT_UNSET);
    cr_expect_eq (sl_effort_of_budget (0), SL_EFFORT_NONE);
    cr_expect_eq (sl_effort_of_budget (3000), SL_EFFORT_MEDIUM, "the least level that covers it");
    cr_expect_eq (sl_effort_of_budget (1 << 30), SL_EFFORT_MAX);
}

Test (sl_effort, a_request_is_read_by_its_word_else_its_budget)
{
    sl_req_t *req = sl_req_new (0, NULL);
    sl_xlate_t x = { 0 };
    cr_expect_eq (sl_effort_of (req, &x), SL_EFFORT_UNSET);
    req->budget = 20000;
    cr_expect_eq (sl_effort_of (req, &x), SL_EFFORT_HIGH);
    req->effort = sl_str ("low");
    cr_expect_eq (sl_effort_of (req, &x), SL_EFFORT_LOW, "the word said wins");
    cr_expect_eq (x.drop_count, 0);
    req->effort = sl_str ("ludicrous");
    cr_expect_eq (sl_effort_of (req, &x), SL_EFFORT_HIGH, "an unknown word: the budget");
    cr_expect_eq (x.drop_count, 1, "and the word's loss is said");
    sl_xlate_clear (&x);
    sl_req_destroy (&req);
}

Test (sl_effort, a_provider_gets_what_it_takes_and_the_loss_is_said)
{
    sl_xlate_t x = { 0 };
    cr_expect_eq (sl_effort_clamp (SL_EFFORT_MEDIUM, SL_EFFORT_NONE, SL_EFFORT_HIGH, &x), SL_EFFORT_MEDIUM);
    cr_expect_eq (x.drop_count, 0);
    cr_expect_eq (sl_effort_clamp (SL_EFFORT_UNSET, SL_EFFORT_LOW, SL_EFFORT_HIGH, &x), SL_EFFORT_UNSET);
    cr_expect_eq (x.drop_count, 0, "nothing asked, nothing lost");
    cr_expect_eq (sl_effort_clamp (SL_EFFORT_MAX, SL_EFFORT_NONE, SL_EFFORT_XHIGH, &x), SL_EFFORT_XHIGH);
    cr_expect_eq (sl_effort_clamp (SL_EFFORT_MINIMAL, SL_EFFORT_LOW, SL_EFFORT_MAX, &x), SL_EFFORT_LOW);
    cr_expect_eq (x.drop_count, 1, "one feature, named once");
    sl_xlate_clear (&x);
}

Test (sl_effort, a_dialect_that_names_levels_gets_a_word_or_nothing)
{
    sl_req_t *req = sl_req_new (0, NULL);
    sl_xlate_t x = { 0 };
    cr_expect_null (sl_effort_word (req, SL_EFFORT_NONE, SL_EFFORT_XHIGH, &x), "nothing asked");
    cr_expect_eq (x.drop_count, 0);
    req->effort = sl_str ("max");
    cr_expect_str_eq (sl_effort_word (req, SL_EFFORT_NONE, SL_EFFORT_XHIGH, &x), "xhigh", "clamped");
    cr_expect_eq (x.drop_count, 1);
    req->effort = SL_STR_NULL;
    req->thinking_adaptive = true;
    cr_expect_null (sl_effort_word (req, SL_EFFORT_NONE, SL_EFFORT_XHIGH, &x),
                    "thinking left to the model has no word");
    cr_expect_eq (x.drop_count, 2, "and is noted dropped");
    cr_expect_str_eq (x.dropped [1], "adaptive thinking (the provider's default effort)");
    sl_xlate_clear (&x);
    sl_req_destroy (&req);
}
