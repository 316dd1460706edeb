/*  Integration: sluice-tap against a running stack - it sees every event
    of a stream in order, its filters hold, and credentials never appear
    in what is published nor in any log. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/bus/sl_resolve.h"
#include "tests/integration/harness.h"

#define TIMEOUT_MS 15000
#define SECRET "sk-SECRET-tap-4711"
#define MAX_LINES 512

typedef struct {
    json_t *lines [MAX_LINES];          //  tap lines (JSON objects with a sid)
    int count;
} tap_lines_t;

static void
s_read_tap (proc_t *tap, tap_lines_t *out)
{
    for (int i = 0; i < out->count; i++)
        json_decref (out->lines [i]);
    out->count = 0;
    FILE *f = fopen (tap->log_path, "r");
    char line [16384];
    while (f && fgets (line, sizeof line, f) && out->count < MAX_LINES) {
        json_t *j = json_loads (line, 0, NULL);
        if (j && json_object_get (j, "sid"))
            out->lines [out->count++] = j;
        else
            json_decref (j);
    }
    if (f)
        fclose (f);
}

static const char *
s_field (json_t *j, const char *key)
{
    json_t *v = json_object_get (j, key);
    return json_is_string (v) ? json_string_value (v) : "";
}

//  The sid of the stream whose start names this model, once its end is
//  in the tap's output; "" until then.
static const char *
s_finished_stream (tap_lines_t *t, const char *model)
{
    static char sid [64];
    sid [0] = 0;
    for (int i = 0; i < t->count; i++)
        if (strcmp (s_field (t->lines [i], "type"), "start") == 0
        &&  strcmp (s_field (t->lines [i], "model"), model) == 0)
            snprintf (sid, sizeof sid, "%s", s_field (t->lines [i], "sid"));
    if (!sid [0])
        return "";
    for (int i = 0; i < t->count; i++)
        if (strcmp (s_field (t->lines [i], "sid"), sid) == 0
        &&  strcmp (s_field (t->lines [i], "type"), "end") == 0)
            return sid;
    return "";
}

static bool
s_wait_stream (proc_t *tap, tap_lines_t *t, const char *model, int timeout_ms)
{
    long deadline = zclock_mono () + timeout_ms;
    do {
        s_read_tap (tap, t);
        if (*s_finished_stream (t, model))
            return true;
        struct timespec ts = { 0, 10 * 1000000L };
        nanosleep (&ts, NULL);
    } while (zclock_mono () < deadline);
    return false;
}

//  Each tap runs in its own directory under the stack's, so its output
//  has a file of its own (the harness names logs after the program).
static proc_t *
s_start_tap (sluice_stack_t *s, const char *name, const char *const *filters)
{
    char dir [512];
    snprintf (dir, sizeof dir, "%s/%s", s->dir, name);
    mkdir (dir, 0755);
    //  Two endpoints: the stack's emitter and one nobody binds (a tap
    //  follows several emitters; one that is not there yet costs nothing).
    static char connect [256];
    snprintf (connect, sizeof connect, "%s,tcp://127.0.0.1:1", s->pub);
    const char *args [20] = { "--connect", connect, "--json", "yes", "--keys", s->keys };
    int n = 6;
    for (int i = 0; filters && filters [i] && n < 19; i++)
        args [n++] = filters [i];
    args [n] = NULL;
    proc_t *tap = proc_start (dir, "tap", args);
    cr_assert_not_null (tap);
    cr_assert (proc_wait_log (tap, "\"connected\"", NULL, NULL, 0, TIMEOUT_MS), "tap %s is up", name);
    return tap;
}

static void
s_stop_tap (proc_t *tap)
{
    cr_expect_eq (proc_stop (tap, 10000), 0, "the tap exits cleanly");
    unlink (tap->log_path);
    char *slash = strrchr (tap->log_path, '/');
    *slash = 0;
    rmdir (tap->log_path);
    free (tap);
}

Test (tap, sees_every_event_in_order_filters_hold_and_no_secret_leaks)
{
    stack_opts_t opts = { .policy = "deploy/policy.yaml", .mock_delay_ms = 1 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    proc_t *all = s_start_tap (s, "all", NULL);
    const char *block_filter [] = { "--type", "verdict", "--action", "block", NULL };
    proc_t *blocked = s_start_tap (s, "blocked", block_filter);
    const char *tool_filter [] = { "--tool", "get_weather", NULL };
    proc_t *weather = s_start_tap (s, "weather", tool_filter);

    //  Subscriptions take a moment to reach the publisher: send small
    //  requests until the first tap has seen one whole (bounded).
    tap_lines_t t = { 0 };
    const char *warm = "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    bool seen = false;
    for (int i = 0; i < 20 && !seen; i++) {
        sl_buf_t body = { 0 };
        http_request (s->http_port, "POST", "/v1/chat/completions", warm, NULL, &body, TIMEOUT_MS);
        sl_buf_free (&body);
        seen = s_wait_stream (all, &t, "mock-text", 500);
    }
    cr_assert (seen, "the tap receives events");

    const char *secrets [] = { "Authorization: Bearer " SECRET, "x-api-key: " SECRET, "Cookie: s=" SECRET, NULL };
    const char *req = "{\"model\":\"mock-tools\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"}],"
                      "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\"}}}]}";
    sl_buf_t body = { 0 };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", req, secrets, &body, TIMEOUT_MS), 200);
    sl_buf_free (&body);
    cr_assert (s_wait_stream (all, &t, "mock-tools", TIMEOUT_MS), "the whole stream reaches the tap");
    //  The emitter publishes because taps subscribe (without any, it does
    //  no work for monitoring).
    int em = atoi (s->metrics [4]);
    cr_expect_geq (metric_value (em, "sluice_tap_subscriptions"), 1);
    cr_expect_gt (metric_value (em, "sluice_tap_published_total"), 8);

    //  Every event of the stream, in order: start first, end last,
    //  sequence numbers without a gap.
    char sid [64];
    snprintf (sid, sizeof sid, "%s", s_finished_stream (&t, "mock-tools"));
    json_t *mine [MAX_LINES];
    int n = 0;
    for (int i = 0; i < t.count; i++)
        if (strcmp (s_field (t.lines [i], "sid"), sid) == 0 && strcmp (s_field (t.lines [i], "type"), "error") != 0)
            mine [n++] = t.lines [i];
    cr_assert_gt (n, 10);
    cr_expect_str_eq (s_field (mine [0], "type"), "start");
    cr_expect_str_eq (s_field (mine [0], "client"), "openai");
    cr_expect_str_eq (s_field (json_array_get (json_object_get (mine [0], "tools"), 0), "name"), "get_weather",
                      "the request summary lists the tools");
    cr_expect_str_eq (s_field (mine [n - 1], "type"), "end");
    int verdicts = 0, blocks = 0, finish = 0;
    for (int i = 0; i < n; i++) {
        cr_expect_eq (json_integer_value (json_object_get (mine [i], "seq")), i, "event %d in order", i);
        const char *type = s_field (mine [i], "type");
        if (strcmp (type, "verdict") == 0) {
            verdicts++;
            const char *name = s_field (mine [i], "name");
            cr_expect_str_eq (s_field (mine [i], "action"), strcmp (name, "run_shell") == 0 ? "block" : "allow");
        }
        if (strcmp (type, "block") == 0)
            blocks++;
        if (strcmp (s_field (mine [i], "event"), "finish") == 0) {
            finish++;
            cr_expect_eq (json_integer_value (json_object_get (json_object_get (mine [i], "usage"), "input")), 40);
        }
    }
    cr_expect_eq (verdicts, 2);
    cr_expect_eq (finish, 1, "the finish with its usage");
    cr_expect_gt (blocks, 8);

    //  Filters: only block verdicts; only get_weather's call and verdict.
    tap_lines_t f = { 0 };
    long deadline = zclock_mono () + TIMEOUT_MS;
    do
        s_read_tap (blocked, &f);
    while (f.count < 1 && zclock_mono () < deadline);
    cr_expect_eq (f.count, 1, "one block verdict");
    for (int i = 0; i < f.count; i++) {
        cr_expect_str_eq (s_field (f.lines [i], "type"), "verdict");
        cr_expect_str_eq (s_field (f.lines [i], "action"), "block");
        cr_expect_str_eq (s_field (f.lines [i], "name"), "run_shell");
    }
    s_read_tap (weather, &f);
    int weather_lines = 0;
    for (int i = 0; i < f.count; i++) {
        if (strcmp (s_field (f.lines [i], "sid"), sid) != 0)
            continue;
        weather_lines++;
        const char *type = s_field (f.lines [i], "type");
        if (strcmp (type, "verdict") == 0)
            cr_expect_str_eq (s_field (f.lines [i], "name"), "get_weather");
        else
            cr_expect_str_eq (s_field (f.lines [i], "kind"), "tool_call", "only the call's blocks");
    }
    cr_expect_geq (weather_lines, 4, "start, deltas and end of the call, and its verdict");

    //  No credential anywhere: tap output and every log.
    for (int i = 0; i < t.count; i++)
        json_decref (t.lines [i]);
    for (int i = 0; i < f.count; i++)
        json_decref (f.lines [i]);
    char cmd [1024];
    snprintf (cmd, sizeof cmd, "grep -rl -- 'SECRET-tap' %s", s->dir);
    FILE *p = popen (cmd, "r");
    char hit [512] = "";
    cr_assert_not_null (p);
    if (!fgets (hit, sizeof hit, p))
        hit [0] = 0;
    pclose (p);
    cr_expect_str_eq (hit, "", "a credential was found in %s", hit);
    snprintf (cmd, sizeof cmd, "grep -rl -- 'get_weather' %s/all", s->dir);
    p = popen (cmd, "r");
    hit [0] = 0;
    if (!fgets (hit, sizeof hit, p))
        hit [0] = 0;
    pclose (p);
    cr_expect_neq (strlen (hit), 0, "the search itself finds what is there");
    s_stop_tap (all);
    s_stop_tap (blocked);
    s_stop_tap (weather);
    cr_expect_eq (stack_stop (s), 0);
}

//  Scan a tap's output without keeping it: how many event lines, how many
//  of another stream than sid, whether the stream's end is among them.
static int
s_scan_tap (proc_t *tap, const char *sid, int *others, bool *ended)
{
    FILE *f = fopen (tap->log_path, "r");
    char line [16384];
    int n = 0;
    *others = 0;
    *ended = false;
    while (f && fgets (line, sizeof line, f)) {
        json_t *j = json_loads (line, 0, NULL);
        if (j && json_object_get (j, "sid")) {
            n++;
            *others += strcmp (s_field (j, "sid"), sid) != 0;
            *ended |= strcmp (s_field (j, "type"), "end") == 0;
        }
        json_decref (j);
    }
    if (f)
        fclose (f);
    return n;
}

//  The lines of a tap's output that are not its own log lines.
static int
s_text_lines (proc_t *tap, char lines [][512], int max)
{
    FILE *f = fopen (tap->log_path, "r");
    char line [4096];
    int n = 0;
    while (f && fgets (line, sizeof line, f) && n < max)
        if (line [0] != '{')
            snprintf (lines [n++], 512, "%.500s", line);
    if (f)
        fclose (f);
    return n;
}

//  A stream under way is picked out by its id; human-readable lines say
//  what happened; no credential of any dialect's kind (headers, Gemini's
//  ?key=) reaches tap output or a log, streaming or not.
Test (tap, one_stream_human_lines_and_no_credential_of_any_dialect)
{
    stack_opts_t opts = { .policy = "deploy/policy.yaml", .mock_delay_ms = 2 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    proc_t *all = s_start_tap (s, "all", NULL);
    //  Human-readable verdicts (no --json): the tap's own args.
    char dir [512];
    snprintf (dir, sizeof dir, "%s/human", s->dir);
    mkdir (dir, 0755);
    const char *human_args [] = { "--connect", s->pub, "--type", "verdict", "--keys", s->keys, NULL };
    proc_t *human = proc_start (dir, "tap", human_args);
    cr_assert_not_null (human);
    cr_assert (proc_wait_log (human, "\"connected\"", NULL, NULL, 0, TIMEOUT_MS));

    //  A long stream (mock-bench: 3000 events, 2 ms apart) in the
    //  background, found in the tap by its model.
    const char *bench = "{\"model\":\"mock-bench\",\"max_tokens\":3000,\"stream\":true,"
                        "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    char cmd [2048];
    snprintf (cmd, sizeof cmd, "curl -s -o /dev/null -m 60 -H 'content-type: application/json' "
                               "-d '%s' http://127.0.0.1:%d/v1/chat/completions &", bench, s->http_port);
    tap_lines_t t = { 0 };
    char sid [64] = "";
    //  Subscriptions take a moment to reach the publisher: retry the
    //  background request until the tap sees its start (bounded).
    for (int attempt = 0; attempt < 20 && !sid [0]; attempt++) {
        cr_assert_eq (system (cmd), 0);
        long deadline = zclock_mono () + 1000;
        while (!sid [0] && zclock_mono () < deadline) {
            s_read_tap (all, &t);
            for (int i = 0; i < t.count; i++)
                if (strcmp (s_field (t.lines [i], "type"), "start") == 0
                &&  strcmp (s_field (t.lines [i], "model"), "mock-bench") == 0)
                    snprintf (sid, sizeof sid, "%s", s_field (t.lines [i], "sid"));
            if (!sid [0])
                nanosleep (&(struct timespec) { 0, 10 * 1000000L }, NULL);
        }
    }
    cr_assert (sid [0], "the tap saw the long stream start");
    char prefix [9];
    snprintf (prefix, sizeof prefix, "%.8s", sid);
    const char *one_filter [] = { "--stream", prefix, NULL };
    proc_t *one = s_start_tap (s, "one", one_filter);

    //  Meanwhile, requests of every dialect carrying credentials.
    const char *tools = "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"run_shell\",\"parameters\":{}}}]";
    struct { const char *path; const char *body; const char *header; } calls [] = {
        { "/v1/chat/completions", "{\"model\":\"mock-tools\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],%s}",
          "Authorization: Bearer " SECRET },
        { "/v1/messages", "{\"model\":\"mock-tools\",\"max_tokens\":50,\"stream\":true,"
          "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "x-api-key: " SECRET },
        { "/v1/messages", "{\"model\":\"mock-tools\",\"max_tokens\":50,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
          "x-api-key: " SECRET },
        { "/v1/responses", "{\"model\":\"mock-tools\",\"input\":\"x\"}", "Authorization: Bearer " SECRET },
        { "/v1beta/models/mock-tools:streamGenerateContent?alt=sse", "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}]}",
          "x-goog-api-key: " SECRET },
        { "/v1beta/models/mock-tools:generateContent?key=" SECRET, "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}]}",
          "Cookie: s=" SECRET },
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls [0]; i++) {
        char body [512];
        snprintf (body, sizeof body, calls [i].body, tools);
        const char *headers [] = { calls [i].header, "api-key: " SECRET, NULL };
        sl_buf_t out = { 0 };
        cr_expect_eq (http_request (s->http_port, "POST", calls [i].path, body, headers, &out, TIMEOUT_MS), 200,
                      "%s: %s", calls [i].path, sl_buf_cstr (&out));
        sl_buf_free (&out);
    }

    //  The long stream ends; the one-stream tap saw all of it and nothing else.
    long deadline = zclock_mono () + 60000;
    bool ended = false;
    int others = 0, seen = 0;
    while (!ended && zclock_mono () < deadline) {
        seen = s_scan_tap (one, sid, &others, &ended);
        if (!ended)
            nanosleep (&(struct timespec) { 0, 20 * 1000000L }, NULL);
    }
    cr_expect (ended, "the filtered tap saw the stream's end");
    cr_expect_gt (seen, 100, "and its events");
    cr_expect_eq (others, 0, "only the stream asked for");

    //  Human lines: each blocked run_shell as a verdict line that says so.
    char lines [64][512];
    int blocked = 0, n = 0;
    deadline = zclock_mono () + TIMEOUT_MS;
    do {
        n = s_text_lines (human, lines, 64);
        blocked = 0;
        for (int i = 0; i < n; i++)
            blocked += strstr (lines [i], " verdict ") && strstr (lines [i], " run_shell -> block (ran, rule no-rm-rf");
    } while (blocked < 6 && zclock_mono () < deadline);
    cr_expect_eq (blocked, 6, "a human line for each blocked call:\n%s", n ? lines [0] : "(none)");

    //  No credential in any tap output or log.
    s_stop_tap (one);
    s_stop_tap (all);
    cr_expect_eq (proc_stop (human, 10000), 0);
    unlink (human->log_path);
    free (human);
    rmdir (dir);
    for (int i = 0; i < t.count; i++)
        json_decref (t.lines [i]);
    proc_t *procs [] = { s->gateway, s->ingest, s->aggregator, s->judge, s->emitter, s->mock };
    for (int i = 0; i < 6; i++) {
        FILE *f = fopen (procs [i]->log_path, "r");
        char line [8192];
        while (f && fgets (line, sizeof line, f))
            cr_expect_null (strstr (line, "SECRET-tap"), "%s logged a credential: %s", procs [i]->name, line);
        if (f)
            fclose (f);
    }
    cr_expect_eq (stack_stop (s), 0);
}

//  --connect names an emitter by a host name, as compose does: the name
//  stands for its addresses (here localhost's 127.0.0.1), connected to
//  one by one; a name nothing answers to yet is waited for, said once,
//  and the tap stays up (compose starts it before or without the
//  emitters: a crash loop would be the alternative).
Test (tap, a_name_stands_for_its_addresses_and_one_not_there_yet_is_waited_for)
{
    stack_opts_t opts = { .policy = "deploy/policy.yaml", .mock_delay_ms = 2 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    const char *port = strrchr (s->pub, ':') + 1;
    char named [128], dir [512];
    snprintf (named, sizeof named, "tcp://localhost:%s", port);
    snprintf (dir, sizeof dir, "%s/named", s->dir);
    mkdir (dir, 0755);
    const char *named_args [] = { "--connect", named, "--json", "yes", "--keys", s->keys, NULL };
    proc_t *tap = proc_start (dir, "tap", named_args);
    cr_assert_not_null (tap);
    char expected [160];
    snprintf (expected, sizeof expected, "endpoint=tcp://127.0.0.1:%s", port);
    cr_expect (proc_wait_log (tap, "\"emitter_added\"", expected, NULL, 0, TIMEOUT_MS),
               "the tap connected to the address localhost stands for");

    char waiting_dir [512];
    snprintf (waiting_dir, sizeof waiting_dir, "%s/waiting", s->dir);
    mkdir (waiting_dir, 0755);
    const char *waiting_args [] = { "--connect", "tcp://emitter.sluice-test.invalid:5557", "--keys", s->keys, NULL };
    proc_t *waiting = proc_start (waiting_dir, "tap", waiting_args);
    cr_assert_not_null (waiting);
    cr_expect (proc_wait_log (waiting, "\"emitters_waiting\"", "emitter.sluice-test.invalid", NULL, 0, TIMEOUT_MS),
               "a tap whose emitter's name does not resolve says it waits");
    //  Still running after a few resolution rounds: no exit, no crash loop.
    cr_expect_eq (proc_wait_exit (waiting, 3 * SL_RESOLVE_MS), -1, "the waiting tap stays up");
    unlink (waiting->log_path);
    free (waiting);

    sl_buf_t body = { 0 };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions",
                                "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
                                NULL, &body, TIMEOUT_MS), 200);
    sl_buf_free (&body);
    tap_lines_t t = { 0 };
    //  Subscriptions take a moment to reach the publisher: more requests
    //  until the tap sees one whole (bounded).
    bool seen = false;
    for (int attempt = 0; attempt < 20 && !seen; attempt++) {
        seen = s_wait_stream (tap, &t, "mock-text", 500);
        if (!seen) {
            sl_buf_t again = { 0 };
            http_request (s->http_port, "POST", "/v1/chat/completions",
                          "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
                          NULL, &again, TIMEOUT_MS);
            sl_buf_free (&again);
        }
    }
    cr_expect (seen, "the tap that named its emitter saw a stream from start to end");
    for (int i = 0; i < t.count; i++)
        json_decref (t.lines [i]);
    s_stop_tap (tap);
    rmdir (waiting_dir);
    cr_expect_eq (stack_stop (s), 0);
}
