/*  Fuzz target: sluice-mock's request path (services/mock/sl_mock_request
    and the script builders behind it) must answer any request: either a
    script to serve, or an error with a status of 400 or more and a JSON
    body in the provider's format; never a crash, whatever the body. The
    first byte picks the path (each provider API the mock plays, and one
    it does not), the second the method and the attempt count (mock-flaky);
    the rest is the body. A request it serves is also built as the
    playback of a recording that is the body, in each recorded format. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "services/mock/sl_mock_request.h"

static const char *const s_paths [] = {
    "/v1/chat/completions", "/v1/responses", "/v1/messages",
    "/v1beta/models/mock-tools:streamGenerateContent", "/v1beta/models/mock-agent-shell:streamGenerateContent",
    "/v1/nothing",
};

static void
s_check_error (const sl_mock_script_t *sc)
{
    if (sc->status < 400 || !sl_json_valid (sl_str_n (sc->error_body.data, sc->error_body.len)))
        __builtin_trap ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const char *path = s_paths [data [0] % (sizeof s_paths / sizeof s_paths [0])];
    const char *method = data [1] & 1 ? "GET" : "POST";
    sl_str_t body = sl_str_n (data + 2, size - 2);
    sl_mock_call_t call;
    sl_mock_script_t sc;
    if (sl_mock_request_read (method, path, body, NULL, &call, &sc)) {
        s_check_error (&sc);
        sl_mock_script_clear (&sc);
        return 0;
    }
    call.chunks %= 64;
    if (sl_mock_request_answer (&call, body, data [1] >> 1, &sc) != 0)
        __builtin_trap ();              //  the dialect came from the mock's own table
    if (sc.status != 200 && sc.status != 0)
        s_check_error (&sc);
    sl_mock_script_clear (&sc);
    static const char *const formats [] = { "x.jsonl", "x.sse" };
    for (size_t i = 0; i < sizeof formats / sizeof formats [0]; i++) {
        sl_mock_script_playback (sl_str (formats [i]), body, &sc);
        sl_mock_script_clear (&sc);
    }
    return 0;
}
