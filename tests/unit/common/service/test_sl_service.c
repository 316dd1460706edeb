/*  Unit tests: common/service/sl_service, the drain: /readyz, the idle
    checks, --drain-ms and what is given up when it passes. */
#include <criterion/criterion.h>

#include "common/service/sl_service.h"

typedef struct {
    int started;                        //  drain start hooks run
    int given_up;                       //  give-up hooks run
    int polls;                          //  idle checks asked
    int idle_after;                     //  idle from this poll on (0: never, until given up)
} s_part_t;

static void
s_start (void *arg)
{
    ((s_part_t *) arg)->started++;
}

static bool
s_idle (void *arg)
{
    s_part_t *p = arg;
    p->polls++;
    return p->given_up || (p->idle_after && p->polls >= p->idle_after);
}

static void
s_give_up (void *arg)
{
    ((s_part_t *) arg)->given_up++;
}

static sl_service_t *
s_service (const char *drain_ms)
{
    char *argv [] = { "test", "--drain-ms", (char *) drain_ms, NULL };
    int code;
    sl_service_t *svc = sl_service_new ("aggregator", NULL, "off", 3, argv, &code);
    cr_assert_not_null (svc);
    return svc;
}

Test (sl_service, a_drain_stops_the_loop_once_every_part_is_idle)
{
    sl_service_t *svc = s_service ("60000");
    s_part_t a = { .idle_after = 3 }, b = { .idle_after = 5 };
    sl_service_on_drain (svc, s_start, s_idle, s_give_up, &a);
    sl_service_on_drain (svc, s_start, s_idle, s_give_up, &b);
    sl_buf_t out = { 0 };
    cr_expect_eq (sl_service_render_ready (svc, &out), 200, "ready before the drain");
    sl_service_drain (svc);
    sl_buf_reset (&out);
    cr_expect_eq (sl_service_render_ready (svc, &out), 503, "not ready from the drain on");
    cr_expect (strstr (sl_buf_cstr (&out), "\"draining\"") != NULL);
    sl_buf_reset (&out);
    cr_expect_eq (sl_service_render_health (svc, &out), 200, "healthy all the same");
    sl_buf_free (&out);
    cr_expect (sl_service_draining (svc));
    cr_expect_eq (sl_service_run (svc), 0);
    cr_expect_eq (a.started + b.started, 2, "every part was told");
    cr_expect_geq (b.polls, 5, "the loop ran until the last part was idle");
    cr_expect_eq (a.given_up + b.given_up, 0, "nothing was given up within --drain-ms");
    sl_service_destroy (&svc);
}

Test (sl_service, drain_ms_passed_gives_up_what_remains)
{
    sl_service_t *svc = s_service ("100");
    s_part_t a = { 0 };
    sl_service_on_drain (svc, s_start, s_idle, s_give_up, &a);
    sl_service_drain (svc);
    cr_expect_eq (sl_service_run (svc), 0);
    cr_expect_eq (a.given_up, 1, "what was still held was ended, once");
    sl_service_destroy (&svc);
}

Test (sl_service, drain_ms_must_be_a_number)
{
    char *argv [] = { "test", "--drain-ms", "soon", NULL };
    int code;
    cr_expect_null (sl_service_new ("aggregator", NULL, "off", 3, argv, &code));
    cr_expect_eq (code, 2);
}
