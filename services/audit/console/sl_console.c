/*  sl_console.c - routing and answers of the console; who may ask is sl_console_auth (see sl_console.h). */
#include "services/audit/console/sl_console.h"

#include <ctype.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/http/sl_loopback.h"
#include "proto/sl_msg.h"
#include "services/audit/store/sl_embedded.h"
#include "services/audit/store/sl_inventory.h"
#include "services/audit/store/sl_query.h"
#include "services/audit/console/sl_console_backtest.h"
#include "services/audit/console/sl_console_alerts.h"
#include "services/audit/store/sl_monthuse.h"
#include "services/audit/console/sl_console_keys.h"
#include "services/audit/sl_when.h"
#include "services/audit/console/sl_tryit.h"

#define S_DAY_MS (24 * 3600 * 1000LL)
#define S_USAGE_DAYS 30                 //  /api/usage without from: this many days back
#define S_PENDING_MAX 10000             //  pending approvals looked through for an approver
#define S_SIGNIN_COOKIE "sluice_signin" //  a sign-in's state, in the browser that began it

struct _sl_console_t {
    sl_store_t *store;
    sl_console_auth_t *auth;            //  who may ask
    sl_console_meta_fn *meta;
    void *meta_arg;
    sl_console_meta_fn *chain;
    void *chain_arg;
    int64_t (*clock) (void *arg);
    void *clock_arg;
    char *keys_token;                   //  the gateways' keys token, NULL: none
    sl_keyring_t *file_keys;            //  the keys file's, listed read-only (a reference), NULL: none
    sl_chain_t *key_chain;              //  where key changes are entered (borrowed), NULL: none
    sl_console_served_t served;         //  the last key set served that matched the chain
    sl_oidc_t *oidc;                    //  sign-in with a provider, or NULL
};

sl_console_t *
sl_console_new (sl_store_t *store, const char *keys)
{
    sl_console_t *self = sl_xcalloc (1, sizeof *self);
    self->store = store;
    self->auth = sl_console_auth_new (keys);
    return self;
}

void
sl_console_destroy (sl_console_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_console_t *self = *self_p;
    sl_console_auth_destroy (&self->auth);
    free (self->keys_token);
    sl_keyring_unref (&self->file_keys);
    free (self);
    *self_p = NULL;
}

bool sl_console_has_keys (sl_console_t *self) { return sl_console_auth_has_keys (self->auth); }

void
sl_console_set_oidc (sl_console_t *self, sl_oidc_t *oidc)
{
    self->oidc = oidc;
    sl_console_auth_set_sign_in (self->auth, oidc != NULL);
}

void
sl_console_on_chain (sl_console_t *self, sl_console_meta_fn *fn, void *arg)
{
    self->chain = fn;
    self->chain_arg = arg;
}

void
sl_console_on_meta (sl_console_t *self, sl_console_meta_fn *fn, void *arg)
{
    self->meta = fn;
    self->meta_arg = arg;
}

void
sl_console_set_clock (sl_console_t *self, int64_t (*clock) (void *arg), void *arg)
{
    self->clock = clock;
    self->clock_arg = arg;
}

void
sl_console_set_keys_token (sl_console_t *self, const char *token)
{
    free (self->keys_token);
    self->keys_token = token && *token ? sl_xstrdup (token) : NULL;
}

void
sl_console_set_chain (sl_console_t *self, sl_chain_t *chain)
{
    self->key_chain = chain;
}

void
sl_console_set_file_keys (sl_console_t *self, sl_keyring_t *keyring)
{
    sl_keyring_unref (&self->file_keys);
    self->file_keys = sl_keyring_ref (keyring);
}

static int64_t
s_now (sl_console_t *self)
{
    return self->clock ? self->clock (self->clock_arg) : 0;
}

//  A header of the request, or NULL.
const char *
sl_console_header (const sl_console_req_t *req, const char *name)
{
    return req->header ? req->header (req->arg, name) : NULL;
}

//  --------------------------------------------------------------------------
//  Answers

static void
s_answer (sl_console_resp_t *resp, int status, const char *type)
{
    resp->kind = SL_CONSOLE_ANSWER;
    resp->status = status;
    resp->content_type = type;
}

void
sl_console_json (sl_console_resp_t *resp, int status)
{
    s_answer (resp, status, "application/json");
    resp->cache = "no-store";
}

