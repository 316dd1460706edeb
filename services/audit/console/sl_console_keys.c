/*  sl_console_keys.c - the console's keys API (see sl_console_keys.h). */
#include "services/audit/console/sl_console_keys.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/base/sl_name.h"
#include "common/identity/sl_keyid.h"
#include "services/audit/store/sl_keystore.h"

#define S_PREFIX "/api/keys"
#define S_BEARER "Bearer "
#define S_ROTATE "/rotate"



//  The Bearer credential of the request, or NULL.
static const char *
s_bearer (const sl_console_req_t *req)
{
    const char *a = sl_console_header (req, "Authorization");
    return a && strncasecmp (a, S_BEARER, strlen (S_BEARER)) == 0 ? a + strlen (S_BEARER) : NULL;
}

//  Who may manage keys: an admin (a person signed in with the role, an
//  admin console key, or this machine on a console without keys or
//  sign-in), as sl_console_caller_role decided for the request.
static bool
s_caller_is_admin (const sl_console_keys_ctx_t *ctx)
{
    return ctx->caller && ctx->caller->role == SL_CONSOLE_ADMIN;
}

bool
sl_console_keys_is_gateway (const char *token, const sl_console_req_t *req)
{
    const char *given = s_bearer (req);
    if (!given || !token || !*token)
        return false;
    //  Compared as hashes: equal length, constant time.
    unsigned char a [crypto_hash_sha256_BYTES], b [crypto_hash_sha256_BYTES];
    crypto_hash_sha256 (a, (const unsigned char *) given, strlen (given));
    crypto_hash_sha256 (b, (const unsigned char *) token, strlen (token));
    return sodium_memcmp (a, b, sizeof a) == 0;
}

//  Whether the request holds the gateways' keys token.
static bool
s_caller_is_gateway (const sl_console_keys_ctx_t *ctx, const sl_console_req_t *req)
{
    return sl_console_keys_is_gateway (ctx->token, req);
}

#define S_WHO_MAX 256                   //  a person: name <email> (sub)

//  Who asked, as the key events name them: the person or console key the
//  console took the caller for (name <email> (sub), <name> (key:<name>)),
//  "console" for this machine on a console without keys or sign-in.
static void
s_who (const sl_console_keys_ctx_t *ctx, char *out, size_t size)
{
    if (ctx->caller && ctx->caller->sub [0])
        sl_console_role_label (ctx->caller, out, size);
    else
        snprintf (out, size, "console");
}

static bool
s_is_json (const sl_console_req_t *req)
{
    const char *type = sl_console_header (req, "Content-Type");
    return type && strncasecmp (type, "application/json", 16) == 0;
}

//  Whether a change can be entered in the chain: one that cannot is
//  refused, never made unrecorded.
static bool
s_chained (const sl_console_keys_ctx_t *ctx, sl_console_resp_t *resp)
{
    if (ctx->chain)
        return true;
    sl_console_error (resp, 503, "no hash chain to record a key's change in");
    return false;
}

static void
s_create (const sl_console_keys_ctx_t *ctx, const sl_console_req_t *req, sl_console_resp_t *resp)
{
    char why [SL_KEYSTORE_WHY_MAX];
    sl_keyspec_t spec;
    if (!s_chained (ctx, resp))
        return;
    if (sl_keyspec_parse (req->body, &spec, why)) {
        sl_console_error (resp, 400, why);
        return;
    }
    char by [S_WHO_MAX];
    s_who (ctx, by, sizeof by);
    sl_keystore_issued_t issued;
    if (sl_keystore_create (ctx->store, ctx->chain, &spec, by, ctx->now, &issued))
        sl_console_store_error (ctx->store, resp);
    else {
        sl_buf_puts (&resp->body, "{\"id\":");
        sl_json_put_str (&resp->body, issued.id, strlen (issued.id));
        sl_buf_printf (&resp->body, ",\"key\":\"%s\"}", issued.key);
        sl_console_json (resp, 201);
    }
    sodium_memzero (issued.key, sizeof issued.key);
    sl_keyspec_clear (&spec);
}

