/*  sl_yaml.c - a YAML file read for a loader (see sl_yaml.h). */
#include "common/base/sl_yaml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"

struct _sl_yaml_t {
    char *name;
    yaml_document_t doc;
    char *error;                        //  the first error noted
};

static char *
s_place (const char *name, size_t line, size_t column, const char *why)
{
    sl_buf_t buf = { 0 };
    sl_buf_printf (&buf, "%s:%zu:%zu: %s", name, line, column, why);
    char *text = sl_xstrdup (sl_buf_cstr (&buf));
    sl_buf_free (&buf);
    return text;
}

sl_yaml_t *
sl_yaml_parse (const char *text, size_t size, const char *name, char **error)
{
    *error = NULL;
    yaml_parser_t parser;
    yaml_parser_initialize (&parser);
    yaml_parser_set_input_string (&parser, (const unsigned char *) text, size);
    sl_yaml_t *self = sl_xcalloc (1, sizeof *self);
    if (!yaml_parser_load (&parser, &self->doc)) {
        *error = s_place (name, parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                          parser.problem ? parser.problem : "malformed YAML");
        yaml_parser_delete (&parser);
        free (self);
        return NULL;
    }
    yaml_parser_delete (&parser);
    self->name = sl_xstrdup (name);
    return self;
}

int
sl_yaml_read (const char *path, size_t max, sl_buf_t *out, char **error)
{
    *error = NULL;
    FILE *f = fopen (path, "rb");
    if (!f) {
        char why [256];
        snprintf (why, sizeof why, "cannot open: %s", strerror (errno));
        *error = s_place (path, 1, 1, why);
        return -1;
    }
    char chunk [8192];
    size_t n;
    while ((n = fread (chunk, 1, sizeof chunk, f)) > 0 && out->len <= max)
        sl_buf_append (out, chunk, n);
    fclose (f);
    if (out->len > max) {
        char why [96];
        snprintf (why, sizeof why, "larger than %zu bytes", max);
        *error = s_place (path, 1, 1, why);
        return -1;
    }
    return 0;
}

sl_yaml_t *
sl_yaml_load (const char *path, size_t max, char **error)
{
    sl_buf_t text = { 0 };
    sl_yaml_t *self = NULL;
    if (sl_yaml_read (path, max, &text, error) == 0)
        self = sl_yaml_parse (text.data ? text.data : "", text.len, path, error);
    sl_buf_free (&text);
    return self;
}

void
sl_yaml_destroy (sl_yaml_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_yaml_t *self = *self_p;
    yaml_document_delete (&self->doc);
    free (self->name);
    free (self->error);
    free (self);
    *self_p = NULL;
}

yaml_node_t *sl_yaml_root (sl_yaml_t *self) { return yaml_document_get_root_node (&self->doc); }
const char *sl_yaml_name (sl_yaml_t *self) { return self->name; }

int
sl_yaml_error (sl_yaml_t *self, yaml_node_t *node, const char *format, ...)
{
    if (self->error)
        return -1;                      //  the first error is the one that counts
    sl_buf_t why = { 0 };
    va_list args;
    va_start (args, format);
    sl_buf_vprintf (&why, format, args);
    va_end (args);
    self->error = s_place (self->name, node ? node->start_mark.line + 1 : 1, node ? node->start_mark.column + 1 : 1,
                           sl_buf_cstr (&why));
    sl_buf_free (&why);
    return -1;
}

char *
sl_yaml_take_error (sl_yaml_t *self)
{
    char *error = self->error;
    self->error = NULL;
    return error;
}

const char *
sl_yaml_scalar (yaml_node_t *node)
{
    return node && node->type == YAML_SCALAR_NODE ? (const char *) node->data.scalar.value : NULL;
}

int
sl_yaml_int (sl_yaml_t *self, yaml_node_t *node, const char *what, int64_t min, int64_t max, int64_t *out)
{
    const char *text = sl_yaml_scalar (node);
    char *end = NULL;
    errno = 0;
    long long v = text && *text ? strtoll (text, &end, 10) : 0;
    if (!text || !*text || *end || errno || v < min || v > max)
        return sl_yaml_error (self, node, "%s must be a whole number from %lld to %lld", what, (long long) min,
                              (long long) max);
    *out = v;
    return 0;
}

int
sl_yaml_number (sl_yaml_t *self, yaml_node_t *node, const char *what, double min, double max, double *out)
{
    const char *text = sl_yaml_scalar (node);
    char *end = NULL;
    double v = text && *text && strpbrk (text, "eEnNiI") == NULL ? strtod (text, &end) : NAN;
    if (!text || !end || *end || isnan (v) || v < min || v > max)
        return sl_yaml_error (self, node, "%s must be a number from %g to %g", what, min, max);
    *out = v;
    return 0;
}

int
sl_yaml_bool (sl_yaml_t *self, yaml_node_t *node, const char *what, bool *out)
{
    const char *text = sl_yaml_scalar (node);
    if (text && strcmp (text, "true") == 0)
        *out = true;
    else
    if (text && strcmp (text, "false") == 0)
        *out = false;
    else
        return sl_yaml_error (self, node, "%s must be true or false", what);
    return 0;
}

int
sl_yaml_mapping (sl_yaml_t *self, yaml_node_t *node, const char *what, sl_yaml_member_fn *fn, void *arg)
{
    if (!node || node->type != YAML_MAPPING_NODE)
        return sl_yaml_error (self, node, "%s must be a mapping", what);
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node (&self->doc, p->key);
        yaml_node_t *v = yaml_document_get_node (&self->doc, p->value);
        const char *key = sl_yaml_scalar (k);
        if (!key)
            return sl_yaml_error (self, k, "keys of %s must be plain names", what);
        int rc = fn (self, key, k, v, arg);
        if (rc)
            return rc;
    }
    return 0;
}

int
sl_yaml_sequence (sl_yaml_t *self, yaml_node_t *node, const char *what, sl_yaml_item_fn *fn, void *arg)
{
    if (!node || node->type != YAML_SEQUENCE_NODE)
        return sl_yaml_error (self, node, "%s must be a list", what);
    size_t index = 0;
    for (yaml_node_item_t *i = node->data.sequence.items.start; i < node->data.sequence.items.top; i++) {
        int rc = fn (self, yaml_document_get_node (&self->doc, *i), index++, arg);
        if (rc)
            return rc;
    }
    return 0;
}

yaml_node_t *
sl_yaml_get (sl_yaml_t *self, yaml_node_t *mapping, const char *key)
{
    if (!mapping || mapping->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = mapping->data.mapping.pairs.start; p < mapping->data.mapping.pairs.top; p++) {
        const char *k = sl_yaml_scalar (yaml_document_get_node (&self->doc, p->key));
        if (k && strcmp (k, key) == 0)
            return yaml_document_get_node (&self->doc, p->value);
    }
    return NULL;
}
