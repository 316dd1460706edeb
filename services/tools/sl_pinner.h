/*  sl_pinner.h - the pins sluice-tools pin writes, from the definitions
    a team's agents sent.

    Two sources, one result (sl_pins.h):
      - a request body of a dialect (the gateway's parser reads it): every
        named tool it defines, its digest computed as the gateway does
        (sl_tooldef_digest_tool);
      - a list of definitions as the inventory gives them (GET /api/tools
        of sluice-audit, or a file of the same JSON):
            [{"team": "payments", "name": "mcp__github__create_issue",
              "server": "github", "digest": "<64 hex>",
              "description": "...", "schema": {...}}, ...]
        entries of other teams are skipped; with a description or a schema
        the digest is computed and must be the one given (when given);
        without either, the digest given is pinned. A tool seen with
        several definitions is pinned at the last one listed (the
        inventory lists a tool's definitions oldest first).
*/
#ifndef SL_PINNER_H
#define SL_PINNER_H

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"
#include "common/tools/sl_pins.h"

//  Pin every tool the request body (of dialect, sl_dialect_id_t) defines
//  for team. The number pinned, or -1 with why.
int sl_pinner_request (sl_pins_t *pins, const char *team, int dialect, sl_str_t body, sl_buf_t *why);
//  Pin the team's entries of a definitions list. The number pinned, or
//  -1 with why.
int sl_pinner_list (sl_pins_t *pins, const char *team, sl_str_t list, sl_buf_t *why);

#endif
