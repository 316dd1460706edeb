/*  sl_dialect.c - the registry of dialect modules (see sl_dialect.h).

    The one place that names the modules. Each registers at start (first
    use, or sl_dialect_init from a service's start-up) and is checked then:
    a table that lacks a required operation is refused with the name of
    what is missing, and nothing is registered in its place. Names are the
    modules' own: the registry answers a wire id's name and a name's id.

    Tests: tests/unit/common/dialects/test_dialects.c, the conformance
    suite (the registry, its checks, and what it reads from the tables).
*/
#include "common/dialects/sl_dialect.h"

#include <assert.h>
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_json.h"
#include "common/dialects/sl_decoder_impl.h"
#include "common/http/sl_auth.h"
#include "common/dialects/sl_render.h"
#include "common/dialects/sl_validate_impl.h"

//  The modules, in wire id order (common/dialects/<name>/sl_<name>.c).
extern const sl_dialect_t sl_openai_dialect;
extern const sl_dialect_t sl_anthropic_dialect;
extern const sl_dialect_t sl_responses_dialect;
extern const sl_dialect_t sl_gemini_dialect;
extern const sl_dialect_t sl_bedrock_dialect;
extern const sl_dialect_t sl_bedrock_anthropic_dialect;
extern const sl_dialect_t sl_vertex_dialect;
extern const sl_dialect_t sl_vertex_anthropic_dialect;
extern const sl_dialect_t sl_azure_dialect;

static const sl_dialect_t *const s_builtin [] = {
    &sl_openai_dialect,
    &sl_anthropic_dialect,
    &sl_responses_dialect,
    &sl_gemini_dialect,
    &sl_bedrock_dialect,
    &sl_bedrock_anthropic_dialect,
    &sl_vertex_dialect,
    &sl_vertex_anthropic_dialect,
    &sl_azure_dialect,
};
//  Wire ids given before their modules are written: nothing registers
//  them, so a job naming one is refused as any unknown id is. A module
//  written moves its id from here to s_builtin. Ended by SL_DIALECT_NONE,
//  so that the list may be empty (every id given has its module).
static const int s_reserved [] = {
    SL_DIALECT_NONE
};
#define S_RESERVED_COUNT (sizeof s_reserved / sizeof s_reserved [0] - 1)
//  One module or one reservation for every wire id (proto/sl_msg.h), and
//  no more (s_init_once checks that they are not the same ids).
_Static_assert (sizeof s_builtin / sizeof s_builtin [0] + S_RESERVED_COUNT
                == SL_DIALECT_MAX - 1, "a dialect module for every wire dialect id");

#define S_MAX SL_DIALECT_MAX            //  ids 1 .. SL_DIALECT_MAX - 1

static const sl_dialect_t *s_by_id [S_MAX];
static size_t s_count;
static pthread_once_t s_once = PTHREAD_ONCE_INIT;
static const char *s_init_why;          //  why the built-ins did not register
static int s_init_rc;

int
sl_refuse (sl_refusal_t *r, int status, const char *type, const char *format, ...)
{
    r->status = status;
    r->type = type;
    sl_buf_reset (&r->message);
    va_list args;
    va_start (args, format);
    sl_buf_vprintf (&r->message, format, args);
    va_end (args);
    return -1;
}

void
sl_question_begin (const sl_question_t *q, sl_buf_t *out)
{
    sl_buf_puts (out, "{\"model\":");
    sl_json_put_sl (out, q->model);
    sl_buf_printf (out, ",\"max_tokens\":%lld,\"temperature\":%.15g", (long long) q->max_tokens, q->temperature);
}

#define S_REQUIRE(cond, what) \
    do { if (!(cond)) { *why = what; return -1; } } while (0)

