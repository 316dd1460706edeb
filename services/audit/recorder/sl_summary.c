/*  sl_summary.c - the rows later records update, against what the chain
    recorded (see sl_summary.h). */
#include "services/audit/recorder/sl_summary.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "services/audit/recorder/sl_chain.h"

#define S_KEY 256                       //  a row's key, for the cursor and the report

typedef enum { S_STREAMS = 0, S_APPROVALS, S_POLICIES, S_DONE } s_phase_t;

//  A table's columns as read: names, one type letter each (I integer, T text).
typedef struct {
    const char *table;
    const char *columns;
    const char *types;
    const char *page;                   //  the next page after the cursor (the key's parts, then the limit)
    int params;                         //  ... how many it takes
} s_table_t;

//  streams: what its records set (sl_archive.c), lost to know whether a
//  gap notice may have made the row.
enum { ST_SID, ST_STARTED, ST_ENDED, ST_DURATION, ST_EPOCH, ST_CLIENT_DIALECT, ST_UPSTREAM_DIALECT, ST_MODEL,
       ST_PROVIDER, ST_CLIENT_KEY, ST_STREAMING, ST_POLICY, ST_LAST_USER, ST_TOOLS, ST_TOOLS_JSON, ST_TEAM,
       ST_USER, ST_MCP, ST_RESPONSE_ID, ST_RESPONSE_MODEL, ST_FINISH, ST_FINISH_RAW, ST_USAGE_IN, ST_USAGE_OUT,
       ST_USAGE_TOTAL, ST_USAGE_CACHE_READ, ST_USAGE_CACHE_WRITE, ST_USAGE_REASONING, ST_USAGE_ESTIMATED,
       ST_ERROR_CODE, ST_ERROR_MESSAGE, ST_ERROR_STATUS, ST_ERROR_SOURCE, ST_LOST, ST_COLUMNS };
//  approvals, in the order of the fresh record's values (sl_archive.c
//  s_approval: the first 20, then updated_at, approver, comment).
enum { AP_ID, AP_STATE, AP_STREAM, AP_CALL_INDEX, AP_TOOL, AP_ARGUMENTS, AP_RULE, AP_MESSAGE, AP_DIGEST, AP_POLICY,
       AP_POLICY_NAME, AP_KEY_ID, AP_TEAM, AP_USER, AP_MODEL, AP_LAST_USER, AP_JUDGE, AP_DETAILS, AP_CREATED,
       AP_EXPIRES, AP_UPDATED, AP_APPROVER, AP_COMMENT, AP_COLUMNS };
//  policies, in the order of a report's values (s_policy).
enum { PO_JUDGE, PO_POLICY, PO_NAME, PO_SOURCE, PO_LOADED, PO_SEEN, PO_FAILURES, PO_ERROR, PO_LAST_SEEN,
       PO_COLUMNS };

static const s_table_t s_tables [S_DONE] = {
    { "streams",
      "sid, started_at, ended_at, duration_ms, epoch, client_dialect, upstream_dialect, model, provider, client_key, "
      "streaming, policy, last_user, tools, tools_json, team, user_name, mcp, response_id, response_model, finish, "
      "finish_raw, usage_in, usage_out, usage_total, usage_cache_read, usage_cache_write, usage_reasoning, "
      "usage_estimated, error_code, error_message, error_status, error_source, lost",
      "TIIIITTTTTITTTTTTTTTTTIIIIIIITTITI",
      "WHERE sid > $1 ORDER BY sid LIMIT $2", 2 },
    { "approvals",
      "id, state, stream, call_index, tool, arguments, rule, message, digest, policy, policy_name, key_id, team, "
      "user_name, model, last_user, judge, details, created_at, expires_at, updated_at, approver, comment",
      "TTTITTTTTTTTTTTTTTIIITT",
      "WHERE id > $1 ORDER BY id LIMIT $2", 2 },
    { "policies",
      "judge, policy, name, source, loaded_at, first_seen, failures, last_error, last_seen",
      "TTTTIIITI",
      "WHERE judge > $1 OR (judge = $1 AND policy > $2) ORDER BY judge, policy LIMIT $3", 3 },
};

