/*  Unit tests: base64 to bytes (sl_base64): RFC 4648's vectors, the same
    bytes as libsodium's decoder at every length, and what strict padded
    base64 refuses; each with every code the CPU has. */
#include <criterion/criterion.h>
#include <sodium.h>
#include <stdbool.h>
#include <string.h>

#include "common/base/sl_base64.h"

static int
s_decode (const char *text, char *out, size_t *len)
{
    return sl_base64_decode (text, strlen (text), (uint8_t *) out, len);
}

static void
s_rfc_4648_vectors (void)
{
    static const char *cases [][2] = {
        { "", "" }, { "Zg==", "f" }, { "Zm8=", "fo" }, { "Zm9v", "foo" },
        { "Zm9vYg==", "foob" }, { "Zm9vYmE=", "fooba" }, { "Zm9vYmFy", "foobar" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char out [16];
        size_t len = 99;
        cr_assert_eq (s_decode (cases [i][0], out, &len), 0, "%s", cases [i][0]);
        cr_expect_eq (len, strlen (cases [i][1]), "%s", cases [i][0]);
        cr_expect_eq (memcmp (out, cases [i][1], len), 0, "%s", cases [i][0]);
    }
}

static void
s_the_same_bytes_as_libsodium_at_every_length (void)
{
    cr_assert_geq (sodium_init (), 0);
    uint8_t bytes [200], back [200];
    char text [300];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes [i] = (uint8_t) (i * 151 + 7);
    for (size_t n = 0; n <= sizeof bytes; n++) {
        sodium_bin2base64 (text, sizeof text, bytes, n, sodium_base64_VARIANT_ORIGINAL);
        size_t len = 0;
        cr_assert_eq (sl_base64_decode (text, strlen (text), back, &len), 0, "%zu bytes: %s", n, text);
        cr_assert_eq (len, n);
        cr_assert_eq (memcmp (back, bytes, n), 0, "%zu bytes", n);
    }
}

static void
s_refuses_what_is_not_padded_base64 (void)
{
    static const char *bad [] = {
        "Zg", "Zm9", "Zm9vY", "Zg=", "Z===", "====", "Zg==Zg==", "Zm=v", "Zm9v Zm9v",
        "Zm9v\nZm9v", "Zm9-", "Zm9_", "Zm\\/v", "Zh==", "Zm9=", "Zm9vYmF\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        char out [16];
        size_t len;
        cr_expect_eq (s_decode (bad [i], out, &len), -1, "%s", bad [i]);
        unsigned char sodium_out [16];
        cr_expect_neq (sodium_base642bin (sodium_out, sizeof sodium_out, bad [i], strlen (bad [i]), NULL,
                                          &len, NULL, sodium_base64_VARIANT_ORIGINAL), 0,
                       "libsodium refuses %s too", bad [i]);
    }
}

static void
s_every_byte_at_every_place_of_a_long_text (void)
{
    //  Long enough for the sixteen-character steps: any byte outside the
    //  alphabet, anywhere but the last quad, refuses the whole; any byte
    //  of it decodes as libsodium decodes it.
    cr_assert_geq (sodium_init (), 0);
    static const char alphabet [] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char text [73];
    for (size_t i = 0; i < 72; i++)
        text [i] = alphabet [(i * 37 + 5) % 64];
    text [72] = 0;
    for (size_t at = 0; at < 68; at++)
        for (int b = 0; b < 256; b++) {
            char t [73];
            memcpy (t, text, sizeof t);
            t [at] = (char) b;
            uint8_t out [54], want [54];
            size_t len = 0, want_len = 0;
            bool valid = b && memchr (alphabet, b, 64) != NULL;
            int rc = sl_base64_decode (t, 72, out, &len);
            cr_assert_eq (rc, valid ? 0 : -1, "byte %d at %zu", b, at);
            if (!valid)
                continue;
            cr_assert_eq (sodium_base642bin (want, sizeof want, t, 72, NULL, &want_len, NULL,
                                             sodium_base64_VARIANT_ORIGINAL), 0);
            cr_assert_eq (len, want_len);
            cr_assert_eq (memcmp (out, want, len), 0, "byte %d at %zu", b, at);
        }
}

//  Each test with every code the CPU has: the table's, SSSE3's, AVX2's.
#define EVERY_CODE(name)                                                        \
    Test (sl_base64, name)                                                      \
    {                                                                           \
        for (int code = SL_BASE64_SCALAR; code < SL_BASE64_BEST; code++)        \
            if (sl_base64_use ((sl_base64_code_t) code) == 0) {                 \
                s_##name ();                                                    \
                cr_log_info ("%s: code %d", #name, code);                       \
            }                                                                   \
        sl_base64_use (SL_BASE64_BEST);                                         \
    }

EVERY_CODE (rfc_4648_vectors)
EVERY_CODE (the_same_bytes_as_libsodium_at_every_length)
EVERY_CODE (refuses_what_is_not_padded_base64)
EVERY_CODE (every_byte_at_every_place_of_a_long_text)
