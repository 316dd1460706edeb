/*  sl_keywatch.c - the keys file, reloaded on SIGHUP and when it changes
    (see sl_keywatch.h).
*/
#include "common/service/sl_keywatch.h"

#include <stdlib.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_filestamp.h"
#include "common/base/sl_log.h"

//  A public key file of the jwt section (PEM, JWKS), watched like the
//  keys file: a key taken out of it stops working at the next look.
typedef struct {
    char *path;
    sl_filestamp_t seen;                //  the file when last read
} s_keyfile_t;

struct _sl_keywatch_t {
    sl_service_t *service;
    char *path;                         //  NULL: no file
    sl_filestamp_t seen;                //  the file when last read
    s_keyfile_t *keyfiles;              //  those the keys file last read names
    size_t keyfile_count;
    sl_keyring_t *keyring;              //  NULL: no keys at all
    sl_jwtkeys_t *jwt;                  //  the public keys its jwt section names, NULL: none
    sl_keywatch_fn *on_reload;
    void *on_reload_arg;
    int timer;                          //  the change watch, -1 when none
    sl_counter_t *reloads;
    sl_counter_t *failures;
};

static void
s_log_loaded (sl_keywatch_t *self)
{
    sl_log_info ("keys_loaded", "%s: %zu keys, %zu teams%s", self->path ? self->path : "SLUICE_CLIENT_KEYS",
                 sl_keyring_count (self->keyring), sl_keyring_team_count (self->keyring),
                 sl_keyring_jwt (self->keyring) ? ", signed tokens" : "");
}

static void
s_keyfiles_clear (sl_keywatch_t *self)
{
    for (size_t i = 0; i < self->keyfile_count; i++)
        free (self->keyfiles [i].path);
    free (self->keyfiles);
    self->keyfiles = NULL;
    self->keyfile_count = 0;
}

static void
s_keyfile_add (sl_keywatch_t *self, const char *path)
{
    self->keyfiles = sl_xrealloc (self->keyfiles, (self->keyfile_count + 1) * sizeof (s_keyfile_t));
    s_keyfile_t *k = &self->keyfiles [self->keyfile_count++];
    k->path = sl_xstrdup (path);
    sl_filestamp_take (path, &k->seen);
}

//  Watch the key files spec names from now (stamped before they are read).
static void
s_keyfiles_watch (sl_keywatch_t *self, const sl_jwt_spec_t *spec)
{
    s_keyfiles_clear (self);
    for (size_t i = 0; spec && spec->pem && spec->pem [i]; i++)
        s_keyfile_add (self, spec->pem [i]);
    if (spec && spec->jwks)
        s_keyfile_add (self, spec->jwks);
}

//  Read the file and the token keys it names; the stamps are taken even
//  when they do not load, so that polling waits for the next change
//  instead of repeating the error.
static sl_keyring_t *
s_load (sl_keywatch_t *self, sl_jwtkeys_t **jwt, char **error)
{
    *jwt = NULL;
    sl_filestamp_take (self->path, &self->seen);
    sl_keyring_t *keyring = sl_keyring_load (self->path, error);
    const sl_jwt_spec_t *spec = sl_keyring_jwt (keyring);
    if (keyring)
        s_keyfiles_watch (self, spec);
    if (spec && !(*jwt = sl_jwtkeys_new (spec, error)))
        sl_keyring_unref (&keyring);
    return keyring;
}

static void
s_on_sighup (void *arg)
{
    sl_keywatch_t *self = arg;
    if (self->path)
        sl_keywatch_reload (self);
}

static int
s_on_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_keywatch_check (arg);
    return 0;
}

sl_keywatch_t *
sl_keywatch_new (sl_service_t *service, const char *path, const char *list, int64_t watch_ms)
{
    sl_keywatch_t *self = sl_xcalloc (1, sizeof *self);
    self->service = service;
    self->timer = -1;
    if (path && *path) {
        self->path = sl_xstrdup (path);
        char *error = NULL;
        self->keyring = s_load (self, &self->jwt, &error);
        if (!self->keyring) {
            sl_log_error ("keys_invalid", "%s", error ? error : "?");
            free (error);
            s_keyfiles_clear (self);
            free (self->path);
            free (self);
            return NULL;
        }
    }
    else
    if (list && *list)
        self->keyring = sl_keyring_from_list (list);
    if (self->keyring)
        s_log_loaded (self);
    sl_metrics_t *m = sl_service_metrics (service);
    self->reloads = sl_metrics_counter (m, "sluice_keys_reloads_total", NULL,
                                        "Keys files loaded after the first (SIGHUP, file change)");
    self->failures = sl_metrics_counter (m, "sluice_keys_reload_failures_total", NULL,
                                         "Keys file reloads rejected (the old keys stayed)");
    if (self->path && watch_ms > 0)
        self->timer = zloop_timer (sl_service_loop (service), (size_t) watch_ms, 0, s_on_timer, self);
    sl_service_on_reload (service, s_on_sighup, self);
    return self;
}

void
sl_keywatch_destroy (sl_keywatch_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_keywatch_t *self = *self_p;
    if (self->timer >= 0)
        zloop_timer_end (sl_service_loop (self->service), self->timer);
    sl_service_off_reload (self->service, s_on_sighup, self);
    sl_keyring_unref (&self->keyring);
    sl_jwtkeys_destroy (&self->jwt);
    s_keyfiles_clear (self);
    free (self->path);
    free (self);
    *self_p = NULL;
}

void
sl_keywatch_on_reload (sl_keywatch_t *self, sl_keywatch_fn *fn, void *arg)
{
    self->on_reload = fn;
    self->on_reload_arg = arg;
}

sl_keyring_t *sl_keywatch_keyring (sl_keywatch_t *self) { return self->keyring; }
sl_jwtkeys_t *sl_keywatch_jwtkeys (sl_keywatch_t *self) { return self->jwt; }
bool sl_keywatch_has_file (sl_keywatch_t *self) { return self->path != NULL; }

int
sl_keywatch_reload (sl_keywatch_t *self)
{
    if (!self->path)
        return 0;
    char *error = NULL;
    sl_jwtkeys_t *jwt;
    sl_keyring_t *keyring = s_load (self, &jwt, &error);
    if (keyring) {
        sl_keyring_unref (&self->keyring);
        self->keyring = keyring;
        sl_jwtkeys_destroy (&self->jwt);
        self->jwt = jwt;
        sl_counter_inc (self->reloads);
        s_log_loaded (self);
    }
    else {
        sl_log_error ("keys_invalid", "%s", error ? error : "?");
        free (error);
        sl_counter_inc (self->failures);
        sl_log_warn ("keys_kept", "the running keys stay in force");
    }
    if (self->on_reload)
        self->on_reload (self->on_reload_arg, self->keyring, keyring != NULL);
    return keyring ? 0 : -1;
}

bool
sl_keywatch_check (sl_keywatch_t *self)
{
    if (!self->path)
        return false;
    const char *changed = sl_filestamp_changed (self->path, &self->seen) ? self->path : NULL;
    for (size_t i = 0; !changed && i < self->keyfile_count; i++)
        if (sl_filestamp_changed (self->keyfiles [i].path, &self->keyfiles [i].seen))
            changed = self->keyfiles [i].path;
    if (!changed)
        return false;
    sl_log_info ("reload", "%s changed", changed == self->path ? "keys file" : changed);
    sl_keywatch_reload (self);
    return true;
}
