/*  sl_msg.h - the messages sluice processes exchange, and their one codec.

    proto/PROTOCOL.md is the specification; this header is its C form. Every
    message is one msgpack map with an envelope (version, type, stream id,
    epoch, sequence) and the body fields of its type. Several messages may be
    concatenated in one ZeroMQ frame (batching); sl_codec_decode walks them.

    The rest of the code sees sl_msg_t, never msgpack. A decoded message
    borrows its strings from the frame it was decoded from: they live as long
    as that frame. A message to encode borrows its strings from the caller.

    A flat struct rather than one struct per type: stages copy, forward and
    rewrite messages constantly, and a flat struct with "absent" sentinels
    keeps that to one memcpy. Which fields each type may and must carry is
    a table (SL_FIELDS_<TYPE>, after the struct) that the codec enforces
    both ways, so a field is seen only where its type has it.
*/
#ifndef SL_MSG_H
#define SL_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

#define SL_SID_SIZE 16                  //  stream id, random bytes
#define SL_SID_HEX_SIZE 33              //  32 hex digits and a NUL
#define SL_MSG_MAX_SIZE (64u << 20)     //  one encoded message, bytes

//  Message types (field "t").
typedef enum {
    SL_MSG_HB = 1,                      //  heartbeat and credit, no stream
    SL_MSG_REQ,                         //  gateway -> ingest: a request job
    SL_MSG_ACK,                         //  gateway -> ingest: seq delivered
    SL_MSG_CANCEL,                      //  gateway -> ingest: client gone
    SL_MSG_START,                       //  first message of a stream at every hop
    SL_MSG_DELTA,                       //  ingest -> aggregator
    SL_MSG_BLOCK,                       //  aggregator -> judge -> emitter
    SL_MSG_VERDICT,                     //  judge -> emitter (and taps)
    SL_MSG_FRAME,                       //  emitter -> gateway: bytes for the client
    SL_MSG_ERROR,                       //  an error inside a stream
    SL_MSG_END,                         //  last message of a stream at every hop
    SL_MSG_LOST,                        //  back towards the ingest: a stream's state died
    SL_MSG_POLICY,                      //  judge -> emitter (and taps, the audit): the policy it runs
    SL_MSG_REC,                         //  emitter -> audit: one record of the audit link
    SL_MSG_RACK,                        //  audit -> emitter: records committed (and liveness)
    SL_MSG_GAP,                         //  inside a REC: records the emitter's spool could not keep
    SL_MSG_APPROVAL,                    //  judge -> emitter (and taps, the audit): a call waiting for a
                                        //  person, and what became of it
    SL_MSG_CTL,                         //  gateway, audit <-> judge: the approvals control link
                                        //  (a request and its reply)
    SL_MSG_STEP,                        //  inside a REQ's "fo": one provider of its plan
    SL_MSG_TYPE_MAX
} sl_msg_type_t;

//  Wire dialects, client side and upstream side (fields "cd", "ud"): the
//  number each dialect has on the wire, and no more. Everything else about
//  a dialect, its name included, is its module's (common/dialects/<name>/,
//  registered in common/dialects/sl_dialect.c, which holds one module for
//  every number here; sl_dialect_name and sl_dialect_parse are there).
//  The numbers are explicit: a number once given is never given again.
typedef enum {
    SL_DIALECT_NONE = 0,
    SL_DIALECT_OPENAI = 1,              //  OpenAI Chat Completions
    SL_DIALECT_ANTHROPIC = 2,           //  Anthropic Messages
    SL_DIALECT_RESPONSES = 3,           //  OpenAI Responses
    SL_DIALECT_GEMINI = 4,              //  Gemini generateContent
    SL_DIALECT_BEDROCK = 5,             //  Amazon Bedrock Converse (upstream only)
    SL_DIALECT_BEDROCK_ANTHROPIC = 6,   //  Claude on Bedrock, InvokeModelWithResponseStream (upstream only)
    SL_DIALECT_VERTEX = 7,              //  Gemini on Vertex AI (upstream only)
    SL_DIALECT_VERTEX_ANTHROPIC = 8,    //  Claude on Vertex AI, streamRawPredict (upstream only)
    SL_DIALECT_AZURE = 9,               //  Azure OpenAI Chat Completions (upstream only)
    SL_DIALECT_MAX
} sl_dialect_id_t;

