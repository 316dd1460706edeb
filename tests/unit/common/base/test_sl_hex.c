/*  Unit tests: bytes as hex digits and back (sl_hex). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/base/sl_hex.h"

Test (sl_hex, writes_lower_case_and_reads_it_back)
{
    const uint8_t bytes [] = { 0x00, 0x9f, 0xa0, 0xff };
    char text [9] = "";
    sl_hex_write (text, bytes, sizeof bytes);
    cr_expect_str_eq (text, "009fa0ff");
    uint8_t back [4] = { 0 };
    cr_assert_eq (sl_hex_read (text, sizeof back, back, true), 0);
    cr_expect_eq (memcmp (back, bytes, sizeof bytes), 0);
}

Test (sl_hex, upper_case_is_read_unless_the_format_forbids_it)
{
    uint8_t out [2];
    cr_expect_eq (sl_hex_read ("AbCd", 2, out, false), 0);
    cr_expect_eq (out [0], 0xab);
    cr_expect_eq (out [1], 0xcd);
    cr_expect_eq (sl_hex_read ("AbCd", 2, out, true), -1, "upper case refused when only lower case is legal");
}

Test (sl_hex, anything_but_a_digit_is_refused)
{
    uint8_t out [1];
    cr_expect_eq (sl_hex_read ("0g", 1, out, false), -1);
    cr_expect_eq (sl_hex_read ("-1", 1, out, false), -1);
    cr_expect_eq (sl_hex_digit ('f'), 15);
    cr_expect_eq (sl_hex_digit ('F'), 15);
    cr_expect_eq (sl_hex_digit ('9'), 9);
    cr_expect_eq (sl_hex_digit ('g'), -1);
    cr_expect_eq (sl_hex_digit (0), -1);
}
