/*  sl_policy_report.c - the POLICY message of a judge (see sl_policy_report.h). */
#include "common/policy/sl_policy_report.h"

#include <string.h>

void
sl_policy_report (sl_policy_t *policy, const sl_policy_report_t *report, sl_msg_t *out)
{
    sl_msg_init (out, SL_MSG_POLICY);
    //  Not a stream: a fixed id per judge incarnation, so the router can
    //  place it, and no two judges' reports share one.
    memcpy (out->sid, "policy\0\0", 8);
    for (int i = 0; i < 8; i++)
        out->sid [8 + i] = (uint8_t) (report->incarnation >> (8 * i));
    out->instance = sl_str (report->instance);
    out->incarnation = report->incarnation;
    out->policy = sl_str (sl_policy_id (policy));
    out->name = sl_str (sl_policy_name (policy));
    sl_str_t text = sl_policy_source (policy);
    if (text.len > SL_POLICY_REPORT_TEXT_MAX)
        text.len = SL_POLICY_REPORT_TEXT_MAX;
    out->text = text;
    out->ts = report->loaded_ms;
    out->count = report->failures;
    out->message = sl_str (report->last_error);
    out->policy_name = sl_str (report->policy_name);
}
