/*  Unit tests: services/audit/recorder/sl_archive, records into rows,
    each once: a resend or a replay writes nothing, a rolled-back batch is
    written when it comes again, text is kept valid and within its bound,
    a stream's cost follows its usage at its model's price, approvals keep
    their latest state; on SQLite and PostgreSQL (store_env.h). The chain
    it writes: test_sl_chain.c. */
#include <criterion/criterion.h>
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
check_written_once (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 0);
    cr_assert_eq (sl_store_begin (store), 0);
    cr_expect_eq (records_stream (archive, s_sid_a, 1000000, "mock-tools", "k1"), 9, "every record written");
    cr_assert_eq (sl_store_commit (store), 0, "%s", sl_store_error (store));
    //  The same records again (a resend), then again from another emitter
    //  (the stream re-sent after a crash): nothing changes.
    for (int round = 0; round < 2; round++) {
        cr_assert_eq (sl_store_begin (store), 0);
        cr_expect_eq (records_stream (archive, s_sid_a, 2000000 + round, "mock-tools", "k1"), 0, "nothing new");
        cr_assert_eq (sl_store_commit (store), 0);
    }
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM events"), 9);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM blocks"), 3);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM verdicts"), 2);
    cr_expect_eq (records_count (store, "SELECT calls FROM streams"), 2);
    cr_expect_eq (records_count (store, "SELECT blocked FROM streams"), 1);
    cr_expect_eq (records_count (store, "SELECT blocks FROM streams"), 3);
    cr_expect_eq (records_count (store, "SELECT started_at FROM streams"), 1000000);
    cr_expect_eq (records_count (store, "SELECT duration_ms FROM streams"), 250);
    cr_expect_eq (records_count (store, "SELECT usage_total FROM streams"), 65);
    //  A verdict on the request (the gateway's request rules) is kept with
    //  the part it judged, and is no call.
    sl_record_meta_t rmeta = records_meta (1000050, 0);
    sl_msg_t rv = records_msg (SL_MSG_VERDICT, s_sid_a, 2);
    rv.part = SL_STR_LIT ("messages[2].parts[0]");
    rv.id = SL_STR_LIT ("call_1");
    rv.name = SL_STR_LIT ("read_file");
    rv.action = SL_ACT_REDACT;
    rv.rule = SL_STR_LIT ("aws-key");
    rv.reason = SL_STR_LIT ("rule aws-key: 1 match replaced");
    cr_assert_eq (sl_store_begin (store), 0);
    cr_expect_eq (sl_archive_apply (archive, &rmeta, &rv), 1);
    cr_assert_eq (sl_store_commit (store), 0, "%s", sl_store_error (store));
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM verdicts WHERE side = 'request' AND "
                                        "part = 'messages[2].parts[0]' AND action = 'redact' AND idx IS NULL"), 1);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM verdicts WHERE side = 'response'"), 2);
    cr_expect_eq (records_count (store, "SELECT calls FROM streams"), 2, "a request verdict is no call");
    //  The emitter's own event at the same place is another record.
    sl_record_meta_t own = records_meta (1000100, 1);
    sl_msg_t e = records_msg (SL_MSG_ERROR, s_sid_a, 13);
    e.code = SL_STR_LIT ("illegal_output");
    e.message = SL_STR_LIT ("withheld");
    e.status = 502;
    cr_assert_eq (sl_store_begin (store), 0);
    cr_expect_eq (sl_archive_apply (archive, &own, &e), 1);
    cr_expect_eq (sl_archive_apply (archive, &own, &e), 0);
    cr_assert_eq (sl_store_commit (store), 0);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM streams WHERE error_code = 'illegal_output' "
                                        "AND error_source = 'sluice' AND error_status = 502"), 1);
    //  Records of a transaction rolled back are written when they come again.
    cr_assert_eq (sl_store_begin (store), 0);
    cr_expect_eq (records_stream (archive, s_sid_b, 3000000, "gpt-x", "k2"), 9);
    sl_store_rollback (store);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM streams"), 1);
    cr_assert_eq (sl_store_begin (store), 0);
    cr_expect_eq (records_stream (archive, s_sid_b, 3000000, "gpt-x", "k2"), 9);
    cr_assert_eq (sl_store_commit (store), 0);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM streams"), 2);
    sl_archive_destroy (&archive);
    sl_store_close (&store);
}

