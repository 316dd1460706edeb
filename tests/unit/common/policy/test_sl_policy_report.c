/*  Unit tests: common/policy/sl_policy_report, and the policy's id. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/policy/sl_policy_report.h"

static const char *s_text = "rules:\n  - id: a\n    tool: run_shell\n    action: block\n";

Test (sl_policy_report, a_policy_is_named_by_its_text_and_reported_whole)
{
    char *error = NULL;
    sl_policy_t *p = sl_policy_parse (s_text, strlen (s_text), "policy.yaml", &error);
    cr_assert_not_null (p, "%s", error ? error : "");
    sl_policy_t *same = sl_policy_parse (s_text, strlen (s_text), "other.yaml", &error);
    cr_expect_str_eq (sl_policy_id (p), sl_policy_id (same), "the same text, the same id");
    cr_expect_eq (strlen (sl_policy_id (p)), SL_POLICY_ID_SIZE - 1);
    cr_expect (sl_str_eq (sl_policy_source (p), s_text));
    sl_policy_t *all = sl_policy_allow_all ();
    cr_expect_str_eq (sl_policy_id (all), SL_POLICY_ALLOW_ALL_ID);
    sl_policy_report_t report = { "judge-1", 0x0102030405060708ull, 1700000000000, 3, "policy.yaml:2:1: bad",
                                  "/etc/sluice/teams/a.yaml" };
    sl_msg_t m;
    sl_policy_report (p, &report, &m);
    cr_expect_eq (m.type, SL_MSG_POLICY);
    cr_expect (sl_str_eq (m.instance, "judge-1"));
    cr_expect (sl_str_eq (m.policy, sl_policy_id (p)));
    cr_expect (sl_str_eq (m.name, "policy.yaml"));
    cr_expect (sl_str_eq (m.text, s_text));
    cr_expect_eq (m.ts, 1700000000000);
    cr_expect_eq (m.count, 3);
    cr_expect (sl_str_eq (m.message, "policy.yaml:2:1: bad"));
    cr_expect (sl_str_eq (m.policy_name, "/etc/sluice/teams/a.yaml"));
    cr_expect_eq (m.sid [8], 8, "its stream id comes from the judge's incarnation");
    //  It travels the bus.
    sl_buf_t wire = { 0 };
    sl_msg_encode (&m, &wire);
    sl_codec_t *codec = sl_codec_new ();
    size_t offset = 0;
    sl_msg_t back;
    cr_assert_eq (sl_codec_decode (codec, wire.data, wire.len, &offset, &back), 0, "%s", sl_codec_error (codec));
    cr_expect (sl_str_eq (back.policy, sl_policy_id (p)));
    cr_expect_eq (back.count, 3);
    cr_expect (sl_str_eq (back.policy_name, "/etc/sluice/teams/a.yaml"), "which file streams name it by");
    sl_codec_destroy (&codec);
    sl_buf_free (&wire);
    sl_policy_unref (&p);
    sl_policy_unref (&same);
    sl_policy_unref (&all);
}
