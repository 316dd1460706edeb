/*  Integration: sluice-replay, the program, over the recorded streams
    (tests/recordings.h: the project's own in tests/recordings, and
    ../shared/corpus's when it is present).

    Every recording must have an expectation file under
    tests/expected/blocks/<dialect dir>/<file>.jsonl, and replayed with
    --render blocks must give exactly that output (text, tool names, ids,
    arguments, finish, usage). Every file renders in its own dialect
    without an event the emitter had to withhold. Every file with a tool
    call goes through the policy tests/expected/verdicts/policy.yaml and
    must give tests/expected/verdicts/policy/<dialect dir>/<file>.jsonl;
    the rules that need the request (model, schema) are checked with
    tests/expected/verdicts/request.yaml and the request bodies under
    tests/expected/verdicts/requests/. Without ../shared/corpus these run
    on the project's own recordings and say what they left out.

    The program runs with stdin from a file and its output on pipes, read
    with poll until it exits; every wait is bounded.
*/
#include <criterion/criterion.h>
#include <czmq.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/base/sl_buf.h"
#include "tests/integration/harness.h"
#include "tests/recordings.h"

#define EXPECTED_DIR "tests/expected/blocks"
#define VERDICTS_DIR "tests/expected/verdicts"
#define TIMEOUT_MS 20000
#define MAX_FILES 512                   //  recordings in all

typedef struct {
    int status;                         //  exit status, -1 killed or signalled
    sl_buf_t out;
    sl_buf_t err;
} run_t;

