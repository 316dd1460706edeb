/*  sl_policy.h - the tool-call policy: a YAML file of ordered rules.

    A policy is loaded and checked once; every error names the file, line,
    column and reason. It is immutable afterwards and reference counted, so
    a reload can swap in a new policy while streams that started under the
    old one finish under it.

    A rule is a set of conditions (all must hold) and an action. Rules are
    tried in order and the first whose conditions hold decides; a call that
    no rule matches gets the default action. Conditions: the tool name
    (exact, glob, list), argument values by JSON pointer (regex, equals,
    contains, prefix, numeric comparisons, exists, negation), arguments that
    are not valid JSON, arguments that were repaired, a violation of the
    tool's schema from the request, the call's position among the
    response's calls (max_calls), the model, request headers, whether the
    call ended cleanly and why not (incomplete, cut). Actions: allow,
    block, drop, rewrite, terminate. A rule with an llm_judge section
    decides by asking an LLM (see sl_llm.h), one with a decide section by
    asking a decision service in Open Policy Agent's shape (sl_decide.h,
    the body from sl_policy_decide_input): the decision is then pending
    until the answer is concluded with sl_policy_conclude. A rule has one
    or the other, not both, and decide judges tool calls only.
    A rule with
    action ask decides by asking a person (sl_ask_spec_t): pending the
    same way, until a decision, a timeout or a cancel is concluded.

    Failing closed. A call that did not end cleanly (sl_call_t.cut, or
    arguments that are not valid JSON) is judged on the arguments as far
    as they came: argument tests see them closed into JSON (sl_json_close),
    so a cut-off call that shows "rm -rf" still matches a rule against it.
    A prefix can prove a call harmful, never harmless: a rule that would
    let such a call through (allow, rewrite, an LLM judge) applies to it
    only when it names the incompleteness itself (incomplete: true, or
    cut). When no rule matched, on_incomplete decides (default block) if
    some rule concerns the tool (names it, or names no tool), and the
    default otherwise. A call cut for size is never released: an allow or
    rewrite for it becomes a block.

    Request rules (on: request) judge the request before it leaves for
    the upstream, part by part (sl_rpart_t: the system prompt, each user
    or assistant message's text, each tool result, each tool definition):
    tests on the part's text (the argument tests, without a pointer), its
    size, the tool a result came from, the error flag, the model and the
    headers. Actions: allow, redact (every match of the rule's patterns
    replaced by a placeholder), block_result (a tool result replaced by a
    notice), terminate (the request refused), and an LLM judge of a tool
    result. On one part, every matching redact rule applies, in order (a
    later rule sees the text redacted), and the first matching rule with
    another action decides; a part no such rule matched is allowed.
    Request rules are evaluated where the request is (the gateway), with
    the same parsed policy as the judge.

    Text rules (on: text) flag a text block of the response once it is
    complete (sl_rpart_t kind TEXT): the text has gone to the client
    already (the judge never holds text), so their only action is allow,
    and what they add is a verdict naming the rule.

    History conditions (history: in a response rule) test the tool calls
    the request's conversation made before (sl_call_t.history): the rule
    holds only when, for each entry, some earlier call matches its tool
    and argument tests.

    Taint conditions (tainted:, tainted_by: in a response rule) test
    whether the conversation holds a result of a tool the policy's trust
    section calls untrusted (sl_call_t.taint, sl_taint.h).

    Includes. A policy file may include others (include: a path, or a
    list of them, relative to the including file): a team's policy
    includes the company's base. The included rules are tried first, in
    the order named, then the file's own: as rules are tried in order
    and the first that matches decides, a base rule decides every call
    it matches, and a team file can add rules but not drop or loosen a
    base's (a base block wins over a team allow; so does a base allow
    over a team block: a base should hold what every team must obey).
    The file's default, message and on_incomplete are its own; those it
    does not set come from the first include that does. A rule id may
    appear once in all the files. An include cycle, a file that cannot
    be read, and an error inside an included file are errors of the
    including file (file:line:col of the include).

    Shadow mode. A rule, or a whole file, may say mode: shadow (default
    enforce). sl_policy_decide skips shadow rules (a file in shadow
    enforces neither its rules nor its default: its calls pass as without
    a policy); sl_policy_decide_shadow judges the call as if they were
    enforced, and gives the would-be decision when a shadow rule (or the
    file in shadow) makes it. An ask is then concluded at once (check
    WOULD_ASK: nobody is asked); an LLM judge or decide is pending as usual
    and concluded with sl_policy_conclude, while the enforced decision goes
    its own way. Only tool-call rules can be in shadow.

    Every policy has an id: 12 hex digits of the SHA-1 of its text (and,
    with includes, of theirs), so two processes that loaded the same file
    agree which version decided.

    The full format is in docs/policy.md. Example:

        default: allow
        rules:
          - id: no-rm-rf
            tool: run_shell
            args:
              - pointer: /command
                regex: 'rm[[:space:]]+-rf'
            action: block
            message: "Blocked {tool}: {rule}"
*/
#ifndef SL_POLICY_H
#define SL_POLICY_H

