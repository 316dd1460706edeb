/*  sluice-gateway - the HTTP edge clients talk to.

    It reads the same routes file as the ingest (--routes, SLUICE_ROUTES):
    it routes each request to a provider (of any dialect: the request is
    translated when the provider's is not the client's) and answers
    GET /v1/models with what routing offers. Without a file, the built-in
    table (one provider per dialect, no named models) is used, as in the
    ingest: every client goes to the provider of its own dialect. */
#include <stdlib.h>

#include "common/base/sl_fdlimit.h"
#include "common/base/sl_log.h"
#include "common/config/sl_routesfile.h"
#include "common/dialects/sl_providers.h"
#include "common/service/sl_stage.h"
#include "services/gateway/gateway.h"
#include "services/gateway/gateway_mcp.h"

#define GATEWAY_MAX_CONNS_CAP 65536     //  the most --max-conns 0 gives, whatever the open-files limit
#define GATEWAY_PER_IP_SHARE 4          //  --max-conns-per-ip 0: a quarter of the total
#define S_TEXT(n) S_TEXT_ (n)           //  a numeric constant as a flag's default
#define S_TEXT_(n) #n

int
main (int argc, char **argv)
{
    const char *http_host = "127.0.0.1";
    const char *http_port = "8080";
    const char *bind = "tcp://127.0.0.1:5555";
    const char *next = "tcp://127.0.0.1:5551";
    const char *max_body = "10485760";
    const char *stream_cap = "8388608";
    const char *routes_path = "";
    const char *max_conns = "0";
    const char *max_conns_per_ip = "0";
    const char *request_timeout = "60";
    const char *policy_path = "";
    const char *watch = "1000";
    const char *expiry = SL_STAGE_EXPIRY_MS;
    const char *keys_path = "";
    const char *keys_url = "";
    const char *limits_timeout = "50";
    const char *alerts_webhook = "";
    const char *judge_approvals = "";
    const char *allow_anonymous = SL_OPT_OFF;
    const char *mcp_sessions = S_TEXT (GATEWAY_MCP_SESSIONS_MAX);
    const char *mcp_per_key = S_TEXT (GATEWAY_MCP_SESSIONS_PER_KEY);
    const char *mcp_per_team = S_TEXT (GATEWAY_MCP_SESSIONS_PER_TEAM);
    sl_bus_opts_t bus = SL_BUS_OPTS_INIT;
    sl_opt_t opts [] = {
        { "http-host", "SLUICE_HTTP_HOST", &http_host, "address clients connect to" },
        { "http-port", "SLUICE_HTTP_PORT", &http_port, "port clients connect to" },
        { "bind", NULL, &bind, "inbox endpoint (frames from the emitters)" },
        { "next", NULL, &next, "ingest endpoints, comma-separated" },
        { "max-body", NULL, &max_body, "largest request body accepted, bytes" },
        { "stream-cap", NULL, &stream_cap, "bytes buffered for a slow client before it is cut off" },
        { "max-conns", NULL, &max_conns,
          "client connections in all (0: from the open-files limit, which the gateway raises to its hard limit)" },
        { "max-conns-per-ip", NULL, &max_conns_per_ip, "client connections from one address (0: a quarter of --max-conns)" },
        { "request-timeout", NULL, &request_timeout,
          "seconds a request's head and body may take to arrive, from its first byte" },
        { "policy", "SLUICE_POLICY", &policy_path,
          "policy file (the judge's): its request rules judge each request before it goes upstream" },
        { "watch-ms", NULL, &watch, "check the policy file for changes this often (0: only on SIGHUP)" },
        { "routes", "SLUICE_ROUTES", &routes_path, "routes file (the ingest's): which provider serves a model, and what GET /v1/models lists" },
        { "stream-expiry-ms", NULL, &expiry,
          "a stream nothing came back for this long ends with an error (0: never; must exceed the ingest's "
          "upstream deadlines)" },
        { "keys-file", "SLUICE_KEYS_FILE", &keys_path,
          "keys file: client keys (by their SHA-256), teams, users, policies, models and limits; reloaded like "
          "the policy" },
        { "keys-url", "SLUICE_KEYS_URL", &keys_url,
          "the audit's served keys (http://HOST:8081/api/keys/served): the keys its console issued, merged with "
          "the keys file and asked again every --watch-ms; its token from SLUICE_KEYS_TOKEN" },
        { "limits-timeout-ms", NULL, &limits_timeout,
          "the longest wait for Redis (SLUICE_REDIS_URL) on a request's limits, then the team's limits_on_error" },
        { "alerts-webhook", "SLUICE_ALERTS_WEBHOOK", &alerts_webhook,
          "post each alert threshold of the keys file's limits crossed here, signed with "
          "SLUICE_APPROVALS_WEBHOOK_SECRET as the approvals webhook's posts" },
        { "mcp-sessions-max", NULL, &mcp_sessions, "MCP client sessions kept in all (then 503)" },
        { "mcp-sessions-per-key", NULL, &mcp_per_key,
          "MCP client sessions one key (or one user of signed tokens) may hold (then 429)" },
        { "mcp-sessions-per-team", NULL, &mcp_per_team, "MCP client sessions one team may hold (then 429)" },
        { "judge-approvals", "SLUICE_JUDGE_APPROVALS", &judge_approvals,
          "the judges' approvals control endpoints (comma-separated, a name stands for all its addresses): "
          "GET/POST /v1/approvals ask them; none: those answer 503" },
        { "allow-anonymous", "SLUICE_ALLOW_ANONYMOUS", &allow_anonymous,
          "a switch: without keys, listen on an --http-host other than loopback all the same (whoever reaches "
          "it spends the providers' keys; it still answers loopback names only)" },
        SL_BUS_OPT_KEYS (bus),
        SL_BUS_OPT_AUTH (bus),
        SL_OPT_END
    };
    int code;
    sl_service_t *svc = sl_service_new ("gateway", opts, "9555", argc, argv, &code);
    if (!svc)
        return code;
    gateway_config_t config = {
        .http_host = http_host,
        .http_port = (int) sl_opts_long (http_port),
        .bind = bind,
        .next = next,
        .max_body = (size_t) sl_opts_long (max_body),
        .stream_cap = (size_t) sl_opts_long (stream_cap),
        //  Keys come from the environment only: a flag would show them
        //  to anyone who can list processes, and --help would print them.
        //  So does the Redis URL, which may hold a password.
        .client_keys = getenv ("SLUICE_CLIENT_KEYS"),
        .keys_path = keys_path,
        .keys_url = keys_url,
        .keys_token = getenv ("SLUICE_KEYS_TOKEN"),
        .redis_url = getenv ("SLUICE_REDIS_URL"),
        .tracing = getenv ("SLUICE_OTLP_ENDPOINT") && *getenv ("SLUICE_OTLP_ENDPOINT"),
        .limits_timeout_ms = (int) sl_opts_long (limits_timeout),
        .alerts_url = alerts_webhook,
        .alerts_secret = getenv ("SLUICE_APPROVALS_WEBHOOK_SECRET"),
        .policy_path = policy_path,
        .watch_ms = sl_opts_long (watch),
        .judge_approvals = judge_approvals,
        .allow_anonymous = sl_opts_switch (allow_anonymous) == 1,
        .mcp_sessions_max = (size_t) sl_opts_long (mcp_sessions),
        .mcp_sessions_per_key = (size_t) sl_opts_long (mcp_per_key),
        .mcp_sessions_per_team = (size_t) sl_opts_long (mcp_per_team),
    };
    if (config.http_port < 0 || config.http_port > 65535
    ||  sl_opts_long (max_body) <= 0 || sl_opts_long (stream_cap) <= 0
    ||  sl_opts_long (max_conns) < 0 || sl_opts_long (max_conns_per_ip) < 0 || sl_opts_long (request_timeout) <= 0
    ||  config.watch_ms < 0 || sl_opts_long (expiry) < 0
    ||  sl_opts_long (limits_timeout) <= 0 || sl_opts_long (limits_timeout) > 60000
    ||  sl_opts_long (mcp_sessions) <= 0 || sl_opts_long (mcp_per_key) <= 0 || sl_opts_long (mcp_per_team) <= 0
    ||  sl_opts_switch (allow_anonymous) < 0) {
        sl_log_error ("bad_option", "--http-port, --max-body, --stream-cap, --max-conns, --max-conns-per-ip, "
                                    "--request-timeout, --watch-ms, --stream-expiry-ms, --limits-timeout-ms and "
                                    "--mcp-sessions-* must be numbers, --allow-anonymous yes or no");
        sl_service_destroy (&svc);
        return 2;
    }
    //  A socket per client: as many as the hard limit allows.
    long nofile = sl_fdlimit_raise ();
    size_t fit = sl_fdlimit_share (nofile, GATEWAY_MAX_CONNS_CAP);
    config.max_conns = (size_t) sl_opts_long (max_conns);
    if (config.max_conns == 0)
        config.max_conns = fit;
    else
    if (config.max_conns > fit)
        sl_log_warn ("fd_limit", "--max-conns %zu is more than the open-files limit (%ld) leaves room for (%zu)",
                     config.max_conns, nofile, fit);
    config.max_conns_per_ip = (size_t) sl_opts_long (max_conns_per_ip);
    if (config.max_conns_per_ip == 0)
        config.max_conns_per_ip = config.max_conns / GATEWAY_PER_IP_SHARE ? config.max_conns / GATEWAY_PER_IP_SHARE : 1;
    config.request_timeout_ms = sl_opts_long (request_timeout) * 1000;
    config.stream_expiry_ms = sl_opts_long (expiry);
    sl_log_info ("limits", "open_files=%ld max_conns=%zu max_conns_per_ip=%zu request_timeout_ms=%ld",
                 nofile, config.max_conns, config.max_conns_per_ip, config.request_timeout_ms);
    char *error = NULL;
    //  Without a file, the ingest's built-in providers at their modules'
    //  base URLs, which are never called from here.
    sl_mcp_servers_t *mcp_servers = NULL;
    if (*routes_path)
        sl_routesfile_load (routes_path, &config.routes, &mcp_servers, &error);
    else
        config.routes = sl_providers_new_default (NULL);
    config.mcp_servers = mcp_servers;
    if (!config.routes) {
        sl_log_error ("bad_routes", "%s", error ? error : "the built-in routes could not be made");
        free (error);
        sl_service_destroy (&svc);
        return 2;
    }
    if (sl_service_start_bus (svc, &bus, "gateway")) {
        sl_providers_destroy (&config.routes);
        sl_mcp_servers_destroy (&mcp_servers);
        sl_service_destroy (&svc);
        return 2;
    }
    gateway_t *gateway = gateway_new (svc, &config);
    int rc = gateway ? sl_service_run (svc) : 1;
    gateway_destroy (&gateway);
    sl_providers_destroy (&config.routes);
    sl_mcp_servers_destroy (&mcp_servers);
    sl_service_destroy (&svc);
    return rc;
}