void
sl_console_error (sl_console_resp_t *resp, int status, const char *why)
{
    sl_buf_reset (&resp->body);
    sl_buf_puts (&resp->body, "{\"error\":");
    sl_json_put_str (&resp->body, why, strlen (why));
    sl_buf_putc (&resp->body, '}');
    sl_console_json (resp, status);
}

void
sl_console_store_error (sl_store_t *store, sl_console_resp_t *resp)
{
    char why [300];
    snprintf (why, sizeof why, "the store failed: %s", sl_store_error (store));
    sl_console_error (resp, 503, why);
}

static const char *
s_type_of (const char *name)
{
    const char *dot = strrchr (name, '.');
    if (!dot)
        return "application/octet-stream";
    if (strcmp (dot, ".html") == 0)
        return "text/html; charset=utf-8";
    if (strcmp (dot, ".js") == 0)
        return "text/javascript; charset=utf-8";
    if (strcmp (dot, ".css") == 0)
        return "text/css; charset=utf-8";
    if (strcmp (dot, ".svg") == 0)
        return "image/svg+xml";
    return "application/octet-stream";
}

//  A file of the console (path "/" is its page).
static bool
s_static (const char *path, sl_console_resp_t *resp)
{
    char name [128];
    if (strcmp (path, "/") == 0 || strcmp (path, "/index.html") == 0)
        snprintf (name, sizeof name, "console/web/index.html");
    else
    if (strlen (path) < 64 && !strstr (path, "..") && !strchr (path + 1, '/'))
        snprintf (name, sizeof name, "console/web%s", path);
    else
        return false;
    const sl_embedded_t *file = sl_embedded_find (name);
    if (!file)
        return false;
    sl_buf_append (&resp->body, file->data, file->size);
    s_answer (resp, 200, s_type_of (name));
    resp->cache = "no-cache";
    return true;
}

static int64_t
s_arg_i64 (const sl_console_req_t *req, const char *name, int64_t def)
{
    const char *v = req->query ? req->query (req->arg, name) : NULL;
    if (!v || !*v)
        return def;
    char *end;
    long long n = strtoll (v, &end, 10);
    return *end ? def : (int64_t) n;
}

static const char *
s_arg (const sl_console_req_t *req, const char *name)
{
    const char *v = req->query ? req->query (req->arg, name) : NULL;
    return v && *v ? v : NULL;
}

static bool
s_sid_valid (const char *sid)
{
    if (!sid || strlen (sid) != 2 * SL_SID_SIZE)
        return false;
    for (const char *p = sid; *p; p++)
        if (!isxdigit ((unsigned char) *p) || isupper ((unsigned char) *p))
            return false;
    return true;
}

static bool
s_is_json (const sl_console_req_t *req)
{
    const char *type = req->header ? req->header (req->arg, "Content-Type") : NULL;
    return type && strncasecmp (type, "application/json", 16) == 0;
}

static void
s_login (sl_console_t *self, const sl_console_req_t *req, sl_console_resp_t *resp)
{
    if (!sl_console_auth_has_keys (self->auth)) {
        sl_console_error (resp, 400, "this console has no keys");
        return;
    }
    json_error_t err;
    json_t *root = json_loadb (req->body.ptr ? req->body.ptr : "", req->body.len, 0, &err);
    json_t *key = json_object_get (root, "key");
    sl_console_caller_t caller;
    bool ok = json_is_string (key)
           && sl_console_auth_key (self->auth, json_string_value (key), json_string_length (key), &caller) == 0;
    json_decref (root);
    if (!ok) {
        sl_console_error (resp, 401, "not a console key");
        return;
    }
    sl_console_auth_login (self->auth, &caller, s_now (self), resp->cookie);
    sl_buf_printf (&resp->body, "{\"ok\":true,\"role\":\"%s\"}", sl_console_role_name (caller.role));
    sl_console_json (resp, 200);
}

//  --------------------------------------------------------------------------
//  Roles

sl_console_role_t
sl_console_caller_role (sl_console_t *self, const sl_console_req_t *req, sl_console_caller_t *caller)
{
    return sl_console_auth_caller (self->auth, sl_console_header (req, "Authorization"), sl_console_header (req, "Cookie"),
                                   req->loopback, s_now (self), caller);
}

