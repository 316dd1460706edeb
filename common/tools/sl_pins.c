/*  sl_pins.c - pinned tool definitions (see sl_pins.h).

    The pins are one array of (team, tool, digest) kept sorted by team and
    tool, so a request's tools are looked up by bisection and the file is
    written in a stable order (a diff of two pin runs shows what moved).
*/
#include "common/tools/sl_pins.h"

#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_yaml.h"
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
//  Reading (the walk every loader shares: sl_yaml.h)

typedef struct {
    sl_pins_t *pins;
    sl_keyring_t *keys;                 //  the teams allowed, NULL: any
    const char *team;                   //  the team being read
    yaml_node_t *teams;                 //  read once keys are known, wherever they are
} s_ctx_t;

//  keys: the keys file whose teams are the only ones pinned.
static int
s_parse_keys (sl_yaml_t *doc, yaml_node_t *v, s_ctx_t *ctx)
{
    const char *keys = sl_yaml_scalar (v);
    if (!keys || !*keys)
        return sl_yaml_error (doc, v, "keys must be the name of a keys file");
    sl_pins_t *self = ctx->pins;
    sl_pins_set_keys (self, keys);
    sl_buf_t path = { 0 };
    if (keys [0] == '/')
        sl_buf_puts (&path, keys);
    else {
        char *copy = sl_xstrdup (sl_yaml_name (doc));
        sl_buf_printf (&path, "%s/%s", dirname (copy), keys);
        free (copy);
    }
    free (self->keys_path);
    self->keys_path = sl_xstrdup (sl_buf_cstr (&path));
    sl_buf_free (&path);
    char *error = NULL;
    sl_keyring_unref (&ctx->keys);
    ctx->keys = sl_keyring_load (self->keys_path, &error);
    int rc = ctx->keys ? 0 : sl_yaml_error (doc, v, "keys '%s': %s", keys, error ? error : "does not load");
    free (error);
    return rc;
}

//  One pin of a team: tool name -> digest.
static int
s_parse_pin (sl_yaml_t *doc, const char *name, yaml_node_t *knode, yaml_node_t *value, void *arg)
{
    s_ctx_t *ctx = arg;
    const char *digest = sl_yaml_scalar (value);
    if (!*name)
        return sl_yaml_error (doc, knode, "team '%s': a tool must be a name", ctx->team);
    if (sl_pins_digest (ctx->pins, sl_str (ctx->team), sl_str (name)))
        return sl_yaml_error (doc, knode, "team '%s': tool '%s' is pinned twice", ctx->team, name);
    if (!digest || sl_pins_add (ctx->pins, ctx->team, name, digest))
        return sl_yaml_error (doc, value, "team '%s', tool '%s': a digest is 64 lower-case hex digits "
                              "(sluice-tools pin writes them)", ctx->team, name);
    return 0;
}

//  One team: a mapping of tool name to digest.
static int
s_parse_team (sl_yaml_t *doc, const char *team, yaml_node_t *knode, yaml_node_t *value, void *arg)
{
    s_ctx_t *ctx = arg;
    if (!*team)
        return sl_yaml_error (doc, knode, "a team must be a name");
    if (ctx->keys && !sl_keyring_team (ctx->keys, team))
        return sl_yaml_error (doc, knode, "unknown team '%s': the keys file %s names no such team", team,
                              ctx->pins->keys);
    for (size_t i = 0; i < ctx->pins->count; i++)
        if (strcmp (ctx->pins->pins [i].team, team) == 0)
            return sl_yaml_error (doc, knode, "team '%s' is given twice", team);
    ctx->team = team;
    return sl_yaml_mapping (doc, value, "a team's pins (tool name: digest)", s_parse_pin, ctx);
}

static int
s_parse_member (sl_yaml_t *doc, const char *key, yaml_node_t *knode, yaml_node_t *value, void *arg)
{
    s_ctx_t *ctx = arg;
    if (strcmp (key, "keys") == 0)
        return s_parse_keys (doc, value, ctx);
    if (strcmp (key, "teams") == 0) {
        ctx->teams = value;
        return 0;
    }
    return sl_yaml_error (doc, knode, "unknown pins field '%s' (expected keys, teams)", key);
}

//  The document: NULL with *error.
static sl_pins_t *
s_read (sl_yaml_t *doc, char **error)
{
    if (!doc)
        return NULL;
    sl_pins_t *self = sl_pins_new ();
    s_ctx_t ctx = { .pins = self };
    yaml_node_t *root = sl_yaml_root (doc);
    int rc = 0;
    if (root)                           //  an empty file pins nothing
        rc = sl_yaml_mapping (doc, root, "a pins file (keys, teams)", s_parse_member, &ctx);
    if (rc == 0 && ctx.teams)
        rc = sl_yaml_mapping (doc, ctx.teams, "teams (team: its pins)", s_parse_team, &ctx);
    sl_keyring_unref (&ctx.keys);
    if (rc) {
        *error = sl_yaml_take_error (doc);
        sl_pins_destroy (&self);
    }
    sl_yaml_destroy (&doc);
    return self;
}

sl_pins_t *
sl_pins_parse (const char *text, size_t size, const char *name, char **error)
{
    *error = NULL;
    return s_read (sl_yaml_parse (text, size, name, error), error);
}

sl_pins_t *
sl_pins_load (const char *path, char **error)
{
    *error = NULL;
    return s_read (sl_yaml_load (path, SL_PINS_MAX_FILE, error), error);
}
