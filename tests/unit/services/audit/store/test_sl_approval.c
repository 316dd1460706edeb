/*  Unit tests: services/audit/store/sl_approval - an approval's JSON from a
    judge's record, and the approvals webhook's signature, checked the
    way a receiver checks it (an HMAC of "<timestamp>.<body>" with the
    shared secret, compared in constant time), against a value computed
    apart (RFC 4231's HMAC-SHA256, test case 2). */
#include <criterion/criterion.h>
#include <sodium.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/http/sl_webhook.h"
#include "services/audit/store/sl_approval.h"
#include "services/audit/console/sl_live.h"

static sl_msg_t
s_record (const char *state)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_APPROVAL);
    memset (m.sid, 0xab, SL_SID_SIZE);
    m.code = sl_str (state);
    m.stream = SL_STR_LIT ("0123456789abcdef0123456789abcdef");
    m.index = 2;
    m.name = SL_STR_LIT ("pay");
    m.text = SL_STR_LIT ("not json {");
    m.digest = SL_STR_LIT ("00");
    m.key_id = SL_STR_LIT ("bob-ci");
    m.ts = 5000;
    m.expires = 65000;
    m.approver = SL_STR_LIT ("console");
    m.reason = SL_STR_LIT ("no \"payments\" today");
    return m;
}

Test (sl_approval, a_record_as_json)
{
    sl_msg_t m = s_record ("pending");
    sl_approval_t a;
    sl_approval_from_msg (&m, &a);
    sl_buf_t out = { 0 };
    sl_approval_json (&a, &out);
    const char *json = sl_buf_cstr (&out);
    cr_expect (sl_json_valid (sl_buf_str (&out)), "%s", json);
    cr_expect_str_eq (json, "{\"id\":\"abababababababababababababababab\",\"state\":\"pending\","
                            "\"stream\":\"0123456789abcdef0123456789abcdef\",\"index\":2,\"tool\":\"pay\","
                            "\"arguments\":\"not json {\",\"digest\":\"00\","
                            "\"identity\":{\"key_id\":\"bob-ci\",\"team\":\"\",\"user\":\"\"},"
                            "\"created_at\":5000,\"expires_at\":65000}");
    sl_buf_reset (&out);
    m = s_record ("denied");
    sl_approval_from_msg (&m, &a);
    sl_approval_json (&a, &out);
    json = sl_buf_cstr (&out);
    cr_expect (sl_json_valid (sl_buf_str (&out)), "%s", json);
    cr_expect_not_null (strstr (json, "\"decided_at\":5000,\"approver\":\"console\","
                                      "\"comment\":\"no \\\"payments\\\" today\"}"), "%s", json);
    cr_expect_null (strstr (json, "created_at"), "%s", json);
    cr_expect_null (strstr (json, "self_approved"), "%s", json);
    //  Decided by its own caller (the rule's allow_self): the judge's
    //  details say so, and so does the approval the audit hands out.
    sl_buf_reset (&out);
    m = s_record ("approved");
    m.body = SL_STR_LIT ("{\"approvers\":[],\"on_timeout\":\"block\",\"remember_minutes\":0,\"self_approved\":true}");
    sl_approval_from_msg (&m, &a);
    sl_approval_json (&a, &out);
    json = sl_buf_cstr (&out);
    cr_expect (sl_json_valid (sl_buf_str (&out)), "%s", json);
    cr_expect_not_null (strstr (json, "\"remember_minutes\":0,\"self_approved\":true"), "%s", json);
    sl_buf_free (&out);
}

Test (sl_approval, the_live_view_sends_every_state_whole)
{
    sl_live_t *live = sl_live_new ();
    sl_msg_t m = s_record ("pending");
    sl_record_meta_t meta = { SL_STR_LIT ("emitter-1"), 1, 1, 0, 5000 };
    sl_buf_t out = { 0 };
    sl_live_feed (live, &meta, &m, &out);
    const char *text = sl_buf_cstr (&out);
    cr_expect_eq (strncmp (text, "event: approval\ndata: {\"id\":\"abab", 33), 0, "%s", text);
    cr_expect_not_null (strstr (text, "\"state\":\"pending\""), "%s", text);
    sl_buf_free (&out);
    sl_live_destroy (&live);
}

//  What a receiver does: HMAC of "<timestamp>.<body>", compared in
//  constant time with the header's hex.
static bool
s_receiver_accepts (const char *secret, const char *timestamp, const char *body, const char *header)
{
    if (strncmp (header, "sha256=", 7) != 0)
        return false;
    unsigned char want [crypto_auth_hmacsha256_BYTES], got [crypto_auth_hmacsha256_BYTES];
    size_t len = 0;
    if (sodium_hex2bin (got, sizeof got, header + 7, strlen (header + 7), NULL, &len, NULL) || len != sizeof got)
        return false;
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init (&st, (const unsigned char *) secret, strlen (secret));
    crypto_auth_hmacsha256_update (&st, (const unsigned char *) timestamp, strlen (timestamp));
    crypto_auth_hmacsha256_update (&st, (const unsigned char *) ".", 1);
    crypto_auth_hmacsha256_update (&st, (const unsigned char *) body, strlen (body));
    crypto_auth_hmacsha256_final (&st, want);
    return sodium_memcmp (want, got, sizeof want) == 0;
}

Test (sl_approval, the_signature_is_what_a_receiver_checks)
{
    cr_assert_geq (sodium_init (), 0);
    //  RFC 4231 test case 2 (key "Jefe"): the HMAC the receiver computes
    //  is the standard one.
    char sig [SL_WEBHOOK_SIGNATURE_HEX];
    unsigned char mac [crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init (&st, (const unsigned char *) "Jefe", 4);
    crypto_auth_hmacsha256_update (&st, (const unsigned char *) "what do ya want for nothing?", 28);
    crypto_auth_hmacsha256_final (&st, mac);
    sodium_bin2hex (sig, sizeof sig, mac, sizeof mac);
    cr_assert_str_eq (sig, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
                      "libsodium's HMAC-SHA256 is RFC 4231's");
    const char *body = "{\"type\":\"approval\",\"state\":\"pending\"}";
    sl_webhook_sign ("s3cret", 1700000000, sl_str (body), sig);
    char header [80];
    snprintf (header, sizeof header, "sha256=%s", sig);
    cr_expect (s_receiver_accepts ("s3cret", "1700000000", body, header));
    cr_expect_not (s_receiver_accepts ("other", "1700000000", body, header), "another secret");
    cr_expect_not (s_receiver_accepts ("s3cret", "1700000001", body, header), "another time: a replay");
    cr_expect_not (s_receiver_accepts ("s3cret", "1700000000", "{\"type\":\"approval\",\"state\":\"approved\"}",
                                       header), "another body");
}
