/*  sl_policy_report.h - the judge tells monitoring which policy it runs.

    Every few seconds, and at once when it loads a policy or fails to
    reload one, the judge sends a POLICY message to an emitter (PROTOCOL.md,
    "policy"), which publishes it to the taps and spools it for the audit:
    the judge's instance name, the policy's id (sl_policy_id: a digest of
    its text), the file's name, its text, when it was loaded, how many
    reloads failed since the judge started and why the last one did. The
    audit store keeps one row per judge and policy, so the console can
    show what each judge runs and what it refused to load. A judge with a
    keys file sends one report per policy it holds: its default, and each
    file the keys name (with pn, the name streams know it by).

    The report is not part of a stream: its stream id is derived from the
    judge's incarnation (the router pins it like any message; the judge
    unpins it at once, so each report goes to whichever emitter is live).
*/
#ifndef SL_POLICY_REPORT_H
#define SL_POLICY_REPORT_H

#include <stdint.h>

#include "proto/sl_msg.h"
#include "common/policy/sl_policy.h"

#define SL_POLICY_REPORT_MS 5000        //  a judge reports its policy this often
#define SL_POLICY_REPORT_TEXT_MAX 65536 //  bytes of the policy's text a report carries

typedef struct {
    const char *instance;               //  the judge's instance name
    uint64_t incarnation;               //  the judge's incarnation
    int64_t loaded_ms;                  //  when the policy was loaded, Unix ms
    uint64_t failures;                  //  reloads refused since the judge started
    const char *last_error;             //  why the last one was, or NULL
    const char *policy_name;            //  the file as streams name it (pn: a key's or team's),
                                        //  NULL for the judge's default policy
} sl_policy_report_t;

//  Fill out (which borrows from policy and report) with the report of
//  policy; a text longer than SL_POLICY_REPORT_TEXT_MAX is cut there.
void sl_policy_report (sl_policy_t *policy, const sl_policy_report_t *report, sl_msg_t *out);

#endif