//  Run sluice-replay with args (NULL-terminated) and stdin from input_path.
static void
s_run (const char *const *args, const char *input_path, run_t *run)
{
    memset (run, 0, sizeof *run);
    run->status = -1;
    const char *bin_dir = getenv ("SLUICE_BIN_DIR");
    char path [512];
    snprintf (path, sizeof path, "%s/sluice-replay", bin_dir ? bin_dir : "build/bin");
    const char *argv [16];
    int n = 0;
    argv [n++] = path;
    for (int i = 0; args [i] && n < 15; i++)
        argv [n++] = args [i];
    argv [n] = NULL;
    int out_pipe [2], err_pipe [2];
    cr_assert_eq (pipe (out_pipe), 0);
    cr_assert_eq (pipe (err_pipe), 0);
    pid_t pid = fork ();
    cr_assert_geq (pid, 0);
    if (pid == 0) {
        int in = open (input_path, O_RDONLY);
        if (in < 0)
            _exit (126);
        dup2 (in, 0);
        dup2 (out_pipe [1], 1);
        dup2 (err_pipe [1], 2);
        close (in);
        close (out_pipe [0]);
        close (err_pipe [0]);
        execv (path, (char *const *) argv);
        _exit (127);
    }
    close (out_pipe [1]);
    close (err_pipe [1]);
    struct pollfd fds [2] = { { out_pipe [0], POLLIN, 0 }, { err_pipe [0], POLLIN, 0 } };
    sl_buf_t *bufs [2] = { &run->out, &run->err };
    int open_fds = 2;
    long deadline = zclock_mono () + TIMEOUT_MS;
    while (open_fds > 0 && zclock_mono () < deadline) {
        int rc = poll (fds, 2, (int) (deadline - zclock_mono ()));
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            break;
        for (int i = 0; i < 2; i++) {
            if (fds [i].fd < 0 || !fds [i].revents)
                continue;
            char chunk [8192];
            ssize_t got = read (fds [i].fd, chunk, sizeof chunk);
            if (got > 0)
                sl_buf_append (bufs [i], chunk, (size_t) got);
            else {
                close (fds [i].fd);
                fds [i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds [i].fd >= 0) {
            close (fds [i].fd);
            kill (pid, SIGKILL);        //  it did not finish in time
        }
    int status;
    if (waitpid (pid, &status, 0) == pid && WIFEXITED (status))
        run->status = WEXITSTATUS (status);
    sl_buf_cstr (&run->out);
    sl_buf_cstr (&run->err);
}

static void
s_run_free (run_t *run)
{
    sl_buf_free (&run->out);
    sl_buf_free (&run->err);
}

static bool
s_is_dir (const char *path)
{
    struct stat st;
    return stat (path, &st) == 0 && S_ISDIR (st.st_mode);
}

static int
s_compare_names (const void *a, const void *b)
{
    return strcmp ((const char *) a, (const char *) b);
}

//  The regular files of a directory, sorted; returns how many (bounded).
static int
s_list (const char *dir, char names [][256], int max)
{
    DIR *d = opendir (dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir (d)) && n < max) {
        if (e->d_name [0] == '.')
            continue;
        char path [1024];
        snprintf (path, sizeof path, "%s/%s", dir, e->d_name);
        if (s_is_dir (path))
            continue;
        snprintf (names [n++], 256, "%s", e->d_name);
    }
    closedir (d);
    qsort (names, (size_t) n, 256, s_compare_names);
    return n;
}

//  The first line where two outputs differ, for the failure message.
static int
s_first_diff_line (const char *a, const char *b)
{
    int line = 1;
    while (*a && *a == *b) {
        if (*a == '\n')
            line++;
        a++;
        b++;
    }
    return line;
}

static rec_file_t s_files [MAX_FILES];  //  large: not on the stack

//  The expectation of a recording under one of tests/expected's trees.
static void
s_expected_path (char *path, size_t size, const char *tree, const rec_file_t *f)
{
    snprintf (path, size, "%s/%s/%s.jsonl", tree, f->dir, f->name);
}

Test (replay, recordings_match_the_expectation_files)
{
    size_t count = rec_list (s_files, MAX_FILES, "replay");
    int checked = 0, missing = 0;
    for (size_t i = 0; i < count; i++) {
        const rec_file_t *f = &s_files [i];
        char expected_path [1024];
        s_expected_path (expected_path, sizeof expected_path, EXPECTED_DIR, f);
        sl_buf_t expected = { 0 };
        if (!harness_read (expected_path, &expected)) {
            cr_expect_fail ("no expectation file %s: write it from the output and check it by "
                            "hand against the recording (tests/expected/blocks/README.md)", expected_path);
            missing++;
            continue;
        }
        run_t run;
        const char *args [] = { "--dialect", f->dialect_name, "--render", "blocks", NULL };
        s_run (args, f->path, &run);
        cr_expect_eq (run.status, 0, "%s: exit status (%s)", f->name, run.err.data);
        cr_expect_str_eq (run.out.data, expected.data, "%s differs from %s at line %d", f->name,
                          expected_path, s_first_diff_line (run.out.data, expected.data));
        checked++;
        s_run_free (&run);
        sl_buf_free (&expected);
    }
    fprintf (stderr, "replay: %d recordings checked against expectations, %d without one\n", checked, missing);
    cr_expect_gt (checked, 0, "some recordings have expectations");
    cr_expect_eq (missing, 0, "every recording has an expectation");
}

//  Is there a recording of this name (own, or the corpus's when present)?
static bool
s_recorded (size_t count, const char *dir, const char *name, size_t len)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp (s_files [i].dir, dir) == 0 && strlen (s_files [i].name) == len
        &&  strncmp (s_files [i].name, name, len) == 0)
            return true;
    return false;
}

Test (replay, every_expectation_file_has_its_recording)
{
    size_t count = rec_list (s_files, MAX_FILES, "replay");
    bool corpus = rec_corpus_present ();
    static char names [MAX_FILES][256];
    static const char *const dirs [] = { "openai-chat", "anthropic", "openai-responses", "gemini" };
    const char *bases [] = { EXPECTED_DIR, VERDICTS_DIR "/policy", VERDICTS_DIR "/request" };
    int unchecked = 0;
    for (size_t b = 0; b < sizeof bases / sizeof bases [0]; b++)
        for (size_t d = 0; d < sizeof dirs / sizeof dirs [0]; d++) {
            char dir [512];
            snprintf (dir, sizeof dir, "%s/%s", bases [b], dirs [d]);
            int n = s_list (dir, names, MAX_FILES);
            for (int i = 0; i < n; i++) {
                size_t len = strlen (names [i]);
                cr_expect (len > 6 && strcmp (names [i] + len - 6, ".jsonl") == 0, "%s", names [i]);
                if (s_recorded (count, dirs [d], names [i], len - 6))
                    continue;
                if (!corpus)
                    unchecked++;        //  the corpus's, which is not here
                else
                    cr_expect_fail ("expectation %s/%s/%s has no recording", bases [b], dirs [d], names [i]);
            }
        }
    if (unchecked)
        fprintf (stderr, "replay: %s is absent: %d expectation files of its recordings not checked\n",
                 rec_corpus (), unchecked);
}