//  A name that can stand in an option, a variable and a path:
//  [a-z][a-z0-9]*, shorter than SL_DIALECT_NAME_MAX; with dash, words of
//  those joined by single dashes ("vertex-anthropic"): a dialect's name,
//  which is never made into an option or a variable (its vendor's is).
static bool
s_name_ok (const char *name, bool dash)
{
    if (!name || !islower ((unsigned char) *name) || strlen (name) >= SL_DIALECT_NAME_MAX)
        return false;
    for (const char *p = name; *p; p++) {
        if (dash && *p == '-' && p [1] && p [1] != '-')
            continue;
        if (!islower ((unsigned char) *p) && !isdigit ((unsigned char) *p))
            return false;
    }
    return true;
}

static bool
s_plain_name (const char *name)
{
    return s_name_ok (name, false);
}

static bool
s_http_url (const char *url)
{
    return url && ((strncmp (url, "http://", 7) == 0 && url [7]) || (strncmp (url, "https://", 8) == 0 && url [8]))
        && url [strlen (url) - 1] != '/';
}

//  An upstream-only dialect has no client side; the format its requests
//  and streams are in is a client dialect's (format), or its own.
static int
s_upstream_only_ok (const sl_dialect_t *d, const char **why)
{
    S_REQUIRE (!d->paths && !d->family && !d->endpoint && !d->query_key,
               "an upstream-only dialect has no client endpoint");
    S_REQUIRE (!d->parse, "an upstream-only dialect parses no client request");
    S_REQUIRE (!d->renderer && !d->validator, "an upstream-only dialect renders nothing for clients");
    S_REQUIRE (!d->models_path && !d->models_header && !d->model_list && !d->model && !d->models_path_also,
               "an upstream-only dialect lists no models");
    S_REQUIRE (d->format != d->id, "an upstream-only dialect's format is a client dialect's, or none");
    return 0;
}

int
sl_dialect_check (const sl_dialect_t *d, const char **why)
{
    const char *ignored;
    if (!why)
        why = &ignored;
    S_REQUIRE (d, "no table");
    S_REQUIRE (d->id > SL_DIALECT_NONE && d->id < SL_DIALECT_MAX, "id out of range");
    S_REQUIRE (s_name_ok (d->name, true), "name is not [a-z][a-z0-9]* words joined by '-'");
    if (d->upstream_only)
        S_REQUIRE (s_upstream_only_ok (d, why) == 0, *why);
    else {
        S_REQUIRE (d->endpoint || d->paths, "endpoint missing");
        S_REQUIRE (d->parse, "parse missing");
        S_REQUIRE (!d->format || d->format == d->id, "a client dialect's format is its own");
    }
    //  forward serves the clients of its format: an upstream-only dialect
    //  of a format of its own has none.
    S_REQUIRE (d->forward || (d->upstream_only && !d->format), "forward missing");
    S_REQUIRE (d->render, "render missing");
    S_REQUIRE (d->url || d->url_path, "url missing");
    S_REQUIRE (d->credential && *d->credential, "credential header missing");
    S_REQUIRE (d->scheme, "credential scheme missing");
    S_REQUIRE (d->headers, "headers list missing");
    S_REQUIRE (d->decoder, "decoder missing");
    S_REQUIRE (d->decoder->event && ((!d->decoder->init && !d->decoder->clear) || d->decoder->state_size),
               "decoder operation missing");
    S_REQUIRE (d->finishes, "finish values missing");
    S_REQUIRE (!(d->provider_fields & ~SL_PROVIDER_FIELD_ALL) && !(d->provider_needs & ~d->provider_fields),
               "provider fields: one unknown, or needed but not read");
    S_REQUIRE (d->auth >= SL_AUTH_KEY && d->auth < SL_AUTH_KIND_MAX, "unknown credential kind");
    if (d->upstream_only) {
        //  No client calls it: a built-in provider, its option and a
        //  question are a client dialect's, and a cloud's base URL may be
        //  made from the provider's fields (its url operation's).
        S_REQUIRE (!d->base_url || s_http_url (d->base_url), "base URL not http:// or https:// (no trailing slash)");
        S_REQUIRE (!d->question && !d->answer, "an upstream-only dialect asks no question");
        return 0;
    }
    S_REQUIRE (d->renderer, "renderer missing");
    S_REQUIRE (d->renderer->keepalive && d->renderer->keepalive [0], "renderer keep-alive missing");
    S_REQUIRE (d->renderer->block && d->renderer->error && d->renderer->end && d->renderer->error_body
               && d->renderer->body, "renderer operation missing");
    S_REQUIRE (!d->renderer->clear || d->renderer->state_size, "renderer clear without state");
    S_REQUIRE (d->validator, "validator missing");
    S_REQUIRE (d->validator->event && d->validator->body, "validator operation missing");
    S_REQUIRE (!d->models_path || (d->model_list && d->model), "model list operation missing");
    S_REQUIRE (!d->models_path_also == !d->models_header_also && (!d->models_path_also || d->models_path),
               "a second model list path needs its header and a first path");
    S_REQUIRE (!d->vendor || s_plain_name (d->vendor), "vendor is not [a-z][a-z0-9]*");
    S_REQUIRE (s_http_url (d->base_url), "base URL missing (http:// or https://, no trailing slash)");
    S_REQUIRE (!d->question == !d->answer, "question without answer, or answer without question");
    return 0;
}

