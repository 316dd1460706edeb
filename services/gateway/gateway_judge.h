/*  gateway_judge.h - the request policy's turn, part of the gateway's
    core (gateway_core.c asks it; nothing else does).

    Between a stream's admission and its job: the caller's policy (the
    file its key or team names in the keys file, a policy set following
    the keys file; else --policy). When it has request rules, they run on
    the normalized request (sl_reqjudge), LLM judges of tool results over
    curl multi in the same loop (sl_llm_client, answers kept by content
    in sl_llm_cache), and the request is decided only once every part is.
    A caller whose file is not loaded here is refused (500 api_error, a
    verdict with check error): the request cannot be judged, and is never
    judged under the default.

    What was decided goes to the stream's done, with everything the job
    carries of the policy: its verdicts, the id of the version it was
    judged under, and the policy annotations (sl_annotations.h). Every
    request verdict is logged and counted here
    (sluice_request_verdicts_total), the admission's refusals too
    (gateway_judge_refused).
*/
#ifndef GATEWAY_JUDGE_H
#define GATEWAY_JUDGE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_req.h"
#include "common/identity/sl_keyring.h"
#include "common/policy/sl_annotations.h"
#include "common/policy/sl_policy.h"
#include "common/service/sl_service.h"
#include "services/gateway/sl_admission.h"

typedef struct _gateway_judge_t gateway_judge_t;

//  What became of a request, borrowed for the call of done.
typedef struct {
    const char *code;                   //  refused: its error type, NULL when it goes upstream
    int status;                         //  the refusal's HTTP status
    const char *message;                //  and what the client reads
    bool unjudged;                      //  refused before any rule ran (its policy is not here): nothing spent
    bool changed;                       //  a decision changed the request: its upstream body is made again
    const char *policy;                 //  the version's id the job names (the judge answers under it), or NULL
    sl_str_t verdicts;                  //  the request verdicts as they travel (REQ rv), maybe empty
    const sl_annotations_t *annotations;    //  REQ hist, tdig, tnt (never NULL)
} gateway_judged_t;

typedef void (gateway_judged_fn) (void *arg, const gateway_judged_t *judged);
//  LLM judges answered from the reactor: whatever their answers sent
//  may be flushed now.
typedef void (gateway_judge_after_fn) (void *arg);

//  NULL when the default policy does not load (logged): the gateway must
//  not start.
gateway_judge_t *gateway_judge_new (sl_service_t *service, const char *policy_path, long watch_ms,
                                    gateway_judge_after_fn *after, void *arg);
void gateway_judge_destroy (gateway_judge_t **self_p);
//  The policy set follows the keyring the admission runs (NULL: none):
//  when it is a new one, the files it names are loaded and those it no
//  longer names let go. Cheap when it is the same.
void gateway_judge_keys (gateway_judge_t *self, sl_keyring_t *keyring);
//  The policy of file (as a caller's identity names it, NULL: the
//  default), or NULL when it is not loaded here. Borrowed.
sl_policy_t *gateway_judge_policy (gateway_judge_t *self, const char *file);

//  Judge the request of stream sid (the bytes are copied) for caller,
//  started at started_us: done is called exactly once, maybe before this
//  returns, unless gateway_judge_cancel comes first. req and headers (a
//  JSON object of the request's headers, for header rules) are borrowed
//  and must live until then; the policy's decisions change req (see
//  sl_reqjudge.h). caller is borrowed as long.
void gateway_judge_start (gateway_judge_t *self, const uint8_t *sid, sl_req_t *req, sl_str_t headers,
                          const sl_caller_t *caller, int64_t started_us, gateway_judged_fn *done, void *arg);
//  The stream sid is gone: stop its LLM asks; its done is not called.
void gateway_judge_cancel (gateway_judge_t *self, const uint8_t *sid);
//  A request refused before its judging (by the admission): its verdict
//  (part "request", block, check, rule, reason) logged, counted and
//  appended to verdicts as it travels.
void gateway_judge_refused (gateway_judge_t *self, const uint8_t *sid, const sl_caller_t *caller, int64_t started_us,
                            int check, const char *rule, const char *reason, sl_buf_t *verdicts);

#endif
