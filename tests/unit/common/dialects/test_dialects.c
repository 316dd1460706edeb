/*  The conformance suite every registered dialect runs (common/dialects):
    a dialect gets these tests by being registered.

    - its table is complete and registered under its name; tables that
      lack an operation, or take an id or a name already taken, do not
      register;
    - it has the defaults of a built-in provider: a base URL, and the
      names derived from its vendor (the base URL option, its variable,
      the key variable), which for today's dialects are the names the
      services have always had; sluice-ingest gets the option, the
      default providers the provider;
    - when it can be asked a question (an LLM judge's), the question is
      JSON naming the model, the instructions and the prompt, goes to its
      URL at its vendor's base URL, and the mock's whole answer in the
      dialect is read back by its answer reader; a policy may name it;
    - the mock upstream plays it (services/mock): a provider module for
      it is registered and complete, serves the path its url operation
      calls, accepts the conversation it renders (the mock checks what the
      provider's API checks), and its scripted streams decode with its
      decoder;
    - a normalized request with instructions, an image, a tool call and
      its result, text after the result, a tool with a schema and sampling
      renders in the dialect, parses back to the same content (the call's
      id still pairs with its result), and renders again to the same
      bytes; what the dialect cannot carry (a part of another dialect
      alone, a provider's own tool) is refused, naming it;
    - its renderer, for a client of it, turns the shared judged stream
      (every block kind) into output its validator passes, streaming and
      whole, from an upstream of every dialect (translated), also when the
      stream fails mid-way; its error bodies and model lists are JSON;
    - every recording of its provider in the corpus decodes, and renders
      for a client of every dialect without an event the validator would
      withhold (tests/recordings.h: the project's own recordings, and the
      corpus's when ../shared/corpus is present).
*/
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/dialects/sl_baseurls.h"
#include "common/dialects/sl_decoder_impl.h"
#include "common/http/sl_auth.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_providers.h"
#include "common/dialects/sl_render.h"
#include "common/dialects/sl_job.h"
#include "common/dialects/sl_validate_impl.h"
#include "common/llm/sl_llm.h"
#include "common/policy/sl_policy.h"
#include "common/stages/sl_replay.h"
#include "services/mock/sl_mock_provider.h"
#include "services/mock/sl_mock_request.h"
#include "services/mock/sl_mock_script.h"
#include "tests/recordings.h"

//  Header lookups for the model list: Google's SDK's key header, or none.
static const char *
s_goog_header (void *arg, const char *name)
{
    (void) arg;
    return strcasecmp (name, "x-goog-api-key") == 0 ? "k" : NULL;
}

static const char *
s_no_header (void *arg, const char *name)
{
    (void) arg;
    (void) name;
    return NULL;
}
#include "tests/unit/emit_driver.h"
#include "tests/unit/script_sink.h"

//  A provider at a base URL, with no other field.
#define S_AT(url) (&(sl_provider_t) { .name = "p", .base_url = (url) })
//  ... with the fields a cloud's door needs too (Vertex: a region and a
//  project; Azure without api_version: its v1 API).
#define S_CLOUD_AT(url) (&(sl_provider_t) { .name = "p", .base_url = (url), .region = "us-east5", .project = "proj" })


//  --------------------------------------------------------------------------
//  The registry

Test (dialects, every_wire_dialect_has_a_complete_module)
{
    const char *why = NULL;
    cr_assert_eq (sl_dialect_init (&why), 0, "%s", why ? why : "");
    size_t modules = 0;
    for (int id = SL_DIALECT_OPENAI; id < SL_DIALECT_MAX; id++) {
        cr_expect (!sl_dialect_get (id) == sl_dialect_reserved (id), "id %d: a module or a reservation", id);
        modules += !sl_dialect_reserved (id);
    }
    cr_expect_eq (sl_dialect_count (), modules);
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        cr_assert_not_null (d);
        cr_expect_eq (sl_dialect_check (d, &why), 0, "%s: %s", d->name, why ? why : "");
        cr_expect_str_eq (d->name, sl_dialect_name (d->id));
        cr_expect_eq (sl_dialect_get (d->id), d);
        cr_expect_eq (sl_dialect_find (d->name), d);
    }
    cr_expect_null (sl_dialect_get (SL_DIALECT_NONE), "no dialect is a silent default");
    cr_expect_null (sl_dialect_get (SL_DIALECT_MAX));
    cr_expect_null (sl_dialect_find ("klingon"));
    //  Names are the modules': the wire carries numbers only.
    cr_expect_eq (sl_dialect_parse ("anthropic"), SL_DIALECT_ANTHROPIC);
    cr_expect_eq (sl_dialect_parse ("klingon"), 0);
    cr_expect_eq (sl_dialect_parse ("none"), 0, "none is no dialect to parse");
    cr_expect_str_eq (sl_dialect_name (SL_DIALECT_NONE), "none");
    cr_expect_str_eq (sl_dialect_name (SL_DIALECT_MAX), "?");
}

Test (dialects, an_incomplete_table_does_not_register)
{
    const sl_dialect_t *openai = sl_dialect_get (SL_DIALECT_OPENAI);
    sl_dialect_t copy = *openai;
    const char *why = NULL;
    copy.render = NULL;
    cr_expect_eq (sl_dialect_register (&copy, &why), -1);
    cr_expect_str_eq (why, "render missing");
    copy = *openai;
    copy.validator = NULL;
    cr_expect_eq (sl_dialect_check (&copy, &why), -1);
    cr_expect_str_eq (why, "validator missing");
    //  A renderer without a keep-alive could not keep a held call's client waiting.
    copy = *openai;
    sl_renderer_t renderer = *openai->renderer;
    renderer.keepalive = "";
    copy.renderer = &renderer;
    cr_expect_eq (sl_dialect_check (&copy, &why), -1);
    cr_expect_str_eq (why, "renderer keep-alive missing");
    //  A name is words of [a-z0-9] joined by single dashes.
    const char *bad_names [] = { "Open", "open_ai", "open--ai", "openai-", "-openai", "9ai", "" };
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names [0]; i++) {
        copy = *openai;
        copy.name = bad_names [i];
        cr_expect_eq (sl_dialect_check (&copy, &why), -1, "%s: a name that cannot stand in a path", bad_names [i]);
    }
    copy = *openai;
    copy.name = "open-ai-2";
    cr_expect_eq (sl_dialect_check (&copy, &why), 0, "%s", why);
    copy.vendor = "open-ai";
    cr_expect_eq (sl_dialect_check (&copy, &why), -1, "a vendor names options and variables: no dash");
    copy = *openai;
    cr_expect_eq (sl_dialect_register (&copy, &why), -1, "a complete table, but its id is taken");
    cr_expect_str_eq (why, "id registered twice");
    copy.id = SL_DIALECT_MAX;
    cr_expect_eq (sl_dialect_register (&copy, &why), -1, "an id without a wire name");
    cr_expect_eq (sl_dialect_get (SL_DIALECT_OPENAI), openai, "nothing replaced");
    //  What the defaults and a question need.
    copy = *openai;
    copy.base_url = "api.openai.com";
    cr_expect_eq (sl_dialect_check (&copy, &why), -1, "a base URL that is not http(s)");
    copy.base_url = "https://api.openai.com/v1/";
    cr_expect_eq (sl_dialect_check (&copy, &why), -1, "a base URL with a trailing slash");
    copy = *openai;
    copy.vendor = "Open AI";
    cr_expect_eq (sl_dialect_check (&copy, &why), -1, "a vendor that cannot name an option");
    copy = *openai;
    copy.answer = NULL;
    cr_expect_eq (sl_dialect_check (&copy, &why), -1);
    cr_expect_str_eq (why, "question without answer, or answer without question");
}

