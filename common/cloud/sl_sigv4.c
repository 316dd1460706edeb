/*  sl_sigv4.c - AWS Signature Version 4 (see sl_sigv4.h). */
#include "common/cloud/sl_sigv4.h"

#include <ctype.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_hex.h"

#define SCOPE_TERMINATOR "aws4_request"
#define KEY_PREFIX "AWS4"
#define SHA256_LEN crypto_hash_sha256_BYTES
#define MAX_HEADERS 64                  //  headers signed or checked, a bound on the work
#define DATE_ONLY_LEN 8                 //  20150830

//  Headers a proxy may add or change on the way: never signed (the AWS
//  SDK's ALWAYS_UNSIGNABLE_HEADERS).
static const char *const s_unsignable [] = {
    "authorization", "cache-control", "connection", "expect", "from", "keep-alive",
    "max-forwards", "pragma", "referer", "te", "trailer", "transfer-encoding", "upgrade",
    "user-agent", "x-amzn-trace-id", NULL
};

//  The headers sign adds itself: a caller giving one is a mistake.
static const char *const s_own [] = {
    "host", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256", NULL
};

//  One header of the canonical request.
typedef struct {
    char name [64];                     //  lower case
    sl_str_t value;                     //  as given (normalised when written)
    size_t order;                       //  place given, so repeated names keep their order
} s_hdr_t;

static bool
s_in (const char *const *list, const char *name)
{
    for (; *list; list++)
        if (strcmp (*list, name) == 0)
            return true;
    return false;
}

static bool
s_unreserved (unsigned char c)
{
    return isalnum (c) || c == '-' || c == '_' || c == '.' || c == '~';
}

void
sl_sigv4_uri_encode (sl_buf_t *out, sl_str_t s, bool keep_slash)
{
    static const char hex [] = "0123456789ABCDEF";
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char) s.ptr [i];
        if (s_unreserved (c) || (keep_slash && c == '/'))
            sl_buf_putc (out, (char) c);
        else {
            char esc [3] = { '%', hex [c >> 4], hex [c & 15] };
            sl_buf_append (out, esc, 3);
        }
    }
}

//  The path with its empty, "." and ".." segments removed (the AWS SDK's
//  normalisation), encoded once more.
static void
s_canonical_path (sl_buf_t *out, const char *path)
{
    sl_str_t segs [256];
    size_t n = 0;
    size_t len = strlen (path);
    const char *p = path, *end = path + len;
    while (p < end) {
        const char *slash = memchr (p, '/', (size_t) (end - p));
        const char *seg_end = slash ? slash : end;
        sl_str_t seg = sl_str_n (p, (size_t) (seg_end - p));
        if (seg.len == 0 || sl_str_eq (seg, "."))
            ;
        else
        if (sl_str_eq (seg, "..")) {
            if (n)
                n--;
        }
        else
        if (n < sizeof segs / sizeof segs [0])
            segs [n++] = seg;
        p = slash ? slash + 1 : end;
    }
    sl_buf_putc (out, '/');
    for (size_t i = 0; i < n; i++) {
        if (i)
            sl_buf_putc (out, '/');
        sl_sigv4_uri_encode (out, segs [i], false);
    }
    if (n && len && path [len - 1] == '/')
        sl_buf_putc (out, '/');
}

//  %XX decoded (a bad escape kept as it is).
static void
s_uri_decode (sl_buf_t *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s [i] == '%' && i + 2 < len
        &&  sl_hex_digit (s [i + 1]) >= 0 && sl_hex_digit (s [i + 2]) >= 0) {
            sl_buf_putc (out, (char) (sl_hex_digit (s [i + 1]) << 4 | sl_hex_digit (s [i + 2])));
            i += 2;
        }
        else
            sl_buf_putc (out, s [i]);
}

typedef struct {
    char *pair;                         //  "name=value", both encoded
    size_t name_len;
} s_param_t;

static int
s_param_cmp (const void *a, const void *b)
{
    const s_param_t *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp (x->pair, y->pair, n);
    if (c == 0 && x->name_len != y->name_len)
        return x->name_len < y->name_len ? -1 : 1;
    if (c)
        return c;
    return strcmp (x->pair + x->name_len, y->pair + y->name_len);
}

