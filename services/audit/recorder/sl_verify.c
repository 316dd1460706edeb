/*  sl_verify.c - walking the audit's hash chain against the store (see sl_verify.h). */
#include "services/audit/recorder/sl_verify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "services/audit/recorder/sl_chain.h"
#include "services/audit/recorder/sl_checkpoint.h"
#include "services/audit/recorder/sl_summary.h"
#include "services/audit/store/sl_keystore.h"

#define S_PAGE 256                      //  entries read at once
#define S_SQL 1024                      //  a query built from the column lists
#define S_KEY_KIND "key"                //  a key event's entries (sl_keystore.h)
#define S_ALERT_KIND "alert"            //  a budget alert's entries (sl_alertstore.h)
#define S_CHAIN_VERSION 6               //  the migration that began the chain
#define S_SID_PARTS 256                 //  the rows check's parts: stream ids by their first two hex digits,
#define S_ROW_PARTS (S_SID_PARTS + 1)   //  then the gaps, key events and alerts

typedef struct {
    int64_t pos, at, seq;
    int sub;
    bool rows_named;
    char *kind, *sid, *ref, *data, *prev, *hash;
} s_entry_t;

struct _sl_verify_t {
    sl_store_t *store;
    sl_verify_opts_t opts;
    bool started;                       //  the start was found
    int64_t next;                       //  the position expected next
    char prev [SL_CHAIN_HEX];           //  the hash before the next entry
    int64_t cut_pos;                    //  the latest cut (0: none)
    s_entry_t page [S_PAGE];
    int count;
    sl_buf_t canon;
    bool found;                         //  a row lookup found its row
    int rows_part;                      //  the rows check's next part
    int64_t rows_since;                 //  rows dated before are older than the chain (-1: not read yet)
    int64_t rows_before;                //  ... counted so far
    bool cps_started;                   //  the checkpoints check began
    int64_t cps_last;                   //  ... checked up to this position
    bool seen_signed;                   //  a checkpoint signed with the key was checked
    bool has_newest, has_newest_good;
    sl_checkpoint_t newest;             //  the newest checkpoint checked (store or file)
    sl_checkpoint_t newest_good;        //  ... of those signed with the key
    sl_summary_t *summary;              //  the summary rows' comparison under way
    sl_verify_report_t report;
};

sl_verify_t *
sl_verify_new (sl_store_t *store, const sl_verify_opts_t *opts)
{
    sl_verify_t *self = sl_xcalloc (1, sizeof *self);
    self->store = store;
    if (opts)
        self->opts = *opts;
    self->report.problem = "";
    self->report.head_seal = "";
    self->rows_since = -1;
    return self;
}

static void
s_page_clear (sl_verify_t *self)
{
    for (int i = 0; i < self->count; i++) {
        s_entry_t *e = &self->page [i];
        free (e->kind);
        free (e->sid);
        free (e->ref);
        free (e->data);
        free (e->prev);
        free (e->hash);
    }
    self->count = 0;
}

void
sl_verify_destroy (sl_verify_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_verify_t *self = *self_p;
    s_page_clear (self);
    sl_buf_free (&self->canon);
    sl_summary_destroy (&self->summary);
    free (self);
    *self_p = NULL;
}

const sl_verify_report_t *
sl_verify_report (sl_verify_t *self)
{
    return &self->report;
}

//  The first problem found; later ones are not reported over it, except a
//  broken chain over a bad checkpoint (the worse news).
static void
s_problem (sl_verify_t *self, sl_verify_status_t status, const char *problem, const char *table, const char *key,
           int64_t pos, const char *format, ...)
{
    sl_verify_report_t *r = &self->report;
    if (r->status == SL_VERIFY_BROKEN || (r->status == SL_VERIFY_BAD_CHECKPOINT && status != SL_VERIFY_BROKEN))
        return;
    r->status = status;
    r->problem = problem;
    snprintf (r->table, sizeof r->table, "%s", table);
    snprintf (r->key, sizeof r->key, "%s", key);
    r->pos = pos;
    va_list args;
    va_start (args, format);
    vsnprintf (r->detail, sizeof r->detail, format, args);
    va_end (args);
}

static void
s_unreadable (sl_verify_t *self, const char *what)
{
    sl_verify_report_t *r = &self->report;
    r->status = SL_VERIFY_UNREADABLE;
    r->problem = "unreadable";
    snprintf (r->detail, sizeof r->detail, "%s: %s", what, sl_store_error (self->store));
}

//  --------------------------------------------------------------------------
//  Where the walk starts

typedef struct {
    bool found;
    sl_checkpoint_t cp;
} s_cp_row_t;

static int
s_cp_row (void *arg, const sl_row_t *row)
{
    s_cp_row_t *c = arg;
    c->found = true;
    sl_checkpoint_from_row (&c->cp, row);
    return 1;
}

typedef struct {
    bool found;
    char hash [SL_CHAIN_HEX];
} s_hash_t;

static int
s_hash_row (void *arg, const sl_row_t *row)
{
    s_hash_t *h = arg;
    sl_str_t s = sl_row_text (row, 0);
    h->found = true;
    snprintf (h->hash, sizeof h->hash, "%.*s", (int) s.len, s.ptr ? s.ptr : "");
    return 1;
}

//  The latest cut, if any. 0 ok.
static int
s_latest_cut (sl_store_t *store, s_cp_row_t *cut)
{
    memset (cut, 0, sizeof *cut);
    return sl_store_query (store, "SELECT " SL_CHECKPOINT_COLUMNS " FROM checkpoints WHERE cut = 1 "
                                  "ORDER BY pos DESC LIMIT 1", NULL, 0, s_cp_row, cut);
}

