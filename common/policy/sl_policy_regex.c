/*  sl_policy_regex.c - byte escapes in a policy's regular expressions
    (see sl_policy_impl.h).

    Rules match text as UTF-8 bytes with POSIX extended regexes, which
    have no escape for a byte, and YAML cannot hold a byte that is not
    part of a whole UTF-8 character. A pattern for characters outside
    ASCII by their encoding (every tag character U+E0000-E007F is
    F3 A0 80-81 80-BF) writes \xHH for the byte HH; everything else of
    the pattern is left as it is, a backslash escape included.
*/
#include "common/policy/sl_policy_impl.h"

#include <ctype.h>

static int
s_hex (char c)
{
    return isdigit ((unsigned char) c) ? c - '0' : tolower ((unsigned char) c) - 'a' + 10;
}

int
sl_policy_regex_bytes (const char *pattern, sl_buf_t *out)
{
    for (const char *p = pattern; *p; p++) {
        if (p [0] == '\\' && p [1] == 'x' && isxdigit ((unsigned char) p [2]) && isxdigit ((unsigned char) p [3])) {
            int byte = s_hex (p [2]) * 16 + s_hex (p [3]);
            if (byte == 0)
                return -1;              //  a regex is a C string
            sl_buf_putc (out, (char) byte);
            p += 3;
        }
        else
        if (p [0] == '\\' && p [1]) {
            sl_buf_append (out, p, 2);  //  another escape, kept whole (\\x stays \\x)
            p++;
        }
        else
            sl_buf_putc (out, *p);
    }
    sl_buf_cstr (out);
    return 0;
}
