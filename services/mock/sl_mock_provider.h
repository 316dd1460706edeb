/*  sl_mock_provider.h - the providers the mock plays, one module per wire
    dialect, and the registry of them.

    The mock is an upstream of every dialect sluice speaks. All it knows of
    one provider's API is that provider's module (services/mock/
    sl_mock_<dialect>.c), one table, sl_mock_provider_t:

      requests  the path the API is called at, where its requests say
                their max tokens, what the API refuses of a conversation
                with tools (check: written from the provider's
                documentation, independently of sluice's own dialect
                code, so a translation that breaks a conversation is
                caught), the last tool result and the tool that gave it
                (result), and how its requests declare tools and list
                their turns (shape: what the coding-agent scenarios read);
      answers   a renderer of a scenario's steps into the provider's
                stream events (sl_mock_render_t), its HTTP error bodies
                and the words of its errors, and, optionally, a whole
                answer of text (what an LLM judge asked in the dialect
                gets: sl_mock_judge.h).

    The registry (sl_mock_provider.c) lists the modules, one for every
    dialect the proxy registers (common/dialects/sl_dialect.c), and checks
    each table's required entries when the mock starts. The rest of the
    mock asks it for the provider of a dialect or of a path, and never
    switches on the dialect.

    Renderers write into an sl_mock_out_t: the answer's events, what the
    request body hashes to (ids), the model, and the little state a
    provider keeps between steps (an open block or item, accumulated text).
    The helpers below are the ones every module uses.
*/
#ifndef SL_MOCK_PROVIDER_H
#define SL_MOCK_PROVIDER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

#define SL_MOCK_RESULT_TEXT_MAX 256     //  a result's text kept, bytes
#define SL_MOCK_ID_MAX 64               //  longest call id or tool name a renderer keeps
#define SL_MOCK_CREATED 1767225600      //  the fixed creation stamp of answers (2026-01-01)

//  What is open in a provider's stream between steps.
typedef enum {
    SL_MOCK_OPEN_NONE = 0,
    SL_MOCK_OPEN_TEXT,                  //  a text block or item
    SL_MOCK_OPEN_TOOL,                  //  a tool call (Gemini: held, sent whole)
    SL_MOCK_OPEN_STREAMED_TOOL          //  Gemini: a call whose arguments stream (willContinue)
} sl_mock_open_t;

//  An answer being rendered.
typedef struct {
    sl_buf_t **events;                  //  the answer's events, appended to (a script's)
    size_t *count;
    uint64_t hash;                      //  of the request body: ids
    sl_str_t model;
    bool verbatim;                      //  strings byte for byte (mock-bad-utf8)
    int open;                           //  sl_mock_open_t
    int block;                          //  next block / item index
    int seq;                            //  next sequence number (Responses)
    sl_buf_t acc;                       //  text or arguments of the open item
    char tool_id [SL_MOCK_ID_MAX];      //  the open call's id and name
    char tool_name [SL_MOCK_ID_MAX];
} sl_mock_out_t;

//  What a provider does with each step of a scenario.
typedef struct {
    void (*begin) (sl_mock_out_t *out);
    void (*text) (sl_mock_out_t *out, const char *text);
    void (*tool_start) (sl_mock_out_t *out, int index, const char *id, const char *name);
    void (*tool_args) (sl_mock_out_t *out, int index, const char *fragment);
    //  Optional (NULL: tool_args with json): a piece of a call's arguments
    //  inside one string member, given two ways: json, the JSON text it
    //  adds; key and value, the member and the piece of its string as
    //  Gemini streams them (partialArgs), more when the string goes on.
    void (*tool_string) (sl_mock_out_t *out, int index, const char *json, const char *key, const char *value,
                         bool more);
    //  reason: "stop", "tool_calls" or "length" (OpenAI's words; each
    //  provider says it its own way).
    void (*finish) (sl_mock_out_t *out, const char *reason, int input, int output);
    void (*fail) (sl_mock_out_t *out);
    //  Optional (NULL: nothing): the body ends here, short of the
    //  provider's end; what the provider still holds goes out, nothing is
    //  closed.
    void (*eof) (sl_mock_out_t *out);
    //  Optional (NULL: fail): a failure mid-stream as the API itself ends
    //  a failed stream.
    void (*fail_as_api) (sl_mock_out_t *out);
    //  The provider's error body of an HTTP error answer, and its words
    //  for a rate limit, a brief unavailability, a failure, a model it
    //  does not have, a request it refuses.
    void (*error_body) (int status, const char *type, const char *message, sl_buf_t *out);
    const char *rate_limited;
    const char *unavailable;
    const char *failed;
    const char *not_found;
    const char *bad_request;
} sl_mock_render_t;

