/*  sl_aztoken.c - the Entra ID access token sluice calls Azure OpenAI
    with (see sl_aztoken.h). */
#include "common/cloud/sl_aztoken.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/cloud/sl_credfetch.h"
#include "common/cloud/sl_gcptoken.h"
#include "common/cloud/sl_secret.h"
#include "common/cloud/sl_sigv4.h"

#define TENANT_MAX 128                  //  a GUID or a domain name
#define TOKEN_FILE_MAX (16u << 10)      //  a projected service-account token is ~1 KiB
#define S_WHAT_TO_SET "set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET (a client secret) or " \
                      "AZURE_FEDERATED_TOKEN_FILE (workload identity), or key_env or token_env"

struct _sl_aztoken_t {
    sl_curlm_t *curlm;
    sl_aztoken_config_t config;         //  our copy
    char *url;                          //  the token endpoint
    sl_refresher_t *refresher;
    sl_credfetch_t *fetch;              //  the exchange under way, or NULL
    char *token;                        //  the current token
};

int
sl_aztoken_config_from_env (sl_aztoken_config_t *out, char *why, size_t why_size)
{
    memset (out, 0, sizeof *out);
    const char *tenant = sl_secret_env ("AZURE_TENANT_ID"), *client = sl_secret_env ("AZURE_CLIENT_ID");
    const char *secret = sl_secret_env ("AZURE_CLIENT_SECRET"), *file = sl_secret_env ("AZURE_FEDERATED_TOKEN_FILE");
    const char *authority = sl_secret_env ("AZURE_AUTHORITY_HOST");
    if (!secret && !file) {
        snprintf (why, why_size, "no Entra ID credential in the environment: %s", S_WHAT_TO_SET);
        return -1;
    }
    const char *using = secret ? "AZURE_CLIENT_SECRET" : "AZURE_FEDERATED_TOKEN_FILE";
    if (!tenant || !client) {
        snprintf (why, why_size, "%s is set but %s%s%s is not: set %s", using, tenant ? "" : "AZURE_TENANT_ID",
                  !tenant && !client ? " and " : "", client ? "" : "AZURE_CLIENT_ID",
                  !tenant && !client ? "both" : "it");
        return -1;
    }
    out->kind = secret ? SL_AZTOKEN_SECRET : SL_AZTOKEN_WORKLOAD;
    out->tenant = sl_xstrdup (tenant);
    out->client_id = sl_xstrdup (client);
    out->client_secret = sl_secret_dup (secret);
    out->token_file = secret ? NULL : sl_xstrdup (file);
    //  "https://login.microsoftonline.com/" as the Azure SDKs document it.
    out->authority = sl_xstrdup (authority ? authority : SL_AZTOKEN_AUTHORITY);
    for (size_t n = strlen (out->authority); n && out->authority [n - 1] == '/'; n--)
        out->authority [n - 1] = 0;
    return 0;
}

void
sl_aztoken_config_clear (sl_aztoken_config_t *self)
{
    free (self->authority);
    free (self->tenant);
    free (self->client_id);
    sl_secret_free (&self->client_secret);
    free (self->token_file);
    free (self->scope);
    memset (self, 0, sizeof *self);
}

//  A tenant's id (a GUID) or domain name: nothing that would change the
//  path it is put in.
static bool
s_tenant_ok (const char *t)
{
    size_t n = t ? strlen (t) : 0;
    if (n == 0 || n > TENANT_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((t [i] >= 'a' && t [i] <= 'z') || (t [i] >= 'A' && t [i] <= 'Z') || (t [i] >= '0' && t [i] <= '9')
           || t [i] == '-' || t [i] == '.' || t [i] == '_'))
            return false;
    return strcmp (t, ".") != 0 && strcmp (t, "..") != 0;
}

int
sl_aztoken_url (const sl_aztoken_config_t *config, sl_buf_t *out)
{
    const char *a = config->authority ? config->authority : SL_AZTOKEN_AUTHORITY;
    if (!s_tenant_ok (config->tenant) || (strncmp (a, "https://", 8) != 0 && strncmp (a, "http://", 7) != 0))
        return -1;
    sl_buf_printf (out, "%s/%s/oauth2/v2.0/token", a, config->tenant);
    return 0;
}

static void
s_field (sl_buf_t *out, const char *name, const char *value)
{
    if (out->len)
        sl_buf_putc (out, '&');
    sl_buf_puts (out, name);
    sl_buf_putc (out, '=');
    sl_sigv4_uri_encode (out, sl_str (value ? value : ""), false);
}

void
sl_aztoken_form (const sl_aztoken_config_t *config, const char *assertion, sl_buf_t *out)
{
    //  Built apart, so s_field's '&' goes between this form's fields only.
    sl_buf_t form = { 0 };
    s_field (&form, "grant_type", "client_credentials");
    s_field (&form, "client_id", config->client_id);
    s_field (&form, "scope", config->scope ? config->scope : SL_AZTOKEN_SCOPE);
    if (config->kind == SL_AZTOKEN_SECRET)
        s_field (&form, "client_secret", config->client_secret);
    else {
        s_field (&form, "client_assertion_type", SL_AZTOKEN_ASSERTION_TYPE);
        s_field (&form, "client_assertion", assertion);
    }
    sl_buf_append (out, form.data, form.len);
    sodium_memzero (form.data, form.cap);
    sl_buf_free (&form);
}

