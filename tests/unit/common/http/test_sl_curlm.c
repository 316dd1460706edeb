/*  Unit tests: common/http/sl_curlm - reading one header line of curl's
    header callback: the header named (any case), its value without the
    blanks and the CR LF around it, truncated to the room given while its
    whole length is told; another header is not it. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/http/sl_curlm.h"

static int
s_read (const char *line, const char *name, char *out, size_t size)
{
    return sl_curlm_header (line, strlen (line), name, out, size);
}

Test (sl_curlm, header_value_trimmed_in_any_case)
{
    char out [64];
    cr_expect_eq (s_read ("Mcp-Session-Id:  abc123 \r\n", "mcp-session-id", out, sizeof out), 6);
    cr_expect_str_eq (out, "abc123");
    cr_expect_eq (s_read ("cache-control:max-age=60\r\n", "cache-control", out, sizeof out), 10);
    cr_expect_str_eq (out, "max-age=60");
    cr_expect_eq (s_read ("Cache-Control: \r\n", "cache-control", out, sizeof out), 0);
    cr_expect_str_eq (out, "");
}

Test (sl_curlm, another_header_is_not_it)
{
    char out [16] = "kept";
    cr_expect_eq (s_read ("Mcp-Session-Identity: x\r\n", "mcp-session-id", out, sizeof out), -1);
    cr_expect_eq (s_read ("Content-Type: text/plain\r\n", "mcp-session-id", out, sizeof out), -1);
    cr_expect_eq (s_read ("HTTP/1.1 200 OK\r\n", "mcp-session-id", out, sizeof out), -1);
    cr_expect_eq (s_read ("mcp-session-id", "mcp-session-id", out, sizeof out), -1, "no colon: no header");
    cr_expect_str_eq (out, "kept", "out untouched");
}

Test (sl_curlm, long_value_truncated_and_its_length_told)
{
    char out [8];
    cr_expect_eq (s_read ("Mcp-Session-Id: 0123456789abcdef\r\n", "mcp-session-id", out, sizeof out), 16);
    cr_expect_str_eq (out, "0123456", "size - 1 bytes and a NUL");
}