static void
s_clear_nothing (void *state)
{
    (void) state;
}

//  What a module's table says as data, the registry reads for it; an
//  operation in its place is for a dialect whose paths or URLs carry more.
//  An upstream-only table over OpenAI's format: what a cloud's door to
//  it is (Azure's), its client side left out.
static sl_dialect_t
s_upstream_only (const sl_dialect_t *openai)
{
    sl_dialect_t d = *openai;
    d.id = SL_DIALECT_AZURE;
    d.name = "cloud-openai";
    d.upstream_only = true;
    d.format = SL_DIALECT_OPENAI;
    d.paths = NULL;
    d.family = NULL;
    d.endpoint = NULL;
    d.parse = NULL;
    d.query_key = NULL;
    d.renderer = NULL;
    d.validator = NULL;
    d.models_path = NULL;
    d.models_header = NULL;
    d.model_list = NULL;
    d.model = NULL;
    d.question = NULL;
    d.answer = NULL;
    d.base_url = NULL;
    return d;
}

Test (dialects, an_upstream_only_table_leaves_the_client_side_out)
{
    const sl_dialect_t *openai = sl_dialect_get (SL_DIALECT_OPENAI);
    const char *why = NULL;
    sl_dialect_t d = s_upstream_only (openai);
    cr_expect_eq (sl_dialect_check (&d, &why), 0, "%s", why);
    //  What a client would call or read is refused in it: clients would
    //  reach a door meant only for sluice.
    d.paths = openai->paths;
    cr_expect_eq (sl_dialect_check (&d, &why), -1);
    cr_expect_str_eq (why, "an upstream-only dialect has no client endpoint");
    d = s_upstream_only (openai);
    d.parse = openai->parse;
    cr_expect_eq (sl_dialect_check (&d, &why), -1);
    d = s_upstream_only (openai);
    d.renderer = openai->renderer;
    cr_expect_eq (sl_dialect_check (&d, &why), -1);
    d = s_upstream_only (openai);
    d.models_path = "/v1/models";
    cr_expect_eq (sl_dialect_check (&d, &why), -1);
    d = s_upstream_only (openai);
    d.question = openai->question;
    d.answer = openai->answer;
    cr_expect_eq (sl_dialect_check (&d, &why), -1);
    //  Of a format: its forward serves that format's clients.
    d = s_upstream_only (openai);
    d.forward = NULL;
    cr_expect_eq (sl_dialect_check (&d, &why), -1);
    cr_expect_str_eq (why, "forward missing");
    d.format = 0;                       //  a format of its own: no client has it
    cr_expect_eq (sl_dialect_check (&d, &why), 0, "%s", why);
    //  The client side is required of a client dialect.
    d = s_upstream_only (openai);
    d.upstream_only = false;
    cr_expect_eq (sl_dialect_check (&d, &why), -1);
    //  Provider fields: one it needs must be one it reads.
    d = s_upstream_only (openai);
    d.provider_needs = SL_PROVIDER_FIELD_REGION;
    cr_expect_eq (sl_dialect_check (&d, &why), -1);
    d.provider_fields = SL_PROVIDER_FIELD_REGION;
    cr_expect_eq (sl_dialect_check (&d, &why), 0, "%s", why);
    d.auth = SL_AUTH_KIND_MAX;
    cr_expect_eq (sl_dialect_check (&d, &why), -1);
}

Test (dialects, one_format_is_not_a_translation)
{
    cr_expect (sl_dialect_same_format (SL_DIALECT_OPENAI, SL_DIALECT_OPENAI));
    cr_expect_not (sl_dialect_same_format (SL_DIALECT_OPENAI, SL_DIALECT_RESPONSES));
    cr_expect_eq (sl_dialect_format (SL_DIALECT_GEMINI), SL_DIALECT_GEMINI);
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        if (!d->upstream_only)
            continue;
        cr_expect (!d->format || sl_dialect_same_format (d->id, d->format), "%s", d->name);
        cr_expect (!d->format || sl_dialect_is_client (sl_dialect_get (d->format)), "%s", d->name);
    }
}

