/*  sl_alertstore.c - the budget alerts the gateways post (see sl_alertstore.h). */
#include "services/audit/store/sl_alertstore.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/identity/sl_limits.h"
#include "services/audit/recorder/sl_chain.h"

#define S_CHAIN_KIND "alert"            //  an alert's chain entries (sl_verify.c knows it)
#define S_TYPE "limits_alert"
#define S_COLUMNS 14

_Static_assert (SL_ALERTSTORE_ID_HEX == SL_LIMITS_ALERT_ID_HEX, "an alert's id is the crossing's");

//  --------------------------------------------------------------------------
//  Parsing

static int
s_refuse (char why [SL_ALERTSTORE_WHY_MAX], const char *fmt, const char *what)
{
    snprintf (why, SL_ALERTSTORE_WHY_MAX, fmt, what);
    return -1;
}

//  Text of one line, 1 to SL_ALERTSTORE_TEXT_MAX bytes, no control character.
static bool
s_text_ok (const char *s)
{
    size_t n = s ? strlen (s) : 0;
    if (!n || n > SL_ALERTSTORE_TEXT_MAX)
        return false;
    for (; *s; s++)
        if ((unsigned char) *s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

//  An optional name (team, key, user): text, or null or absent.
static int
s_optional (json_t *root, const char *name, char **out, char why [SL_ALERTSTORE_WHY_MAX])
{
    json_t *v = json_object_get (root, name);
    if (!v || json_is_null (v))
        return 0;
    if (!s_text_ok (json_string_value (v)))
        return s_refuse (why, "%s must be text of one line (at most 256 bytes), or null", name);
    *out = sl_xstrdup (json_string_value (v));
    return 0;
}

static bool
s_one_of (const char *s, const char *const *names)
{
    for (size_t i = 0; s && names [i]; i++)
        if (strcmp (s, names [i]) == 0)
            return true;
    return false;
}

//  Digits only, of length n.
static bool
s_digits (const char *s, size_t n)
{
    if (!s || strlen (s) != n)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static bool
s_amount (json_t *v, double *out)
{
    if (!json_is_number (v) || !isfinite (json_number_value (v)) || json_number_value (v) < 0)
        return false;
    *out = json_number_value (v);
    return true;
}

static int
s_parse (json_t *root, sl_alert_t *out, char why [SL_ALERTSTORE_WHY_MAX])
{
    static const char *names [] = { "type", "id", "at", "team", "key", "user", "subject", "limit", "threshold",
                                    "used", "max", "period", "window", NULL };
    static const char *limits [] = { "tokens_per_day", "budget_tokens", "budget_usd", NULL };
    static const char *periods [] = { "day", "month", NULL };
    const char *key;
    json_t *value;
    json_object_foreach (root, key, value)
        if (!s_one_of (key, names)) {
            snprintf (why, SL_ALERTSTORE_WHY_MAX, "unknown field '%.48s'", key);
            return -1;
        }
    const char *type = json_string_value (json_object_get (root, "type"));
    if (!type || strcmp (type, S_TYPE))
        return s_refuse (why, "type must be \"%s\"", S_TYPE);
    json_t *at = json_object_get (root, "at");
    if (!json_is_integer (at) || json_integer_value (at) < 0)
        return s_refuse (why, "%s must be a time in Unix ms", "at");
    out->crossed_at = json_integer_value (at);
    const char *subject = json_string_value (json_object_get (root, "subject"));
    if (!s_text_ok (subject))
        return s_refuse (why, "%s is required: text of one line, at most 256 bytes", "subject");
    const char *limit = json_string_value (json_object_get (root, "limit"));
    if (!s_one_of (limit, limits))
        return s_refuse (why, "limit must be %s", "tokens_per_day, budget_tokens or budget_usd");
    json_t *threshold = json_object_get (root, "threshold");
    if (!json_is_integer (threshold) || json_integer_value (threshold) < 1 || json_integer_value (threshold) > 100)
        return s_refuse (why, "%s must be a whole number from 1 to 100", "threshold");
    if (!s_amount (json_object_get (root, "used"), &out->used) || !s_amount (json_object_get (root, "max"), &out->max))
        return s_refuse (why, "%s must be numbers, 0 or more", "used and max");
    const char *period = json_string_value (json_object_get (root, "period"));
    if (!s_one_of (period, periods))
        return s_refuse (why, "period must be %s", "day or month");
    bool daily = strcmp (period, "day") == 0;
    //  A day's tokens count by the day, budgets by the month.
    if (daily != (strcmp (limit, "tokens_per_day") == 0))
        return s_refuse (why, "period must be day for tokens_per_day, month for budgets%s", "");
    const char *window = json_string_value (json_object_get (root, "window"));
    if (!s_digits (window, daily ? 8 : 6))
        return s_refuse (why, "window must be the %s", daily ? "day, yyyymmdd" : "month, yyyymm");
    //  The id is the crossing's: one that is not cannot slip a crossing
    //  in twice under two ids.
    const char *id = json_string_value (json_object_get (root, "id"));
    char want [SL_LIMITS_ALERT_ID_HEX + 1];
    sl_limits_alert_id (subject, limit, (int) json_integer_value (threshold), window, want);
    if (!id || strcmp (id, want))
        return s_refuse (why, "id must be the crossing's (%s)", "sl_limits_alert_id: its subject, limit, "
                                                                   "threshold and window");
    if (s_optional (root, "team", &out->team, why) || s_optional (root, "key", &out->key, why)
    ||  s_optional (root, "user", &out->user, why))
        return -1;
    snprintf (out->id, sizeof out->id, "%s", id);
    out->subject = sl_xstrdup (subject);
    snprintf (out->limit, sizeof out->limit, "%s", limit);
    out->threshold = (int) json_integer_value (threshold);
    snprintf (out->period, sizeof out->period, "%s", period);
    snprintf (out->window, sizeof out->window, "%s", window);
    return 0;
}

int
sl_alert_parse (sl_str_t body, sl_alert_t *out, char why [SL_ALERTSTORE_WHY_MAX])
{
    memset (out, 0, sizeof *out);
    why [0] = 0;
    json_error_t err;
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, JSON_REJECT_DUPLICATES, &err);
    int rc = json_is_object (root) ? s_parse (root, out, why) : s_refuse (why, "the body must be a JSON object%s", "");
    json_decref (root);
    if (rc)
        sl_alert_clear (out);
    return rc;
}

void
sl_alert_clear (sl_alert_t *self)
{
    free (self->team);
    free (self->key);
    free (self->user);
    free (self->subject);
    memset (self, 0, sizeof *self);
}

//  --------------------------------------------------------------------------
//  Recording

static sl_val_t
s_text_or_null (const char *s)
{
    return s ? sl_val_text (s) : sl_val_null ();
}

int
sl_alertstore_record (sl_store_t *store, sl_chain_t *chain, const sl_alert_t *alert, int64_t now, int64_t *pos)
{
    //  An entry another writer left pending would be committed with ours.
    if ((chain && sl_chain_pending (chain)) || sl_store_begin (store))
        return -1;
    sl_val_t key [] = { sl_val_text (alert->id) };
    int64_t seen = 0, last = 0;
    if (sl_store_query_int (store, "SELECT COUNT(*) FROM alerts WHERE id = $1", key, 1, 0, &seen)
    ||  sl_store_query_int (store, "SELECT MAX(pos) FROM alerts", NULL, 0, 0, &last))
        goto failed;
    if (seen) {
        sl_store_rollback (store);
        return 1;
    }
    sl_val_t row [S_COLUMNS] = {
        sl_val_int (last + 1), sl_val_text (alert->id), sl_val_int (now), sl_val_int (alert->crossed_at),
        s_text_or_null (alert->team), s_text_or_null (alert->key), s_text_or_null (alert->user),
        sl_val_text (alert->subject), sl_val_text (alert->limit), sl_val_int (alert->threshold),
        sl_val_real (alert->used), sl_val_real (alert->max), sl_val_text (alert->period), sl_val_text (alert->window)
    };
    if (sl_store_exec (store, "INSERT INTO alerts (pos, id, at, crossed_at, team, key_id, user_name, subject, "
                              "limit_kind, threshold, used_value, max_value, period, win) VALUES ($1, $2, $3, $4, "
                              "$5, $6, $7, $8, $9, $10, $11, $12, $13, $14)", row, S_COLUMNS, NULL))
        goto failed;
    if (chain) {
        char ref [32];
        snprintf (ref, sizeof ref, "%lld", (long long) (last + 1));
        if (sl_chain_begin (chain, S_CHAIN_KIND, NULL, 0, 0, ref, now))
            goto failed;
        sl_chain_row (chain, SL_CHAIN_ALERTS, row, S_COLUMNS);
        sl_chain_end (chain);
        if (sl_chain_flush (chain))
            goto failed;
    }
    if (sl_store_commit (store))
        goto failed;
    if (chain)
        sl_chain_committed (chain);
    if (pos)
        *pos = last + 1;
    return 0;
failed:
    sl_store_rollback (store);
    if (chain)
        sl_chain_abort (chain);
    return -1;
}

//  --------------------------------------------------------------------------
//  Reading

typedef struct {
    sl_buf_t *out;
    int count;
} s_list_t;

static void
s_put_text (sl_buf_t *out, const char *name, const sl_row_t *row, int col)
{
    sl_buf_printf (out, ",\"%s\":", name);
    if (sl_row_null (row, col))
        sl_buf_puts (out, "null");
    else
        sl_json_put_sl (out, sl_row_text (row, col));
}

static int
s_list_row (void *arg, const sl_row_t *row)
{
    s_list_t *l = arg;
    sl_buf_t *out = l->out;
    sl_buf_puts (out, l->count++ ? ",{\"id\":" : "{\"id\":");
    sl_json_put_sl (out, sl_row_text (row, 0));
    sl_buf_printf (out, ",\"at\":%lld,\"crossed_at\":%lld", (long long) sl_row_int (row, 1),
                   (long long) sl_row_int (row, 2));
    s_put_text (out, "team", row, 3);
    s_put_text (out, "key", row, 4);
    s_put_text (out, "user", row, 5);
    s_put_text (out, "subject", row, 6);
    s_put_text (out, "limit", row, 7);
    sl_buf_printf (out, ",\"threshold\":%lld,\"used\":%.17g,\"max\":%.17g", (long long) sl_row_int (row, 8),
                   sl_row_real (row, 9), sl_row_real (row, 10));
    s_put_text (out, "period", row, 11);
    s_put_text (out, "window", row, 12);
    sl_buf_putc (out, '}');
    return 0;
}

int
sl_alertstore_list (sl_store_t *store, int64_t since, int limit, sl_buf_t *out)
{
    if (limit <= 0)
        limit = SL_ALERTSTORE_LIST_DEFAULT;
    if (limit > SL_ALERTSTORE_LIST_MAX)
        limit = SL_ALERTSTORE_LIST_MAX;
    s_list_t l = { out, 0 };
    size_t mark = out->len;
    sl_val_t params [] = { sl_val_int (since), sl_val_int (limit) };
    sl_buf_putc (out, '[');
    if (sl_store_query (store, "SELECT id, at, crossed_at, team, key_id, user_name, subject, limit_kind, threshold, "
                               "used_value, max_value, period, win FROM alerts WHERE at >= $1 "
                               "ORDER BY pos DESC LIMIT $2", params, 2, s_list_row, &l)) {
        out->len = mark;
        return -1;
    }
    sl_buf_putc (out, ']');
    return 0;
}
