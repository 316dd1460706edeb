/*  sl_limits_redis.c - limits counted in Redis (see sl_limits_redis.h). */
#include "common/identity/sl_limits_redis.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"

#define S_DEFAULT_PORT 6379
#define S_TEXT_MAX 256
#define S_ARGS_MAX (3 + SL_LIMITS_COUNTERS_MAX * 5)
#define S_NUM 24                        //  bytes of a number's text

//  Check every counter; add to them only when all have room. KEYS: the
//  counters; ARGV: now, the stream, the lease, then per counter its kind
//  ("conc" or not), limit, add and expiry. 0 admitted, else the 1-based
//  index of the first counter without room.
static const char s_admit_script [] =
    "local now = tonumber(ARGV[1]) local stream = ARGV[2] local lease = tonumber(ARGV[3])\n"
    "for i, key in ipairs(KEYS) do\n"
    "  local b = 3 + (i - 1) * 4\n"
    "  local limit, add = tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3])\n"
    "  local v\n"
    "  if ARGV[b + 1] == 'conc' then\n"
    "    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)\n"
    "    v = redis.call('ZCARD', key)\n"
    "  else\n"
    "    v = tonumber(redis.call('GET', key) or '0')\n"
    "  end\n"
    "  if (add > 0 and v + add > limit) or (add == 0 and v >= limit) then return i end\n"
    "end\n"
    "for i, key in ipairs(KEYS) do\n"
    "  local b = 3 + (i - 1) * 4\n"
    "  local add, exp = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])\n"
    "  if add > 0 then\n"
    "    if ARGV[b + 1] == 'conc' then\n"
    "      redis.call('ZADD', key, now + lease, stream)\n"
    "      redis.call('EXPIRE', key, lease)\n"
    "    else\n"
    "      redis.call('INCRBY', key, add)\n"
    "      redis.call('EXPIREAT', key, exp)\n"
    "    end\n"
    "  end\n"
    "end\n"
    "return 0\n";

//  Take back what an admission added, once its caller was told Redis did
//  not answer (and so holds nothing to finish): the stream leaves the
//  concurrency sets, and each count it added is subtracted while its
//  window lasts (a counter that expired meanwhile is not made again).
//  KEYS: the counters; ARGV: the stream, then per counter its kind and
//  what was added.
static const char s_undo_script [] =
    "local stream = ARGV[1]\n"
    "for i, key in ipairs(KEYS) do\n"
    "  local kind, add = ARGV[2 * i], tonumber(ARGV[2 * i + 1])\n"
    "  if kind == 'conc' then\n"
    "    redis.call('ZREM', key, stream)\n"
    "  elseif tonumber(redis.call('GET', key) or '0') >= add then\n"
    "    redis.call('DECRBY', key, add)\n"
    "  end\n"
    "end\n"
    "return 0\n";

#define S_UNDO_LOG_MS 1000              //  at most one "limits_undone" line this often

typedef struct _s_redis_t s_redis_t;

//  One admission asked, until Redis answers (or the connection goes).
typedef struct _s_ask_t s_ask_t;
struct _s_ask_t {
    s_redis_t *store;                   //  NULL once the store is gone
    sl_limits_done_fn *done;
    void *arg;
    size_t count;                       //  counters in the plan
    const sl_limits_plan_t *plan;       //  the caller's, borrowed until it is answered
    sl_limits_plan_t *undo;             //  a copy, once answered before Redis: what a late
                                        //  admission must take back
    int64_t retry_at [SL_LIMITS_COUNTERS_MAX];
    int64_t now;
    int timer;                          //  the timeout, -1 when none
    bool answered;                      //  done was called (a timeout answers before Redis)
    s_ask_t *prev, *next;
};