int
sl_dialect_conflicts (const sl_dialect_t *d, const char **why)
{
    const char *ignored;
    if (!why)
        why = &ignored;
    for (int id = 1; id < S_MAX; id++) {
        const sl_dialect_t *other = s_by_id [id];
        if (!other || id == d->id)
            continue;
        S_REQUIRE (strcmp (other->name, d->name) != 0, "name registered twice");
        //  One option sets a vendor's base URL: its dialects must agree
        //  on the default.
        S_REQUIRE (other->upstream_only || d->upstream_only
                   || strcmp (sl_dialect_vendor (other), sl_dialect_vendor (d)) != 0
                   || strcmp (other->base_url, d->base_url) == 0,
                   "another dialect of its vendor has another base URL");
    }
    return 0;
}

static int
s_register (const sl_dialect_t *d, const char **why)
{
    if (sl_dialect_check (d, why))
        return -1;
    if (d->format && (d->format <= SL_DIALECT_NONE || d->format >= S_MAX || !s_by_id [d->format]
                      || s_by_id [d->format]->upstream_only)) {
        *why = "its format is not a registered client dialect";
        return -1;
    }
    if (s_by_id [d->id]) {
        *why = "id registered twice";
        return -1;
    }
    if (sl_dialect_conflicts (d, why))
        return -1;
    s_by_id [d->id] = d;
    s_count++;
    return 0;
}

static void
s_init_once (void)
{
    for (const int *r = s_reserved; *r; r++)
        for (size_t j = 0; j < sizeof s_builtin / sizeof s_builtin [0]; j++)
            if (s_builtin [j]->id == *r) {
                s_init_why = "a dialect's wire id is both reserved and registered";
                s_init_rc = -1;
                return;
            }
    for (size_t i = 0; i < sizeof s_builtin / sizeof s_builtin [0]; i++) {
        const char *why = NULL;
        if (s_register (s_builtin [i], &why)) {
            static char text [160];
            snprintf (text, sizeof text, "dialect %s: %s",
                      s_builtin [i] && s_builtin [i]->name ? s_builtin [i]->name : "?", why);
            s_init_why = text;
            s_init_rc = -1;
            return;
        }
    }
}

int
sl_dialect_init (const char **why)
{
    pthread_once (&s_once, s_init_once);
    if (why)
        *why = s_init_why;
    return s_init_rc;
}

//  The built-ins are our own code: one that does not register is a bug,
//  and sl_dialect_init at a service's start reports it before anything
//  else runs.
static void
s_ready (void)
{
    int rc = sl_dialect_init (NULL);
    assert (rc == 0);
    (void) rc;
}

