/*  sl_teamlabel.h - a team as a metric label: its name made safe for the
    Prometheus text format and for a log line (a token's claim may hold
    anything), and bounded in number, so that a flood of made-up teams
    cannot grow a service's metrics without end.

    The same names give the same labels in every service (the gateway's
    request metrics, the judge's verdicts), so a team can be followed
    through them.
*/
#ifndef SL_TEAMLABEL_H
#define SL_TEAMLABEL_H

#include <stddef.h>

#define SL_TEAMLABEL_MAX 256            //  label values kept; more are "other"
#define SL_TEAMLABEL_DEFAULT "default"  //  the label of a stream with no team (no keys)
#define SL_TEAMLABEL_OTHER "other"
#define SL_TEAMLABEL_TEXT 128          //  bytes of a label (with the NUL)

typedef struct _sl_teamlabels_t sl_teamlabels_t;

sl_teamlabels_t *sl_teamlabels_new (size_t max);
void sl_teamlabels_destroy (sl_teamlabels_t **self_p);
//  The label of team (NULL or "": SL_TEAMLABEL_DEFAULT) into out: the name
//  with anything but letters, digits, '-', '_' and '.' made '_', or
//  SL_TEAMLABEL_OTHER once max labels are in use and it is not one of them.
void sl_teamlabels_get (sl_teamlabels_t *self, const char *team, size_t len, char *out, size_t size);
//  The same making-safe, unbounded (a user's name in a log line).
void sl_label_safe (const char *text, size_t len, char *out, size_t size);

#endif
