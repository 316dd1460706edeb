/*  sl_alloc.c - allocation that aborts on failure (see sl_alloc.h). */
#include "common/base/sl_alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
s_out_of_memory (size_t size)
{
    //  No allocation here: write a fixed JSON line straight to stderr.
    fprintf (stderr, "{\"level\":\"fatal\",\"event\":\"out_of_memory\",\"bytes\":%zu}\n", size);
    abort ();
}

void *
sl_xmalloc (size_t size)
{
    void *p = malloc (size ? size : 1);
    if (!p)
        s_out_of_memory (size);
    return p;
}

void *
sl_xcalloc (size_t count, size_t size)
{
    void *p = calloc (count ? count : 1, size ? size : 1);
    if (!p)
        s_out_of_memory (count * size);
    return p;
}

void *
sl_xrealloc (void *ptr, size_t size)
{
    void *p = realloc (ptr, size ? size : 1);
    if (!p)
        s_out_of_memory (size);
    return p;
}

char *
sl_xstrdup (const char *s)
{
    return sl_xstrndup (s, strlen (s));
}

char *
sl_xstrndup (const char *s, size_t n)
{
    char *p = sl_xmalloc (n + 1);
    memcpy (p, s, n);
    p [n] = 0;
    return p;
}

void *
sl_xmemdup (const void *src, size_t n)
{
    void *p = sl_xmalloc (n);
    if (n)
        memcpy (p, src, n);
    return p;
}

char *
sl_xasprintf (const char *format, ...)
{
    va_list args;
    va_start (args, format);
    char *p = NULL;
    int len = vasprintf (&p, format, args);
    va_end (args);
    if (len < 0)
        s_out_of_memory (strlen (format));
    return p;
}
