/*  policy_fixture.h - policies and tool calls for the unit tests of the
    policy library (tests/unit/common/policy/test_sl_policy*.c). */
#ifndef POLICY_FIXTURE_H
#define POLICY_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/policy/sl_policy.h"

#define PF_NAME "p.yaml"                //  the file name every error starts with

static inline sl_policy_t *
pf_parse (const char *yaml, char **error)
{
    return sl_policy_parse (yaml, strlen (yaml), PF_NAME, error);
}

//  A policy that must parse.
static inline sl_policy_t *
pf_policy (const char *yaml)
{
    char *error = NULL;
    sl_policy_t *p = pf_parse (yaml, &error);
    cr_assert_not_null (p, "policy should parse: %s", error ? error : "");
    return p;
}

//  The error a policy is refused with (caller frees), NULL if it parsed.
static inline char *
pf_refused (const char *yaml)
{
    char *error = NULL;
    sl_policy_t *p = pf_parse (yaml, &error);
    sl_policy_unref (&p);
    return error;
}

//  A one-rule policy "r" (action block) with the given conditions.
static inline sl_policy_t *
pf_rule (const char *conditions)
{
    char yaml [2048];
    snprintf (yaml, sizeof yaml, "rules:\n  - id: r\n    action: block\n%s", conditions);
    return pf_policy (yaml);
}

//  A call with valid arguments and nothing else known.
static inline sl_call_t
pf_call (const char *name, const char *args)
{
    return (sl_call_t) { .name = sl_str (name), .arguments = sl_str (args), .args_valid = true, .ordinal = 1 };
}

//  A call cut off for the given reason, its arguments as far as they came.
static inline sl_call_t
pf_cut_call (const char *name, const char *args, sl_cut_t cut)
{
    sl_call_t c = pf_call (name, args);
    c.args_valid = false;
    c.cut = cut;
    return c;
}

static inline sl_decision_t
pf_decide (sl_policy_t *p, sl_call_t call)
{
    sl_decision_t d;
    sl_policy_decide (p, &call, &d);
    return d;
}

//  The rule that decides for call, "" for the default; frees the decision.
static inline const char *
pf_rule_of (sl_policy_t *p, sl_call_t call)
{
    static char rule [64];
    sl_decision_t d = pf_decide (p, call);
    snprintf (rule, sizeof rule, "%s", d.rule ? d.rule : "");
    sl_decision_clear (&d);
    return rule;
}

#endif
