/*  sl_console_backtest.h - POST /api/backtest: sluice-policy backtest from
    the console.

    The request: {"policy": "<YAML text>", "since": "30d", "until":
    optional, "team": optional, "examples": optional}; since and until as
    sluice-policy backtest takes them (sl_when.h). The answer is the JSON
    sluice-policy backtest --json prints (sl_backtest_json), plus
    "window": {"from","to"} in Unix ms and "limited": true when the bound
    on calls below stopped the read before the window's end (the counts
    are then of the oldest SL_CONSOLE_BACKTEST_MAX_CALLS calls).

    The console answers on the audit's own thread, the one that records:
    a request's work is bounded so recording waits for it at most that
    long. A window is at most SL_CONSOLE_BACKTEST_MAX_DAYS days, a policy
    at most SL_CONSOLE_BACKTEST_MAX_POLICY bytes, and at most
    SL_CONSOLE_BACKTEST_MAX_CALLS calls are judged again, read in pages
    of SL_CALLS_PAGE as the command does (sl_calls.h). The store is only
    read.
*/
#ifndef SL_CONSOLE_BACKTEST_H
#define SL_CONSOLE_BACKTEST_H

#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"
#include "services/audit/store/sl_store.h"

#define SL_CONSOLE_BACKTEST_MAX_DAYS 90             //  the longest window
#define SL_CONSOLE_BACKTEST_MAX_CALLS 50000         //  calls judged again per request
#define SL_CONSOLE_BACKTEST_MAX_POLICY (1 << 20)    //  a pasted policy's bytes
#define SL_CONSOLE_BACKTEST_MAX_EXAMPLES 100        //  examples per category asked for

//  Answer request (the body of POST /api/backtest) at now (Unix ms) into
//  out. 0: the answer; 1: bad input, out holds {"error": why} (a 400);
//  -1: the store failed (sl_store_error), out untouched.
int sl_console_backtest_run (sl_store_t *store, sl_str_t request, int64_t now, sl_buf_t *out);

#endif
