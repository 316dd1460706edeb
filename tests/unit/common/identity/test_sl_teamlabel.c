/*  Unit tests: common/identity/sl_teamlabel - a team as a metric label:
    made safe, "default" without a team, bounded in number ("other"
    past the bound, while the labels already in use stay). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/identity/sl_teamlabel.h"

Test (sl_teamlabel, a_team_is_made_safe_and_bounded)
{
    sl_teamlabels_t *labels = sl_teamlabels_new (3);
    char out [SL_TEAMLABEL_TEXT];
    sl_teamlabels_get (labels, NULL, 0, out, sizeof out);
    cr_expect_str_eq (out, SL_TEAMLABEL_DEFAULT);
    sl_teamlabels_get (labels, "", 0, out, sizeof out);
    cr_expect_str_eq (out, SL_TEAMLABEL_DEFAULT);
    const char *evil = "pay\"ments\n{x=\"y\"}";
    sl_teamlabels_get (labels, evil, strlen (evil), out, sizeof out);
    cr_expect_str_eq (out, "pay_ments__x__y__", "nothing that could end a label or a line");
    sl_teamlabels_get (labels, "search-2.eu_west", 16, out, sizeof out);
    cr_expect_str_eq (out, "search-2.eu_west");
    sl_teamlabels_get (labels, "ops", 3, out, sizeof out);
    cr_expect_str_eq (out, "ops");
    sl_teamlabels_get (labels, "late", 4, out, sizeof out);
    cr_expect_str_eq (out, SL_TEAMLABEL_OTHER, "a fourth team past a bound of three");
    sl_teamlabels_get (labels, "ops", 3, out, sizeof out);
    cr_expect_str_eq (out, "ops", "a label in use stays");
    sl_teamlabels_get (labels, "payments-and-a-long-name", 8, out, sizeof out);
    cr_expect_str_eq (out, SL_TEAMLABEL_OTHER, "only len bytes are read: 'payments' is new");
    sl_teamlabels_destroy (&labels);
    cr_expect_null (labels);
}

Test (sl_teamlabel, a_users_name_is_made_safe_unbounded)
{
    char out [8];
    sl_label_safe ("dana\x1b[2J", 8, out, sizeof out);
    cr_expect_str_eq (out, "dana__2", "cut to the room there is, the escape gone");
    sl_label_safe (NULL, 0, out, sizeof out);
    cr_expect_str_eq (out, "");
}
