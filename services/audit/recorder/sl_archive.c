/*  sl_archive.c - one record into rows, once (see sl_archive.h). */
#include "services/audit/recorder/sl_archive.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_utf8.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_providers.h"
#include "common/identity/sl_limits.h"
#include "services/audit/recorder/sl_chain.h"
#include "services/audit/store/sl_inventory.h"

#define S_SIDE_SHADOW "shadow"          //  the side of a would-be verdict (verdicts.side)
#define S_ROW_OVERHEAD 96               //  bytes a row costs beyond its text, about
#define S_TEXTS 12                      //  texts one statement may hold
#define S_DATA_MAX 32                   //  values of one chain entry's data
#define S_USAGE_VALS 7                  //  usage values a summary record may add
#define S_REF_SIZE 512                  //  a chain entry's key as text

struct _sl_archive_t {
    sl_store_t *store;
    size_t max_text;
    sl_buf_t text [S_TEXTS];            //  repaired texts
    sl_buf_t names;                     //  tool names
    const sl_providers_t *prices;       //  what a stream costs; NULL: no costs
    sl_inventory_t *inventory;          //  the tool definitions seen
    sl_chain_t *chain;                  //  every record written, hashed in order
    bool chain_off;                     //  the benchmark's comparison only (loud)
    bool entry_open;                    //  the record being written has begun its entry
};

sl_archive_t *
sl_archive_new (sl_store_t *store, size_t max_text)
{
    sl_archive_t *self = sl_xcalloc (1, sizeof *self);
    self->store = store;
    self->max_text = max_text ? max_text : SL_ARCHIVE_DEFAULT_MAX_TEXT;
    self->inventory = sl_inventory_new (store, self->max_text);
    self->chain = sl_chain_new (store);
    return self;
}

void
sl_archive_set_prices (sl_archive_t *self, const sl_providers_t *prices)
{
    self->prices = prices;
}

void
sl_archive_set_tools_cap (sl_archive_t *self, int per_team)
{
    sl_inventory_set_cap (self->inventory, per_team);
}

