/*  sl_keyring_impl.h - the keyring's insides, shared by the model
    (sl_keyring.c) and its loader (sl_keyring_load.c); not for other
    files.
*/
#ifndef SL_KEYRING_IMPL_H
#define SL_KEYRING_IMPL_H

#include "common/identity/sl_keyring.h"

struct _sl_keyring_t {
    int refs;
    sl_keyentry_t *keys;
    size_t key_count, key_cap;
    const sl_keyentry_t **by_hash;      //  the keys sorted by SHA-256 (sl_keyring_seal), for find
    sl_team_t **teams;                  //  stable addresses: entries point at them
    size_t team_count, team_cap;
    sl_jwt_spec_t jwt;
    bool has_jwt;
    char **owned;                       //  strings and arrays the keyring allocated
    size_t owned_count, owned_cap;
    sl_keyring_t *base;                 //  a merged keyring: the one whose entries and teams it
                                        //  shares (a reference), NULL: none
};

sl_keyring_t *sl_keyring_new_empty (void);
//  Keep an allocation until the keyring goes; returns it.
void *sl_keyring_own (sl_keyring_t *self, void *ptr);
char *sl_keyring_strdup (sl_keyring_t *self, const char *text);
//  The team of this name, made (unlisted, no settings) when new.
sl_team_t *sl_keyring_team_get (sl_keyring_t *self, const char *name);
sl_keyentry_t *sl_keyring_add_key (sl_keyring_t *self);
//  Every key is in: sort them by hash for sl_keyring_find.
void sl_keyring_seal (sl_keyring_t *self);

#endif
