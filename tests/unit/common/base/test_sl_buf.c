/*  Unit tests: common/base/sl_buf. */
#include <criterion/criterion.h>

#include "common/base/sl_buf.h"

Test (sl_buf, grows_and_formats)
{
    sl_buf_t b = { 0 };
    for (int i = 0; i < 1000; i++)
        sl_buf_putc (&b, 'x');
    cr_expect_eq (b.len, 1000);
    sl_buf_reset (&b);
    sl_buf_printf (&b, "%s-%d", "n", 7);
    sl_buf_put_i64 (&b, -9223372036854775807LL - 1);
    sl_buf_putc (&b, ' ');
    sl_buf_put_u64 (&b, 18446744073709551615ULL);
    cr_expect_str_eq (sl_buf_cstr (&b), "n-7-9223372036854775808 18446744073709551615");
    sl_buf_free (&b);
    cr_expect_eq (b.len, 0);
    cr_expect_null (b.data);
}

Test (sl_buf, printf_longer_than_first_guess)
{
    sl_buf_t b = { 0 };
    char big [500];
    memset (big, 'a', sizeof big - 1);
    big [sizeof big - 1] = 0;
    sl_buf_printf (&b, "<%s>", big);
    cr_expect_eq (b.len, sizeof big + 1);
    sl_buf_free (&b);
}

Test (sl_buf, consumes_a_prefix)
{
    sl_buf_t b = { 0 };
    sl_buf_puts (&b, "hello world");
    sl_buf_consume (&b, 6);
    cr_expect_str_eq (sl_buf_cstr (&b), "world");
    sl_buf_consume (&b, 100);
    cr_expect_eq (b.len, 0);
    sl_buf_free (&b);
}

//  A long-lived log grows by a quarter (at least the step), keeps every
//  byte, and never holds more than a step or a quarter beyond its content.
Test (sl_buf, grows_gently_and_keeps_every_byte)
{
    sl_buf_t b = { 0 };
    char piece [77];
    for (int i = 0; i < 2000; i++) {
        memset (piece, 'a' + i % 26, sizeof piece);
        memcpy (sl_buf_reserve_gently (&b, sizeof piece, 1024), piece, sizeof piece);
        b.len += sizeof piece;
        size_t slack = b.len / 4 > 1024 ? b.len / 4 : 1024;
        cr_assert_leq (b.cap, b.len + slack + 1, "after %d pieces: %zu bytes held for %zu", i + 1, b.cap, b.len);
    }
    cr_expect_eq (b.len, 2000 * sizeof piece);
    for (int i = 0; i < 2000; i++)
        cr_assert_eq (b.data [i * sizeof piece + 76], 'a' + i % 26, "piece %d", i);
    //  The first allocation is the step, not 64 bytes doubled.
    sl_buf_t c = { 0 };
    sl_buf_reserve_gently (&c, 10, 1024);
    cr_expect_eq (c.cap, 1024);
    sl_buf_free (&c);
    sl_buf_free (&b);
}