//  The last tool result of a request: its tool's name (from the result,
//  or from its call in the request's history) and text.
typedef struct {
    char name [SL_MOCK_ID_MAX];
    char text [SL_MOCK_RESULT_TEXT_MAX];
} sl_mock_result_t;

//  Where a refusal's words go.
typedef struct {
    char *text;
    size_t size;
} sl_mock_why_t;

//  How a provider's requests declare tools and list turns: the member a
//  tool definition sits in ("function", or NULL: the tool itself), its
//  schema's member (and a second one some clients use), the member of a
//  tools entry listing declarations (Gemini; NULL: a tool is one), the
//  member of the turns, and whether a turn carries a tool result. The
//  tools array is the body's "tools", or that of the member tools_in
//  names (Converse's toolConfig); a schema may be wrapped in the member
//  schema_in names (Converse's inputSchema.json).
typedef struct {
    const char *holder;
    const char *schema;
    const char *schema2;
    const char *schema_in;
    const char *tools_in;
    const char *declarations;
    const char *turns;
    bool (*carries_result) (json_t *turn);
} sl_mock_shape_t;

typedef struct _sl_mock_provider_t sl_mock_provider_t;
struct _sl_mock_provider_t {
    int dialect;                        //  the wire dialect (sl_dialect_id_t) of the API it plays

    //  Requests -------------------------------------------------------------
    //  The end of the API's path ("/chat/completions"); with model_in_path,
    //  the path is .../models/{model}<path> (any prefix either way).
    const char *path;
    //  Optional: a part the path holds besides (a cloud's door to another
    //  provider's API at its own path: "/openai/"); a provider with one is
    //  tried before those without.
    const char *marker;
    //  Its requests carry Authorization: Bearer and a cloud's token (one
    //  the mock's Google token services issued, or SL_MOCK_BEARER_TOKEN:
    //  sl_mock_gcp.h); one that does not is answered 401.
    bool bearer;
    //  Its requests are signed with AWS SigV4: checked when the mock has
    //  AWS keys (sl_mock_aws.h).
    bool sigv4;
    bool model_in_path;
    //  With model_in_path: what comes before the model in the path (NULL:
    //  "/models/"; Bedrock's "/model/"); the model is percent-decoded.
    const char *model_prefix;
    //  The answer's content type (NULL: text/event-stream; AWS's event
    //  stream: application/vnd.amazon.eventstream).
    const char *content_type;
    //  Where its requests say their max tokens ("a.b": a member of a
    //  member), in the order read; NULL-terminated.
    const char *const *max_tokens;
    //  0 when the request (a JSON object) holds together for the API; -1
    //  with why.
    int (*check) (json_t *root, sl_mock_why_t *why);
    //  Optional: 0 when the cloud takes the beta features the request
    //  names (Bedrock: the body's "anthropic_beta"; Vertex AI: the
    //  anthropic-beta header, betas, NULL when absent) and the body's
    //  fields that need one have it; -1 with why, in the cloud's words.
    int (*check_betas) (json_t *root, const char *betas, sl_mock_why_t *why);
    //  The request's last tool result; false when its last turn has none.
    bool (*result) (json_t *root, sl_mock_result_t *out);
    sl_mock_shape_t shape;

    //  Answers --------------------------------------------------------------
    const sl_mock_render_t *render;
    //  Optional: a whole answer of text (not streamed) for model.
    void (*whole) (const char *model, const char *text, sl_buf_t *out);
};

//  Registry -----------------------------------------------------------------

//  Check the built-in modules (idempotent): 0, or -1 with *why (static
//  text) naming the first incomplete one.
int sl_mock_provider_init (const char **why);
//  Check one table. 0 complete, -1 with *why.
int sl_mock_provider_check_table (const sl_mock_provider_t *provider, const char **why);
//  The provider of a dialect, or NULL.
const sl_mock_provider_t *sl_mock_provider_get (int dialect);
//  Providers, in dialect order: index 0 .. sl_mock_provider_count () - 1.
size_t sl_mock_provider_count (void);
const sl_mock_provider_t *sl_mock_provider_at (size_t index);
//  The provider a path calls, or NULL; model gets the model the path
//  names (left as it is when it names none, or the path is not one).
const sl_mock_provider_t *sl_mock_provider_of_path (const char *path, char *model, size_t size);
//  "POST .../chat/completions, ... and .../models/{model}:streamGenerateContent":
//  the paths the mock serves, for an answer to one it does not.
void sl_mock_provider_paths (sl_buf_t *out);

