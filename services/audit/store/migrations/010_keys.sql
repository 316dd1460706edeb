-- Client keys issued through the console's keys API (sl_keystore.h): one
-- row per key, known by its SHA-256 only (the key itself is shown once,
-- to whoever created or rotated it, and kept nowhere). models and limits
-- are the keys file's, as JSON (NULL: the team's, none). A rotation
-- moves the hash it replaces to prev_sha256, accepted until prev_until
-- (ms); a revoked key (revoked_at set) is served to no gateway. Every
-- change is a row of key_events: when, which key, what, and who asked.
CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL UNIQUE,
    team TEXT NOT NULL,
    user_name TEXT NOT NULL,
    models TEXT,
    limits TEXT,
    approver INTEGER NOT NULL,
    prev_sha256 TEXT,
    prev_until BIGINT,
    created_at BIGINT NOT NULL,
    created_by TEXT,
    rotated_at BIGINT,
    revoked_at BIGINT
);
CREATE TABLE key_events (
    pos BIGINT /*rowid*/ PRIMARY KEY,
    at BIGINT NOT NULL,
    key_id TEXT NOT NULL,
    action TEXT NOT NULL,
    by_whom TEXT,
    detail TEXT
);
CREATE INDEX key_events_key ON key_events (key_id, pos);
