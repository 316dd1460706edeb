/*  sl_filestamp.c - has a file changed since it was read (see sl_filestamp.h). */
#include "common/base/sl_filestamp.h"

#include <string.h>
#include <sys/stat.h>

static void
s_from_stat (const struct stat *st, sl_filestamp_t *out)
{
    out->dev = st->st_dev;
    out->ino = st->st_ino;
    out->size = st->st_size;
    out->mtime_ns = (int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

void
sl_filestamp_take (const char *path, sl_filestamp_t *out)
{
    struct stat st;
    memset (out, 0, sizeof *out);
    if (path && stat (path, &st) == 0)
        s_from_stat (&st, out);
}

bool
sl_filestamp_changed (const char *path, const sl_filestamp_t *stamp)
{
    struct stat st;
    if (!path || stat (path, &st) != 0)
        return false;
    sl_filestamp_t now;
    s_from_stat (&st, &now);
    return now.dev != stamp->dev || now.ino != stamp->ino || now.size != stamp->size
        || now.mtime_ns != stamp->mtime_ns;
}
