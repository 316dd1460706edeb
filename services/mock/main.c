/*  sluice-mock - an upstream LLM that serves scripted streams over HTTP.

    It answers at each provider's real path, in that provider's format
    (one provider module per dialect, sl_mock_provider.h):
      POST .../chat/completions                       OpenAI Chat Completions
      POST .../responses                              OpenAI Responses
      POST .../messages                               Anthropic Messages
      POST .../models/{model}:streamGenerateContent   Gemini (alt=sse)
    (any prefix, so /v1/..., /v1beta/... and bare paths all work). The
    model picks the scenario (sl_mock_script.h, sl_mock_agent.h), including
    the ones that misbehave on purpose. With --replay-dir, the model
    "mock-replay/<path>" plays back the recorded stream file <path> under
    that directory. Events are sent one every --delay-ms (a request header
    x-mock-delay-ms overrides it; 0 sends as fast as the client reads).

    Also serves /healthz, /readyz and /metrics on the same port; the metrics count
    the streams its clients abandoned, which is how tests see a cancel
    reach upstream. Requests for judge-* models play an LLM judge
    (sl_mock_judge.h), POSTs under /v1/data/ a decision service in Open
    Policy Agent's shape (sl_mock_decide.h). For Vertex AI it is Google's
    token endpoint (POST /token, the grants of the --gcp-key-file key) and
    metadata server, and takes only the tokens they issued
    (sl_mock_gcp.h). Given an Entra ID app (--azure-client-id), it is
    Entra ID's token endpoint (POST /{tenant}/oauth2/v2.0/token) and its
    Azure OpenAI paths take only the tokens it issued (sl_mock_entra.h).
*/
#include <sodium.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_name.h"
#include "common/base/sl_alloc.h"
#include "common/base/sl_fdlimit.h"
#include "common/cloud/sl_secret.h"
#include "common/http/sl_httpd.h"
#include "common/base/sl_log.h"
#include "common/service/sl_service.h"
#include "services/mock/sl_mock_aws.h"
#include "services/mock/sl_mock_entra.h"
#include "services/mock/sl_mock_gcp.h"
#include "services/mock/sl_mock_judge.h"
#include "services/mock/sl_mock_provider.h"
#include "services/mock/sl_mock_request.h"
#include "services/mock/sl_mock_script.h"

#define MOCK_MAX_BODY (16u << 20)
#define MOCK_FAST_BACKLOG (256u << 10)  //  bytes queued before a fast stream waits
#define MOCK_FAST_WAIT_MS 1
#define MOCK_PACE_SLACK_US 500         //  a paced event this close to due goes in this tick (timers are not exact)
#define MOCK_DRAIN_WAIT_MS 1            //  mock-drop: wait for the bytes to leave
#define MOCK_ATTEMPTS 64                //  request bodies remembered for mock-flaky
#define MOCK_RECORDING_PREFIX "mock-replay/"   //  the model of a recording played back
#define MOCK_RECORDING_MAX (64u << 20)  //  largest recording played back

typedef struct _s_app_t s_app_t;

typedef struct _s_stream_t s_stream_t;

struct _s_stream_t {
    s_app_t *app;
    sl_http_req_t *req;
    sl_mock_script_t script;
    size_t next;                        //  next event to send
    long delay_ms;
    int timer;                          //  -1 when none
    int64_t due;                        //  paced: when the next event is due (µs, monotonic)
    bool started;                       //  response headers queued
    s_stream_t *prev, *next_stream;     //  the app's live streams
};

typedef struct {
    uint64_t key;                       //  hash of model and body
    unsigned count;
} s_attempt_t;

