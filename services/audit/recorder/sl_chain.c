/*  sl_chain.c - the audit store's hash chain (see sl_chain.h). */
#include "services/audit/recorder/sl_chain.h"

#include <assert.h>
#include <stdarg.h>
#include <openssl/evp.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "services/audit/recorder/sl_checkpoint.h"

#define S_COLS 12                       //  columns of a chain row
#define S_PROBLEM 512                   //  a problem's sentence
//  Entries one INSERT writes: a batch goes out in statements of these
//  sizes, largest first, so a few statements (prepared once on
//  PostgreSQL) serve every batch size.
static const int s_sizes [] = { 64, 16, 4, 1 };
#define S_PER_INSERT 64
#define S_SIZES ((int) (sizeof s_sizes / sizeof s_sizes [0]))
#define S_HASH_BYTES 32                 //  SHA-256
#define S_HEAD 5                        //  a field's tag and length

static const char *s_tables [SL_CHAIN_TABLES] = { "events", "blocks", "verdicts", "gaps", "key_events", "alerts" };
static const char *s_columns [SL_CHAIN_TABLES] = {
    "sid, seq, sub, type, at",
    "sid, seq, idx, kind, id, call_id, name, content, content_bytes, truncated, replaced, incomplete, "
    "args_valid, at",
    "sid, seq, side, idx, call_id, tool, action, checked, rule, reason, judge_model, probability, latency_us, "
    "latency_bucket, arguments, arguments_bytes, truncated, at, part, team, user_name",
    "emitter, incarnation, rseq, lost, since, at, streams",
    "pos, at, key_id, action, by_whom, detail",
    "pos, id, at, crossed_at, team, key_id, user_name, subject, limit_kind, threshold, used_value, max_value, "
    "period, win"
};
static const char *s_types [SL_CHAIN_TABLES] = {
    "TIITI", "TIITTTTTIIITII", "TITITTTTTTTRIITIIITTT", "TTIIIII", "IITTTT", "ITIITTTTTIRRTT"
};

//  An entry written at the next flush.
typedef struct {
    int64_t pos, at, seq;
    int sub;
    bool rows_named;
    bool ref_derived;                   //  ref is sid:seq:sub: not stored
    char *kind, *sid, *ref, *data;      //  sid, data: NULL when none
    char prev [SL_CHAIN_HEX], hash [SL_CHAIN_HEX];
} s_entry_t;

//  The store's head as read: the last entry, or the latest cut when
//  retention cut every entry.
typedef struct {
    bool found;
    int64_t pos;
    char hash [SL_CHAIN_HEX];
    char seal [SL_SIGNKEY_SIG_HEX];     //  "" none
    bool from_cut;
    sl_checkpoint_t cut;                //  from_cut: the cut's checkpoint
} s_head_t;

struct _sl_chain_t {
    sl_store_t *store;
    const sl_signkey_t *key;            //  seals and checks seals (NULL: neither)
    bool unsealed_ok;                   //  a head without a seal is taken (written before seals)
    bool loaded;                        //  the head was read from the store
    bool current;                       //  ... within the open transaction (under its write lock)
    bool known;                         //  pos, hash: the head this writer left or checked
    int64_t pos;                        //  committed head
    char hash [SL_CHAIN_HEX];
    bool broken;                        //  sticky: entries this writer cannot vouch for
    const char *problem_kind;
    int64_t problem_pos;
    char problem [S_PROBLEM];
    s_entry_t *pending;                 //  entries of the open transaction
    int count, cap;
    sl_buf_t canon;                     //  the entry being built
    sl_buf_t data;
    sl_buf_t sql [S_SIZES];             //  the INSERT of each size, built once
    sl_val_t *params;                   //  one INSERT's values
};

const char *
sl_chain_table_name (sl_chain_table_t table)
{
    return s_tables [table];
}

const char *
sl_chain_columns (sl_chain_table_t table)
{
    return s_columns [table];
}

const char *
sl_chain_types (sl_chain_table_t table)
{
    return s_types [table];
}

const char *
sl_chain_genesis (void)
{
    return "0000000000000000000000000000000000000000000000000000000000000000";
}

