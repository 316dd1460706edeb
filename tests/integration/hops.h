/*  hops.h - what a stack's processes hold, for integration tests. */
#ifndef HOPS_H
#define HOPS_H

#include <stdbool.h>

#include "tests/integration/harness.h"

//  Wait (at most timeout_ms, polling /metrics) until no process of the
//  stack holds a stream: sluice_streams_active of the ingest, the
//  aggregator, the judge, the emitter and the gateway, and the mock's
//  mock_streams_active, all 0. false when one still holds some: *which
//  names the first such process and *count what it holds.
bool hops_all_free (sluice_stack_t *s, int timeout_ms, const char **which, double *count);

#endif