struct _s_app_t {
    sl_service_t *service;
    sl_httpd_t *httpd;
    long delay_ms;
    const char *recordings;             //  --replay-dir: where recordings are; NULL: none played
    FILE *record;                       //  --record: every completion request, one line each
    const char *record_header;          //  --record-header: this header's value too, or NULL
    s_attempt_t attempts [MOCK_ATTEMPTS];
    size_t attempt_next;                //  ring position for a new body
    s_stream_t *live;                   //  streams being answered
    sl_counter_t *streams;
    sl_counter_t *completed;
    sl_counter_t *abandoned;
    sl_counter_t *dropped;
    sl_gauge_t *active;
    sl_mock_judge_t *judge;             //  LLM judge scenarios (judge-* models)
    sl_mock_gcp_t *gcp;                 //  Google's token endpoint and metadata server
    sl_counter_t *gcp_tokens;
    sl_mock_entra_t *entra;             //  Entra ID's token endpoint (configured or not)
    sl_counter_t *entra_tokens;
    int ticker;                         //  paced streams' shared timer (every SL_MOCK_PACED_MS), -1 none
    //  The AWS keys Bedrock's requests must be signed with (from the
    //  environment: sl_mock_aws.h); access_key_id NULL: not checked.
    sl_sigv4_creds_t aws;
};

#define MOCK_SIGNED_HEADERS_MAX 64      //  headers a signed request may have

//  A request's headers, for its signature's check.
typedef struct {
    sl_sigv4_header_t h [MOCK_SIGNED_HEADERS_MAX];
    size_t count;
    bool over;
} s_headers_t;

static void
s_collect (void *arg, const char *name, const char *value)
{
    s_headers_t *hs = arg;
    if (hs->count == MOCK_SIGNED_HEADERS_MAX) {
        hs->over = true;
        return;
    }
    hs->h [hs->count++] = (sl_sigv4_header_t) { name, value ? value : "" };
}

//  A Bedrock request signed with the mock's keys, as AWS checks it: true
//  when it may go on; else it was answered 403.
static bool
s_signed (s_app_t *app, sl_http_req_t *req, int dialect)
{
    s_headers_t hs = { .count = 0 };
    sl_http_req_headers (req, s_collect, &hs);
    sl_sigv4_request_t signed_req = {
        .method = sl_http_req_method (req), .path = sl_http_req_raw_path (req),
        .headers = hs.h, .header_count = hs.count, .body = sl_http_req_body (req)
    };
    sl_mock_aws_refusal_t refusal;
    if (!hs.over && sl_mock_aws_check (&app->aws, &signed_req, time (NULL), &refusal) == 0)
        return true;
    if (hs.over)
        refusal = (sl_mock_aws_refusal_t) { .type = "InvalidSignatureException", .message = "Too many headers." };
    sl_log_info ("bad_signature", "%s: %s", refusal.type, hs.over ? "too many headers" : refusal.why);
    const sl_mock_provider_t *provider = sl_mock_provider_get (dialect);
    sl_buf_t body = { 0 };
    provider->render->error_body (SL_MOCK_AWS_STATUS, refusal.type, refusal.message, &body);
    sl_http_add_header (req, "x-amzn-ErrorType", refusal.type);
    sl_http_respond (req, SL_MOCK_AWS_STATUS, "application/json", body.data, body.len);
    sl_buf_free (&body);
    return false;
}

static void s_schedule (s_stream_t *s, long delay_ms);

