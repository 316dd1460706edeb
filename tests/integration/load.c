/*  load.c - concurrent streaming clients for the chaos and pause tests
    (see load.h). */
#include "tests/integration/load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <czmq.h>

#include "common/base/sl_alloc.h"

#define LOAD_POLL_MS 5                  //  longest wait for the transfers between actions

static size_t
s_on_data (char *ptr, size_t size, size_t nmemb, void *arg)
{
    load_client_t *c = arg;
    sl_buf_append (&c->body, ptr, size * nmemb);
    if (c->arrival_count == c->arrival_cap) {
        c->arrival_cap = c->arrival_cap ? c->arrival_cap * 2 : 64;
        c->arrivals = sl_xrealloc (c->arrivals, c->arrival_cap * sizeof (int64_t));
    }
    c->arrivals [c->arrival_count++] = zclock_mono ();
    return size * nmemb;
}

//  The next live port of the rotation other than avoid (0: any), or 0
//  when there is none.
static int
s_pick (load_balancer_t *lb, int avoid)
{
    for (int k = 0; k < lb->count; k++) {
        int i = (lb->next + k) % lb->count;
        if (lb->live [i] && lb->ports [i] != avoid) {
            lb->next = (i + 1) % lb->count;
            return lb->ports [i];
        }
    }
    return 0;
}

//  Start client c's request on port.
static void
s_start (CURLM *multi, load_client_t *c, int port)
{
    char url [128];
    snprintf (url, sizeof url, "http://127.0.0.1:%d/v1/chat/completions", port);
    c->port = port;
    curl_easy_setopt (c->easy, CURLOPT_URL, url);
    c->started = true;
    c->attempts++;
    curl_multi_add_handle (multi, c->easy);
}

int64_t
load_run (int port, load_client_t *clients, int n, load_action_t *actions, int action_count, int64_t limit_ms)
{
    load_balancer_t lb = { .ports = { port }, .live = { true }, .count = 1 };
    return load_run_balanced (&lb, clients, n, actions, action_count, limit_ms);
}

int64_t
load_run_balanced (load_balancer_t *lb, load_client_t *clients, int n, load_action_t *actions, int action_count,
                   int64_t limit_ms)
{
    CURLM *multi = curl_multi_init ();
    for (int i = 0; i < n; i++) {
        load_client_t *c = &clients [i];
        c->easy = curl_easy_init ();
        c->headers = curl_slist_append (NULL, "Content-Type: application/json");
        if (c->auth)
            c->headers = curl_slist_append (c->headers, c->auth);
        curl_easy_setopt (c->easy, CURLOPT_POSTFIELDS, c->request_body ? c->request_body : c->request);
        curl_easy_setopt (c->easy, CURLOPT_HTTPHEADER, c->headers);
        curl_easy_setopt (c->easy, CURLOPT_WRITEFUNCTION, s_on_data);
        curl_easy_setopt (c->easy, CURLOPT_WRITEDATA, c);
        curl_easy_setopt (c->easy, CURLOPT_PRIVATE, c);
        curl_easy_setopt (c->easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt (c->easy, CURLOPT_TIMEOUT_MS, (long) (c->timeout_ms ? c->timeout_ms : limit_ms));
    }
    int64_t start = zclock_mono ();
    int next_action = 0, running = 0, waiting = n;
    //  Actions still due once every transfer ended run too (a resume after
    //  a pause that outlived the load).
    while ((running > 0 || waiting > 0 || next_action < action_count) && zclock_mono () - start < limit_ms) {
        for (int i = 0; i < n && waiting > 0; i++)
            if (!clients [i].started && zclock_mono () - start >= clients [i].start_at) {
                s_start (multi, &clients [i], s_pick (lb, 0));
                waiting--;
            }
        curl_multi_perform (multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read (multi, &left)))
            if (msg->msg == CURLMSG_DONE) {
                load_client_t *c;
                curl_easy_getinfo (msg->easy_handle, CURLINFO_PRIVATE, (char **) &c);
                c->done = true;
                c->result = msg->data.result;
                curl_easy_getinfo (msg->easy_handle, CURLINFO_RESPONSE_CODE, &c->status);
                bool turned_away = c->result == CURLE_COULDNT_CONNECT || (c->result == CURLE_OK && c->status == 503);
                int other = turned_away && c->refused < LOAD_REFUSED_TRIES ? s_pick (lb, c->port) : 0;
                if (other) {
                    //  Refused, or a 503 on a kept-alive connection to a
                    //  gateway that drains: the balancer tries another
                    //  gateway at once.
                    curl_multi_remove_handle (multi, c->easy);
                    c->done = false;
                    c->refused++;
                    sl_buf_reset (&c->body);
                    c->arrival_count = 0;
                    s_start (multi, c, other);
                    continue;
                }
                if (c->status == 503 && c->attempts <= c->retries) {
                    //  Refused for now: again in a moment, from scratch.
                    curl_multi_remove_handle (multi, c->easy);
                    c->started = c->done = false;
                    c->start_at = zclock_mono () - start + c->retry_ms;
                    sl_buf_reset (&c->body);
                    c->arrival_count = 0;
                    waiting++;
                }
            }
        while (next_action < action_count && zclock_mono () - start >= actions [next_action].at) {
            actions [next_action].fn (actions [next_action].arg, actions [next_action].round);
            next_action++;
        }
        curl_multi_poll (multi, NULL, 0, LOAD_POLL_MS, NULL);
    }
    for (int i = 0; i < n; i++) {
        if (clients [i].started)
            curl_multi_remove_handle (multi, clients [i].easy);
        curl_easy_cleanup (clients [i].easy);
        curl_slist_free_all (clients [i].headers);
        clients [i].easy = NULL;
        clients [i].headers = NULL;
    }
    curl_multi_cleanup (multi);
    return start;
}

