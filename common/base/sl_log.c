/*  sl_log.c - JSON-lines logging (see sl_log.h). */
#include "common/base/sl_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"

static char s_proc [32] = "sluice";
static sl_log_level_t s_level = SL_LOG_INFO;
static const char *s_level_names [] = { "debug", "info", "warn", "error" };
_Static_assert (sizeof s_level_names / sizeof s_level_names [0] == SL_LOG_ERROR + 1, "a name for every level");

void
sl_log_init (const char *proc, sl_log_level_t level)
{
    snprintf (s_proc, sizeof s_proc, "%s", proc);
    s_level = level;
}

sl_log_level_t
sl_log_level_parse (const char *name)
{
    for (int i = 0; name && i < 4; i++)
        if (strcasecmp (name, s_level_names [i]) == 0)
            return (sl_log_level_t) i;
    return SL_LOG_INFO;
}

bool
sl_log_enabled (sl_log_level_t level)
{
    return level >= s_level;
}

void
sl_log (sl_log_level_t level, const char *event, const char *format, ...)
{
    if (level < s_level)
        return;
    struct timespec ts;
    clock_gettime (CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r (&ts.tv_sec, &tm);
    char stamp [40];
    strftime (stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);

    sl_buf_t msg = { 0 };
    va_list args;
    va_start (args, format);
    sl_buf_vprintf (&msg, format, args);
    va_end (args);

    sl_buf_t line = { 0 };
    sl_buf_printf (&line, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"proc\":",
                   stamp, ts.tv_nsec / 1000000, s_level_names [level]);
    sl_json_put_str (&line, s_proc, strlen (s_proc));
    sl_buf_puts (&line, ",\"event\":");
    sl_json_put_str (&line, event, strlen (event));
    if (msg.len) {
        sl_buf_puts (&line, ",\"msg\":");
        sl_json_put_str (&line, msg.data, msg.len);
    }
    sl_buf_puts (&line, "}\n");
    //  One write per line so lines from concurrent processes do not mix.
    ssize_t rc = write (STDERR_FILENO, line.data, line.len);
    (void) rc;
    sl_buf_free (&msg);
    sl_buf_free (&line);
}