int
sl_verify_pos_at (sl_store_t *store, int64_t at, bool after, int64_t *pos)
{
    sl_val_t p [] = { sl_val_int (at) };
    return sl_store_query_int (store, after ? "SELECT MIN(pos) FROM chain WHERE at >= $1"
                                            : "SELECT MAX(pos) FROM chain WHERE at < $1", p, 1, 0, pos);
}

//  Start at the latest cut (or the genesis), or at from_pos when later
//  (its prev is then taken as it stands). A cut made while the running
//  audit walks moves the walk on to it. 0 ok, -1 failed.
static int
s_start (sl_verify_t *self)
{
    s_cp_row_t cut;
    if (s_latest_cut (self->store, &cut))
        return -1;
    int64_t cut_pos = cut.found ? cut.cp.pos : 0;
    if (self->started && cut_pos < self->next)
        return 0;
    sl_verify_report_t *r = &self->report;
    self->cut_pos = cut_pos;
    self->next = cut_pos + 1;
    snprintf (self->prev, sizeof self->prev, "%s", cut.found ? cut.cp.head : sl_chain_genesis ());
    r->from_cut = cut.found;
    //  From a later position: the hash before it is taken as it stands
    //  (an entry stores only the start of it). When that entry is gone,
    //  the walk starts at the cut and finds what is missing.
    s_hash_t before = { 0 };
    if (self->opts.from_pos > self->next) {
        sl_val_t p [] = { sl_val_int (self->opts.from_pos - 1) };
        if (sl_store_query (self->store, "SELECT hash FROM chain WHERE pos = $1", p, 1, s_hash_row, &before))
            return -1;
    }
    if (before.found) {
        self->next = self->opts.from_pos;
        snprintf (self->prev, sizeof self->prev, "%s", before.hash);
        r->from_cut = false;
    }
    r->start_pos = self->next;
    r->checked_pos = self->next - 1;
    self->started = true;
    return 0;
}

//  --------------------------------------------------------------------------
//  Entries

static char *
s_dup (sl_str_t s)
{
    return s.ptr ? sl_xstrndup (s.ptr, s.len) : NULL;
}

static int
s_entry_row (void *arg, const sl_row_t *row)
{
    sl_verify_t *self = arg;
    s_entry_t *e = &self->page [self->count++];
    e->pos = sl_row_int (row, 0);
    e->at = sl_row_int (row, 1);
    e->kind = s_dup (sl_row_text (row, 2));
    e->sid = s_dup (sl_row_text (row, 3));
    e->seq = sl_row_int (row, 4);
    e->sub = (int) sl_row_int (row, 5);
    e->ref = s_dup (sl_row_text (row, 6));
    if (!e->ref && e->sid) {
        char ref [SL_CHAIN_REF];
        sl_chain_stream_ref (ref, e->sid, e->seq, e->sub);
        e->ref = sl_xstrdup (ref);
    }
    e->rows_named = sl_row_int (row, 7) != 0;
    e->data = s_dup (sl_row_text (row, 8));
    e->prev = s_dup (sl_row_text (row, 9));
    e->hash = s_dup (sl_row_text (row, 10));
    if (!e->kind)
        e->kind = sl_xstrdup ("");
    if (!e->ref)
        e->ref = sl_xstrdup ("");
    if (!e->prev)
        e->prev = sl_xstrdup ("");
    if (!e->hash)
        e->hash = sl_xstrdup ("");
    return self->count == S_PAGE;
}

typedef struct {
    sl_verify_t *self;
    sl_chain_table_t table;
} s_lookup_t;

static int
s_found_row (void *arg, const sl_row_t *row)
{
    s_lookup_t *l = arg;
    l->self->found = true;
    sl_chain_canon_row_of (&l->self->canon, l->table, row, 0);
    return 1;
}

//  The row an entry names, into the canonical form. 1 found, 0 gone, -1 failed.
static int
s_lookup (sl_verify_t *self, sl_chain_table_t table, const s_entry_t *e)
{
    char sql [S_SQL];
    sl_val_t p [3];
    int count;
    if (table == SL_CHAIN_GAPS) {
        snprintf (sql, sizeof sql, "SELECT %s FROM gaps WHERE emitter || ':' || incarnation || ':' || rseq = $1",
                  sl_chain_columns (table));
        p [0] = sl_val_text (e->ref);
        count = 1;
    }
    else
    if (table == SL_CHAIN_KEY_EVENTS || table == SL_CHAIN_ALERTS) {
        //  A key event's or an alert's ref is its row's pos.
        snprintf (sql, sizeof sql, "SELECT %s FROM %s WHERE pos = $1", sl_chain_columns (table),
                  sl_chain_table_name (table));
        p [0] = sl_val_int (strtoll (e->ref, NULL, 10));
        count = 1;
    }
    else {
        snprintf (sql, sizeof sql, "SELECT %s FROM %s WHERE sid = $1 AND seq = $2%s", sl_chain_columns (table),
                  sl_chain_table_name (table), table == SL_CHAIN_EVENTS ? " AND sub = $3" : "");
        p [0] = sl_val_text (e->sid);
        p [1] = sl_val_int (e->seq);
        p [2] = sl_val_int (e->sub);
        count = table == SL_CHAIN_EVENTS ? 3 : 2;
    }
    self->found = false;
    s_lookup_t l = { self, table };
    if (sl_store_query (self->store, sql, p, count, s_found_row, &l))
        return -1;
    return self->found ? 1 : 0;
}