//  --------------------------------------------------------------------------
//  The canonical form: fields of a tag byte, a 4-byte big-endian length
//  and the bytes. Tags: N null, I integer (decimal), R real (%.17g, which
//  reads back to the same double), T text, S a structural name.

static void
s_field (sl_buf_t *out, char tag, const char *s, size_t n)
{
    uint8_t head [5] = { (uint8_t) tag, (uint8_t) (n >> 24), (uint8_t) (n >> 16), (uint8_t) (n >> 8), (uint8_t) n };
    sl_buf_append (out, head, sizeof head);
    if (n)
        sl_buf_append (out, s, n);
}

//  An integer field, its digits written in place (every entry has
//  several: no formatting through printf).
static void
s_int (sl_buf_t *out, int64_t i)
{
    size_t head = out->len;
    uint8_t tag [S_HEAD] = { 'I', 0, 0, 0, 0 };
    sl_buf_append (out, tag, sizeof tag);
    sl_buf_put_i64 (out, i);
    out->data [head + S_HEAD - 1] = (char) (uint8_t) (out->len - head - S_HEAD);
}

//  One value as its column's type says.
static void
s_value (sl_buf_t *out, char type, sl_val_t v)
{
    if (v.type == SL_VAL_NULL) {
        s_field (out, 'N', NULL, 0);
        return;
    }
    char num [40];
    int n;
    switch (type) {
        case 'I':
            s_int (out, v.type == SL_VAL_INT ? v.i : v.type == SL_VAL_REAL ? (int64_t) v.d
                      : strtoll (v.s ? v.s : "0", NULL, 10));
            break;
        case 'R':
            n = snprintf (num, sizeof num, "%.17g", v.type == SL_VAL_REAL ? v.d : v.type == SL_VAL_INT ? (double) v.i
                                                       : strtod (v.s ? v.s : "0", NULL));
            s_field (out, 'R', num, (size_t) n);
            break;
        default:
            if (v.type == SL_VAL_TEXT)
                s_field (out, 'T', v.s, v.n);
            else {
                n = v.type == SL_VAL_INT ? snprintf (num, sizeof num, "%lld", (long long) v.i)
                                         : snprintf (num, sizeof num, "%.17g", v.d);
                s_field (out, 'T', num, (size_t) n);
            }
            break;
    }
}

void
sl_chain_canon_begin (sl_buf_t *out, int64_t pos, const char *kind, const char *ref, int64_t at)
{
    s_field (out, 'S', SL_CHAIN_VERSION, strlen (SL_CHAIN_VERSION));
    s_int (out, pos);
    s_field (out, 'S', kind, strlen (kind));
    s_field (out, 'T', ref, strlen (ref));
    s_int (out, at);
}

void
sl_chain_canon_row (sl_buf_t *out, sl_chain_table_t table, const sl_val_t *vals, int count)
{
    const char *types = s_types [table];
    assert ((size_t) count == strlen (types));
    s_field (out, 'S', s_tables [table], strlen (s_tables [table]));
    for (int i = 0; i < count; i++)
        s_value (out, types [i], vals [i]);
}

void
sl_chain_canon_row_of (sl_buf_t *out, sl_chain_table_t table, const sl_row_t *row, int first)
{
    const char *types = s_types [table];
    int count = (int) strlen (types);
    sl_val_t vals [32];
    assert (count <= 32 && first + count <= row->count);
    for (int i = 0; i < count; i++) {
        int col = first + i;
        if (sl_row_null (row, col))
            vals [i] = sl_val_null ();
        else if (types [i] == 'I')
            vals [i] = sl_val_int (sl_row_int (row, col));
        else if (types [i] == 'R')
            vals [i] = sl_val_real (sl_row_real (row, col));
        else {
            sl_str_t s = sl_row_text (row, col);
            vals [i] = (sl_val_t) { .type = SL_VAL_TEXT, .s = s.ptr ? s.ptr : "", .n = s.len };
        }
    }
    sl_chain_canon_row (out, table, vals, count);
}

void
sl_chain_canon_data (sl_buf_t *out, sl_str_t data)
{
    if (data.ptr)
        s_field (out, 'T', data.ptr, data.len);
    else
        s_field (out, 'N', NULL, 0);
}