//  Kinds of DELTA messages (field "k"): what a provider said, normalized.
typedef enum {
    SL_D_MESSAGE = 1,                   //  message identity: id, model, ts
    SL_D_TEXT,                          //  text fragment
    SL_D_THINKING,                      //  reasoning fragment (SL_F_SUMMARY: a summary)
    SL_D_SIGNATURE,                     //  signature of the current thinking block
    SL_D_REDACTED,                      //  redacted thinking, opaque data in text
    SL_D_REFUSAL,                       //  refusal fragment
    SL_D_TOOL_CALL,                     //  tool call fragment: i, id, cid, name, text=args
    SL_D_SERVER_TOOL_USE,               //  provider-run tool: i, id, name, text=input
    SL_D_SERVER_TOOL_RESULT,            //  its result: i, id, name=type, body=JSON
    SL_D_CITATION,                      //  i = block it belongs to, body=JSON
    SL_D_BLOCK_STOP,                    //  provider closed its block i
    SL_D_FINISH,                        //  finr = raw finish reason, stops
    SL_D_USAGE,                         //  u
    SL_D_DONE,                          //  upstream ended the response cleanly
    SL_D_MAX
} sl_delta_kind_t;

//  Kinds of BLOCK messages (field "k").
typedef enum {
    SL_B_MESSAGE = 1,                   //  message identity: id, model, ts
    SL_B_START,                         //  block i opens: bk, id, cid, name
    SL_B_DELTA,                         //  fragment of block i: text
    SL_B_END,                           //  block i complete: whole content
    SL_B_FINISH,                        //  fin, finr, stops, u
    SL_B_KEEPALIVE,                     //  judge is holding a call; keep client alive
    SL_B_MAX
} sl_block_event_t;

//  Block kinds (field "bk").
typedef enum {
    SL_BK_NONE = 0,
    SL_BK_TEXT,
    SL_BK_THINKING,
    SL_BK_REDACTED_THINKING,
    SL_BK_TOOL_CALL,
    SL_BK_REFUSAL,
    SL_BK_SERVER_TOOL_USE,
    SL_BK_SERVER_TOOL_RESULT,
    SL_BK_CITATION,
    SL_BK_MAX
} sl_block_kind_t;

//  Normalized finish reasons (field "fin"); the raw value travels in "finr".
typedef enum {
    SL_FIN_NONE = 0,
    SL_FIN_STOP,
    SL_FIN_LENGTH,
    SL_FIN_TOOL_CALLS,
    SL_FIN_CONTENT_FILTER,
    SL_FIN_REFUSAL,
    SL_FIN_ERROR,
    SL_FIN_PAUSE,
    SL_FIN_MAX
} sl_finish_t;

//  Judge actions (field "act").
typedef enum {
    SL_ACT_NONE = 0,
    SL_ACT_ALLOW,
    SL_ACT_BLOCK,
    SL_ACT_DROP,
    SL_ACT_REWRITE,
    SL_ACT_TERMINATE,
    SL_ACT_REDACT,                      //  request: matches replaced with a placeholder
    SL_ACT_BLOCK_RESULT,                //  request: a tool result replaced by a notice
    SL_ACT_WITHHOLD,                    //  request: a tool definition removed from the request
    SL_ACT_MAX
} sl_action_t;

//  Whether the check behind a verdict ran (field "chk"): an audit trail
//  must never record a pass for a check that did not run.
typedef enum {
    SL_CHK_RAN = 0,                     //  the rule was evaluated
    SL_CHK_TIMEOUT,                     //  LLM judge timed out; fail mode applied
    SL_CHK_ERROR,                       //  LLM judge failed or answered garbage
    SL_CHK_DEFAULT,                     //  no rule matched; default action
    SL_CHK_APPROVED,                    //  a person approved the call (ask)
    SL_CHK_DENIED,                      //  a person denied it (ask)
    SL_CHK_APPROVED_EARLIER,            //  an identical call was approved with a memory (ask)
    SL_CHK_WOULD_ASK,                   //  a rule in shadow mode would have asked a person; nobody was
    SL_CHK_MAX
} sl_check_t;

