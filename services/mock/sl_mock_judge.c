/*  sl_mock_judge.c - scripted LLM judges for tests (see sl_mock_judge.h).
    A judge answers in the format of the provider whose path it was asked
    at: that provider module's whole answer and error body
    (sl_mock_provider.h).
*/
#include "services/mock/sl_mock_judge.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "proto/sl_msg.h"
#include "services/mock/sl_mock_decide.h"
#include "services/mock/sl_mock_provider.h"

#define MOCK_JUDGE_PREFIX "judge-"
#define MOCK_JUDGE_DEFAULT_DIALECT SL_DIALECT_OPENAI   //  the format of a path no judge's provider has
#define MOCK_JUDGE_MODEL_MAX 256        //  longest model a path may name

const char *sl_mock_judge_scenarios [] = {
    "judge-allow", "judge-block", "judge-slow", "judge-garbage", "judge-error", NULL
};

//  The provider a path asks, when it can answer as a judge (a whole
//  answer); NULL otherwise.
static const sl_mock_provider_t *
s_judge_of (const char *path)
{
    char model [MOCK_JUDGE_MODEL_MAX];
    const sl_mock_provider_t *p = sl_mock_provider_of_path (path, model, sizeof model);
    return p && p->whole ? p : NULL;
}

//  The model of a request body, or NULL (result owned by root).
static const char *
s_model (json_t *root)
{
    json_t *model = json_object_get (root, "model");
    return json_is_string (model) ? json_string_value (model) : NULL;
}

bool
sl_mock_judge_wants (const char *path, sl_str_t body)
{
    if (!s_judge_of (path))
        return false;
    //  Cheap first: most requests to the mock are not for a judge.
    if (!body.ptr || !memmem (body.ptr, body.len, MOCK_JUDGE_PREFIX, strlen (MOCK_JUDGE_PREFIX)))
        return false;
    json_t *root = json_loadb (body.ptr, body.len, 0, NULL);
    const char *model = s_model (root);
    bool wants = model && strncmp (model, MOCK_JUDGE_PREFIX, strlen (MOCK_JUDGE_PREFIX)) == 0;
    json_decref (root);
    return wants;
}

long
sl_mock_judge_scenario (const char *name, char *kind, size_t size)
{
    const char *dash = strrchr (name, '-');
    long delay_ms = -1;
    size_t n = strlen (name);
    if (dash && dash [1] && strspn (dash + 1, "0123456789") == strlen (dash + 1)) {
        delay_ms = strtol (dash + 1, NULL, 10);
        n = (size_t) (dash - name);
    }
    if (n >= size)
        n = size - 1;
    memcpy (kind, name, n);
    kind [n] = 0;
    if (delay_ms < 0)
        delay_ms = strcmp (kind, "slow") == 0 ? SL_MOCK_JUDGE_SLOW_MS : 0;
    return delay_ms > SL_MOCK_JUDGE_MAX_DELAY_MS ? SL_MOCK_JUDGE_MAX_DELAY_MS : delay_ms;
}

void
sl_mock_judge_answer (const char *path, sl_str_t body, sl_mock_judge_reply_t *out)
{
    memset (out, 0, sizeof *out);
    const sl_mock_provider_t *p = s_judge_of (path);
    if (!p)
        p = sl_mock_provider_get (MOCK_JUDGE_DEFAULT_DIALECT);
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, 0, NULL);
    const char *model = s_model (root);
    if (!model || strncmp (model, MOCK_JUDGE_PREFIX, strlen (MOCK_JUDGE_PREFIX)) != 0) {
        out->status = 400;
        p->render->error_body (400, "invalid_request_error", "the body must be JSON with a judge-* model", &out->body);
        json_decref (root);
        return;
    }
    char kind [32];
    out->delay_ms = sl_mock_judge_scenario (model + strlen (MOCK_JUDGE_PREFIX), kind, sizeof kind);
    out->status = 200;
    if (strcmp (kind, "allow") == 0 || strcmp (kind, "slow") == 0)
        p->whole (model, "{\"probability\": 0.02, \"explanation\": \"The mock judge sees "
                         "nothing wrong with this call.\"}", &out->body);
    else
    if (strcmp (kind, "block") == 0)
        p->whole (model, "{\"probability\": 0.97, \"explanation\": \"The mock judge "
                         "rejects this call.\"}", &out->body);
    else
    if (strcmp (kind, "garbage") == 0)
        p->whole (model, "Looks fine to me, probably. Let me know if you need "
                         "anything else!", &out->body);
    else
    if (strcmp (kind, "error") == 0) {
        out->status = 500;
        p->render->error_body (500, p->render->failed, "The mock judge failed.", &out->body);
    }
    else {
        out->status = 404;
        out->delay_ms = 0;
        p->render->error_body (404, "not_found_error", "no such mock judge (try judge-allow, judge-block, "
                               "judge-slow, judge-garbage or judge-error)", &out->body);
    }
    json_decref (root);
}

