/*  sl_query.c - the store's answers in JSON (see sl_query.h).

    Rows become JSON objects through column tables (name and kind of each
    selected column), so a query and its JSON stay side by side. Queries
    never run inside another's row callback (a prepared statement is
    reused): what needs a second query collects keys first.
*/
#include "services/audit/store/sl_query.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "services/audit/store/sl_record.h"
#include "services/audit/store/sl_approval.h"

#define S_MAX_PARAMS 24
#define S_MAX_BUCKETS 400               //  points of a chart at most
#define S_EXPORT_PAGE 200               //  streams read per query when exporting
#define S_LATENCY_BUCKETS 160           //  quarter-octaves up to 2^40 µs

typedef enum { C_TEXT, C_INT, C_REAL, C_BOOL, C_PREVIEW } s_kind_t;

typedef struct {
    const char *name;
    s_kind_t kind;
} s_col_t;

//  One row as a JSON object, by the column table.
static void
s_row_json (const sl_row_t *row, const s_col_t *cols, int count, sl_buf_t *out)
{
    sl_buf_putc (out, '{');
    for (int i = 0; i < count && i < row->count; i++) {
        sl_buf_printf (out, "%s\"%s\":", i ? "," : "", cols [i].name);
        if (sl_row_null (row, i)) {
            sl_buf_puts (out, "null");
            continue;
        }
        switch (cols [i].kind) {
            case C_INT:
                sl_buf_put_i64 (out, sl_row_int (row, i));
                break;
            case C_REAL:
                sl_buf_printf (out, "%.6g", sl_row_real (row, i));
                break;
            case C_BOOL:
                sl_buf_puts (out, sl_row_int (row, i) ? "true" : "false");
                break;
            case C_PREVIEW: {
                sl_str_t s = sl_row_text (row, i);
                if (s.len > SL_QUERY_PREVIEW) {
                    size_t n = SL_QUERY_PREVIEW;
                    while (n > 0 && ((unsigned char) s.ptr [n] & 0xC0) == 0x80)
                        n--;
                    s.len = n;
                }
                sl_json_put_sl (out, s);
                break;
            }
            default:
                sl_json_put_sl (out, sl_row_text (row, i));
                break;
        }
    }
    sl_buf_putc (out, '}');
}

typedef struct {
    sl_buf_t *out;
    const s_col_t *cols;
    int count;
    int rows;
    int limit;                          //  rows written at most (0: all)
    bool more;                          //  a row past the limit was there
} s_list_t;

static int
s_list_row (void *arg, const sl_row_t *row)
{
    s_list_t *l = arg;
    if (l->limit && l->rows == l->limit) {
        l->more = true;
        return 1;
    }
    if (l->rows++)
        sl_buf_putc (l->out, ',');
    s_row_json (row, l->cols, l->count, l->out);
    return 0;
}

//  --------------------------------------------------------------------------
//  Streams

#define S_STREAM_COLUMNS \
    "s.sid, s.started_at, s.ended_at, s.duration_ms, s.client_dialect, s.upstream_dialect, s.model, " \
    "s.response_model, s.provider, s.client_key, s.streaming, s.policy, s.finish, s.finish_raw, " \
    "s.error_code, s.error_message, s.error_status, s.error_source, s.blocks, s.calls, s.blocked, s.lost, " \
    "s.tools, s.last_user, s.usage_in, s.usage_out, s.usage_total, s.usage_cache_read, s.usage_cache_write, " \
    "s.usage_reasoning, s.response_id, s.epoch, s.emitter, s.team, s.user_name, s.usage_estimated, " \
    "s.cost_usd_micro, s.mcp, s.failover"

static const s_col_t s_stream_cols [] = {
    { "sid", C_TEXT }, { "started_at", C_INT }, { "ended_at", C_INT }, { "duration_ms", C_INT },
    { "client", C_TEXT }, { "upstream", C_TEXT }, { "model", C_TEXT }, { "response_model", C_TEXT },
    { "provider", C_TEXT }, { "client_key", C_TEXT }, { "streaming", C_BOOL }, { "policy", C_TEXT },
    { "finish", C_TEXT }, { "finish_raw", C_TEXT }, { "error_code", C_TEXT }, { "error_message", C_TEXT },
    { "error_status", C_INT }, { "error_source", C_TEXT }, { "blocks", C_INT }, { "calls", C_INT },
    { "blocked", C_INT }, { "lost", C_INT }, { "tools", C_TEXT }, { "last_user", C_TEXT },
    { "usage_in", C_INT }, { "usage_out", C_INT }, { "usage_total", C_INT }, { "usage_cache_read", C_INT },
    { "usage_cache_write", C_INT }, { "usage_reasoning", C_INT }, { "response_id", C_TEXT },
    { "epoch", C_INT }, { "emitter", C_TEXT }, { "team", C_TEXT }, { "user", C_TEXT },
    { "usage_estimated", C_BOOL }, { "cost_usd_micro", C_INT }, { "mcp", C_TEXT }, { "failover", C_TEXT }
};
#define S_STREAM_COLS ((int) (sizeof s_stream_cols / sizeof s_stream_cols [0]))
#define S_LAST_USER_COL 23

