/*  Unit tests: common/base/sl_alloc (allocation that never returns
    NULL: what each call gives back; running out of memory aborts, which
    no test can do without the machine running out). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

Test (sl_alloc, calloc_zeroes_and_realloc_keeps_what_was_there)
{
    unsigned char *p = sl_xcalloc (64, 1);
    for (int i = 0; i < 64; i++)
        cr_expect_eq (p [i], 0);
    memset (p, 7, 64);
    p = sl_xrealloc (p, 4096);
    for (int i = 0; i < 64; i++)
        cr_expect_eq (p [i], 7, "byte %d moved with it", i);
    free (p);
    p = sl_xmalloc (0);
    cr_expect_not_null (p, "zero bytes is still an allocation, never NULL");
    free (p);
    p = sl_xrealloc (NULL, 16);
    cr_expect_not_null (p, "realloc of NULL allocates");
    free (p);
}

Test (sl_alloc, copies_are_their_own_memory)
{
    char text [] = "sluice";
    char *copy = sl_xstrdup (text);
    text [0] = 'S';
    cr_expect_str_eq (copy, "sluice");
    free (copy);
    copy = sl_xstrndup ("abcdef", 3);
    cr_expect_str_eq (copy, "abc", "n bytes, terminated");
    free (copy);
    const char slice [] = { 'x', 'y', 'z', 'w' };    //  no NUL: a slice of a buffer
    copy = sl_xstrndup (slice + 1, 2);
    cr_expect_str_eq (copy, "yz");
    free (copy);
    unsigned char bytes [4] = { 0, 1, 0, 2 };
    unsigned char *dup = sl_xmemdup (bytes, sizeof bytes);
    cr_expect_eq (memcmp (dup, bytes, sizeof bytes), 0, "NUL bytes copied too");
    free (dup);
    char *msg = sl_xasprintf ("%s has %d", "line", 42);
    cr_expect_str_eq (msg, "line has 42");
    free (msg);
    char long_arg [3000];
    memset (long_arg, 'x', sizeof long_arg - 1);
    long_arg [sizeof long_arg - 1] = 0;
    msg = sl_xasprintf ("[%s]", long_arg);
    cr_expect_eq (strlen (msg), sizeof long_arg + 1, "a message longer than any first guess");
    free (msg);
}
