/*  ingest.c - the ingest service's loop: sockets, libcurl and timers
    around the upstream-call library (common/stages/sl_upcall.h).

    sl_upcall holds every stream: its state machine over the upstream call
    (deadlines, retries), SSE framing and decoding, the delta log and its
    re-sending in a new epoch, acks and the gateway deadline. This file
    gives it its hands:

    - jobs, cancels and acks from the gateways come in through the stage's
      inbox (sl_stage) and are fed to it; what it says to a gateway
      directly goes back the same way;
    - what it sends downstream goes through the router to the aggregators,
      whose deaths (our router sees their heartbeats stop) and `lost`
      notices (a judge or an emitter died: the stage before it tells us,
      hop by hop) are fed back to it;
    - each attempt of a call is one libcurl transfer in the reactor
      (sl_curlm), whose callbacks are fed to it as they come;
    - an inline answer (the gateway's own requests) has no transfer: its
      stream id waits for the reactor's next turn (a zero-delay timer),
      where sl_upcall reads it;
    - one reactor timer calls sl_upcall_tick every INGEST_TICK_MS while any
      stream is held (curl's own timers only back up its deadlines).

    Back-pressure: while the aggregators hold back credit, sl_upcall asks
    for a stream's reads to be paused (TCP pushes back to the provider); a
    1 ms timer looks for the credit's return while any read is paused, and
    resumes them.
*/
#include "services/ingest/ingest.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"
#include "common/cloud/sl_awsauth.h"
#include "common/cloud/sl_azauth.h"
#include "common/http/sl_curlm.h"
#include "common/bus/sl_router.h"
#include "common/service/sl_stage.h"
#include "common/cloud/sl_gcpauth.h"
#include "common/stages/sl_auths.h"

#define INGEST_TICK_MS 25               //  deadline sweep period
#define INGEST_RESUME_MS 1              //  look again for credit while reads are paused
#define INGEST_CURL_SLACK_MS 1000       //  curl's own connect timeout: ours + this
#define INGEST_UPLOAD_BUFFER 16384L    //  curl's upload buffer per call (its minimum; default 64 KiB)

struct _ingest_t {
    ingest_config_t config;
    sl_service_t *service;
    sl_stage_t *stage;
    sl_router_t *router;
    sl_curlm_t *curlm;
    sl_upcall_t *upcall;
    sl_auths_t *auths;                  //  the providers' credential sources
    int sweep;                          //  deadline timer, -1 while no streams
    int resume;                         //  resume timer, -1 unless a read is paused
    sl_buf_t inline_due;                //  stream ids whose inline answer is to be read, back to back
    int inline_timer;                   //  reads them on the next turn of the reactor, -1 while none
};

//  One attempt of an upstream call: a curl transfer.
typedef struct {
    ingest_t *ingest;
    sl_upcall_call_t *call;             //  whose attempt it is
    CURL *easy;
    struct curl_slist *headers;
    char errbuf [CURL_ERROR_SIZE];
} s_transfer_t;

//  --------------------------------------------------------------------------
//  Curl's callbacks, fed to sl_upcall

//  curl: the connection is up (or reused) and the request is about to go.
static int
s_on_connected (void *arg, char *primary_ip, char *local_ip, int primary_port, int local_port)
{
    (void) primary_ip;
    (void) local_ip;
    (void) primary_port;
    (void) local_port;
    s_transfer_t *t = arg;
    sl_upcall_connected (t->ingest->upcall, t->call);
    return CURL_PREREQFUNC_OK;
}

static size_t
s_on_header (char *ptr, size_t size, size_t nmemb, void *userdata)
{
    s_transfer_t *t = userdata;
    size_t n = size * nmemb;
    sl_upcall_header (t->ingest->upcall, t->call, ptr, n);
    return n;
}

static int s_on_resume (zloop_t *loop, int timer_id, void *arg);

//  Look again shortly whether the aggregators gave credit back: paused
//  reads bring no event that would tell us, and waiting for the deadline
//  sweep left a fast stream idle for up to INGEST_TICK_MS at each pause.
static void
s_arm_resume (ingest_t *self)
{
    if (self->resume < 0)
        self->resume = zloop_timer (sl_service_loop (self->service), INGEST_RESUME_MS, 1, s_on_resume, self);
}

static size_t
s_on_body (char *ptr, size_t size, size_t nmemb, void *userdata)
{
    s_transfer_t *t = userdata;
    size_t n = size * nmemb;
    switch (sl_upcall_body (t->ingest->upcall, t->call, ptr, n)) {
        case SL_UPCALL_TAKEN:
            return n;
        case SL_UPCALL_PAUSE:
            s_arm_resume (t->ingest);
            return CURL_WRITEFUNC_PAUSE;
        case SL_UPCALL_STOP:
        default:
            return 0;                   //  0 makes curl stop the transfer
    }
}

