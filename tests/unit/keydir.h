/*  keydir.h - temporary key directories for the unit tests of the bus's
    keys (sl_keys, sl_zap, sl_bus, sl_keygen, sl_router). */
#ifndef KEYDIR_H
#define KEYDIR_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/base/sl_buf.h"
#include "services/keygen/sl_keygen.h"

//  A fresh directory holding the default keys (made by sl_keygen_ensure).
static inline void
keydir_make (char *dir, size_t size)
{
    snprintf (dir, size, "/tmp/sluice-keys-XXXXXX");
    cr_assert_not_null (mkdtemp (dir));
    sl_buf_t report = { 0 };
    char *error = NULL;
    cr_assert_eq (sl_keygen_ensure (dir, &report, &error), 0, "%s", error ? error : "");
    sl_buf_free (&report);
}

//  Write text to dir/name.
static inline void
keydir_write (const char *dir, const char *name, const char *text)
{
    char path [512];
    snprintf (path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen (path, "w");
    cr_assert_not_null (f);
    fputs (text, f);
    fclose (f);
}

static inline void
keydir_remove (const char *dir)
{
    char cmd [600];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

#endif
