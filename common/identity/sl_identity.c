/*  sl_identity.c - a request's credential resolved against the keys file
    (see sl_identity.h).
*/
#include "common/identity/sl_identity.h"

#include <stdio.h>
#include <string.h>

static void
s_copy (char *dst, const char *src)
{
    snprintf (dst, SL_IDENTITY_TEXT_MAX, "%s", src ? src : "");
}

static bool
s_has_limits (const sl_limits_spec_t *l)
{
    return l->rpm > 0 || l->concurrent > 0 || l->tokens_per_day > 0 || l->budget_tokens > 0 || l->budget_usd > 0;
}

static void
s_subject (sl_identity_t *self, const char *kind, const char *a, const char *b, const sl_limits_spec_t *spec)
{
    if (!spec || !s_has_limits (spec))
        return;
    sl_limits_subject_t *s = &self->subjects [self->subject_count++];
    if (b)
        snprintf (s->name, sizeof s->name, "%s:%s/%s", kind, a, b);
    else
        snprintf (s->name, sizeof s->name, "%s:%s", kind, a);
    s->spec = spec;
}

//  What the team sets, where the key (or token) sets nothing itself.
static void
s_team_settings (sl_identity_t *self, const sl_team_t *team)
{
    self->team_entry = team;
    if (!team)
        return;
    if (!self->policy)
        self->policy = team->policy;
    if (!self->shadow_policy)
        self->shadow_policy = team->shadow_policy;
    if (!self->models)
        self->models = team->models;
    self->on_error = team->limits_on_error;
}

static int
s_token (sl_identity_t *self, const sl_keyring_t *ring, sl_jwtkeys_t *jwt, const char *token, int64_t now)
{
    const sl_jwt_spec_t *spec = sl_keyring_jwt (ring);
    if (!spec || !jwt)
        return self->outcome = SL_WHO_NO_TOKENS;
    sl_jwt_claims_t claims;
    self->jwt_reason = sl_jwt_verify (jwt, spec, token, now, &claims);
    if (self->jwt_reason != SL_JWT_OK)
        return self->outcome = SL_WHO_TOKEN;
    if (*claims.kid)
        snprintf (self->key_id, sizeof self->key_id, "jwt:%.*s", (int) sizeof self->key_id - 5, claims.kid);
    else
        s_copy (self->key_id, "jwt");
    s_copy (self->team, claims.team);
    s_copy (self->user, claims.user);
    s_team_settings (self, sl_keyring_team (ring, self->team));
    s_subject (self, "user", self->team, self->user, &spec->limits);
    if (self->team_entry)
        s_subject (self, "team", self->team, NULL, &self->team_entry->limits);
    return self->outcome = SL_WHO_OK;
}

int
sl_identity_resolve (const sl_keyring_t *ring, sl_jwtkeys_t *jwt, const char *credential, int64_t now,
                     sl_identity_t *out)
{
    memset (out, 0, sizeof *out);
    out->on_error = SL_ON_ERROR_DENY;
    if (!ring)
        return out->outcome = SL_WHO_OPEN;
    if (!credential || !*credential)
        return out->outcome = SL_WHO_MISSING;
    const sl_keyentry_t *key = sl_keyring_find (ring, credential);
    if (!key)
        return sl_jwt_looks_like (credential) ? s_token (out, ring, jwt, credential, now)
                                              : (out->outcome = SL_WHO_UNKNOWN_KEY);
    out->key = key;
    s_copy (out->key_id, key->id);
    s_copy (out->team, key->team ? key->team->name : SL_KEYRING_DEFAULT_TEAM);
    s_copy (out->user, key->user);
    out->policy = key->policy;
    out->shadow_policy = key->shadow_policy;
    out->models = key->models;
    s_team_settings (out, key->team);
    s_subject (out, "key", key->id, NULL, &key->limits);
    if (key->team)
        s_subject (out, "team", key->team->name, NULL, &key->team->limits);
    return out->outcome = SL_WHO_OK;
}

const char *
sl_identity_reason (const sl_identity_t *self)
{
    static const char *names [] = { "ok", "open", "missing", "unknown_key", "token", "tokens_not_accepted" };
    _Static_assert (sizeof names / sizeof names [0] == SL_WHO_MAX, "a reason for every outcome");
    //  A refused token: "token_" and the token check's own name.
    static char tokens [SL_JWT_REASON_MAX][40];
    if (self->outcome == SL_WHO_TOKEN && self->jwt_reason >= 0 && self->jwt_reason < SL_JWT_REASON_MAX) {
        char *label = tokens [self->jwt_reason];
        if (!*label)
            snprintf (label, sizeof tokens [0], "token_%s", sl_jwt_reason (self->jwt_reason));
        return label;
    }
    return self->outcome >= 0 && self->outcome < SL_WHO_MAX ? names [self->outcome] : "?";
}

bool
sl_identity_allows_model (const sl_identity_t *self, const char *model)
{
    return sl_keyring_model_allowed (self->models, model);
}