//  The query: each parameter decoded, encoded strictly, sorted by name
//  then value; "X-Amz-Signature" left out (a presigned URL's own).
static void
s_canonical_query (sl_buf_t *out, const char *query)
{
    if (!query || !*query)
        return;
    s_param_t params [MAX_HEADERS * 2];
    size_t n = 0;
    const char *p = query;
    while (*p && n < sizeof params / sizeof params [0]) {
        const char *amp = strchr (p, '&');
        size_t len = amp ? (size_t) (amp - p) : strlen (p);
        if (len) {
            const char *eq = memchr (p, '=', len);
            size_t name_len = eq ? (size_t) (eq - p) : len;
            sl_buf_t raw = { 0 }, enc = { 0 };
            s_uri_decode (&raw, p, name_len);
            if (!sl_str_eq (sl_buf_str (&raw), "X-Amz-Signature")) {
                sl_sigv4_uri_encode (&enc, sl_buf_str (&raw), false);
                size_t enc_name = enc.len;
                sl_buf_putc (&enc, '=');
                sl_buf_reset (&raw);
                if (eq)
                    s_uri_decode (&raw, eq + 1, len - name_len - 1);
                sl_sigv4_uri_encode (&enc, sl_buf_str (&raw), false);
                params [n].pair = sl_xstrndup (enc.data, enc.len);
                params [n].name_len = enc_name;
                n++;
            }
            sl_buf_free (&raw);
            sl_buf_free (&enc);
        }
        p = amp ? amp + 1 : p + len;
    }
    qsort (params, n, sizeof params [0], s_param_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i)
            sl_buf_putc (out, '&');
        sl_buf_puts (out, params [i].pair);
        free (params [i].pair);
    }
}

static int
s_hdr_cmp (const void *a, const void *b)
{
    const s_hdr_t *x = a, *y = b;
    int c = strcmp (x->name, y->name);
    return c ? c : (x->order < y->order ? -1 : x->order > y->order);
}

//  A value trimmed, its inner runs of blanks one space.
static void
s_put_value (sl_buf_t *out, sl_str_t v)
{
    size_t i = 0, end = v.len;
    while (i < end && (v.ptr [i] == ' ' || v.ptr [i] == '\t'))
        i++;
    while (end > i && (v.ptr [end - 1] == ' ' || v.ptr [end - 1] == '\t'))
        end--;
    bool blank = false;
    for (; i < end; i++) {
        char c = v.ptr [i];
        if (c == ' ' || c == '\t') {
            blank = true;
            continue;
        }
        if (blank)
            sl_buf_putc (out, ' ');
        blank = false;
        sl_buf_putc (out, c);
    }
}

//  Lower-case a header name into out; -1 when it is no token or too long.
static int
s_lower_name (char *out, size_t size, const char *name)
{
    size_t len = name ? strlen (name) : 0;
    if (len == 0 || len >= size)
        return -1;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char) name [i];
        if (c <= ' ' || c >= 0x7f || c == ':')
            return -1;
        out [i] = (char) tolower (c);
    }
    out [len] = 0;
    return 0;
}

//  The canonical request from the headers to sign (sorted here) and the
//  payload's hash; signed receives "a;b;c".
static void
s_canonical (sl_buf_t *out, const char *method, const char *path, const char *query,
             s_hdr_t *hdrs, size_t n, const char *payload_hex, sl_buf_t *signed_names)
{
    qsort (hdrs, n, sizeof hdrs [0], s_hdr_cmp);
    sl_buf_puts (out, method);
    sl_buf_putc (out, '\n');
    s_canonical_path (out, path && *path ? path : "/");
    sl_buf_putc (out, '\n');
    s_canonical_query (out, query);
    sl_buf_putc (out, '\n');
    for (size_t i = 0; i < n; i++) {
        bool repeat = i > 0 && strcmp (hdrs [i].name, hdrs [i - 1].name) == 0;
        if (repeat)
            sl_buf_putc (out, ',');
        else {
            if (i)
                sl_buf_putc (out, '\n');
            sl_buf_puts (out, hdrs [i].name);
            sl_buf_putc (out, ':');
            if (signed_names->len)
                sl_buf_putc (signed_names, ';');
            sl_buf_puts (signed_names, hdrs [i].name);
        }
        s_put_value (out, hdrs [i].value);
    }
    sl_buf_puts (out, "\n\n");
    sl_buf_append_str (out, sl_buf_str (signed_names));
    sl_buf_putc (out, '\n');
    sl_buf_puts (out, payload_hex);
}

