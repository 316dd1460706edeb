/*  sluice-tap - watch what flows through sluice, live.

    Subscribes to the PUB socket of one or more emitters (--connect, a
    comma-separated list) and prints every event as it happens: the
    request summary at a stream's start (who is calling: the key's id,
    team and user), blocks, verdicts (with team and user), the finish
    with its usage (or the emitter's estimate, marked estimated), errors,
    the end. Human-readable lines by default, one JSON object per line
    with --json yes.

    Filters (all must match):
      --stream HEX     one stream (its id or a prefix of it)
      --type LIST      event types: start, block, verdict, error, end
      --tool NAME      events about calls to this tool (the call's blocks
                       and its verdict)
      --action LIST    verdicts with these actions (allow, block, ...)

    The emitters publish each event under the topic "<type>.<sid-hex>";
    with --type only those topics are subscribed to. What is published
    never holds a credential: the ingest keeps the client's key to itself
    and the request headers in a start never include credential headers.

    A tap holds a key of its own (--key NAME in --keys DIR, made by
    sluice-keygen): the emitter lets it subscribe only with a tap key. A
    key with access "full" reads the emitter's PUB socket (5556); a
    metadata-only key reads the metadata socket (5557), where events come
    without text, arguments or prompt; it cannot subscribe to the other.
    Without --connect, the tap connects to the local emitter's socket for
    its key's access. A name in --connect stands for every address it
    resolves to (docker compose --scale emitter=2 gives one name two),
    resolved again every 2 s as the stages do (sl_resolve): the tap
    follows emitters that come and go, and one started before any
    emitter answers to the name waits for it, saying so, rather than
    exit.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/bus/sl_bus.h"
#include "common/bus/sl_resolve.h"
#include "common/dialects/sl_dialect.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/identity/sl_teamlabel.h"
#include "common/service/sl_service.h"
#include "common/base/sl_sidmap.h"
#include "proto/sl_msg.h"

#define TAP_MAX_BLOCKS 4096             //  tool names remembered per stream
#define TAP_MAX_EMITTERS 64             //  emitter endpoints connected at once

//  Per stream: the tool name of each block index, so a --tool filter can
//  place the deltas of a call (they carry no name).
typedef struct {
    char **names;
    int count;
} s_stream_t;

typedef struct {
    zsock_t *sub;
    sl_codec_t *codec;
    sl_sidmap_t *streams;
    bool json;
    const char *stream;                 //  hex prefix, "" for all
    const char *types;                  //  comma list, "" for all
    const char *tool;                   //  tool name, "" for all
    const char *actions;                //  comma list, "" for all
    sl_buf_t line;
    const char *connect;                //  --connect, names re-resolved
    char endpoints [TAP_MAX_EMITTERS][SL_RESOLVE_ENDPOINT_MAX];
    size_t connected;                   //  endpoints the SUB socket is connected to
    bool waiting;                       //  said that no emitter resolved yet
} s_app_t;

static bool
s_in_list (const char *list, const char *word)
{
    if (!*list)
        return true;
    size_t n = strlen (word);
    for (const char *p = list; *p;) {
        const char *comma = strchr (p, ',');
        size_t len = comma ? (size_t) (comma - p) : strlen (p);
        if (len == n && strncmp (p, word, n) == 0)
            return true;
        p += len + (comma ? 1 : 0);
    }
    return false;
}

static void
s_stream_free (s_stream_t *s)
{
    for (int i = 0; i < s->count; i++)
        free (s->names [i]);
    free (s->names);
    free (s);
}

//  Remember tool names by block index; return the name of m's block.
static const char *
s_track (s_app_t *app, const sl_msg_t *m)
{
    s_stream_t *s = sl_sidmap_get (app->streams, m->sid);
    if (m->type == SL_MSG_START && !s) {
        s = sl_xcalloc (1, sizeof *s);
        sl_sidmap_put (app->streams, m->sid, s);
    }
    if (!s)
        return NULL;
    if (m->type == SL_MSG_BLOCK && m->kind == SL_B_START && m->index >= 0 && m->index < TAP_MAX_BLOCKS
    &&  m->name.ptr) {
        if (m->index >= s->count) {
            s->names = sl_xrealloc (s->names, (size_t) (m->index + 1) * sizeof (char *));
            memset (s->names + s->count, 0, (size_t) (m->index + 1 - s->count) * sizeof (char *));
            s->count = m->index + 1;
        }
        free (s->names [m->index]);
        s->names [m->index] = sl_xstrndup (m->name.ptr, m->name.len);
    }
    if (m->type == SL_MSG_BLOCK && m->index >= 0 && m->index < s->count)
        return s->names [m->index];
    return NULL;
}

static void
s_forget (s_app_t *app, const sl_msg_t *m)
{
    if (m->type != SL_MSG_END)
        return;
    s_stream_t *s = sl_sidmap_remove (app->streams, m->sid);
    if (s)
        s_stream_free (s);
}

static bool
s_wanted (s_app_t *app, const sl_msg_t *m, const char *hex, const char *block_tool)
{
    if (strncmp (hex, app->stream, strlen (app->stream)) != 0)
        return false;
    if (!s_in_list (app->types, sl_msg_type_name (m->type)))
        return false;
    if (*app->actions && (m->type != SL_MSG_VERDICT || !s_in_list (app->actions, sl_action_name (m->action))))
        return false;
    if (*app->tool) {
        const char *name = m->type == SL_MSG_VERDICT ? NULL : block_tool;
        char buf [256];
        if (m->type == SL_MSG_VERDICT && m->name.ptr && m->name.len < sizeof buf) {
            memcpy (buf, m->name.ptr, m->name.len);
            buf [m->name.len] = 0;
            name = buf;
        }
        if (!name || strcmp (name, app->tool) != 0)
            return false;
    }
    return true;
}

static void
s_field_str (sl_buf_t *out, const char *key, sl_str_t value)
{
    if (!value.ptr)
        return;
    sl_buf_printf (out, ",\"%s\":", key);
    sl_json_put_sl (out, value);
}

static void
s_usage_json (sl_buf_t *out, const sl_usage_t *u)
{
    sl_buf_puts (out, ",\"usage\":{");
    const char *names [] = { "input", "output", "total", "cache_read", "cache_write", "reasoning" };
    const int64_t *v = &u->input;
    bool first = true;
    for (int i = 0; i < 6; i++)
        if (v [i] >= 0) {
            sl_buf_printf (out, "%s\"%s\":%lld", first ? "" : ",", names [i], (long long) v [i]);
            first = false;
        }
    sl_buf_putc (out, '}');
}

static void
s_print_json (s_app_t *app, const sl_msg_t *m, const char *hex)
{
    sl_buf_t *out = &app->line;
    struct timespec ts;
    clock_gettime (CLOCK_REALTIME, &ts);
    sl_buf_printf (out, "{\"ts\":%lld.%03ld,\"sid\":\"%s\",\"type\":\"%s\",\"seq\":%llu",
                   (long long) ts.tv_sec, ts.tv_nsec / 1000000, hex,
                   sl_msg_type_name (m->type), (unsigned long long) m->seq);
    if (m->type == SL_MSG_BLOCK) {
        sl_buf_printf (out, ",\"event\":\"%s\"", sl_block_event_name (m->kind));
        if (m->block)
            sl_buf_printf (out, ",\"kind\":\"%s\"", sl_block_kind_name (m->block));
        if (m->finish)
            sl_buf_printf (out, ",\"finish\":\"%s\"", sl_finish_name (m->finish));
        s_field_str (out, "finish_raw", m->finish_raw);
        if (m->flags & SL_F_REPLACED)
            sl_buf_puts (out, ",\"replaced\":true");
        if ((m->kind == SL_B_FINISH || m->kind == SL_B_MESSAGE) && m->has_usage) {
            s_usage_json (out, &m->usage);
            if (m->flags & SL_F_ESTIMATED)
                sl_buf_puts (out, ",\"usage_estimated\":true");
        }
    }
    //  Who is calling: the key's id (never the key), team and user.
    if (m->type == SL_MSG_START || m->type == SL_MSG_APPROVAL)
        s_field_str (out, "key_id", m->key_id);
    if (m->type == SL_MSG_START || m->type == SL_MSG_VERDICT || m->type == SL_MSG_APPROVAL) {
        s_field_str (out, "team", m->team);
        s_field_str (out, "user", m->user);
    }
    if (m->type == SL_MSG_START) {
        s_field_str (out, "policy_file", m->policy_name);
        if (m->request_bytes)
            sl_buf_printf (out, ",\"request_bytes\":%llu", (unsigned long long) m->request_bytes);
    }
    if (m->index >= 0)
        sl_buf_printf (out, ",\"index\":%d", m->index);
    s_field_str (out, "model", m->model);
    s_field_str (out, "id", m->id);
    s_field_str (out, "name", m->name);
    s_field_str (out, "text", m->text);
    if (m->type == SL_MSG_VERDICT) {
        sl_buf_printf (out, ",\"action\":\"%s\",\"check\":\"%s\",\"latency_us\":%u",
                       sl_action_name (m->action), sl_check_name (m->check), m->latency_us);
        s_field_str (out, "rule", m->rule);
        s_field_str (out, "reason", m->reason);
        s_field_str (out, "judge_model", m->judge_model);
        s_field_str (out, "part", m->part);
        s_field_str (out, "approver", m->approver);
        if (m->mode == SL_MODE_SHADOW)  //  a would-be verdict: nothing was done
            sl_buf_printf (out, ",\"mode\":\"%s\"", sl_mode_name (m->mode));
    }
    if (m->type == SL_MSG_APPROVAL) {
        //  A call waiting for a person (its state in "code"), and its stream.
        s_field_str (out, "stream", m->stream);
        s_field_str (out, "rule", m->rule);
        s_field_str (out, "digest", m->digest);
        s_field_str (out, "approver", m->approver);
        s_field_str (out, "comment", m->reason);
        sl_buf_printf (out, ",\"expires_ms\":%lld", (long long) m->expires);
    }
    if (m->type == SL_MSG_START) {
        sl_buf_printf (out, ",\"client\":\"%s\",\"upstream\":\"%s\",\"stream\":%s",
                       sl_dialect_name (m->client_dialect), sl_dialect_name (m->upstream_dialect),
                       (m->flags & SL_F_STREAM) ? "true" : "false");
        s_field_str (out, "provider", m->provider);
        if (m->tools.len && sl_json_valid (m->tools)) {
            sl_buf_puts (out, ",\"tools\":");
            sl_json_put_raw (out, sl_json_trim (m->tools));
        }
        s_field_str (out, "last_user", m->last_user);
    }
    s_field_str (out, "code", m->code);
    s_field_str (out, "message", m->message);
    if (m->status)
        sl_buf_printf (out, ",\"status\":%d", m->status);
    sl_buf_puts (out, "}\n");
}

//  Who is calling, on a start (key id, team, user) or a verdict (team, user).
static void
s_identity_text (sl_buf_t *out, const sl_msg_t *m)
{
    //  A token's claims may hold anything: letters, digits, '-', '_'
    //  and '.' reach a terminal, the rest as '_' (the JSON output keeps
    //  them as they are, escaped).
    sl_str_t who [] = { m->type != SL_MSG_VERDICT ? m->key_id : SL_STR_NULL, m->team, m->user };
    const char *names [] = { "key", "team", "user" };
    for (size_t i = 0; i < sizeof who / sizeof who [0]; i++) {
        char safe [SL_TEAMLABEL_TEXT];
        sl_label_safe (who [i].ptr, who [i].len, safe, sizeof safe);
        if (*safe)
            sl_buf_printf (out, " %s=%s", names [i], safe);
    }
}

//  Tool names of a start's tools JSON, comma-separated.
static void
s_tool_names (sl_buf_t *out, sl_str_t tools)
{
    sl_json_iter_t it;
    sl_str_t tool, name;
    if (sl_json_array (&it, tools))
        return;
    bool first = true;
    while (sl_json_next_elem (&it, &tool) == 1)
        if (sl_json_find (tool, "name", &name) == 1 && sl_json_type (name) == SL_JSON_STRING) {
            sl_buf_puts (out, first ? " tools=" : ",");
            sl_json_unescape (name, out);
            first = false;
        }
}

static void
s_print_text (s_app_t *app, const sl_msg_t *m, const char *hex)
{
    sl_buf_t *out = &app->line;
    struct timespec ts;
    clock_gettime (CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r (&ts.tv_sec, &tm);
    char when [16];
    strftime (when, sizeof when, "%H:%M:%S", &tm);
    sl_buf_printf (out, "%s.%03ld %.8s %-7s", when, ts.tv_nsec / 1000000, hex, sl_msg_type_name (m->type));
    switch (m->type) {
        case SL_MSG_START:
            sl_buf_printf (out, " model=%.*s client=%s upstream=%s", (int) m->model.len,
                           m->model.ptr ? m->model.ptr : "", sl_dialect_name (m->client_dialect),
                           sl_dialect_name (m->upstream_dialect));
            s_identity_text (out, m);
            s_tool_names (out, m->tools);
            break;
        case SL_MSG_BLOCK:
            sl_buf_printf (out, " %s", sl_block_event_name (m->kind));
            if (m->index >= 0)
                sl_buf_printf (out, " #%d", m->index);
            if (m->block)
                sl_buf_printf (out, " %s", sl_block_kind_name (m->block));
            if (m->flags & SL_F_REPLACED)
                sl_buf_puts (out, " (written by the judge)");
            if (m->name.ptr)
                sl_buf_printf (out, " %.*s", (int) m->name.len, m->name.ptr);
            if (m->kind == SL_B_FINISH)
                sl_buf_printf (out, " %s", sl_finish_name (m->finish));
            if ((m->kind == SL_B_FINISH || m->kind == SL_B_MESSAGE) && m->has_usage)
                sl_buf_printf (out, " tokens in=%lld out=%lld%s", (long long) m->usage.input,
                               (long long) m->usage.output, (m->flags & SL_F_ESTIMATED) ? " (estimated)" : "");
            if ((m->kind == SL_B_END || m->kind == SL_B_DELTA) && m->text.ptr) {
                sl_buf_puts (out, " ");
                sl_json_put_sl (out, m->text);
            }
            break;
        case SL_MSG_VERDICT:
            if (m->part.ptr)            //  about the request: which part
                sl_buf_printf (out, " request %.*s %.*s -> %s (%s", (int) m->part.len, m->part.ptr,
                               (int) m->name.len, m->name.ptr ? m->name.ptr : "", sl_action_name (m->action),
                               sl_check_name (m->check));
            else
                sl_buf_printf (out, " #%d %.*s %s %s (%s", m->index, (int) m->name.len,
                               m->name.ptr ? m->name.ptr : "", m->mode == SL_MODE_SHADOW ? "=> would" : "->",
                               sl_action_name (m->action), sl_check_name (m->check));
            if (m->rule.ptr)
                sl_buf_printf (out, ", rule %.*s", (int) m->rule.len, m->rule.ptr);
            sl_buf_printf (out, ", %u us%s)", m->latency_us, m->mode == SL_MODE_SHADOW ? ", mode=shadow" : "");
            s_identity_text (out, m);
            if (m->reason.ptr && m->reason.len)
                sl_buf_printf (out, " %.*s", (int) m->reason.len, m->reason.ptr);
            break;
        case SL_MSG_APPROVAL:
            sl_buf_printf (out, " %.*s stream %.*s #%d %.*s (rule %.*s)", (int) m->code.len,
                           m->code.ptr ? m->code.ptr : "", (int) (m->stream.len < 8 ? m->stream.len : 8),
                           m->stream.ptr ? m->stream.ptr : "", m->index,
                           (int) m->name.len, m->name.ptr ? m->name.ptr : "", (int) m->rule.len,
                           m->rule.ptr ? m->rule.ptr : "");
            s_identity_text (out, m);
            if (m->approver.ptr)
                sl_buf_printf (out, " by %.*s", (int) m->approver.len, m->approver.ptr);
            if (m->reason.ptr && m->reason.len)
                sl_buf_printf (out, ": %.*s", (int) m->reason.len, m->reason.ptr);
            break;
        case SL_MSG_ERROR:
            sl_buf_printf (out, " %.*s: %.*s", (int) m->code.len, m->code.ptr ? m->code.ptr : "",
                           (int) m->message.len, m->message.ptr ? m->message.ptr : "");
            break;
        default:
            break;
    }
    sl_buf_putc (out, '\n');
}

static int
s_on_event (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    (void) reader;
    s_app_t *app = arg;
    zmsg_t *msg = zmsg_recv (app->sub);
    if (!msg)
        return 0;
    zframe_t *topic = zmsg_first (msg);
    zframe_t *body = zmsg_next (msg);
    sl_msg_t m;
    size_t offset = 0;
    if (topic && body
    &&  sl_codec_decode (app->codec, zframe_data (body), zframe_size (body), &offset, &m) == 0) {
        char hex [SL_SID_HEX_SIZE];
        sl_sid_hex (m.sid, hex);
        const char *block_tool = s_track (app, &m);
        if (s_wanted (app, &m, hex, block_tool)) {
            sl_buf_reset (&app->line);
            if (app->json)
                s_print_json (app, &m, hex);
            else
                s_print_text (app, &m, hex);
            fwrite (app->line.data, 1, app->line.len, stdout);
            fflush (stdout);
        }
        s_forget (app, &m);
    }
    zmsg_destroy (&msg);
    return 0;
}

//  Subscribe to the wanted types only; everything when none is named or
//  when a tool filter needs the blocks.
static void
s_subscribe (s_app_t *app)
{
    if (!*app->types || *app->tool) {
        zsock_set_subscribe (app->sub, "");
        return;
    }
    for (const char *p = app->types; *p;) {
        const char *comma = strchr (p, ',');
        size_t len = comma ? (size_t) (comma - p) : strlen (p);
        char topic [64];
        if (len && len < sizeof topic - 1) {
            snprintf (topic, sizeof topic, "%.*s.", (int) len, p);
            zsock_set_subscribe (app->sub, topic);
        }
        p += len + (comma ? 1 : 0);
    }
}

//  The SUB socket's connections, as sl_resolve_sync keeps them in step
//  with --connect.
static size_t
s_conn_count (void *arg)
{
    return ((s_app_t *) arg)->connected;
}

static const char *
s_conn_endpoint (void *arg, size_t index)
{
    return ((s_app_t *) arg)->endpoints [index];
}

static void
s_conn_add (void *arg, const char *endpoint)
{
    s_app_t *app = arg;
    if (zsock_connect (app->sub, "%s", endpoint) != 0) {
        sl_log_error ("connect_failed", "cannot connect to %s", endpoint);
        return;
    }
    snprintf (app->endpoints [app->connected++], SL_RESOLVE_ENDPOINT_MAX, "%s", endpoint);
    sl_log_info ("emitter_added", "endpoint=%s", endpoint);
}

static void
s_conn_remove (void *arg, size_t index)
{
    s_app_t *app = arg;
    zsock_disconnect (app->sub, "%s", app->endpoints [index]);
    sl_log_info ("emitter_removed", "endpoint=%s", app->endpoints [index]);
    app->connected--;
    if (index != app->connected)
        memcpy (app->endpoints [index], app->endpoints [app->connected], SL_RESOLVE_ENDPOINT_MAX);
}

static const sl_resolve_set_t s_emitter_set = { s_conn_count, s_conn_endpoint, s_conn_add, s_conn_remove };

//  0, or -1 when --connect is malformed. No emitter resolved yet is said
//  once, and waited for.
static int
s_resolve (s_app_t *app)
{
    if (sl_resolve_sync (app->connect, TAP_MAX_EMITTERS, &s_emitter_set, app))
        return -1;
    if (app->connected == 0 && !app->waiting) {
        const char *why = NULL;
        char probe [1][SL_RESOLVE_ENDPOINT_MAX];
        sl_resolve_list (app->connect, probe, 1, &why);
        sl_log_warn ("emitters_waiting", "no emitter at %s yet (%s): trying again every %d ms", app->connect,
                     why ? why : "nothing resolved", SL_RESOLVE_MS);
    }
    app->waiting = app->connected == 0;
    return 0;
}

static int
s_on_resolve (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_resolve (arg);
    return 0;
}

int
main (int argc, char **argv)
{
    const char *connect = "";
    const char *key = "tap";
    sl_bus_opts_t bus = SL_BUS_OPTS_INIT;
    const char *json = "no";
    const char *stream = "";
    const char *types = "";
    const char *tool = "";
    const char *actions = "";
    sl_opt_t opts [] = {
        { "connect", NULL, &connect, "emitter PUB endpoints, comma-separated (default: the local "
          "emitter's, 5556 for a full key, 5557 for a metadata-only one)" },
        { "key", NULL, &key, "this tap's key in --keys (tap: everything; tap-meta: metadata only)" },
        SL_BUS_OPT_KEYS (bus),
        SL_BUS_OPT_AUTH (bus),
        { "json", NULL, &json, "yes: one JSON object per line" },
        { "stream", NULL, &stream, "only this stream (hex id or a prefix of it)" },
        { "type", NULL, &types, "only these event types, comma-separated (start, block, verdict, error, end)" },
        { "tool", NULL, &tool, "only events about calls to this tool (its blocks and verdicts)" },
        { "action", NULL, &actions, "only verdicts with these actions, comma-separated (allow, block, ...)" },
        SL_OPT_END
    };
    int code;
    sl_service_t *svc = sl_service_new ("tap", opts, "off", argc, argv, &code);
    if (!svc)
        return code;
    if (sl_service_start_bus (svc, &bus, key)) {
        sl_service_destroy (&svc);
        return 2;
    }
    if (!*connect)
        connect = sl_bus_access (sl_service_bus (svc)) == SL_ACCESS_FULL ? "tcp://127.0.0.1:5556"
                                                                        : "tcp://127.0.0.1:5557";
    s_app_t app = { .json = strcmp (json, "yes") == 0, .stream = stream, .types = types,
                    .tool = tool, .actions = actions };
    app.codec = sl_codec_new ();
    app.streams = sl_sidmap_new ();
    app.sub = zsock_new (ZMQ_SUB);
    s_subscribe (&app);
    int rc = 0;
    sl_bus_t *tap_bus = sl_service_bus (svc);
    if (sl_bus_client (tap_bus, app.sub, "emitter"))
        rc = 2;
    else {
        //  An emitter that refuses this tap's key says so only in the handshake.
        sl_bus_watch_client (tap_bus, app.sub, "emitter");
        app.connect = connect;
        if (s_resolve (&app)) {
            sl_log_error ("connect_failed", "cannot use --connect %s", connect);
            rc = 2;
        }
        else {
            sl_log_info ("connected", "emitters=%s key=%s access=%s", connect, key,
                         sl_access_name (sl_bus_access (tap_bus)));
            zloop_reader (sl_service_loop (svc), app.sub, s_on_event, &app);
            zloop_timer (sl_service_loop (svc), SL_RESOLVE_MS, 0, s_on_resolve, &app);
            rc = sl_service_run (svc);
        }
    }
    zsock_destroy (&app.sub);
    size_t count;
    void **left = sl_sidmap_values (app.streams, &count);
    for (size_t i = 0; i < count; i++)
        s_stream_free (left [i]);
    free (left);
    sl_sidmap_destroy (&app.streams);
    sl_codec_destroy (&app.codec);
    sl_buf_free (&app.line);
    sl_service_destroy (&svc);
    return rc;
}