//  SHA-256 from libcrypto: it uses the CPU's SHA instructions where
//  there are some (several times libsodium's portable code, which every
//  record written pays). The digest is fetched once: an implicit fetch by
//  name on every hash costs about as much as the hash. Never freed (one
//  per process, immutable).
static const EVP_MD *
s_sha256 (void)
{
    static EVP_MD *md;
    if (!md)
        md = EVP_MD_fetch (NULL, "SHA256", NULL);
    assert (md);                        //  libcrypto's default provider always has it
    return md;
}

//  hex SHA-256 of a then b (b may be empty).
static void
s_sha256_hex (const void *a, size_t a_len, const void *b, size_t b_len, char out [SL_CHAIN_HEX])
{
    uint8_t hash [S_HASH_BYTES];
    EVP_MD_CTX *ctx = EVP_MD_CTX_new ();
    bool ok = ctx && EVP_DigestInit_ex2 (ctx, s_sha256 (), NULL) == 1
           && EVP_DigestUpdate (ctx, a, a_len) == 1 && (!b_len || EVP_DigestUpdate (ctx, b, b_len) == 1)
           && EVP_DigestFinal_ex (ctx, hash, NULL) == 1;
    EVP_MD_CTX_free (ctx);
    //  Out of memory inside libcrypto: no hash to give, and a wrong one
    //  would be written as evidence.
    if (!ok)
        abort ();
    sodium_bin2hex (out, SL_CHAIN_HEX, hash, sizeof hash);
}

void
sl_chain_seal_message (sl_buf_t *out, int64_t pos, const char *hash)
{
    sl_buf_printf (out, "sluice-audit seal/1\npos=%lld\nhead=%s\n", (long long) pos, hash);
}

bool
sl_chain_seal_good (const sl_signkey_t *key, int64_t pos, const char *hash, const char *seal)
{
    if (!key || !seal || !*seal)
        return false;
    sl_buf_t msg = { 0 };
    sl_chain_seal_message (&msg, pos, hash);
    bool good = sl_signkey_check (key, msg.data, msg.len, seal);
    sl_buf_free (&msg);
    return good;
}

void
sl_chain_stream_ref (char out [SL_CHAIN_REF], const char *sid, int64_t seq, int sub)
{
    snprintf (out, SL_CHAIN_REF, "%s:%lld:%d", sid, (long long) seq, sub);
}

void
sl_chain_hash (const char *prev, sl_str_t canon, char out [SL_CHAIN_HEX])
{
    s_sha256_hex (prev, strlen (prev), canon.ptr, canon.len, out);
}

void
sl_chain_digest (sl_str_t text, char out [SL_CHAIN_HEX])
{
    s_sha256_hex (text.ptr ? text.ptr : "", text.len, NULL, 0, out);
}

//  --------------------------------------------------------------------------
//  Life cycle and head

sl_chain_t *
sl_chain_new (sl_store_t *store)
{
    sl_chain_t *self = sl_xcalloc (1, sizeof *self);
    self->store = store;
    snprintf (self->hash, sizeof self->hash, "%s", sl_chain_genesis ());
    return self;
}

static void
s_pending_clear (sl_chain_t *self)
{
    for (int i = 0; i < self->count; i++) {
        s_entry_t *e = &self->pending [i];
        free (e->kind);
        free (e->sid);
        free (e->ref);
        free (e->data);
    }
    self->count = 0;
}

void
sl_chain_destroy (sl_chain_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_chain_t *self = *self_p;
    s_pending_clear (self);
    free (self->pending);
    sl_buf_free (&self->canon);
    sl_buf_free (&self->data);
    for (int i = 0; i < S_SIZES; i++)
        sl_buf_free (&self->sql [i]);
    free (self->params);
    free (self);
    *self_p = NULL;
}

void
sl_chain_set_key (sl_chain_t *self, const sl_signkey_t *key)
{
    self->key = key;
}

void
sl_chain_set_unsealed_ok (sl_chain_t *self, bool ok)
{
    self->unsealed_ok = ok;
}

bool
sl_chain_problem (sl_chain_t *self, const char **kind, int64_t *pos, const char **detail)
{
    if (kind)
        *kind = self->broken ? self->problem_kind : "";
    if (pos)
        *pos = self->broken ? self->problem_pos : 0;
    if (detail)
        *detail = self->broken ? self->problem : "";
    return self->broken;
}

