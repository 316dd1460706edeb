/*  Unit tests: POST /api/backtest (sl_console_backtest), through the
    console's routing, over a SQLite store holding known tool calls. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "services/audit/console/sl_console.h"
#include "services/audit/console/sl_console_backtest.h"

#define S_CALLS 30                      //  calls recorded, one a minute back from an hour ago
#define S_MINUTE_MS 60000LL

static char s_dir [64];
static sl_store_t *s_store;
static int64_t s_now_ms;

//  S_CALLS run_shell calls, two a stream: every fifth recorded as blocked
//  by no-rm, the rest allowed; the streams of even i / 2 % 3 == 0 of team
//  "ops", the rest "eng". Arguments {"command":"ls"}.
static void
s_setup (void)
{
    snprintf (s_dir, sizeof s_dir, "/tmp/sluice-backtest-XXXXXX");
    cr_assert_not_null (mkdtemp (s_dir));
    char path [128], *error = NULL;
    snprintf (path, sizeof path, "%s/a.db", s_dir);
    s_store = sl_store_open (path, &error);
    cr_assert_not_null (s_store, "%s", error ? error : "");
    s_now_ms = (int64_t) time (NULL) * 1000;
    int64_t t0 = s_now_ms - 60 * S_MINUTE_MS - S_CALLS * S_MINUTE_MS;
    cr_assert_eq (sl_store_begin (s_store), 0);
    for (int i = 0; i < S_CALLS; i++) {
        char sid [40];
        snprintf (sid, sizeof sid, "%032x", i / 2);
        sl_val_t s [] = { sl_val_text (sid), sl_val_int (t0 + i * S_MINUTE_MS), sl_val_text ("gpt-4o"),
                          sl_val_text ("hi"), sl_val_text ((i / 2) % 3 ? "eng" : "ops") };
        cr_assert_eq (sl_store_exec (s_store, "INSERT INTO streams (sid, started_at, model, last_user, team) "
                                     "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (sid) DO NOTHING", s, 5, NULL),
                      0, "%s", sl_store_error (s_store));
        sl_val_t v [] = { sl_val_text (sid), sl_val_int (i % 2 ? 7 : 3), sl_val_text ("run_shell"),
                          sl_val_text (i % 5 ? "allow" : "block"), sl_val_text ("{\"command\":\"ls\"}"),
                          sl_val_int (t0 + i * S_MINUTE_MS), sl_val_text (i % 5 ? NULL : "no-rm") };
        cr_assert_eq (sl_store_exec (s_store, "INSERT INTO verdicts (sid, seq, side, tool, action, checked, rule, "
                                     "arguments, at) VALUES ($1, $2, 'response', $3, $4, 'ran', $7, $5, $6)",
                                     v, 7, NULL), 0, "%s", sl_store_error (s_store));
    }
    cr_assert_eq (sl_store_commit (s_store), 0);
}

static void
s_teardown (void)
{
    sl_store_close (&s_store);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    cr_expect_eq (system (cmd), 0);
}

static const char *s_key;               //  the Authorization header of the request

static const char *
s_no_query (void *arg, const char *name)
{
    (void) arg, (void) name;
    return NULL;
}

static const char *
s_header (void *arg, const char *name)
{
    (void) arg;
    if (strcasecmp (name, "Content-Type") == 0)
        return "application/json";
    if (strcasecmp (name, "Authorization") == 0)
        return s_key;
    return NULL;
}

static int64_t
s_clock (void *arg)
{
    (void) arg;
    return s_now_ms;
}

//  POST /api/backtest with body as key; the answer parsed (caller frees).
static int
s_post (const char *key, const char *body, json_t **answer)
{
    sl_console_t *c = sl_console_new (s_store, "v:viewer:VIEWKEY,a:auditor:AUDITKEY");
    sl_console_set_clock (c, s_clock, NULL);
    char auth [64];
    snprintf (auth, sizeof auth, "Bearer %s", key);
    s_key = auth;
    sl_console_req_t req = { "POST", "/api/backtest", s_no_query, s_header, NULL, sl_str (body), false };
    sl_console_resp_t resp = { 0 };
    sl_console_handle (c, &req, &resp);
    *answer = json_loadb (resp.body.data ? resp.body.data : "", resp.body.len, 0, NULL);
    cr_assert_not_null (*answer, "a JSON answer: %.*s", (int) resp.body.len, resp.body.data);
    sl_buf_free (&resp.body);
    sl_buf_free (&resp.location);
    sl_console_destroy (&c);
    return resp.status;
}

static int64_t
s_int (json_t *root, const char *path)
{
    json_t *v = json_object_get (root, path);
    cr_assert (json_is_integer (v), "%s is a number", path);
    return json_integer_value (v);
}

//  A policy blocking "ls": the recorded allows are newly blocked.
#define S_NO_LS "rules:\\n  - {id: no-ls, tool: run_shell, args: [{pointer: /command, equals: ls}], action: block}\\n"

Test (sl_console_backtest, a_changed_policy_gives_the_counts, .init = s_setup, .fini = s_teardown)
{
    json_t *a;
    cr_assert_eq (s_post ("AUDITKEY", "{\"policy\":\"" S_NO_LS "\",\"since\":\"1d\",\"examples\":3}", &a), 200);
    int blocked = (S_CALLS + 4) / 5;
    cr_expect_eq (s_int (a, "calls"), S_CALLS);
    json_t *changed = json_object_get (a, "changed");
    cr_expect_eq (s_int (changed, "newly_blocked"), S_CALLS - blocked);
    cr_expect_eq (s_int (changed, "newly_allowed"), 0);
    cr_expect_eq (s_int (a, "unchanged"), blocked);
    json_t *by_rule = json_object_get (json_object_get (a, "by_rule"), "no-ls");
    cr_expect_eq (s_int (by_rule, "newly_blocked"), S_CALLS - blocked);
    json_t *examples = json_object_get (a, "examples");
    cr_expect_eq (json_array_size (examples), 3, "the examples asked for");
    const char *sid = json_string_value (json_object_get (json_array_get (examples, 0), "sid"));
    cr_expect (sid && strlen (sid) == 32, "an example names its stream");
    cr_expect_eq (json_object_get (a, "limited"), json_false ());
    json_decref (a);

    //  One team: its calls only.
    cr_assert_eq (s_post ("AUDITKEY", "{\"policy\":\"" S_NO_LS "\",\"since\":\"1d\",\"team\":\"ops\"}", &a), 200);
    int ops = 0;
    for (int i = 0; i < S_CALLS; i++)
        ops += (i / 2) % 3 == 0;
    cr_expect_eq (s_int (a, "calls"), ops);
    json_decref (a);

    //  A window before every call: none.
    cr_assert_eq (s_post ("AUDITKEY", "{\"policy\":\"" S_NO_LS "\",\"since\":\"30d\",\"until\":\"2d\"}", &a), 200);
    cr_expect_eq (s_int (a, "calls"), 0);
    json_decref (a);

    //  The same policy as recorded (no-rm never matching ls): nothing changed.
    cr_assert_eq (s_post ("AUDITKEY", "{\"policy\":\"rules: []\\n\",\"since\":\"1d\"}", &a), 200);
    cr_expect_eq (s_int (json_object_get (a, "changed"), "newly_blocked"), 0);
    cr_expect_eq (s_int (json_object_get (a, "changed"), "newly_allowed"), blocked);
    json_decref (a);
}

Test (sl_console_backtest, a_viewer_is_refused, .init = s_setup, .fini = s_teardown)
{
    json_t *a;
    cr_expect_eq (s_post ("VIEWKEY", "{\"policy\":\"" S_NO_LS "\",\"since\":\"1d\"}", &a), 403,
                  "the examples quote arguments: auditors and above");
    json_decref (a);
    cr_expect_eq (s_post ("NOKEY", "{\"policy\":\"" S_NO_LS "\",\"since\":\"1d\"}", &a), 401);
    json_decref (a);
}

Test (sl_console_backtest, bad_input_is_a_400_saying_why, .init = s_setup, .fini = s_teardown)
{
    const char *bad [][2] = {
        { "[]", "not a JSON object" },
        { "{\"since\":\"1d\"}", "no policy" },
        { "{\"policy\":\"rules: [\",\"since\":\"1d\"}", "does not load" },
        { "{\"policy\":\"rules: []\\n\"}", "since" },
        { "{\"policy\":\"rules: []\\n\",\"since\":\"yesterday\"}", "since" },
        { "{\"policy\":\"rules: []\\n\",\"since\":\"1d\",\"until\":\"2d\"}", "empty window" },
        { "{\"policy\":\"rules: []\\n\",\"since\":\"91d\"}", "90 days" },
        { "{\"policy\":\"rules: []\\n\",\"since\":\"1d\",\"team\":7}", "team" },
        { "{\"policy\":\"rules: []\\n\",\"since\":\"1d\",\"examples\":1000}", "examples" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        json_t *a;
        cr_expect_eq (s_post ("AUDITKEY", bad [i][0], &a), 400, "%s", bad [i][0]);
        const char *why = json_string_value (json_object_get (a, "error"));
        cr_expect (why && strstr (why, bad [i][1]), "%s: %s", bad [i][0], why ? why : "(none)");
        json_decref (a);
    }
}

Test (sl_console_backtest, the_calls_judged_are_bounded, .init = s_setup, .fini = s_teardown)
{
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_console_backtest_run (s_store, sl_str ("{\"policy\":\"rules: []\\n\",\"since\":\"1d\"}"),
                                           s_now_ms, &out), 0);
    json_t *a = json_loadb (out.data, out.len, 0, NULL);
    cr_assert_not_null (a);
    cr_expect_eq (s_int (a, "calls"), S_CALLS);
    cr_expect_eq (s_int (json_object_get (a, "window"), "to"), s_now_ms);
    json_decref (a);
    sl_buf_free (&out);
    cr_expect_lt (S_CALLS, SL_CONSOLE_BACKTEST_MAX_CALLS);
}
