/*  sl_query.h - questions to the audit store, answered in JSON.

    What the console shows and `sluice-audit export` writes: streams found
    by a filter (time, tool, rule, action, check, model, provider, client
    key, team, user, text in arguments, messages or blocks, state), one
    stream whole (its blocks in order, each verdict by its call), the
    aggregates the charts are drawn from, usage per team, user, model and
    day, the judges' policies and the gaps. One SQL text per question, run
    as it is on SQLite and PostgreSQL.

    Every answer is appended to out as one JSON value; times are Unix ms.
    The functions return 0, or -1 when the store failed (sl_store_error).
*/
#ifndef SL_QUERY_H
#define SL_QUERY_H

#include <stdint.h>

#include "common/base/sl_buf.h"
#include "services/audit/store/sl_store.h"

#define SL_QUERY_DEFAULT_LIMIT 50
#define SL_QUERY_MAX_LIMIT 1000
#define SL_QUERY_PREVIEW 300            //  bytes of a last user message in a list

//  A filter for streams; NULL or "" fields do not filter. Verdict fields
//  (tool, rule, action, check) must hold for one same verdict of the
//  stream. rule "(default)" is a verdict no rule decided.
typedef struct {
    int64_t from;                       //  started at or after (ms); 0: any
    int64_t to;                         //  started before (ms); 0: any
    int64_t before;                     //  paging: started before this (ms); 0: none
    const char *tool;
    const char *rule;
    const char *action;
    const char *check;
    const char *model;
    const char *provider;
    const char *client_key;
    const char *team;                   //  whose streams: a team (of the key or token)
    const char *user;                   //  and a user in it
    const char *text;                   //  in the last user message, arguments or blocks (any case)
    const char *state;                  //  live, ended, error, blocked, lost
    int limit;                          //  0: SL_QUERY_DEFAULT_LIMIT
} sl_query_filter_t;

//  {"streams":[{...},...],"more":bool}: newest first.
int sl_query_streams (sl_store_t *store, const sl_query_filter_t *filter, sl_buf_t *out);
//  One stream, {"stream":{...},"blocks":[...],"verdicts":[...]}; 1 when
//  there is no such stream (out untouched).
int sl_query_stream (sl_store_t *store, const char *sid, sl_buf_t *out);
//  The charts' numbers over [from, to) in buckets of bucket_ms:
//  {"bucket_ms":..,"verdicts":[[t,rule,action,n],...],
//   "streams":[[t,n,errors],...],"models":[[model,provider,n,errors],...],
//   "latency":[[t,p50,p90,p99,n],...]} (latencies in µs).
int sl_query_stats (sl_store_t *store, int64_t from, int64_t to, int64_t bucket_ms, sl_buf_t *out);
//  Usage per UTC day and group over streams started in [from, to):
//  group "team", "user" (team and user), "model", or "all" (NULL or "":
//  team, user and model). {"from","to","group","rows":[{"day":ms,
//  <the group's keys>,"requests","input","output","estimated" (tokens of
//  streams whose usage is an estimate),"cost_usd_micro"},...]}, by day
//  then key; a stream without a team (no keys) has team "". 1 for an
//  unknown group (out untouched).
int sl_query_usage (sl_store_t *store, int64_t from, int64_t to, const char *group, sl_buf_t *out);
//  What rules in shadow mode would have done (verdicts on side "shadow")
//  over [from, to), for one rule (NULL or "": every rule; "(default)":
//  a shadow policy's default), in buckets of bucket_ms:
//  {"from","to","bucket_ms","rule",
//   "rules":[{"rule","would_block","would_allow","would_ask","total"},...],
//   "over_time":[[t,rule,action,n],...],
//   "calls":[{sid,seq,index,call_id,tool,action,check,rule,reason,
//             judge_model,probability,at,team,user},...] (newest first, at
//             most limit, "more" when there were others),
//   "streams":[{"sid","calls","first_at"},...] (at most limit)}.
//  would_block counts what would have stopped the call: block, drop,
//  terminate (a rewrite is counted in total only).
int sl_query_shadow (sl_store_t *store, const char *rule, int64_t from, int64_t to, int64_t bucket_ms,
                     int limit, sl_buf_t *out);
//  {"policies":[{judge,policy,name,source,loaded_at,first_seen,last_seen,failures,last_error},...]}
int sl_query_policies (sl_store_t *store, sl_buf_t *out);
//  {"gaps":[...],"lost":total}, newest first (at most limit).
int sl_query_gaps (sl_store_t *store, int limit, sl_buf_t *out);
//  {"approvals":[...]} as sl_approval.h writes them: state "pending" (the
//  oldest first: the one to decide first on top), "decided" (every other
//  state, the latest decision first), NULL or "" every one (newest
//  first); at most limit. 0, -1 the store failed, 1 an unknown state.
int sl_query_approvals (sl_store_t *store, const char *state, int limit, sl_buf_t *out);
//  Every stream started in [from, to) (to 0: now), oldest first, each as
//  one JSON line (the stream, its blocks, its verdicts) to fn. Returns
//  the number of streams, or -1.
typedef void (sl_query_line_fn) (void *arg, const char *line, size_t size);
int64_t sl_query_export (sl_store_t *store, int64_t from, int64_t to, sl_query_line_fn *fn, void *arg);

#endif
