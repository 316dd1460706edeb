/*  Unit tests: common/identity/sl_identity - a credential resolved against
    a keys file: a key and what it inherits from its team, a signed token
    and its team's settings, and every refusal with its reason label. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/identity/sl_identity.h"
#include "tests/jwt_fixture.h"

#define NOW 1800000000                  //  the tests' clock, seconds

static char s_dir [64];
static jwt_pair_t s_idp;
static sl_keyring_t *s_ring;
static sl_jwtkeys_t *s_jwt;

static void
s_file (const char *name, const char *text)
{
    char path [128];
    snprintf (path, sizeof path, "%s/%s", s_dir, name);
    FILE *f = fopen (path, "w");
    cr_assert_not_null (f);
    fputs (text, f);
    fclose (f);
}

static const char *
s_hex (const char *key)
{
    static char hex [4][SL_KEYRING_HEX_SIZE];
    static int which;
    which = (which + 1) % 4;
    sl_keyring_key_hex (key, hex [which]);
    return hex [which];
}

static void
s_setup (void)
{
    snprintf (s_dir, sizeof s_dir, "/tmp/sluice-identity-XXXXXX");
    cr_assert_not_null (mkdtemp (s_dir));
    s_file ("payments.yaml", "rules: []\n");
    s_file ("alice.yaml", "rules: []\n");
    jwt_fixture_make (&s_idp, true);
    s_file ("idp.pem", s_idp.public_pem);
    char text [2048];
    snprintf (text, sizeof text,
              "teams:\n"
              "  - name: payments\n"
              "    policy: payments.yaml\n"
              "    models: [\"gpt-*\"]\n"
              "    limits: {rpm: 100, tokens_per_day: 5000}\n"
              "    limits_on_error: allow\n"
              "jwt:\n"
              "  keys: [idp.pem]\n"
              "  audience: sluice\n"
              "  limits: {rpm: 10}\n"
              "keys:\n"
              "  - {id: alice-laptop, sha256: %s, team: payments, user: alice, policy: alice.yaml,\n"
              "     models: [\"gpt-4o*\"], limits: {concurrent: 2}}\n"
              "  - {id: bob-ci, sha256: %s, team: payments, user: bob}\n"
              "  - {id: carol, sha256: %s}\n", s_hex ("sk-alice"), s_hex ("sk-bob"), s_hex ("sk-carol"));
    char name [128], *error = NULL;
    snprintf (name, sizeof name, "%s/keys.yaml", s_dir);
    s_ring = sl_keyring_parse (text, strlen (text), name, &error);
    cr_assert_not_null (s_ring, "%s", error);
    s_jwt = sl_jwtkeys_new (sl_keyring_jwt (s_ring), &error);
    cr_assert_not_null (s_jwt, "%s", error);
}

static void
s_teardown (void)
{
    sl_jwtkeys_destroy (&s_jwt);
    sl_keyring_unref (&s_ring);
    jwt_fixture_free (&s_idp);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf %s", s_dir);
    cr_assert_eq (system (cmd), 0);
}

TestSuite (sl_identity, .init = s_setup, .fini = s_teardown);

Test (sl_identity, a_key_is_its_entry_and_its_team_fills_the_rest)
{
    sl_identity_t who;
    cr_assert_eq (sl_identity_resolve (s_ring, s_jwt, "sk-alice", NOW, &who), SL_WHO_OK);
    cr_expect_str_eq (who.key_id, "alice-laptop");
    cr_expect_str_eq (who.team, "payments");
    cr_expect_str_eq (who.user, "alice");
    cr_expect (strstr (who.policy, "/alice.yaml") != NULL, "the key's own policy, not the team's");
    cr_expect (sl_identity_allows_model (&who, "gpt-4o-mini"));
    cr_expect_not (sl_identity_allows_model (&who, "gpt-5"), "the key's models, narrower than the team's");
    cr_expect_eq (who.on_error, SL_ON_ERROR_ALLOW, "the team's");
    cr_assert_eq (who.subject_count, 2, "the key and its team, each with limits");
    cr_expect_str_eq (who.subjects [0].name, "key:alice-laptop");
    cr_expect_eq (who.subjects [0].spec->concurrent, 2);
    cr_expect_str_eq (who.subjects [1].name, "team:payments");
    cr_expect_eq (who.subjects [1].spec->rpm, 100);
    cr_expect_str_eq (sl_identity_reason (&who), "ok");

    cr_assert_eq (sl_identity_resolve (s_ring, s_jwt, "sk-bob", NOW, &who), SL_WHO_OK);
    cr_expect (strstr (who.policy, "/payments.yaml") != NULL, "the team's policy");
    cr_expect (sl_identity_allows_model (&who, "gpt-5"));
    cr_expect_not (sl_identity_allows_model (&who, "claude-sonnet-4"));
    cr_expect_eq (who.subject_count, 1, "a key without limits is no subject");

    cr_assert_eq (sl_identity_resolve (s_ring, s_jwt, "sk-carol", NOW, &who), SL_WHO_OK);
    cr_expect_str_eq (who.team, SL_KEYRING_DEFAULT_TEAM);
    cr_expect_str_eq (who.user, "");
    cr_expect_null (who.policy, "the default policy");
    cr_expect (sl_identity_allows_model (&who, "anything"));
    cr_expect_eq (who.on_error, SL_ON_ERROR_DENY, "the default");
    cr_expect_eq (who.subject_count, 0);
}

Test (sl_identity, a_token_names_its_team_and_user)
{
    char *token = jwt_fixture_token (&s_idp, JWT_ALG_RS256, NULL, "dave", "payments", "sluice", NOW + 60, 0, NULL);
    sl_identity_t who;
    cr_assert_eq (sl_identity_resolve (s_ring, s_jwt, token, NOW, &who), SL_WHO_OK, "%s", sl_identity_reason (&who));
    cr_expect_str_eq (who.key_id, "jwt");
    cr_expect_str_eq (who.team, "payments");
    cr_expect_str_eq (who.user, "dave");
    cr_expect_null (who.key);
    cr_expect (strstr (who.policy, "/payments.yaml") != NULL, "its team's settings");
    cr_assert_eq (who.subject_count, 2);
    cr_expect_str_eq (who.subjects [0].name, "user:payments/dave");
    cr_expect_eq (who.subjects [0].spec->rpm, 10, "the jwt section's limits per user");
    cr_expect_str_eq (who.subjects [1].name, "team:payments");
    free (token);

    //  A team the file does not list: no settings of its own.
    token = jwt_fixture_token (&s_idp, JWT_ALG_RS256, NULL, "erin", "research", "sluice", NOW + 60, 0, NULL);
    cr_assert_eq (sl_identity_resolve (s_ring, s_jwt, token, NOW, &who), SL_WHO_OK);
    cr_expect_str_eq (who.team, "research");
    cr_expect_null (who.policy);
    cr_expect_null (who.team_entry);
    cr_expect_eq (who.subject_count, 1);
    free (token);
}

Test (sl_identity, every_refusal_has_its_reason)
{
    sl_identity_t who;
    cr_expect_eq (sl_identity_resolve (s_ring, s_jwt, NULL, NOW, &who), SL_WHO_MISSING);
    cr_expect_str_eq (sl_identity_reason (&who), "missing");
    cr_expect_eq (sl_identity_resolve (s_ring, s_jwt, "", NOW, &who), SL_WHO_MISSING);
    cr_expect_eq (sl_identity_resolve (s_ring, s_jwt, "sk-mallory", NOW, &who), SL_WHO_UNKNOWN_KEY);
    cr_expect_str_eq (sl_identity_reason (&who), "unknown_key");
    cr_expect_str_eq (who.key_id, "", "nothing of a refused credential is kept");

    char *expired = jwt_fixture_token (&s_idp, JWT_ALG_RS256, NULL, "dave", "payments", "sluice", NOW - 3600, 0, NULL);
    cr_expect_eq (sl_identity_resolve (s_ring, s_jwt, expired, NOW, &who), SL_WHO_TOKEN);
    cr_expect_str_eq (sl_identity_reason (&who), "token_expired");
    cr_expect_str_eq (who.team, "");
    char *elsewhere = jwt_fixture_token (&s_idp, JWT_ALG_RS256, NULL, "dave", "payments", "other", NOW + 60, 0, NULL);
    cr_expect_eq (sl_identity_resolve (s_ring, s_jwt, elsewhere, NOW, &who), SL_WHO_TOKEN);
    cr_expect_str_eq (sl_identity_reason (&who), "token_audience");
    //  A keys file without a jwt section takes no token.
    cr_expect_eq (sl_identity_resolve (s_ring, NULL, elsewhere, NOW, &who), SL_WHO_NO_TOKENS);
    cr_expect_str_eq (sl_identity_reason (&who), "tokens_not_accepted");
    free (expired);
    free (elsewhere);
}

Test (sl_identity, without_keys_nobody_is_checked)
{
    sl_identity_t who;
    cr_expect_eq (sl_identity_resolve (NULL, NULL, "anything", NOW, &who), SL_WHO_OPEN);
    cr_expect_str_eq (sl_identity_reason (&who), "open");
    cr_expect (sl_identity_allows_model (&who, "gpt-4o"));
    cr_expect_eq (who.subject_count, 0);
}

Test (sl_identity, a_shadow_policy_comes_from_the_key_or_its_team)
{
    s_file ("next.yaml", "mode: shadow\nrules: []\n");
    s_file ("alice-next.yaml", "rules: []\n");
    char text [1024];
    snprintf (text, sizeof text,
              "teams:\n"
              "  - {name: payments, policy: payments.yaml, shadow_policy: next.yaml}\n"
              "keys:\n"
              "  - {id: alice, sha256: %s, team: payments, shadow_policy: alice-next.yaml}\n"
              "  - {id: bob, sha256: %s, team: payments}\n"
              "  - {id: carol, sha256: %s}\n", s_hex ("sk-alice"), s_hex ("sk-bob"), s_hex ("sk-carol"));
    char name [128], *error = NULL;
    snprintf (name, sizeof name, "%s/keys.yaml", s_dir);
    sl_keyring_t *ring = sl_keyring_parse (text, strlen (text), name, &error);
    cr_assert_not_null (ring, "%s", error);
    sl_identity_t who;
    cr_assert_eq (sl_identity_resolve (ring, NULL, "sk-alice", NOW, &who), SL_WHO_OK);
    cr_expect (who.shadow_policy && strstr (who.shadow_policy, "/alice-next.yaml"), "the key's own");
    cr_expect (strstr (who.policy, "/payments.yaml") != NULL, "its policy is its team's still");
    cr_assert_eq (sl_identity_resolve (ring, NULL, "sk-bob", NOW, &who), SL_WHO_OK);
    cr_expect (who.shadow_policy && strstr (who.shadow_policy, "/next.yaml"), "the team's");
    cr_assert_eq (sl_identity_resolve (ring, NULL, "sk-carol", NOW, &who), SL_WHO_OK);
    cr_expect_null (who.shadow_policy, "none");
    //  Every file the processes must load, the shadow ones among them.
    const char *files [8];
    size_t n = sl_keyring_policies (ring, files, 8);
    cr_expect_eq (n, 3);
    int shadow = 0;
    for (size_t i = 0; i < n; i++)
        shadow += strstr (files [i], "next.yaml") != NULL;
    cr_expect_eq (shadow, 2);
    sl_keyring_unref (&ring);

    //  A shadow_policy that does not exist is refused like a policy.
    snprintf (text, sizeof text, "teams:\n  - {name: payments, shadow_policy: missing.yaml}\n");
    ring = sl_keyring_parse (text, strlen (text), name, &error);
    cr_expect_null (ring);
    cr_expect (error && strstr (error, "missing.yaml"), "%s", error ? error : "(parsed)");
    free (error);
}
