/*  sl_console_keys.h - the console's keys API: client keys issued, listed,
    rotated and revoked without editing a file (sl_keystore.h), and the
    keys in force served to the gateways.

        POST   /api/keys               {"team","user","models","limits","approver"}
                                       -> 201 {"id","key"} (the key shown this once)
        GET    /api/keys               {"keys":[...],"file":[...]}: every key issued
                                       here, revoked ones too, without secrets or
                                       hashes; and the keys file's (--keys-file),
                                       read-only: they change in the file only
        GET    /api/keys/events        the newest key events (create, rotate, revoke)
        POST   /api/keys/{id}/rotate   {"grace_seconds":N} or nothing -> 200
                                       {"id","key","grace_until"}: the old key stays
                                       good until grace_until
        DELETE /api/keys/{id}          -> 200 {"id","revoked_at"}: refused at every
                                       gateway from its next look (--watch-ms)
        GET    /api/keys/served        the keys in force, with their SHA-256 (the
                                       gateways' fetch): for the keys token
                                       (SLUICE_KEYS_TOKEN, as Bearer) or an admin.
                                       A row that does not give its chain
                                       entry's grant (sl_keystore.h) is left
                                       out, the others served; the chain is
                                       broken (sl_chain_break) and the key
                                       logged (chain_broken)

    Admins only (the caller's role, sl_console_caller_role: a person
    signed in as admin, an admin console key, or this machine on a
    console without keys or sign-in). A change must be JSON
    (Content-Type: application/json); an unknown member is refused (400),
    an unknown id is 404, a store that fails 503. Every change is a key
    event in the store naming who made it (sl_console_role_label), and an
    entry of the audit's hash chain in the same transaction: without the
    chain a change is refused (503), never made unrecorded.
*/
#ifndef SL_CONSOLE_KEYS_H
#define SL_CONSOLE_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/identity/sl_keyring.h"
#include "services/audit/console/sl_console.h"
#include "services/audit/console/sl_console_auth.h"
#include "services/audit/recorder/sl_chain.h"
#include "services/audit/store/sl_store.h"

//  Between the gateways' fetches: the last problem logged (said once).
typedef struct {
    char logged [320];
} sl_console_served_t;

//  The keys token the gateways fetch with (NULL or "": only admins may).
typedef struct {
    sl_store_t *store;
    sl_chain_t *chain;                  //  where every change is entered (sl_keystore.h), NULL: changes refused
    sl_console_auth_t *auth;
    const char *token;
    int64_t now;                        //  ms
    const sl_keyring_t *file;           //  the keys file's keys, NULL: none
    const sl_console_caller_t *caller;  //  who asks, as the console took them
    sl_console_served_t *served;        //  what the served set keeps between fetches (the console's)
} sl_console_keys_ctx_t;

//  Whether req is for the keys API (/api/keys...); when it is, it is
//  answered into resp, who may ask decided here.
bool sl_console_keys_handle (const sl_console_keys_ctx_t *ctx, const sl_console_req_t *req,
                             sl_console_resp_t *resp);

//  Whether req holds the gateways' keys token (as Bearer; NULL or "": none
//  does): what the gateways fetch keys and post alerts with.
bool sl_console_keys_is_gateway (const char *token, const sl_console_req_t *req);

#endif
