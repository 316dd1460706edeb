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

Test (sl_alerthook, an_alert_is_named_by_its_crossing)
{
    sl_limits_spec_t key = { .tokens_per_day = 1000 };
    sl_limits_subject_t subjects [] = { { "key:alice-laptop", &key } };
    sl_limits_plan_t plan;
    sl_limits_plan (&plan, subjects, 1, T_FEB28, "ab");
    json_t *a = s_body (&plan, 0, 80, 812, 1000);
    char want [SL_LIMITS_ALERT_ID_HEX + 1];
    sl_limits_alert_id ("key:alice-laptop", "tokens_per_day", 80, "20280228", want);
    cr_expect_str_eq (json_string_value (json_object_get (a, "id")), want);
    cr_expect_eq (strlen (want), 32);
    cr_expect_eq (json_integer_value (json_object_get (a, "at")), T_FEB28 * 1000LL, "when, in ms");
    //  Another stream, another gateway, the same crossing: the same id.
    sl_limits_plan (&plan, subjects, 1, T_FEB28 + 20, "cd");
    json_t *b = s_body (&plan, 0, 80, 990, 1000);
    cr_expect_str_eq (json_string_value (json_object_get (b, "id")), want);
    //  Another threshold, or the next day: another.
    json_t *c = s_body (&plan, 0, 100, 1000, 1000);
    cr_expect_str_neq (json_string_value (json_object_get (c, "id")), want);
    sl_limits_plan (&plan, subjects, 1, T_FEB28 + 60, "ef");
    json_t *d = s_body (&plan, 0, 80, 812, 1000);
    cr_expect_str_neq (json_string_value (json_object_get (d, "id")), want);
    json_decref (a);
    json_decref (b);
    json_decref (c);
    json_decref (d);
}

Test (sl_alerthook, the_audits_endpoint_is_beside_the_keys_url)
{
    static const struct {
        const char *keys_url, *want;    //  want NULL: refused
    } cases [] = {
        { "http://127.0.0.1:9090/api/keys/served", "http://127.0.0.1:9090/api/alerts" },
        { "https://audit.example:8443/api/keys/served?x=1", "https://audit.example:8443/api/alerts" },
        { "https://proxy.example/audit/api/keys/served", "https://proxy.example/audit/api/alerts" },
        { "http://audit:9090/keys", "http://audit:9090/api/alerts" },
        { "http://audit:9090", "http://audit:9090/api/alerts" },
        { "ftp://audit/api/keys/served", NULL },
        { "http:///api/keys/served", NULL },
        { "", NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char out [SL_ALERTHOOK_URL_MAX];
        int rc = sl_alerthook_audit_url (cases [i].keys_url, out);
        if (cases [i].want) {
            cr_expect_eq (rc, 0, "%s", cases [i].keys_url);
            cr_expect_str_eq (out, cases [i].want, "%s", cases [i].keys_url);
        }
        else
            cr_expect_eq (rc, -1, "%s: %s", cases [i].keys_url, out);
    }
}
