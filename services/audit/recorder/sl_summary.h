/*  sl_summary.h - the rows later records update, against what the chain recorded.

    Most rows the audit writes are written once and hashed into their
    record's chain entry (sl_chain.h). Three kinds of row are updated by
    later records, so no entry's hash covers them: a stream's streams row,
    an approval's approvals row, a judge's policies row. What each record
    carried is in its entry's data, which the walk checks (sl_verify.h).
    This folds a row's entries the way sl_archive applied them, in chain
    order, and compares the row with the result, column by column:

      - streams: from the start, who called (client_key, team, user_name),
        the model, provider, dialects, policy, streaming, mcp, epoch, the
        tools' names and, by digest, the last user message and the tools'
        definitions; from messages the response's id and model; from the
        finish its reason; the first error; the end's time; the usage and
        whether it was estimated; and the start time and duration (a
        stream an emitter lost records of, lost > 0, may have had its row
        made by the gap notice: its start time only may not be later
        than its records say). A streams row no record names (none lost)
        was inserted. Counts, sizes and cost are not compared (a
        record's count may come from a row another record wrote).
      - approvals: the state, who decided, their comment and when (the
        fresh record's values, then each later state's), and each value
        the first record carried (a later record may only fill in what
        it lacked); the wait's start may only be earlier.
      - policies: the policy's text (its id is the text's digest), its
        last error, and that last_seen and the failures are at least what
        the latest report said.

    Rows the chain no longer holds entries for are not compared: older
    than the chain (since), or than its first entry (retention's cut
    drops the entries of approvals and policy reports older than the
    oldest stream kept; their rows stay). Streams whose ledger rows name
    no entry are the rows check's (sl_verify_rows).

    Rows are compared a page at a time (sl_summary_step): streams, then
    approvals, then policies, each in key order, so the running audit
    takes them in bounded steps. The first difference is the problem.
*/
#ifndef SL_SUMMARY_H
#define SL_SUMMARY_H

#include <stdint.h>

#include "services/audit/store/sl_store.h"

//  A row that differs from what the chain recorded.
typedef struct {
    const char *kind;                   //  "changed" (a column), "inserted" (a row no record names)
    char table [32];                    //  "" when none was found
    char key [256];                     //  the row's key (sid=..., id=..., judge=... policy=...)
    int64_t pos;                        //  the entry it was compared with (0: none)
    char detail [512];                  //  one sentence, naming the column
} sl_summary_problem_t;

typedef struct _sl_summary_t sl_summary_t;

//  The store is borrowed. Rows dated before since (Unix ms) are older
//  than the chain: not compared.
sl_summary_t *sl_summary_new (sl_store_t *store, int64_t since);
void sl_summary_destroy (sl_summary_t **self_p);
//  Compare up to max rows. 1 more is due, 0 done or a problem found (in
//  *problem, its table set), -1 the store failed (a later call retries).
int sl_summary_step (sl_summary_t *self, int max, sl_summary_problem_t *problem);
//  Rows compared so far.
int64_t sl_summary_compared (sl_summary_t *self);

#endif
