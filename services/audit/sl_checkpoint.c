/*  sl_checkpoint.c - signed checkpoints of the audit's hash chain (see sl_checkpoint.h). */
#include "services/audit/sl_checkpoint.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void
sl_checkpoint_message (sl_buf_t *out, const sl_checkpoint_t *cp)
{
    sl_buf_printf (out, "sluice-audit checkpoint/1\npos=%lld\ncount=%lld\nhead=%s\nat=%lld\ncut=%d\nkey=%s\n",
                   (long long) cp->pos, (long long) cp->count, cp->head, (long long) cp->at, cp->cut ? 1 : 0,
                   cp->key_id);
}

int
sl_checkpoint_write (sl_store_t *store, const sl_signkey_t *key, sl_checkpoint_t *cp)
{
    cp->key_id [0] = cp->signature [0] = 0;
    if (key && key->has_secret) {
        snprintf (cp->key_id, sizeof cp->key_id, "%s", key->id);
        sl_buf_t msg = { 0 };
        sl_checkpoint_message (&msg, cp);
        sl_signkey_sign (key, msg.data, msg.len, cp->signature);
        sl_buf_free (&msg);
    }
    sl_val_t p [] = { sl_val_int (cp->pos), sl_val_int (cp->count), sl_val_text (cp->head), sl_val_int (cp->at),
                      sl_val_int (cp->cut ? 1 : 0), *cp->key_id ? sl_val_text (cp->key_id) : sl_val_null (),
                      *cp->signature ? sl_val_text (cp->signature) : sl_val_null () };
    //  A cut at the position of an earlier checkpoint makes that one the cut.
    return sl_store_exec (store, "INSERT INTO checkpoints (pos, count, head, at, cut, key_id, signature) "
                                 "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (pos) DO UPDATE SET "
                                 "count = excluded.count, head = excluded.head, at = excluded.at, "
                                 "cut = excluded.cut, key_id = excluded.key_id, signature = excluded.signature",
                          p, 7, NULL);
}

void
sl_checkpoint_json (const sl_checkpoint_t *cp, sl_buf_t *out)
{
    sl_buf_printf (out, "{\"pos\":%lld,\"count\":%lld,\"head\":\"%s\",\"at\":%lld,\"cut\":%s,",
                   (long long) cp->pos, (long long) cp->count, cp->head, (long long) cp->at,
                   cp->cut ? "true" : "false");
    if (*cp->signature)
        sl_buf_printf (out, "\"key_id\":\"%s\",\"signature\":\"%s\"}", cp->key_id, cp->signature);
    else
        sl_buf_puts (out, "\"key_id\":null,\"signature\":null}");
}

int
sl_checkpoint_append (const char *path, const sl_checkpoint_t *cp)
{
    sl_buf_t line = { 0 };
    sl_checkpoint_json (cp, &line);
    sl_buf_putc (&line, '\n');
    int fd = open (path, O_WRONLY | O_CREAT | O_APPEND, 0640);
    bool ok = fd >= 0 && write (fd, line.data, line.len) == (ssize_t) line.len && fsync (fd) == 0;
    if (fd >= 0)
        ok = close (fd) == 0 && ok;
    sl_buf_free (&line);
    return ok ? 0 : -1;
}

sl_checkpoint_check_t
sl_checkpoint_check (const sl_checkpoint_t *cp, const sl_signkey_t *key)
{
    if (!*cp->signature)
        return SL_CHECKPOINT_UNSIGNED;
    if (!key)
        return SL_CHECKPOINT_UNCHECKED;
    if (strcmp (cp->key_id, key->id) != 0)
        return SL_CHECKPOINT_OTHER_KEY;
    sl_buf_t msg = { 0 };
    sl_checkpoint_message (&msg, cp);
    bool good = sl_signkey_check (key, msg.data, msg.len, cp->signature);
    sl_buf_free (&msg);
    return good ? SL_CHECKPOINT_GOOD : SL_CHECKPOINT_BAD;
}

//  A text column; one too long for its place reads as "?" (never as a
//  shorter text that might match).
static void
s_copy (char *out, size_t size, sl_str_t s)
{
    if (s.len >= size)
        snprintf (out, size, "?");
    else
        snprintf (out, size, "%.*s", (int) s.len, s.ptr ? s.ptr : "");
}

void
sl_checkpoint_from_row (sl_checkpoint_t *cp, const sl_row_t *row)
{
    memset (cp, 0, sizeof *cp);
    cp->pos = sl_row_int (row, 0);
    cp->count = sl_row_int (row, 1);
    s_copy (cp->head, sizeof cp->head, sl_row_text (row, 2));
    cp->at = sl_row_int (row, 3);
    cp->cut = sl_row_int (row, 4) != 0;
    s_copy (cp->key_id, sizeof cp->key_id, sl_row_text (row, 5));
    s_copy (cp->signature, sizeof cp->signature, sl_row_text (row, 6));
}