static void
s_sha256_hex (char out [SL_SIGV4_HEX_LEN + 1], const void *data, size_t len)
{
    unsigned char digest [SHA256_LEN];
    crypto_hash_sha256 (digest, data, len);
    sl_hex_write (out, digest, SHA256_LEN);
    out [SL_SIGV4_HEX_LEN] = 0;
}

static void
s_hmac (unsigned char out [SHA256_LEN], const void *key, size_t key_len, const void *msg, size_t len)
{
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init (&st, key, key_len);
    crypto_auth_hmacsha256_update (&st, msg, len);
    crypto_auth_hmacsha256_final (&st, out);
    sodium_memzero (&st, sizeof st);
}

//  The signature (hex) of a canonical request: the string to sign, the
//  derived key, the HMAC.
static void
s_signature (char out [SL_SIGV4_HEX_LEN + 1], const char *secret, const char *amz_date,
             const char *scope_date, const char *region, const char *service, sl_str_t canonical)
{
    char canonical_hex [SL_SIGV4_HEX_LEN + 1];
    s_sha256_hex (canonical_hex, canonical.ptr, canonical.len);
    sl_buf_t sts = { 0 };
    sl_buf_printf (&sts, "%s\n%s\n%.8s/%s/%s/%s\n%s", SL_SIGV4_ALGORITHM, amz_date, scope_date,
                   region, service, SCOPE_TERMINATOR, canonical_hex);
    sl_buf_t k = { 0 };
    sl_buf_printf (&k, "%s%s", KEY_PREFIX, secret);
    unsigned char key [SHA256_LEN], sig [SHA256_LEN];
    s_hmac (key, k.data, k.len, scope_date, DATE_ONLY_LEN);
    sodium_memzero (k.data, k.len);
    sl_buf_free (&k);
    s_hmac (key, key, sizeof key, region, strlen (region));
    s_hmac (key, key, sizeof key, service, strlen (service));
    s_hmac (key, key, sizeof key, SCOPE_TERMINATOR, strlen (SCOPE_TERMINATOR));
    s_hmac (sig, key, sizeof key, sts.data, sts.len);
    sodium_memzero (key, sizeof key);
    sl_hex_write (out, sig, SHA256_LEN);
    out [SL_SIGV4_HEX_LEN] = 0;
    sl_buf_free (&sts);
}

static bool
s_set (const char *s)
{
    return s && *s;
}

static bool
s_value_ok (const char *v)
{
    return v && !strpbrk (v, "\r\n");
}

int
sl_sigv4_sign (const sl_sigv4_creds_t *creds, const sl_sigv4_params_t *params,
               const sl_sigv4_request_t *req, sl_sigv4_signed_t *out, sl_buf_t *canonical)
{
    memset (out, 0, sizeof *out);
    if (!creds || !s_set (creds->access_key_id) || !s_set (creds->secret_access_key)
    ||  !s_set (params->region) || !s_set (params->service)
    ||  !s_set (req->method) || !s_set (req->host) || !s_value_ok (req->host)
    ||  req->header_count > MAX_HEADERS - 4)
        return -1;
    struct tm tm;
    if (!gmtime_r (&params->now, &tm)
    ||  strftime (out->amz_date, sizeof out->amz_date, "%Y%m%dT%H%M%SZ", &tm) != SL_SIGV4_DATE_LEN)
        return -1;
    s_sha256_hex (out->content_sha256, req->body.ptr ? req->body.ptr : "", req->body.len);
    s_hdr_t hdrs [MAX_HEADERS];
    size_t n = 0;
    for (size_t i = 0; i < req->header_count; i++) {
        s_hdr_t *h = &hdrs [n];
        if (s_lower_name (h->name, sizeof h->name, req->headers [i].name)
        ||  !s_value_ok (req->headers [i].value) || s_in (s_own, h->name))
            return -1;
        if (s_in (s_unsignable, h->name))
            continue;
        h->value = sl_str (req->headers [i].value);
        h->order = n++;
    }
    const struct { const char *name; const char *value; bool on; } own [] = {
        { "host", req->host, true },
        { "x-amz-date", out->amz_date, true },
        { "x-amz-security-token", creds->session_token, s_set (creds->session_token) },
        { "x-amz-content-sha256", out->content_sha256, params->content_sha256 },
    };
    for (size_t i = 0; i < sizeof own / sizeof own [0]; i++)
        if (own [i].on) {
            if (!s_value_ok (own [i].value))
                return -1;
            snprintf (hdrs [n].name, sizeof hdrs [n].name, "%s", own [i].name);
            hdrs [n].value = sl_str (own [i].value);
            hdrs [n].order = n;
            n++;
        }
    sl_buf_t creq = { 0 }, names = { 0 };
    s_canonical (&creq, req->method, req->path, req->query, hdrs, n, out->content_sha256, &names);
    char sig [SL_SIGV4_HEX_LEN + 1];
    s_signature (sig, creds->secret_access_key, out->amz_date, out->amz_date, params->region,
                 params->service, sl_buf_str (&creq));
    sl_buf_t auth = { 0 };
    sl_buf_printf (&auth, "%s Credential=%s/%.8s/%s/%s/%s, SignedHeaders=%s, Signature=%s",
                   SL_SIGV4_ALGORITHM, creds->access_key_id, out->amz_date, params->region,
                   params->service, SCOPE_TERMINATOR, sl_buf_cstr (&names), sig);
    out->authorization = sl_xstrndup (auth.data, auth.len);
    if (!params->content_sha256)
        out->content_sha256 [0] = 0;
    out->security_token = s_set (creds->session_token) ? creds->session_token : NULL;
    if (canonical)
        sl_buf_append_str (canonical, sl_buf_str (&creq));
    sl_buf_free (&auth);
    sl_buf_free (&creq);
    sl_buf_free (&names);
    return 0;
}

