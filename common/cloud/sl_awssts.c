/*  sl_awssts.c - AWS STS AssumeRoleWithWebIdentity (see sl_awssts.h). */
#include "common/cloud/sl_awssts.h"

#include <ctype.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_alloc.h"
#include "common/cloud/sl_sigv4.h"

#define FIELD_MAX 4096                  //  a session token is ~1 KiB; more is not an answer

void
sl_awssts_request (sl_buf_t *out, const char *role_arn, const char *session_name, sl_str_t token)
{
    sl_buf_printf (out, "Action=AssumeRoleWithWebIdentity&Version=%s&RoleArn=", SL_AWSSTS_VERSION);
    sl_sigv4_uri_encode (out, sl_str (role_arn), false);
    sl_buf_puts (out, "&RoleSessionName=");
    sl_sigv4_uri_encode (out, sl_str (session_name && *session_name ? session_name : SL_AWSSTS_DEFAULT_SESSION), false);
    sl_buf_puts (out, "&WebIdentityToken=");
    sl_sigv4_uri_encode (out, token, false);
}

//  The text of the first element <name> inside xml; absent when none.
static sl_str_t
s_element (sl_str_t xml, const char *name)
{
    if (!xml.ptr)
        return SL_STR_NULL;
    char open [64], close [64];
    snprintf (open, sizeof open, "<%s>", name);
    snprintf (close, sizeof close, "</%s>", name);
    const char *start = memmem (xml.ptr, xml.len, open, strlen (open));
    if (!start)
        return SL_STR_NULL;
    start += strlen (open);
    const char *end = memmem (start, (size_t) (xml.ptr + xml.len - start), close, strlen (close));
    if (!end)
        return SL_STR_NULL;
    return sl_str_n (start, (size_t) (end - start));
}

//  XML text with its five entities and numeric references decoded; NULL
//  when it is too long, holds markup or a reference we do not read.
static char *
s_text (sl_str_t s)
{
    if (!s.ptr || s.len > FIELD_MAX)
        return NULL;
    sl_buf_t out = { 0 };
    static const struct { const char *ent; char c; } ents [] = {
        { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' },
    };
    for (size_t i = 0; i < s.len; i++) {
        char c = s.ptr [i];
        if (c == '<') {
            sl_buf_free (&out);
            return NULL;
        }
        if (c != '&') {
            sl_buf_putc (&out, c);
            continue;
        }
        bool done = false;
        for (size_t k = 0; k < sizeof ents / sizeof ents [0] && !done; k++) {
            size_t n = strlen (ents [k].ent);
            if (s.len - i >= n && memcmp (s.ptr + i, ents [k].ent, n) == 0) {
                sl_buf_putc (&out, ents [k].c);
                i += n - 1;
                done = true;
            }
        }
        //  &#NN; and &#xNN; of ASCII (all a key or token holds).
        if (!done && s.len - i > 3 && s.ptr [i + 1] == '#') {
            char *end;
            bool hex = s.ptr [i + 2] == 'x';
            char num [12] = { 0 };
            size_t at = i + (hex ? 3 : 2), n = 0;
            while (at + n < s.len && n < sizeof num - 1 && s.ptr [at + n] != ';')
                n++;
            memcpy (num, s.ptr + at, n);
            long v = strtol (num, &end, hex ? 16 : 10);
            if (n && *end == 0 && at + n < s.len && v > 0 && v < 0x80) {
                sl_buf_putc (&out, (char) v);
                i = at + n;
                done = true;
            }
        }
        if (!done) {
            sl_buf_free (&out);
            return NULL;
        }
    }
    char *text = sl_xstrndup (out.data ? out.data : "", out.len);
    if (out.data)
        sodium_memzero (out.data, out.cap);
    sl_buf_free (&out);
    return text;
}

int64_t
sl_awssts_time (sl_str_t iso)
{
    char text [40];
    if (!iso.ptr || iso.len >= sizeof text)
        return -1;
    memcpy (text, iso.ptr, iso.len);
    text [iso.len] = 0;
    struct tm tm = { 0 };
    const char *rest = strptime (text, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!rest)
        return -1;
    long ms = 0;
    if (*rest == '.') {
        rest++;
        int digits = 0;
        while (isdigit ((unsigned char) *rest)) {
            if (digits < 3) {
                ms = ms * 10 + (*rest - '0');
                digits++;
            }
            rest++;
        }
        if (!digits)
            return -1;
        while (digits++ < 3)
            ms *= 10;
    }
    if (strcmp (rest, "Z") != 0 && strcmp (rest, "+00:00") != 0)
        return -1;
    time_t t = timegm (&tm);
    if (t < 0)
        return -1;
    return (int64_t) t * 1000 + ms;
}

static void
s_wipe_free (char *s)
{
    if (s) {
        sodium_memzero (s, strlen (s));
        free (s);
    }
}

void
sl_awssts_creds_clear (sl_awssts_creds_t *self)
{
    s_wipe_free (self->access_key_id);
    s_wipe_free (self->secret_access_key);
    s_wipe_free (self->session_token);
    memset (self, 0, sizeof *self);
}

int
sl_awssts_parse (int status, sl_str_t xml, sl_awssts_creds_t *out, char *why, size_t why_size)
{
    memset (out, 0, sizeof *out);
    if (!xml.ptr)
        xml = SL_STR_LIT ("");
    sl_str_t error = s_element (xml, "Error");
    if (status != 200 || sl_str_present (error)) {
        char *code = s_text (s_element (error, "Code")), *message = s_text (s_element (error, "Message"));
        if (code)
            snprintf (why, why_size, "STS refused (HTTP %d): %s%s%.200s", status, code,
                      message ? ": " : "", message ? message : "");
        else
            snprintf (why, why_size, "STS answered HTTP %d", status);
        free (code);
        free (message);
        return -1;
    }
    sl_str_t creds = s_element (s_element (xml, "AssumeRoleWithWebIdentityResult"), "Credentials");
    if (!sl_str_present (creds)) {
        snprintf (why, why_size, "STS's answer holds no credentials");
        return -1;
    }
    out->access_key_id = s_text (s_element (creds, "AccessKeyId"));
    out->secret_access_key = s_text (s_element (creds, "SecretAccessKey"));
    out->session_token = s_text (s_element (creds, "SessionToken"));
    out->expires_ms = sl_awssts_time (s_element (creds, "Expiration"));
    if (!out->access_key_id || !*out->access_key_id || !out->secret_access_key || !*out->secret_access_key
    ||  !out->session_token || !*out->session_token) {
        snprintf (why, why_size, "STS's credentials lack a key, a secret or a session token");
        sl_awssts_creds_clear (out);
        return -1;
    }
    if (out->expires_ms < 0) {
        snprintf (why, why_size, "STS's credentials have no valid Expiration");
        sl_awssts_creds_clear (out);
        return -1;
    }
    return 0;
}
