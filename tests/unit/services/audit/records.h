/*  records.h - records as an emitter spools them, for the audit's unit
    suites that write a store and read it back (the archive, the store's
    questions, retention, the tool inventory): a whole stream, a team's
    spending, an approval, a stream as the console shows it, and a count
    read from the store. Header-only:
    each suite includes it once. */
#ifndef RECORDS_H
#define RECORDS_H

#include <criterion/criterion.h>
#include <string.h>

#include "services/audit/recorder/sl_archive.h"
#include "services/audit/store/sl_store.h"

#define RECORDS_DAY 86400000LL          //  a day, ms

//  A record of type for the stream sid, at seq.
static inline sl_msg_t
records_msg (sl_msg_type_t type, const uint8_t *sid, uint64_t seq)
{
    sl_msg_t m;
    sl_msg_init (&m, type);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.seq = seq;
    return m;
}

//  Where a record came from: emitter-1, at (also its number), sub.
static inline sl_record_meta_t
records_meta (int64_t at, uint8_t sub)
{
    return (sl_record_meta_t) { SL_STR_LIT ("emitter-1"), 77, (uint64_t) at, sub, at };
}

//  A whole stream: start, message, a text block, a verdict that blocks
//  run_shell and its notice, a verdict that allows get_weather and the
//  call, finish, end. Applied in order; returns how many were written.
static inline int
records_stream (sl_archive_t *archive, const uint8_t *sid, int64_t t0, const char *model, const char *key)
{
    int written = 0;
    sl_record_meta_t meta = records_meta (t0, 0);
    sl_msg_t m = records_msg (SL_MSG_START, sid, 0);
    m.client_dialect = SL_DIALECT_OPENAI;
    m.upstream_dialect = SL_DIALECT_OPENAI;
    m.model = sl_str (model);
    m.provider = SL_STR_LIT ("mock-openai");
    m.key_id = sl_str (key);
    m.policy = SL_STR_LIT ("0123456789ab");
    m.flags = SL_F_STREAM;
    m.last_user = SL_STR_LIT ("Please tidy up my disk");
    m.tools = SL_STR_LIT ("[{\"name\":\"get_weather\",\"schema\":{}},{\"name\":\"run_shell\",\"schema\":{}}]");
    written += sl_archive_apply (archive, &meta, &m);
    m = records_msg (SL_MSG_BLOCK, sid, 1);
    m.kind = SL_B_MESSAGE;
    m.id = SL_STR_LIT ("chatcmpl-1");
    m.model = sl_str (model);
    meta.at = t0 + 1;
    written += sl_archive_apply (archive, &meta, &m);
    m = records_msg (SL_MSG_BLOCK, sid, 4);
    m.kind = SL_B_END;
    m.block = SL_BK_TEXT;
    m.index = 0;
    m.text = SL_STR_LIT ("Let me check the weather and tidy up.");
    meta.at = t0 + 2;
    written += sl_archive_apply (archive, &meta, &m);
    m = records_msg (SL_MSG_VERDICT, sid, 5);
    m.index = 1;
    m.id = SL_STR_LIT ("call_weather_1");
    m.name = SL_STR_LIT ("get_weather");
    m.action = SL_ACT_ALLOW;
    m.check = SL_CHK_DEFAULT;
    m.reason = SL_STR_LIT ("no rule matched");
    m.latency_us = 3;
    m.text = SL_STR_LIT ("{\"city\":\"Paris\"}");
    meta.at = t0 + 3;
    written += sl_archive_apply (archive, &meta, &m);
    m = records_msg (SL_MSG_BLOCK, sid, 8);
    m.kind = SL_B_END;
    m.block = SL_BK_TOOL_CALL;
    m.index = 1;
    m.id = SL_STR_LIT ("call_weather_1");
    m.name = SL_STR_LIT ("get_weather");
    m.text = SL_STR_LIT ("{\"city\":\"Paris\"}");
    m.flags = SL_F_ARGS_VALID;
    written += sl_archive_apply (archive, &meta, &m);
    m = records_msg (SL_MSG_VERDICT, sid, 9);
    m.index = 2;
    m.id = SL_STR_LIT ("call_shell_1");
    m.name = SL_STR_LIT ("run_shell");
    m.action = SL_ACT_BLOCK;
    m.check = SL_CHK_RAN;
    m.rule = SL_STR_LIT ("no-rm-rf");
    m.reason = SL_STR_LIT ("rule no-rm-rf matched");
    m.latency_us = 900;
    m.text = SL_STR_LIT ("{\"command\":\"rm -rf /\"}");
    meta.at = t0 + 4;
    written += sl_archive_apply (archive, &meta, &m);
    m = records_msg (SL_MSG_BLOCK, sid, 12);
    m.kind = SL_B_END;
    m.block = SL_BK_TEXT;
    m.index = 2;
    m.flags = SL_F_REPLACED;
    m.text = SL_STR_LIT ("\n\nsluice blocked a call to run_shell: the command deletes files recursively.");
    written += sl_archive_apply (archive, &meta, &m);
    m = records_msg (SL_MSG_BLOCK, sid, 13);
    m.kind = SL_B_FINISH;
    m.finish = SL_FIN_STOP;
    m.has_usage = true;
    m.usage = (sl_usage_t) { 40, 25, 65, -1, -1, -1 };
    meta.at = t0 + 5;
    written += sl_archive_apply (archive, &meta, &m);
    m = records_msg (SL_MSG_END, sid, 14);
    meta.at = t0 + 250;
    written += sl_archive_apply (archive, &meta, &m);
    return written;
}

