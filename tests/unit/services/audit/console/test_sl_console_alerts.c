/*  Unit tests: services/audit/console/sl_console_alerts, the budget
    alerts through the console's router (sl_console_handle): a gateway
    posts a crossing with the keys token (recorded once: a second post
    of it is 409), it is an entry of the hash chain, and every console
    role lists it (GET /api/alerts); who may post; bad input. Over a
    SQLite store in a temporary directory (the store itself is tested on
    both databases in test_sl_alertstore.c). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/identity/sl_limits.h"
#include "services/audit/console/sl_console.h"
#include "services/audit/recorder/sl_chain.h"
#include "services/audit/recorder/sl_verify.h"
#include "services/audit/store/sl_store.h"

#define S_ADMIN "console-admin-key"
#define S_VIEWER "console-viewer-key"
#define S_TOKEN "gateways-keys-token"
static char s_dir [64];
static sl_store_t *s_store;
static sl_chain_t *s_chain;
static int64_t s_now = 1700000000000LL;

static int64_t
s_clock (void *arg)
{
    (void) arg;
    return s_now;
}

static void
s_setup (void)
{
    snprintf (s_dir, sizeof s_dir, "/tmp/sluice-calerts-XXXXXX");
    cr_assert_not_null (mkdtemp (s_dir));
    char path [128], *error = NULL;
    snprintf (path, sizeof path, "%s/a.db", s_dir);
    s_store = sl_store_open (path, &error);
    cr_assert_not_null (s_store, "%s", error ? error : "");
    s_chain = sl_chain_new (s_store);
    cr_assert_eq (sl_chain_load (s_chain), 0);
}

static void
s_teardown (void)
{
    sl_chain_destroy (&s_chain);
    sl_store_close (&s_store);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    cr_expect_eq (system (cmd), 0);
}

typedef struct {
    const char *header [4][2];
} s_args_t;

static const char *
s_header (void *arg, const char *name)
{
    s_args_t *a = arg;
    for (int i = 0; i < 4 && a->header [i][0]; i++)
        if (strcasecmp (a->header [i][0], name) == 0)
            return a->header [i][1];
    return NULL;
}

static const char *
s_query (void *arg, const char *name)
{
    (void) arg;
    (void) name;
    return NULL;
}

static s_args_t s_admin = { { { "Authorization", "Bearer " S_ADMIN }, { "Content-Type", "application/json" } } };
static s_args_t s_gateway = { { { "Authorization", "Bearer " S_TOKEN } } };
static s_args_t s_nobody = { { { "Content-Type", "application/json" } } };

//  Ask; the answer's JSON into *out (the caller's), status returned.
static int
s_ask (sl_console_t *c, const char *method, const char *path, s_args_t *args, const char *body, json_t **out)
{
    sl_console_req_t req = { method, path, s_query, s_header, args, sl_str (body), false };
    sl_console_resp_t resp = { 0 };
    sl_console_handle (c, &req, &resp);
    json_t *j = json_loadb (resp.body.data ? (const char *) resp.body.data : "", resp.body.len, 0, NULL);
    cr_assert_not_null (j, "%s %s: %.*s", method, path, (int) resp.body.len, resp.body.data ? (char *) resp.body.data : "");
    if (out)
        *out = j;
    else
        json_decref (j);
    sl_buf_free (&resp.body);
    return resp.status;
}
static s_args_t s_viewer = { { { "Authorization", "Bearer " S_VIEWER } } };
static s_args_t s_posting = { { { "Authorization", "Bearer " S_TOKEN }, { "Content-Type", "application/json" } } };

static sl_console_t *
s_console (bool chained)
{
    sl_console_t *c = sl_console_new (s_store, S_ADMIN ",watcher:viewer:" S_VIEWER);
    sl_console_set_clock (c, s_clock, NULL);
    sl_console_set_keys_token (c, S_TOKEN);
    if (chained)
        sl_console_set_chain (c, s_chain);
    return c;
}

//  A crossing's body as a gateway posts it.
static void
s_body (char *out, size_t size, const char *subject, int threshold)
{
    char id [SL_LIMITS_ALERT_ID_HEX + 1];
    sl_limits_alert_id (subject, "budget_usd", threshold, "202311", id);
    snprintf (out, size, "{\"type\":\"limits_alert\",\"id\":\"%s\",\"at\":1700000000000,\"team\":\"payments\","
                         "\"key\":\"payments-0123456789ab\",\"user\":\"alice\",\"subject\":\"%s\","
                         "\"limit\":\"budget_usd\",\"threshold\":%d,\"used\":8.5,\"max\":10,\"period\":\"month\","
                         "\"window\":\"202311\"}", id, subject, threshold);
}

Test (sl_console_alerts, posted_once_chained_and_listed, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = s_console (true);
    char body [1024];
    json_t *j;
    s_body (body, sizeof body, "key:payments-0123456789ab", 80);
    cr_assert_eq (s_ask (c, "POST", "/api/alerts", &s_posting, body, &j), 201);
    cr_expect_eq (json_integer_value (json_object_get (j, "pos")), 1);
    json_decref (j);
    //  The same crossing again: refused, recorded once.
    cr_expect_eq (s_ask (c, "POST", "/api/alerts", &s_posting, body, NULL), 409);
    s_now += 1000;
    s_body (body, sizeof body, "team:payments", 100);
    cr_assert_eq (s_ask (c, "POST", "/api/alerts", &s_posting, body, NULL), 201);
    cr_expect_eq (sl_chain_head_pos (s_chain), 2);
    int64_t n = 0;
    cr_assert_eq (sl_store_query_int (s_store, "SELECT COUNT(*) FROM chain WHERE kind = 'alert'", NULL, 0, 0, &n), 0);
    cr_expect_eq (n, 2);

    //  A viewer sees them, newest first; so does an admin.
    cr_assert_eq (s_ask (c, "GET", "/api/alerts", &s_viewer, NULL, &j), 200);
    json_t *list = json_object_get (j, "alerts");
    cr_assert_eq (json_array_size (list), 2);
    cr_expect_str_eq (json_string_value (json_object_get (json_array_get (list, 0), "subject")), "team:payments");
    cr_expect_eq (json_integer_value (json_object_get (json_array_get (list, 1), "threshold")), 80);
    json_decref (j);
    cr_expect_eq (s_ask (c, "GET", "/api/alerts", &s_admin, NULL, NULL), 200);
    sl_console_destroy (&c);
}

Test (sl_console_alerts, who_may_post_and_read, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = s_console (true);
    char body [1024];
    s_body (body, sizeof body, "key:payments-0123456789ab", 50);
    //  Only the gateways' token posts: not a console admin, not nobody.
    cr_expect_eq (s_ask (c, "POST", "/api/alerts", &s_admin, body, NULL), 401);
    cr_expect_eq (s_ask (c, "POST", "/api/alerts", &s_nobody, body, NULL), 401);
    s_args_t wrong = { { { "Authorization", "Bearer " S_TOKEN "x" }, { "Content-Type", "application/json" } } };
    cr_expect_eq (s_ask (c, "POST", "/api/alerts", &wrong, body, NULL), 401);
    //  The token opens no reading, nobody reads.
    cr_expect_eq (s_ask (c, "GET", "/api/alerts", &s_gateway, NULL, NULL), 401);
    cr_expect_eq (s_ask (c, "GET", "/api/alerts", &s_nobody, NULL, NULL), 401);
    cr_expect_eq (s_ask (c, "DELETE", "/api/alerts", &s_admin, NULL, NULL), 405);
    int64_t n = -1;
    cr_assert_eq (sl_store_query_int (s_store, "SELECT COUNT(*) FROM alerts", NULL, 0, 0, &n), 0);
    cr_expect_eq (n, 0);
    sl_console_destroy (&c);
}

Test (sl_console_alerts, bad_posts_are_refused, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = s_console (true);
    char body [1024];
    json_t *j;
    s_body (body, sizeof body, "key:payments-0123456789ab", 50);
    //  An id that is not the crossing's.
    char *id = strstr (body, "\"id\":\"") + 6;
    id [0] = id [0] == 'a' ? 'b' : 'a';
    cr_expect_eq (s_ask (c, "POST", "/api/alerts", &s_posting, body, &j), 400);
    cr_expect_not_null (strstr (json_string_value (json_object_get (j, "error")), "id must be the crossing's"));
    json_decref (j);
    cr_expect_eq (s_ask (c, "POST", "/api/alerts", &s_posting, "{\"type\":\"limits_alert\"}", NULL), 400);
    s_body (body, sizeof body, "key:payments-0123456789ab", 50);
    cr_expect_eq (s_ask (c, "POST", "/api/alerts", &s_gateway, body, NULL), 415);
    sl_console_destroy (&c);
    //  Without a chain: refused, never recorded unchained.
    c = s_console (false);
    cr_expect_eq (s_ask (c, "POST", "/api/alerts", &s_posting, body, NULL), 503);
    int64_t n = -1;
    cr_assert_eq (sl_store_query_int (s_store, "SELECT COUNT(*) FROM alerts", NULL, 0, 0, &n), 0);
    cr_expect_eq (n, 0);
    sl_console_destroy (&c);
}
