/*  sl_taint.h - tainted conversations: which tool results sluice does not
    trust, and which of them a request's conversation holds.

    A policy's trust section (trust: in docs/policy.md) names the tools
    whose results can carry someone else's words (a web page, an email,
    an issue comment): by name as the client writes it or its MCP tool
    part (sl_tooldef.h), by MCP server, and what a result whose tool the
    request does not name is. A conversation that holds a result of an
    untrusted tool is tainted from that message on; a call rule tests it
    with tainted: and tainted_by: (sl_policy.h).

    No state anywhere: the taint is read from the request's own history
    where the request is (the gateway, before the upstream call) and goes
    with the stream to the judge (START tnt), like history conditions. A
    result the request policy redacted or replaced (block_result) still
    taints: its tool's output was in the conversation the model read, and
    the model may have acted on it already; only its text is gone.

    The taint, JSON: [{"tool":"web_fetch","part":"messages[3].parts[0]"}],
    each untrusted tool once, at its first result, oldest first, at most
    SL_TAINT_MAX_TOOLS tools ("tool" empty: a result whose tool is not
    named); [] when the conversation holds none. Pure functions.
*/
#ifndef SL_TAINT_H
#define SL_TAINT_H

#include <stdbool.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_req.h"
#include "common/policy/sl_policy.h"

#define SL_TAINT_MAX_TOOLS 64           //  tainting tools named in one request's taint

//  True when some call rule has a taint condition (the gateway then
//  computes the taint and sends it along).
bool sl_policy_uses_taint (sl_policy_t *self);
//  Is the tool named name (as a client wrote it; absent: a result whose
//  tool the request does not name) untrusted by some trust section?
bool sl_taint_untrusted (sl_policy_t *self, sl_str_t name);
//  The tool a result part of req came from: its name, or the name of the
//  call it answers; a provider's own tool's result by its type
//  ("web_fetch_tool_result"). Absent when the request does not say.
sl_str_t sl_taint_result_tool (const sl_req_t *req, const sl_part_t *part);
//  The taint of req under the policy (see above), appended to out.
void sl_taint_scan (sl_policy_t *self, const sl_req_t *req, sl_buf_t *out);

#endif
