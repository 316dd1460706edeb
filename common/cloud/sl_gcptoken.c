/*  sl_gcptoken.c - the OAuth2 access token sluice calls Google Cloud with
    (see sl_gcptoken.h). */
#include "common/cloud/sl_gcptoken.h"

#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/cloud/sl_credfetch.h"
#include "common/cloud/sl_gcpkey.h"
#include "common/cloud/sl_secret.h"

#define TOKEN_MAX 8192                  //  an access token is ~200 bytes to 2 KiB

struct _sl_gcptoken_t {
    sl_curlm_t *curlm;
    sl_gcptoken_config_t config;        //  our copy
    sl_gcpkey_t *key;                   //  KEY_FILE
    sl_refresher_t *refresher;
    sl_credfetch_t *fetch;              //  the exchange under way, or NULL
    char *token;                        //  the current token
};

void
sl_gcptoken_config_from_env (sl_gcptoken_config_t *out, const char *credentials_file)
{
    memset (out, 0, sizeof *out);
    const char *given = sl_secret_env (SL_GCPTOKEN_TOKEN_ENV), *adc = sl_secret_env ("GOOGLE_APPLICATION_CREDENTIALS");
    if (credentials_file && *credentials_file) {
        out->kind = SL_GCPTOKEN_KEY_FILE;
        out->key_file = sl_xstrdup (credentials_file);
    }
    else
    if (given) {
        out->kind = SL_GCPTOKEN_GIVEN;
        out->token = sl_xstrdup (given);
    }
    else
    if (adc) {
        out->kind = SL_GCPTOKEN_KEY_FILE;
        out->key_file = sl_xstrdup (adc);
    }
    else {
        out->kind = SL_GCPTOKEN_METADATA;
        const char *host = sl_secret_env ("GCE_METADATA_HOST");
        out->metadata_host = sl_xstrdup (host ? host : SL_GCPTOKEN_METADATA_HOST);
    }
}

void
sl_gcptoken_config_clear (sl_gcptoken_config_t *self)
{
    free (self->key_file);
    sl_secret_free (&self->token);
    free (self->metadata_host);
    free (self->scope);
    memset (self, 0, sizeof *self);
}

int
sl_gcptoken_parse (int status, sl_str_t json, char **token, int64_t *expires_in_s,
                   char *why, size_t why_size)
{
    *token = NULL;
    *expires_in_s = 0;
    json_error_t err;
    json_t *root = json.ptr ? json_loadb (json.ptr, json.len, 0, &err) : NULL;
    int rc = -1;
    const char *error = json_string_value (json_object_get (root, "error"));
    const char *description = json_string_value (json_object_get (root, "error_description"));
    json_t *access = json_object_get (root, "access_token");
    json_t *expires = json_object_get (root, "expires_in");
    if (status != 200 || error) {
        if (error)
            snprintf (why, why_size, "the token endpoint refused (HTTP %d): %.100s%s%.200s", status, error,
                      description ? ": " : "", description ? description : "");
        else
            snprintf (why, why_size, "the token endpoint answered HTTP %d", status);
    }
    else
    if (!json_is_string (access) || json_string_length (access) == 0 || json_string_length (access) > TOKEN_MAX)
        snprintf (why, why_size, "the token endpoint's answer holds no access_token");
    else
    if (!json_is_integer (expires) || json_integer_value (expires) <= 0)
        snprintf (why, why_size, "the token endpoint's answer holds no valid expires_in");
    else {
        *token = sl_xstrdup (json_string_value (access));
        *expires_in_s = (int64_t) json_integer_value (expires);
        rc = 0;
    }
    if (json_is_string (access))
        sodium_memzero ((char *) json_string_value (access), json_string_length (access));
    json_decref (root);
    return rc;
}

static void
s_on_answer (void *arg, int status, sl_str_t body, const char *error)
{
    sl_gcptoken_t *self = arg;
    char why [300];
    const char *where = self->config.kind == SL_GCPTOKEN_METADATA ? "the metadata server" : "the token endpoint";
    char *token = NULL;
    int64_t expires_in = 0;
    int rc = -1;
    if (error)
        snprintf (why, sizeof why, "%s could not be asked: %s", where, error);
    else
        rc = sl_gcptoken_parse (status, body, &token, &expires_in, why, sizeof why);
    //  The answer (body) is wiped with the fetch: read before.
    sl_credfetch_destroy (&self->fetch);
    if (rc) {
        sl_refresher_failed (self->refresher, why);
        return;
    }
    sl_secret_free (&self->token);
    self->token = token;
    sl_refresher_fetched (self->refresher, zclock_time () + expires_in * 1000);
}

