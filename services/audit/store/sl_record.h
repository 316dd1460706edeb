/*  sl_record.h - a record as the audit store keeps it, for both its sides.

    The recorder writes each record the emitters send into rows
    (services/audit/recorder/sl_archive.h) and hands every committed one
    on; the console reads the rows back and shows the records live. What
    both sides must agree on is here, below them:

      - where a record came from: its REC envelope (sl_record_meta_t),
        and a record the store committed, as the recorder hands it on
        (sl_record_t);
      - text as the store takes it: valid UTF-8 without NUL (PostgreSQL
        takes nothing else; bytes that are not are kept as U+FFFD), at most
        a bound, cut on a character boundary (sl_record_clean);
      - a latency as a verdict's row keeps it: its quarter-octave bucket,
        read back as the bucket's upper bound when percentiles are drawn
        from the counts (sl_record_latency_bucket, sl_record_bucket_bound).
*/
#ifndef SL_RECORD_H
#define SL_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"
#include "proto/sl_msg.h"

//  Where a record came from: its REC envelope.
typedef struct {
    sl_str_t emitter;                   //  the emitter's instance name
    uint64_t incarnation;               //  the emitter's incarnation
    uint64_t rseq;                      //  the record's number there
    uint8_t sub;                        //  0: from the judge; 1..: raised by the emitter
    int64_t at;                         //  when it was spooled, Unix ms
} sl_record_meta_t;

//  A record the store committed (both borrowed, for the call it is given to).
typedef struct {
    sl_record_meta_t meta;
    const sl_msg_t *msg;                //  the REC's inner message
} sl_record_t;

//  Text as the store takes it: valid UTF-8 without NUL (repaired into buf
//  when it is not), at most max bytes cut on a character boundary (*cut,
//  may be NULL, set when it was); *out is in itself or a slice of buf.
//  Absent stays absent.
void sl_record_clean (sl_buf_t *buf, sl_str_t in, size_t max, sl_str_t *out, bool *cut);
//  The quarter-octave bucket of a latency (µs) and a bucket's upper bound:
//  verdicts store the bucket, percentiles are read from the counts.
int sl_record_latency_bucket (int64_t latency_us);
double sl_record_bucket_bound (int bucket);

#endif
