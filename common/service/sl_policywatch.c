/*  sl_policywatch.c - the running policy, reloaded on SIGHUP and when its
    file changes (see sl_policywatch.h).

    The file itself (what was read, whether it changed) is sl_policyfile's;
    this file gives it the service's signal, a timer, metrics and logs.
*/
#include "common/service/sl_policywatch.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/policy/sl_policyfile.h"

struct _sl_policywatch_t {
    sl_service_t *service;
    sl_policyfile_t *file;
    sl_policywatch_describe_fn *describe;
    sl_policywatch_fn *on_reload;
    void *on_reload_arg;
    int timer;                          //  the change watch, -1 when none
    bool hooked;                        //  on the service's SIGHUP (not a named file's watch)
    sl_counter_t *reloads;
    sl_counter_t *failures;
    int64_t loaded_ms;                  //  when the running policy was loaded
    char *last_error;                   //  why the last reload was refused, NULL when none was
};

//  Count and log a file that did not load (kept for the process's reports).
static void
s_refused (sl_policywatch_t *self, char *error, const char *outcome)
{
    sl_log_error ("policy_invalid", "%s", error ? error : "?");
    sl_counter_inc (self->failures);
    free (self->last_error);
    self->last_error = error;
    sl_log_warn ("policy_kept", "%s", outcome);
}

static void
s_log_loaded (sl_policywatch_t *self)
{
    sl_policy_t *policy = sl_policyfile_policy (self->file);
    sl_buf_t words = { 0 };
    if (self->describe)
        self->describe (policy, &words);
    else
        sl_buf_printf (&words, "id=%s", sl_policy_id (policy));
    sl_log_info ("policy_loaded", "%s: %s", sl_policy_name (policy), sl_buf_cstr (&words));
    sl_buf_free (&words);
}

static void
s_on_sighup (void *arg)
{
    sl_policywatch_reload (arg);
}

static int
s_on_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_policywatch_check (arg);
    return 0;
}

//  The reload metrics, unlabelled for the process's default policy, with
//  the file's path as the label "policy" for a named one.
static void
s_metrics (sl_policywatch_t *self, const char *named)
{
    sl_metrics_t *m = sl_service_metrics (self->service);
    sl_buf_t labels = { 0 };
    if (named) {
        sl_buf_puts (&labels, "policy=\"");
        sl_json_put_escaped (&labels, named, strlen (named));
        sl_buf_putc (&labels, '"');
    }
    const char *l = named ? sl_buf_cstr (&labels) : NULL;
    self->reloads = sl_metrics_counter (m, "sluice_policy_reloads_total", l,
                                        "Policies loaded after the first (SIGHUP, file change)");
    self->failures = sl_metrics_counter (m, "sluice_policy_reload_failures_total", l,
                                         "Policy reloads rejected (the old policy stayed)");
    sl_buf_free (&labels);
}

sl_policywatch_t *
sl_policywatch_new (sl_service_t *service, const char *path, int64_t watch_ms,
                    sl_policywatch_describe_fn *describe)
{
    char *error = NULL;
    sl_policyfile_t *file = sl_policyfile_new (path, &error);
    if (!file) {
        sl_log_error ("policy_invalid", "%s", error ? error : "?");
        free (error);
        return NULL;
    }
    sl_policywatch_t *self = sl_xcalloc (1, sizeof *self);
    self->service = service;
    self->file = file;
    self->describe = describe;
    self->timer = -1;
    self->loaded_ms = zclock_time ();
    s_log_loaded (self);
    s_metrics (self, NULL);
    if (watch_ms > 0 && sl_policyfile_has_file (file))
        self->timer = zloop_timer (sl_service_loop (service), (size_t) watch_ms, 0, s_on_timer, self);
    sl_service_on_reload (service, s_on_sighup, self);
    self->hooked = true;
    return self;
}

sl_policywatch_t *
sl_policywatch_named (sl_service_t *service, const char *path, sl_policywatch_describe_fn *describe)
{
    assert (path && *path);
    sl_policywatch_t *self = sl_xcalloc (1, sizeof *self);
    self->service = service;
    self->file = sl_policyfile_open (path);
    self->describe = describe;
    self->timer = -1;
    s_metrics (self, path);
    char *error = NULL;
    if (sl_policyfile_reload (self->file, &error) == 0) {
        self->loaded_ms = zclock_time ();
        s_log_loaded (self);
    }
    else
        s_refused (self, error, "streams that name this policy are refused until it loads");
    return self;
}

void
sl_policywatch_destroy (sl_policywatch_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_policywatch_t *self = *self_p;
    if (self->timer >= 0)
        zloop_timer_end (sl_service_loop (self->service), self->timer);
    if (self->hooked)
        sl_service_off_reload (self->service, s_on_sighup, self);
    sl_policyfile_destroy (&self->file);
    free (self->last_error);
    free (self);
    *self_p = NULL;
}

void
sl_policywatch_on_reload (sl_policywatch_t *self, sl_policywatch_fn *fn, void *arg)
{
    self->on_reload = fn;
    self->on_reload_arg = arg;
}

sl_policy_t *sl_policywatch_policy (sl_policywatch_t *self) { return sl_policyfile_policy (self->file); }
bool sl_policywatch_has_file (sl_policywatch_t *self) { return sl_policyfile_has_file (self->file); }
int64_t sl_policywatch_loaded_ms (sl_policywatch_t *self) { return self->loaded_ms; }
uint64_t sl_policywatch_failures (sl_policywatch_t *self) { return self->failures->value; }
const char *sl_policywatch_last_error (sl_policywatch_t *self) { return self->last_error; }

int
sl_policywatch_reload (sl_policywatch_t *self)
{
    char *error = NULL;
    bool loaded = sl_policyfile_reload (self->file, &error) == 0;
    if (loaded) {
        sl_counter_inc (self->reloads);
        self->loaded_ms = zclock_time ();
        s_log_loaded (self);
    }
    else
        s_refused (self, error, sl_policyfile_policy (self->file) ? "the running policy stays in force"
                                : "streams that name this policy are refused until it loads");
    if (self->on_reload)
        self->on_reload (self->on_reload_arg, sl_policyfile_policy (self->file), loaded);
    return loaded ? 0 : -1;
}

bool
sl_policywatch_check (sl_policywatch_t *self)
{
    if (!sl_policyfile_changed (self->file))
        return false;
    sl_log_info ("reload", "policy file changed");
    sl_policywatch_reload (self);
    return true;
}
