/*  sl_zap.c - the ZAP handler: decision table and REP socket (see sl_zap.h). */
#include "common/bus/sl_zap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"
#include "common/base/sl_ratelimit.h"

#define SL_ZAP_MAX_DOMAINS 8            //  domains one process serves (the emitter: 3)
#define SL_ZAP_MAX_DRAIN 64             //  requests answered per wake-up
#define SL_ZAP_LOG_BURST 5              //  refusals logged per window and domain
#define SL_ZAP_LOG_WINDOW_MS 10000

//  The whole access rule of the bus: which role may connect to which domain.
typedef struct {
    const char *domain;
    const char *role;
    sl_access_t min_access;             //  taps: the least access a key needs
    const char *also;                   //  a second role admitted, or NULL
} s_rule_t;

static const s_rule_t s_rules [] = {
    { "gateway",    "emitter",    SL_ACCESS_NONE, NULL },
    { "ingest",     "gateway",    SL_ACCESS_NONE, NULL },
    { "aggregator", "ingest",     SL_ACCESS_NONE, NULL },
    { "judge",      "aggregator", SL_ACCESS_NONE, NULL },
    { "emitter",    "judge",      SL_ACCESS_NONE, NULL },
    { "tap",        "tap",        SL_ACCESS_FULL, NULL },
    { "tap-meta",   "tap",        SL_ACCESS_METADATA, NULL },
    { "audit",      "audit",      SL_ACCESS_NONE, NULL },
    { "approvals",  "gateway",    SL_ACCESS_NONE, "audit" },
};

static const s_rule_t *
s_rule (const char *domain)
{
    for (size_t i = 0; domain && i < sizeof s_rules / sizeof s_rules [0]; i++)
        if (strcmp (s_rules [i].domain, domain) == 0)
            return &s_rules [i];
    return NULL;
}

bool
sl_zap_domain_known (const char *domain)
{
    return s_rule (domain) != NULL;
}

const char *
sl_zap_domain_role (const char *domain)
{
    const s_rule_t *rule = s_rule (domain);
    return rule ? rule->role : NULL;
}

bool
sl_zap_domain_admits (const char *domain, const char *role)
{
    const s_rule_t *rule = s_rule (domain);
    return rule && role && (strcmp (rule->role, role) == 0 || (rule->also && strcmp (rule->also, role) == 0));
}

static void
s_verdict (sl_zap_verdict_t *v, int status, const char *text)
{
    v->status = status;
    v->text = text;
    v->user_id = "";
    v->unknown_key = false;
}

void
sl_zap_decide (sl_keys_t *keys, const char *domain, sl_str_t mechanism,
               const uint8_t *key, size_t key_len, sl_zap_verdict_t *v)
{
    const s_rule_t *rule = s_rule (domain);
    if (!rule) {
        s_verdict (v, 400, "no such domain");
        return;
    }
    if (!sl_str_eq (mechanism, "CURVE")) {
        s_verdict (v, 400, "not CURVE");
        return;
    }
    if (!key || key_len != SL_KEY_SIZE) {
        s_verdict (v, 400, "no CURVE key");
        return;
    }
    const sl_key_t *k = sl_keys_find (keys, key);
    if (!k) {
        s_verdict (v, 400, "unknown key");
        v->unknown_key = true;
        return;
    }
    if (!sl_zap_domain_admits (domain, k->role)) {
        s_verdict (v, 400, "a key of another role");
        return;
    }
    if (k->access < rule->min_access) {
        s_verdict (v, 400, "a metadata-only tap key");
        return;
    }
    s_verdict (v, 200, "OK");
    v->user_id = k->name;
}