struct _s_redis_t {
    sl_limits_store_t base;             //  first: the store's table
    zloop_t *loop;
    char host [S_TEXT_MAX];
    int port;
    char password [S_TEXT_MAX];
    int db;
    int timeout_ms;
    redisAsyncContext *ac;              //  NULL when not connected
    bool connected;                     //  the connect callback said so
    zmq_pollitem_t item;
    bool polling;
    bool want_read, want_write;
    int64_t next_connect;               //  ms (zclock_mono): not before
    s_ask_t *asks;                      //  not yet answered by Redis
    uint64_t undone;                    //  late admissions taken back
    int64_t undo_logged;                //  ms (zclock_mono) of the last "limits_undone" line
};

//  --------------------------------------------------------------------------
//  The connection in the zloop

static void s_update (s_redis_t *self);

static int
s_on_io (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    (void) loop;
    s_redis_t *self = arg;
    if (self->ac && (item->revents & (ZMQ_POLLIN | ZMQ_POLLERR)))
        redisAsyncHandleRead (self->ac);
    if (self->ac && (item->revents & ZMQ_POLLOUT))
        redisAsyncHandleWrite (self->ac);
    return 0;
}

//  The poller asks for what hiredis wants now.
static void
s_update (s_redis_t *self)
{
    if (self->polling) {
        zloop_poller_end (self->loop, &self->item);
        self->polling = false;
    }
    if (!self->ac || !(self->want_read || self->want_write))
        return;
    self->item = (zmq_pollitem_t) { .socket = NULL, .fd = self->ac->c.fd,
                                    .events = (short) ((self->want_read ? ZMQ_POLLIN : 0)
                                                       | (self->want_write ? ZMQ_POLLOUT : 0)) };
    if (zloop_poller (self->loop, &self->item, s_on_io, self) == 0)
        self->polling = true;
}

static void s_add_read (void *p) { s_redis_t *self = p; self->want_read = true; s_update (self); }
static void s_del_read (void *p) { s_redis_t *self = p; self->want_read = false; s_update (self); }
static void s_add_write (void *p) { s_redis_t *self = p; self->want_write = true; s_update (self); }
static void s_del_write (void *p) { s_redis_t *self = p; self->want_write = false; s_update (self); }

static void
s_cleanup (void *p)
{
    s_redis_t *self = p;
    self->want_read = self->want_write = false;
    s_update (self);
}

static void
s_on_connect (const redisAsyncContext *ac, int status)
{
    s_redis_t *self = ac->data;
    if (status == REDIS_OK) {
        self->connected = true;
        sl_log_info ("redis_connected", "limits store at %s:%d", self->host, self->port);
        return;
    }
    //  hiredis frees a connection that could not be made as soon as this
    //  returns, without calling s_on_disconnect (only a connection that
    //  was made says it is gone): let go of it here, or the next event
    //  of its socket would hand hiredis the freed context.
    sl_log_warn ("redis_unreachable", "limits store at %s:%d: %s", self->host, self->port, ac->errstr);
    if (self->ac == ac) {
        self->ac = NULL;
        self->connected = false;
    }
}

static void
s_on_disconnect (const redisAsyncContext *ac, int status)
{
    s_redis_t *self = ac->data;
    if (self->ac == ac) {
        sl_log_warn ("redis_disconnected", "limits store at %s:%d: %s", self->host, self->port,
                     status == REDIS_OK ? "closed" : ac->errstr);
        self->ac = NULL;
        self->connected = false;
        self->want_read = self->want_write = false;
        s_update (self);
    }
}