static void
check_text (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 8);
    sl_record_meta_t meta = records_meta (5000, 0);
    //  Cut at 8 bytes, on a character boundary (é is two bytes).
    sl_msg_t m = records_msg (SL_MSG_BLOCK, s_sid_a, 3);
    m.kind = SL_B_END;
    m.block = SL_BK_TEXT;
    m.index = 0;
    m.text = SL_STR_LIT ("abcdefg\xc3\xa9tail");
    cr_assert_eq (sl_store_begin (store), 0);
    cr_expect_eq (sl_archive_apply (archive, &meta, &m), 1, "%s", sl_store_error (store));
    //  Bytes that are not UTF-8, and a NUL: kept as U+FFFD.
    m.seq = 4;
    m.index = 1;
    m.text = sl_str_n ("a\xff" "b\0c", 5);
    sl_archive_t *wide = sl_archive_new (store, 0);
    cr_expect_eq (sl_archive_apply (wide, &meta, &m), 1, "%s", sl_store_error (store));
    cr_assert_eq (sl_store_commit (store), 0, "%s", sl_store_error (store));
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_query_stream (store, "a1010203040506070809...", &out), 1, "no such stream");
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (s_sid_a, hex);
    cr_assert_eq (sl_query_stream (store, hex, &out), 0, "%s", sl_store_error (store));
    const char *json = sl_buf_cstr (&out);
    cr_expect_not_null (strstr (json, "\"content\":\"abcdefg\",\"content_bytes\":13,\"truncated\":true"), "%s", json);
    cr_expect_not_null (strstr (json, "\"content\":\"a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\""), "%s", json);
    cr_expect (sl_json_valid (sl_buf_str (&out)));
    sl_buf_free (&out);
    sl_archive_destroy (&wide);
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

//  Who called and what it cost: each stream's cost at its model's
//  price, from usage reported or estimated; a model without a price has
//  no cost (NULL), not a zero one.
static void
check_cost_and_identity (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 0);
    sl_providers_t *prices = NULL;
    s_spenders (store, archive, &prices);
    cr_expect_eq (records_count (store, "SELECT cost_usd_micro FROM streams WHERE team = 'payments' AND "
                                        "user_name = 'ada'"), 4500, "1000 x 2.5 + 200 x 10 per million");
    cr_expect_eq (records_count (store, "SELECT cost_usd_micro FROM streams WHERE user_name = 'bob'"), 450);
    cr_expect_eq (records_count (store, "SELECT usage_estimated FROM streams WHERE user_name = 'bob'"), 1);
    cr_expect_eq (records_count (store, "SELECT usage_estimated FROM streams WHERE user_name = 'ada'"), 0);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM streams WHERE user_name = 'cy' "
                                        "AND cost_usd_micro IS NULL"),
                  1, "no price: no cost, not a zero one");
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM verdicts WHERE team = 'payments'"), 2);
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

static void
check_approvals (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 0);
    s_approvals (store, archive);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM approvals"), 3);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM approvals WHERE state = 'timeout' AND tool = 'shell' "
                                        "AND created_at = 1000500 AND updated_at = 1300000"), 1);
    sl_archive_destroy (&archive);
    sl_store_close (&store);
}

