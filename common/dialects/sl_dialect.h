/*  sl_dialect.h - a wire dialect as one module, and the registry of them.

    A dialect is everything one wire format means to sluice, in one folder
    (common/dialects/<name>/) and one table of operations, sl_dialect_t:

      identity      its wire number (proto/sl_msg.h, sl_dialect_id_t) and
                    its name, which names it everywhere else: routes
                    files, metrics labels, logs, audit records;
      client side   the endpoint a client calls (its paths) and the
                    parser of its requests into the normalized request
                    (sl_req.h, sl_reqparse.h);
      upstream side the request it sends a provider: the same dialect's
                    client body with the fields sluice forces (forward),
                    or any other dialect's request rendered (render,
                    sl_reqrender.h); the URL's path, the credential
                    header, fixed headers; the stream decoder
                    (sl_decoder_impl.h) and its finish values;
      defaults      the built-in provider of the dialect (no routes file):
                    its vendor's base URL; the names of its base URL
                    option, that option's variable and the key variable
                    all come from the vendor's name (sl_dialect_option);
      a question    optional: a one-turn question rendered as a whole (not
                    streamed) request, and the text of a whole answer,
                    which is how an LLM judge asks a model of the dialect;
      response      the renderer of judged blocks for its clients,
                    streaming and whole (sl_render.h), and the validator
                    of what the renderer wrote (sl_validate_impl.h);
      model lists   the path and the shape of GET /v1/models for its SDKs.

    Upstream-only dialects: a provider's wire format that clients do not
    call sluice in (a cloud's door to a vendor's model: Vertex AI's Gemini
    is Gemini's body at another URL, Azure OpenAI's is OpenAI's) says so
    (upstream_only) and leaves out the client side: paths, parse, renderer,
    validator, model lists, question, built-in provider. Its format is a
    client dialect's when its bodies are that dialect's (format): a client
    of that dialect is then not translated, its body goes as its own with
    this dialect's forward (which may patch it: Vertex's Claude takes no
    model in the body); the module names the inner dialect's operations
    rather than copying them. Its URL is made from the provider's fields
    (region, project, deployments, ...: provider_fields says which it
    reads, provider_needs which it cannot do without), and the provider's
    credential may come from a source that is fetched (sl_auth.h): a
    cloud's tokens or signatures (auth).

    The registry (sl_dialect.c) lists the modules, registers each at
    start and checks every required operation then: a module that lacks
    one does not register, and the process does not start. Core code asks
    the registry for a dialect by its wire id or its name and calls its
    operations; it never switches on the kind, and an unknown id is an
    error (NULL), never a silent default.

    What is the same in every dialect is written once, in the toolkit
    beside this registry (sl_reqparse, sl_reqrender, sl_decoder_impl.h,
    sl_render, sl_validate_impl.h, sl_argstream): a table states what is
    its dialect's as data (paths, the URL's path, finish values, the model
    list's path), and its files write only what differs.

    Adding a dialect: a folder with its table, its number in proto/sl_msg.h
    (sl_dialect_id_t), and one line in the registry; the mock upstream
    plays it with a provider module of its own (services/mock/sl_mock_<name>.c,
    one line in services/mock/sl_mock_provider.c). The conformance suite
    (tests/unit/common/dialects/test_dialects.c) then runs over both. Every
    file, in order: docs/dialects/adding-a-dialect.md.
*/
#ifndef SL_DIALECT_H
#define SL_DIALECT_H

#include <jansson.h>
#include <stdbool.h>

#include "common/base/sl_buf.h"
#include "proto/sl_msg.h"
#include "common/dialects/sl_providers.h"
#include "common/dialects/sl_req.h"

typedef struct _sl_decoder_vt_t sl_decoder_vt_t;       //  sl_decoder_impl.h
typedef struct _sl_renderer_t sl_renderer_t;           //  sl_render.h
typedef struct _sl_validator_vt_t sl_validator_vt_t;   //  sl_validate_impl.h

#define SL_ENDPOINT_MODEL_MAX 256       //  longest model name taken from a path
#define SL_DIALECT_NAME_MAX 32          //  longest dialect or vendor name, and its NUL
#define SL_DIALECT_OPTION_MAX 64        //  longest name derived from one (sl_dialect_option)

