/*  sl_req.h - the normalized request: what a client asked for, whatever
    its dialect.

    Every client request parses into one sl_req_t (its dialect's parse
    operation, sl_dialect.h), and every upstream dialect renders one into
    its own request (render). A request of the upstream's own dialect is
    not rendered: it goes out as the client sent it, with only the fields
    sluice forces (forward); the model is still built, for the judge and
    for what crosses.

    What it holds:
      - instructions (system / developer) as SYSTEM messages, where the
        client put them;
      - messages (USER, ASSISTANT) made of parts: text, image (a URL, or
        a media type and base64 data), tool call (id, name, arguments as
        JSON text, a provider's signature), tool result (the call's id,
        the tool's name when the request says it, content parts, an error
        flag), thinking (text, signature), redacted thinking, refusal;
        and OPAQUE parts: something of the client's dialect only (a
        document, audio, a server tool's block) that no other dialect can
        be given, named by its feature;
      - tool definitions (name, description, JSON schema, strict), and a
        provider's own tools (web search, code execution) by their type;
      - tool choice, sampling (temperature, top_p, top_k, max tokens,
        stop sequences, seed, penalties), response format (text, JSON,
        JSON schema), reasoning (effort, budget, off or left to the
        model; sl_effort.h reads them on one scale), stream options,
        metadata and the user id;
      - features of the client's dialect that were given but are not
        modelled: each named, and whether the answer depends on it (a
        request that needs one cannot cross to another dialect; one that
        is only informative is dropped and counted there).

    Addressing: message i is messages [i], its part j parts [j] (a tool
    result's content part k its content [k]); so each system prompt, user
    message and tool result can be named and judged (a request policy).

    Memory: the request keeps the jansson tree of the client's body
    (root) and borrows every string, schema and value from it; what a
    parser has to make (arguments dumped from an object, a synthesized id)
    is kept in the request too (sl_req_keep). Everything lives until
    sl_req_destroy.
*/
#ifndef SL_REQ_H
#define SL_REQ_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"
#include "common/tools/sl_toolcache.h"
#include "common/tools/sl_tooldef.h"

typedef enum {
    SL_ROLE_SYSTEM = 1,                 //  instructions (system, developer)
    SL_ROLE_USER,                       //  the user, and tool results
    SL_ROLE_ASSISTANT                   //  the model's earlier turns
} sl_role_t;

typedef enum {
    SL_PART_TEXT = 1,
    SL_PART_IMAGE,
    SL_PART_TOOL_CALL,
    SL_PART_TOOL_RESULT,
    SL_PART_THINKING,
    SL_PART_REDACTED,
    SL_PART_REFUSAL,
    SL_PART_OPAQUE,
    SL_PART_MAX
} sl_part_kind_t;

//  The OPAQUE part (text) of a tool result that loads a deferred tool by
//  name (Anthropic's tool search: {"type":"tool_reference","tool_name"}):
//  the tool's definition is among the request's tools, usually with
//  defer_loading, and counts like any other (digest, pins, inventory).
#define SL_REQ_TOOL_REFERENCE "tool_reference"