void
sl_mock_judge_reply_clear (sl_mock_judge_reply_t *self)
{
    sl_buf_free (&self->body);
    memset (self, 0, sizeof *self);
}

//  --------------------------------------------------------------------------
//  Serving

typedef struct _s_pending_t {
    sl_mock_judge_t *owner;
    sl_httpd_t *httpd;
    sl_http_req_t *req;
    sl_mock_judge_reply_t reply;
    int timer;
    struct _s_pending_t *prev, *next;
} s_pending_t;

struct _sl_mock_judge_t {
    zloop_t *loop;
    s_pending_t *pending;               //  replies waiting for their delay
};

sl_mock_judge_t *
sl_mock_judge_new (zloop_t *loop)
{
    sl_mock_judge_t *self = sl_xcalloc (1, sizeof *self);
    self->loop = loop;
    return self;
}

static void
s_forget (sl_mock_judge_t *self, s_pending_t *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        self->pending = p->next;
    if (p->next)
        p->next->prev = p->prev;
    sl_mock_judge_reply_clear (&p->reply);
    free (p);
}

void
sl_mock_judge_destroy (sl_mock_judge_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_mock_judge_t *self = *self_p;
    while (self->pending) {
        zloop_timer_end (self->loop, self->pending->timer);
        s_forget (self, self->pending);
    }
    free (self);
    *self_p = NULL;
}

static void
s_respond (sl_http_req_t *req, const sl_mock_judge_reply_t *reply)
{
    if (reply->cache_control)
        sl_http_add_header (req, "Cache-Control", reply->cache_control);
    sl_http_respond (req, reply->status, reply->content_type ? reply->content_type : "application/json",
                     reply->body.data, reply->body.len);
}

static int
s_on_delay (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_pending_t *p = arg;
    sl_httpd_t *httpd = p->httpd;
    s_respond (p->req, &p->reply);
    s_forget (p->owner, p);
    sl_httpd_run (httpd);
    return 0;
}

bool
sl_mock_judge_handle (sl_mock_judge_t *self, sl_httpd_t *httpd, sl_http_req_t *req)
{
    bool decide = sl_mock_decide_wants (sl_http_req_path (req));
    if (!decide && !sl_mock_judge_wants (sl_http_req_path (req), sl_http_req_body (req)))
        return false;
    s_pending_t *p = sl_xcalloc (1, sizeof *p);
    if (decide)
        sl_mock_decide_answer (sl_http_req_path (req), sl_http_req_body (req), &p->reply);
    else
        sl_mock_judge_answer (sl_http_req_path (req), sl_http_req_body (req), &p->reply);
    if (p->reply.delay_ms == 0) {
        s_respond (req, &p->reply);
        sl_mock_judge_reply_clear (&p->reply);
        free (p);
        return true;
    }
    p->owner = self;
    p->httpd = httpd;
    p->req = req;
    p->timer = zloop_timer (self->loop, (size_t) p->reply.delay_ms, 1, s_on_delay, p);
    p->next = self->pending;
    if (self->pending)
        self->pending->prev = p;
    self->pending = p;
    return true;
}

void
sl_mock_judge_closed (sl_mock_judge_t *self, sl_http_req_t *req)
{
    for (s_pending_t *p = self->pending; p; p = p->next)
        if (p->req == req) {
            zloop_timer_end (self->loop, p->timer);
            s_forget (self, p);
            return;
        }
}