static bool
s_set (const char *s)
{
    return s && *s;
}

//  A LIKE pattern matching text anywhere, lower-cased, with % _ \ escaped.
static void
s_like (sl_buf_t *out, const char *text)
{
    sl_buf_putc (out, '%');
    for (const char *p = text; *p; p++) {
        if (*p == '%' || *p == '_' || *p == '\\')
            sl_buf_putc (out, '\\');
        sl_buf_putc (out, (char) tolower ((unsigned char) *p));
    }
    sl_buf_putc (out, '%');
}

typedef struct {
    sl_buf_t sql;
    sl_val_t params [S_MAX_PARAMS];
    int count;
} s_stmt_t;

//  Add a parameter; its placeholder ($n) goes into the SQL.
static void
s_param (s_stmt_t *st, sl_val_t v)
{
    assert (st->count < S_MAX_PARAMS);
    st->params [st->count++] = v;
    sl_buf_printf (&st->sql, "$%d", st->count);
}

int
sl_query_streams (sl_store_t *store, const sl_query_filter_t *f, sl_buf_t *out)
{
    s_stmt_t st = { 0 };
    sl_buf_t like = { 0 };
    sl_buf_puts (&st.sql, "SELECT " S_STREAM_COLUMNS " FROM streams s WHERE 1 = 1");
    if (f->from) {
        sl_buf_puts (&st.sql, " AND s.started_at >= ");
        s_param (&st, sl_val_int (f->from));
    }
    if (f->to) {
        sl_buf_puts (&st.sql, " AND s.started_at < ");
        s_param (&st, sl_val_int (f->to));
    }
    if (f->before) {
        sl_buf_puts (&st.sql, " AND s.started_at < ");
        s_param (&st, sl_val_int (f->before));
    }
    const struct { const char *value; const char *column; } equal [] = {
        { f->model, "s.model" }, { f->provider, "s.provider" }, { f->client_key, "s.client_key" },
        { f->team, "s.team" }, { f->user, "s.user_name" }
    };
    for (size_t i = 0; i < sizeof equal / sizeof equal [0]; i++)
        if (s_set (equal [i].value)) {
            sl_buf_printf (&st.sql, " AND %s = ", equal [i].column);
            s_param (&st, sl_val_text (equal [i].value));
        }
    if (s_set (f->tool) || s_set (f->rule) || s_set (f->action) || s_set (f->check)) {
        sl_buf_puts (&st.sql, " AND EXISTS (SELECT 1 FROM verdicts v WHERE v.sid = s.sid AND v.side <> 'shadow'");
        if (s_set (f->tool)) {
            sl_buf_puts (&st.sql, " AND v.tool = ");
            s_param (&st, sl_val_text (f->tool));
        }
        if (s_set (f->rule) && strcmp (f->rule, "(default)") == 0)
            sl_buf_puts (&st.sql, " AND v.rule IS NULL");
        else
        if (s_set (f->rule)) {
            sl_buf_puts (&st.sql, " AND v.rule = ");
            s_param (&st, sl_val_text (f->rule));
        }
        if (s_set (f->action)) {
            sl_buf_puts (&st.sql, " AND v.action = ");
            s_param (&st, sl_val_text (f->action));
        }
        if (s_set (f->check)) {
            sl_buf_puts (&st.sql, " AND v.checked = ");
            s_param (&st, sl_val_text (f->check));
        }
        sl_buf_putc (&st.sql, ')');
    }
    if (s_set (f->text)) {
        s_like (&like, f->text);
        sl_val_t pattern = sl_val_str (sl_buf_str (&like));
        sl_buf_puts (&st.sql, " AND (lower(s.last_user) LIKE ");
        s_param (&st, pattern);
        sl_buf_puts (&st.sql, " ESCAPE '\\' OR EXISTS (SELECT 1 FROM verdicts v WHERE v.sid = s.sid AND "
                              "(lower(v.arguments) LIKE ");
        s_param (&st, pattern);
        sl_buf_puts (&st.sql, " ESCAPE '\\' OR lower(v.reason) LIKE ");
        s_param (&st, pattern);
        sl_buf_puts (&st.sql, " ESCAPE '\\')) OR EXISTS (SELECT 1 FROM blocks b WHERE b.sid = s.sid AND "
                              "lower(b.content) LIKE ");
        s_param (&st, pattern);
        sl_buf_puts (&st.sql, " ESCAPE '\\'))");
    }
    if (s_set (f->state)) {
        if (strcmp (f->state, "live") == 0)
            sl_buf_puts (&st.sql, " AND s.ended_at IS NULL");
        else
        if (strcmp (f->state, "ended") == 0)
            sl_buf_puts (&st.sql, " AND s.ended_at IS NOT NULL");
        else
        if (strcmp (f->state, "error") == 0)
            sl_buf_puts (&st.sql, " AND s.error_code IS NOT NULL");
        else
        if (strcmp (f->state, "blocked") == 0)
            sl_buf_puts (&st.sql, " AND s.blocked > 0");
        else
        if (strcmp (f->state, "lost") == 0)
            sl_buf_puts (&st.sql, " AND s.lost > 0");
    }
    int limit = f->limit > 0 ? (f->limit > SL_QUERY_MAX_LIMIT ? SL_QUERY_MAX_LIMIT : f->limit)
                             : SL_QUERY_DEFAULT_LIMIT;
    sl_buf_puts (&st.sql, " ORDER BY s.started_at DESC, s.sid DESC LIMIT ");
    s_param (&st, sl_val_int (limit + 1));

    s_col_t cols [S_STREAM_COLS];
    memcpy (cols, s_stream_cols, sizeof cols);
    cols [S_LAST_USER_COL].kind = C_PREVIEW;
    size_t mark = out->len;
    sl_buf_puts (out, "{\"streams\":[");
    s_list_t list = { out, cols, S_STREAM_COLS, 0, limit, false };
    int rc = sl_store_query (store, sl_buf_cstr (&st.sql), st.params, st.count, s_list_row, &list);
    sl_buf_free (&st.sql);
    sl_buf_free (&like);
    if (rc) {
        out->len = mark;
        return -1;
    }
    sl_buf_printf (out, "],\"more\":%s}", list.more ? "true" : "false");
    return 0;
}