#include <stdbool.h>

#include "proto/sl_msg.h"
#include "common/llm/sl_llm.h"
#include "common/policy/sl_schema.h"
#include "common/tools/sl_pins.h"

typedef struct _sl_policy_t sl_policy_t;

#define SL_POLICY_ID_SIZE 13            //  a policy id: 12 hex digits of its text's SHA-1, and a NUL
#define SL_POLICY_ALLOW_ALL_ID "allow-all"  //  the id of the policy of a process without a file
#define SL_POLICY_UNLOADED_ID "unloaded"    //  the id of the stand-in for a policy not loaded

//  A complete tool call to judge, with what is known of its request.
//  Everything is borrowed from the caller.
typedef struct {
    sl_str_t name;                      //  tool name
    sl_str_t arguments;                 //  JSON text of the arguments
    bool args_valid;                    //  arguments are valid JSON (SL_F_ARGS_VALID)
    bool repaired;                      //  arguments were repaired (SL_F_REPAIRED)
    sl_cut_t cut;                       //  why the call did not end cleanly; NONE when it
                                        //  did (then args_valid false still counts as INVALID)
    int ordinal;                        //  1 for the response's first tool call, 2 ...
    sl_str_t model;                     //  model of the request (START model)
    sl_str_t headers;                   //  request headers, JSON object (START hdrs)
    sl_str_t last_user;                 //  last user message (START lu)
    sl_str_t tools;                     //  the request's tools, JSON (START tools)
    sl_schema_t *schema;                //  tools already parsed, or NULL: parsed on demand
    sl_str_t history;                   //  earlier calls of the conversation, JSON (START hist:
                                        //  [{"name":..,"args":{..}}], "text" for arguments
                                        //  that are not JSON); absent when not sent
    sl_str_t taint;                     //  the untrusted results the conversation holds, JSON
                                        //  (START tnt, sl_taint.h); absent: not computed, which
                                        //  taint conditions take as tainted
    sl_str_t key_id;                    //  whose request: its key's id (START kid), absent: none
    sl_str_t team;                      //  its team (START team)
    sl_str_t user;                      //  its user (START user)
    sl_str_t tool_digests;              //  the digests of the request's tool definitions, JSON
                                        //  object name -> digest (START tdig); absent: not sent
} sl_call_t;

//  One part of a request, as request rules see it. Borrowed.
typedef enum {
    SL_RPART_SYSTEM = 1,                //  an instruction (system, developer)
    SL_RPART_USER,                      //  the text of a user message
    SL_RPART_ASSISTANT,                 //  the text of an earlier answer of the model
    SL_RPART_TOOL_RESULT,               //  what a tool returned (its content as text)
    SL_RPART_TOOL,                      //  a tool definition (its JSON)
    SL_RPART_TEXT,                      //  the response: a text block the model streamed
                                        //  (on: text rules, which flag: text is never held)
    SL_RPART_MAX
} sl_rpart_kind_t;

typedef struct {
    int kind;                           //  sl_rpart_kind_t
    sl_str_t text;
    sl_str_t tool;                      //  TOOL_RESULT: the tool that returned it (absent when
                                        //  the request does not say); TOOL: its name
    sl_str_t call_id;                   //  TOOL_RESULT: the call it answers
    bool is_error;                      //  TOOL_RESULT: the tool failed
    sl_str_t model;                     //  the request's model
    sl_str_t headers;                   //  its headers, JSON object
    sl_str_t team;                      //  whose request: its team (absent: the default)
    sl_str_t digest;                    //  TOOL: the definition's digest (sl_tooldef_digest)
} sl_rpart_t;

