/*  sluice-tap - watch what flows through sluice, live.

    Subscribes to the PUB socket of one or more emitters and prints every
    event: stream starts, blocks, verdicts, errors, ends. Human-readable
    lines by default, one JSON object per line with --json. Filters: a
    stream id (--stream, hex, a prefix is enough) and event types (--type,
    comma-separated: start, block, verdict, error, end).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../common/sl_buf.h"
#include "../../common/sl_json.h"
#include "../../common/sl_log.h"
#include "../../common/sl_service.h"
#include "../../proto/sl_msg.h"

typedef struct {
    zsock_t *sub;
    sl_codec_t *codec;
    bool json;
    const char *stream;                 //  hex prefix, "" for all
    const char *types;                  //  comma list, "" for all
    sl_buf_t line;
} s_app_t;

static bool
s_type_wanted (s_app_t *app, const char *type)
{
    if (!*app->types)
        return true;
    size_t n = strlen (type);
    for (const char *p = app->types; *p;) {
        const char *comma = strchr (p, ',');
        size_t len = comma ? (size_t) (comma - p) : strlen (p);
        if (len == n && strncmp (p, type, n) == 0)
            return true;
        p += len + (comma ? 1 : 0);
    }
    return false;
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
    }
    if (m->type == SL_MSG_START)
        sl_buf_printf (out, ",\"client\":\"%s\",\"upstream\":\"%s\"",
                       sl_dialect_name (m->client_dialect), sl_dialect_name (m->upstream_dialect));
    s_field_str (out, "code", m->code);
    s_field_str (out, "message", m->message);
    if (m->status)
        sl_buf_printf (out, ",\"status\":%d", m->status);
    sl_buf_puts (out, "}\n");
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
            break;
        case SL_MSG_BLOCK:
            sl_buf_printf (out, " %s", sl_block_event_name (m->kind));
            if (m->index >= 0)
                sl_buf_printf (out, " #%d", m->index);
            if (m->block)
                sl_buf_printf (out, " %s", sl_block_kind_name (m->block));
            if (m->name.ptr)
                sl_buf_printf (out, " %.*s", (int) m->name.len, m->name.ptr);
            if (m->kind == SL_B_FINISH)
                sl_buf_printf (out, " %s", sl_finish_name (m->finish));
            if (m->kind == SL_B_END && m->text.ptr) {
                sl_buf_puts (out, " ");
                sl_json_put_sl (out, m->text);
            }
            break;
        case SL_MSG_VERDICT:
            sl_buf_printf (out, " #%d %.*s -> %s (%s", m->index, (int) m->name.len,
                           m->name.ptr ? m->name.ptr : "", sl_action_name (m->action),
                           sl_check_name (m->check));
            if (m->rule.ptr)
                sl_buf_printf (out, ", rule %.*s", (int) m->rule.len, m->rule.ptr);
            sl_buf_printf (out, ", %u us)", m->latency_us);
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
        if (strncmp (hex, app->stream, strlen (app->stream)) == 0
        &&  s_type_wanted (app, sl_msg_type_name (m.type))) {
            sl_buf_reset (&app->line);
            if (app->json)
                s_print_json (app, &m, hex);
            else
                s_print_text (app, &m, hex);
            fwrite (app->line.data, 1, app->line.len, stdout);
            fflush (stdout);
        }
    }
    zmsg_destroy (&msg);
    return 0;
}

int
main (int argc, char **argv)
{
    const char *connect = "tcp://127.0.0.1:5556";
    const char *json = "no";
    const char *stream = "";
    const char *types = "";
    sl_opt_t opts [] = {
        { "connect", NULL, &connect, "emitter PUB endpoints, comma-separated" },
        { "json", NULL, &json, "yes: one JSON object per line" },
        { "stream", NULL, &stream, "only this stream (hex id or a prefix of it)" },
        { "type", NULL, &types, "only these event types, comma-separated" },
        SL_OPT_END
    };
    int code;
    sl_service_t *svc = sl_service_new ("tap", opts, "off", argc, argv, &code);
    if (!svc)
        return code;
    s_app_t app = { .json = strcmp (json, "yes") == 0, .stream = stream, .types = types };
    app.codec = sl_codec_new ();
    app.sub = zsock_new (ZMQ_SUB);
    zsock_set_subscribe (app.sub, "");
    int rc = 0;
    if (zsock_attach (app.sub, connect, false) != 0) {
        sl_log_error ("connect_failed", "cannot connect to %s", connect);
        rc = 2;
    }
    else {
        zloop_reader (sl_service_loop (svc), app.sub, s_on_event, &app);
        rc = sl_service_run (svc);
    }
    zsock_destroy (&app.sub);
    sl_codec_destroy (&app.codec);
    sl_buf_free (&app.line);
    sl_service_destroy (&svc);
    return rc;
}
