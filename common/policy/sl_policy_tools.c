/*  sl_policy_tools.c - what a policy knows of tools: the MCP servers
    their names stand for, and the definitions they must have.

    Top level:
      servers: [github, jira]   names to read opencode's <server>_<tool>
                                (and Gemini CLI's mcp_<server>_<tool>) with
      pins: pins.yaml           pinned definitions (sl_pins.h), relative to
                                the policy file; reloaded with it

    Rule conditions:
      server: github            the server a tool's name stands for (a name,
                                glob or list, like tool:)
      definition: changed       the tool's definition against its pin for the
                                request's team: changed, unpinned, pinned (or
                                a list); on request rules (part: tool) the
                                definition judged, on tool-call rules the
                                definition the call's tool had in its request
*/
#include "common/policy/sl_policy_impl.h"

#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/tools/sl_tooldef.h"

#define S_MAX_SERVERS 256               //  servers: names a policy may list

int
sl_policy_tools_servers (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_t *self)
{
    if (node->type != YAML_SEQUENCE_NODE) {
        sl_policy_yaml_error (ctx, node, "servers must be a list of MCP server names");
        return -1;
    }
    int n = (int) (node->data.sequence.items.top - node->data.sequence.items.start);
    if (n > S_MAX_SERVERS) {
        sl_policy_yaml_error (ctx, node, "servers: more than %d names", S_MAX_SERVERS);
        return -1;
    }
    self->servers = sl_xcalloc ((size_t) n + 1, sizeof (char *));
    for (int i = 0; i < n; i++) {
        yaml_node_t *item = sl_policy_yaml_node (ctx, node->data.sequence.items.start [i]);
        const char *name = sl_policy_yaml_scalar (item);
        if (!name || !*name || strchr (name, '*')) {
            sl_policy_yaml_error (ctx, item, "servers: each is a server's name as the clients write it");
            return -1;
        }
        self->servers [self->server_count++] = sl_xstrdup (name);
    }
    return 0;
}

int
sl_policy_tools_pins (sl_policy_yaml_t *ctx, yaml_node_t *node, bool is_file, sl_policy_t *self)
{
    const char *name = sl_policy_yaml_scalar (node);
    if (!name || !*name) {
        sl_policy_yaml_error (ctx, node, "pins must be the name of a pins file");
        return -1;
    }
    if (!is_file) {
        sl_policy_yaml_error (ctx, node, "pins '%s': only a policy file may name a pins file (this policy is "
                              "a text, not a file)", name);
        return -1;
    }
    sl_buf_t path = { 0 };
    if (name [0] == '/')
        sl_buf_puts (&path, name);
    else {
        char *copy = sl_xstrdup (ctx->name);
        sl_buf_printf (&path, "%s/%s", dirname (copy), name);
        free (copy);
    }
    char *error = NULL;
    sl_pins_destroy (&self->pins);
    free (self->pins_file);
    self->pins_file = sl_xstrdup (sl_buf_cstr (&path));
    self->pins = sl_pins_load (sl_buf_cstr (&path), &error);
    if (!self->pins)
        sl_policy_yaml_error (ctx, node, "pins '%s': %s", name, error ? error : "does not load");
    free (error);
    sl_buf_free (&path);
    return self->pins ? 0 : -1;
}

int
sl_policy_tools_definition (sl_policy_yaml_t *ctx, yaml_node_t *node, unsigned *out)
{
    yaml_node_item_t single = 0;
    yaml_node_item_t *start = &single, *top = &single;
    if (node->type == YAML_SEQUENCE_NODE) {
        start = node->data.sequence.items.start;
        top = node->data.sequence.items.top;
    }
    else
        top = start + 1;
    for (yaml_node_item_t *it = start; it < top; it++) {
        yaml_node_t *item = node->type == YAML_SEQUENCE_NODE ? sl_policy_yaml_node (ctx, *it) : node;
        const char *v = sl_policy_yaml_scalar (item);
        int state = v ? sl_pin_state_parse (v) : -1;
        if (state < 0) {
            sl_policy_yaml_error (ctx, item, "definition must be changed, unpinned or pinned (or a list of them)");
            return -1;
        }
        *out |= 1u << state;
    }
    if (!*out) {
        sl_policy_yaml_error (ctx, node, "definition must name a state");
        return -1;
    }
    return 0;
}

void
sl_policy_tools_inherit (sl_policy_t *self, sl_policy_t *base)
{
    if (!self->server_count && base->server_count) {
        self->servers = base->servers;
        self->server_count = base->server_count;
        base->servers = NULL;
        base->server_count = 0;
    }
    if (!self->pins && base->pins) {
        self->pins = base->pins;
        base->pins = NULL;
    }
}

void
sl_policy_tools_finish (sl_policy_t *self, sl_buf_t *whole)
{
    for (int i = 0; i < self->rule_count; i++)
        self->uses_definitions |= self->rules [i].definitions && !self->rules [i].on_request;
    if (!self->pins)
        return;
    //  Two processes agree on the version only when they hold the same pins.
    sl_buf_t text = { 0 };
    sl_pins_write (self->pins, &text);
    sl_buf_printf (whole, "%cpins ", 0);
    sl_buf_append (whole, text.data, text.len);
    sl_buf_free (&text);
}

void
sl_policy_tools_free (sl_policy_t *self)
{
    for (int i = 0; i < self->server_count; i++)
        free (self->servers [i]);
    free (self->servers);
    self->servers = NULL;
    self->server_count = 0;
    sl_pins_destroy (&self->pins);
    free (self->pins_file);
    self->pins_file = NULL;
}

