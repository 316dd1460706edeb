/*  sl_argstream.c - incremental JSON writer keyed by JSON path (see .h).

    State: the stack of open containers, each entered through one path
    segment (a member name or an array position), with the count of
    members already written in it, plus whether a string value is open.
    A new value closes the containers its path leaves, opens the ones it
    enters, then writes its member name (or fills array gaps with null)
    and the value.
*/
#include "common/dialects/sl_argstream.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"

typedef struct {
    bool is_index;                      //  [n] rather than a member name
    size_t index;
    size_t key_off, key_len;            //  member name in self->keys
} s_seg_t;

typedef struct {
    bool is_array;
    size_t members;                     //  members / elements written
    s_seg_t entry;                      //  the segment that entered it
    size_t keys_end;                    //  length of keys up to this level
} s_level_t;

struct _sl_argstream_t {
    bool started;                       //  root object opened
    bool string_open;                   //  last value was an unfinished string
    s_level_t levels [SL_ARGSTREAM_MAX_DEPTH + 1];  //  [0] is the root object
    int depth;                          //  open levels below the root
    s_seg_t leaf;                       //  segment of the open string
    sl_buf_t keys;                      //  member names of the open path
    sl_buf_t path_keys;                 //  member names of the path being put
};

sl_argstream_t *
sl_argstream_new (void)
{
    return sl_xcalloc (1, sizeof (sl_argstream_t));
}

void
sl_argstream_destroy (sl_argstream_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_argstream_t *self = *self_p;
    sl_buf_free (&self->keys);
    sl_buf_free (&self->path_keys);
    free (self);
    *self_p = NULL;
}

void
sl_argstream_begin (sl_argstream_t *self)
{
    self->started = false;
    self->string_open = false;
    self->depth = 0;
    sl_buf_reset (&self->keys);
}

bool
sl_argstream_open (sl_argstream_t *self)
{
    return self->started;
}

//  Parse "$.a['b c'][3]" into segments (names copied to self->path_keys).
//  Returns the segment count, or -2.
static int
s_parse_path (sl_argstream_t *self, sl_str_t path, s_seg_t *segs, int max)
{
    sl_buf_reset (&self->path_keys);
    const char *p = path.ptr, *end = path.ptr + path.len;
    if (!p || p == end || *p != '$')
        return -2;
    p++;
    int n = 0;
    while (p < end) {
        if (n == max)
            return -2;
        s_seg_t *s = &segs [n];
        memset (s, 0, sizeof *s);
        if (*p == '.') {
            const char *q = ++p;
            while (q < end && *q != '.' && *q != '[')
                q++;
            if (q == p)
                return -2;
            s->key_off = self->path_keys.len;
            s->key_len = (size_t) (q - p);
            sl_buf_append (&self->path_keys, p, s->key_len);
            p = q;
        }
        else
        if (*p == '[' && p + 1 < end && (p [1] == '\'' || p [1] == '"')) {
            char quote = p [1];
            p += 2;
            s->key_off = self->path_keys.len;
            while (p < end && *p != quote) {
                if (*p == '\\' && p + 1 < end)
                    p++;                //  an escaped quote or backslash
                sl_buf_putc (&self->path_keys, *p++);
            }
            if (p + 1 >= end || p [1] != ']')
                return -2;
            s->key_len = self->path_keys.len - s->key_off;
            p += 2;
        }
        else
        if (*p == '[') {
            p++;
            size_t index = 0;
            const char *digits = p;
            while (p < end && *p >= '0' && *p <= '9' && p - digits < 9)
                index = index * 10 + (size_t) (*p++ - '0');
            if (p == digits || p >= end || *p != ']')
                return -2;
            p++;
            s->is_index = true;
            s->index = index;
        }
        else
            return -2;
        n++;
    }
    return n;
}

static bool
s_seg_eq (sl_argstream_t *self, const s_seg_t *open, const s_seg_t *put)
{
    if (open->is_index != put->is_index)
        return false;
    if (open->is_index)
        return open->index == put->index;
    return open->key_len == put->key_len
        && memcmp (self->keys.data + open->key_off,
                   self->path_keys.data + put->key_off, put->key_len) == 0;
}

//  Whether seg can be written next inside level: a name in an object; in
//  an array a position not before the next free one (gaps become null).
static bool
s_can_enter (const s_level_t *level, const s_seg_t *seg)
{
    if (level->is_array != seg->is_index)
        return false;
    return !level->is_array || seg->index >= level->members;
}

