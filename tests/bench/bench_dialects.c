/*  Benchmark: what translating between dialects costs, one core.

    Per chunk: a provider's stream of N text events (the mock's mock-bench
    script in the upstream's dialect, N = max tokens) goes through the
    stage libraries in one process (sl_replay: SSE parse, the upstream
    dialect's decoder, the aggregator, the judge without a policy, the
    emitter rendering for the client's dialect and checking every event
    with its validator): nanoseconds per chunk for every pair, the
    same-dialect ones on the diagonal. A translated pair costs its
    upstream's decoder and its client's renderer, as the same-dialect
    pairs of those dialects do, plus what crossing adds (the emitter's
    filter, tagged signatures); the table shows the difference from the
    client's own same-dialect path.

    Per request: a coding agent's request (a system prompt, tools with
    schemas, a conversation with a tool call and its result) parsed in
    its client's dialect and prepared for an upstream of every dialect:
    forwarded (same dialect) or rendered (translated), microseconds per
    request.
*/
#include <czmq.h>
#include <stdio.h>
#include <string.h>

#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_job.h"
#include "services/mock/sl_mock_script.h"
#include "common/stages/sl_replay.h"

#define CHUNKS 20000                    //  text events per stream
#define ROUNDS 3                        //  best of
#define REQUESTS 2000                   //  requests per pair

static void
s_discard (void *arg, const char *data, size_t size)
{
    *(size_t *) arg += size;
    (void) data;
}

//  The mock's stream of CHUNKS text events in a dialect, as bytes.
static void
s_stream (int dialect, sl_buf_t *out)
{
    sl_mock_script_t script;
    sl_mock_script_build (dialect, SL_STR_LIT ("mock-bench"), SL_STR_LIT ("{}"), CHUNKS, 0, &script);
    for (size_t i = 0; i < script.count; i++)
        sl_buf_append_str (out, sl_buf_str (&script.events [i]));
    sl_mock_script_clear (&script);
}

//  Nanoseconds per chunk through the stages, best of ROUNDS.
static double
s_per_chunk (int upstream, int client, sl_str_t bytes)
{
    double best = 1e30;
    for (int round = 0; round < ROUNDS; round++) {
        size_t written = 0;
        const char *why = NULL;
        sl_replay_opts_t opts = { .dialect = upstream, .render = client };
        sl_replay_t *r = sl_replay_new (&opts, s_discard, &written, &why);
        int64_t t0 = zclock_usecs ();
        sl_replay_feed (r, bytes.ptr, bytes.len);
        sl_replay_finish (r);
        double ns = (double) (zclock_usecs () - t0) * 1000.0 / CHUNKS;
        sl_replay_destroy (&r);
        if (ns < best)
            best = ns;
    }
    return best;
}

//  An agent's request in each client dialect: instructions, two tools, a
//  call and its result.
static const char *s_requests [SL_DIALECT_MAX] = {
    [SL_DIALECT_OPENAI] =
        "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"system\",\"content\":\"You are a coding agent. "
        "Use the tools.\"},{\"role\":\"user\",\"content\":\"list the files\"},{\"role\":\"assistant\",\"content\":"
        "\"Listing.\",\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"bash\","
        "\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":"
        "\"a.c b.c Makefile\"}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"bash\",\"description\":"
        "\"Runs a command\",\"parameters\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}},"
        "\"required\":[\"command\"]}}},{\"type\":\"function\",\"function\":{\"name\":\"read\",\"parameters\":"
        "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}}}]}",
    [SL_DIALECT_ANTHROPIC] =
        "{\"model\":\"m\",\"max_tokens\":1024,\"stream\":true,\"system\":\"You are a coding agent. Use the tools.\","
        "\"messages\":[{\"role\":\"user\",\"content\":\"list the files\"},{\"role\":\"assistant\",\"content\":"
        "[{\"type\":\"text\",\"text\":\"Listing.\"},{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"bash\","
        "\"input\":{\"command\":\"ls\"}}]},{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":"
        "\"toolu_1\",\"content\":\"a.c b.c Makefile\"}]}],\"tools\":[{\"name\":\"bash\",\"description\":"
        "\"Runs a command\",\"input_schema\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}},"
        "\"required\":[\"command\"]}},{\"name\":\"read\",\"input_schema\":{\"type\":\"object\",\"properties\":"
        "{\"path\":{\"type\":\"string\"}}}}]}",
    [SL_DIALECT_RESPONSES] =
        "{\"model\":\"m\",\"stream\":true,\"instructions\":\"You are a coding agent. Use the tools.\",\"input\":["
        "{\"role\":\"user\",\"content\":\"list the files\"},{\"type\":\"message\",\"role\":\"assistant\",\"content\":"
        "[{\"type\":\"output_text\",\"text\":\"Listing.\"}]},{\"type\":\"function_call\",\"call_id\":\"call_1\","
        "\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"},{\"type\":\"function_call_output\","
        "\"call_id\":\"call_1\",\"output\":\"a.c b.c Makefile\"}],\"tools\":[{\"type\":\"function\",\"name\":\"bash\","
        "\"description\":\"Runs a command\",\"parameters\":{\"type\":\"object\",\"properties\":{\"command\":"
        "{\"type\":\"string\"}},\"required\":[\"command\"]}},{\"type\":\"function\",\"name\":\"read\",\"parameters\":"
        "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}}]}",
    [SL_DIALECT_GEMINI] =
        "{\"systemInstruction\":{\"parts\":[{\"text\":\"You are a coding agent. Use the tools.\"}]},\"contents\":["
        "{\"role\":\"user\",\"parts\":[{\"text\":\"list the files\"}]},{\"role\":\"model\",\"parts\":[{\"text\":"
        "\"Listing.\"},{\"functionCall\":{\"name\":\"bash\",\"args\":{\"command\":\"ls\"}}}]},{\"role\":\"user\","
        "\"parts\":[{\"functionResponse\":{\"name\":\"bash\",\"response\":{\"output\":\"a.c b.c Makefile\"}}}]}],"
        "\"tools\":[{\"functionDeclarations\":[{\"name\":\"bash\",\"description\":\"Runs a command\","
        "\"parametersJsonSchema\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}},"
        "\"required\":[\"command\"]}},{\"name\":\"read\",\"parametersJsonSchema\":{\"type\":\"object\","
        "\"properties\":{\"path\":{\"type\":\"string\"}}}}]}]}",
};

