/*  Unit tests: common/approval/sl_approvals_api - the paths of the
    approvals APIs and the decisions they take: a good body is read whole,
    a bad one is refused naming its field. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/approval/sl_approvals_api.h"

#define S_DIGEST "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

Test (sl_approvals_api, paths_and_ids)
{
    char id [SL_APPROVALS_ID_HEX + 1];
    cr_expect_eq (sl_approvals_path ("/v1/approvals", "/v1/approvals", id), SL_APPROVALS_PATH_LIST);
    cr_expect_eq (sl_approvals_path ("/v1/approvals/", "/v1/approvals", id), SL_APPROVALS_PATH_LIST);
    cr_expect_eq (sl_approvals_path ("/v1/approvalsx", "/v1/approvals", id), SL_APPROVALS_PATH_NONE);
    cr_expect_eq (sl_approvals_path ("/v1/models", "/v1/approvals", id), SL_APPROVALS_PATH_NONE);
    cr_expect_eq (sl_approvals_path ("/v1/approvals/0123456789ABCDEF0123456789abcdef", "/v1/approvals", id),
                  SL_APPROVALS_PATH_ONE);
    cr_expect_str_eq (id, "0123456789abcdef0123456789abcdef", "hex in lower case");
    cr_expect_eq (sl_approvals_path ("/v1/approvals/xyz", "/v1/approvals", id), SL_APPROVALS_PATH_ONE);
    cr_expect_str_eq (id, "", "not an id: no judge holds it");
    cr_expect_eq (sl_approvals_path ("/v1/approvals/0123456789abcdef0123456789abcdef0", "/v1/approvals", id),
                  SL_APPROVALS_PATH_ONE);
    cr_expect_str_eq (id, "", "33 digits");
    cr_expect_eq (sl_approvals_path ("/api/approvals/0123456789abcdef0123456789abcdef", "/api/approvals", id),
                  SL_APPROVALS_PATH_ONE);
    cr_expect_str_eq (id, "0123456789abcdef0123456789abcdef");
}

Test (sl_approvals_api, a_whole_decision_is_read)
{
    const char *body = "{\"decision\": \"approve\", \"comment\": \"fine, once\", \"remember_minutes\": 15, "
                       "\"digest\": \"" S_DIGEST "\", \"policy\": \"a1b2c3d4e5f6\"}";
    sl_approvals_parsed_t p;
    char why [SL_APPROVALS_WHY_MAX] = "";
    cr_assert_eq (sl_approvals_parse (sl_str (body), &p, why), 0, "%s", why);
    cr_expect (p.decision.approve);
    cr_expect_str_eq (p.decision.comment, "fine, once");
    cr_expect_eq (p.decision.remember_minutes, 15);
    cr_expect_str_eq (p.decision.digest, S_DIGEST);
    cr_expect_str_eq (p.decision.policy, "a1b2c3d4e5f6");
    sl_approvals_parsed_clear (&p);
    cr_assert_eq (sl_approvals_parse (sl_str ("{\"decision\":\"deny\"}"), &p, why), 0, "%s", why);
    cr_expect_not (p.decision.approve);
    cr_expect_null (p.decision.comment);
    cr_expect_null (p.decision.digest);
    cr_expect_eq (p.decision.remember_minutes, 0);
    sl_approvals_parsed_clear (&p);
    sl_approvals_parsed_clear (&p);     //  twice: nothing
}

Test (sl_approvals_api, a_bad_decision_is_refused_naming_its_field)
{
    static const struct { const char *body; const char *field; } cases [] = {
        { "", "body:" },
        { "not json", "body:" },
        { "[\"approve\"]", "body:" },
        { "{}", "decision:" },
        { "{\"decision\": \"maybe\"}", "decision:" },
        { "{\"decision\": true}", "decision:" },
        { "{\"decision\": \"approve\", \"comment\": 7}", "comment:" },
        { "{\"decision\": \"approve\", \"remember_minutes\": \"10\"}", "remember_minutes:" },
        { "{\"decision\": \"approve\", \"remember_minutes\": -1}", "remember_minutes:" },
        { "{\"decision\": \"approve\", \"remember_minutes\": 2.5}", "remember_minutes:" },
        { "{\"decision\": \"approve\", \"remember_minutes\": 999999}", "remember_minutes:" },
        { "{\"decision\": \"deny\", \"remember_minutes\": 10}", "remember_minutes:" },
        { "{\"decision\": \"approve\", \"digest\": \"abc\"}", "digest:" },
        { "{\"decision\": \"approve\", \"digest\": \"" S_DIGEST "00\"}", "digest:" },
        { "{\"decision\": \"approve\", \"policy\": []}", "policy:" },
        { "{\"decision\": \"approve\", \"remember_minute\": 10}", "remember_minute:" },
        { "{\"decision\": \"approve\", \"decision\": \"deny\"}", "body:" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_approvals_parsed_t p;
        char why [SL_APPROVALS_WHY_MAX] = "";
        cr_expect_eq (sl_approvals_parse (sl_str (cases [i].body), &p, why), -1, "case %zu refused", i);
        cr_expect_eq (strncmp (why, cases [i].field, strlen (cases [i].field)), 0, "case %zu: %s", i, why);
        cr_expect_null (p.comment, "case %zu holds nothing", i);
    }
    //  A comment at the bound passes; one byte more does not.
    char body [SL_APPROVALS_COMMENT_MAX + 64];
    int n = snprintf (body, sizeof body, "{\"decision\":\"deny\",\"comment\":\"%*s\"}", SL_APPROVALS_COMMENT_MAX, "");
    sl_approvals_parsed_t p;
    char why [SL_APPROVALS_WHY_MAX];
    cr_expect_eq (sl_approvals_parse ((sl_str_t) { body, (size_t) n }, &p, why), 0, "%s", why);
    sl_approvals_parsed_clear (&p);
    snprintf (body, sizeof body, "{\"decision\":\"deny\",\"comment\":\"%*s\"}", SL_APPROVALS_COMMENT_MAX + 1, "");
    cr_expect_eq (sl_approvals_parse (sl_str (body), &p, why), -1);
    cr_expect_eq (strncmp (why, "comment:", 8), 0, "%s", why);
}

Test (sl_approvals_api, error_types)
{
    cr_expect_str_eq (sl_approvals_error_type (400), "invalid_request_error");
    cr_expect_str_eq (sl_approvals_error_type (401), "authentication_error");
    cr_expect_str_eq (sl_approvals_error_type (403), "permission_error");
    cr_expect_str_eq (sl_approvals_error_type (404), "not_found_error");
    cr_expect_str_eq (sl_approvals_error_type (503), "unavailable_error");
}