//  The client endpoint a request was made to.
typedef struct {
    int dialect;                        //  sl_dialect_id_t, 0 when no endpoint matched
    bool stream;                        //  the path names a streaming method (Gemini)
    bool sse;                           //  the query asks for server-sent events (Gemini alt=sse)
    char model [SL_ENDPOINT_MODEL_MAX]; //  a model the path names (Gemini), "" when none
} sl_endpoint_t;

//  Why a client request is refused, for an answer in its dialect.
typedef struct {
    int status;
    const char *type;                   //  error type (static text)
    sl_buf_t message;
} sl_refusal_t;

//  Fill a refusal; returns -1.
int sl_refuse (sl_refusal_t *r, int status, const char *type, const char *format, ...)
    __attribute__ ((format (printf, 4, 5)));

//  A request header by name (case-insensitive), or NULL.
typedef const char *(sl_header_fn) (void *arg, const char *name);

//  One model for a model list.
typedef struct {
    const char *id;
    const char *owner;                  //  the provider that serves it
} sl_model_entry_t;

//  A one-turn question to a model, asked whole: what an LLM judge sends.
//  Borrowed for the call.
typedef struct {
    sl_str_t model;
    sl_str_t system;                    //  the instructions
    sl_str_t prompt;                    //  the one user message
    int64_t max_tokens;                 //  the answer's budget
    double temperature;
} sl_question_t;

//  {"model":..,"max_tokens":..,"temperature":.. : how a question's JSON
//  body begins in the dialects that ask (the object is left open).
void sl_question_begin (const sl_question_t *question, sl_buf_t *out);

//  One of a provider's raw finish values and the normalized finish
//  (sl_finish_t) it stands for.
typedef struct {
    const char *raw;
    int finish;
} sl_finish_name_t;

typedef struct _sl_dialect_t sl_dialect_t;
struct _sl_dialect_t {
    int id;                             //  sl_dialect_id_t, the wire value
    const char *name;                   //  [a-z][a-z0-9]* words joined by '-': routes files,
                                        //  labels, logs
    //  No client calls sluice in it (see above): no client side.
    bool upstream_only;
    //  The client dialect whose request bodies and streams it speaks (an
    //  upstream-only dialect over a client dialect's format), or 0: its own.
    int format;

    //  Client side (none when upstream_only) ---------------------------------
    //  The completion endpoint: the paths (no query) that name it, NULL-
    //  terminated, and the start of the dialect's other paths (a path that
    //  starts so is answered with a 404 in its shape; NULL: none).
    const char *const *paths;
    const char *family;
    //  Or, when the path carries more (Gemini's model and method), instead
    //  of paths: does path name this dialect's completion endpoint? 1 yes
    //  (out filled); 0 no, but it is one of this dialect's paths; -1 not
    //  this dialect's.
    int (*endpoint) (const char *path, sl_endpoint_t *out);
    //  Check a request (its body, a JSON object) and build the normalized
    //  request. 0 ok; -1 refused (err filled).
    int (*parse) (json_t *root, const sl_endpoint_t *endpoint, sl_req_t *req, sl_refusal_t *err);

