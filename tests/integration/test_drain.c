/*  Integration: graceful drain (SIGTERM) and rolling updates.

    gateway: SIGTERM with a stream in flight: /readyz 503 while /healthz
    stays 200 (on its metrics port: the client port stops accepting at
    once, so a new connection is refused), the stream completes
    byte-identical to an undisturbed run, and the gateway exits 0 after
    it. With a short --drain-ms the stream still running ends with a clean
    error in its dialect; a second SIGTERM ends it at once, exit 0.

    rolling: two instances of every stage and two gateways (behind the
    test's own client-side balancer: a request refused, or answered 503,
    by a draining gateway goes to another, as a load balancer does), one
    sluice-audit, under a steady load of concurrent streams; for each kind
    in turn a new instance starts, then an old one gets SIGTERM and must
    exit 0 by itself. Every stream of the load completes byte-identical to
    the same request in a run without the update. The two audits share
    one store (SQLite; and PostgreSQL, the audit's update alone) for a
    while, with one signing key and one checkpoint file: neither takes
    the other's sealed head for a stranger's (no chain_broken), and
    afterwards `sluice-audit verify` with the public key and the file
    exits 0 and every stream is in the store with all its records. SLUICE_DRAIN_ROUNDS rounds per kind
    (make test: 1, make chaos: 10); a summary line: streams across each
    kind's update, and the longest pause a client saw between two reads,
    against the undisturbed run's.

    last instance: SIGTERM to the only aggregator with streams in flight
    and a short --drain-ms: every stream completes or ends with a clean
    error; none hangs.
*/
#include <criterion/criterion.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <unistd.h>

#include "tests/pgtmp.h"
#include "tests/integration/audit_proc.h"
#include "tests/integration/cluster.h"
#include "tests/integration/harness.h"
#include "tests/integration/load.h"

#define DRAIN_DELAY_MS 20               //  the mock's pace per event
#define DRAIN_TERM_AT_MS 400            //  SIGTERM this long into a run
#define DRAIN_RUN_LIMIT_MS 60000
#define DRAIN_EXIT_MS 30000             //  the longest wait for a drained process to exit
#define ROLL_STREAMS_PER_KIND 6         //  streams started per kind and round of updates
#define ROLL_CHUNKS 40                  //  text chunks per stream (then two tool calls): ~1 s at the pace
#define ROLL_STEP_MS 1000               //  one kind's update: the new instance, then SIGTERM to an old one
#define ROLL_TERM_AFTER_MS 500          //  from the new instance's start to the old one's SIGTERM
#define ROLL_MAX_ROUNDS 20

//  --------------------------------------------------------------------------
//  Helpers

//  true when a TCP connection to 127.0.0.1:port is refused.
static bool
s_refused (int port)
{
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    bool refused = connect (fd, (struct sockaddr *) &addr, sizeof addr) != 0;
    close (fd);
    return refused;
}

//  Send request on fd and read one answer (head and a Content-Length
//  body) into out, each read bounded. true when a whole answer came.
static bool
s_exchange (int fd, const char *request, sl_buf_t *out)
{
    if (send (fd, request, strlen (request), MSG_NOSIGNAL) != (ssize_t) strlen (request))
        return false;
    sl_buf_reset (out);
    int64_t deadline = zclock_mono () + 5000;
    while (zclock_mono () < deadline) {
        const char *head_end = out->len ? memmem (out->data, out->len, "\r\n\r\n", 4) : NULL;
        if (head_end) {
            const char *cl = strcasestr (sl_buf_cstr (out), "content-length:");
            size_t body = cl ? (size_t) atol (cl + 15) : 0;
            if (out->len >= (size_t) (head_end + 4 - out->data) + body)
                return true;
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll (&p, 1, 500) <= 0)
            continue;
        char buf [4096];
        ssize_t n = recv (fd, buf, sizeof buf, 0);
        if (n <= 0)
            return false;
        sl_buf_append (out, buf, (size_t) n);
    }
    return false;
}

