/*  Unit tests: services/gateway/sl_alerthook - the body an alert posts. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "services/gateway/sl_alerthook.h"

//  2028-02-28 23:59:30 UTC.
#define T_FEB28 1835395170

static json_t *
s_body (sl_limits_plan_t *plan, int counter, int at, int64_t used, int64_t limit)
{
    sl_limits_alert_t alert = { counter, at, used, limit };
    sl_buf_t out = { 0 };
    sl_alerthook_body (plan, &alert, &out);
    json_t *o = json_loadb (out.data, out.len, 0, NULL);
    cr_assert_not_null (o, "JSON: %s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    return o;
}

Test (sl_alerthook, an_alert_names_team_key_limit_threshold_use_and_period)
{
    sl_limits_spec_t key = { .tokens_per_day = 1000 };
    sl_limits_spec_t team = { .budget_usd = 2.5 };
    sl_limits_subject_t subjects [] = { { "key:alice-laptop", &key }, { "team:pay\"ments", &team } };
    sl_limits_plan_t plan;
    sl_limits_plan (&plan, subjects, 2, T_FEB28, "ab");
    snprintf (plan.team, sizeof plan.team, "pay\"ments");
    snprintf (plan.key_id, sizeof plan.key_id, "alice-laptop");
    cr_assert_eq (plan.count, 2);
    json_t *o = s_body (&plan, 0, 80, 812, 1000);
    cr_expect_str_eq (json_string_value (json_object_get (o, "type")), "limits_alert");
    cr_expect_str_eq (json_string_value (json_object_get (o, "team")), "pay\"ments", "escaped");
    cr_expect_str_eq (json_string_value (json_object_get (o, "key")), "alice-laptop");
    cr_expect (json_is_null (json_object_get (o, "user")), "no user: null");
    cr_expect_str_eq (json_string_value (json_object_get (o, "subject")), "key:alice-laptop");
    cr_expect_str_eq (json_string_value (json_object_get (o, "limit")), "tokens_per_day");
    cr_expect_eq (json_integer_value (json_object_get (o, "threshold")), 80);
    cr_expect_eq (json_integer_value (json_object_get (o, "used")), 812);
    cr_expect_eq (json_integer_value (json_object_get (o, "max")), 1000);
    cr_expect_str_eq (json_string_value (json_object_get (o, "period")), "day");
    cr_expect_str_eq (json_string_value (json_object_get (o, "window")), "20280228");
    json_decref (o);
    o = s_body (&plan, 1, 100, 2600000, 2500000);
    cr_expect_str_eq (json_string_value (json_object_get (o, "subject")), "team:pay\"ments");
    cr_expect_str_eq (json_string_value (json_object_get (o, "limit")), "budget_usd");
    cr_expect_float_eq (json_real_value (json_object_get (o, "used")), 2.6, 1e-9, "dollars, not micro-dollars");
    cr_expect_float_eq (json_real_value (json_object_get (o, "max")), 2.5, 1e-9);
    cr_expect_str_eq (json_string_value (json_object_get (o, "period")), "month");
    cr_expect_str_eq (json_string_value (json_object_get (o, "window")), "202802");
    json_decref (o);
}