//  The transfer ended: curl let go of the handle, and sl_upcall stops the
//  transfer (s_stop frees it) before it returns.
static void
s_on_done (void *arg, CURL *easy, CURLcode result)
{
    (void) easy;
    s_transfer_t *t = arg;
    //  curl's own message names the host and port it tried ("Failed to
    //  connect to 10.0.0.5 port 9090"): the log's detail, kept past the
    //  transfer's end.
    char detail [CURL_ERROR_SIZE];
    memcpy (detail, t->errbuf, sizeof detail);
    sl_upcall_done (t->ingest->upcall, t->call, result == CURLE_OK ? NULL : curl_easy_strerror (result), detail);
}

//  --------------------------------------------------------------------------
//  sl_upcall's operations

static int
s_send (void *arg, const sl_msg_t *msg)
{
    return sl_router_send (((ingest_t *) arg)->router, msg);
}

static const uint8_t *
s_encoded (void *arg, size_t *len)
{
    return sl_router_last_encoded (((ingest_t *) arg)->router, len);
}

static void
s_reply (void *arg, sl_str_t peer, const sl_msg_t *msg)
{
    sl_stage_reply (((ingest_t *) arg)->stage, peer, msg);
}

static void *
s_start (void *arg, sl_upcall_call_t *call, const sl_upcall_attempt_t *attempt)
{
    ingest_t *self = arg;
    s_transfer_t *t = sl_xcalloc (1, sizeof *t);
    t->ingest = self;
    t->call = call;
    for (size_t i = 0; i < attempt->header_count; i++)
        t->headers = curl_slist_append (t->headers, attempt->header [i]);
    t->easy = curl_easy_init ();
    curl_easy_setopt (t->easy, CURLOPT_URL, attempt->url);
    curl_easy_setopt (t->easy, CURLOPT_POSTFIELDS, attempt->body.ptr ? attempt->body.ptr : "");
    curl_easy_setopt (t->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) attempt->body.len);
    //  A body over 64 KiB (an agent's conversation) goes out through curl's
    //  upload buffer, which the call keeps for its life: the smallest one
    //  curl takes, not its default 64 KiB per live stream.
    curl_easy_setopt (t->easy, CURLOPT_UPLOAD_BUFFERSIZE, INGEST_UPLOAD_BUFFER);
    curl_easy_setopt (t->easy, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt (t->easy, CURLOPT_WRITEFUNCTION, s_on_body);
    curl_easy_setopt (t->easy, CURLOPT_WRITEDATA, t);
    curl_easy_setopt (t->easy, CURLOPT_HEADERFUNCTION, s_on_header);
    curl_easy_setopt (t->easy, CURLOPT_HEADERDATA, t);
    curl_easy_setopt (t->easy, CURLOPT_PREREQFUNCTION, s_on_connected);
    curl_easy_setopt (t->easy, CURLOPT_PREREQDATA, t);
    curl_easy_setopt (t->easy, CURLOPT_ERRORBUFFER, t->errbuf);
    curl_easy_setopt (t->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (t->easy, CURLOPT_CONNECTTIMEOUT_MS,
                      self->config.upcall.connect_timeout_ms + INGEST_CURL_SLACK_MS);
    curl_easy_setopt (t->easy, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_2TLS);
    if (sl_curlm_add (self->curlm, t->easy, s_on_done, t)) {
        curl_easy_cleanup (t->easy);
        curl_slist_free_all (t->headers);
        free (t);
        return NULL;
    }
    return t;
}

static void
s_stop (void *arg, void *transfer)
{
    ingest_t *self = arg;
    s_transfer_t *t = transfer;
    sl_curlm_remove (self->curlm, t->easy);
    curl_easy_cleanup (t->easy);
    curl_slist_free_all (t->headers);
    free (t);
}

static void
s_resume_transfer (void *arg, void *transfer)
{
    (void) arg;
    curl_easy_pause (((s_transfer_t *) transfer)->easy, CURLPAUSE_CONT);
}

static long
s_status (void *arg, void *transfer)
{
    (void) arg;
    long status = 0;
    curl_easy_getinfo (((s_transfer_t *) transfer)->easy, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

static int64_t
s_uploaded (void *arg, void *transfer)
{
    (void) arg;
    curl_off_t sent = -1;
    if (curl_easy_getinfo (((s_transfer_t *) transfer)->easy, CURLINFO_SIZE_UPLOAD_T, &sent) != CURLE_OK)
        return -1;
    return (int64_t) sent;
}

static int s_on_inline (zloop_t *loop, int timer_id, void *arg);

//  An inline answer is read on the reactor's next turn, not inside the
//  job's own handling (sl_upcall.h): one timer for all that are due.
static void
s_later (void *arg, const uint8_t *sid)
{
    ingest_t *self = arg;
    sl_buf_append (&self->inline_due, sid, SL_SID_SIZE);
    if (self->inline_timer < 0)
        self->inline_timer = zloop_timer (sl_service_loop (self->service), 0, 1, s_on_inline, self);
}

static bool
s_congested (void *arg)
{
    return sl_router_congested (((ingest_t *) arg)->router);
}

static int64_t
s_clock (void *arg)
{
    (void) arg;
    return zclock_mono ();
}

static time_t
s_wall (void *arg)
{
    (void) arg;
    return time (NULL);
}

//  --------------------------------------------------------------------------
//  Timers

static int
s_on_sweep (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    ingest_t *self = arg;
    sl_upcall_tick (self->upcall);
    if (sl_upcall_count (self->upcall) == 0) {
        zloop_timer_end (sl_service_loop (self->service), self->sweep);
        self->sweep = -1;
    }
    sl_router_flush (self->router);
    return 0;
}

static int
s_on_resume (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    ingest_t *self = arg;
    self->resume = -1;
    if (sl_router_congested (self->router)) {
        s_arm_resume (self);
        return 0;
    }
    sl_upcall_resume (self->upcall);
    sl_router_flush (self->router);
    return 0;
}

static int
s_on_inline (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    ingest_t *self = arg;
    self->inline_timer = -1;
    //  Those reading asks for more (a pause's resume) land in a fresh list.
    sl_buf_t due = self->inline_due;
    self->inline_due = (sl_buf_t) { 0 };
    for (size_t at = 0; at + SL_SID_SIZE <= due.len; at += SL_SID_SIZE)
        sl_upcall_inline (self->upcall, (const uint8_t *) due.data + at);
    sl_buf_free (&due);
    if (sl_router_congested (self->router))
        s_arm_resume (self);            //  a read paused: look for credit as for a transfer
    sl_router_flush (self->router);
    return 0;
}

//  --------------------------------------------------------------------------
//  The next stages

static void
s_lost_pinned (void *arg, const uint8_t *sid, uint32_t epoch)
{
    sl_upcall_lost (((ingest_t *) arg)->upcall, sid, epoch, "aggregator_died");
}

//  An aggregator the ingest sent streams to died, restarted or has a new
//  connection from us: re-send every stream pinned there, at once.
static void
s_on_aggregator_event (void *arg, const char *endpoint, sl_peer_event_t event)
{
    ingest_t *self = arg;
    if (event == SL_PEER_DEAD || event == SL_PEER_RESTARTED || event == SL_PEER_RECONNECTED) {
        sl_router_each_pinned (self->router, endpoint, s_lost_pinned, self);
        sl_router_flush (self->router);
    }
}

//  A stage further on lost a stream (an instance holding it died).
static void
s_on_downstream (void *arg, const sl_msg_t *msg)
{
    ingest_t *self = arg;
    if (msg->type == SL_MSG_LOST) {
        sl_upcall_lost (self->upcall, msg->sid, msg->epoch, "lost_downstream");
        sl_router_flush (self->router);
    }
}

//  --------------------------------------------------------------------------
//  Jobs from the gateway

static void
s_on_msg (void *arg, const sl_msg_t *msg, sl_str_t peer)
{
    ingest_t *self = arg;
    switch (msg->type) {
        case SL_MSG_REQ:
            sl_upcall_request (self->upcall, msg, peer);
            if (self->sweep < 0 && sl_upcall_count (self->upcall))
                self->sweep = zloop_timer (sl_service_loop (self->service), INGEST_TICK_MS, 0, s_on_sweep, self);
            break;
        case SL_MSG_CANCEL: sl_upcall_cancel (self->upcall, msg); break;
        case SL_MSG_ACK:    sl_upcall_ack (self->upcall, msg, peer); break;
        default:            break;
    }
}

static void
s_flush (void *arg)
{
    sl_router_flush (((ingest_t *) arg)->router);
}

//  A drain waits for every stream's end to be acknowledged by its gateway
//  (until then its delta log may still be re-sent). What --drain-ms cuts
//  off cannot go on elsewhere (an upstream call cannot be resumed): the
//  gateways see this ingest gone and end those streams with an error.
static bool
s_drain_idle (void *arg)
{
    return sl_upcall_count (((ingest_t *) arg)->upcall) == 0;
}

//  A provider's credential source.
static sl_auth_t *
s_auth (void *arg, const sl_provider_t *provider)
{
    return sl_auths_get (((ingest_t *) arg)->auths, provider);
}

//  A credential source has news: the calls waiting for it ask again.
static void
s_authorized (void *arg)
{
    ingest_t *self = arg;
    if (self->upcall)
        sl_upcall_authorized (self->upcall);
}

static const char *
s_env (void *arg, const char *name)
{
    (void) arg;
    return getenv (name);
}

//  Google's credential source for a provider: a key file (the provider's
//  credentials_file, else GOOGLE_APPLICATION_CREDENTIALS), a given token
//  or the metadata server, fetched from the start. A key that cannot be
//  used is logged now, and the provider's calls fail with why rather than
//  go without credentials.
static sl_auth_t *
s_cloud_google (ingest_t *self, const sl_provider_t *provider, sl_auth_notify_fn *notify, void *notify_arg)
{
    sl_gcptoken_config_t config;
    sl_gcptoken_config_from_env (&config, provider->credentials_file);
    char text [300];
    sl_auth_t *source = sl_gcpauth_new (sl_service_loop (self->service), self->curlm, &config, NULL, notify,
                                        notify_arg, text, sizeof text);
    //  Where its tokens come from (a path or a host, never a token).
    if (source && config.kind == SL_GCPTOKEN_KEY_FILE)
        sl_log_info ("provider_credentials", "provider=%s source=key_file file=%s", provider->name, config.key_file);
    else
    if (source && config.kind == SL_GCPTOKEN_METADATA)
        sl_log_info ("provider_credentials", "provider=%s source=metadata host=%s", provider->name,
                     config.metadata_host);
    else
    if (source)
        sl_log_info ("provider_credentials", "provider=%s source=given variable=%s", provider->name,
                     SL_GCPTOKEN_TOKEN_ENV);
    sl_gcptoken_config_clear (&config);
    if (!source) {
        sl_log_error ("bad_credentials", "provider=%s: %s", provider->name, text);
        char refused [400];
        snprintf (refused, sizeof refused, "Google credentials: %s", text);
        source = sl_auth_failing_new (refused);
    }
    return source;
}

//  AWS's credential source for a provider: from the variables it names
//  (its own account's keys), else from the environment (sl_awscreds),
//  signing each attempt for the provider's region.
static sl_auth_t *
s_cloud_aws (ingest_t *self, const sl_provider_t *provider, sl_auth_notify_fn *notify, void *notify_arg)
{
    char text [320];
    if (!provider->region || !*provider->region) {
        snprintf (text, sizeof text, "provider '%s' has no region, which its SigV4 signature names", provider->name);
        return sl_auth_failing_new (text);
    }
    sl_awscreds_config_t config;
    bool named = provider->aws_access_key_id_env && *provider->aws_access_key_id_env;
    int rc = named ? sl_awscreds_config_from_vars (&config, provider->aws_access_key_id_env,
                                                   provider->aws_secret_access_key_env,
                                                   provider->aws_session_token_env, text, sizeof text)
                   : sl_awscreds_config_from_env (&config, provider->region, text, sizeof text);
    if (rc) {
        sl_log_error ("bad_credentials", "provider=%s: %s", provider->name, text);
        return sl_auth_failing_new (text);
    }
    //  Where its keys come from (variables' names, never a key).
    if (named)
        sl_log_info ("provider_credentials", "provider=%s source=named_keys variable=%s", provider->name,
                     provider->aws_access_key_id_env);
    sl_auth_t *source = sl_awsauth_new (sl_service_loop (self->service), self->curlm, &config, provider->region,
                                        NULL, notify, notify_arg);
    sl_awscreds_config_clear (&config);
    return source;
}

//  Entra ID's credential source for an Azure OpenAI provider: a client
//  secret or workload identity from the environment, fetched from the
//  start. Missing or partial variables fail the provider's calls naming
//  what to set.
static sl_auth_t *
s_cloud_azure (ingest_t *self, const sl_provider_t *provider, sl_auth_notify_fn *notify, void *notify_arg)
{
    char text [360];
    sl_aztoken_config_t config;
    if (sl_aztoken_config_from_env (&config, text, sizeof text)) {
        char refused [420];
        snprintf (refused, sizeof refused, "Entra ID credentials: %s", text);
        sl_log_error ("bad_credentials", "provider=%s: %s", provider->name, refused);
        return sl_auth_failing_new (refused);
    }
    sl_auth_t *source = sl_azauth_new (sl_service_loop (self->service), self->curlm, &config, NULL, notify,
                                       notify_arg, text, sizeof text);
    //  Where its tokens come from (ids and a path, never a secret).
    if (source)
        sl_log_info ("provider_credentials", "provider=%s source=%s tenant=%s client_id=%s authority=%s",
                     provider->name, config.kind == SL_AZTOKEN_SECRET ? "client_secret" : "workload_identity",
                     config.tenant, config.client_id, config.authority);
    sl_aztoken_config_clear (&config);
    if (!source) {
        char refused [420];
        snprintf (refused, sizeof refused, "Entra ID credentials: %s", text);
        sl_log_error ("bad_credentials", "provider=%s: %s", provider->name, refused);
        source = sl_auth_failing_new (refused);
    }
    return source;
}

//  A cloud's own credential source for a provider; NULL for a kind no
//  cloud here serves (sl_auths then says what to set). Every refusal is
//  a failing source that says why.
static sl_auth_t *
s_cloud (void *arg, const sl_provider_t *provider, int kind, sl_auth_notify_fn *notify, void *notify_arg,
         const char **why)
{
    ingest_t *self = arg;
    *why = NULL;
    if (kind == SL_AUTH_GOOGLE)
        return s_cloud_google (self, provider, notify, notify_arg);
    if (kind == SL_AUTH_AWS)
        return s_cloud_aws (self, provider, notify, notify_arg);
    if (kind == SL_AUTH_AZURE)
        return s_cloud_azure (self, provider, notify, notify_arg);
    return NULL;
}

ingest_t *
ingest_new (sl_service_t *service, const ingest_config_t *config)
{
    ingest_t *self = sl_xcalloc (1, sizeof *self);
    self->config = *config;
    self->service = service;
    self->sweep = -1;
    self->resume = -1;
    self->inline_timer = -1;
    zloop_t *loop = sl_service_loop (service);
    self->curlm = sl_curlm_new (loop);
    sl_curlm_set_after (self->curlm, s_flush, self);
    self->router = sl_router_new (loop, sl_service_name (service), sl_service_incarnation (service));
    sl_metrics_t *m = sl_service_metrics (service);
    sl_router_set_metrics (self->router, m, "aggregator");
    sl_service_watch_hop (service, self->router);
    static const sl_upcall_ops_t ops = {
        .send = s_send,
        .encoded = s_encoded,
        .reply = s_reply,
        .start = s_start,
        .stop = s_stop,
        .resume = s_resume_transfer,
        .status = s_status,
        .uploaded = s_uploaded,
        .congested = s_congested,
        .clock = s_clock,
        .wall = s_wall,
        .auth = s_auth,
        .later = s_later
    };
    const sl_auths_config_t auths = {
        .env = s_env, .cloud = s_cloud, .arg = self, .notify = s_authorized, .notify_arg = self
    };
    self->auths = sl_auths_new (config->upcall.routes, &auths);
    self->upcall = sl_upcall_new (&config->upcall, &ops, self, m);
    if (!self->upcall) {
        sl_log_error ("bad_option", "--eject-failures, --eject-window-ms or --eject-cooldown-ms is out of range");
        ingest_destroy (&self);
        return NULL;
    }
    sl_router_on_peer (self->router, s_on_aggregator_event, self);
    sl_router_on_message (self->router, s_on_downstream, self);
    if (sl_router_set_bus (self->router, sl_service_bus (service), "aggregator")
    ||  sl_router_connect (self->router, config->next)) {
        ingest_destroy (&self);
        return NULL;
    }
    self->stage = sl_stage_new (service, config->bind, s_on_msg, s_flush, self);
    if (!self->stage) {
        ingest_destroy (&self);
        return NULL;
    }
    sl_stage_drain_with (self->stage, self->router, s_drain_idle, self);
    return self;
}

void
ingest_destroy (ingest_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ingest_t *self = *self_p;
    sl_upcall_destroy (&self->upcall);
    sl_auths_destroy (&self->auths);
    if (self->sweep >= 0)
        zloop_timer_end (sl_service_loop (self->service), self->sweep);
    if (self->resume >= 0)
        zloop_timer_end (sl_service_loop (self->service), self->resume);
    if (self->inline_timer >= 0)
        zloop_timer_end (sl_service_loop (self->service), self->inline_timer);
    sl_buf_free (&self->inline_due);
    sl_stage_destroy (&self->stage);
    sl_curlm_destroy (&self->curlm);
    sl_router_destroy (&self->router);
    free (self);
    *self_p = NULL;
}