//  Whether retention removed what e names (a prune entry after it). 1, 0, -1.
static int
s_pruned (sl_verify_t *self, const s_entry_t *e)
{
    //  Retention keeps every key event and alert.
    if (strcmp (e->kind, S_KEY_KIND) == 0 || strcmp (e->kind, S_ALERT_KIND) == 0)
        return 0;
    int64_t n = 0;
    char ref [SL_CHAIN_HEX + 512];
    snprintf (ref, sizeof ref, "gap %s", e->ref);
    sl_val_t p [] = { e->sid ? sl_val_text (e->sid) : sl_val_text (ref), sl_val_int (e->pos) };
    //  A stream's prune entry is found by its sid, a gap's by its key
    //  (each a partial index of the prune entries).
    if (sl_store_query_int (self->store, e->sid ? "SELECT COUNT(*) FROM chain WHERE sid = $1 AND kind = 'prune' "
                                                  "AND pos > $2"
                                                : "SELECT COUNT(*) FROM chain WHERE kind = 'prune' AND ref = $1 "
                                                  "AND pos > $2", p, 2, 0, &n))
        return -1;
    return n > 0;
}

//  The table and key an entry names, for a report.
static void
s_describe (const s_entry_t *e, sl_chain_table_t table, char *tbl, size_t tsize, char *key, size_t ksize)
{
    if (e->sid && strcmp (e->kind, "prune") != 0) {
        snprintf (tbl, tsize, "%s", sl_chain_table_name (table));
        if (table == SL_CHAIN_EVENTS)
            snprintf (key, ksize, "sid=%s seq=%lld sub=%d", e->sid, (long long) e->seq, e->sub);
        else
            snprintf (key, ksize, "sid=%s seq=%lld", e->sid, (long long) e->seq);
    }
    else if (table == SL_CHAIN_GAPS) {
        snprintf (tbl, tsize, "gaps");
        snprintf (key, ksize, "%s", e->ref);
    }
    else if (table == SL_CHAIN_KEY_EVENTS || table == SL_CHAIN_ALERTS) {
        snprintf (tbl, tsize, "%s", sl_chain_table_name (table));
        snprintf (key, ksize, "pos=%s", e->ref);
    }
    else {
        snprintf (tbl, tsize, "chain");
        snprintf (key, ksize, "%s %s", e->kind, e->ref);
    }
}

//  The row table an entry's hash covers besides the ledger's, or EVENTS.
static sl_chain_table_t
s_named_table (const s_entry_t *e)
{
    if (!e->rows_named)
        return SL_CHAIN_EVENTS;
    if (strcmp (e->kind, "block") == 0)
        return SL_CHAIN_BLOCKS;
    if (strcmp (e->kind, "verdict") == 0)
        return SL_CHAIN_VERDICTS;
    if (strcmp (e->kind, S_KEY_KIND) == 0)
        return SL_CHAIN_KEY_EVENTS;
    if (strcmp (e->kind, S_ALERT_KIND) == 0)
        return SL_CHAIN_ALERTS;
    return SL_CHAIN_GAPS;
}

//  One entry. 0 good, 1 a problem (reported), -1 failed.
static int
s_check (sl_verify_t *self, const s_entry_t *e)
{
    char tbl [32], key [256];
    sl_chain_table_t named = s_named_table (e);
    bool stream = e->sid && strcmp (e->kind, "prune") != 0;
    s_describe (e, stream ? SL_CHAIN_EVENTS : named, tbl, sizeof tbl, key, sizeof key);
    if (e->pos != self->next) {
        s_problem (self, SL_VERIFY_BROKEN, "removed", "chain", "", self->next,
                   "chain position %lld is missing (the next is %lld)", (long long) self->next, (long long) e->pos);
        return 1;
    }
    if (strlen (e->prev) != SL_CHAIN_LINK || strncmp (e->prev, self->prev, SL_CHAIN_LINK) != 0) {
        s_problem (self, SL_VERIFY_BROKEN, "inserted", tbl, key, e->pos,
                   "the chain entry at position %lld (%s %s) does not follow the one before: an entry was "
                   "changed, inserted or removed there", (long long) e->pos, tbl, key);
        return 1;
    }
    sl_buf_reset (&self->canon);
    sl_chain_canon_begin (&self->canon, e->pos, e->kind, e->ref, e->at);
    int got = 1;
    sl_chain_table_t gone_table = SL_CHAIN_EVENTS;
    if (stream) {
        got = s_lookup (self, SL_CHAIN_EVENTS, e);
        if (got == 1 && named != SL_CHAIN_EVENTS) {
            gone_table = named;
            got = s_lookup (self, named, e);
        }
    }
    else if (named == SL_CHAIN_GAPS || named == SL_CHAIN_KEY_EVENTS || named == SL_CHAIN_ALERTS) {
        gone_table = named;
        got = s_lookup (self, named, e);
    }
    if (got < 0)
        return -1;
    if (got == 0) {
        int pruned = s_pruned (self, e);
        if (pruned < 0)
            return -1;
        if (!pruned) {
            s_describe (e, gone_table, tbl, sizeof tbl, key, sizeof key);
            s_problem (self, SL_VERIFY_BROKEN, "removed", tbl, key, e->pos,
                       "removed: the %s row %s (chain position %lld) is gone", tbl, key, (long long) e->pos);
            return 1;
        }
        self->report.pruned++;          //  retention removed it: the entry's own hash stands
    }
    else {
        sl_chain_canon_data (&self->canon, sl_str (e->data));
        char hash [SL_CHAIN_HEX];
        sl_chain_hash (self->prev, sl_buf_str (&self->canon), hash);
        if (strcmp (hash, e->hash) != 0) {
            if (named != SL_CHAIN_EVENTS)
                s_describe (e, named, tbl, sizeof tbl, key, sizeof key);
            s_problem (self, SL_VERIFY_BROKEN, "changed", tbl, key, e->pos,
                       "changed: the %s record %s (chain position %lld) no longer gives its hash", tbl, key,
                       (long long) e->pos);
            return 1;
        }
    }
    self->next = e->pos + 1;
    snprintf (self->prev, sizeof self->prev, "%s", e->hash);
    self->report.checked_pos = e->pos;
    self->report.checked_at = e->at;
    self->report.entries++;
    return 0;
}