void
sl_zap_handle (sl_keys_t *keys, const sl_str_t *frames, size_t count,
               sl_zap_verdict_t *v, char *domain, size_t domain_size)
{
    domain [0] = 0;
    if (count >= 3 && frames [2].ptr)
        snprintf (domain, domain_size, "%.*s", (int) frames [2].len, frames [2].ptr);
    //  A NUL inside the domain frame would make the copy name another domain.
    if (count >= 3 && frames [2].ptr && memchr (frames [2].ptr, 0, frames [2].len))
        domain [0] = 0;
    if (count < 6) {
        s_verdict (v, 500, "malformed request");
        return;
    }
    if (!sl_str_eq (frames [0], "1.0")) {
        s_verdict (v, 500, "unknown ZAP version");
        return;
    }
    sl_zap_decide (keys, domain, frames [5], count > 6 ? (const uint8_t *) frames [6].ptr : NULL,
                   count > 6 ? frames [6].len : 0, v);
}

//  --------------------------------------------------------------------------
//  The REP socket

typedef struct {
    char domain [16];
    sl_counter_t *refused;
    sl_counter_t *allowed;
    sl_ratelimit_t log;
} s_domain_t;

struct _sl_zap_t {
    zloop_t *loop;
    zsock_t *rep;
    sl_keys_t *keys;
    sl_metrics_t *metrics;
    s_domain_t domains [SL_ZAP_MAX_DOMAINS + 1];    //  the last one: anything else
    size_t domain_count;
    sl_zap_refresh_fn *refresh;
    void *refresh_arg;
};

static s_domain_t *
s_domain (sl_zap_t *self, const char *domain)
{
    for (size_t i = 0; i < self->domain_count; i++)
        if (strcmp (self->domains [i].domain, domain) == 0)
            return &self->domains [i];
    return &self->domains [SL_ZAP_MAX_DOMAINS];
}

static void
s_register (sl_zap_t *self, s_domain_t *d, const char *domain)
{
    char labels [64];
    snprintf (d->domain, sizeof d->domain, "%s", domain);
    snprintf (labels, sizeof labels, "domain=\"%s\"", domain);
    d->refused = sl_metrics_counter (self->metrics, "sluice_zap_refused_total", labels,
                                     "Bus connections refused by ZAP (a key not allowed on that socket)");
    d->allowed = sl_metrics_counter (self->metrics, "sluice_zap_allowed_total", labels,
                                     "Bus connections ZAP allowed");
    d->log = (sl_ratelimit_t) SL_RATELIMIT_INIT (SL_ZAP_LOG_BURST, SL_ZAP_LOG_WINDOW_MS);
}

void
sl_zap_serve_domain (sl_zap_t *self, const char *domain)
{
    if (s_domain (self, domain) != &self->domains [SL_ZAP_MAX_DOMAINS])
        return;
    assert (self->domain_count < SL_ZAP_MAX_DOMAINS);
    s_register (self, &self->domains [self->domain_count++], domain);
}

static void
s_send_str (void *sock, const char *s, int more)
{
    zmq_send (sock, s, strlen (s), more);
}

