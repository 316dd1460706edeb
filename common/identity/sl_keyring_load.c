/*  sl_keyring_load.c - a keys file into the keyring model (see
    sl_keyring.h): every field checked, every error with file, line and
    column, nothing half loaded.

    Tests: tests/unit/common/identity/test_sl_keyring.c (a file of teams,
    keys and tokens; each error with its line and column).
*/
#include "common/identity/sl_keyring_impl.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base/sl_name.h"
#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_yaml.h"

#define S_MODELS_MAX 256                //  globs one team or key may list
#define S_LABELS_MAX 64                 //  labels one key may carry
#define S_PEM_MAX 32                    //  public key files of the jwt section
#define S_TEXT_MAX 256                  //  the longest id, team, user, label or claim name

typedef struct {
    sl_keyring_t *ring;
    const char *dir;                    //  the keys file's directory, for relative paths
} s_ctx_t;

//  [A-Za-z0-9._-]+, as ids and team names are.
static bool
s_valid_name (const char *s)
{
    return sl_name_valid (s) && strlen (s) <= S_TEXT_MAX;
}

//  A scalar of at most S_TEXT_MAX bytes, or an error.
static const char *
s_text (sl_yaml_t *y, yaml_node_t *node, const char *what)
{
    const char *v = sl_yaml_scalar (node);
    if (!v || strlen (v) > S_TEXT_MAX) {
        sl_yaml_error (y, node, "%s must be text of at most %d bytes", what, S_TEXT_MAX);
        return NULL;
    }
    return v;
}

//  A file the keys file names: its path taken from the keys file's
//  directory when relative; it must be readable.
static const char *
s_file (s_ctx_t *ctx, sl_yaml_t *y, yaml_node_t *node, const char *what)
{
    const char *v = sl_yaml_scalar (node);
    if (!v || !*v) {
        sl_yaml_error (y, node, "%s must be a file's path", what);
        return NULL;
    }
    sl_buf_t path = { 0 };
    if (v [0] == '/' || !ctx->dir [0])
        sl_buf_puts (&path, v);
    else
        sl_buf_printf (&path, "%s/%s", ctx->dir, v);
    const char *kept = sl_keyring_strdup (ctx->ring, sl_buf_cstr (&path));
    sl_buf_free (&path);
    if (access (kept, R_OK) != 0) {
        sl_yaml_error (y, node, "%s %s: no such file (or not readable)", what, kept);
        return NULL;
    }
    return kept;
}

static int
s_model_item (sl_yaml_t *y, yaml_node_t *item, size_t index, void *arg)
{
    const char **globs = arg;
    const char *v = sl_yaml_scalar (item);
    if (!v || !*v)
        return sl_yaml_error (y, item, "models[%zu] must be a model name or glob", index);
    if (index >= S_MODELS_MAX)
        return sl_yaml_error (y, item, "at most %d models", S_MODELS_MAX);
    globs [index] = v;
    return 0;
}

//  A list of model globs, NULL-terminated and owned by the keyring.
static const char *const *
s_models (s_ctx_t *ctx, sl_yaml_t *y, yaml_node_t *node)
{
    const char *globs [S_MODELS_MAX + 1] = { 0 };
    if (sl_yaml_sequence (y, node, "models", s_model_item, globs))
        return NULL;
    size_t n = 0;
    while (globs [n])
        n++;
    const char **out = sl_keyring_own (ctx->ring, sl_xcalloc (n + 1, sizeof *out));
    for (size_t i = 0; i < n; i++)
        out [i] = sl_keyring_strdup (ctx->ring, globs [i]);
    return out;
}

static int
s_budget_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    sl_limits_spec_t *l = arg;
    if (strcmp (key, "tokens") == 0)
        return sl_yaml_int (y, v, "budget.tokens", 0, INT64_MAX / 2, &l->budget_tokens);
    if (strcmp (key, "usd") == 0)
        return sl_yaml_number (y, v, "budget.usd", 0, 1e12, &l->budget_usd);
    return sl_yaml_error (y, knode, "unknown field '%s' of budget (tokens, usd)", key);
}

static int
s_alert_at_item (sl_yaml_t *y, yaml_node_t *item, size_t index, void *arg)
{
    sl_limits_spec_t *l = arg;
    if (index >= SL_LIMITS_ALERTS_MAX)
        return sl_yaml_error (y, item, "alerts.at holds at most %d thresholds", SL_LIMITS_ALERTS_MAX);
    int64_t at;
    if (sl_yaml_int (y, item, "alerts.at", 1, 100, &at))
        return -1;
    //  Rising, so a crossing names each threshold once.
    if (index > 0 && at <= l->alert_at [index - 1])
        return sl_yaml_error (y, item, "alerts.at must rise (%lld after %d)", (long long) at,
                              l->alert_at [index - 1]);
    l->alert_at [index] = (int) at;
    l->alert_count = index + 1;
    return 0;
}