int
sl_verify_step (sl_verify_t *self, int max)
{
    sl_verify_report_t *r = &self->report;
    if (r->status == SL_VERIFY_BROKEN)
        return 0;
    if (r->status == SL_VERIFY_UNREADABLE) {
        r->status = SL_VERIFY_INTACT;   //  try again
        r->problem = "";
    }
    if (s_start (self)) {
        s_unreadable (self, "reading the checkpoints");
        return -1;
    }
    int done = 0;
    while (done < max) {
        int64_t to = self->opts.to_pos > 0 ? self->opts.to_pos : INT64_MAX;
        if (self->next > to)
            return 0;
        int want = max - done < S_PAGE ? max - done : S_PAGE;
        sl_val_t p [] = { sl_val_int (self->next), sl_val_int (to), sl_val_int (want) };
        s_page_clear (self);
        if (sl_store_query (self->store, "SELECT pos, at, kind, sid, seq, sub, ref, rows_named, data, prev, hash "
                                         "FROM chain WHERE pos >= $1 AND pos <= $2 ORDER BY pos LIMIT $3",
                            p, 3, s_entry_row, self)) {
            s_page_clear (self);
            s_unreadable (self, "reading the chain");
            return -1;
        }
        int count = self->count;
        for (int i = 0; i < count; i++) {
            int rc = s_check (self, &self->page [i]);
            if (rc) {
                s_page_clear (self);
                if (rc < 0)
                    s_unreadable (self, "reading a record");
                return rc < 0 ? -1 : 0;
            }
        }
        s_page_clear (self);
        done += count;
        if (count < want)
            return 0;                   //  caught up with the head
    }
    return 1;
}

//  --------------------------------------------------------------------------
//  Rows no entry names

static int
s_orphan_row (void *arg, const sl_row_t *row)
{
    sl_verify_t *self = arg;
    sl_str_t table = sl_row_text (row, 0), key = sl_row_text (row, 1);
    char tbl [32], k [256];
    snprintf (tbl, sizeof tbl, "%.*s", (int) table.len, table.ptr ? table.ptr : "");
    snprintf (k, sizeof k, "%.*s", (int) key.len, key.ptr ? key.ptr : "");
    s_problem (self, SL_VERIFY_BROKEN, "inserted", tbl, k, 0,
               "inserted: the %s row %s is in no chain entry", tbl, k);
    return 1;
}

//  A key in force that its chained key events say was revoked.
static int
s_unrevoked_row (void *arg, const sl_row_t *row)
{
    sl_verify_t *self = arg;
    sl_str_t key = sl_row_text (row, 0);
    char k [256];
    snprintf (k, sizeof k, "id=%.*s", (int) key.len, key.ptr ? key.ptr : "");
    s_problem (self, SL_VERIFY_BROKEN, "changed", "api_keys", k, 0,
               "changed: the api_keys row %s is in force, but its key events say it was revoked", k);
    return 1;
}

//  Rows dated before since are older than the chain: older than the
//  migration that began it, and older than the chain's first entry
//  (whose time its hash covers: moving the migration's time on does not
//  hide rows dated after that entry). 0, -1.
static int
s_rows_since (sl_verify_t *self)
{
    int64_t since = 0, first = 0;
    sl_val_t version [] = { sl_val_int (S_CHAIN_VERSION) };
    if (sl_store_query_int (self->store, "SELECT applied_at FROM schema_version WHERE version = $1", version, 1, 0,
                            &since)
    ||  sl_store_query_int (self->store, "SELECT at FROM chain ORDER BY pos LIMIT 1", NULL, 0, INT64_MAX, &first))
        return -1;
    self->rows_since = first < since ? first : since;
    return 0;
}

//  A stream's rows no entry names, %s: the part's range of stream ids.
static const struct {
    const char *alias;
    const char *sql;
} s_row_checks [] = {
    { "e", "SELECT 'events', 'sid=' || e.sid || ' seq=' || e.seq || ' sub=' || e.sub FROM events e WHERE e.at >= $1%s "
           "AND NOT EXISTS (SELECT 1 FROM chain c WHERE c.pos = e.chain_pos AND c.sid = e.sid AND c.seq = e.seq "
           "AND c.sub = e.sub AND c.kind <> 'prune') LIMIT 1" },
    { "b", "SELECT 'blocks', 'sid=' || b.sid || ' seq=' || b.seq FROM blocks b WHERE b.at >= $1%s "
           "AND NOT EXISTS (SELECT 1 FROM events e JOIN chain c ON c.pos = e.chain_pos WHERE e.sid = b.sid "
           "AND e.seq = b.seq AND c.sid = b.sid AND c.seq = b.seq AND c.kind = 'block' AND c.rows_named = 1) LIMIT 1" },
    { "v", "SELECT 'verdicts', 'sid=' || v.sid || ' seq=' || v.seq FROM verdicts v WHERE v.at >= $1%s "
           "AND NOT EXISTS (SELECT 1 FROM events e JOIN chain c ON c.pos = e.chain_pos WHERE e.sid = v.sid "
           "AND e.seq = v.seq AND c.sid = v.sid AND c.seq = v.seq AND c.kind = 'verdict' AND c.rows_named = 1) "
           "LIMIT 1" },
    { "events", "SELECT COUNT(*) FROM events WHERE at < $1%s" },
};