    //  Upstream side --------------------------------------------------------
    //  A client request of this same dialect as it goes upstream: its body
    //  byte for byte but for the fields sluice forces (streaming, usage).
    //  0 ok, -1 when the body cannot be patched (not a JSON object).
    int (*forward) (sl_str_t body, const sl_req_t *req, sl_buf_t *out);
    //  Another dialect's request rendered as this dialect's request body.
    //  0 ok; -1 when something the answer needs cannot be carried (x holds
    //  the refusal); informative things it drops are noted in x.
    int (*render) (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out);
    //  The URL of a streaming call: a provider's base URL (no trailing
    //  slash) and this path ("/v1/messages"), whatever the model.
    const char *url_path;
    //  Or, when the model or the provider's fields are in the URL, instead
    //  of url_path: the URL for model at provider (its base_url, "" for
    //  the dialect's own, and its other fields). 0 ok; -1 when the model
    //  cannot be named so, with the reason in why ("model 'x' has no
    //  deployment at provider 'y'"). (Core code asks sl_dialect_url.)
    int (*url) (const sl_provider_t *provider, sl_str_t model, sl_buf_t *out, sl_buf_t *why);
    //  The provider fields it reads beyond base_url, and those it needs
    //  (sl_provider_field_t bits; a client dialect's: base_url alone, and
    //  it needs it). A provider given a field its dialect does not read,
    //  or lacking one it needs, is refused where it is configured.
    unsigned provider_fields;
    unsigned provider_needs;
    //  Optional: what else a provider of the dialect must hold together
    //  (Azure: deployments need an api_version). 0 ok, -1 with why.
    int (*provider_check) (const sl_provider_t *provider, sl_buf_t *why);
    const char *credential;             //  header carrying the key ("x-api-key")
    const char *scheme;                 //  text before the key in it ("Bearer "), or ""
    //  Where the provider's credential comes from when it names neither a
    //  key nor a token (sl_auth.h): SL_AUTH_KEY (the key, or the client's
    //  own: the default), or a cloud's own (Google's tokens, AWS's
    //  signature), which the ingest fetches and refreshes.
    int auth;
    const char *query_key;              //  a query parameter clients may send the key in, or NULL
    const char *const *headers;         //  fixed request headers, NULL-terminated
    //  Optional: client headers an upstream of this dialect gets as the
    //  client sent them, when the request does not cross dialects (the
    //  beta features an Anthropic body uses: anthropic-beta); NULL-
    //  terminated, or NULL for none.
    const char *const *passthrough;
    //  Optional: for an upstream that takes in its body what the client's
    //  dialect sends as headers (Claude on Bedrock: anthropic-beta as the
    //  body's "anthropic_beta"): body with the client's passthrough lines
    //  (those of its own format, "Name: value\n" each) folded in, written
    //  to out. 0 written; 1 nothing to change; -1 body is not an object.
    int (*fold) (sl_str_t body, sl_str_t passthrough, sl_buf_t *out);
    //  Optional: the beta features (anthropic-beta names) an upstream of
    //  this dialect takes, NULL-terminated (Claude in a cloud refuses a
    //  whole request for one name it does not take): a client's name not
    //  listed is left out of what the upstream gets. NULL: every name.
    const char *const *betas;
    //  Optional, with betas: a name a client sends for a feature this
    //  upstream takes under another name, pairs { client's, upstream's },
    //  ended by { NULL, NULL }.
    const char *const (*beta_renames) [2];
    const sl_decoder_vt_t *decoder;     //  the provider's stream
    //  What cuts the stream's body into the decoder's events
    //  (sl_framing_kind_t: 0, server-sent events; AWS's event stream).
    int framing;
    //  This provider's raw finish values and what each means
    //  (sl_dialect_finish_of), ended by { NULL, 0 }.
    const sl_finish_name_t *finishes;

    //  Defaults -------------------------------------------------------------
    //  The built-in provider of the dialect is named after it, calls
    //  base_url and reads its key from <VENDOR>_API_KEY; the option
    //  --<vendor>-base-url (variable SLUICE_<VENDOR>_BASE_URL) changes the
    //  base URL. Dialects of one vendor (OpenAI's Chat Completions and
    //  Responses) share the base URL, the option and the key.
    const char *vendor;                 //  [a-z][a-z0-9]*, whose API it is; NULL: the name
    const char *base_url;               //  the vendor's endpoint, no trailing slash
    const char *genai_provider;         //  its gen_ai.provider.name (OpenTelemetry); NULL: the vendor
                                        //  (a cloud's: aws.bedrock, gcp.vertex_ai, azure.ai.openai)

    //  A question (optional: both or neither) -------------------------------
    //  A question as this dialect's request body for a whole answer, sent
    //  to url with the credential and headers above (so a dialect whose
    //  whole answers come from another URL than its streams cannot ask).
    void (*question) (const sl_question_t *question, sl_buf_t *out);
    //  The text of a whole answer (its body parsed), borrowed from root;
    //  NULL when it holds none.
    const char *(*answer) (json_t *root);

    //  Response side (none when upstream_only) ------------------------------
    const sl_renderer_t *renderer;
    const sl_validator_vt_t *validator;

