/*  sl_genai.c - stream and guardrail spans from judged events (see
    sl_genai.h; the attribute names are listed in docs/telemetry.md).
*/
#include "common/stages/sl_genai.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
#include "common/base/sl_sidmap.h"
#include "common/dialects/sl_dialect.h"
#include "common/mcp/sl_mcp_leg.h"
#include "common/otel/sl_trace.h"

#define S_OPERATION "chat"              //  gen_ai.operation.name of a stream
#define S_GUARDRAIL "apply_guardrail"   //  and of a verdict (the guardrail proposal's)
#define S_MCP_OPERATION "execute_tool"   //  gen_ai.operation.name of an MCP request's stream
#define S_GUARDIAN "sluice"             //  gen_ai.guardian.name
#define S_DEFAULT_RULE "default"        //  a verdict without a rule: the policy's default
#define S_DEFAULT_POLICY "default"      //  a stream without a policy file of its own
#define S_NS_PER_US 1000
#define S_US_PER_S 1e6

//  What a stream's span needs, gathered from its events until its END.
typedef struct {
    uint8_t sid [SL_SID_SIZE];
    uint32_t epoch;
    sl_trace_ctx_t ctx;
    char *tracestate;                   //  the client's, NULL: none
    int64_t start_us;                   //  rqt, else the START's arrival
    int64_t first_chunk_us;             //  the first content block's arrival, 0: none yet
    int64_t last_us;                    //  the last event's arrival (expiry)
    uint64_t verdict_next;              //  verdicts of a seq below this were reported
    uint8_t client_dialect;
    uint8_t upstream_dialect;
    bool streaming;                     //  the client asked for a stream
    char *request_model;
    char *route;                        //  "prov": the provider route
    char *policy;                       //  "pol": the policy's id
    char *policy_name;                  //  "pn": its file, NULL: the default
    char *team;
    char *user;
    char *key_id;
    char *last_user;                    //  captured content only
    char *mcp;                          //  "mcp": the MCP request it stands for, NULL: none
    //  The response side, begun again when the stream is resent
    char *response_model;
    char *response_id;
    uint8_t finish;
    bool has_usage;
    sl_usage_t usage;
    char *error_type;
    char *error_message;
} s_stream_t;

struct _sl_genai_t {
    sl_genai_config_t config;
    sl_genai_emit_fn *emit;
    void *arg;
    sl_sidmap_t *streams;               //  sid -> s_stream_t
    sl_genai_stats_t stats;
    sl_buf_t scratch;
};

static char *
s_dup (sl_str_t s)
{
    return s.ptr ? sl_xstrndup (s.ptr, s.len) : NULL;
}

//  Replace *field with s when s is present.
static void
s_set (char **field, sl_str_t s)
{
    if (!s.ptr)
        return;
    free (*field);
    *field = s_dup (s);
}

static void
s_response_reset (s_stream_t *st)
{
    free (st->response_model);
    free (st->response_id);
    free (st->error_type);
    free (st->error_message);
    st->response_model = st->response_id = st->error_type = st->error_message = NULL;
    st->finish = SL_FIN_NONE;
    st->has_usage = false;
    st->first_chunk_us = 0;
}

static void
s_stream_destroy (void *value)
{
    s_stream_t *st = value;
    s_response_reset (st);
    free (st->tracestate);
    free (st->request_model);
    free (st->route);
    free (st->policy);
    free (st->policy_name);
    free (st->mcp);
    free (st->team);
    free (st->user);
    free (st->key_id);
    free (st->last_user);
    free (st);
}

sl_genai_t *
sl_genai_new (const sl_genai_config_t *config, sl_genai_emit_fn *emit, void *arg)
{
    sl_genai_t *self = sl_xcalloc (1, sizeof *self);
    self->config = *config;
    if (!self->config.max_streams)
        self->config.max_streams = SL_GENAI_STREAMS_DEFAULT;
    if (!self->config.expiry_us)
        self->config.expiry_us = SL_GENAI_EXPIRY_US_DEFAULT;
    self->emit = emit;
    self->arg = arg;
    self->streams = sl_sidmap_new ();
    return self;
}

