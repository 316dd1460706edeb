/*  sl_keystore.h - client keys issued through the console, in the audit's
    store (SQLite or PostgreSQL, migration 010_keys.sql).

    The console's keys API (sl_console_keys.h) creates, lists, rotates and
    revokes keys here; the gateways read the keys in force from here
    (sl_keystore_served, through the audit's authenticated endpoint) and
    merge them with their keys file (common/identity/sl_keyring.h).

    A key is what `sluice-keys new` makes ("sk-sluice-" and 43 base64url
    characters, sl_keyentry.h), its id "<team>-<12 hex digits of its
    SHA-256>" likewise. The store keeps its SHA-256 only: the key is in
    the answer of the create or rotate that made it, and nowhere else.

    What a key is given is the keys file's (docs/identity.md), as JSON:

        {"team": "payments",                  required, a name ([A-Za-z0-9._-])
         "user": "alice",                     required, text (no control characters)
         "models": ["gpt-4o*"],               globs; absent: the team's
         "limits": {"rpm":60,"concurrent":5,"tokens_per_day":200000,
                    "budget":{"tokens":N,"usd":X}},     absent: none of its own
         "approver": true}                    default false

    An unknown member (anywhere), a wrong type, a negative limit, a bad
    glob or name is refused with the reason (sl_keyspec_parse).

    Rotation gives the key a new secret under the same id; the secret it
    replaces stays good for a grace period (SL_KEYSTORE_GRACE_MS unless
    asked otherwise, at most SL_KEYSTORE_GRACE_MAX_MS), so clients can
    move over without an outage; rotating again ends the older grace.
    Revocation is at once and for good: the key, and a secret in its grace,
    is served to no gateway after.

    Every change is a row of key_events (create, rotate, revoke: when,
    which key, who asked, and what: a create's team, user, models, limits
    and approver flag; a rotation's grace; never the key or its hash), in
    the same transaction as the change, and an entry of the audit's hash
    chain (sl_chain.h: kind "key", its ref the row's pos, the row's
    columns hashed), written before that transaction commits: verify
    names a key event changed, removed or inserted like any other record
    (sl_verify.h). The entry's data is the key's grant: its api_keys row
    as the change left it (SL_KEYSTORE_GRANT_COLUMNS: its SHA-256, team,
    user, models, limits, approver flag, the secret in its grace and
    when that ends, its revocation). The chain is the recorder's
    (borrowed; it must have no entry pending, the change is refused
    otherwise); NULL writes no entry (a store without a chain writer:
    tests of the keys alone; such keys are not served).

    A key's row must give the grant its newest key event's entry carries
    (sl_keystore_check): a row edited (its hash swapped for another, its
    models, team...), one no entry carries (inserted), one whose events
    are chained but the row is gone (deleted), each is named with the
    first column that differs. verify reports it (sl_verify_rows), and
    sl_keystore_served leaves such a row out of the set it serves (its key
    gets in nowhere, whoever holds it) and serves the others, so a
    revocation still reaches the gateways while the chain is broken.

    Keys issued before grants were chained (migration 012, table
    key_reseal) are resealed once (sl_keystore_reseal): a key event
    "reseal" whose entry carries the row, when the row still gives what
    its chained create and revoke say; one that does not is left out,
    and then served to no gateway. The audit reseals at its start, and
    the console when a set waits for a reseal (its store down at start).
*/
#ifndef SL_KEYSTORE_H
#define SL_KEYSTORE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"
#include "services/audit/store/sl_store.h"

typedef struct _sl_chain_t sl_chain_t;  //  services/audit/recorder/sl_chain.h

#define SL_KEYSTORE_WHY_MAX 160
#define SL_KEYSTORE_TEXT_MAX 128        //  a team or user name, bytes
#define SL_KEYSTORE_ID_MAX (SL_KEYSTORE_TEXT_MAX + 16)
#define SL_KEYSTORE_KEY_MAX 64          //  a key's text with its NUL (SL_KEYRING_KEY_MAX)
#define SL_KEYSTORE_GLOBS_MAX 64        //  model globs of one key
#define SL_KEYSTORE_GRACE_MS (24 * 3600 * 1000LL)
#define SL_KEYSTORE_GRACE_MAX_MS (30 * 24 * 3600 * 1000LL)
#define SL_KEYSTORE_EVENTS_MAX 500      //  key events one list gives at most