static void
s_answer (sl_zap_t *self, zmq_msg_t *parts, size_t count)
{
    sl_str_t frames [SL_ZAP_MAX_FRAMES];
    for (size_t i = 0; i < count; i++)
        frames [i] = sl_str_n (zmq_msg_data (&parts [i]), zmq_msg_size (&parts [i]));
    sl_zap_verdict_t v;
    char domain [32];
    //  Keys removed or rotated stop working, and keys added start, as soon
    //  as the directory is read again.
    if (self->refresh)
        self->refresh (self->refresh_arg, false);
    sl_zap_handle (self->keys, frames, count, &v, domain, sizeof domain);
    if (v.unknown_key && self->refresh && self->refresh (self->refresh_arg, true))
        sl_zap_handle (self->keys, frames, count, &v, domain, sizeof domain);
    void *sock = zsock_resolve (self->rep);
    zmq_send (sock, "1.0", 3, ZMQ_SNDMORE);
    if (count >= 2)
        zmq_send (sock, frames [1].ptr, frames [1].len, ZMQ_SNDMORE);
    else
        zmq_send (sock, "", 0, ZMQ_SNDMORE);
    char code [8];
    snprintf (code, sizeof code, "%d", v.status);
    s_send_str (sock, code, ZMQ_SNDMORE);
    s_send_str (sock, v.text, ZMQ_SNDMORE);
    s_send_str (sock, v.user_id, ZMQ_SNDMORE);
    zmq_send (sock, "", 0, 0);          //  no metadata

    s_domain_t *d = s_domain (self, domain);
    if (v.status == 200) {
        sl_counter_inc (d->allowed);
        sl_log_info ("zap_allowed", "domain=%s key=%s", domain, v.user_id);
        return;
    }
    sl_counter_inc (d->refused);
    uint32_t held;
    if (sl_ratelimit_allow (&d->log, zclock_mono (), &held)) {
        char address [64] = "";
        if (count >= 4)
            snprintf (address, sizeof address, "%.*s", (int) frames [3].len, frames [3].ptr);
        char key [SL_KEY_TXT_SIZE] = "-";
        if (count >= 7 && frames [6].len == SL_KEY_SIZE)
            zmq_z85_encode (key, (const uint8_t *) frames [6].ptr, SL_KEY_SIZE);
        sl_log_warn ("zap_refused", "domain=%s address=%s key=%s reason=%s (and %u more not logged)",
                     d->domain [0] ? d->domain : "unknown", address, key, v.text, held);
    }
}

static int
s_on_request (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    sl_zap_t *self = arg;
    void *sock = zsock_resolve (reader);
    for (int n = 0; n < SL_ZAP_MAX_DRAIN; n++) {
        zmq_msg_t parts [SL_ZAP_MAX_FRAMES];
        size_t count = 0;
        zmq_msg_init (&parts [0]);
        if (zmq_msg_recv (&parts [0], sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&parts [0]);
            break;
        }
        count = 1;
        bool more = zmq_msg_more (&parts [0]);
        //  Parts of one message arrive together: these reads never block.
        //  Frames past what any request has are read and dropped.
        while (more) {
            zmq_msg_t extra;
            zmq_msg_t *part = count < SL_ZAP_MAX_FRAMES ? &parts [count] : &extra;
            zmq_msg_init (part);
            if (zmq_msg_recv (part, sock, 0) < 0) {
                zmq_msg_close (part);
                break;
            }
            more = zmq_msg_more (part);
            if (part == &extra)
                zmq_msg_close (&extra);
            else
                count++;
        }
        s_answer (self, parts, count);
        for (size_t i = 0; i < count; i++)
            zmq_msg_close (&parts [i]);
    }
    return 0;
}

sl_zap_t *
sl_zap_new (zloop_t *loop, sl_keys_t *keys, sl_metrics_t *metrics)
{
    zsock_t *rep = zsock_new (ZMQ_REP);
    if (!rep || zsock_bind (rep, SL_ZAP_ENDPOINT) < 0) {
        sl_log_error ("zap_failed", "cannot bind %s: %s", SL_ZAP_ENDPOINT, zmq_strerror (zmq_errno ()));
        zsock_destroy (&rep);
        return NULL;
    }
    sl_zap_t *self = sl_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->rep = rep;
    self->keys = keys;
    self->metrics = metrics;
    s_register (self, &self->domains [SL_ZAP_MAX_DOMAINS], "unknown");
    if (loop)
        zloop_reader (loop, rep, s_on_request, self);
    return self;
}

void
sl_zap_destroy (sl_zap_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_zap_t *self = *self_p;
    if (self->loop)
        zloop_reader_end (self->loop, self->rep);
    zsock_destroy (&self->rep);
    free (self);
    *self_p = NULL;
}

void
sl_zap_on_refresh (sl_zap_t *self, sl_zap_refresh_fn *fn, void *arg)
{
    self->refresh = fn;
    self->refresh_arg = arg;
}
