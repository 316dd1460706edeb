/*  Unit tests: common/dialects/sl_clientkey. */
#include <criterion/criterion.h>
#include <strings.h>

#include "common/dialects/sl_clientkey.h"

//  A request's headers and query, as NULL-terminated name / value pairs.
typedef struct {
    const char *const *headers;
    const char *const *query;
} s_request_t;

static const char *
s_lookup (const char *const *pairs, const char *name)
{
    for (int i = 0; pairs && pairs [i]; i += 2)
        if (strcasecmp (pairs [i], name) == 0)
            return pairs [i + 1];
    return NULL;
}

static const char *
s_header (void *arg, const char *name)
{
    return s_lookup (((s_request_t *) arg)->headers, name);
}

static const char *
s_query (void *arg, const char *name)
{
    return s_lookup (((s_request_t *) arg)->query, name);
}

Test (sl_clientkey, the_key_each_sdk_sends)
{
    const char *const bearer [] = { "Authorization", "Bearer sk-1", NULL };
    const char *const raw [] = { "authorization", "sk-raw", NULL };
    const char *const anthropic [] = { "x-api-key", "sk-ant", NULL };
    const char *const google [] = { "x-goog-api-key", "g-1", NULL };
    const char *const query [] = { "key", "g-q", NULL };
    s_request_t r = { bearer, NULL };
    cr_expect_str_eq (sl_clientkey_of (s_header, s_query, &r), "sk-1", "the Bearer scheme taken off");
    r = (s_request_t) { raw, NULL };
    cr_expect_str_eq (sl_clientkey_of (s_header, s_query, &r), "sk-raw", "no scheme: as sent");
    r = (s_request_t) { anthropic, NULL };
    cr_expect_str_eq (sl_clientkey_of (s_header, s_query, &r), "sk-ant");
    r = (s_request_t) { google, NULL };
    cr_expect_str_eq (sl_clientkey_of (s_header, s_query, &r), "g-1");
    r = (s_request_t) { NULL, query };
    cr_expect_str_eq (sl_clientkey_of (s_header, s_query, &r), "g-q", "Gemini's ?key=");
    r = (s_request_t) { NULL, NULL };
    cr_expect_null (sl_clientkey_of (s_header, s_query, &r));
    const char *const both [] = { "x-api-key", "sk-ant", "Authorization", "Bearer sk-1", NULL };
    r = (s_request_t) { both, NULL };
    cr_expect_str_eq (sl_clientkey_of (s_header, s_query, &r), "sk-1", "Authorization first");
}

Test (sl_clientkey, the_credential_line_a_client_of_each_dialect_sent)
{
    const char *const anthropic [] = { "x-api-key", "sk-ant", "Authorization", "Bearer other", NULL };
    const char *const bearer [] = { "Authorization", "Bearer sk-1", NULL };
    const char *const query [] = { "key", "g-q", NULL };
    struct { int dialect; s_request_t r; const char *line; } cases [] = {
        { SL_DIALECT_ANTHROPIC, { anthropic, NULL }, "x-api-key: sk-ant" },
        { SL_DIALECT_ANTHROPIC, { bearer, NULL }, "Authorization: Bearer sk-1" },
        { SL_DIALECT_OPENAI, { bearer, NULL }, "Authorization: Bearer sk-1" },
        { SL_DIALECT_OPENAI, { anthropic, NULL }, "Authorization: Bearer other" },
        { SL_DIALECT_RESPONSES, { bearer, NULL }, "Authorization: Bearer sk-1" },
        { SL_DIALECT_GEMINI, { NULL, query }, "x-goog-api-key: g-q" },
        { SL_DIALECT_GEMINI, { bearer, query }, "x-goog-api-key: g-q" },
        { SL_DIALECT_GEMINI, { bearer, NULL }, "Authorization: Bearer sk-1" },
        { SL_DIALECT_OPENAI, { NULL, query }, "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_buf_t line = { 0 };
        sl_clientkey_line (sl_dialect_get (cases [i].dialect), s_header, s_query, &cases [i].r, &line);
        cr_expect_str_eq (sl_buf_cstr (&line), cases [i].line, "case %zu", i);
        sl_buf_free (&line);
    }
}
