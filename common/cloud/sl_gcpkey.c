/*  sl_gcpkey.c - a Google service-account key and the grant it signs (see
    sl_gcpkey.h). */
#include "common/cloud/sl_gcpkey.h"

#include <errno.h>
#include <jansson.h>
#include <jwt.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/cloud/sl_sigv4.h"

struct _sl_gcpkey_t {
    char *email;                        //  client_email: iss
    char *private_key;                  //  PEM
    char *token_uri;                    //  aud, and where the grant goes
};

static char *
s_field (json_t *root, const char *name)
{
    const char *v = json_string_value (json_object_get (root, name));
    return v && *v ? sl_xstrdup (v) : NULL;
}

sl_gcpkey_t *
sl_gcpkey_parse (sl_str_t json, char *why, size_t why_size)
{
    json_error_t err;
    json_t *root = json_loadb (json.ptr ? json.ptr : "", json.len, 0, &err);
    if (!json_is_object (root)) {
        snprintf (why, why_size, "the key is not a JSON object");
        json_decref (root);
        return NULL;
    }
    const char *type_value = json_string_value (json_object_get (root, "type"));
    bool service_account = type_value && strcmp (type_value, "service_account") == 0;
    sl_gcpkey_t *self = sl_xcalloc (1, sizeof *self);
    self->email = s_field (root, "client_email");
    self->private_key = s_field (root, "private_key");
    self->token_uri = s_field (root, "token_uri");
    //  Wipe the parsed copy of the private key before jansson frees it.
    json_t *pk = json_object_get (root, "private_key");
    if (json_is_string (pk))
        sodium_memzero ((char *) json_string_value (pk), json_string_length (pk));
    json_decref (root);
    if (!service_account)
        snprintf (why, why_size, "the key is not a service account's (\"type\": \"service_account\")");
    else
    if (!self->email || !self->private_key || !self->token_uri)
        snprintf (why, why_size, "the key lacks client_email, private_key or token_uri");
    else
    if (strncmp (self->token_uri, "https://", 8) != 0 && strncmp (self->token_uri, "http://", 7) != 0)
        snprintf (why, why_size, "the key's token_uri is not an http(s) URL");
    else
    if (!strstr (self->private_key, "-----BEGIN PRIVATE KEY-----")
    &&  !strstr (self->private_key, "-----BEGIN RSA PRIVATE KEY-----"))
        snprintf (why, why_size, "the key's private_key is not a PEM private key");
    else
        return self;
    sl_gcpkey_destroy (&self);
    return NULL;
}

sl_gcpkey_t *
sl_gcpkey_load (const char *path, char *why, size_t why_size)
{
    FILE *f = fopen (path, "r");
    if (!f) {
        snprintf (why, why_size, "the key file %.200s cannot be read: %s", path, strerror (errno));
        return NULL;
    }
    char *buf = sl_xmalloc (SL_GCPKEY_FILE_MAX + 1);
    size_t n = fread (buf, 1, SL_GCPKEY_FILE_MAX + 1, f);
    fclose (f);
    sl_gcpkey_t *self = NULL;
    if (n > SL_GCPKEY_FILE_MAX)
        snprintf (why, why_size, "the key file %.200s is over 64 KiB", path);
    else {
        char inner [200];
        self = sl_gcpkey_parse (sl_str_n (buf, n), inner, sizeof inner);
        if (!self)
            snprintf (why, why_size, "the key file %.200s: %s", path, inner);
    }
    sodium_memzero (buf, SL_GCPKEY_FILE_MAX + 1);
    free (buf);
    return self;
}

void
sl_gcpkey_destroy (sl_gcpkey_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_gcpkey_t *self = *self_p;
    if (self->private_key) {
        sodium_memzero (self->private_key, strlen (self->private_key));
        free (self->private_key);
    }
    free (self->email);
    free (self->token_uri);
    free (self);
    *self_p = NULL;
}

const char *
sl_gcpkey_email (sl_gcpkey_t *self)
{
    return self->email;
}

const char *
sl_gcpkey_token_uri (sl_gcpkey_t *self)
{
    return self->token_uri;
}

char *
sl_gcpkey_assertion (sl_gcpkey_t *self, const char *scope, time_t now, char *why, size_t why_size)
{
    jwt_t *jwt = NULL;
    char *out = NULL;
    if (jwt_new (&jwt)) {
        snprintf (why, why_size, "out of memory");
        return NULL;
    }
    if (jwt_add_grant (jwt, "iss", self->email)
    ||  jwt_add_grant (jwt, "scope", scope)
    ||  jwt_add_grant (jwt, "aud", self->token_uri)
    ||  jwt_add_grant_int (jwt, "iat", (long) now)
    ||  jwt_add_grant_int (jwt, "exp", (long) now + SL_GCPKEY_LIFETIME_S))
        snprintf (why, why_size, "the grant's claims cannot be set");
    else
    if (jwt_set_alg (jwt, JWT_ALG_RS256, (const unsigned char *) self->private_key,
                     (int) strlen (self->private_key)))
        snprintf (why, why_size, "the key cannot sign RS256");
    else {
        out = jwt_encode_str (jwt);
        if (!out)
            snprintf (why, why_size, "the key cannot sign RS256 (not an RSA key?)");
    }
    jwt_free (jwt);
    return out;
}

void
sl_gcpkey_grant (sl_buf_t *out, const char *assertion)
{
    sl_buf_puts (out, "grant_type=");
    sl_sigv4_uri_encode (out, SL_STR_LIT (SL_GCPKEY_GRANT_TYPE), false);
    sl_buf_puts (out, "&assertion=");
    sl_sigv4_uri_encode (out, sl_str (assertion), false);
}
