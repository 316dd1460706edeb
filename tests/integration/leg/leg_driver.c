/*  leg_driver.c - a gateway for the integration tests only: the real
    sluice-gateway (its every object, its main) linked with
    -Wl,--wrap=gateway_new, so that this file sees the gateway it makes and
    can start the gateway's own requests (gateway_leg.h, through the legs
    and the core gateway.h gives it), which no client can start.

    The test names a directory in SLUICE_LEG_DIR. Leg N (1..LEG_MAX) is
    started once N.ready appears there, from N.body (the OpenAI Chat
    request), N.answer (the inline answer) and N.mcp (the MCP request, one
    line); the server is LEG_SERVER and the caller the one no credential
    makes (anonymous without keys); with N.early there too, it is
    answered when judged (answer_when_judged). Its end is written to N.status
    ("<status> <refused>"), N.answer.out and N.judged, then N.done. A leg
    that cannot start writes N.done alone with N.status "-1 0".
*/
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_yaml.h"
#include "services/gateway/gateway.h"
#include "services/gateway/gateway_core.h"
#include "services/gateway/gateway_leg.h"

#define LEG_MAX 8                       //  legs one run may start
#define LEG_POLL_MS 20                  //  how often the directory is looked at
#define LEG_SERVER "github"
#define LEG_FILE_MAX (1u << 20)         //  the most one file of a leg may hold

gateway_t *__real_gateway_new (sl_service_t *service, const gateway_config_t *config);
gateway_t *__wrap_gateway_new (sl_service_t *service, const gateway_config_t *config);

typedef struct {
    int n;
    sl_caller_t *caller;                //  the leg's, until its end
} s_leg_t;

static struct {
    gateway_t *gateway;
    sl_admission_t *admission;          //  the gateway's (borrowed)
    const char *dir;
    bool started [LEG_MAX + 1];
} s_driver;

static bool
s_read (int n, const char *suffix, sl_buf_t *out)
{
    char path [512], *error = NULL;
    snprintf (path, sizeof path, "%s/%d.%s", s_driver.dir, n, suffix);
    int rc = sl_yaml_read (path, LEG_FILE_MAX, out, &error);
    free (error);
    return rc == 0;
}

static void
s_write (int n, const char *suffix, sl_str_t text)
{
    char path [512];
    snprintf (path, sizeof path, "%s/%d.%s", s_driver.dir, n, suffix);
    FILE *f = fopen (path, "wb");
    if (!f)
        return;
    if (text.len)
        fwrite (text.ptr, 1, text.len, f);
    fclose (f);
}

static void
s_done (void *arg, const gateway_leg_result_t *result)
{
    s_leg_t *leg = arg;
    char status [32];
    snprintf (status, sizeof status, "%d %d", result->status, result->refused ? 1 : 0);
    s_write (leg->n, "status", sl_str (status));
    s_write (leg->n, "answer.out", result->answer);
    s_write (leg->n, "judged", result->judged);
    s_write (leg->n, "done", SL_STR_LIT ("1"));
    sl_admission_finish (s_driver.admission, &leg->caller, NULL, NULL, false);
    free (leg);
}

static void
s_start (int n)
{
    sl_buf_t body = { 0 }, answer = { 0 }, mcp = { 0 }, early = { 0 };
    s_read (n, "body", &body);
    s_read (n, "answer", &answer);
    s_read (n, "mcp", &mcp);
    while (mcp.len && (mcp.data [mcp.len - 1] == '\n' || mcp.data [mcp.len - 1] == '\r'))
        mcp.len--;
    s_leg_t *leg = sl_xcalloc (1, sizeof *leg);
    leg->n = n;
    const char *reason;
    leg->caller = sl_admission_identify (s_driver.admission, NULL, &reason);
    gateway_leg_t spec = {
        .body = sl_buf_str (&body),
        .inline_answer = answer.len ? sl_buf_str (&answer) : SL_STR_LIT (""),
        .mcp = sl_buf_cstr (&mcp),
        .server = LEG_SERVER,
        .caller = leg->caller,
        .answer_when_judged = s_read (n, "early", &early)
    };
    uint64_t id;
    if (!leg->caller || gateway_legs_start (gateway_legs (s_driver.gateway), &spec, s_done, leg, &id)) {
        s_write (n, "status", SL_STR_LIT ("-1 0"));
        s_write (n, "done", SL_STR_LIT ("1"));
        sl_admission_finish (s_driver.admission, &leg->caller, NULL, NULL, false);
        free (leg);
    }
    sl_buf_free (&body);
    sl_buf_free (&answer);
    sl_buf_free (&mcp);
    sl_buf_free (&early);
}

static int
s_on_poll (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    (void) arg;
    for (int n = 1; n <= LEG_MAX; n++) {
        if (s_driver.started [n])
            continue;
        char path [512];
        snprintf (path, sizeof path, "%s/%d.ready", s_driver.dir, n);
        if (access (path, F_OK) == 0) {
            s_driver.started [n] = true;
            s_start (n);
        }
    }
    return 0;
}

gateway_t *
__wrap_gateway_new (sl_service_t *service, const gateway_config_t *config)
{
    gateway_t *gateway = __real_gateway_new (service, config);
    s_driver.dir = getenv ("SLUICE_LEG_DIR");
    if (gateway && s_driver.dir && *s_driver.dir) {
        s_driver.gateway = gateway;
        s_driver.admission = gateway_core_admission (gateway_core (gateway));
        zloop_timer (sl_service_loop (service), LEG_POLL_MS, 0, s_on_poll, NULL);
    }
    return gateway;
}
