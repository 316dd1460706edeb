/*  Fuzz target: the tool schema checker takes schemas and arguments from
    clients and must survive any of them (common/policy/sl_schema).
    Input: a tool list (JSON text), a NUL byte, then arguments (JSON text). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/policy/sl_schema.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr (data, 0, size);
    size_t tools_len = nul ? (size_t) (nul - data) : size;
    sl_schema_t *schema = sl_schema_new (sl_str_n (data, tools_len));
    json_t *args = NULL;
    if (nul)
        args = json_loadb ((const char *) nul + 1, size - tools_len - 1, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    //  Check the arguments against every declared tool, and against a tool
    //  that is not declared.
    json_t *tools = json_loadb ((const char *) data, tools_len, JSON_ALLOW_NUL, NULL);
    size_t i;
    json_t *tool;
    json_array_foreach (tools, i, tool) {
        json_t *name = json_object_get (tool, "name");
        if (!json_is_string (name))
            continue;
        sl_buf_t why = { 0 };
        int rc = sl_schema_check (schema, sl_str_n (json_string_value (name), json_string_length (name)), args, &why);
        if (rc != 0 && why.len == 0)
            __builtin_trap ();          //  a violation always says why
        sl_buf_free (&why);
    }
    sl_buf_t why = { 0 };
    if (sl_schema_check (schema, sl_str ("\x01 not declared"), args, &why) == 0 && !sl_schema_has (schema, sl_str ("\x01 not declared")))
        __builtin_trap ();
    sl_buf_free (&why);
    json_decref (tools);
    json_decref (args);
    sl_schema_destroy (&schema);
    return 0;
}
