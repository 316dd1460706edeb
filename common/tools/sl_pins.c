/*  sl_pins.c - pinned tool definitions (see sl_pins.h).

    The pins are one array of (team, tool, digest) kept sorted by team and
    tool, so a request's tools are looked up by bisection and the file is
    written in a stable order (a diff of two pin runs shows what moved).
*/
#include "common/tools/sl_pins.h"

#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/identity/sl_keyring.h"
#include "common/tools/sl_tooldef.h"

typedef struct {
    char *team;
    char *name;
    char digest [SL_TOOLDEF_DIGEST_SIZE];
} s_pin_t;

struct _sl_pins_t {
    s_pin_t *pins;                      //  sorted by (team, name)
    size_t count;
    char *keys;                         //  the keys file as written, NULL for none
    char *keys_path;                    //  and as read (relative to the pins file)
};

static const char *s_state_names [] = { "pinned", "changed", "unpinned" };
_Static_assert (sizeof s_state_names / sizeof s_state_names [0] == SL_PIN_MAX, "a name for every state");

sl_pins_t *
sl_pins_new (void)
{
    return sl_xcalloc (1, sizeof (sl_pins_t));
}

void
sl_pins_destroy (sl_pins_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_pins_t *self = *self_p;
    for (size_t i = 0; i < self->count; i++) {
        free (self->pins [i].team);
        free (self->pins [i].name);
    }
    free (self->pins);
    free (self->keys);
    free (self->keys_path);
    free (self);
    *self_p = NULL;
}

//  Byte order of a slice against a string.
static int
s_strcmp (sl_str_t a, const char *b)
{
    size_t n = strlen (b);
    int c = memcmp (a.ptr ? a.ptr : "", b, a.len < n ? a.len : n);
    return c ? c : (a.len > n) - (a.len < n);
}

//  Compare (team, name) with a pin.
static int
s_cmp (sl_str_t team, sl_str_t name, const s_pin_t *p)
{
    int c = s_strcmp (team, p->team);
    return c ? c : s_strcmp (name, p->name);
}

//  The index of (team, name), or where it would go (*found false).
static size_t
s_find (const sl_pins_t *self, sl_str_t team, sl_str_t name, bool *found)
{
    size_t lo = 0, hi = self->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = s_cmp (team, name, &self->pins [mid]);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    *found = false;
    return lo;
}