//  One part of stream ids: those between the part's two hex digits and
//  the next's, the first part everything below "01" and the last
//  everything from "ff" on (so every text is in one part, whatever it
//  is). Its rows no entry names, and its rows older than the chain.
static int
s_rows_of_sids (sl_verify_t *self, int part)
{
    char low [3], high [3];
    snprintf (low, sizeof low, "%02x", part);
    snprintf (high, sizeof high, "%02x", part + 1);
    sl_val_t p [] = { sl_val_int (self->rows_since), sl_val_text (part ? low : high), sl_val_text (high) };
    int count = part && part < S_SID_PARTS - 1 ? 3 : 2;
    for (size_t i = 0; i < sizeof s_row_checks / sizeof s_row_checks [0]; i++) {
        char range [64], sql [S_SQL];
        const char *a = s_row_checks [i].alias;
        if (part == 0)
            snprintf (range, sizeof range, " AND %s.sid < $2", a);
        else
        if (part == S_SID_PARTS - 1)
            snprintf (range, sizeof range, " AND %s.sid >= $2", a);
        else
            snprintf (range, sizeof range, " AND %s.sid >= $2 AND %s.sid < $3", a, a);
        snprintf (sql, sizeof sql, s_row_checks [i].sql, range);
        int64_t before = 0;
        if (strcmp (a, "events") == 0
            ? sl_store_query_int (self->store, sql, p, count, 0, &before)
            : sl_store_query (self->store, sql, p, count, s_orphan_row, self))
            return -1;
        self->rows_before += before;
    }
    return 0;
}

//  The gaps and key events no entry names, and those older than the chain.
static int
s_rows_of_gaps (sl_verify_t *self)
{
    sl_val_t p [] = { sl_val_int (self->rows_since) };
    int64_t before = 0, keys_before = 0;
    if (sl_store_query (self->store, "SELECT 'gaps', g.emitter || ':' || g.incarnation || ':' || g.rseq FROM gaps g "
                                     "WHERE g.at >= $1 AND NOT EXISTS (SELECT 1 FROM chain c WHERE c.kind = 'gap' "
                                     "AND c.ref = g.emitter || ':' || g.incarnation || ':' || g.rseq) LIMIT 1",
                        p, 1, s_orphan_row, self)
    ||  sl_store_query_int (self->store, "SELECT COUNT(*) FROM gaps WHERE at < $1", p, 1, 0, &before))
        return -1;
    //  Key events are few: each looked for among the key entries.
    if (sl_store_query (self->store, "SELECT 'key_events', 'pos=' || k.pos FROM key_events k WHERE k.at >= $1 "
                                     "AND NOT EXISTS (SELECT 1 FROM chain c WHERE c.kind = '" S_KEY_KIND "' "
                                     "AND c.ref = CAST(k.pos AS TEXT)) LIMIT 1", p, 1, s_orphan_row, self))
        return -1;
    if (sl_store_query_int (self->store, "SELECT COUNT(*) FROM key_events WHERE at < $1", p, 1, 0, &keys_before))
        return -1;
    //  Alerts likewise: one written into the table directly is named.
    int64_t alerts_before = 0;
    if (sl_store_query (self->store, "SELECT 'alerts', 'pos=' || a.pos FROM alerts a WHERE a.at >= $1 "
                                     "AND NOT EXISTS (SELECT 1 FROM chain c WHERE c.kind = '" S_ALERT_KIND "' "
                                     "AND c.ref = CAST(a.pos AS TEXT)) LIMIT 1", p, 1, s_orphan_row, self)
    ||  sl_store_query_int (self->store, "SELECT COUNT(*) FROM alerts WHERE at < $1", p, 1, 0, &alerts_before))
        return -1;
    keys_before += alerts_before;
    //  The keys the gateways are served: each row must give the grant
    //  its newest key event's entry carries (its hash, team, models...),
    //  and each key with events must have its row (sl_keystore.h).
    sl_keystore_problem_t kp;
    int64_t pending = 0;
    int bad = sl_keystore_check (self->store, &pending, &kp);
    if (bad < 0)
        return -1;
    if (bad) {
        char k [SL_KEYSTORE_ID_MAX + 8];
        snprintf (k, sizeof k, "id=%s", kp.id);
        s_problem (self, SL_VERIFY_BROKEN, kp.kind, "api_keys", k, kp.pos, "%s", kp.detail);
    }
    keys_before += pending;
    //  Each made by a create and, once revoked by a key event, out of
    //  force (the events are checked above, so a key written into the
    //  table directly is found here).
    if (sl_store_query (self->store, "SELECT 'api_keys', 'id=' || a.id FROM api_keys a WHERE a.created_at >= $1 "
                                     "AND NOT EXISTS (SELECT 1 FROM key_events k WHERE k.key_id = a.id "
                                     "AND k.action = 'create') LIMIT 1", p, 1, s_orphan_row, self)
    ||  sl_store_query (self->store, "SELECT a.id FROM api_keys a WHERE a.revoked_at IS NULL AND EXISTS "
                                     "(SELECT 1 FROM key_events k WHERE k.key_id = a.id AND k.action = 'revoke') "
                                     "LIMIT 1", NULL, 0, s_unrevoked_row, self))
        return -1;
    self->rows_before += before + keys_before;
    return 0;
}

