/*  Unit tests: common/tools/sl_pins (pins files: what they pin, every
    error at its line, a keys file's teams). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/tools/sl_pins.h"

#define S_D1 "1111111111111111111111111111111111111111111111111111111111111111"
#define S_D2 "2222222222222222222222222222222222222222222222222222222222222222"

static sl_pins_t *
s_parse (const char *text, char **error)
{
    return sl_pins_parse (text, strlen (text), "/tmp/pins.yaml", error);
}

static void
s_refused (const char *text, const char *where, const char *why)
{
    char *error = NULL;
    sl_pins_t *pins = s_parse (text, &error);
    cr_expect_null (pins, "refused: %s", text);
    sl_pins_destroy (&pins);
    cr_assert_not_null (error);
    cr_expect (strncmp (error, where, strlen (where)) == 0, "at %s: %s", where, error);
    cr_expect (strstr (error, why) != NULL, "says %s: %s", why, error);
    free (error);
}

Test (sl_pins, states)
{
    char *error = NULL;
    sl_pins_t *pins = s_parse ("teams:\n  payments:\n    mcp__github__create_issue: " S_D1 "\n"
                               "  default:\n    Bash: " S_D2 "\n", &error);
    cr_assert_not_null (pins, "%s", error ? error : "");
    sl_str_t tool = sl_str ("mcp__github__create_issue");
    cr_expect_eq (sl_pins_state (pins, sl_str ("payments"), tool, sl_str (S_D1)), SL_PIN_PINNED);
    cr_expect_eq (sl_pins_state (pins, sl_str ("payments"), tool, sl_str (S_D2)), SL_PIN_CHANGED);
    cr_expect_eq (sl_pins_state (pins, sl_str ("payments"), tool, SL_STR_NULL), SL_PIN_CHANGED,
                  "no definition of a pinned tool is not its pinned one");
    cr_expect_eq (sl_pins_state (pins, sl_str ("search"), tool, sl_str (S_D1)), SL_PIN_UNPINNED, "pins are per team");
    cr_expect_eq (sl_pins_state (pins, SL_STR_NULL, sl_str ("Bash"), sl_str (S_D2)), SL_PIN_PINNED,
                  "a request without a team is the default team's");
    cr_expect_eq (sl_pins_state (NULL, SL_STR_NULL, sl_str ("Bash"), sl_str (S_D2)), SL_PIN_UNPINNED);
    cr_expect_eq (sl_pins_count (pins), 2);
    //  What it writes reads back the same.
    sl_buf_t text = { 0 };
    sl_pins_write (pins, &text);
    sl_pins_t *again = s_parse (sl_buf_cstr (&text), &error);
    cr_assert_not_null (again, "%s\n%s", error ? error : "", sl_buf_cstr (&text));
    cr_expect_str_eq (sl_pins_digest (again, sl_str ("payments"), tool), S_D1);
    sl_buf_free (&text);
    sl_pins_destroy (&again);
    sl_pins_destroy (&pins);
    sl_pins_destroy (&pins);
}

Test (sl_pins, errors_at_their_line)
{
    s_refused ("teams:\n  payments:\n    Bash: 12ab\n", "/tmp/pins.yaml:3:11:", "64 lower-case hex digits");
    s_refused ("teams:\n  payments:\n    Bash: " S_D1 "\n    Bash: " S_D2 "\n", "/tmp/pins.yaml:4:5:",
               "pinned twice");
    s_refused ("teams:\n  a:\n    Bash: " S_D1 "\n  a:\n    Read: " S_D2 "\n", "/tmp/pins.yaml:4:3:", "given twice");
    s_refused ("teams: [a]\n", "/tmp/pins.yaml:1:8:", "mapping");
    s_refused ("team:\n  a: {}\n", "/tmp/pins.yaml:1:1:", "unknown pins field 'team'");
    s_refused ("teams:\n  a:\n    Bash: [x]\n", "/tmp/pins.yaml:3:11:", "digest");
    s_refused ("teams:\n  a:\n    Bash: \"" S_D1 "\n", "/tmp/pins.yaml:", "");
}

Test (sl_pins, teams_of_the_keys_file)
{
    char dir [] = "/tmp/sl_pins_XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    char keys [256], pins [256];
    snprintf (keys, sizeof keys, "%s/keys.yaml", dir);
    snprintf (pins, sizeof pins, "%s/pins.yaml", dir);
    FILE *f = fopen (keys, "w");
    fprintf (f, "version: 1\nkeys:\n  - id: k1\n    sha256: %s\n    team: payments\n", S_D1);
    fclose (f);
    f = fopen (pins, "w");
    fprintf (f, "keys: keys.yaml\nteams:\n  payments:\n    Bash: %s\n  search:\n    Bash: %s\n", S_D1, S_D2);
    fclose (f);
    char *error = NULL;
    sl_pins_t *p = sl_pins_load (pins, &error);
    cr_expect_null (p);
    cr_assert_not_null (error);
    char where [300];
    snprintf (where, sizeof where, "%s:5:3: unknown team 'search'", pins);
    cr_expect (strstr (error, where) == error, "%s", error);
    free (error);
    error = NULL;
    f = fopen (pins, "w");
    fprintf (f, "teams:\n  payments:\n    Bash: %s\nkeys: keys.yaml\n", S_D1);
    fclose (f);
    p = sl_pins_load (pins, &error);
    cr_expect_not_null (p, "%s", error ? error : "");
    if (p) {
        cr_expect_str_eq (sl_pins_keys (p), "keys.yaml");
        cr_expect (strstr (sl_pins_keys_path (p), "/keys.yaml") != NULL);
    }
    sl_pins_destroy (&p);
    free (error);
    unlink (keys);
    unlink (pins);
    rmdir (dir);
}