//  Refused unless caller's role is at least role: 403, naming it.
static bool
s_needs (const sl_console_caller_t *caller, sl_console_role_t role, sl_console_resp_t *resp)
{
    if (caller->role >= role)
        return true;
    char why [160];
    snprintf (why, sizeof why, "this needs the %s role (you are %s)", sl_console_role_name (role),
              sl_console_role_name (caller->role));
    sl_console_error (resp, 403, why);
    return false;
}

//  A viewer's answer: the JSON in resp's body without contents. Fails
//  closed: an answer that cannot be read is not sent.
static void
s_redact (sl_console_resp_t *resp)
{
    json_t *root = json_loadb (resp->body.data ? resp->body.data : "", resp->body.len, 0, NULL);
    char *text = NULL;
    if (json_is_object (root)) {
        sl_console_role_redact (root);
        json_object_set_new (root, "redacted", json_true ());
        text = json_dumps (root, JSON_COMPACT);
    }
    json_decref (root);
    sl_buf_reset (&resp->body);
    if (text)
        sl_buf_puts (&resp->body, text);
    else
        sl_console_error (resp, 500, "the answer could not be redacted");
    free (text);
}

static const char *
s_approval_team (json_t *approval)
{
    return json_string_value (json_object_get (json_object_get (approval, "identity"), "team"));
}

//  An approver's list: only its teams' approvals.
static void
s_approvals_of_teams (const sl_console_caller_t *caller, sl_console_resp_t *resp)
{
    json_t *root = json_loadb (resp->body.data ? resp->body.data : "", resp->body.len, 0, NULL);
    json_t *list = json_object_get (root, "approvals");
    json_t *kept = json_array ();
    size_t i;
    json_t *a;
    json_array_foreach (list, i, a)
        if (sl_console_role_decides_for (caller, s_approval_team (a)))
            json_array_append (kept, a);
    json_t *out = json_pack ("{s:o, s:[]}", "approvals", kept, "teams");
    for (int t = 0; t < caller->team_count; t++)
        json_array_append_new (json_object_get (out, "teams"), json_string (caller->teams [t]));
    char *text = json_dumps (out, JSON_COMPACT);
    json_decref (out);
    json_decref (root);
    sl_buf_reset (&resp->body);
    sl_buf_puts (&resp->body, text ? text : "{\"approvals\":[]}");
    free (text);
}

//  Whether caller may decide approval id: an admin any (the judges hold
//  them); an approver one of its teams, pending in the store.
static int
s_may_decide (sl_console_t *self, const sl_console_caller_t *caller, const char *id, sl_console_resp_t *resp)
{
    if (caller->role == SL_CONSOLE_ADMIN)
        return 0;
    sl_buf_t pending = { 0 };
    if (sl_query_approvals (self->store, "pending", S_PENDING_MAX, &pending) < 0) {
        sl_buf_free (&pending);
        sl_console_store_error (self->store, resp);
        return -1;
    }
    json_t *root = json_loadb (pending.data ? pending.data : "", pending.len, 0, NULL);
    sl_buf_free (&pending);
    const char *team = NULL;
    bool found = false;
    size_t i;
    json_t *a;
    json_array_foreach (json_object_get (root, "approvals"), i, a)
        if (!found && json_is_string (json_object_get (a, "id"))
        &&  strcmp (json_string_value (json_object_get (a, "id")), id) == 0) {
            found = true;
            team = s_approval_team (a);
        }
    bool ok = found && sl_console_role_decides_for (caller, team);
    json_decref (root);
    if (!found)
        sl_console_error (resp, 404, "no pending approval has this id");
    else
    if (!ok)
        sl_console_error (resp, 403, "this approval is of a team you do not approve for");
    return ok ? 0 : -1;
}

static void
s_me (const sl_console_caller_t *caller, sl_console_resp_t *resp)
{
    json_t *teams = json_array ();
    for (int t = 0; t < caller->team_count; t++)
        json_array_append_new (teams, json_string (caller->teams [t]));
    json_t *me = json_pack ("{s:s, s:s, s:s, s:s, s:o}", "role", sl_console_role_name (caller->role), "sub",
                            caller->sub, "email", caller->email, "name", caller->name, "teams", teams);
    char *text = me ? json_dumps (me, JSON_COMPACT) : NULL;
    json_decref (me);
    sl_buf_puts (&resp->body, text ? text : "{}");
    free (text);
    sl_console_json (resp, 200);
}

//  --------------------------------------------------------------------------
//  Sign-in with a provider

