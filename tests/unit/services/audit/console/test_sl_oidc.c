/*  Unit tests: services/audit/console/sl_oidc, the console's sign-in with
    an OpenID provider (one in memory: oidc_fake.h): the authorization
    URL (PKCE S256, state, nonce), the code's exchange, the id_token's
    checks (signature, iss, aud, exp, nonce), a state used once, a
    provider down then back, the role claim. */
#include <criterion/criterion.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "services/audit/console/sl_oidc.h"
#include "tests/unit/services/audit/console/oidc_fake.h"

#define T0 ((int64_t) time (NULL) * 1000)

static oidc_fake_t s_op;

static sl_oidc_t *
s_new (void)
{
    oidc_fake_init (&s_op);
    sl_oidc_config_t config = { .issuer = OIDC_FAKE_ISSUER, .client_id = OIDC_FAKE_CLIENT,
                                .client_secret = "s3cret", .redirect_uri = "http://127.0.0.1:8081/login/callback" };
    sl_oidc_t *o = sl_oidc_new (&config);
    cr_assert_not_null (o);
    sl_oidc_set_fetch (o, oidc_fake_fetch, &s_op);
    return o;
}

static void
s_free (sl_oidc_t **o)
{
    sl_oidc_destroy (o);
    jwt_fixture_free (&s_op.key);
}

//  Begin a sign-in: its state into state.
static void
s_begin (sl_oidc_t *o, char *state, size_t size)
{
    sl_buf_t url = { 0 };
    char why [SL_OIDC_WHY_MAX] = "", given [SL_OIDC_STATE_MAX];
    cr_assert_eq (sl_oidc_begin (o, T0, &url, given, why), 0, "%s", why);
    oidc_fake_authorized (&s_op, sl_buf_cstr (&url), state, size);
    cr_expect_str_eq (given, state, "the state given is the URL's");
    sl_buf_free (&url);
}