static void
s_connect (s_redis_t *self)
{
    int64_t now = zclock_mono ();
    if (self->ac || now < self->next_connect)
        return;
    self->next_connect = now + SL_LIMITS_REDIS_RECONNECT_MS;
    redisAsyncContext *ac = redisAsyncConnect (self->host, self->port);
    if (!ac)
        return;
    if (ac->err) {
        sl_log_warn ("redis_unreachable", "limits store at %s:%d: %s", self->host, self->port, ac->errstr);
        redisAsyncFree (ac);
        return;
    }
    ac->data = self;
    ac->ev.data = self;
    ac->ev.addRead = s_add_read;
    ac->ev.delRead = s_del_read;
    ac->ev.addWrite = s_add_write;
    ac->ev.delWrite = s_del_write;
    ac->ev.cleanup = s_cleanup;
    self->ac = ac;
    redisAsyncSetConnectCallback (ac, s_on_connect);
    redisAsyncSetDisconnectCallback (ac, s_on_disconnect);
    if (self->password [0])
        redisAsyncCommand (ac, NULL, NULL, "AUTH %s", self->password);
    if (self->db)
        redisAsyncCommand (ac, NULL, NULL, "SELECT %d", self->db);
}

//  --------------------------------------------------------------------------
//  Admission

static void
s_unlink (s_ask_t *ask)
{
    s_redis_t *self = ask->store;
    if (!self)
        return;
    if (ask->prev)
        ask->prev->next = ask->next;
    else
        self->asks = ask->next;
    if (ask->next)
        ask->next->prev = ask->prev;
    if (ask->timer >= 0)
        zloop_timer_end (self->loop, ask->timer);
    ask->timer = -1;
}

static void
s_answer (s_ask_t *ask, int outcome, int refused, const char *why)
{
    if (ask->answered)
        return;
    ask->answered = true;
    sl_limits_answer_t a = { outcome, refused, 0, why };
    if (outcome == SL_LIMITS_REFUSED)
        a.retry_after = ask->retry_at [refused] > ask->now ? ask->retry_at [refused] - ask->now : 1;
    if (ask->done)
        ask->done (ask->arg, &a);
}

//  An admission Redis counted after its caller was told it did not
//  answer: the caller holds no place and will neither renew nor finish
//  it, so without this the stream would hold its concurrency places for
//  a whole lease (SL_LIMITS_LEASE_S) and its requests a minute's count.
static void
s_undo (s_redis_t *self, const sl_limits_plan_t *plan)
{
    const char *argv [S_ARGS_MAX];
    size_t argvlen [S_ARGS_MAX];
    char nums [S_ARGS_MAX][S_NUM];
    int n = 0, keys = 0;
    argv [n++] = "EVAL";
    argv [n++] = s_undo_script;
    int count_at = n++;                 //  the number of keys, once known
    for (size_t i = 0; i < plan->count; i++)
        if (plan->counters [i].add > 0) {
            argv [n++] = plan->counters [i].key;
            keys++;
        }
    if (keys == 0)
        return;
    snprintf (nums [count_at], S_NUM, "%d", keys);
    argv [count_at] = nums [count_at];
    argv [n++] = plan->stream;
    for (size_t i = 0; i < plan->count; i++) {
        const sl_limits_counter_t *c = &plan->counters [i];
        if (c->add <= 0)
            continue;
        argv [n++] = c->kind == SL_LIMIT_CONCURRENT ? "conc" : "count";
        snprintf (nums [n], S_NUM, "%lld", (long long) c->add);
        argv [n] = nums [n];
        n++;
    }
    for (int i = 0; i < n; i++)
        argvlen [i] = strlen (argv [i]);
    if (redisAsyncCommandArgv (self->ac, NULL, NULL, n, argv, argvlen) != REDIS_OK)
        return;
    self->undone++;
    int64_t now = zclock_mono ();
    if (now - self->undo_logged >= S_UNDO_LOG_MS) {
        self->undo_logged = now;
        sl_log_warn ("limits_undone", "Redis at %s:%d counted an admission after --limits-timeout-ms; taken back "
                     "(%llu so far)", self->host, self->port, (unsigned long long) self->undone);
    }
}