static bool
s_is_digest (const char *digest)
{
    if (strlen (digest) != SL_TOOLDEF_DIGEST_SIZE - 1)
        return false;
    for (const char *c = digest; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return false;
    return true;
}

int
sl_pins_add (sl_pins_t *self, const char *team, const char *name, const char *digest)
{
    if (!s_is_digest (digest))
        return -1;
    bool found;
    size_t at = s_find (self, sl_str (team), sl_str (name), &found);
    if (!found) {
        self->pins = sl_xrealloc (self->pins, (self->count + 1) * sizeof (s_pin_t));
        memmove (self->pins + at + 1, self->pins + at, (self->count - at) * sizeof (s_pin_t));
        self->pins [at].team = sl_xstrdup (team);
        self->pins [at].name = sl_xstrdup (name);
        self->count++;
    }
    memcpy (self->pins [at].digest, digest, SL_TOOLDEF_DIGEST_SIZE);
    return 0;
}

void
sl_pins_drop_team (sl_pins_t *self, const char *team)
{
    size_t kept = 0;
    for (size_t i = 0; i < self->count; i++) {
        s_pin_t *p = &self->pins [i];
        if (strcmp (p->team, team) == 0) {
            free (p->team);
            free (p->name);
        }
        else
            self->pins [kept++] = *p;
    }
    self->count = kept;                 //  still sorted: a subsequence of a sorted array
}

const char *sl_pins_keys (sl_pins_t *self) { return self->keys; }
const char *sl_pins_keys_path (sl_pins_t *self) { return self->keys_path; }
size_t sl_pins_count (const sl_pins_t *self) { return self->count; }

void
sl_pins_set_keys (sl_pins_t *self, const char *keys)
{
    free (self->keys);
    self->keys = keys ? sl_xstrdup (keys) : NULL;
}

const char *
sl_pins_digest (const sl_pins_t *self, sl_str_t team, sl_str_t name)
{
    if (!self || !name.ptr)
        return NULL;
    if (!team.ptr || !team.len)
        team = SL_STR_LIT (SL_PINS_DEFAULT_TEAM);
    bool found;
    size_t at = s_find (self, team, name, &found);
    return found ? self->pins [at].digest : NULL;
}

sl_pin_state_t
sl_pins_state (const sl_pins_t *self, sl_str_t team, sl_str_t name, sl_str_t digest)
{
    const char *pinned = sl_pins_digest (self, team, name);
    if (!pinned)
        return SL_PIN_UNPINNED;
    return digest.ptr && sl_str_eq (digest, pinned) ? SL_PIN_PINNED : SL_PIN_CHANGED;
}

const char *
sl_pin_state_name (sl_pin_state_t state)
{
    return state < SL_PIN_MAX ? s_state_names [state] : "?";
}

int
sl_pin_state_parse (const char *name)
{
    for (int i = 0; i < SL_PIN_MAX; i++)
        if (strcmp (name, s_state_names [i]) == 0)
            return i;
    return -1;
}

void
sl_pins_write (const sl_pins_t *self, sl_buf_t *out)
{
    sl_buf_puts (out, "# Pinned tool definitions: the digest each tool's definition must have, per team\n"
                      "# (sl_tooldef digests: SHA-256 of the canonical definition). See docs/policy.md.\n");
    //  JSON strings are YAML's double-quoted scalars.
    if (self->keys) {
        sl_buf_puts (out, "keys: ");
        sl_json_put_sl (out, sl_str (self->keys));
        sl_buf_putc (out, '\n');
    }
    sl_buf_puts (out, self->count ? "teams:\n" : "teams: {}\n");
    const char *team = NULL;
    for (size_t i = 0; i < self->count; i++) {
        const s_pin_t *p = &self->pins [i];
        if (!team || strcmp (team, p->team) != 0) {
            team = p->team;
            sl_buf_puts (out, "  ");
            sl_json_put_sl (out, sl_str (team));
            sl_buf_puts (out, ":\n");
        }
        sl_buf_puts (out, "    ");
        sl_json_put_sl (out, sl_str (p->name));
        sl_buf_printf (out, ": %s\n", p->digest);
    }
}

//  --------------------------------------------------------------------------
//  Reading

typedef struct {
    const char *name;
    yaml_document_t *doc;
    char **error;
    sl_keyring_t *keys;                 //  the teams allowed, NULL: any
} s_ctx_t;

static void
s_error (s_ctx_t *ctx, yaml_node_t *node, const char *format, ...)
{
    if (*ctx->error)
        return;
    sl_buf_t buf = { 0 };
    sl_buf_printf (&buf, "%s:%zu:%zu: ", ctx->name, node ? node->start_mark.line + 1 : 1,
                   node ? node->start_mark.column + 1 : 1);
    va_list args;
    va_start (args, format);
    char text [512];
    vsnprintf (text, sizeof text, format, args);
    va_end (args);
    sl_buf_puts (&buf, text);
    *ctx->error = sl_xstrdup (sl_buf_cstr (&buf));
    sl_buf_free (&buf);
}

static const char *
s_scalar (yaml_node_t *node)
{
    return node && node->type == YAML_SCALAR_NODE ? (const char *) node->data.scalar.value : NULL;
}

//  keys: the keys file whose teams are the only ones pinned.
static int
s_parse_keys (s_ctx_t *ctx, yaml_node_t *v, sl_pins_t *self)
{
    const char *keys = s_scalar (v);
    if (!keys || !*keys) {
        s_error (ctx, v, "keys must be the name of a keys file");
        return -1;
    }
    sl_pins_set_keys (self, keys);
    sl_buf_t path = { 0 };
    if (keys [0] == '/')
        sl_buf_puts (&path, keys);
    else {
        char *copy = sl_xstrdup (ctx->name);
        sl_buf_printf (&path, "%s/%s", dirname (copy), keys);
        free (copy);
    }
    free (self->keys_path);
    self->keys_path = sl_xstrdup (sl_buf_cstr (&path));
    sl_buf_free (&path);
    char *error = NULL;
    ctx->keys = sl_keyring_load (self->keys_path, &error);
    if (!ctx->keys)
        s_error (ctx, v, "keys '%s': %s", keys, error ? error : "does not load");
    free (error);
    return ctx->keys ? 0 : -1;
}

//  One team: a mapping of tool name to digest.
static int
s_parse_team (s_ctx_t *ctx, yaml_node_t *k, yaml_node_t *v, sl_pins_t *self)
{
    const char *team = s_scalar (k);
    if (!team || !*team) {
        s_error (ctx, k, "a team must be a name");
        return -1;
    }
    if (ctx->keys && !sl_keyring_team (ctx->keys, team)) {
        s_error (ctx, k, "unknown team '%s': the keys file %s names no such team", team, self->keys);
        return -1;
    }
    if (v->type != YAML_MAPPING_NODE) {
        s_error (ctx, v, "team '%s': a mapping of tool name to digest", team);
        return -1;
    }
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *tk = yaml_document_get_node (ctx->doc, p->key);
        yaml_node_t *tv = yaml_document_get_node (ctx->doc, p->value);
        const char *name = s_scalar (tk);
        const char *digest = s_scalar (tv);
        if (!name || !*name) {
            s_error (ctx, tk, "team '%s': a tool must be a name", team);
            return -1;
        }
        if (sl_pins_digest (self, sl_str (team), sl_str (name))) {
            s_error (ctx, tk, "team '%s': tool '%s' is pinned twice", team, name);
            return -1;
        }
        if (!digest || sl_pins_add (self, team, name, digest)) {
            s_error (ctx, tv ? tv : tk, "team '%s', tool '%s': a digest is 64 lower-case hex digits "
                     "(sluice-tools pin writes them)", team, name);
            return -1;
        }
    }
    return 0;
}

