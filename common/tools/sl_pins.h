/*  sl_pins.h - pinned tool definitions: the digest each tool's definition
    must have, per team.

    A pins file sits next to the policy that names it (pins: pins.yaml)
    and is written by sluice-tools pin from what a team's agents sent, or
    by hand:

        keys: ../keys.yaml              # optional: its teams are the only ones
        teams:
          payments:
            mcp__github__create_issue: 3f1c...64 hex digits
            Bash: 9a0b...

    Tools are named as the clients write them (sl_tooldef.h), digests are
    sl_tooldef_digest's. A file that names a keys file may only pin teams
    that keys file names. Every error is "file:line:col: why": a team the
    keys file does not name, a digest that is not 64 hex digits, a team or
    a tool given twice, an unknown field.

    What a definition seen in a request is against its pin:
      PINNED     its digest is the pinned one;
      CHANGED    the tool is pinned for the team and its digest is another
                 (or the request has no definition of it);
      UNPINNED   the team has no pin for the tool.
*/
#ifndef SL_PINS_H
#define SL_PINS_H

#include <stdbool.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

typedef struct _sl_pins_t sl_pins_t;

typedef enum {
    SL_PIN_PINNED = 0,
    SL_PIN_CHANGED,
    SL_PIN_UNPINNED,
    SL_PIN_MAX
} sl_pin_state_t;

#define SL_PINS_MAX_FILE (16u << 20)    //  bytes of a pins file
#define SL_PINS_DEFAULT_TEAM "default"  //  the team of a request without one

//  An empty set of pins (to fill with sl_pins_add and write).
sl_pins_t *sl_pins_new (void);
//  Parse a pins file's text; name is the file's name (for errors; a keys
//  file is taken from its directory). NULL with *error (caller frees).
sl_pins_t *sl_pins_parse (const char *text, size_t size, const char *name, char **error);
//  Load a pins file. NULL with *error.
sl_pins_t *sl_pins_load (const char *path, char **error);
void sl_pins_destroy (sl_pins_t **self_p);

//  Pin name's digest for team (replacing a pin it had). 0, or -1 for a
//  digest that is not 64 hex digits.
int sl_pins_add (sl_pins_t *self, const char *team, const char *name, const char *digest);
//  Forget every pin of team.
void sl_pins_drop_team (sl_pins_t *self, const char *team);
//  The keys file the pins name (as written), NULL for none. Borrowed.
const char *sl_pins_keys (sl_pins_t *self);
void sl_pins_set_keys (sl_pins_t *self, const char *keys);
//  The keys file's path as read (relative to the pins file), NULL for none.
const char *sl_pins_keys_path (sl_pins_t *self);
//  The digest pinned for team's tool (team absent: the default team),
//  NULL when there is none. Borrowed.
const char *sl_pins_digest (const sl_pins_t *self, sl_str_t team, sl_str_t name);
//  What a seen definition (digest absent: the request has none) is
//  against its pin.
sl_pin_state_t sl_pins_state (const sl_pins_t *self, sl_str_t team, sl_str_t name, sl_str_t digest);
const char *sl_pin_state_name (sl_pin_state_t state);
//  "changed" ... to a state; -1 for no such name.
int sl_pin_state_parse (const char *name);
//  Write the pins as a pins file (teams and tools sorted).
void sl_pins_write (const sl_pins_t *self, sl_buf_t *out);
//  Teams and pins held.
size_t sl_pins_count (const sl_pins_t *self);

#endif
