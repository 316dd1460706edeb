/*  sl_mock_entra.c - the mock as Entra ID's token endpoint (see
    sl_mock_entra.h). */
#include "services/mock/sl_mock_entra.h"

#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "services/mock/sl_mock_gcp.h"

#define GRANT_TYPE "client_credentials"
#define ASSERTION_TYPE "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#define SCOPE "https://cognitiveservices.azure.com/.default"
#define FIELD_MAX 8192                  //  a federated token is ~1 KiB
#define TENANT_MAX 128
#define TOKEN_RANDOM 24                 //  random bytes in a token

typedef struct {
    char token [128];
    time_t expires;
} s_issued_t;

struct _sl_mock_entra_t {
    char *tenant;
    char *client_id;                    //  NULL: unconfigured
    char *client_secret;
    char *assertion;
    int64_t ttl_s;
    s_issued_t issued [SL_MOCK_ENTRA_TOKENS];
    size_t next;                        //  ring position
    uint64_t count;
};

static char *
s_dup (const char *s)
{
    return s && *s ? sl_xstrdup (s) : NULL;
}

sl_mock_entra_t *
sl_mock_entra_new (const sl_mock_entra_config_t *c, char *why, size_t why_size)
{
    sl_mock_entra_t *self = sl_xcalloc (1, sizeof *self);
    self->tenant = s_dup (c->tenant);
    self->client_id = s_dup (c->client_id);
    self->client_secret = s_dup (c->client_secret);
    self->assertion = s_dup (c->assertion);
    self->ttl_s = c->ttl_s > 0 ? c->ttl_s : SL_MOCK_ENTRA_TTL_S;
    const char *wrong = NULL;
    if (self->client_id && !self->tenant)
        wrong = "a client id needs a tenant";
    else
    if (self->client_id && !self->client_secret && !self->assertion)
        wrong = "a client id needs a client secret or a federated token to take";
    else
    if (!self->client_id && (self->client_secret || self->assertion || self->tenant))
        wrong = "a tenant, a client secret or a federated token needs a client id";
    if (wrong) {
        snprintf (why, why_size, "%s", wrong);
        sl_mock_entra_destroy (&self);
    }
    return self;
}

void
sl_mock_entra_destroy (sl_mock_entra_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_mock_entra_t *self = *self_p;
    free (self->tenant);
    free (self->client_id);
    if (self->client_secret)
        sodium_memzero (self->client_secret, strlen (self->client_secret));
    free (self->client_secret);
    if (self->assertion)
        sodium_memzero (self->assertion, strlen (self->assertion));
    free (self->assertion);
    sodium_memzero (self->issued, sizeof self->issued);
    free (self);
    *self_p = NULL;
}

bool
sl_mock_entra_configured (sl_mock_entra_t *self)
{
    return self && self->client_id;
}

bool
sl_mock_entra_is_token_path (const char *path)
{
    size_t n = path ? strlen (path) : 0, end = strlen (SL_MOCK_ENTRA_PATH_END);
    return n > end + 1 && path [0] == '/' && strcmp (path + n - end, SL_MOCK_ENTRA_PATH_END) == 0;
}

static void
s_issue (sl_mock_entra_t *self, time_t now, sl_buf_t *answer)
{
    unsigned char random [TOKEN_RANDOM];
    randombytes_buf (random, sizeof random);
    s_issued_t *slot = &self->issued [self->next];
    self->next = (self->next + 1) % SL_MOCK_ENTRA_TOKENS;
    char hex [2 * TOKEN_RANDOM + 1];
    sodium_bin2hex (hex, sizeof hex, random, sizeof random);
    snprintf (slot->token, sizeof slot->token, "%s%s", SL_MOCK_ENTRA_TOKEN_PREFIX, hex);
    slot->expires = now + (time_t) self->ttl_s;
    self->count++;
    sl_buf_printf (answer, "{\"token_type\":\"Bearer\",\"expires_in\":%lld,\"ext_expires_in\":%lld,"
                   "\"access_token\":\"%s\"}", (long long) self->ttl_s, (long long) self->ttl_s, slot->token);
}

//  Entra ID's refusal: {"error", "error_description"}; the status.
static int
s_refuse (sl_buf_t *answer, int status, const char *error, const char *description)
{
    json_t *o = json_pack ("{s:s, s:s}", "error", error, "error_description", description);
    char *text = json_dumps (o, JSON_COMPACT);
    sl_buf_puts (answer, text);
    free (text);
    json_decref (o);
    return status;
}

