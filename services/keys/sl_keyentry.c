/*  sl_keyentry.c - a new client key and its entry (see sl_keyentry.h). */
#include "services/keys/sl_keyentry.h"

#include <stdio.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/base/sl_name.h"
#include "common/identity/sl_keyring.h"

#define S_ID_HEX 12                     //  hex digits of the key's hash in its id

_Static_assert (SL_KEYENTRY_KEY_MAX == SL_KEYRING_KEY_MAX, "one size of key");

void
sl_keyentry_new_key (char key [SL_KEYENTRY_KEY_MAX])
{
    sl_keyring_new_key (key);
}

int
sl_keyentry_request (const sl_keyentry_spec_t *spec, const char *models, sl_buf_t *out)
{
    if (spec->policy || !spec->team || !spec->user)
        return -1;
    sl_buf_puts (out, "{\"team\":");
    sl_json_put_str (out, spec->team, strlen (spec->team));
    sl_buf_puts (out, ",\"user\":");
    sl_json_put_str (out, spec->user, strlen (spec->user));
    if (models && *models) {
        sl_buf_puts (out, ",\"models\":[");
        const char *p = models;
        for (bool first = true; *p; first = false) {
            size_t n = strcspn (p, ",");
            if (!first)
                sl_buf_putc (out, ',');
            sl_json_put_str (out, p, n);
            p += n + (p [n] == ',');
        }
        sl_buf_putc (out, ']');
    }
    if (spec->rpm || spec->concurrent || spec->tokens_per_day) {
        sl_buf_printf (out, ",\"limits\":{\"rpm\":%lld,\"concurrent\":%lld,\"tokens_per_day\":%lld}",
                       (long long) spec->rpm, (long long) spec->concurrent, (long long) spec->tokens_per_day);
    }
    sl_buf_printf (out, ",\"approver\":%s}", spec->approver ? "true" : "false");
    return 0;
}

//  Text as a YAML double-quoted scalar.
static void
s_quoted (sl_buf_t *out, const char *text)
{
    sl_buf_putc (out, '"');
    for (const char *p = text; *p; p++) {
        if (*p == '"' || *p == '\\')
            sl_buf_putc (out, '\\');
        sl_buf_putc (out, *p);
    }
    sl_buf_putc (out, '"');
}

int
sl_keyentry_write (const char *key, const sl_keyentry_spec_t *spec, sl_buf_t *out)
{
    if ((spec->team && !sl_name_valid (spec->team)) || (spec->user && strpbrk (spec->user, "\n\r")))
        return -1;
    char hex [SL_KEYRING_HEX_SIZE];
    sl_keyring_key_hex (key, hex);
    sl_buf_printf (out, "- id: %s-%.*s\n", spec->team ? spec->team : SL_KEYRING_DEFAULT_TEAM, S_ID_HEX, hex);
    sl_buf_printf (out, "  sha256: %s\n", hex);
    sl_buf_printf (out, "  team: %s\n", spec->team ? spec->team : SL_KEYRING_DEFAULT_TEAM);
    if (spec->user) {
        sl_buf_puts (out, "  user: ");
        s_quoted (out, spec->user);
        sl_buf_putc (out, '\n');
    }
    if (spec->policy) {
        sl_buf_puts (out, "  policy: ");
        s_quoted (out, spec->policy);
        sl_buf_putc (out, '\n');
    }
    if (spec->rpm || spec->concurrent || spec->tokens_per_day) {
        sl_buf_puts (out, "  limits: {");
        const char *sep = "";
        if (spec->rpm) {
            sl_buf_printf (out, "rpm: %lld", (long long) spec->rpm);
            sep = ", ";
        }
        if (spec->concurrent) {
            sl_buf_printf (out, "%sconcurrent: %lld", sep, (long long) spec->concurrent);
            sep = ", ";
        }
        if (spec->tokens_per_day)
            sl_buf_printf (out, "%stokens_per_day: %lld", sep, (long long) spec->tokens_per_day);
        sl_buf_puts (out, "}\n");
    }
    if (spec->approver)
        sl_buf_puts (out, "  approver: true\n");
    return 0;
}
