/*  sl_policy_yaml.c - reading a policy's YAML (see sl_policy_impl.h).

    libyaml loads the document as a node tree in which every node keeps
    its position, so each error the loader records points at the line and
    column of the value it is about. Values the policy compares with
    (equals, contains, set) become JSON with YAML's own typing: a plain 5
    is a number, a quoted "5" a string, a plain true a boolean.
*/
#include "common/policy/sl_policy_impl.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

void
sl_policy_yaml_error (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *format, ...)
{
    if (*ctx->error)
        return;                         //  keep the first error
    sl_buf_t buf = { 0 };
    sl_buf_printf (&buf, "%s:%zu:%zu: ", ctx->name,
                   node ? node->start_mark.line + 1 : 1,
                   node ? node->start_mark.column + 1 : 1);
    va_list args;
    va_start (args, format);
    sl_buf_vprintf (&buf, format, args);
    va_end (args);
    *ctx->error = sl_xstrdup (sl_buf_cstr (&buf));
    sl_buf_free (&buf);
}

const char *
sl_policy_yaml_scalar (yaml_node_t *node)
{
    return node && node->type == YAML_SCALAR_NODE ? (const char *) node->data.scalar.value : NULL;
}

static bool
s_plain (yaml_node_t *node)
{
    return node && node->type == YAML_SCALAR_NODE && node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

yaml_node_t *
sl_policy_yaml_node (sl_policy_yaml_t *ctx, int index)
{
    return yaml_document_get_node (ctx->doc, index);
}

//  A YAML value as JSON, at most SL_POLICY_YAML_MAX_DEPTH deep.
static json_t *
s_to_json (sl_policy_yaml_t *ctx, yaml_node_t *node, int depth)
{
    if (!node || depth > SL_POLICY_YAML_MAX_DEPTH) {
        sl_policy_yaml_error (ctx, node, "value nested too deeply");
        return NULL;
    }
    if (node->type == YAML_SCALAR_NODE) {
        const char *v = sl_policy_yaml_scalar (node);
        if (!s_plain (node))
            return json_string (v);
        if (!*v || strcmp (v, "null") == 0 || strcmp (v, "~") == 0)
            return json_null ();
        if (strcmp (v, "true") == 0)
            return json_true ();
        if (strcmp (v, "false") == 0)
            return json_false ();
        char *end;
        errno = 0;
        long long i = strtoll (v, &end, 10);
        if (*end == 0 && errno == 0)
            return json_integer (i);
        double d = strtod (v, &end);
        if (*end == 0 && isfinite (d))
            return json_real (d);
        return json_string (v);
    }
    if (node->type == YAML_SEQUENCE_NODE) {
        json_t *array = json_array ();
        for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
            json_t *elem = s_to_json (ctx, sl_policy_yaml_node (ctx, *it), depth + 1);
            if (!elem) {
                json_decref (array);
                return NULL;
            }
            json_array_append_new (array, elem);
        }
        return array;
    }
    json_t *object = json_object ();
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        const char *key = sl_policy_yaml_scalar (sl_policy_yaml_node (ctx, p->key));
        json_t *value = key ? s_to_json (ctx, sl_policy_yaml_node (ctx, p->value), depth + 1) : NULL;
        if (!key)
            sl_policy_yaml_error (ctx, sl_policy_yaml_node (ctx, p->key), "mapping keys must be strings");
        if (!value) {
            json_decref (object);
            return NULL;
        }
        json_object_set_new (object, key, value);
    }
    return object;
}

json_t *
sl_policy_yaml_json (sl_policy_yaml_t *ctx, yaml_node_t *node)
{
    return s_to_json (ctx, node, 0);
}

int
sl_policy_yaml_bool (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *what, bool *out)
{
    const char *v = s_plain (node) ? sl_policy_yaml_scalar (node) : NULL;
    if (v && strcmp (v, "true") == 0)
        *out = true;
    else
    if (v && strcmp (v, "false") == 0)
        *out = false;
    else {
        sl_policy_yaml_error (ctx, node, "%s must be true or false", what);
        return -1;
    }
    return 0;
}

int
sl_policy_yaml_number (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *what, double *out)
{
    const char *v = s_plain (node) ? sl_policy_yaml_scalar (node) : NULL;
    char *end = NULL;
    double d = v && *v ? strtod (v, &end) : NAN;
    if (!v || !*v || *end || !isfinite (d)) {
        sl_policy_yaml_error (ctx, node, "%s must be a number", what);
        return -1;
    }
    *out = d;
    return 0;
}

int
sl_policy_yaml_int (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *what, long min, long max,
                    long *out)
{
    double d;
    if (sl_policy_yaml_number (ctx, node, what, &d))
        return -1;
    if (d != floor (d) || d < (double) min || d > (double) max) {
        sl_policy_yaml_error (ctx, node, "%s must be a whole number from %ld to %ld", what, min, max);
        return -1;
    }
    *out = (long) d;
    return 0;
}

int
sl_policy_yaml_string (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *what, char **out)
{
    const char *v = sl_policy_yaml_scalar (node);
    if (!v) {
        sl_policy_yaml_error (ctx, node, "%s must be a string", what);
        return -1;
    }
    free (*out);
    *out = sl_xstrdup (v);
    return 0;
}

int
sl_policy_yaml_mapping (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *not_mapping,
                        sl_policy_yaml_pair_fn *fn, void *arg)
{
    if (node->type != YAML_MAPPING_NODE) {
        sl_policy_yaml_error (ctx, node, "%s", not_mapping);
        return -1;
    }
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = sl_policy_yaml_node (ctx, p->key);
        const char *key = sl_policy_yaml_scalar (k);
        if (!key) {
            sl_policy_yaml_error (ctx, k, "keys must be strings");
            return -1;
        }
        if (fn (ctx, k, sl_policy_yaml_node (ctx, p->value), key, arg))
            return -1;
    }
    return 0;
}