//  The first problem found; the chain stays broken.
static void
s_break (sl_chain_t *self, const char *kind, int64_t pos, const char *format, ...)
{
    if (self->broken)
        return;
    self->broken = true;
    self->problem_kind = kind;
    self->problem_pos = pos;
    va_list args;
    va_start (args, format);
    vsnprintf (self->problem, sizeof self->problem, format, args);
    va_end (args);
}

void
sl_chain_break (sl_chain_t *self, const char *kind, int64_t pos, const char *detail)
{
    s_break (self, kind, pos, "%s", detail);
}

//  A text column into out (size bytes); one too long reads as "?".
static void
s_text_col (char *out, size_t size, const sl_row_t *row, int col)
{
    sl_str_t s = col < row->count ? sl_row_text (row, col) : SL_STR_NULL;
    snprintf (out, size, "%.*s", s.len < size ? (int) s.len : 1, s.len < size ? (s.ptr ? s.ptr : "") : "?");
}

static int
s_head_row (void *arg, const sl_row_t *row)
{
    s_head_t *head = arg;
    head->found = true;
    head->pos = sl_row_int (row, 0);
    s_text_col (head->hash, sizeof head->hash, row, 1);
    s_text_col (head->seal, sizeof head->seal, row, 2);
    return 1;
}

static int
s_cut_row (void *arg, const sl_row_t *row)
{
    s_head_t *head = arg;
    head->found = head->from_cut = true;
    sl_checkpoint_from_row (&head->cut, row);
    head->pos = head->cut.pos;
    snprintf (head->hash, sizeof head->hash, "%s", head->cut.head);
    return 1;
}

//  The latest retention cut into head (found false: none). 0, -1.
static int
s_latest_cut (sl_chain_t *self, s_head_t *head)
{
    memset (head, 0, sizeof *head);
    return sl_store_query (self->store, "SELECT " SL_CHECKPOINT_COLUMNS " FROM checkpoints WHERE cut = 1 "
                                        "ORDER BY pos DESC LIMIT 1", NULL, 0, s_cut_row, head);
}

//  The store's head: the last entry, else (retention may have cut every
//  entry) the latest cut. 0, -1.
static int
s_read_head (sl_chain_t *self, s_head_t *head)
{
    memset (head, 0, sizeof *head);
    if (sl_store_query (self->store, "SELECT pos, hash, seal FROM chain ORDER BY pos DESC LIMIT 1", NULL, 0,
                        s_head_row, head))
        return -1;
    return head->found ? 0 : s_latest_cut (self, head);
}

//  Whether the entry at pos still has hash (what: whose it is, for the
//  sentence). An entry retention's cut took (the latest cut at or past
//  it, signed when there is a key) is taken as it was. 0 yes, 1 no (the
//  chain is broken), -1 the store failed.
static int
s_still_there (sl_chain_t *self, int64_t pos, const char *hash, const char *what)
{
    if (pos <= 0)
        return 0;
    s_head_t at = { 0 };
    sl_val_t p [] = { sl_val_int (pos) };
    if (sl_store_query (self->store, "SELECT pos, hash, seal FROM chain WHERE pos = $1", p, 1, s_head_row, &at))
        return -1;
    if (at.found) {
        if (strcmp (at.hash, hash) == 0)
            return 0;
        s_break (self, "changed", pos, "the entry at position %lld is not %s: it was rewritten", (long long) pos,
                 what);
        return 1;
    }
    s_head_t cut;
    if (s_latest_cut (self, &cut))
        return -1;
    if (cut.found && cut.pos >= pos
    &&  (!self->key || sl_checkpoint_check (&cut.cut, self->key) == SL_CHECKPOINT_GOOD))
        return 0;
    s_break (self, "removed", pos, "the entry at position %lld, %s, is gone", (long long) pos, what);
    return 1;
}