typedef struct _sl_part_t sl_part_t;
struct _sl_part_t {
    int kind;                           //  sl_part_kind_t
    sl_str_t text;                      //  TEXT, THINKING, REFUSAL text; REDACTED data;
                                        //  OPAQUE: the feature's name (NUL-terminated)
    sl_str_t id;                        //  TOOL_CALL: its id; TOOL_RESULT: the id of its call
    sl_str_t name;                      //  TOOL_CALL, TOOL_RESULT: the tool (absent when not said);
                                        //  OPAQUE SL_REQ_TOOL_REFERENCE: the tool it loads
    sl_str_t arguments;                 //  TOOL_CALL: JSON text
    sl_str_t signature;                 //  THINKING, TOOL_CALL: a provider's signature, as sent
    sl_str_t url;                       //  IMAGE by URL
    sl_str_t media_type;                //  IMAGE by data
    sl_str_t data;                      //  IMAGE: base64
    bool is_error;                      //  TOOL_RESULT: the tool failed
    sl_part_t *content;                 //  TOOL_RESULT: TEXT, IMAGE and OPAQUE parts
    size_t content_count;
    //  Where in the client's body the part came from, so that a request
    //  policy can change it there (redaction, a blocked result) and a
    //  same-dialect body keeps everything else as it was. Borrowed from
    //  root; NULL when the part was made up.
    json_t *source;                     //  TEXT: its string (or, Gemini, the object whose JSON
                                        //  the text is); TOOL_RESULT: the object holding its content
    const char *source_key;             //  TOOL_RESULT: the member of source with the content
};

typedef struct {
    int role;                           //  sl_role_t
    sl_part_t *parts;
    size_t count;
} sl_message_t;

typedef enum {
    SL_CHOICE_UNSET = 0,                //  the provider's default (auto)
    SL_CHOICE_AUTO,
    SL_CHOICE_NONE,
    SL_CHOICE_REQUIRED,                 //  some tool must be called
    SL_CHOICE_TOOL                      //  this tool must be called
} sl_choice_t;

typedef enum {
    SL_FORMAT_UNSET = 0,
    SL_FORMAT_TEXT,
    SL_FORMAT_JSON,                     //  any JSON object
    SL_FORMAT_SCHEMA                    //  JSON conforming to a schema
} sl_format_t;

//  A field of the client's dialect that the model does not hold.
typedef struct {
    const char *name;                   //  static text: "previous_response_id", "cache_control"
    bool matters;                       //  the answer depends on it: it cannot cross
} sl_feature_t;

#define SL_REQ_FEATURES_MAX 32          //  features noted per request (more are counted, not named)
#define SL_REQ_OTHER_FIELDS "other fields"  //  the name of fields no list of the dialect names
//  How rendered requests are written: compact, and numbers as short as
//  they read (0.7, not 0.69999999999999996).
#define SL_REQ_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION (15))

typedef struct _sl_req_t {
    int dialect;                        //  the client's
    json_t *root;                       //  the client's body, owned
    sl_str_t model;
    bool stream;                        //  the client wants a stream (else one body)
    bool include_usage;                 //  the client asked for usage in its stream
    sl_message_t *messages;
    size_t message_count;
    sl_tool_t *tools;
    size_t tool_count;
    int tool_choice;                    //  sl_choice_t
    sl_str_t tool_choice_name;          //  SL_CHOICE_TOOL
    int parallel_tools;                 //  -1 unset, 0 one call at a time, 1 parallel
    //  Sampling; NAN / -1 when not given
    double temperature;
    double top_p;
    int64_t top_k;
    int64_t max_tokens;
    sl_str_t *stop;
    size_t stop_count;
    int64_t seed;
    double presence_penalty;
    double frequency_penalty;
    //  Structured output
    int format;                         //  sl_format_t
    json_t *format_schema;
    sl_str_t format_name;
    bool format_strict;
    //  Reasoning
    sl_str_t effort;                    //  "minimal", "low", "medium", "high" ... (absent: not asked)
    int64_t budget;                     //  thinking tokens, -1 when not given
    bool thinking_off;                  //  the client turned thinking off
    bool thinking_adaptive;             //  the model decides how much to think (Anthropic
                                        //  adaptive thinking, Gemini thinkingBudget -1)
    //  Who asks
    sl_str_t user;
    json_t *metadata;
    //  What the model does not hold
    sl_feature_t features [SL_REQ_FEATURES_MAX];
    size_t feature_count;
    //  Changed by a request policy (sl_req_edit_text, sl_req_replace_result)
    bool edited;                        //  some part's content changed
    bool edited_unsourced;              //  a changed part has no source in root: root no
                                        //  longer says what the request says
    //  Strings and values the parser made, owned
    sl_buf_t *kept;
    size_t kept_count;
    json_t *owned;                      //  an array holding them
} sl_req_t;

