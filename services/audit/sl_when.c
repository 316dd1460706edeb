/*  sl_when.c - parsing export times (see sl_when.h). */
#include "services/audit/sl_when.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int
sl_when_parse (const char *text, int64_t now_ms, int64_t *out)
{
    if (!text || !*text)
        return -1;
    const char *p = text [0] == '-' ? text + 1 : text;
    char *end;
    long long n = strtoll (p, &end, 10);
    if (end != p && n >= 0) {
        int64_t unit = 0;
        if (strcmp (end, "s") == 0)
            unit = 1000;
        else
        if (strcmp (end, "m") == 0)
            unit = 60 * 1000;
        else
        if (strcmp (end, "h") == 0)
            unit = 3600 * 1000;
        else
        if (strcmp (end, "d") == 0)
            unit = 24 * 3600 * 1000LL;
        if (unit) {
            *out = now_ms - (int64_t) n * unit;
            return 0;
        }
        if (*end == 0 && text [0] != '-' && end - p > 4) {
            *out = (int64_t) n * 1000;  //  Unix seconds
            return 0;
        }
    }
    struct tm tm;
    memset (&tm, 0, sizeof tm);
    int y, mo, d, h = 0, mi = 0, s = 0;
    char tail [8] = "";
    int got = sscanf (text, "%4d-%2d-%2dT%2d:%2d:%2d%7s", &y, &mo, &d, &h, &mi, &s, tail);
    if (got == 3 && strlen (text) == 10)
        ;                               //  a date: its midnight, UTC
    else
    if (got == 7 && strcmp (tail, "Z") == 0)
        ;
    else
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
        return -1;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    *out = (int64_t) timegm (&tm) * 1000;
    return 0;
}

int
sl_when_duration (const char *text, int64_t *out)
{
    if (!text || !*text)
        return -1;
    char *end;
    long long n = strtoll (text, &end, 10);
    if (end == text || n < 0)
        return -1;
    int64_t unit;
    if (strcmp (end, "ms") == 0)
        unit = 1;
    else
    if (strcmp (end, "s") == 0)
        unit = 1000;
    else
    if (strcmp (end, "m") == 0)
        unit = 60 * 1000;
    else
    if (strcmp (end, "h") == 0)
        unit = 3600 * 1000;
    else
    if (strcmp (end, "d") == 0)
        unit = 24 * 3600 * 1000LL;
    else
    if (*end == 0 && n == 0)
        unit = 0;
    else
        return -1;
    *out = (int64_t) n * unit;
    return 0;
}