//  A connection to 127.0.0.1:port kept alive after one answer, or -1.
static int
s_keepalive_open (int port)
{
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    sl_buf_t out = { 0 };
    bool ok = fd >= 0 && connect (fd, (struct sockaddr *) &addr, sizeof addr) == 0
           && s_exchange (fd, "GET /healthz HTTP/1.1\r\nHost: sluice\r\n\r\n", &out)
           && strncmp (sl_buf_cstr (&out), "HTTP/1.1 200", 12) == 0;
    sl_buf_free (&out);
    if (!ok && fd >= 0)
        close (fd);
    return ok ? fd : -1;
}

//  The longest time between two reads of a client (its first byte's wait
//  not counted).
static int64_t
s_longest_pause (const load_client_t *c)
{
    int64_t worst = 0;
    for (size_t a = 1; a < c->arrival_count; a++)
        if (c->arrivals [a] - c->arrivals [a - 1] > worst)
            worst = c->arrivals [a] - c->arrivals [a - 1];
    return worst;
}

//  --------------------------------------------------------------------------
//  The gateway

typedef struct {
    sluice_stack_t *stack;
    int ready_status;                   //  /readyz on the metrics port after SIGTERM
    int health_status;                  //  /healthz there
    bool refused;                       //  a new connection to the client port
    int terms;                          //  SIGTERMs to send (a second one cuts the drain)
    int kept;                           //  a kept-alive client connection from before the SIGTERM
    sl_buf_t late;                      //  the answer to a request on it during the drain
} s_gw_t;

static void
s_term_gateway (void *arg, int round)
{
    (void) round;
    s_gw_t *g = arg;
    kill (g->stack->gateway->pid, SIGTERM);
    //  The process reads its signal in its next reactor turn: readiness
    //  is polled for, bounded. (A second signal sent before it read the
    //  first would merge with it.)
    int port = atoi (g->stack->metrics [5]);
    sl_buf_t body = { 0 };
    int64_t deadline = zclock_mono () + 5000;
    do {
        sl_buf_reset (&body);
        g->ready_status = http_request (port, "GET", "/readyz", NULL, NULL, &body, 2000);
    } while (g->ready_status != 503 && zclock_mono () < deadline);
    sl_buf_reset (&body);
    g->health_status = http_request (port, "GET", "/healthz", NULL, NULL, &body, 2000);
    sl_buf_free (&body);
    g->refused = s_refused (g->stack->http_port);
    if (g->kept >= 0)
        s_exchange (g->kept, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n"
                             "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", &g->late);
    if (g->terms > 1)
        kill (g->stack->gateway->pid, SIGTERM);
}

//  A gateway drained with drain_ms and sent terms SIGTERMs mid-stream;
//  the stream's client and the gateway's exit status.
static int
s_drain_gateway (const char *drain_ms, int terms, int chunks, load_client_t **run, load_client_t **reference,
                 s_gw_t *g)
{
    const char *gw_args [] = { "--drain-ms", drain_ms, NULL };
    stack_opts_t opts = { .mock_delay_ms = DRAIN_DELAY_MS, .gateway_args = gw_args };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    *reference = load_clients (1, "mock-bench", chunks);
    load_run (s->http_port, *reference, 1, NULL, 0, DRAIN_RUN_LIMIT_MS);
    cr_assert (load_complete (*reference), "the stream completes without a drain");

    *g = (s_gw_t) { .stack = s, .terms = terms, .kept = s_keepalive_open (s->http_port) };
    cr_assert_geq (g->kept, 0, "a client connection is open and kept alive");
    *run = load_clients (1, "mock-bench", chunks);
    load_action_t term = { DRAIN_TERM_AT_MS, s_term_gateway, g, 0 };
    load_run (s->http_port, *run, 1, &term, 1, DRAIN_RUN_LIMIT_MS);
    int rc = proc_wait_exit (s->gateway, DRAIN_EXIT_MS);
    close (g->kept);
    if (rc != 0)
        proc_dump (s->gateway);
    unlink (s->gateway->log_path);
    free (s->gateway);
    s->gateway = NULL;
    cr_expect_eq (stack_stop (s), 0, "the rest of the stack exits cleanly");
    return rc;
}