//  An empty request of a client dialect; takes the body's tree (may be NULL).
sl_req_t *sl_req_new (int dialect, json_t *root);
void sl_req_destroy (sl_req_t **self_p);

//  Building (parsers). Appended items are zeroed; the pointers stay valid
//  until the next append to the same list.
sl_message_t *sl_req_add_message (sl_req_t *self, int role);
//  A message of this role at the end, reused when the last one has it
//  (consecutive tool results, items of one turn).
sl_message_t *sl_req_last_message (sl_req_t *self, int role);
sl_part_t *sl_req_add_part (sl_message_t *message, int kind);
sl_part_t *sl_req_add_content (sl_part_t *result, int kind);
sl_tool_t *sl_req_add_tool (sl_req_t *self);
void sl_req_add_stop (sl_req_t *self, sl_str_t stop);
//  A copy of bytes kept as long as the request.
sl_str_t sl_req_keep (sl_req_t *self, const char *data, size_t len);
//  A text part read from a value of the body: its text (sl_req_str) and
//  where it came from (sl_part_t.source).
void sl_req_set_text (sl_part_t *part, json_t *value);
//  A tool result's content lives in holder's member key.
void sl_req_set_source (sl_part_t *result, json_t *holder, const char *key);
//  A JSON value's compact text, kept; no value (NULL) is {}.
sl_str_t sl_req_keep_json (sl_req_t *self, json_t *value);
//  Keep a value the parser made (takes the reference); returns it, borrowed.
json_t *sl_req_own (sl_req_t *self, json_t *value);
//  Note a field the model does not hold (once per name; name is static
//  text: it names a metric's label).
void sl_req_feature (sl_req_t *self, const char *name, bool matters);
//  Note a top-level field of the client's body that the model does not
//  hold: by its own name when a list of the dialect names it (matters:
//  the answer depends on it; informative: it does not), else as "other
//  fields" (informative: a client's own key never becomes a label).
void sl_req_field (sl_req_t *self, const char *key, const char *const *matters, const char *const *informative);
//  The first feature that matters, or NULL.
const sl_feature_t *sl_req_mattering (const sl_req_t *self);

//  The text of a jansson string as a slice (borrowed from the tree), absent
//  for anything else.
sl_str_t sl_req_str (json_t *value);
//  A number or NAN / -1.
double sl_req_real (json_t *value);
int64_t sl_req_int (json_t *value);

//  An image URL: "data:<media type>;base64,<data>" split into its parts
//  (slices of url). true when it is one.
bool sl_req_data_url (sl_str_t url, sl_str_t *media_type, sl_str_t *data);
//  An image part's URL: its URL, or a data URL made of its data.
void sl_req_put_image_url (const sl_part_t *image, sl_buf_t *out);
//  The text of the parts of a kind, joined with sep.
void sl_req_join (const sl_part_t *parts, size_t count, int kind, const char *sep, sl_buf_t *out);
//  Does any part (or a tool result's content part) have this kind?
bool sl_req_has (const sl_part_t *parts, size_t count, int kind);
//  A tool result's content as text: its text parts joined with line
//  ends, prefixed for a dialect that has no error flag ("Error: ").
void sl_req_result_text (const sl_part_t *result, bool mark_error, sl_buf_t *out);
//  The call of the most recent tool call named name that no result
//  answered yet, before message `before` (for dialects that answer calls
//  by name); absent when there is none.
sl_str_t sl_req_open_call (const sl_req_t *self, size_t before, sl_str_t name);

