/*  Unit tests: common/base/sl_ratelimit. */
#include <criterion/criterion.h>

#include "common/base/sl_ratelimit.h"

Test (sl_ratelimit, a_burst_per_window_then_the_count_of_what_was_held)
{
    sl_ratelimit_t rl = SL_RATELIMIT_INIT (3, 1000);
    uint32_t held = 99;
    for (int i = 0; i < 3; i++) {
        cr_expect (sl_ratelimit_allow (&rl, 100 + i, &held));
        cr_expect_eq (held, 0);
    }
    for (int i = 0; i < 10; i++)
        cr_expect_not (sl_ratelimit_allow (&rl, 200 + i, &held), "over the burst");
    cr_expect_not (sl_ratelimit_allow (&rl, 1099, &held), "still the same window");
    cr_expect (sl_ratelimit_allow (&rl, 1100, &held), "a new window");
    cr_expect_eq (held, 11, "what was held back is told");
    cr_expect (sl_ratelimit_allow (&rl, 1101, &held));
    cr_expect_eq (held, 0, "and told once");
}

Test (sl_ratelimit, time_that_starts_at_zero_or_below)
{
    sl_ratelimit_t rl = SL_RATELIMIT_INIT (1, 10);
    uint32_t held;
    cr_expect (sl_ratelimit_allow (&rl, 0, &held));
    cr_expect_not (sl_ratelimit_allow (&rl, 5, &held));
    cr_expect (sl_ratelimit_allow (&rl, 10, &held));
    cr_expect_eq (held, 1);
}