static const s_col_t s_block_cols [] = {
    { "seq", C_INT }, { "index", C_INT }, { "kind", C_TEXT }, { "id", C_TEXT }, { "call_id", C_TEXT },
    { "name", C_TEXT }, { "content", C_TEXT }, { "content_bytes", C_INT }, { "truncated", C_BOOL },
    { "replaced", C_BOOL }, { "incomplete", C_TEXT }, { "args_valid", C_BOOL }, { "at", C_INT }
};

static const s_col_t s_verdict_cols [] = {
    { "seq", C_INT }, { "side", C_TEXT }, { "index", C_INT }, { "call_id", C_TEXT }, { "tool", C_TEXT },
    { "action", C_TEXT }, { "check", C_TEXT }, { "rule", C_TEXT }, { "reason", C_TEXT },
    { "judge_model", C_TEXT }, { "probability", C_REAL }, { "latency_us", C_INT }, { "arguments", C_TEXT },
    { "arguments_bytes", C_INT }, { "truncated", C_BOOL }, { "at", C_INT }, { "part", C_TEXT },
    { "team", C_TEXT }, { "user", C_TEXT }
};

static const s_col_t s_tools_col [] = { { "tools_json", C_TEXT } };

//  The stream's records' places in the chain (sl_chain.h).
static const s_col_t s_chain_cols [] = {
    { "pos", C_INT }, { "kind", C_TEXT }, { "seq", C_INT }, { "sub", C_INT }, { "at", C_INT }, { "hash", C_TEXT }
};

int
sl_query_stream (sl_store_t *store, const char *sid, sl_buf_t *out)
{
    sl_val_t p [] = { sl_val_text (sid) };
    size_t mark = out->len;
    sl_buf_puts (out, "{\"stream\":");
    s_list_t list = { out, s_stream_cols, S_STREAM_COLS, 0, 1, false };
    if (sl_store_query (store, "SELECT " S_STREAM_COLUMNS " FROM streams s WHERE s.sid = $1", p, 1,
                        s_list_row, &list))
        goto failed;
    if (list.rows == 0) {
        out->len = mark;
        return 1;
    }
    sl_buf_puts (out, ",\"request\":");
    s_list_t tools = { out, s_tools_col, 1, 0, 1, false };
    if (sl_store_query (store, "SELECT tools_json FROM streams WHERE sid = $1", p, 1, s_list_row, &tools))
        goto failed;
    sl_buf_puts (out, ",\"blocks\":[");
    s_list_t blocks = { out, s_block_cols, (int) (sizeof s_block_cols / sizeof s_block_cols [0]), 0, 0, false };
    if (sl_store_query (store, "SELECT seq, idx, kind, id, call_id, name, content, content_bytes, truncated, "
                               "replaced, incomplete, args_valid, at FROM blocks WHERE sid = $1 ORDER BY seq",
                        p, 1, s_list_row, &blocks))
        goto failed;
    sl_buf_puts (out, "],\"verdicts\":[");
    s_list_t verdicts = { out, s_verdict_cols, (int) (sizeof s_verdict_cols / sizeof s_verdict_cols [0]), 0, 0,
                          false };
    if (sl_store_query (store, "SELECT seq, side, idx, call_id, tool, action, checked, rule, reason, judge_model, "
                               "probability, latency_us, arguments, arguments_bytes, truncated, at, part, "
                               "team, user_name "
                               "FROM verdicts WHERE sid = $1 ORDER BY seq", p, 1, s_list_row, &verdicts))
        goto failed;
    sl_buf_puts (out, "],\"chain\":[");
    s_list_t chain = { out, s_chain_cols, (int) (sizeof s_chain_cols / sizeof s_chain_cols [0]), 0, 0, false };
    //  Through the stream's events rows, which name their entries (the
    //  chain has no index by stream: every record would pay for one).
    if (sl_store_query (store, "SELECT c.pos, c.kind, c.seq, c.sub, c.at, c.hash FROM events e "
                               "JOIN chain c ON c.pos = e.chain_pos WHERE e.sid = $1 AND c.sid = e.sid "
                               "AND c.kind <> 'prune' ORDER BY c.pos", p, 1, s_list_row, &chain))
        goto failed;
    sl_buf_puts (out, "]}");
    return 0;
failed:
    out->len = mark;
    return -1;
}