static void
s_rotate (const sl_console_keys_ctx_t *ctx, const sl_console_req_t *req, const char *id,
          sl_console_resp_t *resp)
{
    char why [SL_KEYSTORE_WHY_MAX];
    int64_t grace = 0;
    if (!s_chained (ctx, resp))
        return;
    if (sl_keystore_parse_rotate (req->body, &grace, why)) {
        sl_console_error (resp, 400, why);
        return;
    }
    char by [S_WHO_MAX];
    s_who (ctx, by, sizeof by);
    sl_keystore_issued_t issued;
    int rc = sl_keystore_rotate (ctx->store, ctx->chain, id, grace, by, ctx->now, &issued);
    if (rc < 0)
        sl_console_store_error (ctx->store, resp);
    else
    if (rc > 0)
        sl_console_error (resp, 404, "no key in force has this id");
    else {
        sl_buf_puts (&resp->body, "{\"id\":");
        sl_json_put_str (&resp->body, issued.id, strlen (issued.id));
        sl_buf_printf (&resp->body, ",\"key\":\"%s\",\"grace_until\":%lld}", issued.key,
                       (long long) (ctx->now + grace));
        sl_console_json (resp, 200);
    }
    sodium_memzero (issued.key, sizeof issued.key);
}

static void
s_revoke (const sl_console_keys_ctx_t *ctx, const char *id, sl_console_resp_t *resp)
{
    if (!s_chained (ctx, resp))
        return;
    char by [S_WHO_MAX];
    s_who (ctx, by, sizeof by);
    int rc = sl_keystore_revoke (ctx->store, ctx->chain, id, by, ctx->now);
    if (rc < 0)
        sl_console_store_error (ctx->store, resp);
    else
    if (rc > 0)
        sl_console_error (resp, 404, "no key in force has this id");
    else {
        sl_buf_puts (&resp->body, "{\"id\":");
        sl_json_put_str (&resp->body, id, strlen (id));
        sl_buf_printf (&resp->body, ",\"revoked_at\":%lld}", (long long) ctx->now);
        sl_console_json (resp, 200);
    }
}

//  The keys file's keys, as the list shows them: never a hash.
static void
s_file_keys (const sl_keyring_t *ring, sl_buf_t *out)
{
    sl_buf_putc (out, '[');
    for (size_t i = 0; i < sl_keyring_count (ring); i++) {
        const sl_keyentry_t *k = sl_keyring_at (ring, i);
        sl_buf_puts (out, i ? ",{\"id\":" : "{\"id\":");
        sl_json_put_str (out, k->id, strlen (k->id));
        sl_buf_puts (out, ",\"team\":");
        sl_json_put_str (out, k->team->name, strlen (k->team->name));
        sl_buf_puts (out, ",\"user\":");
        sl_json_put_str (out, k->user, strlen (k->user));
        sl_buf_puts (out, ",\"models\":");
        if (k->models) {
            sl_buf_putc (out, '[');
            for (size_t g = 0; k->models [g]; g++) {
                if (g)
                    sl_buf_putc (out, ',');
                sl_json_put_str (out, k->models [g], strlen (k->models [g]));
            }
            sl_buf_putc (out, ']');
        }
        else
            sl_buf_puts (out, "null");
        const sl_limits_spec_t *l = &k->limits;
        sl_buf_printf (out, ",\"limits\":{\"rpm\":%lld,\"concurrent\":%lld,\"tokens_per_day\":%lld,"
                            "\"budget\":{\"tokens\":%lld,\"usd\":%.6g}",
                       (long long) l->rpm, (long long) l->concurrent, (long long) l->tokens_per_day,
                       (long long) l->budget_tokens, l->budget_usd);
        //  Its alert thresholds, as the keys file gives them.
        if (l->alert_count) {
            sl_buf_puts (out, ",\"alerts\":{\"at\":[");
            for (size_t a = 0; a < l->alert_count; a++)
                sl_buf_printf (out, a ? ",%d" : "%d", l->alert_at [a]);
            sl_buf_puts (out, "]}");
        }
        sl_buf_putc (out, '}');
        sl_buf_printf (out, ",\"approver\":%s,\"read_only\":true}", k->approver ? "true" : "false");
    }
    sl_buf_putc (out, ']');
}

//  The keys in force whose rows give their chain entries' grants: a row
//  that does not is served to no gateway (fail closed: a key swapped into
//  the store gets in nowhere, nor does the key it replaced), the chain
//  broken and the key named in the log; the others are served, so a
//  revocation still reaches every gateway.
static void
s_served (const sl_console_keys_ctx_t *ctx, sl_console_resp_t *resp)
{
    sl_keystore_problem_t problem;
    int rc = sl_keystore_served (ctx->store, ctx->now, &resp->body, &problem);
    if (rc == 1 && problem.unsealed && ctx->chain) {
        //  A key issued before grants were chained, not resealed at
        //  start (the store was down then): resealed now, then read again.
        int resealed = 0, refused = 0;
        sl_keystore_problem_t why;
        if (sl_keystore_reseal (ctx->store, ctx->chain, ctx->now, &resealed, &refused, &why) == 0 && resealed) {
            sl_buf_reset (&resp->body);
            rc = sl_keystore_served (ctx->store, ctx->now, &resp->body, &problem);
        }
    }
    if (rc < 0) {
        sl_buf_reset (&resp->body);
        sl_console_store_error (ctx->store, resp);      //  the gateways keep their last good set
        return;
    }
    if (rc == 1) {
        //  Said once, not at every gateway's fetch.
        if (strcmp (ctx->served->logged, problem.detail) != 0) {
            sl_log_error ("chain_broken", "a key is served to no gateway: %s", problem.detail);
            snprintf (ctx->served->logged, sizeof ctx->served->logged, "%s", problem.detail);
        }
        if (ctx->chain)
            sl_chain_break (ctx->chain, problem.kind, problem.pos, problem.detail);
    }
    else
        ctx->served->logged [0] = 0;
    sl_console_json (resp, 200);
}

