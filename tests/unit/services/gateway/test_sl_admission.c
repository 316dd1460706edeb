/*  Unit tests: services/gateway/sl_admission - who may start a stream:
    a credential refused by reason (and counted), a model outside the
    key's globs (403), a limit without room (429, Retry-After, what the
    client reads names the limit, never another's counts), the counters
    given back and the tokens counted at the end, a caller finished while
    its admission waits. The store is this process's (Redis has its own
    tests, in common/identity and integration). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "services/gateway/sl_admission.h"
#include "tests/keyfile_fixture.h"
#include "tests/unit/service_fixture.h"

static char s_keys [160];

static void
s_setup (void)
{
    service_fixture_start ("admission");
    char text [4096] = "teams:\n  - name: ops\n    models: [\"mock-*\"]\n    limits: {concurrent: 1}\nkeys:\n";
    keyfile_entry (text, sizeof text, "paced", "sk-paced", "eng", "u-paced", "    limits: {rpm: 2}\n");
    keyfile_entry (text, sizeof text, "ops-1", "sk-ops-1", "ops", "u-ops-1", "");
    keyfile_entry (text, sizeof text, "ops-2", "sk-ops-2", "ops", "u-ops-2", "");
    snprintf (s_keys, sizeof s_keys, "%s/keys.yaml", service_fixture.dir);
    service_fixture_write (s_keys, text);
}

static void
s_teardown (void)
{
    const char *files [] = { s_keys, NULL };
    service_fixture_stop (files);
}

TestSuite (sl_admission, .init = s_setup, .fini = s_teardown);

typedef struct {
    int calls;
    sl_admission_answer_t answer;
} s_seen_t;

static void
s_done (void *arg, sl_caller_t *caller, const sl_admission_answer_t *answer)
{
    (void) caller;
    s_seen_t *seen = arg;
    seen->calls++;
    seen->answer = *answer;
}

static uint64_t
s_counter (const char *name, const char *labels)
{
    return sl_metrics_counter (sl_service_metrics (service_fixture.svc), name, labels, "")->value;
}

static sl_admission_t *
s_admission (void)
{
    sl_admission_config_t config = { .keys_path = s_keys, .watch_ms = 0 };
    sl_admission_t *a = sl_admission_new (service_fixture.svc, &config);
    cr_assert_not_null (a);
    return a;
}

Test (sl_admission, credentials_are_refused_by_reason)
{
    sl_admission_t *a = s_admission ();
    cr_expect (sl_admission_checks (a));
    const char *reason = NULL;
    cr_expect_null (sl_admission_identify (a, NULL, &reason));
    cr_expect_str_eq (reason, "missing");
    cr_expect_null (sl_admission_identify (a, "sk-nobody", &reason));
    cr_expect_str_eq (reason, "unknown_key");
    cr_expect_null (sl_admission_identify (a, "a.b.c", &reason), "a token, but the file takes none");
    cr_expect_eq (s_counter ("sluice_requests_unauthorized_total", "reason=\"missing\""), 1);
    cr_expect_eq (s_counter ("sluice_requests_unauthorized_total", "reason=\"unknown_key\""), 1);
    sl_caller_t *c = sl_admission_identify (a, "sk-paced", &reason);
    cr_assert_not_null (c);
    cr_expect_str_eq (sl_caller_identity (c)->key_id, "paced");
    cr_expect_str_eq (sl_caller_identity (c)->team, "eng");
    cr_expect_str_eq (sl_caller_identity (c)->user, "u-paced");
    cr_expect_str_eq (sl_caller_team_label (c), "eng");
    sl_admission_finish (a, &c, NULL, NULL, false);
    cr_expect_null (c);
    sl_admission_destroy (&a);
}

Test (sl_admission, without_keys_everyone_is_an_anonymous_caller)
{
    sl_admission_config_t config = { 0 };
    sl_admission_t *a = sl_admission_new (service_fixture.svc, &config);
    cr_assert_not_null (a);
    cr_expect_not (sl_admission_checks (a));
    const char *reason = NULL;
    sl_caller_t *c = sl_admission_identify (a, NULL, &reason);
    cr_assert_not_null (c);
    cr_expect_str_eq (sl_caller_team_label (c), "default");
    s_seen_t seen = { 0 };
    uint8_t sid [SL_SID_SIZE] = { 1 };
    sl_admission_admit (a, c, "any-model", sid, s_done, &seen);
    cr_expect_eq (seen.calls, 1);
    cr_expect_eq (seen.answer.outcome, SL_ADMITTED);
    sl_admission_finish (a, &c, "any-model", NULL, false);
    sl_admission_destroy (&a);
}

Test (sl_admission, a_model_outside_the_globs_is_forbidden)
{
    sl_admission_t *a = s_admission ();
    const char *reason;
    sl_caller_t *c = sl_admission_identify (a, "sk-ops-1", &reason);
    cr_assert_not_null (c);
    s_seen_t seen = { 0 };
    uint8_t sid [SL_SID_SIZE] = { 2 };
    sl_admission_admit (a, c, "gpt-5", sid, s_done, &seen);
    cr_expect_eq (seen.calls, 1);
    cr_expect_eq (seen.answer.outcome, SL_ADMIT_FORBIDDEN);
    cr_expect_eq (seen.answer.status, 403);
    cr_expect_str_eq (seen.answer.code, "permission_error");
    cr_expect_str_eq (seen.answer.rule, "models");
    cr_expect_not_null (strstr (seen.answer.message, "gpt-5"), "%s", seen.answer.message);
    cr_expect_eq (s_counter ("sluice_models_refused_total", "team=\"ops\""), 1);
    sl_admission_finish (a, &c, "gpt-5", NULL, false);
    sl_admission_destroy (&a);
}

Test (sl_admission, a_limit_without_room_is_a_429_and_an_end_gives_its_place_back)
{
    sl_admission_t *a = s_admission ();
    const char *reason;
    uint8_t sid1 [SL_SID_SIZE] = { 3 }, sid2 [SL_SID_SIZE] = { 4 };
    //  The team's one stream at a time, shared by both of its keys.
    sl_caller_t *first = sl_admission_identify (a, "sk-ops-1", &reason);
    sl_caller_t *second = sl_admission_identify (a, "sk-ops-2", &reason);
    s_seen_t seen = { 0 };
    sl_admission_admit (a, first, "mock-text", sid1, s_done, &seen);
    cr_expect_eq (seen.answer.outcome, SL_ADMITTED);
    sl_admission_admit (a, second, "mock-text", sid2, s_done, &seen);
    cr_expect_eq (seen.calls, 2);
    cr_expect_eq (seen.answer.outcome, SL_ADMIT_LIMITED);
    cr_expect_eq (seen.answer.status, 429);
    cr_expect_str_eq (seen.answer.code, "rate_limit_error");
    cr_expect_str_eq (seen.answer.rule, "limit:concurrent");
    cr_expect_geq (seen.answer.retry_after, 1);
    cr_expect_not_null (strstr (seen.answer.message, "team:ops"), "%s", seen.answer.message);
    cr_expect_eq (s_counter ("sluice_limits_refused_total", "team=\"ops\",limit=\"concurrent\""), 1);
    sl_admission_finish (a, &second, "mock-text", NULL, false);
    //  The first stream ends, with what it spent: the place is free again.
    sl_usage_t usage = { .input = 30, .output = 12 };
    sl_admission_finish (a, &first, "mock-text", &usage, false);
    cr_expect_eq (s_counter ("sluice_tokens_total", "team=\"ops\",kind=\"input\""), 30);
    cr_expect_eq (s_counter ("sluice_tokens_total", "team=\"ops\",kind=\"output\""), 12);
    second = sl_admission_identify (a, "sk-ops-2", &reason);
    sl_admission_admit (a, second, "mock-text", sid2, s_done, &seen);
    cr_expect_eq (seen.answer.outcome, SL_ADMITTED, "the place was given back");
    sl_usage_t estimate = { .input = 5, .output = 7 };
    sl_admission_finish (a, &second, "mock-text", &estimate, true);
    cr_expect_eq (s_counter ("sluice_tokens_estimated_total", "team=\"ops\""), 12);
    sl_admission_destroy (&a);
}

Test (sl_admission, requests_a_minute_past_the_limit_are_refused)
{
    sl_admission_t *a = s_admission ();
    const char *reason;
    s_seen_t seen = { 0 };
    int admitted = 0, limited = 0;
    //  rpm 2: of four requests at once, two (three when the minute rolls
    //  over between them, never four).
    for (int i = 0; i < 4; i++) {
        sl_caller_t *c = sl_admission_identify (a, "sk-paced", &reason);
        uint8_t sid [SL_SID_SIZE] = { (uint8_t) (10 + i) };
        sl_admission_admit (a, c, "mock-text", sid, s_done, &seen);
        admitted += seen.answer.outcome == SL_ADMITTED;
        limited += seen.answer.outcome == SL_ADMIT_LIMITED;
        if (seen.answer.outcome == SL_ADMIT_LIMITED)
            cr_expect_str_eq (seen.answer.rule, "limit:rpm");
        sl_admission_finish (a, &c, "mock-text", NULL, false);
    }
    cr_expect (admitted >= 2 && admitted <= 3, "%d admitted", admitted);
    cr_expect_eq (admitted + limited, 4);
    sl_admission_destroy (&a);
}
