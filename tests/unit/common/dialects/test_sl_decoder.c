/*  Unit tests: common/dialects/sl_decoder (the decoder object: a
    provider's error answer read as its stream's errors are; what every
    dialect's decoder shares: usage by a table, per-block tables, members
    picked from an object, the end of a body). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/dialects/sl_decoder.h"
#include "common/dialects/sl_decoder_impl.h"

//  The last message a decoder emitted, as "done" or "error <code> <status>"
//  (other deltas are overwritten by what follows).
static void
s_last (void *arg, const sl_msg_t *m)
{
    sl_buf_t *out = arg;
    sl_buf_reset (out);
    if (m->type == SL_MSG_ERROR)
        sl_buf_printf (out, "error %.*s %d", (int) m->code.len, m->code.ptr, m->status);
    else
        sl_buf_puts (out, m->kind == SL_D_DONE ? "done" : sl_delta_kind_name (m->kind));
}

//  The code and message a decoder of dialect reads from body, as "code|message"
//  ("-" for an absent one).
static void
s_read (int dialect, const char *body, char *out, size_t size)
{
    sl_decoder_t *dec = sl_decoder_new (dialect);
    cr_assert_not_null (dec);
    sl_str_t code, message;
    sl_decoder_error_body (dec, sl_str (body), &code, &message);
    snprintf (out, size, "%.*s|%.*s", code.ptr ? (int) code.len : 1, code.ptr ? code.ptr : "-",
              message.ptr ? (int) message.len : 1, message.ptr ? message.ptr : "-");
    sl_decoder_destroy (&dec);
}

Test (sl_decoder, an_error_answer_is_read_in_every_provider_s_shape)
{
    char got [256];
    s_read (SL_DIALECT_OPENAI, "{\"error\":{\"message\":\"no such model\",\"type\":\"invalid_request_error\","
                               "\"param\":null,\"code\":\"model_not_found\"}}", got, sizeof got);
    cr_expect_str_eq (got, "invalid_request_error|no such model", "OpenAI: the type names it");
    s_read (SL_DIALECT_ANTHROPIC, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
                                  "\"message\":\"Overloaded\"}}", got, sizeof got);
    cr_expect_str_eq (got, "overloaded_error|Overloaded", "Anthropic: the inner error, not the envelope");
    s_read (SL_DIALECT_GEMINI, "{\"error\":{\"code\":429,\"message\":\"Quota \\\"exceeded\\\"\","
                               "\"status\":\"RESOURCE_EXHAUSTED\"}}", got, sizeof got);
    cr_expect_str_eq (got, "RESOURCE_EXHAUSTED|Quota \"exceeded\"", "Gemini: the RPC status, unescaped");
    s_read (SL_DIALECT_RESPONSES, "{\"error\":{\"type\":null,\"code\":\"rate_limit_exceeded\","
                                  "\"message\":\"slow\"}}", got, sizeof got);
    cr_expect_str_eq (got, "rate_limit_exceeded|slow", "a code that is a string, when there is no type");
}

Test (sl_decoder, what_an_error_answer_lacks_is_absent)
{
    char got [256];
    s_read (SL_DIALECT_OPENAI, "{\"error\":{\"code\":404,\"message\":\"gone\"}}", got, sizeof got);
    cr_expect_str_eq (got, "-|gone", "a numeric code names nothing: the HTTP status says it");
    s_read (SL_DIALECT_OPENAI, "{\"error\":\"plain words\"}", got, sizeof got);
    cr_expect_str_eq (got, "-|plain words");
    s_read (SL_DIALECT_OPENAI, "{\"detail\":\"not an error object\"}", got, sizeof got);
    cr_expect_str_eq (got, "-|-");
    s_read (SL_DIALECT_OPENAI, "<html>502 Bad Gateway</html>", got, sizeof got);
    cr_expect_str_eq (got, "-|-", "not JSON");
    s_read (SL_DIALECT_OPENAI, "", got, sizeof got);
    cr_expect_str_eq (got, "-|-");
}

//  --------------------------------------------------------------------------
//  What every dialect's decoder shares (sl_decoder_impl.h)

static const sl_usage_key_t s_usage_keys [] = {
    { "in", NULL, offsetof (sl_usage_t, input) },
    { "out", NULL, offsetof (sl_usage_t, output) },
    { "in_details", "cached", offsetof (sl_usage_t, cache_read) },
    { NULL, NULL, 0 }
};

Test (sl_decoder, usage_is_read_where_the_table_says_each_count_is)
{
    sl_usage_t u = { -1, -1, -1, -1, -1, -1 };
    cr_assert_eq (sl_decoder_usage (SL_STR_LIT ("{\"in\":10,\"in_details\":{\"cached\":4},\"other\":7}"),
                                    s_usage_keys, &u), 0);
    cr_expect_eq (u.input, 10);
    cr_expect_eq (u.cache_read, 4, "a count inside an object of the usage");
    cr_expect_eq (u.output, -1, "a count it does not give is left as it was");
    cr_expect_eq (u.total, -1);
    u.output = 3;
    cr_assert_eq (sl_decoder_usage (SL_STR_LIT ("{\"out\":\"many\",\"in_details\":5}"), s_usage_keys, &u), 0);
    cr_expect_eq (u.output, 3, "a count that is not a number changes nothing");
    cr_expect_eq (u.cache_read, 4, "nor does an inner count whose object is not one");
    cr_expect_eq (sl_decoder_usage (SL_STR_LIT ("[1,2]"), s_usage_keys, &u), -1, "not an object");
    cr_expect_eq (sl_decoder_usage (SL_STR_LIT ("null"), s_usage_keys, &u), -1);
}

Test (sl_decoder, a_block_table_grows_to_the_index_asked_and_no_further_than_the_bound)
{
    int *table = NULL;
    size_t count = 0;
    int *slot = sl_decoder_slot ((void **) &table, &count, sizeof *table, 20);
    cr_assert_not_null (slot);
    cr_expect_geq (count, 21);
    for (size_t i = 0; i < count; i++)
        cr_expect_eq (table [i], 0, "made zeroed");
    *slot = 7;
    cr_expect_eq (*(int *) sl_decoder_slot ((void **) &table, &count, sizeof *table, 20), 7, "kept");
    size_t before = count;
    sl_decoder_slot ((void **) &table, &count, sizeof *table, 3);
    cr_expect_eq (count, before, "an index within does not grow it");
    cr_expect_null (sl_decoder_slot ((void **) &table, &count, sizeof *table, -1));
    cr_expect_null (sl_decoder_slot ((void **) &table, &count, sizeof *table, SL_DECODER_MAX_INDEX),
                    "a hostile index allocates nothing");
    cr_expect_not_null (sl_decoder_slot ((void **) &table, &count, sizeof *table, SL_DECODER_MAX_INDEX - 1));
    cr_expect_eq (table [20], 7, "what it held moved with it");
    free (table);
}

#define S_PICKED(X) X (P_ID, "id") X (P_MODEL, "model")
SL_DECODER_MEMBERS (s_picked, S_PICKED)

Test (sl_decoder, members_are_picked_in_one_walk_and_the_unknown_ones_counted)
{
    sl_decoder_t *dec = sl_decoder_new (SL_DIALECT_OPENAI);
    static const sl_str_t known [] = { SL_STR_LIT ("object"), SL_STR_NULL };
    sl_decoder_object_t shape = { known, "not an object", "malformed" };
    sl_str_t v [s_picked_count];
    cr_assert_eq (s_picked_count, 2);
    cr_assert_eq (s_picked (dec, SL_STR_LIT ("{\"object\":1,\"i\\u0064\":\"a\",\"x\":2,\"id\":\"b\"}"),
                            &shape, v), 0);
    cr_expect (sl_str_eq (v [P_ID], "\"b\""), "the last of a name given twice, raw; an escaped name is the name");
    cr_expect_null (v [P_MODEL].ptr, "absent");
    cr_expect_eq (sl_decoder_unknown (dec), 1, "x: neither named nor known");
    shape.known = NULL;
    cr_assert_eq (s_picked (dec, SL_STR_LIT ("{\"x\":2,\"y\":3}"), &shape, v), 0);
    cr_expect_eq (sl_decoder_unknown (dec), 1, "no known list: nothing counted");
    cr_expect_eq (s_picked (dec, SL_STR_LIT ("[\"id\"]"), &shape, v), -2);
    cr_expect_str_eq (sl_decoder_error (dec), "not an object");
    cr_expect_eq (s_picked (dec, SL_STR_LIT ("{\"id\":\"a\",\"model\":"), &shape, v), -2);
    cr_expect_str_eq (sl_decoder_error (dec), "malformed");
    sl_decoder_destroy (&dec);
}

//  Every provider's stream ends the same way: a body that ends after the
//  response finished is done (its end marker lost, or it has none); one
//  that ends before is the upstream stopping short.
Test (sl_decoder, a_body_that_ends_before_the_finish_is_an_error_after_it_done)
{
    static const struct {
        int dialect;
        const char *finish;             //  an event that finishes the response, NULL: none
    } cases [] = {
        { SL_DIALECT_OPENAI, "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}" },
        { SL_DIALECT_ANTHROPIC, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}" },
        { SL_DIALECT_GEMINI, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hi\"}]},"
                             "\"finishReason\":\"STOP\"}]}" },
        { SL_DIALECT_RESPONSES, NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        for (int finished = 0; finished < 2; finished++) {
            if (finished && !cases [i].finish)
                continue;
            sl_decoder_t *dec = sl_decoder_new (cases [i].dialect);
            sl_buf_t out = { 0 };
            if (finished)
                cr_assert_eq (sl_decoder_event (dec, SL_STR_LIT ("message"), sl_str (cases [i].finish),
                                                s_last, &out), 0, "%s", sl_decoder_name (dec));
            cr_expect_eq (sl_decoder_finish (dec, s_last, &out), 0);
            cr_expect_str_eq (sl_buf_cstr (&out), finished ? "done" : "error upstream_incomplete 502",
                              "%s, %s", sl_decoder_name (dec), finished ? "finished" : "not finished");
            cr_expect (sl_decoder_done (dec));
            sl_buf_free (&out);
            sl_decoder_destroy (&dec);
        }
    }
}
