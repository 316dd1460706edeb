/*  sl_calls.h - the tool calls the audit store recorded, read in pages.

    What sluice-policy backtest judges again: every tool call verdict
    (side response, not a request's part) recorded in a window, oldest
    first, with the recorded context of its stream (model, last user
    message, tool definitions, key, team, user, the policy that decided
    it). Read a page at a time by key (at, sid, seq), so memory is one page
    whatever the window holds, and a store being written meanwhile is read
    consistently: each page sees what was committed when it ran, and the
    window's end is fixed by the caller.

    Read-only: sl_calls_open opens the store without migrating it and
    tells the database to refuse every write for the connection (SQLite's
    query_only, PostgreSQL's read-only transactions); a SQLite file that
    does not exist is an error, never created.
*/
#ifndef SL_CALLS_H
#define SL_CALLS_H

#include <math.h>
#include <stdint.h>

#include "common/base/sl_str.h"
#include "common/policy/sl_backtest.h"
#include "services/audit/store/sl_store.h"

#define SL_CALLS_PAGE 1000              //  rows read per query
#define SL_CALLS_POLICIES 16            //  recorded policies parsed for one backtest

//  One recorded call; every text borrowed for the callback (absent: NULL).
typedef struct {
    sl_str_t sid;
    int64_t seq;
    int64_t at;                         //  when it was judged (Unix ms)
    sl_str_t tool, arguments;
    bool truncated;                     //  the arguments were cut at the store's bound
    sl_str_t action, checked, rule;     //  the verdict
    double probability;                 //  an LLM judge's answer, NaN: none
    sl_str_t model, last_user, tools_json, client_key, team, user;
    sl_str_t policy;                    //  the id of the policy that decided it
} sl_calls_row_t;

//  Called for each call; non-zero stops the read.
typedef int (sl_calls_fn) (void *arg, const sl_calls_row_t *row);

//  A filter: [from, to) in Unix ms, and a team (NULL or "": every team);
//  limit: at most this many calls, the oldest (0: every one).
typedef struct {
    int64_t from, to;
    const char *team;
    int64_t limit;
} sl_calls_filter_t;

//  Open target read-only (above). NULL with *error (caller frees).
sl_store_t *sl_calls_open (const char *target, char **error);
//  Every call the filter selects, oldest first, page by page. Returns the
//  number of calls handed to fn, or -1 when the store failed
//  (sl_store_error).
int64_t sl_calls_read (sl_store_t *store, const sl_calls_filter_t *filter, sl_calls_fn *fn, void *arg);
//  The text of a policy the store saw a judge run (by its id), appended
//  to out. 0, 1 when the store has no such policy, -1 on failure.
int sl_calls_policy_source (sl_store_t *store, const char *id, sl_buf_t *out);
//  Feed every call the filter selects to backtest, each as the judge saw
//  it (its stream's context; arguments the store cut judged as cut for
//  size) with the policy that decided it, parsed from the store's text
//  (the first SL_CALLS_POLICIES policies of the window; calls decided by
//  others do not reuse recorded answers). Returns the number of calls,
//  or -1 when the store failed.
int64_t sl_calls_backtest (sl_store_t *store, const sl_calls_filter_t *filter, sl_backtest_t *backtest);

#endif
