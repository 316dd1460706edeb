/*  cluster.c - multi-instance stacks on loopback (see cluster.h). */
#include "tests/integration/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLUSTER_WAIT_MS 15000

static const char *s_names [CL_STAGES] = { "ingest", "aggregator", "judge", "emitter" };

//  "tcp://127.0.0.1:p1,tcp://127.0.0.1:p2,..." of a stage's slots.
static void
s_endpoints (cluster_t *c, int stage, char *out, size_t size)
{
    size_t n = 0;
    out [0] = 0;
    for (int i = 0; i < c->opts.slots [stage] && n < size; i++)
        n += (size_t) snprintf (out + n, size - n, "%stcp://127.0.0.1:%d", i ? "," : "", c->port [stage][i]);
}

int
cluster_start_instance (cluster_t *c, int stage, int i, bool wait)
{
    char bind [64], next [512], metrics [16], label [48], name [48], audit [96];
    mock_urls_t urls;
    snprintf (bind, sizeof bind, "tcp://127.0.0.1:%d", c->port [stage][i]);
    snprintf (metrics, sizeof metrics, "%d", c->metrics [stage][i]);
    snprintf (name, sizeof name, "%s-%d", s_names [stage], i);
    snprintf (label, sizeof label, "%s-%d-run%d", s_names [stage], i, c->restarts [stage][i]++);
    const char *args [64] = { "--bind", bind, "--metrics-port", metrics, "--name", name, "--keys", c->keys, NULL };
    int n = 8;
    if (stage != CL_EMITTER) {
        s_endpoints (c, stage + 1, next, sizeof next);
        args [n++] = "--next";
        args [n++] = next;
    }
    else {
        size_t at = 0;
        next [0] = 0;
        for (int g = 0; g < c->opts.gateway_slots && at < sizeof next; g++)
            at += (size_t) snprintf (next + at, sizeof next - at, "%stcp://127.0.0.1:%d", g ? "," : "",
                                     c->gateway_port [g]);
        args [n++] = "--gateways";
        args [n++] = next;
        args [n++] = "--pub";
        args [n++] = "tcp://127.0.0.1:*";
        args [n++] = "--pub-meta";
        args [n++] = "tcp://127.0.0.1:*";
        if (c->opts.audit) {
            snprintf (audit, sizeof audit, "tcp://127.0.0.1:%d", c->audit_port [i]);
            args [n++] = "--audit";
            args [n++] = audit;
        }
    }
    if (stage == CL_JUDGE) {
        args [n++] = "--policy";
        args [n++] = c->opts.policy ? c->opts.policy : "";
        snprintf (c->approvals [i], sizeof c->approvals [i], "tcp://127.0.0.1:%d", c->approvals_port [i]);
        args [n++] = "--approvals-bind";
        args [n++] = c->approvals [i];
        for (int k = 0; c->opts.judge_args && c->opts.judge_args [k] && n < 60; k++)
            args [n++] = c->opts.judge_args [k];
    }
    if (stage != CL_INGEST)
        for (int k = 0; c->opts.stage_args && c->opts.stage_args [k] && n < 60; k++)
            args [n++] = c->opts.stage_args [k];
    if (stage == CL_INGEST) {
        args [n] = NULL;
        harness_mock_urls (&urls, c->mock_port, args, 60);
        while (args [n])
            n++;
        for (int k = 0; c->opts.ingest_args && c->opts.ingest_args [k] && n < 60; k++)
            args [n++] = c->opts.ingest_args [k];
    }
    args [n] = NULL;
    if (c->procs [stage][i]) {
        proc_stop (c->procs [stage][i], 5000);
        free (c->procs [stage][i]);
    }
    c->procs [stage][i] = proc_start_as (c->dir, s_names [stage], label, args);
    if (!c->procs [stage][i])
        return -1;
    if (wait && !proc_wait_log (c->procs [stage][i], "\"started\"", NULL, NULL, 0, CLUSTER_WAIT_MS)) {
        proc_dump (c->procs [stage][i]);
        return -1;
    }
    return 0;
}

void
cluster_kill (cluster_t *c, int stage, int i)
{
    proc_kill (c->procs [stage][i]);
}

void
cluster_kill_gateway (cluster_t *c, int g)
{
    proc_kill (c->gateway [g]);
}