//  Whether a verdict decided the call or only says what a rule in shadow
//  mode would have decided (field "mode").
typedef enum {
    SL_MODE_ENFORCE = 0,                //  the verdict decided: the client got what it says
    SL_MODE_SHADOW,                     //  a would-be verdict: recorded, nothing was done
    SL_MODE_MAX
} sl_mode_t;

//  Why a block was cut off: the "code" of a block_end flagged INCOMPLETE
//  (PROTOCOL.md, "block"). The judge adds INVALID for a tool call that
//  ended without a cut but whose arguments are not one whole JSON object.
typedef enum {
    SL_CUT_NONE = 0,                    //  the block ended cleanly
    SL_CUT_LENGTH,                      //  a length finish (max tokens)
    SL_CUT_FILTER,                      //  a content filter or refusal finish
    SL_CUT_ERROR,                       //  an error ended the response
    SL_CUT_EOF,                         //  the upstream's body or connection ended early
    SL_CUT_SIZE,                        //  over a size bound (stream, event, call)
    SL_CUT_INVALID,                     //  ended, but the arguments are not whole JSON
    SL_CUT_MAX
} sl_cut_t;

//  Flags (field "f").
#define SL_F_STREAM      (1u << 0)      //  client asked for a streaming response
#define SL_F_ARGS_VALID  (1u << 1)      //  tool arguments are complete valid JSON
#define SL_F_REPAIRED    (1u << 2)      //  arguments were double-encoded and repaired
#define SL_F_INCOMPLETE  (1u << 3)      //  content cut off (length finish, error)
#define SL_F_SUMMARY     (1u << 4)      //  thinking text is a summary
#define SL_F_FIRST       (1u << 5)      //  first frame of a response (carries st, ct)
#define SL_F_LAST        (1u << 6)      //  last frame of a response
#define SL_F_UPSTREAM    (1u << 7)      //  error reported by the upstream provider
#define SL_F_USAGE       (1u << 8)      //  client asked for usage in the stream
#define SL_F_RETRYABLE   (1u << 9)      //  error happened before any byte reached the client
#define SL_F_REPLACED    (1u << 10)     //  block written by the judge in place of a call
#define SL_F_KEEPALIVE   (1u << 11)     //  frame outside the sequence: liveness, maybe a comment
#define SL_F_ALONE       (1u << 12)     //  frame written by itself, once the client took all before it
#define SL_F_HELLO       (1u << 13)     //  hb: the sender holds no window (seq: messages sent before it);
                                        //  from a receiver: it holds none for you, say hello
#define SL_F_WINDOW      (1u << 14)     //  hb: credit is a fresh whole window, counted from the hello
                                        //  whose seq this hb echoes
#define SL_F_REFUSED     (1u << 15)     //  start: a stage refused the stream (at its bound); its error
                                        //  and end follow at once, and later stages take it whatever theirs
#define SL_F_DENIED      (1u << 16)     //  req: the request policy refused it: no upstream call, the
                                        //  ingest ends the stream with the req's code, st and msg
#define SL_F_ESTIMATED   (1u << 17)     //  a message's usage ("u") is estimated from bytes: the upstream
                                        //  reported none
#define SL_F_DRAINING    (1u << 18)     //  hb from a receiver: it is stopping; pin no new stream to it
                                        //  while another live instance takes them

//  Token usage (field "u"); -1 means "not reported".
typedef struct {
    int64_t input;                      //  prompt tokens
    int64_t output;                     //  completion tokens
    int64_t total;
    int64_t cache_read;                 //  prompt tokens read from cache
    int64_t cache_write;                //  prompt tokens written to cache
    int64_t reasoning;                  //  of output, spent thinking
} sl_usage_t;