//  Send the next event(s); end the response after the last, the way the
//  script says.
static void
s_pump (s_stream_t *s)
{
    if (!s->started) {
        s->started = true;
        s->due = zclock_usecs ();
        sl_http_stream_start (s->req, 200, s->script.content_type ? s->script.content_type : "text/event-stream");
    }
    do {
        if (s->next == s->script.count) {
            if (s->script.end == SL_MOCK_END_CLOSE)
                sl_http_stream_end (s->req);
            else
            if (s->script.end == SL_MOCK_END_DROP) {
                //  Close only once the half event left, so the client sees it.
                if (sl_http_stream_buffered (s->req))
                    s_schedule (s, MOCK_DRAIN_WAIT_MS);
                else
                    sl_http_stream_abort (s->req);
            }
            return;                     //  SL_MOCK_END_STALL: silence
        }
        sl_buf_t *e = &s->script.events [s->next++];
        if (s->script.stamped)
            sl_mock_script_stamp (e, zclock_usecs ());
        if (sl_http_stream_write (s->req, e->data, e->len))
            return;                     //  client gone: on_closed cleans up
    } while (s->delay_ms == 0 && sl_http_stream_buffered (s->req) < MOCK_FAST_BACKLOG);
    if (s->script.pace_ms) {
        //  The shared ticker sends the next one when it is due. A stream
        //  that fell behind (a busy mock) sends one event per tick, never
        //  a burst to catch up.
        int64_t now = zclock_usecs ();
        s->due += s->script.pace_ms * 1000;
        if (s->due < now)
            s->due = now;
        return;
    }
    s_schedule (s, s->delay_ms ? s->delay_ms : MOCK_FAST_WAIT_MS);
}

//  Paced streams share one timer: a thousand of them cost one timer event
//  per millisecond, not a thousand. Each stream keeps its own phase (its
//  first event's time plus its pace), so streams started at different
//  times do not all send in the same tick.
static int
s_on_ticker (zloop_t *loop, int timer_id, void *arg)
{
    s_app_t *app = arg;
    int64_t now = zclock_usecs ();
    bool paced = false;
    for (s_stream_t *s = app->live, *next; s; s = next) {
        next = s->next_stream;          //  a pump may end (and free) nothing yet
        if (!s->script.pace_ms)
            continue;
        paced = true;
        if (s->started && s->timer < 0 && s->due <= now + MOCK_PACE_SLACK_US)
            s_pump (s);
    }
    //  The ticker stops when it finds no paced stream left, not when a
    //  count of them says so: streams that came and went in one turn
    //  never leave a live one without its ticker.
    if (!paced) {
        zloop_timer_end (loop, timer_id);
        app->ticker = -1;
    }
    sl_httpd_run (app->httpd);
    return 0;
}

static int
s_on_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_stream_t *s = arg;
    s->timer = -1;
    s_pump (s);
    sl_httpd_run (s->app->httpd);
    return 0;
}

static void
s_schedule (s_stream_t *s, long delay_ms)
{
    s->timer = zloop_timer (sl_service_loop (s->app->service), (size_t) delay_ms, 1, s_on_timer, s);
}

static void
s_respond_script_error (sl_http_req_t *req, sl_mock_script_t *script)
{
    if (script->retry_after [0])
        sl_http_add_header (req, "Retry-After", script->retry_after);
    sl_http_respond (req, script->status, "application/json",
                     script->error_body.data, script->error_body.len);
}

static uint64_t
s_hash (const char *model, sl_str_t body)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = model; *p; p++)
        h = (h ^ (unsigned char) *p) * 1099511628211ULL;
    for (size_t i = 0; i < body.len; i++)
        h = (h ^ (unsigned char) body.ptr [i]) * 1099511628211ULL;
    return h;
}

//  How many requests with this model and body came before this one.
static unsigned
s_attempt (s_app_t *app, const char *model, sl_str_t body)
{
    uint64_t key = s_hash (model, body);
    for (size_t i = 0; i < MOCK_ATTEMPTS; i++)
        if (app->attempts [i].key == key)
            return app->attempts [i].count++;
    s_attempt_t *slot = &app->attempts [app->attempt_next];
    app->attempt_next = (app->attempt_next + 1) % MOCK_ATTEMPTS;
    *slot = (s_attempt_t) { .key = key, .count = 1 };
    return 0;
}