//  The columns of a stream's start, in its entry's data (after the sid).
static const int s_start_columns [] = {
    -1 /* at */, ST_EPOCH, ST_CLIENT_DIALECT, ST_UPSTREAM_DIALECT, ST_MODEL, ST_PROVIDER, ST_CLIENT_KEY,
    ST_STREAMING, ST_POLICY, ST_LAST_USER, ST_TOOLS, ST_TOOLS_JSON, -1 /* bytes */, ST_TEAM, ST_USER, ST_MCP
};
#define S_START_VALUES ((int) (sizeof s_start_columns / sizeof s_start_columns [0]))
#define S_USAGE_VALUES 7                //  a message's or finish's usage, after its own two
static const int s_usage_columns [S_USAGE_VALUES] = {
    ST_USAGE_IN, ST_USAGE_OUT, ST_USAGE_TOTAL, ST_USAGE_CACHE_READ, ST_USAGE_CACHE_WRITE, ST_USAGE_REASONING,
    ST_USAGE_ESTIMATED
};
#define S_FRESH_APPROVAL 22             //  values of an approval's first record (a later state's: 6)
#define S_DECISION_DETAILS 5            //  a later state's details (sl_archive.c s_approval: decided)

struct _sl_summary_t {
    sl_store_t *store;
    int64_t since;                      //  rows older are older than the chain
    int64_t first_at;                   //  the chain's first entry's time (INT64_MAX: none)
    bool started;
    s_phase_t phase;
    char after [2][S_KEY];              //  the cursor: the last row's key
    int64_t compared;
    json_t *rows;                       //  the page being compared
    json_t *entries;                    //  one row's entries: [pos, at, kind, data]
    sl_summary_problem_t *problem;
};

sl_summary_t *
sl_summary_new (sl_store_t *store, int64_t since)
{
    sl_summary_t *self = sl_xcalloc (1, sizeof *self);
    self->store = store;
    self->since = since;
    return self;
}

void
sl_summary_destroy (sl_summary_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_summary_t *self = *self_p;
    json_decref (self->rows);
    json_decref (self->entries);
    free (self);
    *self_p = NULL;
}

int64_t
sl_summary_compared (sl_summary_t *self)
{
    return self->compared;
}

//  --------------------------------------------------------------------------
//  Values

static json_t *
s_value (const sl_row_t *row, int col, char type)
{
    if (sl_row_null (row, col))
        return json_null ();
    if (type == 'I')
        return json_integer (sl_row_int (row, col));
    sl_str_t s = sl_row_text (row, col);
    return json_stringn_nocheck (s.ptr ? s.ptr : "", s.len);
}

//  A row as an array of its columns' values (by the table's types).
static int
s_row (void *arg, const sl_row_t *row)
{
    json_t *rows = ((sl_summary_t *) arg)->rows;
    const char *types = json_string_value (json_object_get (rows, "types"));
    json_t *values = json_array ();
    for (int i = 0; types [i]; i++)
        json_array_append_new (values, s_value (row, i, types [i]));
    json_array_append_new (json_object_get (rows, "page"), values);
    return 0;
}

//  An entry: [pos, at, kind, data (the JSON array it carried, or null)].
static int
s_entry (void *arg, const sl_row_t *row)
{
    json_t *entries = ((sl_summary_t *) arg)->entries;
    sl_str_t kind = sl_row_text (row, 2), data = sl_row_text (row, 3);
    json_t *values = data.ptr ? json_loadb (data.ptr, data.len, 0, NULL) : NULL;
    json_array_append_new (entries, json_pack ("{sIsIss#so}", "pos", (json_int_t) sl_row_int (row, 0), "at",
                                               (json_int_t) sl_row_int (row, 1), "kind", kind.ptr ? kind.ptr : "",
                                               (int) kind.len, "data", values ? values : json_null ()));
    return 0;
}

static int64_t
s_int (json_t *v)
{
    return json_is_integer (v) ? (int64_t) json_integer_value (v) : 0;
}

//  Value i of an entry's data (NULL when it has fewer).
static json_t *
s_data (json_t *entry, int i)
{
    return json_array_get (json_object_get (entry, "data"), (size_t) i);
}

static int
s_problem (sl_summary_t *self, const char *kind, const char *table, const char *key, int64_t pos,
           const char *format, ...)
{
    sl_summary_problem_t *p = self->problem;
    p->kind = kind;
    snprintf (p->table, sizeof p->table, "%s", table);
    snprintf (p->key, sizeof p->key, "%s", key);
    p->pos = pos;
    va_list args;
    va_start (args, format);
    vsnprintf (p->detail, sizeof p->detail, format, args);
    va_end (args);
    return 1;
}