Test (dialects, a_table_states_its_paths_url_finishes_and_model_list_as_data)
{
    const sl_dialect_t *openai = sl_dialect_get (SL_DIALECT_OPENAI);
    sl_dialect_t copy = *openai;
    const char *why = NULL;
    copy.paths = NULL;
    cr_expect_eq (sl_dialect_check (&copy, &why), -1);
    cr_expect_str_eq (why, "endpoint missing", "neither paths nor an endpoint operation");
    copy = *openai;
    copy.url_path = NULL;
    cr_expect_eq (sl_dialect_check (&copy, &why), -1);
    cr_expect_str_eq (why, "url missing");
    copy = *openai;
    copy.finishes = NULL;
    cr_expect_eq (sl_dialect_check (&copy, &why), -1);
    cr_expect_str_eq (why, "finish values missing");
    copy = *openai;
    copy.model = NULL;
    cr_expect_eq (sl_dialect_check (&copy, &why), -1, "a model list path without its shape");
    copy.models_path = NULL;
    cr_expect_eq (sl_dialect_check (&copy, &why), 0, "no list of its own, no shape needed");
    sl_decoder_vt_t decoder = *openai->decoder;
    copy = *openai;
    copy.decoder = &decoder;
    decoder.event = NULL;
    cr_expect_eq (sl_dialect_check (&copy, &why), -1);
    cr_expect_str_eq (why, "decoder operation missing");
    decoder = *openai->decoder;
    decoder.clear = s_clear_nothing;
    decoder.state_size = 0;
    cr_expect_eq (sl_dialect_check (&copy, &why), -1, "state to clear, but no state");
    //  Paths, and the family a 404 in the dialect's shape answers.
    sl_endpoint_t ep;
    cr_expect_eq (sl_dialect_endpoint ("/messages", &ep), 1);
    cr_expect_eq (ep.dialect, SL_DIALECT_ANTHROPIC);
    cr_expect_eq (sl_dialect_endpoint ("/v1/messages/count_tokens", &ep), 0);
    cr_expect_eq (ep.dialect, SL_DIALECT_ANTHROPIC, "one of its paths: answered in its shape");
    cr_expect_eq (sl_dialect_endpoint ("/v2/chat", &ep), 0);
    cr_expect_eq (ep.dialect, 0);
    //  The URL: the base URL and the path, or the dialect's own operation.
    sl_buf_t url = { 0 };
    cr_expect_eq (sl_dialect_url (openai, S_AT ("http://h/v1"), SL_STR_LIT ("m"), &url, NULL), 0);
    cr_expect_str_eq (sl_buf_cstr (&url), "http://h/v1/chat/completions");
    sl_buf_reset (&url);
    cr_expect_eq (sl_dialect_url (sl_dialect_get (SL_DIALECT_GEMINI), S_AT ("http://h"), SL_STR_LIT ("a b"), &url, NULL), 0);
    cr_expect_str_eq (sl_buf_cstr (&url), "http://h/models/a%20b:streamGenerateContent?alt=sse");
    sl_buf_free (&url);
    //  Finish values: a dialect's own, and any dialect's for an upstream.
    cr_expect_eq (sl_dialect_finish_of (openai, SL_STR_LIT ("length")), SL_FIN_LENGTH);
    cr_expect_eq (sl_dialect_finish_of (openai, SL_STR_LIT ("max_tokens")), SL_FIN_NONE);
    cr_expect_eq (sl_dialect_finish (SL_DIALECT_OPENAI, SL_STR_LIT ("max_tokens")), SL_FIN_LENGTH,
                  "a server passing on another provider's value");
    cr_expect_eq (sl_dialect_finish (SL_DIALECT_OPENAI, SL_STR_LIT ("whatever")), SL_FIN_STOP);
    //  Model lists: a path, and a header that makes a shared path one SDK's.
    const char *rest = NULL;
    cr_expect_eq (sl_dialect_models ("/v1/models/gpt-x", NULL, NULL, &rest), openai);
    cr_expect_str_eq (rest, "gpt-x");
    cr_expect_null (sl_dialect_models ("/v1/models/gpt-x:generate", NULL, NULL, &rest), "a method, not a model");
    cr_expect_eq (sl_dialect_models ("/v1beta/models", NULL, NULL, &rest), sl_dialect_get (SL_DIALECT_GEMINI));
    cr_expect_str_eq (rest, "");
    //  Google's SDK (3.x) reads /v1/models, with its key header: its list.
    cr_expect_eq (sl_dialect_models ("/v1/models", s_goog_header, NULL, &rest), sl_dialect_get (SL_DIALECT_GEMINI));
    cr_expect_eq (sl_dialect_models ("/v1/models/mock-text", s_goog_header, NULL, &rest),
                  sl_dialect_get (SL_DIALECT_GEMINI));
    cr_expect_str_eq (rest, "mock-text");
    cr_expect_eq (sl_dialect_models ("/v1/models", s_no_header, NULL, &rest), openai, "without it, OpenAI's");
    sl_buf_t list = { 0 };
    sl_model_entry_t models [] = { { "a", "p" }, { "b", "q" } };
    sl_dialect_put_models (models, 2, openai->model, &list);
    cr_expect_str_eq (sl_buf_cstr (&list), "{\"id\":\"a\",\"object\":\"model\",\"created\":0,\"owned_by\":\"p\"},"
                                           "{\"id\":\"b\",\"object\":\"model\",\"created\":0,\"owned_by\":\"q\"}");
    sl_buf_free (&list);
}

Test (dialects, a_second_model_list_path_comes_with_its_header)
{
    sl_dialect_t copy = *sl_dialect_get (SL_DIALECT_GEMINI);
    const char *why = NULL;
    cr_expect_eq (sl_dialect_check (&copy, &why), 0, "%s", why ? why : "");
    copy.models_header_also = NULL;
    cr_expect_eq (sl_dialect_check (&copy, &why), -1);
    cr_expect_str_eq (why, "a second model list path needs its header and a first path");
}

Test (dialects, a_name_or_a_vendors_base_url_taken_twice_does_not_register)
{
    const sl_dialect_t *responses = sl_dialect_get (SL_DIALECT_RESPONSES);
    const char *why = NULL;
    cr_expect_eq (sl_dialect_conflicts (responses, &why), 0, "the registered ones agree");
    sl_dialect_t copy = *responses;
    copy.name = "anthropic";
    cr_expect_eq (sl_dialect_conflicts (&copy, &why), -1);
    cr_expect_str_eq (why, "name registered twice");
    copy = *responses;
    copy.base_url = "https://elsewhere.example/v1";
    cr_expect_eq (sl_dialect_conflicts (&copy, &why), -1, "OpenAI's option cannot move two defaults");
    cr_expect_str_eq (why, "another dialect of its vendor has another base URL");
    copy.vendor = "elsewhere";
    cr_expect_eq (sl_dialect_conflicts (&copy, &why), 0, "a vendor of its own has its own");
}

Test (dialects, names_are_listed_from_the_registry)
{
    sl_buf_t out = { 0 };
    sl_dialect_names (", ", " or ", NULL, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "openai, anthropic, responses, gemini, bedrock, bedrock-anthropic, vertex, "
                                          "vertex-anthropic or azure");
    sl_buf_reset (&out);
    sl_dialect_names (", ", " or ", sl_dialect_is_client, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "openai, anthropic, responses or gemini", "the dialects clients speak");
    sl_buf_reset (&out);
    sl_dialect_names (", ", " or ", sl_dialect_asks, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "openai or anthropic", "the dialects that can be asked");
    sl_buf_reset (&out);
    sl_dialect_names ("|", "|", NULL, &out);
    size_t bars = 0;
    for (const char *p = sl_buf_cstr (&out); *p; p++)
        bars += *p == '|';
    cr_expect_eq (bars, sl_dialect_count () - 1, "%s", sl_buf_cstr (&out));
    sl_buf_free (&out);
}

//  --------------------------------------------------------------------------
//  Requests: render, parse back, render again

#define S_IMAGE "iVBORw0KGgoAAAANSUhEUg=="
#define S_SCHEMA "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}"

