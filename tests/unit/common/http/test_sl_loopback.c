/*  Unit tests: common/http/sl_loopback - the names of this machine, and
    what a door without keys refuses (DNS rebinding). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/http/sl_loopback.h"

Test (sl_loopback, the_names_of_this_machine_with_any_port)
{
    const char *ok [] = { "localhost", "localhost:8080", "LocalHost:1", "127.0.0.1", "127.0.0.1:65535",
                          "127.255.3.4:80", "[::1]", "[::1]:8081", "[0:0:0:0:0:0:0:1]:9", "[::ffff:127.0.0.1]:80",
                          "[::ffff:7f00:1]", NULL };
    for (int i = 0; ok [i]; i++)
        cr_expect (sl_loopback_host (ok [i]), "%s is this machine", ok [i]);
}

Test (sl_loopback, every_other_name_is_foreign)
{
    //  A name that resolves to 127.0.0.1 is the attack itself.
    const char *foreign [] = { "rebound.example", "rebound.example:8080", "localhost.", "localhost.example",
                               "sub.localhost", "localhostx", "127.0.0.1.nip.io", "128.0.0.1", "10.0.0.1:8080",
                               "0.0.0.0", "[::2]", "[::1", "[::ffff:10.0.0.1]", "127.1", "127.0.0.01",
                               "localhost:", "localhost:80:80", "localhost:123456", "localhost:70000",
                               "localhost:8a", "localhost/x", "", " localhost", "::1", NULL };
    for (int i = 0; foreign [i]; i++)
        cr_expect_not (sl_loopback_host (foreign [i]), "'%s' is not this machine", foreign [i]);
    cr_expect_not (sl_loopback_host (NULL));
}

Test (sl_loopback, an_origin_is_a_page_of_a_loopback_name)
{
    cr_expect (sl_loopback_origin ("http://127.0.0.1:8081"));
    cr_expect (sl_loopback_origin ("https://localhost"));
    cr_expect (sl_loopback_origin ("http://[::1]:3000"));
    cr_expect_not (sl_loopback_origin ("http://rebound.example:8081"));
    cr_expect_not (sl_loopback_origin ("null"), "a sandboxed frame or a file");
    cr_expect_not (sl_loopback_origin ("file://"));
    cr_expect_not (sl_loopback_origin ("chrome-extension://localhost"));
    cr_expect_not (sl_loopback_origin ("http://localhost.evil.example"));
    cr_expect_not (sl_loopback_origin ("http://localhost/path"), "an origin has no path");
    cr_expect_not (sl_loopback_origin ("localhost"));
    cr_expect_not (sl_loopback_origin (""));
    cr_expect_not (sl_loopback_origin (NULL));
}

Test (sl_loopback, a_door_without_keys_refuses_a_foreign_host_or_origin_saying_why)
{
    cr_expect_null (sl_loopback_refusal ("localhost:8080", NULL), "kubectl port-forward");
    cr_expect_null (sl_loopback_refusal ("127.0.0.1:8081", "http://127.0.0.1:8081"), "the console's own page");
    cr_expect_null (sl_loopback_refusal (NULL, NULL), "a program that sends no Host is not a browser");
    const char *why = sl_loopback_refusal ("rebound.example:8080", NULL);
    cr_assert_not_null (why);
    cr_expect_not_null (strstr (why, "Host"), "%s", why);
    why = sl_loopback_refusal ("localhost:8080", "http://rebound.example:8080");
    cr_assert_not_null (why);
    cr_expect_not_null (strstr (why, "Origin"), "%s", why);
    cr_expect_not_null (sl_loopback_refusal ("", NULL), "an empty Host is no name of this machine");
    cr_expect_not_null (sl_loopback_refusal (NULL, "null"));
}

Test (sl_loopback, only_a_loopback_address_keeps_a_listener_to_this_machine)
{
    cr_expect (sl_loopback_address ("127.0.0.1"));
    cr_expect (sl_loopback_address ("127.0.0.2"));
    cr_expect (sl_loopback_address ("::1"));
    cr_expect_not (sl_loopback_address ("0.0.0.0"), "every address");
    cr_expect_not (sl_loopback_address ("10.1.2.3"));
    cr_expect_not (sl_loopback_address ("::"));
    cr_expect_not (sl_loopback_address ("localhost"), "a name is not an address");
    cr_expect_not (sl_loopback_address (""));
    cr_expect_not (sl_loopback_address (NULL));
}