//  A message: the envelope and every body field of every type, each absent
//  (zero, NULL, -1 or NaN, as sl_msg_init leaves it) unless set. Which of
//  the body fields a type carries is SL_FIELDS_<TYPE> below, enforced by
//  the codec; the groups here are only for the reader.
typedef struct {
    //  Envelope, on every message
    uint32_t version;                   //  "v"   protocol version
    uint8_t type;                       //  "t"   sl_msg_type_t
    uint8_t sid [SL_SID_SIZE];          //  "sid" stream id (zero for HB)
    uint32_t epoch;                     //  "ep"  epoch of the stream (+1 at each re-send)
    uint64_t seq;                       //  "seq" position in the stream at this hop

    //  What a response says: deltas, blocks, frames
    uint8_t kind;                       //  "k"   delta kind / block event (REC: sub-record, RACK: ack kind)
    uint8_t block;                      //  "bk"  sl_block_kind_t
    int32_t index;                      //  "i"   block or provider index, -1 absent
    uint32_t flags;                     //  "f"   SL_F_*
    sl_str_t id;                        //  "id"  message / block / item id
    sl_str_t call_id;                   //  "cid" tool call id when distinct from id
    sl_str_t name;                      //  "name" tool name
    sl_str_t text;                      //  "text" fragment or whole content
    sl_str_t sig;                       //  "sig" thinking / call signature
    sl_str_t body;                      //  "body" bytes: request, frame, JSON extras
    sl_str_t model;                     //  "model"
    int64_t ts;                         //  "ts"  time (created, send stamp), 0 absent
    uint8_t finish;                     //  "fin" sl_finish_t
    sl_str_t finish_raw;                //  "finr" provider's own finish value
    sl_str_t stop_seq;                  //  "stops" stop sequence that ended it
    bool has_usage;                     //  "u" present
    sl_usage_t usage;                   //  "u"
    int32_t status;                     //  "st"  HTTP status
    sl_str_t code;                      //  "code" error type
    sl_str_t message;                   //  "msg" error message
    sl_str_t content_type;              //  "ct"  of the response (first frame)

    //  The job: what a REQ says of its request, and its START carries on
    //  to every stage (the judge drops rv, hist, tdig and tnt)
    uint8_t client_dialect;             //  "cd"
    uint8_t upstream_dialect;           //  "ud"
    sl_str_t provider;                  //  "prov" upstream provider name
    sl_str_t reply_to;                  //  "rt"  instance name of the owning gateway
    sl_str_t tools;                     //  "tools" JSON array (sl_req_tools_json)
    sl_str_t headers;                   //  "hdrs" JSON object, policy headers
    sl_str_t last_user;                 //  "lu"  last user message text
    sl_str_t key_id;                    //  "kid" the client key's id, never the key
    sl_str_t team;                      //  "team" whose request it is
    sl_str_t user;                      //  "user" its user within the team
    sl_str_t policy;                    //  "pol" id of a policy: the version a request was judged
                                        //  under, the judge's (from the judge on, and POLICY)
    sl_str_t policy_name;               //  "pn"  the policy file a stream runs under (its team's or its
                                        //  key's, as the keys file names it); absent: the default
    sl_str_t shadow_policy_name;        //  "spn" the policy file judged wholly in shadow beside it (the
                                        //  keys file's shadow_policy); absent: none
    uint64_t request_bytes;             //  "rqb" bytes of the request body the upstream got: a usage
                                        //  estimate when the upstream reports none
    sl_str_t req_verdicts;              //  "rv"  the request's verdicts, encoded VERDICT messages
    sl_str_t history;                   //  "hist" earlier tool calls of the conversation, JSON
    sl_str_t tool_digests;              //  "tdig" digests of the request's tool definitions as sent,
                                        //  JSON object name -> digest
    sl_str_t taint;                     //  "tnt" the untrusted tool results it holds, JSON
    sl_str_t trace;                     //  "tc"  W3C traceparent the stream continues, normalized; parent
                                        //  all zero: the gateway began the trace
    sl_str_t trace_state;               //  "tcs" the client's W3C tracestate, as sent
    int64_t received_us;                //  "rqt" when the gateway received the request, Unix µs
    sl_str_t mcp;                       //  "mcp" the stream is an MCP request: its method and the name
                                        //  it names, "tools/call <tool>"
    sl_str_t attempts;                  //  "att" the providers tried before the one that served, and why
                                        //  each was left, JSON

    //  The request only: no type but REQ may carry these, and the ingest
    //  stops them (credentials, the client's own headers, an answer it
    //  decodes itself)
    struct {
        sl_str_t auth;                  //  "auth" client credential
        sl_str_t passthrough;           //  "fwd" client header lines the upstream gets as sent
        sl_str_t inline_answer;         //  "inl" the upstream's whole answer, SSE of dialect "ud": the
                                        //  ingest decodes it in place of an upstream call
        sl_str_t failover;              //  "fo"  the providers to try, in order: encoded STEP
                                        //  messages
    };

    //  A judge's decision (VERDICT), and a call waiting for a person
    //  (APPROVAL)
    uint8_t action;                     //  "act" sl_action_t
    uint8_t check;                      //  "chk" sl_check_t
    sl_str_t rule;                      //  "rule" rule id
    sl_str_t reason;                    //  "why" human reason
    sl_str_t judge_model;               //  "jm"  LLM judge model
    double probability;                 //  "p"   LLM judge probability, NaN absent
    uint32_t latency_us;                //  "lat" time to decide
    sl_str_t part;                      //  "part" the part of the request a verdict judged; absent:
                                        //  the verdict is about a tool call of the response
    sl_str_t approver;                  //  "appr" who decided an approval
    uint8_t mode;                       //  "mode" sl_mode_t: SHADOW for a would-be verdict
    sl_str_t digest;                    //  "dig" what an approval is bound to: hex SHA-256 of the tool,
                                        //  its canonical arguments and the policy version
    int64_t expires;                    //  "exp" when an approval expires, Unix ms
    sl_str_t stream;                    //  "ssid" the stream an approval holds, 32 hex digits

    //  Who sends (heartbeats, reports, records), credit, counts
    uint32_t credit;                    //  "cr"  credit granted
    sl_str_t instance;                  //  "inst" sender instance name
    uint64_t incarnation;               //  "inc" sender incarnation
    uint64_t count;                     //  "n"   a count: records lost, reload failures
} sl_msg_t;