void
sl_genai_destroy (sl_genai_t **self_p)
{
    sl_genai_t *self = *self_p;
    if (!self)
        return;
    size_t cursor = 0;
    const uint8_t *sid;
    s_stream_t *st;
    while ((st = sl_sidmap_next (self->streams, &cursor, &sid)))
        s_stream_destroy (st);
    sl_sidmap_destroy (&self->streams);
    sl_buf_free (&self->scratch);
    free (self);
    *self_p = NULL;
}

int
sl_genai_capture_env (const char *value)
{
    if (!value || !*value || strcmp (value, "0") == 0 || strcasecmp (value, "false") == 0)
        return 0;
    if (strcmp (value, "1") == 0 || strcasecmp (value, "true") == 0)
        return 1;
    return -1;
}

//  --------------------------------------------------------------------------
//  The stream's span

static void
s_put_cstr (sl_span_t *span, const char *key, const char *value)
{
    if (value && *value)
        sl_span_set_str (span, key, sl_str (value));
}

static void
s_put_tokens (sl_span_t *span, const char *key, int64_t value)
{
    if (value >= 0)
        sl_span_set_int (span, key, value);
}

//  gen_ai.provider.name: the conventions' name of the upstream's API.
static const char *
s_provider_name (int dialect)
{
    const sl_dialect_t *d = sl_dialect_get (dialect);
    if (!d)
        return NULL;
    return d->genai_provider ? d->genai_provider : sl_dialect_vendor (d);
}

//  An MCP request's stream (the gateway's leg for it): the MCP
//  conventions' method, the tool it names, the server ("prov" is
//  "mcp:<server>"), and an operation of executing a tool.
static void
s_put_mcp (sl_span_t *span, const s_stream_t *st)
{
    sl_span_set_str (span, "gen_ai.operation.name", SL_STR_LIT (S_MCP_OPERATION));
    const char *space = strchr (st->mcp, ' ');
    size_t method = space ? (size_t) (space - st->mcp) : strlen (st->mcp);
    sl_span_set_str (span, "mcp.method.name", sl_str_n (st->mcp, method));
    if (space) {
        const char *tool = space + 1;
        const char *end = strchr (tool, ' ');
        sl_span_set_str (span, "gen_ai.tool.name", sl_str_n (tool, end ? (size_t) (end - tool) : strlen (tool)));
    }
    if (st->route && strncmp (st->route, SL_MCP_PROVIDER_PREFIX, strlen (SL_MCP_PROVIDER_PREFIX)) == 0)
        s_put_cstr (span, "sluice.mcp.server", st->route + strlen (SL_MCP_PROVIDER_PREFIX));
}

