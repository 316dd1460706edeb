/*  sl_awscreds.c - the credentials sluice calls AWS with (see
    sl_awscreds.h). */
#include "common/cloud/sl_awscreds.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/cloud/sl_awssts.h"
#include "common/cloud/sl_credfetch.h"
#include "common/cloud/sl_secret.h"

#define TOKEN_FILE_MAX (16u << 10)      //  a projected service account token is ~1 KiB

struct _sl_awscreds_t {
    sl_curlm_t *curlm;
    sl_awscreds_config_t config;        //  our copy
    sl_refresher_t *refresher;
    sl_credfetch_t *fetch;              //  the STS exchange under way, or NULL
    sl_awssts_creds_t current;          //  web identity's keys
};

int
sl_awscreds_config_from_env (sl_awscreds_config_t *out, const char *region, char *why, size_t why_size)
{
    memset (out, 0, sizeof *out);
    const char *bearer = sl_secret_env ("AWS_BEARER_TOKEN_BEDROCK");
    const char *key = sl_secret_env ("AWS_ACCESS_KEY_ID"), *secret = sl_secret_env ("AWS_SECRET_ACCESS_KEY");
    const char *role = sl_secret_env ("AWS_ROLE_ARN"), *token_file = sl_secret_env ("AWS_WEB_IDENTITY_TOKEN_FILE");
    if (bearer) {
        out->kind = SL_AWSCREDS_BEARER;
        out->bearer_token = sl_secret_dup (bearer);
        return 0;
    }
    if (key || secret) {
        if (!key || !secret) {
            snprintf (why, why_size, "%s is set without %s", key ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                      key ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
            return -1;
        }
        out->kind = SL_AWSCREDS_STATIC;
        out->access_key_id = sl_secret_dup (key);
        out->secret_access_key = sl_secret_dup (secret);
        out->session_token = sl_secret_dup (sl_secret_env ("AWS_SESSION_TOKEN"));
        return 0;
    }
    if (role || token_file) {
        if (!role || !token_file) {
            snprintf (why, why_size, "%s is set without %s", role ? "AWS_ROLE_ARN" : "AWS_WEB_IDENTITY_TOKEN_FILE",
                      role ? "AWS_WEB_IDENTITY_TOKEN_FILE" : "AWS_ROLE_ARN");
            return -1;
        }
        out->kind = SL_AWSCREDS_WEB_IDENTITY;
        out->role_arn = sl_secret_dup (role);
        out->token_file = sl_secret_dup (token_file);
        out->session_name = sl_secret_dup (sl_secret_env ("AWS_ROLE_SESSION_NAME"));
        const char *sts = sl_secret_env ("AWS_ENDPOINT_URL_STS");
        out->sts_url = sts ? sl_xstrdup (sts)
                     : region && *region ? sl_xasprintf ("https://sts.%s.amazonaws.com", region)
                     : sl_xstrdup ("https://sts.amazonaws.com");
        return 0;
    }
    snprintf (why, why_size, "no AWS credentials: set AWS_BEARER_TOKEN_BEDROCK, AWS_ACCESS_KEY_ID and "
              "AWS_SECRET_ACCESS_KEY, or AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE");
    return -1;
}

int
sl_awscreds_config_from_vars (sl_awscreds_config_t *out, const char *key_var, const char *secret_var,
                              const char *session_var, char *why, size_t why_size)
{
    memset (out, 0, sizeof *out);
    const struct {
        const char *var, *field;
    } named [] = {
        { key_var, "aws_access_key_id_env" }, { secret_var, "aws_secret_access_key_env" },
        { session_var, "aws_session_token_env" }
    };
    for (size_t i = 0; i < sizeof named / sizeof named [0]; i++) {
        bool needed = i < 2;
        if ((needed || (named [i].var && *named [i].var))
        &&  !(named [i].var && *named [i].var && sl_secret_env (named [i].var))) {
            snprintf (why, why_size, "the variable %s (%s) is unset or empty",
                      named [i].var && *named [i].var ? named [i].var : "(none)", named [i].field);
            return -1;
        }
    }
    out->kind = SL_AWSCREDS_STATIC;
    out->access_key_id = sl_secret_dup (sl_secret_env (key_var));
    out->secret_access_key = sl_secret_dup (sl_secret_env (secret_var));
    out->session_token = session_var && *session_var ? sl_secret_dup (sl_secret_env (session_var)) : NULL;
    return 0;
}

void
sl_awscreds_config_clear (sl_awscreds_config_t *self)
{
    sl_secret_free (&self->bearer_token);
    sl_secret_free (&self->access_key_id);
    sl_secret_free (&self->secret_access_key);
    sl_secret_free (&self->session_token);
    free (self->role_arn);
    free (self->token_file);
    free (self->session_name);
    free (self->sts_url);
    memset (self, 0, sizeof *self);
}

//  The token file's contents, its line end trimmed; NULL with why set.
static char *
s_read_token (const char *path, char *why, size_t why_size)
{
    FILE *f = fopen (path, "r");
    if (!f) {
        snprintf (why, why_size, "the web identity token file %.200s cannot be read: %s", path, strerror (errno));
        return NULL;
    }
    char *buf = sl_xmalloc (TOKEN_FILE_MAX + 1);
    size_t n = fread (buf, 1, TOKEN_FILE_MAX + 1, f);
    fclose (f);
    while (n && (buf [n - 1] == '\n' || buf [n - 1] == '\r' || buf [n - 1] == ' '))
        n--;
    if (n == 0 || n > TOKEN_FILE_MAX) {
        snprintf (why, why_size, "the web identity token file %.200s is %s", path, n ? "over 16 KiB" : "empty");
        sodium_memzero (buf, TOKEN_FILE_MAX + 1);
        free (buf);
        return NULL;
    }
    buf [n] = 0;
    return buf;
}

static void
s_on_sts (void *arg, int status, sl_str_t body, const char *error)
{
    sl_awscreds_t *self = arg;
    char why [300];
    sl_awssts_creds_t fresh = { 0 };
    int rc = -1;
    if (error)
        snprintf (why, sizeof why, "STS (%.100s) could not be asked: %s", self->config.sts_url, error);
    else
        rc = sl_awssts_parse (status, body, &fresh, why, sizeof why);
    //  The answer (body) is wiped with the fetch: read before.
    sl_credfetch_destroy (&self->fetch);
    if (rc) {
        sl_refresher_failed (self->refresher, why);
        return;
    }
    sl_awssts_creds_clear (&self->current);
    self->current = fresh;
    sl_refresher_fetched (self->refresher, fresh.expires_ms);
}

//  Trade the token file's token with STS.
static void
s_fetch (void *arg)
{
    sl_awscreds_t *self = arg;
    char why [300];
    char *token = s_read_token (self->config.token_file, why, sizeof why);
    if (!token) {
        sl_refresher_failed (self->refresher, why);
        return;
    }
    sl_buf_t body = { 0 };
    sl_awssts_request (&body, self->config.role_arn, self->config.session_name, sl_str (token));
    sodium_memzero (token, strlen (token));
    free (token);
    static const char *const headers [] = {
        "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
        "Accept: text/xml",
        NULL
    };
    sl_credfetch_req_t req = { "POST", self->config.sts_url, headers, sl_buf_str (&body), 0 };
    self->fetch = sl_credfetch_start (self->curlm, &req, s_on_sts, self);
    sodium_memzero (body.data, body.cap);
    sl_buf_free (&body);
    if (!self->fetch)
        sl_refresher_failed (self->refresher, "the request to STS could not be started");
}

sl_awscreds_t *
sl_awscreds_new (zloop_t *loop, sl_curlm_t *curlm, const sl_awscreds_config_t *config,
                 const sl_refresher_timing_t *timing)
{
    sl_awscreds_t *self = sl_xcalloc (1, sizeof *self);
    self->curlm = curlm;
    const sl_awscreds_config_t *c = config;
    self->config = (sl_awscreds_config_t) {
        .kind = c->kind,
        .bearer_token = sl_secret_dup (c->bearer_token),
        .access_key_id = sl_secret_dup (c->access_key_id),
        .secret_access_key = sl_secret_dup (c->secret_access_key),
        .session_token = sl_secret_dup (c->session_token),
        .role_arn = sl_secret_dup (c->role_arn),
        .token_file = sl_secret_dup (c->token_file),
        .session_name = sl_secret_dup (c->session_name),
        .sts_url = sl_secret_dup (c->sts_url),
    };
    self->refresher = sl_refresher_new (loop, timing, s_fetch, self);
    if (c->kind == SL_AWSCREDS_WEB_IDENTITY)
        sl_refresher_kick (self->refresher);
    else
        sl_refresher_fetched (self->refresher, 0);     //  there from the start, never expire
    return self;
}

void
sl_awscreds_destroy (sl_awscreds_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_awscreds_t *self = *self_p;
    sl_credfetch_destroy (&self->fetch);
    sl_refresher_destroy (&self->refresher);
    sl_awssts_creds_clear (&self->current);
    sl_awscreds_config_clear (&self->config);
    free (self);
    *self_p = NULL;
}

int
sl_awscreds_get (sl_awscreds_t *self, sl_awscreds_use_t *use,
                 sl_refresher_ready_fn *fn, void *arg, uint64_t *wait_id)
{
    memset (use, 0, sizeof *use);
    int rc = sl_refresher_need (self->refresher, fn, arg, wait_id);
    if (rc)
        return rc;
    switch (self->config.kind) {
        case SL_AWSCREDS_BEARER:
            use->bearer = self->config.bearer_token;
            break;
        case SL_AWSCREDS_STATIC:
            use->keys = (sl_sigv4_creds_t) {
                self->config.access_key_id, self->config.secret_access_key, self->config.session_token
            };
            break;
        case SL_AWSCREDS_WEB_IDENTITY:
            use->keys = (sl_sigv4_creds_t) {
                self->current.access_key_id, self->current.secret_access_key, self->current.session_token
            };
            break;
    }
    return 0;
}

void
sl_awscreds_cancel (sl_awscreds_t *self, uint64_t wait_id)
{
    sl_refresher_cancel (self->refresher, wait_id);
}

//  Append "name: value" to the list, the line wiped after curl copied it.
static void
s_add (struct curl_slist **headers, const char *name, const char *value)
{
    sl_buf_t line = { 0 };
    sl_buf_printf (&line, "%s: %s", name, value);
    *headers = curl_slist_append (*headers, sl_buf_cstr (&line));
    sodium_memzero (line.data, line.len);
    sl_buf_free (&line);
}

int
sl_awscreds_authorize (const sl_awscreds_use_t *use, const sl_sigv4_params_t *params,
                       const sl_sigv4_request_t *req, struct curl_slist **headers)
{
    if (use->bearer) {
        sl_buf_t value = { 0 };
        sl_buf_printf (&value, "Bearer %s", use->bearer);
        s_add (headers, "Authorization", sl_buf_cstr (&value));
        sodium_memzero (value.data, value.len);
        sl_buf_free (&value);
        return 0;
    }
    sl_sigv4_signed_t sig;
    if (sl_sigv4_sign (&use->keys, params, req, &sig, NULL))
        return -1;
    s_add (headers, "X-Amz-Date", sig.amz_date);
    if (sig.security_token)
        s_add (headers, "X-Amz-Security-Token", sig.security_token);
    if (sig.content_sha256 [0])
        s_add (headers, "X-Amz-Content-Sha256", sig.content_sha256);
    s_add (headers, "Authorization", sig.authorization);
    sl_sigv4_signed_clear (&sig);
    return 0;
}

sl_awscreds_kind_t
sl_awscreds_kind (sl_awscreds_t *self)
{
    return self->config.kind;
}

sl_refresher_t *
sl_awscreds_refresher (sl_awscreds_t *self)
{
    return self->refresher;
}