//  Send the browser to location.
static void
s_redirect (sl_console_resp_t *resp, const char *location)
{
    sl_buf_reset (&resp->location);
    sl_buf_puts (&resp->location, location);
    sl_buf_puts (&resp->body, "redirecting\n");
    s_answer (resp, 302, "text/plain");
    resp->cache = "no-store";
}

//  Back to the console's page, which shows why sign-in failed.
void
sl_console_sign_in_failed (sl_console_resp_t *resp, const char *why)
{
    sl_buf_t to = { 0 };
    sl_buf_puts (&to, "/?signin_error=");
    for (const unsigned char *p = (const unsigned char *) why; *p; p++)
        if (isalnum (*p) || *p == '-' || *p == '.' || *p == '_')
            sl_buf_putc (&to, (char) *p);
        else
            sl_buf_printf (&to, "%%%02X", *p);
    s_redirect (resp, sl_buf_cstr (&to));
    sl_buf_free (&to);
}

//  Whether the request's sign-in cookie holds state.
static bool
s_signin_cookie_is (const sl_console_req_t *req, const char *state)
{
    const char *cookies = sl_console_header (req, "Cookie");
    const char *name = S_SIGNIN_COOKIE "=";
    for (const char *p = cookies; state && p && *p;) {
        while (*p == ' ' || *p == ';')
            p++;
        if (strncmp (p, name, strlen (name)) == 0) {
            p += strlen (name);
            size_t n = strcspn (p, ";");
            return n == strlen (state) && sodium_memcmp (p, state, n) == 0;
        }
        p = strchr (p, ';');
    }
    return false;
}

//  A sign-in waiting for the provider: its answer, and who waits for it.
struct _sl_console_wait_t {
    sl_console_t *console;
    sl_console_resp_t resp;             //  the answer, once had
    bool asked;                         //  sl_oidc is still inside the call that began it
    bool answered;
    bool dropped;                       //  nobody waits any more: freed when answered
    sl_console_answer_fn *fn;
    void *arg;
};

//  The answer is had: to the request still being handled, or to whoever
//  waits for it.
static void
s_wait_answered (sl_console_wait_t *wait)
{
    wait->answered = true;
    if (wait->asked)
        return;                         //  s_sign_in answers it
    if (!wait->dropped && wait->fn)
        wait->fn (wait->arg, &wait->resp);
    sl_buf_free (&wait->resp.body);
    sl_buf_free (&wait->resp.location);
    free (wait);
}

static void
s_on_begun (void *arg, int rc, const char *url, const char *state, const char *why)
{
    sl_console_wait_t *wait = arg;
    sl_console_resp_t *resp = &wait->resp;
    if (rc)
        sl_console_sign_in_failed (resp, why);
    else {
        s_redirect (resp, url);
        //  The state goes with this browser: a callback elsewhere (a
        //  link someone sent, to sign the victim in as them) lacks it.
        //  Lax: the provider's redirect back is a top-level GET from
        //  another site.
        snprintf (resp->cookie, sizeof resp->cookie, "%s=%s; Path=/login; HttpOnly; SameSite=Lax; Max-Age=%d",
                  S_SIGNIN_COOKIE, state, SL_OIDC_LOGIN_MS / 1000);
    }
    s_wait_answered (wait);
}

static void
s_on_finished (void *arg, int rc, const sl_console_caller_t *caller, const char *why)
{
    sl_console_wait_t *wait = arg;
    sl_console_t *self = wait->console;
    if (rc)
        sl_console_sign_in_failed (&wait->resp, why);
    else {
        sl_console_auth_login (self->auth, caller, s_now (self), wait->resp.cookie);
        s_redirect (&wait->resp, "/");
    }
    s_wait_answered (wait);
}

