/*  sl_webhook.c - the webhook's queue and backoff (see sl_webhook.h). */
#include "common/http/sl_webhook.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

struct _sl_webhook_event_t {
    sl_webhook_event_t *next;
    char *body;
    size_t size;
    int attempts;                       //  tries made
    int64_t due_ms;
    bool inflight;
};

struct _sl_webhook_t {
    sl_webhook_opts_t opts;
    sl_webhook_event_t *head;           //  in order of arrival
    sl_webhook_event_t *tail;
    size_t count;
    size_t inflight;
    sl_webhook_stats_t stats;
};

sl_webhook_t *
sl_webhook_new (const sl_webhook_opts_t *opts)
{
    sl_webhook_t *self = sl_xcalloc (1, sizeof *self);
    self->opts = *opts;
    if (self->opts.max_queue == 0)
        self->opts.max_queue = 1000;
    if (self->opts.max_attempts <= 0)
        self->opts.max_attempts = 1;
    if (self->opts.concurrency <= 0)
        self->opts.concurrency = 1;
    if (self->opts.base_ms <= 0)
        self->opts.base_ms = 500;
    if (self->opts.max_ms < self->opts.base_ms)
        self->opts.max_ms = self->opts.base_ms;
    return self;
}

static void
s_unlink (sl_webhook_t *self, sl_webhook_event_t *event)
{
    sl_webhook_event_t **p = &self->head, *prev = NULL;
    while (*p && *p != event) {
        prev = *p;
        p = &(*p)->next;
    }
    if (!*p)
        return;
    *p = event->next;
    if (self->tail == event)
        self->tail = prev;
    self->count--;
}

void
sl_webhook_destroy (sl_webhook_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_webhook_t *self = *self_p;
    while (self->head) {
        sl_webhook_event_t *e = self->head;
        self->head = e->next;
        free (e->body);
        free (e);
    }
    free (self);
    *self_p = NULL;
}

int
sl_webhook_push (sl_webhook_t *self, sl_str_t body, int64_t now_ms)
{
    if (self->count >= self->opts.max_queue) {
        self->stats.dropped++;
        return -1;
    }
    sl_webhook_event_t *e = sl_xcalloc (1, sizeof *e);
    e->body = sl_xstrndup (body.ptr ? body.ptr : "", body.len);
    e->size = body.len;
    e->due_ms = now_ms;
    if (self->tail)
        self->tail->next = e;
    else
        self->head = e;
    self->tail = e;
    self->count++;
    self->stats.queued++;
    return 0;
}

sl_webhook_event_t *
sl_webhook_next (sl_webhook_t *self, int64_t now_ms)
{
    if (self->inflight >= (size_t) self->opts.concurrency)
        return NULL;
    sl_webhook_event_t *best = NULL;
    for (sl_webhook_event_t *e = self->head; e; e = e->next)
        if (!e->inflight && e->due_ms <= now_ms && (!best || e->due_ms < best->due_ms))
            best = e;
    if (best) {
        best->inflight = true;
        best->attempts++;
        self->inflight++;
    }
    return best;
}

sl_str_t
sl_webhook_body (const sl_webhook_event_t *event)
{
    return sl_str_n (event->body, event->size);
}

int
sl_webhook_attempt (const sl_webhook_event_t *event)
{
    return event->attempts;
}

int64_t
sl_webhook_backoff (const sl_webhook_opts_t *opts, int failed)
{
    int64_t wait = opts->base_ms;
    for (int i = 1; i < failed && wait < opts->max_ms; i++)
        wait *= 2;
    return wait < opts->max_ms ? wait : opts->max_ms;
}

bool
sl_webhook_done (sl_webhook_t *self, sl_webhook_event_t *event, bool ok, int64_t retry_after_ms, int64_t now_ms)
{
    event->inflight = false;
    self->inflight--;
    if (ok) {
        self->stats.sent++;
        s_unlink (self, event);
        free (event->body);
        free (event);
        return false;
    }
    self->stats.failures++;
    if (event->attempts >= self->opts.max_attempts) {
        self->stats.given_up++;
        s_unlink (self, event);
        free (event->body);
        free (event);
        return false;
    }
    int64_t wait = sl_webhook_backoff (&self->opts, event->attempts);
    if (retry_after_ms > 0)
        wait = retry_after_ms < self->opts.max_ms ? retry_after_ms : self->opts.max_ms;
    event->due_ms = now_ms + wait;
    return true;
}

int64_t
sl_webhook_next_due (sl_webhook_t *self)
{
    int64_t due = -1;
    for (sl_webhook_event_t *e = self->head; e; e = e->next)
        if (!e->inflight && (due < 0 || e->due_ms < due))
            due = e->due_ms;
    return due;
}

size_t sl_webhook_queued (sl_webhook_t *self) { return self->count; }
const sl_webhook_stats_t *sl_webhook_stats (sl_webhook_t *self) { return &self->stats; }

void
sl_webhook_sign (const char *secret, int64_t timestamp, sl_str_t body, char out [SL_WEBHOOK_SIGNATURE_HEX])
{
    crypto_auth_hmacsha256_state state;
    unsigned char mac [crypto_auth_hmacsha256_BYTES];
    char stamp [32];
    int n = snprintf (stamp, sizeof stamp, "%lld.", (long long) timestamp);
    crypto_auth_hmacsha256_init (&state, (const unsigned char *) secret, strlen (secret));
    crypto_auth_hmacsha256_update (&state, (const unsigned char *) stamp, (unsigned long long) n);
    crypto_auth_hmacsha256_update (&state, (const unsigned char *) body.ptr, body.len);
    crypto_auth_hmacsha256_final (&state, mac);
    sodium_bin2hex (out, SL_WEBHOOK_SIGNATURE_HEX, mac, sizeof mac);
}
