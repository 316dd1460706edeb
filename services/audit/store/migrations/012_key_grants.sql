-- A key's grant under the hash chain (sl_keystore.h): every key event's
-- chain entry carries the key's row as the change left it (its SHA-256,
-- team, user, models, limits, approver flag, the secret in its grace and
-- its revocation), so a row edited, inserted or deleted in the store
-- differs from its chain entry: verify names it and the audit serves the
-- gateways no such set. The keys issued before this migration are
-- resealed once by the audit at its next start, from this list: each a
-- key event "reseal" whose entry carries its row (the row checked
-- against its chained create first).
CREATE TABLE key_reseal (id TEXT PRIMARY KEY);
INSERT INTO key_reseal (id) SELECT id FROM api_keys;
-- Key entries by their key (the key event's pos): few rows.
CREATE INDEX chain_key_ref ON chain (ref) WHERE kind = 'key';
