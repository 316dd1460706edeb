/*  Unit tests: common/tools/sl_toolcache (definition digests remembered
    across requests: found again, never shared by two definitions whose
    hashes collide, bounded) and the tools JSON the gateway builds with it
    (sl_req_tools_json: name parts, digest, truncation). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/dialects/sl_job.h"
#include "common/tools/sl_toolcache.h"
#include "common/tools/sl_tooldef.h"

static json_t *
s_schema (const char *text)
{
    json_t *j = json_loads (text, 0, NULL);
    cr_assert_not_null (j, "%s", text);
    return j;
}

Test (sl_toolcache, found_again_with_the_digest_it_would_compute)
{
    sl_toolcache_t *cache = sl_toolcache_new ();
    json_t *schema = s_schema ("{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\"}}}");
    char *text = json_dumps (schema, JSON_COMPACT);
    char want [SL_TOOLDEF_DIGEST_SIZE], got [SL_TOOLDEF_DIGEST_SIZE];
    sl_tooldef_digest (sl_str ("search"), sl_str ("Search the web"), schema, want);
    cr_expect_not (sl_toolcache_digest (cache, sl_str ("search"), sl_str ("Search the web"), schema, sl_str (text), got));
    cr_expect_str_eq (got, want);
    memset (got, 0, sizeof got);
    cr_expect (sl_toolcache_digest (cache, sl_str ("search"), sl_str ("Search the web"), schema, sl_str (text), got),
               "the second time it is found");
    cr_expect_str_eq (got, want);
    //  Another description: another entry, another digest.
    char other [SL_TOOLDEF_DIGEST_SIZE];
    cr_expect_not (sl_toolcache_digest (cache, sl_str ("search"), sl_str ("Search the web."), schema, sl_str (text),
                                        other));
    cr_expect_str_neq (other, want);
    //  Absent and empty descriptions are two definitions.
    char absent [SL_TOOLDEF_DIGEST_SIZE], empty [SL_TOOLDEF_DIGEST_SIZE];
    sl_toolcache_digest (cache, sl_str ("f"), SL_STR_NULL, NULL, sl_str (""), absent);
    sl_toolcache_digest (cache, sl_str ("f"), sl_str (""), NULL, sl_str (""), empty);
    cr_expect_str_neq (absent, empty);
    sl_toolcache_stats_t st;
    sl_toolcache_stats (cache, &st);
    cr_expect_eq (st.hits, 1);
    cr_expect_eq (st.misses, 4);
    cr_expect_eq (st.entries, 4);
    free (text);
    json_decref (schema);
    sl_toolcache_destroy (&cache);
    sl_toolcache_destroy (&cache);
    cr_expect_null (cache);
}

Test (sl_toolcache, colliding_hashes_never_share_a_digest)
{
    sl_toolcache_t *cache = sl_toolcache_new ();
    const uint64_t same = 42;
    char a [SL_TOOLDEF_DIGEST_SIZE], b [SL_TOOLDEF_DIGEST_SIZE], want [SL_TOOLDEF_DIGEST_SIZE];
    sl_toolcache_digest_hashed (cache, same, sl_str ("read"), sl_str ("Read a file"), NULL, sl_str (""), a);
    //  The same hash, other bytes (a rug pull that aimed at the first's
    //  hash): computed, not taken from the entry.
    cr_expect_not (sl_toolcache_digest_hashed (cache, same, sl_str ("read"), sl_str ("Read a file. Also send it"),
                                               NULL, sl_str (""), b));
    sl_tooldef_digest (sl_str ("read"), sl_str ("Read a file. Also send it"), NULL, want);
    cr_expect_str_eq (b, want);
    cr_expect_str_neq (a, b);
    //  Both are held (one bucket has several ways) and found again.
    cr_expect (sl_toolcache_digest_hashed (cache, same, sl_str ("read"), sl_str ("Read a file"), NULL, sl_str (""), b));
    cr_expect_str_eq (a, b);
    //  More definitions in one bucket than it has ways: the least recently
    //  used goes, every digest stays right.
    for (int i = 0; i < SL_TOOLCACHE_WAYS + 2; i++) {
        char name [16], got [SL_TOOLDEF_DIGEST_SIZE];
        snprintf (name, sizeof name, "t%d", i);
        sl_toolcache_digest_hashed (cache, same, sl_str (name), SL_STR_NULL, NULL, sl_str (""), got);
        sl_tooldef_digest (sl_str (name), SL_STR_NULL, NULL, want);
        cr_expect_str_eq (got, want);
    }
    sl_toolcache_stats_t st;
    sl_toolcache_stats (cache, &st);
    cr_expect_eq (st.entries, SL_TOOLCACHE_WAYS);
    cr_expect_gt (st.evictions, 0);
    sl_toolcache_destroy (&cache);
}

Test (sl_toolcache, a_definition_over_the_bound_is_digested_not_kept)
{
    sl_toolcache_t *cache = sl_toolcache_new ();
    size_t n = SL_TOOLCACHE_MAX_ENTRY + 1;
    char *big = malloc (n);
    memset (big, 'x', n);
    char a [SL_TOOLDEF_DIGEST_SIZE], want [SL_TOOLDEF_DIGEST_SIZE];
    cr_expect_not (sl_toolcache_digest (cache, sl_str ("f"), sl_str_n (big, n), NULL, sl_str (""), a));
    cr_expect_not (sl_toolcache_digest (cache, sl_str ("f"), sl_str_n (big, n), NULL, sl_str (""), a));
    sl_tooldef_digest (sl_str ("f"), sl_str_n (big, n), NULL, want);
    cr_expect_str_eq (a, want);
    sl_toolcache_stats_t st;
    sl_toolcache_stats (cache, &st);
    cr_expect_eq (st.entries, 0);
    cr_expect_eq (st.bytes, 0);
    //  No cache: computed.
    cr_expect_not (sl_toolcache_digest (NULL, sl_str ("f"), sl_str_n (big, n), NULL, sl_str (""), a));
    cr_expect_str_eq (a, want);
    free (big);
    sl_toolcache_destroy (&cache);
}

//  --------------------------------------------------------------------------
//  The tools JSON (sl_req_tools_json through sl_job_prepare)

static json_t *
s_tools (const char *body, sl_toolcache_t *cache)
{
    sl_endpoint_t endpoint = { .dialect = SL_DIALECT_ANTHROPIC };
    sl_job_t r;
    cr_assert_eq (sl_job_prepare (&endpoint, sl_str (body), NULL, cache, &r), 0, "%s", sl_buf_cstr (&r.error_message));
    json_t *tools = json_loads (sl_buf_cstr (&r.tools), 0, NULL);
    cr_assert (json_is_array (tools), "%s", sl_buf_cstr (&r.tools));
    sl_job_clear (&r);
    return tools;
}

static const char *
s_get (json_t *tool, const char *key)
{
    return json_string_value (json_object_get (tool, key));
}

Test (sl_req_tools_json, names_parts_descriptions_and_digests)
{
    const char *body = "{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                       "\"tools\":[{\"name\":\"mcp__github__create_issue\",\"description\":\"Open an issue\","
                       "\"input_schema\":{\"type\":\"object\",\"properties\":{\"title\":{\"type\":\"string\"}}}},"
                       "{\"name\":\"Bash\",\"input_schema\":{\"type\":\"object\"}}]}";
    sl_toolcache_t *cache = sl_toolcache_new ();
    json_t *tools = s_tools (body, cache);
    cr_assert_eq (json_array_size (tools), 2);
    json_t *gh = json_array_get (tools, 0), *bash = json_array_get (tools, 1);
    cr_expect_str_eq (s_get (gh, "name"), "mcp__github__create_issue");
    cr_expect_str_eq (s_get (gh, "server"), "github");
    cr_expect_str_eq (s_get (gh, "tool"), "create_issue");
    cr_expect_str_eq (s_get (gh, "description"), "Open an issue");
    cr_expect (json_is_object (json_object_get (gh, "schema")));
    json_t *schema = json_loads ("{\"properties\":{\"title\":{\"type\":\"string\"}},\"type\":\"object\"}", 0, NULL);
    char want [SL_TOOLDEF_DIGEST_SIZE];
    sl_tooldef_digest (sl_str ("mcp__github__create_issue"), sl_str ("Open an issue"), schema, want);
    cr_expect_str_eq (s_get (gh, "digest"), want, "the digest of the whole definition, keys in any order");
    cr_expect_null (json_object_get (gh, "truncated"));
    cr_expect_null (json_object_get (bash, "server"), "a name without a server");
    cr_expect_null (json_object_get (bash, "description"), "no description, none sent");
    cr_expect_str_eq (s_get (bash, "tool"), "Bash");
    //  The next request with the same tools: the same digests, from the cache.
    json_t *again = s_tools (body, cache);
    cr_expect (json_equal (again, tools));
    sl_toolcache_stats_t st;
    sl_toolcache_stats (cache, &st);
    cr_expect_eq (st.hits, 2);
    cr_expect_eq (st.misses, 2);
    json_decref (again);
    json_decref (schema);
    json_decref (tools);
    sl_toolcache_destroy (&cache);
}

//  A body with one tool: description of dn bytes, a schema with one
//  property whose description has sn bytes.
static char *
s_big_body (size_t dn, size_t sn)
{
    char *d = malloc (dn + 1), *s = malloc (sn + 1);
    memset (d, 'd', dn);
    d [dn] = 0;
    memset (s, 's', sn);
    s [sn] = 0;
    //  One multi-byte character right at the bound of the description.
    if (dn > SL_TOOLDEF_TRAVEL_MAX)
        memcpy (d + SL_TOOLDEF_TRAVEL_MAX - 1 - (sn ? sn + 60 : 0), "\xc3\xa9", 2);
    size_t n = dn + sn + 512;
    char *body = malloc (n);
    snprintf (body, n, "{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                       "\"tools\":[{\"name\":\"big\",\"description\":\"%s\",\"input_schema\":{\"type\":\"object\","
                       "\"properties\":{\"p\":{\"description\":\"%s\"}}}}]}", d, s);
    free (d);
    free (s);
    return body;
}

Test (sl_req_tools_json, a_definition_over_the_bound_travels_cut_and_says_so)
{
    //  A long description: cut on a character boundary, the schema whole.
    char *body = s_big_body (SL_TOOLDEF_TRAVEL_MAX + 100, 10);
    json_t *tools = s_tools (body, NULL);
    json_t *t = json_array_get (tools, 0);
    cr_expect (json_is_true (json_object_get (t, "truncated")));
    cr_expect (json_is_object (json_object_get (t, "schema")), "the schema fits: the judge still checks calls");
    const char *d = s_get (t, "description");
    cr_assert_not_null (d, "a valid UTF-8 string");
    size_t schema_len = strlen ("{\"type\":\"object\",\"properties\":{\"p\":{\"description\":\"ssssssssss\"}}}");
    cr_expect_leq (strlen (d) + schema_len, SL_TOOLDEF_TRAVEL_MAX);
    json_t *root = json_loads (body, 0, NULL);
    json_t *whole = json_array_get (json_object_get (root, "tools"), 0);
    char want [SL_TOOLDEF_DIGEST_SIZE];
    sl_tooldef_digest (sl_str ("big"), sl_str (json_string_value (json_object_get (whole, "description"))),
                       json_object_get (whole, "input_schema"), want);
    cr_expect_str_eq (s_get (t, "digest"), want, "digested whole");
    json_decref (root);
    json_decref (tools);
    free (body);
    //  A schema over the bound alone: left out, and said.
    body = s_big_body (5, SL_TOOLDEF_TRAVEL_MAX + 1);
    tools = s_tools (body, NULL);
    t = json_array_get (tools, 0);
    cr_expect (json_is_true (json_object_get (t, "truncated")));
    cr_expect_null (json_object_get (t, "schema"));
    cr_expect_str_eq (s_get (t, "description"), "ddddd");
    json_decref (tools);
    free (body);
}
