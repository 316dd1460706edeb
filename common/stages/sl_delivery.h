/*  sl_delivery.h - one client stream's frames as the gateway delivers
    them: in sequence, once, from the newest epoch, with the acks that
    tell the ingest how far the client got, and the bounds that end a
    stream nothing comes back for.

    A pure library: the gateway feeds it the frames of one stream (and
    says whether the client still has bytes of ours to take), and it
    answers what to do with each: write it (and whether the response
    opens or ends with it), drop it (stale, duplicate, gap), or hold it.
    It opens no socket and writes nothing itself; time comes from the
    clock callback the gateway gives (monotonic µs; without one, time
    stands at 0).

    The rules, each the answer to something that happens in a cluster:

    - Frames are numbered per stream (seq 0, 1, ...). The next one expected
      is written; one below it was written already (a replay brings it
      again) and is dropped; one above it follows frames lost with an
      instance, and is dropped too: the ingest's replay brings those
      frames again, and this one after them.
    - A replay is a new epoch, numbered from 0 again. The newest epoch
      seen is the stream's; frames of an older one are stale and dropped
      (what an instance left behind when it let go of the stream must not
      reach the client), and change nothing here, not even the time the
      stream was last heard of.
    - Keep-alive frames stand outside the sequence. Like every frame
      that is not stale, they count as activity (the ack's ts, the
      ingest's proof that the pipeline behind the stream lives); one
      flagged FIRST opens the response when nothing has yet (a judge
      holding the first block, and the client must hear from us).
    - An ALONE frame (a Gemini client's bare error object) must reach the
      client in a write of its own: while the client still has bytes of
      ours to take, it is held (at most SL_DELIVERY_ALONE_WAIT_MS) and
      released by sl_delivery_release.
    - The request's job is kept until a frame or keep-alive shows an
      ingest has it, so that it can go to another ingest when its own
      died first (at most SL_DELIVERY_MAX_RESENDS times).
    - A stream is silent past its bound, and its response ends with an
      error, when its ingest was declared dead and did not speak again
      within SL_DELIVERY_INGEST_GRACE_MS (a process that was only stopped
      goes on where it was), or when nothing came back for it for the
      expiry (no frame, no keep-alive: the pipeline lost it and no one
      said so).

    What the library does not do: HTTP, the router (which ingest, pins),
    metrics and logs. The gateway counts and logs by the outcome.
*/
#ifndef SL_DELIVERY_H
#define SL_DELIVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/sl_msg.h"

#define SL_DELIVERY_INGEST_GRACE_MS 1500    //  a response whose ingest was declared dead waits this
                                            //  long for it to speak again (it may be only stopped)
#define SL_DELIVERY_MAX_RESENDS 3           //  new ingests tried for a request nothing came of
#define SL_DELIVERY_ALONE_WAIT_MS 200       //  longest an ALONE frame waits for the bytes before it
#define SL_DELIVERY_CONTENT_TYPE_SIZE 128   //  a longer content type is not taken from a frame
#define SL_DELIVERY_EVENT_STREAM "text/event-stream"

typedef struct _sl_delivery_t sl_delivery_t;

//  What a frame fed is to the client.
typedef enum {
    SL_DELIVERY_STALE,                  //  of an older epoch: dropped
    SL_DELIVERY_HELD,                   //  an ALONE frame held until the bytes before it are out
    SL_DELIVERY_KEEPALIVE,              //  outside the sequence: may open the response, may
                                        //  carry bytes to write once it is open
    SL_DELIVERY_DUPLICATE,              //  written already: dropped
    SL_DELIVERY_GAP,                    //  frames before it are missing: dropped, the replay
                                        //  brings it again
    SL_DELIVERY_WRITE                   //  the next frame: write it
} sl_delivery_outcome_t;

