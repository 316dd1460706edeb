/*  Unit tests: common/policy/sl_schema (the request's tool schemas). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/policy/sl_schema.h"

//  Check args (JSON text) against schema (JSON text); returns the
//  violation, "" when there is none.
static const char *
s_check (const char *schema, const char *args)
{
    static char out [512];
    json_t *s = json_loads (schema, JSON_DECODE_ANY, NULL);
    json_t *a = json_loads (args, JSON_DECODE_ANY, NULL);
    cr_assert_not_null (s, "test schema is JSON");
    cr_assert_not_null (a, "test args are JSON");
    sl_buf_t why = { 0 };
    int rc = sl_schema_validate (s, a, &why);
    snprintf (out, sizeof out, "%s", rc ? sl_buf_cstr (&why) : "");
    cr_expect_eq (rc != 0, why.len != 0, "a violation always says why");
    sl_buf_free (&why);
    json_decref (s);
    json_decref (a);
    return out;
}

Test (sl_schema, type)
{
    cr_expect_str_eq (s_check ("{\"type\":\"object\"}", "{}"), "");
    cr_expect_str_eq (s_check ("{\"type\":\"object\"}", "[]"), "(arguments): expected object, got array");
    cr_expect_str_eq (s_check ("{\"type\":\"string\"}", "\"x\""), "");
    cr_expect_str_eq (s_check ("{\"type\":\"number\"}", "1"), "", "an integer is a number");
    cr_expect_str_eq (s_check ("{\"type\":\"integer\"}", "2.0"), "", "2.0 is integral");
    cr_expect_str_eq (s_check ("{\"type\":\"integer\"}", "2.5"), "(arguments): expected integer, got number");
    cr_expect_str_eq (s_check ("{\"type\":\"boolean\"}", "false"), "");
    cr_expect_str_eq (s_check ("{\"type\":\"null\"}", "0"), "(arguments): expected null, got integer");
    cr_expect_str_eq (s_check ("{\"type\":[\"string\",\"null\"]}", "null"), "");
    cr_expect_str_eq (s_check ("{\"type\":[\"string\",\"null\"]}", "3"),
                      "(arguments): a integer is not among the allowed types");
    cr_expect_str_eq (s_check ("{\"type\":\"whatever\"}", "3"), "", "unknown type names constrain nothing");
}

Test (sl_schema, required_properties_and_paths)
{
    const char *schema =
        "{\"type\":\"object\",\"required\":[\"path\",\"mode\"],\"properties\":{"
        "\"path\":{\"type\":\"string\"},\"mode\":{\"enum\":[\"r\",\"w\"]},"
        "\"opts\":{\"type\":\"object\",\"properties\":{\"a/b\":{\"type\":\"integer\"}}}}}";
    cr_expect_str_eq (s_check (schema, "{\"path\":\"/x\",\"mode\":\"r\"}"), "");
    cr_expect_str_eq (s_check (schema, "{\"path\":\"/x\"}"), "(arguments): missing required property 'mode'");
    cr_expect_str_eq (s_check (schema, "{\"path\":1,\"mode\":\"r\"}"), "/path: expected string, got integer");
    cr_expect_str_eq (s_check (schema, "{\"path\":\"/x\",\"mode\":\"x\"}"),
                      "/mode: the value is not one of the allowed values (enum)");
    cr_expect_str_eq (s_check (schema, "{\"path\":\"/x\",\"mode\":\"w\",\"opts\":{\"a/b\":\"1\"}}"),
                      "/opts/a~1b: expected integer, got string", "pointer escapes in the path");
    cr_expect_str_eq (s_check (schema, "{\"path\":\"/x\",\"mode\":\"w\",\"extra\":1}"), "",
                      "additional properties are allowed unless the schema says otherwise");
}

Test (sl_schema, additional_properties_and_items)
{
    cr_expect_str_eq (s_check ("{\"properties\":{\"a\":{}},\"additionalProperties\":false}", "{\"a\":1,\"b\":2}"),
                      "/b: property not allowed (additionalProperties is false)");
    cr_expect_str_eq (s_check ("{\"additionalProperties\":{\"type\":\"string\"}}", "{\"a\":\"x\",\"b\":2}"),
                      "/b: expected string, got integer");
    cr_expect_str_eq (s_check ("{\"items\":{\"type\":\"integer\"}}", "[1,2,\"3\"]"), "/2: expected integer, got string");
    cr_expect_str_eq (s_check ("{\"enum\":[1,\"a\"]}", "1.0"), "", "enum compares numbers by value");
    cr_expect_str_eq (s_check ("{\"const\":\"x\"}", "\"y\""), "(arguments): the value differs from the required constant");
    cr_expect_str_eq (s_check ("false", "1"), "(arguments): no value is allowed here");
    cr_expect_str_eq (s_check ("true", "1"), "");
}

Test (sl_schema, nesting_is_bounded)
{
    //  A self-similar schema as deep as the value: the checker stops at its
    //  bound and calls that a violation instead of recursing on.
    sl_buf_t schema = { 0 }, value = { 0 };
    for (int i = 0; i < SL_SCHEMA_MAX_DEPTH + 10; i++) {
        sl_buf_puts (&schema, "{\"additionalProperties\":");
        sl_buf_puts (&value, "{\"a\":");
    }
    sl_buf_puts (&schema, "true");
    sl_buf_puts (&value, "1");
    for (int i = 0; i < SL_SCHEMA_MAX_DEPTH + 10; i++) {
        sl_buf_putc (&schema, '}');
        sl_buf_putc (&value, '}');
    }
    cr_expect_not_null (strstr (s_check (sl_buf_cstr (&schema), sl_buf_cstr (&value)), "nested too deeply"));
    sl_buf_free (&schema);
    sl_buf_free (&value);
}

Test (sl_schema, tools_of_a_request)
{
    sl_schema_t *s = sl_schema_new (sl_str ("[{\"name\":\"get_weather\",\"schema\":{\"type\":\"object\","
                                            "\"required\":[\"city\"]}},{\"name\":\"noop\"}]"));
    cr_expect_eq (sl_schema_count (s), 2);
    cr_expect (sl_schema_has (s, sl_str ("noop")));
    cr_expect_not (sl_schema_has (s, sl_str ("get")));
    json_t *args = json_loads ("{\"city\":\"Paris\"}", 0, NULL);
    sl_buf_t why = { 0 };
    cr_expect_eq (sl_schema_check (s, sl_str ("get_weather"), args, &why), 0);
    cr_expect_eq (sl_schema_check (s, sl_str ("noop"), args, &why), 0, "a tool without schema takes anything");
    cr_expect_eq (sl_schema_check (s, sl_str ("rm"), args, &why), -1);
    cr_expect_str_eq (sl_buf_cstr (&why), "the request declares no tool named 'rm'");
    sl_buf_reset (&why);
    cr_expect_eq (sl_schema_check (s, sl_str ("get_weather"), NULL, &why), -1);
    cr_expect_str_eq (sl_buf_cstr (&why), "the arguments are not valid JSON");
    sl_buf_free (&why);
    json_decref (args);
    sl_schema_destroy (&s);
    sl_schema_destroy (&s);
    cr_expect_null (s, "destroy twice is safe");
}

Test (sl_schema, malformed_or_absent_tools_declare_nothing)
{
    const char *inputs [] = { NULL, "", "{not json", "{\"name\":\"x\"}", "[1,2,\"x\"]" };
    for (size_t i = 0; i < sizeof inputs / sizeof inputs [0]; i++) {
        sl_schema_t *s = sl_schema_new (sl_str (inputs [i]));
        cr_expect_not (sl_schema_has (s, sl_str ("x")), "input %zu", i);
        sl_buf_t why = { 0 };
        cr_expect_eq (sl_schema_check (s, sl_str ("x"), NULL, &why), -1);
        sl_buf_free (&why);
        sl_schema_destroy (&s);
    }
}

Test (sl_schema, a_schema_that_did_not_travel_is_not_a_pass)
{
    sl_schema_t *s = sl_schema_new (sl_str ("[{\"name\":\"big\",\"description\":\"cut\",\"tool\":\"big\","
                                            "\"digest\":\"00\",\"truncated\":true},"
                                            "{\"name\":\"none\",\"tool\":\"none\",\"digest\":\"01\"}]"));
    json_t *args = json_loads ("{\"a\":1}", 0, NULL);
    sl_buf_t why = { 0 };
    cr_expect_eq (sl_schema_check (s, sl_str ("big"), args, &why), -1, "over the bound: cannot be checked");
    cr_expect_not_null (strstr (sl_buf_cstr (&why), "over the size bound"), "%s", sl_buf_cstr (&why));
    sl_buf_reset (&why);
    cr_expect_eq (sl_schema_check (s, sl_str ("none"), args, &why), 0, "declared without a schema: anything");
    sl_buf_free (&why);
    json_decref (args);
    sl_schema_destroy (&s);
}