//  A conversation every dialect can carry, built as a parser would.
static sl_req_t *
s_conversation (void)
{
    sl_req_t *req = sl_req_new (SL_DIALECT_NONE, NULL);
    req->model = SL_STR_LIT ("m1");
    req->stream = true;
    sl_req_add_part (sl_req_add_message (req, SL_ROLE_SYSTEM), SL_PART_TEXT)->text = SL_STR_LIT ("Be brief.");
    sl_message_t *m = sl_req_add_message (req, SL_ROLE_USER);
    sl_req_add_part (m, SL_PART_TEXT)->text = SL_STR_LIT ("What is the weather in Paris?");
    sl_part_t *image = sl_req_add_part (m, SL_PART_IMAGE);
    image->media_type = SL_STR_LIT ("image/png");
    image->data = SL_STR_LIT (S_IMAGE);
    m = sl_req_add_message (req, SL_ROLE_ASSISTANT);
    sl_req_add_part (m, SL_PART_TEXT)->text = SL_STR_LIT ("Let me check.");
    sl_part_t *call = sl_req_add_part (m, SL_PART_TOOL_CALL);
    call->id = SL_STR_LIT ("call_1");
    call->name = SL_STR_LIT ("get_weather");
    call->arguments = SL_STR_LIT ("{\"city\":\"Paris\"}");
    m = sl_req_add_message (req, SL_ROLE_USER);
    sl_part_t *result = sl_req_add_part (m, SL_PART_TOOL_RESULT);
    result->id = SL_STR_LIT ("call_1");
    result->name = SL_STR_LIT ("get_weather");
    sl_req_add_content (result, SL_PART_TEXT)->text = SL_STR_LIT ("sunny");
    sl_req_add_part (m, SL_PART_TEXT)->text = SL_STR_LIT ("Thanks. And tomorrow?");
    sl_tool_t *tool = sl_req_add_tool (req);
    tool->name = SL_STR_LIT ("get_weather");
    tool->description = SL_STR_LIT ("The weather now");
    tool->schema = sl_req_own (req, json_loads (S_SCHEMA, 0, NULL));
    req->tool_choice = SL_CHOICE_AUTO;
    req->max_tokens = 100;
    req->temperature = 0.5;
    return req;
}

//  The first part of a kind in messages of a role (NULL when none).
static const sl_part_t *
s_find (const sl_req_t *req, int role, int kind)
{
    for (size_t i = 0; i < req->message_count; i++)
        for (size_t j = 0; req->messages [i].role == role && j < req->messages [i].count; j++)
            if (req->messages [i].parts [j].kind == kind)
                return &req->messages [i].parts [j];
    return NULL;
}

static bool
s_json_eq (sl_str_t a, const char *b)
{
    json_t *x = json_loadb (a.ptr ? a.ptr : "", a.len, JSON_DECODE_ANY, NULL), *y = json_loads (b, JSON_DECODE_ANY, NULL);
    bool eq = x && y && json_equal (x, y);
    json_decref (x);
    json_decref (y);
    return eq;
}

//  Parse body as a request to d's endpoint.
static int
s_parse (const sl_dialect_t *d, sl_str_t body, sl_job_t *out)
{
    sl_endpoint_t endpoint = { .dialect = d->id, .stream = true, .sse = true, .model = "m1" };
    return sl_job_parse (&endpoint, body, out);
}

Test (dialects, a_conversation_renders_parses_back_and_renders_the_same)
{
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        if (d->upstream_only)
            continue;                   //  no client parses its bodies: its module's tests read them
        sl_req_t *req = s_conversation ();
        sl_xlate_t x = { .from = "test", .to = d->name };
        sl_buf_t first = { 0 }, second = { 0 };
        cr_assert_eq (d->render (req, &x, &first), 0, "%s: %s", d->name, sl_buf_cstr (&x.message));
        cr_assert (sl_json_valid (sl_buf_str (&first)), "%s: %s", d->name, sl_buf_cstr (&first));
        if (!sl_dialect_is_client (d)) {
            //  No parser reads it back: rendered, and the same again.
            sl_xlate_clear (&x);
            x = (sl_xlate_t) { .from = "test", .to = d->name };
            cr_assert_eq (d->render (req, &x, &second), 0, "%s", d->name);
            cr_expect_str_eq (sl_buf_cstr (&first), sl_buf_cstr (&second), "%s", d->name);
            sl_xlate_clear (&x);
            sl_buf_free (&first);
            sl_buf_free (&second);
            sl_req_destroy (&req);
            continue;
        }
        sl_job_t back;
        cr_assert_eq (s_parse (d, sl_buf_str (&first), &back), 0, "%s: %s: %s", d->name,
                      sl_buf_cstr (&back.error_message), sl_buf_cstr (&first));
        const sl_req_t *n = back.req;
        const sl_part_t *p = s_find (n, SL_ROLE_SYSTEM, SL_PART_TEXT);
        cr_expect (p && sl_str_eq (p->text, "Be brief."), "%s: the instructions", d->name);
        p = s_find (n, SL_ROLE_USER, SL_PART_TEXT);
        cr_expect (p && sl_str_eq (p->text, "What is the weather in Paris?"), "%s: the question", d->name);
        p = s_find (n, SL_ROLE_USER, SL_PART_IMAGE);
        cr_expect (p && sl_str_eq (p->data, S_IMAGE) && sl_str_eq (p->media_type, "image/png"), "%s: the image",
                   d->name);
        p = s_find (n, SL_ROLE_ASSISTANT, SL_PART_TEXT);
        cr_expect (p && sl_str_eq (p->text, "Let me check."), "%s: the assistant's text", d->name);
        const sl_part_t *call = s_find (n, SL_ROLE_ASSISTANT, SL_PART_TOOL_CALL);
        cr_assert_not_null (call, "%s: the call", d->name);
        cr_expect (sl_str_eq (call->name, "get_weather"), "%s", d->name);
        cr_expect (s_json_eq (call->arguments, "{\"city\":\"Paris\"}"), "%s: %.*s", d->name,
                   (int) call->arguments.len, call->arguments.ptr);
        const sl_part_t *result = s_find (n, SL_ROLE_USER, SL_PART_TOOL_RESULT);
        cr_assert_not_null (result, "%s: the result", d->name);
        cr_expect (call->id.len && sl_str_eq_str (result->id, call->id), "%s: the result answers its call", d->name);
        cr_expect (sl_str_eq (sl_req_call_name (n, result->id), "get_weather"), "%s", d->name);
        cr_expect (result->content_count == 1 && sl_str_eq (result->content [0].text, "sunny"), "%s", d->name);
        cr_expect_not (result->is_error, "%s", d->name);
        bool thanks = false;
        for (size_t k = 0; k < n->message_count; k++)
            for (size_t j = 0; j < n->messages [k].count; j++)
                thanks |= sl_str_eq (n->messages [k].parts [j].text, "Thanks. And tomorrow?");
        cr_expect (thanks, "%s: the text after the result", d->name);
        cr_assert_eq (n->tool_count, 1, "%s", d->name);
        cr_expect (sl_str_eq (n->tools [0].name, "get_weather"), "%s", d->name);
        char *schema = json_dumps (n->tools [0].schema, JSON_COMPACT);
        cr_expect (schema && s_json_eq (sl_str (schema), S_SCHEMA), "%s: %s", d->name, schema);
        free (schema);
        cr_expect_eq (n->max_tokens, 100, "%s", d->name);
        cr_expect_float_eq (n->temperature, 0.5, 1e-9, "%s", d->name);
        cr_expect_eq (n->tool_choice, SL_CHOICE_AUTO, "%s", d->name);
        //  What it renders from what it parsed is what it rendered.
        sl_xlate_t x2 = { .from = "test", .to = d->name };
        cr_assert_eq (d->render (n, &x2, &second), 0, "%s", d->name);
        cr_expect_str_eq (sl_buf_cstr (&second), sl_buf_cstr (&first), "%s renders what it parses back the same",
                          d->name);
        sl_job_clear (&back);
        sl_buf_free (&first);
        sl_buf_free (&second);
        sl_xlate_clear (&x);
        sl_xlate_clear (&x2);
        sl_req_destroy (&req);
    }
}

