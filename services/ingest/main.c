/*  sluice-ingest - calls the upstream model and decodes its stream.

    Providers come from a routes file (--routes) or, without one, from the
    built-in defaults: one provider per dialect at the --<vendor>-base-url
    options (sl_baseurls.h: --openai-base-url, --anthropic-base-url,
    --gemini-base-url, one for each vendor of the registered dialects).
    API keys are read from the environment only (the variable each
    provider names: OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY by
    default), never from flags, and never logged.
*/
#include <stdlib.h>

#include "common/base/sl_fdlimit.h"
#include "common/base/sl_log.h"
#include "common/config/sl_routesfile.h"
#include "common/dialects/sl_baseurls.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_providers.h"
#include "common/stages/sl_auths.h"
#include "services/ingest/ingest.h"
#include "common/http/sl_sse.h"

#define INGEST_MAX_STREAMS 4096         //  --max-streams 0: this many, if the open-files limit allows
#define S_STR_(x) #x
#define S_STR(x) S_STR_ (x)                 //  a number's text, for an option's default

//  A positive integer option, or -1 (reported) when it is not one.
static long
s_positive (const char *name, const char *value, bool zero_ok)
{
    long n = sl_opts_long (value);
    if (n < 0 || (n == 0 && !zero_ok)) {
        sl_log_error ("bad_option", "--%s must be a %s integer", name, zero_ok ? "non-negative" : "positive");
        return -1;
    }
    return n;
}