int
sl_dialect_register (const sl_dialect_t *dialect, const char **why)
{
    const char *ignored;
    s_ready ();
    return s_register (dialect, why ? why : &ignored);
}

const sl_dialect_t *
sl_dialect_get (int id)
{
    s_ready ();
    return id > SL_DIALECT_NONE && id < S_MAX ? s_by_id [id] : NULL;
}

const sl_dialect_t *
sl_dialect_find (const char *name)
{
    return sl_dialect_get (sl_dialect_parse (name));
}

const char *
sl_dialect_name (int id)
{
    if (id == SL_DIALECT_NONE)
        return "none";
    const sl_dialect_t *d = sl_dialect_get (id);
    return d ? d->name : "?";
}

int
sl_dialect_parse (const char *name)
{
    s_ready ();
    for (int id = 1; name && id < S_MAX; id++)
        if (s_by_id [id] && strcmp (s_by_id [id]->name, name) == 0)
            return id;
    return 0;
}

void
sl_dialect_names (const char *sep, const char *last, bool (*with) (const sl_dialect_t *dialect), sl_buf_t *out)
{
    s_ready ();
    const sl_dialect_t *pending = NULL;    //  written once we know whether it is the last
    size_t written = 0;
    for (int id = 1; id < S_MAX; id++) {
        const sl_dialect_t *d = s_by_id [id];
        if (!d || (with && !with (d)))
            continue;
        if (pending) {
            if (written++)
                sl_buf_puts (out, sep);
            sl_buf_puts (out, pending->name);
        }
        pending = d;
    }
    if (pending) {
        if (written)
            sl_buf_puts (out, last);
        sl_buf_puts (out, pending->name);
    }
}

bool
sl_dialect_asks (const sl_dialect_t *dialect)
{
    return dialect && dialect->question && dialect->answer;
}

const char *
sl_dialect_vendor (const sl_dialect_t *dialect)
{
    return dialect->vendor ? dialect->vendor : dialect->name;
}

bool
sl_dialect_vendor_first (const sl_dialect_t *dialect)
{
    s_ready ();
    for (int id = 1; id < S_MAX; id++)
        if (s_by_id [id] && strcmp (sl_dialect_vendor (s_by_id [id]), sl_dialect_vendor (dialect)) == 0)
            return s_by_id [id] == dialect;
    return false;
}

void
sl_dialect_option (const sl_dialect_t *dialect, sl_dialect_option_t which, char *out)
{
    static const char *const formats [] = {
        [SL_DIALECT_BASE_URL_OPTION] = "%s-base-url",
        [SL_DIALECT_BASE_URL_VARIABLE] = "SLUICE_%s_BASE_URL",
        [SL_DIALECT_KEY_VARIABLE] = "%s_API_KEY",
    };
    assert (which >= SL_DIALECT_BASE_URL_OPTION && which <= SL_DIALECT_KEY_VARIABLE);
    const char *vendor = sl_dialect_vendor (dialect);
    char upper [SL_DIALECT_NAME_MAX];
    size_t n = 0;
    for (; vendor [n] && n < sizeof upper - 1; n++)
        upper [n] = (char) toupper ((unsigned char) vendor [n]);
    upper [n] = 0;
    snprintf (out, SL_DIALECT_OPTION_MAX, formats [which],
              which == SL_DIALECT_BASE_URL_OPTION ? vendor : upper);
}

size_t
sl_dialect_count (void)
{
    s_ready ();
    return s_count;
}

const sl_dialect_t *
sl_dialect_at (size_t index)
{
    s_ready ();
    for (int id = 1; id < S_MAX; id++)
        if (s_by_id [id] && index-- == 0)
            return s_by_id [id];
    return NULL;
}

//  A dialect's endpoint by its paths: 1 one of them, 0 one of its
//  family, -1 none of its.
static int
s_paths (const sl_dialect_t *d, const char *path)
{
    for (const char *const *p = d->paths; *p; p++)
        if (strcmp (path, *p) == 0)
            return 1;
    return d->family && strncmp (path, d->family, strlen (d->family)) == 0 ? 0 : -1;
}

