/*  sl_mock_aws.c - the mock's SigV4 check (see sl_mock_aws.h). */
#include "services/mock/sl_mock_aws.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define S_SCOPE_MAX 64                  //  a region's name, and an access key id

static const char *
s_header (const sl_sigv4_request_t *req, const char *name)
{
    for (size_t i = 0; i < req->header_count; i++)
        if (strcasecmp (req->headers [i].name, name) == 0)
            return req->headers [i].value;
    return NULL;
}

//  The scope's n-th part (0: the key id, 2: the region) of
//  "AWS4-HMAC-SHA256 Credential=AKID/20250101/us-east-1/bedrock/aws4_request, ...".
static int
s_scope (const char *authorization, int n, char *out, size_t size)
{
    const char *p = strstr (authorization, "Credential=");
    if (!p)
        return -1;
    p += strlen ("Credential=");
    for (int i = 0; i < n; i++) {
        p = strpbrk (p, "/,");
        if (!p || *p != '/')
            return -1;
        p++;
    }
    size_t len = strcspn (p, "/, ");
    if (len == 0 || len >= size)
        return -1;
    memcpy (out, p, len);
    out [len] = 0;
    return 0;
}

int
sl_mock_aws_check (const sl_sigv4_creds_t *creds, const sl_sigv4_request_t *req, time_t now,
                   sl_mock_aws_refusal_t *out)
{
    memset (out, 0, sizeof *out);
    const char *authorization = s_header (req, "Authorization");
    char key [S_SCOPE_MAX], region [S_SCOPE_MAX];
    if (!authorization || strncmp (authorization, SL_SIGV4_ALGORITHM " ", strlen (SL_SIGV4_ALGORITHM) + 1) != 0) {
        out->type = "MissingAuthenticationTokenException";
        out->message = "Missing Authentication Token";
        snprintf (out->why, sizeof out->why, "%s", authorization ? "not a SigV4 Authorization" : "no Authorization");
        return -1;
    }
    if (s_scope (authorization, 0, key, sizeof key) || strcmp (key, creds->access_key_id) != 0) {
        out->type = "UnrecognizedClientException";
        out->message = "The security token included in the request is invalid.";
        snprintf (out->why, sizeof out->why, "another access key id");
        return -1;
    }
    if (s_scope (authorization, 2, region, sizeof region) == 0
    &&  sl_sigv4_verify (creds, region, "bedrock", req, now, 0, out->why, sizeof out->why) == 0)
        return 0;
    if (!out->why [0])
        snprintf (out->why, sizeof out->why, "no region in the credential scope");
    out->type = "InvalidSignatureException";
    out->message = "The request signature we calculated does not match the signature you provided. "
                   "Check your AWS Secret Access Key and signing method. Consult the service documentation "
                   "for details.";
    return -1;
}