Test (drain, gateway_finishes_its_streams_then_exits, .timeout = 120)
{
    load_client_t *run, *reference;
    s_gw_t g;
    //  ~3 s of stream: the SIGTERM comes well before its end.
    int rc = s_drain_gateway ("30000", 1, 150, &run, &reference, &g);
    cr_expect_eq (g.ready_status, 503, "/readyz says draining");
    cr_expect_eq (g.health_status, 200, "/healthz stays ok during the drain");
    cr_expect (g.refused, "a new client connection is refused");
    const char *late = sl_buf_cstr (&g.late);
    cr_expect (strncmp (late, "HTTP/1.1 503", 12) == 0, "a request on a kept-alive connection gets 503: %.40s", late);
    cr_expect (strcasestr (late, "retry-after: 1") && strcasestr (late, "connection: close"),
               "with Retry-After, and the connection closes");
    cr_expect (strstr (late, "\"error\""), "in the OpenAI dialect's error shape");
    sl_buf_free (&g.late);
    cr_expect (load_complete (run), "the stream in flight completes");
    cr_expect (load_identical (run, reference), "byte-identical to the stream without a drain");
    cr_expect_eq (rc, 0, "the gateway exits 0 once its stream ended");
    load_clients_free (run, 1);
    load_clients_free (reference, 1);
}

//  A stream longer than the drain allows (~5 s): cut short by --drain-ms,
//  or by a second SIGTERM, it ends with a clean error in its dialect and
//  the gateway exits 0.
static void
s_expect_cut_cleanly (const char *drain_ms, int terms)
{
    load_client_t *run, *reference;
    s_gw_t g;
    int rc = s_drain_gateway (drain_ms, terms, 250, &run, &reference, &g);
    cr_expect (load_failed_cleanly (run), "the stream ends with an error event, not a cut");
    cr_expect (memmem (run->body.data, run->body.len, "shutting_down", 13) != NULL,
               "the error says why, in the OpenAI dialect's error event");
    cr_expect_lt (run->body.len, reference->body.len, "the stream ended before it would have completed");
    cr_expect_eq (rc, 0, "the gateway exits 0");
    sl_buf_free (&g.late);
    load_clients_free (run, 1);
    load_clients_free (reference, 1);
}

Test (drain, gateway_ends_what_drain_ms_cuts_off_cleanly, .timeout = 120)
{
    s_expect_cut_cleanly ("300", 1);
}

//  A drain of 60 s: only the second signal can end the stream before it
//  completes (it would complete, and the gateway exit 0, without it).
Test (drain, a_second_sigterm_ends_the_drain_at_once, .timeout = 120)
{
    s_expect_cut_cleanly ("60000", 2);
}

//  --------------------------------------------------------------------------
//  Rolling update

//  The kinds rolled: the stages (cluster.h's order), then the gateway and
//  sluice-audit.
enum { ROLL_GATEWAY = CL_STAGES, ROLL_AUDIT, ROLL_KINDS };
#define ROLL_AUDITS 2                   //  audit slots: both run during its update
#define ROLL_LB_LAG_MS 450              //  from a gateway's SIGTERM to its leaving the balancer's rotation
#define ROLL_SETTLE_MS 30000            //  the longest wait for the emitters' spools to empty
#define ROLL_SHAPE_SIZE 256

static const char *s_kind_names [ROLL_KINDS] = { "ingest", "aggregator", "judge", "emitter", "gateway", "audit" };

