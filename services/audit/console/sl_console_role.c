/*  sl_console_role.c - console callers and their roles (see sl_console_role.h). */
#include "services/audit/console/sl_console_role.h"

#include <stdio.h>
#include <string.h>

static const char *s_names [] = { "viewer", "auditor", "approver", "admin" };
_Static_assert (sizeof s_names / sizeof s_names [0] == SL_CONSOLE_ROLES, "a name per role");

const char *
sl_console_role_name (sl_console_role_t role)
{
    return role >= 0 && role < SL_CONSOLE_ROLES ? s_names [role] : "nobody";
}

sl_console_role_t
sl_console_role_parse (const char *name, size_t len)
{
    for (int i = 0; i < SL_CONSOLE_ROLES; i++)
        if (strlen (s_names [i]) == len && memcmp (s_names [i], name, len) == 0)
            return (sl_console_role_t) i;
    return SL_CONSOLE_NOBODY;
}

static void
s_copy (json_t *payload, const char *claim, char out [SL_CONSOLE_TEXT_MAX])
{
    const char *v = json_string_value (json_object_get (payload, claim));
    snprintf (out, SL_CONSOLE_TEXT_MAX, "%s", v ? v : "");
}

//  One value of the role claim.
static void
s_value (sl_console_caller_t *out, const char *v)
{
    size_t n = strlen (SL_CONSOLE_APPROVER_PREFIX);
    if (strncmp (v, SL_CONSOLE_APPROVER_PREFIX, n) == 0) {
        if (v [n] && strlen (v + n) < SL_CONSOLE_TEXT_MAX && out->team_count < SL_CONSOLE_MAX_TEAMS) {
            snprintf (out->teams [out->team_count++], SL_CONSOLE_TEXT_MAX, "%s", v + n);
            if (out->role < SL_CONSOLE_APPROVER)
                out->role = SL_CONSOLE_APPROVER;
        }
        return;
    }
    n = strlen (SL_CONSOLE_ROLE_PREFIX);
    if (strncmp (v, SL_CONSOLE_ROLE_PREFIX, n) != 0)
        return;                         //  a group of something else
    sl_console_role_t role = sl_console_role_parse (v + n, strlen (v + n));
    //  "sluice-approver" without a team decides for no team: it adds nothing.
    if (role != SL_CONSOLE_APPROVER && role > out->role)
        out->role = role;
}

int
sl_console_role_from_claims (json_t *payload, const char *claim, sl_console_caller_t *out)
{
    memset (out, 0, sizeof *out);
    out->role = SL_CONSOLE_VIEWER;
    s_copy (payload, "sub", out->sub);
    s_copy (payload, "email", out->email);
    s_copy (payload, "name", out->name);
    if (!*out->sub) {
        out->role = SL_CONSOLE_NOBODY;
        return -1;
    }
    json_t *roles = json_object_get (payload, claim && *claim ? claim : "groups");
    if (json_is_string (roles))
        s_value (out, json_string_value (roles));
    else
    if (json_is_array (roles)) {
        size_t i;
        json_t *v;
        json_array_foreach (roles, i, v)
            if (json_is_string (v))
                s_value (out, json_string_value (v));
    }
    return 0;
}

bool
sl_console_role_decides_for (const sl_console_caller_t *caller, const char *team)
{
    if (caller->role == SL_CONSOLE_ADMIN)
        return true;
    if (caller->role != SL_CONSOLE_APPROVER || !team)
        return false;
    for (int i = 0; i < caller->team_count; i++)
        if (strcmp (caller->teams [i], team) == 0)
            return true;
    return false;
}

void
sl_console_role_label (const sl_console_caller_t *caller, char *out, size_t size)
{
    snprintf (out, size, "%s%s%s%s%s%s%s", caller->name, *caller->name ? " " : "",
              *caller->email ? "<" : "", caller->email, *caller->email ? "> " : "",
              *caller->sub ? "(" : "", caller->sub);
    if (*caller->sub && strlen (out) + 1 < size)
        strcat (out, ")");
}

//  The fields that hold what people and models wrote (an approval's
//  message too: a rule's ask message may quote the arguments; a live
//  block's text: a message, thinking or a tool's result).
static const char *s_contents [] = { "content", "arguments", "last_user", "message", "text", NULL };

void
sl_console_role_redact (json_t *v)
{
    if (json_is_array (v)) {
        size_t i;
        json_t *item;
        json_array_foreach (v, i, item)
            sl_console_role_redact (item);
    }
    else
    if (json_is_object (v)) {
        const char *key;
        json_t *item;
        json_object_foreach (v, key, item) {
            bool content = false;
            for (int i = 0; s_contents [i]; i++)
                content |= strcmp (key, s_contents [i]) == 0;
            if (content)
                json_object_set_new (v, key, json_null ());
            else
                sl_console_role_redact (item);
        }
    }
}
