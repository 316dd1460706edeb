/*  Unit tests: services/gateway/sl_handlers (the gateway's HTTP surface
    as a table: which handler a request goes to, in what order, and where
    the guard runs, while serving and while draining). */
#include <criterion/criterion.h>
#include <string.h>

#include "services/gateway/sl_handlers.h"

//  What happened to a request, in order: "g" the guard ran, "<name>" a
//  handler's serve was asked, "<name>-closed" its on_close.
typedef struct {
    char trail [256];
    bool guard_refuses;
} s_log_t;

typedef struct {
    const char *name;
    bool takes;                         //  serve takes the request, else declines
    bool holds;
    s_log_t *log;
} s_handler_t;

static void
s_note (s_log_t *log, const char *what)
{
    if (*log->trail)
        strncat (log->trail, " ", sizeof log->trail - strlen (log->trail) - 1);
    strncat (log->trail, what, sizeof log->trail - strlen (log->trail) - 1);
}

static bool
s_serve (void *arg, sl_http_req_t *req, const char *method, const char *path)
{
    (void) req;
    (void) method;
    (void) path;
    s_handler_t *h = arg;
    s_note (h->log, h->name);
    return h->takes;
}

static bool
s_close (void *arg, sl_http_req_t *req)
{
    (void) req;
    s_handler_t *h = arg;
    char what [64];
    snprintf (what, sizeof what, "%s-closed", h->name);
    s_note (h->log, what);
    return h->takes;
}

static bool
s_held (void *arg)
{
    return ((s_handler_t *) arg)->holds;
}

static bool
s_guard (void *arg, sl_http_req_t *req, const char *path)
{
    (void) req;
    (void) path;
    s_log_t *log = arg;
    s_note (log, "g");
    return log->guard_refuses;
}

static s_log_t s_log;
static s_handler_t s_probe, s_mcp, s_models, s_dialects;
static sl_handlers_t *s_table;
static sl_http_req_t *const s_req = (sl_http_req_t *) &s_log;      //  never read: a token

//  The gateway's own table: an open probe, MCP (while draining too), a
//  GET-only catch-all that declines, and a catch-all that takes.
static void
s_setup (void)
{
    memset (&s_log, 0, sizeof s_log);
    s_probe = (s_handler_t) { "probe", true, false, &s_log };
    s_mcp = (s_handler_t) { "mcp", true, false, &s_log };
    s_models = (s_handler_t) { "models", false, false, &s_log };
    s_dialects = (s_handler_t) { "dialects", true, false, &s_log };
    s_table = sl_handlers_new ();
    sl_handler_t h = { .prefix = "/healthz", .serve = s_serve, .arg = &s_probe, .open = true, .draining = true };
    cr_assert_eq (sl_handlers_add (s_table, &h), 0);
    h = (sl_handler_t) { .prefix = "/mcp", .serve = s_serve, .on_close = s_close, .arg = &s_mcp, .draining = true };
    cr_assert_eq (sl_handlers_add (s_table, &h), 0);
    h = (sl_handler_t) { .method = "GET", .prefix = "/", .serve = s_serve, .arg = &s_models };
    cr_assert_eq (sl_handlers_add (s_table, &h), 0);
    h = (sl_handler_t) { .prefix = "/", .serve = s_serve, .on_close = s_close, .held = s_held, .arg = &s_dialects };
    cr_assert_eq (sl_handlers_add (s_table, &h), 0);
}

static void
s_teardown (void)
{
    sl_handlers_destroy (&s_table);
    sl_handlers_destroy (&s_table);     //  safe twice
}

static sl_handled_t
s_offer (const char *method, const char *path, bool draining)
{
    s_log.trail [0] = 0;
    return sl_handlers_serve (s_table, s_req, method, path, draining, s_guard, &s_log);
}

TestSuite (sl_handlers, .init = s_setup, .fini = s_teardown);

Test (sl_handlers, a_prefix_is_the_path_or_a_parent_of_it)
{
    cr_expect_eq (s_offer ("POST", "/mcp", false), SL_HANDLED);
    cr_expect_str_eq (s_log.trail, "g mcp");
    s_offer ("POST", "/mcp/github", false);
    cr_expect_str_eq (s_log.trail, "g mcp");
    s_offer ("POST", "/mcpx", false);
    cr_expect_str_eq (s_log.trail, "g dialects", "/mcpx is not under /mcp");
    s_offer ("POST", "/v1/chat/completions", false);
    cr_expect_str_eq (s_log.trail, "g dialects", "/ takes every path");
}

