/*  Benchmark: what the inventory adds to preparing a request in the
    gateway, one core: the tools JSON of a request of TOOLS definitions
    (sl_req_tools_json: each definition's description, server and tool,
    and its digest), p50 and p99 per request over ROUNDS requests, for

      names     what the judge was given before the inventory: each tool's
                name and schema (the schema's compact text), the floor;
      cold      with the digests computed (a cache that has seen none of
                them: canonical JSON with sorted keys, then SHA-256);
      warm      with the digests found in the cache (the same definitions
                again: what an agent's every request after its first costs).

    The added cost per request is warm minus names. The definitions are
    shaped like an MCP server's: a description of a few hundred bytes and
    an object schema of a few properties.
*/
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
#include "common/dialects/sl_job.h"
#include "common/tools/sl_toolcache.h"
#include "tests/bench/bench_clock.h"

#define TOOLS 100
#define ROUNDS 2000

static void
s_report (const char *name, double *us, int n, const char *what)
{
    double p50, p99;
    bench_percentiles (us, n, &p50, &p99);
    printf ("tools %-6s p50 %8.2f us  p99 %8.2f us  (%d definitions a request: %s)\n", name, p50, p99, TOOLS, what);
}

//  An Anthropic request of TOOLS MCP tools.
static void
s_body (sl_buf_t *out)
{
    sl_buf_puts (out, "{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[");
    for (int i = 0; i < TOOLS; i++)
        sl_buf_printf (out, "%s{\"name\":\"mcp__server%d__tool_%d\",\"description\":\"Tool %d of the server: it reads "
                            "the resource named by path and returns its content as text, with the lines numbered "
                            "from offset, at most limit of them. Use it before editing a file; prefer it to running "
                            "a shell command that prints the file. Paths are relative to the workspace root.\","
                            "\"input_schema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\","
                            "\"description\":\"the resource\"},\"offset\":{\"type\":\"integer\",\"minimum\":0},"
                            "\"limit\":{\"type\":\"integer\",\"minimum\":1},\"encoding\":{\"type\":\"string\","
                            "\"enum\":[\"utf-8\",\"latin-1\"]}},\"required\":[\"path\"],"
                            "\"additionalProperties\":false}}", i ? "," : "", i % 7, i, i);
    sl_buf_puts (out, "]}");
}

int
main (void)
{
    sl_buf_t body = { 0 };
    s_body (&body);
    sl_endpoint_t endpoint = { .dialect = SL_DIALECT_ANTHROPIC };
    sl_job_t job;
    if (sl_job_parse (&endpoint, sl_buf_str (&body), &job)) {
        fprintf (stderr, "bench_tools: %s\n", sl_buf_cstr (&job.error_message));
        return 1;
    }
    const sl_req_t *req = job.req;
    double *us = calloc (ROUNDS, sizeof *us);
    sl_buf_t out = { 0 };
    //  names: the schema texts, as the judge's list was written before.
    for (int r = 0; r < ROUNDS; r++) {
        sl_buf_reset (&out);
        double t0 = bench_now ();
        sl_buf_putc (&out, '[');
        for (size_t i = 0; i < req->tool_count; i++) {
            sl_json_put_sl (&out, req->tools [i].name);
            char *schema = json_dumps (req->tools [i].schema, JSON_COMPACT);
            sl_buf_puts (&out, schema);
            free (schema);
        }
        sl_buf_putc (&out, ']');
        us [r] = (bench_now () - t0) * 1e6;
    }
    s_report ("names", us, ROUNDS, "name and schema, no digest");
    for (int r = 0; r < ROUNDS; r++) {
        sl_toolcache_t *cache = sl_toolcache_new ();
        sl_buf_reset (&out);
        double t0 = bench_now ();
        sl_req_tools_json (req, cache, &out);
        us [r] = (bench_now () - t0) * 1e6;
        sl_toolcache_destroy (&cache);
    }
    s_report ("cold", us, ROUNDS, "every digest computed");
    sl_toolcache_t *cache = sl_toolcache_new ();
    sl_req_tools_json (req, cache, &out);
    for (int r = 0; r < ROUNDS; r++) {
        sl_buf_reset (&out);
        double t0 = bench_now ();
        sl_req_tools_json (req, cache, &out);
        us [r] = (bench_now () - t0) * 1e6;
    }
    s_report ("warm", us, ROUNDS, "every digest from the cache");
    sl_toolcache_stats_t st;
    sl_toolcache_stats (cache, &st);
    printf ("tools cache: %zu entries, %zu bytes, %llu hits, %llu misses\n", st.entries, st.bytes,
            (unsigned long long) st.hits, (unsigned long long) st.misses);
    sl_toolcache_destroy (&cache);
    sl_buf_free (&out);
    free (us);
    sl_job_clear (&job);
    sl_buf_free (&body);
    return 0;
}
