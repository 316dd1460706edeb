/*  sl_log.h - one JSON object per line on stderr.

    Every line carries the time, level, process name and an event name, so a
    log shipper can index them without parsing prose:
        {"ts":"2026-11-22T10:00:00.123Z","level":"info","proc":"ingest",
         "event":"upstream_error","msg":"status=429 ..."}
    Secrets (API keys, Authorization headers) are never passed to the log;
    callers log stream ids and names, not request headers.
*/
#ifndef SL_LOG_H
#define SL_LOG_H

#include <stdbool.h>

typedef enum {
    SL_LOG_DEBUG = 0,
    SL_LOG_INFO,
    SL_LOG_WARN,
    SL_LOG_ERROR
} sl_log_level_t;

//  Name the process (copied) and set the lowest level printed.
void sl_log_init (const char *proc, sl_log_level_t level);
//  Parse "debug" / "info" / "warn" / "error"; returns SL_LOG_INFO otherwise.
sl_log_level_t sl_log_level_parse (const char *name);
//  True when lines of this level are printed (to skip costly formatting).
bool sl_log_enabled (sl_log_level_t level);
void sl_log (sl_log_level_t level, const char *event, const char *format, ...)
    __attribute__ ((format (printf, 3, 4)));

#define sl_log_debug(event, ...) sl_log (SL_LOG_DEBUG, event, __VA_ARGS__)
#define sl_log_info(event, ...)  sl_log (SL_LOG_INFO, event, __VA_ARGS__)
#define sl_log_warn(event, ...)  sl_log (SL_LOG_WARN, event, __VA_ARGS__)
#define sl_log_error(event, ...) sl_log (SL_LOG_ERROR, event, __VA_ARGS__)

#endif