int
sl_mock_entra_grant (sl_mock_entra_t *self, const char *path, sl_str_t form, time_t now, sl_buf_t *answer)
{
    char tenant [TENANT_MAX + 1] = "";
    size_t tenant_len = sl_mock_entra_is_token_path (path) ? strlen (path) - 1 - strlen (SL_MOCK_ENTRA_PATH_END) : 0;
    if (tenant_len > 0 && tenant_len <= TENANT_MAX) {
        memcpy (tenant, path + 1, tenant_len);
        tenant [tenant_len] = 0;
    }
    char grant_type [64], client_id [256], scope [512], field [FIELD_MAX], description [600];
    if (!sl_mock_entra_configured (self) || strcmp (tenant, self->tenant) != 0) {
        snprintf (description, sizeof description, "AADSTS90002: Tenant '%.128s' not found. Check to make sure you "
                  "have the correct tenant ID and are signing into the correct cloud.", tenant);
        return s_refuse (answer, 400, "invalid_request", description);
    }
    if (!sl_mock_gcp_form_value (form, "grant_type", grant_type, sizeof grant_type))
        return s_refuse (answer, 400, "invalid_request", "AADSTS900144: The request body must contain the following "
                                                         "parameter: 'grant_type'.");
    if (strcmp (grant_type, GRANT_TYPE) != 0)
        return s_refuse (answer, 400, "unsupported_grant_type", "AADSTS70003: The app requested an unsupported grant "
                                                                "type.");
    if (!sl_mock_gcp_form_value (form, "client_id", client_id, sizeof client_id)
    ||  strcmp (client_id, self->client_id) != 0) {
        snprintf (description, sizeof description, "AADSTS700016: Application with identifier '%.200s' was not found "
                  "in the directory '%s'.", client_id, self->tenant);
        return s_refuse (answer, 400, "unauthorized_client", description);
    }
    if (!sl_mock_gcp_form_value (form, "scope", scope, sizeof scope) || strcmp (scope, SCOPE) != 0)
        return s_refuse (answer, 400, "invalid_scope", "AADSTS1002012: The provided value for scope is not valid. "
                                                       "Client credential flows must have a scope value with /.default "
                                                       "suffixed to the resource identifier.");
    int status = 200;
    if (sl_mock_gcp_form_value (form, "client_secret", field, sizeof field)) {
        if (!self->client_secret || strcmp (field, self->client_secret) != 0) {
            snprintf (description, sizeof description, "AADSTS7000215: Invalid client secret provided. Ensure the "
                      "secret being sent in the request is the client secret value, not the client secret ID, for "
                      "a secret added to app '%s'.", self->client_id);
            status = s_refuse (answer, 401, "invalid_client", description);
        }
    }
    else
    if (sl_mock_gcp_form_value (form, "client_assertion", field, sizeof field)) {
        char type [128];
        if (!sl_mock_gcp_form_value (form, "client_assertion_type", type, sizeof type)
        ||  strcmp (type, ASSERTION_TYPE) != 0)
            status = s_refuse (answer, 400, "invalid_request", "AADSTS50027: Invalid client_assertion_type.");
        else
        if (!self->assertion || strcmp (field, self->assertion) != 0)
            status = s_refuse (answer, 401, "invalid_client", "AADSTS700213: No matching federated identity record "
                                                              "found for presented assertion subject.");
    }
    else
        status = s_refuse (answer, 401, "invalid_client", "AADSTS7000218: The request body must contain the following "
                                                          "parameter: 'client_assertion' or 'client_secret'.");
    sodium_memzero (field, sizeof field);
    if (status == 200)
        s_issue (self, now, answer);
    return status;
}

bool
sl_mock_entra_accepts (sl_mock_entra_t *self, const char *authorization, time_t now)
{
    static const char bearer [] = "Bearer ";
    if (!authorization || strncmp (authorization, bearer, strlen (bearer)) != 0)
        return false;
    const char *token = authorization + strlen (bearer);
    for (size_t i = 0; i < SL_MOCK_ENTRA_TOKENS; i++)
        if (self->issued [i].token [0] && strcmp (self->issued [i].token, token) == 0)
            return self->issued [i].expires > now;
    return false;
}

uint64_t
sl_mock_entra_issued (sl_mock_entra_t *self)
{
    return self->count;
}
