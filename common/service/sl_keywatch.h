/*  sl_keywatch.h - who may call: the keys file of a process, reloaded on
    SIGHUP and when it changes.

    The gateway (which resolves every request's credential) and the judge
    (which loads the policy files the keys name) both take --keys-file and
    --watch-ms; this is their one way of keeping it, as sl_policywatch
    keeps a policy:

    - the file is loaded at start; one that does not load stops the
      process (logged "keys_invalid": file:line:col: why);
    - SIGHUP reads it again, and so does a timer every watch_ms when the
      file changed (logged "reload": "keys file changed"); the JWT key
      files it names (PEM, JWKS) are read again with it, and are watched
      the same way: one that changes reloads everything (logged "reload":
      "<path> changed"), so a key taken out of a JWKS stops working
      within watch_ms;
    - a reload that loads is counted in sluice_keys_reloads_total and
      logged "keys_loaded" (keys and teams, never a key or a hash); one
      that does not is counted in sluice_keys_reload_failures_total,
      logged "keys_invalid", then "keys_kept": the running keys stay;
    - the process hears of every reload through its callback.

    With a keys URL (sl_keywatch_set_url: the audit's GET /api/keys/served,
    its token as Bearer), the keys the console issued are fetched at once
    and every watch_ms, and merged with the file's (sl_keyring_merge: the
    file's entry wins a clash): a key created through the console works
    from the next fetch, a revoked one is refused from the next fetch. An
    answer that is not 200 with a set that loads (the audit down, a bad
    token, a malformed set) keeps the last good set (logged
    "keys_fetch_failed" when it starts failing, "keys_fetch_ok" when it
    answers again; counted in sluice_keys_fetch_failures_total). Until the
    first good answer only the file's keys are in force; with a URL and no
    file, no key is: every request is refused, never let through (but for
    open_until_issued, below).

    Without a file, SLUICE_CLIENT_KEYS (a comma-separated list) makes a
    keyring of those keys, all of team "default", which does not change;
    without either there is no keyring: every client is let through, as
    before keys existed.
*/
#ifndef SL_KEYWATCH_H
#define SL_KEYWATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "common/identity/sl_jwt.h"
#include "common/identity/sl_keyring.h"
#include "common/service/sl_service.h"

#define SL_KEYWATCH_FETCH_MIN_MS 100    //  the keys URL is asked at most this often
#define SL_KEYWATCH_FETCH_TIMEOUT_MS 2000   //  the longest a fetch may take
#define SL_KEYWATCH_FETCH_MAX (16u << 20)   //  the largest served set taken

typedef struct _sl_keywatch_t sl_keywatch_t;

//  After a reload: loaded is true when keyring is the new one, false when
//  the file was refused and keyring is the one that stays (borrowed).
typedef void (sl_keywatch_fn) (void *arg, sl_keyring_t *keyring, bool loaded);

//  path: the keys file ("" or NULL: none); list: SLUICE_CLIENT_KEYS, used
//  when there is no file (NULL or "": none). Registers the reload metrics,
//  the service's reload hook and, with a file and watch_ms > 0, the timer
//  that looks for changes. NULL when the file does not load (logged): the
//  process must not start.
sl_keywatch_t *sl_keywatch_new (sl_service_t *service, const char *path, const char *list, int64_t watch_ms);
void sl_keywatch_destroy (sl_keywatch_t **self_p);
void sl_keywatch_on_reload (sl_keywatch_t *self, sl_keywatch_fn *fn, void *arg);

//  Fetch the keys the console issued from url (http or https), sending
//  token ("" or NULL: none) as Bearer, now and every watch_ms (at least
//  SL_KEYWATCH_FETCH_MIN_MS). open_until_issued: without a file or a
//  list, no keys at all (every client let through) while the audit says
//  its console has issued none, ever (the set's "issued" is 0): a stack
//  on loopback (make run) stays open until its first key, then checks
//  keys for good. 0 ok, -1 (logged) when the URL is not one.
int sl_keywatch_set_url (sl_keywatch_t *self, const char *url, const char *token, bool open_until_issued);
//  The running keyring (borrowed: sl_keyring_ref to keep it), or NULL when
//  no file and no list was given.
sl_keyring_t *sl_keywatch_keyring (sl_keywatch_t *self);
//  The public keys of the running keyring's jwt section (loaded with
//  it: a key file that does not load fails the keys file), NULL when it
//  has none. Borrowed until the next reload.
sl_jwtkeys_t *sl_keywatch_jwtkeys (sl_keywatch_t *self);
//  True when there is a file (reloads mean something).
bool sl_keywatch_has_file (sl_keywatch_t *self);
//  Read the file again (what SIGHUP does): 0 when the new keys run, -1
//  when it did not load and the running ones stay.
int sl_keywatch_reload (sl_keywatch_t *self);
//  Read the file again if it, or a key file its jwt section names, changed
//  since it was last read (what the timer does): true when it was read.
bool sl_keywatch_check (sl_keywatch_t *self);

#endif
