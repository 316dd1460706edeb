/*  sl_evstream.h - AWS's binary event stream (application/vnd.amazon.eventstream).

    Amazon Bedrock streams a response (ConverseStream,
    InvokeModelWithResponseStream) as a sequence of binary messages, each

        total length (u32 BE) | headers length (u32 BE) | prelude CRC32
        headers | payload | message CRC32

    where the prelude CRC covers the first 8 bytes and the message CRC
    every byte before it (CRC32 as gzip computes it). A header is a name
    (u8 length, 1..255 bytes), a type byte and a value: 0 true, 1 false
    (no value), 2 byte, 3 short, 4 int, 5 long (signed, big-endian), 6
    bytes and 7 string (u16 BE length, then the bytes), 8 timestamp
    (i64 ms since the epoch), 9 uuid (16 bytes).

    The decoder is incremental: bytes may be fed split anywhere, and a
    message is reported once all of it arrived and both CRCs match. It is
    bounded: a prelude announcing more than max_message bytes (or headers
    over SL_EVSTREAM_MAX_HEADERS) is refused before anything past it is
    buffered, so memory stays below max_message plus one read. Every fault
    of the peer's bytes (a bad CRC, lengths that do not add up, an unknown
    header type, a header running past its block, a stream that ends
    inside a message) is an error with a reason, never an assertion; after
    one, the decoder refuses everything until reset (the framing is lost:
    there is no resynchronising a length-prefixed stream).

    The encoder beside it writes the same frames, for the embedded mock
    and for the tests.
*/
#ifndef SL_EVSTREAM_H
#define SL_EVSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

#define SL_EVSTREAM_PRELUDE 12                  //  two lengths and the prelude CRC
#define SL_EVSTREAM_MIN_MESSAGE 16              //  a prelude and the message CRC
#define SL_EVSTREAM_MAX_HEADERS (128u << 10)    //  the headers block, as AWS bounds it
#define SL_EVSTREAM_DEFAULT_MAX (16u << 20)     //  a message, as AWS bounds it

//  The header value types, by their wire code.
typedef enum {
    SL_EVH_TRUE = 0,
    SL_EVH_FALSE = 1,
    SL_EVH_BYTE = 2,
    SL_EVH_SHORT = 3,
    SL_EVH_INT = 4,
    SL_EVH_LONG = 5,
    SL_EVH_BYTES = 6,
    SL_EVH_STRING = 7,
    SL_EVH_TIMESTAMP = 8,
    SL_EVH_UUID = 9,
    SL_EVH_TYPES
} sl_evh_type_t;

//  One header. The integer types and the timestamp are in i (true and
//  false as 1 and 0); bytes, string and uuid (16 bytes) in bytes.
typedef struct {
    sl_str_t name;
    sl_evh_type_t type;
    int64_t i;
    sl_str_t bytes;
} sl_evstream_header_t;

//  One decoded message: the headers that say what it is (absent when the
//  message has none) and its payload; everything borrowed for the call.
typedef struct {
    sl_str_t message_type;              //  ":message-type": event, exception or error
    sl_str_t event_type;                //  ":event-type" of an event (chunk, messageStart, ...)
    sl_str_t exception_type;            //  ":exception-type" (throttlingException, ...)
    sl_str_t content_type;              //  ":content-type" (application/json)
    sl_str_t error_code;                //  ":error-code" of an error message
    sl_str_t error_message;             //  ":error-message" of an error message
    sl_str_t payload;
    const sl_evstream_header_t *headers;    //  every header, in order
    size_t header_count;
} sl_evstream_msg_t;

typedef struct _sl_evstream_t sl_evstream_t;

//  A message arrived whole. Return 0 to go on; any other value stops
//  decoding and is returned by sl_evstream_feed.
typedef int (sl_evstream_msg_fn) (void *arg, const sl_evstream_msg_t *msg);

//  max_message: the largest message accepted (0: SL_EVSTREAM_DEFAULT_MAX).
sl_evstream_t *sl_evstream_new (size_t max_message);
void sl_evstream_destroy (sl_evstream_t **self_p);
//  Decode the next bytes of the stream, calling fn for each whole message.
//  0 ok; -1 malformed or oversize (sl_evstream_error says why; the
//  decoder then refuses everything until reset); or the callback's value.
int sl_evstream_feed (sl_evstream_t *self, const void *data, size_t size,
                      sl_evstream_msg_fn *fn, void *arg);
//  The stream ended: 0 when it ended between messages, -1 when inside one
//  (truncated) or after an error.
int sl_evstream_finish (sl_evstream_t *self);
//  Why the last call failed (static string), "" when it did not.
const char *sl_evstream_error (sl_evstream_t *self);
//  Bytes held of a message not yet whole.
size_t sl_evstream_pending (sl_evstream_t *self);
//  Forget everything (a new stream).
void sl_evstream_reset (sl_evstream_t *self);

//  The CRC32 of the frames (gzip's), continuing from crc (0 to start).
uint32_t sl_evstream_crc32 (uint32_t crc, const void *data, size_t size);
//  How the CRC is computed: by carry-less multiplication where the CPU
//  has it (the default, on) or by the tables alone (off), so that tests
//  check both. 0, or -1 when on is asked of a CPU without it.
int sl_evstream_crc32_clmul (int on);

//  Append one message with these headers and payload to out. 0 ok; -1
//  when it cannot be framed (a name empty or over 255 bytes, a bytes or
//  string value over 65535, a uuid not 16 bytes, an unknown type, the
//  headers over SL_EVSTREAM_MAX_HEADERS or the message over
//  SL_EVSTREAM_DEFAULT_MAX); out is then unchanged.
int sl_evstream_encode (sl_buf_t *out, const sl_evstream_header_t *headers, size_t count,
                        sl_str_t payload);
//  An event message as Bedrock sends them: :event-type event_type,
//  :content-type application/json, :message-type event.
int sl_evstream_encode_event (sl_buf_t *out, const char *event_type, sl_str_t payload);
//  An exception message: :exception-type exception_type, :content-type
//  application/json, :message-type exception.
int sl_evstream_encode_exception (sl_buf_t *out, const char *exception_type, sl_str_t payload);

#endif
