/*  otel_receiver.h - the OTLP receiver of tests/otel (receiver.mjs: the
    official OpenTelemetry protobuf decoder) run for a test: it writes
    each export it gets, decoded and normalised, as one JSON line. A test
    that needs it is skipped when node or the receiver's packages are
    missing (make otel-deps). */
#ifndef OTEL_RECEIVER_H
#define OTEL_RECEIVER_H

#include <sys/types.h>

#define OTEL_RECEIVER_DIR "tests/otel"

typedef struct {
    pid_t pid;
    int port;
    char dir [256];                     //  a fresh directory for its files
    char out [512];                     //  what it received, one JSON line per export
} otel_receiver_t;

//  Skip the calling test when node or the receiver's packages are absent.
void otel_receiver_skip_without_node (void);
//  Start it in mode ("ok", "400", "hang", ...; receiver.mjs lists them),
//  extra: more NAME VALUE flags (NULL-terminated, or NULL). Asserts that
//  it listens (bounded); skips the test without node.
void otel_receiver_start (otel_receiver_t *self, const char *mode, const char *const *extra);
void otel_receiver_kill (otel_receiver_t *self);
//  What it wrote so far (the caller frees; "" when nothing).
char *otel_receiver_received (otel_receiver_t *self);

#endif
