/*  sl_policy_impl.h - the policy's model, and what its parts share.

    Private to the policy library (common/policy/sl_policy*.c) and its
    unit tests: nothing else includes it; the rest of sluice sees the
    opaque sl_policy_t of sl_policy.h.

    The library is cut the way a handler is cut from its configurator:

      sl_policy.c           the model's life cycle, its accessors, decisions
                            and notices
      sl_policy_yaml.c      reading YAML: typed values, every error at its
                            node's line and column
      sl_policy_load.c      the document: top-level settings, the rule list,
                            each rule and what its kind (call, request,
                            text) may say
      sl_policy_fields.c    a rule's structured fields: matchers, names,
                            parts, cuts, redactions, history, rewrites,
                            the LLM judge
      sl_policy_match.c     the tests both evaluations run: a value, a text,
                            a number, a header, a name against a matcher
      sl_policy_call.c      judging a tool call (sl_policy_decide ...)
      sl_policy_decide.c    the question to a decision service (decide)
      sl_policy_request.c   judging a part of a request (sl_policy_decide_part ...)
      sl_policy_tools.c     tool names and servers (tool:, server:, servers:),
                            pinned definitions (pins:, definition:)
      sl_policy_trust.c     a file's trust section and the taint conditions, read
      sl_taint.c            which results taint a request, and the conditions on it

    Loading builds the model below once; evaluating only reads it, so one
    policy serves any number of streams at once.
*/
#ifndef SL_POLICY_IMPL_H
#define SL_POLICY_IMPL_H

#include <jansson.h>
#include <regex.h>
#include <stdbool.h>
#include <yaml.h>

#include "common/base/sl_buf.h"
#include "common/policy/sl_policy.h"
#include "common/tools/sl_pins.h"

//  --------------------------------------------------------------------------
//  The model

//  Operators of an argument, header or text matcher (bit set).
enum {
    SL_OP_REGEX = 1 << 0,
    SL_OP_EQUALS = 1 << 1,
    SL_OP_CONTAINS = 1 << 2,
    SL_OP_PREFIX = 1 << 3,
    SL_OP_GT = 1 << 4,
    SL_OP_GE = 1 << 5,
    SL_OP_LT = 1 << 6,
    SL_OP_LE = 1 << 7,
    SL_OP_EXISTS = 1 << 8
};

typedef struct {
    char *pointer;                      //  JSON pointer (args) or header name (headers)
    char **tokens;                      //  the pointer's unescaped tokens
    int token_count;
    unsigned ops;                       //  SL_OP_* present
    regex_t regex;                      //  SL_OP_REGEX
    char *literal;                      //  SL_OP_REGEX: text every match holds, or NULL
    json_t *equals;                     //  SL_OP_EQUALS
    json_t *contains;                   //  SL_OP_CONTAINS
    char *prefix;                       //  SL_OP_PREFIX
    double gt, ge, lt, le;              //  SL_OP_GT ... SL_OP_LE
    bool exists;                        //  SL_OP_EXISTS: the value must (not) be there
    bool negate;                        //  not: true inverts the result
} sl_policy_matcher_t;

//  A list of names, each exact or a glob (fnmatch).
typedef struct {
    char **names;
    bool *globs;
    int count;                          //  0: the condition is absent
} sl_policy_names_t;

typedef struct {
    char **tokens;                      //  where (split pointer)
    int token_count;
    char *pointer;                      //  as written, for reasons
    json_t *value;                      //  NULL: delete
} sl_policy_edit_t;

//  A tri-state flag condition: absent, must be false, must be true.
typedef enum { SL_FLAG_ANY = -1, SL_FLAG_NO = 0, SL_FLAG_YES = 1 } sl_policy_flag_t;

//  A redaction: every match of the pattern becomes the placeholder.
typedef struct {
    regex_t regex;                      //  compiled with match positions
    char *literal;                      //  text every match holds, or NULL
    char *placeholder;
} sl_policy_redaction_t;