typedef struct {
    cluster_t *cluster;
    load_balancer_t lb;                 //  the clients' balancer over the live gateways
    audit_proc_t audit [ROLL_AUDITS];   //  proc NULL: none in the slot
    const char *const *store;           //  the audits' store flags
    const char *const *audit_args;      //  and the rest: their signing key, checkpoint file
    char public_key [400];              //  the signing key's public half
    char checkpoints [400];             //  the checkpoint file they share
    char emitters [512];                //  every emitter slot's audit endpoint
    int kinds [ROLL_KINDS];             //  the kinds rolled, in this order
    int kind_count;
    int spare [ROLL_KINDS];             //  the slot with no instance, per kind
    int victim [ROLL_MAX_ROUNDS][ROLL_KINDS];
    proc_t *drained [ROLL_MAX_ROUNDS][ROLL_KINDS];  //  the old instances sent SIGTERM
    int64_t termed_at [ROLL_MAX_ROUNDS][ROLL_KINDS];
    int drained_port [ROLL_MAX_ROUNDS]; //  the client port of the gateway drained in a round
    int start_failures;
} s_roll_t;

//  step encodes (round, kind's index): a new instance of the kind in its
//  spare slot, not waited for (the load goes on meanwhile).
static void
s_roll_start (void *arg, int step)
{
    s_roll_t *r = arg;
    int kind = r->kinds [step % r->kind_count];
    int slot = r->spare [kind];
    char label [32];
    int rc = 0;
    if (kind == ROLL_GATEWAY)
        rc = cluster_start_gateway (r->cluster, slot, false);
    else
    if (kind == ROLL_AUDIT) {
        snprintf (label, sizeof label, "audit-%d", step);
        rc = audit_spawn_at (r->cluster->dir, r->cluster->keys, r->emitters, label, r->store, r->audit_args,
                             &r->audit [slot]) ? 0 : -1;
    }
    else
        rc = cluster_start_instance (r->cluster, kind, slot, false);
    r->start_failures += rc != 0;
}

//  The new gateway or audit is up (the others start by themselves): the
//  gateway joins the balancer's rotation. The old one's process, ours now.
static proc_t *
s_roll_handover (s_roll_t *r, int kind, int slot)
{
    int spare = r->spare [kind];
    proc_t *old = NULL;
    if (kind == ROLL_GATEWAY) {
        if (cluster_wait_gateway (r->cluster, spare))
            r->start_failures++;
        r->lb.ports [spare] = r->cluster->http_port [spare];
        r->lb.live [spare] = true;
        old = r->cluster->gateway [slot];
        r->cluster->gateway [slot] = NULL;
    }
    else
    if (kind == ROLL_AUDIT) {
        if (!r->audit [spare].proc || !audit_wait_up (&r->audit [spare]))
            r->start_failures++;
        old = r->audit [slot].proc;
        r->audit [slot].proc = NULL;
    }
    else {
        old = r->cluster->procs [kind][slot];
        r->cluster->procs [kind][slot] = NULL;
    }
    return old;
}

//  Then SIGTERM to the oldest instance of the kind; its slot is the spare.
static void
s_roll_term (void *arg, int step)
{
    s_roll_t *r = arg;
    int round = step / r->kind_count, kind = r->kinds [step % r->kind_count];
    int slot = r->victim [round][kind];
    proc_t *old = s_roll_handover (r, kind, slot);
    if (kind == ROLL_GATEWAY)
        r->drained_port [round] = r->cluster->http_port [slot];
    r->drained [round][kind] = old;
    r->termed_at [round][kind] = zclock_mono ();
    if (old)
        kill (old->pid, SIGTERM);
    r->spare [kind] = slot;
}

//  A while after its SIGTERM (a balancer's readiness check is not at
//  once) the draining gateway leaves the rotation; meanwhile a client
//  sent there is refused and tried on another.
static void
s_roll_out (void *arg, int round)
{
    s_roll_t *r = arg;
    for (int g = 0; g < r->lb.count; g++)
        if (r->lb.ports [g] == r->drained_port [round])
            r->lb.live [g] = false;
}

//  The store's ledger by records per stream: "records:streams" pairs.
static int
s_shape_row (void *arg, int count, char **values, char **names)
{
    (void) names;
    char *out = arg;
    if (count == 2)
        snprintf (out + strlen (out), ROLL_SHAPE_SIZE - strlen (out), "%s%s:%s", *out ? " " : "",
                  values [0] ? values [0] : "", values [1] ? values [1] : "");
    return 0;
}