Test (sl_oidc, signs_in_with_pkce_and_takes_the_role_from_the_claim)
{
    sl_oidc_t *o = s_new ();
    sl_buf_t url = { 0 };
    char why [SL_OIDC_WHY_MAX] = "", st [SL_OIDC_STATE_MAX];
    cr_assert_eq (sl_oidc_begin (o, T0, &url, st, why), 0, "%s", why);
    const char *u = sl_buf_cstr (&url);
    cr_expect_eq (strncmp (u, OIDC_FAKE_ISSUER "/auth?", strlen (OIDC_FAKE_ISSUER "/auth?")), 0, "%s", u);
    cr_expect_not_null (strstr (u, "response_type=code"));
    cr_expect_not_null (strstr (u, "client_id=sluice-console"));
    cr_expect_not_null (strstr (u, "redirect_uri=http%3A%2F%2F127.0.0.1%3A8081%2Flogin%2Fcallback"), "%s", u);
    char state [64];
    oidc_fake_authorized (&s_op, u, state, sizeof state);
    cr_expect_str_eq (s_op.method, "S256");
    cr_expect_geq (strlen (state), 43, "32 random bytes");
    cr_expect_geq (strlen (s_op.nonce_sent), 43);
    sl_buf_free (&url);
    s_op.groups = "[\"staff\",\"sluice-auditor\",\"sluice-approver:alpha\",\"sluice-approver:beta\"]";
    sl_console_caller_t c;
    cr_assert_eq (sl_oidc_finish (o, "good-code", state, T0 + 1000, &c, why), 0, "%s", why);
    cr_expect_eq (c.role, SL_CONSOLE_APPROVER);
    cr_expect_str_eq (c.sub, "u-ann");
    cr_expect_str_eq (c.email, "ann@example.com");
    cr_expect_str_eq (c.name, "Ann Example");
    cr_expect_eq (c.team_count, 2);
    cr_expect_str_eq (c.teams [1], "beta");
    //  The verifier the token endpoint got is the one the challenge hashed.
    uint8_t hash [crypto_hash_sha256_BYTES];
    crypto_hash_sha256 (hash, (const unsigned char *) s_op.verifier, strlen (s_op.verifier));
    char challenge [64];
    sodium_bin2base64 (challenge, sizeof challenge, hash, sizeof hash, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    cr_expect_str_eq (s_op.challenge, challenge);
    cr_expect_str_eq (s_op.user, OIDC_FAKE_CLIENT, "client_secret_basic");
    cr_expect_str_eq (sl_oidc_end_session (o), OIDC_FAKE_ISSUER "/session/end");
    s_free (&o);
}

Test (sl_oidc, a_state_is_used_once_and_only_while_it_lives)
{
    sl_oidc_t *o = s_new ();
    char state [64], why [SL_OIDC_WHY_MAX];
    sl_console_caller_t c;
    s_begin (o, state, sizeof state);
    cr_assert_eq (sl_oidc_finish (o, "good-code", state, T0 + 1, &c, why), 0, "%s", why);
    cr_expect_eq (sl_oidc_finish (o, "good-code", state, T0 + 2, &c, why), -1, "replayed");
    cr_expect_not_null (strstr (why, "state"), "%s", why);
    cr_expect_eq (c.role, SL_CONSOLE_NOBODY);
    cr_expect_eq (sl_oidc_finish (o, "good-code", "made-up", T0 + 2, &c, why), -1);
    cr_expect_eq (sl_oidc_finish (o, "good-code", NULL, T0 + 2, &c, why), -1);
    s_begin (o, state, sizeof state);
    cr_expect_eq (sl_oidc_pending (o), 1);
    cr_expect_eq (sl_oidc_finish (o, "good-code", state, T0 + SL_OIDC_LOGIN_MS, &c, why), -1, "expired");
    //  A refused code uses its state up too.
    s_begin (o, state, sizeof state);
    cr_expect_eq (sl_oidc_finish (o, "bad-code", state, T0 + 1, &c, why), -1);
    cr_expect_not_null (strstr (why, "invalid_grant"), "%s", why);
    cr_expect_eq (sl_oidc_pending (o), 0);
    s_free (&o);
}

//  Each id_token the checks refuse, and why.
static void
s_refused (sl_oidc_t *o, const char *want)
{
    char state [64], why [SL_OIDC_WHY_MAX] = "";
    sl_console_caller_t c;
    s_begin (o, state, sizeof state);
    cr_expect_eq (sl_oidc_finish (o, "good-code", state, T0 + 1, &c, why), -1, "want %s", want);
    cr_expect_not_null (strstr (why, want), "want %s: %s", want, why);
    cr_expect_eq (c.role, SL_CONSOLE_NOBODY);
}

Test (sl_oidc, an_id_token_is_refused_for_its_aud_exp_iss_nonce_or_no_signature)
{
    sl_oidc_t *o = s_new ();
    s_op.groups = "[\"sluice-admin\"]";
    s_op.aud = "another-client";
    s_refused (o, "aud");
    s_op.aud = NULL;
    s_op.exp = time (NULL) - 3600;
    s_refused (o, "expired");
    s_op.exp = 0;
    s_op.iss = "http://127.0.0.1:9/another";
    s_refused (o, "iss");
    s_op.iss = NULL;
    s_op.nonce = "not-the-one-sent";
    s_refused (o, "nonce");
    s_op.nonce = NULL;
    s_op.unsigned_token = true;
    s_refused (o, "signed");
    s_op.unsigned_token = false;
    //  Another key than the JWKS's, with its kid.
    jwt_pair_t other;
    jwt_fixture_make (&other, false);
    s_op.signer = &other;
    s_refused (o, "signature");
    s_op.signer = NULL;
    jwt_fixture_free (&other);
    //  And the token as it should be passes.
    char state [64], why [SL_OIDC_WHY_MAX] = "";
    sl_console_caller_t c;
    s_begin (o, state, sizeof state);
    cr_expect_eq (sl_oidc_finish (o, "good-code", state, T0 + 1, &c, why), 0, "%s", why);
    cr_expect_eq (c.role, SL_CONSOLE_ADMIN);
    s_free (&o);
}

Test (sl_oidc, a_provider_down_is_said_and_found_again_when_back)
{
    sl_oidc_t *o = s_new ();
    s_op.down = true;
    sl_buf_t url = { 0 };
    char why [SL_OIDC_WHY_MAX] = "", st [SL_OIDC_STATE_MAX];
    cr_expect_eq (sl_oidc_begin (o, T0, &url, st, why), -1);
    cr_expect_not_null (strstr (why, "cannot be reached"), "%s", why);
    cr_expect_null (sl_oidc_end_session (o));
    s_op.down = false;
    cr_expect_eq (sl_oidc_begin (o, T0, &url, st, why), 0, "%s", why);
    //  Down again after it was found: the next sign-in says so rather
    //  than send the browser to it.
    s_op.down = true;
    sl_buf_t again = { 0 };
    cr_expect_eq (sl_oidc_begin (o, T0, &again, st, why), -1);
    cr_expect_not_null (strstr (why, "cannot be reached"), "%s", why);
    sl_buf_free (&again);
    s_op.down = false;
    //  Down between the sign-in's two halves: the exchange fails, said.
    char state [64];
    oidc_fake_authorized (&s_op, sl_buf_cstr (&url), state, sizeof state);
    s_op.down = true;
    sl_console_caller_t c;
    cr_expect_eq (sl_oidc_finish (o, "good-code", state, T0 + 1, &c, why), -1);
    cr_expect_not_null (strstr (why, "cannot be reached"), "%s", why);
    sl_buf_free (&url);
    s_free (&o);
}

Test (sl_oidc, a_missing_role_claim_makes_a_viewer_never_more)
{
    sl_oidc_t *o = s_new ();
    const char *groups [] = { NULL, "[]", "\"sluice-root\"", "[\"admin\",\"sluice-approver\",\"sluice-approver:\"]",
                              "{\"sluice-admin\":true}", "[1,2]" };
    for (size_t i = 0; i < sizeof groups / sizeof groups [0]; i++) {
        s_op.groups = groups [i];
        char state [64], why [SL_OIDC_WHY_MAX] = "";
        sl_console_caller_t c;
        s_begin (o, state, sizeof state);
        cr_expect_eq (sl_oidc_finish (o, "good-code", state, T0 + 1, &c, why), 0, "%s", why);
        cr_expect_eq (c.role, SL_CONSOLE_VIEWER, "groups %s", groups [i] ? groups [i] : "missing");
        cr_expect_eq (c.team_count, 0);
    }
    s_op.groups = "\"sluice-auditor\"";
    char state [64], why [SL_OIDC_WHY_MAX] = "";
    sl_console_caller_t c;
    s_begin (o, state, sizeof state);
    cr_expect_eq (sl_oidc_finish (o, "good-code", state, T0 + 1, &c, why), 0, "%s", why);
    cr_expect_eq (c.role, SL_CONSOLE_AUDITOR, "a string claim");
    s_free (&o);
}

Test (sl_oidc, half_a_configuration_is_none)
{
    sl_oidc_config_t config = { .issuer = OIDC_FAKE_ISSUER, .redirect_uri = "http://127.0.0.1/login/callback" };
    cr_expect_null (sl_oidc_new (&config), "no client id");
    config = (sl_oidc_config_t) { .client_id = "c", .redirect_uri = "http://127.0.0.1/login/callback" };
    cr_expect_null (sl_oidc_new (&config), "no issuer");
}