//  What the judge reads, the same for every dialect:
//  the tool definitions (every tool that has a name), appended to out:
//  [{"name":..,"schema":{..},"description":..,"server":..,"tool":..,
//  "digest":..,"truncated":true}]: schema {} when it declares none;
//  description absent when it has none; server and tool the parts of the
//  name (sl_tooldef_name; server absent when the name names none); digest
//  sl_tooldef_digest of the whole definition (from cache, which may be
//  NULL: computed); a definition whose description and schema are over
//  SL_TOOLDEF_TRAVEL_MAX bytes has its description cut (on a character
//  boundary), and its schema left out when that alone is over, and is
//  marked truncated (its digest is still of the whole);
void sl_req_tools_json (const sl_req_t *self, sl_toolcache_t *cache, sl_buf_t *out);
//  the text of the last user message that says something (its text parts,
//  joined with line ends; a message of tool results only is skipped).
void sl_req_last_user (const sl_req_t *self, sl_buf_t *out);
//  The name of the call with this id in the request's own history (the
//  tool a result answers), or absent.
sl_str_t sl_req_call_name (const sl_req_t *self, sl_str_t call_id);

//  --------------------------------------------------------------------------
//  Changes a request policy makes (redaction, a tool result replaced).
//  Each changes the part and, where it came from, the client's body
//  (root), so a same-dialect request goes upstream as the client sent it
//  but for exactly the changed strings.

//  Rewrite one string: append the new text to out and return true when
//  it changed, false (out untouched) when it did not.
typedef bool (sl_req_edit_fn) (void *arg, sl_str_t text, sl_buf_t *out);
//  Rewrite a TEXT part through fn: its text, or, for a part that is the
//  JSON of a value (a Gemini function response), each string inside it.
//  True when anything changed.
bool sl_req_edit_text (sl_req_t *self, sl_part_t *part, sl_req_edit_fn *fn, void *arg);
//  Replace a tool result's content with one text (in root: a string where
//  the content was not an object, {"output": text} where it was).
void sl_req_replace_result (sl_req_t *self, sl_part_t *result, const char *text);

//  The whole model as JSON, one stable shape for every dialect (tests,
//  sluice-replay --request, the conformance suite's round trips).
void sl_req_dump (const sl_req_t *self, sl_buf_t *out);

//  --------------------------------------------------------------------------
//  Translation: an upstream dialect rendering another dialect's request.

#define SL_XLATE_DROPS_MAX 16
#define SL_XLATE_MAX_TOKENS 4096        //  max tokens for an upstream that needs a number and got none

typedef struct {
    //  A refusal: what cannot cross, for the client (400 in its dialect)
    int status;
    const char *type;
    sl_buf_t message;
    //  What was only informative and dropped (static names, each once)
    const char *dropped [SL_XLATE_DROPS_MAX];
    size_t drop_count;
    const char *from;                   //  the client's dialect name, for messages
    const char *to;                     //  the upstream's
} sl_xlate_t;

//  Refuse the translation: 400 invalid_request_error naming the feature.
//  Returns -1.
int sl_xlate_refuse (sl_xlate_t *x, const char *feature, const char *why);
//  Note an informative feature dropped.
void sl_xlate_drop (sl_xlate_t *x, const char *feature);
void sl_xlate_clear (sl_xlate_t *x);

//  Thinking signatures are a provider's: one from another provider is
//  refused by the upstream. When a response crosses dialects, a signature
//  goes to the client tagged with the dialect of the provider that made it
//  ("sluice:anthropic:" + signature); when the client sends it back, the
//  tag says whether the upstream may have it.
#define SL_SIG_TAG "sluice:"
//  Write sig tagged for a client of another dialect than upstream.
void sl_sig_tag (const char *upstream, sl_str_t sig, sl_buf_t *out);
//  The signature a part carries for an upstream of this dialect: its
//  untagged text when it was tagged with it, absent otherwise (a native
//  signature of the client's own dialect, or another provider's).
sl_str_t sl_sig_for (const char *upstream, sl_str_t sig);

#endif
