/*  sl_calls.c - the tool calls the audit store recorded (see sl_calls.h).

    One SQL text per question, run as it is on SQLite and PostgreSQL.
    Pages are keyed on (at, sid, seq), which the verdicts' primary key and
    their index on at make a range read; the next page starts after the
    last row handed out, so rows committed meanwhile are neither read
    twice nor skipped within the window.
*/
#include "services/audit/store/sl_calls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "services/audit/store/sl_store_backend.h"

#define S_COLUMNS \
    "SELECT v.sid, v.seq, v.at, v.tool, v.arguments, v.truncated, v.action, v.checked, v.rule, " \
    "v.probability, s.model, s.last_user, s.tools_json, s.client_key, COALESCE (v.team, s.team), " \
    "COALESCE (v.user_name, s.user_name), s.policy " \
    "FROM verdicts v JOIN streams s ON s.sid = v.sid " \
    "WHERE v.side = 'response' AND v.part IS NULL AND v.tool IS NOT NULL " \
    "AND v.at >= $1 AND v.at < $2 " \
    "AND (v.at > $3 OR (v.at = $3 AND (v.sid > $4 OR (v.sid = $4 AND v.seq > $5)))) "
#define S_ORDER "ORDER BY v.at, v.sid, v.seq LIMIT $6"

static const char *S_PAGE = S_COLUMNS S_ORDER;
static const char *S_PAGE_TEAM = S_COLUMNS "AND COALESCE (v.team, s.team) = $7 " S_ORDER;

sl_store_t *
sl_calls_open (const char *target, char **error)
{
    *error = NULL;
    bool postgres = target && sl_store_postgres.accepts (target);
    struct stat st;
    if (target && !postgres && stat (target, &st) != 0) {
        size_t n = strlen (target) + 64;
        *error = sl_xmalloc (n);
        snprintf (*error, n, "%s: no such store", target);
        return NULL;
    }
    sl_store_t *store = sl_store_open_raw (target, error);
    if (!store)
        return NULL;
    const char *guard = !strcmp (sl_store_kind (store), "postgres")
                        ? "SET default_transaction_read_only = on" : "PRAGMA query_only = ON";
    if (sl_store_exec (store, guard, NULL, 0, NULL)) {
        *error = sl_xstrdup (sl_store_error (store));
        sl_store_close (&store);
        return NULL;
    }
    return store;
}

typedef struct {
    sl_calls_fn *fn;
    void *arg;
    int64_t limit;                      //  0: no bound
    int64_t rows;                       //  this page
    int64_t total;
    int stopped;
    //  the key of the last row handed out (copied: rows are borrowed)
    int64_t at, seq;
    char sid [80];
} s_read_t;

static int
s_row (void *arg, const sl_row_t *r)
{
    s_read_t *rd = arg;
    sl_calls_row_t row = {
        .sid = sl_row_text (r, 0),
        .seq = sl_row_int (r, 1),
        .at = sl_row_int (r, 2),
        .tool = sl_row_text (r, 3),
        .arguments = sl_row_text (r, 4),
        .truncated = sl_row_int (r, 5) != 0,
        .action = sl_row_text (r, 6),
        .checked = sl_row_text (r, 7),
        .rule = sl_row_text (r, 8),
        .probability = sl_row_null (r, 9) ? NAN : sl_row_real (r, 9),
        .model = sl_row_text (r, 10),
        .last_user = sl_row_text (r, 11),
        .tools_json = sl_row_text (r, 12),
        .client_key = sl_row_text (r, 13),
        .team = sl_row_text (r, 14),
        .user = sl_row_text (r, 15),
        .policy = sl_row_text (r, 16),
    };
    rd->rows++;
    rd->total++;
    rd->at = row.at;
    rd->seq = row.seq;
    size_t n = row.sid.len < sizeof rd->sid - 1 ? row.sid.len : sizeof rd->sid - 1;
    memcpy (rd->sid, row.sid.ptr ? row.sid.ptr : "", n);
    rd->sid [n] = '\0';
    if (rd->fn (rd->arg, &row) || (rd->limit && rd->total >= rd->limit)) {
        rd->stopped = 1;
        return 1;
    }
    return 0;
}

int64_t
sl_calls_read (sl_store_t *store, const sl_calls_filter_t *filter, sl_calls_fn *fn, void *arg)
{
    s_read_t rd = { .fn = fn, .arg = arg, .limit = filter->limit > 0 ? filter->limit : 0, .at = filter->from - 1, .seq = -1 };
    bool team = filter->team && *filter->team;
    do {
        rd.rows = 0;
        sl_val_t p [] = {
            sl_val_int (filter->from), sl_val_int (filter->to), sl_val_int (rd.at), sl_val_text (rd.sid),
            sl_val_int (rd.seq), sl_val_int (SL_CALLS_PAGE), sl_val_text (team ? filter->team : "")
        };
        if (sl_store_query (store, team ? S_PAGE_TEAM : S_PAGE, p, team ? 7 : 6, s_row, &rd))
            return -1;
    } while (rd.rows == SL_CALLS_PAGE && !rd.stopped);
    return rd.total;
}

