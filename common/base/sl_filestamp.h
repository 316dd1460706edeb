/*  sl_filestamp.h - has a file changed since it was read?

    Files sluice reloads (a policy, a keys file) are replaced by editors
    and deploy tools rather than written in place: a change is a new
    inode, size or modification time. A stamp is taken when the file is
    read (whether it loaded or not, so that polling waits for the next
    change instead of reporting the same error again).
*/
#ifndef SL_FILESTAMP_H
#define SL_FILESTAMP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    dev_t dev;
    ino_t ino;
    off_t size;
    int64_t mtime_ns;
} sl_filestamp_t;

//  The stamp of path now (all zero when it cannot be read).
void sl_filestamp_take (const char *path, sl_filestamp_t *out);
//  True when path exists and differs from the stamp (a file being
//  replaced, absent for a moment, is not a change yet).
bool sl_filestamp_changed (const char *path, const sl_filestamp_t *stamp);

#endif