static void
s_ledger_shape (const char *const *store, char out [ROLL_SHAPE_SIZE])
{
    const char *sql = "SELECT n, COUNT(*) FROM (SELECT sid, COUNT(*) AS n FROM events GROUP BY sid) t "
                      "GROUP BY n ORDER BY n";
    *out = 0;
    if (strcmp (store [0], "--data-dir") == 0) {
        char path [512];
        snprintf (path, sizeof path, "%s/audit.db", store [1]);
        sqlite3 *db = NULL;
        if (sqlite3_open (path, &db) == SQLITE_OK)
            sqlite3_exec (db, sql, s_shape_row, out, NULL);
        sqlite3_close (db);
        return;
    }
    PGconn *pg = PQconnectdb (store [1]);
    PGresult *res = PQstatus (pg) == CONNECTION_OK ? PQexec (pg, sql) : NULL;
    for (int i = 0; res && PQresultStatus (res) == PGRES_TUPLES_OK && i < PQntuples (res); i++) {
        char *values [] = { PQgetvalue (res, i, 0), PQgetvalue (res, i, 1) };
        s_shape_row (out, 2, values, NULL);
    }
    PQclear (res);
    PQfinish (pg);
}

//  After the load: the emitters' spools empty, the audit stopped, then
//  `sluice-audit verify` on the store (its exit status) and the ledger's
//  shape into shape.
static int
s_audit_settle (s_roll_t *r, char shape [ROLL_SHAPE_SIZE])
{
    for (int i = 0; i < CLUSTER_SLOTS; i++)
        if (r->cluster->procs [CL_EMITTER][i])
            cr_expect_eq (harness_wait_metric_down (r->cluster->metrics [CL_EMITTER][i], "sluice_audit_spool_records",
                                                    0, ROLL_SETTLE_MS), 0,
                          "emitter %d: every record it spooled is committed", i);
    for (int a = 0; a < ROLL_AUDITS; a++)
        if (r->audit [a].proc) {
            cr_expect_eq (audit_metric (&r->audit [a], "sluice_audit_records_rejected_total"), 0,
                          "no record set aside");
            cr_expect_eq (audit_metric (&r->audit [a], "sluice_audit_chain_broken"), 0,
                          "an audit takes the head its sibling sealed for its own");
            cr_expect_eq (proc_stop (r->audit [a].proc, DRAIN_EXIT_MS), 0, "the audit exits cleanly");
            free (r->audit [a].proc);
            r->audit [a].proc = NULL;
        }
    const char *args [] = { "verify", r->store [0], r->store [1], "--public-key", r->public_key,
                            "--checkpoint-file", r->checkpoints, NULL };
    proc_t *v = proc_start_as (r->cluster->dir, "audit", "verify", args);
    cr_assert_not_null (v);
    int rc = proc_wait_exit (v, DRAIN_EXIT_MS);
    if (rc != 0)
        proc_dump (v);
    free (v);
    s_ledger_shape (r->store, shape);
    return rc;
}

