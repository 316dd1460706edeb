/*  sl_tryit.c - a policy over a capture, with the replay library (see sl_tryit.h). */
#include "services/audit/console/sl_tryit.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/dialects/sl_dialect.h"
#include "common/policy/sl_policy.h"
#include "common/stages/sl_replay.h"

#define S_PREFIX_VERDICT "{\"verdict\":"
#define S_PREFIX_FINISH "{\"finish\":"
#define S_PREFIX_ERROR "{\"error\":"

static void
s_collect (void *arg, const char *data, size_t size)
{
    sl_buf_append ((sl_buf_t *) arg, data, size);
}

static void
s_error_answer (sl_buf_t *out, const char *why)
{
    sl_buf_puts (out, "{\"error\":");
    sl_json_put_str (out, why, strlen (why));
    sl_buf_putc (out, '}');
}

//  A string member of the request, or absent.
static sl_str_t
s_member (json_t *root, const char *key)
{
    json_t *v = json_object_get (root, key);
    if (!json_is_string (v))
        return SL_STR_NULL;
    return sl_str_n (json_string_value (v), json_string_length (v));
}

//  The lines of a blocks-form replay, sorted into the answer.
static void
s_sort_lines (sl_str_t lines, sl_buf_t *out)
{
    sl_buf_t verdicts = { 0 }, blocks = { 0 }, finish = { 0 }, error = { 0 };
    const char *p = lines.ptr, *end = lines.ptr + lines.len;
    while (p < end) {
        const char *nl = memchr (p, '\n', (size_t) (end - p));
        size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
        sl_str_t line = sl_str_n (p, n);
        size_t pv = strlen (S_PREFIX_VERDICT);
        if (sl_str_starts (line, S_PREFIX_VERDICT) && n > pv + 1) {
            sl_buf_puts (&verdicts, verdicts.len ? "," : "");
            sl_buf_append (&verdicts, p + pv, n - pv - 1);
        }
        else
        if (sl_str_starts (line, S_PREFIX_FINISH))
            sl_buf_append_str (&finish, line);
        else
        if (sl_str_starts (line, S_PREFIX_ERROR))
            sl_buf_append_str (&error, line);
        else
        if (n) {
            sl_buf_puts (&blocks, blocks.len ? "," : "");
            sl_buf_append_str (&blocks, line);
        }
        p += n + 1;
    }
    sl_buf_puts (out, "\"verdicts\":[");
    sl_buf_append_str (out, sl_buf_str (&verdicts));
    sl_buf_puts (out, "],\"blocks\":[");
    sl_buf_append_str (out, sl_buf_str (&blocks));
    sl_buf_puts (out, "],\"finish\":");
    sl_buf_puts (out, finish.len ? sl_buf_cstr (&finish) : "null");
    if (error.len) {
        //  {"error":"malformed input: ..."}: its value is the answer's error.
        sl_buf_puts (out, ",\"error\":");
        sl_buf_append (out, error.data + strlen (S_PREFIX_ERROR), error.len - strlen (S_PREFIX_ERROR) - 1);
    }
    sl_buf_free (&verdicts);
    sl_buf_free (&blocks);
    sl_buf_free (&finish);
    sl_buf_free (&error);
}

//  One replay of the capture; its output into out. NULL, or why not.
static const char *
s_replay (const sl_replay_opts_t *opts, sl_str_t capture, sl_buf_t *out)
{
    const char *why = NULL;
    sl_replay_t *replay = sl_replay_new (opts, s_collect, out, &why);
    if (!replay)
        return why ? why : "the replay could not start";
    if (sl_replay_feed (replay, capture.ptr, capture.len) == 0)
        sl_replay_finish (replay);
    sl_replay_destroy (&replay);
    return NULL;
}