//  A history condition: some earlier call of the conversation matches.
typedef struct {
    sl_policy_names_t tools;
    sl_policy_matcher_t *args;
    int arg_count;
} sl_policy_past_t;

//  A file's trust section: whose results taint the conversation.
typedef struct {
    sl_policy_names_t untrusted;        //  tools: the name as written, or its MCP tool part
    sl_policy_names_t untrusted_servers;    //  MCP servers whose every tool is untrusted
    sl_policy_names_t trusted_servers;  //  servers untrusted_servers does not cover
    bool unknown_trusted;               //  a result whose tool the request does not name
                                        //  (default: it taints)
} sl_policy_trust_t;

typedef struct {
    char *id;
    bool shadow;                        //  mode: shadow: judged as if enforced, decides nothing
    bool on_request;                    //  on: request (else a tool call of the response)
    bool on_text;                       //  on: text: a text block of the response (a flag)
    unsigned parts;                     //  request: bit (1 << sl_rpart_kind_t) per kind it judges
    sl_policy_matcher_t *texts;         //  request: tests on the part's text
    int text_count;
    sl_policy_matcher_t *size;          //  request: numeric tests on the part's size, or NULL
    sl_policy_flag_t is_error;          //  request: the tool result is (not) an error
    sl_policy_redaction_t *redacts;     //  request, redact: the patterns
    int redact_count;
    sl_policy_past_t *history;          //  response: earlier calls that must have happened
    int history_count;
    sl_policy_names_t tools;
    sl_policy_names_t servers;          //  server: the MCP server the tool's name stands for
    unsigned definitions;               //  definition: bit (1 << sl_pin_state_t) per state, 0 absent
    sl_policy_names_t models;
    sl_policy_matcher_t *args;
    int arg_count;
    sl_policy_matcher_t *headers;
    int header_count;
    sl_policy_flag_t args_invalid;
    sl_policy_flag_t args_repaired;
    sl_policy_flag_t schema_violation;
    sl_policy_flag_t incomplete;        //  the call did (not) end cleanly
    unsigned cuts;                      //  cut: bit (1 << sl_cut_t) per reason named, 0 absent
    long max_calls;                     //  -1: absent; else matches calls after the first N
    sl_policy_flag_t tainted;           //  the conversation holds (no) untrusted result
    sl_policy_names_t tainted_by;       //  ... of one of these tools
    sl_llm_spec_t *llm;                 //  NULL: the rule decides by itself; else an LLM judge
                                        //  or (kind SL_LLM_DECIDE) a decision service asked
    sl_ask_spec_t *ask;                 //  action: ask: a person decides (action then holds
                                        //  what a denial does: block)
    bool asks;                          //  action: ask was given
    bool ask_given;                     //  an ask: mapping was given
    sl_action_t action;
    char *message;                      //  notice template, NULL for the default
    sl_policy_edit_t *edits;            //  rewrite: set and delete, in order
    int edit_count;
} sl_policy_rule_t;

struct _sl_policy_t {
    int refs;
    char *name;
    sl_action_t default_action;
    char *default_message;              //  notice of the default block / terminate
    bool default_set;                   //  the file says default (else an include's applies)
    sl_action_t incomplete_action;      //  on_incomplete: an incomplete call no rule matched
    char *incomplete_message;           //  its notice, NULL for the built-in one
    bool incomplete_set;                //  the file says on_incomplete
    sl_policy_rule_t *rules;
    int rule_count;
    bool uses_schema;
    int llm_count;
    int ask_count;                      //  rules that ask a person
    int decide_count;                   //  rules with a decide section
    int request_count;                  //  rules on: request
    int text_count;                     //  rules on: text
    int shadow_count;                   //  rules in mode shadow (the file's and its includes')
    bool shadow;                        //  the file says mode: shadow: its own rules are, and its
                                        //  default and on_incomplete decide nothing
    bool uses_history;                  //  some rule has a history condition
    bool uses_taint;                    //  some rule has a taint condition
    sl_policy_trust_t *trusts;          //  the trust sections: the file's, then its includes'
    int trust_count;
    char *source;                       //  the text it was parsed from ("" for allow-all)
    char id [SL_POLICY_ID_SIZE];        //  short digest of the source and its includes' (sl_policy_id)
    char **servers;                     //  servers: names to read <server>_<tool> with
    int server_count;
    sl_pins_t *pins;                    //  pins: the pinned definitions, NULL: none
    char *pins_file;                    //  its path as read (a file reloads watch), NULL: none
    bool uses_definitions;              //  some tool-call rule has a definition condition
    char **files;                       //  the files it was read from: its own (the name), then
                                        //  every include's, depth first; none for a parsed text
    int file_count;
};

