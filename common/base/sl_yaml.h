/*  sl_yaml.h - a YAML file read for a loader: nodes, and errors that name
    the file, line and column.

    The files sluice reads (keys, routes, pins, policies) are each loaded
    by a loader that walks the document (libyaml's document API) and turns
    it into a model, refusing what it does not know. This class is the
    walk they share: load (a size bound, a parse error with its place),
    scalars, integers in a range, mappings member by member, sequences
    item by item, and the first error, "file:line:col: why", kept for the
    caller. Nodes are libyaml's and live as long as the document.
*/
#ifndef SL_YAML_H
#define SL_YAML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "common/base/sl_buf.h"

typedef struct _sl_yaml_t sl_yaml_t;

//  Parse text (name: the file's name, for errors). NULL when it is not
//  YAML, with *error ("name:line:col: why", caller frees).
sl_yaml_t *sl_yaml_parse (const char *text, size_t size, const char *name, char **error);
//  Read a file of at most max bytes into out. 0, or -1 with *error when
//  it cannot be read or is larger.
int sl_yaml_read (const char *path, size_t max, sl_buf_t *out, char **error);
//  Read and parse a file of at most max bytes; NULL with *error when it
//  cannot be read, is larger, or is not YAML.
sl_yaml_t *sl_yaml_load (const char *path, size_t max, char **error);
void sl_yaml_destroy (sl_yaml_t **self_p);

//  The root node, NULL for an empty document.
yaml_node_t *sl_yaml_root (sl_yaml_t *self);
//  The file's name as given.
const char *sl_yaml_name (sl_yaml_t *self);

//  Note an error at node (NULL: the file's start); the first one is kept.
//  Returns -1.
int sl_yaml_error (sl_yaml_t *self, yaml_node_t *node, const char *format, ...)
    __attribute__ ((format (printf, 3, 4)));
//  The first error noted, handed to the caller (who frees it), or NULL.
char *sl_yaml_take_error (sl_yaml_t *self);

//  A scalar's text, or NULL for any other node.
const char *sl_yaml_scalar (yaml_node_t *node);
//  A scalar that is a whole decimal integer in [min, max]. 0, or -1 with
//  the error noted (what names the field).
int sl_yaml_int (sl_yaml_t *self, yaml_node_t *node, const char *what, int64_t min, int64_t max, int64_t *out);
//  A scalar that is a decimal number (no exponent) in [min, max].
int sl_yaml_number (sl_yaml_t *self, yaml_node_t *node, const char *what, double min, double max, double *out);
//  A scalar true or false.
int sl_yaml_bool (sl_yaml_t *self, yaml_node_t *node, const char *what, bool *out);

//  Every member of a mapping: fn gets the key (a scalar), its node and the
//  value; a non-zero return stops the walk and is returned. A node that is
//  not a mapping, or a key that is not a scalar, is an error.
typedef int (sl_yaml_member_fn) (sl_yaml_t *self, const char *key, yaml_node_t *knode, yaml_node_t *value,
                                 void *arg);
int sl_yaml_mapping (sl_yaml_t *self, yaml_node_t *node, const char *what, sl_yaml_member_fn *fn, void *arg);
//  Every item of a sequence, the same way.
typedef int (sl_yaml_item_fn) (sl_yaml_t *self, yaml_node_t *item, size_t index, void *arg);
int sl_yaml_sequence (sl_yaml_t *self, yaml_node_t *node, const char *what, sl_yaml_item_fn *fn, void *arg);
//  The value of a key in a mapping node, or NULL.
yaml_node_t *sl_yaml_get (sl_yaml_t *self, yaml_node_t *mapping, const char *key);

#endif