static int
s_parse_teams (s_ctx_t *ctx, yaml_node_t *v, sl_pins_t *self)
{
    if (v->type != YAML_MAPPING_NODE) {
        s_error (ctx, v, "teams must be a mapping of team to its pins");
        return -1;
    }
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node (ctx->doc, p->key);
        const char *team = s_scalar (k);
        for (yaml_node_pair_t *q = v->data.mapping.pairs.start; team && q < p; q++)
            if (s_scalar (yaml_document_get_node (ctx->doc, q->key))
            &&  strcmp (s_scalar (yaml_document_get_node (ctx->doc, q->key)), team) == 0) {
                s_error (ctx, k, "team '%s' is given twice", team);
                return -1;
            }
        if (s_parse_team (ctx, k, yaml_document_get_node (ctx->doc, p->value), self))
            return -1;
    }
    return 0;
}

static int
s_parse_root (s_ctx_t *ctx, yaml_node_t *root, sl_pins_t *self)
{
    if (!root)
        return 0;                       //  an empty file pins nothing
    if (root->type != YAML_MAPPING_NODE) {
        s_error (ctx, root, "a pins file is a mapping with teams (and keys)");
        return -1;
    }
    yaml_node_t *teams = NULL;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node (ctx->doc, p->key);
        yaml_node_t *v = yaml_document_get_node (ctx->doc, p->value);
        const char *key = s_scalar (k);
        if (key && strcmp (key, "keys") == 0) {
            if (s_parse_keys (ctx, v, self))
                return -1;
        }
        else
        if (key && strcmp (key, "teams") == 0)
            teams = v;                  //  read once keys are known, wherever they are
        else {
            s_error (ctx, k, "unknown pins field '%s' (expected keys, teams)", key ? key : "?");
            return -1;
        }
    }
    return teams ? s_parse_teams (ctx, teams, self) : 0;
}

sl_pins_t *
sl_pins_parse (const char *text, size_t size, const char *name, char **error)
{
    *error = NULL;
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize (&parser);
    yaml_parser_set_input_string (&parser, (const unsigned char *) text, size);
    if (!yaml_parser_load (&parser, &doc)) {
        sl_buf_t buf = { 0 };
        sl_buf_printf (&buf, "%s:%zu:%zu: %s", name, parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                       parser.problem ? parser.problem : "malformed YAML");
        *error = sl_xstrdup (sl_buf_cstr (&buf));
        sl_buf_free (&buf);
        yaml_parser_delete (&parser);
        return NULL;
    }
    sl_pins_t *self = sl_pins_new ();
    s_ctx_t ctx = { name, &doc, error, NULL };
    int rc = s_parse_root (&ctx, yaml_document_get_root_node (&doc), self);
    sl_keyring_unref (&ctx.keys);
    yaml_document_delete (&doc);
    yaml_parser_delete (&parser);
    if (rc)
        sl_pins_destroy (&self);
    return self;
}

sl_pins_t *
sl_pins_load (const char *path, char **error)
{
    *error = NULL;
    FILE *f = fopen (path, "rb");
    if (!f) {
        sl_buf_t buf = { 0 };
        sl_buf_printf (&buf, "%s:1:1: cannot open: %s", path, strerror (errno));
        *error = sl_xstrdup (sl_buf_cstr (&buf));
        sl_buf_free (&buf);
        return NULL;
    }
    sl_buf_t text = { 0 };
    char chunk [65536];
    size_t n;
    while ((n = fread (chunk, 1, sizeof chunk, f)) > 0 && text.len <= SL_PINS_MAX_FILE)
        sl_buf_append (&text, chunk, n);
    fclose (f);
    sl_pins_t *self = NULL;
    if (text.len > SL_PINS_MAX_FILE) {
        sl_buf_t buf = { 0 };
        sl_buf_printf (&buf, "%s:1:1: file is over %u bytes", path, SL_PINS_MAX_FILE);
        *error = sl_xstrdup (sl_buf_cstr (&buf));
        sl_buf_free (&buf);
    }
    else
        self = sl_pins_parse (text.data ? text.data : "", text.len, path, error);
    sl_buf_free (&text);
    return self;
}