static void
s_sign_in (sl_console_t *self, const sl_console_req_t *req, sl_console_resp_t *resp)
{
    char why [SL_OIDC_WHY_MAX];
    if (!self->oidc) {
        sl_console_error (resp, 404, "sign-in with a provider is not configured (SLUICE_OIDC_ISSUER)");
        return;
    }
    bool begin = strcmp (req->path, "/login") == 0;
    const char *error = s_arg (req, "error");
    if (!begin && !s_signin_cookie_is (req, s_arg (req, "state"))) {
        sl_console_sign_in_failed (resp, "this sign-in did not begin in this browser (state): sign in again");
        return;
    }
    if (!begin && error) {
        snprintf (why, sizeof why, "the provider said: %.100s", error);
        sl_console_sign_in_failed (resp, why);
        return;
    }
    //  The provider is asked: the answer comes when it has answered,
    //  now (a provider that cannot be asked) or later (SL_CONSOLE_WAIT).
    sl_console_wait_t *wait = sl_xcalloc (1, sizeof *wait);
    wait->console = self;
    wait->asked = true;
    if (begin)
        sl_oidc_begin_async (self->oidc, s_now (self), s_on_begun, wait);
    else
        sl_oidc_finish_async (self->oidc, s_arg (req, "code"), s_arg (req, "state"), s_now (self), s_on_finished,
                              wait);
    wait->asked = false;
    if (wait->answered) {
        sl_buf_free (&resp->location);
        memcpy (resp->cookie, wait->resp.cookie, sizeof resp->cookie);
        resp->location = wait->resp.location;
        sl_buf_free (&wait->resp.body);
        resp->kind = wait->resp.kind;
        resp->status = wait->resp.status;
        resp->content_type = wait->resp.content_type;
        resp->cache = wait->resp.cache;
        free (wait);
        return;
    }
    resp->kind = SL_CONSOLE_WAIT;
    resp->wait = wait;
}

void
sl_console_wait_on (sl_console_wait_t *wait, sl_console_answer_fn *fn, void *arg)
{
    wait->fn = fn;
    wait->arg = arg;
}

void
sl_console_wait_drop (sl_console_wait_t *wait)
{
    if (wait)
        wait->dropped = true;
}

//  A budget of the keys file's (sl_monthuse_budget_fn): a team's, or a key's by its id.
static bool
s_budget (void *arg, bool team, const char *name, double *usd, int64_t *tokens)
{
    const sl_keyring_t *ring = arg;
    const sl_limits_spec_t *limits = NULL;
    if (!ring)
        return false;
    if (team) {
        const sl_team_t *t = sl_keyring_team (ring, name);
        limits = t ? &t->limits : NULL;
    }
    else
        for (size_t i = 0; i < sl_keyring_count (ring) && !limits; i++)
            if (strcmp (sl_keyring_at (ring, i)->id, name) == 0)
                limits = &sl_keyring_at (ring, i)->limits;
    if (!limits)
        return false;
    *usd = limits->budget_usd;
    *tokens = limits->budget_tokens;
    return true;
}

static void
s_streams (sl_console_t *self, const sl_console_req_t *req, sl_console_resp_t *resp)
{
    sl_query_filter_t f = {
        .from = s_arg_i64 (req, "from", 0),
        .to = s_arg_i64 (req, "to", 0),
        .before = s_arg_i64 (req, "before", 0),
        .tool = s_arg (req, "tool"),
        .rule = s_arg (req, "rule"),
        .action = s_arg (req, "action"),
        .check = s_arg (req, "check"),
        .model = s_arg (req, "model"),
        .provider = s_arg (req, "provider"),
        .client_key = s_arg (req, "key"),
        .team = s_arg (req, "team"),
        .user = s_arg (req, "user"),
        .text = s_arg (req, "q"),
        .state = s_arg (req, "state"),
        .limit = (int) s_arg_i64 (req, "limit", 0)
    };
    if (sl_query_streams (self->store, &f, &resp->body))
        sl_console_store_error (self->store, resp);
    else
        sl_console_json (resp, 200);
}

static void
s_stream (sl_console_t *self, const char *sid, sl_console_resp_t *resp)
{
    if (!s_sid_valid (sid)) {
        sl_console_error (resp, 400, "a stream id is 32 lowercase hex digits");
        return;
    }
    int rc = sl_query_stream (self->store, sid, &resp->body);
    if (rc < 0)
        sl_console_store_error (self->store, resp);
    else
    if (rc > 0)
        sl_console_error (resp, 404, "no such stream in the store");
    else
        sl_console_json (resp, 200);
}

//  A decision from the console: checked here, sent to the judges by the
//  service (SL_CONSOLE_DECIDE).
static void
s_decide (const sl_console_req_t *req, const char *id, sl_console_resp_t *resp)
{
    char why [SL_APPROVALS_WHY_MAX];
    if (!s_is_json (req))
        sl_console_error (resp, 415, "send JSON");
    else
    if (sl_approvals_parse (req->body, &resp->decision, why))
        sl_console_error (resp, 400, why);
    else
    if (!*id) {
        sl_approvals_parsed_clear (&resp->decision);
        sl_console_error (resp, 404, "no approval has this id (32 hex digits)");
    }
    else {
        resp->kind = SL_CONSOLE_DECIDE;
        snprintf (resp->approval, sizeof resp->approval, "%s", id);
    }
}