//  One integer the store answers sql with (the test stops when it fails).
static inline int64_t
records_count (sl_store_t *store, const char *sql)
{
    int64_t n = -1;
    cr_assert_eq (sl_store_query_int (store, sql, NULL, 0, -1, &n), 0, "%s: %s", sql, sl_store_error (store));
    return n;
}

//  A stream of team/user asking for model at t0, with usage (estimated:
//  the emitter's own message, as it raises one) and one verdict.
static inline void
records_spend (sl_archive_t *archive, const uint8_t *sid, int64_t t0, const char *model, const char *team,
               const char *user, sl_usage_t usage, bool estimated)
{
    sl_record_meta_t meta = records_meta (t0, 0);
    sl_msg_t m = records_msg (SL_MSG_START, sid, 0);
    m.model = sl_str (model);
    m.key_id = SL_STR_LIT ("e6903f57aaf9");
    m.team = sl_str (team);
    m.user = sl_str (user);
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    m = records_msg (SL_MSG_VERDICT, sid, 3);
    m.index = 0;
    m.name = SL_STR_LIT ("run_shell");
    m.action = SL_ACT_ALLOW;
    m.check = SL_CHK_DEFAULT;
    m.team = sl_str (team);
    m.user = sl_str (user);
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    m = records_msg (SL_MSG_BLOCK, sid, 5);
    m.kind = SL_B_FINISH;
    m.finish = SL_FIN_STOP;
    if (!estimated) {
        m.has_usage = true;
        m.usage = usage;
    }
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    m = records_msg (SL_MSG_END, sid, 6);
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    if (estimated) {
        //  Raised by the emitter at the end: keyed to the end, sub 1.
        m = records_msg (SL_MSG_BLOCK, sid, 6);
        m.kind = SL_B_MESSAGE;
        m.flags = SL_F_ESTIMATED;
        m.has_usage = true;
        m.usage = usage;
        sl_record_meta_t own = records_meta (t0, 1);
        cr_assert_eq (sl_archive_apply (archive, &own, &m), 1);
    }
}

//  want is in json.
static inline void
records_expect_in (const char *json, const char *want)
{
    cr_expect_not_null (strstr (json, want), "want %s in %s", want, json);
}