Test (replay, every_recording_renders_in_its_own_dialect)
{
    size_t count = rec_list (s_files, MAX_FILES, "replay");
    int rendered = 0;
    for (size_t i = 0; i < count; i++) {
        const rec_file_t *f = &s_files [i];
        run_t run;
        const char *args [] = { "--dialect", f->dialect_name, "--render", f->dialect_name, NULL };
        s_run (args, f->path, &run);
        cr_expect_eq (run.status, 0, "%s: %s", f->name, run.err.data);
        cr_expect_gt (run.out.len, 0, "%s: the client gets something", f->name);
        cr_expect_null (strstr (run.out.data, "illegal_output"),
                        "%s: no event was withheld as illegal:\n%s", f->name, run.out.data);
        rendered++;
        s_run_free (&run);
    }
    cr_expect_gt (rendered, 0);
}

//  A capture written to a temporary file.
static void
s_capture_file (char *path, size_t size, const char *content)
{
    snprintf (path, size, "/tmp/sluice-replay-test-XXXXXX");
    int fd = mkstemp (path);
    cr_assert_geq (fd, 0);
    size_t len = strlen (content);
    cr_assert_eq (write (fd, content, len), (ssize_t) len);
    close (fd);
}

static const char *s_tools_capture =
    "data: {\"id\":\"c1\",\"model\":\"gpt\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Tidying.\"}}]}\n\n"
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
        "\"id\":\"call_1\",\"function\":{\"name\":\"run_shell\",\"arguments\":\"{\\\"command\\\":\"}}]}}]}\n\n"
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
        "\"function\":{\"arguments\":\"\\\"rm -rf /\\\"}\"}}]}}]}\n\n"
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
    "data: [DONE]\n\n";

Test (replay, a_policy_is_checked_against_a_capture)
{
    char path [64];
    s_capture_file (path, sizeof path, s_tools_capture);
    run_t run;
    const char *args [] = { "--dialect", "openai", "--policy", "deploy/policy.yaml", NULL };
    s_run (args, path, &run);
    cr_expect_eq (run.status, 0, "%s", run.err.data);
    cr_expect_not_null (strstr (run.out.data,
        "{\"verdict\":{\"index\":1,\"id\":\"call_1\",\"name\":\"run_shell\",\"action\":\"block\""),
        "%s", run.out.data);
    cr_expect_not_null (strstr (run.out.data, "\"replaced\":true"));
    cr_expect_null (strstr (run.out.data, "\"kind\":\"tool_call\""), "the call was replaced");
    cr_expect_not_null (strstr (run.out.data, "{\"finish\":\"stop\""), "no call is left: stop");
    s_run_free (&run);
    //  Without the policy the call passes.
    const char *plain [] = { "--dialect", "openai", NULL };
    s_run (plain, path, &run);
    cr_expect_not_null (strstr (run.out.data, "\"kind\":\"tool_call\""));
    cr_expect_not_null (strstr (run.out.data, "{\"finish\":\"tool_calls\""));
    s_run_free (&run);
    unlink (path);
}

