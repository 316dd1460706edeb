/*  Unit tests: common/base/sl_yaml - the walk every loader shares, and its
    errors with file, line and column. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_yaml.h"

static int
s_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    int64_t *sum = arg;
    int64_t n;
    if (strcmp (key, "stop") == 0)
        return 7;                       //  a walk stops where fn says
    if (strcmp (key, "n") != 0)
        return sl_yaml_error (y, knode, "unknown field '%s'", key);
    if (sl_yaml_int (y, v, "n", 0, 100, &n))
        return -1;
    *sum += n;
    return 0;
}

static int
s_item (sl_yaml_t *y, yaml_node_t *item, size_t index, void *arg)
{
    (void) arg;
    return index == 1 ? sl_yaml_error (y, item, "item %zu", index) : 0;
}

Test (sl_yaml, walks_and_errors_with_their_place)
{
    const char *text = "a:\n  n: 5\nb: [x, y]\nc: {n: 101}\nd: 2.5\ne: true\n";
    char *error = NULL;
    sl_yaml_t *y = sl_yaml_parse (text, strlen (text), "f.yaml", &error);
    cr_assert_not_null (y, "%s", error);
    yaml_node_t *root = sl_yaml_root (y);
    int64_t sum = 0;
    cr_expect_eq (sl_yaml_mapping (y, sl_yaml_get (y, root, "a"), "a", s_member, &sum), 0);
    cr_expect_eq (sum, 5);
    cr_expect_eq (sl_yaml_sequence (y, sl_yaml_get (y, root, "b"), "b", s_item, NULL), -1);
    cr_expect_eq (sl_yaml_mapping (y, sl_yaml_get (y, root, "c"), "c", s_member, &sum), -1, "101 is out of range");
    char *first = sl_yaml_take_error (y);
    cr_expect_str_eq (first, "f.yaml:3:8: item 1", "the first error is kept");
    free (first);
    cr_expect_eq (sl_yaml_mapping (y, sl_yaml_get (y, root, "c"), "c", s_member, &sum), -1);
    char *second = sl_yaml_take_error (y);
    cr_expect_str_eq (second, "f.yaml:4:8: n must be a whole number from 0 to 100");
    free (second);
    double d;
    cr_expect_eq (sl_yaml_number (y, sl_yaml_get (y, root, "d"), "d", 0, 10, &d), 0);
    cr_expect_eq (d, 2.5);
    bool b = false;
    cr_expect_eq (sl_yaml_bool (y, sl_yaml_get (y, root, "e"), "e", &b), 0);
    cr_expect (b);
    cr_expect_eq (sl_yaml_bool (y, sl_yaml_get (y, root, "d"), "d", &b), -1);
    free (sl_yaml_take_error (y));
    cr_expect_eq (sl_yaml_mapping (y, sl_yaml_get (y, root, "b"), "b", s_member, &sum), -1, "not a mapping");
    free (sl_yaml_take_error (y));
    const char *stop = "stop: 1\nn: 3\n";
    sl_yaml_t *z = sl_yaml_parse (stop, strlen (stop), "g.yaml", &error);
    cr_expect_eq (sl_yaml_mapping (z, sl_yaml_root (z), "g", s_member, &sum), 7);
    sl_yaml_destroy (&z);
    sl_yaml_destroy (&y);
    sl_yaml_destroy (&y);
}

Test (sl_yaml, not_yaml_and_no_file)
{
    char *error = NULL;
    cr_expect_null (sl_yaml_parse ("a: [\n", 5, "h.yaml", &error));
    cr_expect_not_null (strstr (error, "h.yaml:2:1: "), "%s", error);
    free (error);
    cr_expect_null (sl_yaml_load ("/nonexistent/k.yaml", 100, &error));
    cr_expect_not_null (strstr (error, "/nonexistent/k.yaml:1:1: cannot open"), "%s", error);
    free (error);
    cr_expect_null (sl_yaml_load ("Makefile", 10, &error));
    cr_expect_not_null (strstr (error, "larger than 10 bytes"), "%s", error);
    free (error);
}