//  The federated token file's token, its line end trimmed; NULL with why.
static char *
s_read_token (const char *path, char *why, size_t why_size)
{
    FILE *f = fopen (path, "r");
    if (!f) {
        snprintf (why, why_size, "the federated token file %.200s (AZURE_FEDERATED_TOKEN_FILE) cannot be read: %s",
                  path, strerror (errno));
        return NULL;
    }
    char *buf = sl_xmalloc (TOKEN_FILE_MAX + 1);
    size_t n = fread (buf, 1, TOKEN_FILE_MAX + 1, f);
    fclose (f);
    while (n && (buf [n - 1] == '\n' || buf [n - 1] == '\r' || buf [n - 1] == ' '))
        n--;
    if (n == 0 || n > TOKEN_FILE_MAX) {
        snprintf (why, why_size, "the federated token file %.200s is %s", path, n ? "over 16 KiB" : "empty");
        sodium_memzero (buf, TOKEN_FILE_MAX + 1);
        free (buf);
        return NULL;
    }
    buf [n] = 0;
    return buf;
}

static void
s_on_answer (void *arg, int status, sl_str_t body, const char *error)
{
    sl_aztoken_t *self = arg;
    char why [300];
    char *token = NULL;
    int64_t expires_in = 0;
    int rc = -1;
    if (error)
        snprintf (why, sizeof why, "the Entra ID token endpoint could not be asked: %s", error);
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
s_fetch (void *arg)
{
    sl_aztoken_t *self = arg;
    char why [300];
    char *assertion = NULL;
    if (self->config.kind == SL_AZTOKEN_WORKLOAD) {
        //  Read at each fetch: the kubelet rotates it.
        assertion = s_read_token (self->config.token_file, why, sizeof why);
        if (!assertion) {
            sl_refresher_failed (self->refresher, why);
            return;
        }
    }
    sl_buf_t body = { 0 };
    sl_aztoken_form (&self->config, assertion, &body);
    sl_secret_free (&assertion);
    static const char *const headers [] = {
        "Content-Type: application/x-www-form-urlencoded;charset=utf-8", "Accept: application/json", NULL
    };
    sl_credfetch_req_t req = { "POST", self->url, headers, sl_buf_str (&body), 0 };
    self->fetch = sl_credfetch_start (self->curlm, &req, s_on_answer, self);
    sodium_memzero (body.data, body.cap);
    sl_buf_free (&body);
    if (!self->fetch)
        sl_refresher_failed (self->refresher, "the request to the Entra ID token endpoint could not be started");
}

sl_aztoken_t *
sl_aztoken_new (zloop_t *loop, sl_curlm_t *curlm, const sl_aztoken_config_t *config,
                const sl_refresher_timing_t *timing, char *why, size_t why_size)
{
    sl_aztoken_t *self = sl_xcalloc (1, sizeof *self);
    self->curlm = curlm;
    self->config = (sl_aztoken_config_t) {
        .kind = config->kind,
        .authority = sl_secret_dup (config->authority),
        .tenant = sl_secret_dup (config->tenant),
        .client_id = sl_secret_dup (config->client_id),
        .client_secret = sl_secret_dup (config->client_secret),
        .token_file = sl_secret_dup (config->token_file),
        .scope = sl_secret_dup (config->scope),
    };
    sl_buf_t url = { 0 };
    const char *missing = !self->config.client_id ? "no client id"
                        : self->config.kind == SL_AZTOKEN_SECRET && !self->config.client_secret ? "no client secret"
                        : self->config.kind == SL_AZTOKEN_WORKLOAD && !self->config.token_file
                        ? "no federated token file" : NULL;
    if (!missing && sl_aztoken_url (&self->config, &url))
        missing = "AZURE_TENANT_ID is not a tenant's id or domain, or AZURE_AUTHORITY_HOST is not an http(s) URL";
    if (missing) {
        snprintf (why, why_size, "%s", missing);
        sl_buf_free (&url);
        sl_aztoken_destroy (&self);
        return NULL;
    }
    self->url = sl_xstrdup (sl_buf_cstr (&url));
    sl_buf_free (&url);
    self->refresher = sl_refresher_new (loop, timing, s_fetch, self);
    sl_refresher_kick (self->refresher);
    return self;
}

void
sl_aztoken_destroy (sl_aztoken_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_aztoken_t *self = *self_p;
    sl_credfetch_destroy (&self->fetch);
    sl_refresher_destroy (&self->refresher);
    sl_secret_free (&self->token);
    free (self->url);
    sl_aztoken_config_clear (&self->config);
    free (self);
    *self_p = NULL;
}

int
sl_aztoken_get (sl_aztoken_t *self, const char **token,
                sl_refresher_ready_fn *fn, void *arg, uint64_t *wait_id)
{
    *token = NULL;
    int rc = sl_refresher_need (self->refresher, fn, arg, wait_id);
    if (rc == 0)
        *token = self->token;
    return rc;
}

void
sl_aztoken_cancel (sl_aztoken_t *self, uint64_t wait_id)
{
    sl_refresher_cancel (self->refresher, wait_id);
}

sl_aztoken_kind_t
sl_aztoken_kind (sl_aztoken_t *self)
{
    return self->config.kind;
}

sl_refresher_t *
sl_aztoken_refresher (sl_aztoken_t *self)
{
    return self->refresher;
}