//  --------------------------------------------------------------------------
//  The fields of the wire, and which of them each type carries.
//
//  SL_MSG_FIELDS lists every field once: wire key (also its name in the
//  tables below), wire type, member of sl_msg_t, and when the encoder
//  writes it (ALWAYS: the envelope; NONZERO: when not zero, NULL or NaN;
//  NONNEG: "i", when >= 0). Fields are written in this order.
#define SL_MSG_FIELDS(X) \
    X (act,   U8,    action,           NONZERO) \
    X (appr,  STR,   approver,         NONZERO) \
    X (att,   BIN,   attempts,         NONZERO) \
    X (auth,  STR,   auth,             NONZERO) \
    X (bk,    U8,    block,            NONZERO) \
    X (body,  BIN,   body,             NONZERO) \
    X (cd,    U8,    client_dialect,   NONZERO) \
    X (chk,   U8,    check,            NONZERO) \
    X (cid,   STR,   call_id,          NONZERO) \
    X (code,  STR,   code,             NONZERO) \
    X (cr,    U32,   credit,           NONZERO) \
    X (dig,   STR,   digest,           NONZERO) \
    X (ct,    STR,   content_type,     NONZERO) \
    X (ep,    U32,   epoch,            ALWAYS)  \
    X (exp,   I64,   expires,          NONZERO) \
    X (f,     U32,   flags,            NONZERO) \
    X (fin,   U8,    finish,           NONZERO) \
    X (finr,  STR,   finish_raw,       NONZERO) \
    X (fo,    BIN,   failover,         NONZERO) \
    X (fwd,   STR,   passthrough,      NONZERO) \
    X (hdrs,  BIN,   headers,          NONZERO) \
    X (hist,  BIN,   history,          NONZERO) \
    X (i,     I32,   index,            NONNEG)  \
    X (id,    STR,   id,               NONZERO) \
    X (inc,   U64,   incarnation,      NONZERO) \
    X (inl,   BIN,   inline_answer,    NONZERO) \
    X (inst,  STR,   instance,         NONZERO) \
    X (jm,    STR,   judge_model,      NONZERO) \
    X (k,     U8,    kind,             NONZERO) \
    X (kid,   STR,   key_id,           NONZERO) \
    X (lat,   U32,   latency_us,       NONZERO) \
    X (lu,    STR,   last_user,        NONZERO) \
    X (mcp,   STR,   mcp,              NONZERO) \
    X (mode,  U8,    mode,             NONZERO) \
    X (model, STR,   model,            NONZERO) \
    X (msg,   STR,   message,          NONZERO) \
    X (n,     U64,   count,            NONZERO) \
    X (name,  STR,   name,             NONZERO) \
    X (p,     F64,   probability,      NONZERO) \
    X (part,  STR,   part,             NONZERO) \
    X (pn,    STR,   policy_name,      NONZERO) \
    X (pol,   STR,   policy,           NONZERO) \
    X (prov,  STR,   provider,         NONZERO) \
    X (rt,    STR,   reply_to,         NONZERO) \
    X (rule,  STR,   rule,             NONZERO) \
    X (rqb,   U64,   request_bytes,    NONZERO) \
    X (rqt,   I64,   received_us,      NONZERO) \
    X (rv,    BIN,   req_verdicts,     NONZERO) \
    X (seq,   U64,   seq,              ALWAYS)  \
    X (sid,   SID,   sid,              NONZERO) \
    X (sig,   STR,   sig,              NONZERO) \
    X (spn,   STR,   shadow_policy_name, NONZERO) \
    X (ssid,  STR,   stream,           NONZERO) \
    X (st,    I32,   status,           NONZERO) \
    X (stops, STR,   stop_seq,         NONZERO) \
    X (t,     U8,    type,             ALWAYS)  \
    X (tdig,  BIN,   tool_digests,     NONZERO) \
    X (team,  STR,   team,             NONZERO) \
    X (tc,    STR,   trace,            NONZERO) \
    X (tcs,   STR,   trace_state,      NONZERO) \
    X (text,  STR,   text,             NONZERO) \
    X (tnt,   BIN,   taint,            NONZERO) \
    X (tools, BIN,   tools,            NONZERO) \
    X (ts,    I64,   ts,               NONZERO) \
    X (u,     USAGE, usage,            NONZERO) \
    X (ud,    U8,    upstream_dialect, NONZERO) \
    X (user,  STR,   user,             NONZERO) \
    X (v,     U32,   version,          ALWAYS)  \
    X (why,   STR,   reason,           NONZERO)

