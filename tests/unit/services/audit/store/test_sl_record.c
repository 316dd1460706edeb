/*  Unit tests: services/audit/store/sl_record (text as the store takes
    it, latencies as verdict rows keep them). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/base/sl_utf8.h"
#include "services/audit/store/sl_record.h"

static void
s_expect_clean (const char *in, size_t len, size_t max, const char *want, bool want_cut)
{
    sl_buf_t buf = { 0 };
    sl_str_t out;
    bool cut = !want_cut;
    sl_record_clean (&buf, sl_str_n (in, len), max, &out, &cut);
    cr_expect_eq (out.len, strlen (want), "%zu bytes of %zu at most %zu: %.*s", out.len, len, max, (int) out.len,
                  out.ptr);
    cr_expect (memcmp (out.ptr, want, out.len) == 0, "%.*s", (int) out.len, out.ptr);
    cr_expect_eq (cut, want_cut, "%s", want);
    cr_expect (sl_utf8_valid (out.ptr, out.len));
    sl_buf_free (&buf);
}

Test (sl_record, text_is_valid_utf8_without_nul_within_its_bound)
{
    //  Valid text is itself, not a copy.
    sl_buf_t buf = { 0 };
    sl_str_t in = SL_STR_LIT ("caf\xc3\xa9"), out;
    sl_record_clean (&buf, in, 100, &out, NULL);
    cr_expect_eq (out.ptr, in.ptr, "no copy of valid text");
    cr_expect_eq (out.len, in.len);
    //  Absent stays absent; empty stays empty.
    sl_record_clean (&buf, SL_STR_NULL, 100, &out, NULL);
    cr_expect_null (out.ptr);
    sl_record_clean (&buf, SL_STR_LIT (""), 100, &out, NULL);
    cr_expect_not_null (out.ptr);
    cr_expect_eq (out.len, 0);
    sl_buf_free (&buf);
    s_expect_clean ("abc", 3, 3, "abc", false);
    s_expect_clean ("abcd", 4, 3, "abc", true);
    //  Cut on a character boundary: é is two bytes, ✓ three.
    s_expect_clean ("ab\xc3\xa9", 4, 3, "ab", true);
    s_expect_clean ("\xe2\x9c\x93\xe2\x9c\x93", 6, 5, "\xe2\x9c\x93", true);
    s_expect_clean ("\xe2\x9c\x93", 3, 2, "", true);
    //  Bytes that are not UTF-8, and NUL: U+FFFD each.
    s_expect_clean ("a\xff" "b", 3, 100, "a\xef\xbf\xbd" "b", false);
    s_expect_clean ("a\0b", 3, 100, "a\xef\xbf\xbd" "b", false);
    //  Repaired, then cut: never inside the replacement character.
    s_expect_clean ("a\xff", 2, 3, "a", true);
    s_expect_clean ("a\xff", 2, 4, "a\xef\xbf\xbd", false);
}

Test (sl_record, a_latency_bucket_is_bounded_by_its_bound)
{
    cr_expect_eq (sl_record_latency_bucket (0), 0);
    cr_expect_eq (sl_record_latency_bucket (1), 0);
    cr_expect_eq (sl_record_latency_bucket (2), 4, "a quarter octave a bucket");
    cr_expect_eq (sl_record_latency_bucket (1024), 40);
    cr_expect_eq (sl_record_bucket_bound (40), 1024.0);
    int last = 0;
    for (int64_t us = 2; us < 100000000; us = us * 5 / 4 + 1) {
        int b = sl_record_latency_bucket (us);
        cr_expect_geq (b, last, "buckets grow with the latency: %lld", (long long) us);
        cr_expect_geq (sl_record_bucket_bound (b) * (1 + 1e-9), (double) us, "%lld in bucket %d", (long long) us, b);
        cr_expect_lt (sl_record_bucket_bound (b - 1), (double) us, "%lld not in the bucket before", (long long) us);
        last = b;
    }
}
