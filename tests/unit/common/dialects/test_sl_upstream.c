/*  Unit tests: common/dialects/sl_upstream. */
#include <criterion/criterion.h>
#include <string.h>
#include <strings.h>

#include "common/dialects/sl_upstream.h"

//  A provider at a base URL, with no other field.
#define S_AT(url) (&(sl_provider_t) { .name = "p", .base_url = (url) })

static bool
s_has (const sl_upstream_t *up, const char *line)
{
    for (size_t i = 0; i < up->header_count; i++)
        if (strcmp (up->header [i].data, line) == 0)
            return true;
    return false;
}

//  The credential line the call carries, "" when none.
static const char *
s_credential (const sl_upstream_t *up)
{
    for (size_t i = 0; i < up->header_count; i++) {
        const char *h = up->header [i].data;
        if (strncasecmp (h, "authorization:", 14) == 0 || strncasecmp (h, "x-api-key:", 10) == 0
        ||  strncasecmp (h, "x-goog-api-key:", 15) == 0)
            return h;
    }
    return "";
}

Test (sl_upstream, each_dialect_its_url_headers_and_key)
{
    struct { int dialect; const char *url; const char *credential; const char *extra; } cases [] = {
        { SL_DIALECT_OPENAI, "http://u/v1/chat/completions", "Authorization: Bearer K", NULL },
        { SL_DIALECT_RESPONSES, "http://u/v1/responses", "Authorization: Bearer K", NULL },
        { SL_DIALECT_ANTHROPIC, "http://u/v1/v1/messages", "x-api-key: K", "anthropic-version: 2023-06-01" },
        { SL_DIALECT_GEMINI, "http://u/v1/models/m-1:streamGenerateContent?alt=sse", "x-goog-api-key: K", NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_upstream_t up;
        cr_assert_eq (sl_upstream_prepare (sl_dialect_get (cases [i].dialect), S_AT ("http://u/v1"), SL_STR_LIT ("m-1"),
                                           "K", true, SL_STR_LIT ("Authorization: Bearer client"), SL_STR_NULL, &up), 0);
        cr_expect_str_eq (sl_buf_cstr (&up.url), cases [i].url, "case %zu", i);
        cr_expect (s_has (&up, "Content-Type: application/json"));
        cr_expect (s_has (&up, "Accept: text/event-stream"));
        cr_expect (s_has (&up, "Expect:"), "no 100-continue round trip");
        cr_expect_str_eq (s_credential (&up), cases [i].credential, "case %zu: the provider's key wins", i);
        cr_expect_str_eq (up.credential, "key");
        if (cases [i].extra)
            cr_expect (s_has (&up, cases [i].extra), "case %zu", i);
        sl_upstream_clear (&up);
    }
}

Test (sl_upstream, the_clients_credential_forwarded_the_upstreams_way)
{
    struct { int dialect; const char *client; bool forward; const char *line; } cases [] = {
        { SL_DIALECT_OPENAI, "Authorization: Bearer c1", true, "Authorization: Bearer c1" },
        { SL_DIALECT_ANTHROPIC, "x-api-key: c2", true, "x-api-key: c2" },
        { SL_DIALECT_ANTHROPIC, "Authorization: Bearer c3", true, "x-api-key: c3" },
        { SL_DIALECT_OPENAI, "x-api-key: c4", true, "Authorization: Bearer c4" },
        { SL_DIALECT_GEMINI, "Authorization: bearer c5", true, "x-goog-api-key: c5" },
        { SL_DIALECT_RESPONSES, "x-goog-api-key: c6", true, "Authorization: Bearer c6" },
        { SL_DIALECT_OPENAI, "Authorization: Bearer c7", false, "" },
        { SL_DIALECT_OPENAI, "Authorization: Bearer c8\r\nX-Evil: 1", true, "" },
        { SL_DIALECT_OPENAI, "no colon", true, "" },
        { SL_DIALECT_ANTHROPIC, "Authorization: Bearer ", true, "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_upstream_t up;
        cr_assert_eq (sl_upstream_prepare (sl_dialect_get (cases [i].dialect), S_AT ("http://u"), SL_STR_LIT ("m"), "",
                                           cases [i].forward, sl_str (cases [i].client), SL_STR_NULL, &up), 0);
        cr_expect_str_eq (s_credential (&up), cases [i].line, "case %zu", i);
        cr_expect_str_eq (up.credential, cases [i].line [0] ? "client" : "none", "case %zu", i);
        sl_upstream_clear (&up);
    }
}

Test (sl_upstream, gemini_models_in_the_path)
{
    const sl_dialect_t *g = sl_dialect_get (SL_DIALECT_GEMINI);
    sl_upstream_t up;
    cr_assert_eq (sl_upstream_prepare (g, S_AT ("http://u"), SL_STR_LIT ("models/gemini-x"), NULL, false,
                                       SL_STR_NULL, SL_STR_NULL, &up), 0);
    cr_expect_str_eq (sl_buf_cstr (&up.url), "http://u/models/gemini-x:streamGenerateContent?alt=sse",
                      "a models/ prefix is the path's own");
    sl_upstream_clear (&up);
    cr_assert_eq (sl_upstream_prepare (g, S_AT ("http://u"), SL_STR_LIT ("a/b c?"), NULL, false, SL_STR_NULL, SL_STR_NULL, &up), 0);
    cr_expect_str_eq (sl_buf_cstr (&up.url), "http://u/models/a%2Fb%20c%3F:streamGenerateContent?alt=sse",
                      "escaped");
    sl_upstream_clear (&up);
    cr_expect_eq (sl_upstream_prepare (g, S_AT ("http://u"), SL_STR_LIT (""), NULL, false, SL_STR_NULL, SL_STR_NULL, &up), -1);
    sl_upstream_clear (&up);
    char big [300];
    memset (big, 'm', sizeof big);
    cr_expect_eq (sl_upstream_prepare (g, S_AT ("http://u"), sl_str_n (big, sizeof big), NULL, false, SL_STR_NULL, SL_STR_NULL, &up), -1);
    sl_upstream_clear (&up);
}

Test (sl_upstream, credential_lines_from_any_dialect)
{
    sl_buf_t out = { 0 };
    sl_upstream_credential (sl_dialect_get (SL_DIALECT_ANTHROPIC), SL_STR_LIT ("X-API-KEY: k"), &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "X-API-KEY: k", "its own header, as it came");
    sl_buf_reset (&out);
    sl_upstream_credential (sl_dialect_get (SL_DIALECT_GEMINI), SL_STR_LIT ("authorization:   Bearer  k"), &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "x-goog-api-key:  k");
    sl_buf_free (&out);
}

static const char *
s_headers_of (void *arg, const char *name)
{
    const char *const *h = arg;
    for (; h [0]; h += 2)
        if (strcasecmp (h [0], name) == 0)
            return h [1];
    return NULL;
}

//  What the client's dialect says goes to its own upstream as sent (an
//  Anthropic client's anthropic-beta: the beta features its body uses),
//  and nothing else.
Test (sl_upstream, the_clients_passthrough_headers_go_as_sent)
{
    const sl_dialect_t *a = sl_dialect_get (SL_DIALECT_ANTHROPIC);
    const char *client [] = { "anthropic-beta", "context-management-2025-06-27,effort-2025-11-24",
                              "x-api-key", "secret", "x-other", "1", NULL };
    sl_buf_t lines = { 0 };
    sl_upstream_passthrough (a, s_headers_of, client, &lines);
    cr_expect_str_eq (sl_buf_cstr (&lines), "anthropic-beta: context-management-2025-06-27,effort-2025-11-24\n");
    sl_upstream_passthrough (sl_dialect_get (SL_DIALECT_OPENAI), s_headers_of, client, &lines);
    cr_expect_eq (lines.len, strlen ("anthropic-beta: context-management-2025-06-27,effort-2025-11-24\n"),
                  "Chat Completions names none");
    const char *broken [] = { "anthropic-beta", "a\r\nx-api-key: stolen", NULL };
    sl_buf_t none = { 0 };
    sl_upstream_passthrough (a, s_headers_of, broken, &none);
    cr_expect_eq (none.len, 0, "a value with a line break is left out");

    //  The ingest sends the lines of names the dialect lists, well-formed.
    sl_buf_puts (&lines, "x-api-key: injected\nanthropic-beta\nAnthropic-Beta: second\n");
    sl_upstream_t up;
    cr_assert_eq (sl_upstream_prepare (a, S_AT ("http://u"), SL_STR_LIT ("m"), "K", false, SL_STR_NULL, sl_buf_str (&lines),
                                       &up), 0);
    cr_expect (s_has (&up, "anthropic-beta: context-management-2025-06-27,effort-2025-11-24"));
    cr_expect (s_has (&up, "Anthropic-Beta: second"));
    cr_expect_str_eq (s_credential (&up), "x-api-key: K", "a line of another name goes nowhere");
    size_t keys = 0;
    for (size_t i = 0; i < up.header_count; i++)
        keys += strncasecmp (sl_buf_cstr (&up.header [i]), "x-api-key", 9) == 0;
    cr_expect_eq (keys, 1, "one credential, the provider's");
    sl_upstream_clear (&up);
    //  Another dialect's upstream takes none of them.
    cr_assert_eq (sl_upstream_prepare (sl_dialect_get (SL_DIALECT_OPENAI), S_AT ("http://u"), SL_STR_LIT ("m"), "K", false,
                                       SL_STR_NULL, sl_buf_str (&lines), &up), 0);
    for (size_t i = 0; i < up.header_count; i++)
        cr_expect (strncasecmp (sl_buf_cstr (&up.header [i]), "anthropic-beta", 14) != 0);
    sl_upstream_clear (&up);
    sl_buf_free (&lines);
}

//  Claude on Vertex AI refuses a request with a beta feature it does not
//  take: the client's anthropic-beta goes with the names it takes only,
//  tool search under Vertex AI's name for it, each once; with none left,
//  no anthropic-beta at all. Anthropic's own API gets the line as sent.
Test (sl_upstream, a_clouds_claude_gets_only_the_betas_it_takes)
{
    const char *lines = "anthropic-beta: claude-code-20250219, thinking-token-count-2026-05-13,"
                        "advanced-tool-use-2025-11-20,tool-search-tool-2025-10-19 ,effort-2025-11-24\n";
    sl_upstream_t up;
    const sl_dialect_t *v = sl_dialect_get (SL_DIALECT_VERTEX_ANTHROPIC);
    const sl_provider_t *at = &(sl_provider_t) { .name = "p", .base_url = "http://u", .region = "r", .project = "j" };
    cr_assert_eq (sl_upstream_prepare (v, at, SL_STR_LIT ("m"), "K", false, SL_STR_NULL, sl_str (lines), &up), 0);
    cr_expect (s_has (&up, "anthropic-beta: claude-code-20250219,tool-search-tool-2025-10-19,effort-2025-11-24"));
    sl_upstream_clear (&up);
    cr_assert_eq (sl_upstream_prepare (v, at, SL_STR_LIT ("m"), "K", false, SL_STR_NULL,
                                       SL_STR_LIT ("anthropic-beta: prompt-caching-scope-2026-01-05\n"), &up), 0);
    for (size_t i = 0; i < up.header_count; i++)
        cr_expect (strncasecmp (sl_buf_cstr (&up.header [i]), "anthropic-beta", 14) != 0, "%s",
                   sl_buf_cstr (&up.header [i]));
    sl_upstream_clear (&up);
    cr_assert_eq (sl_upstream_prepare (sl_dialect_get (SL_DIALECT_ANTHROPIC), S_AT ("http://u"), SL_STR_LIT ("m"), "K",
                                       false, SL_STR_NULL, sl_str (lines), &up), 0);
    cr_expect (s_has (&up, "anthropic-beta: claude-code-20250219, thinking-token-count-2026-05-13,"
                           "advanced-tool-use-2025-11-20,tool-search-tool-2025-10-19 ,effort-2025-11-24"));
    sl_upstream_clear (&up);
}

//  What a cloud's Claude does not take is named (the ingest logs it), in
//  the client's words; a dialect that takes any beta leaves none out.
Test (sl_upstream, the_betas_a_cloud_leaves_out_are_named)
{
    sl_str_t lines = SL_STR_LIT ("x-other: 1\nanthropic-beta: claude-code-20250219, thinking-token-count-2026-05-13,"
                                 "advanced-tool-use-2025-11-20\r\n");
    sl_buf_t out = { 0 };
    cr_expect_eq (sl_dialect_betas_left_out (sl_dialect_get (SL_DIALECT_VERTEX_ANTHROPIC), lines, &out), 1);
    cr_expect_str_eq (sl_buf_cstr (&out), "thinking-token-count-2026-05-13", "a renamed one is taken, not left out");
    sl_buf_reset (&out);
    cr_expect_eq (sl_dialect_betas_left_out (sl_dialect_get (SL_DIALECT_BEDROCK_ANTHROPIC), lines, &out), 1);
    cr_expect_str_eq (sl_buf_cstr (&out), "thinking-token-count-2026-05-13");
    sl_buf_reset (&out);
    cr_expect_eq (sl_dialect_betas_left_out (sl_dialect_get (SL_DIALECT_ANTHROPIC), lines, &out), 0);
    cr_expect_eq (out.len, 0);
    cr_expect_eq (sl_dialect_betas_left_out (sl_dialect_get (SL_DIALECT_VERTEX_ANTHROPIC),
                                             SL_STR_LIT ("x-other: anthropic-beta: x\n"), &out), 0, "not the line");
    sl_buf_free (&out);
}

//  The upstream's trace context is the stream span's child, written by
//  the ingest (sl_trace_child): no dialect may pass the client's own
//  traceparent or tracestate on as sent.
Test (sl_upstream, no_dialect_passes_the_clients_trace_context_on)
{
    const char *client [] = { "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                              "tracestate", "rojo=1", "anthropic-beta", "x", NULL };
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        sl_buf_t lines = { 0 };
        sl_upstream_passthrough (d, s_headers_of, client, &lines);
        const char *text = lines.len ? sl_buf_cstr (&lines) : "";
        cr_expect_null (strcasestr (text, "traceparent"), "%s passes traceparent on: %s", d->name, text);
        cr_expect_null (strcasestr (text, "tracestate"), "%s passes tracestate on: %s", d->name, text);
        sl_buf_free (&lines);
    }
}
