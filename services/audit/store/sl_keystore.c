/*  sl_keystore.c - client keys issued through the console (see sl_keystore.h). */
#include "services/audit/store/sl_keystore.h"

#include <jansson.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_name.h"
#include "common/identity/sl_keyring.h"
#include "services/audit/recorder/sl_chain.h"

#define S_ID_HEX 12                     //  hex digits of the key's hash in its id (as sluice-keys new)
#define S_CHAIN_KIND "key"              //  a key event's chain entries (sl_verify.c knows it)
#define S_GLOB_MAX 128                  //  bytes of one model glob
#define S_GRANT_COUNT 9                 //  columns of SL_KEYSTORE_GRANT_COLUMNS

//  The grant's columns' names and types (I integer, T text), in order.
static const char *s_grant_names [S_GRANT_COUNT] = {
    "sha256", "team", "user_name", "models", "limits", "approver", "prev_sha256", "prev_until", "revoked_at"
};
static const char s_grant_types [S_GRANT_COUNT + 1] = "TTTTTITII";

_Static_assert (SL_KEYSTORE_KEY_MAX == SL_KEYRING_KEY_MAX, "a key's text is sluice-keys'");
_Static_assert (SL_LIMITS_ALERTS_MAX == 8, "limits.alerts.at says at most 8");

//  --------------------------------------------------------------------------
//  Parsing

static int
s_refuse (char why [SL_KEYSTORE_WHY_MAX], const char *fmt, const char *what)
{
    snprintf (why, SL_KEYSTORE_WHY_MAX, fmt, what);
    return -1;
}

//  Only the members names lists; the first other is refused.
static int
s_only (json_t *object, const char *const *names, const char *where, char why [SL_KEYSTORE_WHY_MAX])
{
    const char *key;
    json_t *value;
    json_object_foreach (object, key, value) {
        bool known = false;
        for (size_t i = 0; names [i] && !known; i++)
            known = strcmp (key, names [i]) == 0;
        if (!known) {
            snprintf (why, SL_KEYSTORE_WHY_MAX, "unknown field '%.48s'%s", key, where);
            return -1;
        }
    }
    return 0;
}

//  A count limit: a whole number >= 0, or absent.
static int
s_count (json_t *limits, const char *name, char why [SL_KEYSTORE_WHY_MAX])
{
    json_t *v = json_object_get (limits, name);
    if (v && (!json_is_integer (v) || json_integer_value (v) < 0))
        return s_refuse (why, "limits.%s must be a whole number, 0 or more", name);
    return 0;
}

//  Alert thresholds, as the keys file's (sl_keyring.h): {"at": [50, 80,
//  100]}, percents 1 to 100, rising, SL_LIMITS_ALERTS_MAX at most.
static int
s_alerts (json_t *alerts, char why [SL_KEYSTORE_WHY_MAX])
{
    static const char *names [] = { "at", NULL };
    if (!json_is_object (alerts))
        return s_refuse (why, "%s must be an object, {\"at\": [50, 80, 100]}", "limits.alerts");
    if (s_only (alerts, names, " in limits.alerts", why))
        return -1;
    json_t *at = json_object_get (alerts, "at");
    if (!at)
        return 0;
    if (!json_is_array (at) || json_array_size (at) > SL_LIMITS_ALERTS_MAX)
        return s_refuse (why, "%s must be a list of at most 8 percents", "limits.alerts.at");
    json_int_t last = 0;
    size_t i;
    json_t *v;
    json_array_foreach (at, i, v) {
        if (!json_is_integer (v) || json_integer_value (v) < 1 || json_integer_value (v) > 100)
            return s_refuse (why, "%s must hold whole numbers from 1 to 100", "limits.alerts.at");
        //  Rising, so a crossing names each threshold once.
        if (json_integer_value (v) <= last) {
            snprintf (why, SL_KEYSTORE_WHY_MAX, "limits.alerts.at must rise (%lld after %lld)",
                      (long long) json_integer_value (v), (long long) last);
            return -1;
        }
        last = json_integer_value (v);
    }
    return 0;
}

