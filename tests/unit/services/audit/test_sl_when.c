/*  Unit tests: services/audit/sl_when (export times, retention durations). */
#include <criterion/criterion.h>

#include "services/audit/sl_when.h"

Test (sl_when, times_as_people_write_them)
{
    int64_t now = INT64_C (1800000000000), t;
    cr_expect_eq (sl_when_parse ("24h", now, &t), 0);
    cr_expect_eq (t, now - 24 * 3600 * 1000LL);
    cr_expect_eq (sl_when_parse ("-30m", now, &t), 0);
    cr_expect_eq (t, now - 30 * 60 * 1000LL);
    cr_expect_eq (sl_when_parse ("7d", now, &t), 0);
    cr_expect_eq (t, now - 7 * 24 * 3600 * 1000LL);
    cr_expect_eq (sl_when_parse ("2026-05-20T14:00:00Z", now, &t), 0);
    cr_expect_eq (t, INT64_C (1779285600000));
    cr_expect_eq (sl_when_parse ("2026-05-20", now, &t), 0);
    cr_expect_eq (t, INT64_C (1779235200000));
    cr_expect_eq (sl_when_parse ("1779285600", now, &t), 0);
    cr_expect_eq (t, INT64_C (1779285600000));
    const char *bad [] = { "", "soon", "2026-13-01", "2026-05-20T14:00:00", "24x", "12" };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        cr_expect_eq (sl_when_parse (bad [i], now, &t), -1, "%s", bad [i]);
}

Test (sl_when, durations)
{
    int64_t d;
    cr_expect_eq (sl_when_duration ("30d", &d), 0);
    cr_expect_eq (d, 30 * 24 * 3600 * 1000LL);
    cr_expect_eq (sl_when_duration ("500ms", &d), 0);
    cr_expect_eq (d, 500);
    cr_expect_eq (sl_when_duration ("0", &d), 0);
    cr_expect_eq (d, 0);
    cr_expect_eq (sl_when_duration ("5", &d), -1, "a unit is needed");
    cr_expect_eq (sl_when_duration ("-1h", &d), -1);
}
