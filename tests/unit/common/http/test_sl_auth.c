/*  Unit tests: common/http/sl_auth (sources of credentials: a fixed
    bearer token, a source that fails, what a header line may hold). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/http/sl_auth.h"

static const sl_auth_request_t s_req = { .method = "POST", .url = "https://h/x" };

Test (sl_auth, a_bearer_token_is_one_authorization_line)
{
    sl_auth_t *a = sl_auth_bearer_new ("tok-1", NULL);
    sl_buf_t lines = { 0 }, why = { 0 };
    size_t count = 0;
    cr_assert_eq (sl_auth_authorize (a, &s_req, &lines, &count, &why), SL_AUTH_READY);
    cr_expect_eq (count, 1);
    cr_expect_str_eq (lines.data, "Authorization: Bearer tok-1");
    cr_expect_eq (lines.len, strlen ("Authorization: Bearer tok-1") + 1, "NUL-terminated");
    cr_expect_eq (why.len, 0);
    //  Again: the same line after the first (a second attempt).
    cr_assert_eq (sl_auth_authorize (a, &s_req, &lines, &count, &why), SL_AUTH_READY);
    cr_expect_eq (count, 2);
    sl_auth_destroy (&a);
    cr_expect_null (a);
    sl_buf_free (&lines);
    sl_buf_free (&why);
}

Test (sl_auth, an_empty_token_fails_with_what_to_set)
{
    const char *tokens [] = { NULL, "" };
    for (size_t i = 0; i < 2; i++) {
        sl_auth_t *a = sl_auth_bearer_new (tokens [i], "the variable AZ_TOKEN (token_env) holds no token");
        sl_buf_t lines = { 0 }, why = { 0 };
        size_t count = 0;
        cr_expect_eq (sl_auth_authorize (a, &s_req, &lines, &count, &why), SL_AUTH_FAILED);
        cr_expect_eq (count, 0);
        cr_expect_eq (lines.len, 0);
        cr_expect_str_eq (sl_buf_cstr (&why), "the variable AZ_TOKEN (token_env) holds no token");
        sl_auth_destroy (&a);
        sl_buf_free (&lines);
        sl_buf_free (&why);
    }
}

Test (sl_auth, a_token_with_a_line_break_sends_nothing)
{
    //  A token that would add a header of its own is refused whole.
    sl_auth_t *a = sl_auth_bearer_new ("s3cr3t\r\nX-Admin: yes", NULL);
    sl_buf_t lines = { 0 }, why = { 0 };
    size_t count = 0;
    cr_expect_eq (sl_auth_authorize (a, &s_req, &lines, &count, &why), SL_AUTH_FAILED);
    cr_expect_eq (lines.len, 0);
    cr_expect_null (strstr (sl_buf_cstr (&why), "s3cr3t"), "the secret is never said");
    sl_auth_destroy (&a);
    sl_buf_free (&lines);
    sl_buf_free (&why);
}

Test (sl_auth, a_failing_source_says_why)
{
    sl_auth_t *a = sl_auth_failing_new ("no Google credentials");
    sl_buf_t lines = { 0 }, why = { 0 };
    size_t count = 0;
    cr_expect_eq (sl_auth_authorize (a, &s_req, &lines, &count, &why), SL_AUTH_FAILED);
    cr_expect_str_eq (sl_buf_cstr (&why), "no Google credentials");
    sl_auth_destroy (&a);
    sl_auth_destroy (&a);               //  twice: nothing
    sl_buf_free (&lines);
    sl_buf_free (&why);
}

Test (sl_auth, header_lines_fit_to_send)
{
    cr_expect (sl_auth_line_ok (SL_STR_LIT ("Authorization: Bearer x")));
    cr_expect (sl_auth_line_ok (SL_STR_LIT ("X-Amz-Date: 20260101T000000Z")));
    cr_expect_not (sl_auth_line_ok (SL_STR_LIT ("no colon")));
    cr_expect_not (sl_auth_line_ok (SL_STR_LIT (": empty name")));
    cr_expect_not (sl_auth_line_ok (SL_STR_LIT ("Bad Name: x")));
    cr_expect_not (sl_auth_line_ok (SL_STR_LIT ("A: x\r\nB: y")));
    cr_expect_not (sl_auth_line_ok (sl_str_n ("A: x\0y", 6)));
    cr_expect_not (sl_auth_line_ok (SL_STR_NULL));
}
