/*  sl_monthuse.h - this month's spend per team and per key, projected to
    the month's end beside the monthly budgets (the usage page, GET
    /api/usage/month).

    The projection is linear: what was spent since the month began (UTC)
    over the fraction of the month gone,

        projected_month_usd = spent_usd / elapsed

    (elapsed counted from at least SL_MONTHUSE_MIN_ELAPSED_MS, so the
    first minutes of a month do not project a stream's cost to thousands),
    and likewise for tokens. A team or key whose projection passes its
    budget (budget.usd or budget.tokens, docs/identity.md) is flagged
    "over_budget". The budgets are the caller's to find (the keys file's
    teams and keys, sl_monthuse_budget_fn) but for keys the console
    issued, read here from their limits (sl_keystore.h).

        {"month":"2026-12","from":ms,"to":ms,"elapsed":0.0645,
         "teams":[{"team","spent_usd","tokens","projected_month_usd",
                   "projected_month_tokens","budget_usd","budget_tokens",
                   "over_budget"}],
         "keys":[{"key","team", ...the same}]}

    budget_usd and budget_tokens are null when none is set. Spend is the
    streams' cost at the routes file's prices (cost_usd_micro) and their
    tokens, by the team and the client key they were recorded with; a
    stream without a key is under key "" (teams likewise).
*/
#ifndef SL_MONTHUSE_H
#define SL_MONTHUSE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "services/audit/store/sl_store.h"

#define SL_MONTHUSE_MIN_ELAPSED_MS (3600 * 1000LL)  //  a month's first hour projects as its hour
#define SL_MONTHUSE_ROWS_MAX 1000       //  teams, and keys, listed at most

//  The UTC month of now (ms): its bounds [from, to) and the fraction of
//  it gone at now (at least SL_MONTHUSE_MIN_ELAPSED_MS of it).
double sl_monthuse_elapsed (int64_t now, int64_t *from, int64_t *to);
//  spent projected to the month's end at elapsed (a fraction > 0).
double sl_monthuse_project (double spent, double elapsed);

//  A budget of a team (team true) or a key (its id): usd and tokens,
//  0 when none; false when the caller knows none.
typedef bool (sl_monthuse_budget_fn) (void *arg, bool team, const char *name, double *usd, int64_t *tokens);

//  The month of now, as above, appended to out. budget (NULL: none) is
//  asked for each team and for each key the console did not issue.
//  0 ok, -1 the store failed (out as it was).
int sl_monthuse_query (sl_store_t *store, int64_t now, sl_monthuse_budget_fn *budget, void *arg, sl_buf_t *out);

#endif
