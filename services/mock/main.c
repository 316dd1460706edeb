/*  sluice-mock - an upstream LLM that serves scripted streams over HTTP.

    POST /v1/chat/completions (or /chat/completions under any base path
    prefix): the request's model picks the scenario (sl_mock_script.h); the
    events are sent one every --delay-ms (a request header x-mock-delay-ms
    overrides it; 0 sends as fast as the client reads). Also serves
    /healthz and /metrics on the same port; the metrics count the streams
    its clients abandoned, which is how tests see a cancel reach upstream.
    Requests for judge-* models play an LLM judge (sl_mock_judge.h).
*/
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/sl_alloc.h"
#include "../../common/sl_httpd.h"
#include "../../common/sl_log.h"
#include "../../common/sl_service.h"
#include "sl_mock_judge.h"
#include "sl_mock_script.h"

#define MOCK_MAX_BODY (16u << 20)
#define MOCK_FAST_BACKLOG (256u << 10)  //  bytes queued before a fast stream waits
#define MOCK_FAST_WAIT_MS 1

typedef struct _s_app_t s_app_t;

typedef struct {
    s_app_t *app;
    sl_http_req_t *req;
    sl_mock_script_t script;
    size_t next;                        //  next event to send
    long delay_ms;
    int timer;                          //  -1 when none
} s_stream_t;

struct _s_app_t {
    sl_service_t *service;
    sl_httpd_t *httpd;
    long delay_ms;
    sl_counter_t *streams;
    sl_counter_t *completed;
    sl_counter_t *abandoned;
    sl_gauge_t *active;
    sl_mock_judge_t *judge;             //  LLM judge scenarios (judge-* models)
};

static void s_schedule (s_stream_t *s, long delay_ms);

//  Send the next event(s); end the response after the last.
static void
s_pump (s_stream_t *s)
{
    do {
        if (s->next == s->script.count) {
            sl_http_stream_end (s->req);
            return;
        }
        sl_buf_t *e = &s->script.events [s->next++];
        if (sl_http_stream_write (s->req, e->data, e->len))
            return;                     //  client gone: on_closed cleans up
    } while (s->delay_ms == 0 && sl_http_stream_buffered (s->req) < MOCK_FAST_BACKLOG);
    s_schedule (s, s->delay_ms ? s->delay_ms : MOCK_FAST_WAIT_MS);
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
s_respond_error (sl_http_req_t *req, int status, const char *message)
{
    json_t *body = json_pack ("{s:{s:s,s:s}}", "error", "message", message, "type", "invalid_request_error");
    char *text = json_dumps (body, JSON_COMPACT);
    sl_http_respond (req, status, "application/json", text, strlen (text));
    free (text);
    json_decref (body);
}

static bool
s_ends_with (const char *s, const char *suffix)
{
    size_t n = strlen (s), m = strlen (suffix);
    return n >= m && strcmp (s + n - m, suffix) == 0;
}

static void
s_on_request (void *arg, sl_http_req_t *req)
{
    s_app_t *app = arg;
    const char *path = sl_http_req_path (req);
    if (strcmp (path, "/healthz") == 0 || strcmp (path, "/metrics") == 0) {
        sl_buf_t out = { 0 };
        if (path [1] == 'h')
            sl_service_render_health (app->service, &out);
        else
            sl_service_render_metrics (app->service, &out);
        sl_http_respond (req, 200, path [1] == 'h' ? "application/json" : "text/plain; version=0.0.4",
                         out.data, out.len);
        sl_buf_free (&out);
        return;
    }
    if (sl_mock_judge_handle (app->judge, app->httpd, req))
        return;
    if (!s_ends_with (path, "/chat/completions")) {
        s_respond_error (req, 404, "the mock serves POST .../chat/completions");
        return;
    }
    if (strcmp (sl_http_req_method (req), "POST") != 0) {
        s_respond_error (req, 405, "use POST");
        return;
    }
    sl_str_t body = sl_http_req_body (req);
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, 0, NULL);
    json_t *model = json_object_get (root, "model");
    if (!json_is_string (model)) {
        json_decref (root);
        s_respond_error (req, 400, "the body must be JSON with a model");
        return;
    }
    s_stream_t *s = sl_xcalloc (1, sizeof *s);
    s->app = app;
    s->req = req;
    s->timer = -1;
    s->delay_ms = app->delay_ms;
    const char *delay = sl_http_req_header (req, "x-mock-delay-ms");
    if (delay && sl_opts_long (delay) >= 0)
        s->delay_ms = sl_opts_long (delay);
    json_t *max_tokens = json_object_get (root, "max_tokens");
    long chunks = json_is_integer (max_tokens) ? (long) json_integer_value (max_tokens) : 0;
    sl_mock_script_build (sl_str_n (json_string_value (model), json_string_length (model)),
                          body, chunks, &s->script);
    json_decref (root);
    if (s->script.status != 200) {
        sl_http_respond (req, s->script.status, "application/json",
                         s->script.error_body.data, s->script.error_body.len);
        sl_mock_script_clear (&s->script);
        free (s);
        return;
    }
    sl_http_req_set_data (req, s);
    sl_counter_inc (app->streams);
    app->active->value++;
    sl_http_stream_start (req, 200, "text/event-stream");
    s_pump (s);
}