//  A value for a sentence: text quoted (and cut), numbers, null.
static void
s_show (json_t *v, char *out, size_t size)
{
    if (json_is_string (v))
        snprintf (out, size, "\"%.*s\"", (int) (json_string_length (v) < 48 ? json_string_length (v) : 48),
                  json_string_value (v));
    else
    if (json_is_integer (v))
        snprintf (out, size, "%lld", (long long) json_integer_value (v));
    else
        snprintf (out, size, "null");
}

//  Column col of a row against what the chain says it should be. 1 when
//  they differ (the problem is set).
static int
s_expect (sl_summary_t *self, s_phase_t table, const char *key, json_t *row, int col, json_t *want, int64_t pos)
{
    json_t *got = json_array_get (row, (size_t) col);
    if (json_equal (got, want) || (json_is_null (got) && json_is_null (want)))
        return 0;
    //  The column's name: the col-th of the list.
    const char *c = s_tables [table].columns;
    for (int i = 0; i < col && c; i++)
        c = strchr (c, ',') ? strchr (c, ',') + 2 : NULL;
    char name [48], shown_got [64], shown_want [64];
    snprintf (name, sizeof name, "%.*s", c ? (int) strcspn (c, ",") : 1, c ? c : "?");
    s_show (got, shown_got, sizeof shown_got);
    s_show (want, shown_want, sizeof shown_want);
    return s_problem (self, "changed", s_tables [table].table, key, pos,
                      "changed: the %s row %s has %s = %s, but its records (up to chain position %lld) say %s",
                      s_tables [table].table, key, name, shown_got, (long long) pos, shown_want);
}

//  --------------------------------------------------------------------------
//  Streams

//  A usage set's values (after a message's or finish's own two) onto the
//  stream: each reported count replaces the one before (COALESCE), the
//  estimate flag stays once set.
static void
s_fold_usage (json_t *want, json_t *entry)
{
    if (json_array_size (json_object_get (entry, "data")) < 2 + S_USAGE_VALUES)
        return;
    for (int i = 0; i < S_USAGE_VALUES; i++) {
        json_t *v = s_data (entry, 2 + i);
        if (s_usage_columns [i] == ST_USAGE_ESTIMATED) {
            if (s_int (v) == 1)
                json_array_set_new (want, ST_USAGE_ESTIMATED, json_integer (1));
        }
        else
        if (!json_is_null (v))
            json_array_set (want, (size_t) s_usage_columns [i], v);
    }
}

//  The digest a start's big text is chained by, of the row's text.
static json_t *
s_digest_of (json_t *text)
{
    if (!json_is_string (text))
        return json_null ();
    char hex [SL_CHAIN_HEX];
    sl_chain_digest (sl_str_n (json_string_value (text), json_string_length (text)), hex);
    return json_string (hex);
}