Test (replay, a_team_is_judged_under_its_file_and_the_base_it_includes)
{
    char dir [] = "/tmp/sluice-replay-team-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    harness_write (dir, "base.yaml", "rules:\n  - id: no-rm-root\n    tool: run_shell\n"
                             "    args: [{pointer: /command, regex: 'rm -rf /$'}]\n    action: block\n");
    harness_write (dir, "team-b.yaml", "include: base.yaml\nrules:\n  - {id: b-shell-ok, tool: run_shell, action: allow}\n");
    harness_write (dir, "default.yaml", "rules:\n  - {id: default-drop, tool: run_shell, action: drop}\n");
    //  A key of each team (the hash of "sk-x": the replay never reads a key).
    harness_write (dir, "keys.yaml", "teams:\n  - {name: tb, policy: team-b.yaml}\n  - {name: tc}\nkeys:\n"
                             "  - {id: kb, team: tb, sha256: 6ec5a3e7d3ad0e4c6aa22f8a29a7df0eb0e1fbd3a2ec4f5e3f5b1c3f0ee8e5a1}\n"
                             "  - {id: kc, team: tc, sha256: 7ec5a3e7d3ad0e4c6aa22f8a29a7df0eb0e1fbd3a2ec4f5e3f5b1c3f0ee8e5a1}\n");
    char capture [64], keys [256], fallback [256];
    s_capture_file (capture, sizeof capture, s_tools_capture);
    snprintf (keys, sizeof keys, "%s/keys.yaml", dir);
    snprintf (fallback, sizeof fallback, "%s/default.yaml", dir);
    run_t run;
    //  Team b allows every shell call; its base's block still decides.
    const char *team_b [] = { "--dialect", "openai", "--keys-file", keys, "--team", "tb", NULL };
    s_run (team_b, capture, &run);
    cr_expect_eq (run.status, 0, "%s", run.err.data);
    cr_expect_not_null (strstr (run.out.data, "\"action\":\"block\",\"check\":\"ran\",\"rule\":\"no-rm-root\""),
                        "%s", run.out.data);
    s_run_free (&run);
    //  Team c names no file: the default (--policy) decides, as in the pipeline.
    const char *team_c [] = { "--dialect", "openai", "--keys-file", keys, "--team", "tc", "--policy", fallback, NULL };
    s_run (team_c, capture, &run);
    cr_expect_eq (run.status, 0, "%s", run.err.data);
    cr_expect_not_null (strstr (run.out.data, "\"rule\":\"default-drop\""), "%s", run.out.data);
    s_run_free (&run);
    //  A team the keys file does not have, or --team alone: refused.
    const char *unknown [] = { "--dialect", "openai", "--keys-file", keys, "--team", "nobody", NULL };
    s_run (unknown, capture, &run);
    cr_expect_eq (run.status, 2);
    cr_expect_not_null (strstr (run.err.data, "names no team 'nobody'"), "%s", run.err.data);
    s_run_free (&run);
    const char *alone [] = { "--dialect", "openai", "--team", "tb", NULL };
    s_run (alone, capture, &run);
    cr_expect_eq (run.status, 2);
    s_run_free (&run);
    unlink (capture);
    char cmd [300];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

Test (replay, render_openai_writes_what_a_client_receives)
{
    char path [64];
    s_capture_file (path, sizeof path, s_tools_capture);
    run_t run;
    const char *args [] = { "--dialect", "openai", "--render", "openai", NULL };
    s_run (args, path, &run);
    cr_expect_eq (run.status, 0);
    cr_expect_not_null (strstr (run.out.data, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\""),
                        "%s", run.out.data);
    size_t len = run.out.len, tail = strlen ("data: [DONE]\n\n");
    cr_expect (len > tail && strcmp (run.out.data + len - tail, "data: [DONE]\n\n") == 0);
    s_run_free (&run);
    unlink (path);
}

Test (replay, malformed_input_prints_an_error_line_and_exits_1)
{
    char path [64];
    s_capture_file (path, sizeof path,
                    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"A\"}}]}\n\ndata: {oops\n\n");
    run_t run;
    const char *args [] = { "--dialect", "openai", NULL };
    s_run (args, path, &run);
    cr_expect_eq (run.status, 1);
    cr_expect_not_null (strstr (run.out.data, "{\"error\":\"malformed input: "), "%s", run.out.data);
    s_run_free (&run);
    unlink (path);
}

Test (replay, bad_usage_is_refused)
{
    const char *no_dialect [] = { NULL };
    const char *unknown [] = { "--dialect", "cobol", NULL };
    const char *bad_render [] = { "--dialect", "openai", "--render", "html", NULL };
    const char *bad_policy [] = { "--dialect", "openai", "--policy", "/nonexistent/policy.yaml", NULL };
    const char *const *cases [] = { no_dialect, unknown, bad_render, bad_policy };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        run_t run;
        s_run (cases [i], "/dev/null", &run);
        cr_expect_eq (run.status, 2, "case %zu", i);
        cr_expect_gt (run.err.len, 0, "case %zu says why", i);
        s_run_free (&run);
    }
}