//  --------------------------------------------------------------------------
//  Usage

#define S_DAY_MS 86400000LL             //  a UTC day: Unix time has no leap seconds

//  The columns a usage grouping adds, by name.
static const struct {
    const char *group;
    const char *sql;                    //  its key columns, as selected and grouped
    s_col_t cols [3];
    int count;
} s_usage_groups [] = {
    { "team", "COALESCE(team, '')", { { "team", C_TEXT } }, 1 },
    { "user", "COALESCE(team, ''), COALESCE(user_name, '')", { { "team", C_TEXT }, { "user", C_TEXT } }, 2 },
    { "model", "COALESCE(model, '')", { { "model", C_TEXT } }, 1 },
    { "all", "COALESCE(team, ''), COALESCE(user_name, ''), COALESCE(model, '')",
      { { "team", C_TEXT }, { "user", C_TEXT }, { "model", C_TEXT } }, 3 },
};

int
sl_query_usage (sl_store_t *store, int64_t from, int64_t to, const char *group, sl_buf_t *out)
{
    int g = -1;
    for (int i = 0; i < (int) (sizeof s_usage_groups / sizeof s_usage_groups [0]); i++)
        if (strcmp (group && *group ? group : "all", s_usage_groups [i].group) == 0)
            g = i;
    if (g < 0)
        return 1;
    if (to <= from)
        to = from + 1;
    s_col_t cols [1 + 3 + 5] = { { "day", C_INT } };   //  the day, 3 keys at most, the sums
    int count = 1;
    for (int i = 0; i < s_usage_groups [g].count; i++)
        cols [count++] = s_usage_groups [g].cols [i];
    const s_col_t sums [] = { { "requests", C_INT }, { "input", C_INT }, { "output", C_INT },
                              { "estimated", C_INT }, { "cost_usd_micro", C_INT } };
    assert (count + (int) (sizeof sums / sizeof sums [0]) <= (int) (sizeof cols / sizeof cols [0]));
    for (size_t i = 0; i < sizeof sums / sizeof sums [0]; i++)
        cols [count++] = sums [i];
    sl_buf_t sql = { 0 };
    //  Day and key columns first, then the sums; grouped by position.
    sl_buf_printf (&sql, "SELECT (started_at / $3) * $3, %s, COUNT(*), SUM(COALESCE(usage_in, 0)), "
                         "SUM(COALESCE(usage_out, 0)), "
                         "SUM(CASE WHEN usage_estimated = 1 THEN COALESCE(usage_in, 0) + COALESCE(usage_out, 0) "
                         "ELSE 0 END), SUM(COALESCE(cost_usd_micro, 0)) FROM streams "
                         "WHERE started_at >= $1 AND started_at < $2 GROUP BY 1",
                   s_usage_groups [g].sql);
    for (int i = 0; i < s_usage_groups [g].count; i++)
        sl_buf_printf (&sql, ", %d", i + 2);
    sl_buf_puts (&sql, " ORDER BY 1");
    for (int i = 0; i < s_usage_groups [g].count; i++)
        sl_buf_printf (&sql, ", %d", i + 2);
    sl_val_t p [] = { sl_val_int (from), sl_val_int (to), sl_val_int (S_DAY_MS) };
    size_t mark = out->len;
    sl_buf_printf (out, "{\"from\":%lld,\"to\":%lld,\"group\":\"%s\",\"rows\":[", (long long) from,
                   (long long) to, s_usage_groups [g].group);
    s_list_t list = { out, cols, count, 0, 0, false };
    int rc = sl_store_query (store, sl_buf_cstr (&sql), p, 3, s_list_row, &list);
    sl_buf_free (&sql);
    if (rc) {
        out->len = mark;
        return -1;
    }
    sl_buf_puts (out, "]}");
    return 0;
}