//  One stream's row against its entries (in chain order). 1 a problem.
static int
s_stream (sl_summary_t *self, json_t *row, const char *key)
{
    json_t *entries = self->entries;
    size_t n = json_array_size (entries);
    json_t *want = json_array ();
    for (int i = 0; i < ST_COLUMNS; i++)
        json_array_append_new (want, json_null ());
    json_array_set_new (want, ST_USAGE_ESTIMATED, json_integer (0));
    bool has_start = false;
    int64_t last = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get (entries, i);
        const char *kind = json_string_value (json_object_get (e, "kind"));
        int64_t at = s_int (json_object_get (e, "at"));
        last = s_int (json_object_get (e, "pos"));
        if (i == 0)                     //  the row was made by its first record written
            json_array_set_new (want, ST_STARTED, json_integer (at));
        if (strcmp (kind, "start") == 0) {
            has_start = true;
            int64_t started = s_int (json_array_get (want, ST_STARTED)), t = s_int (s_data (e, 0));
            json_array_set_new (want, ST_STARTED, json_integer (t < started ? t : started));
            for (int v = 1; v < S_START_VALUES; v++)
                if (s_start_columns [v] >= 0) {
                    json_t *value = s_data (e, v);
                    json_array_set (want, (size_t) s_start_columns [v], value ? value : json_null ());
                }
        }
        else
        if (strcmp (kind, "message") == 0) {
            if (!json_is_null (s_data (e, 0)) && s_data (e, 0))
                json_array_set (want, ST_RESPONSE_ID, s_data (e, 0));
            if (!json_is_null (s_data (e, 1)) && s_data (e, 1))
                json_array_set (want, ST_RESPONSE_MODEL, s_data (e, 1));
            s_fold_usage (want, e);
        }
        else
        if (strcmp (kind, "finish") == 0) {
            json_array_set (want, ST_FINISH, s_data (e, 0) ? s_data (e, 0) : json_null ());
            json_array_set (want, ST_FINISH_RAW, s_data (e, 1) ? s_data (e, 1) : json_null ());
            s_fold_usage (want, e);
        }
        else
        if (strcmp (kind, "error") == 0) {
            //  The first error stays (one without a code lets the next in).
            if (json_is_null (json_array_get (want, ST_ERROR_CODE)))
                for (int v = 0; v < 4; v++)
                    json_array_set (want, (size_t) (ST_ERROR_CODE + v), s_data (e, v) ? s_data (e, v) : json_null ());
        }
        else
        if (strcmp (kind, "end") == 0 && json_is_null (json_array_get (want, ST_ENDED))) {
            int64_t end = s_int (s_data (e, 0));
            json_array_set_new (want, ST_ENDED, json_integer (end));
            json_array_set_new (want, ST_DURATION, json_integer (end - s_int (json_array_get (want, ST_STARTED))));
        }
    }
    //  Without a start its columns stay as the first record left them.
    if (!has_start)
        json_array_set (want, ST_EPOCH, json_array_get (row, ST_EPOCH));
    //  Big texts by digest.
    json_t *digests = json_array ();
    json_array_append_new (digests, s_digest_of (json_array_get (row, ST_LAST_USER)));
    json_array_append_new (digests, s_digest_of (json_array_get (row, ST_TOOLS_JSON)));
    json_t *compared = json_deep_copy (row);
    json_array_set (compared, ST_LAST_USER, json_array_get (digests, 0));
    json_array_set (compared, ST_TOOLS_JSON, json_array_get (digests, 1));
    json_decref (digests);
    //  A gap notice may have made the row (lost > 0), earlier: its start
    //  time may only be earlier than its records say, its duration then
    //  counted from it.
    if (s_int (json_array_get (row, ST_LOST)) > 0) {
        if (s_int (json_array_get (row, ST_STARTED)) <= s_int (json_array_get (want, ST_STARTED))) {
            json_array_set (want, ST_STARTED, json_array_get (row, ST_STARTED));
            json_array_set (want, ST_DURATION, json_array_get (row, ST_DURATION));
        }
    }
    int rc = 0;
    for (int col = ST_STARTED; col < ST_LOST && rc == 0; col++)
        rc = s_expect (self, S_STREAMS, key, compared, col, json_array_get (want, (size_t) col), last);
    json_decref (compared);
    json_decref (want);
    return rc;
}

//  --------------------------------------------------------------------------
//  Approvals

static int
s_approval (sl_summary_t *self, json_t *row, const char *key)
{
    json_t *entries = self->entries;
    json_t *first = json_array_get (entries, 0);
    json_t *want = json_deep_copy (row);
    int64_t last = 0;
    bool fresh = json_array_size (json_object_get (first, "data")) >= S_FRESH_APPROVAL;
    //  The fresh record's values; what it lacked a later one may fill in.
    if (fresh)
        for (int col = AP_STREAM; col <= AP_EXPIRES; col++) {
            json_t *v = s_data (first, col == AP_EXPIRES ? 19 : col);
            if (col != AP_CREATED && !json_is_null (v))
                json_array_set (want, (size_t) col, v);
        }
    for (size_t i = 0; i < json_array_size (entries); i++) {
        json_t *e = json_array_get (entries, i);
        last = s_int (json_object_get (e, "pos"));
        //  The fresh record's values, or a later state's (when the fresh
        //  one's entry was cut, its state changes only are compared).
        bool whole = json_array_size (json_object_get (e, "data")) >= S_FRESH_APPROVAL;
        int state = 1, at = whole ? 18 : 2, approver = whole ? 20 : 3, comment = whole ? 21 : 4;
        //  A decision's details (its sixth value: the memory it gave,
        //  self_approved) replace the pending record's, when it has any.
        json_t *details = whole ? NULL : s_data (e, S_DECISION_DETAILS);
        if (details && !json_is_null (details))
            json_array_set (want, AP_DETAILS, details);
        json_array_set (want, AP_STATE, s_data (e, state) ? s_data (e, state) : json_null ());
        json_array_set (want, AP_UPDATED, s_data (e, at) ? s_data (e, at) : json_null ());
        json_array_set (want, AP_APPROVER, s_data (e, approver) ? s_data (e, approver) : json_null ());
        json_array_set (want, AP_COMMENT, s_data (e, comment) ? s_data (e, comment) : json_null ());
    }
    //  The wait began no later than the first record said.
    if (fresh && s_int (json_array_get (row, AP_CREATED)) > s_int (s_data (first, 18)))
        json_array_set (want, AP_CREATED, s_data (first, 18));
    int rc = 0;
    for (int col = AP_STATE; col < AP_COLUMNS && rc == 0; col++)
        rc = s_expect (self, S_APPROVALS, key, row, col, json_array_get (want, (size_t) col), last);
    json_decref (want);
    return rc;
}

