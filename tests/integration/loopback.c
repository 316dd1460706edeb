/*  loopback.c - a deployment's addresses onto loopback (see loopback.h). */
#include "tests/integration/loopback.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/harness.h"

#define LOOPBACK_MAX_PORTS 48
#define LOOPBACK_POLICY "/etc/sluice/policy.yaml"   //  the image's policy

static struct { int from, to; } s_ports [LOOPBACK_MAX_PORTS];
static int s_port_count;

int
loopback_port (int from)
{
    for (int i = 0; i < s_port_count; i++)
        if (s_ports [i].from == from)
            return s_ports [i].to;
    cr_assert_lt (s_port_count, LOOPBACK_MAX_PORTS);
    s_ports [s_port_count].from = from;
    s_ports [s_port_count].to = harness_free_port ();
    return s_ports [s_port_count++].to;
}

char *
loopback_rewrite (const char *arg, const char *prev, const char *keys_path, const char *keys_dir)
{
    char out [512];
    //  ${VAR:-default} takes its default (the tests set no such variable).
    const char *dollar = strstr (arg, "${");
    char expanded [512];
    if (dollar && strstr (dollar, ":-")) {
        const char *def = strstr (dollar, ":-") + 2;
        const char *close = strrchr (arg, '}');
        snprintf (expanded, sizeof expanded, "%.*s%.*s%s", (int) (dollar - arg), arg,
                  (int) (close - def), def, close + 1);
        arg = expanded;
    }
    if (prev && (strcmp (prev, "--port") == 0 || strcmp (prev, "--http-port") == 0
             ||  strcmp (prev, "--metrics-port") == 0 || strcmp (prev, "--console-port") == 0)) {
        snprintf (out, sizeof out, "%d", loopback_port (atoi (arg)));
        return strdup (out);
    }
    if (strcmp (arg, "0.0.0.0") == 0)
        return strdup ("127.0.0.1");
    if (strcmp (arg, LOOPBACK_POLICY) == 0)
        return strdup ("deploy/policy.yaml");
    if (strcmp (arg, keys_path) == 0)
        return strdup (keys_dir);
    //  A file of the key directory (the audit's signing key).
    size_t keys_len = strlen (keys_path);
    if (strncmp (arg, keys_path, keys_len) == 0 && arg [keys_len] == '/') {
        snprintf (out, sizeof out, "%s%s", keys_dir, arg + keys_len);
        return strdup (out);
    }
    const char *scheme = strstr (arg, "://");
    if (scheme) {
        const char *host = scheme + 3;
        //  user:password@host: the host is after the @.
        const char *at = strchr (host, '@');
        const char *slash = strchr (host, '/');
        if (at && (!slash || at < slash))
            host = at + 1;
        const char *colon = strchr (host, ':');
        slash = strchr (host, '/');
        if (colon && (!slash || colon < slash)) {
            const char *rest = colon + 1;
            while (*rest >= '0' && *rest <= '9')
                rest++;
            snprintf (out, sizeof out, "%.*s127.0.0.1:%d%s", (int) (host - arg), arg,
                      loopback_port (atoi (colon + 1)), rest);
            return strdup (out);
        }
    }
    return strdup (arg);
}