    //  Model lists ----------------------------------------------------------
    //  The path of its SDKs' GET of the model list ("/v1/models"; one model
    //  at <path>/<id>), and a header only its SDKs send, which makes the
    //  list theirs where dialects share the path (NULL: none). NULL: the
    //  dialect lists no models of its own (its clients read another's).
    const char *models_path;
    const char *models_header;
    //  A second path its SDKs read the list at, theirs only with this
    //  header (both or neither; NULL: none): Google's SDK moved from
    //  /v1beta to /v1, where OpenAI's clients read theirs too.
    const char *models_path_also;
    const char *models_header_also;
    //  The list, and one model, in this dialect's shape (with models_path).
    void (*model_list) (const sl_model_entry_t *models, size_t count, sl_buf_t *out);
    void (*model) (const sl_model_entry_t *model, sl_buf_t *out);

    //  Tests ----------------------------------------------------------------
    //  Optional: the folder of this provider's recorded streams in the
    //  shared corpus (../shared/corpus/<corpus>), which the conformance
    //  suite decodes and renders for every client dialect; NULL: none.
    const char *corpus;
};

//  Register the built-in dialects (idempotent). 0 ok; -1 when one lacks a
//  required operation, with *why (static text, or NULL).
int sl_dialect_init (const char **why);
//  Register one more dialect (tests); checked as the built-ins are. 0 ok,
//  -1 (with *why) when it is incomplete, its id is taken or out of range.
int sl_dialect_register (const sl_dialect_t *dialect, const char **why);
//  Check a table without registering it. 0 complete, -1 with *why.
int sl_dialect_check (const sl_dialect_t *dialect, const char **why);
//  Does a table clash with the registered dialects of other ids (its name
//  taken, another base URL than its vendor's other dialects)? 0 no, -1
//  with *why.
int sl_dialect_conflicts (const sl_dialect_t *dialect, const char **why);
//  The dialect of a wire id, or NULL.
const sl_dialect_t *sl_dialect_get (int id);
//  The dialect of a name ("openai"), or NULL.
const sl_dialect_t *sl_dialect_find (const char *name);
//  The name of a wire id: "none" for 0, "?" for an id no module has.
const char *sl_dialect_name (int id);
//  The wire id of a name; 0 when no module has it.
int sl_dialect_parse (const char *name);
//  The names of the registered dialects (only those with accepts, unless
//  with is NULL), in id order, joined with sep, the last with last: for
//  messages that list them ("openai, anthropic, responses or gemini").
void sl_dialect_names (const char *sep, const char *last, bool (*with) (const sl_dialect_t *dialect),
                       sl_buf_t *out);
//  Can the dialect be asked a question (sl_dialect_t.question)?
bool sl_dialect_asks (const sl_dialect_t *dialect);
//  Registered dialects, in id order: index 0 .. sl_dialect_count () - 1.
size_t sl_dialect_count (void);
const sl_dialect_t *sl_dialect_at (size_t index);

//  Names derived from a dialect's vendor, written to out (of
//  SL_DIALECT_OPTION_MAX bytes): the option of its built-in provider's base
//  URL ("openai-base-url"), that option's variable
//  ("SLUICE_OPENAI_BASE_URL"), the variable of its key ("OPENAI_API_KEY").
typedef enum {
    SL_DIALECT_BASE_URL_OPTION = 1,
    SL_DIALECT_BASE_URL_VARIABLE,
    SL_DIALECT_KEY_VARIABLE
} sl_dialect_option_t;
void sl_dialect_option (const sl_dialect_t *dialect, sl_dialect_option_t which, char *out);
//  The vendor of a dialect (its vendor, else its name).
const char *sl_dialect_vendor (const sl_dialect_t *dialect);
//  Is it the first registered dialect of its vendor (the one that stands
//  for the vendor in its options)?
bool sl_dialect_vendor_first (const sl_dialect_t *dialect);