void
sl_archive_destroy (sl_archive_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_archive_t *self = *self_p;
    for (int i = 0; i < S_TEXTS; i++)
        sl_buf_free (&self->text [i]);
    sl_buf_free (&self->names);
    sl_inventory_destroy (&self->inventory);
    sl_chain_destroy (&self->chain);
    free (self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Text

//  Text as the store takes it, in slot (sl_record_clean at max_text).
static sl_str_t
s_text (sl_archive_t *self, int slot, sl_str_t in, bool *cut)
{
    sl_str_t s;
    sl_record_clean (&self->text [slot], in, self->max_text, &s, cut);
    return s;
}

//  The names of a start's tools ([{"name":...},...]), comma-separated.
static sl_str_t
s_tool_names (sl_archive_t *self, sl_str_t tools)
{
    sl_buf_reset (&self->names);
    sl_json_iter_t it;
    sl_str_t tool, name;
    if (!tools.ptr || sl_json_array (&it, tools))
        return SL_STR_NULL;
    while (sl_json_next_elem (&it, &tool) == 1)
        if (sl_json_find (tool, "name", &name) == 1 && sl_json_type (name) == SL_JSON_STRING) {
            if (self->names.len)
                sl_buf_putc (&self->names, ',');
            sl_json_unescape (name, &self->names);
        }
    return sl_buf_str (&self->names);
}

static sl_val_t
s_usage (int64_t v)
{
    return v >= 0 ? sl_val_int (v) : sl_val_null ();
}

static sl_val_t
s_opt_str (sl_str_t s)
{
    return s.ptr && s.len ? sl_val_str (s) : sl_val_null ();
}

static sl_val_t
s_name (const char *name)
{
    return name && *name && strcmp (name, "?") != 0 ? sl_val_text (name) : sl_val_null ();
}

//  --------------------------------------------------------------------------
//  The chain (sl_chain.h): each record written is one entry, begun by its
//  handler with its key, given the rows it wrote once or the values it
//  carried, and ended in sl_archive_apply once the record is written.

static int
s_chain_begin (sl_archive_t *self, const char *kind, const char *sid, int64_t seq, int sub, const char *ref,
               int64_t at)
{
    if (self->chain_off)
        return 0;
    if (sl_chain_begin (self->chain, kind, sid, seq, sub, ref, at))
        return -1;
    self->entry_open = true;
    return 0;
}

static void
s_chain_row (sl_archive_t *self, sl_chain_table_t table, const sl_val_t *vals, int count)
{
    if (self->entry_open)
        sl_chain_row (self->chain, table, vals, count);
}

static void
s_chain_data (sl_archive_t *self, const sl_val_t *vals, int count)
{
    if (self->entry_open)
        sl_chain_data (self->chain, vals, count);
}

//  A summary record's values and, when it reported usage, the usage.
static void
s_chain_data_usage (sl_archive_t *self, const sl_val_t *vals, int count, const sl_msg_t *msg)
{
    sl_val_t all [S_DATA_MAX];
    assert (count + S_USAGE_VALS <= S_DATA_MAX);
    memcpy (all, vals, (size_t) count * sizeof *vals);
    if (msg->has_usage) {
        const sl_usage_t *u = &msg->usage;
        sl_val_t usage [S_USAGE_VALS] = { s_usage (u->input), s_usage (u->output), s_usage (u->total),
                                          s_usage (u->cache_read), s_usage (u->cache_write),
                                          s_usage (u->reasoning),
                                          sl_val_int ((msg->flags & SL_F_ESTIMATED) ? 1 : 0) };
        memcpy (all + count, usage, sizeof usage);
        count += S_USAGE_VALS;
    }
    s_chain_data (self, all, count);
}

//  --------------------------------------------------------------------------
//  Stream records

static int
s_exec (sl_archive_t *self, const char *sql, const sl_val_t *params, int count, int64_t *changes)
{
    return sl_store_exec (self->store, sql, params, count, changes);
}

static const char *
s_event_type (const sl_msg_t *msg)
{
    if (msg->type == SL_MSG_BLOCK)
        return msg->kind == SL_B_MESSAGE ? "message" : msg->kind == SL_B_END ? "block" : "finish";
    return sl_msg_type_name (msg->type);
}

static int
s_on_start (sl_archive_t *self, sl_val_t sid, const sl_record_meta_t *meta, const sl_msg_t *msg)
{
    bool cut;
    sl_str_t last_user = s_text (self, 0, msg->last_user, &cut);
    sl_str_t tools_json = s_text (self, 1, msg->tools.ptr && msg->tools.len ? msg->tools : SL_STR_NULL, &cut);
    sl_str_t names = s_tool_names (self, msg->tools);
    sl_str_t tools = s_text (self, 2, names.ptr && names.len ? names : SL_STR_NULL, NULL);
    int64_t bytes = S_ROW_OVERHEAD + (int64_t) (last_user.len + tools_json.len + tools.len);
    if (sl_inventory_record (self->inventory, meta->at, msg))
        return -1;
    sl_val_t p [] = {
        sid, sl_val_int (meta->at), sl_val_int (msg->epoch),
        s_name (msg->client_dialect ? sl_dialect_name (msg->client_dialect) : NULL),
        s_name (msg->upstream_dialect ? sl_dialect_name (msg->upstream_dialect) : NULL),
        s_opt_str (msg->model), s_opt_str (msg->provider), s_opt_str (msg->key_id),
        sl_val_int ((msg->flags & SL_F_STREAM) ? 1 : 0), s_opt_str (msg->policy),
        sl_val_str (last_user), sl_val_str (tools), sl_val_str (tools_json), sl_val_int (bytes),
        s_opt_str (s_text (self, 3, msg->team, NULL)), s_opt_str (s_text (self, 4, msg->user, NULL)),
        sl_val_null (),                 //  the mcp, below
        sl_val_null ()                  //  the providers tried, below
    };
    //  The start's big texts are chained by digest: the streams row's
    //  columns are checked against them.
    char user_digest [SL_CHAIN_HEX], tools_digest [SL_CHAIN_HEX];
    sl_chain_digest (last_user, user_digest);
    sl_chain_digest (tools_json, tools_digest);
    sl_val_t d [18];
    memcpy (d, p, sizeof d);
    d [10] = last_user.ptr ? sl_val_text (user_digest) : sl_val_null ();
    d [12] = tools_json.ptr ? sl_val_text (tools_digest) : sl_val_null ();
    //  An MCP request's stream says which (chained after the rest, and
    //  only then: a model's start is chained as it always was).
    sl_val_t mcp = s_opt_str (s_text (self, 5, msg->mcp, NULL));
    d [16] = mcp;
    //  So do the providers a stream tried before the one that served it
    //  (chained by digest, after the mcp, and only when there are some).
    sl_str_t failover = s_text (self, 6, msg->attempts.len ? msg->attempts : SL_STR_NULL, NULL);
    char failover_digest [SL_CHAIN_HEX];
    sl_chain_digest (failover, failover_digest);
    d [17] = failover.ptr ? sl_val_text (failover_digest) : sl_val_null ();
    s_chain_data (self, d + 1, failover.ptr ? 17 : msg->mcp.len ? 16 : 15);     //  the entry has the sid
    p [16] = mcp;
    p [17] = s_opt_str (failover);
    return s_exec (self, "UPDATE streams SET started_at = CASE WHEN started_at < $2 THEN started_at ELSE $2 END, "
                         "epoch = $3, client_dialect = $4, upstream_dialect = $5, model = $6, provider = $7, "
                         "client_key = $8, streaming = $9, policy = $10, last_user = $11, tools = $12, "
                         "tools_json = $13, bytes = bytes + $14, team = $15, user_name = $16, mcp = $17, "
                         "failover = $18 WHERE sid = $1",
                   p, 18, NULL);
}

typedef struct {
    bool found;
    char model [256];
    int64_t in, out;
} s_spent_t;

static int
s_spent_row (void *arg, const sl_row_t *row)
{
    s_spent_t *spent = arg;
    spent->found = !sl_row_null (row, 0);
    sl_str_t model = sl_row_text (row, 0);
    snprintf (spent->model, sizeof spent->model, "%.*s", (int) model.len, model.ptr ? model.ptr : "");
    spent->in = sl_row_null (row, 1) ? 0 : sl_row_int (row, 1);
    spent->out = sl_row_null (row, 2) ? 0 : sl_row_int (row, 2);
    return 1;
}

//  The stream's cost at the prices, from its model (as the client asked
//  for it, as the gateway's limits count it) and its usage so far. A
//  model without a price leaves the cost NULL: unknown, not free.
static int
s_cost (sl_archive_t *self, sl_val_t sid)
{
    if (!self->prices)
        return 0;
    s_spent_t spent = { 0 };
    if (sl_store_query (self->store, "SELECT model, usage_in, usage_out FROM streams WHERE sid = $1", &sid, 1,
                        s_spent_row, &spent))
        return -1;
    double in_per_m, out_per_m;
    if (!spent.found || sl_providers_price (self->prices, spent.model, &in_per_m, &out_per_m))
        return 0;
    sl_val_t p [] = { sid, sl_val_int (sl_limits_usd_micro (spent.in, spent.out, in_per_m, out_per_m)) };
    return s_exec (self, "UPDATE streams SET cost_usd_micro = $2 WHERE sid = $1", p, 2, NULL);
}

//  Usage as reported, or the emitter's estimate (flag ESTIMATED: it
//  reported none), then the cost of what the stream spent so far.
static int
s_on_usage (sl_archive_t *self, sl_val_t sid, const sl_usage_t *u, bool estimated)
{
    sl_val_t p [] = { sid, s_usage (u->input), s_usage (u->output), s_usage (u->total),
                      s_usage (u->cache_read), s_usage (u->cache_write), s_usage (u->reasoning),
                      sl_val_int (estimated ? 1 : 0) };
    if (s_exec (self, "UPDATE streams SET usage_in = COALESCE($2, usage_in), usage_out = COALESCE($3, usage_out), "
                      "usage_total = COALESCE($4, usage_total), usage_cache_read = COALESCE($5, usage_cache_read), "
                      "usage_cache_write = COALESCE($6, usage_cache_write), "
                      "usage_reasoning = COALESCE($7, usage_reasoning), "
                      "usage_estimated = CASE WHEN $8 = 1 THEN 1 ELSE usage_estimated END WHERE sid = $1", p, 8, NULL))
        return -1;
    return s_cost (self, sid);
}

static int
s_on_message (sl_archive_t *self, sl_val_t sid, const sl_msg_t *msg)
{
    sl_val_t p [] = { sid, s_opt_str (msg->id), s_opt_str (msg->model) };
    s_chain_data_usage (self, p + 1, 2, msg);
    if (s_exec (self, "UPDATE streams SET response_id = COALESCE($2, response_id), "
                      "response_model = COALESCE($3, response_model) WHERE sid = $1", p, 3, NULL))
        return -1;
    return msg->has_usage ? s_on_usage (self, sid, &msg->usage, (msg->flags & SL_F_ESTIMATED) != 0) : 0;
}

static int
s_on_block_end (sl_archive_t *self, sl_val_t sid, const sl_record_meta_t *meta, const sl_msg_t *msg)
{
    //  Text, thinking, arguments in text; citations and server results in body.
    sl_str_t whole = msg->text.ptr ? msg->text : msg->body;
    bool cut;
    sl_str_t content = s_text (self, 0, whole, &cut);
    //  Why it was cut off: the block's code (a cut without one: error).
    sl_val_t incomplete = sl_val_null ();
    if (msg->flags & SL_F_INCOMPLETE)
        incomplete = msg->code.ptr ? sl_val_str (s_text (self, 1, msg->code, NULL))
                                   : sl_val_text (sl_cut_name (SL_CUT_ERROR));
    bool is_call = msg->block == SL_BK_TOOL_CALL || msg->block == SL_BK_SERVER_TOOL_USE;
    sl_val_t p [] = {
        sid, sl_val_int ((int64_t) msg->seq), sl_val_int (msg->index),
        s_name (sl_block_kind_name (msg->block)),
        s_opt_str (msg->id), s_opt_str (msg->call_id), s_opt_str (msg->name),
        sl_val_str (content), sl_val_int ((int64_t) whole.len), sl_val_int (cut ? 1 : 0),
        sl_val_int ((msg->flags & SL_F_REPLACED) ? 1 : 0), incomplete,
        is_call ? sl_val_int ((msg->flags & SL_F_ARGS_VALID) ? 1 : 0) : sl_val_null (),
        sl_val_int (meta->at)
    };
    int64_t written = 0;
    if (s_exec (self, "INSERT INTO blocks (sid, seq, idx, kind, id, call_id, name, content, content_bytes, "
                      "truncated, replaced, incomplete, args_valid, at) "
                      "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) "
                      "ON CONFLICT (sid, seq) DO NOTHING", p, 14, &written))
        return -1;
    if (written)                        //  else the row is another record's (same seq, other origin)
        s_chain_row (self, SL_CHAIN_BLOCKS, p, 14);
    sl_val_t q [] = { sid, sl_val_int (S_ROW_OVERHEAD + (int64_t) content.len) };
    return s_exec (self, "UPDATE streams SET blocks = blocks + 1, bytes = bytes + $2 WHERE sid = $1", q, 2, NULL);
}

static int
s_on_finish (sl_archive_t *self, sl_val_t sid, const sl_msg_t *msg)
{
    sl_val_t p [] = { sid, s_name (msg->finish ? sl_finish_name (msg->finish) : NULL),
                      s_opt_str (s_text (self, 0, msg->finish_raw, NULL)) };
    s_chain_data_usage (self, p + 1, 2, msg);
    if (s_exec (self, "UPDATE streams SET finish = $2, finish_raw = $3 WHERE sid = $1", p, 3, NULL))
        return -1;
    return msg->has_usage ? s_on_usage (self, sid, &msg->usage, (msg->flags & SL_F_ESTIMATED) != 0) : 0;
}

static int
s_on_verdict (sl_archive_t *self, sl_val_t sid, const sl_record_meta_t *meta, const sl_msg_t *msg)
{
    bool cut;
    sl_str_t args = s_text (self, 0, msg->text, &cut);
    sl_str_t reason = s_text (self, 1, msg->reason, NULL);
    int64_t latency = msg->latency_us;
    sl_val_t p [] = {
        sid, sl_val_int ((int64_t) msg->seq), msg->index >= 0 ? sl_val_int (msg->index) : sl_val_null (),
        s_opt_str (msg->id), s_opt_str (msg->name), sl_val_text (sl_action_name (msg->action)),
        sl_val_text (sl_check_name (msg->check)), s_opt_str (msg->rule), sl_val_str (reason),
        s_opt_str (msg->judge_model), isnan (msg->probability) ? sl_val_null () : sl_val_real (msg->probability),
        sl_val_int (latency), sl_val_int (sl_record_latency_bucket (latency)),
        sl_val_str (args), sl_val_int ((int64_t) msg->text.len), sl_val_int (cut ? 1 : 0), sl_val_int (meta->at),
        //  A verdict on the request names the part it judged (PROTOCOL.md,
        //  "verdict"); a would-be verdict (a rule in shadow mode) is on a
        //  side of its own, so that nothing that counts what was decided
        //  counts it, and the chain covers it as any verdict.
        sl_val_text (msg->mode == SL_MODE_SHADOW ? S_SIDE_SHADOW : msg->part.ptr ? "request" : "response"),
        s_opt_str (msg->part),
        s_opt_str (s_text (self, 2, msg->team, NULL)), s_opt_str (s_text (self, 3, msg->user, NULL))
    };
    int64_t written = 0;
    if (s_exec (self, "INSERT INTO verdicts (sid, seq, side, idx, call_id, tool, action, checked, rule, reason, "
                      "judge_model, probability, latency_us, latency_bucket, arguments, arguments_bytes, "
                      "truncated, at, part, team, user_name) VALUES ($1, $2, $18, $3, $4, $5, $6, $7, $8, $9, "
                      "$10, $11, $12, $13, $14, $15, $16, $17, $19, $20, $21) ON CONFLICT (sid, seq) DO NOTHING",
                p, 21, &written))
        return -1;
    if (written) {
        //  In the table's column order (sl_chain_columns).
        sl_val_t row [] = { p [0], p [1], p [17], p [2], p [3], p [4], p [5], p [6], p [7], p [8], p [9], p [10],
                            p [11], p [12], p [13], p [14], p [15], p [16], p [18], p [19], p [20] };
        s_chain_row (self, SL_CHAIN_VERDICTS, row, 21);
    }
    if (msg->part.ptr || msg->mode == SL_MODE_SHADOW)
        return 0;                       //  not a call decided: the stream's call counts stay
    sl_val_t q [] = { sid, sl_val_int (msg->action != SL_ACT_ALLOW ? 1 : 0),
                      sl_val_int (S_ROW_OVERHEAD + (int64_t) (args.len + reason.len)) };
    return s_exec (self, "UPDATE streams SET calls = calls + 1, blocked = blocked + $2, bytes = bytes + $3 "
                         "WHERE sid = $1", q, 3, NULL);
}

static int
s_on_error (sl_archive_t *self, sl_val_t sid, const sl_msg_t *msg)
{
    bool upstream = (msg->flags & SL_F_UPSTREAM) || sl_str_starts (msg->code, "upstream_");
    sl_val_t p [] = { sid, s_opt_str (s_text (self, 0, msg->code, NULL)), sl_val_str (s_text (self, 1, msg->message, NULL)),
                      msg->status ? sl_val_int (msg->status) : sl_val_null (),
                      sl_val_text (upstream ? "upstream" : "sluice") };
    s_chain_data (self, p + 1, 4);
    return s_exec (self, "UPDATE streams SET error_code = $2, error_message = $3, error_status = $4, "
                         "error_source = $5 WHERE sid = $1 AND error_code IS NULL", p, 5, NULL);
}

static int
s_on_end (sl_archive_t *self, sl_val_t sid, const sl_record_meta_t *meta)
{
    sl_val_t p [] = { sid, sl_val_int (meta->at) };
    s_chain_data (self, p + 1, 1);
    return s_exec (self, "UPDATE streams SET ended_at = $2, duration_ms = $2 - started_at "
                         "WHERE sid = $1 AND ended_at IS NULL", p, 2, NULL);
}

static int
s_stream_record (sl_archive_t *self, const sl_record_meta_t *meta, const sl_msg_t *msg)
{
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (msg->sid, hex);
    sl_val_t sid = sl_val_text (hex);
    int64_t fresh = 0;
    //  The row names the entry it will have (the chain's next position):
    //  verify and the console find a record's entry through it.
    int64_t pos = self->chain_off ? 0 : sl_chain_next_pos (self->chain);
    if (pos < 0)
        return -1;
    sl_val_t key [] = { sid, sl_val_int ((int64_t) msg->seq), sl_val_int (meta->sub),
                        sl_val_text (s_event_type (msg)), sl_val_int (meta->at),
                        pos ? sl_val_int (pos) : sl_val_null () };
    if (s_exec (self, "INSERT INTO events (sid, seq, sub, type, at, chain_pos) VALUES ($1, $2, $3, $4, $5, $6) "
                      "ON CONFLICT (sid, seq, sub) DO NOTHING", key, 6, &fresh))
        return -1;
    if (fresh == 0)
        return 0;                       //  delivered before: written then
    char ref [SL_CHAIN_REF];
    sl_chain_stream_ref (ref, hex, (int64_t) msg->seq, meta->sub);
    if (s_chain_begin (self, s_event_type (msg), hex, (int64_t) msg->seq, meta->sub, ref, meta->at))
        return -1;
    s_chain_row (self, SL_CHAIN_EVENTS, key, 5);
    sl_val_t row [] = { sid, sl_val_int (meta->at), sl_val_int (msg->epoch),
                        s_opt_str (s_text (self, 0, meta->emitter, NULL)) };
    if (s_exec (self, "INSERT INTO streams (sid, started_at, epoch, emitter) VALUES ($1, $2, $3, $4) "
                      "ON CONFLICT (sid) DO NOTHING", row, 4, NULL))
        return -1;
    int rc = 0;
    switch (msg->type) {
        case SL_MSG_START:   rc = s_on_start (self, sid, meta, msg); break;
        case SL_MSG_VERDICT: rc = s_on_verdict (self, sid, meta, msg); break;
        case SL_MSG_ERROR:   rc = s_on_error (self, sid, msg); break;
        case SL_MSG_END:     rc = s_on_end (self, sid, meta); break;
        case SL_MSG_BLOCK:
            rc = msg->kind == SL_B_MESSAGE ? s_on_message (self, sid, msg)
               : msg->kind == SL_B_END ? s_on_block_end (self, sid, meta, msg)
               : msg->kind == SL_B_FINISH ? s_on_finish (self, sid, msg) : 0;
            break;
        default:
            break;
    }
    return rc ? -1 : 1;
}

//  --------------------------------------------------------------------------
//  Policy reports and gaps

static int
s_policy (sl_archive_t *self, const sl_record_meta_t *meta, const sl_msg_t *msg)
{
    if (!msg->instance.ptr || !msg->policy.ptr)
        return 0;
    sl_val_t p [] = {
        sl_val_str (s_text (self, 0, msg->instance, NULL)), sl_val_str (s_text (self, 1, msg->policy, NULL)),
        s_opt_str (s_text (self, 2, msg->name, NULL)), sl_val_str (s_text (self, 3, msg->text, NULL)),
        msg->ts ? sl_val_int (msg->ts) : sl_val_null (), sl_val_int (meta->at), sl_val_int ((int64_t) msg->count),
        s_opt_str (msg->message)
    };
    //  The error is text from a file the judge refused: it is repaired
    //  into slot 2's buffer only after name is bound, so repair it apart.
    sl_buf_t error = { 0 };
    if (msg->message.ptr) {
        sl_utf8_repair (&error, msg->message.ptr, msg->message.len);
        for (size_t i = 0; i < error.len; i++)
            if (!error.data [i])
                error.data [i] = ' ';
        p [7] = sl_val_str (sl_buf_str (&error));
    }
    char ref [S_REF_SIZE];
    snprintf (ref, sizeof ref, "%.*s %.*s", (int) p [0].n, p [0].s, (int) p [1].n, p [1].s);
    if (s_chain_begin (self, "policy", NULL, 0, 0, ref, meta->at)) {
        sl_buf_free (&error);
        return -1;
    }
    s_chain_data (self, p, 8);
    int rc = s_exec (self, "INSERT INTO policies (judge, policy, name, source, loaded_at, first_seen, last_seen, "
                           "failures, last_error) VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8) "
                           "ON CONFLICT (judge, policy) DO UPDATE SET "
                           "last_seen = CASE WHEN excluded.last_seen > policies.last_seen "
                           "THEN excluded.last_seen ELSE policies.last_seen END, "
                           "first_seen = CASE WHEN excluded.first_seen < policies.first_seen "
                           "THEN excluded.first_seen ELSE policies.first_seen END, "
                           "failures = CASE WHEN excluded.failures > policies.failures "
                           "THEN excluded.failures ELSE policies.failures END, "
                           "last_error = COALESCE(excluded.last_error, policies.last_error)", p, 8, NULL);
    sl_buf_free (&error);
    return rc ? -1 : 1;
}

static int
s_gap (sl_archive_t *self, const sl_record_meta_t *meta, const sl_msg_t *msg)
{
    char inc [24];
    snprintf (inc, sizeof inc, "%llu", (unsigned long long) meta->incarnation);
    size_t streams = msg->body.len / SL_SID_SIZE;
    sl_val_t key [] = { sl_val_str (s_text (self, 0, meta->emitter, NULL)), sl_val_text (inc),
                        sl_val_int ((int64_t) meta->rseq), sl_val_int ((int64_t) msg->count),
                        sl_val_int (msg->ts ? msg->ts : meta->at), sl_val_int (meta->at),
                        sl_val_int ((int64_t) streams) };
    int64_t fresh = 0;
    if (s_exec (self, "INSERT INTO gaps (emitter, incarnation, rseq, lost, since, at, streams) "
                      "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (emitter, incarnation, rseq) DO NOTHING",
                key, 7, &fresh))
        return -1;
    if (fresh == 0)
        return 0;
    char ref [S_REF_SIZE];
    snprintf (ref, sizeof ref, "%.*s:%s:%llu", (int) key [0].n, key [0].s ? key [0].s : "", inc,
              (unsigned long long) meta->rseq);
    if (s_chain_begin (self, "gap", NULL, 0, 0, ref, meta->at))
        return -1;
    s_chain_row (self, SL_CHAIN_GAPS, key, 7);
    //  The streams it counted a loss against.
    sl_buf_t sids = { 0 };
    for (size_t i = 0; i < streams; i++) {
        char hex [SL_SID_HEX_SIZE];
        sl_sid_hex ((const uint8_t *) msg->body.ptr + i * SL_SID_SIZE, hex);
        sl_buf_puts (&sids, i ? "," : "");
        sl_buf_puts (&sids, hex);
    }
    sl_val_t named = sl_val_str (sl_buf_str (&sids));
    s_chain_data (self, &named, 1);
    sl_buf_free (&sids);
    for (size_t i = 0; i < streams; i++) {
        char hex [SL_SID_HEX_SIZE];
        sl_sid_hex ((const uint8_t *) msg->body.ptr + i * SL_SID_SIZE, hex);
        sl_val_t p [] = { sl_val_text (hex), sl_val_int (msg->ts ? msg->ts : meta->at) };
        if (s_exec (self, "INSERT INTO streams (sid, started_at) VALUES ($1, $2) ON CONFLICT (sid) DO NOTHING",
                    p, 2, NULL)
        ||  s_exec (self, "UPDATE streams SET lost = lost + 1 WHERE sid = $1", p, 1, NULL))
            return -1;
    }
    return 1;
}

//  --------------------------------------------------------------------------
//  Approvals

//  A judge's approval record: the row is made by the first record of an
//  approval whatever its state (records of one approval may come through
//  different emitters, so out of order), a pending one moves to the state
//  of a later record, and a decided one stays as it is. What an earlier
//  record lacked is filled in by a later one. 1 when the state is new
//  (for the live view and the webhook), 0 when the record changed no
//  state (delivered twice, or older than what the row holds).
static int
s_approval (sl_archive_t *self, const sl_record_meta_t *meta, const sl_msg_t *msg)
{
    if (!msg->code.ptr || !msg->stream.ptr || !msg->digest.ptr)
        return 0;
    char id [SL_SID_HEX_SIZE];
    sl_sid_hex (msg->sid, id);
    int64_t at = msg->ts ? msg->ts : meta->at;
    bool pending = sl_str_eq (msg->code, "pending");
    sl_val_t p [] = {
        sl_val_text (id), sl_val_str (s_text (self, 0, msg->code, NULL)), sl_val_str (s_text (self, 1, msg->stream, NULL)),
        msg->index >= 0 ? sl_val_int (msg->index) : sl_val_null (), s_opt_str (s_text (self, 2, msg->name, NULL)),
        s_opt_str (s_text (self, 3, msg->text, NULL)), s_opt_str (s_text (self, 4, msg->rule, NULL)),
        s_opt_str (s_text (self, 5, msg->message, NULL)), sl_val_str (s_text (self, 6, msg->digest, NULL)),
        s_opt_str (msg->policy), s_opt_str (s_text (self, 7, msg->policy_name, NULL)),
        s_opt_str (s_text (self, 8, msg->key_id, NULL)), s_opt_str (s_text (self, 9, msg->team, NULL)),
        s_opt_str (s_text (self, 10, msg->user, NULL)), s_opt_str (msg->model),
        s_opt_str (s_text (self, 11, msg->last_user, NULL)), s_opt_str (msg->instance),
        sl_val_str (msg->body.ptr && sl_json_valid (msg->body) ? msg->body : SL_STR_NULL),
        sl_val_int (at), msg->expires ? sl_val_int (msg->expires) : sl_val_null (),
        pending ? sl_val_null () : s_opt_str (msg->approver),
        pending ? sl_val_null () : s_opt_str (msg->reason),
    };
    int64_t fresh = 0;
    if (s_exec (self, "INSERT INTO approvals (id, state, stream, call_index, tool, arguments, rule, message, digest, "
                      "policy, policy_name, key_id, team, user_name, model, last_user, judge, details, created_at, "
                      "expires_at, updated_at, approver, comment) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
                      "$11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $19, $21, $22) "
                      "ON CONFLICT (id) DO NOTHING", p, 22, &fresh))
        return -1;
    char ref [S_REF_SIZE];
    snprintf (ref, sizeof ref, "%s:%.*s", id, (int) p [1].n, p [1].s);
    if (fresh) {
        if (s_chain_begin (self, "approval", NULL, 0, 0, ref, at))
            return -1;
        s_chain_data (self, p, 22);
        return 1;
    }
    //  PostgreSQL must know the type of every parameter a statement is
    //  given: each statement gets only those it uses.
    //  The decision's details (the memory it gave, self_approved) replace
    //  the pending record's.
    int64_t moved = 0;
    sl_val_t decided [] = { p [0], p [1], p [18], p [20], p [21], p [17] };
    if (!pending
    &&  s_exec (self, "UPDATE approvals SET state = $2, updated_at = $3, approver = $4, comment = $5, "
                      "details = COALESCE($6, details) WHERE id = $1 AND state = 'pending'", decided, 6, &moved))
        return -1;
    //  Whatever order they came in: the content an earlier record lacked,
    //  and the start of the wait (a pending record is the earliest).
    sl_val_t fill [] = { p [0], p [3], p [4], p [5], p [6], p [7], p [9], p [10], p [11], p [12], p [13], p [14],
                         p [15], p [16], p [17], p [19], p [18] };
    if (s_exec (self, "UPDATE approvals SET call_index = COALESCE(call_index, $2), tool = COALESCE(tool, $3), "
                      "arguments = COALESCE(arguments, $4), rule = COALESCE(rule, $5), "
                      "message = COALESCE(message, $6), policy = COALESCE(policy, $7), "
                      "policy_name = COALESCE(policy_name, $8), key_id = COALESCE(key_id, $9), "
                      "team = COALESCE(team, $10), user_name = COALESCE(user_name, $11), "
                      "model = COALESCE(model, $12), last_user = COALESCE(last_user, $13), "
                      "judge = COALESCE(judge, $14), details = COALESCE(details, $15), "
                      "expires_at = COALESCE(expires_at, $16), "
                      "created_at = CASE WHEN $17 < created_at THEN $17 ELSE created_at END "
                      "WHERE id = $1", fill, 17, NULL))
        return -1;
    if (moved) {
        if (s_chain_begin (self, "approval", NULL, 0, 0, ref, at))
            return -1;
        s_chain_data (self, decided, 6);
    }
    return moved ? 1 : 0;
}

static int
s_apply (sl_archive_t *self, const sl_record_meta_t *meta, const sl_msg_t *msg)
{
    switch (msg->type) {
        case SL_MSG_START:
        case SL_MSG_BLOCK:
        case SL_MSG_VERDICT:
        case SL_MSG_ERROR:
        case SL_MSG_END:
            return s_stream_record (self, meta, msg);
        case SL_MSG_POLICY:
            return s_policy (self, meta, msg);
        case SL_MSG_GAP:
            return s_gap (self, meta, msg);
        case SL_MSG_APPROVAL:
            return s_approval (self, meta, msg);
        default:
            return 0;                   //  nothing the store keeps
    }
}

int
sl_archive_apply (sl_archive_t *self, const sl_record_meta_t *meta, const sl_msg_t *msg)
{
    self->entry_open = false;
    int rc = s_apply (self, meta, msg);
    //  A record that failed leaves its entry pending: the caller rolls
    //  the transaction back (sl_archive_rollback), which forgets it.
    if (self->entry_open && rc >= 0)
        sl_chain_end (self->chain);
    self->entry_open = false;
    return rc;
}

int
sl_archive_commit (sl_archive_t *self)
{
    if (sl_chain_pending (self->chain) && sl_chain_flush (self->chain))
        return -1;
    if (sl_store_commit (self->store))
        return -1;
    sl_chain_committed (self->chain);
    return 0;
}

void
sl_archive_rollback (sl_archive_t *self)
{
    sl_store_rollback (self->store);
    sl_chain_abort (self->chain);
}

sl_chain_t *
sl_archive_chain (sl_archive_t *self)
{
    return self->chain;
}

void
sl_archive_set_chained (sl_archive_t *self, bool on)
{
    self->chain_off = !on;
}
