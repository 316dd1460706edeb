/*  sl_credfetch.h - one HTTP exchange that fetches a credential, inside
    the process's reactor.

    The AWS and Google credential sources get their tokens over HTTP (STS,
    a key's token_uri, the metadata server). A process is one reactor, so
    the exchange runs on its sl_curlm like any upstream call: never a
    blocking call, never a thread. The answer is bounded
    (SL_CREDFETCH_MAX_ANSWER) and the whole exchange too (its timeout).
    What it sent and what it got hold secrets: both are wiped before the
    memory is freed, and nothing of them is logged.
*/
#ifndef SL_CREDFETCH_H
#define SL_CREDFETCH_H

#include "common/base/sl_str.h"
#include "common/http/sl_curlm.h"

#define SL_CREDFETCH_MAX_ANSWER (64u << 10)     //  a token answer is a few KiB
#define SL_CREDFETCH_TIMEOUT_MS 10000           //  the default bound on one exchange

typedef struct _sl_credfetch_t sl_credfetch_t;

//  The request; borrowed for sl_credfetch_start (copied).
typedef struct {
    const char *method;                 //  "GET" or "POST"
    const char *url;
    const char *const *headers;         //  "Name: value" lines, NULL-terminated (or NULL)
    sl_str_t body;                      //  POST body (SL_STR_NULL for none)
    long timeout_ms;                    //  0: SL_CREDFETCH_TIMEOUT_MS
} sl_credfetch_req_t;

//  The exchange ended: status is the HTTP status (0 when there was no
//  answer: then error says why, else error is NULL); body is the answer,
//  borrowed for the call. Called once, from the reactor, never from
//  sl_credfetch_start; the fetch may be destroyed inside it.
typedef void (sl_credfetch_done_fn) (void *arg, int status, sl_str_t body, const char *error);

//  Start an exchange; NULL when curl refuses it.
sl_credfetch_t *sl_credfetch_start (sl_curlm_t *curlm, const sl_credfetch_req_t *req,
                                    sl_credfetch_done_fn *done, void *arg);
//  Stop it (done is then not called) and free it. Safe to call twice.
void sl_credfetch_destroy (sl_credfetch_t **self_p);

#endif