static void
s_on_closed (void *arg, sl_http_req_t *req, bool aborted)
{
    s_app_t *app = arg;
    sl_mock_judge_closed (app->judge, req);
    s_stream_t *s = sl_http_req_data (req);
    if (!s)
        return;
    if (aborted) {
        sl_counter_inc (app->abandoned);
        sl_log_info ("client_closed", "stream abandoned after %zu of %zu events",
                     s->next, s->script.count);
    }
    else
        sl_counter_inc (app->completed);
    app->active->value--;
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
    sl_opt_t opts [] = {
        { "host", "SLUICE_MOCK_HOST", &host, "address to listen on" },
        { "port", "SLUICE_MOCK_PORT", &port, "port to listen on" },
        { "delay-ms", "SLUICE_MOCK_DELAY_MS", &delay, "time between events (0: as fast as possible)" },
        SL_OPT_END
    };
    int code;
    sl_service_t *svc = sl_service_new ("mock", opts, "off", argc, argv, &code);
    if (!svc)
        return code;
    s_app_t app = { .service = svc, .delay_ms = sl_opts_long (delay) };
    long p = sl_opts_long (port);
    if (app.delay_ms < 0 || p < 0 || p > 65535) {
        sl_log_error ("bad_option", "--port and --delay-ms must be non-negative integers");
        sl_service_destroy (&svc);
        return 2;
    }
    sl_metrics_t *m = sl_service_metrics (svc);
    app.streams = sl_metrics_counter (m, "mock_streams_total", NULL, "Streams started");
    app.completed = sl_metrics_counter (m, "mock_streams_completed_total", NULL, "Streams sent to the end");
    app.abandoned = sl_metrics_counter (m, "mock_streams_abandoned_total", NULL, "Streams whose client closed early");
    app.active = sl_metrics_gauge (m, "mock_streams_active", NULL, "Streams being sent");
    app.judge = sl_mock_judge_new (sl_service_loop (svc));
    app.httpd = sl_httpd_new (sl_service_loop (svc), host, (int) p, MOCK_MAX_BODY,
                              s_on_request, s_on_closed, &app);
    int rc = 1;
    if (app.httpd) {
        sl_log_info ("listening", "http=%s:%d delay_ms=%ld", host, sl_httpd_port (app.httpd), app.delay_ms);
        rc = sl_service_run (svc);
    }
    sl_httpd_destroy (&app.httpd);
    sl_mock_judge_destroy (&app.judge);
    sl_service_destroy (&svc);
    return rc;
}