//  rounds of rolling updates of the kinds (mask of 1 << kind) under a
//  steady load; store: the audit's (NULL: no audit). Every stream
//  complete and byte-identical to the run without updates, every old
//  instance exits 0 by itself, and with an audit: one valid chain holding
//  every stream whole.
static void
s_rolling_update (int rounds, unsigned mask, const char *const *store)
{
    const char *drain [] = { "--drain-ms", "30000", NULL };
    cluster_opts_t opts = {
        .count = { 2, 2, 2, 2 }, .slots = { 3, 3, 3, 3 }, .mock_delay_ms = DRAIN_DELAY_MS,
        .policy = "deploy/policy.yaml", .stage_args = drain, .ingest_args = drain, .gateway_args = drain,
        .gateways = mask & (1u << ROLL_GATEWAY) ? 2 : 1, .gateway_slots = 3, .audit = store != NULL
    };
    cluster_t *cluster = cluster_start (&opts);
    cr_assert_not_null (cluster, "two instances of every stage came up");
    s_roll_t r = { .cluster = cluster, .store = store };
    for (int k = 0; k < ROLL_KINDS; k++)
        if (mask & (1u << k))
            r.kinds [r.kind_count++] = k;
    for (int g = 0; g < cluster->opts.gateways; g++) {
        r.lb.ports [g] = cluster->http_port [g];
        r.lb.live [g] = true;
    }
    r.lb.count = cluster->opts.gateway_slots;
    //  The audits sign with one key and share one checkpoint file, and
    //  checkpoint often, so both sign while they share the store.
    char secret [400];
    const char *audit_args [] = { "--signing-key", secret, "--checkpoint-file", r.checkpoints,
                                  "--checkpoint-records", "40", "--checkpoint-seconds", "1", NULL };
    if (store) {
        char signing [300];
        snprintf (signing, sizeof signing, "%s/signing", cluster->dir);
        const char *kargs [] = { "--dir", signing, "--signing", "audit", NULL };
        proc_t *k = proc_start_as (cluster->dir, "keygen", "keygen-signing", kargs);
        cr_assert_eq (proc_wait_exit (k, 10000), 0);
        free (k);
        snprintf (secret, sizeof secret, "%s/audit.sign_secret", signing);
        snprintf (r.public_key, sizeof r.public_key, "%s/audit.sign", signing);
        snprintf (r.checkpoints, sizeof r.checkpoints, "%s/checkpoints.jsonl", cluster->dir);
        r.audit_args = audit_args;
        for (int i = 0; i < cluster->opts.slots [CL_EMITTER]; i++)
            snprintf (r.emitters + strlen (r.emitters), sizeof r.emitters - strlen (r.emitters), "%stcp://127.0.0.1:%d",
                      i ? "," : "", cluster->audit_port [i]);
        cr_assert (audit_start_at (cluster->dir, cluster->keys, r.emitters, "audit", store, audit_args, &r.audit [0]),
                   "sluice-audit came up");
    }

    //  A steady load: a stream starts every period, each ~1 s long, so
    //  streams are in flight at every instance when it is told to stop.
    int steps = rounds * r.kind_count;
    int n = rounds * ROLL_STREAMS_PER_KIND * r.kind_count;
    int64_t span = (int64_t) steps * ROLL_STEP_MS + ROLL_STEP_MS;
    load_client_t *base = load_clients (n, "mock-bench", ROLL_CHUNKS);
    load_client_t *run = load_clients (n, "mock-bench", ROLL_CHUNKS);
    for (int i = 0; i < n; i++)
        base [i].start_at = run [i].start_at = span * i / n;
    load_run_balanced (&r.lb, base, n, NULL, 0, DRAIN_RUN_LIMIT_MS * rounds);
    int base_ok = 0;
    for (int i = 0; i < n; i++)
        base_ok += load_complete (&base [i]);
    cr_assert_eq (base_ok, n, "every stream completes without an update");

    //  The oldest instance goes: slots 0, 1, then the one started first
    //  (the audit: one runs, two during its update).
    for (int k = 0; k < ROLL_KINDS; k++)
        r.spare [k] = k == ROLL_AUDIT ? 1 : 2;
    load_action_t *actions = calloc ((size_t) steps * 3, sizeof (load_action_t));
    int count = 0;
    for (int round = 0; round < rounds; round++)
        for (int i = 0; i < r.kind_count; i++) {
            int step = round * r.kind_count + i, kind = r.kinds [i];
            r.victim [round][kind] = kind == ROLL_AUDIT ? round % ROLL_AUDITS : round % 3;
            int64_t at = ROLL_STEP_MS / 2 + (int64_t) step * ROLL_STEP_MS;
            actions [count++] = (load_action_t) { at, s_roll_start, &r, step };
            actions [count++] = (load_action_t) { at + ROLL_TERM_AFTER_MS, s_roll_term, &r, step };
            if (kind == ROLL_GATEWAY)
                actions [count++] = (load_action_t) { at + ROLL_TERM_AFTER_MS + ROLL_LB_LAG_MS, s_roll_out, &r, round };
        }
    load_run_balanced (&r.lb, run, n, actions, count, DRAIN_RUN_LIMIT_MS * rounds);
    free (actions);
    cr_expect_eq (r.start_failures, 0, "every new instance started");

    //  Every old instance exits 0 by itself.
    int exited = 0;
    for (int round = 0; round < rounds; round++)
        for (int i = 0; i < r.kind_count; i++) {
            proc_t *p = r.drained [round][r.kinds [i]];
            if (!p)
                continue;
            int rc = p->pid > 0 ? proc_wait_exit (p, DRAIN_EXIT_MS) : 0;
            if (rc != 0)
                proc_dump (p);
            exited += rc == 0;
            if (r.kinds [i] == ROLL_AUDIT) {
                sl_buf_t log = { 0 };
                harness_read (p->log_path, &log);
                cr_expect_null (strstr (sl_buf_cstr (&log), "\"chain_broken\""),
                                "the old audit took the new one's sealed head for its own");
                sl_buf_free (&log);
            }
            free (p);
        }
    cr_expect_eq (exited, steps, "every instance told to stop exits 0 by itself");

    int complete = 0, identical = 0, refused = 0;
    int64_t pause = 0, base_pause = 0;
    for (int i = 0; i < n; i++) {
        complete += load_complete (&run [i]);
        bool same = load_identical (&run [i], &base [i]);
        identical += same;
        refused += run [i].refused;
        if (!same)
            load_describe ("rolling", i, &run [i], &base [i]);
        if (s_longest_pause (&run [i]) > pause)
            pause = s_longest_pause (&run [i]);
        if (s_longest_pause (&base [i]) > base_pause)
            base_pause = s_longest_pause (&base [i]);
    }
    //  Streams across each kind's update: running when its old instance
    //  got SIGTERM (the gateway's: those it held).
    char across [256];
    size_t at = 0;
    for (int k = 0; k < r.kind_count; k++) {
        int kind = r.kinds [k], streams = 0;
        for (int round = 0; round < rounds; round++)
            for (int i = 0; i < n; i++) {
                load_client_t *c = &run [i];
                int64_t t = r.termed_at [round][kind];
                if (c->arrival_count && t && c->arrivals [0] <= t && c->arrivals [c->arrival_count - 1] >= t
                &&  (kind != ROLL_GATEWAY || c->port == r.drained_port [round]))
                    streams++;
            }
        cr_expect_gt (streams, 0, "streams were in flight across the %s's update", s_kind_names [kind]);
        at += (size_t) snprintf (across + at, sizeof across - at, "%s%s %d", k ? ", " : "", s_kind_names [kind],
                                 streams);
    }
    char shape [ROLL_SHAPE_SIZE] = "";
    int verified = store ? s_audit_settle (&r, shape) : 0;
    fprintf (stderr, "drain: %d round(s) of rolling updates (new instance, then SIGTERM to an old one, per kind%s); "
                     "streams across the update: %s; %d/%d complete, %d/%d identical; longest pause "
                     "between two reads %lld ms (without updates %lld ms); %d request(s) turned away by a "
                     "draining gateway (refused, or 503), tried on another%s%s%s\n",
             rounds, store ? (strcmp (store [0], "--dsn") ? ", audit on SQLite" : ", audit on PostgreSQL") : "",
             across, complete, n, identical, n, (long long) pause, (long long) base_pause, refused,
             store ? "; store: records per stream:streams " : "", shape, store ? (verified ? ", chain BROKEN"
                                                                                  : ", one valid chain") : "");
    cr_expect_eq (complete, n, "every stream completes across the updates");
    cr_expect_eq (identical, n, "every stream is byte-identical to the run without updates");
    if (store) {
        cr_expect_eq (verified, 0, "sluice-audit verify: one valid chain after two audits shared the store");
        //  Every stream (with and without the updates) is the same
        //  request shape: the same records each, all of them in the store.
        char want [32];
        snprintf (want, sizeof want, ":%d", 2 * n);
        cr_expect (strchr (shape, ' ') == NULL && strstr (shape, want) && strlen (strstr (shape, want)) == strlen (want),
                   "all %d streams in the store, each with all its records (records:streams %s)", 2 * n, shape);
    }
    load_clients_free (base, n);
    load_clients_free (run, n);
    cr_expect_eq (cluster_stop (cluster), 0, "every instance still running exits cleanly");
}

