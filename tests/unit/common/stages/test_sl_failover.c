/*  Unit tests: common/stages/sl_failover (providers' health: holds,
    ejection, half-open probes, keys in turn; a stream's walk over its
    candidates). Time is the test's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/stages/sl_failover.h"

static sl_failover_t *
s_table (int failures, long window_ms, long cooldown_ms)
{
    sl_failover_config_t config = { failures, window_ms, cooldown_ms };
    sl_failover_t *fo = sl_failover_new (&config);
    cr_assert_not_null (fo);
    return fo;
}

Test (sl_failover, config_out_of_range_is_refused)
{
    sl_failover_config_t bad [] = {
        { -1, 1000, 1000 }, { SL_FAILOVER_FAILURES_MAX + 1, 1000, 1000 }, { 3, 0, 1000 }, { 3, 1000, 0 }
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        cr_expect_null (sl_failover_new (&bad [i]), "case %zu", i);
    sl_failover_config_t off = { 0, 0, 0 };
    sl_failover_t *fo = sl_failover_new (&off);
    cr_assert_not_null (fo, "0 failures: ejection off");
    for (int i = 0; i < 100; i++)
        cr_expect_not (sl_failover_failed (fo, "a", i, -1, true));
    cr_expect_eq (sl_failover_check (fo, "a", 100, NULL), SL_FAILOVER_OK);
    sl_failover_destroy (&fo);
    sl_failover_destroy (&fo);
}

Test (sl_failover, n_failures_within_the_window_eject)
{
    sl_failover_t *fo = s_table (3, 1000, 5000);
    //  Spread wider than the window: never three within it.
    cr_expect_not (sl_failover_failed (fo, "a", 0, -1, true));
    cr_expect_not (sl_failover_failed (fo, "a", 600, -1, true));
    cr_expect_not (sl_failover_failed (fo, "a", 1200, -1, true), "0 fell out of the window");
    cr_expect_eq (sl_failover_state (fo, "a", 1200), SL_FAILOVER_HEALTHY);
    //  A refused credential is not the provider's failure.
    cr_expect_not (sl_failover_failed (fo, "a", 1300, -1, false));
    cr_expect (sl_failover_failed (fo, "a", 1500, -1, true), "600, 1200, 1500: three within 1000 ms");
    cr_expect_eq (sl_failover_ejections (fo, "a"), 1);
    cr_expect_eq (sl_failover_state (fo, "a", 1500), SL_FAILOVER_COOLING);
    cr_expect_eq (sl_failover_ejected_count (fo, 1500), 1);
    int64_t until = 0;
    cr_expect_eq (sl_failover_check (fo, "a", 2000, &until), SL_FAILOVER_EJECTED);
    cr_expect_eq (until, 6500);
    cr_expect_not (sl_failover_failed (fo, "a", 2000, -1, true), "failing while ejected: once per ejection");
    cr_expect_eq (sl_failover_ejections (fo, "a"), 1);
    cr_expect_eq (sl_failover_check (fo, "b", 2000, NULL), SL_FAILOVER_OK, "others are not touched");
    sl_failover_destroy (&fo);
}

Test (sl_failover, half_open_one_probe_its_success_readmits)
{
    sl_failover_t *fo = s_table (1, 1000, 5000);
    cr_assert (sl_failover_failed (fo, "a", 0, -1, true));
    cr_expect_eq (sl_failover_check (fo, "a", 4999, NULL), SL_FAILOVER_EJECTED);
    cr_expect_eq (sl_failover_check (fo, "a", 5000, NULL), SL_FAILOVER_OK, "the cool-down is over");
    cr_expect_eq (sl_failover_state (fo, "a", 5000), SL_FAILOVER_HALF_OPEN);
    sl_failover_begin (fo, "a", 5000);
    cr_expect_eq (sl_failover_check (fo, "a", 5001, NULL), SL_FAILOVER_EJECTED, "one probe at a time");
    sl_failover_succeeded (fo, "a", 5100);
    cr_expect_eq (sl_failover_state (fo, "a", 5100), SL_FAILOVER_HEALTHY);
    cr_expect_eq (sl_failover_check (fo, "a", 5101, NULL), SL_FAILOVER_OK);
    cr_expect_eq (sl_failover_ejected_count (fo, 5101), 0);
    sl_failover_destroy (&fo);
}

Test (sl_failover, a_failed_probe_ejects_again_an_abandoned_one_frees_its_place)
{
    sl_failover_t *fo = s_table (2, 1000, 5000);
    sl_failover_failed (fo, "a", 0, -1, true);
    cr_assert (sl_failover_failed (fo, "a", 10, -1, true));
    sl_failover_begin (fo, "a", 5010);
    cr_expect (sl_failover_failed (fo, "a", 5020, -1, true), "the probe failed: ejected again, at once");
    cr_expect_eq (sl_failover_ejections (fo, "a"), 2);
    cr_expect_eq (sl_failover_check (fo, "a", 10019, NULL), SL_FAILOVER_EJECTED);
    sl_failover_begin (fo, "a", 10020);
    cr_expect_eq (sl_failover_check (fo, "a", 10021, NULL), SL_FAILOVER_EJECTED);
    sl_failover_abandoned (fo, "a");
    cr_expect_eq (sl_failover_check (fo, "a", 10022, NULL), SL_FAILOVER_OK, "the client left: another may probe");
    //  A probe never heard of frees its place after a cool-down.
    sl_failover_begin (fo, "a", 10030);
    cr_expect_eq (sl_failover_check (fo, "a", 15029, NULL), SL_FAILOVER_EJECTED);
    cr_expect_eq (sl_failover_check (fo, "a", 15030, NULL), SL_FAILOVER_OK);
    sl_failover_destroy (&fo);
}

Test (sl_failover, retry_after_holds_a_provider_until_its_time)
{
    sl_failover_t *fo = s_table (5, 1000, 5000);
    sl_failover_failed (fo, "a", 100, 30000, true);
    int64_t until = 0;
    cr_expect_eq (sl_failover_check (fo, "a", 200, &until), SL_FAILOVER_HELD);
    cr_expect_eq (until, 30100);
    sl_failover_failed (fo, "a", 200, 1000, false);
    cr_expect_eq (sl_failover_check (fo, "a", 29000, &until), SL_FAILOVER_HELD, "a shorter hold does not shorten");
    cr_expect_eq (sl_failover_check (fo, "a", 30100, NULL), SL_FAILOVER_OK);
    sl_failover_destroy (&fo);
}

Test (sl_failover, keys_in_turn)
{
    sl_failover_t *fo = s_table (5, 1000, 5000);
    cr_expect_eq (sl_failover_key (fo, "a", 3), 0);
    cr_expect_eq (sl_failover_key (fo, "a", 3), 1);
    cr_expect_eq (sl_failover_key (fo, "a", 3), 2);
    cr_expect_eq (sl_failover_key (fo, "a", 3), 0);
    cr_expect_eq (sl_failover_key (fo, "b", 1), 0);
    cr_expect_eq (sl_failover_key (fo, "b", 0), 0);
    sl_failover_destroy (&fo);
}

//  --------------------------------------------------------------------------
//  The walk

typedef struct {
    char text [256];
} s_skips_t;

static void
s_skip (void *arg, size_t index, sl_failover_why_t why, int64_t until)
{
    s_skips_t *s = arg;
    snprintf (s->text + strlen (s->text), sizeof s->text - strlen (s->text), "%zu:%s@%lld ", index,
              sl_failover_why_name (why), (long long) until);
}

static sl_failover_walk_t
s_walk (const sl_failover_cand_t *cands, size_t count, int rounds)
{
    return (sl_failover_walk_t) { .cands = cands, .count = count, .max_rounds = rounds,
                                  .base_ms = 100, .max_ms = 20000, .spread = 0 };
}

Test (sl_failover_walk, in_order_a_fault_moves_on_at_once)
{
    sl_failover_t *fo = s_table (5, 1000, 5000);
    const sl_failover_cand_t cands [] = { { "a", 0 }, { "b", 0 }, { "c", 0 } };
    sl_failover_walk_t w = s_walk (cands, 3, 0);
    sl_failover_step_t step;
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_START, 0, NULL, NULL, &step), 0);
    cr_expect_eq (step.index, 0);
    cr_expect_eq (step.wait_ms, 0);
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_FAULT, 10, NULL, NULL, &step), 0);
    cr_expect_eq (step.index, 1);
    cr_expect_eq (step.wait_ms, 0, "the next provider at once, no backoff");
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_FAULT, 20, NULL, NULL, &step), 0);
    cr_expect_eq (step.index, 2);
    cr_expect_eq (sl_failover_next (fo, &w, SL_FAILOVER_FAULT, 30, NULL, NULL, &step), -1, "no rounds: done");
    cr_expect_eq (w.attempts, 3);
    sl_failover_destroy (&fo);
}

Test (sl_failover_walk, one_provider_retries_as_a_single_upstream_did)
{
    sl_failover_t *fo = s_table (5, 1000, 5000);
    const sl_failover_cand_t cands [] = { { "a", 0 } };
    sl_failover_walk_t w = s_walk (cands, 1, 2);
    sl_failover_step_t step;
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_START, 0, NULL, NULL, &step), 0);
    //  A 500: the backoff, doubled each round.
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_FAULT, 10, NULL, NULL, &step), 0);
    cr_expect_eq (step.index, 0);
    cr_expect_eq (step.wait_ms, 100);
    //  A 429 with Retry-After: 1 s: waited for.
    sl_failover_failed (fo, "a", 200, 1000, true);
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_FAULT, 200, NULL, NULL, &step), 0);
    cr_expect_eq (step.wait_ms, 1000);
    cr_expect (step.forced);
    cr_expect_eq (sl_failover_next (fo, &w, SL_FAILOVER_FAULT, 1300, NULL, NULL, &step), -1, "two rounds, no more");
    sl_failover_destroy (&fo);
}

Test (sl_failover_walk, a_missing_first_byte_moves_on_but_starts_no_round)
{
    sl_failover_t *fo = s_table (5, 1000, 5000);
    const sl_failover_cand_t cands [] = { { "a", 0 }, { "b", 0 } };
    sl_failover_walk_t w = s_walk (cands, 2, 2);
    sl_failover_step_t step;
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_START, 0, NULL, NULL, &step), 0);
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_MOVE, 10, NULL, NULL, &step), 0);
    cr_expect_eq (step.index, 1);
    cr_expect_eq (sl_failover_next (fo, &w, SL_FAILOVER_MOVE, 20, NULL, NULL, &step), -1);
    sl_failover_destroy (&fo);
}

Test (sl_failover_walk, a_long_retry_after_is_passed_by_not_waited_on)
{
    sl_failover_t *fo = s_table (5, 1000, 5000);
    const sl_failover_cand_t cands [] = { { "a", 0 }, { "b", 0 } };
    sl_failover_walk_t w = s_walk (cands, 2, 2);
    sl_failover_step_t step;
    s_skips_t skips = { "" };
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_START, 0, s_skip, &skips, &step), 0);
    cr_expect_eq (step.index, 0);
    sl_failover_failed (fo, "a", 5, 30000, true);     //  a: 429, Retry-After: 30
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_FAULT, 5, s_skip, &skips, &step), 0);
    cr_expect_eq (step.index, 1);
    cr_expect_eq (step.wait_ms, 0, "b at once, not a's 30 s");
    //  Another stream meanwhile: a is passed by until its time.
    sl_failover_walk_t other = s_walk (cands, 2, 2);
    cr_assert_eq (sl_failover_next (fo, &other, SL_FAILOVER_START, 1000, s_skip, &skips, &step), 0);
    cr_expect_eq (step.index, 1);
    cr_expect_str_eq (skips.text, "0:held@30005 ");
    //  b fails too: the next round has only b to offer (a still held).
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_FAULT, 1000, NULL, NULL, &step), 0);
    cr_expect_eq (step.index, 1);
    cr_expect_eq (step.wait_ms, 100);
    //  Once its time passed, a is the first choice again.
    sl_failover_walk_t later = s_walk (cands, 2, 2);
    cr_assert_eq (sl_failover_next (fo, &later, SL_FAILOVER_START, 30005, NULL, NULL, &step), 0);
    cr_expect_eq (step.index, 0);
    sl_failover_destroy (&fo);
}

Test (sl_failover_walk, every_provider_held_past_the_longest_wait_gives_up)
{
    sl_failover_t *fo = s_table (5, 1000, 5000);
    const sl_failover_cand_t cands [] = { { "a", 0 }, { "b", 0 } };
    sl_failover_failed (fo, "a", 0, 60000, true);
    sl_failover_failed (fo, "b", 0, 90000, true);
    sl_failover_walk_t w = s_walk (cands, 2, 2);
    sl_failover_step_t step;
    cr_expect_eq (sl_failover_next (fo, &w, SL_FAILOVER_START, 0, NULL, NULL, &step), -1);
    cr_expect_eq (w.attempts, 0, "nothing was tried");
    sl_failover_destroy (&fo);
}

Test (sl_failover_walk, ejected_providers_are_passed_by_unless_nothing_else_is_left)
{
    sl_failover_t *fo = s_table (1, 1000, 5000);
    const sl_failover_cand_t cands [] = { { "a", 0 }, { "b", 0 } };
    cr_assert (sl_failover_failed (fo, "a", 0, -1, true));
    sl_failover_walk_t w = s_walk (cands, 2, 0);
    sl_failover_step_t step;
    s_skips_t skips = { "" };
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_START, 10, s_skip, &skips, &step), 0);
    cr_expect_eq (step.index, 1);
    cr_expect_str_eq (skips.text, "0:ejected@5000 ");
    //  b ejected too: a route is never left with nothing; the first in
    //  order is tried all the same.
    cr_assert (sl_failover_failed (fo, "b", 20, -1, true));
    sl_failover_walk_t all = s_walk (cands, 2, 0);
    cr_assert_eq (sl_failover_next (fo, &all, SL_FAILOVER_START, 30, NULL, NULL, &step), 0);
    cr_expect_eq (step.index, 0);
    cr_expect (step.forced);
    //  After a's cool-down: its probe goes, and a later stream passes it by
    //  until the probe is decided.
    sl_failover_walk_t probe = s_walk (cands, 2, 0);
    cr_assert_eq (sl_failover_next (fo, &probe, SL_FAILOVER_START, 5000, NULL, NULL, &step), 0);
    cr_expect_eq (step.index, 0);
    sl_failover_begin (fo, "a", 5000);
    sl_failover_walk_t next = s_walk (cands, 2, 0);
    cr_assert_eq (sl_failover_next (fo, &next, SL_FAILOVER_START, 5021, NULL, NULL, &step), 0);
    cr_expect_eq (step.index, 1, "a's probe is out; b's cool-down is over, its probe free");
    sl_failover_succeeded (fo, "a", 5100);
    sl_failover_walk_t after = s_walk (cands, 2, 0);
    cr_assert_eq (sl_failover_next (fo, &after, SL_FAILOVER_START, 5101, NULL, NULL, &step), 0);
    cr_expect_eq (step.index, 0, "readmitted");
    sl_failover_destroy (&fo);
}

Test (sl_failover_walk, a_refused_key_moves_to_the_next_key_then_gives_up)
{
    sl_failover_t *fo = s_table (5, 1000, 5000);
    const sl_failover_cand_t cands [] = { { "a", 3 }, { "b", 0 } };
    sl_failover_walk_t w = s_walk (cands, 2, 2);
    sl_failover_step_t step;
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_START, 0, NULL, NULL, &step), 0);
    cr_expect_eq (step.index, 0);
    cr_expect_eq (step.key, 0);
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_AUTH, 1, NULL, NULL, &step), 0);
    cr_expect_eq (step.index, 0);
    cr_expect_eq (step.key, 1);
    cr_assert_eq (sl_failover_next (fo, &w, SL_FAILOVER_AUTH, 2, NULL, NULL, &step), 0);
    cr_expect_eq (step.key, 2);
    cr_expect_eq (sl_failover_next (fo, &w, SL_FAILOVER_AUTH, 3, NULL, NULL, &step), -1,
                  "every key refused: not failed over");
    //  The next stream starts on the next key in turn.
    sl_failover_walk_t next = s_walk (cands, 2, 2);
    cr_assert_eq (sl_failover_next (fo, &next, SL_FAILOVER_START, 4, NULL, NULL, &step), 0);
    cr_expect_eq (step.key, 1);
    sl_failover_destroy (&fo);
}

Test (sl_failover_walk, bounded_whatever_happens)
{
    sl_failover_t *fo = s_table (2, 1000, 5000);
    const sl_failover_cand_t cands [] = { { "a", 2 }, { "b", 0 }, { "c", 1 } };
    sl_failover_walk_t w = s_walk (cands, 3, 2);
    sl_failover_step_t step;
    int64_t now = 0;
    size_t steps = 0;
    int rc = sl_failover_next (fo, &w, SL_FAILOVER_START, now, NULL, NULL, &step);
    while (rc == 0 && steps < 1000) {
        steps++;
        now += step.wait_ms + 1;
        sl_failover_failed (fo, cands [step.index].provider, now, steps % 3 == 0 ? 500 : -1, true);
        rc = sl_failover_next (fo, &w, steps % 4 == 0 ? SL_FAILOVER_AUTH : SL_FAILOVER_FAULT, now, NULL, NULL,
                               &step);
    }
    cr_expect_eq (rc, -1);
    cr_expect (steps <= (2 + 1) * (2 + 1 + 1), "%zu attempts: within the rounds and keys", steps);
    sl_failover_destroy (&fo);
}
