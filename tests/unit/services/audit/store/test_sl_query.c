/*  Unit tests: services/audit/store/sl_query, the store's questions in
    JSON (what the console shows and `sluice-audit export` writes), over
    records the archive wrote (records.h), on SQLite and PostgreSQL
    (store_env.h). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/config/sl_routesfile.h"
#include "common/dialects/sl_providers.h"
#include "services/audit/recorder/sl_archive.h"
#include "services/audit/store/sl_query.h"
#include "tests/unit/services/audit/records.h"
#include "tests/unit/services/audit/store_env.h"

static const uint8_t s_sid_a [SL_SID_SIZE] = { 0xa1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
static const uint8_t s_sid_b [SL_SID_SIZE] = { 0xb2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

typedef store_env_t s_env_t;

//  A fresh, migrated store.
static sl_store_t *
s_fresh (s_env_t *env)
{
    return store_env_fresh (env, "audit");
}

static void
check_queries (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 0);
    cr_assert_eq (sl_store_begin (store), 0);
    records_stream (archive, s_sid_a, 1000000, "mock-tools", "k1");
    records_stream (archive, s_sid_b, 1060000, "gpt-x", "k2");
    //  A third stream, in flight, with an upstream error.
    uint8_t sid_c [SL_SID_SIZE] = { 0xc3 };
    sl_record_meta_t meta = records_meta (1120000, 0);
    sl_msg_t m = records_msg (SL_MSG_START, sid_c, 0);
    m.model = SL_STR_LIT ("gpt-x");
    m.provider = SL_STR_LIT ("openai");
    cr_expect_eq (sl_archive_apply (archive, &meta, &m), 1);
    m = records_msg (SL_MSG_ERROR, sid_c, 1);
    m.code = SL_STR_LIT ("upstream_timeout");
    m.message = SL_STR_LIT ("the upstream did not answer");
    m.status = 504;
    cr_expect_eq (sl_archive_apply (archive, &meta, &m), 1);
    cr_assert_eq (sl_store_commit (store), 0, "%s", sl_store_error (store));

    sl_buf_t out = { 0 };
    struct { sl_query_filter_t f; int count; const char *what; } cases [] = {
        { { 0 }, 3, "everything" },
        { { .rule = "no-rm-rf" }, 2, "by rule" },
        { { .rule = "no-rm-rf", .tool = "get_weather" }, 0, "rule and tool of one same verdict" },
        { { .tool = "run_shell", .action = "block", .check = "ran" }, 2, "tool, action, check" },
        { { .rule = "(default)" }, 2, "the default" },
        { { .model = "gpt-x" }, 2, "by model" },
        { { .provider = "openai" }, 1, "by provider" },
        { { .client_key = "k1" }, 1, "by client key" },
        { { .text = "RM -RF" }, 2, "text in arguments, any case" },
        { { .text = "TIDY up" }, 2, "text in the last user message" },
        { { .text = "deletes files" }, 2, "text in a block" },
        { { .text = "100%" }, 0, "a LIKE character is only itself" },
        { { .state = "live" }, 1, "in flight" },
        { { .state = "error" }, 1, "failed" },
        { { .state = "blocked" }, 2, "with a blocked call" },
        { { .from = 1060000 }, 2, "from" },
        { { .from = 1000000, .to = 1060000 }, 1, "from and to" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_buf_reset (&out);
        cr_assert_eq (sl_query_streams (store, &cases [i].f, &out), 0, "%s: %s", cases [i].what,
                      sl_store_error (store));
        int found = 0;
        for (const char *p = sl_buf_cstr (&out); (p = strstr (p, "\"sid\":")); p++)
            found++;
        cr_expect_eq (found, cases [i].count, "%s: %s", cases [i].what, sl_buf_cstr (&out));
        cr_expect (sl_json_valid (sl_buf_str (&out)), "%s", cases [i].what);
    }
    //  Paging: newest first, "more" when a page is full.
    sl_buf_reset (&out);
    cr_assert_eq (sl_query_streams (store, &(sl_query_filter_t) { .limit = 2 }, &out), 0);
    const char *json = sl_buf_cstr (&out);
    cr_expect_not_null (strstr (json, "\"more\":true"), "%s", json);
    cr_expect_lt (strstr (json, "c3000000"), strstr (json, "b2010203"), "newest first: %s", json);
    //  A stream whole: blocks in order, each verdict with its arguments.
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (s_sid_a, hex);
    sl_buf_reset (&out);
    cr_assert_eq (sl_query_stream (store, hex, &out), 0);
    json = sl_buf_cstr (&out);
    cr_expect (sl_json_valid (sl_buf_str (&out)), "%s", json);
    cr_expect_not_null (strstr (json, "\"rule\":\"no-rm-rf\",\"reason\":\"rule no-rm-rf matched\""), "%s", json);
    cr_expect_not_null (strstr (json, "\"arguments\":\"{\\\"command\\\":\\\"rm -rf /\\\"}\""), "%s", json);
    cr_expect_not_null (strstr (json, "\"replaced\":true"), "%s", json);
    cr_expect_not_null (strstr (json, "\"client_key\":\"k1\""), "%s", json);
    cr_expect_not_null (strstr (json, "\"tools\":\"get_weather,run_shell\""), "%s", json);
    cr_expect_not_null (strstr (json, "\"policy\":\"0123456789ab\""), "%s", json);
    cr_expect_lt (strstr (json, "Let me check"), strstr (json, "sluice blocked"), "blocks in order");
    //  The charts' numbers.
    sl_buf_reset (&out);
    cr_assert_eq (sl_query_stats (store, 0, 2000000, 60000, &out), 0, "%s", sl_store_error (store));
    json = sl_buf_cstr (&out);
    cr_expect (sl_json_valid (sl_buf_str (&out)), "%s", json);
    cr_expect_not_null (strstr (json, "[960000,\"no-rm-rf\",\"block\",1]"), "%s", json);
    cr_expect_not_null (strstr (json, "[1020000,\"(default)\",\"allow\",1]"), "%s", json);
    cr_expect_not_null (strstr (json, "[\"gpt-x\",\"openai\",1,1]"), "streams and errors by model: %s", json);
    cr_expect_not_null (strstr (json, "\"latency\":[[960000,"), "%s", json);
    sl_buf_free (&out);
    sl_archive_destroy (&archive);
    sl_store_close (&store);
}

static void
check_policies_and_gaps (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 0);
    sl_msg_t p = records_msg (SL_MSG_POLICY, (const uint8_t *) "policy\0\0\0\0\0\0\0\0\0", 0);
    p.instance = SL_STR_LIT ("judge-1");
    p.policy = SL_STR_LIT ("aaaaaaaaaaaa");
    p.name = SL_STR_LIT ("deploy/policy.yaml");
    p.text = SL_STR_LIT ("rules: []\n");
    p.ts = 100;
    cr_assert_eq (sl_store_begin (store), 0);
    for (int i = 0; i < 3; i++) {
        sl_record_meta_t meta = records_meta (1000 + i * 5000, 0);
        p.count = (uint64_t) i;
        if (i == 2)
            p.message = SL_STR_LIT ("policy.yaml:3:1: bad regex");
        cr_expect_eq (sl_archive_apply (archive, &meta, &p), 1, "%s", sl_store_error (store));
    }
    //  A gap naming a stream whose start was lost, and one we know.
    sl_record_meta_t meta = records_meta (20000, 0);
    cr_expect_eq (records_stream (archive, s_sid_a, 10000, "m", "k"), 9);
    sl_msg_t g = records_msg (SL_MSG_GAP, (const uint8_t *) "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 0);
    uint8_t sids [2 * SL_SID_SIZE];
    memcpy (sids, s_sid_a, SL_SID_SIZE);
    memcpy (sids + SL_SID_SIZE, s_sid_b, SL_SID_SIZE);
    g.count = 42;
    g.ts = 15000;
    g.body = sl_str_n (sids, sizeof sids);
    meta.rseq = 500;
    cr_expect_eq (sl_archive_apply (archive, &meta, &g), 1, "%s", sl_store_error (store));
    cr_expect_eq (sl_archive_apply (archive, &meta, &g), 0, "a gap counts once");
    cr_assert_eq (sl_store_commit (store), 0, "%s", sl_store_error (store));
    cr_expect_eq (records_count (store, "SELECT SUM(lost) FROM streams"), 2);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM streams"), 2, "the stream whose start was lost shows");
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_query_policies (store, &out), 0);
    const char *json = sl_buf_cstr (&out);
    cr_expect_not_null (strstr (json, "\"first_seen\":1000,\"last_seen\":11000,\"failures\":2,"
                                      "\"last_error\":\"policy.yaml:3:1: bad regex\""), "%s", json);
    sl_buf_reset (&out);
    cr_assert_eq (sl_query_gaps (store, 10, &out), 0);
    json = sl_buf_cstr (&out);
    cr_expect_not_null (strstr (json, "\"lost\":42,\"since\":15000,\"at\":20000,\"streams\":2}],\"lost\":42"), "%s",
                        json);
    sl_buf_reset (&out);
    cr_assert_eq (sl_query_streams (store, &(sl_query_filter_t) { .state = "lost" }, &out), 0);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "b2010203"), "%s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    sl_archive_destroy (&archive);
    sl_store_close (&store);
}

static void
s_count_lines (void *arg, const char *line, size_t size)
{
    cr_expect (sl_json_valid (sl_str_n (line, size - 1)), "%.*s", (int) size, line);
    cr_expect_eq (line [size - 1], '\n');
    (*(int *) arg)++;
}

//  Every stream started in a range, one JSON line each.
static void
check_export (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 0);
    cr_assert_eq (sl_store_begin (store), 0);
    for (int i = 0; i < 30; i++) {
        uint8_t sid [SL_SID_SIZE] = { (uint8_t) i, 7 };
        cr_expect_eq (records_stream (archive, sid, 1000 * (i + 1), "m", "k"), 9);
    }
    cr_assert_eq (sl_store_commit (store), 0);
    int lines = 0;
    cr_expect_eq (sl_query_export (store, 5000, 10000, s_count_lines, &lines), 5);
    cr_expect_eq (lines, 5);
    sl_archive_destroy (&archive);
    sl_store_close (&store);
}

//  Three streams of two teams: on day 2, ada's usage reported and bob's
//  estimated, at gpt-4o prices; on day 3, cy's on a model without a
//  price. The archive is given the prices (*prices: the caller's to
//  destroy).
static void
s_spenders (sl_store_t *store, sl_archive_t *archive, sl_providers_t **prices)
{
    const char *routes = "providers:\n  - name: a\n    dialect: openai\n    base_url: http://h\n"
                         "prices:\n  - model: \"gpt-4o*\"\n    input: 2.5\n    output: 10\n";
    char *error = NULL;
    *prices = NULL;
    sl_routesfile_parse (routes, strlen (routes), "routes.yaml", prices, NULL, &error);
    cr_assert_not_null (*prices, "%s", error ? error : "");
    sl_archive_set_prices (archive, *prices);
    const uint8_t sid_c [SL_SID_SIZE] = { 0xc3, 1, 2 };
    cr_assert_eq (sl_store_begin (store), 0);
    //  Day 2: ada's usage reported, bob's estimated; day 3: cy's, on a
    //  model without a price.
    records_spend (archive, s_sid_a, 2 * RECORDS_DAY + 1000, "gpt-4o", "payments", "ada",
                   (sl_usage_t) { 1000, 200, 1200, -1, -1, -1 }, false);
    records_spend (archive, s_sid_b, 2 * RECORDS_DAY + 5000, "gpt-4o-mini", "payments", "bob",
                   (sl_usage_t) { 100, 20, 120, -1, -1, -1 }, true);
    records_spend (archive, sid_c, 3 * RECORDS_DAY + 5, "claude-x", "search", "cy",
                   (sl_usage_t) { 10, 5, 15, -1, -1, -1 }, false);
    cr_assert_eq (sl_store_commit (store), 0, "%s", sl_store_error (store));
}

//  Usage per day and team, user, model or all; the streams of a team
//  and user; a stream's identity.
static void
check_usage_and_identity (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 0);
    sl_providers_t *prices = NULL;
    s_spenders (store, archive, &prices);
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_query_usage (store, 0, 10 * RECORDS_DAY, "team", &out), 0, "%s", sl_store_error (store));
    const char *json = sl_buf_cstr (&out);
    cr_expect (sl_json_valid (sl_buf_str (&out)), "%s", json);
    records_expect_in (json, "\"group\":\"team\",\"rows\":["
                             "{\"day\":172800000,\"team\":\"payments\",\"requests\":2,\"input\":1100,\"output\":220,"
                             "\"estimated\":120,\"cost_usd_micro\":4950},"
                             "{\"day\":259200000,\"team\":\"search\",\"requests\":1,\"input\":10,\"output\":5,"
                             "\"estimated\":0,\"cost_usd_micro\":0}]");
    sl_buf_reset (&out);
    cr_assert_eq (sl_query_usage (store, 0, 10 * RECORDS_DAY, "user", &out), 0);
    json = sl_buf_cstr (&out);
    records_expect_in (json, "{\"day\":172800000,\"team\":\"payments\",\"user\":\"ada\",\"requests\":1,"
                             "\"input\":1000,\"output\":200,\"estimated\":0,\"cost_usd_micro\":4500},"
                             "{\"day\":172800000,\"team\":\"payments\",\"user\":\"bob\",\"requests\":1,"
                             "\"input\":100,\"output\":20,\"estimated\":120,\"cost_usd_micro\":450}");
    sl_buf_reset (&out);
    cr_assert_eq (sl_query_usage (store, 0, 10 * RECORDS_DAY, "model", &out), 0);
    records_expect_in (sl_buf_cstr (&out), "\"model\":\"gpt-4o-mini\",\"requests\":1");
    sl_buf_reset (&out);
    cr_assert_eq (sl_query_usage (store, 3 * RECORDS_DAY, 4 * RECORDS_DAY, NULL, &out), 0);
    json = sl_buf_cstr (&out);
    records_expect_in (json, "\"group\":\"all\",\"rows\":[{\"day\":259200000,\"team\":\"search\",\"user\":\"cy\","
                             "\"model\":\"claude-x\",\"requests\":1");
    cr_expect_null (strstr (json, "payments"), "only the days asked for");
    sl_buf_reset (&out);
    cr_expect_eq (sl_query_usage (store, 0, 10 * RECORDS_DAY, "planet", &out), 1);
    cr_expect_eq (out.len, 0);

    //  The stream list: filtered by team and user, each with its identity and cost.
    cr_assert_eq (sl_query_streams (store, &(sl_query_filter_t) { .team = "payments" }, &out), 0);
    json = sl_buf_cstr (&out);
    records_expect_in (json, "\"team\":\"payments\",\"user\":\"bob\",\"usage_estimated\":true,\"cost_usd_micro\":450");
    records_expect_in (json, "\"team\":\"payments\",\"user\":\"ada\",\"usage_estimated\":false,"
                             "\"cost_usd_micro\":4500");
    cr_expect_null (strstr (json, "search"));
    sl_buf_reset (&out);
    cr_assert_eq (sl_query_streams (store, &(sl_query_filter_t) { .team = "payments", .user = "ada" }, &out), 0);
    json = sl_buf_cstr (&out);
    records_expect_in (json, "\"user\":\"ada\"");
    cr_expect_null (strstr (json, "bob"));
    sl_buf_reset (&out);
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (s_sid_a, hex);
    cr_assert_eq (sl_query_stream (store, hex, &out), 0);
    records_expect_in (sl_buf_cstr (&out), "\"part\":null,\"team\":\"payments\",\"user\":\"ada\"}");
    sl_buf_free (&out);
    sl_archive_destroy (&archive);
    sl_providers_destroy (&prices);
    sl_store_close (&store);
}

//  Three approvals as the judges' records make them: a, pending then
//  approved (each record twice: written once); b, its decision before its
//  pending record (which fills in and does not take the decision back);
//  c, still waiting. Committed.
static void
s_approvals (sl_store_t *store, sl_archive_t *archive)
{
    sl_record_meta_t meta = records_meta (1000000, 0);
    cr_assert_eq (sl_store_begin (store), 0);
    //  a: pending, then approved; the same records again change nothing.
    sl_msg_t pending = records_approval (s_sid_a, "pending", 1000000);
    sl_msg_t approved = records_approval (s_sid_a, "approved", 1004000);
    approved.body = SL_STR_LIT ("{\"approvers\":[\"team:eng\"],\"on_timeout\":\"block\",\"remember_minutes\":5,"
                                "\"self_approved\":true}");
    cr_expect_eq (sl_archive_apply (archive, &meta, &pending), 1, "new");
    cr_expect_eq (sl_archive_apply (archive, &meta, &pending), 0, "twice: nothing new");
    cr_expect_eq (sl_archive_apply (archive, &meta, &approved), 1, "decided");
    cr_expect_eq (sl_archive_apply (archive, &meta, &approved), 0);
    //  b: its decision came first (through another emitter); the pending
    //  record that follows fills in, and does not take the decision back.
    sl_msg_t b_timeout = records_approval (s_sid_b, "timeout", 1300000);
    b_timeout.name = SL_STR_NULL;
    sl_msg_t b_pending = records_approval (s_sid_b, "pending", 1000500);
    cr_expect_eq (sl_archive_apply (archive, &meta, &b_timeout), 1);
    cr_expect_eq (sl_archive_apply (archive, &meta, &b_pending), 0, "older than what the row holds");
    //  c: still waiting.
    const uint8_t sid_c [SL_SID_SIZE] = { 0xc3, 1, 2 };
    sl_msg_t c_pending = records_approval (sid_c, "pending", 1002000);
    cr_expect_eq (sl_archive_apply (archive, &meta, &c_pending), 1);
    cr_assert_eq (sl_store_commit (store), 0, "%s", sl_store_error (store));
}

//  Pending approvals (the oldest first) and decided ones (the latest
//  decision first), as sl_approval.h writes them.
static void
check_approvals (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 0);
    s_approvals (store, archive);
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_query_approvals (store, "pending", 0, &out), 0, "%s", sl_store_error (store));
    const char *json = sl_buf_cstr (&out);
    cr_expect (sl_json_valid (sl_buf_str (&out)), "%s", json);
    records_expect_in (json, "{\"approvals\":[{\"id\":\"c3010200000000000000000000000000\",\"state\":\"pending\","
                             "\"stream\":\"a10102030405060708090a0b0c0d0e0f\",\"index\":1,\"tool\":\"shell\","
                             "\"arguments\":{\"command\":\"git push --force\"},\"rule\":\"ask-push\","
                             "\"message\":\"shell wants to force-push\"");
    records_expect_in (json, "\"identity\":{\"key_id\":\"bob-ci\",\"team\":\"eng\",\"user\":\"bob\"}");
    records_expect_in (json, "\"judge\":\"judge-1\",\"created_at\":1002000,\"expires_at\":1300000,"
                             "\"approvers\":[\"team:eng\"],\"on_timeout\":\"block\",\"remember_minutes\":0}]}");
    cr_expect_null (strstr (json, "\"id\":\"a1010203"), "a is decided");
    sl_buf_reset (&out);
    cr_assert_eq (sl_query_approvals (store, "decided", 0, &out), 0);
    json = sl_buf_cstr (&out);
    cr_expect (sl_json_valid (sl_buf_str (&out)), "%s", json);
    const char *b = strstr (json, "\"id\":\"b2010203"), *a = strstr (json, "\"id\":\"a1010203");
    cr_expect (a && b && b < a, "the latest decision first: %s", json);
    records_expect_in (json, "\"decided_at\":1004000,\"approver\":\"alice@eng\",\"comment\":\"fine, once\"");
    //  The decision's details are kept: the memory it gave, and that its
    //  own caller decided it.
    records_expect_in (json, "\"remember_minutes\":5,\"self_approved\":true,\"decided_at\":1004000");
    cr_expect_null (strstr (json, "\"id\":\"c3010200"));
    sl_buf_reset (&out);
    cr_expect_eq (sl_query_approvals (store, "maybe", 0, &out), 1);
    cr_expect_eq (out.len, 0);
    sl_buf_free (&out);
    sl_archive_destroy (&archive);
    sl_store_close (&store);
}

//  Streams that are only begun (a start each): n of them, ten a
//  millisecond, from t0, committed.
static void
s_starts (sl_store_t *store, int n, int64_t t0)
{
    sl_archive_t *archive = sl_archive_new (store, 0);
    cr_assert_eq (sl_store_begin (store), 0);
    for (int i = 0; i < n; i++) {
        uint8_t sid [SL_SID_SIZE] = { 0x5e, (uint8_t) (i >> 8), (uint8_t) i, 0xee };
        sl_msg_t m = records_msg (SL_MSG_START, sid, 0);
        m.model = SL_STR_LIT ("gpt-x");
        sl_record_meta_t meta = records_meta (t0 + i / 10, 0);
        cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1, "%s", sl_store_error (store));
    }
    cr_assert_eq (sl_archive_commit (archive), 0, "%s", sl_store_error (store));
    sl_archive_destroy (&archive);
}

typedef struct {
    int lines;
    bool in_order;
    char last_sid [SL_SID_HEX_SIZE];
    int64_t last_start;
} s_order_t;

static void
s_ordered_line (void *arg, const char *line, size_t size)
{
    s_order_t *o = arg;
    json_t *j = json_loadb (line, size, 0, NULL);
    cr_assert_not_null (j, "%.*s", (int) size, line);
    json_t *stream = json_object_get (j, "stream");
    const char *sid = json_string_value (json_object_get (stream, "sid"));
    int64_t started = json_integer_value (json_object_get (stream, "started_at"));
    cr_assert_not_null (sid, "%.*s", (int) size, line);
    //  Oldest first, by start then by id: each once.
    if (o->lines && (started < o->last_start || (started == o->last_start && strcmp (sid, o->last_sid) <= 0)))
        o->in_order = false;
    snprintf (o->last_sid, sizeof o->last_sid, "%s", sid);
    o->last_start = started;
    o->lines++;
    json_decref (j);
}

//  More streams than one page of the export, many started in the same
//  millisecond: every one once, oldest first; to 0 is now.
static void
check_export_pages_through_ties (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    s_starts (store, 450, 5000);
    s_order_t o = { .in_order = true };
    cr_expect_eq (sl_query_export (store, 0, 0, s_ordered_line, &o), 450, "%s", sl_store_error (store));
    cr_expect_eq (o.lines, 450);
    cr_expect (o.in_order);
    //  From and to: [5010, 5020) is streams 100 to 199.
    s_order_t part = { .in_order = true };
    cr_expect_eq (sl_query_export (store, 5010, 5020, s_ordered_line, &part), 100);
    cr_expect (part.in_order);
    cr_expect_eq (part.last_start, 5019);
    sl_store_close (&store);
}

//  Lists are bounded: a page of streams says there are more, the next
//  page is asked for by time, approvals stop at their limit.
static void
check_lists_are_bounded (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    s_starts (store, SL_QUERY_DEFAULT_LIMIT + 10, 1000);
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_query_streams (store, &(sl_query_filter_t) { 0 }, &out), 0);
    json_t *j = json_loadb (out.data, out.len, 0, NULL);
    cr_assert_not_null (j, "%s", sl_buf_cstr (&out));
    cr_expect_eq (json_array_size (json_object_get (j, "streams")), SL_QUERY_DEFAULT_LIMIT);
    cr_expect (json_is_true (json_object_get (j, "more")));
    json_decref (j);
    sl_buf_reset (&out);
    cr_assert_eq (sl_query_streams (store, &(sl_query_filter_t) { .before = 1000 + 1 }, &out), 0);
    j = json_loadb (out.data, out.len, 0, NULL);
    cr_expect_eq (json_array_size (json_object_get (j, "streams")), 10, "the first millisecond's ten");
    cr_expect (json_is_false (json_object_get (j, "more")));
    json_decref (j);
    sl_archive_t *archive = sl_archive_new (store, 0);
    s_approvals (store, archive);
    sl_buf_reset (&out);
    cr_assert_eq (sl_query_approvals (store, NULL, 2, &out), 0);
    j = json_loadb (out.data, out.len, 0, NULL);
    cr_expect_eq (json_array_size (json_object_get (j, "approvals")), 2, "%s", sl_buf_cstr (&out));
    json_decref (j);
    sl_archive_destroy (&archive);
    sl_buf_free (&out);
    sl_store_close (&store);
}

static void
s_suite (s_env_t *env)
{
    check_queries (env);
    check_policies_and_gaps (env);
    check_export (env);
    check_usage_and_identity (env);
    check_approvals (env);
    check_export_pages_through_ties (env);
    check_lists_are_bounded (env);
}

Test (sl_query, the_suite_on_sqlite)
{
    store_env_sqlite (s_suite);
}

Test (sl_query, the_suite_on_postgresql)
{
    store_env_postgres (s_suite);
}