//  Whether a writer holding the key left this head: its seal, or a
//  checkpoint signed with the key naming it (a cut when retention took
//  every entry; a store's head written before seals). Without a seal at
//  all, taken when unsealed heads are (a store written before seals).
//  1 yes, 0 no, -1 the store failed.
static int
s_proven (sl_chain_t *self, const s_head_t *head)
{
    if (!head->found)
        return 1;
    if (head->from_cut)
        return sl_checkpoint_check (&head->cut, self->key) == SL_CHECKPOINT_GOOD;
    if (sl_chain_seal_good (self->key, head->pos, head->hash, head->seal))
        return 1;
    s_head_t cp = { 0 };
    sl_val_t p [] = { sl_val_int (head->pos) };
    if (sl_store_query (self->store, "SELECT " SL_CHECKPOINT_COLUMNS " FROM checkpoints WHERE pos = $1", p, 1,
                        s_cut_row, &cp))
        return -1;
    if (cp.found && strcmp (cp.cut.head, head->hash) == 0 && sl_checkpoint_check (&cp.cut, self->key) == SL_CHECKPOINT_GOOD)
        return 1;
    return self->unsealed_ok && !*head->seal;
}

//  The store's head, read again, against the one this writer left: the
//  same, or after it with the entry it left still there and a head a
//  writer holding the key left. 0 (also when that broke the chain), -1.
static int
s_follow (sl_chain_t *self, const s_head_t *head)
{
    int64_t pos = head->found ? head->pos : 0;
    const char *hash = head->found ? head->hash : sl_chain_genesis ();
    if (self->broken || (pos == self->pos && strcmp (hash, self->hash) == 0))
        return 0;
    if (pos < self->pos) {
        s_break (self, "removed", pos + 1, "the chain's head went back from position %lld to %lld: entries were "
                 "removed at its end", (long long) self->pos, (long long) pos);
        return 0;
    }
    int rc = s_still_there (self, self->pos, self->hash, "the head this audit left");
    if (rc || !self->key)
        return rc < 0 ? -1 : 0;
    rc = s_proven (self, head);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    //  From the last entry a writer holding the key sealed since (a
    //  sibling's), or from this writer's own head.
    s_head_t sealed = { 0 };
    sl_val_t p [] = { sl_val_int (self->pos), sl_val_int (pos) };
    if (sl_store_query (self->store, "SELECT pos, hash, seal FROM chain WHERE pos > $1 AND pos <= $2 "
                                     "AND seal IS NOT NULL ORDER BY pos DESC LIMIT 1", p, 2, s_head_row, &sealed))
        return -1;
    int64_t from = sealed.found && sl_chain_seal_good (self->key, sealed.pos, sealed.hash, sealed.seal)
                 ? sealed.pos + 1 : self->pos + 1;
    s_break (self, "inserted", from, "positions %lld to %lld were written after the last entry an audit holding "
             "the key sealed, and the head has no seal of it: appended by someone without the key",
             (long long) from, (long long) pos);
    return 0;
}

//  Take the head read as this writer's.
static void
s_take (sl_chain_t *self, const s_head_t *head)
{
    self->pos = head->found ? head->pos : 0;
    snprintf (self->hash, sizeof self->hash, "%s", head->found ? head->hash : sl_chain_genesis ());
    self->loaded = self->known = true;
}

int
sl_chain_load (sl_chain_t *self)
{
    s_head_t head;
    if (s_read_head (self, &head))
        return -1;
    if (self->known && s_follow (self, &head))
        return -1;
    s_take (self, &head);
    return 0;
}

int
sl_chain_start (sl_chain_t *self, const sl_checkpoint_t *newest)
{
    s_head_t head;
    if (s_read_head (self, &head))
        return -1;
    s_take (self, &head);
    if (newest) {
        if (self->pos < newest->pos) {
            s_break (self, "removed", self->pos + 1, "the chain ends at position %lld, but the newest checkpoint "
                     "names position %lld: entries were removed at its end", (long long) self->pos,
                     (long long) newest->pos);
            return 0;
        }
        int rc = s_still_there (self, newest->pos, newest->head, "the one the newest checkpoint names");
        if (rc)
            return rc < 0 ? -1 : 0;
        self->unsealed_ok = newest->version < SL_CHECKPOINT_VERSION;
        if (self->pos == newest->pos)
            return 0;
    }
    else {
        int64_t sealed = 0;
        if (self->pos > 0
        &&  sl_store_query_int (self->store, "SELECT COUNT(*) FROM (SELECT 1 FROM chain WHERE seal IS NOT NULL "
                                             "LIMIT 1) s", NULL, 0, 0, &sealed))
            return -1;
        self->unsealed_ok = sealed == 0;
    }
    if (!self->key)
        return 0;
    int rc = s_proven (self, &head);
    if (rc == 0)
        s_break (self, "inserted", (newest ? newest->pos : 0) + 1, "the chain's head at position %lld has no seal "
                 "of this audit's key: the entries after %s were appended by someone without it",
                 (long long) self->pos, newest ? "the newest checkpoint" : "the last seal");
    return rc < 0 ? -1 : 0;
}

