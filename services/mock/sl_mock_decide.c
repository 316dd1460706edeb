/*  sl_mock_decide.c - a scripted decision service for tests (see
    sl_mock_decide.h). Reads the input it was sent with jansson and
    answers in OPA's data API shape, or scripted wrong on purpose.
*/
#include "services/mock/sl_mock_decide.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

#define MOCK_DECIDE_SCENARIO_MAX 32
#define MOCK_DECIDE_BAD_VALUE 42        //  what rewrite-bad puts for every string

bool
sl_mock_decide_wants (const char *path)
{
    return path && strncmp (path, SL_MOCK_DECIDE_PREFIX, strlen (SL_MOCK_DECIDE_PREFIX)) == 0;
}

//  A text of the input (a member path of two levels at most), "none".
static const char *
s_input_text (json_t *input, const char *a, const char *b)
{
    json_t *v = json_object_get (input, a);
    if (b)
        v = json_object_get (v, b);
    return json_is_string (v) ? json_string_value (v) : "none";
}

//  The input's arguments with every string member changed: suffix
//  appended, or (suffix NULL) the number MOCK_DECIDE_BAD_VALUE.
static json_t *
s_rewrite (json_t *input, const char *suffix)
{
    json_t *args = json_object_get (input, "arguments");
    json_t *out = json_is_object (args) ? json_deep_copy (args) : json_object ();
    const char *key;
    json_t *value;
    json_object_foreach (out, key, value) {
        if (!json_is_string (value))
            continue;
        if (!suffix) {
            json_object_set_new (out, key, json_integer (MOCK_DECIDE_BAD_VALUE));
            continue;
        }
        size_t len = json_string_length (value) + strlen (suffix);
        char *text = sl_xmalloc (len + 1);
        snprintf (text, len + 1, "%s%s", json_string_value (value), suffix);
        json_object_set_new (out, key, json_string (text));
        free (text);
    }
    return out;
}

static void
s_put (sl_mock_judge_reply_t *out, json_t *answer)
{
    char *text = json_dumps (answer, JSON_COMPACT);
    sl_buf_puts (&out->body, text ? text : "{}");
    free (text);
    json_decref (answer);
}

void
sl_mock_decide_answer (const char *path, sl_str_t body, sl_mock_judge_reply_t *out)
{
    memset (out, 0, sizeof *out);
    //  The scenario is the last path segment (without a query).
    char segment [MOCK_DECIDE_SCENARIO_MAX];
    const char *last = strrchr (path, '/') ? strrchr (path, '/') + 1 : path;
    snprintf (segment, sizeof segment, "%.*s", (int) strcspn (last, "?"), last);
    char kind [MOCK_DECIDE_SCENARIO_MAX];
    out->delay_ms = sl_mock_judge_scenario (segment, kind, sizeof kind);
    out->status = 200;
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, 0, NULL);
    json_t *input = json_object_get (root, "input");
    if (!json_is_object (input)) {
        out->status = 400;
        out->delay_ms = 0;
        sl_buf_puts (&out->body, "{\"code\":\"invalid_parameter\",\"message\":\"the body must be {\\\"input\\\": {...}}\"}");
        json_decref (root);
        return;
    }
    const char *tool = s_input_text (input, "tool", NULL);
    if (strcmp (kind, "allow") == 0 || strcmp (kind, "slow") == 0 || strcmp (kind, "cached") == 0) {
        s_put (out, json_pack ("{s:{s:b, s:s}}", "result", "allow", 1, "reason", "the mock service allows it"));
        if (strcmp (kind, "cached") == 0)
            out->cache_control = SL_MOCK_DECIDE_MAX_AGE;
    }
    else
    if (strcmp (kind, "deny") == 0) {
        sl_buf_t reason = { 0 };
        sl_buf_printf (&reason, "the mock service denies %s (rule %s, team %s)", tool,
                       s_input_text (input, "rule", NULL), s_input_text (input, "identity", "team"));
        s_put (out, json_pack ("{s:{s:b, s:s}}", "result", "allow", 0, "reason", sl_buf_cstr (&reason)));
        sl_buf_free (&reason);
    }
    else
    if (strcmp (kind, "rewrite") == 0 || strcmp (kind, "rewrite-bad") == 0)
        s_put (out, json_pack ("{s:{s:b, s:s, s:o}}", "result", "allow", 1, "reason", "the mock service rewrites it",
                               "rewrite", s_rewrite (input, strcmp (kind, "rewrite") == 0 ? " (rewritten)" : NULL)));
    else
    if (strcmp (kind, "garbage") == 0) {
        out->content_type = "text/html";
        sl_buf_puts (&out->body, "<html><body><h1>502 Bad Gateway</h1></body></html>");
    }
    else
    if (strcmp (kind, "noresult") == 0)
        sl_buf_puts (&out->body, "{}");
    else
    if (strcmp (kind, "badallow") == 0)
        sl_buf_puts (&out->body, "{\"result\":{\"allow\":\"yes\"}}");
    else
    if (strcmp (kind, "error") == 0) {
        out->status = 500;
        sl_buf_puts (&out->body, "{\"code\":\"internal_error\",\"message\":\"the mock service failed\"}");
    }
    else {
        out->status = 404;
        out->delay_ms = 0;
        sl_buf_puts (&out->body, "{\"code\":\"not_found\",\"message\":\"no such mock decision (try allow, deny, "
                     "rewrite, rewrite-bad, cached, slow, garbage, noresult, badallow or error)\"}");
    }
    json_decref (root);
}
