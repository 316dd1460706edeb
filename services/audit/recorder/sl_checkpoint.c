/*  sl_checkpoint.c - signed checkpoints of the audit's hash chain (see sl_checkpoint.h). */
#include "services/audit/recorder/sl_checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/sl_json.h"

#define S_TAIL (64 * 1024)              //  bytes of the file read for its newest checkpoint

void
sl_checkpoint_message (sl_buf_t *out, const sl_checkpoint_t *cp)
{
    sl_buf_printf (out, "sluice-audit checkpoint/%d\npos=%lld\ncount=%lld\nhead=%s\nat=%lld\ncut=%d\nkey=%s\n",
                   cp->version > 1 ? cp->version : 1, (long long) cp->pos, (long long) cp->count, cp->head,
                   (long long) cp->at, cp->cut ? 1 : 0, cp->key_id);
}

int
sl_checkpoint_before (sl_store_t *store, int64_t pos, int64_t *before)
{
    sl_val_t p [] = { sl_val_int (pos) };
    return sl_store_query_int (store, "SELECT MAX(pos) FROM checkpoints WHERE pos < $1", p, 1, 0, before);
}

int
sl_checkpoint_write (sl_store_t *store, const sl_signkey_t *key, sl_checkpoint_t *cp)
{
    cp->version = SL_CHECKPOINT_VERSION;
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
                      *cp->signature ? sl_val_text (cp->signature) : sl_val_null (), sl_val_int (cp->version) };
    //  A cut at the position of an earlier checkpoint makes that one the cut.
    return sl_store_exec (store, "INSERT INTO checkpoints (pos, count, head, at, cut, key_id, signature, version) "
                                 "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (pos) DO UPDATE SET "
                                 "count = excluded.count, head = excluded.head, at = excluded.at, "
                                 "cut = excluded.cut, key_id = excluded.key_id, signature = excluded.signature, "
                                 "version = excluded.version",
                          p, 8, NULL);
}

void
sl_checkpoint_json (const sl_checkpoint_t *cp, sl_buf_t *out)
{
    sl_buf_printf (out, "{\"version\":%d,\"pos\":%lld,\"count\":%lld,\"head\":\"%s\",\"at\":%lld,\"cut\":%s,",
                   cp->version > 1 ? cp->version : 1, (long long) cp->pos, (long long) cp->count, cp->head,
                   (long long) cp->at, cp->cut ? "true" : "false");
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

int
sl_checkpoint_appendable (const char *path)
{
    int fd = open (path, O_WRONLY | O_CREAT | O_APPEND, 0640);
    if (fd < 0)
        return -1;
    return close (fd);
}

int
sl_checkpoint_parse (sl_str_t json, sl_checkpoint_t *cp)
{
    memset (cp, 0, sizeof *cp);
    sl_str_t v;
    int64_t version = 1;
    bool cut = false;
    if (sl_json_find (json, "version", &v) == 1)
        sl_json_i64 (v, &version);
    cp->version = version > 1 && version <= SL_CHECKPOINT_VERSION ? (int) version : 1;
    if (sl_json_find (json, "pos", &v) == 1)
        sl_json_i64 (v, &cp->pos);
    if (sl_json_find (json, "count", &v) == 1)
        sl_json_i64 (v, &cp->count);
    if (sl_json_find (json, "at", &v) == 1)
        sl_json_i64 (v, &cp->at);
    if (sl_json_find (json, "cut", &v) == 1)
        sl_json_bool (v, &cut);
    cp->cut = cut;
    const char *names [] = { "head", "key_id", "signature" };
    char *dest [] = { cp->head, cp->key_id, cp->signature };
    size_t sizes [] = { sizeof cp->head, sizeof cp->key_id, sizeof cp->signature };
    sl_buf_t text = { 0 };
    for (int i = 0; i < 3; i++) {
        sl_buf_reset (&text);
        if (sl_json_find (json, names [i], &v) == 1 && sl_json_type (v) == SL_JSON_STRING)
            sl_json_unescape (v, &text);
        //  Too long for its place: "?", never a shorter text that might match.
        snprintf (dest [i], sizes [i], "%s", text.len < sizes [i] ? sl_buf_cstr (&text) : "?");
    }
    sl_buf_free (&text);
    return cp->pos > 0 ? 0 : -1;
}

int
sl_checkpoint_newest_in_file (const char *path, const sl_signkey_t *key, sl_checkpoint_t *cp, bool *found)
{
    *found = false;
    FILE *f = fopen (path, "r");
    if (!f)
        return errno == ENOENT ? 0 : -1;
    struct stat st;
    bool partial = fstat (fileno (f), &st) == 0 && st.st_size > S_TAIL;
    if (partial && fseeko (f, st.st_size - S_TAIL, SEEK_SET) != 0) {
        fclose (f);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    sl_checkpoint_t one;
    //  A read from the middle of the file starts with the end of a line.
    for (bool first = true; (n = getline (&line, &cap, f)) > 0; first = false) {
        if (first && partial)
            continue;
        if (sl_checkpoint_parse ((sl_str_t) { line, (size_t) n }, &one))
            continue;
        sl_checkpoint_check_t check = sl_checkpoint_check (&one, key);
        if (key ? check != SL_CHECKPOINT_GOOD : check == SL_CHECKPOINT_BAD)
            continue;
        if (!*found || one.pos > cp->pos)
            *cp = one;
        *found = true;
    }
    bool failed = ferror (f) != 0;
    free (line);
    fclose (f);
    return failed ? -1 : 0;
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
    int64_t version = row->count > 7 ? sl_row_int (row, 7) : 1;
    cp->version = version > 1 ? (int) version : 1;
}