int
sl_chain_check (sl_chain_t *self, const sl_checkpoint_t *last)
{
    if (sl_chain_load (self))
        return -1;
    if (self->broken || !last || last->pos <= 0)
        return 0;
    return s_still_there (self, last->pos, last->head, "the one the last checkpoint named") < 0 ? -1 : 0;
}

int64_t
sl_chain_head_pos (sl_chain_t *self)
{
    return self->pos;
}

const char *
sl_chain_head_hash (sl_chain_t *self)
{
    return self->hash;
}

int
sl_chain_pending (sl_chain_t *self)
{
    return self->count;
}

//  --------------------------------------------------------------------------
//  Entries

//  Before the first entry of a transaction, the head is read again (once:
//  `current` holds until the commit or the rollback):
//  another writer on the same store (an audit beside this one during a
//  rolling update) may have appended since our last commit, and the
//  transaction holds the store's write lock (sl_store_begin), so the head
//  read now stays the true one until the commit. The position a ledger
//  row names (sl_chain_next_pos) and the entry made next (sl_chain_begin)
//  both come from here, so they agree.
static int
s_head_for_next (sl_chain_t *self)
{
    if (self->loaded && self->current)
        return 0;
    if (sl_chain_load (self))
        return -1;
    self->current = true;
    return 0;
}

int64_t
sl_chain_next_pos (sl_chain_t *self)
{
    if (s_head_for_next (self))
        return -1;
    return (self->count ? self->pending [self->count - 1].pos : self->pos) + 1;
}

int
sl_chain_begin (sl_chain_t *self, const char *kind, const char *sid, int64_t seq, int sub, const char *ref,
                int64_t at)
{
    if (s_head_for_next (self))
        return -1;
    if (self->count == self->cap) {
        self->cap = self->cap ? self->cap * 2 : 64;
        self->pending = sl_xrealloc (self->pending, (size_t) self->cap * sizeof *self->pending);
    }
    const s_entry_t *last = self->count ? &self->pending [self->count - 1] : NULL;
    s_entry_t *e = &self->pending [self->count++];
    memset (e, 0, sizeof *e);
    e->pos = (last ? last->pos : self->pos) + 1;
    snprintf (e->prev, sizeof e->prev, "%s", last ? last->hash : self->hash);
    e->at = at;
    e->kind = sl_xstrdup (kind);
    e->sid = sid ? sl_xstrdup (sid) : NULL;
    e->seq = seq;
    e->sub = sub;
    e->ref = sl_xstrdup (ref);
    if (sid) {
        char derived [SL_CHAIN_REF];
        sl_chain_stream_ref (derived, sid, seq, sub);
        e->ref_derived = strcmp (ref, derived) == 0;
    }
    sl_buf_reset (&self->canon);
    sl_chain_canon_begin (&self->canon, e->pos, kind, ref, at);
    return 0;
}

void
sl_chain_row (sl_chain_t *self, sl_chain_table_t table, const sl_val_t *vals, int count)
{
    assert (self->count > 0);
    if (table != SL_CHAIN_EVENTS)
        self->pending [self->count - 1].rows_named = true;
    sl_chain_canon_row (&self->canon, table, vals, count);
}

void
sl_chain_data (sl_chain_t *self, const sl_val_t *vals, int count)
{
    assert (self->count > 0);
    sl_buf_reset (&self->data);
    sl_buf_putc (&self->data, '[');
    for (int i = 0; i < count; i++) {
        if (i)
            sl_buf_putc (&self->data, ',');
        switch (vals [i].type) {
            case SL_VAL_INT:  sl_buf_put_i64 (&self->data, vals [i].i); break;
            case SL_VAL_REAL: sl_buf_printf (&self->data, "%.17g", vals [i].d); break;
            case SL_VAL_TEXT: sl_json_put_str (&self->data, vals [i].s, vals [i].n); break;
            default:          sl_buf_puts (&self->data, "null"); break;
        }
    }
    sl_buf_putc (&self->data, ']');
    s_entry_t *e = &self->pending [self->count - 1];
    free (e->data);
    e->data = sl_xstrndup (self->data.data, self->data.len);
}

