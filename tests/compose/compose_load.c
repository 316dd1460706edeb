/*  compose-load - the streams of make compose-test (tests/compose/run.sh)
    against the compose stack's published gateways, with the checks of
    make chaos (tests/integration/load.c).

    compose-load --ports P1[,P2...] --key KEY [--streams N] [--chunks N]
                 [--spread MS] [--expect identical|clean|gateway:PORT]
                 [--label TEXT] [--at MS COMMAND]... [--ports-file FILE]
                 [--reference-spread MS]

    Runs N streaming OpenAI requests (mock-bench, told apart by their
    index) over the ports in turn, each with the key, to their end: once
    undisturbed (the reference), then again while each COMMAND (sh -c)
    starts MS after the run's start (docker kill, docker compose up -d,
    docker stop: waited for at the end, and a command that fails fails
    the run). The requests start spread evenly over --spread ms (the
    reference's over --reference-spread, by default the same: the bytes
    do not depend on the timing). Each stream of the second run is
    compared with the same request of the first:
      identical   every stream complete and the same bytes (keep-alive
                  comments aside), as make chaos holds for a killed
                  aggregator, judge or emitter
      clean       each stream identical or ended with a clean error in
                  its dialect (a killed ingest's upstream_lost)
      gateway:P   the streams of the gateway on port P identical or cut
                  with their connection (a killed gateway's clients lose
                  it), every other stream identical
    With --ports-file, the gateways in rotation are the ports that file
    lists (one a line), read again every 100 ms, as a load balancer
    follows its backends' readiness, while requests start: a rolling
    update of the gateways adds the new one's port and takes an old
    one's out before its SIGTERM. Prints one summary line ("compose: LABEL: ..."); exit 0 when the
    expectation holds, 1 when not, 2 for bad usage.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <czmq.h>

#include "tests/integration/load.h"

#define S_ACTIONS_MAX 8
#define S_PORTS_SEEN_MAX 16             //  gateway ports a run's summary counts streams for
#define S_RUN_LIMIT_MS 300000
#define S_PORTS_EVERY_MS 100            //  the ports file is read this often
#define S_PORTS_TAIL_MS 2000            //  and for this long after the last request started
#define S_USAGE 2

typedef struct {
    const char *command;
    pid_t pid;
} s_command_t;

static void
s_start_command (void *arg, int round)
{
    (void) round;
    s_command_t *c = arg;
    fflush (NULL);
    c->pid = fork ();
    if (c->pid == 0) {
        execl ("/bin/sh", "sh", "-c", c->command, (char *) NULL);
        _exit (127);
    }
}

typedef struct {
    load_balancer_t *lb;
    const char *path;
} s_ports_t;

//  The rotation as the ports file lists it: a port it no longer lists
//  leaves it, a new one takes a free place (or that of one that left).
static void
s_read_ports (void *arg, int round)
{
    (void) round;
    s_ports_t *pf = arg;
    FILE *f = fopen (pf->path, "r");
    if (!f)
        return;
    int listed [LOAD_PORTS_MAX * 2], n = 0, port;
    while (n < LOAD_PORTS_MAX * 2 && fscanf (f, "%d", &port) == 1)
        listed [n++] = port;
    fclose (f);
    if (n == 0)
        return;                         //  a file being written
    load_balancer_t *lb = pf->lb;
    for (int p = 0; p < lb->count; p++) {
        lb->live [p] = false;
        for (int k = 0; k < n; k++)
            lb->live [p] |= lb->ports [p] == listed [k];
    }
    for (int k = 0; k < n; k++) {
        int at = -1;
        for (int p = 0; p < lb->count && at < 0; p++)
            if (lb->ports [p] == listed [k])
                at = p;
        for (int p = 0; p < lb->count && at < 0; p++)
            if (!lb->live [p])
                at = p;
        if (at < 0 && lb->count < LOAD_PORTS_MAX)
            at = lb->count++;
        if (at >= 0) {
            lb->ports [at] = listed [k];
            lb->live [at] = true;
        }
    }
}

static int
s_by_time (const void *a, const void *b)
{
    const load_action_t *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

static int64_t
s_longest_pause (const load_client_t *clients, int n)
{
    int64_t worst = 0;
    for (int i = 0; i < n; i++)
        for (size_t a = 1; a < clients [i].arrival_count; a++)
            if (clients [i].arrivals [a] - clients [i].arrivals [a - 1] > worst)
                worst = clients [i].arrivals [a] - clients [i].arrivals [a - 1];
    return worst;
}

static load_client_t *
s_clients (int n, int chunks, int spread_ms, const char *auth)
{
    load_client_t *clients = load_clients (n, "mock-bench", chunks);
    for (int i = 0; i < n; i++) {
        clients [i].header = auth;
        clients [i].start_at = n > 1 ? (int64_t) spread_ms * i / (n - 1) : 0;
    }
    return clients;
}

static int
s_usage (void)
{
    fprintf (stderr, "usage: compose-load --ports P1[,P2...] --key KEY [--streams N] [--chunks N] [--spread MS]\n"
                     "                    [--expect identical|clean|gateway:PORT] [--label TEXT] [--at MS COMMAND]...\n");
    return S_USAGE;
}

int
main (int argc, char **argv)
{
    load_balancer_t lb = { .count = 0 };
    const char *key = NULL, *expect = "identical", *label = "streams", *ports_file = NULL;
    int streams = 40, chunks = 100, spread = 500, reference_spread = -1;
    s_command_t commands [S_ACTIONS_MAX];
    load_action_t actions [S_ACTIONS_MAX];
    int action_count = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv [i];
        bool more = i + 1 < argc;
        if (strcmp (a, "--ports") == 0 && more) {
            char *list = argv [++i], *save = NULL;
            for (char *p = strtok_r (list, ",", &save); p && lb.count < LOAD_PORTS_MAX; p = strtok_r (NULL, ",", &save)) {
                lb.ports [lb.count] = atoi (p);
                lb.live [lb.count++] = true;
            }
        }
        else if (strcmp (a, "--key") == 0 && more)
            key = argv [++i];
        else if (strcmp (a, "--streams") == 0 && more)
            streams = atoi (argv [++i]);
        else if (strcmp (a, "--chunks") == 0 && more)
            chunks = atoi (argv [++i]);
        else if (strcmp (a, "--spread") == 0 && more)
            spread = atoi (argv [++i]);
        else if (strcmp (a, "--reference-spread") == 0 && more)
            reference_spread = atoi (argv [++i]);
        else if (strcmp (a, "--expect") == 0 && more)
            expect = argv [++i];
        else if (strcmp (a, "--label") == 0 && more)
            label = argv [++i];
        else if (strcmp (a, "--ports-file") == 0 && more)
            ports_file = argv [++i];
        else if (strcmp (a, "--at") == 0 && i + 2 < argc && action_count < S_ACTIONS_MAX) {
            commands [action_count] = (s_command_t) { .command = argv [i + 2] };
            actions [action_count] = (load_action_t) { atoi (argv [i + 1]), s_start_command,
                                                       &commands [action_count], action_count };
            action_count++;
            i += 2;
        }
        else
            return s_usage ();
    }
    int victim = strncmp (expect, "gateway:", 8) == 0 ? atoi (expect + 8) : 0;
    if (!lb.count || !key || streams <= 0 || chunks <= 0 || spread < 0
    ||  (strcmp (expect, "identical") != 0 && strcmp (expect, "clean") != 0 && victim <= 0))
        return s_usage ();
    //  The commands, and the ports file's readings, in time order.
    s_ports_t pf = { &lb, ports_file };
    //  Read while requests start (and a refused one may be sent again):
    //  the run waits for its last action.
    int total = action_count + (ports_file ? (spread + S_PORTS_TAIL_MS) / S_PORTS_EVERY_MS : 0);
    load_action_t *all = calloc ((size_t) total, sizeof *all);
    memcpy (all, actions, (size_t) action_count * sizeof *all);
    for (int k = action_count; k < total; k++)
        all [k] = (load_action_t) { (int64_t) (k - action_count) * S_PORTS_EVERY_MS, s_read_ports, &pf, 0 };
    qsort (all, (size_t) total, sizeof *all, s_by_time);
    if (ports_file)
        s_read_ports (&pf, 0);
    char auth [512];
    snprintf (auth, sizeof auth, "Authorization: Bearer %s", key);
    curl_global_init (CURL_GLOBAL_ALL);

    load_client_t *reference = s_clients (streams, chunks, reference_spread >= 0 ? reference_spread : spread, auth);
    load_run_balanced (&lb, reference, streams, NULL, 0, S_RUN_LIMIT_MS);
    int reference_ok = 0;
    for (int i = 0; i < streams; i++)
        reference_ok += load_complete (&reference [i]);
    if (reference_ok != streams) {
        for (int i = 0; i < streams; i++)
            if (!load_complete (&reference [i])) {
                load_describe ("compose: reference stream", i, &reference [i], &reference [i]);
                break;
            }
        printf ("compose: %s: the undisturbed run completed %d of %d streams\n", label, reference_ok, streams);
        return 1;
    }

    load_client_t *run = s_clients (streams, chunks, spread, auth);
    load_run_balanced (&lb, run, streams, all, total, S_RUN_LIMIT_MS);
    free (all);
    int failed_commands = 0;
    for (int k = 0; k < action_count; k++) {
        int status = 0;
        if (commands [k].pid <= 0
        ||  (waitpid (commands [k].pid, &status, 0) > 0 && (!WIFEXITED (status) || WEXITSTATUS (status) != 0))) {
            printf ("compose: %s: the command at %lld ms failed (or did not start): %s\n", label,
                    (long long) actions [k].at, commands [k].command);
            failed_commands++;
        }
    }

    int complete = 0, identical = 0, clean = 0, cut = 0, other = 0, on_victim = 0;
    //  Streams per gateway port, every port the run used (a rolling
    //  update's old and new gateways).
    int ports [S_PORTS_SEEN_MAX] = { 0 }, per_port [S_PORTS_SEEN_MAX] = { 0 }, port_count = 0;
    for (int i = 0; i < streams; i++) {
        load_client_t *c = &run [i];
        int p = 0;
        while (p < port_count && ports [p] != c->port)
            p++;
        if (p == port_count && port_count < S_PORTS_SEEN_MAX)
            ports [port_count++] = c->port;
        if (p < port_count)
            per_port [p]++;
        on_victim += victim && c->port == victim;
        complete += load_complete (c);
        if (load_identical (c, &reference [i]) && load_complete (c))
            identical++;
        else
        if (strcmp (expect, "clean") == 0 && load_failed_cleanly (c))
            clean++;
        else
        if (victim && c->port == victim && c->done && c->result != CURLE_OK)
            cut++;
        else {
            if (other++ == 0)
                load_describe ("compose: stream", i, c, &reference [i]);
        }
    }
    printf ("compose: %s: %d streams, %d complete, %d identical to the undisturbed run", label, streams, complete,
            identical);
    if (strcmp (expect, "clean") == 0)
        printf (", %d ended with a clean error", clean);
    if (victim)
        printf (", %d of the %d on the killed gateway cut with their connection", cut, on_victim);
    printf (", %d otherwise; per gateway port:", other);
    for (int p = 0; p < port_count; p++)
        printf (" %d=%d", ports [p], per_port [p]);
    printf ("; longest pause %lld ms (undisturbed %lld ms)\n", (long long) s_longest_pause (run, streams),
            (long long) s_longest_pause (reference, streams));
    load_clients_free (reference, streams);
    load_clients_free (run, streams);
    curl_global_cleanup ();
    return other == 0 && failed_commands == 0 ? 0 : 1;
}
