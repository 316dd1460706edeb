/*  Unit tests: common/base/sl_log (one JSON object per line on stderr:
    time, level, process, event, message; levels below the one set are
    not printed). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/base/sl_log.h"

//  What the logging calls in fn wrote to stderr (fd 2), caught in a file.
static void
s_capture (void (*fn) (void), char *out, size_t size)
{
    FILE *f = tmpfile ();
    cr_assert_not_null (f);
    fflush (stderr);
    int saved = dup (STDERR_FILENO);
    cr_assert_geq (saved, 0);
    dup2 (fileno (f), STDERR_FILENO);
    fn ();
    dup2 (saved, STDERR_FILENO);
    close (saved);
    rewind (f);
    size_t n = fread (out, 1, size - 1, f);
    out [n] = 0;
    fclose (f);
}

static void
s_lines (void)
{
    sl_log_init ("ingest-with-a-very-long-process-name", SL_LOG_WARN);
    sl_log_info ("not_printed", "below the level");
    sl_log_warn ("upstream_error", "status=%d body=\"%s\"", 429, "slow\ndown");
    sl_log_error ("no_message", "%s", "");
}

Test (sl_log, each_line_is_one_json_object_with_its_fields)
{
    char text [4096];
    s_capture (s_lines, text, sizeof text);
    char *second = strchr (text, '\n');
    cr_assert_not_null (second, "%s", text);
    *second++ = 0;
    json_error_t error;
    json_t *line = json_loads (text, 0, &error);
    cr_assert_not_null (line, "%s: %s", error.text, text);
    cr_expect_str_eq (json_string_value (json_object_get (line, "level")), "warn");
    cr_expect_str_eq (json_string_value (json_object_get (line, "event")), "upstream_error");
    cr_expect_str_eq (json_string_value (json_object_get (line, "msg")), "status=429 body=\"slow\ndown\"",
                      "the message escaped into one line");
    const char *proc = json_string_value (json_object_get (line, "proc"));
    cr_expect_eq (strncmp (proc, "ingest-with-a-very-long-process", strlen (proc)), 0, "%s: the name, cut", proc);
    const char *ts = json_string_value (json_object_get (line, "ts"));
    cr_expect_eq (strlen (ts), strlen ("2026-11-22T10:00:00.123Z"), "%s", ts);
    cr_expect_eq (ts [strlen (ts) - 1], 'Z');
    json_decref (line);
    line = json_loads (second, JSON_DISABLE_EOF_CHECK, &error);
    cr_assert_not_null (line, "%s", second);
    cr_expect_str_eq (json_string_value (json_object_get (line, "level")), "error");
    cr_expect_null (json_object_get (line, "msg"), "no message: no member");
    json_decref (line);
    cr_expect_null (strstr (text, "not_printed"));
    cr_expect_null (strstr (second, "not_printed"));
}

Test (sl_log, levels_parse_and_gate)
{
    cr_expect_eq (sl_log_level_parse ("DEBUG"), SL_LOG_DEBUG);
    cr_expect_eq (sl_log_level_parse ("warn"), SL_LOG_WARN);
    cr_expect_eq (sl_log_level_parse ("error"), SL_LOG_ERROR);
    cr_expect_eq (sl_log_level_parse ("loud"), SL_LOG_INFO, "an unknown name: info");
    cr_expect_eq (sl_log_level_parse (NULL), SL_LOG_INFO);
    sl_log_init ("t", SL_LOG_ERROR);
    cr_expect_not (sl_log_enabled (SL_LOG_WARN));
    cr_expect (sl_log_enabled (SL_LOG_ERROR));
    sl_log_init ("t", SL_LOG_DEBUG);
    cr_expect (sl_log_enabled (SL_LOG_DEBUG));
}
