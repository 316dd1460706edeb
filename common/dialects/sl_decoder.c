/*  sl_decoder.c - the decoder object around each dialect module's decoder
    (see sl_decoder.h). */
#include "common/dialects/sl_decoder.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/dialects/sl_decoder_impl.h"
#include "common/dialects/sl_dialect.h"

#define SL_DECODER_STATUS_MIN 400       //  provider codes taken as HTTP statuses
#define SL_DECODER_STATUS_MAX 599

struct _sl_decoder_t {
    const sl_dialect_t *dialect;
    const sl_decoder_vt_t *vt;
    void *state;
    sl_emit_fn *emit;                   //  valid during event / finish
    void *emit_arg;
    sl_buf_t scratch;
    const char *error;
    uint64_t unknown;
    bool identified;                    //  MESSAGE emitted
    bool finished;                      //  FINISH emitted
    bool done;                          //  DONE or an ERROR emitted: the stream has ended
};

sl_decoder_t *
sl_decoder_new (int dialect)
{
    const sl_dialect_t *d = sl_dialect_get (dialect);
    if (!d)
        return NULL;
    sl_decoder_t *self = sl_xcalloc (1, sizeof *self);
    self->dialect = d;
    self->vt = d->decoder;
    if (self->vt->state_size)
        self->state = sl_xcalloc (1, self->vt->state_size);
    if (self->vt->init)
        self->vt->init (self->state);
    self->error = "";
    return self;
}

void
sl_decoder_destroy (sl_decoder_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_decoder_t *self = *self_p;
    if (self->vt->clear)
        self->vt->clear (self->state);
    free (self->state);
    sl_buf_free (&self->scratch);
    free (self);
    *self_p = NULL;
}

int
sl_decoder_event (sl_decoder_t *self, sl_str_t type, sl_str_t data, sl_emit_fn *emit, void *arg)
{
    if (self->done) {
        //  A response has one end; what follows it (OpenRouter's [DONE]
        //  after response.completed, a chunk after an error) is noise.
        self->unknown++;
        return 0;
    }
    self->emit = emit;
    self->emit_arg = arg;
    sl_buf_reset (&self->scratch);
    sl_buf_reserve (&self->scratch, data.len + type.len);
    return self->vt->event (self->state, self, type, data);
}

int
sl_decoder_finish (sl_decoder_t *self, sl_emit_fn *emit, void *arg)
{
    if (self->done)
        return 0;
    self->emit = emit;
    self->emit_arg = arg;
    sl_buf_reset (&self->scratch);
    return self->vt->finish ? self->vt->finish (self->state, self) : sl_decoder_end (self);
}

bool
sl_decoder_done (sl_decoder_t *self)
{
    return self->done;
}

const char *
sl_decoder_error (sl_decoder_t *self)
{
    return self->error;
}

uint64_t
sl_decoder_unknown (sl_decoder_t *self)
{
    return self->unknown;
}

const char *
sl_decoder_name (sl_decoder_t *self)
{
    return self->dialect->name;
}

//  --------------------------------------------------------------------------
//  For the dialect decoders

void
sl_decoder_emit (sl_decoder_t *dec, const sl_msg_t *msg)
{
    dec->emit (dec->emit_arg, msg);
}

void
sl_decoder_emit_delta (sl_decoder_t *dec, int kind, sl_msg_t *tmpl)
{
    tmpl->type = SL_MSG_DELTA;
    tmpl->kind = (uint8_t) kind;
    dec->emit (dec->emit_arg, tmpl);
}

void
sl_decoder_emit_index (sl_decoder_t *dec, int kind, int32_t index)
{
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    d.index = index;
    sl_decoder_emit_delta (dec, kind, &d);
}

void
sl_decoder_emit_error (sl_decoder_t *dec, sl_str_t code, sl_str_t message, int status)
{
    sl_msg_t msg;
    sl_msg_init (&msg, SL_MSG_ERROR);
    msg.code = code.ptr && code.len ? code : SL_STR_LIT ("upstream_error");
    msg.message = message.ptr && message.len ? message : SL_STR_LIT ("the upstream reported an error");
    msg.status = status;
    msg.flags = SL_F_UPSTREAM;
    dec->emit (dec->emit_arg, &msg);
    dec->done = true;
}

void
sl_decoder_emit_done (sl_decoder_t *dec)
{
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    sl_decoder_emit_delta (dec, SL_D_DONE, &d);
    dec->done = true;
}

