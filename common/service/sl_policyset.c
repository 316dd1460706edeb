/*  sl_policyset.c - the default policy and the files a keys file names
    (see sl_policyset.h).

    A named file is an sl_policywatch driven from here: the set holds the
    service's one reload hook and one timer for all of them, so a keys file
    with many policies costs no more hooks or timers than one.
*/
#include "common/service/sl_policyset.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"

typedef struct {
    sl_policyset_t *set;
    char *name;                         //  the path, as pn carries it
    sl_policywatch_t *watch;
} s_named_t;

struct _sl_policyset_t {
    sl_service_t *service;
    sl_policywatch_t *fallback;         //  the default (--policy)
    sl_policywatch_describe_fn *describe;
    s_named_t **named;
    size_t count;
    int timer;                          //  the change watch of the named files, -1 when none
    sl_policyset_fn *on_reload;
    void *on_reload_arg;
};

static void
s_on_named (void *arg, sl_policy_t *policy, bool loaded)
{
    s_named_t *n = arg;
    if (n->set->on_reload)
        n->set->on_reload (n->set->on_reload_arg, n->name, policy, loaded);
}

static void
s_on_default (void *arg, sl_policy_t *policy, bool loaded)
{
    sl_policyset_t *self = arg;
    if (self->on_reload)
        self->on_reload (self->on_reload_arg, NULL, policy, loaded);
}

static void
s_on_sighup (void *arg)
{
    sl_policyset_t *self = arg;
    for (size_t i = 0; i < self->count; i++)
        sl_policywatch_reload (self->named [i]->watch);
}

static int
s_on_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_policyset_t *self = arg;
    for (size_t i = 0; i < self->count; i++)
        sl_policywatch_check (self->named [i]->watch);
    return 0;
}

sl_policyset_t *
sl_policyset_new (sl_service_t *service, const char *path, int64_t watch_ms,
                  sl_policywatch_describe_fn *describe)
{
    sl_policywatch_t *fallback = sl_policywatch_new (service, path, watch_ms, describe);
    if (!fallback)
        return NULL;
    sl_policyset_t *self = sl_xcalloc (1, sizeof *self);
    self->service = service;
    self->fallback = fallback;
    self->describe = describe;
    self->timer = -1;
    sl_policywatch_on_reload (fallback, s_on_default, self);
    if (watch_ms > 0)
        self->timer = zloop_timer (sl_service_loop (service), (size_t) watch_ms, 0, s_on_timer, self);
    sl_service_on_reload (service, s_on_sighup, self);
    return self;
}

static void
s_named_free (s_named_t **n_p)
{
    s_named_t *n = *n_p;
    sl_policywatch_destroy (&n->watch);
    free (n->name);
    free (n);
    *n_p = NULL;
}

void
sl_policyset_destroy (sl_policyset_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_policyset_t *self = *self_p;
    if (self->timer >= 0)
        zloop_timer_end (sl_service_loop (self->service), self->timer);
    sl_service_off_reload (self->service, s_on_sighup, self);
    for (size_t i = 0; i < self->count; i++)
        s_named_free (&self->named [i]);
    free (self->named);
    sl_policywatch_destroy (&self->fallback);
    free (self);
    *self_p = NULL;
}

void
sl_policyset_on_reload (sl_policyset_t *self, sl_policyset_fn *fn, void *arg)
{
    self->on_reload = fn;
    self->on_reload_arg = arg;
}

static s_named_t *
s_find (sl_policyset_t *self, sl_str_t name, size_t *index)
{
    for (size_t i = 0; i < self->count; i++)
        if (sl_str_eq (name, self->named [i]->name)) {
            if (index)
                *index = i;
            return self->named [i];
        }
    return NULL;
}

void
sl_policyset_keys (sl_policyset_t *self, const sl_keyring_t *keyring)
{
    const char **paths = sl_xcalloc (SL_POLICYSET_MAX + 1, sizeof (char *));
    size_t n = keyring ? sl_keyring_policies (keyring, paths, SL_POLICYSET_MAX + 1) : 0;
    if (n > SL_POLICYSET_MAX) {
        sl_log_error ("policy_set_full", "the keys file names more than %d policy files: the rest are not "
                      "loaded, and streams that name them are refused", SL_POLICYSET_MAX);
        n = SL_POLICYSET_MAX;
    }
    //  Let go of the files no longer named, keeping the order of the rest.
    size_t kept = 0;
    for (size_t i = 0; i < self->count; i++) {
        bool named = false;
        for (size_t j = 0; j < n && !named; j++)
            named = strcmp (paths [j], self->named [i]->name) == 0;
        if (named)
            self->named [kept++] = self->named [i];
        else {
            sl_log_info ("policy_dropped", "%s: no key or team names it any more", self->named [i]->name);
            s_named_free (&self->named [i]);
        }
    }
    self->count = kept;
    self->named = sl_xrealloc (self->named, (n ? n : 1) * sizeof (s_named_t *));
    for (size_t j = 0; j < n; j++) {
        if (s_find (self, sl_str (paths [j]), NULL))
            continue;
        s_named_t *named = sl_xcalloc (1, sizeof *named);
        named->set = self;
        named->name = sl_xstrdup (paths [j]);
        named->watch = sl_policywatch_named (self->service, named->name, self->describe);
        sl_policywatch_on_reload (named->watch, s_on_named, named);
        self->named [self->count++] = named;
        //  The owner hears of a new file as of a reload (the judge keeps
        //  its version and reports it).
        s_on_named (named, sl_policywatch_policy (named->watch), sl_policywatch_policy (named->watch) != NULL);
    }
    free (paths);
}

sl_policy_t *
sl_policyset_policy (sl_policyset_t *self, sl_str_t name)
{
    if (!name.ptr)
        return sl_policywatch_policy (self->fallback);
    s_named_t *n = s_find (self, name, NULL);
    return n ? sl_policywatch_policy (n->watch) : NULL;
}

sl_policywatch_t *sl_policyset_default (sl_policyset_t *self) { return self->fallback; }
size_t sl_policyset_count (sl_policyset_t *self) { return self->count; }

sl_policywatch_t *
sl_policyset_at (sl_policyset_t *self, size_t index, const char **name)
{
    if (index >= self->count)
        return NULL;
    if (name)
        *name = self->named [index]->name;
    return self->named [index]->watch;
}

void
sl_policyset_reload (sl_policyset_t *self)
{
    sl_policywatch_reload (self->fallback);
    s_on_sighup (self);
}

void
sl_policyset_check (sl_policyset_t *self)
{
    sl_policywatch_check (self->fallback);
    s_on_timer (NULL, 0, self);
}