static int
s_start_gateway (cluster_t *c, int g, bool wait)
{
    char port [16], next [512], label [32], bind [64];
    int http = harness_free_port ();
    snprintf (port, sizeof port, "%d", http);
    snprintf (label, sizeof label, "gateway-%d", g);
    snprintf (bind, sizeof bind, "tcp://127.0.0.1:%d", c->gateway_port [g]);
    s_endpoints (c, CL_INGEST, next, sizeof next);
    const char *args [32] = { "--http-host", "127.0.0.1", "--http-port", port, "--bind", bind,
                              "--next", next, "--metrics-port", "off", "--stream-cap", "67108864",
                              "--keys", c->keys, NULL };
    int n = 14;
    char judges [CLUSTER_SLOTS * 64] = "";
    if (c->opts.gateway_approvals) {
        for (int i = 0; i < c->opts.slots [CL_JUDGE]; i++)
            snprintf (judges + strlen (judges), sizeof judges - strlen (judges), "%stcp://127.0.0.1:%d",
                      i ? "," : "", c->approvals_port [i]);
        args [n++] = "--judge-approvals";
        args [n++] = judges;
        args [n] = NULL;
    }
    for (int k = 0; c->opts.gateway_args && c->opts.gateway_args [k] && n < 31; k++, n++) {
        args [n] = c->opts.gateway_args [k];
        args [n + 1] = NULL;
    }
    c->gateway [g] = proc_start_as (c->dir, "gateway", label, args);
    c->http_port [g] = http;
    if (!c->gateway [g] || (wait && !proc_wait_log (c->gateway [g], "\"started\"", NULL, NULL, 0, CLUSTER_WAIT_MS))) {
        proc_dump (c->gateway [g]);
        return -1;
    }
    return 0;
}

//  Wait until p has heard from every running instance of stage (its
//  "peer_up" line): a router sends nothing to a peer before that, so a load
//  started earlier would all go to whichever instance answered first.
static bool
s_wait_peers (cluster_t *c, proc_t *p, int stage)
{
    for (int i = 0; i < CLUSTER_SLOTS; i++) {
        if (!c->procs [stage][i] || c->procs [stage][i]->pid <= 0)
            continue;                   //  a slot not (or no longer) running
        char after [64], rest [8];
        snprintf (after, sizeof after, "endpoint=tcp://127.0.0.1:%d\"", c->port [stage][i]);
        if (!proc_wait_log (p, "\"peer_up\"", after, rest, sizeof rest, CLUSTER_WAIT_MS)) {
            proc_dump (p);
            return false;
        }
    }
    return true;
}

//  Every running emitter has heard from gateway g (frames go only to a
//  gateway that announced itself).
static bool
s_emitters_know (cluster_t *c, int g)
{
    for (int i = 0; i < CLUSTER_SLOTS; i++) {
        proc_t *e = c->procs [CL_EMITTER][i];
        if (!e || e->pid <= 0)
            continue;
        char after [64], rest [8];
        snprintf (after, sizeof after, "endpoint=tcp://127.0.0.1:%d\"", c->gateway_port [g]);
        if (!proc_wait_log (e, "\"peer_up\"", after, rest, sizeof rest, CLUSTER_WAIT_MS)) {
            proc_dump (e);
            return false;
        }
    }
    return true;
}

int
cluster_start_gateway (cluster_t *c, int g, bool wait)
{
    if (g < 0 || g >= c->opts.gateway_slots || c->gateway [g] || s_start_gateway (c, g, false))
        return -1;
    return wait ? cluster_wait_gateway (c, g) : 0;
}

int
cluster_wait_gateway (cluster_t *c, int g)
{
    if (!c->gateway [g] || !proc_wait_log (c->gateway [g], "\"started\"", NULL, NULL, 0, CLUSTER_WAIT_MS)) {
        proc_dump (c->gateway [g]);
        return -1;
    }
    return s_wait_peers (c, c->gateway [g], CL_INGEST) && s_emitters_know (c, g) ? 0 : -1;
}