//  Every record written joins the chain, in the transaction that wrote
//  it: none before the commit, none after a rollback. Off (only to
//  measure what the chain costs), none at all.
static void
check_records_join_the_chain (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 0);
    cr_assert_eq (sl_store_begin (store), 0);
    cr_assert_eq (records_stream (archive, s_sid_a, 1000000, "m", "k"), 9);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM chain"), 0, "written at the commit");
    cr_assert_eq (sl_archive_commit (archive), 0, "%s", sl_store_error (store));
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM chain"), 9);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM events WHERE chain_pos IS NULL"), 0,
                  "each ledger row names its entry");
    cr_assert_eq (sl_store_begin (store), 0);
    cr_assert_eq (records_stream (archive, s_sid_b, 2000000, "m", "k"), 9);
    sl_archive_rollback (archive);
    cr_expect_not (sl_store_in_transaction (store));
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM chain"), 9, "the rolled-back batch's are forgotten");
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM streams"), 1);
    sl_archive_t *unchained = sl_archive_new (store, 0);
    sl_archive_set_chained (unchained, false);
    cr_assert_eq (sl_store_begin (store), 0);
    cr_assert_eq (records_stream (unchained, s_sid_b, 2000000, "m", "k"), 9);
    cr_assert_eq (sl_archive_commit (unchained), 0, "%s", sl_store_error (store));
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM chain"), 9, "off: no entry");
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM streams"), 2, "the records are written all the same");
    sl_archive_destroy (&unchained);
    sl_archive_destroy (&archive);
    sl_store_close (&store);
}

//  A would-be verdict (a rule in shadow mode): kept on side shadow, in the
//  chain, counted in no stream's calls or blocks, answered per rule.
static void
check_shadow (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 0);
    cr_assert_eq (sl_store_begin (store), 0);
    cr_expect_eq (records_stream (archive, s_sid_a, 1000000, "mock-tools", "k1"), 9);
    sl_record_meta_t meta = records_meta (1000006, 0);
    sl_msg_t w = records_msg (SL_MSG_VERDICT, s_sid_a, 6);
    w.index = 1;
    w.id = SL_STR_LIT ("call_weather_1");
    w.name = SL_STR_LIT ("get_weather");
    w.action = SL_ACT_BLOCK;
    w.check = SL_CHK_RAN;
    w.rule = SL_STR_LIT ("no-weather");
    w.reason = SL_STR_LIT ("rule no-weather matched");
    w.mode = SL_MODE_SHADOW;
    w.team = SL_STR_LIT ("payments");
    w.text = SL_STR_LIT ("{\"city\":\"Paris\"}");
    cr_expect_eq (sl_archive_apply (archive, &meta, &w), 1);
    cr_assert_eq (sl_archive_commit (archive), 0, "%s", sl_store_error (store));
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM verdicts WHERE side = 'shadow' AND rule = 'no-weather' "
                                        "AND action = 'block'"), 1);
    cr_expect_eq (records_count (store, "SELECT calls FROM streams"), 2, "a would-be verdict is no call");
    cr_expect_eq (records_count (store, "SELECT blocked FROM streams"), 1, "and blocks nothing");
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM chain"), 10, "in the chain");

    sl_buf_t out = { 0 };
    cr_assert_eq (sl_query_shadow (store, NULL, 0, 2000000, 0, 0, &out), 0, "%s", sl_store_error (store));
    const char *json = sl_buf_cstr (&out);
    records_expect_in (json, "\"rules\":[{\"rule\":\"no-weather\",\"would_block\":1,\"would_allow\":0,"
                             "\"would_ask\":0,\"total\":1}]");
    records_expect_in (json, "\"tool\":\"get_weather\"");
    records_expect_in (json, "\"team\":\"payments\"");
    records_expect_in (json, "\"streams\":[{\"sid\":\"a1");
    records_expect_in (json, "\"over_time\":[[");
    sl_buf_reset (&out);
    cr_assert_eq (sl_query_shadow (store, "no-rm-rf", 0, 2000000, 0, 0, &out), 0);
    records_expect_in (sl_buf_cstr (&out), "\"rules\":[],\"over_time\":[],\"calls\":[]");
    sl_buf_reset (&out);
    //  The charts count what was decided only.
    cr_assert_eq (sl_query_stats (store, 0, 2000000, 0, &out), 0);
    cr_expect_null (strstr (sl_buf_cstr (&out), "no-weather"), "%s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    sl_archive_destroy (&archive);
    sl_store_close (&store);
}

static void
s_suite (s_env_t *env)
{
    check_shadow (env);
    check_written_once (env);
    check_text (env);
    check_cost_and_identity (env);
    check_approvals (env);
    check_records_join_the_chain (env);
}

Test (sl_archive, the_suite_on_sqlite)
{
    store_env_sqlite (s_suite);
}

Test (sl_archive, the_suite_on_postgresql)
{
    store_env_postgres (s_suite);
}
