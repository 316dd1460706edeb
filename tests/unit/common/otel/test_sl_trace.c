/*  Unit tests: common/otel/sl_trace (W3C trace context, derived span ids). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/otel/sl_trace.h"

#define GOOD "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

static int
s_parse (const char *header, bool root_ok)
{
    sl_trace_ctx_t ctx;
    return sl_trace_parse (sl_str (header), root_ok, &ctx);
}

Test (sl_trace, parses_and_normalizes_version_00)
{
    sl_trace_ctx_t ctx;
    cr_assert_eq (sl_trace_parse (SL_STR_LIT (GOOD), false, &ctx), 0);
    cr_assert_eq (ctx.trace [0], 0x0a);
    cr_assert_eq (ctx.trace [15], 0x9c);
    cr_assert_eq (ctx.parent [0], 0xb7);
    cr_assert_eq (ctx.flags, 0x01);
    cr_assert_not (sl_trace_is_root (&ctx));
    char out [SL_TRACEPARENT_SIZE];
    sl_trace_format (&ctx, out);
    cr_assert_str_eq (out, GOOD);
}

Test (sl_trace, refuses_what_w3c_calls_malformed)
{
    const char *bad [] = {
        "",
        "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",      //  upper case
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",      //  zero trace id
        "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",      //  zero parent id
        "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",      //  version ff
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-",     //  00 longer than it is
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1",       //  short
        "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",      //  separator
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333g-01",      //  not hex
        "0g-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",     //  later version, no '-' after
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        cr_assert_eq (s_parse (bad [i], false), -1, "malformed: '%s'", bad [i]);
}

Test (sl_trace, reads_a_later_version_by_its_first_fields)
{
    sl_trace_ctx_t ctx;
    const char *later = "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-comes-next";
    cr_assert_eq (sl_trace_parse (sl_str (later), false, &ctx), 0);
    char out [SL_TRACEPARENT_SIZE];
    sl_trace_format (&ctx, out);
    cr_assert_str_eq (out, GOOD, "normalized to version 00");
    cr_assert_eq (s_parse ("cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", false), 0);
}

Test (sl_trace, a_begun_trace_is_the_stream_id_and_a_root)
{
    uint8_t sid [16];
    for (int i = 0; i < 16; i++)
        sid [i] = (uint8_t) (0x10 + i);
    sl_trace_ctx_t ctx;
    sl_trace_begin (sid, &ctx);
    cr_assert (sl_trace_is_root (&ctx));
    char out [SL_TRACEPARENT_SIZE];
    sl_trace_format (&ctx, out);
    cr_assert_str_eq (out, "00-101112131415161718191a1b1c1d1e1f-0000000000000000-01");
    //  The form "tc" takes; a client may not send it.
    cr_assert_eq (s_parse (out, true), 0);
    cr_assert_eq (s_parse (out, false), -1);
    sl_trace_child (&ctx, sid, out);
    cr_assert_str_eq (out, "00-101112131415161718191a1b1c1d1e1f-1011121314151617-01");
}

Test (sl_trace, tracestate_per_w3c)
{
    cr_assert (sl_trace_state_valid (SL_STR_LIT ("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")));
    cr_assert (sl_trace_state_valid (SL_STR_LIT ("rojo=1 , ,congo=2")), "blanks and empty members");
    cr_assert (sl_trace_state_valid (SL_STR_LIT ("fw529a3039@dt=abc,a*b/c_d-e=v w")), "multi-tenant key, inner blank");
    cr_assert_not (sl_trace_state_valid (SL_STR_LIT ("Rojo=1")), "upper-case key");
    cr_assert_not (sl_trace_state_valid (SL_STR_LIT ("rojo")), "no value");
    cr_assert_not (sl_trace_state_valid (SL_STR_LIT ("rojo=1,rojo=2")), "a key twice");
    cr_assert_not (sl_trace_state_valid (SL_STR_LIT ("rojo=a=b")), "'=' in a value");
    cr_assert_not (sl_trace_state_valid (SL_STR_LIT ("rojo=\x01")), "control byte");
    cr_assert_not (sl_trace_state_valid (SL_STR_LIT ("a@B=1")), "system id upper case");
    char many [600] = "";
    for (int i = 0; i < 33; i++) {
        char m [16];
        snprintf (m, sizeof m, "%sk%d=v", i ? "," : "", i);
        strcat (many, m);
    }
    cr_assert_not (sl_trace_state_valid (sl_str (many)), "33 members");
    char big [SL_TRACESTATE_MAX + 8];
    memset (big, 'x', sizeof big - 1);
    big [0] = 'k';
    big [1] = '=';
    big [sizeof big - 1] = 0;
    cr_assert_not (sl_trace_state_valid (sl_str (big)), "over 512 bytes");
}

Test (sl_trace, span_ids_are_stable_distinct_and_never_zero)
{
    uint8_t sid [16] = { 0 }, a [8], b [8], zero [8] = { 0 };
    sl_trace_stream_span (sid, a);
    cr_assert_neq (memcmp (a, zero, 8), 0, "an all-zero stream id still has a span id");
    sid [3] = 7;
    sid [12] = 9;
    sl_trace_stream_span (sid, a);
    cr_assert_eq (memcmp (a, sid, 8), 0, "the stream id's first 8 bytes");
    sl_trace_verdict_span (sid, 5, a);
    sl_trace_verdict_span (sid, 5, b);
    cr_assert_eq (memcmp (a, b, 8), 0, "the same verdict: the same span");
    sl_trace_verdict_span (sid, 6, b);
    cr_assert_neq (memcmp (a, b, 8), 0, "another verdict: another span");
    uint8_t other [16];
    memcpy (other, sid, 16);
    other [15] ^= 1;
    sl_trace_verdict_span (other, 5, b);
    cr_assert_neq (memcmp (a, b, 8), 0, "another stream: another span");
}

Test (sl_trace, accept_continues_begins_or_leaves_alone)
{
    uint8_t sid [16];
    memset (sid, 0xab, sizeof sid);
    sl_trace_in_t in;
    sl_trace_accept (GOOD, "rojo=1", sid, false, &in);
    cr_assert (in.has_trace && in.keep_state && !in.bad_parent && !in.bad_state);
    cr_assert_str_eq (in.tc, GOOD, "a client's trace is continued with tracing off too");
    sl_trace_accept (NULL, NULL, sid, false, &in);
    cr_assert_not (in.has_trace, "nothing sent, not tracing: nothing changes");
    sl_trace_accept ("00-zz", "rojo=1", sid, false, &in);
    cr_assert (!in.has_trace && in.bad_parent && !in.keep_state);
    sl_trace_accept ("00-zz", "rojo=1", sid, true, &in);
    cr_assert (in.has_trace && in.bad_parent);
    cr_assert_not (in.keep_state, "a tracestate never joins a trace sluice began");
    cr_assert_str_eq (in.tc, "00-abababababababababababababababab-0000000000000000-01");
    sl_trace_accept (GOOD, "Bad=1", sid, true, &in);
    cr_assert (in.has_trace && !in.keep_state && in.bad_state && !in.bad_parent);
}