static void
s_api (sl_console_t *self, const sl_console_req_t *req, sl_console_resp_t *resp)
{
    const char *path = req->path;
    bool get = strcmp (req->method, "GET") == 0, post = strcmp (req->method, "POST") == 0;
    if (post && strcmp (path, "/api/login") == 0) {
        if (!s_is_json (req))
            sl_console_error (resp, 415, "send JSON");
        else
            s_login (self, req, resp);
        return;
    }
    sl_console_caller_t *caller = &resp->caller;
    sl_console_role_t role = sl_console_caller_role (self, req, caller);
    //  The keys API decides who may ask it (admins; the gateways' token,
    //  which is no console caller).
    sl_console_keys_ctx_t keys = { self->store, self->key_chain, self->auth, self->keys_token, s_now (self),
                                   self->file_keys, caller, &self->served };
    if (sl_console_keys_handle (&keys, req, resp))
        return;
    //  Alerts: posted with the gateways' token, read by every role.
    sl_console_alerts_ctx_t alerts = { self->store, self->key_chain, self->keys_token, s_now (self),
                                       role >= SL_CONSOLE_VIEWER };
    if (sl_console_alerts_handle (&alerts, req, resp))
        return;
    if (role == SL_CONSOLE_NOBODY) {
        if (sl_console_auth_guarded (self->auth) && self->oidc) {
            sl_console_error (resp, 401, "sign in (GET /login), or a console key (Authorization: Bearer)");
            //  The page offers the provider's sign-in.
            resp->body.len--;
            sl_buf_puts (&resp->body, ",\"sign_in\":true}");
        }
        else
        if (sl_console_auth_guarded (self->auth))
            sl_console_error (resp, 401, "a console key is needed (log in, or Authorization: Bearer)");
        else
            sl_console_error (resp, 403, "this console answers clients on its own machine only "
                                "(set SLUICE_CONSOLE_KEYS to open it to others)");
        return;
    }
    if (post && strcmp (path, "/api/logout") == 0) {
        if (!s_is_json (req)) {
            sl_console_error (resp, 415, "send JSON");
            return;
        }
        sl_console_auth_logout (self->auth, sl_console_header (req, "Cookie"), resp->cookie);
        const char *end = self->oidc && strncmp (caller->sub, "key:", 4) != 0 ? sl_oidc_end_session (self->oidc)
                                                                                : NULL;
        sl_buf_puts (&resp->body, "{\"ok\":true");
        if (end) {
            sl_buf_puts (&resp->body, ",\"end_session\":");
            sl_json_put_str (&resp->body, end, strlen (end));
        }
        sl_buf_putc (&resp->body, '}');
        sl_console_json (resp, 200);
        return;
    }
    if (post && strcmp (path, "/api/try") == 0) {
        if (!s_needs (caller, SL_CONSOLE_AUDITOR, resp))
            return;
        if (!s_is_json (req)) {
            sl_console_error (resp, 415, "send JSON");
            return;
        }
        int rc = sl_tryit_run (req->body, &resp->body);
        sl_console_json (resp, rc ? 400 : 200);
        return;
    }
    if (post && strcmp (path, "/api/backtest") == 0) {
        //  Auditors and above: the examples quote the calls' arguments.
        if (!s_needs (caller, SL_CONSOLE_AUDITOR, resp))
            return;
        if (!s_is_json (req)) {
            sl_console_error (resp, 415, "send JSON");
            return;
        }
        int rc = sl_console_backtest_run (self->store, req->body, s_now (self), &resp->body);
        if (rc < 0)
            sl_console_store_error (self->store, resp);
        else
            sl_console_json (resp, rc ? 400 : 200);
        return;
    }
    char id [SL_APPROVALS_ID_HEX + 1];
    sl_approvals_path_t approvals = sl_approvals_path (path, "/api/approvals", id);
    if (post && approvals == SL_APPROVALS_PATH_ONE) {
        if (s_needs (caller, SL_CONSOLE_APPROVER, resp) && (!*id || s_may_decide (self, caller, id, resp) == 0))
            s_decide (req, id, resp);
        return;
    }
    if (!get) {
        sl_console_error (resp, 405, "method not allowed");
        return;
    }
    if (approvals == SL_APPROVALS_PATH_LIST) {
        //  An approver's teams are sifted from a longer list.
        bool sifted = caller->role == SL_CONSOLE_APPROVER;
        int limit = sifted ? S_PENDING_MAX : (int) s_arg_i64 (req, "limit", 0);
        int rc = sl_query_approvals (self->store, s_arg (req, "state"), limit, &resp->body);
        if (rc < 0)
            sl_console_store_error (self->store, resp);
        else
        if (rc > 0)
            sl_console_error (resp, 400, "state is pending or decided");
        else {
            if (sifted)
                s_approvals_of_teams (caller, resp);
            if (caller->role == SL_CONSOLE_VIEWER)
                s_redact (resp);
            sl_console_json (resp, 200);
        }
        return;
    }
    if (strcmp (path, "/api/me") == 0) {
        s_me (caller, resp);
        return;
    }
    if (strcmp (path, "/api/live") == 0) {
        //  A viewer's feed is redacted as it is sent (sl_live_redact: who
        //  asked is in resp->caller).
        if (!s_needs (caller, SL_CONSOLE_VIEWER, resp))
            return;
        resp->kind = SL_CONSOLE_LIVE;
        resp->status = 200;
        resp->content_type = "text/event-stream";
        resp->cache = "no-store";
        return;
    }
    if (strcmp (path, "/api/meta") == 0) {
        sl_buf_printf (&resp->body, "{\"store\":\"%s\",\"schema\":%d,\"keys\":%s,\"sign_in\":%s,\"role\":\"%s\"",
                       sl_store_kind (self->store), sl_store_version (self->store),
                       sl_console_auth_has_keys (self->auth) ? "true" : "false", self->oidc ? "true" : "false",
                       sl_console_role_name (caller->role));
        if (self->meta)
            self->meta (self->meta_arg, &resp->body);
        sl_buf_putc (&resp->body, '}');
        sl_console_json (resp, 200);
        return;
    }
    if (strcmp (path, "/api/chain") == 0 && self->chain) {
        self->chain (self->chain_arg, &resp->body);
        resp->cache = "no-store";
        sl_console_json (resp, 200);
        return;
    }
    if (strcmp (path, "/api/streams") == 0) {
        //  A text search would tell a viewer what the contents hold.
        if (s_arg (req, "q") && !s_needs (caller, SL_CONSOLE_AUDITOR, resp))
            return;
        s_streams (self, req, resp);
        if (resp->status == 200 && caller->role == SL_CONSOLE_VIEWER)
            s_redact (resp);
        return;
    }
    if (strncmp (path, "/api/streams/", 13) == 0) {
        s_stream (self, path + 13, resp);
        if (resp->status == 200 && caller->role == SL_CONSOLE_VIEWER)
            s_redact (resp);
        return;
    }
    if (strcmp (path, "/api/stats") == 0) {
        int64_t now = s_now (self);
        int64_t to = s_arg_i64 (req, "to", now + 1);
        int64_t from = s_arg_i64 (req, "from", to - S_DAY_MS);
        if (sl_query_stats (self->store, from, to, s_arg_i64 (req, "bucket", 0), &resp->body))
            sl_console_store_error (self->store, resp);
        else
            sl_console_json (resp, 200);
        return;
    }
    if (strcmp (path, "/api/shadow") == 0) {
        //  since: a time as sluice-audit export takes it (7d, an ISO date,
        //  Unix seconds), or Unix ms as from; the last day by default.
        int64_t now = s_now (self);
        int64_t to = s_arg_i64 (req, "to", now + 1);
        int64_t from = s_arg_i64 (req, "from", to - S_DAY_MS);
        const char *since = s_arg (req, "since");
        if (since && sl_when_parse (since, now, &from)) {
            sl_console_error (resp, 400, "since is a time: 30m, 24h, 7d, an ISO 8601 UTC time or Unix seconds");
            return;
        }
        if (sl_query_shadow (self->store, s_arg (req, "rule"), from, to, s_arg_i64 (req, "bucket", 0),
                             (int) s_arg_i64 (req, "limit", 0), &resp->body))
            sl_console_store_error (self->store, resp);
        else
            sl_console_json (resp, 200);
        return;
    }
    if (strcmp (path, "/api/usage/month") == 0) {
        if (sl_monthuse_query (self->store, s_now (self), s_budget, self->file_keys, &resp->body))
            sl_console_store_error (self->store, resp);
        else
            sl_console_json (resp, 200);
        return;
    }
    if (strcmp (path, "/api/usage") == 0) {
        //  Whole UTC days: from the start of from's day, the last 30 by default.
        int64_t now = s_now (self);
        int64_t to = s_arg_i64 (req, "to", now + 1);
        int64_t from = s_arg_i64 (req, "from", to - S_USAGE_DAYS * S_DAY_MS);
        if (from > 0)
            from -= from % S_DAY_MS;
        int rc = sl_query_usage (self->store, from, to, s_arg (req, "group"), &resp->body);
        if (rc < 0)
            sl_console_store_error (self->store, resp);
        else
        if (rc > 0)
            sl_console_error (resp, 400, "group is team, user, model or all");
        else
            sl_console_json (resp, 200);
        return;
    }
    if (strcmp (path, "/api/policies") == 0) {
        if (!s_needs (caller, SL_CONSOLE_ADMIN, resp))
            return;
        if (sl_query_policies (self->store, &resp->body))
            sl_console_store_error (self->store, resp);
        else
            sl_console_json (resp, 200);
        return;
    }
    if (strcmp (path, "/api/tools") == 0) {
        const char *changed = s_arg (req, "changed");
        sl_inventory_filter_t f = {
            .team = s_arg (req, "team"), .name = s_arg (req, "name"), .server = s_arg (req, "server"),
            .changed = changed && (strcmp (changed, "1") == 0 || strcmp (changed, "true") == 0),
            .limit = (int) s_arg_i64 (req, "limit", 0)
        };
        if (sl_inventory_query (self->store, &f, &resp->body))
            sl_console_store_error (self->store, resp);
        else
            sl_console_json (resp, 200);
        return;
    }
    if (strcmp (path, "/api/gaps") == 0) {
        if (sl_query_gaps (self->store, (int) s_arg_i64 (req, "limit", 50), &resp->body))
            sl_console_store_error (self->store, resp);
        else
            sl_console_json (resp, 200);
        return;
    }
    if (strncmp (path, "/api/capture/", 13) == 0) {
        if (!s_needs (caller, SL_CONSOLE_AUDITOR, resp))
            return;
        const char *sid = path + 13;
        if (!s_sid_valid (sid)) {
            sl_console_error (resp, 400, "a stream id is 32 lowercase hex digits");
            return;
        }
        int rc = sl_tryit_capture (self->store, sid, &resp->body);
        if (rc < 0)
            sl_console_store_error (self->store, resp);
        else
        if (rc > 0)
            sl_console_error (resp, 404, "no such stream in the store");
        else
            sl_console_json (resp, 200);
        return;
    }
    sl_console_error (resp, 404, "no such API");
}