int
sl_verify_rows_step (sl_verify_t *self)
{
    if (self->rows_part >= S_ROW_PARTS)
        return 0;
    if ((self->rows_since < 0 && s_rows_since (self))
    ||  (self->rows_part < S_SID_PARTS ? s_rows_of_sids (self, self->rows_part) : s_rows_of_gaps (self))) {
        s_unreadable (self, "reading the rows");
        return -1;
    }
    if (++self->rows_part < S_ROW_PARTS)
        return 1;
    self->report.before_chain = self->rows_before;
    return 0;
}

int
sl_verify_rows (sl_verify_t *self)
{
    int rc;
    while ((rc = sl_verify_rows_step (self)) == 1)
        ;
    return rc;
}

//  --------------------------------------------------------------------------
//  Checkpoints

typedef struct {
    sl_checkpoint_t cps [S_PAGE];
    int count;
} s_cps_t;

static int
s_cps_row (void *arg, const sl_row_t *row)
{
    s_cps_t *c = arg;
    sl_checkpoint_from_row (&c->cps [c->count++], row);
    return c->count == S_PAGE;
}

int
sl_verify_checkpoint (sl_verify_t *self, const sl_checkpoint_t *cp)
{
    if (!self->started && s_start (self)) {
        s_unreadable (self, "reading the checkpoints");
        return -1;
    }
    sl_verify_report_t *r = &self->report;
    r->checkpoints++;
    char key [64];
    snprintf (key, sizeof key, "pos=%lld", (long long) cp->pos);
    switch (sl_checkpoint_check (cp, self->opts.public_key)) {
        case SL_CHECKPOINT_GOOD:
            r->signed_good++;
            self->seen_signed = true;
            if (!self->has_newest_good || cp->pos > self->newest_good.pos)
                self->newest_good = *cp;
            self->has_newest_good = true;
            break;
        case SL_CHECKPOINT_UNSIGNED:
            r->unsigned_count++;
            //  A key was given: the audit signs, so a checkpoint without a
            //  signature is one whose signature was taken away (unless it
            //  is older than every signed one, where that is allowed: a
            //  store kept before the audit had a key; never the cut the
            //  walk starts from).
            if (self->opts.public_key
            &&  !(self->opts.unsigned_before_key_ok && !self->seen_signed && !(cp->cut && cp->pos == self->cut_pos))) {
                s_problem (self, SL_VERIFY_BAD_CHECKPOINT, "checkpoint", "checkpoints", key, cp->pos,
                           "the checkpoint at position %lld is unsigned, but a public key was given",
                           (long long) cp->pos);
                return 0;
            }
            break;
        case SL_CHECKPOINT_UNCHECKED: r->unchecked++; break;
        case SL_CHECKPOINT_OTHER_KEY:
            s_problem (self, SL_VERIFY_BAD_CHECKPOINT, "checkpoint", "checkpoints", key, cp->pos,
                       "the checkpoint at position %lld is signed by key %s, not the key given", (long long) cp->pos,
                       cp->key_id);
            return 0;
        case SL_CHECKPOINT_BAD:
            s_problem (self, SL_VERIFY_BAD_CHECKPOINT, "checkpoint", "checkpoints", key, cp->pos,
                       "the checkpoint at position %lld has a bad signature", (long long) cp->pos);
            return 0;
    }
    if (!self->has_newest || cp->pos > self->newest.pos)
        self->newest = *cp;
    self->has_newest = true;
    if (cp->pos <= self->cut_pos)
        return 0;                       //  its entries were cut (the latest cut is the walk's start)
    s_hash_t h = { 0 };
    sl_val_t p [] = { sl_val_int (cp->pos) };
    if (sl_store_query (self->store, "SELECT hash FROM chain WHERE pos = $1", p, 1, s_hash_row, &h))
        return -1;
    if (!h.found) {
        int64_t head = 0;
        if (sl_store_query_int (self->store, "SELECT MAX(pos) FROM chain", NULL, 0, 0, &head))
            return -1;
        if (cp->pos > head)
            s_problem (self, SL_VERIFY_BROKEN, "removed", "chain", key, cp->pos,
                       "removed: the chain ends at position %lld, but a checkpoint names position %lld",
                       (long long) head, (long long) cp->pos);
        else
            s_problem (self, SL_VERIFY_BROKEN, "removed", "chain", key, cp->pos,
                       "removed: chain position %lld, named by a checkpoint, is missing", (long long) cp->pos);
    }
    else if (strcmp (h.hash, cp->head) != 0)
        s_problem (self, SL_VERIFY_BAD_CHECKPOINT, "checkpoint", "checkpoints", key, cp->pos,
                   "the checkpoint at position %lld names another head than the chain's", (long long) cp->pos);
    return 0;
}