//  --------------------------------------------------------------------------
//  Charts

typedef struct {
    sl_buf_t *out;
    int rows;
    int kinds [6];                      //  0 int, 1 text per column
    int count;
} s_tuples_t;

//  A row as a JSON array, by kinds.
static int
s_tuple_row (void *arg, const sl_row_t *row)
{
    s_tuples_t *t = arg;
    if (t->rows++)
        sl_buf_putc (t->out, ',');
    sl_buf_putc (t->out, '[');
    for (int i = 0; i < t->count; i++) {
        if (i)
            sl_buf_putc (t->out, ',');
        if (t->kinds [i])
            sl_json_put_sl (t->out, sl_row_null (row, i) ? SL_STR_LIT ("") : sl_row_text (row, i));
        else
            sl_buf_put_i64 (t->out, sl_row_int (row, i));
    }
    sl_buf_putc (t->out, ']');
    return 0;
}

typedef struct {
    sl_buf_t *out;
    int rows;
    int64_t bucket;                     //  time bucket being summed
    bool open;
    uint64_t counts [S_LATENCY_BUCKETS];
    uint64_t total;
} s_latency_t;

static double
s_percentile (const s_latency_t *l, double q)
{
    uint64_t want = (uint64_t) (q * (double) l->total + 0.5);
    if (want == 0)
        want = 1;
    uint64_t seen = 0;
    for (int b = 0; b < S_LATENCY_BUCKETS; b++) {
        seen += l->counts [b];
        if (seen >= want)
            return sl_record_bucket_bound (b);
    }
    return sl_record_bucket_bound (S_LATENCY_BUCKETS - 1);
}

static void
s_latency_close (s_latency_t *l)
{
    if (!l->open)
        return;
    if (l->rows++)
        sl_buf_putc (l->out, ',');
    sl_buf_printf (l->out, "[%lld,%.0f,%.0f,%.0f,%llu]", (long long) l->bucket, s_percentile (l, 0.5),
                   s_percentile (l, 0.9), s_percentile (l, 0.99), (unsigned long long) l->total);
    memset (l->counts, 0, sizeof l->counts);
    l->total = 0;
    l->open = false;
}

static int
s_latency_row (void *arg, const sl_row_t *row)
{
    s_latency_t *l = arg;
    int64_t t = sl_row_int (row, 0);
    if (l->open && t != l->bucket)
        s_latency_close (l);
    l->bucket = t;
    l->open = true;
    int64_t b = sl_row_int (row, 1);
    if (b < 0)
        b = 0;
    if (b >= S_LATENCY_BUCKETS)
        b = S_LATENCY_BUCKETS - 1;
    uint64_t n = (uint64_t) sl_row_int (row, 2);
    l->counts [b] += n;
    l->total += n;
    return 0;
}

//  --------------------------------------------------------------------------
//  Shadow mode

static const s_col_t s_shadow_total_cols [] = {
    { "rule", C_TEXT }, { "would_block", C_INT }, { "would_allow", C_INT }, { "would_ask", C_INT },
    { "total", C_INT }
};

static const s_col_t s_shadow_call_cols [] = {
    { "sid", C_TEXT }, { "seq", C_INT }, { "index", C_INT }, { "call_id", C_TEXT }, { "tool", C_TEXT },
    { "action", C_TEXT }, { "check", C_TEXT }, { "rule", C_TEXT }, { "reason", C_TEXT },
    { "judge_model", C_TEXT }, { "probability", C_REAL }, { "at", C_INT }, { "team", C_TEXT }, { "user", C_TEXT }
};

static const s_col_t s_shadow_stream_cols [] = {
    { "sid", C_TEXT }, { "calls", C_INT }, { "first_at", C_INT }
};

#define S_SHADOW_MAX_LIMIT 1000         //  calls and streams one answer lists at most
#define S_SHADOW_DEFAULT_LIMIT 100