//  --------------------------------------------------------------------------
//  sl_policy.c: life cycle, decisions, notices

//  A policy without rules (default allow, on_incomplete block), one
//  reference, its source a copy of text and its id that text's digest.
sl_policy_t *sl_policy_new (const char *name, const char *text, size_t size);
//  Free the policy whatever its references (the loader's failed policy).
void sl_policy_free (sl_policy_t *self);
//  The policy id of text: the first SL_POLICY_ID_SIZE - 1 hex digits of
//  its SHA-1, into id (SL_POLICY_ID_SIZE bytes).
void sl_policy_digest (const char *text, size_t size, char *id);
void sl_policy_tokens_free (char **tokens, int count);
void sl_policy_names_free (sl_policy_names_t *names);
//  An empty decision: no action, no rule, no LLM rule, no probability.
void sl_decision_init (sl_decision_t *d);
//  Fill a notice template: {tool}, {rule}, {reason}, {cut} (empty when
//  cut is NONE). The caller frees the result.
char *sl_policy_render (const char *tmpl, sl_str_t tool, sl_cut_t cut, const char *rule, const char *reason);
//  Record what an LLM judge's result says on d (check, probability,
//  judge model) and why in reason: "LLM judge <model>: p=.. >= ..", or
//  why it did not run and what on_error does. True when the judge ran
//  and found the subject harmful (p >= threshold): the rule's action.
bool sl_policy_llm_outcome (const sl_llm_spec_t *spec, const sl_llm_result_t *result,
                            sl_decision_t *d, sl_buf_t *reason);

//  --------------------------------------------------------------------------
//  sl_policy_yaml.c: reading YAML, for the loader

//  What one load reads from: errors go to *error as "name:line:col: why",
//  the first one kept.
typedef struct {
    const char *name;                   //  the file's name, for errors
    char **error;                       //  the first error (the caller's, it frees it)
    yaml_document_t *doc;
} sl_policy_yaml_t;

#define SL_POLICY_YAML_MAX_DEPTH 32     //  nesting of YAML values turned into JSON

//  Record an error at node (NULL: line 1, column 1) unless one was.
void sl_policy_yaml_error (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *format, ...)
    __attribute__ ((format (printf, 3, 4)));
//  A scalar's text, NULL for a node that is none. Borrowed from the document.
const char *sl_policy_yaml_scalar (yaml_node_t *node);
yaml_node_t *sl_policy_yaml_node (sl_policy_yaml_t *ctx, int index);
//  A YAML value as JSON (a new reference), with YAML's typing of plain
//  scalars: a plain 5 is a number, a quoted "5" a string; NULL on error.
json_t *sl_policy_yaml_json (sl_policy_yaml_t *ctx, yaml_node_t *node);
//  Typed scalars: 0, or -1 with an error naming what the value is for.
int sl_policy_yaml_bool (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *what, bool *out);
int sl_policy_yaml_number (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *what, double *out);
int sl_policy_yaml_int (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *what, long min, long max,
                        long *out);
//  A copy of the scalar in *out (freeing what *out held).
int sl_policy_yaml_string (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *what, char **out);
//  One key of a mapping and its value (key: the key's text, never NULL).
typedef int (sl_policy_yaml_pair_fn) (sl_policy_yaml_t *ctx, yaml_node_t *k, yaml_node_t *v, const char *key,
                                      void *arg);