cluster_t *
cluster_start (const cluster_opts_t *opts)
{
    cluster_t *c = calloc (1, sizeof *c);
    c->opts = *opts;
    if (c->opts.gateways < 1)
        c->opts.gateways = 1;
    if (c->opts.gateways > CLUSTER_GATEWAYS)
        c->opts.gateways = CLUSTER_GATEWAYS;
    snprintf (c->dir, sizeof c->dir, "/tmp/sluice-cluster-XXXXXX");
    if (!mkdtemp (c->dir)) {
        free (c);
        return NULL;
    }
    if (harness_keygen (c->dir, c->keys, sizeof c->keys))
        goto failed;
    if (c->opts.gateway_slots < c->opts.gateways)
        c->opts.gateway_slots = c->opts.gateways;
    if (c->opts.gateway_slots > CLUSTER_GATEWAYS)
        c->opts.gateway_slots = CLUSTER_GATEWAYS;
    for (int g = 0; g < c->opts.gateway_slots; g++)
        c->gateway_port [g] = harness_free_port ();
    for (int s = 0; s < CL_STAGES; s++) {
        if (c->opts.slots [s] < c->opts.count [s])
            c->opts.slots [s] = c->opts.count [s];
        for (int i = 0; i < c->opts.slots [s]; i++) {
            c->port [s][i] = harness_free_port ();
            c->metrics [s][i] = harness_free_port ();
            if (s == CL_EMITTER)
                c->audit_port [i] = harness_free_port ();
            if (s == CL_JUDGE)
                c->approvals_port [i] = harness_free_port ();
        }
    }
    char delay [16], port [16];
    snprintf (delay, sizeof delay, "%d", opts->mock_delay_ms);
    const char *mock_args [] = { "--host", "127.0.0.1", "--port", "0", "--delay-ms", delay, NULL };
    c->mock = proc_start (c->dir, "mock", mock_args);
    if (!c->mock || !proc_wait_log (c->mock, "\"listening\"", "http=127.0.0.1:", port, sizeof port, CLUSTER_WAIT_MS))
        goto failed;
    c->mock_port = atoi (port);
    for (int s = CL_EMITTER; s >= CL_INGEST; s--)
        for (int i = 0; i < c->opts.count [s]; i++)
            if (cluster_start_instance (c, s, i, true))
                goto failed;
    for (int g = 0; g < c->opts.gateways; g++)
        if (s_start_gateway (c, g, true) || !s_wait_peers (c, c->gateway [g], CL_INGEST))
            goto failed;
    for (int s = CL_INGEST; s < CL_EMITTER; s++)
        for (int i = 0; i < c->opts.count [s]; i++)
            if (!s_wait_peers (c, c->procs [s][i], s + 1))
                goto failed;
    for (int g = 0; g < c->opts.gateways; g++)
        if (!s_emitters_know (c, g))
            goto failed;
    return c;
failed:
    cluster_stop (c);
    return NULL;
}

int
cluster_stop (cluster_t *c)
{
    if (!c)
        return 0;
    int unclean = 0;
    for (int g = 0; g < CLUSTER_GATEWAYS; g++)
        if (c->gateway [g] && c->gateway [g]->pid > 0 && proc_stop (c->gateway [g], 10000) != 0) {
            unclean++;
            proc_dump (c->gateway [g]);
        }
    for (int s = 0; s < CL_STAGES; s++)
        for (int i = 0; i < CLUSTER_SLOTS; i++) {
            proc_t *p = c->procs [s][i];
            if (p && p->pid > 0 && proc_stop (p, 10000) != 0) {
                unclean++;
                proc_dump (p);
            }
        }
    if (c->mock && proc_stop (c->mock, 10000) != 0)
        unclean++;
    //  Logs stay in c->dir when something went wrong, for the reader.
    if (unclean == 0 && !getenv ("SLUICE_KEEP_LOGS")) {
        char cmd [300];
        snprintf (cmd, sizeof cmd, "rm -rf '%s'", c->dir);
        if (system (cmd) != 0)
            fprintf (stderr, "cannot remove %s\n", c->dir);
    }
    for (int g = 0; g < CLUSTER_GATEWAYS; g++)
        free (c->gateway [g]);
    for (int s = 0; s < CL_STAGES; s++)
        for (int i = 0; i < CLUSTER_SLOTS; i++)
            free (c->procs [s][i]);
    free (c->mock);
    free (c);
    return unclean;
}
