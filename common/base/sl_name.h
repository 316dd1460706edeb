/*  sl_name.h - a name as sluice's files and labels take one: letters,
    digits, '.', '_' and '-' ([A-Za-z0-9._-]+). Key ids and team names in
    the keys file, provider names in the routes file, the path segments of
    a recording's model; and what a team's name is made into to be a
    metric label or a terminal's text (sl_teamlabel.h).
*/
#ifndef SL_NAME_H
#define SL_NAME_H

#include <stdbool.h>

//  May c stand in a name?
static inline bool
sl_name_char (char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
        || c == '.' || c == '_' || c == '-';
}

//  Is s a name (one character at least)?
static inline bool
sl_name_valid (const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if (!sl_name_char (*s))
            return false;
    return true;
}

#endif