#define SL_POLICY_MAX_REDACTS 16        //  redact rules that may apply to one part

//  A rule that asks a person (action: ask): who may decide, how long the
//  call waits, what happens when nobody does. Owned by the policy.
#define SL_ASK_DEFAULT_TIMEOUT_MS 300000    //  five minutes
#define SL_ASK_MAX_TIMEOUT_MS 3600000       //  an hour: a held stream costs a client connection
#define SL_ASK_DEFAULT_REMEMBER_MINUTES 0   //  no memory unless the rule allows it
#define SL_ASK_MAX_REMEMBER_MINUTES 1440    //  a day
typedef struct {
    int timeout_ms;                     //  from the call's end to a decision
    sl_action_t on_timeout;             //  BLOCK (default), ALLOW or TERMINATE: nobody decided in
                                        //  time (a judge that stops blocks its calls, whatever this says)
    char **approvers;                   //  who may decide: "team:NAME", "user:NAME", "key:ID",
                                        //  "console"; none: any approver key, the console
    int approver_count;
    char *message;                      //  what approvers read (template), NULL for the default
    int remember_max_minutes;           //  longest memory an approval may give (0: none)
    bool allow_self;                    //  the call's own caller may decide it (a one-person setup);
                                        //  false (the default): another person must
} sl_ask_spec_t;

//  Who asks to decide an approval (the control link's "by").
typedef struct {
    sl_str_t key_id, team, user;        //  a gateway caller's identity
    bool approver;                      //  its key is marked approver in the keys file
    bool console;                       //  a console user (sluice-audit checked its key)
    bool loopback;                      //  a caller on the gateway's machine, no keys configured
} sl_ask_by_t;

//  The outcome for one call. Borrowed fields live as long as the policy;
//  owned ones are freed by sl_decision_clear.
typedef struct {
    sl_action_t action;                 //  NONE while an LLM judge must be asked
    sl_check_t check;
    const char *rule;                   //  rule id, NULL for the default (borrowed)
    char *reason;                       //  why, for the audit trail (owned)
    char *message;                      //  block notice / terminate error (owned)
    char *arguments;                    //  rewritten arguments, rewrite only (owned)
    int llm_rule;                       //  rule whose LLM judge decides, -1: none
    const char *judge_model;            //  LLM judge model when one was asked (borrowed)
    double probability;                 //  its answer, NaN when it gave none
    char *approver;                     //  ask: who decided (owned), NULL when nobody did
} sl_decision_t;

//  What the request rules decide for one part.
typedef struct {
    sl_decision_t decision;             //  ALLOW, BLOCK_RESULT, WITHHOLD or TERMINATE; NONE while an LLM
                                        //  judge must be asked; check DEFAULT when no rule
                                        //  but redactions applied
    int redacts [SL_POLICY_MAX_REDACTS];    //  rules whose redactions apply, in order
    size_t redact_count;
} sl_rdecision_t;