//  A recording's path: segments of [A-Za-z0-9._-], none of them "." or "..".
static bool
s_safe_path (const char *path)
{
    if (!*path)
        return false;
    const char *seg = path;
    for (const char *p = path; ; p++) {
        if (*p == '/' || *p == 0) {
            size_t n = (size_t) (p - seg);
            if (n == 0 || (n == 1 && seg [0] == '.') || (n == 2 && seg [0] == '.' && seg [1] == '.'))
                return false;
            if (*p == 0)
                return true;
            seg = p + 1;
        }
        else
        if (!sl_name_char (*p))
            return false;
    }
}

//  Build the script that plays back the recording of model
//  "mock-replay/<path>"; false when no recordings are played or the file
//  is not there.
static bool
s_play_recording (s_app_t *app, const char *name, sl_mock_script_t *script)
{
    if (!app->recordings || !s_safe_path (name))
        return false;
    char path [1024];
    snprintf (path, sizeof path, "%s/%s", app->recordings, name);
    FILE *f = fopen (path, "rb");
    if (!f)
        return false;
    sl_buf_t bytes = { 0 };
    char chunk [65536];
    size_t n;
    while ((n = fread (chunk, 1, sizeof chunk, f)) > 0 && bytes.len < MOCK_RECORDING_MAX)
        sl_buf_append (&bytes, chunk, n);
    fclose (f);
    int rc = sl_mock_script_playback (sl_str (name), sl_buf_str (&bytes), script);
    sl_buf_free (&bytes);
    return rc == 0;
}

static void
s_serve_health (s_app_t *app, sl_http_req_t *req, const char *path)
{
    if (sl_service_answer_probe (app->service, req, path))
        return;
    sl_buf_t out = { 0 };
    sl_service_render_metrics (app->service, &out);
    sl_http_respond (req, 200, "text/plain; version=0.0.4", out.data, out.len);
    sl_buf_free (&out);
}

//  Google's token endpoint and metadata server; false for another path.
static bool
s_serve_gcp (s_app_t *app, sl_http_req_t *req, const char *method, const char *path, sl_str_t body)
{
    sl_buf_t answer = { 0 };
    int status;
    uint64_t before = sl_mock_gcp_issued (app->gcp);
    if (strcmp (method, "POST") == 0 && strcmp (path, SL_MOCK_GCP_TOKEN_PATH) == 0)
        status = sl_mock_gcp_grant (app->gcp, body, time (NULL), &answer);
    else
    if (strcmp (method, "GET") == 0 && strcmp (path, SL_MOCK_GCP_METADATA_PATH) == 0)
        status = sl_mock_gcp_metadata (app->gcp, sl_http_req_header (req, "Metadata-Flavor"), time (NULL), &answer);
    else
        return false;
    if (status != 200)
        sl_log_info ("gcp_refused", "path=%s status=%d %.*s", path, status, (int) answer.len, answer.data);
    app->gcp_tokens->value += sl_mock_gcp_issued (app->gcp) - before;
    if (status == 200)
        sl_http_add_header (req, "Metadata-Flavor", "Google");
    sl_http_respond (req, status, status == 403 ? "text/html" : "application/json", answer.data, answer.len);
    sodium_memzero (answer.data, answer.cap);
    sl_buf_free (&answer);
    return true;
}

//  Entra ID's token endpoint, when the mock plays an Entra ID app; false
//  for another path.
static bool
s_serve_entra (s_app_t *app, sl_http_req_t *req, const char *method, const char *path, sl_str_t body)
{
    if (!sl_mock_entra_configured (app->entra) || strcmp (method, "POST") != 0
    ||  !sl_mock_entra_is_token_path (path))
        return false;
    sl_buf_t answer = { 0 };
    uint64_t before = sl_mock_entra_issued (app->entra);
    int status = sl_mock_entra_grant (app->entra, path, body, time (NULL), &answer);
    if (status != 200)
        sl_log_info ("entra_refused", "path=%s status=%d %.*s", path, status, (int) answer.len, answer.data);
    app->entra_tokens->value += sl_mock_entra_issued (app->entra) - before;
    sl_http_respond (req, status, "application/json; charset=utf-8", answer.data, answer.len);
    sodium_memzero (answer.data, answer.cap);
    sl_buf_free (&answer);
    return true;
}