//  A field by its wire key: SL_FIELD_inst is "inst".
typedef enum {
#define SL_MSG_FIELD_ID(key, wire, member, when) SL_FIELD_##key,
    SL_MSG_FIELDS (SL_MSG_FIELD_ID)
#undef SL_MSG_FIELD_ID
    SL_FIELD_COUNT
} sl_msg_field_t;

//  Every type, as sl_msg_type_t names it and as logs and tap topics do.
//  Each has its SL_FIELDS_<TYPE> below; the codec does not build without
//  one, nor with a field the list above does not hold.
#define SL_MSG_TYPES(X) \
    X (HB, hb)              X (REQ, req)            X (ACK, ack) \
    X (CANCEL, cancel)      X (START, start)        X (DELTA, delta) \
    X (BLOCK, block)        X (VERDICT, verdict)    X (FRAME, frame) \
    X (ERROR, error)        X (END, end)            X (LOST, lost) \
    X (POLICY, policy)      X (REC, rec)            X (RACK, rack) \
    X (GAP, gap)            X (APPROVAL, approval)  X (CTL, ctl) \
    X (STEP, step)

//  The body fields each type carries (STYLE 20: a message states its
//  fields): MUST, every message of the type has it; MAY, it may. The
//  envelope (v, t, sid, ep, seq) is every type's and is not listed. A
//  message with a field of the list above that its type does not carry,
//  or without one it must, is malformed: sl_codec_decode refuses it, and
//  sl_msg_encode asserts, since we never send what we refuse. Keys no
//  type has are ignored (forward compatibility). PROTOCOL.md's tables
//  say the same; tests/unit/proto/test_sl_msg_protocol.c holds them to it.
#define SL_FIELDS_HB(MUST, MAY) \
    MUST (inst) MUST (inc) \
    MAY (cr) MAY (f)
