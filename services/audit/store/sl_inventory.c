/*  sl_inventory.c - the tool definitions the requests carried, per team
    (see sl_inventory.h). */
#include "services/audit/store/sl_inventory.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/tools/sl_tooldef.h"
#include "services/audit/store/sl_record.h"

#define S_STR_(x) #x
#define S_STR(x) S_STR_ (x)
#define S_LIKE_ESCAPE '!'               //  escapes % and _ in a list's LIKE pattern
#define S_ENTRY_MAX 200                 //  bytes of one key id or model in a list

//  The fields of one definition, decoded, then made store text.
typedef enum { F_NAME, F_DIGEST, F_SERVER, F_TOOL, F_DESCRIPTION, F_SCHEMA, F_COUNT } s_field_t;

struct _sl_inventory_t {
    sl_store_t *store;
    size_t max_text;
    int cap;                            //  definitions a team keeps
    sl_buf_t raw [F_COUNT];             //  decoded strings
    sl_buf_t clean [F_COUNT];           //  as the store takes them
    sl_buf_t team, key, key_like, model, model_like;
};

sl_inventory_t *
sl_inventory_new (sl_store_t *store, size_t max_text)
{
    sl_inventory_t *self = sl_xcalloc (1, sizeof *self);
    self->store = store;
    self->max_text = max_text;
    self->cap = SL_INVENTORY_TEAM_MAX;
    return self;
}

void
sl_inventory_set_cap (sl_inventory_t *self, int per_team)
{
    self->cap = per_team > 0 ? per_team : SL_INVENTORY_TEAM_MAX;
}