typedef struct {
    sl_buf_t *out;
    bool found;
} s_source_t;

static int
s_source_row (void *arg, const sl_row_t *r)
{
    s_source_t *s = arg;
    sl_str_t text = sl_row_text (r, 0);
    if (text.ptr) {
        sl_buf_append_str (s->out, text);
        s->found = true;
    }
    return 1;
}

int
sl_calls_policy_source (sl_store_t *store, const char *id, sl_buf_t *out)
{
    s_source_t s = { .out = out };
    sl_val_t p [] = { sl_val_text (id) };
    if (sl_store_query (store, "SELECT source FROM policies WHERE policy = $1 AND source IS NOT NULL LIMIT 1", p, 1,
                        s_source_row, &s))
        return -1;
    return s.found ? 0 : 1;
}

//  --------------------------------------------------------------------------
//  A backtest over the store

typedef struct {
    char id [SL_POLICY_ID_SIZE];
    sl_policy_t *policy;                //  NULL: the store has no usable text for it
} s_recorded_t;

typedef struct {
    sl_backtest_t *backtest;
    s_recorded_t cache [SL_CALLS_POLICIES];
    int count;
} s_run_t;

static sl_policy_t *
s_recorded (s_run_t *run, sl_str_t id)
{
    for (int i = 0; id.ptr && i < run->count; i++)
        if (sl_str_eq (id, run->cache [i].id))
            return run->cache [i].policy;
    return NULL;
}

//  A policy id of the window (its text is read once the query is over:
//  no query runs inside another's rows).
static int
s_policy_row (void *arg, const sl_row_t *r)
{
    s_run_t *run = arg;
    sl_str_t id = sl_row_text (r, 0);
    if (id.ptr && id.len && id.len < SL_POLICY_ID_SIZE && run->count < SL_CALLS_POLICIES) {
        memcpy (run->cache [run->count].id, id.ptr, id.len);
        run->cache [run->count++].id [id.len] = '\0';
    }
    return run->count >= SL_CALLS_POLICIES;
}

static int
s_on_call (void *arg, const sl_calls_row_t *row)
{
    s_run_t *run = arg;
    sl_backtest_call_t rec = {
        .call = {
            .name = row->tool,
            .arguments = row->arguments.ptr ? row->arguments : sl_str ("{}"),
            .ordinal = 1,
            .model = row->model,
            .last_user = row->last_user,
            .tools = row->tools_json,
            .key_id = row->client_key,
            .team = row->team,
            .user = row->user,
        },
        .sid = row->sid,
        .at = row->at,
        .action = row->action,
        .rule = row->rule,
        .check = row->checked,
        .probability = row->probability,
        .recorded_policy = s_recorded (run, row->policy),
    };
    rec.call.args_valid = sl_json_valid (rec.call.arguments);
    //  What the store cut is judged as far as it goes, as a call cut for size.
    if (row->truncated)
        rec.call.cut = SL_CUT_SIZE;
    sl_backtest_add (run->backtest, &rec);
    return 0;
}

int64_t
sl_calls_backtest (sl_store_t *store, const sl_calls_filter_t *filter, sl_backtest_t *backtest)
{
    s_run_t run = { .backtest = backtest };
    sl_val_t p [] = { sl_val_int (filter->from), sl_val_int (filter->to) };
    if (sl_store_query (store, "SELECT DISTINCT s.policy FROM verdicts v JOIN streams s ON s.sid = v.sid "
                        "WHERE v.at >= $1 AND v.at < $2 AND s.policy IS NOT NULL", p, 2, s_policy_row, &run))
        return -1;
    int64_t calls = 0;
    for (int i = 0; i < run.count; i++) {
        sl_buf_t text = { 0 };
        int rc = sl_calls_policy_source (store, run.cache [i].id, &text);
        if (rc < 0)
            calls = -1;
        if (rc == 0) {
            char *error = NULL;
            run.cache [i].policy = sl_policy_parse (text.data, text.len, run.cache [i].id, &error);
            free (error);
        }
        sl_buf_free (&text);
    }
    if (calls == 0)
        calls = sl_calls_read (store, filter, s_on_call, &run);
    for (int i = 0; i < run.count; i++)
        sl_policy_unref (&run.cache [i].policy);
    return calls;
}