void
sl_sigv4_signed_clear (sl_sigv4_signed_t *self)
{
    free (self->authorization);
    memset (self, 0, sizeof *self);
}

//  The value of the one header name (any case) the request carries; NULL
//  when absent, and when repeated (ambiguous: refused).
static const char *
s_header (const sl_sigv4_request_t *req, const char *name, bool *repeated)
{
    const char *found = NULL;
    for (size_t i = 0; i < req->header_count; i++)
        if (req->headers [i].name && strcasecmp (req->headers [i].name, name) == 0) {
            if (found) {
                *repeated = true;
                return NULL;
            }
            found = req->headers [i].value;
        }
    return found;
}

#define FAIL(...) do { snprintf (why, why_size, __VA_ARGS__); goto done; } while (0)

//  "Credential=AKID/20150830/us-east-1/service/aws4_request" and its
//  fellows out of the Authorization header, into the slices given.
static int
s_parse_authorization (const char *auth, sl_str_t *credential, sl_str_t *signed_names, sl_str_t *signature)
{
    size_t alg = strlen (SL_SIGV4_ALGORITHM);
    if (strncmp (auth, SL_SIGV4_ALGORITHM, alg) != 0 || auth [alg] != ' ')
        return -1;
    const char *p = auth + alg;
    *credential = *signed_names = *signature = SL_STR_NULL;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *end = p + strcspn (p, ", ");
        const char *eq = memchr (p, '=', (size_t) (end - p));
        if (!eq)
            return -1;
        sl_str_t key = sl_str_n (p, (size_t) (eq - p)), value = sl_str_n (eq + 1, (size_t) (end - eq - 1));
        sl_str_t *slot = sl_str_eq (key, "Credential") ? credential
                       : sl_str_eq (key, "SignedHeaders") ? signed_names
                       : sl_str_eq (key, "Signature") ? signature : NULL;
        if (!slot || sl_str_present (*slot))
            return -1;
        *slot = value;
        p = end;
    }
    return sl_str_present (*credential) && sl_str_present (*signed_names) && sl_str_present (*signature)
           ? 0 : -1;
}

//  "20150830T123600Z" as a time; -1 when it is not one.
static time_t
s_parse_date (const char *s)
{
    struct tm tm = { 0 };
    if (!s || strlen (s) != SL_SIGV4_DATE_LEN)
        return -1;
    const char *end = strptime (s, "%Y%m%dT%H%M%SZ", &tm);
    if (!end || *end)
        return -1;
    return timegm (&tm);
}