static int
s_limits (json_t *limits, char why [SL_KEYSTORE_WHY_MAX])
{
    static const char *names [] = { "rpm", "concurrent", "tokens_per_day", "budget", "alerts", NULL };
    static const char *budget_names [] = { "tokens", "usd", NULL };
    if (!json_is_object (limits))
        return s_refuse (why, "%s must be an object", "limits");
    if (s_only (limits, names, " in limits", why)
    ||  s_count (limits, "rpm", why) || s_count (limits, "concurrent", why)
    ||  s_count (limits, "tokens_per_day", why))
        return -1;
    json_t *alerts = json_object_get (limits, "alerts");
    if (alerts && s_alerts (alerts, why))
        return -1;
    json_t *budget = json_object_get (limits, "budget");
    if (!budget)
        return 0;
    if (!json_is_object (budget))
        return s_refuse (why, "%s must be an object", "limits.budget");
    if (s_only (budget, budget_names, " in limits.budget", why) || s_count (budget, "tokens", why))
        return -1;
    json_t *usd = json_object_get (budget, "usd");
    if (usd && (!json_is_number (usd) || !isfinite (json_number_value (usd)) || json_number_value (usd) < 0))
        return s_refuse (why, "%s must be a number, 0 or more", "limits.budget.usd");
    return 0;
}

static int
s_models (json_t *models, char why [SL_KEYSTORE_WHY_MAX])
{
    if (!json_is_array (models) || json_array_size (models) == 0
    ||  json_array_size (models) > SL_KEYSTORE_GLOBS_MAX)
        return s_refuse (why, "models must be a list of 1 to %s model names or globs", "64");
    size_t i;
    json_t *glob;
    json_array_foreach (models, i, glob) {
        const char *g = json_string_value (glob);
        if (!g || !*g || strlen (g) > S_GLOB_MAX || strpbrk (g, "\n\r"))
            return s_refuse (why, "%s must hold model names or globs (text, one line)", "models");
    }
    return 0;
}

