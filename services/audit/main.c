/*  sluice-audit - the monitoring subscriber that remembers.

        sluice-audit [flags]                       record, serve the console
        sluice-audit export --since 24h [flags]    the store, one JSON line per stream
        sluice-audit verify [--from --to] [flags]  the store's hash chain and checkpoints

    Takes every record of every emitter over the acknowledged audit link
    (the emitters' --audit sockets, its own key of role audit), writes
    them to SQLite (--data-dir, the default) or PostgreSQL (--dsn or
    SLUICE_AUDIT_DSN), keeps the store to its retention, posts verdicts or
    streams to a webhook, and serves the web console on 127.0.0.1:8081.
    Console keys come from SLUICE_CONSOLE_KEYS only (comma-separated,
    each name:role:KEY or a bare KEY, an admin): without them the console
    answers clients on this machine only. People sign in with an OpenID
    provider when SLUICE_OIDC_ISSUER names one (with SLUICE_OIDC_CLIENT_ID,
    SLUICE_OIDC_CLIENT_SECRET, and optionally SLUICE_OIDC_REDIRECT_URI and
    SLUICE_OIDC_ROLE_CLAIM: docs/audit.md). The
    webhook's bearer token, when it needs one, comes from
    SLUICE_AUDIT_WEBHOOK_TOKEN only, the approvals webhook's signing
    secret from SLUICE_APPROVALS_WEBHOOK_SECRET only, the token the
    gateways fetch the keys the console issued with from SLUICE_KEYS_TOKEN
    only (and the client secret from SLUICE_OIDC_CLIENT_SECRET only). None
    is ever logged
    or stored. With --judge-approvals the console's Pending page decides
    approvals through the judges' control link.
    With the routes file (--routes, SLUICE_ROUTES: the gateway's) each
    stream's cost is recorded at its prices.

    Two parts over one store (audit.h): the recorder (recorder/) and the
    console (console/), each its libraries (sl_*.c, docs/audit.md) and
    what wires them to sockets and timers; the store and what both sides
    agree on a record are in store/.
*/
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/config/sl_routesfile.h"
#include "common/dialects/sl_providers.h"
#include "common/base/sl_opts.h"
#include "common/service/sl_service.h"
#include "services/audit/audit.h"
#include "services/audit/recorder/sl_archive.h"
#include "services/audit/recorder/sl_checkpoint.h"
#include "services/audit/store/sl_inventory.h"
#include "services/audit/recorder/sl_verify.h"
#include "services/audit/store/sl_query.h"
#include "services/audit/store/sl_store.h"
#include "services/audit/sl_when.h"

#define AUDIT_DB_FILE "audit.db"

