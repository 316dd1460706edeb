/*  mcp_node.c - the MCP SDK's server and client as processes (mcp_node.h). */
#include "tests/integration/mcp_node.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <czmq.h>

#include "common/base/sl_buf.h"
#include "tests/integration/harness.h"

#define MCP_NODE_UP_MS 20000            //  for a server to listen (node starts slowly under load)
#define MCP_NODE_STOP_MS 5000           //  for a server to exit on SIGTERM
#define MCP_NODE_POLL_NS (20 * 1000000L)
#define MCP_NODE_LISTENING "\"event\":\"listening\",\"url\":\""
#define MCP_NODE_LOG_LINES 100000       //  lines of a calls' log read, at most

const char *
mcp_node_missing (void)
{
    if (access (MCP_NODE_DIR "/node_modules/@modelcontextprotocol/sdk/package.json", R_OK) != 0
    ||  access (MCP_NODE_DIR "/node_modules/@modelcontextprotocol/client/package.json", R_OK) != 0
    ||  access (MCP_NODE_DIR "/node_modules/@modelcontextprotocol/server/package.json", R_OK) != 0)
        return "the MCP SDK packages are not installed in " MCP_NODE_DIR "/node_modules "
               "(run make mcp-deps; it needs npm and the npm registry)";
    if (system ("node --version > /dev/null 2>&1") != 0)
        return "node is not installed (make sdk-deps installs Debian's nodejs and npm)";
    return NULL;
}

static void
s_pause (void)
{
    struct timespec ts = { 0, MCP_NODE_POLL_NS };
    nanosleep (&ts, NULL);
}