static void
s_fetch_with_key (sl_gcptoken_t *self)
{
    char why [300];
    char *assertion = sl_gcpkey_assertion (self->key, self->config.scope ? self->config.scope : SL_GCPTOKEN_SCOPE,
                                           (time_t) (zclock_time () / 1000), why, sizeof why);
    if (!assertion) {
        sl_refresher_failed (self->refresher, why);
        return;
    }
    sl_buf_t body = { 0 };
    sl_gcpkey_grant (&body, assertion);
    sodium_memzero (assertion, strlen (assertion));
    free (assertion);
    static const char *const headers [] = {
        "Content-Type: application/x-www-form-urlencoded", "Accept: application/json", NULL
    };
    sl_credfetch_req_t req = { "POST", sl_gcpkey_token_uri (self->key), headers, sl_buf_str (&body), 0 };
    self->fetch = sl_credfetch_start (self->curlm, &req, s_on_answer, self);
    sodium_memzero (body.data, body.cap);
    sl_buf_free (&body);
    if (!self->fetch)
        sl_refresher_failed (self->refresher, "the request to the token endpoint could not be started");
}

static void
s_fetch_from_metadata (sl_gcptoken_t *self)
{
    static const char *const headers [] = { "Metadata-Flavor: Google", "Accept: application/json", NULL };
    char *url = sl_xasprintf ("http://%s%s", self->config.metadata_host, SL_GCPTOKEN_METADATA_PATH);
    sl_credfetch_req_t req = { "GET", url, headers, SL_STR_NULL, 0 };
    self->fetch = sl_credfetch_start (self->curlm, &req, s_on_answer, self);
    free (url);
    if (!self->fetch)
        sl_refresher_failed (self->refresher, "the request to the metadata server could not be started");
}

static void
s_fetch (void *arg)
{
    sl_gcptoken_t *self = arg;
    if (self->config.kind == SL_GCPTOKEN_KEY_FILE)
        s_fetch_with_key (self);
    else
        s_fetch_from_metadata (self);
}

sl_gcptoken_t *
sl_gcptoken_new (zloop_t *loop, sl_curlm_t *curlm, const sl_gcptoken_config_t *config,
                 const sl_refresher_timing_t *timing, char *why, size_t why_size)
{
    sl_gcptoken_t *self = sl_xcalloc (1, sizeof *self);
    self->curlm = curlm;
    self->config = (sl_gcptoken_config_t) {
        .kind = config->kind,
        .key_file = sl_secret_dup (config->key_file),
        .token = sl_secret_dup (config->token),
        .metadata_host = sl_secret_dup (config->metadata_host),
        .scope = sl_secret_dup (config->scope),
    };
    if (self->config.kind == SL_GCPTOKEN_KEY_FILE) {
        self->key = self->config.key_file ? sl_gcpkey_load (self->config.key_file, why, why_size) : NULL;
        if (!self->key) {
            if (!self->config.key_file)
                snprintf (why, why_size, "no key file named");
            sl_gcptoken_destroy (&self);
            return NULL;
        }
    }
    if (self->config.kind == SL_GCPTOKEN_GIVEN && !self->config.token) {
        snprintf (why, why_size, "%s is empty", SL_GCPTOKEN_TOKEN_ENV);
        sl_gcptoken_destroy (&self);
        return NULL;
    }
    if (self->config.kind == SL_GCPTOKEN_METADATA && !self->config.metadata_host) {
        snprintf (why, why_size, "no metadata server host");
        sl_gcptoken_destroy (&self);
        return NULL;
    }
    self->refresher = sl_refresher_new (loop, timing, s_fetch, self);
    if (self->config.kind == SL_GCPTOKEN_GIVEN) {
        self->token = sl_xstrdup (self->config.token);
        sl_refresher_fetched (self->refresher, 0);
    }
    else
        sl_refresher_kick (self->refresher);
    return self;
}

void
sl_gcptoken_destroy (sl_gcptoken_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_gcptoken_t *self = *self_p;
    sl_credfetch_destroy (&self->fetch);
    sl_refresher_destroy (&self->refresher);
    sl_gcpkey_destroy (&self->key);
    sl_secret_free (&self->token);
    sl_gcptoken_config_clear (&self->config);
    free (self);
    *self_p = NULL;
}

int
sl_gcptoken_get (sl_gcptoken_t *self, const char **token,
                 sl_refresher_ready_fn *fn, void *arg, uint64_t *wait_id)
{
    *token = NULL;
    int rc = sl_refresher_need (self->refresher, fn, arg, wait_id);
    if (rc == 0)
        *token = self->token;
    return rc;
}

void
sl_gcptoken_cancel (sl_gcptoken_t *self, uint64_t wait_id)
{
    sl_refresher_cancel (self->refresher, wait_id);
}

sl_gcptoken_kind_t
sl_gcptoken_kind (sl_gcptoken_t *self)
{
    return self->config.kind;
}

sl_refresher_t *
sl_gcptoken_refresher (sl_gcptoken_t *self)
{
    return self->refresher;
}