int
sl_decoder_end (sl_decoder_t *dec)
{
    if (dec->finished)
        sl_decoder_emit_done (dec);
    else
        sl_decoder_emit_error (dec, SL_STR_LIT ("upstream_incomplete"),
                               SL_STR_LIT ("the upstream ended the stream before it finished"), 502);
    return 0;
}

void
sl_decoder_identify (sl_decoder_t *dec, sl_str_t id, sl_str_t model, sl_str_t created)
{
    if (dec->identified)
        return;
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    //  Identity fields of the wrong type are dropped, not fatal.
    if (id.ptr && sl_decoder_str (dec, id, &d.id))
        d.id = SL_STR_NULL;
    if (model.ptr && sl_decoder_str (dec, model, &d.model))
        d.model = SL_STR_NULL;
    if (created.ptr)
        sl_json_i64 (created, &d.ts);
    dec->identified = true;
    sl_decoder_emit_delta (dec, SL_D_MESSAGE, &d);
}

void
sl_decoder_emit_finish (sl_decoder_t *dec, sl_msg_t *tmpl)
{
    dec->finished = true;
    sl_decoder_emit_delta (dec, SL_D_FINISH, tmpl);
}

int
sl_decoder_usage (sl_str_t usage, const sl_usage_key_t *keys, sl_usage_t *out)
{
    if (sl_json_type (usage) != SL_JSON_OBJECT)
        return -1;
    for (; keys->key; keys++) {
        sl_str_t v;
        int64_t n;
        if (sl_json_find (usage, keys->key, &v) != 1
        ||  (keys->inner && sl_json_find (v, keys->inner, &v) != 1))
            continue;
        if (sl_json_i64 (v, &n) == 0)
            memcpy ((char *) out + keys->slot, &n, sizeof n);
    }
    return 0;
}

int
sl_decoder_emit_usage (sl_decoder_t *dec, sl_str_t usage, const sl_usage_key_t *keys)
{
    sl_msg_t d;
    sl_msg_init (&d, SL_MSG_DELTA);
    if (sl_decoder_usage (usage, keys, &d.usage))
        return -1;
    d.has_usage = true;
    sl_decoder_emit_delta (dec, SL_D_USAGE, &d);
    return 0;
}

void *
sl_decoder_slot (void **table, size_t *count, size_t size, int32_t index)
{
    if (index < 0 || index >= SL_DECODER_MAX_INDEX)
        return NULL;
    if ((size_t) index >= *count) {
        size_t grown = *count ? *count : 8;
        while (grown <= (size_t) index)
            grown *= 2;
        *table = sl_xrealloc (*table, grown * size);
        memset ((char *) *table + *count * size, 0, (grown - *count) * size);
        *count = grown;
    }
    return (char *) *table + (size_t) index * size;
}

sl_buf_t *
sl_decoder_scratch (sl_decoder_t *dec)
{
    return &dec->scratch;
}

int
sl_decoder_str (sl_decoder_t *dec, sl_str_t value, sl_str_t *out)
{
    *out = SL_STR_NULL;
    if (sl_json_is_null (value))
        return 0;
    return sl_json_str (value, &dec->scratch, out);
}

int
sl_decoder_index (sl_str_t value, int32_t *out)
{
    int64_t n;
    if (sl_json_i64 (value, &n) || n < 0 || n > INT32_MAX)
        return -2;
    *out = (int32_t) n;
    return 0;
}

//  HTTP statuses of the error types providers name (Anthropic and OpenAI
//  types, Google RPC statuses), for errors that carry no number.
static const struct {
    const char *type;
    int status;
} s_error_status [] = {
    { "invalid_request_error", 400 }, { "authentication_error", 401 },
    { "permission_error", 403 }, { "not_found_error", 404 },
    { "request_too_large", 413 }, { "rate_limit_error", 429 },
    { "insufficient_quota", 429 }, { "api_error", 500 }, { "server_error", 500 },
    { "overloaded_error", 529 }, { "INVALID_ARGUMENT", 400 }, { "UNAUTHENTICATED", 401 },
    { "PERMISSION_DENIED", 403 }, { "NOT_FOUND", 404 }, { "RESOURCE_EXHAUSTED", 429 },
    { "CANCELLED", 499 }, { "INTERNAL", 500 }, { "UNAVAILABLE", 503 },
    { "DEADLINE_EXCEEDED", 504 }
};

