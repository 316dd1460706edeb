/*  sl_policy_match.c - the tests both evaluations run (see
    sl_policy_impl.h).

    A matcher (args, headers, text, size) holds tests on one value: a
    regex, equals, contains, prefix, numeric comparisons, exists, and a
    negation. A tool call's evaluation (sl_policy_call.c) runs them on
    JSON values found by pointer in the call's arguments, a request's
    (sl_policy_request.c) on a part's text and size; both run them on
    request headers and match tool and model names.

    Texts may hold NULs: no NUL ends a match early and hides what follows
    it. A regex's required literal, found once at load time, is looked
    for with memmem before the regex runs at all.
*/
#include "common/policy/sl_policy_impl.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"

#define SL_POLICY_NAME_MAX 256          //  tool and model names matched on the stack
#define S_LITERAL_MIN 3                 //  a regex's required literal worth a memmem first

//  --------------------------------------------------------------------------
//  Regexes

//  The ']' that closes the bracket expression opened at p, or the end of
//  the regex when none does (a ']' first in the brackets is a member, and
//  so is one inside a class, an equivalence class or a collating element:
//  [[:space:]], [[=a=]], [[.-.]]).
static const char *
s_bracket_end (const char *p)
{
    p += p [1] == '^' ? 2 : 1;
    if (*p == ']')
        p++;
    while (*p && *p != ']') {
        if (*p == '[' && (p [1] == ':' || p [1] == '=' || p [1] == '.')) {
            char kind = p [1];
            const char *close = p + 2;
            while (*close && !(close [0] == kind && close [1] == ']'))
                close++;
            if (!*close)
                return close;           //  unclosed: no literal can be trusted
            p = close + 2;
            continue;
        }
        p++;
    }
    return p;
}

//  The longest run of text every match of an extended regex must hold
//  (the regex has no alternation outside brackets; atoms under a
//  quantifier and groups break runs), or NULL when none is S_LITERAL_MIN
//  long: when a text lacks it, the regex cannot match and is not run.
char *
sl_policy_match_literal (const char *re)
{
    int depth = 0;
    for (const char *p = re; *p; p++) {
        if (*p == '\\' && p [1])
            p++;
        else
        if (*p == '[') {
            p = s_bracket_end (p);
            if (!*p)
                return NULL;
        }
        else
        if (*p == '(')
            depth++;
        else
        if (*p == ')')
            depth--;
        else
        if (*p == '|' && depth == 0)
            return NULL;
    }
    sl_buf_t run = { 0 }, best = { 0 };
    for (const char *p = re; *p; ) {
        char literal = 0;
        bool atom = false;
        if (*p == '\\' && p [1] && !isalnum ((unsigned char) p [1])) {
            literal = p [1];
            atom = true;
            p += 2;
        }
        else
        if (*p == '\\' && p [1])
            p += 2;                     //  \w, \b ...: not a literal
        else
        if (*p == '[') {
            p = s_bracket_end (p);
            if (*p)
                p++;
        }
        else
        if (*p == '(') {
            int d = 0;
            do {
                if (*p == '\\' && p [1])
                    p++;
                else
                if (*p == '(')
                    d++;
                else
                if (*p == ')')
                    d--;
                p++;
            } while (*p && d > 0);
        }
        else
        if (strchr (".^$)*+?{", *p)) {
            if (*p == '{')
                while (*p && *p != '}')
                    p++;
            if (*p)
                p++;
        }
        else {
            literal = *p++;
            atom = true;
        }
        bool optional = *p == '*' || *p == '?' || *p == '{';
        if (atom && !optional)
            sl_buf_putc (&run, literal);
        if (!atom || optional || *p == '+' || !*p) {
            if (run.len > best.len) {
                sl_buf_reset (&best);
                sl_buf_append (&best, run.data, run.len);
            }
            sl_buf_reset (&run);
        }
    }
    char *out = best.len >= S_LITERAL_MIN ? sl_xstrndup (best.data, best.len) : NULL;
    sl_buf_free (&run);
    sl_buf_free (&best);
    return out;
}