Test (replay, a_capture_renders_for_a_client_of_any_dialect)
{
    const char *dialects [] = { "openai", "anthropic", "responses", "gemini" };
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 4; j++) {
            run_t run;
            const char *args [] = { "--dialect", dialects [i], "--render", dialects [j], NULL };
            s_run (args, "/dev/null", &run);
            cr_expect_eq (run.status, 0, "%s as %s: %s", dialects [i], dialects [j], run.err.data);
            s_run_free (&run);
        }
}

//  --------------------------------------------------------------------------
//  Policies over the corpus

//  Does a blocks expectation hold a tool call?
static bool
s_has_tool_call (const char *expected_path)
{
    sl_buf_t text = { 0 };
    bool has = harness_read (expected_path, &text) && strstr (text.data, "\"kind\":\"tool_call\"");
    sl_buf_free (&text);
    return has;
}

//  Replay input with args and compare with the expectation file.
static void
s_expect_output (const char *const *args, const char *input, const char *expected_path)
{
    sl_buf_t expected = { 0 };
    if (!harness_read (expected_path, &expected)) {
        cr_expect_fail ("no expectation file %s", expected_path);
        return;
    }
    run_t run;
    s_run (args, input, &run);
    cr_expect_eq (run.status, 0, "%s: exit status (%s)", input, run.err.data);
    cr_expect_str_eq (run.out.data, expected.data, "%s differs from %s at line %d", input,
                      expected_path, s_first_diff_line (run.out.data, expected.data));
    s_run_free (&run);
    sl_buf_free (&expected);
}

Test (replay, every_tool_call_of_the_recordings_gets_the_expected_verdicts)
{
    size_t count = rec_list (s_files, MAX_FILES, "replay");
    int checked = 0, own = 0;
    for (size_t i = 0; i < count; i++) {
        const rec_file_t *f = &s_files [i];
        char blocks [1024], expected [1024];
        s_expected_path (blocks, sizeof blocks, EXPECTED_DIR, f);
        if (!s_has_tool_call (blocks))
            continue;
        s_expected_path (expected, sizeof expected, VERDICTS_DIR "/policy", f);
        const char *args [] = { "--dialect", f->dialect_name, "--policy", VERDICTS_DIR "/policy.yaml", NULL };
        s_expect_output (args, f->path, expected);
        checked++;
        own += f->own;
    }
    //  Sixteen of the project's own recordings hold tool calls, and twenty
    //  of the corpus's: fewer means the blocks went wrong.
    cr_expect_geq (own, 16, "%d of the project's own recordings with tool calls", own);
    if (rec_corpus_present ())
        cr_expect_geq (checked - own, 20, "%d corpus recordings with tool calls", checked - own);
}

Test (replay, model_and_schema_rules_read_the_request)
{
    size_t count = rec_list (s_files, MAX_FILES, "replay");
    int checked = 0, own = 0;
    for (size_t i = 0; i < count; i++) {
        const rec_file_t *f = &s_files [i];
        char expected [1024], request [1024];
        s_expected_path (expected, sizeof expected, VERDICTS_DIR "/request", f);
        if (access (expected, R_OK) != 0)
            continue;
        snprintf (request, sizeof request, "%s/requests/%s.json", VERDICTS_DIR, f->name);
        const char *with [] = { "--dialect", f->dialect_name, "--policy", VERDICTS_DIR "/request.yaml",
                                "--request", request, NULL };
        const char *without [] = { "--dialect", f->dialect_name, "--policy", VERDICTS_DIR "/request.yaml", NULL };
        s_expect_output (access (request, R_OK) == 0 ? with : without, f->path, expected);
        checked++;
        own += f->own;
    }
    cr_expect_geq (own, 1, "a recording of the project's own is judged with its request");
    if (rec_corpus_present ())
        cr_expect_geq (checked - own, 4);
}