static void
s_on_reply (redisAsyncContext *ac, void *reply_p, void *arg)
{
    (void) ac;
    s_ask_t *ask = arg;
    redisReply *reply = reply_p;
    if (ask->undo && ask->store && ask->store->ac && reply && reply->type == REDIS_REPLY_INTEGER
    &&  reply->integer == 0)
        s_undo (ask->store, ask->undo);
    if (!reply)
        s_answer (ask, SL_LIMITS_UNREACHABLE, -1, "the connection to Redis was lost");
    else
    if (reply->type == REDIS_REPLY_INTEGER && reply->integer == 0)
        s_answer (ask, SL_LIMITS_ADMITTED, -1, NULL);
    else
    if (reply->type == REDIS_REPLY_INTEGER && reply->integer >= 1 && (size_t) reply->integer <= ask->count)
        s_answer (ask, SL_LIMITS_REFUSED, (int) reply->integer - 1, NULL);
    else
        s_answer (ask, SL_LIMITS_UNREACHABLE, -1, "Redis answered what the limits script never returns");
    s_unlink (ask);
    free (ask->undo);
    free (ask);
}

static int
s_on_timeout (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_ask_t *ask = arg;
    ask->timer = -1;
    //  Answered now; freed when Redis answers or the connection goes. The
    //  caller lets its plan go with this answer: what a late admission
    //  must take back is copied first.
    ask->undo = sl_xmalloc (sizeof *ask->undo);
    memcpy (ask->undo, ask->plan, sizeof *ask->undo);
    ask->plan = NULL;
    s_answer (ask, SL_LIMITS_UNREACHABLE, -1, "Redis did not answer in time");
    return 0;
}

static void
s_redis_admit (sl_limits_store_t *base, const sl_limits_plan_t *plan, sl_limits_done_fn *done, void *arg)
{
    s_redis_t *self = (s_redis_t *) base;
    if (plan->count == 0) {
        sl_limits_answer_t a = { SL_LIMITS_ADMITTED, -1, 0, NULL };
        done (arg, &a);
        return;
    }
    s_connect (self);
    if (!self->ac) {
        sl_limits_answer_t a = { SL_LIMITS_UNREACHABLE, -1, 0, "no connection to Redis" };
        done (arg, &a);
        return;
    }
    const char *argv [S_ARGS_MAX];
    size_t argvlen [S_ARGS_MAX];
    char nums [S_ARGS_MAX][S_NUM];
    int n = 0;
    argv [n++] = "EVAL";
    argv [n++] = s_admit_script;
    snprintf (nums [n], S_NUM, "%zu", plan->count);
    argv [n] = nums [n];
    n++;
    for (size_t i = 0; i < plan->count; i++)
        argv [n++] = plan->counters [i].key;
    snprintf (nums [n], S_NUM, "%lld", (long long) plan->now);
    argv [n] = nums [n];
    n++;
    argv [n++] = plan->stream;
    snprintf (nums [n], S_NUM, "%d", SL_LIMITS_LEASE_S);
    argv [n] = nums [n];
    n++;
    for (size_t i = 0; i < plan->count; i++) {
        const sl_limits_counter_t *c = &plan->counters [i];
        argv [n++] = c->kind == SL_LIMIT_CONCURRENT ? "conc" : "count";
        const long long values [] = { (long long) c->limit, (long long) c->add, (long long) c->expire_at };
        for (size_t v = 0; v < 3; v++) {
            snprintf (nums [n], S_NUM, "%lld", values [v]);
            argv [n] = nums [n];
            n++;
        }
    }
    for (int i = 0; i < n; i++)
        argvlen [i] = strlen (argv [i]);
    s_ask_t *ask = sl_xcalloc (1, sizeof *ask);
    ask->store = self;
    ask->done = done;
    ask->arg = arg;
    ask->count = plan->count;
    ask->plan = plan;
    ask->now = plan->now;
    for (size_t i = 0; i < plan->count; i++)
        ask->retry_at [i] = plan->counters [i].retry_at;
    ask->next = self->asks;
    if (self->asks)
        self->asks->prev = ask;
    self->asks = ask;
    ask->timer = zloop_timer (self->loop, (size_t) self->timeout_ms, 1, s_on_timeout, ask);
    if (redisAsyncCommandArgv (self->ac, s_on_reply, ask, n, argv, argvlen) != REDIS_OK) {
        s_answer (ask, SL_LIMITS_UNREACHABLE, -1, "Redis took no command");
        s_unlink (ask);
        free (ask);
    }
}