int
sl_query_shadow (sl_store_t *store, const char *rule, int64_t from, int64_t to, int64_t bucket_ms,
                 int limit, sl_buf_t *out)
{
    if (to <= from)
        to = from + 1;
    if (bucket_ms <= 0)
        bucket_ms = 60000;
    while ((to - from) / bucket_ms > S_MAX_BUCKETS)
        bucket_ms *= 2;
    if (limit <= 0)
        limit = S_SHADOW_DEFAULT_LIMIT;
    if (limit > S_SHADOW_MAX_LIMIT)
        limit = S_SHADOW_MAX_LIMIT;
    bool one = rule && *rule;
    //  $3: the rule, compared as the console names it ("(default)" for
    //  none); $4 the bucket, in the one query that has buckets (every
    //  parameter a statement is given, it uses: PostgreSQL types them).
    sl_val_t p [] = { sl_val_int (from), sl_val_int (to), sl_val_text (one ? rule : ""), sl_val_int (bucket_ms) };
    const char *where = one ? "side = 'shadow' AND at >= $1 AND at < $2 AND COALESCE(rule, '(default)') = $3"
                            : "side = 'shadow' AND at >= $1 AND at < $2 AND $3 = ''";
    size_t mark = out->len;
    sl_buf_t sql = { 0 };
    sl_buf_printf (out, "{\"from\":%lld,\"to\":%lld,\"bucket_ms\":%lld,\"rule\":", (long long) from,
                   (long long) to, (long long) bucket_ms);
    if (one)
        sl_json_put_sl (out, sl_str (rule));
    else
        sl_buf_puts (out, "null");
    sl_buf_puts (out, ",\"rules\":[");
    sl_buf_printf (&sql, "SELECT COALESCE(rule, '(default)'), "
                         "SUM(CASE WHEN action IN ('block', 'drop', 'terminate') THEN 1 ELSE 0 END), "
                         "SUM(CASE WHEN action = 'allow' THEN 1 ELSE 0 END), "
                         "SUM(CASE WHEN checked = 'would_ask' THEN 1 ELSE 0 END), COUNT(*) "
                         "FROM verdicts WHERE %s GROUP BY 1 ORDER BY 2 DESC, 1", where);
    s_list_t totals = { out, s_shadow_total_cols, 5, 0, 0, false };
    if (sl_store_query (store, sl_buf_cstr (&sql), p, 3, s_list_row, &totals))
        goto failed;
    sl_buf_puts (out, "],\"over_time\":[");
    sl_buf_reset (&sql);
    sl_buf_printf (&sql, "SELECT (at / $4) * $4, COALESCE(rule, '(default)'), action, COUNT(*) FROM verdicts "
                         "WHERE %s GROUP BY 1, 2, 3 ORDER BY 1, 2, 3", where);
    s_tuples_t buckets = { out, 0, { 0, 1, 1, 0 }, 4 };
    if (sl_store_query (store, sl_buf_cstr (&sql), p, 4, s_tuple_row, &buckets))
        goto failed;
    sl_buf_puts (out, "],\"calls\":[");
    sl_buf_reset (&sql);
    sl_buf_printf (&sql, "SELECT sid, seq, idx, call_id, tool, action, checked, rule, reason, judge_model, "
                         "probability, at, team, user_name FROM verdicts WHERE %s ORDER BY at DESC, sid, seq "
                         "LIMIT %d", where, limit + 1);
    s_list_t calls = { out, s_shadow_call_cols, 14, 0, limit, false };
    if (sl_store_query (store, sl_buf_cstr (&sql), p, 3, s_list_row, &calls))
        goto failed;
    sl_buf_printf (out, "],\"more\":%s,\"streams\":[", calls.more ? "true" : "false");
    sl_buf_reset (&sql);
    sl_buf_printf (&sql, "SELECT sid, COUNT(*), MIN(at) FROM verdicts WHERE %s GROUP BY sid ORDER BY 3 DESC, 1 "
                         "LIMIT %d", where, limit);
    s_list_t streams = { out, s_shadow_stream_cols, 3, 0, limit, false };
    if (sl_store_query (store, sl_buf_cstr (&sql), p, 3, s_list_row, &streams))
        goto failed;
    sl_buf_puts (out, "]}");
    sl_buf_free (&sql);
    return 0;
failed:
    sl_buf_free (&sql);
    out->len = mark;
    return -1;
}