static int
s_rounds (void)
{
    const char *env = getenv ("SLUICE_DRAIN_ROUNDS");
    int rounds = env && atoi (env) > 0 ? atoi (env) : 1;
    return rounds < ROLL_MAX_ROUNDS ? rounds : ROLL_MAX_ROUNDS;
}

//  Every kind, the audit on SQLite (a --data-dir in the cluster's).
Test (drain, rolling_update_of_every_kind_loses_no_stream, .timeout = 900)
{
    char dir [256];
    snprintf (dir, sizeof dir, "/tmp/sluice-roll-XXXXXX");
    cr_assert_not_null (mkdtemp (dir));
    const char *store [] = { "--data-dir", dir, NULL };
    s_rolling_update (s_rounds (), (1u << ROLL_KINDS) - 1, store);
    char cmd [300];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

//  Two audits on one PostgreSQL store: the audit's update alone.
Test (drain, rolling_update_of_the_audit_on_postgresql, .timeout = 600)
{
    pgtmp_t pg = { 0 };
    char reason [256];
    if (pgtmp_start (&pg, reason, sizeof reason))
        cr_skip_test ("PostgreSQL: %s", reason);
    const char *store [] = { "--dsn", pg.dsn, NULL };
    s_rolling_update (s_rounds (), 1u << ROLL_AUDIT, store);
    pgtmp_stop (&pg);
}

//  --------------------------------------------------------------------------
//  The last instance of a stage

static void
s_term_aggregator (void *arg, int round)
{
    (void) round;
    cluster_t *c = arg;
    kill (c->procs [CL_AGGREGATOR][0]->pid, SIGTERM);
}

Test (drain, last_instance_of_a_stage_ends_its_streams_cleanly, .timeout = 180)
{
    const char *drain [] = { "--drain-ms", "500", NULL };
    cluster_opts_t opts = { .count = { 1, 1, 1, 1 }, .mock_delay_ms = DRAIN_DELAY_MS, .stage_args = drain };
    cluster_t *cluster = cluster_start (&opts);
    cr_assert_not_null (cluster);
    enum { N = 8 };
    load_client_t *clients = load_clients (N, "mock-bench", 150);
    for (int i = 0; i < N; i++)
        clients [i].timeout_ms = DRAIN_RUN_LIMIT_MS;
    load_action_t term = { DRAIN_TERM_AT_MS, s_term_aggregator, cluster, 0 };
    load_run (cluster->http_port [0], clients, N, &term, 1, DRAIN_RUN_LIMIT_MS + 5000);
    int ended = 0, failed = 0;
    for (int i = 0; i < N; i++) {
        bool ok = load_complete (&clients [i]);
        bool clean = !ok && load_failed_cleanly (&clients [i]);
        ended += ok || clean;
        failed += clean;
        if (!ok && !clean)
            load_describe ("last-instance", i, &clients [i], &(load_client_t) { 0 });
    }
    cr_expect_eq (ended, N, "every stream completed or ended with a clean error; none hung");
    cr_expect_gt (failed, 0, "the drain of the last aggregator cut streams off (they were longer than it)");
    int rc = proc_wait_exit (cluster->procs [CL_AGGREGATOR][0], DRAIN_EXIT_MS);
    cr_expect_eq (rc, 0, "the aggregator exits 0");
    load_clients_free (clients, N);
    cluster_stop (cluster);
}