static int
s_alerts_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    if (strcmp (key, "at") == 0)
        return sl_yaml_sequence (y, v, "alerts.at", s_alert_at_item, arg);
    return sl_yaml_error (y, knode, "unknown field '%s' of alerts (at)", key);
}

static int
s_limits_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    sl_limits_spec_t *l = arg;
    if (strcmp (key, "rpm") == 0)
        return sl_yaml_int (y, v, "rpm", 0, INT32_MAX, &l->rpm);
    if (strcmp (key, "concurrent") == 0)
        return sl_yaml_int (y, v, "concurrent", 0, INT32_MAX, &l->concurrent);
    if (strcmp (key, "tokens_per_day") == 0)
        return sl_yaml_int (y, v, "tokens_per_day", 0, INT64_MAX / 2, &l->tokens_per_day);
    if (strcmp (key, "budget") == 0)
        return sl_yaml_mapping (y, v, "budget", s_budget_member, l);
    if (strcmp (key, "alerts") == 0)
        return sl_yaml_mapping (y, v, "alerts", s_alerts_member, l);
    return sl_yaml_error (y, knode, "unknown field '%s' of limits (rpm, concurrent, tokens_per_day, budget, alerts)",
                          key);
}

static int
s_limits (sl_yaml_t *y, yaml_node_t *node, sl_limits_spec_t *out)
{
    return sl_yaml_mapping (y, node, "limits", s_limits_member, out);
}

static int
s_on_error (sl_yaml_t *y, yaml_node_t *node, int *out)
{
    const char *v = sl_yaml_scalar (node);
    if (v && strcmp (v, "deny") == 0)
        *out = SL_ON_ERROR_DENY;
    else
    if (v && strcmp (v, "allow") == 0)
        *out = SL_ON_ERROR_ALLOW;
    else
        return sl_yaml_error (y, node, "limits_on_error must be allow or deny");
    return 0;
}

//  A team under teams: (settings; its name first, wherever it is written).
typedef struct {
    s_ctx_t *ctx;
    sl_team_t *team;
} s_team_arg_t;

static int
s_team_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_team_arg_t *a = arg;
    sl_team_t *t = a->team;
    if (strcmp (key, "name") == 0)
        return 0;                       //  read first
    if (strcmp (key, "policy") == 0)
        return (t->policy = s_file (a->ctx, y, v, "policy")) ? 0 : -1;
    if (strcmp (key, "shadow_policy") == 0)
        return (t->shadow_policy = s_file (a->ctx, y, v, "shadow_policy")) ? 0 : -1;
    if (strcmp (key, "models") == 0)
        return (t->models = s_models (a->ctx, y, v)) ? 0 : -1;
    if (strcmp (key, "limits") == 0)
        return s_limits (y, v, &t->limits);
    if (strcmp (key, "limits_on_error") == 0)
        return s_on_error (y, v, &t->limits_on_error);
    return sl_yaml_error (y, knode, "unknown field '%s' of a team (name, policy, shadow_policy, models, limits, "
                          "limits_on_error)",
                          key);
}

static int
s_team_item (sl_yaml_t *y, yaml_node_t *item, size_t index, void *arg)
{
    s_ctx_t *ctx = arg;
    yaml_node_t *name = sl_yaml_get (y, item, "name");
    const char *v = sl_yaml_scalar (name);
    if (!item || item->type != YAML_MAPPING_NODE)
        return sl_yaml_error (y, item, "teams[%zu] must be a mapping", index);
    if (!s_valid_name (v))
        return sl_yaml_error (y, name ? name : item, "teams[%zu] needs a name of letters, digits, '.', '_' or '-'",
                              index);
    sl_team_t *t = sl_keyring_team_get (ctx->ring, v);
    if (t->listed)
        return sl_yaml_error (y, name, "team '%s' is listed twice", v);
    t->listed = true;
    s_team_arg_t a = { ctx, t };
    return sl_yaml_mapping (y, item, "a team", s_team_member, &a);
}

//  A key under keys:.
typedef struct {
    s_ctx_t *ctx;
    sl_keyentry_t *entry;
    bool hashed;
} s_key_arg_t;

static int
s_label_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_key_arg_t *a = arg;
    sl_keyentry_t *e = a->entry;
    const char *value = s_text (y, v, "a label's value");
    if (!value)
        return -1;
    if (strlen (key) > S_TEXT_MAX)
        return sl_yaml_error (y, knode, "a label's name must be at most %d bytes", S_TEXT_MAX);
    if (e->label_count >= S_LABELS_MAX)
        return sl_yaml_error (y, knode, "at most %d labels", S_LABELS_MAX);
    sl_label_t *labels = (sl_label_t *) e->labels;
    labels [e->label_count++] = (sl_label_t) { sl_keyring_strdup (a->ctx->ring, key),
                                               sl_keyring_strdup (a->ctx->ring, value) };
    return 0;
}