//  Parse a policy. NULL on error, with *error set to "name:line:col: why"
//  (caller frees). A text given this way may not include another file
//  (include: is refused): only a policy file the operator names reads
//  other files (a text from a console must not make the process read
//  and quote its files).
sl_policy_t *sl_policy_parse (const char *text, size_t size, const char *name, char **error);
//  Load a policy file, and the files it includes (paths relative to the
//  including file's directory, or absolute). Their rules come first, in
//  the order named, then the file's own: see "Includes" above.
sl_policy_t *sl_policy_load (const char *path, char **error);
//  The policy allowing everything (no file given).
sl_policy_t *sl_policy_allow_all (void);
//  The stand-in for a policy file a stream names that the process does
//  not have (name: that file): no rules, every call blocked (default and
//  on_incomplete block), its id SL_POLICY_UNLOADED_ID, its source "".
sl_policy_t *sl_policy_unloaded (const char *name);
sl_policy_t *sl_policy_ref (sl_policy_t *self);
//  Drop a reference; the last one frees the policy. Sets *self_p to NULL.
void sl_policy_unref (sl_policy_t **self_p);
int sl_policy_rule_count (sl_policy_t *self);
//  What identifies the policy for monitoring and across processes: the
//  first 12 hex digits of the SHA-1 of its text (SL_POLICY_ALLOW_ALL_ID
//  without one). The judge puts it in every stream's start (field "pol"),
//  the gateway in the job of a request it judged. Borrowed.
const char *sl_policy_id (sl_policy_t *self);
//  The text the policy was parsed from ("" for allow-all). Borrowed.
sl_str_t sl_policy_source (sl_policy_t *self);
const char *sl_policy_name (sl_policy_t *self);
//  The files the policy was read from: its own first, then every file it
//  includes, depth first (what a reload watches for changes). 0 for a
//  policy parsed from a text. Borrowed.
int sl_policy_file_count (sl_policy_t *self);
const char *sl_policy_file (sl_policy_t *self, int index);
//  Rules that judge requests (on: request).
int sl_policy_request_count (sl_policy_t *self);
//  True when some tool-call rule has a definition condition (the gateway
//  then sends the digests of the request's tool definitions along).
bool sl_policy_uses_definitions (sl_policy_t *self);
//  The policy's pinned definitions (pins:), NULL for none. Borrowed.
const sl_pins_t *sl_policy_pins (sl_policy_t *self);
//  Rules that flag the response's text (on: text).
int sl_policy_text_count (sl_policy_t *self);
//  True when some response rule has a history condition (the gateway then
//  sends the conversation's earlier calls along).
bool sl_policy_uses_history (sl_policy_t *self);
//  True when a call rule certainly blocks (or terminates, drops) every
//  call of the tool named name (an MCP tool: mcp__<server>__<tool>) made
//  by team, whatever its arguments: a rule whose conditions are only tool,
//  server and team names. Anything else (arguments, schema, history,
//  taint, an LLM judge, decide, ask) answers false: such a tool is still
//  listed, and each call of it is judged.
bool sl_policy_blocks_tool (const sl_policy_t *policy, sl_str_t name, sl_str_t team);
//  A rule's id (borrowed), NULL for an index out of range.
const char *sl_policy_rule_id (sl_policy_t *self, int rule);
//  True when some rule checks schemas (callers then parse the request's
//  tools once per stream and pass them in sl_call_t.schema).
bool sl_policy_uses_schema (sl_policy_t *self);
//  Number of rules that ask an LLM judge.
int sl_policy_llm_count (sl_policy_t *self);
//  Number of rules that ask a decision service (decide).
int sl_policy_decide_count (sl_policy_t *self);

//  Decide for call. When the deciding rule asks an LLM judge, out->action
//  is SL_ACT_NONE and out->llm_rule names it: ask (sl_policy_llm_spec,
//  sl_policy_llm_prompt) and finish with sl_policy_conclude. Rules in
//  shadow mode are skipped.
void sl_policy_decide (sl_policy_t *self, const sl_call_t *call, sl_decision_t *out);
//  What the policy would decide for call with its rules in shadow mode
//  enforced: true, with that decision in out, when a shadow rule or the
//  file's shadow mode makes it, or always when whole (a policy run wholly
//  in shadow: a keys file's shadow_policy); false otherwise (out empty:
//  no would-be verdict to record). An ask rule's decision is final
//  (check SL_CHK_WOULD_ASK, the action a denial takes); an LLM judge's or
//  decide's is pending as with sl_policy_decide. out is cleared by the
//  caller (sl_decision_clear) either way.
bool sl_policy_decide_shadow (sl_policy_t *self, const sl_call_t *call, bool whole, sl_decision_t *out);
//  Rules in shadow mode (its own and its includes'), and whether the file
//  itself says mode: shadow.
int sl_policy_shadow_count (sl_policy_t *self);
bool sl_policy_is_shadow (sl_policy_t *self);
//  The LLM judge of a rule (borrowed; NULL when the rule has none).
const sl_llm_spec_t *sl_policy_llm_spec (sl_policy_t *self, int rule);
//  Append the prompt for the rule's LLM judge about call.
void sl_policy_llm_prompt (sl_policy_t *self, int rule, const sl_call_t *call, sl_buf_t *out);
//  Append the request body for the rule's decision service (a rule whose
//  spec is of kind SL_LLM_DECIDE) about call: {"input": {...}} with the
//  identity, model, tool, arguments, the request's tools, the history,
//  the last user message, the rule and the policy (docs/policy.md).
void sl_policy_decide_input (sl_policy_t *self, int rule, const sl_call_t *call, sl_buf_t *out);
//  Finish a pending decision with the LLM judge's result: p >= threshold
//  takes the rule's action, below it the call is allowed; a check that did
//  not run (timeout, error) takes the rule's on_error action and says so.
//  A decision service's result: deny takes the rule's action, allow lets
//  the call run, with its rewrite as the arguments when the rewrite
//  matches the tool's schema from the request (else on_error, check
//  ERROR); a check that did not run takes on_error (block, allow or
//  terminate). The reason is the service's, or why it gave none.
void sl_policy_conclude (sl_policy_t *self, const sl_call_t *call,
                         const sl_llm_result_t *result, sl_decision_t *d);