Test (dialects, what_cannot_cross_is_refused_by_name)
{
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        //  A part only its client's dialect has.
        sl_req_t *req = s_conversation ();
        sl_part_t *doc = sl_req_add_part (&req->messages [1], SL_PART_OPAQUE);
        doc->text = SL_STR_LIT ("a klingon scroll");
        sl_xlate_t x = { .from = "test", .to = d->name };
        sl_buf_t out = { 0 };
        cr_expect_eq (d->render (req, &x, &out), -1, "%s", d->name);
        cr_expect_eq (x.status, 400, "%s", d->name);
        cr_expect_not_null (strstr (sl_buf_cstr (&x.message), "a klingon scroll"), "%s: %s", d->name,
                            sl_buf_cstr (&x.message));
        sl_xlate_clear (&x);
        sl_buf_free (&out);
        sl_req_destroy (&req);
        //  A provider's own tool.
        req = s_conversation ();
        sl_req_add_tool (req)->server = SL_STR_LIT ("klingon_search");
        x = (sl_xlate_t) { .from = "test", .to = d->name };
        cr_expect_eq (d->render (req, &x, &out), -1, "%s", d->name);
        cr_expect_not_null (strstr (sl_buf_cstr (&x.message), "provider's own tool"), "%s: %s", d->name,
                            sl_buf_cstr (&x.message));
        sl_xlate_clear (&x);
        sl_buf_free (&out);
        sl_req_destroy (&req);
    }
}

Test (dialects, thinking_goes_back_only_to_the_provider_that_signed_it)
{
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        const char *names [] = { d->name, "elsewhere" };
        for (int k = 0; k < 2; k++) {
            sl_req_t *req = s_conversation ();
            sl_buf_t tagged = { 0 };
            sl_sig_tag (names [k], SL_STR_LIT ("SIGNATURE-BYTES"), &tagged);
            sl_part_t *think = sl_req_add_part (&req->messages [2], SL_PART_THINKING);
            think->text = SL_STR_LIT ("pondering");
            think->signature = sl_buf_str (&tagged);
            sl_xlate_t x = { .from = "test", .to = d->name };
            sl_buf_t out = { 0 };
            cr_assert_eq (d->render (req, &x, &out), 0, "%s", d->name);
            cr_expect_null (strstr (sl_buf_cstr (&out), "sluice:"), "%s: no tag goes upstream", d->name);
            if (k == 1) {
                cr_expect_null (strstr (sl_buf_cstr (&out), "SIGNATURE-BYTES"), "%s: another's signature", d->name);
                cr_expect_gt (x.drop_count, 0, "%s: dropped and named", d->name);
            }
            sl_xlate_clear (&x);
            sl_buf_free (&out);
            sl_buf_free (&tagged);
            sl_req_destroy (&req);
        }
    }
}

//  --------------------------------------------------------------------------
//  Responses: renderer and validator over the shared judged streams

static void
s_start_crossed (driver_t *dr, int client, int upstream, uint32_t flags)
{
    memset (dr, 0, sizeof *dr);
    dr->em = sl_emitter_new ();
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.client_dialect = (uint8_t) client;
    start.upstream_dialect = (uint8_t) upstream;
    start.model = sl_str ("asked-model");
    start.reply_to = sl_str ("tcp://gw:1");
    start.flags = flags;
    sl_emitter_feed (dr->em, &start, recorder_emit, &dr->rec);
}

Test (dialects, every_client_gets_legal_output_from_every_upstream)
{
    for (size_t c = 0; c < sl_dialect_count (); c++)
        for (size_t u = 0; u < sl_dialect_count (); u++) {
            const sl_dialect_t *client = sl_dialect_at (c), *up = sl_dialect_at (u);
            if (client->upstream_only)
                continue;
            for (int streaming = 0; streaming < 2; streaming++) {
                driver_t dr;
                s_start_crossed (&dr, client->id, up->id, (streaming ? SL_F_STREAM : 0) | SL_F_USAGE);
                driver_full_response (&dr, NULL);
                const char *bytes = driver_bytes (&dr);
                cr_expect_eq (sl_emitter_stats (dr.em)->illegal, 0, "%s from %s (%s): %s", client->name, up->name,
                              streaming ? "streamed" : "whole", bytes);
                cr_expect_not_null (strstr (bytes, "sunny"), "%s from %s", client->name, up->name);
                cr_expect_not_null (strstr (bytes, "get_weather"), "%s from %s", client->name, up->name);
                if (client != up)
                    cr_expect_null (strstr (bytes, "example.org"), "%s from %s: citations do not cross",
                                    client->name, up->name);
                driver_stop (&dr);
            }
            //  A stream that fails mid-way ends the client's way.
            driver_t dr;
            s_start_crossed (&dr, client->id, up->id, SL_F_STREAM);
            driver_feed (&dr, driver_block (SL_B_START, SL_BK_TEXT, 0));
            sl_msg_t m = driver_block (SL_B_DELTA, SL_BK_TEXT, 0);
            m.text = sl_str ("partial");
            driver_feed (&dr, m);
            sl_msg_t err = recorder_msg (SL_MSG_ERROR, 0);
            err.code = sl_str ("overloaded_error");
            err.message = sl_str ("the upstream went away");
            driver_feed (&dr, err);
            driver_end (&dr);
            cr_expect_eq (sl_emitter_stats (dr.em)->illegal, 0, "%s from %s, failed", client->name, up->name);
            cr_expect_not_null (strstr (driver_bytes (&dr), "the upstream went away"), "%s: %s", client->name, driver_bytes (&dr));
            driver_stop (&dr);
        }
}

