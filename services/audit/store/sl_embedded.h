/*  sl_embedded.h - files built into sluice-audit.

    The console's pages, styles and scripts (console/web/) and the store's
    migrations (store/migrations/) are compiled into the program by services/audit/embed/embed.c
    (the Makefile runs it), so sluice-audit needs nothing installed beside
    it and the console works without a network.
*/
#ifndef SL_EMBEDDED_H
#define SL_EMBEDDED_H

#include <stddef.h>

typedef struct {
    const char *name;                   //  path under services/audit/, e.g. "console/web/app.js"
    const unsigned char *data;          //  the bytes, followed by a NUL
    size_t size;                        //  without the NUL
} sl_embedded_t;

//  Every file, in the order the Makefile named them; ends with a NULL name.
extern const sl_embedded_t sl_embedded_files [];

//  The file of this name, or NULL.
const sl_embedded_t *sl_embedded_find (const char *name);

#endif