void
sl_policy_tools_files (sl_policy_t *self)
{
    const char *keys = self->pins ? sl_pins_keys_path (self->pins) : NULL;
    if (!self->pins_file)
        return;
    self->files = sl_xrealloc (self->files, (size_t) (self->file_count + 2) * sizeof (char *));
    self->files [self->file_count++] = sl_xstrdup (self->pins_file);
    if (keys)
        self->files [self->file_count++] = sl_xstrdup (keys);
}

int
sl_policy_tools_check_request (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_rule_t *r)
{
    unsigned tool = 1u << SL_RPART_TOOL;
    if (r->action == SL_ACT_WITHHOLD && !r->parts)
        r->parts = tool;
    if ((r->action == SL_ACT_WITHHOLD || r->definitions) && r->parts != tool) {
        sl_policy_yaml_error (ctx, node, "rule '%s': withhold and definition judge tool definitions only "
                              "(part: tool)", r->id);
        return -1;
    }
    if (r->action == SL_ACT_WITHHOLD && r->llm) {
        sl_policy_yaml_error (ctx, node, "rule '%s': a withhold rule cannot ask an LLM judge", r->id);
        return -1;
    }
    return 0;
}

bool
sl_policy_tools_match (const sl_policy_t *self, const sl_policy_rule_t *r, sl_str_t name)
{
    if (!r->tools.count && !r->servers.count)
        return true;
    sl_toolname_t read;
    sl_tooldef_name_in (name, (const char *const *) self->servers, self->server_count, &read);
    if (r->tools.count && !sl_policy_match_names (&r->tools, name)
    &&  !(read.server.ptr && sl_policy_match_names (&r->tools, read.tool)))
        return false;
    return !r->servers.count || (read.server.ptr && sl_policy_match_names (&r->servers, read.server));
}

bool
sl_policy_tools_definition_match (const sl_policy_t *self, const sl_policy_rule_t *r, sl_str_t team,
                                  sl_str_t name, sl_str_t digest)
{
    if (!r->definitions)
        return true;
    return (r->definitions & (1u << sl_pins_state (self->pins, team, name, digest))) != 0;
}

bool
sl_policy_tools_call_digest (sl_str_t tool_digests, sl_str_t name, char *digest)
{
    if (!tool_digests.ptr || !name.ptr)
        return false;
    json_t *all = json_loadb (tool_digests.ptr, tool_digests.len, JSON_ALLOW_NUL, NULL);
    char key [1024];
    bool found = false;
    if (json_is_object (all) && name.len < sizeof key) {
        memcpy (key, name.ptr, name.len);
        key [name.len] = 0;
        const char *d = json_string_value (json_object_get (all, key));
        if (d && strlen (d) == SL_TOOLDEF_DIGEST_SIZE - 1) {
            memcpy (digest, d, SL_TOOLDEF_DIGEST_SIZE);
            found = true;
        }
    }
    json_decref (all);
    return found;
}

void
sl_policy_tools_explain (const sl_policy_t *self, sl_str_t team, sl_str_t name, sl_str_t digest, sl_buf_t *reason)
{
    const char *pinned = sl_pins_digest (self->pins, team, name);
    sl_pin_state_t state = sl_pins_state (self->pins, team, name, digest);
    sl_buf_printf (reason, "definition of %.*s %s (pinned %s, seen %.*s)", (int) name.len, name.ptr,
                   sl_pin_state_name (state), pinned ? pinned : "none", digest.ptr ? (int) digest.len : 4,
                   digest.ptr ? digest.ptr : "none");
}

bool sl_policy_uses_definitions (sl_policy_t *self) { return self->uses_definitions; }
const sl_pins_t *sl_policy_pins (sl_policy_t *self) { return self->pins; }

//  --------------------------------------------------------------------------
//  A tool blocked by name alone (what an MCP server's tools/list leaves out)

//  Does the rule's outcome depend on anything but the tool's name: the
//  call's arguments, schema, definition, model, headers, history, taint,
//  how it ended, how many came before, or a judge (LLM, decide, a person)?
static bool
s_conditional (const sl_policy_rule_t *r)
{
    return r->definitions || r->incomplete != SL_FLAG_ANY || r->cuts || r->models.count
        || r->max_calls >= 0 || r->args_invalid != SL_FLAG_ANY || r->args_repaired != SL_FLAG_ANY
        || r->header_count || r->arg_count || r->history_count || r->schema_violation != SL_FLAG_ANY
        || r->tainted != SL_FLAG_ANY || r->tainted_by.count || r->llm || r->ask || r->asks;
}

static bool
s_blocking (sl_action_t action)
{
    return action == SL_ACT_BLOCK || action == SL_ACT_DROP || action == SL_ACT_TERMINATE;
}

//  The first rule that matches a call decides it. Walk the call rules
//  that name this tool in order: an unconditional one decides every call
//  that reaches it; a conditional one that can only block lets the rest
//  through to the next; a conditional one that can release some calls
//  means the tool is not blocked whatever follows. No rule naming it: no
//  rule blocks it (the default is not a rule about this tool).
bool
sl_policy_blocks_tool (const sl_policy_t *policy, sl_str_t name, sl_str_t team)
{
    (void) team;                        //  the policy is the team's already; the only team
                                        //  condition (definition:, pins) is conditional
    if (!policy || !name.ptr || !name.len)
        return false;
    for (int i = 0; i < policy->rule_count; i++) {
        const sl_policy_rule_t *r = &policy->rules [i];
        if (r->on_request || r->on_text || r->shadow || !sl_policy_tools_match (policy, r, name))
            continue;                   //  (a rule in shadow mode removes no tool)
        bool blocks = s_blocking (r->action) && !r->llm && !r->ask && !r->asks;
        if (!s_conditional (r))
            return blocks;
        if (!blocks)
            return false;
    }
    return false;
}
