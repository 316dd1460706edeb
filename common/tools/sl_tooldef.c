/*  sl_tooldef.c - tool names and definition digests (see sl_tooldef.h). */
#include "common/tools/sl_tooldef.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_json.h"

#define S_MCP_PREFIX "mcp__"
#define S_GEMINI_PREFIX "mcp_"
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
    if (s_split (written, 0, out))
        return;
    //  Gemini CLI: mcp_<server>_<tool>, the server up to the first "_".
    prefix = strlen (S_GEMINI_PREFIX);
    if (written.len > prefix && memcmp (written.ptr, S_GEMINI_PREFIX, prefix) == 0) {
        const char *u = memchr (written.ptr + prefix, '_', written.len - prefix);
        if (u && u > written.ptr + prefix && u + 1 < written.ptr + written.len) {
            out->server = sl_str_n (written.ptr + prefix, (size_t) (u - written.ptr) - prefix);
            out->tool = sl_str_n (u + 1, written.len - (size_t) (u + 1 - written.ptr));
        }
    }
}

//  <server>_<tool> from offset at, server one of servers (the longest).
static bool
s_split_known (sl_str_t s, size_t at, const char *const *servers, int count, sl_toolname_t *out)
{
    size_t best = 0;
    for (int i = 0; i < count; i++) {
        size_t n = strlen (servers [i]);
        if (n > best && s.len > at + n + 1 && memcmp (s.ptr + at, servers [i], n) == 0 && s.ptr [at + n] == '_') {
            best = n;
            out->server = sl_str_n (s.ptr + at, n);
            out->tool = sl_str_n (s.ptr + at + n + 1, s.len - at - n - 1);
        }
    }
    return best > 0;
}

void
sl_tooldef_name_in (sl_str_t written, const char *const *servers, int count, sl_toolname_t *out)
{
    sl_tooldef_name (written, out);
    if (!written.ptr)
        return;
    //  Gemini's mcp_<server>_<tool> with a known server holding a "_"
    //  reads better against the list than up to the first "_".
    size_t gemini = strlen (S_GEMINI_PREFIX);
    bool is_gemini = written.len > gemini && memcmp (written.ptr, S_GEMINI_PREFIX, gemini) == 0
                  && !(written.len > strlen (S_MCP_PREFIX) && memcmp (written.ptr, S_MCP_PREFIX, strlen (S_MCP_PREFIX)) == 0);
    if (is_gemini) {
        sl_toolname_t known;
        if (s_split_known (written, gemini, servers, count, &known))
            *out = known;
        return;
    }
    if (out->server.ptr)
        return;
    s_split_known (written, 0, servers, count, out);
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

void
sl_tooldef_digest_tool (const sl_tool_t *tool, char *digest)
{
    sl_tooldef_digest (tool->name, tool->description, tool->schema, digest);
}

void
sl_tooldef_digests (const sl_tool_t *tools, size_t count, sl_buf_t *out)
{
    sl_buf_putc (out, '{');
    bool comma = false;
    for (size_t i = 0; i < count; i++) {
        const sl_tool_t *t = &tools [i];
        if (!t->name.ptr)
            continue;                   //  a provider's own tool: no definition to pin
        char digest [SL_TOOLDEF_DIGEST_SIZE];
        sl_tooldef_digest_tool (t, digest);
        if (comma)
            sl_buf_putc (out, ',');
        comma = true;
        sl_json_put_sl (out, t->name);
        sl_buf_printf (out, ":\"%s\"", digest);
    }
    sl_buf_putc (out, '}');
}
