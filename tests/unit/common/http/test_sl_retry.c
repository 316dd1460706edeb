/*  Unit tests: common/http/sl_retry. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/http/sl_retry.h"

static long
s_after (const char *value, time_t now)
{
    return sl_retry_after (value, strlen (value), now);
}

Test (sl_retry, retry_after_in_seconds)
{
    cr_expect_eq (s_after ("1", 0), 1);
    cr_expect_eq (s_after (" 120\r\n", 0), 120, "spaces and the line end around it");
    cr_expect_eq (s_after ("0", 0), 0);
    cr_expect_eq (s_after ("999999999", 0), 999999999);
    cr_expect_eq (s_after ("1234567890", 0), -1, "ten digits: longer than any wait");
    cr_expect_eq (s_after ("", 0), -1);
    cr_expect_eq (s_after ("   ", 0), -1);
    cr_expect_eq (s_after ("-5", 0), -1);
    cr_expect_eq (s_after ("soon", 0), -1);
}

Test (sl_retry, retry_after_as_an_http_date)
{
    //  Wed, 21 Oct 2015 07:28:00 GMT is 1445412480.
    const char *date = "Wed, 21 Oct 2015 07:28:00 GMT";
    cr_expect_eq (s_after (date, 1445412480 - 30), 30, "30 s from now");
    cr_expect_eq (s_after (date, 1445412480 + 30), 0, "a date past: at once");
    char long_value [128];
    memset (long_value, '1', sizeof long_value - 1);
    long_value [sizeof long_value - 1] = 0;
    cr_expect_eq (s_after (long_value, 0), -1, "longer than any header value read");
}

Test (sl_retry, backoff_doubles_spreads_and_stops_at_the_bound)
{
    //  No spread: base, doubled per attempt, at most max.
    cr_expect_eq (sl_retry_backoff_ms (500, 20000, 0, -1, 0), 500);
    cr_expect_eq (sl_retry_backoff_ms (500, 20000, 1, -1, 0), 1000);
    cr_expect_eq (sl_retry_backoff_ms (500, 20000, 3, -1, 0), 4000);
    cr_expect_eq (sl_retry_backoff_ms (500, 20000, 10, -1, 0), 20000);
    //  The spread adds up to a quarter, never more, and stays under max.
    for (int spread = 0; spread < 256; spread++) {
        long wait = sl_retry_backoff_ms (1000, 20000, 0, -1, (unsigned char) spread);
        cr_assert (wait >= 1000 && wait < 1250, "spread %d: %ld", spread, wait);
    }
    cr_expect_eq (sl_retry_backoff_ms (1000, 1100, 0, -1, 63), 1100);
}

Test (sl_retry, backoff_honours_retry_after_within_the_bound)
{
    cr_expect_eq (sl_retry_backoff_ms (500, 20000, 2, 3, 200), 3000, "what the answer asked for");
    cr_expect_eq (sl_retry_backoff_ms (500, 20000, 0, 0, 0), 0);
    cr_expect_eq (sl_retry_backoff_ms (500, 20000, 0, 21, 0), -1, "longer than max: not waited for");
}