//  Run a regex over text of a known length (REG_STARTEND: no NUL needed,
//  and a NUL inside does not end it), after the literal every match must
//  hold was found (when the regex has one).
bool
sl_policy_match_regex (const regex_t *re, const char *literal, sl_str_t text)
{
    if (literal && !memmem (text.ptr ? text.ptr : "", text.len, literal, strlen (literal)))
        return false;
    regmatch_t range = { .rm_so = 0, .rm_eo = (regoff_t) text.len };
    return regexec (re, text.ptr ? text.ptr : "", 1, &range, REG_STARTEND) == 0;
}

//  Run a regex over bytes that may hold NUL: a NUL would end the match
//  early and hide what follows it, so NULs are matched as spaces.
static bool
s_regex_bytes (const regex_t *re, const char *s, size_t len)
{
    if (!memchr (s, 0, len))
        return regexec (re, s, 0, NULL, 0) == 0;
    char *copy = sl_xstrndup (s, len);
    for (size_t i = 0; i < len; i++)
        if (!copy [i])
            copy [i] = ' ';
    bool hit = regexec (re, copy, 0, NULL, 0) == 0;
    free (copy);
    return hit;
}

//  --------------------------------------------------------------------------
//  Values

//  The value at a split JSON pointer (borrowed), NULL when it is not there.
static json_t *
s_resolve (json_t *root, char **tokens, int count)
{
    json_t *node = root;
    for (int i = 0; node && i < count; i++) {
        if (json_is_object (node))
            node = json_object_get (node, tokens [i]);
        else
        if (json_is_array (node)) {
            char *end;
            long k = strtol (tokens [i], &end, 10);
            node = (*tokens [i] && !*end && k >= 0) ? json_array_get (node, (size_t) k) : NULL;
        }
        else
            node = NULL;
    }
    return node;
}

static bool
s_equal (json_t *a, json_t *b)
{
    if (json_is_number (a) && json_is_number (b))
        return json_number_value (a) == json_number_value (b);
    return json_equal (a, b);
}

//  Does the value (NULL: not there) pass every test of m?
bool
sl_policy_match_value (const sl_policy_matcher_t *m, json_t *value)
{
    bool hit;
    if (!value)
        hit = m->ops == SL_OP_EXISTS && !m->exists;
    else {
        hit = true;
        bool str = json_is_string (value);
        const char *s = str ? json_string_value (value) : NULL;
        size_t len = str ? json_string_length (value) : 0;
        bool num = json_is_number (value);
        double d = num ? json_number_value (value) : 0;
        if (m->ops & SL_OP_EXISTS)
            hit = hit && m->exists;
        if (hit && (m->ops & SL_OP_REGEX)) {
            if (str)
                hit = s_regex_bytes (&m->regex, s, len);
            else {
                //  Non-strings are matched in their compact JSON form.
                char *text = json_dumps (value, JSON_ENCODE_ANY | JSON_COMPACT);
                hit = text && regexec (&m->regex, text, 0, NULL, 0) == 0;
                free (text);
            }
        }
        if (hit && (m->ops & SL_OP_EQUALS))
            hit = s_equal (value, m->equals);
        if (hit && (m->ops & SL_OP_CONTAINS)) {
            if (str && json_is_string (m->contains))
                hit = json_string_length (m->contains) == 0
                   || memmem (s, len, json_string_value (m->contains), json_string_length (m->contains));
            else
            if (json_is_array (value)) {
                hit = false;
                size_t i;
                json_t *elem;
                json_array_foreach (value, i, elem)
                    if (s_equal (elem, m->contains)) {
                        hit = true;
                        break;
                    }
            }
            else
                hit = false;
        }
        if (hit && (m->ops & SL_OP_PREFIX))
            hit = str && len >= strlen (m->prefix) && memcmp (s, m->prefix, strlen (m->prefix)) == 0;
        if (hit && (m->ops & SL_OP_GT)) hit = num && d > m->gt;
        if (hit && (m->ops & SL_OP_GE)) hit = num && d >= m->ge;
        if (hit && (m->ops & SL_OP_LT)) hit = num && d < m->lt;
        if (hit && (m->ops & SL_OP_LE)) hit = num && d <= m->le;
    }
    return hit != m->negate;
}

