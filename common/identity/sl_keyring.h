/*  sl_keyring.h - who may call sluice: client keys, teams, signed tokens.

    The model of a keys file (--keys-file, SLUICE_KEYS_FILE), loaded by
    sl_keyring_load.c; the gateway resolves every request's credential
    against it (sl_keyring_find for a sluice key; sl_jwt.h for a signed
    token, with the file's jwt section). A key is known only by its
    SHA-256: the file never holds a key itself.

        version: 1
        teams:                              # optional
          - name: payments
            policy: policies/payments.yaml  # relative to this file, or absolute
            models: ["gpt-*", "claude-*"]   # globs; none: every model
            limits: {rpm: 600, concurrent: 50, tokens_per_day: 5000000,
                     budget: {tokens: 100000000, usd: 500}}
            limits_on_error: allow          # deny (the default) or allow
        jwt:                                # optional: signed tokens
          keys: [jwt/idp.pem]               # public keys (PEM), and/or
          jwks: jwt/jwks.json               # a JWKS file
          issuer: https://idp.example       # iss, required when set
          audience: sluice                  # aud: required (a jwt section without
                                            # one does not load)
          team_claim: team                  # default "team"
          user_claim: sub                   # default "sub"
          limits: {rpm: 60}                 # each token's user's own
        keys:
          - id: alice-laptop                # [A-Za-z0-9._-], unique
            sha256: 9f86d08...              # 64 hex digits
            team: payments                  # default "default"
            user: alice
            labels: {env: prod}             # free
            policy: policies/alice.yaml     # overrides the team's
            models: ["gpt-4o*"]
            limits: {rpm: 60, concurrent: 5, tokens_per_day: 200000}
            approver: true                  # may decide approvals whose rule
                                            # names no approvers (default false)

    A team named by a key but not listed under teams has no settings of
    its own. SLUICE_CLIENT_KEYS (a comma-separated list of keys) makes a
    keyring of those keys, all of team "default" (sl_keyring_from_list).

    Strings and entries are owned by the keyring and live as long as it
    (a reload makes a new keyring; streams keep a reference to theirs).
*/
#ifndef SL_KEYRING_H
#define SL_KEYRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_KEYRING_FILE_MAX (16u << 20) //  the largest keys file read
#define SL_KEYRING_SHA256 32
#define SL_KEYRING_HEX_SIZE (2 * SL_KEYRING_SHA256 + 1)
#define SL_KEYRING_DEFAULT_TEAM "default"
#define SL_KEYRING_KEY_PREFIX "sk-sluice-"
#define SL_KEYRING_KEY_MAX 64           //  bytes of a new key's text, with its NUL

typedef struct _sl_keyring_t sl_keyring_t;

#define SL_LIMITS_ALERTS_MAX 8         //  alert thresholds of one key or team

//  What a key, a team or a token's user may spend (0: no limit).
typedef struct {
    int64_t rpm;                        //  requests a minute
    int64_t concurrent;                 //  streams at once
    int64_t tokens_per_day;             //  input + output tokens a UTC day
    int64_t budget_tokens;              //  tokens a UTC month
    double budget_usd;                  //  money a UTC month (prices per model in the routes file)
    //  Alert thresholds (limits: {alerts: {at: [50, 80, 100]}}): percents
    //  of tokens_per_day, budget_tokens and budget_usd, each 1..100 and
    //  rising; each crossing is reported once per day or month.
    int alert_at [SL_LIMITS_ALERTS_MAX];
    size_t alert_count;
} sl_limits_spec_t;

typedef enum {
    SL_ON_ERROR_DENY = 0,               //  the limits store cannot answer: refuse (the default)
    SL_ON_ERROR_ALLOW                   //  let the request through, counted and logged
} sl_on_error_t;

typedef struct {
    const char *name;
    const char *value;
} sl_label_t;

typedef struct {
    const char *name;
    const char *policy;                 //  its policy file (a path), NULL: the default
    const char *shadow_policy;          //  a policy file judged wholly in shadow beside it, NULL: none
    const char *const *models;          //  model globs, NULL-terminated; NULL: every model
    sl_limits_spec_t limits;
    int limits_on_error;                //  sl_on_error_t
    bool listed;                        //  under teams: (else only named by a key)
} sl_team_t;