int
sl_query_stats (sl_store_t *store, int64_t from, int64_t to, int64_t bucket_ms, sl_buf_t *out)
{
    if (to <= from)
        to = from + 1;
    if (bucket_ms <= 0)
        bucket_ms = 60000;
    while ((to - from) / bucket_ms > S_MAX_BUCKETS)
        bucket_ms *= 2;
    sl_val_t p [] = { sl_val_int (from), sl_val_int (to), sl_val_int (bucket_ms) };
    size_t mark = out->len;
    sl_buf_printf (out, "{\"from\":%lld,\"to\":%lld,\"bucket_ms\":%lld,\"verdicts\":[", (long long) from,
                   (long long) to, (long long) bucket_ms);
    s_tuples_t verdicts = { out, 0, { 0, 1, 1, 0 }, 4 };
    if (sl_store_query (store, "SELECT (at / $3) * $3, COALESCE(rule, '(default)'), action, COUNT(*) "
                               "FROM verdicts WHERE at >= $1 AND at < $2 AND side <> 'shadow' "
                               "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
                        p, 3, s_tuple_row, &verdicts))
        goto failed;
    sl_buf_puts (out, "],\"streams\":[");
    s_tuples_t streams = { out, 0, { 0, 0, 0 }, 3 };
    if (sl_store_query (store, "SELECT (started_at / $3) * $3, COUNT(*), "
                               "SUM(CASE WHEN error_code IS NULL THEN 0 ELSE 1 END) FROM streams "
                               "WHERE started_at >= $1 AND started_at < $2 GROUP BY 1 ORDER BY 1",
                        p, 3, s_tuple_row, &streams))
        goto failed;
    sl_buf_puts (out, "],\"models\":[");
    s_tuples_t models = { out, 0, { 1, 1, 0, 0 }, 4 };
    if (sl_store_query (store, "SELECT COALESCE(model, '?'), COALESCE(provider, '?'), COUNT(*), "
                               "SUM(CASE WHEN error_code IS NULL THEN 0 ELSE 1 END) FROM streams "
                               "WHERE started_at >= $1 AND started_at < $2 GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2 "
                               "LIMIT 30", p, 2, s_tuple_row, &models))
        goto failed;
    sl_buf_puts (out, "],\"latency\":[");
    s_latency_t *latency = sl_xcalloc (1, sizeof *latency);
    latency->out = out;
    int rc = sl_store_query (store, "SELECT (at / $3) * $3, latency_bucket, COUNT(*) FROM verdicts "
                                    "WHERE at >= $1 AND at < $2 AND latency_bucket IS NOT NULL AND side <> 'shadow' "
                                    "GROUP BY 1, 2 ORDER BY 1, 2", p, 3, s_latency_row, latency);
    s_latency_close (latency);
    free (latency);
    if (rc)
        goto failed;
    sl_buf_puts (out, "]}");
    return 0;
failed:
    out->len = mark;
    return -1;
}

//  --------------------------------------------------------------------------
//  Policies and gaps

static const s_col_t s_policy_cols [] = {
    { "judge", C_TEXT }, { "policy", C_TEXT }, { "name", C_TEXT }, { "source", C_TEXT },
    { "loaded_at", C_INT }, { "first_seen", C_INT }, { "last_seen", C_INT }, { "failures", C_INT },
    { "last_error", C_TEXT }
};

int
sl_query_policies (sl_store_t *store, sl_buf_t *out)
{
    size_t mark = out->len;
    sl_buf_puts (out, "{\"policies\":[");
    s_list_t list = { out, s_policy_cols, (int) (sizeof s_policy_cols / sizeof s_policy_cols [0]), 0, 0, false };
    if (sl_store_query (store, "SELECT judge, policy, name, source, loaded_at, first_seen, last_seen, failures, "
                               "last_error FROM policies ORDER BY last_seen DESC, judge LIMIT 200",
                        NULL, 0, s_list_row, &list)) {
        out->len = mark;
        return -1;
    }
    sl_buf_puts (out, "]}");
    return 0;
}

static const s_col_t s_gap_cols [] = {
    { "emitter", C_TEXT }, { "incarnation", C_TEXT }, { "rseq", C_INT }, { "lost", C_INT },
    { "since", C_INT }, { "at", C_INT }, { "streams", C_INT }
};

int
sl_query_gaps (sl_store_t *store, int limit, sl_buf_t *out)
{
    size_t mark = out->len;
    int64_t total = 0;
    if (sl_store_query_int (store, "SELECT SUM(lost) FROM gaps", NULL, 0, 0, &total))
        return -1;
    sl_buf_puts (out, "{\"gaps\":[");
    sl_val_t p [] = { sl_val_int (limit > 0 ? limit : 50) };
    s_list_t list = { out, s_gap_cols, (int) (sizeof s_gap_cols / sizeof s_gap_cols [0]), 0, 0, false };
    if (sl_store_query (store, "SELECT emitter, incarnation, rseq, lost, since, at, streams FROM gaps "
                               "ORDER BY at DESC LIMIT $1", p, 1, s_list_row, &list)) {
        out->len = mark;
        return -1;
    }
    sl_buf_printf (out, "],\"lost\":%lld}", (long long) total);
    return 0;
}

//  --------------------------------------------------------------------------
//  Approvals

#define S_APPROVAL_COLS "id, state, stream, call_index, tool, arguments, rule, message, digest, policy, " \
                        "policy_name, key_id, team, user_name, model, last_user, judge, details, created_at, " \
                        "expires_at, updated_at, approver, comment"

typedef struct {
    sl_buf_t *out;
    int rows;
} s_approvals_t;

