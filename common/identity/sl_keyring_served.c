/*  sl_keyring_served.c - a keys file's keyring merged with the keys the
    console issued, as the audit serves them (see sl_keyring_merge in
    sl_keyring.h). The set is checked whole before anything of it is
    taken: a set with one bad entry is refused, and the gateway keeps the
    keys it had. */
#include "common/identity/sl_keyring_impl.h"

#include <jansson.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_name.h"

#define S_TEXT_MAX 256                  //  an id, team or user (as the keys file)
#define S_MODELS_MAX 256                //  globs one key may list (as the keys file)

static int
s_fail (char **error, size_t index, const char *why)
{
    char text [200];
    snprintf (text, sizeof text, "served keys [%zu]: %s", index, why);
    *error = sl_xstrdup (text);
    return -1;
}

static bool
s_name (json_t *v)
{
    const char *s = json_string_value (v);
    return s && sl_name_valid (s) && strlen (s) <= S_TEXT_MAX;
}

static bool
s_count (json_t *object, const char *name, int64_t *out)
{
    json_t *v = json_object_get (object, name);
    if (!v || json_is_null (v))
        return true;
    if (!json_is_integer (v) || json_integer_value (v) < 0)
        return false;
    *out = json_integer_value (v);
    return true;
}

//  Alert thresholds ({"at": [50, 80, 100]}: percents 1 to 100, rising,
//  as the keys file's); false when bad.
static bool
s_alerts (json_t *v, sl_limits_spec_t *out)
{
    if (!v || json_is_null (v))
        return true;
    if (!json_is_object (v) || json_object_size (v) != (json_object_get (v, "at") ? 1u : 0u))
        return false;
    json_t *at = json_object_get (v, "at");
    if (!at)
        return true;
    if (!json_is_array (at) || json_array_size (at) > SL_LIMITS_ALERTS_MAX)
        return false;
    size_t i;
    json_t *item;
    json_array_foreach (at, i, item) {
        json_int_t n = json_is_integer (item) ? json_integer_value (item) : 0;
        if (n < 1 || n > 100 || (i > 0 && n <= out->alert_at [i - 1]))
            return false;
        out->alert_at [i] = (int) n;
        out->alert_count = i + 1;
    }
    return true;
}

//  The limits of a served entry (the keys file's names); false when bad.
static bool
s_limits (json_t *v, sl_limits_spec_t *out)
{
    memset (out, 0, sizeof *out);
    if (!v || json_is_null (v))
        return true;
    if (!json_is_object (v))
        return false;
    const char *key;
    json_t *member;
    json_object_foreach (v, key, member)
        if (strcmp (key, "rpm") && strcmp (key, "concurrent") && strcmp (key, "tokens_per_day")
        &&  strcmp (key, "budget") && strcmp (key, "alerts"))
            return false;
    if (!s_count (v, "rpm", &out->rpm) || !s_count (v, "concurrent", &out->concurrent)
    ||  !s_count (v, "tokens_per_day", &out->tokens_per_day) || !s_alerts (json_object_get (v, "alerts"), out))
        return false;
    json_t *budget = json_object_get (v, "budget");
    if (!budget || json_is_null (budget))
        return true;
    if (!json_is_object (budget))
        return false;
    json_object_foreach (budget, key, member)
        if (strcmp (key, "tokens") && strcmp (key, "usd"))
            return false;
    if (!s_count (budget, "tokens", &out->budget_tokens))
        return false;
    json_t *usd = json_object_get (budget, "usd");
    if (usd && !json_is_null (usd)) {
        if (!json_is_number (usd) || !isfinite (json_number_value (usd)) || json_number_value (usd) < 0)
            return false;
        out->budget_usd = json_number_value (usd);
    }
    return true;
}

