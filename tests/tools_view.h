/*  tools_view.h - the judge's view of a request's tools JSON in tests:
    each definition's name and schema only ([{"name":..,"schema":..}],
    compact), so a test of a dialect's parser states what it reads
    without the digests and name parts sl_req_tools_json adds. */
#ifndef TESTS_TOOLS_VIEW_H
#define TESTS_TOOLS_VIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

//  The view of tools (JSON text) as a string the caller frees; NULL when
//  it is not an array.
static inline char *
tools_view (const char *tools)
{
    json_t *all = json_loads (tools, 0, NULL);
    if (!json_is_array (all)) {
        json_decref (all);
        return NULL;
    }
    json_t *view = json_array ();
    size_t i;
    json_t *tool;
    json_array_foreach (all, i, tool) {
        json_t *one = json_object ();
        json_object_set (one, "name", json_object_get (tool, "name"));
        json_object_set (one, "schema", json_object_get (tool, "schema"));
        json_array_append_new (view, one);
    }
    char *text = json_dumps (view, JSON_COMPACT);
    json_decref (view);
    json_decref (all);
    return text;
}

//  True when the view of tools is expected (text compared).
static inline bool
tools_view_is (const char *tools, const char *expected)
{
    char *text = tools_view (tools);
    bool same = text && strcmp (text, expected) == 0;
    free (text);
    return same;
}

#endif
