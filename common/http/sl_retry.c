/*  sl_retry.c - retry timing (see sl_retry.h). */
#include "common/http/sl_retry.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#define S_TEXT_MAX 64                   //  longest Retry-After value read
#define S_DIGITS_MAX 9                  //  longest delay-seconds (about 31 years)
#define S_SPREAD_STEPS 64               //  spread steps, each 1/256 of the wait

long
sl_retry_after (const char *value, size_t len, time_t now)
{
    char text [S_TEXT_MAX];
    while (len && (*value == ' ' || *value == '\t')) {
        value++;
        len--;
    }
    while (len && (value [len - 1] == '\r' || value [len - 1] == '\n' || value [len - 1] == ' '))
        len--;
    if (len == 0 || len >= sizeof text)
        return -1;
    memcpy (text, value, len);
    text [len] = 0;
    if (strspn (text, "0123456789") == len)
        return len > S_DIGITS_MAX ? -1 : atol (text);
    time_t when = curl_getdate (text, NULL);
    if (when < 0)
        return -1;
    return when > now ? (long) (when - now) : 0;
}

long
sl_retry_backoff_ms (long base_ms, long max_ms, int attempt, long retry_after_s, unsigned char spread)
{
    if (retry_after_s >= 0)
        return retry_after_s * 1000 > max_ms ? -1 : retry_after_s * 1000;
    long wait = base_ms;
    for (int i = 0; i < attempt && wait < max_ms; i++)
        wait *= 2;
    wait += wait * (spread % S_SPREAD_STEPS) / 256;
    return wait < max_ms ? wait : max_ms;
}
