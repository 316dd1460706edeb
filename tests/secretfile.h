/*  secretfile.h - a Kubernetes Secret's data entry (base64) written out as
    the file its volume mounts, for the tests of sluice-keygen --kubernetes
    (tests/unit/services/keygen) and of the manifests (test_kubernetes.c).
*/
#ifndef SECRETFILE_H
#define SECRETFILE_H

#include <criterion/criterion.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define SECRETFILE_MAX 8192             //  a key file is a few hundred bytes

//  Decode b64 into dir/file, mode 0400 as a mounted Secret's files read.
static inline void
secretfile_write (const char *dir, const char *file, const char *b64)
{
    unsigned char bytes [SECRETFILE_MAX];
    size_t size = 0;
    cr_assert_eq (sodium_base642bin (bytes, sizeof bytes, b64, strlen (b64), NULL, &size, NULL,
                                     sodium_base64_VARIANT_ORIGINAL), 0, "%s is base64", file);
    char path [512];
    snprintf (path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen (path, "wb");
    cr_assert_not_null (f, "%s", path);
    cr_assert_eq (fwrite (bytes, 1, size, f), size);
    fclose (f);
    chmod (path, 0400);
}

#endif