Test (dialects, error_bodies_and_model_lists_are_json)
{
    sl_model_entry_t models [] = { { "m-1", "p" }, { "m \"2\"", "q" } };
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        sl_buf_t out = { 0 };
        cr_expect_eq (sl_dialect_url (d, S_CLOUD_AT ("http://h/base"), SL_STR_LIT ("m-1"), &out, NULL), 0, "%s",
                      d->name);
        cr_expect_eq (strncmp (sl_buf_cstr (&out), "http://h/base/", 14), 0, "%s: %s", d->name, sl_buf_cstr (&out));
        cr_expect_eq (sl_dialect_finish_of (d, SL_STR_LIT ("no-such-finish")), SL_FIN_NONE, "%s", d->name);
        sl_buf_reset (&out);
        if (d->upstream_only) {
            sl_buf_free (&out);
            continue;                   //  no client reads its errors or lists
        }
        d->renderer->error_body (429, SL_STR_LIT ("rate_limit_error"), SL_STR_LIT ("slow \"down\""), &out);
        cr_expect (sl_json_valid (sl_buf_str (&out)), "%s: %s", d->name, sl_buf_cstr (&out));
        sl_buf_reset (&out);
        d->model_list (models, 2, &out);
        cr_expect (sl_json_valid (sl_buf_str (&out)), "%s: %s", d->name, sl_buf_cstr (&out));
        cr_expect_not_null (strstr (sl_buf_cstr (&out), "m-1"), "%s", d->name);
        sl_buf_reset (&out);
        d->model_list (models, 0, &out);
        cr_expect (sl_json_valid (sl_buf_str (&out)), "%s: an empty list: %s", d->name, sl_buf_cstr (&out));
        sl_buf_reset (&out);
        d->model (&models [1], &out);
        cr_expect (sl_json_valid (sl_buf_str (&out)), "%s: %s", d->name, sl_buf_cstr (&out));
        sl_buf_free (&out);
    }
}

//  --------------------------------------------------------------------------
//  The recordings

static void
s_collect (void *arg, const char *data, size_t size)
{
    sl_buf_append ((sl_buf_t *) arg, data, size);
}

Test (dialects, every_recording_decodes_and_renders_for_every_client, .timeout = 120)
{
    static rec_file_t files [256];
    size_t count = rec_list (files, 256, "dialects");
    for (size_t f = 0; f < count; f++) {
        const rec_file_t *file = &files [f];
        sl_buf_t capture = { 0 };
        cr_assert (rec_read (file->path, &capture), "%s", file->path);
        for (size_t c = 0; c < sl_dialect_count (); c++) {
            const sl_dialect_t *client = sl_dialect_at (c);
            if (client->upstream_only)
                continue;
            sl_buf_t out = { 0 };
            const char *why = NULL;
            sl_replay_opts_t opts = { .dialect = file->dialect, .render = client->id };
            sl_replay_t *r = sl_replay_new (&opts, s_collect, &out, &why);
            cr_assert_not_null (r, "%s", why ? why : "");
            int rc = sl_replay_feed (r, capture.data, capture.len);
            if (rc == 0)
                rc = sl_replay_finish (r);
            cr_expect_eq (rc, 0, "%s for a %s client: %s", file->name, client->name, sl_replay_error (r));
            cr_expect_null (strstr (sl_buf_cstr (&out), "sluice withheld"),
                            "%s for a %s client: nothing withheld: %s", file->name, client->name,
                            sl_buf_cstr (&out));
            cr_expect_gt (out.len, 0, "%s for a %s client", file->name, client->name);
            sl_replay_destroy (&r);
            sl_buf_free (&out);
        }
        sl_buf_free (&capture);
    }
}

//  --------------------------------------------------------------------------
//  What the emitter does to a stream that crosses

Test (dialects, signatures_cross_tagged_with_their_provider)
{
    for (size_t c = 0; c < sl_dialect_count (); c++) {
        const sl_dialect_t *client = sl_dialect_at (c);
        if (client->id == SL_DIALECT_OPENAI || client->upstream_only)
            continue;                   //  Chat Completions carries no signature
        for (size_t u = 0; u < sl_dialect_count (); u++) {
            const sl_dialect_t *up = sl_dialect_at (u);
            driver_t dr;
            s_start_crossed (&dr, client->id, up->id, SL_F_STREAM);
            driver_full_response (&dr, NULL);
            const char *bytes = driver_bytes (&dr);
            char tagged [64];
            snprintf (tagged, sizeof tagged, "sluice:%s:sig-abc", up->name);
            //  One format (a cloud's door to the client's own provider):
            //  the signature is the model's own, as it came.
            if (sl_dialect_same_format (client->id, up->id))
                cr_expect (strstr (bytes, "sig-abc") && !strstr (bytes, "sluice:"), "%s from %s: as it came: %s",
                           client->name, up->name, bytes);
            else
                cr_expect_not_null (strstr (bytes, tagged), "%s from %s: %s", client->name, up->name, bytes);
            driver_stop (&dr);
        }
    }
}

Test (dialects, a_providers_own_tools_do_not_cross_and_are_counted)
{
    for (size_t c = 0; c < sl_dialect_count (); c++)
        for (size_t u = 0; u < sl_dialect_count (); u++) {
            const sl_dialect_t *client = sl_dialect_at (c), *up = sl_dialect_at (u);
            if (client->upstream_only || sl_dialect_same_format (client->id, up->id))
                continue;
            driver_t dr;
            s_start_crossed (&dr, client->id, up->id, SL_F_STREAM);
            driver_server_tools_response (&dr);
            const char *bytes = driver_bytes (&dr);
            cr_expect_eq (sl_emitter_stats (dr.em)->illegal, 0, "%s from %s", client->name, up->name);
            cr_expect_null (strstr (bytes, "srvtoolu_1"), "%s from %s: %s", client->name, up->name, bytes);
            cr_expect_geq (sl_emitter_stats (dr.em)->translation_dropped, 2, "the use and its result, counted");
            cr_expect_eq (sl_emitter_stats (dr.em)->translated, 1);
            driver_stop (&dr);
        }
}

