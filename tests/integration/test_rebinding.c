/*  Integration: DNS rebinding against the doors that trust this machine
    when they have no keys - the gateway (its model endpoints and
    /v1/approvals) and sluice-audit's console - through the real programs
    on loopback.

    A web page whose name the attacker rebinds to 127.0.0.1 makes this
    machine's browser send its requests here: they come from a loopback
    peer, with the page's name in Host (and, for a post, its origin in
    Origin). The attack: while a call waits for a person (action: ask), the
    page lists the approvals and approves the call, reads /api/streams
    (prompts, tool arguments), and spends the providers' keys on a model
    endpoint. Every one of those is refused (403, saying why) and the
    call still waits; the same requests naming localhost:PORT (what
    kubectl port-forward sends) are answered, and a person denies the call
    that way. With keys the key is the guard: a foreign Host with a key is
    answered. Every wait is bounded. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/audit_proc.h"
#include "tests/integration/harness.h"
#include "tests/integration/load.h"

#define TIMEOUT_MS 15000
#define RUN_LIMIT_MS 60000
#define REBOUND "rebound.example"       //  the attacker's name, now answering 127.0.0.1
#define CHAT "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
#define MESSAGES "{\"model\":\"mock-text\",\"max_tokens\":64,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
#define APPROVE "{\"decision\":\"approve\",\"comment\":\"from a web page\"}"
#define DENY "{\"decision\":\"deny\",\"comment\":\"not from a web page\"}"

static const char *s_ask_policy =
    "rules:\n"
    "  - id: ask-shell\n"
    "    tool: run_shell\n"
    "    action: ask\n"
    "    message: 'sluice: {tool} was not approved ({reason})'\n"
    "    ask:\n"
    "      timeout_ms: 60000\n"
    "      on_timeout: block\n";

//  A request to 127.0.0.1:port naming host (NULL: curl's own, 127.0.0.1:port)
//  and origin (NULL: none), with a JSON body or none, and a key or none.
static int
s_call (int port, const char *method, const char *path, const char *body, const char *host, const char *origin,
        const char *key, sl_buf_t *out)
{
    char host_line [128], origin_line [128], auth [128];
    const char *headers [5] = { 0 };
    int n = 0;
    headers [n++] = "Content-Type: application/json";
    if (host) {
        snprintf (host_line, sizeof host_line, "Host: %s", host);
        headers [n++] = host_line;
    }
    if (origin) {
        snprintf (origin_line, sizeof origin_line, "Origin: %s", origin);
        headers [n++] = origin_line;
    }
    if (key) {
        snprintf (auth, sizeof auth, "Authorization: Bearer %s", key);
        headers [n++] = auth;
    }
    sl_buf_reset (out);
    return http_request (port, method, path, body, headers, out, TIMEOUT_MS);
}

//  The pending approvals, asked as a person on this machine does
//  (Host: localhost:PORT), waiting until one is there: a new reference.
static json_t *
s_pending (int port, const char *host)
{
    int64_t deadline = zclock_mono () + TIMEOUT_MS;
    json_t *list = NULL;
    sl_buf_t out = { 0 };
    while (zclock_mono () < deadline) {
        json_decref (list);
        list = NULL;
        if (s_call (port, "GET", "/v1/approvals", NULL, host, NULL, NULL, &out) == 200)
            list = json_loads (sl_buf_cstr (&out), 0, NULL);
        if (json_array_size (json_object_get (list, "approvals")) >= 1)
            break;
        zclock_sleep (50);
    }
    sl_buf_free (&out);
    cr_assert_eq (json_array_size (json_object_get (list, "approvals")), 1, "the call waits for a person");
    return list;
}

typedef struct {
    int gateway;                        //  ports
    int console;
    char gateway_host [32];             //  localhost:PORT, as kubectl port-forward sends it
    char console_host [32];
    char rebound_gateway [64];          //  the attacker's name with each port
    char rebound_console [64];
    char rebound_origin [64];
    int refused;                        //  the attacker's requests refused by the gateway
} s_scene_t;

//  An attacker's request: refused with 403, saying which header gave it
//  away.
static void
s_expect_refused (int status, sl_buf_t *out, const char *header, const char *what)
{
    cr_expect_eq (status, 403, "%s: %s", what, sl_buf_cstr (out));
    cr_expect_not_null (strstr (sl_buf_cstr (out), header), "%s: says why (%s): %s", what, header, sl_buf_cstr (out));
}

//  While the call waits: the rebound page tries every door, then the
//  person on this machine denies the call.
static void
s_attack (void *arg, int round)
{
    (void) round;
    s_scene_t *sc = arg;
    json_t *list = s_pending (sc->gateway, sc->gateway_host);
    char id [64];
    snprintf (id, sizeof id, "%s", json_string_value (json_object_get (json_array_get (
              json_object_get (list, "approvals"), 0), "id")) ?: "");
    cr_assert (*id);
    char path [96];
    sl_buf_t out = { 0 };
    //  The gateway's approvals API, by the rebound name, then by origin.
    s_expect_refused (s_call (sc->gateway, "GET", "/v1/approvals", NULL, sc->rebound_gateway, NULL, NULL, &out), &out,
                      "Host", "the gateway's list, rebound");
    snprintf (path, sizeof path, "/v1/approvals/%s", id);
    s_expect_refused (s_call (sc->gateway, "POST", path, APPROVE, sc->rebound_gateway, sc->rebound_origin, NULL, &out),
                      &out, "Host", "an approval through the gateway, rebound");
    s_expect_refused (s_call (sc->gateway, "POST", path, APPROVE, sc->gateway_host, sc->rebound_origin, NULL, &out),
                      &out, "Origin", "an approval through the gateway from a page of another site");
    sc->refused += 3;
    //  The console: what was said and called, and the approvals.
    s_expect_refused (s_call (sc->console, "GET", "/api/streams", NULL, sc->rebound_console, NULL, NULL, &out), &out,
                      "Host", "the console's streams, rebound");
    cr_expect_null (strstr (sl_buf_cstr (&out), "\"sid\""), "no stream shown: %s", sl_buf_cstr (&out));
    s_expect_refused (s_call (sc->console, "GET", "/api/approvals?state=pending", NULL, sc->rebound_console, NULL,
                              NULL, &out), &out, "Host", "the console's approvals, rebound");
    snprintf (path, sizeof path, "/api/approvals/%s", id);
    s_expect_refused (s_call (sc->console, "POST", path, APPROVE, sc->rebound_console, sc->rebound_origin, NULL, &out),
                      &out, "Host", "an approval through the console, rebound");
    s_expect_refused (s_call (sc->console, "POST", path, APPROVE, sc->console_host, sc->rebound_origin, NULL, &out),
                      &out, "Origin", "an approval through the console from a page of another site");
    //  Nothing was decided: the person on this machine sees it still
    //  waiting, on the console and the gateway, by localhost:PORT.
    cr_expect_eq (s_call (sc->console, "GET", "/api/approvals?state=pending", NULL, sc->console_host, NULL, NULL,
                          &out), 200, "port-forward to the console: %s", sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), id), "%s", sl_buf_cstr (&out));
    json_decref (list);
    list = s_pending (sc->gateway, sc->gateway_host);
    cr_expect_str_eq (json_string_value (json_object_get (json_array_get (json_object_get (list, "approvals"), 0),
                                                          "id")), id, "the same call still waits");
    snprintf (path, sizeof path, "/v1/approvals/%s", id);
    cr_expect_eq (s_call (sc->gateway, "POST", path, DENY, sc->gateway_host, NULL, NULL, &out), 200,
                  "a person on this machine decides: %s", sl_buf_cstr (&out));
    json_decref (list);
    sl_buf_free (&out);
}

Test (rebinding, a_rebound_page_reads_approves_and_spends_nothing, .timeout = 180)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .policy_text = s_ask_policy, .gateway_approvals = true,
                                                       .audit_spool = "" });
    cr_assert_not_null (s);
    char data [300];
    snprintf (data, sizeof data, "%s/audit-data", s->dir);
    const char *store [] = { "--data-dir", data, NULL };
    const char *extra [] = { "--judge-approvals", s->approvals, NULL };
    audit_proc_t audit;
    cr_assert (audit_start (s, "audit", store, extra, &audit));
    s_scene_t sc = { .gateway = s->http_port, .console = audit.console_port };
    snprintf (sc.gateway_host, sizeof sc.gateway_host, "localhost:%d", s->http_port);
    snprintf (sc.console_host, sizeof sc.console_host, "localhost:%d", audit.console_port);
    snprintf (sc.rebound_gateway, sizeof sc.rebound_gateway, REBOUND ":%d", s->http_port);
    snprintf (sc.rebound_console, sizeof sc.rebound_console, REBOUND ":%d", audit.console_port);
    snprintf (sc.rebound_origin, sizeof sc.rebound_origin, "http://" REBOUND ":%d", s->http_port);

    //  An agent's stream whose run_shell call waits; the attack meanwhile.
    load_client_t *client = load_clients (1, "mock-tools", 4);
    load_action_t action = { .at = 200, .fn = s_attack, .arg = &sc };
    load_run (s->http_port, client, 1, &action, 1, RUN_LIMIT_MS);
    cr_expect (load_complete (client), "the stream completes: %s", sl_buf_cstr (&client->body));
    cr_expect_not_null (strstr (sl_buf_cstr (&client->body), "was not approved"),
                        "the call became the notice: denied by the person, never approved by the page");
    load_clients_free (client, 1);

    //  A model endpoint: the page spends nothing, by name or by origin.
    sl_buf_t out = { 0 };
    int status = s_call (s->http_port, "POST", "/v1/chat/completions", CHAT, sc.rebound_gateway, NULL, NULL, &out);
    s_expect_refused (status, &out, "Host", "a model endpoint, rebound");
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "permission_error"), "in the dialect's error shape: %s",
                        sl_buf_cstr (&out));
    status = s_call (s->http_port, "POST", "/v1/messages", MESSAGES, sc.gateway_host, sc.rebound_origin, NULL, &out);
    s_expect_refused (status, &out, "Origin", "a model endpoint from a page of another site");
    s_expect_refused (s_call (s->http_port, "GET", "/v1/models", NULL, sc.rebound_gateway, NULL, NULL, &out), &out,
                      "Host", "the model list, rebound");
    sc.refused += 3;
    cr_expect_eq (metric_value (atoi (s->metrics [5]), "sluice_requests_foreign_total"), sc.refused,
                  "each refusal counted");
    //  The probes answer whoever asks: they say no more than up.
    cr_expect_eq (s_call (s->http_port, "GET", "/healthz", NULL, sc.rebound_gateway, NULL, NULL, &out), 200);
    //  By the names of this machine it all works.
    status = s_call (s->http_port, "POST", "/v1/chat/completions", CHAT, sc.gateway_host, NULL, NULL, &out);
    cr_expect_eq (status, 200, "Host: localhost:PORT (kubectl port-forward): %s", sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "[DONE]"), "%s", sl_buf_cstr (&out));
    char own_origin [64];
    snprintf (own_origin, sizeof own_origin, "http://127.0.0.1:%d", s->http_port);
    cr_expect_eq (s_call (s->http_port, "GET", "/v1/models", NULL, "[::1]", own_origin, NULL, &out), 200);
    cr_expect_eq (s_call (audit.console_port, "GET", "/api/streams", NULL, sc.console_host, NULL, NULL, &out), 200);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "\"model\":\"mock-tools\""),
                        "the console by localhost:PORT shows the agent's stream: %s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    cr_expect_eq (proc_stop (audit.proc, 10000), 0, "sluice-audit stops cleanly");
    free (audit.proc);
    cr_expect_eq (stack_stop (s), 0);
}

Test (rebinding, with_keys_the_key_is_the_guard)
{
    setenv ("SLUICE_CLIENT_KEYS", "sk-rebind", 1);
    sluice_stack_t *s = stack_start (&(stack_opts_t) { 0 });
    unsetenv ("SLUICE_CLIENT_KEYS");
    cr_assert_not_null (s);
    sl_buf_t out = { 0 };
    char host [64];
    snprintf (host, sizeof host, "sluice.example:%d", s->http_port);
    cr_expect_eq (s_call (s->http_port, "POST", "/v1/chat/completions", CHAT, host, NULL, NULL, &out), 401,
                  "no key: %s", sl_buf_cstr (&out));
    cr_expect_eq (s_call (s->http_port, "POST", "/v1/chat/completions", CHAT, host, NULL, "sk-rebind", &out), 200,
                  "a gateway with keys is reached by names of its own: %s", sl_buf_cstr (&out));
    cr_expect_eq (metric_value (atoi (s->metrics [5]), "sluice_requests_foreign_total"), 0);
    sl_buf_free (&out);
    cr_expect_eq (stack_stop (s), 0);
}