static void
s_emit_stream (sl_genai_t *self, s_stream_t *st, int64_t end_us)
{
    uint8_t id [SL_SPAN_ID_SIZE];
    sl_trace_stream_span (st->sid, id);
    sl_buf_reset (&self->scratch);
    if (st->mcp)
        sl_buf_puts (&self->scratch, st->mcp);  //  MCP's own span name: "tools/call {tool}"
    else
    if (st->request_model && *st->request_model)
        sl_buf_printf (&self->scratch, S_OPERATION " %s", st->request_model);
    else
        sl_buf_puts (&self->scratch, S_OPERATION);
    sl_span_t *span = sl_span_new (sl_buf_cstr (&self->scratch), st->ctx.trace, id,
                                   sl_trace_is_root (&st->ctx) ? NULL : st->ctx.parent, SL_SPAN_CLIENT,
                                   (uint64_t) st->start_us * S_NS_PER_US);
    if (st->tracestate)
        sl_span_set_tracestate (span, sl_str (st->tracestate));
    if (st->mcp)
        s_put_mcp (span, st);
    else
        sl_span_set_str (span, "gen_ai.operation.name", SL_STR_LIT (S_OPERATION));
    //  An MCP request's leg had no model provider: its "upstream" was the
    //  gateway's inline answer.
    if (!st->mcp)
        s_put_cstr (span, "gen_ai.provider.name", s_provider_name (st->upstream_dialect));
    s_put_cstr (span, "gen_ai.request.model", st->request_model);
    sl_span_set_bool (span, "gen_ai.request.stream", st->streaming);
    s_put_cstr (span, "gen_ai.response.model", st->response_model);
    s_put_cstr (span, "gen_ai.response.id", st->response_id);
    if (st->finish != SL_FIN_NONE)
        sl_span_add_str (span, "gen_ai.response.finish_reasons", sl_str (sl_finish_name (st->finish)));
    if (st->has_usage) {
        s_put_tokens (span, "gen_ai.usage.input_tokens", st->usage.input);
        s_put_tokens (span, "gen_ai.usage.output_tokens", st->usage.output);
        s_put_tokens (span, "gen_ai.usage.cache_read.input_tokens", st->usage.cache_read);
        s_put_tokens (span, "gen_ai.usage.cache_creation.input_tokens", st->usage.cache_write);
        s_put_tokens (span, "gen_ai.usage.reasoning.output_tokens", st->usage.reasoning);
    }
    if (st->first_chunk_us)
        sl_span_set_double (span, "gen_ai.response.time_to_first_chunk",
                            (double) (st->first_chunk_us - st->start_us) / S_US_PER_S);
    if (st->error_type) {
        sl_span_set_str (span, "error.type", sl_str (st->error_type));
        sl_span_set_error (span, sl_str (st->error_message ? st->error_message : st->error_type));
    }
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (st->sid, hex);
    sl_span_set_str (span, "sluice.stream.id", sl_str (hex));
    s_put_cstr (span, "sluice.client.dialect", sl_dialect_name (st->client_dialect));
    s_put_cstr (span, "sluice.upstream.dialect", sl_dialect_name (st->upstream_dialect));
    s_put_cstr (span, "sluice.provider.route", st->route);
    s_put_cstr (span, "sluice.policy.id", st->policy);
    s_put_cstr (span, "sluice.policy.name", st->policy_name ? st->policy_name : S_DEFAULT_POLICY);
    s_put_cstr (span, "sluice.key.id", st->key_id);
    s_put_cstr (span, "sluice.team", st->team);
    s_put_cstr (span, "user.id", st->user);
    if (self->config.capture_content && st->last_user) {
        //  The last user message as it went upstream (the request
        //  policy's redactions applied), in the conventions' shape.
        sl_buf_reset (&self->scratch);
        sl_buf_puts (&self->scratch, "[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"content\":");
        sl_json_put_str (&self->scratch, st->last_user, strlen (st->last_user));
        sl_buf_puts (&self->scratch, "}]}]");
        sl_span_set_str (span, "gen_ai.input.messages", sl_buf_str (&self->scratch));
    }
    sl_span_end (span, (uint64_t) end_us * S_NS_PER_US);
    self->stats.spans++;
    self->emit (self->arg, &span);
    sl_span_destroy (&span);            //  the callee's by contract; never left behind
}

//  --------------------------------------------------------------------------
//  A verdict's span

//  gen_ai.security.decision.type: what sluice did to the target.
static const char *
s_decision (int action)
{
    switch (action) {
        case SL_ACT_ALLOW:
            return "allow";
        case SL_ACT_REWRITE:
        case SL_ACT_REDACT:
            return "modify";
        default:
            return "deny";              //  block, drop, terminate, a result blocked, a definition withheld
    }
}

//  gen_ai.security.target.type: a response's tool call, a request's
//  tool definition, or another part of the request.
static const char *
s_target (const sl_msg_t *msg)
{
    if (!msg->part.ptr)
        return "tool_call";
    if (msg->action == SL_ACT_WITHHOLD || sl_str_starts (msg->part, "tools["))
        return "tool_definition";
    return "llm_input";
}

