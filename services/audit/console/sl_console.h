/*  sl_console.h - the web console's requests and answers, without sockets.

    sluice-audit serves its console (HTML, CSS and a little JavaScript
    built into the program, sl_embedded.h) and the JSON the pages read:

        GET  /                      the console (index.html), /app.js, /style.css
        GET  /login                 sign in with the provider (sl_oidc.h): a redirect to it
        GET  /login/callback        the provider's redirect back: a session cookie, then /
                                    (both answered when the provider has: SL_CONSOLE_WAIT)
        POST /api/login             {"key":...}: a session cookie for a console key
        POST /api/logout            ends the cookie's session (server side); with a
                                    provider, its end_session_endpoint ("end_session")
        GET  /api/me                who asks: role, sub, email, name, teams
        GET  /api/meta              the store, the audit's emitters, the gaps' total
        GET  /api/streams?...       search: from, to, tool, rule, action, check, model,
                                    provider, key, team, user, q (text), state, before, limit
        GET  /api/usage?from&to&group   tokens, estimated tokens, cost and requests per UTC
                                    day and team, user (team+user), model or all (sl_query_usage)
        GET  /api/streams/<sid>     one stream, whole
        GET  /api/stats?from&to&bucket   the charts' numbers
        GET  /api/shadow?rule&since&from&to&bucket&limit   what rules in shadow mode
                                    would have done, per rule: counts, over time, the
                                    calls, the streams (sl_query_shadow; since: sl_when.h)
        GET  /api/policies          what each judge runs, and its reload failures
        GET  /api/tools             the tool definitions seen, per team (sl_inventory.h):
                                    team=, name=, server=, changed=1, limit=
        GET  /api/gaps              records the emitters could not keep
        GET  /api/chain             the hash chain: head, verified up to when, the last
                                    checkpoint, where it is broken (the service fills it in)
        GET  /api/live              server-sent events: the snapshot, then every record
        GET  /api/capture/<sid>     a recorded stream as a capture, for "try it"
        POST /api/try               a policy over a capture (sl_tryit.h)
        POST /api/backtest          a policy over the recorded calls of a window, as
                                    sluice-policy backtest --json (sl_console_backtest.h)
        GET  /api/approvals?state=pending|decided   approvals from the store (sl_query_approvals)
        /api/keys...                the keys API (sl_console_keys.h)
        /api/alerts                 budget alerts: posted by the gateways, listed for
                                    every role (sl_console_alerts.h)
        GET  /api/usage/month       this month's spend per team and key, projected to
                                    its end beside the budgets (sl_monthuse.h)
        POST /api/approvals/<id>    a decision (sl_approvals_api.h), sent on to the judges by
                                    the service as a console user (SL_CONSOLE_DECIDE)

    Who may ask (sl_console_auth.h): with console keys (SLUICE_CONSOLE_KEYS,
    comma-separated), a request needs a key, as "Authorization: Bearer
    <key>" or as the session cookie a login gave (a logout ends its
    session here: the cookie, however copied, opens nothing after).
    Without keys, only clients on this machine (loopback) are answered,
    and only when the request names this machine (its Host a loopback
    name, its Origin, if any, a page of one: common/http/sl_loopback.h,
    against DNS rebinding); others get 403, saying why. The pages
    themselves hold no data and are served to anyone who may connect; the
    API refuses them.

    What each role may ask (sl_console_role.h): a viewer everything above
    but captures, "try it", a text search (q), decisions and policies,
    and what it gets carries no argument or message contents (content,
    arguments, last_user, message, a live block's text are null,
    "redacted": true; the live feed is redacted as it is sent,
    sl_live_redact: resp->caller says who asked);
    an auditor the contents, captures, "try it" and backtests too; an
    approver decisions on its teams' approvals, and the Pending page
    lists those only; an admin all, policies included. A refusal is 403,
    naming the role needed.

    Requests that change something (login, logout, try, a decision) must be JSON
    (Content-Type: application/json): a form on another site cannot send
    that without the browser asking first.
*/
#ifndef SL_CONSOLE_H
#define SL_CONSOLE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/approval/sl_approvals_api.h"
#include "common/identity/sl_keyring.h"
#include "common/base/sl_buf.h"
#include "services/audit/console/sl_console_auth.h"
#include "services/audit/console/sl_console_role.h"
#include "services/audit/console/sl_oidc.h"
#include "services/audit/store/sl_store.h"

typedef struct _sl_chain_t sl_chain_t;  //  services/audit/recorder/sl_chain.h

typedef struct _sl_console_t sl_console_t;
//  A sign-in waiting for the provider (SL_CONSOLE_WAIT).
typedef struct _sl_console_wait_t sl_console_wait_t;

//  A request, as the HTTP server hands it over (all borrowed).
typedef struct {
    const char *method;
    const char *path;                   //  without the query
    const char *(*query) (void *arg, const char *name);     //  a query argument, or NULL
    const char *(*header) (void *arg, const char *name);    //  a header, or NULL
    void *arg;
    sl_str_t body;
    bool loopback;                      //  the client is on this machine
} sl_console_req_t;