int
sl_dialect_endpoint (const char *path, sl_endpoint_t *out)
{
    s_ready ();
    int looks_like = 0;
    for (int id = 1; id < S_MAX; id++) {
        const sl_dialect_t *d = s_by_id [id];
        if (!d || d->upstream_only)
            continue;
        sl_endpoint_t ep;
        memset (&ep, 0, sizeof ep);
        int rc = d->endpoint ? d->endpoint (path, &ep) : s_paths (d, path);
        if (rc == 1) {
            *out = ep;
            out->dialect = id;
            return 1;
        }
        if (rc == 0 && !looks_like)
            looks_like = id;
    }
    memset (out, 0, sizeof *out);
    out->dialect = looks_like;
    return 0;
}

//  How well a GET of path (with these headers) is a dialect's model list:
//  0 not at all, 1 its path, 2 its path and the header only its SDKs
//  send. *rest: "" for the list, the model id for one model (an id with
//  ':' is a method, not a model).
static int
s_models_at (const char *models_path, const char *models_header, const char *path, sl_header_fn *header,
             void *arg, const char **rest)
{
    size_t n = strlen (models_path);
    if (strncmp (path, models_path, n) != 0 || (path [n] && path [n] != '/') || strchr (path, ':'))
        return 0;
    if (models_header && (!header || !header (arg, models_header)))
        return 0;
    *rest = path [n] ? path + n + 1 : "";
    return models_header ? 2 : 1;
}

static int
s_models (const sl_dialect_t *d, const char *path, sl_header_fn *header, void *arg, const char **rest)
{
    if (!d || !d->models_path)
        return 0;
    int score = s_models_at (d->models_path, d->models_header, path, header, arg, rest);
    if (!score && d->models_path_also)
        score = s_models_at (d->models_path_also, d->models_header_also, path, header, arg, rest);
    return score;
}

const sl_dialect_t *
sl_dialect_models (const char *path, sl_header_fn *header, void *arg, const char **rest)
{
    s_ready ();
    const sl_dialect_t *best = NULL;
    int best_score = 0;
    for (int id = 1; id < S_MAX; id++) {
        const char *r = NULL;
        int score = s_models (s_by_id [id], path, header, arg, &r);
        if (score > best_score) {
            best = s_by_id [id];
            best_score = score;
            *rest = r;
        }
    }
    return best;
}

int
sl_dialect_finish_of (const sl_dialect_t *dialect, sl_str_t raw)
{
    for (const sl_finish_name_t *f = dialect->finishes; f->raw; f++)
        if (sl_str_eq (raw, f->raw))
            return f->finish;
    return SL_FIN_NONE;
}

int
sl_dialect_url (const sl_dialect_t *dialect, const sl_provider_t *provider, sl_str_t model, sl_buf_t *out,
                sl_buf_t *why)
{
    sl_buf_t ignored = { 0 };
    int rc;
    if (dialect->url)
        rc = dialect->url (provider, model, out, why ? why : &ignored);
    else {
        const char *base = provider->base_url && *provider->base_url ? provider->base_url : dialect->base_url;
        if (base) {
            sl_buf_printf (out, "%s%s", base, dialect->url_path);
            rc = 0;
        }
        else {
            sl_buf_printf (why ? why : &ignored, "provider '%s' has no base_url", provider->name);
            rc = -1;
        }
    }
    sl_buf_free (&ignored);
    return rc;
}

int
sl_dialect_format (int id)
{
    const sl_dialect_t *d = sl_dialect_get (id);
    return d && d->format ? d->format : id;
}

bool
sl_dialect_same_format (int a, int b)
{
    return a == b || sl_dialect_format (a) == sl_dialect_format (b);
}

bool
sl_dialect_is_client (const sl_dialect_t *dialect)
{
    return dialect && !dialect->upstream_only;
}

