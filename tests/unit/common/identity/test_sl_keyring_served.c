/*  Unit tests: common/identity/sl_keyring_served (sl_keyring_merge), a
    keys file's keyring merged with the keys the console issued: a served
    key found and its settings taken, its team's settings from the file,
    the file's entry winning a clash, a bad set refused whole, and no
    file at all. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/identity/sl_keyring.h"

#define S_FILE_KEY "sk-file-key"
#define S_SERVED_KEY "sk-sluice-served"
#define S_GRACE_KEY "sk-sluice-old"

static sl_keyring_t *
s_file (void)
{
    char hex [SL_KEYRING_HEX_SIZE], text [1024];
    sl_keyring_key_hex (S_FILE_KEY, hex);
    snprintf (text, sizeof text, "version: 1\nteams:\n  - name: payments\n    models: [\"gpt-*\"]\n"
                                 "    limits: {rpm: 600}\nkeys:\n  - id: file-key\n    sha256: %s\n"
                                 "    team: payments\n    user: bob\n", hex);
    char *error = NULL;
    sl_keyring_t *ring = sl_keyring_parse (text, strlen (text), "/tmp/keys.yaml", &error);
    cr_assert_not_null (ring, "%s", error ? error : "");
    return ring;
}

//  A served set: each entry id, key, team.
static void
s_set (char *out, size_t size, const char *entries)
{
    snprintf (out, size, "{\"keys\":[%s]}", entries);
}

static void
s_entry (char *out, size_t size, const char *id, const char *key, const char *team, const char *more)
{
    char hex [SL_KEYRING_HEX_SIZE];
    sl_keyring_key_hex (key, hex);
    snprintf (out, size, "{\"id\":\"%s\",\"sha256\":\"%s\",\"team\":\"%s\",\"user\":\"alice\"%s}", id, hex, team,
              more ? more : "");
}

Test (sl_keyring_served, served_keys_join_the_files)
{
    sl_keyring_t *file = s_file ();
    char a [512], b [512], c [512], entries [1600], set [1700];
    s_entry (a, sizeof a, "payments-aaa", S_SERVED_KEY, "payments",
             ",\"models\":[\"gpt-4o*\"],\"limits\":{\"rpm\":60,\"budget\":{\"tokens\":5,\"usd\":1.5},"
             "\"alerts\":{\"at\":[50,80,100]}},\"approver\":true");
    s_entry (b, sizeof b, "payments-aaa", S_GRACE_KEY, "payments", NULL);
    s_entry (c, sizeof c, "other-ccc", S_FILE_KEY, "other", NULL);    //  the file's key: the file wins
    snprintf (entries, sizeof entries, "%s,%s,%s", a, b, c);
    s_set (set, sizeof set, entries);
    char *error = NULL;
    sl_keyring_t *ring = sl_keyring_merge (file, set, strlen (set), &error);
    cr_assert_not_null (ring, "%s", error ? error : "");
    cr_expect_eq (sl_keyring_count (ring), 3);
    const sl_keyentry_t *k = sl_keyring_find (ring, S_SERVED_KEY);
    cr_assert_not_null (k);
    cr_expect_str_eq (k->id, "payments-aaa");
    cr_expect_str_eq (k->user, "alice");
    cr_expect_str_eq (k->team->name, "payments");
    cr_expect (k->team->listed, "the file's team, with its settings");
    cr_expect_eq (k->team->limits.rpm, 600);
    cr_expect_eq (k->limits.rpm, 60);
    cr_expect_eq (k->limits.budget_tokens, 5);
    cr_expect_eq (k->limits.budget_usd, 1.5);
    //  A console key's alerts fire as the keys file's (sl_limits_crossed).
    cr_expect_eq (k->limits.alert_count, 3);
    cr_expect_eq (k->limits.alert_at [0], 50);
    cr_expect_eq (k->limits.alert_at [2], 100);
    cr_expect (k->approver);
    cr_expect (sl_keyring_model_allowed (k->models, "gpt-4o-mini"));
    cr_expect (!sl_keyring_model_allowed (k->models, "gpt-3.5"));
    const sl_keyentry_t *old = sl_keyring_find (ring, S_GRACE_KEY);
    cr_assert_not_null (old, "a secret in its grace");
    cr_expect_str_eq (old->id, "payments-aaa");
    cr_expect_null (old->models, "none of its own: the team's");
    const sl_keyentry_t *f = sl_keyring_find (ring, S_FILE_KEY);
    cr_assert_not_null (f);
    cr_expect_str_eq (f->id, "file-key", "the file's entry wins");
    cr_expect_null (sl_keyring_find (ring, "sk-nobody"));
    sl_keyring_unref (&file);           //  the merged ring holds its own reference
    cr_expect_str_eq (sl_keyring_find (ring, S_FILE_KEY)->user, "bob");
    cr_expect_not_null (sl_keyring_team (ring, "payments"));
    sl_keyring_unref (&ring);
}

Test (sl_keyring_served, without_a_file_only_the_served_keys)
{
    char a [512], set [700];
    s_entry (a, sizeof a, "t-aaa", S_SERVED_KEY, "t", NULL);
    s_set (set, sizeof set, a);
    char *error = NULL;
    sl_keyring_t *ring = sl_keyring_merge (NULL, set, strlen (set), &error);
    cr_assert_not_null (ring, "%s", error ? error : "");
    cr_expect_eq (sl_keyring_count (ring), 1);
    cr_expect_not_null (sl_keyring_find (ring, S_SERVED_KEY));
    cr_expect (!sl_keyring_team (ring, "t")->listed);
    sl_keyring_unref (&ring);
    //  An empty set: a keyring that lets nobody in (not "no keys").
    ring = sl_keyring_merge (NULL, "{\"keys\":[]}", 11, &error);
    cr_assert_not_null (ring);
    cr_expect_eq (sl_keyring_count (ring), 0);
    cr_expect_null (sl_keyring_find (ring, S_SERVED_KEY));
    sl_keyring_unref (&ring);
}

Test (sl_keyring_served, a_bad_set_is_refused_whole)
{
    sl_keyring_t *file = s_file ();
    char good [512];
    s_entry (good, sizeof good, "t-aaa", S_SERVED_KEY, "t", NULL);
    const char *bad [] = {
        "",
        "[]",
        "{\"keys\":{}}",
        "{\"keys\":[1]}",
        "{\"keys\":[{\"id\":\"x\",\"sha256\":\"abc\",\"team\":\"t\"}]}",
        "{\"keys\":[{\"id\":\"a b\",\"sha256\":\"" "0000000000000000000000000000000000000000000000000000000000000000"
        "\",\"team\":\"t\"}]}",
        "{\"keys\":[{\"id\":\"x\",\"sha256\":\"" "0000000000000000000000000000000000000000000000000000000000000000"
        "\",\"team\":\"t\",\"policy\":\"/etc/passwd\"}]}",
        "{\"keys\":[{\"id\":\"x\",\"sha256\":\"" "0000000000000000000000000000000000000000000000000000000000000000"
        "\",\"team\":\"t\",\"limits\":{\"rpm\":-1}}]}",
        "{\"keys\":[{\"id\":\"x\",\"sha256\":\"" "0000000000000000000000000000000000000000000000000000000000000000"
        "\",\"team\":\"t\",\"limits\":{\"alerts\":{\"at\":[80,50]}}}]}",
        "{\"keys\":[{\"id\":\"x\",\"sha256\":\"" "0000000000000000000000000000000000000000000000000000000000000000"
        "\",\"team\":\"t\",\"limits\":{\"alerts\":{\"at\":[101]}}}]}",
        "{\"keys\":[{\"id\":\"x\",\"sha256\":\"" "0000000000000000000000000000000000000000000000000000000000000000"
        "\",\"team\":\"t\",\"limits\":{\"alerts\":{\"on\":[50]}}}]}",
        "{\"keys\":[{\"id\":\"x\",\"sha256\":\"" "0000000000000000000000000000000000000000000000000000000000000000"
        "\",\"team\":\"t\",\"models\":[\"\"]}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        char *error = NULL;
        sl_keyring_t *ring = sl_keyring_merge (file, bad [i], strlen (bad [i]), &error);
        cr_expect_null (ring, "accepted: %s", bad [i]);
        cr_expect_not_null (error, "%s: says why", bad [i]);
        free (error);
        sl_keyring_unref (&ring);
    }
    //  One bad entry beside a good one: nothing taken.
    char set [1200];
    snprintf (set, sizeof set, "{\"keys\":[%s,{\"id\":\"x\"}]}", good);
    char *error = NULL;
    cr_expect_null (sl_keyring_merge (file, set, strlen (set), &error));
    free (error);
    sl_keyring_unref (&file);
}
