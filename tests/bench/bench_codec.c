/*  Benchmark: encode and decode rate of the wire codec (one core).

    Encodes a typical block delta (a text fragment of a few words) into a
    batch and decodes the batch back, repeatedly; prints messages per second
    for each direction.
*/
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "proto/sl_msg.h"

#define BATCH 1000
#define ROUNDS 2000

static double
s_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

int
main (void)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    memset (m.sid, 7, SL_SID_SIZE);
    m.kind = SL_B_DELTA;
    m.block = SL_BK_TEXT;
    m.index = 0;
    m.text = sl_str (" the quick brown");
    sl_buf_t buf = { 0 };
    double t0 = s_now ();
    for (int r = 0; r < ROUNDS; r++) {
        sl_buf_reset (&buf);
        for (int i = 0; i < BATCH; i++) {
            m.seq = (uint64_t) i;
            sl_msg_encode (&m, &buf);
        }
    }
    double t1 = s_now ();
    sl_codec_t *codec = sl_codec_new ();
    long decoded = 0;
    for (int r = 0; r < ROUNDS; r++) {
        size_t offset = 0;
        sl_msg_t out;
        while (sl_codec_decode (codec, buf.data, buf.len, &offset, &out) == 0)
            decoded++;
    }
    double t2 = s_now ();
    double n = (double) BATCH * ROUNDS;
    printf ("codec encode: %.2f M msgs/s (%zu bytes per message)\n", n / (t1 - t0) / 1e6, buf.len / BATCH);
    printf ("codec decode: %.2f M msgs/s\n", (double) decoded / (t2 - t1) / 1e6);
    sl_codec_destroy (&codec);
    sl_buf_free (&buf);
    return decoded == (long) n ? 0 : 1;
}
