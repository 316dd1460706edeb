/*  sl_tooldef.c - tool names and definition digests (see sl_tooldef.h). */
#include "common/tools/sl_tooldef.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define S_MCP_PREFIX "mcp__"
#define S_DELIMITER "__"

//  The first "__" at or after from, or NULL.
static const char *
s_delimiter (sl_str_t s, size_t from)
{
    for (size_t i = from; i + 1 < s.len; i++)
        if (s.ptr [i] == '_' && s.ptr [i + 1] == '_')
            return s.ptr + i;
    return NULL;
}

//  <server>__<tool> from offset at: both parts non-empty.
static bool
s_split (sl_str_t s, size_t at, sl_toolname_t *out)
{
    const char *d = s_delimiter (s, at);
    if (!d || d == s.ptr + at || d + 2 >= s.ptr + s.len)
        return false;
    out->server = sl_str_n (s.ptr + at, (size_t) (d - s.ptr) - at);
    out->tool = sl_str_n (d + 2, s.len - (size_t) (d + 2 - s.ptr));
    return true;
}

void
sl_tooldef_name (sl_str_t written, sl_toolname_t *out)
{
    out->server = SL_STR_NULL;
    out->tool = written;
    if (!written.ptr)
        return;
    size_t prefix = strlen (S_MCP_PREFIX);
    if (written.len > prefix && memcmp (written.ptr, S_MCP_PREFIX, prefix) == 0 && s_split (written, prefix, out))
        return;
    s_split (written, 0, out);
}

void
sl_tooldef_name_in (sl_str_t written, const char *const *servers, int count, sl_toolname_t *out)
{
    sl_tooldef_name (written, out);
    if (out->server.ptr || !written.ptr)
        return;
    size_t best = 0;
    for (int i = 0; i < count; i++) {
        size_t n = strlen (servers [i]);
        if (n > best && written.len > n + 1 && memcmp (written.ptr, servers [i], n) == 0 && written.ptr [n] == '_') {
            best = n;
            out->server = sl_str_n (written.ptr, n);
            out->tool = sl_str_n (written.ptr + n + 1, written.len - n - 1);
        }
    }
}

void
sl_tooldef_canonical (sl_str_t name, sl_str_t description, json_t *schema, sl_buf_t *out)
{
    json_t *o = json_object ();
    json_object_set_new (o, "name", name.ptr ? json_stringn (name.ptr, name.len) : json_null ());
    json_object_set_new (o, "description",
                         description.ptr ? json_stringn (description.ptr, description.len) : json_null ());
    json_object_set (o, "schema", schema ? schema : json_null ());
    char *text = json_dumps (o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    sl_buf_puts (out, text ? text : "null");
    free (text);
    json_decref (o);
}

void
sl_tooldef_digest (sl_str_t name, sl_str_t description, json_t *schema, char *digest)
{
    sl_buf_t text = { 0 };
    sl_tooldef_canonical (name, description, schema, &text);
    uint8_t hash [crypto_hash_sha256_BYTES];
    crypto_hash_sha256 (hash, (const uint8_t *) text.data, text.len);
    sodium_bin2hex (digest, SL_TOOLDEF_DIGEST_SIZE, hash, sizeof hash);
    sl_buf_free (&text);
}