//  The id in /api/keys/{id}[/rotate] into id; false when it is not one.
static bool
s_id (const char *rest, size_t n, char id [SL_KEYSTORE_ID_MAX])
{
    if (!n || n >= SL_KEYSTORE_ID_MAX)
        return false;
    memcpy (id, rest, n);
    id [n] = 0;
    return sl_name_valid (id);
}

bool
sl_console_keys_handle (const sl_console_keys_ctx_t *ctx, const sl_console_req_t *req, sl_console_resp_t *resp)
{
    const char *path = req->path;
    size_t prefix = strlen (S_PREFIX);
    if (strncmp (path, S_PREFIX, prefix) != 0 || (path [prefix] && path [prefix] != '/'))
        return false;
    const char *rest = path [prefix] ? path + prefix + 1 : "";
    bool get = strcmp (req->method, "GET") == 0, post = strcmp (req->method, "POST") == 0;
    bool del = strcmp (req->method, "DELETE") == 0;
    if (get && strcmp (rest, "served") == 0) {
        if (!s_caller_is_gateway (ctx, req) && !s_caller_is_admin (ctx))
            sl_console_error (resp, 401, "the keys token (SLUICE_KEYS_TOKEN) or an admin is needed");
        else
            s_served (ctx, resp);
        return true;
    }
    if (!s_caller_is_admin (ctx)) {
        char why [160];
        if (ctx->caller && ctx->caller->role != SL_CONSOLE_NOBODY) {
            snprintf (why, sizeof why, "keys are managed by admins: this caller is a%s %s",
                      ctx->caller->role == SL_CONSOLE_AUDITOR || ctx->caller->role == SL_CONSOLE_ADMIN ? "n" : "",
                      sl_console_role_name (ctx->caller->role));
            sl_console_error (resp, 403, why);
        }
        else
        if (sl_console_auth_guarded (ctx->auth))
            sl_console_error (resp, 401, "keys are managed by admins: sign in, or a console key is needed");
        else
            sl_console_error (resp, 403, "keys are managed by admins: this console answers its own machine only");
        return true;
    }
    if (post && !s_is_json (req)) {
        sl_console_error (resp, 415, "send JSON");
        return true;
    }
    char id [SL_KEYSTORE_ID_MAX];
    size_t rotate = strlen (S_ROTATE), n = strlen (rest);
    if (!*rest) {
        if (post)
            s_create (ctx, req, resp);
        else
        if (get) {
            sl_buf_puts (&resp->body, "{\"keys\":");
            if (sl_keystore_list (ctx->store, ctx->now, &resp->body)) {
                sl_console_store_error (ctx->store, resp);
                return true;
            }
            sl_buf_puts (&resp->body, ",\"file\":");
            s_file_keys (ctx->file, &resp->body);
            sl_buf_putc (&resp->body, '}');
            sl_console_json (resp, 200);
        }
        else
            sl_console_error (resp, 405, "method not allowed");
    }
    else
    if (get && strcmp (rest, "events") == 0) {
        sl_buf_puts (&resp->body, "{\"events\":");
        if (sl_keystore_events (ctx->store, 0, &resp->body)) {
            sl_console_store_error (ctx->store, resp);
            return true;
        }
        sl_buf_putc (&resp->body, '}');
        sl_console_json (resp, 200);
    }
    else
    if (n > rotate && strcmp (rest + n - rotate, S_ROTATE) == 0) {
        if (!post)
            sl_console_error (resp, 405, "method not allowed");
        else
        if (!s_id (rest, n - rotate, id))
            sl_console_error (resp, 404, "no key in force has this id");
        else
            s_rotate (ctx, req, id, resp);
    }
    else
    if (!del)
        sl_console_error (resp, strchr (rest, '/') ? 404 : 405, strchr (rest, '/') ? "no such API" : "method not allowed");
    else
    if (!s_id (rest, n, id))
        sl_console_error (resp, 404, "no key in force has this id");
    else
        s_revoke (ctx, id, resp);
    return true;
}
