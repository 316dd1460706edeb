/*  Unit tests: common/policy/sl_policy_regex (\xHH in a policy's regular
    expressions is the byte HH: what YAML cannot hold and POSIX regexes
    have no escape for). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/policy/sl_policy_impl.h"

static void
s_expect (const char *pattern, const char *bytes)
{
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_policy_regex_bytes (pattern, &out), 0, "%s", pattern);
    cr_expect_eq (out.len, strlen (bytes), "%s", pattern);
    cr_expect_eq (memcmp (sl_buf_cstr (&out), bytes, out.len), 0, "%s", pattern);
    sl_buf_free (&out);
}

Test (sl_policy_regex, a_byte_escape_is_the_byte_and_nothing_else_changes)
{
    s_expect ("\\xF3\\xa0[\\x80-\\x81]", "\xF3\xA0[\x80-\x81]");
    s_expect ("ls -la", "ls -la");
    s_expect ("a\\.b\\\\x41", "a\\.b\\\\x41");          //  \\x41 is a backslash, then x41
    s_expect ("\\xZZ\\x4", "\\xZZ\\x4");                //  not two hex digits: left as written
    s_expect ("end\\", "end\\");
    sl_buf_t out = { 0 };
    cr_expect_eq (sl_policy_regex_bytes ("a\\x00b", &out), -1, "a regex is a C string: no NUL");
    sl_buf_free (&out);
}