//  Call fn for every key of a mapping node, in order: 0, or -1 at the
//  first error (fn's, a key that is not a string, or a node that is no
//  mapping: then the error is not_mapping).
int sl_policy_yaml_mapping (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *not_mapping,
                            sl_policy_yaml_pair_fn *fn, void *arg);

//  --------------------------------------------------------------------------
//  sl_policy_fields.c: a rule's structured fields, for the loader
//  (each 0, or -1 with the error recorded; what was read stays in the
//  rule, for sl_policy_free)

//  tool, model: one name or glob, or a list of them.
int sl_policy_fields_names (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *what,
                            sl_policy_names_t *out);
//  cut: one reason or a list of them, as a bit set.
int sl_policy_fields_cuts (sl_policy_yaml_t *ctx, yaml_node_t *node, unsigned *out);
//  args (locator "pointer") or headers (locator "name"): a list of tests.
int sl_policy_fields_matchers (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *what,
                               const char *locator, sl_policy_matcher_t **out, int *count);
//  text: one test mapping, or a list of them (all must pass).
int sl_policy_fields_texts (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_matcher_t **out, int *count);
//  size: numeric tests on a part's size in bytes.
int sl_policy_fields_size (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_matcher_t **out);
//  part: one part kind or a list of them, as a bit set.
int sl_policy_fields_parts (sl_policy_yaml_t *ctx, yaml_node_t *node, unsigned *out);
//  redact: a mapping {regex, placeholder}, or a list of them.
int sl_policy_fields_redacts (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_rule_t *r);
//  history: a list of {tool, args}.
int sl_policy_fields_history (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_rule_t *r);
//  set (is_set: a mapping of pointer to value) or delete (a list of pointers).
int sl_policy_fields_edits (sl_policy_yaml_t *ctx, yaml_node_t *node, bool is_set, sl_policy_rule_t *r);
//  llm_judge: a mapping; spec holds its defaults (sl_llm_spec_defaults).
int sl_policy_fields_llm (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_llm_spec_t *spec);
//  ask: a mapping; spec holds its defaults (sl_ask_spec_defaults).
int sl_policy_fields_ask (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_ask_spec_t *spec);

//  --------------------------------------------------------------------------
//  sl_policy_tools.c: tool names, servers, pinned definitions

//  servers: a list of MCP server names (top level).
int sl_policy_tools_servers (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_t *self);
//  pins: a pins file, relative to the policy file (top level); the file is
//  added to what a reload watches (count, the files array grown by one)
//  and its text to whole (the policy's id). A text policy may not name one.
int sl_policy_tools_pins (sl_policy_yaml_t *ctx, yaml_node_t *node, bool is_file, sl_policy_t *self);
//  definition: one state (changed, unpinned, pinned) or a list, as a bit set.
int sl_policy_tools_definition (sl_policy_yaml_t *ctx, yaml_node_t *node, unsigned *out);
//  A base's servers and pins, when the including file names none.
void sl_policy_tools_inherit (sl_policy_t *self, sl_policy_t *base);
//  After the rules are merged: the pins file among the policy's files and
//  its text in the id (whole: what the id is computed from).
void sl_policy_tools_finish (sl_policy_t *self, sl_buf_t *whole);
//  The pins file (and the keys file it names) among the files a policy
//  loaded from a file was read from.
void sl_policy_tools_files (sl_policy_t *self);
//  What a request rule with a definition condition or action withhold may
//  say: 0, or -1 with the error recorded.
int sl_policy_tools_check_request (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_rule_t *r);
void sl_policy_tools_free (sl_policy_t *self);
//  Do the rule's tool: and server: conditions hold for a name as written?
//  tool: matches the name as written or the tool part of it; server: the
//  server the name stands for (read against the policy's servers).
bool sl_policy_tools_match (const sl_policy_t *self, const sl_policy_rule_t *r, sl_str_t name);
//  Does the rule's definition condition hold for a definition of name,
//  its digest (absent: the request has none), the request's team?
bool sl_policy_tools_definition_match (const sl_policy_t *self, const sl_policy_rule_t *r, sl_str_t team,
                                       sl_str_t name, sl_str_t digest);