//  Write the member name or array position of seg inside level.
static void
s_enter (sl_argstream_t *self, s_level_t *level, const s_seg_t *seg, sl_buf_t *out)
{
    if (level->is_array) {
        while (level->members < seg->index) {
            sl_buf_puts (out, level->members ? ",null" : "null");
            level->members++;
        }
        if (level->members)
            sl_buf_putc (out, ',');
    }
    else {
        if (level->members)
            sl_buf_putc (out, ',');
        sl_json_put_str (out, self->path_keys.data + seg->key_off, seg->key_len);
        sl_buf_putc (out, ':');
    }
    level->members++;
}

static void
s_close_string (sl_argstream_t *self, sl_buf_t *out)
{
    if (self->string_open) {
        sl_buf_putc (out, '"');
        self->string_open = false;
    }
}

int
sl_argstream_put (sl_argstream_t *self, sl_str_t path, sl_str_t value, bool more, sl_buf_t *out)
{
    s_seg_t segs [SL_ARGSTREAM_MAX_DEPTH + 1];
    int n = s_parse_path (self, path, segs, SL_ARGSTREAM_MAX_DEPTH + 1);
    if (n < 1)
        return -2;
    value = sl_json_trim (value);
    sl_json_type_t type = sl_json_type (value);
    if (type == SL_JSON_BAD || type == SL_JSON_OBJECT || type == SL_JSON_ARRAY)
        return -2;
    bool is_string = type == SL_JSON_STRING;
    if (is_string && (value.len < 2 || value.ptr [value.len - 1] != '"'))
        return -2;
    //  How much of the open path does this value share?
    int common = 0;
    while (common < self->depth && common < n - 1
       &&  s_seg_eq (self, &self->levels [common + 1].entry, &segs [common]))
        common++;
    if (self->string_open && common == self->depth && n - 1 == self->depth
    &&  s_seg_eq (self, &self->leaf, &segs [n - 1])) {
        //  The next piece of the open string (anything else there is wrong).
        if (!is_string)
            return -2;
        sl_buf_append (out, value.ptr + 1, value.len - 2);
        if (!more)
            s_close_string (self, out);
        return 0;
    }
    //  Only the first segment past the shared part enters an existing
    //  container; deeper ones enter containers this value opens. Check it
    //  before changing anything, so a bad value leaves no trace.
    s_level_t root = { .is_array = false, .members = 0 };
    const s_level_t *first = self->started ? &self->levels [common] : &root;
    if (!s_can_enter (first, &segs [common]))
        return -2;
    s_close_string (self, out);
    if (!self->started) {
        sl_buf_putc (out, '{');
        self->started = true;
        self->levels [0] = root;
    }
    while (self->depth > common) {
        sl_buf_putc (out, self->levels [self->depth].is_array ? ']' : '}');
        self->depth--;
    }
    //  The member names of the levels kept stay in keys; drop the rest.
    self->keys.len = self->levels [self->depth].keys_end;
    for (int i = common; i < n; i++) {
        s_enter (self, &self->levels [self->depth], &segs [i], out);
        //  Keep the segment's name for comparing later paths with it.
        s_seg_t kept = segs [i];
        if (!kept.is_index) {
            kept.key_off = self->keys.len;
            sl_buf_append (&self->keys, self->path_keys.data + segs [i].key_off, segs [i].key_len);
        }
        if (i == n - 1) {
            self->leaf = kept;
            break;
        }
        bool next_is_index = segs [i + 1].is_index;
        sl_buf_putc (out, next_is_index ? '[' : '{');
        self->depth++;
        self->levels [self->depth] = (s_level_t) {
            .is_array = next_is_index, .members = 0, .entry = kept, .keys_end = self->keys.len
        };
    }
    if (is_string) {
        sl_buf_append (out, value.ptr, value.len - 1);
        if (more)
            self->string_open = true;
        else
            sl_buf_putc (out, '"');
    }
    else
        sl_buf_append (out, value.ptr, value.len);
    return 0;
}

void
sl_argstream_end (sl_argstream_t *self, sl_buf_t *out)
{
    if (!self->started) {
        sl_buf_puts (out, "{}");
        return;
    }
    s_close_string (self, out);
    while (self->depth > 0) {
        sl_buf_putc (out, self->levels [self->depth].is_array ? ']' : '}');
        self->depth--;
    }
    sl_buf_putc (out, '}');
    sl_argstream_begin (self);
}
