/*  sl_mock_gcp.c - the mock as Google's token services (see
    sl_mock_gcp.h). */
#include "services/mock/sl_mock_gcp.h"

#include <jansson.h>
#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "services/mock/sl_mock_provider.h"

#define GRANT_TYPE "urn:ietf:params:oauth:grant-type:jwt-bearer"
#define ASSERTION_MAX 8192
#define KEY_FILE_MAX (64 << 10)
#define CLOCK_SKEW_S 60                 //  an iat this far ahead is taken
#define LIFETIME_MAX_S 3600             //  the longest exp - iat Google takes
#define TOKEN_PREFIX "ya29.mock-"
#define TOKEN_RANDOM 24                 //  random bytes in a token

typedef struct {
    char token [64];
    time_t expires;
} s_issued_t;

struct _sl_mock_gcp_t {
    char *email;                        //  the key's client_email, NULL: no key
    char *token_uri;
    char *public_pem;
    int64_t ttl_s;
    s_issued_t issued [SL_MOCK_GCP_TOKENS];
    size_t next;                        //  ring position
    uint64_t count;
};

//  The public half of a PEM private key, as PEM; NULL when it is none.
static char *
s_public_pem (const char *private_pem)
{
    BIO *in = BIO_new_mem_buf (private_pem, -1);
    EVP_PKEY *key = in ? PEM_read_bio_PrivateKey (in, NULL, NULL, NULL) : NULL;
    BIO_free (in);
    if (!key)
        return NULL;
    BIO *out = BIO_new (BIO_s_mem ());
    char *pem = NULL;
    if (out && PEM_write_bio_PUBKEY (out, key)) {
        char *data = NULL;
        long len = BIO_get_mem_data (out, &data);
        pem = sl_xstrndup (data, (size_t) len);
    }
    BIO_free (out);
    EVP_PKEY_free (key);
    return pem;
}

sl_mock_gcp_t *
sl_mock_gcp_new (const char *key_file, int64_t ttl_s, char *why, size_t why_size)
{
    sl_mock_gcp_t *self = sl_xcalloc (1, sizeof *self);
    self->ttl_s = ttl_s > 0 ? ttl_s : SL_MOCK_GCP_TTL_S;
    if (!key_file || !*key_file)
        return self;
    json_error_t err;
    json_t *root = json_load_file (key_file, 0, &err);
    const char *email = json_string_value (json_object_get (root, "client_email"));
    const char *uri = json_string_value (json_object_get (root, "token_uri"));
    const char *pem = json_string_value (json_object_get (root, "private_key"));
    self->public_pem = pem ? s_public_pem (pem) : NULL;
    if (!email || !uri || !self->public_pem) {
        snprintf (why, why_size, "the key file %s is not a service account's key (client_email, token_uri and an "
                  "RSA private_key)", key_file);
        json_decref (root);
        sl_mock_gcp_destroy (&self);
        return NULL;
    }
    self->email = sl_xstrdup (email);
    self->token_uri = sl_xstrdup (uri);
    json_decref (root);
    return self;
}

void
sl_mock_gcp_destroy (sl_mock_gcp_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_mock_gcp_t *self = *self_p;
    free (self->email);
    free (self->token_uri);
    free (self->public_pem);
    free (self);
    *self_p = NULL;
}

//  A new token, remembered until it expires.
static void
s_issue (sl_mock_gcp_t *self, time_t now, sl_buf_t *answer)
{
    unsigned char random [TOKEN_RANDOM];
    randombytes_buf (random, sizeof random);
    s_issued_t *slot = &self->issued [self->next];
    self->next = (self->next + 1) % SL_MOCK_GCP_TOKENS;
    char hex [2 * TOKEN_RANDOM + 1];
    sodium_bin2hex (hex, sizeof hex, random, sizeof random);
    snprintf (slot->token, sizeof slot->token, "%s%s", TOKEN_PREFIX, hex);
    slot->expires = now + (time_t) self->ttl_s;
    self->count++;
    sl_buf_printf (answer, "{\"access_token\":\"%s\",\"expires_in\":%lld,\"token_type\":\"Bearer\"}", slot->token,
                   (long long) self->ttl_s);
}

static int
s_refuse (sl_buf_t *answer, const char *error, const char *description)
{
    json_t *o = json_pack ("{s:s, s:s}", "error", error, "error_description", description);
    char *text = json_dumps (o, JSON_COMPACT);
    sl_buf_puts (answer, text);
    free (text);
    json_decref (o);
    return 400;
}