//  The checkpoint cp counts from (pos - count) is in the store: one
//  removed from between two others leaves the next naming a position no
//  checkpoint has. 0, -1 failed.
static int
s_linked (sl_verify_t *self, const sl_checkpoint_t *cp)
{
    int64_t before = cp->pos - cp->count, n = 0;
    char key [64];
    snprintf (key, sizeof key, "pos=%lld", (long long) cp->pos);
    if (before == 0)
        return 0;
    if (cp->count <= 0 || before < 0) {
        s_problem (self, SL_VERIFY_BAD_CHECKPOINT, "checkpoint", "checkpoints", key, cp->pos,
                   "the checkpoint at position %lld counts %lld entries since the one before: no position has "
                   "that", (long long) cp->pos, (long long) cp->count);
        return 0;
    }
    sl_val_t p [] = { sl_val_int (before) };
    if (sl_store_query_int (self->store, "SELECT COUNT(*) FROM checkpoints WHERE pos = $1", p, 1, 0, &n))
        return -1;
    if (n == 0)
        s_problem (self, SL_VERIFY_BROKEN, "removed", "checkpoints", key, before,
                   "removed: the checkpoint at position %lld, which the one at %lld counts from, is gone",
                   (long long) before, (long long) cp->pos);
    return 0;
}

int
sl_verify_checkpoints_step (sl_verify_t *self)
{
    if (!self->started && s_start (self)) {
        s_unreadable (self, "reading the checkpoints");
        return -1;
    }
    if (!self->cps_started) {
        self->cps_last = self->cut_pos > 0 ? self->cut_pos - 1 : 0;
        if (self->opts.from_pos > self->cps_last)
            self->cps_last = self->opts.from_pos - 1;
        self->cps_started = true;
    }
    int64_t to = self->opts.to_pos > 0 ? self->opts.to_pos : INT64_MAX;
    if (self->cps_last >= to)
        return 0;
    s_cps_t *c = sl_xmalloc (sizeof *c);
    c->count = 0;
    int rc = 0;
    sl_val_t p [] = { sl_val_int (self->cps_last), sl_val_int (to), sl_val_int (S_PAGE) };
    if (sl_store_query (self->store, "SELECT " SL_CHECKPOINT_COLUMNS " FROM checkpoints WHERE pos > $1 "
                                     "AND pos <= $2 ORDER BY pos LIMIT $3", p, 3, s_cps_row, c))
        rc = -1;
    for (int i = 0; i < c->count && rc == 0; i++)
        if (sl_verify_checkpoint (self, &c->cps [i]) || s_linked (self, &c->cps [i]))
            rc = -1;
    if (rc == 0 && c->count == S_PAGE) {
        self->cps_last = c->cps [c->count - 1].pos;
        rc = 1;
    }
    else
    if (rc == 0)
        self->cps_last = to;
    free (c);
    if (rc < 0)
        s_unreadable (self, "reading the checkpoints");
    return rc;
}

int
sl_verify_checkpoints (sl_verify_t *self)
{
    int rc;
    while ((rc = sl_verify_checkpoints_step (self)) == 1)
        ;
    return rc;
}

//  --------------------------------------------------------------------------
//  The head

typedef struct {
    bool found;
    int64_t pos;
    char hash [SL_CHAIN_HEX];
    char seal [SL_SIGNKEY_SIG_HEX];
} s_head_t;

static int
s_head_row (void *arg, const sl_row_t *row)
{
    s_head_t *h = arg;
    sl_str_t hash = sl_row_text (row, 1), seal = sl_row_text (row, 2);
    h->found = true;
    h->pos = sl_row_int (row, 0);
    snprintf (h->hash, sizeof h->hash, "%.*s", (int) hash.len, hash.ptr ? hash.ptr : "");
    snprintf (h->seal, sizeof h->seal, "%.*s", seal.len < sizeof h->seal ? (int) seal.len : 1,
              seal.len < sizeof h->seal ? (seal.ptr ? seal.ptr : "") : "?");
    return 1;
}

int
sl_verify_head (sl_verify_t *self)
{
    sl_verify_report_t *r = &self->report;
    if (r->status == SL_VERIFY_UNREADABLE)
        return 0;
    if (!self->opts.public_key) {
        r->head_seal = "unchecked";
        return 0;
    }
    s_head_t head = { 0 };
    if (sl_store_query (self->store, "SELECT pos, hash, seal FROM chain ORDER BY pos DESC LIMIT 1", NULL, 0,
                        s_head_row, &head)) {
        s_unreadable (self, "reading the chain's head");
        return -1;
    }
    if (!head.found)
        return 0;                       //  empty, or cut whole: the cut's checkpoint is its head
    if (sl_chain_seal_good (self->opts.public_key, head.pos, head.hash, head.seal)) {
        r->head_seal = "sealed";
        return 0;
    }
    if (self->has_newest_good && self->newest_good.pos == head.pos && strcmp (self->newest_good.head, head.hash) == 0) {
        r->head_seal = "checkpoint";
        return 0;
    }
    //  Written before seals: the newest checkpoint of version 1, or none
    //  and no seal in the whole chain.
    int64_t sealed = 0;
    if (!self->has_newest
    &&  sl_store_query_int (self->store, "SELECT COUNT(*) FROM (SELECT 1 FROM chain WHERE seal IS NOT NULL "
                                         "LIMIT 1) s", NULL, 0, 0, &sealed)) {
        s_unreadable (self, "reading the chain");
        return -1;
    }
    if (self->has_newest ? self->newest.version < SL_CHECKPOINT_VERSION : sealed == 0) {
        r->head_seal = "before_seals";
        return 0;
    }
    int64_t proven = self->has_newest_good ? self->newest_good.pos : 0, last_seal = 0;
    if (sl_store_query_int (self->store, "SELECT MAX(pos) FROM chain WHERE seal IS NOT NULL", NULL, 0, 0, &last_seal)) {
        s_unreadable (self, "reading the chain");
        return -1;
    }
    if (last_seal > proven)
        proven = last_seal;
    char key [64];
    snprintf (key, sizeof key, "pos=%lld", (long long) head.pos);
    s_problem (self, SL_VERIFY_BROKEN, "inserted", "chain", key, proven + 1,
               "inserted: the chain's head at position %lld has no seal of the key given: the entries after "
               "position %lld were appended by someone without it", (long long) head.pos, (long long) proven);
    return 0;
}