//  The digest a call's tool had in its request (tool_digests: START tdig,
//  a JSON object of name -> digest) into digest; false when the request
//  had no definition of it.
bool sl_policy_tools_call_digest (sl_str_t tool_digests, sl_str_t name, char *digest);
//  Say in reason what a definition is against its pin: "definition of X
//  changed (pinned P, seen S)".
void sl_policy_tools_explain (const sl_policy_t *self, sl_str_t team, sl_str_t name, sl_str_t digest,
                              sl_buf_t *reason);
//  sl_policy_regex.c: byte escapes in regexes, for the loader

//  pattern with every \xHH written as the byte HH, into out (a C string).
//  -1 for \x00.
int sl_policy_regex_bytes (const char *pattern, sl_buf_t *out);

//  --------------------------------------------------------------------------
//  sl_policy_trust.c: the trust section and taint conditions, for the loader

//  trust: a mapping {untrusted, untrusted_servers, trusted_servers,
//  unknown}, appended to the policy's sections.
int sl_policy_trust_parse (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_t *self);
//  tainted: (a flag) or tainted_by: (names) of a rule; key names which.
int sl_policy_trust_field (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *key, sl_policy_rule_t *r);
//  Move the trust sections of base after self's (base keeps none).
void sl_policy_trust_merge (sl_policy_t *self, sl_policy_t *base);
void sl_policy_trust_free (sl_policy_t *self);

//  --------------------------------------------------------------------------
//  sl_taint.c: the taint conditions, for the evaluation

//  Do rule r's taint conditions hold for the call's taint (sl_call_t.taint)?
//  When they do, detail gets what tainted it (the tool, the part).
bool sl_taint_holds (const sl_policy_rule_t *r, sl_str_t taint, sl_buf_t *detail);

//  --------------------------------------------------------------------------
//  sl_ask.c: asking a person

//  Conclude a pending decision of rule r (an ask) with its outcome.
void sl_ask_conclude (const sl_policy_rule_t *r, const sl_call_t *call, const sl_llm_result_t *result,
                      sl_decision_t *d);
//  decide: a mapping {url, timeout_ms, on_error, concurrency}; spec holds
//  its defaults (sl_decide_spec_defaults).
int sl_policy_fields_decide (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_llm_spec_t *spec);

//  --------------------------------------------------------------------------
//  sl_policy_match.c: the tests both evaluations run

//  The longest run of text every match of an extended regex must hold, or
//  NULL when none is long enough to be worth looking for (computed at
//  load time: a text without it cannot match, and the regex is not run).
//  The caller frees it.
char *sl_policy_match_literal (const char *regex);
//  Does the value (NULL: not there) pass every test of m?
bool sl_policy_match_value (const sl_policy_matcher_t *m, json_t *value);
//  Does the value at m's pointer in args (RFC 6901: object members, array
//  indices) pass every test of m? A value that is not there is absent.
bool sl_policy_match_arg (const sl_policy_matcher_t *m, json_t *args);
//  Does a text pass every test of m? (A text is a string: numeric tests
//  fail on it.)
bool sl_policy_match_text (const sl_policy_matcher_t *m, sl_str_t text);
//  Numeric tests on a number (a part's size).
bool sl_policy_match_number (const sl_policy_matcher_t *m, double d);
//  A header test on request headers (a JSON object, names in lower case;
//  absent: no headers): a header the request did not send is absent.
bool sl_policy_match_header (const sl_policy_matcher_t *m, sl_str_t headers);
//  Is name (absent: never) one of the names, or matched by one of the globs?
bool sl_policy_match_names (const sl_policy_names_t *n, sl_str_t name);
//  Does the regex match text (which may hold NULs), when text holds the
//  literal (NULL: no literal to look for first)?
bool sl_policy_match_regex (const regex_t *re, const char *literal, sl_str_t text);

#endif