static int
s_hex (char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

bool
sl_mock_gcp_form_value (sl_str_t form, const char *name, char *out, size_t size)
{
    size_t name_len = strlen (name);
    const char *p = form.ptr, *end = form.ptr + form.len;
    while (p && p < end) {
        const char *amp = memchr (p, '&', (size_t) (end - p));
        const char *field_end = amp ? amp : end;
        if ((size_t) (field_end - p) > name_len && memcmp (p, name, name_len) == 0 && p [name_len] == '=') {
            size_t n = 0;
            for (const char *v = p + name_len + 1; v < field_end; v++) {
                if (n + 1 >= size)
                    return false;
                if (*v == '%') {
                    if (field_end - v < 3 || s_hex (v [1]) < 0 || s_hex (v [2]) < 0)
                        return false;
                    out [n++] = (char) (s_hex (v [1]) * 16 + s_hex (v [2]));
                    v += 2;
                }
                else
                    out [n++] = *v == '+' ? ' ' : *v;
            }
            out [n] = 0;
            return true;
        }
        p = amp ? amp + 1 : NULL;
    }
    return false;
}

int
sl_mock_gcp_grant (sl_mock_gcp_t *self, sl_str_t form, time_t now, sl_buf_t *answer)
{
    char grant_type [128], assertion [ASSERTION_MAX];
    if (!sl_mock_gcp_form_value (form, "grant_type", grant_type, sizeof grant_type))
        return s_refuse (answer, "invalid_request", "Missing required parameter: grant_type");
    if (strcmp (grant_type, GRANT_TYPE) != 0)
        return s_refuse (answer, "unsupported_grant_type", "Invalid grant_type");
    if (!sl_mock_gcp_form_value (form, "assertion", assertion, sizeof assertion))
        return s_refuse (answer, "invalid_request", "Missing required parameter: assertion");
    if (!self->public_pem)
        return s_refuse (answer, "invalid_grant", "Invalid JWT Signature. (the mock was given no key file)");
    jwt_t *jwt = NULL;
    if (jwt_decode (&jwt, assertion, (const unsigned char *) self->public_pem, (int) strlen (self->public_pem))
    ||  jwt_get_alg (jwt) != JWT_ALG_RS256) {
        jwt_free (jwt);
        return s_refuse (answer, "invalid_grant", "Invalid JWT Signature.");
    }
    const char *iss = jwt_get_grant (jwt, "iss"), *aud = jwt_get_grant (jwt, "aud");
    const char *scope = jwt_get_grant (jwt, "scope");
    long iat = jwt_get_grant_int (jwt, "iat"), exp = jwt_get_grant_int (jwt, "exp");
    int status = 200;
    if (!iss || strcmp (iss, self->email) != 0)
        status = s_refuse (answer, "invalid_grant", "Invalid JWT: iss is not the key's client_email.");
    else
    if (!aud || strcmp (aud, self->token_uri) != 0)
        status = s_refuse (answer, "invalid_grant", "Invalid JWT: aud is not the token endpoint.");
    else
    if (!scope || !*scope)
        status = s_refuse (answer, "invalid_scope", "Invalid OAuth scope or ID token audience provided.");
    else
    if (iat <= 0 || exp <= 0 || iat > (long) now + CLOCK_SKEW_S || exp <= (long) now || exp - iat > LIFETIME_MAX_S)
        status = s_refuse (answer, "invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and "
                                                    "in a reasonable timeframe.");
    else
        s_issue (self, now, answer);
    jwt_free (jwt);
    return status;
}

int
sl_mock_gcp_metadata (sl_mock_gcp_t *self, const char *flavor, time_t now, sl_buf_t *answer)
{
    if (!flavor || strcmp (flavor, "Google") != 0) {
        sl_buf_puts (answer, "Missing Metadata-Flavor:Google header.");
        return 403;
    }
    s_issue (self, now, answer);
    return 200;
}

bool
sl_mock_gcp_accepts (sl_mock_gcp_t *self, const char *authorization, time_t now)
{
    static const char bearer [] = "Bearer ";
    if (!authorization || strncmp (authorization, bearer, strlen (bearer)) != 0)
        return false;
    const char *token = authorization + strlen (bearer);
    if (strcmp (token, SL_MOCK_BEARER_TOKEN) == 0)
        return true;
    for (size_t i = 0; i < SL_MOCK_GCP_TOKENS; i++)
        if (self->issued [i].token [0] && strcmp (self->issued [i].token, token) == 0)
            return self->issued [i].expires > now;
    return false;
}

uint64_t
sl_mock_gcp_issued (sl_mock_gcp_t *self)
{
    return self->count;
}