static const char *s_judged_capture =
    "data: {\"id\":\"c2\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
        "\"id\":\"call_a\",\"function\":{\"name\":\"write_file\",\"arguments\":\"{}\"}}]}}]}\n\n"
    "data: {\"id\":\"c2\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,"
        "\"id\":\"call_b\",\"function\":{\"name\":\"now\",\"arguments\":\"{}\"}}]}}]}\n\n"
    "data: {\"id\":\"c2\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
    "data: [DONE]\n\n";

Test (replay, an_llm_judge_is_never_asked_and_never_passes)
{
    //  The policy's two LLM-judged rules: write_* fails closed, now fails
    //  open. Neither check ran, and the verdicts say so.
    char path [64];
    s_capture_file (path, sizeof path, s_judged_capture);
    run_t run;
    const char *args [] = { "--dialect", "openai", "--policy", VERDICTS_DIR "/policy.yaml", NULL };
    s_run (args, path, &run);
    cr_expect_eq (run.status, 0, "%s", run.err.data);
    cr_expect_not_null (strstr (run.out.data,
        "{\"verdict\":{\"index\":0,\"id\":\"call_a\",\"name\":\"write_file\",\"action\":\"block\","
        "\"check\":\"error\",\"rule\":\"review-file-access\",\"reason\":\"LLM judge judge-files failed: "
        "sluice-replay makes no network calls, so the judge was not asked; on_error: block\","
        "\"judge_model\":\"judge-files\"}}"), "%s", run.out.data);
    cr_expect_not_null (strstr (run.out.data,
        "{\"verdict\":{\"index\":1,\"id\":\"call_b\",\"name\":\"now\",\"action\":\"allow\","
        "\"check\":\"error\",\"rule\":\"review-clock\""), "%s", run.out.data);
    cr_expect_null (strstr (run.out.data, "\"check\":\"ran\""), "no check ran: %s", run.out.data);
    cr_expect_not_null (strstr (run.out.data, "\"kind\":\"tool_call\",\"index\":1,\"id\":\"call_b\""),
                        "on_error allow lets the call through");
    s_run_free (&run);
    unlink (path);
}

Test (replay, a_request_the_gateway_would_refuse_is_refused)
{
    char bad [64], capture [64];
    s_capture_file (bad, sizeof bad, "{\"model\":\"m\",\"messages\":[]}");
    s_capture_file (capture, sizeof capture, s_tools_capture);
    run_t run;
    const char *args [] = { "--dialect", "openai", "--request", bad, NULL };
    s_run (args, capture, &run);
    cr_expect_eq (run.status, 2);
    cr_expect_not_null (strstr (run.err.data, "the gateway would refuse this request"), "%s", run.err.data);
    cr_expect_eq (run.out.len, 0);
    s_run_free (&run);
    const char *missing [] = { "--dialect", "openai", "--request", "/nonexistent/request.json", NULL };
    s_run (missing, capture, &run);
    cr_expect_eq (run.status, 2);
    cr_expect_not_null (strstr (run.err.data, "cannot read"), "%s", run.err.data);
    s_run_free (&run);
    unlink (bad);
    unlink (capture);
}

Test (replay, the_model_flag_reaches_model_rules)
{
    //  --model alone (Gemini names the model in the path, not the body).
    char policy [64], capture [64];
    s_capture_file (policy, sizeof policy,
                    "rules:\n  - id: only-on-big\n    model: 'big-*'\n    action: block\n");
    s_capture_file (capture, sizeof capture, s_tools_capture);
    run_t run;
    const char *big [] = { "--dialect", "openai", "--policy", policy, "--model", "big-1", NULL };
    s_run (big, capture, &run);
    cr_expect_not_null (strstr (run.out.data, "\"action\":\"block\",\"check\":\"ran\",\"rule\":\"only-on-big\""),
                        "%s", run.out.data);
    s_run_free (&run);
    const char *small [] = { "--dialect", "openai", "--policy", policy, "--model", "small-1", NULL };
    s_run (small, capture, &run);
    cr_expect_not_null (strstr (run.out.data, "\"action\":\"allow\",\"check\":\"default\""),
                        "%s", run.out.data);
    s_run_free (&run);
    unlink (policy);
    unlink (capture);
}