//  A usage addition whose thresholds are checked on Redis's answer: the
//  plan is copied (the caller's goes when finish returns), with its
//  subject's spec (a keys file reload may free the caller's).
typedef struct {
    sl_limits_store_t *store;
    sl_limits_plan_t plan;
    sl_limits_spec_t spec;
    size_t counter;
    int64_t add;
} s_usage_t;

//  INCRBY answers the counter after this addition, in one step on the
//  server: value - add is what it held before, for this gateway's
//  addition alone, so one addition in all the gateways sees a threshold
//  crossed.
static void
s_on_usage (redisAsyncContext *ac, void *r, void *arg)
{
    (void) ac;
    s_usage_t *u = arg;
    redisReply *reply = r;
    if (reply && reply->type == REDIS_REPLY_INTEGER && u->store->used)
        u->store->used (u->store->used_arg, &u->plan, (int) u->counter, reply->integer);
    if (reply && reply->type == REDIS_REPLY_INTEGER && u->store->alert) {
        const sl_limits_counter_t *c = &u->plan.counters [u->counter];
        int at [SL_LIMITS_ALERTS_MAX];
        size_t n = sl_limits_crossed (&u->spec, reply->integer - u->add, reply->integer, c->limit, at);
        for (size_t k = 0; k < n; k++) {
            sl_limits_alert_t alert = { (int) u->counter, at [k], reply->integer, c->limit };
            u->store->alert (u->store->alert_arg, &u->plan, &alert);
        }
    }
    free (u);
}

//  The copy to tell the hooks about counter i with, NULL when no hook
//  wants to hear.
static s_usage_t *
s_usage (sl_limits_store_t *store, const sl_limits_plan_t *plan, size_t i, int64_t add)
{
    const sl_limits_counter_t *c = &plan->counters [i];
    if (c->subject < 0 || (size_t) c->subject >= plan->subject_count)
        return NULL;
    const sl_limits_spec_t *spec = plan->subjects [c->subject].spec;
    bool alerts = store->alert && spec && spec->alert_count > 0;
    if (!spec || (!alerts && !store->used))
        return NULL;
    s_usage_t *u = sl_xcalloc (1, sizeof *u);
    u->store = store;
    u->plan = *plan;
    u->spec = *spec;
    u->plan.subjects [c->subject].spec = &u->spec;
    u->counter = i;
    u->add = add;
    return u;
}

static void
s_redis_finish (sl_limits_store_t *base, const sl_limits_plan_t *plan, int64_t tokens, int64_t usd_micro)
{
    s_redis_t *self = (s_redis_t *) base;
    s_connect (self);
    for (size_t i = 0; self->ac && i < plan->count; i++) {
        const sl_limits_counter_t *c = &plan->counters [i];
        int64_t add = c->kind == SL_LIMIT_TOKENS_PER_DAY || c->kind == SL_LIMIT_BUDGET_TOKENS ? tokens
                    : c->kind == SL_LIMIT_BUDGET_USD ? usd_micro : 0;
        if (c->kind == SL_LIMIT_CONCURRENT)
            redisAsyncCommand (self->ac, NULL, NULL, "ZREM %s %s", c->key, plan->stream);
        else
        if (add > 0) {
            s_usage_t *u = s_usage (base, plan, i, add);
            if (redisAsyncCommand (self->ac, u ? s_on_usage : NULL, u, "INCRBY %s %lld", c->key, (long long) add)
                != REDIS_OK)
                free (u);
            redisAsyncCommand (self->ac, NULL, NULL, "EXPIREAT %s %lld", c->key, (long long) c->expire_at);
        }
    }
}

