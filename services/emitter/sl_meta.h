/*  sl_meta.h - what a metadata-only tap may see of an event.

    The emitter publishes every event twice when both kinds of tap listen:
    whole on its PUB socket for taps with access "full", and through this
    filter on its metadata PUB socket, which every tap key may reach. The
    filter is a whitelist: a field not named here never passes, so a field
    added to the protocol later stays out until someone decides it is
    metadata.

    Kept: the envelope (type, stream id, epoch, sequence); a start's
    dialects, model, provider, flags, who is calling (client key id, never
    the key; team; user), policy id, the policy file it runs under, the
    size of its request body and the names of its tools (not their
    descriptions or schemas); a
    policy report's judge, policy id, file name, load time and reload
    failures (not the policy's text); a block event's kind, block kind, index, ids,
    tool name, flags, finish reason (normalized and raw), usage, time; a
    verdict's tool, action, check, rule, judge model, probability,
    latency, team and user (not its reason, which may quote the
    arguments); an error's
    code, status and flags (not its message).

    Never: text, thinking, signatures, tool arguments (also those a verdict
    carries), tool results, bodies, policy texts, reload errors,
    citations, the last user message, request headers, stop sequences,
    reasons and error messages.
*/
#ifndef SL_META_H
#define SL_META_H

#include "common/base/sl_buf.h"
#include "proto/sl_msg.h"

//  Fill out with what a metadata-only tap may see of in. out may point
//  into in and into scratch (a start's tool names), so it lives as long as
//  both; scratch is reset.
void sl_meta_strip (const sl_msg_t *in, sl_msg_t *out, sl_buf_t *scratch);

#endif
