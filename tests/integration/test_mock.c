/*  Integration: sluice-mock, the embedded default upstream, as a client
    of it sees it over HTTP. A request the provider would refuse is
    answered with that provider's 400, streaming or not, in every dialect,
    and the mock serves the next request as before (it is what make run
    serves by default and what every test stands on). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"

#define TIMEOUT_MS 15000

typedef struct {
    char dir [256];
    proc_t *mock;
    int port;
} s_mock_t;

static void
s_mock_start (s_mock_t *m)
{
    memset (m, 0, sizeof *m);
    snprintf (m->dir, sizeof m->dir, "/tmp/sluice-mock-XXXXXX");
    cr_assert_not_null (mkdtemp (m->dir));
    const char *args [] = { "--host", "127.0.0.1", "--port", "0", "--delay-ms", "1", NULL };
    m->mock = proc_start (m->dir, "mock", args);
    char port [16];
    cr_assert (proc_wait_log (m->mock, "\"listening\"", "http=127.0.0.1:", port, sizeof port, TIMEOUT_MS));
    m->port = atoi (port);
}

static void
s_mock_stop (s_mock_t *m)
{
    int rc = proc_stop (m->mock, 10000);
    if (rc != 0)
        proc_dump (m->mock);
    cr_expect_eq (rc, 0, "the mock exits cleanly (a crash or a sanitizer report is not 0)");
    unlink (m->mock->log_path);
    free (m->mock);
    rmdir (m->dir);
}

//  The mock still serves: a plain request in the dialect of path.
static void
s_expect_alive (const s_mock_t *m)
{
    sl_buf_t out = { 0 };
    cr_expect_eq (http_request (m->port, "POST", "/v1/chat/completions",
                                "{\"model\":\"mock-text\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
                                NULL, &out, TIMEOUT_MS), 200, "the mock answers after a refusal");
    sl_buf_free (&out);
}

typedef struct {
    const char *path;
    const char *body;                   //  "%s": where "stream": true or false goes
    const char *shape;                  //  the provider's error body says this
} s_refused_t;

Test (mock, a_refused_request_is_a_400_in_its_dialect_streaming_or_not)
{
    static const s_refused_t refused [] = {
        { "/v1/messages", "{\"model\":\"mock-text\",\"max_tokens\":10,\"messages\":\"x\",%s}",
          "\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\"" },
        { "/v1/messages", "{\"model\":\"mock-text\",\"max_tokens\":10,%s,\"messages\":[{\"role\":\"tool\","
                          "\"content\":\"x\"}]}", "\"type\":\"invalid_request_error\"" },
        { "/v1/chat/completions", "{\"model\":\"mock-text\",%s,\"messages\":[{\"role\":\"robot\",\"content\":\"x\"}]}",
          "{\"error\":{" },
        { "/v1/responses", "{\"model\":\"mock-text\",%s,\"input\":7}", "{\"error\":{" },
        { "/v1beta/models/mock-text:streamGenerateContent?alt=sse", "{%s,\"contents\":{}}",
          "\"status\":\"INVALID_ARGUMENT\"" },
    };
    s_mock_t m;
    s_mock_start (&m);
    for (size_t i = 0; i < sizeof refused / sizeof refused [0]; i++)
        for (int stream = 0; stream < 2; stream++) {
            char body [512];
            snprintf (body, sizeof body, refused [i].body, stream ? "\"stream\":true" : "\"stream\":false");
            sl_buf_t out = { 0 };
            int status = http_request (m.port, "POST", refused [i].path, body, NULL, &out, TIMEOUT_MS);
            cr_expect_eq (status, 400, "%s %s: %d %s", refused [i].path, body, status, sl_buf_cstr (&out));
            cr_expect_not_null (strstr (sl_buf_cstr (&out), refused [i].shape), "%s: %s", body, sl_buf_cstr (&out));
            sl_buf_free (&out);
            s_expect_alive (&m);
        }
    s_mock_stop (&m);
}