bool
sl_policy_match_arg (const sl_policy_matcher_t *m, json_t *args)
{
    return sl_policy_match_value (m, s_resolve (args, m->tokens, m->token_count));
}

//  --------------------------------------------------------------------------
//  Texts, numbers, headers, names

//  Does the text of a request part pass every test of m? (It is a
//  string: numeric tests fail on it.)
bool
sl_policy_match_text (const sl_policy_matcher_t *m, sl_str_t text)
{
    bool hit = true;
    if (m->ops & SL_OP_EXISTS)
        hit = m->exists;
    if (hit && (m->ops & SL_OP_REGEX))
        hit = sl_policy_match_regex (&m->regex, m->literal, text);
    if (hit && (m->ops & SL_OP_EQUALS))
        hit = json_is_string (m->equals) && text.len == json_string_length (m->equals)
           && memcmp (text.ptr ? text.ptr : "", json_string_value (m->equals), text.len) == 0;
    if (hit && (m->ops & SL_OP_CONTAINS))
        hit = json_is_string (m->contains)
           && (json_string_length (m->contains) == 0
               || memmem (text.ptr ? text.ptr : "", text.len, json_string_value (m->contains),
                          json_string_length (m->contains)));
    if (hit && (m->ops & SL_OP_PREFIX))
        hit = text.len >= strlen (m->prefix) && memcmp (text.ptr, m->prefix, strlen (m->prefix)) == 0;
    if (hit && (m->ops & (SL_OP_GT | SL_OP_GE | SL_OP_LT | SL_OP_LE)))
        hit = false;
    return hit != m->negate;
}

//  Numeric tests on a number (a part's size).
bool
sl_policy_match_number (const sl_policy_matcher_t *m, double d)
{
    bool hit = true;
    if (m->ops & SL_OP_GT) hit = hit && d > m->gt;
    if (m->ops & SL_OP_GE) hit = hit && d >= m->ge;
    if (m->ops & SL_OP_LT) hit = hit && d < m->lt;
    if (m->ops & SL_OP_LE) hit = hit && d <= m->le;
    return hit != m->negate;
}

//  Header values are strings; a header the request did not send is absent.
bool
sl_policy_match_header (const sl_policy_matcher_t *m, sl_str_t headers)
{
    sl_str_t raw;
    json_t *value = NULL;
    if (headers.ptr && sl_json_find (headers, m->pointer, &raw) == 1) {
        sl_buf_t text = { 0 };
        if (sl_json_unescape (raw, &text) == 0)
            value = json_stringn (text.data ? text.data : "", text.len);
        sl_buf_free (&text);
    }
    bool hit = sl_policy_match_value (m, value);
    json_decref (value);
    return hit;
}

bool
sl_policy_match_names (const sl_policy_names_t *n, sl_str_t name)
{
    if (!name.ptr)
        return false;
    char stack [SL_POLICY_NAME_MAX];
    char *cname = NULL;
    bool hit = false;
    for (int i = 0; i < n->count && !hit; i++) {
        if (!n->globs [i]) {
            hit = sl_str_eq (name, n->names [i]);
            continue;
        }
        if (!cname) {
            cname = name.len < sizeof stack ? stack : sl_xmalloc (name.len + 1);
            memcpy (cname, name.ptr, name.len);
            cname [name.len] = 0;
        }
        hit = fnmatch (n->names [i], cname, 0) == 0;
    }
    if (cname && cname != stack)
        free (cname);
    return hit;
}
