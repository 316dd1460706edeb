/*  Benchmark: the audit store and the emitter's spool (one core).

    1. Records written per second by sl_archive (what sluice-audit does
       for each record: the ledger insert, the block or verdict row, the
       stream's counts), in transactions of 200 records as the audit
       commits a drained batch: on SQLite (a file, WAL, synchronous=NORMAL,
       as sluice-audit opens it) and on PostgreSQL (a cluster started here
       in a temporary directory, on its unix socket, with fsync and
       synchronous commit on, as a deployment would run it; skipped with
       the reason where PostgreSQL's programs are absent). Each stream is
       the mock-tools answer: start, message, text, two verdicts, a call,
       a notice, finish, end (9 records). Each store is measured with the
       hash chain (sl_chain.h: every record hashed, the batch's entries
       written in one INSERT at commit) and without it, ROUNDS times each,
       alternating: the medians and their ratio are the chain's cost.
    2. What the spool costs the emitter per stream, in process: each of
       those 9 records encoded into the spool, then taken in batches and
       acknowledged as an audit would (the bytes a send would copy), and
       without an audit (the records stay until the bound). The process
       figures (the emitter's CPU with the spool off, on without an audit,
       on with sluice-audit) come from tests/bench/audit-stack.sh.

    The chain is measured as the audit writes it with a signing key: each
    transaction's last entry sealed (sl_chain.h, one Ed25519 signature a
    transaction); BENCH_AUDIT_SEALS=off measures it without seals, and
    BENCH_AUDIT_BATCH=N transactions of N records (what a quiet audit
    commits: the seal's share per record grows as batches shrink).

    BENCH_AUDIT_JSON=FILE writes the costs there as JSON
    (chain_cost_pct: SQLite's; chain_cost_pct_postgres when measured),
    for make bench to add to build/bench.json (tests/bench/json-merge.py).

    For a profiler: BENCH_AUDIT_ONLY=sqlite runs the SQLite part alone,
    BENCH_AUDIT_CHAIN=on (or off) only the runs with the chain on (off;
    the cost line is then meaningless), BENCH_AUDIT_KEEP=1 keeps the
    stores (to measure what each table takes, e.g. SQLite's dbstat).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/identity/sl_signkey.h"
#include "services/audit/recorder/sl_archive.h"
#include "services/audit/recorder/sl_chain.h"
#include "services/audit/store/sl_store.h"
#include "common/stages/sl_spool.h"
#include "tests/pgtmp.h"

#define STREAMS 4000
#define BATCH 200                       //  records per transaction
#define SPOOL_STREAMS 100000
#define ROUNDS 3                        //  runs of each store, chain on and off
#define CHAIN_COST_AIM_PCT 5            //  the aim: the chain costs at most this much of SQLite's records/s

static sl_signkey_t s_key;              //  seals the chain's transactions (when has_secret)
static long s_batch = BATCH;            //  records per transaction

static double
s_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static double
s_cpu (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

//  The records of one mock-tools stream, as the emitter spools them.
static int
s_records (int stream, sl_msg_t *out)
{
    static const char *text = "Let me check the weather and tidy up.";
    int n = 0;
    uint8_t sid [SL_SID_SIZE] = { 0 };
    memcpy (sid, &stream, sizeof stream);
    sid [15] = 0x5a;
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_START);
    m.model = SL_STR_LIT ("mock-tools");
    m.provider = SL_STR_LIT ("mock-openai");
    m.client_dialect = m.upstream_dialect = SL_DIALECT_OPENAI;
    m.key_id = SL_STR_LIT ("a9993e364706");
    m.policy = SL_STR_LIT ("52e9e1ff7988");
    m.last_user = SL_STR_LIT ("Check the weather in Paris and tidy up my disk");
    m.tools = SL_STR_LIT ("[{\"name\":\"get_weather\",\"schema\":{\"type\":\"object\"}},"
                          "{\"name\":\"run_shell\",\"schema\":{\"type\":\"object\"}}]");
    out [n++] = m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    m.kind = SL_B_MESSAGE;
    m.id = SL_STR_LIT ("chatcmpl-mock7480bd94af71183f");
    m.model = SL_STR_LIT ("mock-tools");
    out [n++] = m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    m.kind = SL_B_END;
    m.block = SL_BK_TEXT;
    m.index = 0;
    m.text = sl_str (text);
    out [n++] = m;
    sl_msg_init (&m, SL_MSG_VERDICT);
    m.index = 1;
    m.id = SL_STR_LIT ("call_weather_1");
    m.name = SL_STR_LIT ("get_weather");
    m.action = SL_ACT_ALLOW;
    m.check = SL_CHK_DEFAULT;
    m.reason = SL_STR_LIT ("no rule matched");
    m.text = SL_STR_LIT ("{\"city\":\"Paris\"}");
    m.latency_us = 12;
    out [n++] = m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    m.kind = SL_B_END;
    m.block = SL_BK_TOOL_CALL;
    m.index = 1;
    m.id = SL_STR_LIT ("call_weather_1");
    m.name = SL_STR_LIT ("get_weather");
    m.text = SL_STR_LIT ("{\"city\":\"Paris\"}");
    m.flags = SL_F_ARGS_VALID;
    out [n++] = m;
    sl_msg_init (&m, SL_MSG_VERDICT);
    m.index = 2;
    m.id = SL_STR_LIT ("call_shell_1");
    m.name = SL_STR_LIT ("run_shell");
    m.action = SL_ACT_BLOCK;
    m.check = SL_CHK_RAN;
    m.rule = SL_STR_LIT ("no-rm-rf");
    m.reason = SL_STR_LIT ("rule no-rm-rf matched");
    m.text = SL_STR_LIT ("{\"command\":\"rm -rf /\"}");
    m.latency_us = 280;
    out [n++] = m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    m.kind = SL_B_END;
    m.block = SL_BK_TEXT;
    m.index = 2;
    m.flags = SL_F_REPLACED;
    m.text = SL_STR_LIT ("\n\nsluice blocked a call to run_shell: the command deletes files recursively.");
    out [n++] = m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    m.kind = SL_B_FINISH;
    m.finish = SL_FIN_TOOL_CALLS;
    m.has_usage = true;
    m.usage = (sl_usage_t) { 40, 25, 65, -1, -1, -1 };
    out [n++] = m;
    sl_msg_init (&m, SL_MSG_END);
    out [n++] = m;
    for (int i = 0; i < n; i++) {
        memcpy (out [i].sid, sid, SL_SID_SIZE);
        out [i].seq = (uint64_t) i * 3;
    }
    return n;
}

//  Records per second into the store at target, chained or not; -1 on
//  failure. A new store each run (target names a fresh file or database).
static double
s_store_rate (const char *target, const char *label, bool chained)
{
    char *error = NULL;
    sl_store_t *store = sl_store_open (target, &error);
    if (!store) {
        fprintf (stderr, "bench_audit: %s: %s\n", label, error);
        free (error);
        return -1;
    }
    sl_archive_t *archive = sl_archive_new (store, 0);
    sl_archive_set_chained (archive, chained);
    if (chained && s_key.has_secret)
        sl_chain_set_key (sl_archive_chain (archive), &s_key);
    sl_msg_t recs [16];
    long records = 0, in_batch = 0;
    double t0 = s_now (), c0 = s_cpu ();
    for (int s = 0; s < STREAMS; s++) {
        int n = s_records (s, recs);
        for (int i = 0; i < n; i++) {
            if (!in_batch && sl_store_begin (store))
                goto failed;
            sl_record_meta_t meta = { SL_STR_LIT ("emitter-1"), 7, (uint64_t) records + 1, 0,
                                      INT64_C (1790000000000) + records };
            if (sl_archive_apply (archive, &meta, &recs [i]) != 1)
                goto failed;
            records++;
            if (++in_batch == s_batch) {
                if (sl_archive_commit (archive))
                    goto failed;
                in_batch = 0;
            }
        }
    }
    if (in_batch && sl_archive_commit (archive))
        goto failed;
    double elapsed = s_now () - t0, cpu = s_cpu () - c0;
    printf ("audit store, %-10s chain %-3s %7.0f records/s (%ld records of %d streams in %.2f s, %ld a transaction%s; "
            "%.1f us of the writer's CPU per record)\n", label, chained ? "on" : "off", (double) records / elapsed,
            records, STREAMS, elapsed, s_batch, chained && s_key.has_secret ? ", sealed" : "",
            cpu * 1e6 / (double) records);
    sl_archive_destroy (&archive);
    sl_store_close (&store);
    return (double) records / elapsed;
failed:
    fprintf (stderr, "bench_audit: %s: %s\n", label, sl_store_error (store));
    sl_archive_destroy (&archive);
    sl_store_close (&store);
    return -1;
}

static int
s_by_value (const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static double
s_median (double *v, int n)
{
    qsort (v, (size_t) n, sizeof *v, s_by_value);
    return v [n / 2];
}

//  ROUNDS runs with the chain and without, alternating, each on a new
//  store (make_target gives the n-th); the medians and their ratio
//  (*cost_pct: what the chain costs, %). -1 when a run failed.
static double
s_chain_cost (const char *label, void (*make_target) (void *arg, int n, char *out, size_t size), void *arg,
              double *cost_pct)
{
    double on [ROUNDS], off [ROUNDS];
    char target [512];
    for (int r = 0; r < ROUNDS; r++) {
        make_target (arg, 2 * r, target, sizeof target);
        const char *side = getenv ("BENCH_AUDIT_CHAIN");
        off [r] = side && strcmp (side, "on") == 0 ? 1 : s_store_rate (target, label, false);
        if (side && strcmp (side, "off") == 0) {
            on [r] = 1;
            continue;
        }
        make_target (arg, 2 * r + 1, target, sizeof target);
        on [r] = s_store_rate (target, label, true);
        if (on [r] < 0 || off [r] < 0)
            return -1;
    }
    double m_on = s_median (on, ROUNDS), m_off = s_median (off, ROUNDS);
    *cost_pct = 100.0 * (1.0 - m_on / m_off);
    printf ("audit store, %-10s median of %d: chain off %.0f, on %.0f records/s: the chain costs %.1f%%\n",
            label, ROUNDS, m_off, m_on, *cost_pct);
    return m_on;
}

static void
s_sqlite_target (void *arg, int n, char *out, size_t size)
{
    snprintf (out, size, "%s/audit-%d.db", (const char *) arg, n);
}

static void
s_pg_target (void *arg, int n, char *out, size_t size)
{
    pgtmp_t *pg = arg;
    char *error = NULL;
    sl_store_t *admin = sl_store_open_raw (pg->dsn, &error);
    free (error);
    char sql [64];
    snprintf (sql, sizeof sql, "CREATE DATABASE bench%d", n);
    if (admin)
        sl_store_exec (admin, sql, NULL, 0, NULL);
    sl_store_close (&admin);
    snprintf (out, size, "host=%s port=%d user=sluice dbname=bench%d", pg->dir, pg->port, n);
}

//  The spool's cost per stream: records in, batches out, acknowledged.
static void
s_spool (bool audit)
{
    sl_spool_t *spool = sl_spool_new ((size_t) 1 << 34, "emitter-1", 7);
    sl_msg_t recs [16], hello;
    sl_msg_init (&hello, SL_MSG_RACK);
    if (audit)
        sl_spool_on_rack (spool, SL_STR_LIT ("A"), &hello, 0);
    sl_buf_t batch = { 0 };
    size_t sent_bytes = 0;
    double c0 = s_cpu ();
    for (int s = 0; s < SPOOL_STREAMS; s++) {
        int n = s_records (s, recs);
        for (int i = 0; i < n; i++)
            sl_spool_add (spool, &recs [i], 0, 1);
        if (audit && s % 16 == 15) {
            sl_str_t peer;
            sl_buf_reset (&batch);
            while (sl_spool_take (spool, &batch, &peer, 1)) {
                sent_bytes += batch.len;
                sl_buf_reset (&batch);
            }
            sl_msg_t ack;
            sl_msg_init (&ack, SL_MSG_RACK);
            ack.incarnation = 7;
            ack.seq = (uint64_t) (s + 1) * (uint64_t) n;
            sl_spool_on_rack (spool, SL_STR_LIT ("A"), &ack, 1);
        }
    }
    double cpu = s_cpu () - c0;
    printf ("emitter spool, %s: %.2f us per stream (9 records; %zu bytes held at the end%s)\n",
            audit ? "an audit taking every batch" : "no audit (records held)     ",
            cpu * 1e6 / SPOOL_STREAMS, sl_spool_bytes (spool),
            audit ? "" : ", in memory until one comes");
    if (audit)
        printf ("emitter spool: %.0f bytes per stream go to the audit\n", (double) sent_bytes / SPOOL_STREAMS);
    sl_buf_free (&batch);
    sl_spool_destroy (&spool);
}

int
main (void)
{
    char dir [] = "/tmp/sluice-bench-audit-XXXXXX";
    if (!mkdtemp (dir))
        return 1;
    const char *batch = getenv ("BENCH_AUDIT_BATCH"), *seals = getenv ("BENCH_AUDIT_SEALS");
    if (batch && atol (batch) > 0)
        s_batch = atol (batch);
    if (!seals || strcmp (seals, "off") != 0) {
        sl_buf_t report = { 0 };
        char *error = NULL, path [128];
        snprintf (path, sizeof path, "%s/audit.sign_secret", dir);
        if (sl_signkey_make (dir, "audit", &report, &error) || sl_signkey_load_secret (&s_key, path, &error)) {
            fprintf (stderr, "bench_audit: %s\n", error);
            return 1;
        }
        sl_buf_free (&report);
    }
    double sqlite_pct = 0, postgres_pct = 0;
    double sqlite = s_chain_cost ("SQLite", s_sqlite_target, dir, &sqlite_pct);
    if (sqlite > 0 && !getenv ("BENCH_AUDIT_CHAIN"))
        printf ("goal: the hash chain's cost in records/s with SQLite <= %d%%: %.1f%%, %s\n", CHAIN_COST_AIM_PCT,
                sqlite_pct, sqlite_pct <= CHAIN_COST_AIM_PCT ? "met" : "NOT MET");
    const char *only = getenv ("BENCH_AUDIT_ONLY");
    bool sqlite_only = only && strcmp (only, "sqlite") == 0;
    pgtmp_t pg;
    char reason [256];
    pg.durable = true;
    double postgres = 0;
    if (sqlite_only)
        printf ("audit store, PostgreSQL: skipped: BENCH_AUDIT_ONLY=sqlite\n");
    else if (pgtmp_start_tcp (&pg, 0, reason, sizeof reason) == 0) {
        postgres = s_chain_cost ("PostgreSQL", s_pg_target, &pg, &postgres_pct);
        pgtmp_stop (&pg);
    }
    else
        printf ("audit store, PostgreSQL: skipped: %s\n", reason);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (getenv ("BENCH_AUDIT_KEEP"))
        printf ("bench_audit: the stores are kept in %s\n", dir);
    else if (system (cmd) != 0)
        fprintf (stderr, "bench_audit: cannot remove %s\n", dir);
    const char *json = getenv ("BENCH_AUDIT_JSON");
    const char *side = getenv ("BENCH_AUDIT_CHAIN");
    FILE *f = json && *json && sqlite > 0 && !side ? fopen (json, "w") : NULL;
    if (f) {
        fprintf (f, "{\"chain_cost_pct\": %.1f", sqlite_pct);
        if (postgres > 0)
            fprintf (f, ", \"chain_cost_pct_postgres\": %.1f", postgres_pct);
        fprintf (f, "}\n");
        fclose (f);
    }
    if (!sqlite_only) {
        s_spool (false);
        s_spool (true);
    }
    return sqlite < 0 || postgres < 0 ? 1 : 0;
}