//  Answer with the script: an HTTP error, nothing at all, or a stream.
static void
s_answer (s_app_t *app, sl_http_req_t *req, sl_mock_script_t *script)
{
    if (script->status != 200 && script->status != 0) {
        s_respond_script_error (req, script);
        sl_mock_script_clear (script);
        return;
    }
    s_stream_t *s = sl_xcalloc (1, sizeof *s);
    s->app = app;
    s->req = req;
    s->timer = -1;
    s->script = *script;
    s->delay_ms = app->delay_ms;
    const char *delay = sl_http_req_header (req, "x-mock-delay-ms");
    if (delay && sl_opts_long (delay) >= 0)
        s->delay_ms = sl_opts_long (delay);
    if (script->burst)
        s->delay_ms = 0;
    sl_http_req_set_data (req, s);
    sl_counter_inc (app->streams);
    app->active->value++;
    s->next_stream = app->live;
    if (app->live)
        app->live->prev = s;
    app->live = s;
    //  The response starts in the next reactor turn, not from inside the
    //  request callback: a request left unanswered by the callback is the
    //  one sl_httpd watches for the client hanging up, and a stalled
    //  stream must notice that too.
    if (script->status != 0)
        s_schedule (s, 0);
    //  else mock-hang: the client waits until it gives up
    if (s->script.pace_ms) {
        s->delay_ms = s->script.pace_ms;
        if (app->ticker < 0)
            app->ticker = zloop_timer (sl_service_loop (app->service), SL_MOCK_PACED_MS, 0,
                                       s_on_ticker, app);
    }
}

static void
s_on_request (void *arg, sl_http_req_t *req)
{
    s_app_t *app = arg;
    const char *path = sl_http_req_path (req);
    if (strcmp (path, "/healthz") == 0 || strcmp (path, "/readyz") == 0 || strcmp (path, "/metrics") == 0) {
        s_serve_health (app, req, path);
        return;
    }
    if (sl_mock_judge_handle (app->judge, app->httpd, req))
        return;
    sl_str_t body = sl_http_req_body (req);
    const char *method = sl_http_req_method (req);
    if (s_serve_gcp (app, req, method, path, body))
        return;
    if (s_serve_entra (app, req, method, path, body))
        return;
    if (app->record && strcmp (method, "POST") == 0 && sl_mock_request_dialect (path)) {
        //  What reached the upstream, for tests: the path, a tab, the body
        //  on one line (a JSON body's line ends are escapes already).
        fprintf (app->record, "%s\t", path);
        for (size_t i = 0; i < body.len; i++)
            fputc (body.ptr [i] == '\n' ? ' ' : body.ptr [i], app->record);
        const char *value = app->record_header ? sl_http_req_header (req, app->record_header) : NULL;
        if (value)
            fprintf (app->record, "\t%s: %s", app->record_header, value);
        fputc ('\n', app->record);
        fflush (app->record);
    }
    sl_mock_call_t call;
    sl_mock_script_t script;
    if (sl_mock_request_read (method, path, body, sl_http_req_header (req, "anthropic-beta"), &call, &script)) {
        if (script.status == 400)
            sl_log_info ("bad_request", "%.*s", (int) script.error_body.len, script.error_body.data);
        s_respond_script_error (req, &script);
        sl_mock_script_clear (&script);
        return;
    }
    const sl_mock_provider_t *provider = sl_mock_provider_get (call.dialect);
    const char *bearer = sl_http_req_header (req, "Authorization");
    if (provider && provider->bearer && !sl_mock_gcp_accepts (app->gcp, bearer, time (NULL))) {
        //  A cloud's token is checked as the cloud would: none, another,
        //  or one expired.
        sl_mock_script_unauthorized (call.dialect, "Request had invalid authentication credentials. Expected OAuth 2 "
                                                   "access token", &script);
        s_respond_script_error (req, &script);
        sl_mock_script_clear (&script);
        return;
    }
    if (call.dialect == SL_DIALECT_AZURE && sl_mock_entra_configured (app->entra)
    &&  !sl_mock_entra_accepts (app->entra, bearer, time (NULL))) {
        //  As Azure OpenAI answers a resource whose callers sign in with
        //  Entra ID: its tokens only, unexpired.
        sl_mock_script_unauthorized (call.dialect, "Unauthorized. Access token is missing, invalid, audience is "
                                                   "incorrect (https://cognitiveservices.azure.com), or have expired.",
                                     &script);
        s_respond_script_error (req, &script);
        sl_mock_script_clear (&script);
        return;
    }
    if (provider && provider->sigv4 && app->aws.access_key_id && !s_signed (app, req, call.dialect))
        return;                         //  refused as AWS refuses
    if (strncmp (call.model, MOCK_RECORDING_PREFIX, strlen (MOCK_RECORDING_PREFIX)) == 0) {
        if (!s_play_recording (app, call.model + strlen (MOCK_RECORDING_PREFIX), &script)) {
            sl_mock_script_not_found (call.dialect, app->recordings ? "no such recording"
                                                                    : "no recordings are played (start the mock with "
                                                                      "--replay-dir)",
                                      &script);
            s_respond_script_error (req, &script);
            sl_mock_script_clear (&script);
            return;
        }
    }
    else
        sl_mock_request_answer (&call, body, s_attempt (app, call.model, body), &script);
    s_answer (app, req, &script);
}

