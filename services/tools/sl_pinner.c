/*  sl_pinner.c - pins from requests and from the inventory (see
    sl_pinner.h). */
#include "services/tools/sl_pinner.h"

#include <string.h>

#include "common/dialects/sl_job.h"
#include "common/tools/sl_tooldef.h"

int
sl_pinner_request (sl_pins_t *pins, const char *team, int dialect, sl_str_t body, sl_buf_t *why)
{
    //  A Gemini request names its model in the path: any will do here.
    sl_endpoint_t endpoint = { .dialect = dialect, .stream = true, .sse = true };
    snprintf (endpoint.model, sizeof endpoint.model, "pinned");
    sl_job_t job;
    memset (&job, 0, sizeof job);
    if (sl_job_parse (&endpoint, body, &job)) {
        sl_buf_printf (why, "the request does not parse: %s", sl_buf_cstr (&job.error_message));
        sl_job_clear (&job);
        return -1;
    }
    int count = 0;
    for (size_t i = 0; i < job.req->tool_count; i++) {
        const sl_tool_t *t = &job.req->tools [i];
        if (!t->name.ptr)
            continue;                   //  a provider's own tool: nothing to pin
        char digest [SL_TOOLDEF_DIGEST_SIZE];
        sl_tooldef_digest_tool (t, digest);
        char name [1024];
        snprintf (name, sizeof name, "%.*s", (int) t->name.len, t->name.ptr);
        sl_pins_add (pins, team, name, digest);
        count++;
    }
    sl_job_clear (&job);
    return count;
}

int
sl_pinner_list (sl_pins_t *pins, const char *team, sl_str_t list, sl_buf_t *why)
{
    json_error_t error;
    json_t *all = json_loadb (list.ptr, list.len, 0, &error);
    if (!json_is_array (all)) {
        sl_buf_printf (why, "the definitions are not a JSON array (%s, line %d)", all ? "not an array" : error.text,
                       error.line);
        json_decref (all);
        return -1;
    }
    int count = 0;
    size_t i;
    json_t *d;
    json_array_foreach (all, i, d) {
        const char *entry_team = json_string_value (json_object_get (d, "team"));
        const char *name = json_string_value (json_object_get (d, "name"));
        const char *given = json_string_value (json_object_get (d, "digest"));
        json_t *description = json_object_get (d, "description");
        json_t *schema = json_object_get (d, "schema");
        if (!entry_team || strcmp (entry_team, team) != 0)
            continue;
        if (!name) {
            sl_buf_printf (why, "definition %zu has no name", i);
            count = -1;
            break;
        }
        char digest [SL_TOOLDEF_DIGEST_SIZE] = "";
        if (json_is_string (description) || json_is_object (schema)) {
            sl_str_t text = json_is_string (description)
                          ? sl_str_n (json_string_value (description), json_string_length (description)) : SL_STR_NULL;
            sl_tooldef_digest (sl_str (name), text, json_is_object (schema) ? schema : NULL, digest);
            if (given && strcmp (given, digest) != 0) {
                sl_buf_printf (why, "definition %zu (%s): its digest %s is not its definition's (%s)", i, name,
                               given, digest);
                count = -1;
                break;
            }
        }
        else
        if (given)
            snprintf (digest, sizeof digest, "%s", given);
        if (sl_pins_add (pins, team, name, digest)) {
            sl_buf_printf (why, "definition %zu (%s): no digest, description or schema to pin", i, name);
            count = -1;
            break;
        }
        count++;
    }
    json_decref (all);
    return count;
}