int
sl_tryit_run (sl_str_t request, sl_buf_t *out)
{
    json_error_t jerr;
    json_t *root = json_loadb (request.ptr ? request.ptr : "", request.len, 0, &jerr);
    if (!json_is_object (root)) {
        json_decref (root);
        s_error_answer (out, "the request is not a JSON object");
        return -1;
    }
    sl_str_t capture = s_member (root, "capture");
    sl_str_t dialect_name = s_member (root, "dialect");
    sl_str_t policy_text = s_member (root, "policy");
    sl_str_t client_name = s_member (root, "client");
    char dialect_buf [32] = "", client_buf [32] = "";
    if (dialect_name.ptr && dialect_name.len < sizeof dialect_buf)
        memcpy (dialect_buf, dialect_name.ptr, dialect_name.len);
    if (client_name.ptr && client_name.len < sizeof client_buf)
        memcpy (client_buf, client_name.ptr, client_name.len);
    int dialect = sl_dialect_parse (dialect_name.ptr ? dialect_buf : "openai");
    int client = client_name.ptr && client_name.len ? sl_dialect_parse (client_buf) : dialect;
    int rc = 0;
    if (!capture.ptr || !capture.len) {
        s_error_answer (out, "no capture: paste an upstream stream, or pick a recorded one");
        rc = -1;
    }
    else
    if (capture.len > SL_TRYIT_MAX_CAPTURE) {
        s_error_answer (out, "the capture is larger than the console tries (8 MiB)");
        rc = -1;
    }
    else
    if (!dialect || !sl_replay_can_decode (dialect) || !client) {
        sl_buf_t why = { 0 };
        sl_buf_puts (&why, "unknown dialect: ");
        sl_dialect_names (", ", " or ", NULL, &why);
        s_error_answer (out, sl_buf_cstr (&why));
        sl_buf_free (&why);
        rc = -1;
    }
    if (rc) {
        json_decref (root);
        return rc;
    }
    sl_policy_t *policy = NULL;
    if (policy_text.ptr && policy_text.len) {
        char *error = NULL;
        policy = sl_policy_parse (policy_text.ptr, policy_text.len, "policy", &error);
        if (!policy) {
            sl_buf_puts (out, "{\"policy_error\":");
            sl_json_put_str (out, error ? error : "bad policy", error ? strlen (error) : 10);
            sl_buf_putc (out, '}');
            free (error);
            json_decref (root);
            return 0;
        }
    }
    sl_replay_opts_t opts = {
        .dialect = dialect,
        .policy = policy,
        .model = s_member (root, "model"),
        .tools = s_member (root, "tools"),
        .last_user = s_member (root, "last_user")
    };
    if (opts.tools.ptr && !sl_json_valid (opts.tools))
        opts.tools = SL_STR_NULL;
    sl_buf_t lines = { 0 }, bytes = { 0 };
    const char *why = s_replay (&opts, capture, &lines);
    opts.render = client;
    const char *why_render = why ? NULL : s_replay (&opts, capture, &bytes);
    sl_buf_puts (out, "{");
    if (why || why_render) {
        sl_buf_puts (out, "\"error\":");
        const char *w = why ? why : why_render;
        sl_json_put_str (out, w, strlen (w));
    }
    else {
        sl_buf_printf (out, "\"dialect\":\"%s\",\"client\":\"%s\",\"policy\":", sl_dialect_name (dialect),
                       sl_dialect_name (client));
        if (policy)
            sl_json_put_str (out, sl_policy_id (policy), strlen (sl_policy_id (policy)));
        else
            sl_buf_puts (out, "null");
        sl_buf_putc (out, ',');
        s_sort_lines (sl_buf_str (&lines), out);
        sl_buf_puts (out, ",\"client\":");
        sl_json_put_sl (out, sl_buf_str (&bytes));
    }
    sl_buf_putc (out, '}');
    sl_buf_free (&lines);
    sl_buf_free (&bytes);
    sl_policy_unref (&policy);
    json_decref (root);
    return 0;
}

//  --------------------------------------------------------------------------
//  A recorded stream, back into a capture

typedef struct {
    int64_t seq;
    bool verdict;                       //  a verdict (else a block)
    char *kind;                         //  block kind
    char *id;                           //  block id, or the verdict's call id
    char *name;                         //  tool
    char *content;                      //  text, or the verdict's arguments
    bool replaced;
} s_item_t;

typedef struct {
    s_item_t *items;
    int count;
    int cap;
    bool verdicts;                      //  reading verdicts (else blocks)
} s_items_t;

static char *
s_dup (sl_str_t s)
{
    return s.ptr ? sl_xstrndup (s.ptr, s.len) : NULL;
}

static int
s_item_row (void *arg, const sl_row_t *row)
{
    s_items_t *l = arg;
    if (l->count == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->items = sl_xrealloc (l->items, (size_t) l->cap * sizeof *l->items);
    }
    s_item_t *it = &l->items [l->count++];
    memset (it, 0, sizeof *it);
    it->seq = sl_row_int (row, 0);
    it->verdict = l->verdicts;
    it->kind = s_dup (sl_row_text (row, 1));
    it->id = s_dup (sl_row_text (row, 2));
    it->name = s_dup (sl_row_text (row, 3));
    it->content = s_dup (sl_row_text (row, 4));
    it->replaced = sl_row_int (row, 5) != 0;
    return 0;
}