Test (sl_handlers, the_method_filters_and_a_decline_goes_on)
{
    s_offer ("GET", "/v1/models", false);
    cr_expect_str_eq (s_log.trail, "g models dialects", "models declines, the next is asked");
    s_offer ("POST", "/v1/models", false);
    cr_expect_str_eq (s_log.trail, "g dialects", "models takes GET only");
    s_dialects.takes = false;
    cr_expect_eq (s_offer ("POST", "/nowhere", false), SL_HANDLED_NONE, "nobody took it: the caller answers");
    cr_expect_str_eq (s_log.trail, "g dialects");
}

Test (sl_handlers, the_guard_runs_once_before_the_first_handler_not_open)
{
    s_offer ("GET", "/healthz", false);
    cr_expect_str_eq (s_log.trail, "probe", "an open handler: no guard");
    s_probe.takes = false;
    s_offer ("GET", "/healthz/x", false);
    cr_expect_str_eq (s_log.trail, "probe g models dialects", "declined: guarded before the next, once");
    s_log.guard_refuses = true;
    cr_expect_eq (s_offer ("POST", "/mcp", false), SL_HANDLED_GUARD);
    cr_expect_str_eq (s_log.trail, "g", "refused: no handler sees it");
    sl_handlers_t *bare = sl_handlers_new ();
    s_log.trail [0] = 0;
    cr_expect_eq (sl_handlers_serve (bare, s_req, "GET", "/x", false, s_guard, &s_log), SL_HANDLED_GUARD,
                  "no handler at all: the guard still runs");
    s_log.guard_refuses = false;
    s_log.trail [0] = 0;
    cr_expect_eq (sl_handlers_serve (bare, s_req, "GET", "/x", false, s_guard, &s_log), SL_HANDLED_NONE);
    cr_expect_str_eq (s_log.trail, "g");
    cr_expect_eq (sl_handlers_serve (bare, s_req, "GET", "/x", false, NULL, NULL), SL_HANDLED_NONE, "no guard");
    sl_handlers_destroy (&bare);
}

Test (sl_handlers, while_draining_only_those_that_say_so)
{
    cr_expect_eq (s_offer ("POST", "/v1/chat/completions", true), SL_HANDLED_NONE, "the caller refuses it");
    cr_expect_str_eq (s_log.trail, "g", "guarded all the same");
    cr_expect_eq (s_offer ("POST", "/mcp/github", true), SL_HANDLED);
    cr_expect_str_eq (s_log.trail, "g mcp");
    s_offer ("GET", "/healthz", true);
    cr_expect_str_eq (s_log.trail, "probe");
}

Test (sl_handlers, a_close_goes_to_the_handler_that_owns_it)
{
    s_mcp.takes = false;
    s_log.trail [0] = 0;
    cr_expect (sl_handlers_closed (s_table, s_req));
    cr_expect_str_eq (s_log.trail, "mcp-closed dialects-closed", "asked in order until one owns it");
    s_dialects.takes = false;
    cr_expect_not (sl_handlers_closed (s_table, s_req));
    cr_expect_not (sl_handlers_held (s_table));
    s_dialects.holds = true;
    cr_expect (sl_handlers_held (s_table));
}

Test (sl_handlers, a_full_table_or_a_handler_without_serve_is_refused)
{
    sl_handlers_t *t = sl_handlers_new ();
    sl_handler_t h = { .prefix = "/a", .serve = s_serve, .arg = &s_probe };
    for (int i = 0; i < SL_HANDLERS_MAX; i++)
        cr_expect_eq (sl_handlers_add (t, &h), 0);
    cr_expect_eq (sl_handlers_add (t, &h), -1);
    sl_handlers_destroy (&t);
    t = sl_handlers_new ();
    h.serve = NULL;
    cr_expect_eq (sl_handlers_add (t, &h), -1);
    h.serve = s_serve;
    h.prefix = NULL;
    cr_expect_eq (sl_handlers_add (t, &h), -1);
    sl_handlers_destroy (&t);
}