#define SL_FIELDS_REQ(MUST, MAY) \
    MUST (cd) MUST (ud) MUST (model) MUST (rt) \
    MAY (body) MAY (f) MAY (prov) MAY (tools) MAY (hdrs) MAY (lu) \
    MAY (kid) MAY (team) MAY (user) MAY (pol) MAY (pn) MAY (spn) \
    MAY (rv) MAY (hist) MAY (tdig) MAY (tnt) \
    MAY (tc) MAY (tcs) MAY (rqt) MAY (mcp) \
    MAY (auth) MAY (fwd) MAY (inl) MAY (fo) \
    MAY (code) MAY (st) MAY (msg)
#define SL_FIELDS_ACK(MUST, MAY) \
    MAY (ts) MAY (f)
#define SL_FIELDS_CANCEL(MUST, MAY) \
    MAY (code) MAY (msg)
#define SL_FIELDS_START(MUST, MAY) \
    MAY (cd) MAY (ud) MAY (model) MAY (rt) MAY (f) MAY (prov) \
    MAY (tools) MAY (hdrs) MAY (lu) \
    MAY (kid) MAY (team) MAY (user) MAY (pol) MAY (pn) MAY (spn) MAY (rqb) \
    MAY (rv) MAY (hist) MAY (tdig) MAY (tnt) \
    MAY (tc) MAY (tcs) MAY (rqt) MAY (mcp) MAY (att)
#define SL_FIELDS_DELTA(MUST, MAY) \
    MUST (k) \
    MAY (i) MAY (id) MAY (cid) MAY (name) MAY (text) MAY (sig) MAY (body) MAY (f) \
    MAY (model) MAY (ts) MAY (finr) MAY (stops) MAY (u)
#define SL_FIELDS_BLOCK(MUST, MAY) \
    MUST (k) \
    MAY (i) MAY (bk) MAY (id) MAY (cid) MAY (name) MAY (text) MAY (sig) MAY (body) \
    MAY (f) MAY (code) MAY (model) MAY (ts) MAY (fin) MAY (finr) MAY (stops) MAY (u)
#define SL_FIELDS_VERDICT(MUST, MAY) \
    MUST (act) \
    MAY (i) MAY (id) MAY (name) MAY (chk) MAY (rule) MAY (why) MAY (jm) MAY (p) \
    MAY (lat) MAY (text) MAY (part) MAY (team) MAY (user) MAY (appr) MAY (mode)
#define SL_FIELDS_FRAME(MUST, MAY) \
    MUST (body) \
    MAY (f) MAY (st) MAY (ct) MAY (u)
#define SL_FIELDS_ERROR(MUST, MAY) \
    MUST (code) \
    MAY (msg) MAY (st) MAY (f) MAY (u)
#define SL_FIELDS_END(MUST, MAY)
#define SL_FIELDS_LOST(MUST, MAY)
#define SL_FIELDS_POLICY(MUST, MAY) \
    MUST (inst) MUST (pol) \
    MAY (inc) MAY (pn) MAY (name) MAY (text) MAY (ts) MAY (n) MAY (msg)
#define SL_FIELDS_REC(MUST, MAY) \
    MUST (inst) MUST (inc) MUST (body) \
    MAY (ts) MAY (k)
#define SL_FIELDS_RACK(MUST, MAY) \
    MUST (k) \
    MAY (inc)
#define SL_FIELDS_GAP(MUST, MAY) \
    MUST (n) \
    MAY (ts) MAY (body)
#define SL_FIELDS_APPROVAL(MUST, MAY) \
    MUST (code) MUST (ssid) MUST (dig) \
    MAY (i) MAY (name) MAY (text) MAY (rule) MAY (msg) MAY (pol) MAY (pn) \
    MAY (kid) MAY (team) MAY (user) MAY (model) MAY (lu) MAY (ts) MAY (exp) \
    MAY (appr) MAY (why) MAY (inst) MAY (inc) MAY (body)