//  mkdir -p; 0 ok.
static int
s_make_dir (const char *dir)
{
    char path [4096];
    snprintf (path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir (path, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir (path, 0750) != 0 && errno != EEXIST ? -1 : 0;
}

//  The store: the DSN when given, else the SQLite file in the data directory.
static const char *
s_store (const char *dsn, const char *data_dir, char *path, size_t size)
{
    if (dsn && *dsn)
        return dsn;
    if (s_make_dir (data_dir)) {
        fprintf (stderr, "sluice-audit: cannot make the data directory %s: %s\n", data_dir, strerror (errno));
        return NULL;
    }
    snprintf (path, size, "%s/%s", data_dir, AUDIT_DB_FILE);
    return path;
}

static void
s_write_line (void *arg, const char *line, size_t size)
{
    fwrite (line, 1, size, (FILE *) arg);
}

//  sluice-audit export: the store's streams as JSON lines on stdout.
static int
s_export (int argc, char **argv)
{
    const char *since = "24h", *until = "", *format = "jsonl";
    const char *data_dir = "/var/lib/sluice/audit", *dsn = "";
    sl_opt_t opts [] = {
        { "since", NULL, &since, "streams started at or after: 2026-05-20T14:00:00Z, 2026-05-20, Unix "
          "seconds, or back from now (30m, 24h, 7d)" },
        { "until", NULL, &until, "streams started before (same forms; default: now)" },
        { "format", NULL, &format, "jsonl: one JSON object per stream, its blocks and verdicts" },
        { "data-dir", NULL, &data_dir, "the SQLite store's directory" },
        { "dsn", "SLUICE_AUDIT_DSN", &dsn, "a PostgreSQL store (postgres://... or key=value; prefer the variable)" },
        SL_OPT_END
    };
    int rc = sl_opts_parse ("audit", opts, argc, argv);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (strcmp (format, "jsonl") != 0) {
        fprintf (stderr, "sluice-audit export: --format jsonl is the one format\n");
        return 2;
    }
    int64_t now = zclock_time (), from = 0, to = 0;
    if (sl_when_parse (since, now, &from) || (*until && sl_when_parse (until, now, &to))) {
        fprintf (stderr, "sluice-audit export: not a time: %s\n", sl_when_parse (since, now, &from) ? since : until);
        return 2;
    }
    char path [4096];
    const char *target = s_store (dsn, data_dir, path, sizeof path);
    if (!target)
        return 1;
    char *error = NULL;
    sl_store_t *store = sl_store_open (target, &error);
    if (!store) {
        fprintf (stderr, "sluice-audit export: %s\n", error);
        free (error);
        return 1;
    }
    int64_t n = sl_query_export (store, from, to, s_write_line, stdout);
    fflush (stdout);                    //  the lines before the summary, where both go to one file
    if (n < 0)
        fprintf (stderr, "sluice-audit export: %s\n", sl_store_error (store));
    else
        fprintf (stderr, "sluice-audit export: %lld streams\n", (long long) n);
    sl_store_close (&store);
    return n < 0 ? 1 : 0;
}

//  --from / --to of verify: a bare number is a chain position, anything
//  else a time (sl_when.h) turned into the first position at or after it
//  (from) or the last before it (to). 0 ok.
static int
s_position (sl_store_t *store, const char *arg, bool from, int64_t *pos)
{
    *pos = 0;
    if (!*arg)
        return 0;
    bool digits = true;
    for (const char *c = arg; *c; c++)
        digits = digits && isdigit ((unsigned char) *c);
    if (digits) {
        *pos = strtoll (arg, NULL, 10);
        return 0;
    }
    int64_t at = 0;
    if (sl_when_parse (arg, zclock_time (), &at))
        return -1;
    if (sl_verify_pos_at (store, at, from, pos))
        return -1;
    if (*pos == 0)
        *pos = from ? INT64_MAX : -1;   //  nothing in the range
    return 0;
}

//  The checkpoint file's lines against the chain. 0 ok, -1 unreadable.
static int
s_verify_file (sl_verify_t *verify, const char *path)
{
    FILE *f = fopen (path, "r");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline (&line, &cap, f)) > 0) {
        sl_checkpoint_t cp;
        if (sl_checkpoint_parse ((sl_str_t) { line, (size_t) n }, &cp) == 0 && sl_verify_checkpoint (verify, &cp)) {
            free (line);
            fclose (f);
            return -1;
        }
    }
    free (line);
    fclose (f);
    return 0;
}