//  What to write for a KEEPALIVE or WRITE outcome.
typedef struct {
    bool open;                          //  the response opens with it: status line and headers
    bool whole;                         //  WRITE: the whole response in one answer (status,
                                        //  content type, body), not an event stream
    bool end;                           //  WRITE: the response ends with it: end it, ack with
                                        //  LAST, and the stream is over
    int status;                         //  of the response, when it opens
    char content_type [SL_DELIVERY_CONTENT_TYPE_SIZE];
    sl_str_t body;                      //  bytes to write, borrowed from the frame fed
} sl_delivery_write_t;

//  Why a stream's response should end for silence.
typedef enum {
    SL_DELIVERY_HEARD,                  //  not silent past any bound
    SL_DELIVERY_ORPHANED,               //  its ingest was declared dead and did not come back
    SL_DELIVERY_EXPIRED                 //  nothing came for it for the expiry
} sl_delivery_silence_t;

//  The current time in microseconds (monotonic).
typedef int64_t (sl_delivery_clock_fn) (void *arg);

//  A stream just asked for (heard of now). expiry_ms: the silence after
//  which it expires, 0 for never.
sl_delivery_t *sl_delivery_new (const uint8_t sid [SL_SID_SIZE], int64_t expiry_ms,
                                sl_delivery_clock_fn *clock, void *clock_arg);
void sl_delivery_destroy (sl_delivery_t **self_p);

//  --------------------------------------------------------------------------
//  The request's job

//  The job leaves for an ingest: kept (encoded) until an ingest shows it
//  has it; the stream is heard of now (judging the request took its own
//  time).
void sl_delivery_dispatch (sl_delivery_t *self, const sl_msg_t *job);
//  The job went out: its stream is acked, and a cancel stops its upstream.
bool sl_delivery_dispatched (const sl_delivery_t *self);
//  The job kept, to send again to the same ingest: 0 with job filled
//  (borrowing from the kept copy until the next call on self or codec),
//  -1 when no job is kept any more.
int sl_delivery_job (sl_delivery_t *self, sl_codec_t *codec, sl_msg_t *job);
//  The job kept, to send to another ingest (its own died before a frame
//  came): as sl_delivery_job, counted; -1 as well once it went to
//  SL_DELIVERY_MAX_RESENDS others.
int sl_delivery_resend (sl_delivery_t *self, sl_codec_t *codec, sl_msg_t *job);

//  --------------------------------------------------------------------------
//  Frames

//  Feed a FRAME of this stream. behind: the client still has bytes of ours
//  to take (only read for an ALONE frame). write is filled for KEEPALIVE
//  and WRITE (its body borrows from frame). A WRITE that opens the response
//  counts it open; a KEEPALIVE does not (see sl_delivery_opened).
sl_delivery_outcome_t sl_delivery_feed (sl_delivery_t *self, const sl_msg_t *frame, bool behind,
                                        sl_delivery_write_t *write);
//  A keep-alive's status line went out: the response is open.
void sl_delivery_opened (sl_delivery_t *self);
//  The response is open (its status line went out).
bool sl_delivery_started (const sl_delivery_t *self);
//  An ALONE frame is held.
bool sl_delivery_holding (const sl_delivery_t *self);
//  The held frame, when it may go now (the client took every byte before
//  it, or it waited SL_DELIVERY_ALONE_WAIT_MS): the caller's (free), its
//  ALONE flag cleared, to be fed like any frame. NULL when none may go.
sl_msg_t *sl_delivery_release (sl_delivery_t *self, bool behind);
//  The ACK for the ingest: seq the frames written (the next expected), ts
//  the activity (frames and keep-alives received), LAST when last.
void sl_delivery_ack (const sl_delivery_t *self, bool last, sl_msg_t *ack);
//  The next frame expected: the frames written so far.
uint64_t sl_delivery_next_seq (const sl_delivery_t *self);

//  --------------------------------------------------------------------------
//  Its ingest

//  Its ingest was declared dead: the grace starts (unless it runs already).
void sl_delivery_ingest_dead (sl_delivery_t *self);
//  Its ingest speaks again: no grace runs.
void sl_delivery_ingest_back (sl_delivery_t *self);
//  Whether the stream is silent past a bound, now.
sl_delivery_silence_t sl_delivery_silence (const sl_delivery_t *self);

#endif