//  Fork node on argv with its output into out, in a process group of its own.
static pid_t
s_spawn (const char *const *argv, const char *out)
{
    pid_t pid = fork ();
    if (pid == 0) {
        int fd = open (out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int null = open ("/dev/null", O_RDONLY);
        dup2 (null, 0);
        dup2 (fd, 1);
        dup2 (fd, 2);
        setpgid (0, 0);
        execvp ("node", (char *const *) argv);
        _exit (127);
    }
    return pid;
}

//  Wait at most timeout_ms for pid; true when it exited (its status in
//  *status), else it is killed with its group.
static bool
s_wait (pid_t pid, int timeout_ms, int *status)
{
    int64_t deadline = zclock_mono () + timeout_ms;
    while (zclock_mono () < deadline) {
        if (waitpid (pid, status, WNOHANG) == pid)
            return true;
        s_pause ();
    }
    kill (-pid, SIGKILL);
    waitpid (pid, status, 0);
    return false;
}

static void
s_dump (const char *label, const char *path)
{
    sl_buf_t text = { 0 };
    harness_read (path, &text);
    fprintf (stderr, "---- %s (%s) ----\n%s\n", label, path, sl_buf_cstr (&text));
    sl_buf_free (&text);
}

int
mcp_server_start (mcp_server_t *self, const char *dir, const char *family, bool changed, const char *log)
{
    memset (self, 0, sizeof *self);
    snprintf (self->log, sizeof self->log, "%s", log);
    snprintf (self->out, sizeof self->out, "%s/mcp-server-%s%s.out", dir, family, changed ? "-changed" : "");
    FILE *f = fopen (log, "w");
    if (f)
        fclose (f);
    const char *argv [] = { "node", MCP_NODE_DIR "/server.mjs", "--family", family, "--log", log,
                            changed ? "--changed" : NULL, NULL };
    self->pid = s_spawn (argv, self->out);
    if (self->pid < 0)
        return -1;
    int64_t deadline = zclock_mono () + MCP_NODE_UP_MS;
    sl_buf_t text = { 0 };
    while (zclock_mono () < deadline) {
        sl_buf_reset (&text);
        harness_read (self->out, &text);
        const char *at = strstr (sl_buf_cstr (&text), MCP_NODE_LISTENING);
        if (at) {
            at += strlen (MCP_NODE_LISTENING);
            size_t n = strcspn (at, "\"");
            if (n < sizeof self->url) {
                memcpy (self->url, at, n);
                self->url [n] = 0;
                sl_buf_free (&text);
                return 0;
            }
        }
        int status;
        if (waitpid (self->pid, &status, WNOHANG) == self->pid) {
            self->pid = 0;
            break;                      //  it died: its output says why
        }
        s_pause ();
    }
    sl_buf_free (&text);
    s_dump ("the MCP server", self->out);
    mcp_server_stop (self);
    return -1;
}

void
mcp_server_stop (mcp_server_t *self)
{
    if (self->pid > 0) {
        kill (self->pid, SIGTERM);
        int status;
        s_wait (self->pid, MCP_NODE_STOP_MS, &status);
    }
    self->pid = 0;
}

int
mcp_server_calls (const mcp_server_t *self, const char *tool, char *last, size_t size)
{
    if (last && size)
        *last = 0;
    FILE *f = fopen (self->log, "r");
    char line [8192];
    int count = 0, read = 0;
    while (f && read++ < MCP_NODE_LOG_LINES && fgets (line, sizeof line, f)) {
        json_t *call = json_loads (line, 0, NULL);
        const char *name = json_string_value (json_object_get (call, "tool"));
        if (name && (!tool || strcmp (name, tool) == 0)) {
            count++;
            if (last && size) {
                char *args = json_dumps (json_object_get (call, "arguments"), JSON_COMPACT | JSON_SORT_KEYS);
                snprintf (last, size, "%s", args ? args : "");
                free (args);
            }
        }
        json_decref (call);
    }
    if (f)
        fclose (f);
    return count;
}

void
mcp_client_start (mcp_client_t *self, const char *dir, const char *label, const char *family,
                  const char *url, const char *key, const char *tool, const char *args)
{
    memset (self, 0, sizeof *self);
    snprintf (self->out, sizeof self->out, "%s/%s.out", dir, label);
    const char *argv [16] = { "node", MCP_NODE_DIR "/client.mjs", "--family", family, "--url", url };
    int argc = 6;
    if (key) {
        argv [argc++] = "--key";
        argv [argc++] = key;
    }
    if (tool) {
        argv [argc++] = "--call";
        argv [argc++] = tool;
        argv [argc++] = "--args";
        argv [argc++] = args ? args : "{}";
    }
    argv [argc] = NULL;
    self->pid = s_spawn (argv, self->out);
    cr_assert_gt (self->pid, 0, "node started");
}

json_t *
mcp_client_wait (mcp_client_t *self, int timeout_ms, int *status)
{
    int raw = 0;
    bool exited = s_wait (self->pid, timeout_ms, &raw);
    *status = exited && WIFEXITED (raw) ? WEXITSTATUS (raw) : -1;
    //  The line is the last one that parses as an object with "family".
    sl_buf_t text = { 0 };
    harness_read (self->out, &text);
    json_t *found = NULL;
    char *all = strdup (sl_buf_cstr (&text));
    char *save = NULL;
    for (char *line = strtok_r (all, "\n", &save); line; line = strtok_r (NULL, "\n", &save)) {
        json_t *j = json_loads (line, 0, NULL);
        if (json_is_object (j) && json_object_get (j, "family")) {
            json_decref (found);
            found = j;
        }
        else
            json_decref (j);
    }
    free (all);
    if (!found || *status != 0)
        s_dump ("the MCP client", self->out);
    sl_buf_free (&text);
    return found;
}

json_t *
mcp_client_run (const char *dir, const char *label, const char *family, const char *url, const char *key,
                const char *tool, const char *args, int timeout_ms, int *status)
{
    mcp_client_t client;
    mcp_client_start (&client, dir, label, family, url, key, tool, args);
    return mcp_client_wait (&client, timeout_ms, status);
}

void
mcp_client_texts (json_t *line, char *out, size_t size)
{
    size_t n = 0;
    *out = 0;
    json_t *texts = json_object_get (json_object_get (line, "call"), "texts");
    size_t i;
    json_t *t;
    json_array_foreach (texts, i, t)
        if (n < size)
            n += (size_t) snprintf (out + n, size - n, "%s%s", i ? "\n" : "", json_string_value (t) ? json_string_value (t) : "");
}

bool
mcp_client_lists (json_t *line, const char *tool)
{
    size_t i;
    json_t *t;
    json_array_foreach (json_object_get (line, "tools"), i, t) {
        const char *name = json_string_value (json_object_get (t, "name"));
        if (name && strcmp (name, tool) == 0)
            return true;
    }
    return false;
}
