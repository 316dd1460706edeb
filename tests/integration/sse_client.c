/*  sse_client.c - an independent reading of an OpenAI chat stream (jansson),
    so integration tests do not check sluice with sluice's own decoder. */
#include "tests/integration/sse_client.h"

#include <jansson.h>
#include <string.h>

static void
s_chunk (chat_stream_t *s, json_t *chunk)
{
    json_t *error = json_object_get (chunk, "error");
    if (error) {
        s->errors++;
        json_t *type = json_object_get (error, "type");
        if (json_is_string (type))
            sl_buf_puts (&s->error_type, json_string_value (type));
        return;
    }
    if (json_object_get (chunk, "usage") && !json_is_null (json_object_get (chunk, "usage")))
        s->usage = true;
    size_t i;
    json_t *choice;
    json_array_foreach (json_object_get (chunk, "choices"), i, choice) {
        json_t *delta = json_object_get (choice, "delta");
        json_t *content = json_object_get (delta, "content");
        if (json_is_string (content))
            sl_buf_puts (&s->content, json_string_value (content));
        size_t j;
        json_t *call;
        json_array_foreach (json_object_get (delta, "tool_calls"), j, call) {
            json_int_t k = json_integer_value (json_object_get (call, "index"));
            if (k < 0 || k >= SSE_CLIENT_MAX_CALLS)
                continue;
            if (k + 1 > s->call_count)
                s->call_count = (int) k + 1;
            json_t *fn = json_object_get (call, "function");
            json_t *id = json_object_get (call, "id");
            json_t *name = json_object_get (fn, "name");
            json_t *args = json_object_get (fn, "arguments");
            if (json_is_string (id))
                sl_buf_puts (&s->calls [k].id, json_string_value (id));
            if (json_is_string (name))
                sl_buf_puts (&s->calls [k].name, json_string_value (name));
            if (json_is_string (args))
                sl_buf_puts (&s->calls [k].arguments, json_string_value (args));
        }
        json_t *finish = json_object_get (choice, "finish_reason");
        if (json_is_string (finish)) {
            s->finish_count++;
            sl_buf_reset (&s->finish);
            sl_buf_puts (&s->finish, json_string_value (finish));
        }
    }
}

void
chat_stream_parse (const char *body, chat_stream_t *out)
{
    memset (out, 0, sizeof *out);
    const char *p = body;
    while (p && *p) {
        const char *end = strstr (p, "\n\n");
        size_t len = end ? (size_t) (end - p) : strlen (p);
        if (len > 6 && strncmp (p, "data: ", 6) == 0) {
            out->events++;
            out->done_last = false;
            if (len == 12 && strncmp (p + 6, "[DONE]", 6) == 0) {
                out->saw_done = true;
                out->done_last = true;
            }
            else {
                json_t *chunk = json_loadb (p + 6, len - 6, 0, NULL);
                if (chunk)
                    s_chunk (out, chunk);
                else
                    out->malformed++;
                json_decref (chunk);
            }
        }
        p = end ? end + 2 : NULL;
    }
}

void
chat_stream_free (chat_stream_t *s)
{
    sl_buf_free (&s->content);
    sl_buf_free (&s->finish);
    sl_buf_free (&s->error_type);
    for (int i = 0; i < SSE_CLIENT_MAX_CALLS; i++) {
        sl_buf_free (&s->calls [i].id);
        sl_buf_free (&s->calls [i].name);
        sl_buf_free (&s->calls [i].arguments);
    }
}
