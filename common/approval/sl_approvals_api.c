/*  sl_approvals_api.c - paths and decisions of the approvals HTTP APIs
    (see sl_approvals_api.h). */
#include "common/approval/sl_approvals_api.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

static bool
s_hex (const char *text, size_t len)
{
    if (!text || strlen (text) != len)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!strchr ("0123456789abcdefABCDEF", text [i]))
            return false;
    return true;
}

sl_approvals_path_t
sl_approvals_path (const char *path, const char *prefix, char id [SL_APPROVALS_ID_HEX + 1])
{
    size_t n = strlen (prefix);
    id [0] = 0;
    if (strncmp (path, prefix, n) != 0)
        return SL_APPROVALS_PATH_NONE;
    const char *rest = path + n;
    if (*rest == 0 || strcmp (rest, "/") == 0)
        return SL_APPROVALS_PATH_LIST;
    if (*rest != '/')
        return SL_APPROVALS_PATH_NONE;
    rest++;
    if (s_hex (rest, SL_APPROVALS_ID_HEX)) {
        for (size_t i = 0; i <= SL_APPROVALS_ID_HEX; i++)
            id [i] = (char) (rest [i] >= 'A' && rest [i] <= 'F' ? rest [i] - 'A' + 'a' : rest [i]);
    }
    return SL_APPROVALS_PATH_ONE;
}

//  An optional string member no longer than max bytes; -1 (why filled)
//  when it is there and is not one.
static int
s_string (json_t *doc, const char *field, size_t max, char **out, char why [SL_APPROVALS_WHY_MAX])
{
    json_t *v = json_object_get (doc, field);
    if (!v)
        return 0;
    if (!json_is_string (v)) {
        snprintf (why, SL_APPROVALS_WHY_MAX, "%s: must be a string", field);
        return -1;
    }
    if (json_string_length (v) > max) {
        snprintf (why, SL_APPROVALS_WHY_MAX, "%s: at most %zu bytes", field, max);
        return -1;
    }
    *out = sl_xstrdup (json_string_value (v));
    return 0;
}

static const char *s_fields [] = { "decision", "comment", "remember_minutes", "digest", "policy" };

int
sl_approvals_parse (sl_str_t body, sl_approvals_parsed_t *out, char why [SL_APPROVALS_WHY_MAX])
{
    memset (out, 0, sizeof *out);
    json_error_t error;
    json_t *doc = body.len ? json_loadb (body.ptr, body.len, JSON_REJECT_DUPLICATES, &error) : NULL;
    if (!json_is_object (doc)) {
        snprintf (why, SL_APPROVALS_WHY_MAX, "body: must be a JSON object with a decision");
        json_decref (doc);
        return -1;
    }
    const char *key;
    json_t *value;
    json_object_foreach (doc, key, value) {
        bool known = false;
        for (size_t i = 0; i < sizeof s_fields / sizeof s_fields [0]; i++)
            known |= strcmp (key, s_fields [i]) == 0;
        if (!known) {
            snprintf (why, SL_APPROVALS_WHY_MAX, "%.64s: not a field of a decision "
                      "(decision, comment, remember_minutes, digest, policy)", key);
            json_decref (doc);
            return -1;
        }
    }
    int rc = -1;
    const char *decision = json_string_value (json_object_get (doc, "decision"));
    json_t *minutes = json_object_get (doc, "remember_minutes");
    if (!decision || (strcmp (decision, "approve") != 0 && strcmp (decision, "deny") != 0))
        snprintf (why, SL_APPROVALS_WHY_MAX, "decision: must be \"approve\" or \"deny\"");
    else
    if (minutes && (!json_is_integer (minutes) || json_integer_value (minutes) < 0
                    || json_integer_value (minutes) > SL_APPROVALS_REMEMBER_MAX))
        snprintf (why, SL_APPROVALS_WHY_MAX, "remember_minutes: must be a whole number from 0 to %d",
                  SL_APPROVALS_REMEMBER_MAX);
    else
    if (minutes && json_integer_value (minutes) > 0 && strcmp (decision, "approve") != 0)
        snprintf (why, SL_APPROVALS_WHY_MAX, "remember_minutes: only an approval is remembered");
    else
    if (s_string (doc, "comment", SL_APPROVALS_COMMENT_MAX, &out->comment, why) == 0
    &&  s_string (doc, "digest", SL_APPROVALS_DIGEST_HEX, &out->digest, why) == 0
    &&  s_string (doc, "policy", SL_APPROVALS_POLICY_MAX, &out->policy, why) == 0) {
        if (out->digest && !s_hex (out->digest, SL_APPROVALS_DIGEST_HEX))
            snprintf (why, SL_APPROVALS_WHY_MAX, "digest: must be %d hex digits (the approval's digest)",
                      SL_APPROVALS_DIGEST_HEX);
        else
            rc = 0;
    }
    if (rc == 0) {
        out->decision.approve = strcmp (decision, "approve") == 0;
        out->decision.comment = out->comment;
        out->decision.remember_minutes = minutes ? (int64_t) json_integer_value (minutes) : 0;
        out->decision.digest = out->digest;
        out->decision.policy = out->policy;
    }
    else
        sl_approvals_parsed_clear (out);
    json_decref (doc);
    return rc;
}

void
sl_approvals_parsed_clear (sl_approvals_parsed_t *self)
{
    free (self->comment);
    free (self->digest);
    free (self->policy);
    memset (self, 0, sizeof *self);
}

const char *
sl_approvals_error_type (int status)
{
    switch (status) {
        case 400: return "invalid_request_error";
        case 401: return "authentication_error";
        case 403: return "permission_error";
        case 404: return "not_found_error";
        case 405: return "invalid_request_error";
        case 409: return "conflict_error";
        case 410: return "expired_error";
        case 413: return "request_too_large";
        case 503: return "unavailable_error";
        default:  return "api_error";
    }
}