static void
s_on_closed (void *arg, sl_http_req_t *req, bool aborted)
{
    s_app_t *app = arg;
    sl_mock_judge_closed (app->judge, req);
    s_stream_t *s = sl_http_req_data (req);
    if (!s)
        return;
    if (aborted && s->script.end == SL_MOCK_END_DROP && s->next == s->script.count)
        sl_counter_inc (app->dropped);  //  we closed it: mock-drop
    else
    if (aborted) {
        sl_counter_inc (app->abandoned);
        sl_log_info ("client_closed", "stream abandoned after %zu of %zu events",
                     s->next, s->script.count);
    }
    else
        sl_counter_inc (app->completed);
    app->active->value--;
    if (s->prev)
        s->prev->next_stream = s->next_stream;
    else
        app->live = s->next_stream;
    if (s->next_stream)
        s->next_stream->prev = s->prev;
    if (s->timer >= 0)
        zloop_timer_end (sl_service_loop (app->service), s->timer);
    sl_mock_script_clear (&s->script);
    free (s);
}

int
main (int argc, char **argv)
{
    const char *host = "127.0.0.1";
    const char *port = "9090";
    const char *delay = "20";
    const char *recordings = "";
    const char *record = "";
    const char *record_header = "";
    const char *gcp_key_file = "";
    const char *gcp_ttl = "0";
    const char *azure_tenant = "";
    const char *azure_client = "";
    const char *azure_ttl = "0";
    sl_opt_t opts [] = {
        { "host", "SLUICE_MOCK_HOST", &host, "address to listen on" },
        { "port", "SLUICE_MOCK_PORT", &port, "port to listen on" },
        { "delay-ms", "SLUICE_MOCK_DELAY_MS", &delay, "time between events (0: as fast as possible)" },
        { "replay-dir", "SLUICE_MOCK_REPLAY_DIR", &recordings,
          "directory of recorded streams played back to model mock-replay/<file> (empty: off)" },
        { "record", NULL, &record, "append every completion request received to this file, one line each "
                                   "(path, a tab, the body; empty: off)" },
        { "record-header", NULL, &record_header, "with --record: after the body, a tab and this request header "
                                                 "(\"Name: value\") when the request has it" },
        { "gcp-key-file", "SLUICE_MOCK_GCP_KEY_FILE", &gcp_key_file,
          "a Google service account's key file: POST /token takes its JWT-bearer grants (empty: none taken)" },
        { "gcp-token-ttl-s", "SLUICE_MOCK_GCP_TOKEN_TTL_S", &gcp_ttl,
          "the life of the access tokens /token and the metadata server issue (0: 3599)" },
        { "azure-tenant-id", "SLUICE_MOCK_AZURE_TENANT_ID", &azure_tenant,
          "the Entra ID tenant whose token endpoint (POST /{tenant}/oauth2/v2.0/token) is served" },
        { "azure-client-id", "SLUICE_MOCK_AZURE_CLIENT_ID", &azure_client,
          "the Entra ID app whose grants are taken, its secret in SLUICE_MOCK_AZURE_CLIENT_SECRET or its federated "
          "token in SLUICE_MOCK_AZURE_FEDERATED_TOKEN; Azure OpenAI then takes only the tokens issued (empty: off)" },
        { "azure-token-ttl-s", "SLUICE_MOCK_AZURE_TOKEN_TTL_S", &azure_ttl,
          "the life of the Entra ID tokens issued (0: 3599)" },
        SL_OPT_END
    };
    int code;
    sl_service_t *svc = sl_service_new ("mock", opts, "off", argc, argv, &code);
    if (!svc)
        return code;
    //  Every provider module is complete, or the mock does not start.
    const char *why = NULL;
    if (sl_mock_provider_init (&why)) {
        sl_log_error ("bad_provider", "%s", why ? why : "a mock provider module is incomplete");
        sl_service_destroy (&svc);
        return 2;
    }
    sl_fdlimit_raise ();                //  a socket per stream: load tests hold thousands
    s_app_t *app = sl_xcalloc (1, sizeof *app);
    app->service = svc;
    app->delay_ms = sl_opts_long (delay);
    app->recordings = *recordings ? recordings : NULL;
    app->record_header = *record_header ? record_header : NULL;
    if (*record && !(app->record = fopen (record, "a"))) {
        sl_log_error ("bad_option", "--record: cannot open %s", record);
        free (app);
        sl_service_destroy (&svc);
        return 2;
    }
    app->ticker = -1;
    char why_gcp [300];
    if (sl_opts_long (gcp_ttl) < 0
    ||  !(app->gcp = sl_mock_gcp_new (gcp_key_file, sl_opts_long (gcp_ttl), why_gcp, sizeof why_gcp))) {
        sl_log_error ("bad_option", "--gcp-key-file, --gcp-token-ttl-s: %s",
                      sl_opts_long (gcp_ttl) < 0 ? "the life must be a non-negative integer" : why_gcp);
        if (app->record)
            fclose (app->record);
        free (app);
        sl_service_destroy (&svc);
        return 2;
    }
    char why_entra [200];
    const sl_mock_entra_config_t entra = {
        azure_tenant, azure_client, sl_secret_env ("SLUICE_MOCK_AZURE_CLIENT_SECRET"),
        sl_secret_env ("SLUICE_MOCK_AZURE_FEDERATED_TOKEN"), sl_opts_long (azure_ttl)
    };
    if (sl_opts_long (azure_ttl) < 0 || !(app->entra = sl_mock_entra_new (&entra, why_entra, sizeof why_entra))) {
        sl_log_error ("bad_option", "--azure-tenant-id, --azure-client-id, --azure-token-ttl-s: %s",
                      sl_opts_long (azure_ttl) < 0 ? "the life must be a non-negative integer" : why_entra);
        sl_mock_gcp_destroy (&app->gcp);
        if (app->record)
            fclose (app->record);
        free (app);
        sl_service_destroy (&svc);
        return 2;
    }
    app->aws = (sl_sigv4_creds_t) {
        sl_secret_env ("SLUICE_MOCK_AWS_ACCESS_KEY_ID"), sl_secret_env ("SLUICE_MOCK_AWS_SECRET_ACCESS_KEY"),
        sl_secret_env ("SLUICE_MOCK_AWS_SESSION_TOKEN")
    };
    if (!app->aws.access_key_id != !app->aws.secret_access_key) {
        sl_log_error ("bad_option", "SLUICE_MOCK_AWS_ACCESS_KEY_ID and SLUICE_MOCK_AWS_SECRET_ACCESS_KEY go together");
        sl_mock_gcp_destroy (&app->gcp);
        sl_mock_entra_destroy (&app->entra);
        if (app->record)
            fclose (app->record);
        free (app);
        sl_service_destroy (&svc);
        return 2;
    }
    long p = sl_opts_long (port);
    if (app->delay_ms < 0 || p < 0 || p > 65535) {
        sl_log_error ("bad_option", "--port and --delay-ms must be non-negative integers");
        sl_mock_gcp_destroy (&app->gcp);
        sl_mock_entra_destroy (&app->entra);
        free (app);
        sl_service_destroy (&svc);
        return 2;
    }
    sl_metrics_t *m = sl_service_metrics (svc);
    app->streams = sl_metrics_counter (m, "mock_streams_total", NULL, "Streams started");
    app->completed = sl_metrics_counter (m, "mock_streams_completed_total", NULL, "Streams sent to the end");
    app->abandoned = sl_metrics_counter (m, "mock_streams_abandoned_total", NULL, "Streams whose client closed early");
    app->dropped = sl_metrics_counter (m, "mock_streams_dropped_total", NULL,
                                       "Streams the mock closed mid-event on purpose (mock-drop)");
    app->active = sl_metrics_gauge (m, "mock_streams_active", NULL, "Streams being sent");
    app->gcp_tokens = sl_metrics_counter (m, "mock_gcp_tokens_issued_total", NULL,
                                          "Google access tokens issued (token endpoint and metadata server)");
    app->entra_tokens = sl_metrics_counter (m, "mock_entra_tokens_issued_total", NULL,
                                            "Entra ID access tokens issued (the Azure token endpoint)");
    app->judge = sl_mock_judge_new (sl_service_loop (svc));
    app->httpd = sl_httpd_new (sl_service_loop (svc), host, (int) p, MOCK_MAX_BODY,
                               s_on_request, s_on_closed, app);
    int rc = 1;
    if (app->httpd) {
        sl_httpd_set_counters (app->httpd, &(sl_httpd_counters_t) {
            .bad_framing = sl_service_framing_counter (svc, "mock") });
        sl_log_info ("listening", "http=%s:%d delay_ms=%ld replay_dir=%s aws_signatures=%s entra_tokens=%s", host,
                     sl_httpd_port (app->httpd), app->delay_ms, app->recordings ? app->recordings : "off",
                     app->aws.access_key_id ? "checked" : "off",
                     sl_mock_entra_configured (app->entra) ? "checked" : "off");
        rc = sl_service_run (svc);
        //  Let go of streams still open (stalled, hanging): the HTTP
        //  server cannot stop while it holds parked connections.
        for (s_stream_t *s = app->live; s; s = s->next_stream) {
            if (s->timer >= 0)
                zloop_timer_end (sl_service_loop (svc), s->timer);
            s->timer = -1;
            sl_http_stream_abort (s->req);
        }
        sl_httpd_run (app->httpd);
    }
    sl_httpd_destroy (&app->httpd);
    sl_mock_judge_destroy (&app->judge);
    sl_mock_gcp_destroy (&app->gcp);
    sl_mock_entra_destroy (&app->entra);
    if (app->record)
        fclose (app->record);
    free (app);
    sl_service_destroy (&svc);
    return rc;
}