//  Check one entry; 0 ok.
static int
s_check (json_t *e, size_t index, char **error)
{
    static const char *names [] = { "id", "sha256", "team", "user", "models", "limits", "approver" };
    if (!json_is_object (e))
        return s_fail (error, index, "not an object");
    const char *key;
    json_t *member;
    json_object_foreach (e, key, member) {
        bool known = false;
        for (size_t i = 0; i < sizeof names / sizeof names [0] && !known; i++)
            known = strcmp (key, names [i]) == 0;
        if (!known)
            return s_fail (error, index, "an unknown field");
    }
    const char *hex = json_string_value (json_object_get (e, "sha256"));
    uint8_t hash [SL_KEYRING_SHA256];
    size_t got = 0;
    if (!s_name (json_object_get (e, "id")) || !s_name (json_object_get (e, "team")))
        return s_fail (error, index, "id and team must be names");
    if (!hex || strlen (hex) != 2 * SL_KEYRING_SHA256
    ||  sodium_hex2bin (hash, sizeof hash, hex, strlen (hex), NULL, &got, NULL) || got != sizeof hash)
        return s_fail (error, index, "sha256 must be 64 hex digits");
    json_t *user = json_object_get (e, "user");
    if (user && !json_is_null (user) && (!json_is_string (user) || json_string_length (user) > S_TEXT_MAX))
        return s_fail (error, index, "user must be text");
    json_t *models = json_object_get (e, "models");
    if (models && !json_is_null (models)) {
        if (!json_is_array (models) || !json_array_size (models) || json_array_size (models) > S_MODELS_MAX)
            return s_fail (error, index, "models must be a list of globs");
        size_t i;
        json_t *g;
        json_array_foreach (models, i, g)
            if (!json_is_string (g) || !json_string_length (g))
                return s_fail (error, index, "models must be a list of globs");
    }
    sl_limits_spec_t limits;
    if (!s_limits (json_object_get (e, "limits"), &limits))
        return s_fail (error, index, "limits are the keys file's, whole numbers (usd a number), 0 or more");
    json_t *approver = json_object_get (e, "approver");
    if (approver && !json_is_boolean (approver))
        return s_fail (error, index, "approver must be true or false");
    return 0;
}

//  Whether ring has an entry of this hash already.
static bool
s_has_hash (const sl_keyring_t *ring, const uint8_t hash [SL_KEYRING_SHA256])
{
    for (size_t i = 0; i < ring->key_count; i++)
        if (memcmp (ring->keys [i].sha256, hash, SL_KEYRING_SHA256) == 0)
            return true;
    return false;
}

static void
s_add (sl_keyring_t *self, json_t *e)
{
    uint8_t hash [SL_KEYRING_SHA256];
    const char *hex = json_string_value (json_object_get (e, "sha256"));
    sodium_hex2bin (hash, sizeof hash, hex, strlen (hex), NULL, NULL, NULL);
    if (s_has_hash (self, hash))
        return;
    sl_keyentry_t *k = sl_keyring_add_key (self);
    memcpy (k->sha256, hash, sizeof hash);
    k->id = sl_keyring_strdup (self, json_string_value (json_object_get (e, "id")));
    k->team = sl_keyring_team_get (self, json_string_value (json_object_get (e, "team")));
    const char *user = json_string_value (json_object_get (e, "user"));
    k->user = user ? sl_keyring_strdup (self, user) : "";
    json_t *models = json_object_get (e, "models");
    if (json_is_array (models)) {
        const char **globs = sl_keyring_own (self, sl_xcalloc (json_array_size (models) + 1, sizeof *globs));
        size_t i;
        json_t *g;
        json_array_foreach (models, i, g)
            globs [i] = sl_keyring_strdup (self, json_string_value (g));
        k->models = globs;
    }
    s_limits (json_object_get (e, "limits"), &k->limits);
    k->approver = json_is_true (json_object_get (e, "approver"));
}

sl_keyring_t *
sl_keyring_merge (sl_keyring_t *base, const char *json, size_t n, char **error)
{
    *error = NULL;
    json_error_t err;
    json_t *root = json_loadb (json ? json : "", json ? n : 0, 0, &err);
    json_t *keys = json_object_get (root, "keys");
    if (!json_is_array (keys)) {
        *error = sl_xstrdup ("served keys: not {\"keys\":[...]}");
        json_decref (root);
        return NULL;
    }
    size_t i;
    json_t *e;
    json_array_foreach (keys, i, e)
        if (s_check (e, i, error)) {
            json_decref (root);
            return NULL;
        }
    sl_keyring_t *self = sl_keyring_new_empty ();
    if (base) {
        //  The file's entries and teams as they are: they point into base,
        //  which lives as long as this keyring does.
        self->base = sl_keyring_ref (base);
        for (size_t k = 0; k < base->key_count; k++)
            *sl_keyring_add_key (self) = base->keys [k];
        if (base->team_count) {
            self->team_cap = base->team_count;
            self->teams = sl_xcalloc (self->team_cap, sizeof *self->teams);
            memcpy (self->teams, base->teams, base->team_count * sizeof *self->teams);
            self->team_count = base->team_count;
        }
        self->jwt = base->jwt;
        self->has_jwt = base->has_jwt;
    }
    json_array_foreach (keys, i, e)
        s_add (self, e);
    json_decref (root);
    sl_keyring_seal (self);
    return self;
}