void
sl_chain_end (sl_chain_t *self)
{
    assert (self->count > 0);
    s_entry_t *e = &self->pending [self->count - 1];
    sl_chain_canon_data (&self->canon, sl_str (e->data));
    sl_chain_hash (e->prev, sl_buf_str (&self->canon), e->hash);
}

//  The INSERT of n entries (one of s_sizes), built at its first use.
static const char *
s_insert_sql (sl_chain_t *self, int size)
{
    sl_buf_t *sql = &self->sql [size];
    if (sql->len == 0) {
        sl_buf_puts (sql, "INSERT INTO chain (pos, at, kind, sid, seq, sub, ref, rows_named, data, prev, "
                          "hash, seal) VALUES ");
        for (int i = 0; i < s_sizes [size]; i++) {
            sl_buf_puts (sql, i ? ", (" : "(");
            for (int c = 0; c < S_COLS; c++) {
                sl_buf_puts (sql, c ? ", $" : "$");
                sl_buf_put_i64 (sql, i * S_COLS + c + 1);
            }
            sl_buf_putc (sql, ')');
        }
    }
    return sl_buf_cstr (sql);
}

int
sl_chain_flush (sl_chain_t *self)
{
    if (!self->params)
        self->params = sl_xmalloc ((size_t) S_PER_INSERT * S_COLS * sizeof *self->params);
    sl_val_t *p = self->params;
    int rc = 0;
    //  The transaction's last entry is sealed: a writer holding the key
    //  left this head (none once the chain is broken: nothing vouches).
    char seal [SL_SIGNKEY_SIG_HEX] = "";
    if (self->count && self->key && self->key->has_secret && !self->broken) {
        const s_entry_t *last = &self->pending [self->count - 1];
        sl_buf_t msg = { 0 };
        sl_chain_seal_message (&msg, last->pos, last->hash);
        sl_signkey_sign (self->key, msg.data, msg.len, seal);
        sl_buf_free (&msg);
    }
    for (int first = 0, n = 0; first < self->count && rc == 0; first += n) {
        int size = 0;
        while (s_sizes [size] > self->count - first)
            size++;
        n = s_sizes [size];
        for (int i = 0; i < n; i++) {
            const s_entry_t *e = &self->pending [first + i];
            sl_val_t *q = p + i * S_COLS;
            q [0] = sl_val_int (e->pos);
            q [1] = sl_val_int (e->at);
            q [2] = sl_val_text (e->kind);
            q [3] = sl_val_text (e->sid);
            q [4] = e->sid ? sl_val_int (e->seq) : sl_val_null ();
            q [5] = e->sid ? sl_val_int (e->sub) : sl_val_null ();
            q [6] = e->ref_derived ? sl_val_null () : sl_val_text (e->ref);
            q [7] = sl_val_int (e->rows_named ? 1 : 0);
            q [8] = sl_val_text (e->data);
            q [9] = sl_val_str ((sl_str_t) { e->prev, SL_CHAIN_LINK });
            q [10] = sl_val_text (e->hash);
            q [11] = first + i == self->count - 1 && *seal ? sl_val_text (seal) : sl_val_null ();
        }
        rc = sl_store_exec (self->store, s_insert_sql (self, size), p, n * S_COLS, NULL);
    }
    return rc;
}

void
sl_chain_committed (sl_chain_t *self)
{
    if (self->count) {
        const s_entry_t *last = &self->pending [self->count - 1];
        self->pos = last->pos;
        snprintf (self->hash, sizeof self->hash, "%s", last->hash);
    }
    s_pending_clear (self);
    self->current = false;
}

void
sl_chain_abort (sl_chain_t *self)
{
    s_pending_clear (self);
    //  Another writer may have moved the head: read it again.
    self->loaded = false;
    self->current = false;
}
