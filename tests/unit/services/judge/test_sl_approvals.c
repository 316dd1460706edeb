/*  Unit tests: services/judge/sl_approvals (the approvals a judge holds:
    bound to their call, decided once, expiring, cancelled, remembered). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "services/judge/sl_approvals.h"

static sl_approvals_t *reg;
static sl_ask_spec_t spec;
static char *approvers [] = { (char *) "team:platform" };
static int ended;                       //  approvals the each-callback saw
static sl_approval_state_t last_state;
static sl_check_t last_check;           //  the outcome the judge library would get

static void
s_setup (void)
{
    reg = sl_approvals_new ("judge-1", 7);
    sl_ask_spec_defaults (&spec);
    spec.timeout_ms = 1000;
    spec.remember_max_minutes = 10;
    spec.approvers = approvers;
    spec.approver_count = 1;
    ended = 0;
}

static void
s_teardown (void)
{
    sl_approvals_destroy (&reg);
}

TestSuite (sl_approvals, .init = s_setup, .fini = s_teardown);

static void
s_each (void *arg, const sl_approval_t *a)
{
    (void) arg;
    ended++;
    last_state = sl_approval_state (a);
    sl_llm_result_t r;
    sl_approvals_outcome (a, &r);
    last_check = r.check;
    sl_llm_result_clear (&r);
}

//  Ask about a call of user@eng with key_id; the approval's id into id.
static int
s_ask_as (const char *key_id, const char *user, uint64_t ticket, const char *digest, int64_t now, char *id,
          sl_llm_result_t *earlier)
{
    uint8_t sid [SL_SID_SIZE] = { 1, 2, 3 };
    sl_judge_ask_t ask = {
        .ticket = ticket, .kind = SL_JUDGE_ASK_PERSON, .rule = "push", .sid = sid, .index = 2,
        .person = &spec, .digest = digest, .message = sl_str ("may bob push?"),
        .tool = sl_str ("run_shell"), .arguments = sl_str ("{\"command\":\"git push\"}"),
        .key_id = sl_str (key_id), .team = sl_str ("eng"), .user = sl_str (user),
        .model = sl_str ("gpt-x"), .policy = "pol1"
    };
    const sl_approval_t *a = NULL;
    sl_llm_result_t none;
    int rc = sl_approvals_add (reg, &ask, now, &a, earlier ? earlier : &none);
    if (rc == 0 && id)
        snprintf (id, SL_APPROVAL_ID_SIZE, "%s", sl_approval_id (a));
    return rc;
}

//  Ask about a call of bob@eng (key k-bob).
static int
s_ask (uint64_t ticket, const char *digest, int64_t now, char *id, sl_llm_result_t *earlier)
{
    return s_ask_as ("k-bob", "bob", ticket, digest, now, id, earlier);
}

#define DIGEST "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define OTHER  "f123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static sl_approval_decision_t
s_by_platform (bool approve)
{
    return (sl_approval_decision_t) { .approve = approve, .comment = "ok",
                                      .by = { .team = sl_str ("platform"), .user = sl_str ("alice") },
                                      .approver = "alice@platform" };
}

Test (sl_approvals, approved_once_with_its_outcome)
{
    char id [SL_APPROVAL_ID_SIZE];
    cr_assert_eq (s_ask (5, DIGEST, 1000, id, NULL), 0);
    cr_expect_eq (strlen (id), 32);
    cr_expect_eq (sl_approvals_pending (reg), 1);
    sl_approval_decision_t d = s_by_platform (true);
    const sl_approval_t *a;
    const char *why;
    cr_assert_eq (sl_approvals_decide (reg, id, &d, 1500, &a, &why), 200, "%s", why);
    cr_expect_eq (sl_approval_ticket (a), 5);
    cr_expect_eq (sl_approvals_pending (reg), 0);
    sl_llm_result_t r;
    sl_approvals_outcome (a, &r);
    cr_expect_eq (r.check, SL_CHK_APPROVED);
    cr_expect_str_eq (r.approver, "alice@platform");
    cr_expect_str_eq (r.explanation, "ok");
    sl_llm_result_clear (&r);
    //  The same decision again counts once, and says what happened.
    cr_expect_eq (sl_approvals_decide (reg, id, &d, 1600, &a, &why), 409);
    cr_expect (strstr (why, "approved by alice@platform"), "%s", why);
    d.approve = false;
    cr_expect_eq (sl_approvals_decide (reg, id, &d, 1600, &a, &why), 409, "nor can it be turned round");
}

Test (sl_approvals, refusals_say_why)
{
    char id [SL_APPROVAL_ID_SIZE];
    cr_assert_eq (s_ask (5, DIGEST, 1000, id, NULL), 0);
    const sl_approval_t *a;
    const char *why;
    sl_approval_decision_t d = s_by_platform (true);
    cr_expect_eq (sl_approvals_decide (reg, "00000000000000000000000000000000", &d, 1100, &a, &why), 404);
    sl_approval_decision_t stranger = d;
    stranger.by = (sl_ask_by_t) { .team = sl_str ("eng"), .user = sl_str ("bob"), .approver = true };
    cr_expect_eq (sl_approvals_decide (reg, id, &stranger, 1100, &a, &why), 403, "the rule names its approvers");
    d.digest = OTHER;
    cr_expect_eq (sl_approvals_decide (reg, id, &d, 1100, &a, &why), 409);
    cr_expect (strstr (why, "digest"), "%s", why);
    d.digest = DIGEST;
    d.policy = "pol0";
    cr_expect_eq (sl_approvals_decide (reg, id, &d, 1100, &a, &why), 409);
    cr_expect (strstr (why, "stale"), "%s", why);
    d.policy = "pol1";
    d.remember_minutes = 11;
    cr_expect_eq (sl_approvals_decide (reg, id, &d, 1100, &a, &why), 400, "longer than the rule allows");
    d.remember_minutes = 0;
    cr_expect_eq (sl_approvals_pending (reg), 1, "nothing above changed it");
    //  Past its expiry, even before a sweep, it cannot be decided.
    cr_expect_eq (sl_approvals_decide (reg, id, &d, 2000, &a, &why), 410);
    cr_expect_eq (sl_approvals_pending (reg), 1);
    cr_expect_eq (sl_approvals_expire (reg, 2000, s_each, NULL), 1);
    cr_expect_eq (last_state, SL_APPROVAL_TIMEOUT);
    cr_expect_eq (sl_approvals_decide (reg, id, &d, 2100, &a, &why), 410);
    sl_llm_result_t r;
    sl_approvals_outcome (a, &r);
    cr_expect_eq (r.check, SL_CHK_TIMEOUT);
    sl_llm_result_clear (&r);
    //  Long after, it is forgotten.
    sl_approvals_expire (reg, 2000 + SL_APPROVALS_KEEP_MS, NULL, NULL);
    cr_expect_eq (sl_approvals_decide (reg, id, &d, 2000 + SL_APPROVALS_KEEP_MS, &a, &why), 404);
}

Test (sl_approvals, memory_covers_the_same_call_of_the_same_caller)
{
    char id [SL_APPROVAL_ID_SIZE];
    cr_assert_eq (s_ask (5, DIGEST, 1000, id, NULL), 0);
    sl_approval_decision_t d = s_by_platform (true);
    d.remember_minutes = 2;
    const sl_approval_t *a;
    const char *why;
    cr_assert_eq (sl_approvals_decide (reg, id, &d, 1100, &a, &why), 200);
    cr_expect_eq (sl_approval_remember_minutes (a), 2);
    sl_llm_result_t earlier = { 0 };
    cr_expect_eq (s_ask (6, DIGEST, 60000, NULL, &earlier), 1, "covered: nothing added");
    cr_expect_eq (earlier.check, SL_CHK_APPROVED_EARLIER);
    cr_expect_str_eq (earlier.approval, id);
    cr_expect_str_eq (earlier.approver, "alice@platform");
    sl_llm_result_clear (&earlier);
    cr_expect_eq (sl_approvals_pending (reg), 0);
    cr_expect_eq (s_ask (7, OTHER, 60000, NULL, NULL), 0, "another call is asked about");
    cr_expect_eq (s_ask (8, DIGEST, 1100 + 2 * 60000, NULL, NULL), 0, "the memory ran out");
    sl_approvals_expire (reg, 1100 + 2 * 60000, NULL, NULL);
    cr_expect_eq (sl_approvals_grants (reg), 0);
}

//  Every user of a signing key shares its key id: a memory given for one
//  token's call is that user's, never every token of the key.
Test (sl_approvals, a_memory_of_a_token_is_its_users_only)
{
    char id [SL_APPROVAL_ID_SIZE];
    cr_assert_eq (s_ask_as ("jwt:idp-1", "bob", 5, DIGEST, 1000, id, NULL), 0);
    sl_approval_decision_t d = s_by_platform (true);
    d.remember_minutes = 5;
    const sl_approval_t *a;
    const char *why;
    cr_assert_eq (sl_approvals_decide (reg, id, &d, 1100, &a, &why), 200, "%s", why);
    sl_llm_result_t earlier = { 0 };
    cr_expect_eq (s_ask_as ("jwt:idp-1", "bob", 6, DIGEST, 2000, NULL, &earlier), 1, "bob's token: covered");
    sl_llm_result_clear (&earlier);
    cr_expect_eq (s_ask_as ("jwt:idp-1", "eve", 7, DIGEST, 2000, NULL, NULL), 0, "eve's token of the same key: asked");
}

Test (sl_approvals, a_grant_from_another_judge_counts)
{
    sl_approvals_grant (reg, DIGEST, sl_str ("k-bob"), sl_str ("eng"), sl_str ("bob"), "abc", "alice", 5000);
    sl_llm_result_t earlier = { 0 };
    cr_expect_eq (s_ask (5, DIGEST, 1000, NULL, &earlier), 1);
    cr_expect_str_eq (earlier.approval, "abc");
    sl_llm_result_clear (&earlier);
    sl_approvals_grant (reg, OTHER, sl_str ("k-eve"), sl_str ("eng"), sl_str ("eve"), "abd", "alice", 5000);
    cr_expect_eq (s_ask (6, OTHER, 1000, NULL, NULL), 0, "another caller's memory is not bob's");
    sl_approvals_grant (reg, "short", sl_str ("k-bob"), SL_STR_NULL, SL_STR_NULL, "x", "y", 5000);
    cr_expect_eq (sl_approvals_grants (reg), 2, "a malformed digest is not kept");
}

Test (sl_approvals, cancels_and_stops_end_what_is_pending)
{
    char id [SL_APPROVAL_ID_SIZE];
    cr_assert_eq (s_ask (5, DIGEST, 1000, id, NULL), 0);
    cr_assert_eq (s_ask (6, OTHER, 1000, NULL, NULL), 0);
    cr_assert_eq (s_ask (7, OTHER, 1000, NULL, NULL), 0);
    sl_approvals_cancel_ticket (reg, 5, 1100, s_each, NULL);
    cr_expect_eq (ended, 1);
    cr_expect_eq (last_state, SL_APPROVAL_CANCELLED);
    sl_approvals_cancel_ticket (reg, 5, 1100, s_each, NULL);
    cr_expect_eq (ended, 1, "once");
    char stream [SL_SID_HEX_SIZE];
    uint8_t sid [SL_SID_SIZE] = { 1, 2, 3 };
    sl_sid_hex (sid, stream);
    cr_expect_eq (sl_approvals_cancel_stream (reg, "ffffffffffffffffffffffffffffffff", 1100, s_each, NULL), 0);
    cr_expect_eq (sl_approvals_cancel_stream (reg, stream, 1100, s_each, NULL), 2);
    cr_assert_eq (s_ask (8, OTHER, 1000, NULL, NULL), 0);
    cr_expect_eq (sl_approvals_fail_all (reg, 1200, "stopping", s_each, NULL), 1);
    cr_expect_eq (last_state, SL_APPROVAL_FAILED);
    cr_expect_eq (last_check, SL_CHK_ERROR, "a judge that stops is no timeout: its calls are blocked");
    cr_expect_eq (sl_approvals_pending (reg), 0);
    const sl_approval_t *a;
    const char *why;
    sl_approval_decision_t d = s_by_platform (true);
    cr_expect_eq (sl_approvals_decide (reg, id, &d, 1300, &a, &why), 410);
    cr_expect (strstr (why, "cancelled"), "%s", why);
}

Test (sl_approvals, list_shows_what_the_caller_may_decide)
{
    char id [SL_APPROVAL_ID_SIZE];
    cr_assert_eq (s_ask (5, DIGEST, 1000, id, NULL), 0);
    sl_buf_t out = { 0 };
    sl_ask_by_t platform = { .team = sl_str ("platform") };
    sl_approvals_list (reg, &platform, &out);
    json_t *list = json_loadb (out.data, out.len, 0, NULL);
    cr_assert_not_null (list, "%.*s", (int) out.len, out.data);
    json_t *a = json_array_get (json_object_get (list, "approvals"), 0);
    cr_assert_not_null (a);
    cr_expect_str_eq (json_string_value (json_object_get (a, "id")), id);
    cr_expect_str_eq (json_string_value (json_object_get (a, "tool")), "run_shell");
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (a, "arguments"), "command")), "git push");
    cr_expect_str_eq (json_string_value (json_object_get (json_object_get (a, "identity"), "user")), "bob");
    cr_expect_str_eq (json_string_value (json_object_get (a, "digest")), DIGEST);
    cr_expect_str_eq (json_string_value (json_object_get (a, "judge")), "judge-1");
    cr_expect_eq (json_integer_value (json_object_get (a, "expires_at")), 2000);
    cr_expect_eq (strlen (json_string_value (json_object_get (a, "stream"))), 32);
    json_decref (list);
    sl_buf_reset (&out);
    sl_ask_by_t bob = { .team = sl_str ("eng"), .user = sl_str ("bob"), .approver = true };
    sl_approvals_list (reg, &bob, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"approvals\":[]}");
    sl_buf_free (&out);
}

Test (sl_approvals, message_tells_monitoring)
{
    char id [SL_APPROVAL_ID_SIZE];
    cr_assert_eq (s_ask (5, DIGEST, 1000, id, NULL), 0);
    const sl_approval_t *a;
    const char *why;
    sl_approval_decision_t d = s_by_platform (false);
    cr_assert_eq (sl_approvals_decide (reg, id, &d, 1200, &a, &why), 200);
    sl_msg_t m;
    sl_buf_t scratch = { 0 };
    sl_approvals_message (a, &m, &scratch);
    cr_expect_eq (m.type, SL_MSG_APPROVAL);
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (m.sid, hex);
    cr_expect_str_eq (hex, id, "the message's sid is the approval's id");
    cr_expect (sl_str_eq (m.code, "denied"));
    cr_expect (sl_str_eq (m.approver, "alice@platform"));
    cr_expect (sl_str_eq (m.reason, "ok"));
    cr_expect (sl_str_eq (m.digest, DIGEST));
    cr_expect (sl_str_eq (m.instance, "judge-1"));
    cr_expect_eq (m.incarnation, 7);
    cr_expect_eq (m.ts, 1200);
    cr_expect_eq (m.expires, 2000);
    cr_expect_eq (m.index, 2);
    cr_expect (strstr (sl_buf_cstr (&scratch), "\"approvers\":[\"team:platform\"]"), "%s", sl_buf_cstr (&scratch));
    //  It survives the codec.
    sl_buf_t wire = { 0 };
    sl_msg_encode (&m, &wire);
    sl_codec_t *codec = sl_codec_new ();
    size_t offset = 0;
    sl_msg_t back;
    cr_assert_eq (sl_codec_decode (codec, wire.data, wire.len, &offset, &back), 0);
    cr_expect (sl_str_eq (back.stream, m.stream.ptr));
    cr_expect_eq (back.expires, 2000);
    sl_codec_destroy (&codec);
    sl_buf_free (&wire);
    sl_buf_free (&scratch);
}

//  Bob's call, under a rule that names no approvers: any approver key may
//  decide it, but bob's own (or another key of bob's) only when the rule
//  allows it.
static sl_approval_decision_t
s_by (const char *key_id, const char *user, bool approve)
{
    return (sl_approval_decision_t) { .approve = approve,
                                      .by = { .key_id = sl_str (key_id), .team = sl_str ("eng"), .user = sl_str (user),
                                              .approver = true },
                                      .approver = user };
}

Test (sl_approvals, a_caller_neither_sees_nor_decides_its_own_call)
{
    spec.approvers = NULL;
    spec.approver_count = 0;
    char id [SL_APPROVAL_ID_SIZE];
    cr_assert_eq (s_ask (5, DIGEST, 1000, id, NULL), 0);
    const sl_approval_t *a;
    const char *why;
    sl_approval_decision_t own = s_by ("k-bob", "bob", true);
    own.remember_minutes = 10;
    cr_expect_eq (sl_approvals_decide (reg, id, &own, 1100, &a, &why), 403, "its own key");
    cr_expect (strstr (why, "your own call"), "%s", why);
    sl_approval_decision_t other_key = s_by ("k-bob-laptop", "bob", true);
    cr_expect_eq (sl_approvals_decide (reg, id, &other_key, 1100, &a, &why), 403, "another key of the same user");
    other_key.approve = false;
    cr_expect_eq (sl_approvals_decide (reg, id, &other_key, 1100, &a, &why), 403, "nor deny it");
    cr_expect_eq (sl_approvals_pending (reg), 1);
    cr_expect_eq (sl_approvals_grants (reg), 0, "no memory was given");
    sl_buf_t out = { 0 };
    sl_approvals_list (reg, &own.by, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"approvals\":[]}", "not decidable: not listed");
    sl_buf_reset (&out);
    sl_approval_decision_t alice = s_by ("k-alice", "alice", true);
    sl_approvals_list (reg, &alice.by, &out);
    cr_expect (strstr (sl_buf_cstr (&out), id), "another approver sees it: %s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    cr_assert_eq (sl_approvals_decide (reg, id, &alice, 1200, &a, &why), 200, "%s", why);
    cr_expect_not (sl_approval_self_approved (a));
    sl_buf_t json = { 0 };
    sl_approvals_json (a, &json);
    cr_expect_null (strstr (sl_buf_cstr (&json), "self_approved"), "%s", sl_buf_cstr (&json));
    sl_buf_free (&json);
}

Test (sl_approvals, a_rule_that_allows_it_lets_the_caller_decide_and_says_so)
{
    spec.approvers = NULL;
    spec.approver_count = 0;
    spec.allow_self = true;
    char id [SL_APPROVAL_ID_SIZE];
    cr_assert_eq (s_ask (5, DIGEST, 1000, id, NULL), 0);
    sl_approval_decision_t own = s_by ("k-bob", "bob", true);
    sl_buf_t out = { 0 };
    sl_approvals_list (reg, &own.by, &out);
    cr_expect (strstr (sl_buf_cstr (&out), id), "listed for its caller: %s", sl_buf_cstr (&out));
    cr_expect (strstr (sl_buf_cstr (&out), "\"allow_self\":true"), "%s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    const sl_approval_t *a;
    const char *why;
    cr_assert_eq (sl_approvals_decide (reg, id, &own, 1100, &a, &why), 200, "%s", why);
    cr_expect (sl_approval_self_approved (a));
    sl_buf_t json = { 0 };
    sl_approvals_json (a, &json);
    cr_expect (strstr (sl_buf_cstr (&json), "\"self_approved\":true"), "%s", sl_buf_cstr (&json));
    sl_buf_free (&json);
    //  The record monitoring and the audit get says so too.
    sl_msg_t m;
    sl_buf_t scratch = { 0 };
    sl_approvals_message (a, &m, &scratch);
    cr_expect (strstr (sl_buf_cstr (&scratch), "\"self_approved\":true"), "%s", sl_buf_cstr (&scratch));
    sl_buf_free (&scratch);
}
