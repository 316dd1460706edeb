/*  sl_replay.h - the stages of sluice in one process, over one captured stream.

    A captured upstream response (the bytes a provider sent) goes in, in
    pieces of any size, as it would arrive: the same incremental SSE parser
    and decoder the ingest uses (sl_sse, sl_decoder), then the aggregator,
    then the judge when a policy is given, then the emitter when a client
    dialect is asked for. No sockets, no threads; the output is a function
    of the input (judge latencies, the one clock involved, are not written).

    Input formats: raw SSE bytes; JSONL, one SSE data payload per line (as
    some projects store captures); or a JSON array of payloads (read whole,
    since an array is not a stream). SL_REPLAY_INPUT_AUTO decides from the
    first byte that is not whitespace or a byte order mark: '{' is JSONL,
    '[' a JSON array, anything else SSE.

    Output, through the write callback, in "blocks" form (render 0): one
    JSON object per line per completed block (sl_snapshot_block_to_json), a
    {"verdict":{...}} line per judge decision when a policy is given
    (index, id, name, action, check, rule, reason, judge_model), then a
    last line {"finish":..,"finish_raw":..,"usage":{..}} (plus
    "stop_sequence" and "error" when there are). In render form: the bytes
    the emitter would send the client.

    The judge runs as in the service with two differences: no clock (the
    latency is not written, keep-alives never fall due) and no network. A
    rule with an LLM judge is never asked: its check is recorded as a check
    that did not run (check "error", the reason says why) and the rule's
    on_error action is taken, exactly as when a judge cannot be reached, so
    a replay never shows a pass the judge did not give. Likewise nobody is
    asked about a call a rule with action ask holds: it is blocked, check
    "error" (a replay shows which calls would wait for a person).

    Malformed input (the decoder or the parser refuses it) writes one line
    {"error":"malformed input: ..."} and ends the replay: feed and finish
    return -2 from then on. An error the provider reported inside the
    stream is not malformed input: it ends the stream as it would in the
    pipeline and shows in the last line.
*/
#ifndef SL_REPLAY_H
#define SL_REPLAY_H

#include <stddef.h>

#include "common/dialects/sl_snapshot.h"
#include "common/dialects/sl_job.h"
#include "common/policy/sl_policy.h"

typedef struct _sl_replay_t sl_replay_t;

typedef enum {
    SL_REPLAY_INPUT_AUTO = 0,           //  decide from the first byte
    SL_REPLAY_INPUT_SSE,
    SL_REPLAY_INPUT_JSONL,
    SL_REPLAY_INPUT_JSON                //  one JSON array of payloads
} sl_replay_input_t;

typedef struct {
    int dialect;                        //  upstream dialect of the capture
    int render;                         //  0: blocks; else the client dialect
    int input;                          //  sl_replay_input_t
    sl_policy_t *policy;                //  judge with it (a reference is taken); NULL: no judge
    size_t max_event;                   //  largest SSE line / event / JSONL line;
                                        //  0: SL_SSE_DEFAULT_MAX
    //  What the gateway would know of the request behind the capture, for
    //  the judge (borrowed for sl_replay_new; absent: unknown)
    sl_str_t model;                     //  the model asked for
    sl_str_t tools;                     //  tool definitions, [{"name":..,"schema":{..}}]
    sl_str_t last_user;                 //  text of the last user message
    //  The client's request itself (sl_job.h), borrowed: with a policy
    //  that has request rules it is judged first, as the gateway judges
    //  it (LLM judges not asked: their on_error applies), and changed by
    //  what they decide; its verdicts are written first, then the request
    //  as it would go upstream ({"request": ...}) or its refusal
    //  ({"refused": "..."}). Its earlier calls feed history conditions.
    sl_job_t *request;
} sl_replay_opts_t;

//  Where output goes; data is borrowed for the call.
typedef void (sl_replay_write_fn) (void *arg, const char *data, size_t size);

//  NULL when the dialect has no decoder or the render dialect no renderer
//  in the emitter (sl_emitter_can_render); *why then says which (static
//  string). A capture renders for a client of any dialect, translated as
//  the emitter translates a stream from a provider of another dialect.
//  Did the request policy refuse the request (nothing goes upstream)?
bool sl_replay_refused (sl_replay_t *self);
sl_replay_t *sl_replay_new (const sl_replay_opts_t *opts, sl_replay_write_fn *write,
                            void *arg, const char **why);
void sl_replay_destroy (sl_replay_t **self_p);
//  The next bytes of the capture. 0 ok, -2 malformed (see above).
int sl_replay_feed (sl_replay_t *self, const void *data, size_t size);
//  The capture ended. 0 ok, -2 malformed. Call once.
int sl_replay_finish (sl_replay_t *self);
//  Why the replay failed, "" when it did not.
const char *sl_replay_error (sl_replay_t *self);
//  The whole message after every stage (blocks form only; NULL otherwise).
const sl_snapshot_t *sl_replay_snapshot (sl_replay_t *self);
//  Whether the ingest's decoders read captures of a dialect. (Which client
//  dialects can be rendered is the emitter's to say: sl_emitter_can_render.)
bool sl_replay_can_decode (int dialect);

#endif
