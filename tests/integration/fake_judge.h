/*  fake_judge.h - a judge's approvals control socket, played by a test
    (PROTOCOL.md, "ctl (18)"): a ROUTER that is a CURVE server with the
    stack's judge key, in a thread of its own, answering the gateway's
    and sluice-audit's ctl requests from a small script and keeping what
    it was asked. For the tests of the approvals APIs that need no real
    held call.

      list     200 with the one approval it holds (FAKE_JUDGE_ID)
      decide   FAKE_JUDGE_ID: 200 (the approval, decided) when `by` is an
               approver, a console user or a loopback caller, else 403;
               any other id: 404
      grant, cancel: kept, not answered
*/
#ifndef FAKE_JUDGE_H
#define FAKE_JUDGE_H

#include <stdbool.h>

#define FAKE_JUDGE_ID "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"
#define FAKE_JUDGE_TEXT_MAX 2048

typedef struct _fake_judge_t fake_judge_t;

//  Bind tcp://127.0.0.1:port with the key "judge" of the directory keys.
//  NULL when the port cannot be bound or the key not loaded.
fake_judge_t *fake_judge_start (const char *keys, int port);
void fake_judge_stop (fake_judge_t **self_p);

//  What it saw so far (copied under its lock).
typedef struct {
    int lists, decides, cancels, grants;
    char last_by [FAKE_JUDGE_TEXT_MAX];     //  the "by" of the last list or decide, JSON
    char last_decide [FAKE_JUDGE_TEXT_MAX]; //  the body of the last decide
    char last_cancel [FAKE_JUDGE_TEXT_MAX]; //  the body of the last cancel
} fake_judge_seen_t;

void fake_judge_seen (fake_judge_t *self, fake_judge_seen_t *out);
//  Wait (at most timeout_ms) until it saw at least cancels cancels.
bool fake_judge_wait_cancels (fake_judge_t *self, int cancels, int timeout_ms);

#endif