void sl_decision_clear (sl_decision_t *decision);

//  Asking a person ---------------------------------------------------------
//  The rule's ask settings (borrowed; NULL when the rule does not ask).
const sl_ask_spec_t *sl_policy_ask_spec (sl_policy_t *self, int rule);
//  Number of rules that ask a person.
int sl_policy_ask_count (sl_policy_t *self);
//  The settings of an ask: that says no more than action: ask; and
//  freeing what a spec holds (its approvers, its message).
void sl_ask_spec_defaults (sl_ask_spec_t *spec);
void sl_ask_spec_free (sl_ask_spec_t *spec);
//  What an approval is bound to: 64 hex digits (and a NUL) of the SHA-256
//  of the tool name, a NUL, the arguments in canonical JSON (keys sorted,
//  compact; the text as it is when it is not JSON), a NUL, the policy id.
#define SL_ASK_DIGEST_SIZE 65
void sl_ask_digest (sl_str_t tool, sl_str_t arguments, const char *policy_id, char *out);
//  Append what approvers read: the rule's message (or the default) with
//  {tool} {arguments} {rule} {team} {user} {model} filled in.
void sl_ask_message (const sl_ask_spec_t *spec, const char *rule, const sl_call_t *call,
                     sl_str_t team, sl_str_t user, sl_buf_t *out);
//  May by decide an approval asked under spec? A rule that names
//  approvers admits those (team:, user:, key:, console); one that names
//  none admits approver keys, console users and loopback callers.
bool sl_ask_may_decide (const sl_ask_spec_t *spec, const sl_ask_by_t *by);
//  Is by the caller whose call waits (key_id and user: the call's
//  identity)? The same user is the same person, whatever key or token
//  they hold, whatever team; the same key is the same caller, but for a
//  token's key id ("jwt" or "jwt:<kid>"), which every user of a signing
//  key shares: two tokens naming different users are two people. Without
//  an identity on either side (no keys configured, a console user) there
//  is nothing to compare: false.
bool sl_ask_is_caller (sl_str_t key_id, sl_str_t user, const sl_ask_by_t *by);

//  Request rules --------------------------------------------------------
//  Decide for one part of a request. Redactions are not applied here:
//  out->redacts names the rules whose patterns apply, for the caller to
//  apply with sl_policy_redact to every string the part is made of (the
//  rules after a redact rule are tried on the redacted text). When the
//  deciding rule asks an LLM judge, out->decision.action is NONE and its
//  llm_rule names it: ask (sl_policy_llm_spec, sl_policy_llm_prompt_part),
//  then sl_policy_conclude_part.
void sl_policy_decide_part (sl_policy_t *self, const sl_rpart_t *part, sl_rdecision_t *out);
//  Replace every match of a redact rule's patterns in text: the new text
//  goes to out; returns the number of matches (0: out untouched). Texts
//  given to the rules (here and in sl_rpart_t) are followed by a NUL, as
//  jansson's strings and sl_buf_cstr's are: regexec's callers may read it.
size_t sl_policy_redact (sl_policy_t *self, int rule, sl_str_t text, sl_buf_t *out);
//  Append the prompt of the rule's LLM judge about part.
void sl_policy_llm_prompt_part (sl_policy_t *self, int rule, const sl_rpart_t *part, sl_buf_t *out);
//  Finish a pending part decision with the LLM judge's result: p >=
//  threshold takes the rule's action, below it the part is allowed; a
//  check that did not run takes on_error (block: the rule's action).
void sl_policy_conclude_part (sl_policy_t *self, const sl_rpart_t *part,
                              const sl_llm_result_t *result, sl_decision_t *d);
void sl_rdecision_clear (sl_rdecision_t *self);

#endif
