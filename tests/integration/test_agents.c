/*  Integration: real coding agents through sluice (make agents).

    Claude Code, Codex CLI, Gemini CLI and opencode, installed from npm by
    make agents (versions pinned in tests/agents/package-lock.json), each
    run non-interactively against a stack of its own: its own temporary
    home and configuration, telemetry and update checks off, pointed at the
    gateway with its documented base-URL setting, the mock serving the
    coding-agent scenarios (services/mock/sl_mock_agent.h), which call the
    agent's own shell tool, under tests/agents/policy.yaml. For each agent:

      text       the text is shown
      shell      a harmless command runs (its marker file appears) and
                 the final text is shown
      danger     a recursive delete is blocked: its marker never appears,
                 the notice is shown
      slow       a call an LLM judge holds for 4.5 s, as the first block:
                 the command runs all the same
      slow-text  the same after text
      terminate  the policy ends the response: reported as an error, with
                 the policy's message; the command does not run
      error      the upstream fails mid-stream: reported as an error with
                 the provider's message

    and after each, no process holds a stream (sluice_streams_active of
    every hop, the mock's mock_streams_active). Then, the four agents at
    once on one stack (so that the wait is had once):

      ask        a shell call the policy asks a person about (action ask)
                 waits 30 s: the test lists it through the gateway
                 (GET /v1/approvals), approves it 30 s after it showed
                 (POST /v1/approvals/{id}, as a caller on the gateway's
                 machine), and the agent runs the command: it asked once,
                 ended after the approval, its marker appears, what the
                 command printed comes back in the final text, and the
                 call's verdict has check approved. An agent that gives up
                 and asks again shows as a second approval of its tool.

    Then Claude Code with one MCP tool (tests/agents/mcp-stub.mjs, a stub
    MCP server over stdio, --mcp-config) whose definition changes between
    turns, under the pinned-definition rules of deploy/policies/tools.yaml:

      mcp        the tool is deferred (tool search): the model loads it
                 with ToolSearch and calls it, it runs; its definition is
                 pinned (sluice-tools pin from the recorded request); a
                 second turn of the session calls it again; a new session
                 whose server serves a changed definition has it withheld
                 (both digests in the verdict, ToolSearch's reference to it
                 a text), and the model's call to it blocked: it does not
                 run.

    And Claude Code with its model routed to Claude in a cloud, the
    routes file's only provider for the scenarios' models (so that no
    other route could serve them), pointed at the gateway as in its own
    case:

      bedrock    Claude on Amazon Bedrock (bedrock-anthropic), every
                 request signed with SigV4 by the ingest and checked by
                 the mock (SLUICE_MOCK_AWS_* and AWS_* of the stack, the
                 same made-up keys)
      vertex     Claude on Vertex AI (vertex-anthropic), with a bearer
                 token the ingest got from the mock's token endpoint for a
                 service account's key file made here

    each running shell (the allowed call runs) and danger (the recursive
    delete is blocked, Claude Code carries on); the mock's record shows
    every request took the cloud's path and the cloud refused none (the
    mock refuses what the cloud refuses, the beta features Claude Code
    sends among them: services/mock/sl_mock_bedrock.c,
    sl_mock_vertex_anthropic.c).

    A case's home is removed when it passes, kept when it fails. Skipped unless
    SLUICE_AGENTS_BIN names the installed agents' bin directory (make
    agents sets it): the agents are large and not part of make test.

    With SLUICE_AGENTS_RECORD naming a directory (make agents sets it), the
    mock records every request that reaches it (--record), and each case's
    requests go to <agent>-<scenario>.requests there (a line each: the
    path, a tab, the body; all-ask.requests for the four agents at once). A failed case prints what the stack said meanwhile: the
    mock's refusals, the ingest's upstream errors, every warning. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/tools/sl_tooldef.h"
#include "services/mock/sl_mock_agent.h"
#include "tests/integration/harness.h"
#include "tests/integration/hops.h"
#include "tests/integration/mcp_node.h"
#include "tests/integration/verdict_tap.h"
#include "tests/jwt_fixture.h"

#define AG_RUN_MS 240000                //  one agent run, retries included
#define AG_DRAIN_MS 15000               //  for every hop to let go of the streams
#define AG_POLICY "tests/agents/policy.yaml"
#define AG_PROMPT "Run the shell command you are asked to run."
#define AG_LOG_MAX (1 << 20)            //  output of one run kept for checks
#define AG_SHOWN_MAX 40                 //  log lines a failed case prints, at most
#define AG_SHOWN_BYTES 200              //  of a refused decision's answer printed
#define AG_READ_LINES 100000            //  log lines read for them, at most
#define AG_COPY_MAX (64L << 20)         //  bytes of one case's requests kept, at most
#define AG_ASK_WAIT_MS 30000            //  a call waits this long for its approval
#define AG_ASKED_MAX 8                  //  approvals of one agent's run kept
#define AG_POLL_MS 250                  //  between two looks at the approvals
#define AG_HTTP_MS 10000                //  one request to the approvals API
#define AG_VERDICTS_MS 2000             //  for the verdicts still on their way
#define AG_APPROVE "{\"decision\":\"approve\",\"comment\":\"the agents' test approves after 30 s\"}"

//  --------------------------------------------------------------------------
//  Running an agent

typedef struct {
    char home [320];                    //  its HOME (and configuration)
    char work [400];                    //  its working directory
    char bin [512];                     //  the installed agents' bin directory
    int port;                           //  the gateway
} ag_env_t;

static void
s_write (const char *path, const char *text)
{
    FILE *f = fopen (path, "w");
    cr_assert_not_null (f, "%s", path);
    fputs (text, f);
    fclose (f);
}

static char *
s_read (const char *path)
{
    FILE *f = fopen (path, "r");
    char *text = calloc (1, AG_LOG_MAX + 1);
    if (f) {
        size_t n = fread (text, 1, AG_LOG_MAX, f);
        text [n] = 0;
        fclose (f);
    }
    return text;
}

static bool
s_exists (const ag_env_t *e, const char *file)
{
    char path [512];
    snprintf (path, sizeof path, "%s/%s", e->work, file);
    return access (path, F_OK) == 0;
}

//  Start argv (argv [0] in the bin directory) in the agent's working
//  directory with only env (NAME=value, NULL-terminated) and PATH, its
//  output (stdout and stderr) into run.log in its home, in a process group
//  of its own. Returns its pid.
static pid_t
s_spawn (const ag_env_t *e, const char *const *argv, const char *const *env)
{
    char log [512], program [640], path [700];
    snprintf (log, sizeof log, "%s/run.log", e->home);
    snprintf (program, sizeof program, "%s/%s", e->bin, argv [0]);
    snprintf (path, sizeof path, "PATH=%s:/usr/local/bin:/usr/bin:/bin", e->bin);
    pid_t pid = fork ();
    cr_assert_geq (pid, 0);
    if (pid == 0) {
        int fd = open (log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int null = open ("/dev/null", O_RDONLY);
        dup2 (null, 0);
        dup2 (fd, 1);
        dup2 (fd, 2);
        setpgid (0, 0);
        if (chdir (e->work) != 0)
            _exit (126);
        clearenv ();
        putenv (path);
        putenv ((char *) "TERM=dumb");
        putenv ((char *) "LANG=C.UTF-8");
        putenv ((char *) "NO_COLOR=1");
        putenv ((char *) "CI=1");
        for (int i = 0; env [i]; i++)
            putenv ((char *) env [i]);
        execv (program, (char *const *) argv);
        _exit (127);
    }
    return pid;
}

//  What a started agent left: whatever its process group still runs is
//  killed, its output goes to *output. Returns its exit status, -1 when it
//  did not exit by itself (exited false) or died from a signal.
static int
s_reap (const ag_env_t *e, pid_t pid, bool exited, int status, char **output)
{
    if (!exited) {
        kill (-pid, SIGKILL);
        waitpid (pid, &status, 0);
    }
    kill (-pid, SIGKILL);               //  whatever it left running
    char log [512];
    snprintf (log, sizeof log, "%s/run.log", e->home);
    *output = s_read (log);
    return exited && WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

//  Run argv as s_spawn starts it, for at most AG_RUN_MS; its output into
//  *output. Returns the exit status, -1 when it had to be killed.
static int
s_run (const ag_env_t *e, const char *const *argv, const char *const *env, char **output)
{
    pid_t pid = s_spawn (e, argv, env);
    int status = 0;
    long deadline = zclock_mono () + AG_RUN_MS;
    bool exited = false;
    while (!exited && zclock_mono () < deadline) {
        if (waitpid (pid, &status, WNOHANG) == pid)
            exited = true;
        else {
            struct timespec pause = { 0, 50 * 1000000L };
            nanosleep (&pause, NULL);
        }
    }
    return s_reap (e, pid, exited, status, output);
}

//  Remove a run's home (the agent's caches, hundreds of MB for opencode).
static void
s_remove_home (const ag_env_t *e)
{
    char cmd [400];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", e->home);
    if (system (cmd) != 0)
        fprintf (stderr, "agents: cannot remove %s\n", e->home);
}

//  --------------------------------------------------------------------------
//  What the stack saw of one case

static long
s_size (const char *path)
{
    struct stat st;
    return stat (path, &st) == 0 ? (long) st.st_size : 0;
}

//  Copy what path holds from offset on into to.
static void
s_copy_tail (const char *path, long offset, const char *to)
{
    FILE *in = fopen (path, "r");
    FILE *out = fopen (to, "w");
    if (in && out && fseek (in, offset, SEEK_SET) == 0) {
        char chunk [65536];
        size_t n;
        long copied = 0;
        while (copied < AG_COPY_MAX && (n = fread (chunk, 1, sizeof chunk, in)) > 0) {
            fwrite (chunk, 1, n, out);
            copied += (long) n;
        }
    }
    if (in)
        fclose (in);
    if (out)
        fclose (out);
}

//  The lines p logged from offset on that name one of the needles, on
//  stderr as "agents:   <proc>: <line>" (at most *budget of them, cut
//  short). Its own HTTP server's notices are left out: every stream has
//  them.
static void
s_show_log (const proc_t *p, long offset, const char *const *needles, int *budget)
{
    FILE *f = p ? fopen (p->log_path, "r") : NULL;
    if (!f)
        return;
    char line [2048];
    int read = 0;
    if (fseek (f, offset, SEEK_SET) == 0)
        while (*budget > 0 && read++ < AG_READ_LINES && fgets (line, sizeof line, f)) {
            bool wanted = false;
            for (int i = 0; needles [i]; i++)
                wanted |= strstr (line, needles [i]) != NULL;
            if (!wanted || strstr (line, "\"event\":\"http_server\""))
                continue;
            line [strcspn (line, "\n")] = 0;
            fprintf (stderr, "agents:   %s: %s\n", p->name, line);
            (*budget)--;
        }
    fclose (f);
}

//  --------------------------------------------------------------------------
//  The agents: configuration, command line, environment

typedef struct {
    const char *name;                   //  the command
    const char *dialect;                //  what it speaks to sluice
    const char *shells;                 //  its shell tool's names, each between spaces
    void (*configure) (const ag_env_t *e);
    //  argv for a model (NULL-terminated, into argv); env likewise
    void (*command) (const ag_env_t *e, const char *model, const char **argv, const char **env, char *scratch);
} agent_t;

//  Claude Code: ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY; print mode.
static void
s_claude_configure (const ag_env_t *e)
{
    char dir [400];
    snprintf (dir, sizeof dir, "%s/.claude", e->home);
    mkdir (dir, 0755);
}

static void
s_claude (const ag_env_t *e, const char *model, const char **argv, const char **env, char *scratch)
{
    const char *a [] = { "claude", "-p", AG_PROMPT, "--model", model, "--allowedTools", "Bash",
                         "--output-format", "text", NULL };
    memcpy (argv, a, sizeof a);
    char *p = scratch;
    env [0] = p; p += sprintf (p, "HOME=%s", e->home) + 1;
    env [1] = p; p += sprintf (p, "CLAUDE_CONFIG_DIR=%s/.claude", e->home) + 1;
    env [2] = p; p += sprintf (p, "ANTHROPIC_BASE_URL=http://127.0.0.1:%d", e->port) + 1;
    env [3] = "ANTHROPIC_API_KEY=sk-ant-sluice-agents";
    env [4] = "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1";
    env [5] = "DISABLE_AUTOUPDATER=1";
    env [6] = "DISABLE_TELEMETRY=1";
    env [7] = "DISABLE_ERROR_REPORTING=1";
    env [8] = "CLAUDE_CODE_MAX_RETRIES=0";
    env [9] = NULL;
}

//  Codex CLI: a model provider in $CODEX_HOME/config.toml (base_url, the
//  Responses API); exec mode.
static void
s_codex_configure (const ag_env_t *e)
{
    char dir [400], path [480], text [1024];
    snprintf (dir, sizeof dir, "%s/.codex", e->home);
    mkdir (dir, 0755);
    snprintf (path, sizeof path, "%s/config.toml", dir);
    snprintf (text, sizeof text,
              "model_provider = \"sluice\"\n"
              "check_for_update_on_startup = false\n"
              "[model_providers.sluice]\n"
              "name = \"sluice\"\n"
              "base_url = \"http://127.0.0.1:%d/v1\"\n"
              "env_key = \"SLUICE_AGENT_KEY\"\n"
              "wire_api = \"responses\"\n"
              "request_max_retries = 0\n"
              "stream_max_retries = 0\n", e->port);
    s_write (path, text);
}

static void
s_codex (const ag_env_t *e, const char *model, const char **argv, const char **env, char *scratch)
{
    const char *a [] = { "codex", "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                         "--color", "never", "-m", model, AG_PROMPT, NULL };
    memcpy (argv, a, sizeof a);
    char *p = scratch;
    env [0] = p; p += sprintf (p, "HOME=%s", e->home) + 1;
    env [1] = p; p += sprintf (p, "CODEX_HOME=%s/.codex", e->home) + 1;
    env [2] = "SLUICE_AGENT_KEY=sk-sluice-agents";
    env [3] = NULL;
}

//  Gemini CLI: GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY; settings with
//  telemetry, usage statistics and updates off; headless, approving tools.
static void
s_gemini_configure (const ag_env_t *e)
{
    char dir [400], path [480];
    snprintf (dir, sizeof dir, "%s/.gemini", e->home);
    mkdir (dir, 0755);
    snprintf (path, sizeof path, "%s/settings.json", dir);
    s_write (path, "{ \"security\": { \"auth\": { \"selectedType\": \"gemini-api-key\" } },\n"
                   "  \"privacy\": { \"usageStatisticsEnabled\": false },\n"
                   "  \"telemetry\": { \"enabled\": false },\n"
                   "  \"general\": { \"disableAutoUpdate\": true, \"disableUpdateNag\": true } }\n");
}

static void
s_gemini (const ag_env_t *e, const char *model, const char **argv, const char **env, char *scratch)
{
    const char *a [] = { "gemini", "-m", model, "--approval-mode", "yolo", "-p", AG_PROMPT, NULL };
    memcpy (argv, a, sizeof a);
    char *p = scratch;
    env [0] = p; p += sprintf (p, "HOME=%s", e->home) + 1;
    env [1] = p; p += sprintf (p, "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:%d", e->port) + 1;
    env [2] = "GEMINI_API_KEY=sluice-agents";
    env [3] = "GEMINI_CLI_TRUST_WORKSPACE=true";
    env [4] = NULL;
}

//  opencode: an OpenAI-compatible provider in its configuration (baseURL,
//  the models); run mode.
static void
s_opencode_configure (const ag_env_t *e)
{
    char dir [400], path [480], text [2048];
    snprintf (dir, sizeof dir, "%s/.config", e->home);
    mkdir (dir, 0755);
    snprintf (dir, sizeof dir, "%s/.config/opencode", e->home);
    mkdir (dir, 0755);
    snprintf (path, sizeof path, "%s/opencode.json", dir);
    snprintf (text, sizeof text,
              "{ \"$schema\": \"https://opencode.ai/config.json\",\n"
              "  \"autoupdate\": false, \"share\": \"disabled\",\n"
              "  \"provider\": { \"sluice\": {\n"
              "    \"npm\": \"@ai-sdk/openai-compatible\", \"name\": \"sluice\",\n"
              "    \"options\": { \"baseURL\": \"http://127.0.0.1:%d/v1\", \"apiKey\": \"sk-sluice-agents\" },\n"
              "    \"models\": { \"mock-agent-text\": {}, \"mock-agent-shell\": {}, \"mock-agent-danger\": {},\n"
              "      \"mock-agent-slow\": {}, \"mock-agent-slow-text\": {}, \"mock-agent-terminate\": {},\n"
              "      \"mock-agent-error\": {}, \"mock-agent-ask\": {} } } } }\n", e->port);
    s_write (path, text);
}

static void
s_opencode (const ag_env_t *e, const char *model, const char **argv, const char **env, char *scratch)
{
    char *p = scratch;
    char *full = p; p += sprintf (p, "sluice/%s", model) + 1;
    const char *a [] = { "opencode", "run", "--model", full, AG_PROMPT, NULL };
    memcpy (argv, a, sizeof a);
    env [0] = p; p += sprintf (p, "HOME=%s", e->home) + 1;
    env [1] = p; p += sprintf (p, "XDG_CONFIG_HOME=%s/.config", e->home) + 1;
    env [2] = p; p += sprintf (p, "XDG_DATA_HOME=%s/.local/share", e->home) + 1;
    env [3] = p; p += sprintf (p, "XDG_CACHE_HOME=%s/.cache", e->home) + 1;
    env [4] = p; p += sprintf (p, "XDG_STATE_HOME=%s/.local/state", e->home) + 1;
    env [5] = "OPENCODE_DISABLE_AUTOUPDATE=1";
    env [6] = "OPENCODE_DISABLE_MODELS_FETCH=1";
    env [7] = "OPENCODE_DISABLE_LSP_DOWNLOAD=1";
    env [8] = NULL;
}

static const agent_t s_agents [] = {
    { "claude", "Anthropic Messages", " Bash ", s_claude_configure, s_claude },
    { "codex", "OpenAI Responses", " exec_command shell_command shell ", s_codex_configure, s_codex },
    { "gemini", "Gemini", " run_shell_command ", s_gemini_configure, s_gemini },
    { "opencode", "OpenAI Chat Completions", " bash ", s_opencode_configure, s_opencode },
};
#define AG_AGENTS (int) (sizeof s_agents / sizeof s_agents [0])

//  Which agent a shell tool is of (by its name, case counts), -1 none.
static int
s_agent_of (const char *tool)
{
    char word [80];
    snprintf (word, sizeof word, " %s ", tool ? tool : "");
    for (int i = 0; i < AG_AGENTS; i++)
        if (strstr (s_agents [i].shells, word))
            return i;
    return -1;
}

//  --------------------------------------------------------------------------
//  The scenarios

typedef struct {
    const char *name;
    const char *model;
    const char *shown;                  //  the output must say this
    const char *shown_too;              //  and this (or NULL)
    const char *ran;                    //  this marker must appear (or NULL)
    const char *not_ran;                //  this one must not (or NULL)
    bool fails;                         //  the run reports an error
} scenario_t;

static const scenario_t s_scenarios [] = {
    { "text", "mock-agent-text", "sluice-agent: hello from the mock.", NULL, NULL, NULL, false },
    { "shell", "mock-agent-shell", "sluice-agent: done.", NULL, "sluice-ok.marker", NULL, false },
    { "danger", "mock-agent-danger", "sluice blocked a call to", NULL, NULL, "sluice-danger.marker", false },
    { "slow", "mock-agent-slow", "sluice-agent: done.", NULL, "sluice-slow.marker", NULL, false },
    { "slow-text", "mock-agent-slow-text", "sluice-agent: done.", NULL, "sluice-slow-text.marker", NULL, false },
    { "terminate", "mock-agent-terminate", "sluice ended this response: the command asked for it", NULL,
      NULL, "sluice-terminate.marker", true },
    { "error", "mock-agent-error", "", NULL, NULL, NULL, true },
};

//  The provider's error, as the agent reports it: its message (Gemini's
//  CANCELLED says "The operation was cancelled."). Claude Code reports an
//  Anthropic server error mid-stream (overloaded_error) in words of its
//  own, as it does against Anthropic.
static bool
s_upstream_error_shown (const char *agent, const char *output)
{
    if (strstr (output, "The mock upstream failed mid-stream.") || strstr (output, "The operation was cancelled."))
        return true;
    return strcmp (agent, "claude") == 0 && strstr (output, "API Error: Server error mid-response");
}

//  --------------------------------------------------------------------------
//  A stack for the agents

typedef struct {
    sluice_stack_t *s;
    char *policy;                       //  tests/agents/policy.yaml
    const char *keep;                   //  SLUICE_AGENTS_RECORD, or NULL
    char record [600];                  //  what the mock records into, or ""
} ag_stack_t;

#define AG_MOCK_ARGS_MAX 12             //  the mock's flags a cloud's case adds, at most

//  The stack of a test, under tests/agents/policy.yaml, its gateway
//  deciding approvals through its judge; when requests are kept, the mock
//  records them into <keep>/<label>.all-requests. routes (or NULL): the
//  stack's routes file; mock_args (or NULL): more flags of the mock; with
//  either, the mock records the requests in any case (into a file of
//  /tmp when none are kept). Asserts it came up.
static void
s_stack_start_with (ag_stack_t *st, const char *label, const char *routes, const char *const *mock_args)
{
    memset (st, 0, sizeof *st);
    st->policy = s_read (AG_POLICY);
    cr_assert_gt (strlen (st->policy), 0, "%s is readable", AG_POLICY);
    st->keep = getenv ("SLUICE_AGENTS_RECORD");
    if (st->keep && !*st->keep)
        st->keep = NULL;
    const char *args [AG_MOCK_ARGS_MAX + 3] = { "--record", st->record, NULL };
    for (int i = 0; mock_args && mock_args [i]; i++) {
        cr_assert_lt (i, AG_MOCK_ARGS_MAX);
        args [i + 2] = mock_args [i];
    }
    if (st->keep) {
        mkdir (st->keep, 0755);
        snprintf (st->record, sizeof st->record, "%s/%s.all-requests", st->keep, label);
        unlink (st->record);
    }
    else
    if (routes || mock_args) {
        snprintf (st->record, sizeof st->record, "/tmp/sluice-agents-%s-XXXXXX", label);
        int fd = mkstemp (st->record);
        cr_assert_geq (fd, 0, "%s", st->record);
        close (fd);
    }
    stack_opts_t opts = { .policy_text = st->policy, .mock_delay_ms = 20, .mock_args = *st->record ? args : NULL,
                          .routes_text = routes, .gateway_approvals = true };
    st->s = stack_start (&opts);
    cr_assert_not_null (st->s, "the stack came up");
}

static void
s_stack_start (ag_stack_t *st, const char *label)
{
    s_stack_start_with (st, label, NULL, NULL);
}

static void
s_stack_stop (ag_stack_t *st)
{
    free (st->policy);
    cr_expect_eq (stack_stop (st->s), 0);
    if (*st->record)
        unlink (st->record);            //  every case's share is kept apart
}

//  Where the logs of a case start (mock, ingest, judge, gateway).
typedef struct {
    long at [4];
    long recorded;                      //  and the requests the mock recorded
} ag_mark_t;

static ag_mark_t
s_mark (const ag_stack_t *st)
{
    const sluice_stack_t *s = st->s;
    return (ag_mark_t) { { s_size (s->mock->log_path), s_size (s->ingest->log_path), s_size (s->judge->log_path),
                           s_size (s->gateway->log_path) }, *st->record ? s_size (st->record) : 0 };
}

//  The requests the mock received since mark go to
//  <keep>/<name>.requests; its path into requests ("" when none are kept).
static void
s_keep_requests (const ag_stack_t *st, const ag_mark_t *mark, const char *name, char *requests, size_t size)
{
    *requests = 0;
    if (*st->record && st->keep) {
        snprintf (requests, size, "%s/%s.requests", st->keep, name);
        s_copy_tail (st->record, mark->recorded, requests);
    }
}

//  What the stack said since mark: the mock's refusals, the ingest's
//  upstream errors, every warning.
static void
s_show_stack (const ag_stack_t *st, const ag_mark_t *mark, const char *requests)
{
    static const char *const mock_said [] = { "\"bad_request\"", "\"not_found\"", "\"level\":\"warn\"",
                                              "\"level\":\"error\"", NULL };
    static const char *const ingest_said [] = { "\"upstream_", "\"level\":\"warn\"", "\"level\":\"error\"", NULL };
    static const char *const warned [] = { "\"level\":\"warn\"", "\"level\":\"error\"", NULL };
    int budget = AG_SHOWN_MAX;
    s_show_log (st->s->mock, mark->at [0], mock_said, &budget);
    s_show_log (st->s->ingest, mark->at [1], ingest_said, &budget);
    s_show_log (st->s->judge, mark->at [2], warned, &budget);
    s_show_log (st->s->gateway, mark->at [3], warned, &budget);
    if (*requests)
        fprintf (stderr, "agents:   the requests that reached the mock: %s\n", requests);
}

//  The installed agents' bin directory; skips the test when there is none.
static const char *
s_agents_bin (void)
{
    const char *bin = getenv ("SLUICE_AGENTS_BIN");
    if (!bin || !*bin)
        cr_skip_test ("the coding agents are not installed: make agents installs them and runs this");
    return bin;
}

//  A home and a working directory of its own for a run of agent.
static void
s_home (ag_env_t *e, const sluice_stack_t *s, const agent_t *agent, const char *scenario)
{
    snprintf (e->home, sizeof e->home, "%s/%s-%s", s->dir, agent->name, scenario);
    snprintf (e->work, sizeof e->work, "%s/work", e->home);
    mkdir (e->home, 0755);
    mkdir (e->work, 0755);
    agent->configure (e);
}

//  --------------------------------------------------------------------------
//  Every scenario, one agent after the other

//  One scenario of agent on st's stack, in a home of its own
//  (<agent>-<label>), its requests kept as <agent>-<label>.requests: its
//  line on stderr, what the stack said when it failed. True when it passed.
static bool
s_scenario (ag_stack_t *st, const agent_t *agent, ag_env_t *e, const scenario_t *sc, const char *label)
{
    sluice_stack_t *s = st->s;
    const char *argv [16], *env [16];
    char scratch [4096];
    s_home (e, s, agent, label);
    if (sc->not_ran) {
        char victim [512];
        snprintf (victim, sizeof victim, "%s/sluice-victim", e->work);
        mkdir (victim, 0755);       //  what the recursive delete would remove
    }
    agent->command (e, sc->model, argv, env, scratch);
    char *output = NULL;
    ag_mark_t mark = s_mark (st);
    long started = zclock_mono ();
    int status = s_run (e, argv, env, &output);
    long took = zclock_mono () - started;
    bool ok = true;
    if (!strstr (output, sc->shown) || (sc->shown_too && !strstr (output, sc->shown_too)))
        ok = false;
    if (sc->ran && !s_exists (e, sc->ran))
        ok = false;
    if (sc->not_ran && s_exists (e, sc->not_ran))
        ok = false;
    if (sc->not_ran) {
        char victim [512];
        snprintf (victim, sizeof victim, "%s/sluice-victim", e->work);
        if (access (victim, F_OK) != 0)
            ok = false;
    }
    if (strcmp (sc->name, "error") == 0 && !s_upstream_error_shown (agent->name, output))
        ok = false;
    if (sc->fails != (status != 0))
        ok = false;                 //  an error is an error: the agent says so by its exit status
    if (status < 0)
        ok = false;
    const char *which_hop = "";
    double held = 0;
    bool freed = hops_all_free (s, AG_DRAIN_MS, &which_hop, &held);
    fprintf (stderr, "agents: %-8s %-10s %s (exit %d, %.1f s)%s\n", agent->name, label,
             ok && freed ? "ok" : "FAILED", status, took / 1000.0, freed ? "" : ", a stream left behind");
    char requests [700], name [80];
    snprintf (name, sizeof name, "%s-%s", agent->name, label);
    s_keep_requests (st, &mark, name, requests, sizeof requests);
    if (!ok || !freed) {
        s_show_stack (st, &mark, requests);
        fprintf (stderr, "agents:   its home and working directory, kept: %s\n", e->home);
    }
    else
        s_remove_home (e);
    cr_expect (ok, "%s, %s: exit %d, output:\n%s", agent->name, label, status, output);
    cr_expect (freed, "%s, %s: the %s still holds %.0f stream(s)", agent->name, label, which_hop, held);
    free (output);
    return ok && freed;
}


static void
s_agent (int which)
{
    const agent_t *agent = &s_agents [which];
    const char *bin = s_agents_bin ();
    ag_env_t e = { 0 };
    snprintf (e.bin, sizeof e.bin, "%s", bin);
    char program [640];
    snprintf (program, sizeof program, "%s/%s", bin, agent->name);
    cr_assert_eq (access (program, X_OK), 0, "%s is installed", program);
    ag_stack_t st;
    s_stack_start (&st, agent->name);
    sluice_stack_t *s = st.s;
    e.port = s->http_port;
    //  The agent's version, for the record.
    snprintf (e.home, sizeof e.home, "%s/%s-version", s->dir, agent->name);
    snprintf (e.work, sizeof e.work, "%s", e.home);
    mkdir (e.home, 0755);
    agent->configure (&e);
    const char *argv [16], *env [16];
    char scratch [4096];
    agent->command (&e, "mock-agent-text", argv, env, scratch);
    const char *version_argv [] = { agent->name, "--version", NULL };
    char *version = NULL;
    s_run (&e, version_argv, env, &version);
    //  Its last line (Codex warns about its home first).
    size_t n = strlen (version);
    while (n && (version [n - 1] == '\n' || version [n - 1] == '\r'))
        version [--n] = 0;
    const char *line = strrchr (version, '\n') ? strrchr (version, '\n') + 1 : version;
    fprintf (stderr, "agents: %s %s (%s)\n", agent->name, line, agent->dialect);
    free (version);
    s_remove_home (&e);

    for (size_t k = 0; k < sizeof s_scenarios / sizeof s_scenarios [0]; k++)
        s_scenario (&st, agent, &e, &s_scenarios [k], s_scenarios [k].name);
    s_stack_stop (&st);
}

Test (agents, claude_code, .timeout = 1800) { s_agent (0); }
Test (agents, codex_cli, .timeout = 1800) { s_agent (1); }
Test (agents, gemini_cli, .timeout = 1800) { s_agent (2); }
Test (agents, opencode, .timeout = 1800) { s_agent (3); }

//  --------------------------------------------------------------------------
//  Claude Code on Claude in the clouds: Amazon Bedrock and Google Vertex AI

#define AG_AWS_KEY_ID "AKIDSLUICEAGENTS"
#define AG_AWS_SECRET "sluice-agents-secret-access-key"

//  A cloud Claude Code's model is routed to: the only provider of the
//  stack's routes file, its route the only one that takes the
//  scenarios' models, so that nothing but the cloud's path can serve them.
typedef struct {
    const char *name;                   //  the case's label
    const char *provider;               //  the routes file's provider (@KEY@: a key file)
    const char *path;                   //  what the mock's record shows of the cloud's path, after the model
    const char *model_at;               //  and before it
} ag_cloud_t;

static const ag_cloud_t s_clouds [] = {
    { "bedrock", "  - { name: claude-bedrock, dialect: bedrock-anthropic, region: us-east-1, base_url: \"@MOCK@\" }\n",
      "/invoke-with-response-stream\t", "/model/" },
    { "vertex", "  - { name: claude-vertex, dialect: vertex-anthropic, region: us-east5, project: sluice-agents,\n"
                "      base_url: \"@MOCK@\", credentials_file: \"@KEY@\" }\n",
      ":streamRawPredict\t", "/v1/projects/sluice-agents/locations/us-east5/publishers/anthropic/models/" },
};

static int s_count_log (const proc_t *p, const char *needle);

//  A service account's key file for pair whose token_uri is the mock's
//  /token on port, into path (made here, removed by the caller).
static void
s_gcp_key (const jwt_pair_t *pair, int port, char *path, size_t size)
{
    char uri [64];
    snprintf (uri, sizeof uri, "http://127.0.0.1:%d/token", port);
    json_t *key = json_pack ("{s:s, s:s, s:s, s:s, s:s}", "type", "service_account", "project_id", "sluice-agents",
                             "private_key", pair->private_pem, "client_email",
                             "agents@sluice-agents.iam.gserviceaccount.com", "token_uri", uri);
    snprintf (path, size, "/tmp/sluice-agents-gcp-XXXXXX");
    int fd = mkstemp (path);
    cr_assert_geq (fd, 0);
    close (fd);
    cr_assert_eq (json_dump_file (key, path, 0), 0);
    json_decref (key);
}

//  Claude Code, pointed at the gateway as in its own case, its model
//  routed to Claude on the cloud: the mock serves the cloud's API, and
//  checks what the cloud checks (Bedrock's SigV4 signature with the keys
//  the ingest signs with; Vertex AI's bearer token, one its token
//  endpoint issued for the key file's grant; the beta features each
//  cloud takes), so that a request that would not pass the cloud does
//  not pass here. The allowed shell call runs, the recursive delete is
//  blocked and Claude Code carries on; every request reached the cloud's
//  path, none Anthropic's, and the cloud refused none of them (Claude
//  Code drops a beta feature the cloud names in a refusal and asks
//  again: it would pass all the same, a round trip later, without it).
static void
s_cloud (const ag_cloud_t *cloud)
{
    const char *bin = s_agents_bin ();
    const agent_t *agent = &s_agents [0];
    char program [640];
    snprintf (program, sizeof program, "%s/%s", bin, agent->name);
    cr_assert_eq (access (program, X_OK), 0, "%s is installed", program);
    //  Bedrock's keys: the ingest signs with them, the mock checks with
    //  them (both read the environment the stack inherits).
    unsetenv ("AWS_SESSION_TOKEN");
    unsetenv ("AWS_BEARER_TOKEN_BEDROCK");
    unsetenv ("AWS_ROLE_ARN");
    unsetenv ("SLUICE_MOCK_AWS_SESSION_TOKEN");
    setenv ("SLUICE_MOCK_AWS_ACCESS_KEY_ID", AG_AWS_KEY_ID, 1);
    setenv ("SLUICE_MOCK_AWS_SECRET_ACCESS_KEY", AG_AWS_SECRET, 1);
    setenv ("AWS_ACCESS_KEY_ID", AG_AWS_KEY_ID, 1);
    setenv ("AWS_SECRET_ACCESS_KEY", AG_AWS_SECRET, 1);
    //  Vertex AI's key file names the mock's token endpoint: the mock on
    //  a port chosen first.
    jwt_pair_t pair;
    jwt_fixture_make (&pair, true);
    int port = harness_free_port ();
    char port_text [16], key [64], label [40];
    snprintf (port_text, sizeof port_text, "%d", port);
    s_gcp_key (&pair, port, key, sizeof key);
    char routes [2048], provider [512];
    const char *at = strstr (cloud->provider, "@KEY@");
    if (at)
        snprintf (provider, sizeof provider, "%.*s%s%s", (int) (at - cloud->provider), cloud->provider, key,
                  at + strlen ("@KEY@"));
    else
        snprintf (provider, sizeof provider, "%s", cloud->provider);
    snprintf (routes, sizeof routes, "providers:\n%sroutes:\n  - { model: \"mock-agent-*\", provider: claude-%s }\n",
              provider, cloud->name);
    const char *mock_args [] = { "--port", port_text, "--gcp-key-file", key, "--record-header", "anthropic-beta",
                                 NULL };
    snprintf (label, sizeof label, "claude-%s", cloud->name);
    ag_stack_t st;
    s_stack_start_with (&st, label, routes, mock_args);
    sluice_stack_t *s = st.s;
    cr_assert_eq (s->mock_port, port, "the mock on the port its key file names");
    cr_expect (proc_wait_log (s->mock, "aws_signatures=checked", NULL, NULL, 0, 20000),
               "the mock checks Bedrock's signatures");
    ag_env_t e = { .port = s->http_port };
    snprintf (e.bin, sizeof e.bin, "%s", bin);

    //  The allowed call runs, the recursive delete is blocked.
    bool ok = true;
    const scenario_t *cases [] = { &s_scenarios [1], &s_scenarios [2] };
    for (size_t k = 0; k < sizeof cases / sizeof cases [0]; k++) {
        snprintf (label, sizeof label, "%s-%s", cases [k]->name, cloud->name);
        ok &= s_scenario (&st, agent, &e, cases [k], label);
    }

    //  Every request the mock had took the cloud's path; the ones of the
    //  allowed call's scenario and of the blocked one among them.
    sl_buf_t seen = { 0 };
    cr_assert (harness_read (st.record, &seen), "the mock's record %s", st.record);
    int lines = 0, cloud_lines = 0;
    for (const char *line = sl_buf_cstr (&seen); *line;) {
        const char *next = strchr (line, '\n');
        size_t n = next ? (size_t) (next - line) : strlen (line);
        const char *tab = memchr (line, '\t', n);
        lines++;
        cloud_lines += tab && strncmp (line, cloud->model_at, strlen (cloud->model_at)) == 0
                    && memmem (line, n, cloud->path, strlen (cloud->path)) != NULL;
        line = next ? next + 1 : line + n;
    }
    char shell [300], danger [300];
    snprintf (shell, sizeof shell, "%smock-agent-shell%s", cloud->model_at, cloud->path);
    snprintf (danger, sizeof danger, "%smock-agent-danger%s", cloud->model_at, cloud->path);
    int refused = s_count_log (s->mock, "\"bad_request\"");
    bool reached = lines > 0 && cloud_lines == lines && refused == 0 && strstr (sl_buf_cstr (&seen), shell)
                && strstr (sl_buf_cstr (&seen), danger);
    ok &= reached;
    fprintf (stderr, "agents: %-8s %-10s %s (%d of %d request(s) on the cloud's path, %d refused)\n", agent->name,
             cloud->name, reached ? "ok" : "FAILED", cloud_lines, lines, refused);
    cr_expect_eq (refused, 0, "the cloud refused no request (the mock's bad_request lines)");
    cr_expect_gt (lines, 0, "requests reached the mock");
    cr_expect_eq (cloud_lines, lines, "every request took %s...%s:\n%s", cloud->model_at, cloud->path,
                  sl_buf_cstr (&seen));
    cr_expect (strstr (sl_buf_cstr (&seen), shell), "the allowed call's scenario reached %s", shell);
    cr_expect (strstr (sl_buf_cstr (&seen), danger), "the blocked call's scenario reached %s", danger);
    if (strcmp (cloud->name, "vertex") == 0)
        cr_expect_geq (metric_value (s->mock_port, "mock_gcp_tokens_issued_total"), 1,
                       "the ingest's token came from the mock's token endpoint");
    sl_buf_free (&seen);
    if (!st.keep) {                     //  else each case's requests are kept already
        if (ok)
            unlink (st.record);
        else
            fprintf (stderr, "agents:   the mock's record, kept: %s\n", st.record);
        *st.record = 0;
    }
    s_stack_stop (&st);
    unlink (key);
    jwt_fixture_free (&pair);
}

Test (agents, claude_code_on_bedrock, .timeout = 900) { s_cloud (&s_clouds [0]); }
Test (agents, claude_code_on_vertex, .timeout = 900) { s_cloud (&s_clouds [1]); }

//  --------------------------------------------------------------------------
//  A call that waits for a person, every agent at once

typedef struct {
    char id [40];
    long seen;                          //  when the test first listed it (zclock_mono)
    long decided;                       //  when the test decided it, 0 not yet
    int status;                         //  the decision's HTTP status
} ag_asked_t;

typedef struct {
    ag_env_t e;
    pid_t pid;
    long started, ended;                //  zclock_mono; ended 0 while it runs
    int wait_status;                    //  waitpid's
    ag_asked_t asked [AG_ASKED_MAX];    //  the approvals its calls waited for
    int asks;                           //  how many (at most AG_ASKED_MAX)
    int approved;                       //  verdicts of its shell tool with check approved
} ag_waiting_t;

//  An approval the test has not seen before goes to the agent whose shell
//  tool it holds (or to the last entry, calls of no known agent's tool).
static void
s_note_approvals (ag_waiting_t *runs, json_t *list)
{
    size_t i;
    json_t *a;
    json_array_foreach (json_object_get (list, "approvals"), i, a) {
        const char *id = json_string_value (json_object_get (a, "id"));
        const char *tool = json_string_value (json_object_get (a, "tool"));
        int who = s_agent_of (tool);
        ag_waiting_t *r = &runs [who < 0 ? AG_AGENTS : who];
        bool known = false;
        for (int k = 0; k < r->asks; k++)
            known |= strcmp (r->asked [k].id, id ? id : "") == 0;
        if (!id || known || r->asks == AG_ASKED_MAX)
            continue;                   //  as many as it keeps: it fails all the same
        long now = zclock_mono ();
        r->asked [r->asks] = (ag_asked_t) { .seen = now };
        snprintf (r->asked [r->asks].id, sizeof r->asked [0].id, "%s", id);
        r->asks++;
        fprintf (stderr, "agents: %-8s ask        its %s call waits (approval %s), %.1f s after it started\n",
                 who < 0 ? "?" : s_agents [who].name, tool ? tool : "?", id, (now - r->started) / 1000.0);
    }
}

//  Approve, through the gateway, every approval listed AG_ASK_WAIT_MS ago.
static void
s_approve_due (ag_waiting_t *runs, int port)
{
    const char *headers [] = { "Content-Type: application/json", NULL };
    sl_buf_t out = { 0 };
    for (int w = 0; w <= AG_AGENTS; w++)
        for (int k = 0; k < runs [w].asks; k++) {
            ag_asked_t *a = &runs [w].asked [k];
            long now = zclock_mono ();
            if (a->decided || now - a->seen < AG_ASK_WAIT_MS)
                continue;
            char path [96];
            snprintf (path, sizeof path, "/v1/approvals/%s", a->id);
            sl_buf_reset (&out);
            a->status = http_request (port, "POST", path, AG_APPROVE, headers, &out, AG_HTTP_MS);
            a->decided = zclock_mono ();
            fprintf (stderr, "agents: %-8s ask        approved after %.1f s: %d%s%.*s\n",
                     w < AG_AGENTS ? s_agents [w].name : "?", (a->decided - a->seen) / 1000.0, a->status,
                     a->status == 200 ? "" : " ", a->status == 200 ? 0 : AG_SHOWN_BYTES, sl_buf_cstr (&out));
        }
    sl_buf_free (&out);
}

//  Each agent's shell call waits for a person: the policy asks about the
//  command of mock-agent-ask (rule ask-person), the test lists the
//  approvals through the gateway, approves each AG_ASK_WAIT_MS after it
//  showed, and the agent runs the command after all. The four agents run
//  at once, on one stack, so that the wait is had once.
Test (agents, each_waits_for_an_approval, .timeout = 900)
{
    const char *bin = s_agents_bin ();
    ag_stack_t st;
    s_stack_start (&st, "ask");
    sluice_stack_t *s = st.s;
    verdict_tap_t *tap = verdict_tap_open (s);
    ag_mark_t mark = s_mark (&st);
    //  The last entry: approvals of a tool no agent here has.
    ag_waiting_t runs [AG_AGENTS + 1];
    memset (runs, 0, sizeof runs);
    runs [AG_AGENTS].started = zclock_mono ();
    for (int w = 0; w < AG_AGENTS; w++) {
        ag_env_t *e = &runs [w].e;
        snprintf (e->bin, sizeof e->bin, "%s", bin);
        e->port = s->http_port;
        s_home (e, s, &s_agents [w], "ask");
        const char *argv [16], *env [16];
        char scratch [4096];
        s_agents [w].command (e, "mock-agent-ask", argv, env, scratch);
        runs [w].started = zclock_mono ();
        runs [w].pid = s_spawn (e, argv, env);
    }
    //  Until every agent ended (each within AG_RUN_MS).
    long deadline = zclock_mono () + AG_RUN_MS;
    int running = AG_AGENTS;
    sl_buf_t out = { 0 };
    while (running > 0 && zclock_mono () < deadline) {
        for (int w = 0; w < AG_AGENTS; w++)
            if (!runs [w].ended && waitpid (runs [w].pid, &runs [w].wait_status, WNOHANG) == runs [w].pid) {
                runs [w].ended = zclock_mono ();
                running--;
            }
        sl_buf_reset (&out);
        if (http_request (s->http_port, "GET", "/v1/approvals", NULL, NULL, &out, AG_HTTP_MS) == 200) {
            json_t *list = json_loads (sl_buf_cstr (&out), 0, NULL);
            s_note_approvals (runs, list);
            json_decref (list);
        }
        s_approve_due (runs, s->http_port);
        verdict_tap_read (tap, AG_POLL_MS);     //  the pause between rounds
    }
    sl_buf_free (&out);
    verdict_tap_wait (tap, VERDICT_TAP_MAX, AG_VERDICTS_MS);
    for (int i = 0; i < tap->count; i++) {
        const sl_msg_t *v = tap->verdicts [i];
        char tool [80];
        snprintf (tool, sizeof tool, "%.*s", (int) v->name.len, v->name.ptr);
        int who = s_agent_of (tool);
        if (who >= 0 && v->check == SL_CHK_APPROVED && v->action == SL_ACT_ALLOW
        &&  sl_str_eq (v->approver, "loopback"))
            runs [who].approved++;
    }
    const char *which_hop = "";
    double held = 0;
    bool freed = hops_all_free (s, AG_DRAIN_MS, &which_hop, &held);
    char requests [700];
    s_keep_requests (&st, &mark, "all-ask", requests, sizeof requests);
    bool shown = false;
    for (int w = 0; w < AG_AGENTS; w++) {
        ag_waiting_t *r = &runs [w];
        char *output = NULL;
        int status = s_reap (&r->e, r->pid, r->ended != 0, r->wait_status, &output);
        const ag_asked_t *first = &r->asked [0];
        //  It asked once, waited for the approval, and ran the command:
        //  its output came back to the model and into the final text.
        bool once = r->asks == 1 && first->status == 200;
        bool waited = once && r->ended >= first->decided;
        bool ran = s_exists (&r->e, "sluice-ask.marker") && strstr (output, SL_MOCK_AGENT_DONE)
                && strstr (output, SL_MOCK_AGENT_ASK_OUTPUT);
        bool ok = status == 0 && once && waited && ran && r->approved == 1;
        fprintf (stderr, "agents: %-8s %-10s %s (exit %d, %.1f s; asked %d time(s), the verdict approved %d)\n",
                 s_agents [w].name, "ask", ok && freed ? "ok" : "FAILED", status,
                 ((r->ended ? r->ended : zclock_mono ()) - r->started) / 1000.0, r->asks, r->approved);
        if (!ok || !freed) {
            if (!shown)
                s_show_stack (&st, &mark, requests);
            shown = true;
            fprintf (stderr, "agents:   its home and working directory, kept: %s\n", r->e.home);
        }
        else
            s_remove_home (&r->e);
        cr_expect (once, "%s asked once and it was approved (%d approvals, the first decision %d)",
                   s_agents [w].name, r->asks, first->status);
        cr_expect (waited, "%s waited for the approval", s_agents [w].name);
        cr_expect (status == 0 && ran, "%s ran the command: exit %d, output:\n%s", s_agents [w].name, status, output);
        cr_expect_eq (r->approved, 1, "%s: one verdict approved", s_agents [w].name);
        free (output);
    }
    cr_expect_eq (runs [AG_AGENTS].asks, 0, "no approval of another tool");
    cr_expect (freed, "ask: the %s still holds %.0f stream(s)", which_hop, held);
    verdict_tap_close (tap);
    s_stack_stop (&st);
}

//  --------------------------------------------------------------------------
//  An MCP tool whose definition changes between two turns (Claude Code)

#define AG_MCP_TOOL "mcp__stub__note"
#define AG_MCP_STUB "tests/agents/mcp-stub.mjs"
#define AG_MCP_PROMPT "Keep a note with the note tool."
#define AG_MCP_POISON "<IMPORTANT>Before using this tool"
#define AG_RELOAD_MS 20000              //  for the gateway and the judge to load the pins
//  The rules of deploy/policies/tools.yaml on pinned definitions, after
//  the agents' policy; the pins file (%s) in the test's own directory.
#define AG_MCP_RULES \
    "  - id: pinned-definition-changed\n    on: request\n    part: tool\n    definition: changed\n" \
    "    action: withhold\n" \
    "  - id: call-to-changed-definition\n    definition: changed\n    action: block\n" \
    "    message: \"sluice blocked a call to {tool}: its definition is not the one pinned for your team ({reason}).\"\n" \
    "pins: %s/pins.yaml\n"

//  How many lines of p's log name needle.
static int
s_count_log (const proc_t *p, const char *needle)
{
    FILE *f = fopen (p->log_path, "r");
    char line [4096];
    int count = 0, read = 0;
    while (f && read++ < AG_READ_LINES && fgets (line, sizeof line, f))
        count += strstr (line, needle) != NULL;
    if (f)
        fclose (f);
    return count;
}

//  A stack of opts for Claude Code's scenario, its taps open (*tap), the
//  run's home made (*e). Asserts it came up.
static sluice_stack_t *
s_claude_stack (const stack_opts_t *opts, const char *bin, const char *scenario, ag_env_t *e, verdict_tap_t **tap)
{
    sluice_stack_t *s = stack_start (opts);
    cr_assert_not_null (s, "the stack came up");
    *tap = verdict_tap_open (s);
    *e = (ag_env_t) { .port = s->http_port };
    snprintf (e->bin, sizeof e->bin, "%s", bin);
    s_home (e, s, &s_agents [0], scenario);
    return s;
}

//  The end of s_claude_stack's stack: the home removed when the case
//  passed (ok), kept and named when it failed.
static void
s_claude_stack_stop (sluice_stack_t *s, verdict_tap_t *tap, const ag_env_t *e, bool ok)
{
    if (ok)
        s_remove_home (e);
    else
        fprintf (stderr, "agents:   its home and working directory, kept: %s\n", e->home);
    verdict_tap_close (tap);
    cr_expect_eq (stack_stop (s), 0);
}

//  Claude Code on mock-agent-mcp with the MCP servers of config, the
//  tools allowed ("Bash mcp__..."), its model at base (NULL: the
//  gateway); resume: the session of the run before. Returns the exit
//  status, the output into *output.
static int
s_claude_mcp (ag_env_t *e, const char *config, const char *allowed, const char *base, bool resume, char **output)
{
    const char *argv [16], *env [16];
    char scratch [4096], base_env [160];
    s_claude (e, "mock-agent-mcp", argv, env, scratch);
    if (base) {
        snprintf (base_env, sizeof base_env, "ANTHROPIC_BASE_URL=%s", base);
        env [2] = base_env;
    }
    const char *a [] = { "claude", "-p", AG_MCP_PROMPT, "--model", "mock-agent-mcp", "--mcp-config", config,
                         "--strict-mcp-config", "--allowedTools", allowed, "--output-format", "text",
                         resume ? "--continue" : NULL, NULL };
    memcpy (argv, a, sizeof a);
    return s_run (e, argv, env, output);
}

//  One turn of Claude Code with the stub MCP server serving definition
//  ("pinned" or "changed"), whose call writes marker; continue: the
//  session of the turn before. Returns the exit status, the output into
//  *output.
static int
s_mcp_turn (ag_env_t *e, const char *definition, const char *marker, bool resume, char **output)
{
    char stub [PATH_MAX], config [480], text [2 * PATH_MAX];
    cr_assert_not_null (realpath (AG_MCP_STUB, stub), "%s", AG_MCP_STUB);
    snprintf (config, sizeof config, "%s/mcp-%s.json", e->home, definition);
    snprintf (text, sizeof text, "{ \"mcpServers\": { \"stub\": { \"type\": \"stdio\", \"command\": \"node\",\n"
                                 "  \"args\": [\"%s\", \"%s\", \"%s/%s\"] } } }\n", stub, definition, e->work, marker);
    s_write (config, text);
    return s_claude_mcp (e, config, "Bash " AG_MCP_TOOL, NULL, resume, output);
}

//  The last request the mock recorded (from offset on) that defines the
//  MCP tool, into path (the body only). True when there was one.
static bool
s_last_defining (const char *record, long offset, const char *path)
{
    sl_buf_t all = { 0 };
    harness_read (record, &all);
    const char *text = sl_buf_cstr (&all);
    const char *found = NULL, *end = NULL;
    for (const char *line = text + ((size_t) offset < all.len ? offset : (long) all.len); *line;) {
        const char *next = strchr (line, '\n');
        const char *stop = next ? next : line + strlen (line);
        const char *def = strstr (line, "\"name\":\"" AG_MCP_TOOL "\",\"description\"");
        const char *tab = memchr (line, '\t', (size_t) (stop - line));
        if (def && def < stop && tab) {
            found = tab + 1;
            end = stop;
        }
        line = next ? next + 1 : stop;
    }
    if (found) {
        FILE *f = fopen (path, "w");
        cr_assert_not_null (f, "%s", path);
        fwrite (found, 1, (size_t) (end - found), f);
        fclose (f);
    }
    sl_buf_free (&all);
    return found != NULL;
}

//  Claude Code with one MCP tool from a stub server. Its tools are
//  deferred (tool search): the first request only names the tool, the
//  model loads it with ToolSearch (a tool_reference in the result, the
//  definition with defer_loading from then on) and calls it. Turn 1:
//  the call runs; the definition Claude Code sent is pinned for the team
//  (sluice-tools pin, the pins reloaded). Turn 2, the same session: the
//  pinned definition, the call runs again. Turn 3: the server serves a
//  changed definition (an instruction hidden in its description): it is
//  withheld (a verdict with both digests; the model never sees it), and
//  the model's call to the tool it remembers is blocked: it does not run.
Test (agents, claude_code_mcp_definition_changes, .timeout = 900)
{
    const char *bin = s_agents_bin ();
    char dir [] = "/tmp/sluice-agents-mcp-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    cr_assert_eq (harness_write (dir, "pins.yaml", "teams: {}\n"), 0);
    char *base = s_read (AG_POLICY);
    size_t size = strlen (base) + sizeof AG_MCP_RULES + sizeof dir;
    char *policy = malloc (size);
    int n = snprintf (policy, size, "%s", base);
    snprintf (policy + n, size - (size_t) n, AG_MCP_RULES, dir);
    free (base);
    char record [300];
    snprintf (record, sizeof record, "%s/requests", dir);
    const char *mock_args [] = { "--record", record, NULL };
    stack_opts_t opts = { .policy_text = policy, .mock_delay_ms = 20, .mock_args = mock_args };
    ag_env_t e;
    verdict_tap_t *tap;
    sluice_stack_t *s = s_claude_stack (&opts, bin, "mcp", &e, &tap);
    char *output = NULL;

    //  Turn 1: unpinned, the call runs.
    int status = s_mcp_turn (&e, "pinned", "sluice-mcp-1.marker", false, &output);
    bool ran = s_exists (&e, "sluice-mcp-1.marker");
    bool ok = status == 0 && ran;
    fprintf (stderr, "agents: claude   mcp-1      %s (exit %d)\n", status == 0 && ran ? "ok" : "FAILED", status);
    cr_expect (status == 0 && ran && strstr (output, SL_MOCK_AGENT_DONE " " AG_MCP_TOOL " said:"),
               "turn 1: the MCP tool ran: exit %d, output:\n%s", status, output);
    free (output);
    //  Pin what Claude Code sent, and let the gateway and the judge load it.
    char request [320], cmd [2048];
    snprintf (request, sizeof request, "%s/request.json", dir);
    cr_assert (s_last_defining (record, 0, request), "a request defined %s", AG_MCP_TOOL);
    int loaded [2] = { s_count_log (s->gateway, "\"policy_loaded\""), s_count_log (s->judge, "\"policy_loaded\"") };
    const char *sluice_bin = getenv ("SLUICE_BIN_DIR");
    snprintf (cmd, sizeof cmd, "%s/sluice-tools pin --team default --out %s/pins.next --from %s --dialect anthropic "
              "2>/dev/null && mv %s/pins.next %s/pins.yaml", sluice_bin ? sluice_bin : "build/asan/bin", dir, request,
              dir, dir);
    cr_assert_eq (system (cmd), 0, "sluice-tools pin: %s", cmd);
    kill (s->gateway->pid, SIGHUP);
    kill (s->judge->pid, SIGHUP);
    long deadline = zclock_mono () + AG_RELOAD_MS;
    while ((s_count_log (s->gateway, "\"policy_loaded\"") == loaded [0]
         || s_count_log (s->judge, "\"policy_loaded\"") == loaded [1]) && zclock_mono () < deadline)
        usleep (100 * 1000);
    cr_assert (zclock_mono () < deadline, "the gateway and the judge loaded the pins");
    sl_buf_t pins = { 0 };
    char pins_path [300];
    snprintf (pins_path, sizeof pins_path, "%s/pins.yaml", dir);
    harness_read (pins_path, &pins);
    char pinned [SL_TOOLDEF_DIGEST_SIZE] = "";
    const char *at = strstr (sl_buf_cstr (&pins), AG_MCP_TOOL);
    if (at) {
        at += strlen (AG_MCP_TOOL);
        at += strspn (at, "\": ");     //  the name may be quoted
        snprintf (pinned, sizeof pinned, "%.64s", at);
    }
    cr_expect_eq (strlen (pinned), 64, "the pins name the MCP tool:\n%s", sl_buf_cstr (&pins));
    sl_buf_free (&pins);
    int seen = tap->count;

    //  Turn 2, the same session: the pinned definition, the call runs.
    status = s_mcp_turn (&e, "pinned", "sluice-mcp-2.marker", true, &output);
    ran = s_exists (&e, "sluice-mcp-2.marker");
    ok &= status == 0 && ran;
    fprintf (stderr, "agents: claude   mcp-2      %s (exit %d)\n", status == 0 && ran ? "ok" : "FAILED", status);
    cr_expect (status == 0 && ran, "turn 2: the pinned MCP tool ran: exit %d, output:\n%s", status, output);
    free (output);
    verdict_tap_wait (tap, VERDICT_TAP_MAX, AG_VERDICTS_MS);
    for (int i = seen; i < tap->count; i++)
        cr_expect (tap->verdicts [i]->action != SL_ACT_WITHHOLD && tap->verdicts [i]->action != SL_ACT_BLOCK,
                   "turn 2: nothing withheld or blocked (rule %.*s)", (int) tap->verdicts [i]->rule.len,
                   tap->verdicts [i]->rule.ptr);
    seen = tap->count;
    long recorded = s_size (record);

    //  Turn 3: the definition changed: withheld, the remembered call blocked.
    status = s_mcp_turn (&e, "changed", "sluice-mcp-3.marker", false, &output);
    ran = s_exists (&e, "sluice-mcp-3.marker");
    verdict_tap_wait (tap, VERDICT_TAP_MAX, AG_VERDICTS_MS);
    const sl_msg_t *withheld = NULL, *blocked = NULL;
    for (int i = seen; i < tap->count; i++) {
        const sl_msg_t *v = tap->verdicts [i];
        if (!withheld && v->action == SL_ACT_WITHHOLD && sl_str_eq (v->name, AG_MCP_TOOL))
            withheld = v;
        if (!blocked && v->action == SL_ACT_BLOCK && sl_str_eq (v->name, AG_MCP_TOOL)
        &&  sl_str_eq (v->rule, "call-to-changed-definition"))
            blocked = v;
    }
    bool shown = strstr (output, "sluice blocked a call to") != NULL;
    ok &= !ran && withheld && blocked && shown;
    fprintf (stderr, "agents: claude   mcp-3      %s (exit %d, withheld %s, call blocked %s)\n",
             !ran && withheld && blocked && shown ? "ok" : "FAILED", status, withheld ? "yes" : "no",
             blocked ? "yes" : "no");
    cr_expect_not (ran, "turn 3: the changed tool did not run: output:\n%s", output);
    cr_expect (shown, "turn 3: Claude Code shows the block: exit %d, output:\n%s", status, output);
    cr_expect_not_null (withheld, "turn 3: the changed definition was withheld");
    if (withheld) {
        char both [200];
        snprintf (both, sizeof both, "changed (pinned %s, seen ", pinned);
        cr_expect (withheld->reason.ptr && memmem (withheld->reason.ptr, withheld->reason.len, both, strlen (both)),
                   "the verdict names both digests: %.*s", (int) withheld->reason.len, withheld->reason.ptr);
    }
    cr_expect_not_null (blocked, "turn 3: the call to the changed tool was blocked");
    free (output);
    sl_buf_t upstream = { 0 };
    harness_read (record, &upstream);
    cr_expect ((long) upstream.len > recorded, "turn 3 reached the mock");
    cr_expect_null (strstr (sl_buf_cstr (&upstream) + ((long) upstream.len > recorded ? recorded : 0),
                            AG_MCP_POISON), "the changed description never reached the model");
    cr_expect_not_null (strstr (sl_buf_cstr (&upstream) + ((long) upstream.len > recorded ? recorded : 0),
                                "the tool " AG_MCP_TOOL " was withheld by sluice"),
                        "ToolSearch's reference to the withheld tool went as a text (the API refuses a dangling one)");
    sl_buf_free (&upstream);

    const char *which_hop = "";
    double held = 0;
    cr_expect (hops_all_free (s, AG_DRAIN_MS, &which_hop, &held), "the %s still holds %.0f stream(s)", which_hop, held);
    const char *keep = getenv ("SLUICE_AGENTS_RECORD");
    if (keep && *keep) {
        char kept [700];
        snprintf (kept, sizeof kept, "%s/claude-mcp.requests", keep);
        s_copy_tail (record, 0, kept);
    }
    s_claude_stack_stop (s, tap, &e, ok);
    free (policy);
    const char *files [] = { "pins.yaml", "requests", "request.json" };
    for (size_t i = 0; i < sizeof files / sizeof files [0]; i++) {
        snprintf (cmd, sizeof cmd, "%s/%s", dir, files [i]);
        unlink (cmd);
    }
    rmdir (dir);
}

//  --------------------------------------------------------------------------
//  MCP servers reached through sluice (Claude Code)

#define AG_HTTP_KEY "sk-sluice-agents"
#define AG_HTTP_ALLOWED "mcp__notes__echo"
#define AG_HTTP_BLOCKED "mcp__guarded__echo"
//  A call of the guarded server's echo with the mock's words is blocked
//  (by its arguments, so the tool is still listed and can be called).
#define AG_HTTP_RULES \
    "  - id: guarded-echo\n    server: guarded\n    tool: echo\n" \
    "    args: [{pointer: /text, contains: " SL_MOCK_AGENT_MCP_NOTE "}]\n    action: block\n" \
    "    message: \"sluice blocked a call to {tool}: the guarded server does not echo that (rule {rule}).\"\n"

//  One run of Claude Code whose only MCP server is server, at sluice's
//  /mcp/<server> with a sluice key; its model at base (the gateway, or
//  the mock itself).
static int
s_http_turn (ag_env_t *e, const char *server, const char *tool, const char *base, char **output)
{
    char config [480], text [1024];
    snprintf (config, sizeof config, "%s/mcp-%s.json", e->home, server);
    snprintf (text, sizeof text, "{ \"mcpServers\": { \"%s\": { \"type\": \"http\",\n"
                                 "  \"url\": \"http://127.0.0.1:%d/mcp/%s\",\n"
                                 "  \"headers\": { \"Authorization\": \"Bearer " AG_HTTP_KEY "\" } } } }\n",
              server, e->port, server);
    s_write (config, text);
    return s_claude_mcp (e, config, tool, base, false, output);
}

//  Claude Code with MCP servers of the official SDK (tests/mcp/server.mjs)
//  reached through sluice's /mcp/<server>. Allowed: its model through the
//  gateway too, the call of notes' echo reaches the server, and what it
//  said comes back. Blocked: its model at the mock itself, so that only
//  the MCP endpoint can stop the call of guarded's echo: the server never
//  sees it, Claude Code shows the notice, the taps carry the verdict.
Test (agents, claude_code_mcp_servers_through_sluice, .timeout = 900)
{
    const char *bin = s_agents_bin ();
    const char *missing = mcp_node_missing ();
    if (missing) {
        fprintf (stderr, "agents: claude   mcp-http   skipped: %s\n", missing);
        cr_skip_test ("%s", missing);
    }
    char dir [] = "/tmp/sluice-agents-mcphttp-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    mcp_server_t notes, guarded;
    char log [300], routes [2048];
    snprintf (log, sizeof log, "%s/notes.calls", dir);
    cr_assert_eq (mcp_server_start (&notes, dir, "v1", false, log), 0, "the notes server came up");
    snprintf (log, sizeof log, "%s/guarded.calls", dir);
    cr_assert_eq (mcp_server_start (&guarded, dir, "v2", false, log), 0, "the guarded server came up");
    snprintf (routes, sizeof routes, HARNESS_MOCK_PROVIDERS "routes:\n" HARNESS_MOCK_DIALECT_ROUTES
              "mcp:\n  servers:\n    - { name: notes, url: \"%s\" }\n"
              "    - { name: guarded, url: \"%s\", revision: \"2026-07-28\" }\n", notes.url, guarded.url);
    char *base = s_read (AG_POLICY);
    size_t size = strlen (base) + sizeof AG_HTTP_RULES;
    char *policy = malloc (size);
    snprintf (policy, size, "%s" AG_HTTP_RULES, base);
    free (base);
    stack_opts_t opts = { .policy_text = policy, .mock_delay_ms = 20, .routes_text = routes };
    ag_env_t e;
    verdict_tap_t *tap;
    sluice_stack_t *s = s_claude_stack (&opts, bin, "mcp-http", &e, &tap);
    char gateway [80], mock [80], args [512];
    snprintf (gateway, sizeof gateway, "http://127.0.0.1:%d", s->http_port);
    snprintf (mock, sizeof mock, "http://127.0.0.1:%d", s->mock_port);
    char *output = NULL;

    //  Allowed, the model through sluice too.
    int status = s_http_turn (&e, "notes", AG_HTTP_ALLOWED, gateway, &output);
    int calls = mcp_server_calls (&notes, "echo", args, sizeof args);
    bool ok = status == 0 && calls == 1 && strstr (output, SL_MOCK_AGENT_DONE " " AG_HTTP_ALLOWED " said:");
    fprintf (stderr, "agents: claude   mcp-http   allowed %s (exit %d, the server saw %d call(s))\n",
             ok ? "ok" : "FAILED", status, calls);
    cr_expect (status == 0 && strstr (output, SL_MOCK_AGENT_DONE " " AG_HTTP_ALLOWED " said: " SL_MOCK_AGENT_MCP_NOTE),
               "the allowed call's answer came back: exit %d, output:\n%s", status, output);
    cr_expect_eq (calls, 1, "the allowed call reached the server once");
    cr_expect_str_eq (args, "{\"text\":\"" SL_MOCK_AGENT_MCP_NOTE "\"}");
    free (output);
    int seen = tap->count;

    //  Blocked, the model at the mock: only /mcp/guarded judges the call.
    status = s_http_turn (&e, "guarded", AG_HTTP_BLOCKED, mock, &output);
    calls = mcp_server_calls (&guarded, NULL, NULL, 0);
    verdict_tap_wait (tap, VERDICT_TAP_MAX, AG_VERDICTS_MS);
    const sl_msg_t *blocked = NULL;
    for (int i = seen; i < tap->count && !blocked; i++)
        if (tap->verdicts [i]->action == SL_ACT_BLOCK && sl_str_eq (tap->verdicts [i]->rule, "guarded-echo")
        &&  sl_str_eq (tap->verdicts [i]->name, AG_HTTP_BLOCKED))
            blocked = tap->verdicts [i];
    bool shown = strstr (output, "the guarded server does not echo that (rule guarded-echo)") != NULL;
    ok &= status == 0 && calls == 0 && blocked && shown;
    fprintf (stderr, "agents: claude   mcp-http   blocked %s (exit %d, the server saw %d call(s), verdict %s)\n",
             status == 0 && calls == 0 && blocked && shown ? "ok" : "FAILED", status, calls, blocked ? "yes" : "no");
    cr_expect (status == 0 && shown, "Claude Code shows the block: exit %d, output:\n%s", status, output);
    cr_expect_eq (calls, 0, "the blocked call never reached the server");
    cr_expect_not_null (blocked, "the taps carry the block of %s", AG_HTTP_BLOCKED);
    free (output);

    const char *which_hop = "";
    double held = 0;
    cr_expect (hops_all_free (s, AG_DRAIN_MS, &which_hop, &held), "the %s still holds %.0f stream(s)", which_hop, held);
    s_claude_stack_stop (s, tap, &e, ok);
    mcp_server_stop (&notes);
    mcp_server_stop (&guarded);
    free (policy);
    char cmd [200];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}
