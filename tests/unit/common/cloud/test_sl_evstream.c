/*  Unit tests: common/cloud/sl_evstream - AWS's event stream framing: the
    frames this test builds (with the encoder, and by hand for the CRC
    check's own reference value) decode the same whatever the split, every
    header type is read, and every fault of the bytes (bad CRCs, truncated,
    oversize, lengths that do not add up, unknown types) is an error with
    a reason that sticks until reset. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/cloud/sl_evstream.h"

//  What the decoder reported, one line per message.
typedef struct {
    sl_buf_t log;
    int count;
    int stop_after;                     //  return 1 from this message on (0: never)
} s_seen_t;

static void
s_put (sl_buf_t *log, const char *what, sl_str_t s)
{
    if (!sl_str_present (s))
        return;
    sl_buf_printf (log, "%s=%.*s;", what, (int) s.len, s.ptr);
}

static int
s_on_msg (void *arg, const sl_evstream_msg_t *msg)
{
    s_seen_t *seen = arg;
    s_put (&seen->log, "mt", msg->message_type);
    s_put (&seen->log, "et", msg->event_type);
    s_put (&seen->log, "xt", msg->exception_type);
    s_put (&seen->log, "ct", msg->content_type);
    s_put (&seen->log, "ec", msg->error_code);
    s_put (&seen->log, "em", msg->error_message);
    sl_buf_printf (&seen->log, "h=%zu;", msg->header_count);
    s_put (&seen->log, "p", msg->payload);
    sl_buf_puts (&seen->log, "\n");
    seen->count++;
    return seen->stop_after && seen->count >= seen->stop_after ? 1 : 0;
}

//  Three messages as Bedrock sends them: two events, an exception.
static void
s_stream (sl_buf_t *out)
{
    cr_assert_eq (sl_evstream_encode_event (out, "messageStart", SL_STR_LIT ("{\"role\":\"assistant\"}")), 0);
    cr_assert_eq (sl_evstream_encode_event (out, "contentBlockDelta",
                                            SL_STR_LIT ("{\"contentBlockIndex\":0,\"delta\":{\"text\":\"Hi\"}}")), 0);
    cr_assert_eq (sl_evstream_encode_exception (out, "throttlingException",
                                                SL_STR_LIT ("{\"message\":\"Too many requests\"}")), 0);
}

static const char *s_expected =
    "mt=event;et=messageStart;ct=application/json;h=3;p={\"role\":\"assistant\"};\n"
    "mt=event;et=contentBlockDelta;ct=application/json;h=3;p={\"contentBlockIndex\":0,\"delta\":{\"text\":\"Hi\"}};\n"
    "mt=exception;xt=throttlingException;ct=application/json;h=3;p={\"message\":\"Too many requests\"};\n";

Test (sl_evstream, crc32_is_gzips)
{
    //  The check value of CRC-32 (ISO-HDLC, as gzip and AWS use it).
    cr_expect_eq (sl_evstream_crc32 (0, "123456789", 9), 0xCBF43926u);
    uint32_t part = sl_evstream_crc32 (0, "1234", 4);
    cr_expect_eq (sl_evstream_crc32 (part, "56789", 5), 0xCBF43926u, "continued");
}

//  The CRC one bit at a time, as the polynomial defines it: the
//  reference the table-driven CRC must agree with.
static uint32_t
s_crc_bitwise (const uint8_t *p, size_t size)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < size; i++) {
        crc ^= p [i];
        for (int k = 0; k < 8; k++)
            crc = crc & 1 ? 0xEDB88320u ^ (crc >> 1) : crc >> 1;
    }
    return ~crc;
}

Test (sl_evstream, crc32_agrees_with_the_bitwise_crc_at_every_length)
{
    //  Every length and start offset around the eight-byte slices and
    //  the sixteen-byte folds (many blocks folded, and the bytes after
    //  them), and any split of the input continues the same CRC.
    //  By the tables alone, then by carry-less multiplication where the
    //  CPU has it.
    uint8_t bytes [600];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes [i] = (uint8_t) (i * 167 + 13 + (i >> 8));
    for (int clmul = 0; clmul <= 1; clmul++) {
        if (sl_evstream_crc32_clmul (clmul)) {
            cr_log_warn ("no carry-less multiplication on this CPU: the tables alone checked");
            continue;
        }
        for (size_t at = 0; at < 16; at++)
            for (size_t len = 0; at + len <= sizeof bytes; len++) {
                uint32_t want = s_crc_bitwise (bytes + at, len);
                cr_assert_eq (sl_evstream_crc32 (0, bytes + at, len), want, "%d: at %zu, %zu bytes", clmul, at,
                              len);
                size_t half = len / 3;
                uint32_t part = sl_evstream_crc32 (0, bytes + at, half);
                cr_assert_eq (sl_evstream_crc32 (part, bytes + at + half, len - half), want,
                              "%d: at %zu, %zu bytes split at %zu", clmul, at, len, half);
            }
    }
    sl_evstream_crc32_clmul (1);
}

Test (sl_evstream, a_frame_laid_out_as_the_spec_says)
{
    //  One header ":a" of type string "b" (1 + 2 + 1 + 2 + 1 bytes),
    //  payload "x": 12 + 7 + 1 + 4.
    sl_buf_t out = { 0 };
    sl_evstream_header_t h = { .name = SL_STR_LIT (":a"), .type = SL_EVH_STRING, .bytes = SL_STR_LIT ("b") };
    cr_assert_eq (sl_evstream_encode (&out, &h, 1, SL_STR_LIT ("x")), 0);
    const uint8_t *p = (const uint8_t *) out.data;
    cr_assert_eq (out.len, 24);
    cr_expect (p [0] == 0 && p [1] == 0 && p [2] == 0 && p [3] == 24, "total length, big-endian");
    cr_expect (p [4] == 0 && p [5] == 0 && p [6] == 0 && p [7] == 7, "headers length");
    uint32_t prelude_crc = sl_evstream_crc32 (0, p, 8);
    cr_expect_eq ((uint32_t) p [8] << 24 | (uint32_t) p [9] << 16 | (uint32_t) p [10] << 8 | p [11], prelude_crc);
    cr_expect_eq (memcmp (p + 12, "\x02:a\x07\x00\x01" "b" "x", 8), 0, "header, then payload");
    uint32_t crc = sl_evstream_crc32 (0, p, 20);
    cr_expect_eq ((uint32_t) p [20] << 24 | (uint32_t) p [21] << 16 | (uint32_t) p [22] << 8 | p [23], crc);
    sl_buf_free (&out);
}

Test (sl_evstream, the_same_messages_at_every_split)
{
    sl_buf_t stream = { 0 };
    s_stream (&stream);
    for (size_t cut = 0; cut <= stream.len; cut++)
        for (size_t step = 1; step <= 3; step++) {
            sl_evstream_t *d = sl_evstream_new (0);
            s_seen_t seen = { 0 };
            //  The first cut bytes in one read, the rest step bytes at a time.
            cr_assert_eq (sl_evstream_feed (d, stream.data, cut, s_on_msg, &seen), 0);
            for (size_t at = cut; at < stream.len; at += step) {
                size_t n = stream.len - at < step ? stream.len - at : step;
                cr_assert_eq (sl_evstream_feed (d, stream.data + at, n, s_on_msg, &seen), 0,
                              "cut %zu step %zu at %zu: %s", cut, step, at, sl_evstream_error (d));
            }
            cr_assert_eq (sl_evstream_finish (d), 0);
            cr_assert_str_eq (sl_buf_cstr (&seen.log), s_expected, "cut %zu step %zu", cut, step);
            cr_assert_eq (sl_evstream_pending (d), 0);
            sl_buf_free (&seen.log);
            sl_evstream_destroy (&d);
        }
    sl_buf_free (&stream);
}

//  The headers encoded, to compare with what is decoded.
typedef struct {
    sl_evstream_header_t *in;
    size_t n;
    int seen;
} s_types_t;

static int
s_check (void *arg, const sl_evstream_msg_t *msg)
{
    s_types_t *check = arg;
    check->seen++;
    cr_assert_eq (msg->header_count, check->n);
    cr_expect_eq (msg->payload.len, 0);
    for (size_t k = 0; k < check->n; k++) {
        const sl_evstream_header_t *a = &check->in [k], *b = &msg->headers [k];
        cr_expect (sl_str_eq_str (a->name, b->name), "name %zu", k);
        cr_expect_eq (a->type, b->type, "type %zu", k);
        if (a->type == SL_EVH_TRUE)
            cr_expect_eq (b->i, 1);
        else
        if (a->type == SL_EVH_BYTES || a->type == SL_EVH_STRING || a->type == SL_EVH_UUID)
            cr_expect (sl_str_eq_str (a->bytes, b->bytes), "value %zu", k);
        else
            cr_expect_eq (a->i, b->i, "value %zu: %lld", k, (long long) b->i);
    }
    return 0;
}

Test (sl_evstream, every_header_type_read)
{
    static const uint8_t uuid [16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
    sl_evstream_header_t in [] = {
        { .name = SL_STR_LIT ("t"), .type = SL_EVH_TRUE },
        { .name = SL_STR_LIT ("f"), .type = SL_EVH_FALSE },
        { .name = SL_STR_LIT ("b"), .type = SL_EVH_BYTE, .i = -5 },
        { .name = SL_STR_LIT ("s"), .type = SL_EVH_SHORT, .i = -300 },
        { .name = SL_STR_LIT ("i"), .type = SL_EVH_INT, .i = -70000 },
        { .name = SL_STR_LIT ("l"), .type = SL_EVH_LONG, .i = -5000000000LL },
        { .name = SL_STR_LIT ("y"), .type = SL_EVH_BYTES, .bytes = { "\0\1\2", 3 } },
        { .name = SL_STR_LIT ("str"), .type = SL_EVH_STRING, .bytes = SL_STR_LIT ("value") },
        { .name = SL_STR_LIT ("ts"), .type = SL_EVH_TIMESTAMP, .i = 1700000000123LL },
        { .name = SL_STR_LIT ("u"), .type = SL_EVH_UUID, .bytes = { (const char *) uuid, 16 } },
    };
    size_t n = sizeof in / sizeof in [0];
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_evstream_encode (&out, in, n, SL_STR_NULL), 0);
    sl_evstream_t *d = sl_evstream_new (0);
    //  Checked inside the callback, while the slices live.
    s_types_t check = { in, n, 0 };
    cr_assert_eq (sl_evstream_feed (d, out.data, out.len, s_check, &check), 0);
    cr_expect_eq (check.seen, 1);
    sl_evstream_destroy (&d);
    sl_buf_free (&out);
}

//  Feed the bytes in one read; the return code, the error in why.
static int
s_feed_all (const void *bytes, size_t len, size_t max, s_seen_t *seen, char *why, size_t size)
{
    sl_evstream_t *d = sl_evstream_new (max);
    int rc = sl_evstream_feed (d, bytes, len, s_on_msg, seen);
    if (rc == 0)
        rc = sl_evstream_finish (d);
    snprintf (why, size, "%s", sl_evstream_error (d));
    sl_evstream_destroy (&d);
    return rc;
}

Test (sl_evstream, a_bad_message_crc_refused)
{
    sl_buf_t stream = { 0 };
    s_stream (&stream);
    //  A bit of the second message's payload flipped.
    size_t first = (size_t) (uint8_t) stream.data [3];
    stream.data [first + 40] ^= 0x01;
    s_seen_t seen = { 0 };
    char why [128];
    cr_expect_eq (s_feed_all (stream.data, stream.len, 0, &seen, why, sizeof why), -1);
    cr_expect_eq (seen.count, 1, "the message before it was reported");
    cr_expect_str_eq (why, "event stream: the message's CRC does not match");
    sl_buf_free (&seen.log);
    sl_buf_free (&stream);
}

Test (sl_evstream, a_bad_prelude_crc_refused_before_buffering)
{
    sl_buf_t stream = { 0 };
    s_stream (&stream);
    stream.data [11] ^= 0x80;
    sl_evstream_t *d = sl_evstream_new (0);
    s_seen_t seen = { 0 };
    //  Only the prelude: refused at once, not after waiting for the rest.
    cr_expect_eq (sl_evstream_feed (d, stream.data, SL_EVSTREAM_PRELUDE, s_on_msg, &seen), -1);
    cr_expect_str_eq (sl_evstream_error (d), "event stream: the prelude's CRC does not match");
    //  And everything after stays refused, until a reset.
    cr_expect_eq (sl_evstream_feed (d, stream.data + 12, 4, s_on_msg, &seen), -1);
    cr_expect_eq (sl_evstream_finish (d), -1);
    sl_evstream_reset (d);
    stream.data [11] ^= 0x80;
    cr_expect_eq (sl_evstream_feed (d, stream.data, stream.len, s_on_msg, &seen), 0);
    cr_expect_eq (seen.count, 3);
    sl_evstream_destroy (&d);
    sl_buf_free (&seen.log);
    sl_buf_free (&stream);
}

Test (sl_evstream, a_truncated_stream_is_an_error_at_its_end)
{
    sl_buf_t stream = { 0 };
    s_stream (&stream);
    for (size_t cut = 1; cut < stream.len; cut++) {
        s_seen_t seen = { 0 };
        char why [128];
        int rc = s_feed_all (stream.data, cut, 0, &seen, why, sizeof why);
        size_t first = (size_t) (uint8_t) stream.data [3];
        size_t second = first + (size_t) (uint8_t) stream.data [first + 3];
        if (cut == first || cut == second)
            cr_expect_eq (rc, 0, "cut %zu falls between messages", cut);
        else {
            cr_expect_eq (rc, -1, "cut %zu", cut);
            cr_expect_str_eq (why, "event stream: the stream ended inside a message");
        }
        sl_buf_free (&seen.log);
    }
    sl_buf_free (&stream);
}

Test (sl_evstream, oversize_refused_from_the_prelude)
{
    sl_buf_t big = { 0 };
    char payload [4096];
    memset (payload, 'a', sizeof payload);
    cr_assert_eq (sl_evstream_encode_event (&big, "chunk", sl_str_n (payload, sizeof payload)), 0);
    sl_evstream_t *d = sl_evstream_new (1024);
    s_seen_t seen = { 0 };
    cr_expect_eq (sl_evstream_feed (d, big.data, SL_EVSTREAM_PRELUDE, s_on_msg, &seen), -1);
    cr_expect_str_eq (sl_evstream_error (d), "event stream: a message over the size limit");
    cr_expect_leq (sl_evstream_pending (d), SL_EVSTREAM_PRELUDE, "nothing past the prelude held");
    sl_evstream_destroy (&d);
    //  The same message passes a limit that fits it.
    char why [128];
    cr_expect_eq (s_feed_all (big.data, big.len, 8192, &seen, why, sizeof why), 0, "%s", why);
    cr_expect_eq (seen.count, 1);
    sl_buf_free (&seen.log);
    sl_buf_free (&big);
}

//  A prelude with these lengths and a correct CRC, then filler and a
//  correct message CRC.
static void
s_frame_raw (sl_buf_t *out, uint32_t total, uint32_t headers, const void *body, size_t body_len)
{
    uint8_t p [12] = {
        (uint8_t) (total >> 24), (uint8_t) (total >> 16), (uint8_t) (total >> 8), (uint8_t) total,
        (uint8_t) (headers >> 24), (uint8_t) (headers >> 16), (uint8_t) (headers >> 8), (uint8_t) headers,
    };
    uint32_t crc = sl_evstream_crc32 (0, p, 8);
    p [8] = (uint8_t) (crc >> 24);
    p [9] = (uint8_t) (crc >> 16);
    p [10] = (uint8_t) (crc >> 8);
    p [11] = (uint8_t) crc;
    size_t start = out->len;
    sl_buf_append (out, p, sizeof p);
    sl_buf_append (out, body, body_len);
    crc = sl_evstream_crc32 (0, out->data + start, out->len - start);
    uint8_t c [4] = { (uint8_t) (crc >> 24), (uint8_t) (crc >> 16), (uint8_t) (crc >> 8), (uint8_t) crc };
    sl_buf_append (out, c, 4);
}

Test (sl_evstream, lengths_and_headers_that_do_not_add_up)
{
    static const struct {
        uint32_t total, headers;
        const char *body;
        size_t body_len;
        const char *why;
    } cases [] = {
        { 15, 0, "", 0, "event stream: a message shorter than its prelude and CRC" },
        { 20, 8, "abcd", 4, "event stream: headers longer than the message" },
        { 16 + 4, 4, "\x01" "a" "\x0a" "x", 4, "event stream: a header of an unknown type" },
        { 16 + 4, 4, "\x00" "a" "\x07" "x", 4, "event stream: a header with an empty name" },
        { 16 + 4, 4, "\x05" "abc" , 4, "event stream: a header runs past the headers" },
        { 16 + 5, 5, "\x01" "a" "\x07" "\x00\x09", 5, "event stream: a header's value runs past the headers" },
        { 16 + 5, 5, "\x01" "a" "\x04" "\x00\x00", 5, "event stream: a header's value runs past the headers" },
        { 16 + 4, 4, "\x01" "a" "\x09" "\x00", 4, "event stream: a header's value runs past the headers" },
        { 16 + 0x20001, 0x20001, "", 0, "event stream: headers over the size limit" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases [0]; k++) {
        sl_buf_t frame = { 0 };
        s_frame_raw (&frame, cases [k].total, cases [k].headers, cases [k].body, cases [k].body_len);
        s_seen_t seen = { 0 };
        char why [128];
        cr_expect_eq (s_feed_all (frame.data, frame.len, 0, &seen, why, sizeof why), -1, "case %zu", k);
        cr_expect_str_eq (why, cases [k].why, "case %zu", k);
        cr_expect_eq (seen.count, 0);
        sl_buf_free (&frame);
    }
}

Test (sl_evstream, an_error_message_and_an_empty_one)
{
    sl_buf_t stream = { 0 };
    sl_evstream_header_t err [] = {
        { .name = SL_STR_LIT (":message-type"), .type = SL_EVH_STRING, .bytes = SL_STR_LIT ("error") },
        { .name = SL_STR_LIT (":error-code"), .type = SL_EVH_STRING, .bytes = SL_STR_LIT ("InternalFailure") },
        { .name = SL_STR_LIT (":error-message"), .type = SL_EVH_STRING, .bytes = SL_STR_LIT ("boom") },
    };
    cr_assert_eq (sl_evstream_encode (&stream, err, 3, SL_STR_NULL), 0);
    cr_assert_eq (sl_evstream_encode (&stream, NULL, 0, SL_STR_NULL), 0);
    //  A string header: its name's length, the name, the type, two bytes
    //  of length, the value.
    cr_expect_eq (stream.len, 16 + (13 + 5 + 4) + (11 + 15 + 4) + (14 + 4 + 4) + 16);
    s_seen_t seen = { 0 };
    char why [128];
    cr_assert_eq (s_feed_all (stream.data, stream.len, 0, &seen, why, sizeof why), 0, "%s", why);
    cr_expect_str_eq (sl_buf_cstr (&seen.log),
                      "mt=error;ec=InternalFailure;em=boom;h=3;p=;\n"
                      "h=0;p=;\n");
    sl_buf_free (&seen.log);
    sl_buf_free (&stream);
}

Test (sl_evstream, the_callback_stops_decoding)
{
    sl_buf_t stream = { 0 };
    s_stream (&stream);
    sl_evstream_t *d = sl_evstream_new (0);
    s_seen_t seen = { .stop_after = 2 };
    cr_expect_eq (sl_evstream_feed (d, stream.data, stream.len, s_on_msg, &seen), 1);
    cr_expect_eq (seen.count, 2);
    sl_evstream_destroy (&d);
    sl_buf_free (&seen.log);
    sl_buf_free (&stream);
}

Test (sl_evstream, what_cannot_be_framed_is_refused)
{
    sl_buf_t out = { 0 };
    char name [256];
    memset (name, 'n', sizeof name);
    sl_evstream_header_t bad [] = {
        { .name = SL_STR_LIT (""), .type = SL_EVH_TRUE },
        { .name = { name, 256 }, .type = SL_EVH_TRUE },
        { .name = SL_STR_LIT ("u"), .type = SL_EVH_UUID, .bytes = SL_STR_LIT ("short") },
        { .name = SL_STR_LIT ("x"), .type = SL_EVH_TYPES },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad [0]; k++)
        cr_expect_eq (sl_evstream_encode (&out, &bad [k], 1, SL_STR_NULL), -1, "case %zu", k);
    char *huge = calloc (1, 70000);
    sl_evstream_header_t long_value = { .name = SL_STR_LIT ("s"), .type = SL_EVH_STRING, .bytes = { huge, 70000 } };
    cr_expect_eq (sl_evstream_encode (&out, &long_value, 1, SL_STR_NULL), -1);
    free (huge);
    cr_expect_eq (out.len, 0, "nothing written");
    sl_buf_free (&out);
}

//  Every header of a message, one line: what the table says.
static int
s_on_table (void *arg, const sl_evstream_msg_t *msg)
{
    s_seen_t *seen = arg;
    s_on_msg (arg, msg);
    for (size_t k = 0; k < msg->header_count; k++)
        sl_buf_printf (&seen->log, "  %.*s:%d=%.*s\n", (int) msg->headers [k].name.len, msg->headers [k].name.ptr,
                       (int) msg->headers [k].type, (int) msg->headers [k].bytes.len,
                       msg->headers [k].bytes.ptr ? msg->headers [k].bytes.ptr : "");
    return 0;
}

Test (sl_evstream, headers_like_the_last_read_as_they_are)
{
    //  Messages whose headers are the last one's bytes (a stream of
    //  chunks) and others of the same size with other bytes: each reads
    //  as its own, whatever came before, whole or split byte by byte.
    sl_buf_t stream = { 0 };
    cr_assert_eq (sl_evstream_encode_event (&stream, "chunk", SL_STR_LIT ("{\"bytes\":\"AA==\"}")), 0);
    cr_assert_eq (sl_evstream_encode_event (&stream, "chunk", SL_STR_LIT ("{\"bytes\":\"QQ==\"}")), 0);
    cr_assert_eq (sl_evstream_encode_event (&stream, "chunK", SL_STR_LIT ("x")), 0);
    cr_assert_eq (sl_evstream_encode_event (&stream, "chunk", SL_STR_LIT ("y")), 0);
    sl_evstream_header_t other [] = {
        { .name = SL_STR_LIT (":event-type"), .type = SL_EVH_STRING, .bytes = SL_STR_LIT ("chunk") },
        { .name = SL_STR_LIT (":content-type"), .type = SL_EVH_STRING, .bytes = SL_STR_LIT ("application/jsoN") },
        { .name = SL_STR_LIT (":message-typf"), .type = SL_EVH_STRING, .bytes = SL_STR_LIT ("event") },
    };
    cr_assert_eq (sl_evstream_encode (&stream, other, 3, SL_STR_LIT ("z")), 0);
    cr_assert_eq (sl_evstream_encode_exception (&stream, "chunkException", SL_STR_LIT ("{}")), 0);
    cr_assert_eq (sl_evstream_encode_event (&stream, "chunk", SL_STR_LIT ("w")), 0);
    const char *want =
        "mt=event;et=chunk;ct=application/json;h=3;p={\"bytes\":\"AA==\"};\n"
        "  :event-type:7=chunk\n  :content-type:7=application/json\n  :message-type:7=event\n"
        "mt=event;et=chunk;ct=application/json;h=3;p={\"bytes\":\"QQ==\"};\n"
        "  :event-type:7=chunk\n  :content-type:7=application/json\n  :message-type:7=event\n"
        "mt=event;et=chunK;ct=application/json;h=3;p=x;\n"
        "  :event-type:7=chunK\n  :content-type:7=application/json\n  :message-type:7=event\n"
        "mt=event;et=chunk;ct=application/json;h=3;p=y;\n"
        "  :event-type:7=chunk\n  :content-type:7=application/json\n  :message-type:7=event\n"
        "et=chunk;ct=application/jsoN;h=3;p=z;\n"
        "  :event-type:7=chunk\n  :content-type:7=application/jsoN\n  :message-typf:7=event\n"
        "mt=exception;xt=chunkException;ct=application/json;h=3;p={};\n"
        "  :exception-type:7=chunkException\n  :content-type:7=application/json\n  :message-type:7=exception\n"
        "mt=event;et=chunk;ct=application/json;h=3;p=w;\n"
        "  :event-type:7=chunk\n  :content-type:7=application/json\n  :message-type:7=event\n";
    for (size_t step = 0; step <= 1; step++) {
        sl_evstream_t *d = sl_evstream_new (0);
        s_seen_t seen = { 0 };
        if (step == 0)
            cr_assert_eq (sl_evstream_feed (d, stream.data, stream.len, s_on_table, &seen), 0);
        else
            for (size_t at = 0; at < stream.len; at++)
                cr_assert_eq (sl_evstream_feed (d, stream.data + at, 1, s_on_table, &seen), 0);
        cr_assert_eq (sl_evstream_finish (d), 0);
        cr_expect_str_eq (sl_buf_cstr (&seen.log), want, "step %zu", step);
        sl_buf_free (&seen.log);
        sl_evstream_destroy (&d);
    }
    sl_buf_free (&stream);
}