void
sl_inventory_destroy (sl_inventory_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_inventory_t *self = *self_p;
    for (int i = 0; i < F_COUNT; i++) {
        sl_buf_free (&self->raw [i]);
        sl_buf_free (&self->clean [i]);
    }
    sl_buf_free (&self->team);
    sl_buf_free (&self->key);
    sl_buf_free (&self->key_like);
    sl_buf_free (&self->model);
    sl_buf_free (&self->model_like);
    free (self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Recording

//  A list entry ("k,": appended after the list's last comma) and the LIKE
//  pattern that finds it ("%,k,%"), from a key id or model: store text,
//  no commas (they separate entries), bounded. Absent: both absent.
static void
s_entry (sl_buf_t *entry, sl_buf_t *like, sl_str_t in, bool *present)
{
    sl_buf_t clean = { 0 };
    sl_str_t s;
    sl_record_clean (&clean, in, S_ENTRY_MAX, &s, NULL);
    *present = s.ptr && s.len;
    sl_buf_reset (entry);
    sl_buf_reset (like);
    sl_buf_puts (like, "%,");
    for (size_t i = 0; *present && i < s.len; i++) {
        char c = s.ptr [i] == ',' ? ';' : s.ptr [i];
        sl_buf_putc (entry, c);
        if (c == '%' || c == '_' || c == S_LIKE_ESCAPE)
            sl_buf_putc (like, S_LIKE_ESCAPE);
        sl_buf_putc (like, c);
    }
    sl_buf_putc (entry, ',');
    sl_buf_puts (like, ",%");
    sl_buf_free (&clean);
}

//  A string member decoded into buf; absent when it is not a string.
static sl_str_t
s_string (sl_str_t object, const char *key, sl_buf_t *buf)
{
    sl_str_t value;
    sl_buf_reset (buf);
    if (sl_json_find (object, key, &value) != 1 || sl_json_type (value) != SL_JSON_STRING
    ||  sl_json_unescape (value, buf))
        return SL_STR_NULL;
    return sl_str_n (buf->data ? buf->data : "", buf->len);
}

static bool
s_is_digest (sl_str_t s)
{
    if (s.len != SL_TOOLDEF_DIGEST_SIZE - 1)
        return false;
    for (size_t i = 0; i < s.len; i++)
        if (!strchr ("0123456789abcdef", s.ptr [i]))
            return false;
    return true;
}

//  A list column: kept when the entry is there already, or when the list
//  is full (commas - 1 entries); else the entry appended.
#define S_LIST_UPDATE(col, entry, like) \
    col " = CASE WHEN CAST(" entry " AS TEXT) IS NULL OR tools." col " LIKE CAST(" like " AS TEXT) ESCAPE '!' " \
    "OR length(tools." col ") - length(replace(tools." col ", ',', '')) > " S_STR (SL_INVENTORY_LIST_MAX) " " \
    "THEN tools." col " ELSE tools." col " || CAST(" entry " AS TEXT) END"

//  A new definition made the team's count pass its cap: its least
//  recently seen go (ties: the oldest first seen). 0, -1.
static int
s_keep_to_cap (sl_inventory_t *self, sl_val_t team)
{
    int64_t count = 0;
    if (sl_store_query_int (self->store, "SELECT COUNT(*) FROM tools WHERE team = $1", &team, 1, 0, &count))
        return -1;
    if (count <= self->cap)
        return 0;
    sl_val_t p [] = { team, sl_val_int (count - self->cap) };
    return sl_store_exec (self->store, "DELETE FROM tools WHERE team = $1 AND (name, digest) IN (SELECT name, digest "
                                       "FROM tools WHERE team = $1 ORDER BY last_seen, first_seen, name, digest "
                                       "LIMIT $2)", p, 2, NULL);
}

static int
s_record_one (sl_inventory_t *self, int64_t at, sl_str_t tool, const sl_val_t *who)
{
    sl_str_t f [F_COUNT];
    f [F_NAME] = s_string (tool, "name", &self->raw [F_NAME]);
    f [F_DIGEST] = s_string (tool, "digest", &self->raw [F_DIGEST]);
    if (!f [F_NAME].ptr || !s_is_digest (f [F_DIGEST]))
        return 0;                       //  not a definition the gateway wrote: nothing to record
    f [F_SERVER] = s_string (tool, "server", &self->raw [F_SERVER]);
    f [F_TOOL] = s_string (tool, "tool", &self->raw [F_TOOL]);
    f [F_DESCRIPTION] = s_string (tool, "description", &self->raw [F_DESCRIPTION]);
    sl_str_t schema;
    f [F_SCHEMA] = sl_json_find (tool, "schema", &schema) == 1 ? sl_json_trim (schema) : SL_STR_NULL;
    bool truncated = false, cut;
    sl_str_t truncated_value;
    if (sl_json_find (tool, "truncated", &truncated_value) == 1)
        sl_json_bool (truncated_value, &truncated);
    for (int i = 0; i < F_COUNT; i++) {
        sl_record_clean (&self->clean [i], f [i], self->max_text, &f [i], &cut);
        truncated = truncated || cut;
    }
    //  A definition seen before: counted (the common case, one statement).
    //  Each statement gets only the parameters it uses (PostgreSQL types
    //  them all).
    int64_t changed = 0;
    sl_val_t seen [] = { who [0], sl_val_str (f [F_NAME]), sl_val_str (f [F_DIGEST]),
                         sl_val_int (truncated ? 1 : 0), sl_val_int (at), who [1], who [2], who [3], who [4] };
    if (sl_store_exec (self->store,
            "UPDATE tools SET first_seen = CASE WHEN $5 < tools.first_seen THEN $5 ELSE tools.first_seen END, "
            "last_seen = CASE WHEN $5 > tools.last_seen THEN $5 ELSE tools.last_seen END, "
            "requests = tools.requests + 1, truncated = CASE WHEN $4 > tools.truncated THEN $4 ELSE tools.truncated END, "
            S_LIST_UPDATE ("key_ids", "$6", "$7") ", " S_LIST_UPDATE ("models", "$8", "$9") " "
            "WHERE team = $1 AND name = $2 AND digest = $3", seen, 9, &changed))
        return -1;
    if (changed)
        return 0;
    sl_val_t p [] = {
        who [0], sl_val_str (f [F_NAME]), sl_val_str (f [F_DIGEST]), sl_val_str (f [F_SERVER]),
        sl_val_str (f [F_TOOL]), sl_val_str (f [F_DESCRIPTION]), sl_val_str (f [F_SCHEMA]),
        sl_val_int (truncated ? 1 : 0), sl_val_int (at), who [1], who [3]
    };
    if (sl_store_exec (self->store,
            "INSERT INTO tools (team, name, digest, server, tool, description, schema_json, truncated, first_seen, "
            "last_seen, key_ids, models, requests) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, "
            "',' || COALESCE(CAST($10 AS TEXT), ''), ',' || COALESCE(CAST($11 AS TEXT), ''), 1) "
            "ON CONFLICT (team, name, digest) DO NOTHING", p, 11, &changed))
        return -1;
    return changed ? s_keep_to_cap (self, who [0]) : 0;
}

int
sl_inventory_record (sl_inventory_t *self, int64_t at, const sl_msg_t *start)
{
    sl_json_iter_t it;
    if (!start->tools.ptr || sl_json_array (&it, start->tools))
        return 0;
    sl_str_t team;
    sl_record_clean (&self->team, start->team, self->max_text, &team, NULL);
    bool has_key, has_model;
    s_entry (&self->key, &self->key_like, start->key_id, &has_key);
    s_entry (&self->model, &self->model_like, start->model, &has_model);
    sl_val_t who [] = {
        sl_val_str (team.ptr ? team : SL_STR_LIT ("")),
        has_key ? sl_val_str (sl_buf_str (&self->key)) : sl_val_null (),
        has_key ? sl_val_str (sl_buf_str (&self->key_like)) : sl_val_null (),
        has_model ? sl_val_str (sl_buf_str (&self->model)) : sl_val_null (),
        has_model ? sl_val_str (sl_buf_str (&self->model_like)) : sl_val_null ()
    };
    sl_str_t tool;
    while (sl_json_next_elem (&it, &tool) == 1)
        if (s_record_one (self, at, tool, who))
            return -1;
    return 0;
}

//  --------------------------------------------------------------------------
//  Answering

#define S_COLUMNS "t.team, t.name, t.server, t.tool, t.digest, t.description, t.schema_json, t.truncated, " \
                  "t.first_seen, t.last_seen, t.requests, t.key_ids, t.models, " \
                  "(SELECT COUNT(*) FROM tools o WHERE o.team = t.team AND o.name = t.name)"
enum { C_TEAM, C_NAME, C_SERVER, C_TOOL, C_DIGEST, C_DESCRIPTION, C_SCHEMA, C_TRUNCATED, C_FIRST, C_LAST,
       C_REQUESTS, C_KEYS, C_MODELS, C_DEFINITIONS };

typedef struct {
    json_t *tools;
    json_t *changes;
    int limit;
    bool more;
} s_answer_t;

static json_t *
s_text (const sl_row_t *row, int col)
{
    sl_str_t s = sl_row_text (row, col);
    return s.ptr ? json_stringn_nocheck (s.ptr, s.len) : json_null ();
}

//  ",a,b," as ["a","b"].
static json_t *
s_list (const sl_row_t *row, int col)
{
    json_t *list = json_array ();
    sl_str_t s = sl_row_text (row, col);
    size_t from = 0;
    for (size_t i = 0; s.ptr && i < s.len; i++)
        if (s.ptr [i] == ',') {
            if (i > from)
                json_array_append_new (list, json_stringn_nocheck (s.ptr + from, i - from));
            from = i + 1;
        }
    return list;
}

//  The change a row belongs to (the last one, rows of a name coming
//  together), made when it is not there yet.
static json_t *
s_change (s_answer_t *a, json_t *team, json_t *name)
{
    size_t n = json_array_size (a->changes);
    json_t *last = n ? json_array_get (a->changes, n - 1) : NULL;
    if (last && json_equal (json_object_get (last, "team"), team) && json_equal (json_object_get (last, "name"), name))
        return last;
    json_t *change = json_pack ("{sOsOs[]}", "team", team, "name", name, "definitions");
    json_array_append_new (a->changes, change);
    return change;
}

static int
s_row (void *arg, const sl_row_t *row)
{
    s_answer_t *a = arg;
    if ((int) json_array_size (a->tools) == a->limit) {
        a->more = true;
        return 1;
    }
    sl_str_t schema = sl_row_text (row, C_SCHEMA);
    json_t *schema_value = schema.ptr ? json_loadb (schema.ptr, schema.len, JSON_DECODE_ANY, NULL) : json_null ();
    if (!schema_value)
        schema_value = s_text (row, C_SCHEMA);          //  cut by the store: as text
    json_t *t = json_object ();
    json_object_set_new (t, "team", s_text (row, C_TEAM));
    json_object_set_new (t, "name", s_text (row, C_NAME));
    json_object_set_new (t, "server", s_text (row, C_SERVER));
    json_object_set_new (t, "tool", s_text (row, C_TOOL));
    json_object_set_new (t, "digest", s_text (row, C_DIGEST));
    json_object_set_new (t, "description", s_text (row, C_DESCRIPTION));
    json_object_set_new (t, "schema", schema_value);
    json_object_set_new (t, "truncated", json_boolean (sl_row_int (row, C_TRUNCATED)));
    json_object_set_new (t, "first_seen", json_integer (sl_row_int (row, C_FIRST)));
    json_object_set_new (t, "last_seen", json_integer (sl_row_int (row, C_LAST)));
    json_object_set_new (t, "requests", json_integer (sl_row_int (row, C_REQUESTS)));
    json_object_set_new (t, "key_ids", s_list (row, C_KEYS));
    json_object_set_new (t, "models", s_list (row, C_MODELS));
    int64_t definitions = sl_row_int (row, C_DEFINITIONS);
    json_object_set_new (t, "definitions", json_integer (definitions));
    if (definitions > 1) {
        json_t *change = s_change (a, json_object_get (t, "team"), json_object_get (t, "name"));
        json_array_append_new (json_object_get (change, "definitions"),
                               json_pack ("{sOsOsO}", "digest", json_object_get (t, "digest"),
                                          "first_seen", json_object_get (t, "first_seen"),
                                          "last_seen", json_object_get (t, "last_seen")));
    }
    json_array_append_new (a->tools, t);
    return 0;
}

int
sl_inventory_query (sl_store_t *store, const sl_inventory_filter_t *f, sl_buf_t *out)
{
    sl_buf_t sql = { 0 };
    sl_val_t p [3];
    int count = 0;
    sl_buf_puts (&sql, "SELECT " S_COLUMNS " FROM tools t WHERE 1 = 1");
    const struct { const char *value; const char *column; } equal [] = {
        { f->team, "t.team" }, { f->name, "t.name" }, { f->server, "t.server" }
    };
    for (size_t i = 0; i < sizeof equal / sizeof equal [0]; i++)
        if (equal [i].value && *equal [i].value) {
            p [count++] = sl_val_text (equal [i].value);
            sl_buf_printf (&sql, " AND %s = $%d", equal [i].column, count);
        }
    if (f->changed)
        sl_buf_puts (&sql, " AND (SELECT COUNT(*) FROM tools o WHERE o.team = t.team AND o.name = t.name) > 1");
    int limit = f->limit > 0 ? f->limit : SL_INVENTORY_DEFAULT_LIMIT;
    if (limit > SL_INVENTORY_MAX_LIMIT)
        limit = SL_INVENTORY_MAX_LIMIT;
    //  The newest definition of a name first; names without a server last.
    sl_buf_printf (&sql, " ORDER BY t.team, CASE WHEN t.server IS NULL THEN 1 ELSE 0 END, t.server, t.name, "
                         "t.first_seen DESC, t.digest LIMIT %d", limit + 1);
    s_answer_t a = { json_array (), json_array (), limit, false };
    int rc = sl_store_query (store, sl_buf_cstr (&sql), p, count, s_row, &a);
    if (rc == 0) {
        json_t *answer = json_pack ("{sOsOsb}", "tools", a.tools, "changes", a.changes, "more", a.more);
        char *text = json_dumps (answer, JSON_COMPACT);
        sl_buf_puts (out, text);
        free (text);
        json_decref (answer);
    }
    json_decref (a.tools);
    json_decref (a.changes);
    sl_buf_free (&sql);
    return rc;
}