//  Text of one line, 1 to SL_KEYSTORE_TEXT_MAX bytes, no control character.
static bool
s_text_ok (const char *s)
{
    size_t n = s ? strlen (s) : 0;
    if (!n || n > SL_KEYSTORE_TEXT_MAX)
        return false;
    for (; *s; s++)
        if ((unsigned char) *s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

static char *
s_dump (json_t *v)
{
    return v ? json_dumps (v, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
}

int
sl_keyspec_parse (sl_str_t body, sl_keyspec_t *out, char why [SL_KEYSTORE_WHY_MAX])
{
    static const char *names [] = { "team", "user", "models", "limits", "approver", NULL };
    memset (out, 0, sizeof *out);
    why [0] = 0;
    json_error_t err;
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, JSON_REJECT_DUPLICATES, &err);
    int rc = -1;
    if (!json_is_object (root)) {
        s_refuse (why, "the body must be a JSON object%s", "");
        goto done;
    }
    if (s_only (root, names, "", why))
        goto done;
    const char *team = json_string_value (json_object_get (root, "team"));
    const char *user = json_string_value (json_object_get (root, "user"));
    json_t *models = json_object_get (root, "models");
    json_t *limits = json_object_get (root, "limits");
    json_t *approver = json_object_get (root, "approver");
    if (!team || !sl_name_valid (team) || strlen (team) > SL_KEYSTORE_TEXT_MAX) {
        s_refuse (why, "team is required: a name of [A-Za-z0-9._-], at most %s bytes", "128");
        goto done;
    }
    if (!s_text_ok (user)) {
        s_refuse (why, "user is required: text of one line, at most %s bytes", "128");
        goto done;
    }
    if (models && !json_is_null (models) && s_models (models, why))
        goto done;
    if (limits && !json_is_null (limits) && s_limits (limits, why))
        goto done;
    if (approver && !json_is_boolean (approver)) {
        s_refuse (why, "%s must be true or false", "approver");
        goto done;
    }
    out->team = sl_xstrdup (team);
    out->user = sl_xstrdup (user);
    out->models = json_is_array (models) ? s_dump (models) : NULL;
    out->limits = json_is_object (limits) && json_object_size (limits) ? s_dump (limits) : NULL;
    out->approver = json_is_true (approver);
    rc = 0;
done:
    json_decref (root);
    return rc;
}

void
sl_keyspec_clear (sl_keyspec_t *self)
{
    free (self->team);
    free (self->user);
    free (self->models);
    free (self->limits);
    memset (self, 0, sizeof *self);
}

int
sl_keystore_parse_rotate (sl_str_t body, int64_t *grace_ms, char why [SL_KEYSTORE_WHY_MAX])
{
    static const char *names [] = { "grace_seconds", NULL };
    *grace_ms = SL_KEYSTORE_GRACE_MS;
    why [0] = 0;
    sl_str_t text = sl_json_trim (body.ptr ? body : SL_STR_LIT (""));
    if (!text.len)
        return 0;
    json_error_t err;
    json_t *root = json_loadb (text.ptr, text.len, JSON_REJECT_DUPLICATES, &err);
    int rc = -1;
    if (!json_is_object (root))
        s_refuse (why, "the body must be a JSON object%s", "");
    else
    if (s_only (root, names, "", why) == 0) {
        json_t *g = json_object_get (root, "grace_seconds");
        if (g && (!json_is_integer (g) || json_integer_value (g) < 0
              ||  json_integer_value (g) > SL_KEYSTORE_GRACE_MAX_MS / 1000))
            s_refuse (why, "grace_seconds must be a whole number from 0 to %s", "2592000");
        else {
            if (g)
                *grace_ms = json_integer_value (g) * 1000;
            rc = 0;
        }
    }
    json_decref (root);
    return rc;
}

//  --------------------------------------------------------------------------
//  Changes

//  One row of key_events, inside the change's transaction, and its entry
//  in the hash chain (kind "key", ref the row's pos): the row's columns
//  are hashed as written, so verify names a key event changed, removed or
//  inserted (sl_verify.h). detail never holds the key or its hash.
//  The grant of a row whose SL_KEYSTORE_GRANT_COLUMNS start at first, as
//  values (borrowed from the row).
static void
s_grant_vals (const sl_row_t *row, int first, sl_val_t vals [S_GRANT_COUNT])
{
    for (int i = 0; i < S_GRANT_COUNT; i++) {
        int col = first + i;
        if (sl_row_null (row, col))
            vals [i] = sl_val_null ();
        else
        if (s_grant_types [i] == 'I')
            vals [i] = sl_val_int (sl_row_int (row, col));
        else
            vals [i] = sl_val_str (sl_row_text (row, col));
    }
}

typedef struct {
    sl_chain_t *chain;
    bool found;
} s_seal_t;

static int
s_seal_row (void *arg, const sl_row_t *row)
{
    s_seal_t *seal = arg;
    sl_val_t vals [S_GRANT_COUNT];
    s_grant_vals (row, 0, vals);
    sl_chain_data (seal->chain, vals, S_GRANT_COUNT);
    seal->found = true;
    return 1;
}

static int
s_event (sl_store_t *store, sl_chain_t *chain, int64_t now, const char *id, const char *action, const char *by,
         const char *detail)
{
    int64_t pos = 0;
    if (sl_store_query_int (store, "SELECT MAX(pos) FROM key_events", NULL, 0, 0, &pos))
        return -1;
    sl_val_t params [] = { sl_val_int (pos + 1), sl_val_int (now), sl_val_text (id), sl_val_text (action),
                           by ? sl_val_text (by) : sl_val_null (), detail ? sl_val_text (detail) : sl_val_null () };
    if (sl_store_exec (store, "INSERT INTO key_events (pos, at, key_id, action, by_whom, detail) "
                              "VALUES ($1, $2, $3, $4, $5, $6)", params, 6, NULL))
        return -1;
    if (!chain)
        return 0;
    char ref [32];
    snprintf (ref, sizeof ref, "%lld", (long long) (pos + 1));
    if (sl_chain_begin (chain, S_CHAIN_KIND, NULL, 0, 0, ref, now))
        return -1;
    sl_chain_row (chain, SL_CHAIN_KEY_EVENTS, params, 6);
    //  The key's row as the change left it, read back: what the entry
    //  vouches for is what the gateways will be served.
    s_seal_t seal = { chain, false };
    sl_val_t key [] = { sl_val_text (id) };
    if (sl_store_query (store, "SELECT " SL_KEYSTORE_GRANT_COLUMNS " FROM api_keys WHERE id = $1", key, 1,
                        s_seal_row, &seal) || !seal.found)
        return -1;
    sl_chain_end (chain);
    return 0;
}

//  The change's transaction: begun, and ended with its chain entry
//  written (sl_chain_flush) before the commit, or rolled back with it.
static int
s_begin (sl_store_t *store, sl_chain_t *chain)
{
    //  An entry another writer left pending would be committed with ours.
    if (chain && sl_chain_pending (chain))
        return -1;
    return sl_store_begin (store);
}

static int
s_commit (sl_store_t *store, sl_chain_t *chain)
{
    if ((chain && sl_chain_flush (chain)) || sl_store_commit (store))
        return -1;
    if (chain)
        sl_chain_committed (chain);
    return 0;
}

static void
s_rollback (sl_store_t *store, sl_chain_t *chain)
{
    sl_store_rollback (store);
    if (chain)
        sl_chain_abort (chain);
}

//  A fresh key, its hash and its id for team.
static void
s_issue (const char *team, sl_keystore_issued_t *out, char hex [SL_KEYRING_HEX_SIZE])
{
    sl_keyring_new_key (out->key);
    sl_keyring_key_hex (out->key, hex);
    snprintf (out->id, sizeof out->id, "%s-%.*s", team, S_ID_HEX, hex);
}

int
sl_keystore_create (sl_store_t *store, sl_chain_t *chain, const sl_keyspec_t *spec, const char *by,
                    int64_t now, sl_keystore_issued_t *out)
{
    char hex [SL_KEYRING_HEX_SIZE];
    //  An id is 48 bits of a random key's hash: a clash is not expected,
    //  and one that came would be refused by the key, never merged.
    s_issue (spec->team, out, hex);
    if (s_begin (store, chain))
        return -1;
    sl_val_t params [] = {
        sl_val_text (out->id), sl_val_text (hex), sl_val_text (spec->team), sl_val_text (spec->user),
        spec->models ? sl_val_text (spec->models) : sl_val_null (),
        spec->limits ? sl_val_text (spec->limits) : sl_val_null (),
        sl_val_int (spec->approver), sl_val_int (now), by ? sl_val_text (by) : sl_val_null ()
    };
    sl_buf_t detail = { 0 };
    sl_buf_puts (&detail, "{\"team\":");
    sl_json_put_str (&detail, spec->team, strlen (spec->team));
    sl_buf_puts (&detail, ",\"user\":");
    sl_json_put_str (&detail, spec->user, strlen (spec->user));
    sl_buf_printf (&detail, ",\"models\":%s,\"limits\":%s,\"approver\":%s}", spec->models ? spec->models : "null",
                   spec->limits ? spec->limits : "null", spec->approver ? "true" : "false");
    int rc = sl_store_exec (store, "INSERT INTO api_keys (id, sha256, team, user_name, models, limits, approver, "
                                   "created_at, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                            params, 9, NULL)
          || s_event (store, chain, now, out->id, "create", by, sl_buf_cstr (&detail))
          || s_commit (store, chain) ? -1 : 0;
    sl_buf_free (&detail);
    if (rc) {
        s_rollback (store, chain);
        sodium_memzero (out->key, sizeof out->key);
    }
    return rc;
}

int
sl_keystore_rotate (sl_store_t *store, sl_chain_t *chain, const char *id, int64_t grace_ms, const char *by,
                    int64_t now, sl_keystore_issued_t *out)
{
    if (s_begin (store, chain))
        return -1;
    sl_val_t key [] = { sl_val_text (id) };
    int64_t live = 0;
    if (sl_store_query_int (store, "SELECT COUNT(*) FROM api_keys WHERE id = $1 AND revoked_at IS NULL",
                            key, 1, 0, &live)) {
        s_rollback (store, chain);
        return -1;
    }
    if (!live) {
        s_rollback (store, chain);
        return 1;
    }
    char hex [SL_KEYRING_HEX_SIZE];
    sl_keystore_issued_t fresh;
    s_issue ("x", &fresh, hex);
    snprintf (out->id, sizeof out->id, "%s", id);
    memcpy (out->key, fresh.key, sizeof out->key);
    sodium_memzero (fresh.key, sizeof fresh.key);
    sl_val_t params [] = { sl_val_text (id), sl_val_text (hex), sl_val_int (now + grace_ms), sl_val_int (now) };
    char detail [64];
    snprintf (detail, sizeof detail, "{\"grace_ms\":%lld}", (long long) grace_ms);
    int rc = sl_store_exec (store, "UPDATE api_keys SET prev_sha256 = sha256, prev_until = $3, sha256 = $2, "
                                   "rotated_at = $4 WHERE id = $1", params, 4, NULL)
          || s_event (store, chain, now, id, "rotate", by, detail)
          || s_commit (store, chain) ? -1 : 0;
    if (rc) {
        s_rollback (store, chain);
        sodium_memzero (out->key, sizeof out->key);
    }
    return rc;
}

int
sl_keystore_revoke (sl_store_t *store, sl_chain_t *chain, const char *id, const char *by, int64_t now)
{
    if (s_begin (store, chain))
        return -1;
    sl_val_t params [] = { sl_val_text (id), sl_val_int (now) };
    int64_t changed = 0;
    if (sl_store_exec (store, "UPDATE api_keys SET revoked_at = $2, prev_sha256 = NULL, prev_until = NULL "
                              "WHERE id = $1 AND revoked_at IS NULL", params, 2, &changed)) {
        s_rollback (store, chain);
        return -1;
    }
    if (!changed) {
        s_rollback (store, chain);
        return 1;
    }
    if (s_event (store, chain, now, id, "revoke", by, NULL) || s_commit (store, chain)) {
        s_rollback (store, chain);
        return -1;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Grants against the chain

#define S_GRANT_OF_A "a.sha256, a.team, a.user_name, a.models, a.limits, a.approver, a.prev_sha256, " \
                     "a.prev_until, a.revoked_at"
//  A key's row (id, its grant) with its newest key event's entry's data
//  and position, and whether it waits for its reseal.
#define S_AGAINST_CHAIN "SELECT a.id, " S_GRANT_OF_A ", c.data, c.pos, CASE WHEN EXISTS (SELECT 1 FROM " \
                        "key_reseal r WHERE r.id = a.id) THEN 1 ELSE 0 END FROM api_keys a LEFT JOIN chain c " \
                        "ON c.kind = '" S_CHAIN_KIND "' AND c.ref = CAST((SELECT MAX(k.pos) FROM key_events k " \
                        "WHERE k.key_id = a.id) AS TEXT)"
#define S_COL_DATA (1 + S_GRANT_COUNT)
#define S_COL_POS (S_COL_DATA + 1)
#define S_COL_PENDING (S_COL_POS + 1)

//  The first of a row's grant columns (from first) that differs from the
//  grant data carries: its index, S_GRANT_COUNT when data is no grant,
//  -1 when all match.
static int
s_grant_differs (const sl_row_t *row, int first, sl_str_t data)
{
    if (!data.ptr)
        return S_GRANT_COUNT;
    json_t *grant = json_loadb (data.ptr, data.len, 0, NULL);
    int differs = json_is_array (grant) && json_array_size (grant) == S_GRANT_COUNT ? -1 : S_GRANT_COUNT;
    for (int i = 0; differs < 0 && i < S_GRANT_COUNT; i++) {
        json_t *v = json_array_get (grant, i);
        int col = first + i;
        bool same;
        if (sl_row_null (row, col))
            same = json_is_null (v);
        else
        if (s_grant_types [i] == 'I')
            same = json_is_integer (v) && json_integer_value (v) == sl_row_int (row, col);
        else {
            sl_str_t t = sl_row_text (row, col);
            same = t.ptr && json_is_string (v) && json_string_length (v) == t.len
                && memcmp (json_string_value (v), t.ptr, t.len) == 0;
        }
        if (!same)
            differs = i;
    }
    json_decref (grant);
    return differs;
}

static void
s_found (sl_keystore_problem_t *p, const char *kind, sl_str_t id, const char *column, int64_t pos,
         const char *sentence)
{
    p->kind = kind;
    snprintf (p->id, sizeof p->id, "%.*s", (int) id.len, id.ptr ? id.ptr : "");
    snprintf (p->column, sizeof p->column, "%s", column);
    p->pos = pos;
    snprintf (p->detail, sizeof p->detail, "%s: the api_keys row id=%s %s%s", kind, p->id, sentence, column);
}

typedef struct {
    sl_keystore_problem_t *problem;
    int64_t pending;
    bool serving;                       //  a row waiting for its reseal is not served either
    bool bad;
} s_against_t;

//  One key's row against its chain entry. 1 (stop) at the first problem.
static int
s_against_row (void *arg, const sl_row_t *row)
{
    s_against_t *a = arg;
    sl_str_t id = sl_row_text (row, 0);
    int64_t pos = sl_row_null (row, S_COL_POS) ? 0 : sl_row_int (row, S_COL_POS);
    if (sl_row_null (row, S_COL_DATA) && sl_row_int (row, S_COL_PENDING)) {
        if (!a->serving) {
            a->pending++;
            return 0;
        }
        s_found (a->problem, "changed", id, "", pos, "waits for its reseal (migration 012)");
        a->problem->unsealed = true;
        a->bad = true;
        return 1;
    }
    int differs = s_grant_differs (row, 1, sl_row_text (row, S_COL_DATA));
    if (differs < 0)
        return 0;
    if (differs == S_GRANT_COUNT)
        s_found (a->problem, "inserted", id, "", pos, "is in no key event's chain entry");
    else
        s_found (a->problem, "changed", id, s_grant_names [differs], pos,
                 "differs from its key event's chain entry in column ");
    a->bad = true;
    return 1;
}

static int
s_removed_row (void *arg, const sl_row_t *row)
{
    s_against_t *a = arg;
    s_found (a->problem, "removed", sl_row_text (row, 0), "", 0, "its chained key events made is gone");
    a->bad = true;
    return 1;
}

int
sl_keystore_check (sl_store_t *store, int64_t *pending, sl_keystore_problem_t *problem)
{
    memset (problem, 0, sizeof *problem);
    problem->kind = "";
    s_against_t a = { problem, 0, false, false };
    if (sl_store_query (store, S_AGAINST_CHAIN " ORDER BY a.id", NULL, 0, s_against_row, &a))
        return -1;
    if (!a.bad && sl_store_query (store, "SELECT k.key_id FROM key_events k WHERE NOT EXISTS (SELECT 1 FROM "
                                         "api_keys a WHERE a.id = k.key_id) ORDER BY k.pos LIMIT 1",
                                  NULL, 0, s_removed_row, &a))
        return -1;
    if (pending)
        *pending = a.pending;
    return a.bad ? 1 : 0;
}

//  A row issued before grants were chained, against its chained create
//  and revoke (teams, user, models, limits, approver flag, revoked).
typedef struct {
    bool found, same;
} s_create_t;

static bool
s_same_text (sl_str_t t, const char *v)
{
    return t.ptr && v && strlen (v) == t.len && memcmp (v, t.ptr, t.len) == 0;
}

static bool
s_same_json (sl_str_t t, json_t *v)
{
    if (!v || json_is_null (v))
        return !t.ptr;
    char *canon = s_dump (v);
    bool same = s_same_text (t, canon);
    free (canon);
    return same;
}

static int
s_create_row (void *arg, const sl_row_t *row)
{
    s_create_t *c = arg;
    sl_str_t detail = sl_row_text (row, 6);
    json_t *d = detail.ptr ? json_loadb (detail.ptr, detail.len, 0, NULL) : NULL;
    c->found = true;
    c->same = json_is_object (d)
           && s_same_text (sl_row_text (row, 0), json_string_value (json_object_get (d, "team")))
           && s_same_text (sl_row_text (row, 1), json_string_value (json_object_get (d, "user")))
           && s_same_json (sl_row_text (row, 2), json_object_get (d, "models"))
           && s_same_json (sl_row_text (row, 3), json_object_get (d, "limits"))
           && (sl_row_int (row, 4) != 0) == json_is_true (json_object_get (d, "approver"))
           && sl_row_null (row, 5) == (sl_row_int (row, 7) == 0);
    json_decref (d);
    return 1;
}

typedef struct {
    char **ids;
    size_t count, size;
} s_ids_t;

static int
s_id_row (void *arg, const sl_row_t *row)
{
    s_ids_t *l = arg;
    if (l->count == l->size) {
        l->size = l->size ? l->size * 2 : 16;
        l->ids = sl_xrealloc (l->ids, l->size * sizeof *l->ids);
    }
    sl_str_t id = sl_row_text (row, 0);
    l->ids [l->count++] = sl_xstrndup (id.ptr ? id.ptr : "", id.len);
    return 0;
}

//  One listed key: resealed (0), refused (1), resealed already (2), or
//  the store failed (-1).
static int
s_reseal_one (sl_store_t *store, sl_chain_t *chain, const char *id, int64_t now)
{
    if (s_begin (store, chain))
        return -1;
    sl_val_t key [] = { sl_val_text (id) };
    //  Another audit on the store (a rolling update) may have resealed
    //  it since the list was read.
    int64_t listed = 0;
    if (sl_store_query_int (store, "SELECT COUNT(*) FROM key_reseal WHERE id = $1", key, 1, 0, &listed)) {
        s_rollback (store, chain);
        return -1;
    }
    if (!listed) {
        s_rollback (store, chain);
        return 2;
    }
    s_create_t c = { false, false };
    if (sl_store_query (store, "SELECT a.team, a.user_name, a.models, a.limits, a.approver, a.revoked_at, k.detail, "
                               "(SELECT COUNT(*) FROM key_events r WHERE r.key_id = a.id AND r.action = 'revoke') "
                               "FROM api_keys a JOIN key_events k ON k.key_id = a.id AND k.action = 'create' "
                               "WHERE a.id = $1 ORDER BY k.pos LIMIT 1", key, 1, s_create_row, &c)) {
        s_rollback (store, chain);
        return -1;
    }
    if (!c.found || !c.same) {
        s_rollback (store, chain);
        return 1;
    }
    if (s_event (store, chain, now, id, "reseal", SL_KEYSTORE_RESEAL_BY, NULL)
    ||  sl_store_exec (store, "DELETE FROM key_reseal WHERE id = $1", key, 1, NULL)
    ||  s_commit (store, chain)) {
        s_rollback (store, chain);
        return -1;
    }
    return 0;
}

int
sl_keystore_reseal (sl_store_t *store, sl_chain_t *chain, int64_t now, int *resealed, int *refused,
                    sl_keystore_problem_t *problem)
{
    *resealed = *refused = 0;
    memset (problem, 0, sizeof *problem);
    problem->kind = "";
    if (!chain)
        return 0;
    s_ids_t l = { 0 };
    int rc = sl_store_query (store, "SELECT id FROM key_reseal ORDER BY id", NULL, 0, s_id_row, &l);
    for (size_t i = 0; rc == 0 && i < l.count; i++) {
        int one = s_reseal_one (store, chain, l.ids [i], now);
        if (one < 0)
            rc = -1;
        else
        if (one == 0)
            (*resealed)++;
        else
        if (one == 1 && (*refused)++ == 0)
            s_found (problem, "changed", sl_str (l.ids [i]), "", 0,
                     "no longer gives what its chained create and revoke say: not resealed");
    }
    for (size_t i = 0; i < l.count; i++)
        free (l.ids [i]);
    free (l.ids);
    return rc;
}

//  --------------------------------------------------------------------------
//  Reading

typedef struct {
    sl_buf_t *out;
    int64_t now;
    int count;
} s_list_t;

static void
s_put_text (sl_buf_t *out, const char *name, sl_str_t v)
{
    sl_buf_printf (out, ",\"%s\":", name);
    if (v.ptr)
        sl_json_put_sl (out, v);
    else
        sl_buf_puts (out, "null");
}

static void
s_put_json (sl_buf_t *out, const char *name, sl_str_t v)
{
    sl_buf_printf (out, ",\"%s\":", name);
    if (v.ptr && sl_json_valid (v))
        sl_json_put_raw (out, v);
    else
        sl_buf_puts (out, "null");
}

static void
s_put_int (sl_buf_t *out, const char *name, const sl_row_t *row, int col)
{
    if (sl_row_null (row, col))
        sl_buf_printf (out, ",\"%s\":null", name);
    else
        sl_buf_printf (out, ",\"%s\":%lld", name, (long long) sl_row_int (row, col));
}

#define S_LIST_COLUMNS "id, team, user_name, models, limits, approver, created_at, created_by, rotated_at, " \
                       "prev_until, revoked_at"

static int
s_list_row (void *arg, const sl_row_t *row)
{
    s_list_t *l = arg;
    sl_buf_t *out = l->out;
    sl_buf_puts (out, l->count++ ? ",{\"id\":" : "{\"id\":");
    sl_json_put_sl (out, sl_row_text (row, 0));
    s_put_text (out, "team", sl_row_text (row, 1));
    s_put_text (out, "user", sl_row_text (row, 2));
    s_put_json (out, "models", sl_row_text (row, 3));
    s_put_json (out, "limits", sl_row_text (row, 4));
    sl_buf_printf (out, ",\"approver\":%s", sl_row_int (row, 5) ? "true" : "false");
    s_put_int (out, "created_at", row, 6);
    s_put_text (out, "created_by", sl_row_text (row, 7));
    s_put_int (out, "rotated_at", row, 8);
    //  A grace that ended is no grace.
    if (!sl_row_null (row, 9) && sl_row_int (row, 9) > l->now)
        s_put_int (out, "grace_until", row, 9);
    else
        sl_buf_puts (out, ",\"grace_until\":null");
    s_put_int (out, "revoked_at", row, 10);
    sl_buf_printf (out, ",\"state\":\"%s\"}", sl_row_null (row, 10) ? "active" : "revoked");
    return 0;
}

int
sl_keystore_list (sl_store_t *store, int64_t now, sl_buf_t *out)
{
    s_list_t l = { out, now, 0 };
    size_t mark = out->len;
    sl_buf_putc (out, '[');
    if (sl_store_query (store, "SELECT " S_LIST_COLUMNS " FROM api_keys ORDER BY created_at DESC, id",
                        NULL, 0, s_list_row, &l)) {
        out->len = mark;
        return -1;
    }
    sl_buf_putc (out, ']');
    return 0;
}

typedef struct {
    s_list_t list;
    s_against_t against;
} s_served_t;

//  A row of S_AGAINST_CHAIN in force: served when it gives its grant,
//  left out when it does not (the first such row named in the problem;
//  a later one waiting for its reseal marks the problem so too).
static int
s_served_row (void *arg, const sl_row_t *row)
{
    s_served_t *s = arg;
    sl_keystore_problem_t later;
    memset (&later, 0, sizeof later);
    s_against_t one = { s->against.bad ? &later : s->against.problem, 0, true, false };
    if (s_against_row (&one, row)) {
        if (s->against.bad && later.unsealed)
            s->against.problem->unsealed = true;
        s->against.bad = true;
        return 0;
    }
    s_list_t *l = &s->list;
    sl_buf_t *out = l->out;
    //  The key's secret, and the one it replaced while in its grace
    //  (columns: 0 id, then the grant's: 1 sha256, 2 team, 3 user_name,
    //  4 models, 5 limits, 6 approver, 7 prev_sha256, 8 prev_until).
    for (int which = 0; which < 2; which++) {
        int hash_col = which ? 7 : 1;
        if (which && (sl_row_null (row, 7) || sl_row_int (row, 8) <= l->now))
            break;
        sl_buf_puts (out, l->count++ ? ",{\"id\":" : "{\"id\":");
        sl_json_put_sl (out, sl_row_text (row, 0));
        s_put_text (out, "sha256", sl_row_text (row, hash_col));
        s_put_text (out, "team", sl_row_text (row, 2));
        s_put_text (out, "user", sl_row_text (row, 3));
        s_put_json (out, "models", sl_row_text (row, 4));
        s_put_json (out, "limits", sl_row_text (row, 5));
        sl_buf_printf (out, ",\"approver\":%s}", sl_row_int (row, 6) ? "true" : "false");
    }
    return 0;
}

int
sl_keystore_served (sl_store_t *store, int64_t now, sl_buf_t *out, sl_keystore_problem_t *problem)
{
    memset (problem, 0, sizeof *problem);
    problem->kind = "";
    s_served_t s = { { out, now, 0 }, { problem, 0, true, false } };
    size_t mark = out->len;
    int64_t issued = 0;
    if (sl_store_query_int (store, "SELECT COUNT(*) FROM api_keys", NULL, 0, 0, &issued))
        return -1;
    sl_buf_printf (out, "{\"issued\":%lld,\"keys\":[", (long long) issued);
    //  Each row in force compared with its chain entry as it is read: one
    //  that differs is left out (its key, whoever holds it, gets in
    //  nowhere), the others served, so revocations and new keys still
    //  reach the gateways while the chain is broken.
    if (sl_store_query (store, S_AGAINST_CHAIN " WHERE a.revoked_at IS NULL ORDER BY a.id", NULL, 0,
                        s_served_row, &s)) {
        out->len = mark;
        return -1;
    }
    sl_buf_puts (out, "]}");
    return s.against.bad ? 1 : 0;
}

static int
s_event_row (void *arg, const sl_row_t *row)
{
    s_list_t *l = arg;
    sl_buf_t *out = l->out;
    sl_buf_printf (out, "%s{\"at\":%lld", l->count++ ? "," : "", (long long) sl_row_int (row, 0));
    s_put_text (out, "key_id", sl_row_text (row, 1));
    s_put_text (out, "action", sl_row_text (row, 2));
    s_put_text (out, "by", sl_row_text (row, 3));
    s_put_json (out, "detail", sl_row_text (row, 4));
    sl_buf_putc (out, '}');
    return 0;
}

int
sl_keystore_events (sl_store_t *store, int limit, sl_buf_t *out)
{
    if (limit <= 0 || limit > SL_KEYSTORE_EVENTS_MAX)
        limit = SL_KEYSTORE_EVENTS_MAX;
    s_list_t l = { out, 0, 0 };
    size_t mark = out->len;
    sl_val_t params [] = { sl_val_int (limit) };
    sl_buf_putc (out, '[');
    if (sl_store_query (store, "SELECT at, key_id, action, by_whom, detail FROM key_events "
                               "ORDER BY pos DESC LIMIT $1", params, 1, s_event_row, &l)) {
        out->len = mark;
        return -1;
    }
    sl_buf_putc (out, ']');
    return 0;
}
