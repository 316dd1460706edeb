/*  audit_proc.c - sluice-audit for tests (see audit_proc.h). */
#include "tests/integration/audit_proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define AUDIT_POLL_US 20000

bool
audit_start (sluice_stack_t *s, const char *label, const char *const *store_args, const char *const *extra,
             audit_proc_t *out)
{
    return audit_start_at (s->dir, s->keys, s->audit, label, store_args, extra, out);
}

bool
audit_start_at (const char *dir, const char *keys, const char *emitters, const char *label,
                const char *const *store_args, const char *const *extra, audit_proc_t *out)
{
    return audit_spawn_at (dir, keys, emitters, label, store_args, extra, out) && audit_wait_up (out);
}

bool
audit_spawn_at (const char *dir, const char *keys, const char *emitters, const char *label,
                const char *const *store_args, const char *const *extra, audit_proc_t *out)
{
    memset (out, 0, sizeof *out);
    const char *args [48] = { "--emitters", emitters, "--keys", keys, "--console-port", "0",
                              "--metrics-port", "0", NULL };
    int n = 8;
    for (int i = 0; store_args && store_args [i] && n < 46; i++)
        args [n++] = store_args [i];
    for (int i = 0; extra && extra [i] && n < 46; i++)
        args [n++] = extra [i];
    args [n] = NULL;
    out->proc = proc_start_as (dir, "audit", label, args);
    return out->proc != NULL;
}

bool
audit_wait_up (audit_proc_t *a)
{
    char value [32];
    if (!proc_wait_log (a->proc, "\"console_listening\"", "url=http://127.0.0.1:", value, sizeof value, 15000)) {
        proc_dump (a->proc);
        return false;
    }
    a->console_port = atoi (value);
    if (!proc_wait_log (a->proc, "\"started\"", "metrics_port=", value, sizeof value, 15000)) {
        proc_dump (a->proc);
        return false;
    }
    a->metrics_port = atoi (value);
    return true;
}

json_t *
audit_get (const audit_proc_t *a, const char *path)
{
    sl_buf_t body = { 0 };
    json_t *j = NULL;
    if (http_request (a->console_port, "GET", path, NULL, NULL, &body, 10000) == 200)
        j = json_loadb (body.data ? body.data : "", body.len, 0, NULL);
    sl_buf_free (&body);
    return j;
}

int
audit_wait_streams (const audit_proc_t *a, const char *query, int want, int timeout_ms)
{
    long deadline = zclock_mono () + timeout_ms;
    char path [512];
    snprintf (path, sizeof path, "/api/streams?limit=1000%s%s", query && *query ? "&" : "", query ? query : "");
    int count = 0;
    do {
        json_t *j = audit_get (a, path);
        count = j ? (int) json_array_size (json_object_get (j, "streams")) : 0;
        json_decref (j);
        if (count >= want)
            break;
        usleep (AUDIT_POLL_US);
    } while (zclock_mono () < deadline);
    return count;
}

double
audit_metric (const audit_proc_t *a, const char *name)
{
    return metric_value (a->metrics_port, name);
}
