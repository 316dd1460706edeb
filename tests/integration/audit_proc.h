/*  audit_proc.h - sluice-audit beside a test's stack, and questions to its
    console (the JSON API), for the audit's integration and browser tests. */
#ifndef AUDIT_PROC_H
#define AUDIT_PROC_H

#include <jansson.h>
#include <stdbool.h>

#include "tests/integration/harness.h"

typedef struct {
    proc_t *proc;
    int console_port;
    int metrics_port;
} audit_proc_t;

//  Start sluice-audit (logging to <stack dir>/<label>.log) against the
//  stack's emitter, its store given by store_args ("--data-dir", DIR or
//  "--dsn", DSN), plus extra flags (NULL-terminated, or NULL). The
//  console and metrics on free ports. false (the log dumped) when it
//  does not come up.
bool audit_start (sluice_stack_t *s, const char *label, const char *const *store_args,
                  const char *const *extra, audit_proc_t *out);
//  The same for any emitters (a comma-separated list), keys and log directory.
bool audit_start_at (const char *dir, const char *keys, const char *emitters, const char *label,
                     const char *const *store_args, const char *const *extra, audit_proc_t *out);
//  audit_start_at in two halves: the process started (false when it
//  cannot be), then waited for until it comes up (false, the log dumped,
//  when it does not): a test under load starts one without stalling.
bool audit_spawn_at (const char *dir, const char *keys, const char *emitters, const char *label,
                     const char *const *store_args, const char *const *extra, audit_proc_t *out);
bool audit_wait_up (audit_proc_t *a);
//  GET path from the console as JSON (NULL unless 200).
json_t *audit_get (const audit_proc_t *a, const char *path);
//  Poll /api/streams?<query> until it lists at least want streams (or the
//  timeout); how many it listed last.
int audit_wait_streams (const audit_proc_t *a, const char *query, int want, int timeout_ms);
//  A metric of the audit (-1 when absent).
double audit_metric (const audit_proc_t *a, const char *name);

#endif
