/*  Unit tests: common/policy/sl_policy_yaml (typed values from YAML
    nodes, YAML's typing of plain scalars in JSON, and errors at the line
    and column of the node they are about, the first one kept). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/policy/sl_policy_impl.h"

//  One YAML document and a reader of it named "t.yaml".
typedef struct {
    yaml_document_t doc;
    char *error;
    sl_policy_yaml_t ctx;
} s_doc_t;

static void
s_open (s_doc_t *d, const char *text)
{
    yaml_parser_t parser;
    yaml_parser_initialize (&parser);
    yaml_parser_set_input_string (&parser, (const unsigned char *) text, strlen (text));
    cr_assert (yaml_parser_load (&parser, &d->doc), "test YAML: %s", text);
    yaml_parser_delete (&parser);
    d->error = NULL;
    d->ctx = (sl_policy_yaml_t) { "t.yaml", &d->error, &d->doc };
}

static void
s_close (s_doc_t *d)
{
    yaml_document_delete (&d->doc);
    free (d->error);
}

//  The value of key in the root mapping.
static yaml_node_t *
s_get (s_doc_t *d, const char *key)
{
    yaml_node_t *root = yaml_document_get_root_node (&d->doc);
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++)
        if (strcmp (sl_policy_yaml_scalar (sl_policy_yaml_node (&d->ctx, p->key)), key) == 0)
            return sl_policy_yaml_node (&d->ctx, p->value);
    cr_assert_fail ("no key %s", key);
    return NULL;
}

Test (sl_policy_yaml, plain_scalars_are_typed_quoted_ones_are_strings)
{
    s_doc_t d;
    s_open (&d, "v: {int: 5, str: '5', dq: \"5\", real: 1.5, t: true, qt: 'true', f: false, n: null, tilde: ~,\n"
                "    empty: , big: 99999999999999999999, word: five, list: [1, two], map: {a: [b]}}\n");
    json_t *v = sl_policy_yaml_json (&d.ctx, s_get (&d, "v"));
    cr_assert_not_null (v, "%s", d.error ? d.error : "");
    cr_expect (json_is_integer (json_object_get (v, "int")));
    cr_expect_eq (json_integer_value (json_object_get (v, "int")), 5);
    cr_expect_str_eq (json_string_value (json_object_get (v, "str")), "5");
    cr_expect_str_eq (json_string_value (json_object_get (v, "dq")), "5");
    cr_expect (json_is_real (json_object_get (v, "real")));
    cr_expect (json_is_true (json_object_get (v, "t")));
    cr_expect_str_eq (json_string_value (json_object_get (v, "qt")), "true");
    cr_expect (json_is_false (json_object_get (v, "f")));
    cr_expect (json_is_null (json_object_get (v, "n")));
    cr_expect (json_is_null (json_object_get (v, "tilde")));
    cr_expect (json_is_null (json_object_get (v, "empty")));
    cr_expect (json_is_real (json_object_get (v, "big")), "an integer too large for 64 bits is a number still");
    cr_expect_str_eq (json_string_value (json_object_get (v, "word")), "five");
    char *list = json_dumps (json_object_get (v, "list"), JSON_COMPACT);
    cr_expect_str_eq (list, "[1,\"two\"]");
    free (list);
    char *map = json_dumps (json_object_get (v, "map"), JSON_COMPACT);
    cr_expect_str_eq (map, "{\"a\":[\"b\"]}");
    free (map);
    json_decref (v);
    cr_expect_null (d.error);
    s_close (&d);
}

Test (sl_policy_yaml, values_nest_only_so_deep)
{
    char text [256] = "v: ";
    int depth = SL_POLICY_YAML_MAX_DEPTH;
    for (int i = 0; i <= depth; i++)
        strcat (text, "[");
    for (int i = 0; i <= depth; i++)
        strcat (text, "]");
    strcat (text, "\n");
    s_doc_t d;
    s_open (&d, text);
    json_t *v = sl_policy_yaml_json (&d.ctx, s_get (&d, "v"));
    cr_expect_not_null (v, "%d levels in: %s", depth, d.error ? d.error : "");
    json_decref (v);
    s_close (&d);

    snprintf (text, sizeof text, "v: ");
    for (int i = 0; i <= depth + 1; i++)
        strcat (text, "[");
    for (int i = 0; i <= depth + 1; i++)
        strcat (text, "]");
    strcat (text, "\n");
    s_open (&d, text);
    cr_expect_null (sl_policy_yaml_json (&d.ctx, s_get (&d, "v")));
    cr_assert_not_null (d.error);
    cr_expect_str_eq (d.error, "t.yaml:1:37: value nested too deeply");
    s_close (&d);
}

Test (sl_policy_yaml, typed_scalars)
{
    s_doc_t d;
    s_open (&d, "yes: true\nno: false\nquoted: 'true'\nword: yes\n"
                "num: 1e3\nneg: -2.5\ninf: .inf\nnumq: '5'\nnone: \n"
                "int: 10\nhalf: 2.5\nover: 11\n"
                "str: text\nlist: [a]\n");
    bool b = false;
    cr_expect_eq (sl_policy_yaml_bool (&d.ctx, s_get (&d, "yes"), "x", &b), 0);
    cr_expect (b);
    cr_expect_eq (sl_policy_yaml_bool (&d.ctx, s_get (&d, "no"), "x", &b), 0);
    cr_expect (!b);
    double n = 0;
    cr_expect_eq (sl_policy_yaml_number (&d.ctx, s_get (&d, "num"), "n", &n), 0);
    cr_expect_float_eq (n, 1000, 1e-9);
    cr_expect_eq (sl_policy_yaml_number (&d.ctx, s_get (&d, "neg"), "n", &n), 0);
    cr_expect_float_eq (n, -2.5, 1e-9);
    long i = 0;
    cr_expect_eq (sl_policy_yaml_int (&d.ctx, s_get (&d, "int"), "i", 0, 10, &i), 0);
    cr_expect_eq (i, 10, "the bounds are inclusive");
    char *s = strdup ("old");
    cr_expect_eq (sl_policy_yaml_string (&d.ctx, s_get (&d, "str"), "s", &s), 0);
    cr_expect_str_eq (s, "text", "the old value is replaced (and freed)");
    free (s);
    cr_expect_null (d.error);
    s_close (&d);

    //  Each refusal names what the value is for, where it is.
    struct { const char *key; const char *expect; } cases [] = {
        { "quoted", "t.yaml:3:9: x must be true or false" },
        { "word", "t.yaml:4:7: x must be true or false" },
        { "inf", "t.yaml:7:6: n must be a number" },
        { "numq", "t.yaml:8:7: n must be a number" },
        { "none", "t.yaml:9:6: n must be a number" },
        { "half", "t.yaml:11:7: i must be a whole number from 0 to 10" },
        { "over", "t.yaml:12:7: i must be a whole number from 0 to 10" },
        { "list", "t.yaml:14:7: s must be a string" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases [0]; k++) {
        s_open (&d, "yes: true\nno: false\nquoted: 'true'\nword: yes\n"
                    "num: 1e3\nneg: -2.5\ninf: .inf\nnumq: '5'\nnone: \n"
                    "int: 10\nhalf: 2.5\nover: 11\n"
                    "str: text\nlist: [a]\n");
        yaml_node_t *node = s_get (&d, cases [k].key);
        char *out = NULL;
        int rc = k < 2 ? sl_policy_yaml_bool (&d.ctx, node, "x", &b)
               : k < 5 ? sl_policy_yaml_number (&d.ctx, node, "n", &n)
               : k < 7 ? sl_policy_yaml_int (&d.ctx, node, "i", 0, 10, &i)
               : sl_policy_yaml_string (&d.ctx, node, "s", &out);
        cr_expect_eq (rc, -1, "%s", cases [k].key);
        cr_expect_str_eq (d.error ? d.error : "", cases [k].expect);
        free (out);
        s_close (&d);
    }
}

Test (sl_policy_yaml, the_first_error_is_kept)
{
    s_doc_t d;
    s_open (&d, "a: 1\nb:   x\n");
    sl_policy_yaml_error (&d.ctx, s_get (&d, "b"), "first %d", 1);
    sl_policy_yaml_error (&d.ctx, s_get (&d, "a"), "second");
    cr_expect_str_eq (d.error, "t.yaml:2:6: first 1", "lines and columns count from 1");
    s_close (&d);
    s_open (&d, "a: 1\n");
    sl_policy_yaml_error (&d.ctx, NULL, "no node");
    cr_expect_str_eq (d.error, "t.yaml:1:1: no node", "an error about no node is at the start");
    s_close (&d);
    s_open (&d, "a: {[1]: 2}\n");
    cr_expect_null (sl_policy_yaml_json (&d.ctx, s_get (&d, "a")));
    cr_expect_str_eq (d.error, "t.yaml:1:5: mapping keys must be strings");
    s_close (&d);
}
