/*  sl_approvals_api.h - what the HTTP APIs of approvals take: the
    gateway's /v1/approvals and sluice-audit's /api/approvals (the
    console's) read paths and decisions the same way here.

        GET  <prefix>                the pending approvals the caller may decide
        POST <prefix>/<id>           a decision, JSON:
             {"decision": "approve" | "deny",       required
              "comment": "...",                     optional, at most SL_APPROVALS_COMMENT_MAX bytes
              "remember_minutes": n,                optional, 0 .. SL_APPROVALS_REMEMBER_MAX
              "digest": "<64 hex>",                 optional: must be the approval's
              "policy": "..."}                      optional: must be the approval's

    A body that is not one of these is refused with 400 and the name of
    the field that is wrong; a field this page does not list is wrong too
    (a misspelt remember_minutes must not pass as "no memory").

    Pure: no I/O.
*/
#ifndef SL_APPROVALS_API_H
#define SL_APPROVALS_API_H

#include <stdbool.h>
#include <stddef.h>

#include "common/approval/sl_approvals_link.h"
#include "common/base/sl_str.h"

#define SL_APPROVALS_ID_HEX 32          //  an approval's id: 16 bytes in hex
#define SL_APPROVALS_COMMENT_MAX 4096   //  bytes of a comment
#define SL_APPROVALS_REMEMBER_MAX 10080 //  the longest memory asked for, minutes (a week; the rule may allow less)
#define SL_APPROVALS_DIGEST_HEX 64      //  a digest: SHA-256 in hex
#define SL_APPROVALS_POLICY_MAX 64      //  bytes of a policy version
#define SL_APPROVALS_WHY_MAX 160        //  bytes of a refusal's text

typedef enum {
    SL_APPROVALS_PATH_NONE = 0,         //  not an approvals path
    SL_APPROVALS_PATH_LIST,             //  <prefix>
    SL_APPROVALS_PATH_ONE               //  <prefix>/<id>
} sl_approvals_path_t;

//  A decision parsed from a body: the strings are owned (sl_approvals_parsed_clear).
typedef struct {
    sl_approvals_decision_t decision;   //  its strings point into the fields below
    char *comment, *digest, *policy;
} sl_approvals_parsed_t;

//  What path is under prefix ("/v1/approvals"); for a path with an id, the
//  id (at most SL_APPROVALS_ID_HEX + 1 bytes with its NUL) is copied to id,
//  "" when it is not 32 hex digits (an id no judge can hold).
sl_approvals_path_t sl_approvals_path (const char *path, const char *prefix, char id [SL_APPROVALS_ID_HEX + 1]);
//  Parse a decision's body. 0, or -1 with why ("decision: must be
//  \"approve\" or \"deny\""), which starts with the field's name.
int sl_approvals_parse (sl_str_t body, sl_approvals_parsed_t *out, char why [SL_APPROVALS_WHY_MAX]);
void sl_approvals_parsed_clear (sl_approvals_parsed_t *self);
//  The error type an API answers a status with ("invalid_request_error",
//  "not_found_error", ...).
const char *sl_approvals_error_type (int status);

#endif
