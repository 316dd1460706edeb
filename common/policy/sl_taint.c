/*  sl_taint.c - which results taint a request, and the taint conditions
    of call rules (see sl_taint.h).

    A tool name is read the way clients write MCP tools (sl_tooldef.h):
    an untrusted entry matches the name as written or, for an MCP tool,
    its tool part (so web_fetch covers mcp__fetch__web_fetch), and
    untrusted_servers its server part. opencode's <server>_<tool> is read
    against the servers the section names exactly.
*/
#include "common/policy/sl_taint.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/policy/sl_policy_impl.h"
#include "common/tools/sl_tooldef.h"

#define S_MAX_SERVERS 64                //  exact server names read for opencode's form
#define S_SERVER_RESULT "_tool_result"  //  Anthropic's server tools' results: web_fetch_tool_result
#define S_DETAIL_TOOLS 3                //  tainting results a reason names

bool sl_policy_uses_taint (sl_policy_t *self) { return self->uses_taint; }

//  The name read into (server, tool), knowing the section's servers.
static void
s_read_name (const sl_policy_trust_t *t, sl_str_t name, sl_toolname_t *out)
{
    const char *servers [S_MAX_SERVERS];
    int count = 0;
    const sl_policy_names_t *lists [] = { &t->untrusted_servers, &t->trusted_servers };
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < lists [l]->count && count < S_MAX_SERVERS; i++)
            if (!lists [l]->globs [i])
                servers [count++] = lists [l]->names [i];
    sl_tooldef_name_in (name, servers, count, out);
}

//  Does one of names match the tool as written, or its MCP tool part?
static bool
s_names_match (const sl_policy_names_t *names, sl_str_t written, const sl_toolname_t *read)
{
    return sl_policy_match_names (names, written)
        || (read->server.ptr && sl_policy_match_names (names, read->tool));
}

static bool
s_section_untrusts (const sl_policy_trust_t *t, sl_str_t name)
{
    if (!name.ptr || !name.len)
        return !t->unknown_trusted;
    sl_toolname_t read;
    s_read_name (t, name, &read);
    if (s_names_match (&t->untrusted, name, &read))
        return true;
    return read.server.ptr && sl_policy_match_names (&t->untrusted_servers, read.server)
        && !sl_policy_match_names (&t->trusted_servers, read.server);
}

bool
sl_taint_untrusted (sl_policy_t *self, sl_str_t name)
{
    for (int i = 0; i < self->trust_count; i++)
        if (s_section_untrusts (&self->trusts [i], name))
            return true;
    return false;
}

sl_str_t
sl_taint_result_tool (const sl_req_t *req, const sl_part_t *part)
{
    if (part->kind == SL_PART_OPAQUE) {
        size_t n = strlen (S_SERVER_RESULT);
        sl_str_t type = part->text;
        bool server_result = type.ptr && type.len > n && memcmp (type.ptr + type.len - n, S_SERVER_RESULT, n) == 0;
        return server_result ? type : SL_STR_NULL;
    }
    if (part->kind != SL_PART_TOOL_RESULT)
        return SL_STR_NULL;
    return part->name.ptr && part->name.len ? part->name : sl_req_call_name (req, part->id);
}

void
sl_taint_scan (sl_policy_t *self, const sl_req_t *req, sl_buf_t *out)
{
    sl_str_t seen [SL_TAINT_MAX_TOOLS];
    int count = 0;
    bool unnamed = false;               //  an unnamed result is listed once, as ""
    sl_buf_putc (out, '[');
    for (size_t i = 0; i < req->message_count && count < SL_TAINT_MAX_TOOLS; i++) {
        const sl_message_t *m = &req->messages [i];
        for (size_t j = 0; j < m->count && count < SL_TAINT_MAX_TOOLS; j++) {
            const sl_part_t *p = &m->parts [j];
            if (p->kind != SL_PART_TOOL_RESULT && p->kind != SL_PART_OPAQUE)
                continue;
            sl_str_t tool = sl_taint_result_tool (req, p);
            if (p->kind == SL_PART_OPAQUE && !tool.ptr)
                continue;               //  not a result
            bool known = false;
            for (int k = 0; k < count && !known; k++)
                known = tool.len && sl_str_eq_str (seen [k], tool);
            if (known || (!tool.len && unnamed) || !sl_taint_untrusted (self, tool))
                continue;
            if (tool.len)
                seen [count] = tool;
            else
                unnamed = true;
            if (count++)
                sl_buf_putc (out, ',');
            sl_buf_puts (out, "{\"tool\":");
            sl_json_put_sl (out, tool.len ? tool : SL_STR_LIT (""));
            sl_buf_printf (out, ",\"part\":\"messages[%zu].parts[%zu]\"}", i, j);
        }
    }
    sl_buf_putc (out, ']');
}

//  --------------------------------------------------------------------------
//  Conditions

//  Say what tainted the conversation: the tools and parts, the first few.
static void
s_describe (json_t *hits, sl_buf_t *detail)
{
    if (detail->len)
        sl_buf_puts (detail, "; ");
    sl_buf_puts (detail, "the conversation is tainted by ");
    size_t i;
    json_t *hit;
    json_array_foreach (hits, i, hit) {
        if (i == S_DETAIL_TOOLS) {
            sl_buf_printf (detail, " and %zu more", json_array_size (hits) - i);
            break;
        }
        const char *tool = json_string_value (json_object_get (hit, "tool"));
        const char *part = json_string_value (json_object_get (hit, "part"));
        sl_buf_printf (detail, "%sa result of %s%s%s%s", i ? ", " : "",
                       tool && *tool ? "the untrusted tool " : "a tool the request does not name",
                       tool && *tool ? tool : "", part ? " at " : "", part ? part : "");
    }
    sl_buf_puts (detail, " (a redacted or replaced result still taints: the model read it)");
}

bool
sl_taint_holds (const sl_policy_rule_t *r, sl_str_t taint, sl_buf_t *detail)
{
    json_t *list = taint.ptr ? json_loadb (taint.ptr, taint.len, 0, NULL) : NULL;
    if (!json_is_array (list)) {
        //  Not computed (a gateway whose policy had no taint condition, a
        //  stream without its request): it cannot be shown untainted.
        json_decref (list);
        if (r->tainted == SL_FLAG_NO)
            return false;
        if (detail->len)
            sl_buf_puts (detail, "; ");
        sl_buf_puts (detail, "the conversation's taint was not computed for this request: taken as tainted");
        return true;
    }
    json_t *hits = json_array ();
    size_t i;
    json_t *entry;
    json_array_foreach (list, i, entry) {
        json_t *tool = json_object_get (entry, "tool");
        sl_str_t name = sl_str_n (json_string_value (tool), json_string_length (tool));
        sl_toolname_t read;
        sl_tooldef_name (name, &read);
        //  A result whose tool is not named could be any tool's.
        if (!r->tainted_by.count || !name.len || s_names_match (&r->tainted_by, name, &read))
            json_array_append (hits, entry);
    }
    bool tainted = json_array_size (hits) > 0;
    bool holds = r->tainted == SL_FLAG_NO ? json_array_size (list) == 0 : tainted;
    if (holds && tainted)
        s_describe (hits, detail);
    json_decref (hits);
    json_decref (list);
    return holds;
}