typedef enum {
    SL_CONSOLE_ANSWER = 0,              //  respond with status, type, body
    SL_CONSOLE_LIVE,                    //  authorized for /api/live: the caller streams it
    SL_CONSOLE_DECIDE,                  //  an authorized, well-formed decision: the caller sends it to
                                        //  the judges (approval, decision) and answers later
    SL_CONSOLE_WAIT                     //  a sign-in waiting for the provider: the caller
                                        //  answers it when sl_console_wait_on says (wait)
} sl_console_kind_t;

typedef struct {
    sl_console_kind_t kind;
    int status;
    const char *content_type;
    sl_buf_t body;
    char cookie [SL_CONSOLE_COOKIE_MAX];    //  a Set-Cookie value, or ""
    sl_buf_t location;                  //  a redirect's Location, or empty (the caller frees it)
    sl_console_caller_t caller;         //  who asked (SL_CONSOLE_DECIDE: who decides)
    const char *cache;                  //  a Cache-Control value, or NULL
    char approval [SL_APPROVALS_ID_HEX + 1];    //  SL_CONSOLE_DECIDE: the approval's id
    sl_approvals_parsed_t decision;     //  SL_CONSOLE_DECIDE: the decision (the caller clears it)
    sl_console_wait_t *wait;            //  SL_CONSOLE_WAIT: the sign-in waiting
} sl_console_resp_t;

//  A waiting sign-in's answer (status, location, cookie), once the
//  provider has answered (or could not be reached); resp is freed after.
typedef void (sl_console_answer_fn) (void *arg, sl_console_resp_t *resp);
//  Answer the sign-in through fn when it is had (exactly once, unless
//  dropped before).
void sl_console_wait_on (sl_console_wait_t *wait, sl_console_answer_fn *fn, void *arg);
//  Nobody waits for it any more (the browser left, or was answered that
//  the provider is too slow): fn is not called; the sign-in is freed when
//  the provider's answer, or its failure, comes.
void sl_console_wait_drop (sl_console_wait_t *wait);
//  The refusal page of a sign-in, saying why: a redirect to /?signin_error=.
void sl_console_sign_in_failed (sl_console_resp_t *resp, const char *why);
//  The answers every API of the console gives, shared by its parts
//  (sl_console_keys, sl_console_alerts): a request's header (NULL when
//  absent); JSON of status not to be cached (the body is the caller's);
//  {"error": why}; the store's failure as 503.
const char *sl_console_header (const sl_console_req_t *req, const char *name);
void sl_console_json (sl_console_resp_t *resp, int status);
void sl_console_error (sl_console_resp_t *resp, int status, const char *why);
void sl_console_store_error (sl_store_t *store, sl_console_resp_t *resp);

//  What /api/meta says beyond the store (the service fills it in).
typedef void (sl_console_meta_fn) (void *arg, sl_buf_t *out);

//  keys: comma-separated console keys, "" for none (loopback only).
sl_console_t *sl_console_new (sl_store_t *store, const char *keys);
void sl_console_destroy (sl_console_t **self_p);
void sl_console_on_meta (sl_console_t *self, sl_console_meta_fn *fn, void *arg);
//  What /api/chain answers (the whole JSON object; without it: 404).
void sl_console_on_chain (sl_console_t *self, sl_console_meta_fn *fn, void *arg);
//  The current time for sessions (ms); the service gives its clock.
void sl_console_set_clock (sl_console_t *self, int64_t (*clock) (void *arg), void *arg);
//  The token the gateways fetch the keys in force with (sl_console_keys.h).
void sl_console_set_keys_token (sl_console_t *self, const char *token);
//  The keys file's keys, listed read-only by GET /api/keys (a reference is
//  kept; NULL: none).
void sl_console_set_file_keys (sl_console_t *self, sl_keyring_t *keyring);
//  The hash chain a key's change is entered in (borrowed, outliving the
//  console; sl_keystore.h). Without one the keys API refuses changes.
void sl_console_set_chain (sl_console_t *self, sl_chain_t *chain);
//  Answer a request into resp (its body is the caller's to free).
void sl_console_handle (sl_console_t *self, const sl_console_req_t *req, sl_console_resp_t *resp);
//  Whether the console checks keys (else: loopback only).
bool sl_console_has_keys (sl_console_t *self);
//  People sign in with oidc (borrowed; NULL: not at all). This machine is
//  then no longer let in without a key or a session.
void sl_console_set_oidc (sl_console_t *self, sl_oidc_t *oidc);
//  Who asks, and their role (viewer < auditor < approver < admin): the
//  one call every API handler asks before answering. The caller's
//  identity (sub, email, name) and an approver's teams into caller;
//  SL_CONSOLE_NOBODY when the request is not let in at all.
sl_console_role_t sl_console_caller_role (sl_console_t *self, const sl_console_req_t *req,
                                          sl_console_caller_t *caller);

#endif
