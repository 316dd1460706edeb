/*  sl_job.h - turning a client's request into a request job.

    A pure library (the gateway's; sluice-replay reads --request with it):
    given the endpoint a client called and the body it posted, check the
    request with its dialect's parser (sl_dialect.h), build the normalized
    request (sl_req.h), pick the provider (sl_providers.h: a route may name a
    provider of any dialect), and prepare what the ingest needs:

      - the upstream request body: for an upstream of the client's own
        dialect, the client's body byte for byte but for the fields sluice
        forces (streaming on, also for a client that asked for a whole
        response; usage asked for where the dialect has a switch for it);
        for another dialect's upstream, the normalized request rendered in
        that dialect (something the answer needs that the upstream cannot
        be given refuses the request: 400, naming it; what is only
        informative is dropped, and named in `dropped` to be counted);
      - the model, the request's tool definitions in normalized form
        (sl_req_tools_json: name, schema, description, server, tool,
        digest) and the text of its last user message, for the judge and
        the audit (the same for every dialect).

    A request sluice cannot serve is refused with the status, error type
    and message to send back in the client's dialect.
*/
#ifndef SL_JOB_H
#define SL_JOB_H

#include <stdbool.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
#include "proto/sl_msg.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_req.h"

typedef struct _sl_routes_t sl_providers_t;   //  common/dialects/sl_providers.h

//  Memory one request's parse may take. jansson builds a tree of the
//  whole body, and small values cost it far more than their text (an
//  empty object, "{}," in the body, takes ~240 bytes). The body is first
//  counted with the zero-allocation scanner (sl_json_stats); one whose
//  tree would take more than SL_JOB_TREE_FACTOR times its size plus
//  SL_JOB_TREE_FLOOR is refused (413) before jansson allocates
//  anything. The floor keeps requests heavy with tool schemas (~25 times
//  their text) well within it; tests/bench/bench_request.c measures both.
#define SL_JOB_TREE_FACTOR 4
#define SL_JOB_TREE_FLOOR ((size_t) 16 << 20)

typedef struct {
    int client_dialect;                 //  sl_dialect_id_t
    int upstream_dialect;               //  the provider's (the client's until routed)
    const char *provider;               //  the provider routing picked (borrowed from the
                                        //  routes), NULL when not routed
    sl_req_t *req;                      //  the normalized request, owned
    sl_buf_t model;
    bool stream;                        //  client wants a streaming response (else one body)
    bool include_usage;                 //  client asked for usage in the stream
    sl_buf_t upstream_body;             //  JSON to send upstream
    sl_buf_t tools;                     //  normalized tool definitions (JSON, sl_req_tools_json)
    sl_buf_t last_user;                 //  text of the last user message
    const char *dropped [SL_XLATE_DROPS_MAX];   //  informative features the translation dropped
    size_t drop_count;
    //  When the request is refused
    int status;
    const char *error_type;
    sl_buf_t error_message;
} sl_job_t;

//  Match a request path (no query string): the endpoint of a dialect.
//  1 when it names one, 0 otherwise; out->dialect is then still set to the
//  dialect the path looks like (for the shape of the 404), or 0.
int sl_job_route (const char *path, sl_endpoint_t *out);
//  Check a request and prepare it for an upstream of its own dialect.
//  0 ok; -1 refused (status, error_type and error_message say why).
int sl_job_parse (const sl_endpoint_t *endpoint, sl_str_t body, sl_job_t *out);
//  Prepare a parsed request for an upstream of another dialect instead
//  (the normalized request rendered in it). 0 ok; -1 refused.
int sl_job_translate (sl_job_t *self, int upstream_dialect);
//  Parse, route (routes may be NULL: the client's dialect) and translate
//  when the provider speaks another dialect; the tools' definition digests
//  come from cache (the calling thread's own; NULL: computed). 0 ok; -1
//  refused.
int sl_job_prepare (const sl_endpoint_t *endpoint, sl_str_t body, sl_providers_t *routes, sl_toolcache_t *cache,
                    sl_job_t *out);
//  The normalized request changed after it was prepared (a request
//  policy's redactions, tool results it replaced: sl_req_edit_text,
//  sl_req_replace_result): prepare the upstream body and the last user
//  message again. A request of the upstream's own dialect stays the
//  client's body but for the changed strings (the edited tree, written
//  compact, then forwarded); another dialect's is rendered again. Nothing
//  is done when nothing changed: the body stays byte for byte. 0 ok; -1
//  refused (as sl_job_translate).
int sl_job_refresh (sl_job_t *self);
//  What jansson's tree of a body with these counts takes, bytes (an
//  estimate from jansson 2.14's structures, a little above what it takes).
size_t sl_job_tree_cost (const sl_json_stats_t *stats);
//  The most a body of this size may cost.
size_t sl_job_tree_budget (size_t body_len);
//  Free what a parse filled in; the struct can be reused.
void sl_job_clear (sl_job_t *self);

//  For the modules' forward operations: a JSON object's text with members
//  set to raw JSON values: every member of that name gets the value (in
//  place, the rest of the text unchanged), and one that is not there is
//  added at the end. 0 ok, -1 when body is not an object (or there are
//  more than SL_PATCH_MAX patches).
#define SL_PATCH_MAX 8
typedef struct {
    const char *key;
    const char *value;                  //  raw JSON
} sl_patch_t;
int sl_job_patch (sl_str_t body, const sl_patch_t *patches, size_t count, sl_buf_t *out);

#endif