static void
s_emit_verdict (sl_genai_t *self, s_stream_t *st, const sl_msg_t *msg, int64_t now_us)
{
    uint8_t id [SL_SPAN_ID_SIZE], parent [SL_SPAN_ID_SIZE];
    sl_trace_verdict_span (st->sid, msg->seq, id);
    sl_trace_stream_span (st->sid, parent);
    sl_buf_reset (&self->scratch);
    sl_buf_puts (&self->scratch, S_GUARDRAIL " ");
    if (msg->rule.len)
        sl_buf_append_str (&self->scratch, msg->rule);
    else
        sl_buf_puts (&self->scratch, S_DEFAULT_RULE);
    int64_t start_us = now_us - (int64_t) msg->latency_us;
    if (start_us < st->start_us)
        start_us = st->start_us;
    sl_span_t *span = sl_span_new (sl_buf_cstr (&self->scratch), st->ctx.trace, id, parent, SL_SPAN_INTERNAL,
                                   (uint64_t) start_us * S_NS_PER_US);
    sl_span_set_str (span, "gen_ai.operation.name", SL_STR_LIT (S_GUARDRAIL));
    sl_span_set_str (span, "gen_ai.guardian.name", SL_STR_LIT (S_GUARDIAN));
    const char *target = s_target (msg);
    sl_span_set_str (span, "gen_ai.security.target.type", sl_str (target));
    sl_span_set_str (span, "gen_ai.security.decision.type", sl_str (s_decision (msg->action)));
    sl_span_set_str (span, "gen_ai.security.policy.id",
                     sl_str (st->policy_name ? st->policy_name : S_DEFAULT_POLICY));
    s_put_cstr (span, "gen_ai.security.policy.version", st->policy);
    sl_span_set_str (span, "gen_ai.security.policy.rule.id", msg->rule.len ? msg->rule : SL_STR_LIT (S_DEFAULT_RULE));
    if (msg->name.len)
        sl_span_set_str (span, "gen_ai.tool.name", msg->name);
    sl_str_t call = msg->call_id.len ? msg->call_id : msg->id;
    if (call.len)
        sl_span_set_str (span, "gen_ai.tool.call.id", call);
    //  What was judged: the call, or the part of the request.
    sl_str_t judged = msg->part.ptr ? msg->part : call;
    if (judged.len)
        sl_span_set_str (span, "gen_ai.security.target.id", judged);
    sl_span_set_str (span, "sluice.verdict.action", sl_str (sl_action_name (msg->action)));
    sl_span_set_str (span, "sluice.verdict.check", sl_str (sl_check_name (msg->check)));
    if (msg->mode == SL_MODE_SHADOW)    //  a would-be verdict: the call went as another one says
        sl_span_set_str (span, "sluice.verdict.mode", sl_str (sl_mode_name (msg->mode)));
    if (msg->part.len)
        sl_span_set_str (span, "sluice.request.part", msg->part);
    if (msg->judge_model.len)
        sl_span_set_str (span, "sluice.judge.model", msg->judge_model);
    if (!isnan (msg->probability))
        sl_span_set_double (span, "sluice.judge.probability", msg->probability);
    if (msg->approver.len)
        sl_span_set_str (span, "sluice.approver", msg->approver);
    //  A check that did not run is never a pass: its span says it failed.
    if (msg->check == SL_CHK_TIMEOUT || msg->check == SL_CHK_ERROR) {
        sl_span_set_str (span, "error.type", sl_str (sl_check_name (msg->check)));
        sl_span_set_error (span, sl_str (sl_check_name (msg->check)));
    }
    if (self->config.capture_content) {
        //  A reason may quote the arguments. A tool call's arguments are
        //  the model's; a request verdict's text may be what a redaction
        //  took out, so it is never captured.
        if (msg->reason.len)
            sl_span_set_str (span, "gen_ai.security.decision.reason", msg->reason);
        if (!msg->part.ptr && msg->text.ptr)
            sl_span_set_str (span, "gen_ai.tool.call.arguments", msg->text);
    }
    sl_span_end (span, (uint64_t) now_us * S_NS_PER_US);
    self->stats.spans++;
    self->emit (self->arg, &span);
    sl_span_destroy (&span);
}

//  --------------------------------------------------------------------------
//  Events

static void
s_merge_usage (s_stream_t *st, const sl_msg_t *msg)
{
    if (!msg->has_usage || (msg->flags & SL_F_ESTIMATED))
        return;                         //  an estimate is not what the provider said
    if (!st->has_usage) {
        st->usage = (sl_usage_t) { -1, -1, -1, -1, -1, -1 };
        st->has_usage = true;
    }
    int64_t *to = &st->usage.input;
    const int64_t *from = &msg->usage.input;
    for (size_t i = 0; i < sizeof (sl_usage_t) / sizeof (int64_t); i++)
        if (from [i] >= 0)
            to [i] = from [i];
}

