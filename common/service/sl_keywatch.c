/*  sl_keywatch.c - the keys file, reloaded on SIGHUP and when it changes
    (see sl_keywatch.h).
*/
#include "common/service/sl_keywatch.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_filestamp.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/http/sl_curlm.h"

#define S_EMPTY_SET "{\"keys\":[]}"
#define S_DEFAULT_FETCH_MS 1000         //  the keys URL's period when watch_ms is 0 (SIGHUP only)

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
    sl_keyring_t *file;                 //  the file's (or the list's) keys, NULL: none
    sl_keyring_t *keyring;              //  what runs: the file's merged with the served, NULL: no keys
    sl_jwtkeys_t *jwt;                  //  the public keys its jwt section names, NULL: none
    sl_keywatch_fn *on_reload;
    void *on_reload_arg;
    int timer;                          //  the change watch, -1 when none
    sl_counter_t *reloads;
    sl_counter_t *failures;
    //  The keys the console issued (sl_keywatch_set_url)
    char *url;                          //  NULL: none
    struct curl_slist *headers;         //  its Authorization
    sl_curlm_t *curlm;
    CURL *easy;                         //  the fetch under way, NULL: none
    sl_buf_t body;                      //  its answer so far
    bool body_over;                     //  the answer grew past SL_KEYWATCH_FETCH_MAX
    sl_buf_t served;                    //  the last good set ("": none yet)
    bool open_until_issued;             //  no keys at all while the console has issued none
    bool failing;                       //  the last fetch failed (logged once)
    int fetch_timer;
    int64_t fetch_ms;
    sl_counter_t *fetches;
    sl_counter_t *fetch_failures;
};

//  What runs from now: the file's keys, merged with the served set when
//  there is a keys URL (an empty one before the first good answer, so that
//  a URL without a file lets nobody in until the audit has answered).
static void
s_apply (sl_keywatch_t *self)
{
    sl_keyring_t *next = NULL;
    sl_str_t issued;
    int64_t count = -1;
    if (self->url && !self->file && self->open_until_issued && self->served.len
    &&  sl_json_find (sl_buf_str (&self->served), "issued", &issued) == 1 && sl_json_i64 (issued, &count) == 0
    &&  count == 0)
        next = NULL;                    //  as without keys: nobody is checked
    else
    if (self->url) {
        char *error = NULL;
        const char *set = self->served.len ? sl_buf_cstr (&self->served) : S_EMPTY_SET;
        next = sl_keyring_merge (self->file, set, strlen (set), &error);
        free (error);
        if (!next)
            next = sl_keyring_merge (self->file, S_EMPTY_SET, strlen (S_EMPTY_SET), &error);
        free (error);
    }
    else
        next = sl_keyring_ref (self->file);
    sl_keyring_unref (&self->keyring);
    self->keyring = next;
}

static void
s_log_loaded (sl_keywatch_t *self)
{
    sl_log_info ("keys_loaded", "%s: %zu keys, %zu teams%s", self->path ? self->path : "SLUICE_CLIENT_KEYS",
                 sl_keyring_count (self->file), sl_keyring_team_count (self->file),
                 sl_keyring_jwt (self->file) ? ", signed tokens" : "");
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

//  --------------------------------------------------------------------------
//  The keys the console issued

static size_t
s_on_body (char *data, size_t size, size_t count, void *arg)
{
    sl_keywatch_t *self = arg;
    size_t n = size * count;
    if (self->body.len + n > SL_KEYWATCH_FETCH_MAX) {
        self->body_over = true;
        return 0;                       //  ends the transfer
    }
    sl_buf_append (&self->body, data, n);
    return n;
}

static void
s_fetch_failed (sl_keywatch_t *self, const char *why)
{
    sl_counter_inc (self->fetch_failures);
    if (!self->failing)
        sl_log_warn ("keys_fetch_failed", "%s: %s; the last good set of served keys stays in force",
                     self->url, why);
    self->failing = true;
}

static void
s_on_fetched (void *arg, CURL *easy, CURLcode result)
{
    sl_keywatch_t *self = arg;
    long status = 0;
    curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup (easy);
    self->easy = NULL;
    sl_counter_inc (self->fetches);
    char why [160];
    if (result != CURLE_OK || status != 200) {
        if (self->body_over)
            snprintf (why, sizeof why, "the answer is over %u bytes", SL_KEYWATCH_FETCH_MAX);
        else
        if (result != CURLE_OK)
            snprintf (why, sizeof why, "%s", curl_easy_strerror (result));
        else
            snprintf (why, sizeof why, "HTTP %ld", status);
        s_fetch_failed (self, why);
        return;
    }
    if (self->failing)
        sl_log_info ("keys_fetch_ok", "%s answers again", self->url);
    self->failing = false;
    sl_str_t got = sl_buf_str (&self->body);
    if (sl_str_eq_str (got, sl_buf_str (&self->served)))
        return;                         //  no change
    char *error = NULL;
    sl_keyring_t *merged = sl_keyring_merge (self->file, (const char *) self->body.data, self->body.len, &error);
    if (!merged) {
        s_fetch_failed (self, error ? error : "not a set of keys");
        free (error);
        return;
    }
    sl_keyring_unref (&merged);         //  it loads: it is the set from now
    sl_buf_reset (&self->served);
    sl_buf_append_str (&self->served, got);
    s_apply (self);
    if (self->keyring)
        sl_log_info ("keys_fetched", "%s: %zu keys in force (the file's and the served)", self->url,
                     sl_keyring_count (self->keyring));
    else
        sl_log_info ("keys_fetched", "%s: the console has issued no key yet: nobody is checked", self->url);
    if (self->on_reload)
        self->on_reload (self->on_reload_arg, self->keyring, true);
}

//  Ask the keys URL, unless a fetch is under way.
static void
s_fetch (sl_keywatch_t *self)
{
    if (!self->url || self->easy)
        return;
    CURL *easy = curl_easy_init ();
    if (!easy)
        return;
    sl_buf_reset (&self->body);
    self->body_over = false;
    curl_easy_setopt (easy, CURLOPT_URL, self->url);
    curl_easy_setopt (easy, CURLOPT_HTTPHEADER, self->headers);
    curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_on_body);
    curl_easy_setopt (easy, CURLOPT_WRITEDATA, self);
    curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, (long) SL_KEYWATCH_FETCH_TIMEOUT_MS);
    curl_easy_setopt (easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt (easy, CURLOPT_FOLLOWLOCATION, 0L);
    if (sl_curlm_add (self->curlm, easy, s_on_fetched, self)) {
        curl_easy_cleanup (easy);
        s_fetch_failed (self, "curl refused the transfer");
        return;
    }
    self->easy = easy;
}