#define SL_FIELDS_CTL(MUST, MAY) \
    MUST (code) \
    MAY (id) MAY (body) MAY (st) MAY (msg) MAY (inst)
#define SL_FIELDS_STEP(MUST, MAY) \
    MUST (prov) MUST (ud) MUST (model) \
    MAY (body)

//  Where a stage library puts its output: called once per message produced.
//  msg and its strings are borrowed for the duration of the call.
typedef void (sl_emit_fn) (void *arg, const sl_msg_t *msg);

//  Reset a message to "all absent" with the given type and current version.
void sl_msg_init (sl_msg_t *self, sl_msg_type_t type);
//  Copy the envelope (sid, epoch) of another message.
void sl_msg_set_stream (sl_msg_t *self, const sl_msg_t *from);
//  Whether a stream message takes a sequence number of its own. Time-driven
//  messages (a keepalive block, a KEEPALIVE frame) carry the number of the
//  message that will follow them.
bool sl_msg_numbered (const sl_msg_t *self);
//  Append the encoding of self to out. self must be a message its type's
//  table allows (SL_FIELDS_<TYPE>): anything else is a bug of ours, and
//  asserts.
void sl_msg_encode (const sl_msg_t *self, sl_buf_t *out);
//  Whether a message of this type carries the field (MUST or MAY), and
//  whether it must. False for an unknown type and for the envelope.
bool sl_msg_carries (int type, sl_msg_field_t field);
bool sl_msg_requires (int type, sl_msg_field_t field);
//  A deep copy owning its strings (one allocation); free with free().
sl_msg_t *sl_msg_dup (const sl_msg_t *self);

//  Decoder state; reusable across frames.
typedef struct _sl_codec_t sl_codec_t;

sl_codec_t *sl_codec_new (void);
void sl_codec_destroy (sl_codec_t **self_p);
//  Decode the message at data + *offset into msg and advance *offset.
//  Returns 0 on success, -1 when *offset == size (nothing left), -2 when the
//  message is malformed (truncated, wrong field type, unknown type or kind,
//  unsupported version, oversized, a field its type does not carry, one it
//  must carry missing). After -2 the rest of the frame is not trusted:
//  *offset is set to size. msg borrows from data and stays valid until
//  data is released or the next call on this codec.
int sl_codec_decode (sl_codec_t *self, const void *data, size_t size,
                     size_t *offset, sl_msg_t *msg);
//  Why the last decode failed; valid until the next decode on this codec.
const char *sl_codec_error (sl_codec_t *self);

//  Names, for logs, taps and JSON output. Unknown values give "?".
const char *sl_msg_type_name (int type);
const char *sl_delta_kind_name (int kind);
const char *sl_block_event_name (int kind);
const char *sl_block_kind_name (int kind);
const char *sl_finish_name (int finish);
const char *sl_action_name (int action);
const char *sl_check_name (int check);
const char *sl_cut_name (int cut);
const char *sl_mode_name (int mode);
//  Reverse lookups; 0 when unknown.
int sl_action_parse (const char *name);
int sl_cut_parse (sl_str_t name);
//  The cut an ERROR with this code makes of the block it closes: SIZE for
//  the bounds (stream_too_large, upstream_event_too_large), EOF for an
//  upstream that stopped short (upstream_incomplete,
//  upstream_connection_lost), ERROR for any other.
sl_cut_t sl_cut_for_error (sl_str_t code);

//  Fill sid with random bytes.
void sl_sid_new (uint8_t sid [SL_SID_SIZE]);
//  Write sid as 32 lowercase hex digits and a NUL.
void sl_sid_hex (const uint8_t sid [SL_SID_SIZE], char out [SL_SID_HEX_SIZE]);
//  Parse 32 hex digits; 0 ok, -1 malformed.
int sl_sid_parse (const char *hex, uint8_t sid [SL_SID_SIZE]);

#endif