Test (dialects, a_call_goes_to_the_client_by_the_id_it_answers_with)
{
    //  A Responses call has an item id and a call id; a client of
    //  another dialect answers with the call id.
    for (size_t c = 0; c < sl_dialect_count (); c++) {
        const sl_dialect_t *client = sl_dialect_at (c);
        if (client->upstream_only)
            continue;
        driver_t dr;
        s_start_crossed (&dr, client->id, SL_DIALECT_RESPONSES, SL_F_STREAM);
        sl_msg_t m = driver_block (SL_B_START, SL_BK_TOOL_CALL, 0);
        m.id = sl_str ("fc_item");
        m.call_id = sl_str ("call_answer");
        m.name = sl_str ("f");
        driver_feed (&dr, m);
        m = driver_block (SL_B_END, SL_BK_TOOL_CALL, 0);
        m.id = sl_str ("fc_item");
        m.call_id = sl_str ("call_answer");
        m.name = sl_str ("f");
        m.text = sl_str ("{}");
        m.flags = SL_F_ARGS_VALID;
        driver_feed (&dr, m);
        m = driver_block (SL_B_FINISH, 0, -1);
        m.finish = SL_FIN_TOOL_CALLS;
        driver_feed (&dr, m);
        driver_end (&dr);
        const char *bytes = driver_bytes (&dr);
        cr_expect_not_null (strstr (bytes, "call_answer"), "%s: %s", client->name, bytes);
        if (client->id != SL_DIALECT_RESPONSES)
            cr_expect_null (strstr (bytes, "fc_item"), "%s: not the item id: %s", client->name, bytes);
        cr_expect_eq (sl_emitter_stats (dr.em)->illegal, 0, "%s", client->name);
        driver_stop (&dr);
    }
}

//  --------------------------------------------------------------------------
//  Defaults: the built-in provider of every dialect

Test (dialects, every_dialect_has_a_built_in_provider_and_its_options)
{
    sl_providers_t *defaults = sl_providers_new_default (NULL);
    cr_assert_not_null (defaults);
    size_t clients = 0;
    for (size_t i = 0; i < sl_dialect_count (); i++)
        clients += sl_dialect_is_client (sl_dialect_at (i));
    //  A cloud's door has none: its region, project or resource are the
    //  routes file's to say.
    cr_expect_eq (sl_providers_provider_count (defaults), clients);
    sl_baseurls_t *urls = sl_baseurls_new ();
    cr_assert_not_null (urls);
    const sl_opt_t *opts = sl_baseurls_opts (urls, NULL);
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        if (d->upstream_only) {
            cr_expect_null (sl_providers_find (defaults, sl_str (d->name)), "%s", d->name);
            continue;
        }
        cr_expect (strncmp (d->base_url, "https://", 8) == 0, "%s: %s", d->name, d->base_url);
        char option [SL_DIALECT_OPTION_MAX], variable [SL_DIALECT_OPTION_MAX], key [SL_DIALECT_OPTION_MAX];
        sl_dialect_option (d, SL_DIALECT_BASE_URL_OPTION, option);
        sl_dialect_option (d, SL_DIALECT_BASE_URL_VARIABLE, variable);
        sl_dialect_option (d, SL_DIALECT_KEY_VARIABLE, key);
        //  Its built-in provider: named after it, at its base URL, with
        //  its vendor's key.
        const sl_provider_t *p = sl_providers_find (defaults, sl_str (d->name));
        cr_assert_not_null (p, "%s: a built-in provider", d->name);
        cr_expect_eq (p->dialect, d->id, "%s", d->name);
        cr_expect_str_eq (p->base_url, d->base_url, "%s", d->name);
        cr_expect_str_eq (p->key_env, key, "%s", d->name);
        //  The option that moves it, among sluice-ingest's.
        const sl_opt_t *o = opts;
        while (o->name && strcmp (o->name, option) != 0)
            o++;
        cr_assert_not_null (o->name, "%s: the option %s", d->name, option);
        cr_expect_str_eq (o->env, variable, "%s", d->name);
        cr_expect_str_eq (*o->value, d->base_url, "%s: its default", d->name);
        cr_expect_str_eq (sl_baseurls_table (urls) [d->id], d->base_url, "%s", d->name);
    }
    sl_baseurls_destroy (&urls);
    sl_providers_destroy (&defaults);
}

Test (dialects, the_option_and_variable_names_are_the_ones_services_always_had)
{
    //  Interfaces: scripts, compose files and tests set these.
    static const struct {
        int dialect;
        const char *option, *variable, *key;
    } names [] = {
        { SL_DIALECT_OPENAI, "openai-base-url", "SLUICE_OPENAI_BASE_URL", "OPENAI_API_KEY" },
        { SL_DIALECT_RESPONSES, "openai-base-url", "SLUICE_OPENAI_BASE_URL", "OPENAI_API_KEY" },
        { SL_DIALECT_ANTHROPIC, "anthropic-base-url", "SLUICE_ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY" },
        { SL_DIALECT_GEMINI, "gemini-base-url", "SLUICE_GEMINI_BASE_URL", "GEMINI_API_KEY" },
    };
    for (size_t i = 0; i < sizeof names / sizeof names [0]; i++) {
        const sl_dialect_t *d = sl_dialect_get (names [i].dialect);
        char out [SL_DIALECT_OPTION_MAX];
        sl_dialect_option (d, SL_DIALECT_BASE_URL_OPTION, out);
        cr_expect_str_eq (out, names [i].option);
        sl_dialect_option (d, SL_DIALECT_BASE_URL_VARIABLE, out);
        cr_expect_str_eq (out, names [i].variable);
        sl_dialect_option (d, SL_DIALECT_KEY_VARIABLE, out);
        cr_expect_str_eq (out, names [i].key);
    }
    cr_expect (sl_dialect_vendor_first (sl_dialect_get (SL_DIALECT_OPENAI)));
    cr_expect_not (sl_dialect_vendor_first (sl_dialect_get (SL_DIALECT_RESPONSES)), "OpenAI's second dialect");
    cr_expect (sl_dialect_vendor_first (sl_dialect_get (SL_DIALECT_ANTHROPIC)));
    cr_expect_str_eq (sl_dialect_get (SL_DIALECT_OPENAI)->base_url, "https://api.openai.com/v1");
    cr_expect_str_eq (sl_dialect_get (SL_DIALECT_ANTHROPIC)->base_url, "https://api.anthropic.com");
    cr_expect_str_eq (sl_dialect_get (SL_DIALECT_GEMINI)->base_url, "https://generativelanguage.googleapis.com/v1beta");
}

