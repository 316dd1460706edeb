/*  sl_handlers.h - the gateway's HTTP surface as a table: each endpoint
    family registers handlers, {method, prefix, serve, on_close}, and a
    request goes to the first that takes it (h2o's
    h2o_config_register_path and its handlers' on_req, which decline with
    -1 for the next to try).

    The order a request is tried in, and the two checks every request
    meets on its way, are this table's; what the handlers do, and what
    the checks answer, is their owners':

    - a handler is tried when the path is its prefix or under it ("/mcp":
      /mcp and /mcp/x, never /mcpx; "/": every path) and, when it names
      one, the method is its method; its serve takes the request (true)
      or declines it (false), and the next is tried;
    - the guard (the gateway's Host and Origin check) runs once, before
      the first handler that is not open, or at the end when no handler
      took the request; when it answers the request, nothing else does;
    - while draining only the handlers that serve while draining are
      tried.

    A request none took is the caller's to answer (404, or 503 while
    draining). Pure: no HTTP, no clock.
*/
#ifndef SL_HANDLERS_H
#define SL_HANDLERS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/http/sl_httpd.h"

#define SL_HANDLERS_MAX 16              //  handlers one table holds at most

typedef struct _sl_handlers_t sl_handlers_t;

//  Serve req (method and path its own, borrowed): true when it was this
//  handler's (answered now, or later by the handler), false to decline.
typedef bool (sl_handler_serve_fn) (void *arg, sl_http_req_t *req, const char *method, const char *path);
//  A request no stream holds was closed (its client left, or its answer
//  went out): true when it was this handler's (forgotten now).
typedef bool (sl_handler_close_fn) (void *arg, sl_http_req_t *req);
//  Does the handler still hold work of a request whose client is gone (a
//  body being parsed)? A drain waits for none.
typedef bool (sl_handler_held_fn) (void *arg);
//  The check before the first handler that is not open: true when it
//  answered (refused) the request.
typedef bool (sl_handler_guard_fn) (void *arg, sl_http_req_t *req, const char *path);

typedef struct {
    const char *method;                 //  tried for this method only; NULL: any (serve answers 405 itself)
    const char *prefix;                 //  for this path and those under it; "/": every path
    sl_handler_serve_fn *serve;
    sl_handler_close_fn *on_close;      //  NULL: keeps no request past serve
    sl_handler_held_fn *held;           //  NULL: holds nothing of its own
    void *arg;
    bool open;                          //  answered whoever asks: the guard does not run for it
    bool draining;                      //  served while draining (it says so itself)
} sl_handler_t;

typedef enum {
    SL_HANDLED,                         //  a handler took the request
    SL_HANDLED_GUARD,                   //  the guard answered it
    SL_HANDLED_NONE                     //  nobody took it: the caller answers
} sl_handled_t;

sl_handlers_t *sl_handlers_new (void);
void sl_handlers_destroy (sl_handlers_t **self_p);
//  Add a handler after those there (copied; method and prefix must
//  outlive the table). -1 when the table is full or the handler has no
//  prefix or serve.
int sl_handlers_add (sl_handlers_t *self, const sl_handler_t *handler);
//  Offer req to the handlers in order, as above; guard may be NULL.
sl_handled_t sl_handlers_serve (sl_handlers_t *self, sl_http_req_t *req, const char *method, const char *path,
                                bool draining, sl_handler_guard_fn *guard, void *guard_arg);
//  A request was closed: true when a handler said it was its own.
bool sl_handlers_closed (sl_handlers_t *self, sl_http_req_t *req);
//  True while some handler holds work of its own.
bool sl_handlers_held (sl_handlers_t *self);

#endif