//  sluice-audit verify: walk the chain, check the rows and checkpoints.
//  Exit status: sl_verify_status_t (0 intact, 1 broken, 2 bad checkpoint,
//  3 cannot read); 4 bad usage.
static int
s_verify (int argc, char **argv)
{
    const char *from = "", *to = "", *public_key = "", *checkpoint_file = "";
    //  --json takes no value: taken out before the flags are parsed.
    bool json = false;
    int kept = 0;
    for (int i = 0; i < argc; i++)
        if (strcmp (argv [i], "--json") == 0)
            json = true;
        else
            argv [kept++] = argv [i];
    argc = kept;
    const char *data_dir = "/var/lib/sluice/audit", *dsn = "";
    sl_opt_t opts [] = {
        { "from", NULL, &from, "start at this chain position (a number) or time (2026-05-20T14:00:00Z, 24h, ...)" },
        { "to", NULL, &to, "end at this position or time (default: the head)" },
        { "public-key", "SLUICE_AUDIT_PUBLIC_KEY", &public_key,
          "the audit's public signing key (NAME.sign): checkpoints' signatures and the head's seal are checked "
          "with it (default: the public half of SLUICE_AUDIT_SIGNING_KEY, where the audit's is configured)" },
        { "checkpoint-file", "SLUICE_AUDIT_CHECKPOINT_FILE", &checkpoint_file,
          "also check the checkpoints of this file (the audit's --checkpoint-file; read by default where it "
          "is configured)" },
        { "data-dir", NULL, &data_dir, "the SQLite store's directory" },
        { "dsn", "SLUICE_AUDIT_DSN", &dsn, "a PostgreSQL store (postgres://... or key=value; prefer the variable)" },
        SL_OPT_END
    };
    int rc = sl_opts_parse ("audit", opts, argc, argv);
    if (rc) {
        if (rc > 0)
            printf ("  --json  the report as one JSON object\n");
        return rc > 0 ? 0 : SL_VERIFY_UNREADABLE + 1;
    }
    sl_signkey_t key;
    char *error = NULL;
    //  Where the audit's signing key is configured (its environment), its
    //  public half checks what it signed.
    const char *signing = getenv ("SLUICE_AUDIT_SIGNING_KEY");
    bool have_key = *public_key || (signing && *signing);
    if (*public_key ? sl_signkey_load_public (&key, public_key, &error)
                    : have_key && sl_signkey_load_secret (&key, signing, &error)) {
        fprintf (stderr, "sluice-audit verify: %s\n", error);
        free (error);
        return SL_VERIFY_UNREADABLE + 1;
    }
    char path [4096];
    const char *target = dsn && *dsn ? dsn : path;
    snprintf (path, sizeof path, "%s/%s", data_dir, AUDIT_DB_FILE);
    sl_store_t *store = sl_store_open_raw (target, &error);
    if (!store) {
        fprintf (stderr, "sluice-audit verify: %s\n", error);
        free (error);
        return SL_VERIFY_UNREADABLE;
    }
    sl_verify_opts_t vo = { .public_key = have_key ? &key : NULL };
    if (s_position (store, from, true, &vo.from_pos) || s_position (store, to, false, &vo.to_pos)) {
        fprintf (stderr, "sluice-audit verify: not a position or time: %s %s (%s)\n", from, to,
                 sl_store_error (store));
        sl_store_close (&store);
        return SL_VERIFY_UNREADABLE + 1;
    }
    if (vo.to_pos < 0)
        vo.to_pos = 0, vo.from_pos = INT64_MAX;
    sl_verify_t *verify = sl_verify_new (store, &vo);
    while (sl_verify_step (verify, 4096) == 1)
        ;
    const sl_verify_report_t *r = sl_verify_report (verify);
    bool whole = vo.from_pos == 0 && vo.to_pos == 0;
    if (r->status != SL_VERIFY_UNREADABLE && whole)
        sl_verify_rows (verify);
    if (r->status != SL_VERIFY_UNREADABLE)
        sl_verify_checkpoints (verify);
    if (r->status != SL_VERIFY_UNREADABLE && *checkpoint_file && s_verify_file (verify, checkpoint_file)) {
        fprintf (stderr, "sluice-audit verify: cannot read %s: %s\n", checkpoint_file, strerror (errno));
        sl_verify_destroy (&verify);
        sl_store_close (&store);
        return SL_VERIFY_UNREADABLE;
    }
    //  The head and the rows later records update: with the whole chain.
    if (r->status != SL_VERIFY_UNREADABLE && whole)
        sl_verify_head (verify);
    if (r->status != SL_VERIFY_UNREADABLE && whole)
        sl_verify_summaries (verify);
    sl_buf_t out = { 0 };
    if (json) {
        sl_verify_json (r, &out);
        sl_buf_putc (&out, '\n');
    }
    else {
        sl_verify_text (r, &out);
        if (!whole)
            sl_buf_puts (&out, "rows no entry names: not checked (a range was asked for)\n");
    }
    fputs (sl_buf_cstr (&out), stdout);
    sl_buf_free (&out);
    int status = (int) r->status;
    sl_verify_destroy (&verify);
    sl_store_close (&store);
    return status;
}

