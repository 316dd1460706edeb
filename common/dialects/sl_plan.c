/*  sl_plan.c - a request's providers in the order to try them, each with
    its body (see sl_plan.h). */
#include "common/dialects/sl_plan.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_req.h"
#include "proto/sl_msg.h"

//  The body's top-level "model", when it has one, set to model.
static int
s_set_model (sl_buf_t *body, sl_str_t model)
{
    sl_str_t value;
    if (sl_json_find (sl_buf_str (body), "model", &value) != 1)
        return 0;
    sl_buf_t json = { 0 }, out = { 0 };
    sl_json_put_sl (&json, model);
    const sl_patch_t patch = { "model", sl_buf_cstr (&json) };
    int rc = sl_job_patch (sl_buf_str (body), &patch, 1, &out);
    sl_buf_free (&json);
    if (rc == 0) {
        sl_buf_free (body);
        *body = out;
    }
    else
        sl_buf_free (&out);
    return rc;
}

//  The body of one step: dialect d, the model's id there. 0 ok, -1 when
//  the request cannot go to d.
static int
s_body (sl_job_t *self, int d, sl_str_t model, sl_buf_t *out)
{
    const sl_dialect_t *to = sl_dialect_get (d);
    sl_req_t *req = self->req;
    if (!to || !req)
        return -1;
    int rc = 0;
    if (d == self->upstream_dialect)
        sl_buf_append_str (out, sl_buf_str (&self->upstream_body));
    else
    if (d == self->client_dialect) {
        char *text = json_dumps (req->root, SL_REQ_JSON_FLAGS);
        rc = text ? to->forward (sl_str (text), req, out) : -1;
        free (text);
    }
    else {
        //  Rendered for its model: the renderers write the request's.
        sl_xlate_t x = { .from = sl_dialect_name (self->client_dialect), .to = to->name };
        sl_str_t client_model = req->model;
        req->model = model;
        rc = sl_req_mattering (req) ? -1 : to->render (req, &x, out);
        req->model = client_model;
        sl_xlate_clear (&x);
        return rc;
    }
    if (rc == 0 && !sl_str_eq (model, sl_buf_cstr (&self->model)))
        rc = s_set_model (out, model);
    return rc;
}

int
sl_plan_job (sl_job_t *self, sl_providers_t *routes, uint32_t draw, sl_buf_t *fo, size_t *left_out)
{
    if (left_out)
        *left_out = 0;
    if (!routes || !self->req)
        return 0;
    sl_plan_entry_t plan [SL_ROUTE_TARGETS_MAX];
    size_t count = sl_providers_plan (routes, sl_buf_str (&self->model), self->client_dialect, draw, plan,
                                      SL_ROUTE_TARGETS_MAX);
    bool same_model = count && sl_str_eq (plan [0].model, sl_buf_cstr (&self->model));
    if (count == 0 || (count == 1 && same_model && self->provider
                       && strcmp (plan [0].provider->name, self->provider) == 0))
        return 0;                       //  the job says it all
    sl_buf_t bodies [SL_ROUTE_TARGETS_MAX] = { { 0 } };
    size_t kept [SL_ROUTE_TARGETS_MAX], n = 0;
    for (size_t i = 0; i < count; i++) {
        if (s_body (self, plan [i].provider->dialect, plan [i].model, &bodies [i]) == 0)
            kept [n++] = i;
        else
        if (left_out)
            (*left_out)++;
    }
    int rc = 0;
    if (n == 0) {
        self->status = 400;
        self->error_type = "invalid_request_error";
        sl_buf_reset (&self->error_message);
        sl_buf_puts (&self->error_message, "no provider of the model's route can take this request");
        rc = -1;
    }
    else {
        //  The job is the first step; the steps after it carry their own
        //  bodies (absent: the same as the job's).
        const sl_plan_entry_t *first = &plan [kept [0]];
        sl_buf_t *first_body = &bodies [kept [0]];
        self->provider = first->provider->name;
        self->upstream_dialect = first->provider->dialect;
        sl_buf_free (&self->upstream_body);
        self->upstream_body = *first_body;
        *first_body = (sl_buf_t) { 0 };
        for (size_t k = 0; k < n; k++) {
            const sl_plan_entry_t *e = &plan [kept [k]];
            sl_msg_t m;
            sl_msg_init (&m, SL_MSG_STEP);
            m.provider = sl_str (e->provider->name);
            m.upstream_dialect = (uint8_t) e->provider->dialect;
            m.model = e->model;
            sl_buf_t *body = &bodies [kept [k]];
            if (k > 0 && !(body->len == self->upstream_body.len
                           && memcmp (body->data, self->upstream_body.data, body->len) == 0))
                m.body = sl_buf_str (body);
            sl_msg_encode (&m, fo);
        }
    }
    for (size_t i = 0; i < count; i++)
        sl_buf_free (&bodies [i]);
    return rc;
}

int
sl_plan_read (sl_str_t fo, sl_plan_step_t *steps, size_t room)
{
    sl_codec_t *codec = sl_codec_new ();
    size_t offset = 0, n = 0;
    int rc = 0;
    sl_msg_t m;
    while (offset < fo.len) {
        if (sl_codec_decode (codec, (const uint8_t *) fo.ptr, fo.len, &offset, &m) != 0
        ||  m.type != SL_MSG_STEP || !m.provider.len || n == room) {
            rc = -1;
            break;
        }
        steps [n++] = (sl_plan_step_t) { m.provider, m.upstream_dialect, m.model, m.body };
    }
    sl_codec_destroy (&codec);
    return rc ? -1 : (int) n;
}