//  An approval record as a judge makes it.
static inline sl_msg_t
records_approval (const uint8_t *id, const char *state, int64_t ts)
{
    sl_msg_t m = records_msg (SL_MSG_APPROVAL, id, 0);
    m.code = sl_str (state);
    m.stream = SL_STR_LIT ("a10102030405060708090a0b0c0d0e0f");
    m.index = 1;
    m.name = SL_STR_LIT ("shell");
    m.text = SL_STR_LIT ("{\"command\":\"git push --force\"}");
    m.rule = SL_STR_LIT ("ask-push");
    m.message = SL_STR_LIT ("shell wants to force-push");
    m.digest = SL_STR_LIT ("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    m.policy = SL_STR_LIT ("0123456789ab");
    m.key_id = SL_STR_LIT ("bob-ci");
    m.team = SL_STR_LIT ("eng");
    m.user = SL_STR_LIT ("bob");
    m.model = SL_STR_LIT ("gpt-4o");
    m.instance = SL_STR_LIT ("judge-1");
    m.ts = ts;
    m.expires = 1000000 + 300000;
    m.body = SL_STR_LIT ("{\"approvers\":[\"team:eng\"],\"on_timeout\":\"block\",\"remember_minutes\":0}");
    if (strcmp (state, "pending") != 0) {
        m.approver = SL_STR_LIT ("alice@eng");
        m.reason = SL_STR_LIT ("fine, once");
    }
    return m;
}

//  A recorded stream as the console shows it: the request (run_shell
//  offered, over MCP), text, get_weather allowed and called, run_shell
//  blocked (its notice instead), finished for tool calls. Committed.
static inline void
records_recorded (sl_store_t *store, const uint8_t *sid)
{
    sl_archive_t *archive = sl_archive_new (store, 0);
    cr_assert_eq (sl_store_begin (store), 0);
    sl_record_meta_t meta = { SL_STR_LIT ("e1"), 1, 1, 0, 1000 };
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_START);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.model = SL_STR_LIT ("mock-tools");
    m.client_dialect = m.upstream_dialect = SL_DIALECT_OPENAI;
    m.tools = SL_STR_LIT ("[{\"name\":\"run_shell\",\"schema\":{\"type\":\"object\"}}]");
    m.last_user = SL_STR_LIT ("tidy up");
    m.mcp = SL_STR_LIT ("tools/call run_shell");
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    struct { uint8_t type; uint8_t kind; uint8_t block; int index; const char *name, *id, *text; uint8_t action;
             uint32_t flags; } recs [] = {
        { SL_MSG_BLOCK, SL_B_MESSAGE, 0, -1, NULL, "chatcmpl-9", NULL, 0, 0 },
        { SL_MSG_BLOCK, SL_B_END, SL_BK_TEXT, 0, NULL, NULL, "Tidying up.", 0, 0 },
        { SL_MSG_VERDICT, 0, 0, 1, "get_weather", "call_w", "{\"city\":\"Paris\"}", SL_ACT_ALLOW, 0 },
        { SL_MSG_BLOCK, SL_B_END, SL_BK_TOOL_CALL, 1, "get_weather", "call_w", "{\"city\":\"Paris\"}", 0, SL_F_ARGS_VALID },
        { SL_MSG_VERDICT, 0, 0, 2, "run_shell", "call_s", "{\"command\":\"rm -rf /\"}", SL_ACT_BLOCK, 0 },
        { SL_MSG_BLOCK, SL_B_END, SL_BK_TEXT, 2, NULL, NULL, "\n\nsluice blocked a call to run_shell.", 0, SL_F_REPLACED },
        { SL_MSG_BLOCK, SL_B_FINISH, 0, -1, NULL, NULL, NULL, 0, 0 },
        { SL_MSG_END, 0, 0, -1, NULL, NULL, NULL, 0, 0 },
    };
    for (size_t i = 0; i < sizeof recs / sizeof recs [0]; i++) {
        sl_msg_init (&m, recs [i].type);
        memcpy (m.sid, sid, SL_SID_SIZE);
        m.seq = i + 1;
        m.kind = recs [i].kind;
        m.block = recs [i].block;
        m.index = recs [i].index;
        m.name = sl_str (recs [i].name);
        m.id = sl_str (recs [i].id);
        m.text = sl_str (recs [i].text);
        m.action = recs [i].action;
        m.flags = recs [i].flags;
        if (m.type == SL_MSG_BLOCK && m.kind == SL_B_FINISH)
            m.finish = SL_FIN_TOOL_CALLS;
        meta.at = 1000 + (int64_t) i;
        cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1, "%s", sl_store_error (store));
    }
    cr_assert_eq (sl_store_commit (store), 0);
    sl_archive_destroy (&archive);
}

#endif