//  The endpoint a path names (sl_dialect_t.endpoint of each). 1 found;
//  0 none, with out->dialect the dialect the path looks like, or 0.
int sl_dialect_endpoint (const char *path, sl_endpoint_t *out);
//  The dialect whose model list a GET is, or NULL.
const sl_dialect_t *sl_dialect_models (const char *path, sl_header_fn *header, void *arg, const char **rest);
//  The normalized finish of one of a dialect's own raw finish values;
//  SL_FIN_NONE when it is not one of them.
int sl_dialect_finish_of (const sl_dialect_t *dialect, sl_str_t raw);
//  The URL of a streaming call to a provider of a dialect for model (its
//  url, or the provider's base_url and its url_path). 0 ok, -1 when the
//  model cannot be named so (why, when not NULL, says why).
int sl_dialect_url (const sl_dialect_t *dialect, const sl_provider_t *provider, sl_str_t model, sl_buf_t *out,
                    sl_buf_t *why);
//  The dialect whose format a wire id's bodies and streams are in: its
//  format, else itself.
int sl_dialect_format (int id);
//  Do two wire ids speak one format (a request goes from one to the other
//  as its own body, not translated)?
bool sl_dialect_same_format (int a, int b);
//  The name under which an upstream of dialect takes the beta feature
//  name (n bytes) a client sent (betas, beta_renames): into *out and
//  *out_len (borrowed: the table's or name itself); false when it takes
//  none.
bool sl_dialect_beta (const sl_dialect_t *dialect, const char *name, size_t n, const char **out, size_t *out_len);
//  The beta feature names of a client's header lines (passthrough: its
//  "anthropic-beta: a,b" line among them) that an upstream of dialect
//  does not take, comma-joined into out (nothing when it takes them all,
//  or lists none). Returns how many.
int sl_dialect_betas_left_out (const sl_dialect_t *dialect, sl_str_t passthrough, sl_buf_t *out);
//  Is it a dialect clients call sluice in (registered, not upstream-only)?
bool sl_dialect_is_client (const sl_dialect_t *dialect);
//  Is a wire id given before its module is written (sl_dialect.c)?
bool sl_dialect_reserved (int id);
//  The normalized finish of a raw value: the upstream dialect's own
//  values first, then any dialect's (servers that pass on another
//  provider's values); SL_FIN_NONE for an absent value, SL_FIN_STOP for
//  one nobody knows (the provider ended the response).
int sl_dialect_finish (int upstream, sl_str_t raw);

//  --------------------------------------------------------------------------
//  For the modules' tables: what their operations share.

//  What a module's files export to its table, by the names every module
//  gives them (common/dialects/<name>/: sl_<name>_parse, _forward and
//  _render_request in sl_<name>_request.c, sl_<name>_decoder,
//  sl_<name>_renderer, sl_<name>_validator in sl_<name>_decode.c,
//  _render.c, _validate.c). SL_DIALECT_DECLARE goes in the module's
//  header; SL_DIALECT_PARTS in its table, which then says only what is
//  its own. A module that reuses another's pieces names them instead.
#define SL_DIALECT_DECLARE(name) \
    extern const sl_decoder_vt_t sl_##name##_decoder; \
    extern const sl_renderer_t sl_##name##_renderer; \
    extern const sl_validator_vt_t sl_##name##_validator; \
    int sl_##name##_parse (json_t *root, const sl_endpoint_t *endpoint, sl_req_t *req, sl_refusal_t *err); \
    int sl_##name##_forward (sl_str_t body, const sl_req_t *req, sl_buf_t *out); \
    int sl_##name##_render_request (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out)
#define SL_DIALECT_PARTS(name) \
    .parse = sl_##name##_parse, \
    .forward = sl_##name##_forward, \
    .render = sl_##name##_render_request, \
    .decoder = &sl_##name##_decoder, \
    .renderer = &sl_##name##_renderer, \
    .validator = &sl_##name##_validator

//  A path segment (a model's name in a URL), percent-encoded as RFC 3986
//  says (everything but unreserved characters and those of keep, which
//  may be NULL: characters a segment may hold as they are, "@"),
//  appended to out.
void sl_dialect_put_segment (sl_str_t s, const char *keep, sl_buf_t *out);

//  The entries of a model list, each in a module's shape (model),
//  comma-joined.
void sl_dialect_put_models (const sl_model_entry_t *models, size_t count,
                            void (*model) (const sl_model_entry_t *model, sl_buf_t *out), sl_buf_t *out);

#endif