static void
s_on_start (sl_genai_t *self, s_stream_t *st, const sl_msg_t *msg, int64_t now_us)
{
    if (st) {
        //  Sent again in a new epoch: the response begins again; the
        //  span's start and the verdicts reported stay.
        if (msg->epoch > st->epoch) {
            st->epoch = msg->epoch;
            s_response_reset (st);
        }
        return;
    }
    sl_trace_ctx_t ctx;
    if (!msg->trace.ptr || sl_trace_parse (msg->trace, true, &ctx) != 0 || !(ctx.flags & SL_TRACE_SAMPLED))
        return;
    if (sl_sidmap_size (self->streams) >= self->config.max_streams) {
        self->stats.untraced_full++;
        return;
    }
    st = sl_xcalloc (1, sizeof *st);
    memcpy (st->sid, msg->sid, SL_SID_SIZE);
    st->epoch = msg->epoch;
    st->ctx = ctx;
    st->tracestate = s_dup (msg->trace_state);
    st->start_us = msg->received_us > 0 && msg->received_us <= now_us ? msg->received_us : now_us;
    st->last_us = now_us;
    st->client_dialect = msg->client_dialect;
    st->upstream_dialect = msg->upstream_dialect;
    st->streaming = msg->flags & SL_F_STREAM;
    st->request_model = s_dup (msg->model);
    st->route = s_dup (msg->provider);
    st->policy = s_dup (msg->policy);
    st->policy_name = s_dup (msg->policy_name);
    st->team = s_dup (msg->team);
    st->user = s_dup (msg->user);
    st->key_id = s_dup (msg->key_id);
    if (self->config.capture_content)
        st->last_user = s_dup (msg->last_user);
    if (msg->mcp.len)
        st->mcp = s_dup (msg->mcp);
    sl_sidmap_put (self->streams, st->sid, st);
    self->stats.streams++;
}

static void
s_on_block (s_stream_t *st, const sl_msg_t *msg, int64_t now_us)
{
    switch (msg->kind) {
        case SL_B_MESSAGE:
            s_set (&st->response_id, msg->id);
            s_set (&st->response_model, msg->model);
            s_merge_usage (st, msg);
            break;
        case SL_B_START:
        case SL_B_DELTA:
            if (!st->first_chunk_us)
                st->first_chunk_us = now_us;
            break;
        case SL_B_FINISH:
            st->finish = msg->finish;
            s_merge_usage (st, msg);
            break;
        default:
            break;
    }
}

void
sl_genai_feed (sl_genai_t *self, const sl_msg_t *msg, int64_t now_us)
{
    s_stream_t *st = sl_sidmap_get (self->streams, msg->sid);
    if (msg->type == SL_MSG_START) {
        s_on_start (self, st, msg, now_us);
        return;
    }
    if (!st || msg->epoch < st->epoch)
        return;                         //  untraced, or a stale epoch's
    st->last_us = now_us;
    switch (msg->type) {
        case SL_MSG_BLOCK:
            s_on_block (st, msg, now_us);
            break;
        case SL_MSG_VERDICT:
            //  A resent stream's verdicts come again with their seqs.
            if (msg->seq >= st->verdict_next) {
                st->verdict_next = msg->seq + 1;
                s_emit_verdict (self, st, msg, now_us);
            }
            break;
        case SL_MSG_ERROR:
            if (!st->error_type) {
                st->error_type = s_dup (msg->code.len ? msg->code : SL_STR_LIT ("error"));
                st->error_message = s_dup (msg->message);
            }
            break;
        case SL_MSG_END:
            sl_sidmap_remove (self->streams, st->sid);
            s_emit_stream (self, st, now_us);
            s_stream_destroy (st);
            break;
        default:
            break;
    }
}

static bool
s_silent (void *value, void *arg)
{
    const s_stream_t *st = value;
    int64_t cutoff = *(const int64_t *) arg;
    return st->last_us < cutoff;
}

size_t
sl_genai_expire (sl_genai_t *self, int64_t now_us)
{
    int64_t cutoff = now_us - self->config.expiry_us;
    size_t n = sl_sidmap_drop_if (self->streams, s_silent, &cutoff, s_stream_destroy);
    self->stats.expired += n;
    return n;
}

size_t
sl_genai_streams (sl_genai_t *self)
{
    return sl_sidmap_size (self->streams);
}

const sl_genai_stats_t *
sl_genai_stats (sl_genai_t *self)
{
    return &self->stats;
}