//  Microseconds to parse a request of client and prepare it for upstream.
static double
s_per_request (int client, int upstream)
{
    sl_str_t body = sl_str (s_requests [client]);
    sl_endpoint_t endpoint = { .dialect = client, .stream = true, .sse = true, .model = "m" };
    int64_t t0 = zclock_usecs ();
    for (int i = 0; i < REQUESTS; i++) {
        sl_job_t r;
        if (sl_job_parse (&endpoint, body, &r) || sl_job_translate (&r, upstream)) {
            fprintf (stderr, "bench_dialects: %s -> %s refused: %s\n", sl_dialect_name (client),
                     sl_dialect_name (upstream), sl_buf_cstr (&r.error_message));
            sl_job_clear (&r);
            return -1;
        }
        sl_job_clear (&r);
    }
    return (double) (zclock_usecs () - t0) / REQUESTS;
}

int
main (void)
{
    size_t n = sl_dialect_count ();
    sl_buf_t streams [SL_DIALECT_MAX] = { { 0 } };
    for (size_t i = 0; i < n; i++)
        s_stream (sl_dialect_at (i)->id, &streams [sl_dialect_at (i)->id]);
    printf ("ns per text chunk, SSE parse + decode + aggregate + judge + render + validate, one core "
            "(%d chunks, best of %d); rows: upstream, columns: client; (+x) the difference from the "
            "client's same-dialect path\n%-12s", CHUNKS, ROUNDS, "");
    for (size_t c = 0; c < n; c++)
        if (!sl_dialect_at (c)->upstream_only)     //  columns: the dialects clients speak
            printf ("%-22s", sl_dialect_at (c)->name);
    printf ("\n");
    //  Every pair once first (caches, the allocator's pools), then measured.
    for (size_t u = 0; u < n; u++)
        for (size_t c = 0; c < n; c++)
            if (!sl_dialect_at (c)->upstream_only)
                s_per_chunk (sl_dialect_at (u)->id, sl_dialect_at (c)->id, sl_buf_str (&streams [sl_dialect_at (u)->id]));
    double same [SL_DIALECT_MAX] = { 0 };
    for (size_t c = 0; c < n; c++) {
        int id = sl_dialect_at (c)->id;
        if (!sl_dialect_at (c)->upstream_only)
            same [id] = s_per_chunk (id, id, sl_buf_str (&streams [id]));
    }
    for (size_t u = 0; u < n; u++) {
        int up = sl_dialect_at (u)->id;
        printf ("%-12s", sl_dialect_name (up));
        for (size_t c = 0; c < n; c++) {
            int client = sl_dialect_at (c)->id;
            if (sl_dialect_at (c)->upstream_only)
                continue;
            double ns = up == client ? same [up] : s_per_chunk (up, client, sl_buf_str (&streams [up]));
            char cell [32];
            if (up == client)
                snprintf (cell, sizeof cell, "%.0f (same)", ns);
            else
                snprintf (cell, sizeof cell, "%.0f (%+.0f)", ns, ns - same [client]);
            printf ("%-22s", cell);
        }
        printf ("\n");
    }
    printf ("\nus per agent request, parse + prepare for the upstream (%d requests); rows: client, columns: "
            "upstream\n%-12s", REQUESTS, "");
    for (size_t u = 0; u < n; u++)
        printf ("%-12s", sl_dialect_at (u)->name);
    printf ("\n");
    for (size_t c = 0; c < n; c++) {
        int client = sl_dialect_at (c)->id;
        if (sl_dialect_at (c)->upstream_only)
            continue;
        printf ("%-12s", sl_dialect_name (client));
        for (size_t u = 0; u < n; u++)
            printf ("%-12.1f", s_per_request (client, sl_dialect_at (u)->id));
        printf ("\n");
    }
    for (size_t i = 0; i < SL_DIALECT_MAX; i++)
        sl_buf_free (&streams [i]);
    return 0;
}
