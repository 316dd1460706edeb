/*  sl_monthuse.c - this month's spend, projected (see sl_monthuse.h). */
#include "services/audit/store/sl_monthuse.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_json.h"

#define S_USD_MICRO 1000000.0

double
sl_monthuse_elapsed (int64_t now, int64_t *from, int64_t *to)
{
    time_t secs = (time_t) (now / 1000);
    struct tm tm;
    gmtime_r (&secs, &tm);
    struct tm start = { .tm_year = tm.tm_year, .tm_mon = tm.tm_mon, .tm_mday = 1 };
    struct tm end = { .tm_year = tm.tm_year + (tm.tm_mon == 11), .tm_mon = (tm.tm_mon + 1) % 12, .tm_mday = 1 };
    *from = (int64_t) timegm (&start) * 1000;
    *to = (int64_t) timegm (&end) * 1000;
    int64_t gone = now - *from;
    if (gone < SL_MONTHUSE_MIN_ELAPSED_MS)
        gone = SL_MONTHUSE_MIN_ELAPSED_MS;
    return (double) gone / (double) (*to - *from);
}

double
sl_monthuse_project (double spent, double elapsed)
{
    return elapsed > 0 ? spent / elapsed : spent;
}

typedef struct {
    sl_buf_t *out;
    int count;
    bool keys;                          //  rows of keys (else teams)
    double elapsed;
    json_t *issued;                     //  the console's keys: id -> limits (text or null)
    sl_monthuse_budget_fn *budget;
    void *arg;
} s_rows_t;

//  A key the console issued: its budget from its limits.
static bool
s_issued_budget (json_t *issued, const char *id, double *usd, int64_t *tokens)
{
    json_t *limits = json_object_get (issued, id);
    if (!limits)
        return false;
    json_t *parsed = json_is_string (limits) ? json_loads (json_string_value (limits), 0, NULL) : NULL;
    json_t *budget = json_object_get (parsed, "budget");
    json_t *u = json_object_get (budget, "usd"), *t = json_object_get (budget, "tokens");
    *usd = json_is_number (u) ? json_number_value (u) : 0;
    *tokens = json_is_integer (t) ? json_integer_value (t) : 0;
    json_decref (parsed);
    return true;
}

static int
s_row (void *arg, const sl_row_t *row)
{
    s_rows_t *r = arg;
    if (r->count >= SL_MONTHUSE_ROWS_MAX)
        return 0;
    sl_buf_t *out = r->out;
    char name [512];
    sl_str_t n = sl_row_text (row, 0);
    snprintf (name, sizeof name, "%.*s", (int) (n.ptr ? n.len : 0), n.ptr ? n.ptr : "");
    double spent = (double) sl_row_int (row, r->keys ? 2 : 1) / S_USD_MICRO;
    int64_t tokens = sl_row_int (row, r->keys ? 3 : 2);
    double budget_usd = 0;
    int64_t budget_tokens = 0;
    if (!(r->keys && s_issued_budget (r->issued, name, &budget_usd, &budget_tokens)) && r->budget && *name)
        r->budget (r->arg, !r->keys, name, &budget_usd, &budget_tokens);
    double projected = sl_monthuse_project (spent, r->elapsed);
    double projected_tokens = sl_monthuse_project ((double) tokens, r->elapsed);
    bool over = (budget_usd > 0 && projected > budget_usd)
             || (budget_tokens > 0 && projected_tokens > (double) budget_tokens);
    sl_buf_puts (out, r->count++ ? "," : "");
    sl_buf_puts (out, r->keys ? "{\"key\":" : "{\"team\":");
    sl_json_put_str (out, name, strlen (name));
    if (r->keys) {
        sl_str_t team = sl_row_text (row, 1);
        sl_buf_puts (out, ",\"team\":");
        sl_json_put_sl (out, team.ptr ? team : SL_STR_LIT (""));
    }
    sl_buf_printf (out, ",\"spent_usd\":%.6f,\"tokens\":%lld,\"projected_month_usd\":%.6f,"
                        "\"projected_month_tokens\":%.0f", spent, (long long) tokens, projected,
                   round (projected_tokens));
    if (budget_usd > 0)
        sl_buf_printf (out, ",\"budget_usd\":%.6f", budget_usd);
    else
        sl_buf_puts (out, ",\"budget_usd\":null");
    if (budget_tokens > 0)
        sl_buf_printf (out, ",\"budget_tokens\":%lld", (long long) budget_tokens);
    else
        sl_buf_puts (out, ",\"budget_tokens\":null");
    sl_buf_printf (out, ",\"over_budget\":%s}", over ? "true" : "false");
    return 0;
}

static int
s_issued_row (void *arg, const sl_row_t *row)
{
    json_t *issued = arg;
    sl_str_t id = sl_row_text (row, 0), limits = sl_row_text (row, 1);
    char key [512];
    snprintf (key, sizeof key, "%.*s", (int) id.len, id.ptr);
    json_object_set_new (issued, key, limits.ptr && !sl_row_null (row, 1) ? json_stringn (limits.ptr, limits.len)
                                                                          : json_null ());
    return 0;
}

int
sl_monthuse_query (sl_store_t *store, int64_t now, sl_monthuse_budget_fn *budget, void *arg, sl_buf_t *out)
{
    int64_t from, to;
    double elapsed = sl_monthuse_elapsed (now, &from, &to);
    time_t secs = (time_t) (from / 1000);
    struct tm tm;
    gmtime_r (&secs, &tm);
    size_t mark = out->len;
    json_t *issued = json_object ();
    s_rows_t rows = { out, 0, false, elapsed, issued, budget, arg };
    sl_val_t p [] = { sl_val_int (from), sl_val_int (to) };
    sl_buf_printf (out, "{\"month\":\"%04d-%02d\",\"from\":%lld,\"to\":%lld,\"elapsed\":%.6f,\"teams\":[",
                   tm.tm_year + 1900, tm.tm_mon + 1, (long long) from, (long long) to, elapsed);
    int rc = sl_store_query (store, "SELECT id, limits FROM api_keys", NULL, 0, s_issued_row, issued)
          || sl_store_query (store, "SELECT COALESCE(team, ''), SUM(COALESCE(cost_usd_micro, 0)), "
                                    "SUM(COALESCE(usage_in, 0) + COALESCE(usage_out, 0)) FROM streams "
                                    "WHERE started_at >= $1 AND started_at < $2 GROUP BY 1 ORDER BY 1",
                             p, 2, s_row, &rows);
    if (!rc) {
        sl_buf_puts (out, "],\"keys\":[");
        rows.count = 0;
        rows.keys = true;
        rc = sl_store_query (store, "SELECT COALESCE(client_key, ''), MAX(COALESCE(team, '')), "
                                    "SUM(COALESCE(cost_usd_micro, 0)), "
                                    "SUM(COALESCE(usage_in, 0) + COALESCE(usage_out, 0)) FROM streams "
                                    "WHERE started_at >= $1 AND started_at < $2 GROUP BY 1 ORDER BY 1",
                             p, 2, s_row, &rows);
    }
    json_decref (issued);
    if (rc) {
        out->len = mark;
        return -1;
    }
    sl_buf_puts (out, "]}");
    return 0;
}