int
sl_sigv4_verify (const sl_sigv4_creds_t *creds, const char *region, const char *service,
                 const sl_sigv4_request_t *req, time_t now, long max_skew_s,
                 char *why, size_t why_size)
{
    int rc = -1;
    bool repeated = false;
    sl_buf_t scope = { 0 }, creq = { 0 }, names = { 0 };
    snprintf (why, why_size, "%s", "");
    const char *auth = s_header (req, "authorization", &repeated);
    const char *amz_date = s_header (req, "x-amz-date", &repeated);
    const char *token = s_header (req, "x-amz-security-token", &repeated);
    const char *sha = s_header (req, "x-amz-content-sha256", &repeated);
    if (repeated)
        FAIL ("a header of the signature is repeated");
    if (!auth)
        FAIL ("no Authorization header");
    sl_str_t credential, signed_names, signature;
    if (s_parse_authorization (auth, &credential, &signed_names, &signature))
        FAIL ("the Authorization header is not an AWS4-HMAC-SHA256 signature");
    time_t at = s_parse_date (amz_date);
    if (at < 0)
        FAIL ("no valid X-Amz-Date header");
    long skew = max_skew_s > 0 ? max_skew_s : SL_SIGV4_MAX_SKEW_S;
    if (at > now + skew || at < now - skew)
        FAIL ("X-Amz-Date is more than %ld s away from now", skew);
    sl_buf_printf (&scope, "%s/%.8s/%s/%s/%s", creds->access_key_id, amz_date, region, service, SCOPE_TERMINATOR);
    if (!sl_str_eq (credential, sl_buf_cstr (&scope))) {
        size_t key_len = strlen (creds->access_key_id);
        if (credential.len <= key_len || memcmp (credential.ptr, creds->access_key_id, key_len)
        ||  credential.ptr [key_len] != '/')
            FAIL ("the signature is made with another access key");
        FAIL ("the signature's scope is not %.8s/%s/%s/%s", amz_date, region, service, SCOPE_TERMINATOR);
    }
    if (s_set (creds->session_token) && (!token || strcmp (token, creds->session_token) != 0))
        FAIL ("the session token is missing or is not the one expected");
    char body_hex [SL_SIGV4_HEX_LEN + 1];
    s_sha256_hex (body_hex, req->body.ptr ? req->body.ptr : "", req->body.len);
    if (sha && strcmp (sha, body_hex) != 0)
        FAIL ("the body does not match X-Amz-Content-Sha256");
    //  The headers named signed, each as it arrived, in the order named.
    s_hdr_t hdrs [MAX_HEADERS];
    size_t n = 0;
    bool host = false, date = false, tok = false;
    const char *p = signed_names.ptr, *end = signed_names.ptr + signed_names.len;
    char prev [64] = "";
    while (p < end) {
        const char *semi = memchr (p, ';', (size_t) (end - p));
        size_t len = semi ? (size_t) (semi - p) : (size_t) (end - p);
        char name [64];
        if (len == 0 || len >= sizeof name)
            FAIL ("SignedHeaders is malformed");
        memcpy (name, p, len);
        name [len] = 0;
        if (strcmp (name, prev) <= 0)
            FAIL ("SignedHeaders is not sorted, or not in lower case");
        snprintf (prev, sizeof prev, "%s", name);
        host |= strcmp (name, "host") == 0;
        date |= strcmp (name, "x-amz-date") == 0;
        tok |= strcmp (name, "x-amz-security-token") == 0;
        bool found = false;
        for (size_t i = 0; i < req->header_count && n < MAX_HEADERS; i++)
            if (req->headers [i].name && strcasecmp (req->headers [i].name, name) == 0) {
                snprintf (hdrs [n].name, sizeof hdrs [n].name, "%s", name);
                hdrs [n].value = sl_str (req->headers [i].value);
                hdrs [n].order = n;
                n++;
                found = true;
            }
        if (!found)
            FAIL ("the signed header %s is not in the request", name);
        p = semi ? semi + 1 : end;
    }
    if (!host || !date)
        FAIL ("the signature does not cover Host and X-Amz-Date");
    if (token && !tok)
        FAIL ("the session token is not signed");
    s_canonical (&creq, req->method, req->path, req->query, hdrs, n, sha ? sha : body_hex, &names);
    char expected [SL_SIGV4_HEX_LEN + 1];
    s_signature (expected, creds->secret_access_key, amz_date, amz_date, region, service, sl_buf_str (&creq));
    if (signature.len != SL_SIGV4_HEX_LEN || sodium_memcmp (signature.ptr, expected, SL_SIGV4_HEX_LEN) != 0)
        FAIL ("the signature does not match");
    rc = 0;
done:
    sl_buf_free (&scope);
    sl_buf_free (&creq);
    sl_buf_free (&names);
    return rc;
}