int
main (int argc, char **argv)
{
    const char *bind = "tcp://127.0.0.1:5551";
    const char *next = "tcp://127.0.0.1:5552";
    const char *routes_path = "";
    const char *connect_timeout = "10000";
    const char *first_byte_timeout = "120000";
    const char *idle_timeout = "300000";
    const char *max_event = "8388608";
    const char *max_retries = "2";
    const char *retry_base = "500";
    const char *retry_max = "20000";
    const char *stall = "5000";
    const char *gateway_dead = "2000";
    const char *log_max = "4194304";
    const char *log_total = "268435456";
    const char *max_streams = "0";
    const char *eject_failures = S_STR (SL_FAILOVER_FAILURES);
    const char *eject_window = S_STR (SL_FAILOVER_WINDOW_MS);
    const char *eject_cooldown = S_STR (SL_FAILOVER_COOLDOWN_MS);
    sl_bus_opts_t bus = SL_BUS_OPTS_INIT;
    sl_opt_t opts [] = {
        { "bind", NULL, &bind, "inbox endpoint (jobs from the gateways)" },
        { "next", NULL, &next, "aggregator endpoints, comma-separated" },
        { "routes", "SLUICE_ROUTES", &routes_path, "routes file: providers and model routes (YAML)" },
        { "connect-timeout-ms", NULL, &connect_timeout, "upstream connect deadline" },
        { "first-byte-timeout-ms", NULL, &first_byte_timeout,
          "deadline from the request to the first response byte" },
        { "idle-timeout-ms", NULL, &idle_timeout, "end a call when the upstream sends nothing this long" },
        { "max-event", NULL, &max_event, "largest SSE line or event accepted, bytes" },
        { "max-retries", NULL, &max_retries, "retries of a call before any byte reached the client" },
        { "retry-base-ms", NULL, &retry_base, "first retry backoff (doubled each retry)" },
        { "retry-max-ms", NULL, &retry_max, "longest retry wait; a longer Retry-After is not waited for" },
        { "stall-ms", NULL, &stall, "replay a stream whose acks stop moving this long after a send (safety net)" },
        { "gateway-dead-ms", NULL, &gateway_dead, "cancel a stream whose gateway sends no ack this long" },
        { "replay-log-max", NULL, &log_max, "bytes kept per stream for a replay" },
        { "replay-log-total", NULL, &log_total, "bytes kept for replays in all" },
        { "max-streams", NULL, &max_streams,
          "streams at once; more are refused with 503 (0: 4096, or what the open-files limit allows)" },
        { "eject-failures", NULL, &eject_failures,
          "eject a provider that fails this many times within --eject-window-ms (0: never)" },
        { "eject-window-ms", NULL, &eject_window, "the window an ejection's failures are counted over" },
        { "eject-cooldown-ms", NULL, &eject_cooldown,
          "how long an ejected provider is passed by before one request probes it" },
        SL_BUS_OPT_KEYS (bus),
        SL_BUS_OPT_AUTH (bus),
        SL_OPT_END
    };
    //  The built-in providers' base URLs: an option per vendor (none when
    //  the dialects did not register, which sl_service_new reports).
    sl_baseurls_t *urls = sl_baseurls_new ();
    int code;
    sl_service_t *svc = sl_service_new ("ingest", urls ? sl_baseurls_opts (urls, opts) : opts, "9551", argc, argv,
                                        &code);
    if (!svc) {
        sl_baseurls_destroy (&urls);
        return code;
    }
    ingest_config_t config = {
        .bind = bind,
        .next = next,
        .upcall = {
            .connect_timeout_ms = s_positive ("connect-timeout-ms", connect_timeout, false),
            .first_byte_timeout_ms = s_positive ("first-byte-timeout-ms", first_byte_timeout, false),
            .idle_timeout_ms = s_positive ("idle-timeout-ms", idle_timeout, false),
            .max_retries = (int) s_positive ("max-retries", max_retries, true),
            .retry_base_ms = s_positive ("retry-base-ms", retry_base, false),
            .retry_max_ms = s_positive ("retry-max-ms", retry_max, true),
            .stall_ms = s_positive ("stall-ms", stall, false),
            .gateway_dead_ms = s_positive ("gateway-dead-ms", gateway_dead, false),
        },
    };
    sl_upcall_config_t *up = &config.upcall;
    long log_max_v = s_positive ("replay-log-max", log_max, true);
    long log_total_v = s_positive ("replay-log-total", log_total, true);
    up->log_max = (size_t) log_max_v;
    up->log_total = (size_t) log_total_v;
    long event = s_positive ("max-event", max_event, false);
    up->max_event = (size_t) event;
    long streams = s_positive ("max-streams", max_streams, true);
    long failures = s_positive ("eject-failures", eject_failures, true);
    up->eject.window_ms = s_positive ("eject-window-ms", eject_window, false);
    up->eject.cooldown_ms = s_positive ("eject-cooldown-ms", eject_cooldown, false);
    if (failures > SL_FAILOVER_FAILURES_MAX) {
        sl_log_error ("bad_option", "--eject-failures must be at most %d", SL_FAILOVER_FAILURES_MAX);
        failures = -1;
    }
    up->eject.failures = (int) failures;
    if (up->connect_timeout_ms < 0 || up->first_byte_timeout_ms < 0 || up->idle_timeout_ms < 0
    ||  up->max_retries < 0 || up->retry_base_ms < 0 || up->retry_max_ms < 0 || event < 0
    ||  up->stall_ms < 0 || up->gateway_dead_ms < 0 || log_max_v < 0 || log_total_v < 0 || streams < 0
    ||  failures < 0 || up->eject.window_ms < 0 || up->eject.cooldown_ms < 0) {
        sl_baseurls_destroy (&urls);
        sl_service_destroy (&svc);
        return 2;
    }
    //  A socket per upstream call: as many as the hard limit allows.
    long nofile = sl_fdlimit_raise ();
    size_t fit = sl_fdlimit_share (nofile, INGEST_MAX_STREAMS);
    up->max_streams = streams ? (size_t) streams : fit;
    sl_log_info ("limits", "open_files=%ld max_streams=%zu", nofile, up->max_streams);
    char *error = NULL;
    if (*routes_path)
        sl_routesfile_load (routes_path, &up->routes, NULL, &error);
    else
        up->routes = sl_providers_new_default (sl_baseurls_table (urls));
    sl_baseurls_destroy (&urls);
    if (!up->routes) {
        sl_log_error ("bad_routes", "%s", error ? error : "a base URL must be an http:// or https:// URL");
        free (error);
        sl_service_destroy (&svc);
        return 2;
    }
    for (size_t i = 0; i < sl_providers_provider_count (up->routes); i++) {
        const sl_provider_t *p = sl_providers_provider (up->routes, i);
        size_t set = 0;
        for (size_t k = 0; k < p->key_env_count; k++) {
            const char *key = getenv (p->key_envs [k]);
            if (key && *key)
                set++;
            else
            if (p->key_env_count > 1)
                sl_log_warn ("provider_key_unset", "provider=%s key_env=%s: unset or empty", p->name,
                             p->key_envs [k]);
        }
        int kind = sl_auths_kind (p);
        sl_log_info ("provider", "name=%s dialect=%s base_url=%s key=%s keys=%zu", p->name,
                     sl_dialect_name (p->dialect), *p->base_url ? p->base_url : "(the dialect's)",
                     kind == SL_AUTH_BEARER ? "token" : kind == SL_AUTH_GOOGLE ? "google"
                   : kind == SL_AUTH_AWS ? "aws" : kind == SL_AUTH_AZURE ? "entra"
                   : set ? "set" : p->forward_auth ? "client's" : "none", set);
    }
    if (sl_service_start_bus (svc, &bus, "ingest")) {
        sl_providers_destroy (&up->routes);
        sl_service_destroy (&svc);
        return 2;
    }
    ingest_t *ingest = ingest_new (svc, &config);
    int rc = ingest ? sl_service_run (svc) : 1;
    ingest_destroy (&ingest);
    sl_providers_destroy (&up->routes);
    sl_service_destroy (&svc);
    return rc;
}
