/*  sl_credfetch.c - one HTTP exchange that fetches a credential (see
    sl_credfetch.h). */
#include "common/cloud/sl_credfetch.h"

#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"

struct _sl_credfetch_t {
    sl_curlm_t *curlm;
    CURL *easy;
    struct curl_slist *headers;
    sl_buf_t body;                      //  what is sent (a token, an assertion)
    sl_buf_t answer;                    //  what came back (a token)
    bool too_big;
    sl_credfetch_done_fn *done;
    void *arg;
};

static void
s_wipe (sl_buf_t *buf)
{
    if (buf->data)
        sodium_memzero (buf->data, buf->cap);
    sl_buf_free (buf);
}

static size_t
s_on_data (char *ptr, size_t size, size_t nmemb, void *arg)
{
    sl_credfetch_t *self = arg;
    size_t n = size * nmemb;
    if (self->answer.len + n > SL_CREDFETCH_MAX_ANSWER) {
        self->too_big = true;
        return 0;                       //  ends the transfer with a write error
    }
    //  Grown in place only up to the bound, so no copy of a token is left
    //  behind in freed memory by a reallocation.
    if (!self->answer.data)
        sl_buf_reserve (&self->answer, SL_CREDFETCH_MAX_ANSWER);
    sl_buf_append (&self->answer, ptr, n);
    return n;
}

static void
s_on_done (void *arg, CURL *easy, CURLcode code)
{
    sl_credfetch_t *self = arg;
    long status = 0;
    char why [160];
    const char *error = NULL;
    if (code == CURLE_OK)
        curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &status);
    else {
        snprintf (why, sizeof why, "%s", self->too_big ? "the answer is over 64 KiB"
                  : code == CURLE_OPERATION_TIMEDOUT ? "no answer in time"
                  : curl_easy_strerror (code));
        error = why;
    }
    curl_easy_cleanup (self->easy);
    self->easy = NULL;
    //  done may destroy the fetch: nothing of self is touched after it.
    sl_credfetch_done_fn *done = self->done;
    self->done = NULL;
    done (self->arg, (int) status, code == CURLE_OK ? sl_buf_str (&self->answer) : SL_STR_NULL, error);
}

sl_credfetch_t *
sl_credfetch_start (sl_curlm_t *curlm, const sl_credfetch_req_t *req,
                    sl_credfetch_done_fn *done, void *arg)
{
    sl_credfetch_t *self = sl_xcalloc (1, sizeof *self);
    self->curlm = curlm;
    self->done = done;
    self->arg = arg;
    for (const char *const *h = req->headers; h && *h; h++)
        self->headers = curl_slist_append (self->headers, *h);
    self->easy = curl_easy_init ();
    CURL *easy = self->easy;
    curl_easy_setopt (easy, CURLOPT_URL, req->url);
    curl_easy_setopt (easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt (easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, req->timeout_ms > 0 ? req->timeout_ms : SL_CREDFETCH_TIMEOUT_MS);
    curl_easy_setopt (easy, CURLOPT_HTTPHEADER, self->headers);
    curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_on_data);
    curl_easy_setopt (easy, CURLOPT_WRITEDATA, self);
    if (strcmp (req->method, "POST") == 0) {
        sl_buf_append_str (&self->body, req->body);
        curl_easy_setopt (easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) self->body.len);
        curl_easy_setopt (easy, CURLOPT_POSTFIELDS, self->body.data ? self->body.data : "");
    }
    if (sl_curlm_add (curlm, easy, s_on_done, self)) {
        sl_credfetch_destroy (&self);
        return NULL;
    }
    return self;
}

void
sl_credfetch_destroy (sl_credfetch_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_credfetch_t *self = *self_p;
    if (self->easy) {
        sl_curlm_remove (self->curlm, self->easy);
        curl_easy_cleanup (self->easy);
    }
    //  The header lines may hold a token (Authorization, a metadata token).
    for (struct curl_slist *h = self->headers; h; h = h->next)
        sodium_memzero (h->data, strlen (h->data));
    curl_slist_free_all (self->headers);
    s_wipe (&self->body);
    s_wipe (&self->answer);
    free (self);
    *self_p = NULL;
}