typedef struct {
    const char *id;
    uint8_t sha256 [SL_KEYRING_SHA256];
    const sl_team_t *team;
    const char *user;                   //  "" when not given
    const sl_label_t *labels;           //  label_count of them
    size_t label_count;
    const char *policy;                 //  its own policy file, NULL: the team's
    const char *shadow_policy;          //  its own shadow policy file, NULL: the team's
    const char *const *models;          //  NULL: the team's
    sl_limits_spec_t limits;
    bool approver;                      //  may decide approvals whose rule names no approvers
} sl_keyentry_t;

typedef struct {
    const char *const *pem;             //  public key files (PEM), NULL-terminated
    const char *jwks;                   //  a JWKS file, or NULL
    const char *issuer;                 //  required iss, or NULL
    const char *audience;               //  required aud (a loaded jwt section always has one)
    const char *team_claim;
    const char *user_claim;
    sl_limits_spec_t limits;            //  per user of a token
} sl_jwt_spec_t;

//  Load a keys file. NULL with *error ("file:line:col: why", the caller
//  frees) when it does not load: a malformed file, an unknown field, a
//  duplicate id or key, a hash that is not 64 hex digits, a policy or key
//  file that does not exist.
sl_keyring_t *sl_keyring_load (const char *path, char **error);
//  The same from text (name: the file name for errors; relative paths are
//  taken from name's directory).
sl_keyring_t *sl_keyring_parse (const char *text, size_t size, const char *name, char **error);
//  A keyring of the keys of a comma-separated list (SLUICE_CLIENT_KEYS),
//  each of team "default", its id sl_key_id's (as the audit has always
//  shown such a key: 12 hex digits of its SHA-1); NULL
//  when the list names none.
sl_keyring_t *sl_keyring_from_list (const char *list);
//  base (the keys file's, or NULL) with the keys the console issued, as
//  the audit serves them (json: {"keys":[{"id","sha256","team","user",
//  "models","limits","approver"}]}, sl_keystore.h): a new keyring holding
//  a reference to base. A served key of a team base lists takes that
//  team's settings; a served hash that base has already is left out (the
//  file's entry wins). NULL with *error (the caller frees) when json is
//  not such a set: then nothing of it is taken.
sl_keyring_t *sl_keyring_merge (sl_keyring_t *base, const char *json, size_t n, char **error);
//  References: a keyring lives while anyone holds it.
sl_keyring_t *sl_keyring_ref (sl_keyring_t *self);
void sl_keyring_unref (sl_keyring_t **self_p);

//  The entry of a presented key (found by its SHA-256 among the entries'
//  sorted hashes, the match confirmed in constant time), or NULL.
const sl_keyentry_t *sl_keyring_find (const sl_keyring_t *self, const char *key);
//  A team by name, or NULL when no key or setting names it.
const sl_team_t *sl_keyring_team (const sl_keyring_t *self, const char *name);
//  The signed-token settings, or NULL when the file has none.
const sl_jwt_spec_t *sl_keyring_jwt (const sl_keyring_t *self);
size_t sl_keyring_count (const sl_keyring_t *self);
const sl_keyentry_t *sl_keyring_at (const sl_keyring_t *self, size_t index);
size_t sl_keyring_team_count (const sl_keyring_t *self);
const sl_team_t *sl_keyring_team_at (const sl_keyring_t *self, size_t index);
//  The policy files the keyring names (teams' and keys', shadow_policy
//  ones included), each once.
size_t sl_keyring_policies (const sl_keyring_t *self, const char **out, size_t max);
//  Does model match one of globs (NULL: every model)?
bool sl_keyring_model_allowed (const char *const *globs, const char *model);

//  A fresh client key (the system's random source): SL_KEYRING_KEY_PREFIX
//  and 43 base64url characters (32 random bytes), what sluice-keys new and
//  the console's keys API hand out.
void sl_keyring_new_key (char key [SL_KEYRING_KEY_MAX]);
//  The SHA-256 of a key, and that hash as the keys file writes it (64 hex
//  digits and a NUL).
void sl_keyring_hash (const char *key, uint8_t out [SL_KEYRING_SHA256]);
void sl_keyring_key_hex (const char *key, char out [SL_KEYRING_HEX_SIZE]);

#endif
