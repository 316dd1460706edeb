/*  sl_policy_trust.c - a policy file's trust section and the taint
    conditions of its rules, read from YAML (see sl_policy_impl.h).

    The section says whose tool results sluice does not trust:

        trust:
          untrusted: [WebFetch, web_fetch, 'browser_*']   # tools (globs)
          untrusted_servers: ['*']     # every tool of these MCP servers
          trusted_servers: [github]    # ... but for these
          unknown: untrusted           # a result whose tool is not named

    Each file keeps its own section: an include's is added after the
    file's, and a tool is untrusted when any section says so, so a team
    file's trusted_servers exempts a server from its own untrusted_servers
    only, never from its base's. What the sections mean for a request is
    sl_taint.c's.

    Tests: tests/unit/common/policy/test_sl_taint.c (trust sections, their
    loading and errors, through includes; taint conditions).
*/
#include "common/policy/sl_policy_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

static void
s_trust_clear (sl_policy_trust_t *t)
{
    sl_policy_names_free (&t->untrusted);
    sl_policy_names_free (&t->untrusted_servers);
    sl_policy_names_free (&t->trusted_servers);
}

int
sl_policy_trust_parse (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_t *self)
{
    if (node->type != YAML_MAPPING_NODE) {
        sl_policy_yaml_error (ctx, node, "trust must be a mapping (untrusted, untrusted_servers, trusted_servers, "
                              "unknown)");
        return -1;
    }
    if (self->trust_count) {
        //  (the includes' sections join after the file is read)
        sl_policy_yaml_error (ctx, node, "trust given twice");
        return -1;
    }
    self->trusts = sl_xrealloc (self->trusts, (size_t) (self->trust_count + 1) * sizeof (sl_policy_trust_t));
    sl_policy_trust_t *t = &self->trusts [self->trust_count++];
    memset (t, 0, sizeof *t);
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = sl_policy_yaml_node (ctx, p->key);
        yaml_node_t *v = sl_policy_yaml_node (ctx, p->value);
        const char *key = sl_policy_yaml_scalar (k);
        int rc = 0;
        if (key && strcmp (key, "untrusted") == 0)
            rc = sl_policy_fields_names (ctx, v, "untrusted", &t->untrusted);
        else
        if (key && strcmp (key, "untrusted_servers") == 0)
            rc = sl_policy_fields_names (ctx, v, "untrusted_servers", &t->untrusted_servers);
        else
        if (key && strcmp (key, "trusted_servers") == 0)
            rc = sl_policy_fields_names (ctx, v, "trusted_servers", &t->trusted_servers);
        else
        if (key && strcmp (key, "unknown") == 0) {
            const char *value = sl_policy_yaml_scalar (v);
            if (!value || (strcmp (value, "trusted") != 0 && strcmp (value, "untrusted") != 0)) {
                sl_policy_yaml_error (ctx, v, "unknown must be trusted or untrusted (a result whose tool the "
                                      "request does not name)");
                rc = -1;
            }
            else
                t->unknown_trusted = strcmp (value, "trusted") == 0;
        }
        else {
            sl_policy_yaml_error (ctx, k, "unknown trust field '%s' (expected untrusted, untrusted_servers, "
                                  "trusted_servers, unknown)", key ? key : "?");
            rc = -1;
        }
        if (rc)
            return -1;
    }
    if (t->trusted_servers.count && !t->untrusted_servers.count) {
        sl_policy_yaml_error (ctx, node, "trusted_servers are exceptions to untrusted_servers, which is not given");
        return -1;
    }
    return 0;
}

int
sl_policy_trust_field (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *key, sl_policy_rule_t *r)
{
    if (strcmp (key, "tainted_by") == 0)
        return sl_policy_fields_names (ctx, node, "tainted_by", &r->tainted_by);
    bool b;
    if (sl_policy_yaml_bool (ctx, node, "tainted", &b))
        return -1;
    r->tainted = b ? SL_FLAG_YES : SL_FLAG_NO;
    return 0;
}

void
sl_policy_trust_merge (sl_policy_t *self, sl_policy_t *base)
{
    if (!base->trust_count)
        return;
    self->trusts = sl_xrealloc (self->trusts,
                                (size_t) (self->trust_count + base->trust_count) * sizeof (sl_policy_trust_t));
    memcpy (self->trusts + self->trust_count, base->trusts, (size_t) base->trust_count * sizeof (sl_policy_trust_t));
    self->trust_count += base->trust_count;
    free (base->trusts);
    base->trusts = NULL;
    base->trust_count = 0;
}

void
sl_policy_trust_free (sl_policy_t *self)
{
    for (int i = 0; i < self->trust_count; i++)
        s_trust_clear (&self->trusts [i]);
    free (self->trusts);
    self->trusts = NULL;
    self->trust_count = 0;
}