static void
s_redis_renew (sl_limits_store_t *base, const sl_limits_plan_t *plan, int64_t now)
{
    s_redis_t *self = (s_redis_t *) base;
    s_connect (self);
    for (size_t i = 0; self->ac && i < plan->count; i++) {
        const sl_limits_counter_t *c = &plan->counters [i];
        if (c->kind != SL_LIMIT_CONCURRENT)
            continue;
        redisAsyncCommand (self->ac, NULL, NULL, "ZADD %s %lld %s", c->key, (long long) (now + SL_LIMITS_LEASE_S),
                           plan->stream);
        redisAsyncCommand (self->ac, NULL, NULL, "EXPIRE %s %d", c->key, SL_LIMITS_LEASE_S);
    }
}

static void
s_redis_destroy (sl_limits_store_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    s_redis_t *self = (s_redis_t *) *self_p;
    //  Whoever still waits is answered; the asks hiredis holds are freed by
    //  its callbacks (reply NULL) when the connection goes.
    for (s_ask_t *ask = self->asks; ask; ask = ask->next) {
        if (ask->timer >= 0)
            zloop_timer_end (self->loop, ask->timer);
        ask->timer = -1;
        s_answer (ask, SL_LIMITS_UNREACHABLE, -1, "the limits store is gone");
        ask->store = NULL;
        ask->plan = NULL;
    }
    self->asks = NULL;
    if (self->ac) {
        redisAsyncContext *ac = self->ac;
        self->ac = NULL;
        redisAsyncFree (ac);
    }
    self->want_read = self->want_write = false;
    s_update (self);
    free (self);
    *self_p = NULL;
}

//  "redis://[:password@]host[:port][/db]"
static int
s_parse_url (s_redis_t *self, const char *url)
{
    if (!url || strncmp (url, "redis://", 8) != 0)
        return -1;
    const char *p = url + 8;
    const char *at = strchr (p, '@');
    if (at) {
        const char *colon = memchr (p, ':', (size_t) (at - p));
        const char *pw = colon ? colon + 1 : p;
        snprintf (self->password, sizeof self->password, "%.*s", (int) (at - pw), pw);
        p = at + 1;
    }
    size_t host = strcspn (p, ":/");
    if (host == 0 || host >= sizeof self->host)
        return -1;
    snprintf (self->host, sizeof self->host, "%.*s", (int) host, p);
    p += host;
    self->port = S_DEFAULT_PORT;
    if (*p == ':') {
        char *end = NULL;
        long port = strtol (p + 1, &end, 10);
        if (port <= 0 || port > 65535)
            return -1;
        self->port = (int) port;
        p = end;
    }
    if (*p == '/' && p [1]) {
        char *end = NULL;
        long db = strtol (p + 1, &end, 10);
        if (db < 0 || *end)
            return -1;
        self->db = (int) db;
    }
    else
    if (*p && strcmp (p, "/") != 0)
        return -1;
    return 0;
}

sl_limits_store_t *
sl_limits_redis_new (zloop_t *loop, const char *url, int timeout_ms, const char **error)
{
    s_redis_t *self = sl_xcalloc (1, sizeof *self);
    if (s_parse_url (self, url)) {
        *error = "the Redis URL is not redis://[:password@]host[:port][/db]";
        free (self);
        return NULL;
    }
    self->base.admit = s_redis_admit;
    self->base.finish = s_redis_finish;
    self->base.renew = s_redis_renew;
    self->base.destroy = s_redis_destroy;
    self->loop = loop;
    self->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
    s_connect (self);
    return &self->base;
}

bool
sl_limits_redis_connected (sl_limits_store_t *base)
{
    s_redis_t *self = (s_redis_t *) base;
    return self->ac && self->connected;
}