bool
sl_dialect_reserved (int id)
{
    for (const int *r = s_reserved; *r; r++)
        if (*r == id)
            return true;
    return false;
}

int
sl_dialect_finish (int upstream, sl_str_t raw)
{
    if (!raw.ptr)
        return SL_FIN_NONE;
    const sl_dialect_t *d = sl_dialect_get (upstream);
    int finish = d ? sl_dialect_finish_of (d, raw) : SL_FIN_NONE;
    for (int id = 1; id < S_MAX && finish == SL_FIN_NONE; id++)
        if (s_by_id [id] && id != upstream)
            finish = sl_dialect_finish_of (s_by_id [id], raw);
    return finish == SL_FIN_NONE ? SL_FIN_STOP : finish;
}

//  --------------------------------------------------------------------------
//  For the modules' tables

void
sl_dialect_put_segment (sl_str_t s, const char *keep, sl_buf_t *out)
{
    static const char hex [] = "0123456789ABCDEF";
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char) s.ptr [i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
        ||  c == '-' || c == '.' || c == '_' || c == '~' || (c && keep && strchr (keep, c)))
            sl_buf_putc (out, (char) c);
        else {
            sl_buf_putc (out, '%');
            sl_buf_putc (out, hex [c >> 4]);
            sl_buf_putc (out, hex [c & 15]);
        }
    }
}

void
sl_dialect_put_models (const sl_model_entry_t *models, size_t count,
                       void (*model) (const sl_model_entry_t *model, sl_buf_t *out), sl_buf_t *out)
{
    for (size_t i = 0; i < count; i++) {
        if (i)
            sl_buf_putc (out, ',');
        model (&models [i], out);
    }
}

bool
sl_dialect_beta (const sl_dialect_t *dialect, const char *name, size_t n, const char **out, size_t *out_len)
{
    *out = name;
    *out_len = n;
    if (!dialect->betas)
        return true;
    for (size_t i = 0; dialect->beta_renames && dialect->beta_renames [i][0]; i++)
        if (strlen (dialect->beta_renames [i][0]) == n && memcmp (dialect->beta_renames [i][0], name, n) == 0) {
            *out = dialect->beta_renames [i][1];
            *out_len = strlen (*out);
            break;
        }
    for (const char *const *b = dialect->betas; *b; b++)
        if (strlen (*b) == *out_len && memcmp (*b, *out, *out_len) == 0)
            return true;
    return false;
}

#define S_BETA_LINE "anthropic-beta:"

int
sl_dialect_betas_left_out (const sl_dialect_t *dialect, sl_str_t passthrough, sl_buf_t *out)
{
    if (!dialect || !dialect->betas || !passthrough.len)
        return 0;
    int count = 0;
    size_t n = strlen (S_BETA_LINE);
    for (const char *p = passthrough.ptr, *end = passthrough.ptr + passthrough.len; p < end;) {
        const char *nl = memchr (p, '\n', (size_t) (end - p));
        const char *stop = nl ? nl : end;
        if ((size_t) (stop - p) > n && strncasecmp (p, S_BETA_LINE, n) == 0)
            for (const char *v = p + n; v < stop;) {
                const char *comma = memchr (v, ',', (size_t) (stop - v));
                const char *a = v, *b = comma ? comma : stop;
                while (a < b && (*a == ' ' || *a == '\t'))
                    a++;
                while (b > a && (b [-1] == ' ' || b [-1] == '\t' || b [-1] == '\r'))
                    b--;
                const char *name;
                size_t len;
                if (b > a && !sl_dialect_beta (dialect, a, (size_t) (b - a), &name, &len)) {
                    if (count++)
                        sl_buf_putc (out, ',');
                    sl_buf_append (out, a, (size_t) (b - a));
                }
                v = comma ? comma + 1 : stop;
            }
        p = nl ? nl + 1 : end;
    }
    return count;
}