int
main (int argc, char **argv)
{
    if (argc > 1 && strcmp (argv [1], "export") == 0)
        return s_export (argc - 1, argv + 1);
    if (argc > 1 && strcmp (argv [1], "verify") == 0)
        return s_verify (argc - 1, argv + 1);
    const char *emitters = "tcp://127.0.0.1:5558";
    const char *data_dir = "/var/lib/sluice/audit";
    const char *dsn = "";
    const char *console_host = "127.0.0.1";
    const char *console_port = "8081";
    char default_text [24];
    snprintf (default_text, sizeof default_text, "%d", SL_ARCHIVE_DEFAULT_MAX_TEXT);
    const char *max_text = default_text;
    const char *retain = "30d";
    const char *retain_bytes = "0";
    const char *prune_ms = "60000";
    const char *webhook = "";
    const char *webhook_on = "verdict";
    const char *webhook_actions = "block,drop,rewrite,terminate";
    const char *webhook_queue = "1000";
    const char *webhook_attempts = "8";
    const char *routes_path = "";
    const char *judge_approvals = "";
    const char *keys_file = "";
    const char *approvals_webhook = "";
    const char *signing_key = "";
    const char *checkpoint_records = "1000";
    const char *checkpoint_seconds = "60";
    const char *checkpoint_file = "";
    const char *verify_seconds = "600";
    char default_tools [24];
    snprintf (default_tools, sizeof default_tools, "%d", SL_INVENTORY_TEAM_MAX);
    const char *tools_per_team = default_tools;
    sl_bus_opts_t bus = SL_BUS_OPTS_INIT;
    sl_opt_t opts [] = {
        { "emitters", NULL, &emitters, "the emitters' audit endpoints, comma-separated (names are re-resolved)" },
        { "data-dir", NULL, &data_dir, "directory of the SQLite store (audit.db)" },
        { "dsn", "SLUICE_AUDIT_DSN", &dsn, "a PostgreSQL store instead (postgres://... or key=value; "
          "prefer the variable: a flag shows in the process list)" },
        { "console-host", NULL, &console_host, "address of the web console" },
        { "console-port", NULL, &console_port, "port of the web console (off: none)" },
        { "max-text", NULL, &max_text, "bytes of one text kept (block, arguments, message); more is cut" },
        { "retain", NULL, &retain, "streams older than this are deleted: 30d, 12h, 90m (0: kept)" },
        { "retain-bytes", NULL, &retain_bytes, "past this, the oldest streams are deleted (0: no bound)" },
        { "prune-ms", NULL, &prune_ms, "retention runs this often" },
        { "webhook", NULL, &webhook, "URL to POST events to (JSON), for a SIEM" },
        { "webhook-on", NULL, &webhook_on, "verdict: one post per verdict; stream: one per finished stream" },
        { "webhook-actions", NULL, &webhook_actions,
          "verdicts (or streams with a verdict) with these actions, comma-separated, or all" },
        { "webhook-queue", NULL, &webhook_queue, "events held for the webhook at most (more are dropped, counted)" },
        { "webhook-retries", NULL, &webhook_attempts, "attempts per event (backoff from 0.5 s to 30 s)" },
        { "routes", "SLUICE_ROUTES", &routes_path,
          "routes file (the gateway's): its prices: give each stream's cost (none: costs are not recorded)" },
        { "keys-file", "SLUICE_KEYS_FILE", &keys_file,
          "the gateways' keys file: its keys listed read-only beside those the console issued (GET /api/keys)" },
        { "judge-approvals", "SLUICE_JUDGE_APPROVALS", &judge_approvals,
          "the judges' approvals control endpoints (comma-separated, names re-resolved): the console's "
          "decisions go there (none: the console lists approvals but cannot decide)" },
        { "approvals-webhook", NULL, &approvals_webhook,
          "URL to POST approvals to (JSON, signed with SLUICE_APPROVALS_WEBHOOK_SECRET): pending and decided" },
        { "signing-key", "SLUICE_AUDIT_SIGNING_KEY", &signing_key,
          "the Ed25519 key the chain's checkpoints are signed with (sluice-keygen --signing audit: "
          "DIR/audit.sign_secret); none: checkpoints are written unsigned" },
        { "checkpoint-records", NULL, &checkpoint_records, "a signed checkpoint of the chain every this many records" },
        { "checkpoint-seconds", NULL, &checkpoint_seconds, "and this often when records came (0: by count only)" },
        { "checkpoint-file", "SLUICE_AUDIT_CHECKPOINT_FILE", &checkpoint_file,
          "append each checkpoint to this file too, one JSON line, on a volume the database's writers cannot "
          "write: at start and before each checkpoint the chain is compared with its newest line" },
        { "verify-seconds", NULL, &verify_seconds,
          "the running audit walks the whole chain again this often (new records are verified as they come)" },
        { "tools-per-team", NULL, &tools_per_team,
          "tool definitions a team's inventory keeps at most (the least recently seen go first)" },
        SL_BUS_OPT_KEYS (bus),
        SL_BUS_OPT_AUTH (bus),
        SL_OPT_END
    };
    int code;
    sl_service_t *svc = sl_service_new ("audit", opts, "9558", argc, argv, &code);
    if (!svc)
        return code;
    long text = sl_opts_long (max_text), bytes = sl_opts_long (retain_bytes);
    int64_t retain_ms = 0;
    long prune = sl_opts_long (prune_ms), queue = sl_opts_long (webhook_queue);
    long attempts = sl_opts_long (webhook_attempts);
    long cp_records = sl_opts_long (checkpoint_records), cp_seconds = sl_opts_long (checkpoint_seconds);
    long verify_every = sl_opts_long (verify_seconds), tools_cap = sl_opts_long (tools_per_team);
    long port = strcmp (console_port, "off") == 0 ? -1 : sl_opts_long (console_port);
    if (text <= 0 || cp_records <= 0 || cp_seconds < 0 || verify_every <= 0 || tools_cap <= 0 || tools_cap > INT32_MAX
    ||  sl_when_duration (retain, &retain_ms) || bytes < 0 || prune <= 0 || queue <= 0 || attempts <= 0
    ||  (port < 0 && strcmp (console_port, "off") != 0) || port > 65535
    ||  (strcmp (webhook_on, "verdict") != 0 && strcmp (webhook_on, "stream") != 0)) {
        sl_log_error ("bad_option", "a number is not valid, or --webhook-on is not verdict or stream");
        sl_service_destroy (&svc);
        return 2;
    }
    sl_providers_t *prices = NULL;
    if (*routes_path) {
        char *error = NULL;
        sl_routesfile_load (routes_path, &prices, NULL, &error);
        if (!prices) {
            sl_log_error ("bad_routes", "%s", error ? error : routes_path);
            free (error);
            sl_service_destroy (&svc);
            return 2;
        }
    }
    char path [4096];
    const char *target = s_store (dsn, data_dir, path, sizeof path);
    if (!target || sl_service_start_bus (svc, &bus, "audit")) {
        sl_providers_destroy (&prices);
        sl_service_destroy (&svc);
        return 2;
    }
    const char *keys = getenv ("SLUICE_CONSOLE_KEYS");
    audit_config_t config = {
        .store = target,
        .recorder = {
            .emitters = emitters,
            .max_text = (size_t) text,
            .retain_ms = retain_ms,
            .retain_bytes = bytes,
            .prune_ms = prune,
            .webhook_url = webhook,
            .webhook_on = webhook_on,
            .webhook_actions = webhook_actions,
            .webhook_queue = (size_t) queue,
            .webhook_attempts = (int) attempts,
            .webhook_token = getenv ("SLUICE_AUDIT_WEBHOOK_TOKEN"),
            .prices = prices,
            .approvals_webhook_url = approvals_webhook,
            .approvals_webhook_secret = getenv ("SLUICE_APPROVALS_WEBHOOK_SECRET"),
            .signing_key = signing_key,
            .checkpoint_records = cp_records,
            .checkpoint_seconds = cp_seconds,
            .checkpoint_file = checkpoint_file,
            .verify_seconds = verify_every,
            .tools_per_team = (int) tools_cap,
        },
        .console_host = console_host,
        .console_port = (int) port,
        .console_keys = keys ? keys : "",
        .keys_token = getenv ("SLUICE_KEYS_TOKEN"),
        .keys_file = keys_file,
        .console_oidc = {
            .issuer = getenv ("SLUICE_OIDC_ISSUER"),
            .client_id = getenv ("SLUICE_OIDC_CLIENT_ID"),
            .client_secret = getenv ("SLUICE_OIDC_CLIENT_SECRET"),
            .redirect_uri = getenv ("SLUICE_OIDC_REDIRECT_URI"),
            .role_claim = getenv ("SLUICE_OIDC_ROLE_CLAIM"),
        },
        .judge_approvals = judge_approvals,
    };
    audit_t *audit = audit_new (svc, &config);
    int rc = audit ? sl_service_run (svc) : 1;
    audit_destroy (&audit);
    sl_providers_destroy (&prices);
    sl_service_destroy (&svc);
    return rc;
}
