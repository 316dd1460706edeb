/*  sl_plan.h - the providers a request may go to, as its job carries them.

    A pure library (the gateway's): a prepared request (sl_job.h) and the
    providers table give the request's plan (sl_providers_plan: its
    route's providers in the order to try them, each with the model's id
    there), and for each provider the upstream body in its dialect for
    its model:

      - of the dialect the job was prepared for: that body (the client's
        own bytes when it is the client's dialect);
      - of the client's dialect otherwise: the client's request as parsed
        (and edited by the request policy), forwarded;
      - of another dialect: the normalized request rendered in it. A
        provider the request cannot be rendered for (it needs a feature
        only its own dialect has) is left out of the plan.

    A model's id at a provider replaces the body's top-level "model"
    where the dialect's body has one (a dialect that names the model in
    the URL, Gemini, has none: the ingest puts the provider's model in
    the URL).

    When the plan is more than the job already says (more than one
    provider, or its provider takes another model id), the job becomes
    the plan's first step (its provider, upstream dialect and body) and
    the plan is written as the job's "fo" field (proto/PROTOCOL.md): one
    encoded STEP message per step, with prov, ud, model and body (absent:
    the job's own body).
*/
#ifndef SL_PLAN_H
#define SL_PLAN_H

#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_job.h"
#include "common/dialects/sl_providers.h"

//  Plan a prepared job (routes: the providers table; draw: a random
//  number for weighted routes). fo gets the "fo" field (empty when the
//  job alone says it all); *left_out counts the providers the request
//  could not be rendered for (may be NULL). 0 ok; -1 when no step is
//  left (the job's refusal is then filled).
int sl_plan_job (sl_job_t *self, sl_providers_t *routes, uint32_t draw, sl_buf_t *fo, size_t *left_out);

//  One step of a job's "fo" field, as the ingest reads it back.
typedef struct {
    sl_str_t provider;
    int dialect;
    sl_str_t model;
    sl_str_t body;                      //  SL_STR_NULL: the job's own body
} sl_plan_step_t;

//  Read a "fo" field into steps (room of them; strings borrowed from
//  fo). The count read, or -1 when it is malformed or holds more than
//  room steps.
int sl_plan_read (sl_str_t fo, sl_plan_step_t *steps, size_t room);

#endif