static int
s_key_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_key_arg_t *a = arg;
    sl_keyentry_t *e = a->entry;
    if (strcmp (key, "id") == 0) {
        const char *id = sl_yaml_scalar (v);
        if (!s_valid_name (id))
            return sl_yaml_error (y, v, "a key's id must be letters, digits, '.', '_' or '-'");
        for (size_t i = 0; i + 1 < a->ctx->ring->key_count; i++)
            if (strcmp (a->ctx->ring->keys [i].id, id) == 0)
                return sl_yaml_error (y, v, "key id '%s' is used twice", id);
        e->id = sl_keyring_strdup (a->ctx->ring, id);
        return 0;
    }
    if (strcmp (key, "sha256") == 0) {
        const char *hex = sl_yaml_scalar (v);
        size_t bin_len = 0;
        if (!hex || strlen (hex) != 2 * SL_KEYRING_SHA256
        ||  sodium_hex2bin (e->sha256, SL_KEYRING_SHA256, hex, strlen (hex), NULL, &bin_len, NULL) != 0
        ||  bin_len != SL_KEYRING_SHA256)
            return sl_yaml_error (y, v, "sha256 must be the key's SHA-256 in 64 hex digits (sluice-keys hash)");
        for (size_t i = 0; i + 1 < a->ctx->ring->key_count; i++)
            if (memcmp (a->ctx->ring->keys [i].sha256, e->sha256, SL_KEYRING_SHA256) == 0)
                return sl_yaml_error (y, v, "this key is listed twice (as '%s' too)", a->ctx->ring->keys [i].id);
        a->hashed = true;
        return 0;
    }
    if (strcmp (key, "team") == 0) {
        const char *team = sl_yaml_scalar (v);
        if (!s_valid_name (team))
            return sl_yaml_error (y, v, "team must be letters, digits, '.', '_' or '-'");
        e->team = sl_keyring_team_get (a->ctx->ring, team);
        return 0;
    }
    if (strcmp (key, "user") == 0) {
        const char *user = s_text (y, v, "user");
        return user ? (e->user = sl_keyring_strdup (a->ctx->ring, user), 0) : -1;
    }
    if (strcmp (key, "labels") == 0) {
        e->labels = sl_keyring_own (a->ctx->ring, sl_xcalloc (S_LABELS_MAX, sizeof (sl_label_t)));
        return sl_yaml_mapping (y, v, "labels", s_label_member, a);
    }
    if (strcmp (key, "policy") == 0)
        return (e->policy = s_file (a->ctx, y, v, "policy")) ? 0 : -1;
    if (strcmp (key, "shadow_policy") == 0)
        return (e->shadow_policy = s_file (a->ctx, y, v, "shadow_policy")) ? 0 : -1;
    if (strcmp (key, "models") == 0)
        return (e->models = s_models (a->ctx, y, v)) ? 0 : -1;
    if (strcmp (key, "limits") == 0)
        return s_limits (y, v, &e->limits);
    if (strcmp (key, "approver") == 0)
        return sl_yaml_bool (y, v, "approver", &e->approver);
    return sl_yaml_error (y, knode, "unknown field '%s' of a key (id, sha256, team, user, labels, policy, "
                          "shadow_policy, models, limits, approver)", key);
}

static int
s_key_item (sl_yaml_t *y, yaml_node_t *item, size_t index, void *arg)
{
    s_ctx_t *ctx = arg;
    s_key_arg_t a = { ctx, sl_keyring_add_key (ctx->ring), false };
    if (sl_yaml_mapping (y, item, "a key", s_key_member, &a))
        return -1;
    if (!a.entry->id)
        return sl_yaml_error (y, item, "keys[%zu] needs an id", index);
    if (!a.hashed)
        return sl_yaml_error (y, item, "key '%s' needs its sha256", a.entry->id);
    if (!a.entry->team)
        a.entry->team = sl_keyring_team_get (ctx->ring, SL_KEYRING_DEFAULT_TEAM);
    return 0;
}

static int
s_pem_item (sl_yaml_t *y, yaml_node_t *item, size_t index, void *arg)
{
    s_ctx_t *ctx = arg;
    const char **pem = (const char **) ctx->ring->jwt.pem;
    if (index >= S_PEM_MAX)
        return sl_yaml_error (y, item, "at most %d public key files", S_PEM_MAX);
    return (pem [index] = s_file (ctx, y, item, "a public key file")) ? 0 : -1;
}