static int
s_on_fetch_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_fetch (arg);
    return 0;
}

int
sl_keywatch_set_url (sl_keywatch_t *self, const char *url, const char *token, bool open_until_issued)
{
    if (!url || !*url)
        return 0;
    if (strncmp (url, "http://", 7) != 0 && strncmp (url, "https://", 8) != 0) {
        sl_log_error ("bad_option", "the keys URL '%s' is not http:// or https://", url);
        return -1;
    }
    free (self->url);
    self->url = sl_xstrdup (url);
    self->open_until_issued = open_until_issued;
    if (token && *token) {
        sl_buf_t h = { 0 };
        sl_buf_printf (&h, "Authorization: Bearer %s", token);
        self->headers = curl_slist_append (self->headers, sl_buf_cstr (&h));
        sodium_memzero (h.data, h.len);
        sl_buf_free (&h);
    }
    if (!self->curlm)
        self->curlm = sl_curlm_new (sl_service_loop (self->service));
    sl_metrics_t *m = sl_service_metrics (self->service);
    self->fetches = sl_metrics_counter (m, "sluice_keys_fetches_total", NULL,
                                        "Answers of the keys URL (the keys the console issued)");
    self->fetch_failures = sl_metrics_counter (m, "sluice_keys_fetch_failures_total", NULL,
                                               "Fetches of the keys URL that failed (the last good set stayed)");
    s_apply (self);                     //  no served key until the audit answers
    int64_t every = self->fetch_ms > 0 ? self->fetch_ms : S_DEFAULT_FETCH_MS;
    if (every < SL_KEYWATCH_FETCH_MIN_MS)
        every = SL_KEYWATCH_FETCH_MIN_MS;
    if (self->fetch_timer < 0)
        self->fetch_timer = zloop_timer (sl_service_loop (self->service), (size_t) every, 0, s_on_fetch_timer,
                                         self);
    s_fetch (self);
    sl_log_info ("keys_url", "%s, asked every %lld ms", url, (long long) every);
    return 0;
}

static void
s_on_sighup (void *arg)
{
    sl_keywatch_t *self = arg;
    if (self->path)
        sl_keywatch_reload (self);
    s_fetch (self);
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
        self->file = s_load (self, &self->jwt, &error);
        if (!self->file) {
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
        self->file = sl_keyring_from_list (list);
    if (self->file)
        s_log_loaded (self);
    self->fetch_timer = -1;
    self->fetch_ms = watch_ms;
    s_apply (self);
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
    if (self->fetch_timer >= 0)
        zloop_timer_end (sl_service_loop (self->service), self->fetch_timer);
    if (self->easy) {
        sl_curlm_remove (self->curlm, self->easy);
        curl_easy_cleanup (self->easy);
    }
    sl_curlm_destroy (&self->curlm);
    curl_slist_free_all (self->headers);
    sl_buf_free (&self->body);
    sl_buf_free (&self->served);
    free (self->url);
    sl_service_off_reload (self->service, s_on_sighup, self);
    sl_keyring_unref (&self->file);
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
        sl_keyring_unref (&self->file);
        self->file = keyring;
        s_apply (self);
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