void
sl_console_handle (sl_console_t *self, const sl_console_req_t *req, sl_console_resp_t *resp)
{
    resp->kind = SL_CONSOLE_ANSWER;
    resp->cookie [0] = 0;
    resp->cache = NULL;
    sl_buf_reset (&resp->location);
    memset (&resp->caller, 0, sizeof resp->caller);
    resp->caller.role = SL_CONSOLE_NOBODY;
    //  Without keys the console trusts this machine, and a web page can
    //  make this machine's browser ask (DNS rebinding): a request naming
    //  another site in Host or Origin is refused (sl_loopback.h).
    if (!sl_console_auth_guarded (self->auth)) {
        const char *why = sl_loopback_refusal (req->header ? req->header (req->arg, "Host") : NULL,
                                               req->header ? req->header (req->arg, "Origin") : NULL);
        if (why) {
            sl_console_error (resp, 403, why);
            return;
        }
    }
    if (strncmp (req->path, "/api/", 5) == 0) {
        s_api (self, req, resp);
        return;
    }
    if (strcmp (req->method, "GET") != 0 && strcmp (req->method, "HEAD") != 0) {
        sl_console_error (resp, 405, "method not allowed");
        return;
    }
    if (strcmp (req->path, "/login") == 0 || strcmp (req->path, "/login/callback") == 0) {
        s_sign_in (self, req, resp);
        return;
    }
    if (!s_static (req->path, resp)) {
        sl_buf_puts (&resp->body, "not found\n");
        s_answer (resp, 404, "text/plain");
    }
}
