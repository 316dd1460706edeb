/*  sl_console_role.h - who a console caller is, and what they may do.

    Four roles, each allowed what the one before it is, and more:

      viewer     streams, verdicts, usage, tools, the chain's state and
                 the live view, without argument or message contents
                 (pages, API and the live feed: sl_console_role_redact);
      auditor    contents too, captures and "try it", the Pending page
                 in view;
      approver   decides approvals of the teams it names (its teams);
      admin      every team's approvals, policies, keys and settings.

    A caller is a person signed in with the company's provider (OpenID
    Connect, sl_oidc.h: identity from its id_token, the role from a
    configured claim, "groups" by default), a console key (a name and a
    role, SLUICE_CONSOLE_KEYS) or this machine when the console has no
    keys. A role claim's values name roles: "sluice-viewer",
    "sluice-auditor", "sluice-admin" and "sluice-approver:<team>" (one a
    team). A claim that is missing or names no role gives a viewer, never
    more: fail closed.

    Pure: no I/O.
*/
#ifndef SL_CONSOLE_ROLE_H
#define SL_CONSOLE_ROLE_H

#include <jansson.h>
#include <stdbool.h>

#define SL_CONSOLE_TEXT_MAX 128         //  bytes kept of a sub, email, name or team, with the NUL
#define SL_CONSOLE_MAX_TEAMS 8          //  teams an approver decides for
#define SL_CONSOLE_ROLE_PREFIX "sluice-"        //  a role claim's values: sluice-<role>
#define SL_CONSOLE_APPROVER_PREFIX "sluice-approver:"   //  sluice-approver:<team>

typedef enum {
    SL_CONSOLE_NOBODY = -1,             //  not let in
    SL_CONSOLE_VIEWER = 0,
    SL_CONSOLE_AUDITOR,
    SL_CONSOLE_APPROVER,
    SL_CONSOLE_ADMIN,
    SL_CONSOLE_ROLES
} sl_console_role_t;

//  Who asks: a person, a console key or this machine.
typedef struct {
    sl_console_role_t role;
    char sub [SL_CONSOLE_TEXT_MAX];     //  the provider's subject; "key:<name>" for a key, "" for this
                                        //  machine (loopback, no keys: no one in particular)
    char email [SL_CONSOLE_TEXT_MAX];   //  "" when the provider gave none
    char name [SL_CONSOLE_TEXT_MAX];    //  a person's name, or the key's
    char teams [SL_CONSOLE_MAX_TEAMS][SL_CONSOLE_TEXT_MAX];     //  an approver's teams
    int team_count;
} sl_console_caller_t;

//  A role's name ("viewer", ...), "nobody" for SL_CONSOLE_NOBODY.
const char *sl_console_role_name (sl_console_role_t role);
//  The role a name names, or SL_CONSOLE_NOBODY.
sl_console_role_t sl_console_role_parse (const char *name, size_t len);
//  The caller an id_token's claims (payload) describe: sub, email, name,
//  and the role and teams of the claim named claim (a string or a list
//  of strings; the highest role named wins). 0, or -1 without sub.
int sl_console_role_from_claims (json_t *payload, const char *claim, sl_console_caller_t *out);
//  Whether caller may decide approvals of team: an admin, or an approver
//  naming it.
bool sl_console_role_decides_for (const sl_console_caller_t *caller, const char *team);
//  The caller as the audit records name who did something:
//  "name <email> (sub)", the parts it has.
void sl_console_role_label (const sl_console_caller_t *caller, char *out, size_t size);

//  What a viewer is shown of a JSON answer: every member that holds what
//  people and models wrote (content, arguments, last_user, message,
//  text), at any depth, set to null; the rest as it is.
void sl_console_role_redact (json_t *v);

#endif
