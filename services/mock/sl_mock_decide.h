/*  sl_mock_decide.h - the mock upstream playing a decision service in
    Open Policy Agent's shape, for a policy rule's decide section.

    A POST under /v1/data/ (OPA's data API) is answered by the scenario
    its last path segment names, with an optional delay suffix in
    milliseconds (/v1/data/sluice/deny-250):

      allow       {"result": {"allow": true, "reason": ...}}
      deny        {"result": {"allow": false, "reason": "the mock service denies <tool> (rule <rule>,
                  team <team>)"}}: what the service was told, back in its reason
      rewrite     allow, each string argument with " (rewritten)" after it
      rewrite-bad allow, each string argument made the number 42 (against a string schema)
      cached      allow, with Cache-Control: max-age=60
      slow        allow, after 3 s
      garbage     200 with an HTML page
      noresult    {} with no result (OPA's answer for an undefined document)
      badallow    {"result": {"allow": "yes"}}
      error       HTTP 500

    The core (sl_mock_decide_answer) is pure: path and body in, the reply
    out; sl_mock_judge's server part sends it after its delay.
*/
#ifndef SL_MOCK_DECIDE_H
#define SL_MOCK_DECIDE_H

#include <stdbool.h>

#include "common/base/sl_str.h"
#include "services/mock/sl_mock_judge.h"

#define SL_MOCK_DECIDE_PREFIX "/v1/data/"
#define SL_MOCK_DECIDE_MAX_AGE "max-age=60"     //  the cached scenario's Cache-Control

//  True when a request is for the decision service (its path).
bool sl_mock_decide_wants (const char *path);
//  The reply to a decision request (an unknown scenario gets a 404).
void sl_mock_decide_answer (const char *path, sl_str_t body, sl_mock_judge_reply_t *out);

#endif
