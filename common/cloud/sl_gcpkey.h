/*  sl_gcpkey.h - a Google service-account key and the grant it signs.

    A key file (what GOOGLE_APPLICATION_CREDENTIALS names) is JSON with
    "type": "service_account", client_email, private_key (PEM), token_uri
    and private_key_id. An access token is got by POSTing to token_uri a
    JWT-bearer grant (RFC 7523):

        grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>

    the JWT signed RS256 with the key (libjwt), header {"alg": "RS256",
    "typ": "JWT"}, claims iss (client_email), scope, aud (token_uri), iat
    and exp (iat + 1 hour), as Google's own libraries make it. Pure: the
    exchange itself is sl_gcptoken's.
*/
#ifndef SL_GCPKEY_H
#define SL_GCPKEY_H

#include <stddef.h>
#include <time.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

#define SL_GCPKEY_LIFETIME_S 3600       //  exp - iat: the most Google grants
#define SL_GCPKEY_GRANT_TYPE "urn:ietf:params:oauth:grant-type:jwt-bearer"
#define SL_GCPKEY_FILE_MAX (64u << 10)

typedef struct _sl_gcpkey_t sl_gcpkey_t;

//  Read a key file; NULL with why set (the file named, nothing of the key).
sl_gcpkey_t *sl_gcpkey_load (const char *path, char *why, size_t why_size);
//  The same from the file's bytes.
sl_gcpkey_t *sl_gcpkey_parse (sl_str_t json, char *why, size_t why_size);
//  Wipes the private key.
void sl_gcpkey_destroy (sl_gcpkey_t **self_p);
const char *sl_gcpkey_email (sl_gcpkey_t *self);
const char *sl_gcpkey_token_uri (sl_gcpkey_t *self);
//  The signed JWT for scope at now (the caller frees it); NULL with why
//  set when the key cannot sign.
char *sl_gcpkey_assertion (sl_gcpkey_t *self, const char *scope, time_t now, char *why, size_t why_size);
//  The grant's form body, appended to out.
void sl_gcpkey_grant (sl_buf_t *out, const char *assertion);

#endif