//  A key's settings, as parsed from the API (owned; sl_keyspec_clear).
typedef struct {
    char *team;
    char *user;
    char *models;                       //  canonical JSON array, NULL: the team's
    char *limits;                       //  canonical JSON object, NULL: none
    bool approver;
} sl_keyspec_t;

//  What a create or rotate hands out once.
typedef struct {
    char id [SL_KEYSTORE_ID_MAX];
    char key [SL_KEYSTORE_KEY_MAX];
} sl_keystore_issued_t;

//  What sl_keystore_check found wrong with a key's row.
typedef struct {
    const char *kind;                   //  "changed", "inserted", "removed"
    char id [SL_KEYSTORE_ID_MAX];       //  the key's id
    char column [16];                   //  the first column that differs from the chain, "" none
    int64_t pos;                        //  the chain entry compared with (0: none)
    char detail [320];                  //  one sentence
    bool unsealed;                      //  the row waits for its reseal (sl_keystore_reseal), nothing more
} sl_keystore_problem_t;

//  Parse and check a create request's body. 0 ok; -1 with the reason.
int sl_keyspec_parse (sl_str_t body, sl_keyspec_t *out, char why [SL_KEYSTORE_WHY_MAX]);
void sl_keyspec_clear (sl_keyspec_t *self);
//  Parse a rotate request's body ({"grace_seconds": N}, or empty): the
//  grace in ms. 0 ok; -1 with the reason.
int sl_keystore_parse_rotate (sl_str_t body, int64_t *grace_ms, char why [SL_KEYSTORE_WHY_MAX]);

//  Issue a key for spec at now (ms), asked by `by`. 0 ok, -1 store failed.
int sl_keystore_create (sl_store_t *store, sl_chain_t *chain, const sl_keyspec_t *spec, const char *by,
                        int64_t now, sl_keystore_issued_t *out);
//  A new secret for key id, the old one good until now + grace_ms.
//  0 ok, 1 no such key (or revoked), -1 store failed.
int sl_keystore_rotate (sl_store_t *store, sl_chain_t *chain, const char *id, int64_t grace_ms, const char *by,
                        int64_t now, sl_keystore_issued_t *out);
//  Revoke key id at now. 0 ok, 1 no such key (or revoked already), -1 store failed.
int sl_keystore_revoke (sl_store_t *store, sl_chain_t *chain, const char *id, const char *by, int64_t now);
//  Every key, revoked ones too, newest first, without hashes:
//  [{"id","team","user","models","limits","approver","created_at","created_by",
//    "rotated_at","grace_until","revoked_at","state":"active|revoked"}]
//  appended to out. 0 ok, -1 store failed.
int sl_keystore_list (sl_store_t *store, int64_t now, sl_buf_t *out);
//  The keys in force at now, for the gateways:
//  {"issued":N,"keys":[{"id","sha256","team","user","models","limits","approver"}]},
//  a secret in its grace as one more entry of the same id; issued counts
//  every key ever created here, revoked ones too. Each row served must
//  give its chain entry's grant: 0 ok, 1 one does not (the set appended
//  without it, problem names the first), -1 store failed.
int sl_keystore_served (sl_store_t *store, int64_t now, sl_buf_t *out, sl_keystore_problem_t *problem);
//  A key's row's columns its chain entries carry, in order.
#define SL_KEYSTORE_GRANT_COLUMNS "sha256, team, user_name, models, limits, approver, prev_sha256, prev_until, " \
                                  "revoked_at"

//  Every key's row against its newest chain entry's grant, and every key
//  with chained events against its row. 0 all match (pending: the rows
//  still waiting for their reseal, not compared), 1 the first that does
//  not (into problem), -1 store failed.
int sl_keystore_check (sl_store_t *store, int64_t *pending, sl_keystore_problem_t *problem);
//  Reseal the keys migration 012 listed (see above), each in its own
//  transaction, asked by SL_KEYSTORE_RESEAL_BY. resealed counts those
//  done; a row that does not give its chained create is left (counted in
//  refused, the first named in problem). 0, -1 store failed.
#define SL_KEYSTORE_RESEAL_BY "migration 012"
int sl_keystore_reseal (sl_store_t *store, sl_chain_t *chain, int64_t now, int *resealed, int *refused,
                        sl_keystore_problem_t *problem);

//  The newest key events (at most limit, SL_KEYSTORE_EVENTS_MAX):
//  [{"at","key_id","action","by","detail"}]. 0 ok, -1.
int sl_keystore_events (sl_store_t *store, int limit, sl_buf_t *out);

#endif