//  --------------------------------------------------------------------------
//  A question: how an LLM judge asks a model of the dialect

Test (dialects, a_dialect_that_asks_writes_the_question_and_reads_the_mocks_answer)
{
    size_t asking = 0;
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        if (!sl_dialect_asks (d))
            continue;
        asking++;
        //  The question: JSON naming what was asked.
        sl_llm_spec_t spec;
        sl_llm_spec_defaults (&spec);
        spec.dialect = d->id;
        spec.model = (char *) "judge-allow";
        sl_buf_t body = { 0 };
        sl_llm_request_body (&spec, SL_STR_LIT ("is \"this\" call safe?"), &body);
        json_t *root = json_loadb (body.data, body.len, 0, NULL);
        cr_assert (json_is_object (root), "%s: %s", d->name, sl_buf_cstr (&body));
        cr_expect_str_eq (json_string_value (json_object_get (root, "model")), "judge-allow", "%s", d->name);
        cr_expect_not_null (strstr (sl_buf_cstr (&body), "is \\\"this\\\" call safe?"), "%s: %s", d->name,
                            sl_buf_cstr (&body));
        cr_expect_not_null (strstr (sl_buf_cstr (&body), "probability"), "%s: the instructions", d->name);
        json_decref (root);
        //  Its URL, at the vendor's base URL.
        char *url = sl_llm_default_url (d->id, "judge-allow");
        cr_assert_not_null (url, "%s", d->name);
        cr_expect_eq (strncmp (url, d->base_url, strlen (d->base_url)), 0, "%s: %s", d->name, url);
        //  The mock, asked at that URL's path, answers in the dialect; the
        //  answer reader finds the judge's text in it.
        const char *path = strstr (url + strlen ("https://"), "/");
        const sl_mock_provider_t *mock = sl_mock_provider_of_path (path, (char [64]) { 0 }, 64);
        cr_assert (mock && mock->dialect == d->id, "%s: the mock serves %s", d->name, path);
        cr_assert_not_null (mock->whole, "%s: the mock can answer it whole", d->name);
        sl_buf_t answer = { 0 };
        mock->whole ("judge-allow", "{\"probability\": 0.25}", &answer);
        sl_llm_result_t result;
        cr_expect_eq (sl_llm_parse_answer (d->id, 200, sl_buf_str (&answer), &result), 0, "%s: %s", d->name,
                      result.error ? result.error : "");
        cr_expect_float_eq (result.probability, 0.25, 1e-9, "%s", d->name);
        sl_llm_result_clear (&result);
        //  A policy may name it.
        char yaml [512];
        snprintf (yaml, sizeof yaml, "rules:\n  - id: r\n    tool: x\n    llm_judge: {api: %s, model: m}\n",
                  d->name);
        char *error = NULL;
        sl_policy_t *policy = sl_policy_parse (yaml, strlen (yaml), "p.yaml", &error);
        cr_expect_not_null (policy, "%s: %s", d->name, error ? error : "");
        if (policy)
            cr_expect_eq (sl_policy_llm_spec (policy, 0)->dialect, d->id, "%s", d->name);
        sl_policy_unref (&policy);
        free (error);
        free (url);
        sl_buf_free (&answer);
        sl_buf_free (&body);
    }
    cr_expect_geq (asking, 2, "OpenAI and Anthropic judges");
}

//  --------------------------------------------------------------------------
//  The mock upstream plays every dialect

Test (dialects, the_mock_plays_every_dialect)
{
    const char *why = NULL;
    cr_assert_eq (sl_mock_provider_init (&why), 0, "%s", why ? why : "");
    cr_expect_eq (sl_mock_provider_count (), sl_dialect_count ());
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        const sl_mock_provider_t *mock = sl_mock_provider_get (d->id);
        cr_assert_not_null (mock, "%s: a mock provider", d->name);
        cr_expect_eq (mock->dialect, d->id);
        cr_expect_eq (sl_mock_provider_check_table (mock, &why), 0, "%s: %s", d->name, why ? why : "");
        //  It serves the path the dialect's upstream calls.
        sl_buf_t url = { 0 };
        cr_assert_eq (sl_dialect_url (d, S_CLOUD_AT ("http://mock/base"), SL_STR_LIT ("mock-tools"), &url, NULL), 0,
                      "%s", d->name);
        char path [256], model [64] = "";
        snprintf (path, sizeof path, "%s", sl_buf_cstr (&url) + strlen ("http://mock"));
        char *query = strchr (path, '?');
        if (query)
            *query = 0;
        cr_expect_eq (sl_mock_provider_of_path (path, model, sizeof model), mock, "%s: %s", d->name, path);
        if (mock->model_in_path)
            cr_expect_str_eq (model, "mock-tools", "%s: the model in the path", d->name);
        sl_buf_free (&url);
        //  It takes the conversation the dialect renders.
        sl_req_t *req = s_conversation ();
        sl_xlate_t x = { .from = "test", .to = d->name };
        sl_buf_t body = { 0 };
        cr_assert_eq (d->render (req, &x, &body), 0, "%s", d->name);
        char refusal [512] = "";
        cr_expect_eq (sl_mock_provider_check (d->id, sl_buf_str (&body), refusal, sizeof refusal), 0, "%s: %s: %s",
                      d->name, refusal, sl_buf_cstr (&body));
        sl_xlate_clear (&x);
        sl_req_destroy (&req);
        //  Its scripted stream decodes with the dialect's decoder, to the end.
        sl_mock_script_t script;
        cr_assert_eq (sl_mock_script_build (d->id, SL_STR_LIT ("mock-text"), sl_buf_str (&body), 0, 0, &script), 0);
        script_sink_t sink = script_decode (d->id, &script);
        cr_expect_eq (sink.failures + sink.errors, 0, "%s", d->name);
        cr_expect (sink.done, "%s: to the provider's end", d->name);
        cr_expect_not_null (strstr (sl_buf_cstr (&sink.text), "mock upstream"), "%s: %s", d->name,
                            sl_buf_cstr (&sink.text));
        cr_expect_eq (sl_decoder_unknown (sink.dec), 0, "%s: nothing the decoder does not know", d->name);
        script_sink_free (&sink);
        sl_mock_script_clear (&script);
        //  Its errors are JSON in its format.
        sl_mock_script_not_found (d->id, "no \"such\" model", &script);
        cr_expect (sl_json_valid (sl_buf_str (&script.error_body)), "%s: %s", d->name,
                   sl_buf_cstr (&script.error_body));
        sl_mock_script_clear (&script);
        sl_buf_free (&body);
    }
}