//  Reading requests ---------------------------------------------------------

//  0 when a request body holds together for the dialect's API; -1 with
//  why (also for a dialect the mock does not play, or a body that is not
//  a JSON object).
int sl_mock_provider_check (int dialect, sl_str_t body, char *why, size_t size);
//  0 when the dialect's cloud takes the beta features of a request (its
//  body, its anthropic-beta header or NULL: check_betas); -1 with why.
//  0 for a dialect without the check.
int sl_mock_provider_check_betas (int dialect, sl_str_t body, const char *betas, char *why, size_t size);
//  The last tool result of a request body of the dialect; false when the
//  last turn carries none.
bool sl_mock_provider_result (int dialect, sl_str_t body, sl_mock_result_t *out);

//  Helpers for the modules ----------------------------------------------------

//  Fill why; returns -1.
int sl_mock_refuse (sl_mock_why_t *why, const char *format, ...) __attribute__ ((format (printf, 2, 3)));
//  Is value the string text?
bool sl_mock_is (json_t *value, const char *text);
//  A string's text, "" for anything else (borrowed).
const char *sl_mock_text (json_t *value);
//  Is id among the strings of list (a JSON array)?
bool sl_mock_listed (json_t *list, const char *id);
//  Remove the strings id from list (an answered call).
void sl_mock_unlist (json_t *list, const char *id);
//  Copy src (NULL: "") into dst, cut to size.
void sl_mock_copy (char *dst, size_t size, const char *src);
//  A new empty event at the end of a list of events.
sl_buf_t *sl_mock_events_add (sl_buf_t **events, size_t *count);
//  A new empty event at the end of the answer.
sl_buf_t *sl_mock_event (sl_mock_out_t *out);
//  A text or an argument fragment as a JSON string (byte for byte when
//  out->verbatim).
void sl_mock_put_text (sl_mock_out_t *out, sl_buf_t *event, sl_str_t text);
//  The model as a JSON string.
void sl_mock_put_model (sl_mock_out_t *out, sl_buf_t *event);

//  OpenAI's error body, which both its APIs (Chat Completions, Responses)
//  answer with.
void sl_mock_openai_error_body (int status, const char *type, const char *message, sl_buf_t *out);
//  The rest of OpenAI's Chat Completions, which the clouds' doors to it
//  (Azure OpenAI) share: what it refuses, the result it reads, its shape,
//  its stream and its whole answer.
int sl_mock_openai_check (json_t *root, sl_mock_why_t *why);
bool sl_mock_openai_result (json_t *root, sl_mock_result_t *out);
bool sl_mock_openai_carries_result (json_t *message);
void sl_mock_openai_whole (const char *model, const char *text, sl_buf_t *out);
extern const sl_mock_render_t sl_mock_openai_render;
extern const char *const sl_mock_openai_max_tokens [];
//  And Gemini's and Anthropic's, which Vertex AI's doors to them share.
int sl_mock_gemini_check (json_t *root, sl_mock_why_t *why);
bool sl_mock_gemini_result (json_t *root, sl_mock_result_t *out);
bool sl_mock_gemini_carries_result (json_t *content);
extern const sl_mock_render_t sl_mock_gemini_render;
extern const char *const sl_mock_gemini_max_tokens [];
int sl_mock_anthropic_check (json_t *root, sl_mock_why_t *why);
//  Claude in a cloud: names (an array of strings) are the request's beta
//  features; the first not in taken (NULL-terminated) is refused, as
//  Bedrock refuses it (header false: "invalid beta flag") or as Vertex AI
//  does (header true: every one named, "for the anthropic-beta header");
//  then a body field whose feature is not among them (a tool's
//  defer_loading without tool search, context_management without its
//  beta) is refused as an extra input. 0 when all pass.
int sl_mock_anthropic_check_betas (json_t *root, json_t *names, const char *const *taken, bool header,
                                   sl_mock_why_t *why);
bool sl_mock_anthropic_result (json_t *root, sl_mock_result_t *out);
bool sl_mock_anthropic_carries_result (json_t *message);
void sl_mock_anthropic_whole (const char *model, const char *text, sl_buf_t *out);
extern const sl_mock_render_t sl_mock_anthropic_render;
extern const char *const sl_mock_anthropic_max_tokens [];

//  A bearer token the mock's cloud providers (Vertex AI) take as given
//  (a token variable's), besides those its token endpoint and metadata
//  server issued (sl_mock_gcp.h); a request with neither is answered 401.
#define SL_MOCK_BEARER_TOKEN "mock-cloud-token"

#endif