int
sl_decoder_error_status (sl_str_t type)
{
    for (size_t i = 0; i < sizeof s_error_status / sizeof s_error_status [0]; i++)
        if (sl_str_eq (type, s_error_status [i].type))
            return s_error_status [i].status;
    return 0;
}

//  The members of a provider's error object that say what it was.
typedef struct {
    sl_str_t type;                      //  "type" (OpenAI, Anthropic)
    sl_str_t rpc_status;                //  "status" (Google RPC status name)
    sl_str_t code_str;                  //  "code" when a string
    sl_str_t code_num;                  //  "code" when a number, as written
    sl_str_t message;
    int status;                         //  an HTTP-like number in "code" or "status_code", 0: none
} s_error_t;

//  Read an error value (an object in any provider's shape, or a bare
//  string: its message) into out; strings unescaped into the scratch.
static void
s_read_error (sl_decoder_t *dec, sl_str_t error, s_error_t *out)
{
    sl_str_t key, value;
    int64_t number;
    sl_json_iter_t it;
    memset (out, 0, sizeof *out);
    if (sl_json_type (error) == SL_JSON_STRING)
        sl_json_str (error, &dec->scratch, &out->message);
    else
    if (sl_json_object (&it, error) == 0) {
        while (sl_json_next_member (&it, &key, &value) == 1) {
            sl_json_type_t t = sl_json_type (value);
            if (SL_KEY (key, "type") && t == SL_JSON_STRING)
                sl_json_str (value, &dec->scratch, &out->type);
            else
            if (SL_KEY (key, "status") && t == SL_JSON_STRING)
                sl_json_str (value, &dec->scratch, &out->rpc_status);
            else
            if (SL_KEY (key, "code")) {
                if (t == SL_JSON_STRING)
                    sl_json_str (value, &dec->scratch, &out->code_str);
                else
                if (t == SL_JSON_NUMBER) {
                    out->code_num = sl_json_trim (value);
                    if (sl_json_i64 (value, &number) == 0
                    &&  number >= SL_DECODER_STATUS_MIN && number <= SL_DECODER_STATUS_MAX)
                        out->status = (int) number;
                }
            }
            else
            if (SL_KEY (key, "status_code") && t == SL_JSON_NUMBER) {
                if (sl_json_i64 (value, &number) == 0
                &&  number >= SL_DECODER_STATUS_MIN && number <= SL_DECODER_STATUS_MAX && !out->status)
                    out->status = (int) number;
            }
            else
            if (SL_KEY (key, "message") && t == SL_JSON_STRING)
                sl_json_str (value, &dec->scratch, &out->message);
        }
    }
}

//  The error's name: its type, else its RPC status, else its code.
static sl_str_t
s_error_name (const s_error_t *e)
{
    return e->type.ptr ? e->type : e->rpc_status.ptr ? e->rpc_status : e->code_str;
}

void
sl_decoder_emit_error_object (sl_decoder_t *dec, sl_str_t error)
{
    s_error_t e;
    s_read_error (dec, error, &e);
    sl_str_t code = s_error_name (&e);
    if (!code.ptr)
        code = e.code_num;
    int status = e.status ? e.status : code.ptr ? sl_decoder_error_status (code) : 0;
    sl_decoder_emit_error (dec, code, e.message, status);
}

void
sl_decoder_error_body (sl_decoder_t *self, sl_str_t body, sl_str_t *code, sl_str_t *message)
{
    *code = *message = SL_STR_NULL;
    sl_buf_reset (&self->scratch);
    sl_buf_reserve (&self->scratch, body.len);
    sl_str_t error;
    if (sl_json_find (body, "error", &error) != 1)
        return;
    s_error_t e;
    s_read_error (self, error, &e);
    *code = s_error_name (&e);
    *message = e.message;
}

int
sl_decoder_fail (sl_decoder_t *dec, const char *why)
{
    dec->error = why;
    return -2;
}

void
sl_decoder_count_unknown (sl_decoder_t *dec)
{
    dec->unknown++;
}

bool
sl_decoder_is_done (sl_decoder_t *dec)
{
    return dec->done;
}

void
sl_decoder_set_done (sl_decoder_t *dec)
{
    dec->done = true;
}

bool
sl_decoder_key_in (sl_str_t key, const sl_str_t *names)
{
    for (; names->ptr; names++)
        if (key.len == names->len && memcmp (key.ptr, names->ptr, key.len) == 0)
            return true;
    return false;
}