//  --------------------------------------------------------------------------
//  The rows later records update

int
sl_verify_summaries_step (sl_verify_t *self, int max)
{
    sl_verify_report_t *r = &self->report;
    if (r->status == SL_VERIFY_BROKEN)
        return 0;
    if (!self->summary) {
        if (self->rows_since < 0 && s_rows_since (self)) {
            s_unreadable (self, "reading the schema");
            return -1;
        }
        self->summary = sl_summary_new (self->store, self->rows_since);
    }
    sl_summary_problem_t problem = { 0 };
    int rc = sl_summary_step (self->summary, max, &problem);
    r->summaries = sl_summary_compared (self->summary);
    if (rc < 0) {
        s_unreadable (self, "reading the summary rows");
        return -1;
    }
    if (*problem.table) {
        s_problem (self, SL_VERIFY_BROKEN, problem.kind, problem.table, problem.key, problem.pos, "%s",
                   problem.detail);
        return 0;
    }
    return rc;
}

int
sl_verify_summaries (sl_verify_t *self)
{
    int rc;
    while ((rc = sl_verify_summaries_step (self, S_PAGE)) == 1)
        ;
    return rc;
}

//  --------------------------------------------------------------------------
//  Reports

void
sl_verify_text (const sl_verify_report_t *r, sl_buf_t *out)
{
    static const char *verdicts [] = { "intact", "broken", "bad checkpoint", "unreadable" };
    sl_buf_printf (out, "chain: %s\n", verdicts [r->status]);
    if (*r->problem)
        sl_buf_printf (out, "first problem: %s\n", r->detail);
    sl_buf_printf (out, "walked: positions %lld to %lld (%lld entries; %lld name records retention removed), "
                   "starting at %s\n", (long long) r->start_pos, (long long) r->checked_pos,
                   (long long) r->entries, (long long) r->pruned,
                   r->from_cut ? "a retention cut" : r->start_pos > 1 ? "the position asked for" : "the first record");
    sl_buf_printf (out, "checkpoints: %lld (%lld signed and checked, %lld unsigned, %lld signed but not checked: "
                   "no --public-key)\n", (long long) r->checkpoints, (long long) r->signed_good,
                   (long long) r->unsigned_count, (long long) r->unchecked);
    static const struct { const char *state, *text; } heads [] = {
        { "sealed", "sealed with the key: the last entry an audit wrote" },
        { "checkpoint", "named by a checkpoint signed with the key" },
        { "before_seals", "not sealed: written before audits sealed their transactions" },
        { "unchecked", "seal not checked: no --public-key" },
    };
    for (size_t i = 0; i < sizeof heads / sizeof heads [0]; i++)
        if (strcmp (r->head_seal, heads [i].state) == 0)
            sl_buf_printf (out, "head: %s\n", heads [i].text);
    if (r->summaries)
        sl_buf_printf (out, "rows later records update: %lld compared with what the chain recorded\n",
                       (long long) r->summaries);
    if (r->before_chain)
        sl_buf_printf (out, "not covered: %lld rows written before the chain began\n", (long long) r->before_chain);
}

void
sl_verify_problem_json (const sl_verify_report_t *r, sl_buf_t *out)
{
    sl_buf_printf (out, "{\"kind\":\"%s\",\"table\":", r->problem);
    sl_json_put_str (out, r->table, strlen (r->table));
    sl_buf_puts (out, ",\"key\":");
    sl_json_put_str (out, r->key, strlen (r->key));
    sl_buf_printf (out, ",\"pos\":%lld,\"detail\":", (long long) r->pos);
    sl_json_put_str (out, r->detail, strlen (r->detail));
    sl_buf_putc (out, '}');
}

void
sl_verify_json (const sl_verify_report_t *r, sl_buf_t *out)
{
    static const char *verdicts [] = { "intact", "broken", "bad_checkpoint", "unreadable" };
    sl_buf_printf (out, "{\"status\":\"%s\",\"exit\":%d,", verdicts [r->status], (int) r->status);
    if (*r->problem) {
        sl_buf_puts (out, "\"problem\":");
        sl_verify_problem_json (r, out);
        sl_buf_putc (out, ',');
    }
    sl_buf_printf (out, "\"from\":%lld,\"to\":%lld,\"from_cut\":%s,\"entries\":%lld,\"pruned\":%lld,"
                   "\"checkpoints\":%lld,\"signed_good\":%lld,\"unsigned\":%lld,\"unchecked\":%lld,"
                   "\"before_chain\":%lld,\"head_seal\":\"%s\",\"summaries\":%lld}", (long long) r->start_pos,
                   (long long) r->checked_pos, r->from_cut ? "true" : "false", (long long) r->entries,
                   (long long) r->pruned, (long long) r->checkpoints, (long long) r->signed_good,
                   (long long) r->unsigned_count, (long long) r->unchecked, (long long) r->before_chain, r->head_seal,
                   (long long) r->summaries);
}
