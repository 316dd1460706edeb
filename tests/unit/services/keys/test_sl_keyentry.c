/*  Unit tests: services/keys/sl_keyentry - a new key and its entry: the
    entry, put under a keys file's keys: list as it is, loads, and names
    the key by its hash. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/identity/sl_keyring.h"
#include "services/keys/sl_keyentry.h"

Test (sl_keyentry, a_new_key_and_its_entry_make_a_working_file)
{
    char a [SL_KEYENTRY_KEY_MAX], b [SL_KEYENTRY_KEY_MAX];
    sl_keyentry_new_key (a);
    sl_keyentry_new_key (b);
    cr_expect_eq (strncmp (a, SL_KEYENTRY_PREFIX, strlen (SL_KEYENTRY_PREFIX)), 0);
    cr_expect_eq (strlen (a), strlen (SL_KEYENTRY_PREFIX) + 43, "32 random bytes in base64url");
    cr_expect_str_neq (a, b, "fresh every time");
    sl_keyentry_spec_t spec = { .team = "payments", .user = "Alice \"A\" Doe", .rpm = 60, .tokens_per_day = 1000 };
    sl_buf_t file = { 0 };
    sl_buf_puts (&file, "keys:\n");
    cr_assert_eq (sl_keyentry_write (a, &spec, &file), 0);
    spec = (sl_keyentry_spec_t) { .user = "bob", .approver = true };
    cr_assert_eq (sl_keyentry_write (b, &spec, &file), 0);
    cr_expect_null (strstr (sl_buf_cstr (&file), a), "the key itself is in no entry");
    char *error = NULL;
    sl_keyring_t *ring = sl_keyring_parse (file.data, file.len, "keys.yaml", &error);
    cr_assert_not_null (ring, "%s\n%s", error, sl_buf_cstr (&file));
    const sl_keyentry_t *e = sl_keyring_find (ring, a);
    cr_assert_not_null (e);
    cr_expect_str_eq (e->team->name, "payments");
    cr_expect_str_eq (e->user, "Alice \"A\" Doe");
    cr_expect_eq (e->limits.rpm, 60);
    cr_expect_eq (e->limits.tokens_per_day, 1000);
    cr_expect_eq (e->limits.concurrent, 0);
    cr_expect_not (e->approver, "not an approver unless asked");
    const sl_keyentry_t *f = sl_keyring_find (ring, b);
    cr_assert_not_null (f);
    cr_expect_str_eq (f->team->name, SL_KEYRING_DEFAULT_TEAM);
    cr_expect (f->approver, "--approver writes approver: true");
    sl_keyring_unref (&ring);
    sl_buf_free (&file);
    sl_buf_t bad = { 0 };
    spec = (sl_keyentry_spec_t) { .team = "pay ments" };
    cr_expect_eq (sl_keyentry_write (a, &spec, &bad), -1, "a team a keys file would refuse");
    sl_buf_free (&bad);
}
