/*  Unit tests: services/gateway/sl_keyid (a client key's id). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/identity/sl_keyid.h"

Test (sl_keyid, a_short_one_way_id_the_same_every_time)
{
    char a [SL_KEY_ID_SIZE], b [SL_KEY_ID_SIZE], c [SL_KEY_ID_SIZE];
    sl_key_id ("sk-live-1", 9, a);
    sl_key_id ("sk-live-1", 9, b);
    sl_key_id ("sk-live-2", 9, c);
    cr_expect_str_eq (a, b);
    cr_expect_str_neq (a, c);
    cr_expect_eq (strlen (a), SL_KEY_ID_SIZE - 1);
    //  SHA-1 ("abc") = a9993e36...: the first 12 hex digits, lower case.
    sl_key_id ("abc", 3, a);
    cr_expect_str_eq (a, "a9993e364706");
    cr_expect_null (strstr (a, "abc"));
}