//  --------------------------------------------------------------------------
//  Policies

static int
s_policy (sl_summary_t *self, json_t *row, const char *key)
{
    json_t *e = json_array_get (self->entries, 0);
    int64_t pos = s_int (json_object_get (e, "pos"));
    json_t *want = json_deep_copy (row);
    json_array_set (want, PO_SOURCE, s_data (e, PO_SOURCE) ? s_data (e, PO_SOURCE) : json_null ());
    if (s_data (e, PO_ERROR) && !json_is_null (s_data (e, PO_ERROR)))
        json_array_set (want, PO_ERROR, s_data (e, PO_ERROR));
    //  At least what the latest report said.
    if (s_int (json_array_get (row, PO_LAST_SEEN)) < s_int (s_data (e, PO_SEEN)))
        json_array_set (want, PO_LAST_SEEN, s_data (e, PO_SEEN));
    if (s_int (json_array_get (row, PO_FAILURES)) < s_int (s_data (e, PO_FAILURES)))
        json_array_set (want, PO_FAILURES, s_data (e, PO_FAILURES));
    int rc = 0;
    for (int col = PO_NAME; col < PO_COLUMNS && rc == 0; col++)
        rc = s_expect (self, S_POLICIES, key, row, col, json_array_get (want, (size_t) col), pos);
    json_decref (want);
    return rc;
}

//  --------------------------------------------------------------------------
//  Stepping

//  A row's entries into self->entries. 0, -1.
static int
s_entries (sl_summary_t *self, s_phase_t phase, json_t *row)
{
    json_decref (self->entries);
    self->entries = json_array ();
    const char *k0 = json_string_value (json_array_get (row, 0));
    if (phase == S_STREAMS) {
        //  Through the ledger: every record of the stream names its entry
        //  (a ledger row naming none, or another's, is the rows check's).
        sl_val_t p [] = { sl_val_text (k0) };
        return sl_store_query (self->store, "SELECT c.pos, c.at, c.kind, c.data FROM events e JOIN chain c "
                                            "ON c.pos = e.chain_pos AND c.sid = e.sid AND c.seq = e.seq "
                                            "AND c.sub = e.sub WHERE e.sid = $1 ORDER BY c.pos", p, 1,
                               s_entry, self);
    }
    if (phase == S_APPROVALS) {
        //  By its key, id:state, for every state (and the row's own).
        static const char *states [] = { "pending", "approved", "denied", "timeout", "cancelled", "failed" };
        char refs [7][S_KEY + 16];
        sl_val_t p [7];
        for (int i = 0; i < 7; i++) {
            snprintf (refs [i], sizeof refs [i], "%s:%s", k0,
                      i < 6 ? states [i] : json_string_value (json_array_get (row, AP_STATE)));
            p [i] = sl_val_text (refs [i]);
        }
        return sl_store_query (self->store, "SELECT pos, at, kind, data FROM chain WHERE kind = 'approval' "
                                            "AND ref IN ($1, $2, $3, $4, $5, $6, $7) ORDER BY pos", p, 7,
                               s_entry, self);
    }
    //  A policy's latest report.
    char ref [2 * S_KEY + 2];
    snprintf (ref, sizeof ref, "%s %s", k0, json_string_value (json_array_get (row, PO_POLICY)));
    sl_val_t p [] = { sl_val_text (ref) };
    return sl_store_query (self->store, "SELECT pos, at, kind, data FROM chain WHERE kind = 'policy' AND ref = $1 "
                                        "ORDER BY pos DESC LIMIT 1", p, 1, s_entry, self);
}