static int
s_by_seq (const void *a, const void *b)
{
    const s_item_t *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

typedef struct {
    char *response_id, *model, *tools, *last_user, *finish, *error_code, *error_message, *policy;
    int64_t started_at, usage_in, usage_out, usage_total;
    bool found;
} s_head_t;

static int
s_head_row (void *arg, const sl_row_t *row)
{
    s_head_t *h = arg;
    h->found = true;
    h->response_id = s_dup (sl_row_text (row, 0));
    h->model = s_dup (sl_row_null (row, 1) ? sl_row_text (row, 2) : sl_row_text (row, 1));
    h->tools = s_dup (sl_row_text (row, 3));
    h->last_user = s_dup (sl_row_text (row, 4));
    h->finish = s_dup (sl_row_text (row, 5));
    h->error_code = s_dup (sl_row_text (row, 6));
    h->error_message = s_dup (sl_row_text (row, 7));
    h->started_at = sl_row_int (row, 8);
    h->usage_in = sl_row_null (row, 9) ? -1 : sl_row_int (row, 9);
    h->usage_out = sl_row_null (row, 10) ? -1 : sl_row_int (row, 10);
    h->usage_total = sl_row_null (row, 11) ? -1 : sl_row_int (row, 11);
    h->policy = s_dup (sl_row_text (row, 12));
    return 1;
}

//  The start of one chunk line, up to its choices.
static void
s_chunk_head (sl_buf_t *out, const s_head_t *h)
{
    sl_buf_puts (out, "{\"id\":");
    sl_json_put_str (out, h->response_id ? h->response_id : "chatcmpl-audit",
                     strlen (h->response_id ? h->response_id : "chatcmpl-audit"));
    sl_buf_puts (out, ",\"object\":\"chat.completion.chunk\",");
}

//  The start of one chunk line, up to the choice's delta object.
static void
s_chunk (sl_buf_t *out, const s_head_t *h)
{
    s_chunk_head (out, h);
    sl_buf_puts (out, "\"choices\":[{\"index\":0,\"delta\":{");
}

static void
s_text_chunk (sl_buf_t *out, const s_head_t *h, const char *key, const char *text)
{
    s_chunk (out, h);
    sl_buf_printf (out, "\"%s\":", key);
    sl_json_put_str (out, text, strlen (text));
    sl_buf_puts (out, "}}]}\n");
}

static const char *
s_openai_finish (const char *finish, int calls)
{
    if (!finish || strcmp (finish, "stop") == 0 || strcmp (finish, "pause") == 0)
        return calls ? "tool_calls" : "stop";
    if (strcmp (finish, "refusal") == 0)
        return "content_filter";
    if (strcmp (finish, "error") == 0)
        return NULL;
    return finish;                      //  length, tool_calls, content_filter: the same words
}

static void
s_write_capture (const s_head_t *h, s_items_t *items, sl_buf_t *out)
{
    s_chunk (out, h);
    sl_buf_printf (out, "\"role\":\"assistant\",\"content\":\"\"}}],\"created\":%lld,\"model\":",
                   (long long) (h->started_at / 1000));
    sl_json_put_str (out, h->model ? h->model : "unknown", strlen (h->model ? h->model : "unknown"));
    sl_buf_puts (out, "}\n");
    int calls = 0;
    for (int i = 0; i < items->count; i++) {
        s_item_t *it = &items->items [i];
        if (it->verdict) {
            //  The call as the model sent it: what the judge saw.
            s_chunk (out, h);
            sl_buf_printf (out, "\"tool_calls\":[{\"index\":%d,\"id\":", calls++);
            sl_json_put_str (out, it->id ? it->id : "call", strlen (it->id ? it->id : "call"));
            sl_buf_puts (out, ",\"type\":\"function\",\"function\":{\"name\":");
            sl_json_put_str (out, it->name ? it->name : "", strlen (it->name ? it->name : ""));
            sl_buf_puts (out, ",\"arguments\":");
            sl_json_put_str (out, it->content ? it->content : "{}", strlen (it->content ? it->content : "{}"));
            sl_buf_puts (out, "}}]}}]}\n");
            continue;
        }
        if (it->replaced || !it->kind || !it->content)
            continue;                   //  the judge's notice, or nothing to say
        if (strcmp (it->kind, "text") == 0)
            s_text_chunk (out, h, "content", it->content);
        else
        if (strcmp (it->kind, "thinking") == 0)
            s_text_chunk (out, h, "reasoning_content", it->content);
        else
        if (strcmp (it->kind, "refusal") == 0)
            s_text_chunk (out, h, "refusal", it->content);
        else
        if (strcmp (it->kind, "tool_call") == 0) {
            //  Released as judged: the verdict before it gave the original.
            bool judged = false;
            for (int j = 0; j < i && !judged; j++)
                judged = items->items [j].verdict && it->id && items->items [j].id
                      && strcmp (items->items [j].id, it->id) == 0;
            if (judged)
                continue;
            s_chunk (out, h);
            sl_buf_printf (out, "\"tool_calls\":[{\"index\":%d,\"id\":", calls++);
            sl_json_put_str (out, it->id ? it->id : "call", strlen (it->id ? it->id : "call"));
            sl_buf_puts (out, ",\"type\":\"function\",\"function\":{\"name\":");
            sl_json_put_str (out, it->name ? it->name : "", strlen (it->name ? it->name : ""));
            sl_buf_puts (out, ",\"arguments\":");
            sl_json_put_str (out, it->content, strlen (it->content));
            sl_buf_puts (out, "}}]}}]}\n");
        }
    }
    bool failed = h->error_code && strcmp (h->error_code, "policy_violation") != 0;
    const char *finish = s_openai_finish (h->finish, calls);
    if (failed) {
        sl_buf_puts (out, "{\"error\":{\"type\":");
        sl_json_put_str (out, h->error_code, strlen (h->error_code));
        sl_buf_puts (out, ",\"message\":");
        const char *m = h->error_message ? h->error_message : "";
        sl_json_put_str (out, m, strlen (m));
        sl_buf_puts (out, "}}\n");
        return;
    }
    if (finish) {
        s_chunk (out, h);
        sl_buf_printf (out, "},\"finish_reason\":\"%s\"}]}\n", finish);
        //  s_chunk opened the delta object; the line above closed it.
    }
    if (h->usage_in >= 0 || h->usage_out >= 0) {
        s_chunk_head (out, h);
        sl_buf_puts (out, "\"choices\":[],\"usage\":{");
        sl_buf_printf (out, "\"prompt_tokens\":%lld,\"completion_tokens\":%lld,\"total_tokens\":%lld}}\n",
                       (long long) (h->usage_in > 0 ? h->usage_in : 0),
                       (long long) (h->usage_out > 0 ? h->usage_out : 0),
                       (long long) (h->usage_total > 0 ? h->usage_total
                                    : (h->usage_in > 0 ? h->usage_in : 0) + (h->usage_out > 0 ? h->usage_out : 0)));
    }
}

static void
s_head_free (s_head_t *h)
{
    free (h->response_id);
    free (h->model);
    free (h->tools);
    free (h->last_user);
    free (h->finish);
    free (h->error_code);
    free (h->error_message);
    free (h->policy);
}

static void
s_put_or_null (sl_buf_t *out, const char *s)
{
    if (s)
        sl_json_put_str (out, s, strlen (s));
    else
        sl_buf_puts (out, "null");
}

int
sl_tryit_capture (sl_store_t *store, const char *sid, sl_buf_t *out)
{
    sl_val_t p [] = { sl_val_text (sid) };
    s_head_t head = { 0 };
    s_items_t items = { 0 };
    int rc = -1;
    if (sl_store_query (store, "SELECT response_id, model, response_model, tools_json, last_user, finish, "
                               "error_code, error_message, started_at, usage_in, usage_out, usage_total, policy "
                               "FROM streams WHERE sid = $1", p, 1, s_head_row, &head))
        goto done;
    if (!head.found) {
        rc = 1;
        goto done;
    }
    items.verdicts = false;
    if (sl_store_query (store, "SELECT seq, kind, id, name, content, replaced FROM blocks WHERE sid = $1",
                        p, 1, s_item_row, &items))
        goto done;
    items.verdicts = true;
    if (sl_store_query (store, "SELECT seq, NULL, call_id, tool, arguments, 0 FROM verdicts "
                               "WHERE sid = $1 AND side = 'response'", p, 1, s_item_row, &items))
        goto done;
    qsort (items.items, (size_t) items.count, sizeof *items.items, s_by_seq);
    sl_buf_t capture = { 0 };
    s_write_capture (&head, &items, &capture);
    sl_buf_puts (out, "{\"dialect\":\"openai\",\"capture\":");
    sl_json_put_sl (out, sl_buf_str (&capture));
    sl_buf_puts (out, ",\"model\":");
    s_put_or_null (out, head.model);
    sl_buf_puts (out, ",\"tools\":");
    s_put_or_null (out, head.tools);
    sl_buf_puts (out, ",\"last_user\":");
    s_put_or_null (out, head.last_user);
    sl_buf_puts (out, ",\"policy\":");
    s_put_or_null (out, head.policy);
    sl_buf_putc (out, '}');
    sl_buf_free (&capture);
    rc = 0;
done:
    for (int i = 0; i < items.count; i++) {
        free (items.items [i].kind);
        free (items.items [i].id);
        free (items.items [i].name);
        free (items.items [i].content);
    }
    free (items.items);
    s_head_free (&head);
    return rc;
}
