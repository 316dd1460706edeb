/*  sl_bedrock.h - what the files of the Amazon Bedrock modules export to
    their tables: Converse (sl_bedrock.c) and Claude's own Messages body
    through InvokeModelWithResponseStream (sl_bedrock_anthropic.c). Both are
    upstream-only: no client calls sluice in them. */
#ifndef SL_BEDROCK_H
#define SL_BEDROCK_H

#include "common/dialects/sl_dialect.h"

//  A toolUseId as Converse takes them: [A-Za-z0-9_-]{1,64}
#define SL_BEDROCK_ID_MAX 64

//  Converse: the request renderer (sl_bedrock_request.c) and the decoder
//  of ConverseStream's events (sl_bedrock_decode.c).
int sl_bedrock_render_request (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out);
extern const sl_decoder_vt_t sl_bedrock_decoder;

//  Claude on Bedrock: an Anthropic Messages body patched for
//  InvokeModelWithResponseStream (sl_bedrock_anthropic_request.c), and the
//  decoder of its chunk frames around the Anthropic decoder
//  (sl_bedrock_anthropic_decode.c).
int sl_bedrock_anthropic_forward (sl_str_t body, const sl_req_t *req, sl_buf_t *out);
int sl_bedrock_anthropic_render_request (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out);
//  The client's anthropic-beta header (in its passthrough lines) as the
//  body's "anthropic_beta" array (sl_dialect_t.fold).
int sl_bedrock_anthropic_fold (sl_str_t body, sl_str_t passthrough, sl_buf_t *out);
//  Its table (sl_bedrock.c): the beta features Bedrock takes.
extern const sl_dialect_t sl_bedrock_anthropic_dialect;
extern const sl_decoder_vt_t sl_bedrock_anthropic_decoder;

//  A tool id as Converse takes it, written to out (at least
//  SL_BEDROCK_ID_MAX + 1 bytes): characters outside [A-Za-z0-9_-]
//  become '_', and a longer id keeps its start and ends with a digest of
//  the whole, so that distinct ids stay distinct and a call and its
//  result map alike.
void sl_bedrock_tool_id (sl_str_t id, char *out);

//  The HTTP status of an exception an AWS event stream reports
//  (throttlingException 429, ...), 502 for one it does not know.
int sl_bedrock_exception_status (sl_str_t type);

#endif
