/*  sl_console_backtest.c - POST /api/backtest (see sl_console_backtest.h). */
#include "services/audit/console/sl_console_backtest.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/policy/sl_backtest.h"
#include "common/policy/sl_policy.h"
#include "services/audit/sl_when.h"
#include "services/audit/store/sl_calls.h"

#define S_DAY_MS (24 * 3600 * 1000LL)
#define S_WHEN_MAX 64                   //  a time's text (since, until)
#define S_TEAM_MAX 256

static int
s_bad (sl_buf_t *out, const char *why)
{
    sl_buf_puts (out, "{\"error\":");
    sl_json_put_str (out, why, strlen (why));
    sl_buf_putc (out, '}');
    return 1;
}

//  A string member into buf (absent or null: ""); -1 when it is another
//  type or longer than the buffer.
static int
s_string (json_t *root, const char *name, char *buf, size_t size)
{
    json_t *v = json_object_get (root, name);
    buf [0] = '\0';
    if (!v || json_is_null (v))
        return 0;
    if (!json_is_string (v) || json_string_length (v) >= size)
        return -1;
    memcpy (buf, json_string_value (v), json_string_length (v) + 1);
    return 0;
}

int
sl_console_backtest_run (sl_store_t *store, sl_str_t request, int64_t now, sl_buf_t *out)
{
    json_t *root = json_loadb (request.ptr ? request.ptr : "", request.len, 0, NULL);
    if (!json_is_object (root)) {
        json_decref (root);
        return s_bad (out, "the request is not a JSON object");
    }
    char since [S_WHEN_MAX], until [S_WHEN_MAX], team [S_TEAM_MAX];
    json_t *policy_text = json_object_get (root, "policy");
    json_t *examples_v = json_object_get (root, "examples");
    int rc = 0;
    if (!json_is_string (policy_text) || json_string_length (policy_text) == 0)
        rc = s_bad (out, "no policy: paste one, or pick one the judges run");
    else
    if (json_string_length (policy_text) > SL_CONSOLE_BACKTEST_MAX_POLICY)
        rc = s_bad (out, "the policy is larger than the console backtests (1 MiB)");
    else
    if (s_string (root, "since", since, sizeof since) || !*since
        || s_string (root, "until", until, sizeof until))
        rc = s_bad (out, "since (and until) are times: 30d, 24h, an ISO 8601 UTC time or Unix seconds");
    else
    if (s_string (root, "team", team, sizeof team))
        rc = s_bad (out, "team is a team's name");
    else
    if (examples_v && !(json_is_integer (examples_v) && json_integer_value (examples_v) >= 0
                        && json_integer_value (examples_v) <= SL_CONSOLE_BACKTEST_MAX_EXAMPLES))
        rc = s_bad (out, "examples is a number from 0 to 100");
    int64_t from = 0, to = now;
    if (!rc && (sl_when_parse (since, now, &from) || (*until && sl_when_parse (until, now, &to))))
        rc = s_bad (out, "since (and until) are times: 30d, 24h, an ISO 8601 UTC time or Unix seconds");
    else
    if (!rc && from >= to)
        rc = s_bad (out, "an empty window: since must be before until");
    else
    if (!rc && to - from > SL_CONSOLE_BACKTEST_MAX_DAYS * S_DAY_MS) {
        char why [160];
        snprintf (why, sizeof why, "the window is longer than the console backtests (%d days): narrow it, or "
                  "run sluice-policy backtest", SL_CONSOLE_BACKTEST_MAX_DAYS);
        rc = s_bad (out, why);
    }
    sl_policy_t *policy = NULL;
    if (!rc) {
        char *error = NULL;
        policy = sl_policy_parse (json_string_value (policy_text), json_string_length (policy_text), "policy",
                                  &error);
        if (!policy) {
            sl_buf_t why = { 0 };
            sl_buf_printf (&why, "the policy does not load: %s", error ? error : "?");
            rc = s_bad (out, sl_buf_cstr (&why));
            sl_buf_free (&why);
        }
        free (error);
    }
    if (rc) {
        json_decref (root);
        return rc;
    }
    int examples = examples_v ? (int) json_integer_value (examples_v) : SL_BACKTEST_DEFAULT_EXAMPLES;
    sl_backtest_t *backtest = sl_backtest_new (policy, examples);
    sl_calls_filter_t filter = { .from = from, .to = to, .team = team, .limit = SL_CONSOLE_BACKTEST_MAX_CALLS };
    int64_t calls = sl_calls_backtest (store, &filter, backtest);
    if (calls >= 0) {
        sl_backtest_json (backtest, out);
        //  The window judged, and whether the bound cut it: inside the object.
        while (out->len && out->data [out->len - 1] == '\n')
            out->len--;
        if (out->len && out->data [out->len - 1] == '}') {
            out->len--;
            sl_buf_printf (out, ",\"window\":{\"from\":%lld,\"to\":%lld},\"limited\":%s}", (long long) from,
                           (long long) to, calls >= SL_CONSOLE_BACKTEST_MAX_CALLS ? "true" : "false");
        }
    }
    sl_backtest_destroy (&backtest);
    sl_policy_unref (&policy);
    json_decref (root);
    return calls < 0 ? -1 : 0;
}
