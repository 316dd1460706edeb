/*  sl_curlm.h - libcurl's multi interface inside the zloop reactor.

    One process drives any number of concurrent HTTP transfers (upstream
    model calls in the ingest, LLM judge calls in the judge) from its single
    reactor: curl's sockets live in an epoll set that is one zloop poller,
    and curl's timeout is a zloop timer. No thread per transfer.

    The caller builds each CURL easy handle (URL, headers, write callback)
    and hands it over with sl_curlm_add; when the transfer ends, done is
    called once with curl's result, and the caller cleans the handle up.
    sl_curlm_remove cancels a transfer at once (its connection is closed or
    returned to the pool) without calling done. It must not be called from
    inside one of curl's own callbacks: there, return an error from the
    write callback instead and the transfer ends through done.

    sl_curlm keeps its bookkeeping in the handle's CURLOPT_PRIVATE; callers
    must not use that option.
*/
#ifndef SL_CURLM_H
#define SL_CURLM_H

#include <curl/curl.h>
#include <czmq.h>
#include <stddef.h>

typedef struct _sl_curlm_t sl_curlm_t;

//  Called when a transfer ends; result is curl's code for it.
typedef void (sl_curlm_done_fn) (void *arg, CURL *easy, CURLcode result);

sl_curlm_t *sl_curlm_new (zloop_t *loop);
//  Cancels every transfer still running (their done is not called).
void sl_curlm_destroy (sl_curlm_t **self_p);
//  Start a transfer. 0 ok, -1 when curl refuses it.
int sl_curlm_add (sl_curlm_t *self, CURL *easy, sl_curlm_done_fn *done, void *arg);
//  Cancel a running transfer; done is not called. The caller still owns easy.
void sl_curlm_remove (sl_curlm_t *self, CURL *easy);
//  Read one header line as curl's header callback gives it (n bytes, its
//  CR LF included): when it is the header name (lower case, without the
//  colon), its value without the blanks around it is copied into out
//  (truncated to size - 1 bytes, NUL-terminated) and its whole length is
//  returned; -1 when it is another header.
int sl_curlm_header (const char *line, size_t n, const char *name, char *out, size_t size);
//  Called at the end of every reactor turn in which curl ran callbacks, so
//  the owner can flush what those callbacks produced in one go.
void sl_curlm_set_after (sl_curlm_t *self, void (*fn) (void *arg), void *arg);

#endif