static int
s_jwt_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_ctx_t *ctx = arg;
    sl_jwt_spec_t *j = &ctx->ring->jwt;
    if (strcmp (key, "keys") == 0)
        return sl_yaml_sequence (y, v, "jwt.keys", s_pem_item, ctx);
    if (strcmp (key, "jwks") == 0)
        return (j->jwks = s_file (ctx, y, v, "jwks")) ? 0 : -1;
    const char **field = strcmp (key, "issuer") == 0 ? &j->issuer
                       : strcmp (key, "audience") == 0 ? &j->audience
                       : strcmp (key, "team_claim") == 0 ? &j->team_claim
                       : strcmp (key, "user_claim") == 0 ? &j->user_claim : NULL;
    if (field) {
        const char *text = s_text (y, v, key);
        return text ? (*field = sl_keyring_strdup (ctx->ring, text), 0) : -1;
    }
    if (strcmp (key, "limits") == 0)
        return s_limits (y, v, &j->limits);
    return sl_yaml_error (y, knode, "unknown field '%s' of jwt (keys, jwks, issuer, audience, team_claim, "
                          "user_claim, limits)", key);
}

typedef struct {
    yaml_node_t *teams, *jwt, *keys;
} s_root_t;

static int
s_root_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_root_t *root = arg;
    if (strcmp (key, "version") == 0) {
        const char *value = sl_yaml_scalar (v);
        return value && strcmp (value, "1") == 0 ? 0 : sl_yaml_error (y, v, "this sluice reads keys files of version 1");
    }
    yaml_node_t **slot = strcmp (key, "teams") == 0 ? &root->teams
                       : strcmp (key, "jwt") == 0 ? &root->jwt
                       : strcmp (key, "keys") == 0 ? &root->keys : NULL;
    if (!slot)
        return sl_yaml_error (y, knode, "unknown field '%s' (version, teams, jwt, keys)", key);
    *slot = v;
    return 0;
}

sl_keyring_t *
sl_keyring_parse (const char *text, size_t size, const char *name, char **error)
{
    sl_yaml_t *y = sl_yaml_parse (text, size, name, error);
    if (!y)
        return NULL;
    char *dir = sl_xstrdup (name);
    char *slash = strrchr (dir, '/');
    if (slash)
        *slash = 0;
    else
        dir [0] = 0;
    s_ctx_t ctx = { sl_keyring_new_empty (), dir };
    s_root_t root = { 0 };
    yaml_node_t *top = sl_yaml_root (y);
    int rc = top ? sl_yaml_mapping (y, top, "the keys file", s_root_member, &root)
                 : sl_yaml_error (y, NULL, "the keys file is empty");
    //  Teams first, wherever they are in the file: keys name them.
    if (rc == 0 && root.teams)
        rc = sl_yaml_sequence (y, root.teams, "teams", s_team_item, &ctx);
    if (rc == 0 && root.jwt) {
        sl_jwt_spec_t *j = &ctx.ring->jwt;
        j->pem = sl_keyring_own (ctx.ring, sl_xcalloc (S_PEM_MAX + 1, sizeof (char *)));
        j->team_claim = "team";
        j->user_claim = "sub";
        rc = sl_yaml_mapping (y, root.jwt, "jwt", s_jwt_member, &ctx);
        if (rc == 0 && !j->pem [0] && !j->jwks)
            rc = sl_yaml_error (y, root.jwt, "jwt needs its public keys: keys (PEM files) or jwks");
        //  An identity provider signs the tokens of every application it
        //  serves with the same keys: without an audience, a token issued
        //  for any of them would be a sluice credential.
        if (rc == 0 && (!j->audience || !*j->audience))
            rc = sl_yaml_error (y, root.jwt, "jwt needs an audience: the aud its tokens for sluice carry (without "
                                "one, a token the identity provider issued for any other application would "
                                "be accepted)");
        ctx.ring->has_jwt = rc == 0;
    }
    if (rc == 0 && root.keys)
        rc = sl_yaml_sequence (y, root.keys, "keys", s_key_item, &ctx);
    if (rc == 0 && !root.keys && !root.jwt)
        rc = sl_yaml_error (y, top, "the keys file lists no keys and no jwt: nobody could call");
    if (rc) {
        *error = sl_yaml_take_error (y);
        sl_keyring_unref (&ctx.ring);
    }
    else
        sl_keyring_seal (ctx.ring);
    free (dir);
    sl_yaml_destroy (&y);
    return ctx.ring;
}

sl_keyring_t *
sl_keyring_load (const char *path, char **error)
{
    sl_buf_t text = { 0 };
    sl_keyring_t *self = NULL;
    if (sl_yaml_read (path, SL_KEYRING_FILE_MAX, &text, error) == 0)
        self = sl_keyring_parse (text.data ? text.data : "", text.len, path, error);
    sl_buf_free (&text);
    return self;
}