static int
s_approval_row (void *arg, const sl_row_t *row)
{
    s_approvals_t *list = arg;
    sl_approval_t a = { 0 };
    sl_str_t id = sl_row_text (row, 0);
    snprintf (a.id, sizeof a.id, "%.*s", (int) id.len, id.ptr ? id.ptr : "");
    sl_str_t *texts [] = { &a.state, &a.stream, NULL, &a.tool, &a.arguments, &a.rule, &a.message, &a.digest,
                           &a.policy, &a.policy_name, &a.key_id, &a.team, &a.user, &a.model, &a.last_user,
                           &a.judge, &a.details };
    for (int c = 0; c < (int) (sizeof texts / sizeof texts [0]); c++)
        if (texts [c])
            *texts [c] = sl_row_text (row, c + 1);
    a.index = sl_row_null (row, 3) ? -1 : sl_row_int (row, 3);
    a.created_at = sl_row_int (row, 18);
    a.expires_at = sl_row_int (row, 19);
    if (!sl_str_eq (a.state, "pending")) {
        a.decided_at = sl_row_int (row, 20);
        a.approver = sl_row_text (row, 21);
        a.comment = sl_row_text (row, 22);
    }
    if (list->rows++)
        sl_buf_putc (list->out, ',');
    sl_approval_json (&a, list->out);
    return 0;
}

int
sl_query_approvals (sl_store_t *store, const char *state, int limit, sl_buf_t *out)
{
    const char *sql;
    if (state && strcmp (state, "pending") == 0)
        sql = "SELECT " S_APPROVAL_COLS " FROM approvals WHERE state = 'pending' ORDER BY created_at LIMIT $1";
    else
    if (state && strcmp (state, "decided") == 0)
        sql = "SELECT " S_APPROVAL_COLS " FROM approvals WHERE state <> 'pending' ORDER BY updated_at DESC LIMIT $1";
    else
    if (!state || !*state)
        sql = "SELECT " S_APPROVAL_COLS " FROM approvals ORDER BY updated_at DESC LIMIT $1";
    else
        return 1;
    size_t mark = out->len;
    sl_buf_puts (out, "{\"approvals\":[");
    sl_val_t p [] = { sl_val_int (limit > 0 ? limit : 100) };
    s_approvals_t list = { out, 0 };
    if (sl_store_query (store, sql, p, 1, s_approval_row, &list)) {
        out->len = mark;
        return -1;
    }
    sl_buf_puts (out, "]}");
    return 0;
}

//  --------------------------------------------------------------------------
//  Export

typedef struct {
    char (*sids) [SL_SID_HEX_SIZE];
    int64_t *starts;
    int count;
} s_page_t;

static int
s_page_row (void *arg, const sl_row_t *row)
{
    s_page_t *page = arg;
    sl_str_t sid = sl_row_text (row, 0);
    if (sid.len >= SL_SID_HEX_SIZE)
        sid.len = SL_SID_HEX_SIZE - 1;
    memcpy (page->sids [page->count], sid.ptr ? sid.ptr : "", sid.len);
    page->sids [page->count][sid.len] = 0;
    page->starts [page->count] = sl_row_int (row, 1);
    page->count++;
    return 0;
}

int64_t
sl_query_export (sl_store_t *store, int64_t from, int64_t to, sl_query_line_fn *fn, void *arg)
{
    if (to <= 0)
        to = INT64_MAX;
    s_page_t page = { sl_xcalloc (S_EXPORT_PAGE, SL_SID_HEX_SIZE), sl_xcalloc (S_EXPORT_PAGE, sizeof (int64_t)), 0 };
    sl_buf_t line = { 0 };
    int64_t written = 0;
    int64_t after_start = from - 1;
    char after_sid [SL_SID_HEX_SIZE] = "";
    for (;;) {
        page.count = 0;
        sl_val_t p [] = { sl_val_int (after_start), sl_val_text (after_sid), sl_val_int (to),
                          sl_val_int (S_EXPORT_PAGE), sl_val_int (from) };
        if (sl_store_query (store, "SELECT sid, started_at FROM streams WHERE started_at >= $5 "
                                   "AND (started_at > $1 OR (started_at = $1 AND sid > $2)) AND started_at < $3 "
                                   "ORDER BY started_at, sid LIMIT $4", p, 5, s_page_row, &page)) {
            written = -1;
            break;
        }
        for (int i = 0; i < page.count; i++) {
            sl_buf_reset (&line);
            if (sl_query_stream (store, page.sids [i], &line) < 0) {
                written = -1;
                break;
            }
            if (!line.len)
                continue;               //  pruned meanwhile
            sl_buf_putc (&line, '\n');
            fn (arg, line.data, line.len);
            written++;
        }
        if (written < 0 || page.count < S_EXPORT_PAGE)
            break;
        after_start = page.starts [page.count - 1];
        snprintf (after_sid, sizeof after_sid, "%s", page.sids [page.count - 1]);
    }
    sl_buf_free (&line);
    free (page.sids);
    free (page.starts);
    return written;
}
