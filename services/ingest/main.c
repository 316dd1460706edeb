/*  sluice-ingest - calls the upstream model and decodes its stream. */
#include <stdlib.h>

#include "../../common/sl_log.h"
#include "ingest.h"
#include "sl_sse.h"

int
main (int argc, char **argv)
{
    const char *bind = "tcp://127.0.0.1:5551";
    const char *next = "tcp://127.0.0.1:5552";
    const char *openai_base = "https://api.openai.com/v1";
    const char *connect_timeout = "10000";
    const char *idle_timeout = "300";
    const char *max_event = "8388608";
    sl_opt_t opts [] = {
        { "bind", NULL, &bind, "inbox endpoint (jobs from the gateways)" },
        { "next", NULL, &next, "aggregator endpoints, comma-separated" },
        { "openai-base-url", "SLUICE_OPENAI_BASE_URL", &openai_base, "OpenAI-compatible upstream base URL" },
        { "connect-timeout-ms", NULL, &connect_timeout, "upstream connect timeout" },
        { "idle-timeout-s", NULL, &idle_timeout, "end a call when the upstream sends nothing this long" },
        { "max-event", NULL, &max_event, "largest SSE line or event accepted, bytes" },
        SL_OPT_END
    };
    int code;
    sl_service_t *svc = sl_service_new ("ingest", opts, "9551", argc, argv, &code);
    if (!svc)
        return code;
    ingest_config_t config = {
        .bind = bind,
        .next = next,
        .openai_base_url = openai_base,
        .openai_key = getenv ("OPENAI_API_KEY"),
        .connect_timeout_ms = sl_opts_long (connect_timeout),
        .idle_timeout_s = sl_opts_long (idle_timeout),
        .max_event = (size_t) sl_opts_long (max_event),
    };
    if (config.connect_timeout_ms <= 0 || config.idle_timeout_s <= 0 || sl_opts_long (max_event) <= 0) {
        sl_log_error ("bad_option", "timeouts and --max-event must be positive integers");
        sl_service_destroy (&svc);
        return 2;
    }
    ingest_t *ingest = ingest_new (svc, &config);
    int rc = ingest ? sl_service_run (svc) : 1;
    ingest_destroy (&ingest);
    sl_service_destroy (&svc);
    return rc;
}
