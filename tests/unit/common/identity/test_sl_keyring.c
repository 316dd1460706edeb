/*  Unit tests: common/identity/sl_keyring (the model) and
    sl_keyring_load.c (the keys file): what a file says, each error it can
    have with its line and column, looking a key up by its hash. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/sl_buf.h"
#include "common/identity/sl_keyid.h"
#include "common/identity/sl_keyring.h"

//  SHA-256 of "sk-alice" and "sk-bob".
#define ALICE "sk-alice"
#define BOB "sk-bob"

static char s_dir [64];

static void
s_setup (void)
{
    snprintf (s_dir, sizeof s_dir, "/tmp/sluice-keyring-XXXXXX");
    cr_assert_not_null (mkdtemp (s_dir));
    char path [128];
    snprintf (path, sizeof path, "%s/team.yaml", s_dir);
    FILE *f = fopen (path, "w");
    fputs ("rules: []\n", f);
    fclose (f);
}

static void
s_teardown (void)
{
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf %s", s_dir);
    cr_assert_eq (system (cmd), 0);
}

static const char *
s_hex (const char *key)
{
    static char hex [2][SL_KEYRING_HEX_SIZE];
    static int which;
    which ^= 1;
    sl_keyring_key_hex (key, hex [which]);
    return hex [which];
}

//  Parse text as <dir>/keys.yaml; the error (caller frees) or NULL.
static sl_keyring_t *
s_parse (const char *text, char **error)
{
    char name [128];
    snprintf (name, sizeof name, "%s/keys.yaml", s_dir);
    return sl_keyring_parse (text, strlen (text), name, error);
}

TestSuite (sl_keyring, .init = s_setup, .fini = s_teardown);

Test (sl_keyring, a_file_of_teams_keys_and_tokens)
{
    char text [2048];
    snprintf (text, sizeof text,
              "version: 1\n"
              "keys:\n"
              "  - id: alice-laptop\n"
              "    sha256: %s\n"
              "    team: payments\n"
              "    user: alice\n"
              "    labels: {env: prod, host: a1}\n"
              "    models: ['gpt-4o*']\n"
              "    limits: {rpm: 60, concurrent: 5, tokens_per_day: 200000}\n"
              "  - id: bob\n"
              "    sha256: %s\n"
              "teams:\n"
              "  - name: payments\n"
              "    policy: team.yaml\n"
              "    models: ['gpt-*', 'claude-*']\n"
              "    limits: {rpm: 600, budget: {tokens: 1000000, usd: 12.5}, alerts: {at: [50, 80, 100]}}\n"
              "    limits_on_error: allow\n"
              "jwt:\n"
              "  keys: [team.yaml]\n"
              "  issuer: https://idp.example\n"
              "  audience: sluice\n"
              "  limits: {rpm: 30}\n", s_hex (ALICE), s_hex (BOB));
    char *error = NULL;
    sl_keyring_t *ring = s_parse (text, &error);
    cr_assert_not_null (ring, "%s", error);
    cr_expect_eq (sl_keyring_count (ring), 2);
    const sl_keyentry_t *a = sl_keyring_find (ring, ALICE);
    cr_assert_not_null (a);
    cr_expect_str_eq (a->id, "alice-laptop");
    cr_expect_str_eq (a->team->name, "payments");
    cr_expect_str_eq (a->user, "alice");
    cr_expect_eq (a->label_count, 2);
    cr_expect_str_eq (a->labels [1].name, "host");
    cr_expect_str_eq (a->labels [1].value, "a1");
    cr_expect_eq (a->limits.rpm, 60);
    cr_expect_eq (a->limits.concurrent, 5);
    cr_expect_eq (a->limits.tokens_per_day, 200000);
    cr_expect (sl_keyring_model_allowed (a->models, "gpt-4o-mini"));
    cr_expect_not (sl_keyring_model_allowed (a->models, "claude-x"), "the key's own globs, not the team's");
    const sl_team_t *t = a->team;
    cr_expect (t->listed);
    cr_expect_not_null (strstr (t->policy, "/team.yaml"), "a path from the keys file's directory: %s", t->policy);
    cr_expect_eq (t->limits.rpm, 600);
    cr_expect_eq (t->limits.budget_tokens, 1000000);
    cr_expect_eq (t->limits.budget_usd, 12.5);
    cr_assert_eq (t->limits.alert_count, 3);
    cr_expect_eq (t->limits.alert_at [0], 50);
    cr_expect_eq (t->limits.alert_at [2], 100);
    cr_expect_eq (a->limits.alert_count, 0, "a key's own limits, without alerts");
    cr_expect_eq (t->limits_on_error, SL_ON_ERROR_ALLOW);
    const sl_keyentry_t *b = sl_keyring_find (ring, BOB);
    cr_assert_not_null (b);
    cr_expect_str_eq (b->team->name, SL_KEYRING_DEFAULT_TEAM);
    cr_expect_str_eq (b->user, "");
    cr_expect_not (b->team->listed);
    cr_expect_null (sl_keyring_find (ring, "sk-nobody"));
    cr_expect_null (sl_keyring_find (ring, ""));
    const sl_jwt_spec_t *j = sl_keyring_jwt (ring);
    cr_assert_not_null (j);
    cr_expect_str_eq (j->issuer, "https://idp.example");
    cr_expect_str_eq (j->team_claim, "team", "the default claims");
    cr_expect_str_eq (j->user_claim, "sub");
    cr_expect_eq (j->limits.rpm, 30);
    const char *policies [4];
    cr_expect_eq (sl_keyring_policies (ring, policies, 4), 1);
    sl_keyring_unref (&ring);
}

typedef struct {
    const char *text;                   //  %s: alice's hash
    const char *says;
    int line, column;
} s_bad_t;

Test (sl_keyring, a_bad_file_is_refused_with_its_place)
{
    static const s_bad_t cases [] = {
        { "keys:\n  - id: a\n    sha256: %s\n  - id: a\n    sha256: 00\n", "used twice", 4, 9 },
        { "keys:\n  - id: a\n    sha256: abc%s\n", "64 hex digits", 3, 13 },
        { "keys:\n  - id: a\n    sha256: %.60sxyzw\n", "64 hex digits", 3, 13 },
        { "keys:\n  - id: a\n    sha256: %s\n    policy: nowhere.yaml\n", "no such file", 4, 13 },
        { "keys:\n  - id: a\n    sha256: %s\n    colour: red\n", "unknown field 'colour'", 4, 5 },
        { "keys:\n  - id: a\n    sha256: %s\n  - id: b\n    sha256: %s\n", "listed twice", 5, 13 },
        { "keys:\n  - sha256: %s\n", "needs an id", 2, 5 },
        { "keys:\n  - id: a\n", "needs its sha256", 2, 5 },
        { "keys:\n  - id: 'a b'\n    sha256: %s\n", "letters, digits", 2, 9 },
        { "keys:\n  - id: a\n    sha256: %s\n    limits: {rpm: -1}\n", "rpm must be a whole number", 4, 19 },
        { "keys:\n  - id: a\n    sha256: %s\n    limits: {rate: 1}\n", "unknown field 'rate' of limits", 4, 14 },
        { "keys:\n  - id: a\n    sha256: %s\n    limits: {alerts: {at: [50, 0]}}\n", "alerts.at must be a whole number from 1 to 100", 4, 32 },
        { "keys:\n  - id: a\n    sha256: %s\n    limits: {alerts: {at: [50, 120]}}\n", "from 1 to 100", 4, 32 },
        { "keys:\n  - id: a\n    sha256: %s\n    limits: {alerts: {at: [80, 50]}}\n", "alerts.at must rise", 4, 32 },
        { "keys:\n  - id: a\n    sha256: %s\n    limits: {alerts: {at: 80}}\n", "alerts.at must be a list", 4, 27 },
        { "keys:\n  - id: a\n    sha256: %s\n    limits: {alerts: {every: [80]}}\n", "unknown field 'every' of alerts", 4, 23 },
        { "keys:\n  - id: a\n    sha256: %s\n    approver: maybe\n", "approver", 4, 15 },
        { "teams:\n  - name: t\n  - name: t\nkeys: []\n", "listed twice", 3, 11 },
        { "teams:\n  - name: t\n    limits_on_error: maybe\nkeys: []\n", "allow or deny", 3, 22 },
        { "jwt: {issuer: x}\n", "needs its public keys", 1, 6 },
        { "jwt: {keys: [team.yaml], issuer: x}\n", "jwt needs an audience", 1, 6 },
        { "jwt:\n  jwks: team.yaml\n  audience: ''\n", "jwt needs an audience", 2, 3 },
        { "version: 2\nkeys: []\n", "version 1", 1, 10 },
        { "owners: []\n", "unknown field 'owners'", 1, 1 },
        { "keys: [\n", "", 2, 1 },
        { "version: 1\n", "no keys and no jwt", 1, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char text [1024], want [64];
        snprintf (text, sizeof text, cases [i].text, s_hex (ALICE), s_hex (ALICE));
        char *error = NULL;
        sl_keyring_t *ring = s_parse (text, &error);
        cr_expect_null (ring, "case %zu is refused", i);
        cr_assert_not_null (error, "case %zu says why", i);
        cr_expect_not_null (strstr (error, cases [i].says), "case %zu: %s", i, error);
        snprintf (want, sizeof want, "keys.yaml:%d:%d: ", cases [i].line, cases [i].column);
        cr_expect_not_null (strstr (error, want), "case %zu at %s: %s", i, want, error);
        free (error);
        sl_keyring_unref (&ring);
    }
}

Test (sl_keyring, a_list_of_keys_is_every_key_in_the_default_team)
{
    sl_keyring_t *ring = sl_keyring_from_list (" sk-alice , ,sk-bob");
    cr_assert_not_null (ring);
    cr_expect_eq (sl_keyring_count (ring), 2);
    const sl_keyentry_t *a = sl_keyring_find (ring, ALICE);
    cr_assert_not_null (a);
    cr_expect_str_eq (a->team->name, SL_KEYRING_DEFAULT_TEAM);
    char id [SL_KEY_ID_SIZE];
    sl_key_id (ALICE, strlen (ALICE), id);
    cr_expect_str_eq (a->id, id, "its id is the one the audit has always shown for the key");
    cr_expect_null (sl_keyring_find (ring, " sk-alice"), "spaces are the list's, not the key's");
    sl_keyring_unref (&ring);
    cr_expect_null (sl_keyring_from_list (" , "), "no key: no check");
    cr_expect_null (sl_keyring_from_list (NULL));
}

Test (sl_keyring, a_keyring_lives_while_it_is_held)
{
    sl_keyring_t *ring = sl_keyring_from_list ("sk-alice");
    sl_keyring_t *held = sl_keyring_ref (ring);
    sl_keyring_unref (&ring);
    cr_expect_null (ring);
    cr_expect_not_null (sl_keyring_find (held, ALICE), "still there");
    sl_keyring_unref (&held);
    sl_keyring_unref (&held);           //  safe twice
}

//  Keys are found among many (a sorted search by hash): every one of them,
//  and nothing else.
Test (sl_keyring, every_key_of_many_is_found_and_no_other)
{
    enum { MANY = 300 };
    sl_buf_t text = { 0 };
    sl_buf_puts (&text, "keys:\n");
    for (int k = 0; k < MANY; k++) {
        char key [32], hex [SL_KEYRING_HEX_SIZE];
        snprintf (key, sizeof key, "sk-many-%d", k);
        sl_keyring_key_hex (key, hex);
        sl_buf_printf (&text, "  - id: k%d\n    sha256: %s\n", k, hex);
    }
    char *error = NULL;
    sl_keyring_t *ring = sl_keyring_parse (text.data, text.len, "many.yaml", &error);
    cr_assert_not_null (ring, "%s", error ? error : "");
    for (int k = 0; k < MANY; k++) {
        char key [32], id [16];
        snprintf (key, sizeof key, "sk-many-%d", k);
        snprintf (id, sizeof id, "k%d", k);
        const sl_keyentry_t *e = sl_keyring_find (ring, key);
        cr_assert_not_null (e, "%s", key);
        cr_expect_str_eq (e->id, id);
    }
    cr_expect_null (sl_keyring_find (ring, "sk-many-300"));
    cr_expect_null (sl_keyring_find (ring, "sk-many-"));
    sl_keyring_unref (&ring);
    sl_buf_free (&text);
}
