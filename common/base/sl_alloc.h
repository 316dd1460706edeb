/*  sl_alloc.h - allocation that never returns NULL.

    sluice treats running out of memory as fatal, like Redis: the process logs
    one line and aborts, and the supervisor (docker, make run) restarts it.
    Handling NULL at every call site would add branches that are never tested;
    the bounds that matter (bytes per stream, buffered output per client) are
    enforced explicitly where data enters, so an allocation failure means the
    machine itself is out of memory.
*/
#ifndef SL_ALLOC_H
#define SL_ALLOC_H

#include <stddef.h>

void *sl_xmalloc (size_t size);
void *sl_xcalloc (size_t count, size_t size);
void *sl_xrealloc (void *ptr, size_t size);
char *sl_xstrdup (const char *s);
char *sl_xstrndup (const char *s, size_t n);
void *sl_xmemdup (const void *p, size_t n);
//  A new string formatted as printf does (an error message to hand back).
char *sl_xasprintf (const char *format, ...) __attribute__ ((format (printf, 1, 2)));

#endif