void
load_clients_free (load_client_t *clients, int n)
{
    for (int i = 0; clients && i < n; i++) {
        sl_buf_free (&clients [i].body);
        free (clients [i].arrivals);
    }
    free (clients);
}

load_client_t *
load_clients (int n, const char *model, int chunks)
{
    load_client_t *clients = sl_xcalloc ((size_t) n, sizeof (load_client_t));
    for (int i = 0; i < n; i++)
        snprintf (clients [i].request, sizeof clients [i].request,
                  "{\"model\":\"%s\",\"max_tokens\":%d,\"stream\":true,"
                  "\"messages\":[{\"role\":\"user\",\"content\":\"stream %d\"}]}", model, chunks, i);
    return clients;
}

bool
load_complete (const load_client_t *c)
{
    const char *done = "data: [DONE]\n\n";
    size_t n = strlen (done);
    return c->done && c->result == CURLE_OK && c->status == 200 && c->body.len >= n
        && memcmp (c->body.data + c->body.len - n, done, n) == 0;
}

bool
load_failed_cleanly (const load_client_t *c)
{
    if (!c->done || c->result != CURLE_OK)
        return false;
    const char *body = c->body.data ? c->body.data : "";
    size_t len = c->body.len;
    if (c->status >= 400)
        return len > 0 && memmem (body, len, "\"error\"", 7) != NULL;
    if (c->status != 200 || len < 2 || memcmp (body + len - 2, "\n\n", 2) != 0)
        return false;
    //  The last event: the text after the last blank line before the end.
    const char *last = body;
    for (const char *p = body; (p = memmem (p, (size_t) (body + len - 2 - p), "\n\n", 2)); p += 2)
        last = p + 2;
    return strncmp (last, "data: {\"error\":", 15) == 0;
}

//  The next SSE event of body from *at that is not a keep-alive (an event
//  of comment lines only, ": keep-alive"): its bytes with the blank line
//  that ends it, or len 0 at the end.
static sl_str_t
s_next_event (const char *body, size_t len, size_t *at)
{
    while (*at < len) {
        const char *start = body + *at;
        const char *end = memmem (start, len - *at, "\n\n", 2);
        size_t size = end ? (size_t) (end - start) + 2 : len - *at;
        *at += size;
        bool comment = true;
        for (const char *line = start; line < start + size && comment; ) {
            const char *eol = memchr (line, '\n', (size_t) (start + size - line));
            if (eol != line)
                comment = *line == ':';
            line = eol ? eol + 1 : start + size;
        }
        if (!comment)
            return (sl_str_t) { start, size };
    }
    return (sl_str_t) { NULL, 0 };
}

bool
load_identical (const load_client_t *c, const load_client_t *reference)
{
    if (c->body.len == reference->body.len
    &&  memcmp (c->body.data, reference->body.data, reference->body.len) == 0)
        return true;
    //  A judge that holds a tool call (a stage stopped or starved behind
    //  it) says so to the client with a keep-alive comment every 2 s: the
    //  stream's events are the same, a comment more or less.
    const char *a = c->body.data ? c->body.data : "", *b = reference->body.data ? reference->body.data : "";
    size_t at_a = 0, at_b = 0;
    while (true) {
        sl_str_t ea = s_next_event (a, c->body.len, &at_a);
        sl_str_t eb = s_next_event (b, reference->body.len, &at_b);
        if (ea.len != eb.len || (ea.len && memcmp (ea.ptr, eb.ptr, ea.len) != 0))
            return false;
        if (ea.len == 0)
            return true;
    }
}

void
load_describe (const char *what, int index, const load_client_t *c, const load_client_t *reference)
{
    size_t len = c->body.len, tail = len < 160 ? len : 160;
    size_t same = 0;
    while (same < len && same < reference->body.len && c->body.data [same] == reference->body.data [same])
        same++;
    fprintf (stderr, "%s %d: %s, curl %d (%s), status %ld, %zu bytes of %zu, the same for the first %zu; "
                     "ends with: %.*s\n", what, index, c->done ? "done" : "not done", (int) c->result,
             curl_easy_strerror (c->result), c->status, len, reference->body.len, same, (int) tail,
             c->body.data ? c->body.data + len - tail : "");
    //  Where the two part: what each has from there on (a window of it).
    if (same < len || same < reference->body.len) {
        size_t from = same > 80 ? same - 80 : 0;
        size_t got = len - from < 400 ? len - from : 400;
        size_t want = reference->body.len - from < 400 ? reference->body.len - from : 400;
        fprintf (stderr, "%s %d from byte %zu: got: %.*s\n%s %d from byte %zu: expected: %.*s\n", what, index, from,
                 (int) got, c->body.data ? c->body.data + from : "", what, index, from, (int) want,
                 reference->body.data ? reference->body.data + from : "");
    }
}
