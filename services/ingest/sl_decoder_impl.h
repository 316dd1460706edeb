/*  sl_decoder_impl.h - what a dialect decoder implements and may call.

    Private to services/ingest/sl_dec_*.c and sl_decoder.c: each dialect is
    a table of functions over its own state struct; the shared decoder
    object carries the output callback, scratch space and error state.
*/
#ifndef SL_DECODER_IMPL_H
#define SL_DECODER_IMPL_H

#include "../../common/sl_buf.h"
#include "sl_decoder.h"

typedef struct {
    const char *name;
    void *(*create) (void);
    void (*destroy) (void *state);
    //  0 ok, -2 malformed (after sl_decoder_fail)
    int (*event) (void *state, sl_decoder_t *dec, sl_str_t type, sl_str_t data);
    //  body ended cleanly: emit DONE or an error; 0 ok
    int (*finish) (void *state, sl_decoder_t *dec);
} sl_decoder_vt_t;

extern const sl_decoder_vt_t sl_dec_openai_vt;

//  Emit one message (type DELTA or ERROR; the envelope is the caller's).
void sl_decoder_emit (sl_decoder_t *dec, const sl_msg_t *msg);
//  Emit a DELTA of the given kind with the fields of tmpl.
void sl_decoder_emit_delta (sl_decoder_t *dec, int kind, sl_msg_t *tmpl);
//  Emit an ERROR reported by the provider (code, message, HTTP status).
void sl_decoder_emit_error (sl_decoder_t *dec, sl_str_t code, sl_str_t message, int status);
//  Scratch space for unescaped strings, reset and reserved to the size of
//  the current event before each event (slices stay valid for the event).
sl_buf_t *sl_decoder_scratch (sl_decoder_t *dec);
//  Record a malformed event; returns -2.
int sl_decoder_fail (sl_decoder_t *dec, const char *why);
void sl_decoder_count_unknown (sl_decoder_t *dec);
void sl_decoder_set_done (sl_decoder_t *dec);

#endif
