/*  Benchmark: what parsing a request body costs the gateway, and the two
    ways of bounding it.

    jansson builds a tree of the whole body; small values cost it far more
    than their text (an empty object, 3 bytes of "{}," costs ~240 bytes).
    Two ways to keep a parse within a budget:

      scan    count the values first with sl_json_stats (no allocation)
              and refuse before jansson starts (what the gateway does);
      alloc   let jansson parse with allocation functions that fail once
              the budget is spent (json_set_alloc_funcs).

    For each body this prints the bytes jansson really holds at its peak
    (every allocation counted at its usable size), the gateway's estimate
    from the scan, the time of the scan, of a full parse, and of the
    refusal by the budgeted allocator. Bodies: a typical agent request,
    one heavy with tool schemas, one large text, and the two bodies of
    the attack ([{},{},...] bare and inside a request).
*/
#include <jansson.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
#include "common/dialects/sl_job.h"

#define ATTACK_BYTES (10u << 20)        //  the largest body the gateway takes
#define TEXT_BYTES (8u << 20)
#define ROUNDS_SMALL 200                //  repetitions for the small bodies

static size_t s_live, s_peak, s_budget;
static bool s_limited;

//  Every allocation counted at its usable size (what it really takes).
static void *
s_malloc (size_t size)
{
    void *p = malloc (size);
    if (!p)
        return NULL;
    size_t real = malloc_usable_size (p);
    if (s_limited && s_live + real > s_budget) {
        free (p);
        return NULL;
    }
    s_live += real;
    if (s_live > s_peak)
        s_peak = s_live;
    return p;
}

static void
s_free (void *p)
{
    if (p)
        s_live -= malloc_usable_size (p);
    free (p);
}

static double
s_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void
s_tool (sl_buf_t *b, int i, int props)
{
    sl_buf_printf (b, "%s{\"type\":\"function\",\"function\":{\"name\":\"tool_%d\",\"description\":"
                      "\"Does thing %d to the files of the project, carefully.\",\"parameters\":"
                      "{\"type\":\"object\",\"properties\":{", i ? "," : "", i, i);
    for (int k = 0; k < props; k++)
        sl_buf_printf (b, "%s\"arg_%d\":{\"type\":\"string\",\"description\":\"argument %d\"}",
                       k ? "," : "", k, k);
    sl_buf_puts (b, "},\"required\":[\"arg_0\"]}}}");
}

//  An OpenAI request: tools with their schemas, then a conversation.
static void
s_request (sl_buf_t *b, int tools, int props, int turns, size_t text)
{
    sl_buf_puts (b, "{\"model\":\"gpt-x\",\"stream\":true,\"tools\":[");
    for (int i = 0; i < tools; i++)
        s_tool (b, i, props);
    sl_buf_puts (b, "],\"messages\":[");
    for (int t = 0; t < turns; t++) {
        sl_buf_printf (b, "%s{\"role\":\"%s\",\"content\":\"", t ? "," : "", t % 2 ? "assistant" : "user");
        for (size_t k = 0; k < text; k++)
            sl_buf_putc (b, (char) ('a' + k % 26));
        sl_buf_puts (b, "\"}");
    }
    sl_buf_puts (b, "]}");
}

static void
s_empties (sl_buf_t *b, const char *head, const char *tail, size_t size)
{
    sl_buf_puts (b, head);
    size_t room = size - strlen (tail) - 2;
    for (bool first = true; b->len + 3 <= room; first = false)
        sl_buf_puts (b, first ? "{}" : ",{}");
    sl_buf_puts (b, tail);
}

static void
s_measure (const char *name, sl_buf_t *body, int rounds)
{
    sl_str_t text = sl_buf_str (body);
    sl_json_stats_t st;
    double t0 = s_now ();
    int rc = 0;
    for (int r = 0; r < rounds; r++)
        rc = sl_json_stats (text, &st);
    double scan = (s_now () - t0) / rounds;
    size_t estimate = rc == 0 ? sl_job_tree_cost (&st) : 0;
    size_t budget = sl_job_tree_budget (text.len);

    s_limited = false;
    s_live = s_peak = 0;
    t0 = s_now ();
    for (int r = 0; r < rounds; r++) {
        json_t *root = json_loadb (text.ptr, text.len, 0, NULL);
        json_decref (root);
    }
    double parse = (s_now () - t0) / rounds;
    size_t peak = s_peak;

    s_limited = true;
    s_budget = budget;
    s_live = s_peak = 0;
    t0 = s_now ();
    json_error_t err;
    json_t *root = json_loadb (text.ptr, text.len, 0, &err);
    double refuse = s_now () - t0;
    bool refused = root == NULL;
    json_decref (root);
    s_limited = false;

    printf ("%-22s %9zu B  jansson peak %10zu B (%5.1fx)  estimate %10zu B (%5.2f of peak)  budget %9zu B: %s\n"
            "%22s scan %9.1f us  parse %9.1f us  budgeted parse %9.1f us (%s, peak %zu B)\n",
            name, text.len, peak, (double) peak / (double) text.len, estimate,
            peak ? (double) estimate / (double) peak : 0, budget,
            estimate > budget ? "refused" : "parsed", "", scan * 1e6, parse * 1e6, refuse * 1e6,
            refused ? "refused" : "parsed", s_peak);
}

int
main (void)
{
    json_set_alloc_funcs (s_malloc, s_free);
    sl_buf_t b = { 0 };
    s_request (&b, 20, 4, 12, 400);
    s_measure ("agent request", &b, ROUNDS_SMALL);
    sl_buf_reset (&b);
    s_request (&b, 200, 8, 4, 200);
    s_measure ("200 tool schemas", &b, ROUNDS_SMALL / 10);
    sl_buf_reset (&b);
    s_request (&b, 20, 4, 2, TEXT_BYTES / 2);
    s_measure ("8 MiB of text", &b, 3);
    sl_buf_reset (&b);
    s_empties (&b, "[", "]", ATTACK_BYTES);
    s_measure ("[{},{},...] 10 MiB", &b, 1);
    sl_buf_reset (&b);
    s_empties (&b, "{\"model\":\"m\",\"messages\":[", "]}", ATTACK_BYTES);
    s_measure ("messages [{},...] 10 MiB", &b, 1);
    sl_buf_free (&b);
    return 0;
}
