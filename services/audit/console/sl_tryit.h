/*  sl_tryit.h - the console's "try it": a policy over a stream, offline.

    Paste a captured upstream stream (or pick a recorded one) and a
    policy; see the verdicts and what the client would receive. It runs
    the replay library (common/stages/sl_replay.h: the ingest's decoder,
    the aggregator, the judge, the emitter, in one process), not a second
    implementation: twice, once for the blocks and verdicts, once for the
    client's bytes (in the capture's dialect, or another client's). As in sluice-replay, an LLM
    judge is never asked: its rule's on_error action is taken and the
    verdict says so.

    A recorded stream becomes a capture again (sl_tryit_capture): the
    store keeps what the client received and, for every judged call, the
    arguments the judge saw, so the response as the model sent it is
    written back as an OpenAI Chat Completions stream (JSONL, one chunk a
    line): its text, thinking and refusals, each judged call with its
    original arguments (a call the store cut at its bound stays cut, and
    is judged as cut off), the finish and the usage; notices the judge
    wrote are left out. The request's model, tool definitions and last user
    message come from the store too, so schema rules apply.

    Input (JSON): {"capture": text, "dialect": a dialect's name ("openai",
    "anthropic", ...), "client": the dialect of the client to render
    for (the capture's by default; another is a translation, as the
    gateway makes it), "policy": YAML text, "model", "tools" (JSON array
    [{"name","schema"}] as text), "last_user"}. Output (JSON):
    {"verdicts":[{index,id,name,action,check,rule,reason,judge_model}...],
    "blocks":[...one object per block...], "finish":{...}, "client": the
    bytes a client would receive, "error": why it could not run, if so}.
*/
#ifndef SL_TRYIT_H
#define SL_TRYIT_H

#include "common/base/sl_buf.h"
#include "services/audit/store/sl_store.h"

#define SL_TRYIT_MAX_CAPTURE (8u << 20)     //  bytes of a capture tried at most

//  Run a request body (JSON, above); the answer is appended to out. 0 ran
//  (the answer may still hold a policy or capture error), -1 the request
//  itself is not usable (out holds {"error":...}).
int sl_tryit_run (sl_str_t request, sl_buf_t *out);
//  The capture of a recorded stream, as {"dialect":"openai","capture":...,
//  "model":...,"tools":...,"last_user":...,"policy":..the id it ran..}.
//  0 ok, 1 no such stream, -1 the store failed.
int sl_tryit_capture (sl_store_t *store, const char *sid, sl_buf_t *out);

#endif