//  When a row's records are older than what the chain holds, by the
//  row's own time: the chain cannot say (not compared).
static bool
s_older_than_chain (sl_summary_t *self, s_phase_t phase, json_t *row)
{
    int64_t at = s_int (json_array_get (row, phase == S_STREAMS ? ST_STARTED
                                             : phase == S_APPROVALS ? AP_CREATED : PO_LAST_SEEN));
    return at < self->since || (phase != S_STREAMS && at < self->first_at);
}

//  One row. 1 a problem, 0, -1 failed.
static int
s_one (sl_summary_t *self, s_phase_t phase, json_t *row)
{
    char key [2 * S_KEY + 32];
    const char *k0 = json_string_value (json_array_get (row, 0));
    if (phase == S_STREAMS)
        snprintf (key, sizeof key, "sid=%s", k0);
    else
    if (phase == S_APPROVALS)
        snprintf (key, sizeof key, "id=%s", k0);
    else
        snprintf (key, sizeof key, "judge=%s policy=%s", k0, json_string_value (json_array_get (row, PO_POLICY)));
    if (s_entries (self, phase, row))
        return -1;
    if (json_array_size (self->entries) == 0) {
        //  A stream an emitter lost records of may have a row and no
        //  record; one older than the chain is not covered.
        if (s_older_than_chain (self, phase, row) || (phase == S_STREAMS && s_int (json_array_get (row, ST_LOST))))
            return 0;
        if (phase == S_STREAMS) {
            //  Its ledger rows name no entry (or it has none): the rows check's, or no record made it.
            int64_t events = 0;
            sl_val_t p [] = { sl_val_text (k0) };
            if (sl_store_query_int (self->store, "SELECT COUNT(*) FROM events WHERE sid = $1", p, 1, 0, &events))
                return -1;
            if (events)
                return 0;
        }
        self->compared++;
        return s_problem (self, "inserted", s_tables [phase].table, key, 0,
                          "inserted: the %s row %s is named by no record of the chain", s_tables [phase].table, key);
    }
    self->compared++;
    return phase == S_STREAMS ? s_stream (self, row, key)
         : phase == S_APPROVALS ? s_approval (self, row, key) : s_policy (self, row, key);
}

int
sl_summary_step (sl_summary_t *self, int max, sl_summary_problem_t *problem)
{
    memset (problem, 0, sizeof *problem);
    problem->kind = "";
    self->problem = problem;
    if (!self->started) {
        if (sl_store_query_int (self->store, "SELECT at FROM chain ORDER BY pos LIMIT 1", NULL, 0, INT64_MAX,
                                &self->first_at))
            return -1;
        self->started = true;
    }
    int done = 0;
    while (self->phase < S_DONE && done < max) {
        const s_table_t *t = &s_tables [self->phase];
        char sql [1024];
        snprintf (sql, sizeof sql, "SELECT %s FROM %s %s", t->columns, t->table, t->page);
        json_decref (self->rows);
        self->rows = json_pack ("{sss[]}", "types", t->types, "page");
        int want = max - done;
        //  The key's parts, then the limit (each query is given only the
        //  parameters it uses: PostgreSQL types them all).
        sl_val_t p [] = { sl_val_text (self->after [0]), sl_val_text (self->after [1]), sl_val_int (want) };
        if (t->params == 2)
            p [1] = p [2];
        if (sl_store_query (self->store, sql, p, t->params, s_row, self))
            return -1;
        json_t *page = json_object_get (self->rows, "page");
        size_t n = json_array_size (page);
        for (size_t i = 0; i < n; i++) {
            json_t *row = json_array_get (page, i);
            int one = s_one (self, self->phase, row);
            if (one < 0)
                return -1;
            snprintf (self->after [0], sizeof self->after [0], "%s", json_string_value (json_array_get (row, 0)));
            if (self->phase == S_POLICIES)
                snprintf (self->after [1], sizeof self->after [1], "%s",
                          json_string_value (json_array_get (row, PO_POLICY)));
            if (one)
                return 0;
        }
        done += (int) n;
        if ((int) n < want) {           //  the table is done
            self->phase++;
            self->after [0][0] = self->after [1][0] = 0;
        }
    }
    return self->phase < S_DONE ? 1 : 0;
}
