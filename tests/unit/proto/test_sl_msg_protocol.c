/*  Unit tests: proto/PROTOCOL.md says what the codec does. The page's
    tables are read and held to the code's: every type in the table of
    types, and under its own heading ("### `hb` (1): ...") the fields its
    table names, "req." marking those it must carry, equal to its
    SL_FIELDS_<TYPE> (proto/sl_msg.h); for delta and block, the fields of
    each kind, together; every field in the table of body fields with its
    wire type and C member. A field added to one and not the other fails
    here, with the type and the field named. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sl_msg.h"

#define S_PAGE "proto/PROTOCOL.md"
#define S_MAX_LINES 4000
#define S_MAX_CELLS 8

typedef struct {
    const char *key;
    const char *wire;                   //  as the page's tables name the type
    const char *member;
} s_field_t;

static const s_field_t s_fields [SL_FIELD_COUNT] = {
#define S_WIRE_U8    "uint"
#define S_WIRE_U32   "uint"
#define S_WIRE_U64   "uint"
#define S_WIRE_I32   "int"
#define S_WIRE_I64   "int"
#define S_WIRE_F64   "float"
#define S_WIRE_STR   "str"
#define S_WIRE_BIN   "bin"
#define S_WIRE_SID   "bin, 16 bytes"
#define S_WIRE_USAGE "map"
#define S_FIELD(key, wire, member, when) [SL_FIELD_##key] = { #key, S_WIRE_##wire, #member },
    SL_MSG_FIELDS (S_FIELD)
#undef S_FIELD
};

static bool
s_envelope (int f)
{
    return f == SL_FIELD_v || f == SL_FIELD_t || f == SL_FIELD_sid || f == SL_FIELD_ep || f == SL_FIELD_seq;
}

static int
s_field (const char *key, size_t len)
{
    for (int f = 0; f < SL_FIELD_COUNT; f++)
        if (strlen (s_fields [f].key) == len && memcmp (s_fields [f].key, key, len) == 0)
            return f;
    return -1;
}

//  --------------------------------------------------------------------------
//  The page, as lines, and its tables as cells

typedef struct {
    char *text;
    char *lines [S_MAX_LINES];
    size_t count;
} s_page_t;

static void
s_page_read (s_page_t *page)
{
    FILE *file = fopen (S_PAGE, "r");
    cr_assert_not_null (file, "%s is read from the repository's root", S_PAGE);
    fseek (file, 0, SEEK_END);
    long size = ftell (file);
    fseek (file, 0, SEEK_SET);
    page->text = calloc (1, (size_t) size + 1);
    cr_assert_eq (fread (page->text, 1, (size_t) size, file), (size_t) size);
    fclose (file);
    page->count = 0;
    for (char *line = strtok (page->text, "\n"); line; line = strtok (NULL, "\n")) {
        cr_assert_lt (page->count, S_MAX_LINES);
        page->lines [page->count++] = line;
    }
}

//  Split a table row into its cells, trimmed; the row is written to.
//  Returns the count, 0 when the line is no row.
static int
s_cells (char *line, char **cells)
{
    if (line [0] != '|')
        return 0;
    int n = 0;
    char *p = line + 1;
    while (*p && n < S_MAX_CELLS) {
        char *end = strchr (p, '|');
        if (!end)
            break;
        *end = 0;
        while (*p == ' ')
            p++;
        char *last = end;
        while (last > p && last [-1] == ' ')
            last--;
        *last = 0;
        cells [n++] = p;
        p = end + 1;
    }
    return n;
}

//  A cell that lists fields and nothing else: "`a`, `b`" (or "—" for
//  none). Each is added to set; false when the cell holds anything else,
//  or a key that is no field.
static bool
s_keys (const char *cell, bool set [SL_FIELD_COUNT], char *bad, size_t bad_size)
{
    if (strcmp (cell, "—") == 0)
        return true;
    const char *p = cell;
    while (*p) {
        const char *end = *p == '`' ? strchr (p + 1, '`') : NULL;
        if (!end) {
            snprintf (bad, bad_size, "not a list of fields: %s", cell);
            return false;
        }
        int f = s_field (p + 1, (size_t) (end - p - 1));
        if (f < 0) {
            snprintf (bad, bad_size, "no such field: %.*s", (int) (end - p - 1), p + 1);
            return false;
        }
        set [f] = true;
        p = end + 1;
        if (strncmp (p, ", ", 2) == 0)
            p += 2;
        else
        if (*p) {
            snprintf (bad, bad_size, "not a list of fields: %s", cell);
            return false;
        }
    }
    return true;
}

//  The lines of the section under a heading that starts with prefix:
//  [*from, *to). False when the page has none, or more than one.
static bool
s_section (const s_page_t *page, const char *prefix, size_t *from, size_t *to)
{
    size_t found = 0;
    for (size_t i = 0; i < page->count; i++)
        if (strncmp (page->lines [i], prefix, strlen (prefix)) == 0) {
            if (found++)
                return false;
            *from = i + 1;
            *to = i + 1;
            while (*to < page->count && page->lines [*to][0] != '#')
                (*to)++;
        }
    return found == 1;
}

//  --------------------------------------------------------------------------
//  A type's section: the fields its table names, and those it marks "req."

static void
s_check_type (s_page_t *page, int type)
{
    const char *name = sl_msg_type_name (type);
    char heading [64];
    snprintf (heading, sizeof heading, "### `%s` (%d)", name, type);
    size_t from, to;
    cr_assert (s_section (page, heading, &from, &to), "%s: one heading \"%s...\"", S_PAGE, heading);

    bool may [SL_FIELD_COUNT] = { false }, must [SL_FIELD_COUNT] = { false };
    char bad [256] = "";
    size_t i = from;
    while (i < to && page->lines [i][0] != '|')
        i++;
    char *cells [S_MAX_CELLS];
    int columns = i < to ? s_cells (page->lines [i], cells) : 0;
    if (columns && strcmp (cells [0], "field") == 0) {
        //  | field | ... |: a row per field or fields; required when each
        //  column after the first says "req." (ctl: request and reply).
        for (i += 2; i < to && page->lines [i][0] == '|'; i++) {
            int n = s_cells (page->lines [i], cells);
            bool row [SL_FIELD_COUNT] = { false };
            cr_expect (s_keys (cells [0], row, bad, sizeof bad), "%s, %s: %s", S_PAGE, name, bad);
            bool required = n > 1;
            for (int c = 1; c < n; c++)
                required = required && strncmp (cells [c], "req.", 4) == 0;
            for (int f = 0; f < SL_FIELD_COUNT; f++)
                if (row [f]) {
                    may [f] = true;
                    must [f] = must [f] || required;
                }
        }
    }
    else
    if (columns && strcmp (cells [0], "`k`") == 0) {
        //  | `k` | fields | notes |: a row per kind, every kind once, in
        //  order; k itself is required.
        const char *(*kind_name) (int) = type == SL_MSG_DELTA ? sl_delta_kind_name : sl_block_event_name;
        int kinds = type == SL_MSG_DELTA ? SL_D_MAX : SL_B_MAX;
        int kind = 1;
        for (i += 2; i < to && page->lines [i][0] == '|'; i++, kind++) {
            cr_assert_geq (s_cells (page->lines [i], cells), 2);
            char expected [64];
            snprintf (expected, sizeof expected, "`%s`", kind_name (kind));
            cr_expect_str_eq (cells [0], expected, "%s, %s: the row of kind %d", S_PAGE, name, kind);
            cr_expect (s_keys (cells [1], may, bad, sizeof bad), "%s, %s %s: %s", S_PAGE, name, cells [0], bad);
        }
        cr_expect_eq (kind, kinds, "%s, %s: a row for every kind", S_PAGE, name);
        may [SL_FIELD_k] = must [SL_FIELD_k] = true;
    }
    else
        cr_expect_eq (columns, 0, "%s, %s: a table of fields, or none", S_PAGE, name);

    //  The envelope is every message's: a table may name it (hb's seq,
    //  ctl's sid), and it says nothing of the type.
    for (int f = 0; f < SL_FIELD_COUNT; f++) {
        if (s_envelope (f))
            continue;
        cr_expect_eq (may [f], sl_msg_carries (type, f), "%s, %s: `%s` %s there, %s in SL_FIELDS of sl_msg.h",
                      S_PAGE, name, s_fields [f].key, may [f] ? "is" : "is not",
                      sl_msg_carries (type, f) ? "but is" : "but not");
        cr_expect_eq (must [f], sl_msg_requires (type, f), "%s, %s: `%s` %s there, %s in SL_FIELDS of sl_msg.h",
                      S_PAGE, name, s_fields [f].key, must [f] ? "is required" : "is not required",
                      sl_msg_requires (type, f) ? "but is" : "but not");
    }
}

Test (protocol, every_type_states_the_fields_of_its_table)
{
    s_page_t page;
    s_page_read (&page);
    for (int type = 1; type < SL_MSG_TYPE_MAX; type++)
        s_check_type (&page, type);
    free (page.text);
}

Test (protocol, the_table_of_types_names_every_type)
{
    s_page_t page;
    s_page_read (&page);
    bool seen [SL_MSG_TYPE_MAX] = { false };
    for (size_t i = 0; i < page.count; i++) {
        char *cells [S_MAX_CELLS];
        if (strncmp (page.lines [i], "| `t` | name |", 14) != 0)
            continue;
        for (i += 2; i < page.count && s_cells (page.lines [i], cells) >= 2; i++) {
            int type = atoi (cells [0]);
            cr_assert (type > 0 && type < SL_MSG_TYPE_MAX, "%s: type %s", S_PAGE, cells [0]);
            char expected [32];
            snprintf (expected, sizeof expected, "`%s`", sl_msg_type_name (type));
            cr_expect_str_eq (cells [1], expected);
            cr_expect (!seen [type], "type %d once", type);
            seen [type] = true;
        }
        break;
    }
    for (int type = 1; type < SL_MSG_TYPE_MAX; type++)
        cr_expect (seen [type], "%s: type %d (%s) in the table of types", S_PAGE, type, sl_msg_type_name (type));
    free (page.text);
}

//  The envelope's table and the body fields' list every field once, with
//  its wire type (and, for the body, the member of sl_msg_t).
Test (protocol, every_field_is_listed_with_its_type)
{
    s_page_t page;
    s_page_read (&page);
    int rows [SL_FIELD_COUNT] = { 0 };
    const char *sections [] = { "## Envelope", "## Body fields" };
    for (size_t s = 0; s < 2; s++) {
        size_t from, to;
        cr_assert (s_section (&page, sections [s], &from, &to), "%s: %s", S_PAGE, sections [s]);
        //  The section's first table; its header and separator first.
        size_t i = from;
        while (i < to && page.lines [i][0] != '|')
            i++;
        for (i += 2; i < to && page.lines [i][0] == '|'; i++) {
            char *cells [S_MAX_CELLS];
            int n = s_cells (page.lines [i], cells);
            cr_assert_geq (n, 3, "%s: %s", S_PAGE, page.lines [i]);
            size_t len = strlen (cells [0]);
            int f = len > 2 && cells [0][0] == '`' && cells [0][len - 1] == '`'
                  ? s_field (cells [0] + 1, len - 2) : -1;
            cr_expect (f >= 0 && (s == 0) == s_envelope (f), "%s, %s: %s is no field of it", S_PAGE,
                       sections [s], cells [0]);
            if (f < 0)
                continue;
            rows [f]++;
            cr_expect_str_eq (cells [1], s_fields [f].wire, "%s: the type of `%s`", S_PAGE, s_fields [f].key);
            if (s == 1) {
                char member [64];
                snprintf (member, sizeof member, "`%s`", s_fields [f].member);
                cr_expect_str_eq (cells [2], member, "%s: the C field of `%s`", S_PAGE, s_fields [f].key);
            }
        }
    }
    for (int f = 0; f < SL_FIELD_COUNT; f++)
        cr_expect_eq (rows [f], 1, "%s: one row for `%s`", S_PAGE, s_fields [f].key);
    free (page.text);
}
