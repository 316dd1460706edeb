-- The tamper-evident chain (sl_chain.h): one entry per record the audit
-- wrote, in write order. hash = SHA-256(prev || canonical form of the
-- record); the canonical form is rebuilt from the rows written once
-- (events, blocks, verdicts, gaps) and from data for the records that
-- update a summary row (a stream's start, message, finish, error, end;
-- policy reports; approvals), which keep what they carried here.
--
-- Written once per record, so kept narrow: the primary key is the only
-- index every entry pays for (on SQLite it is the rowid itself, see
-- BIGINT /*rowid*/ in sl_store_backend.h). A stream record's events row
-- names its entry (chain_pos): verify finds rows no entry names, and the
-- console a stream's entries, through it rather than through an index on
-- the chain by stream.
CREATE TABLE chain (
    pos BIGINT /*rowid*/ PRIMARY KEY,   -- 1, 2, ... never reused
    at BIGINT NOT NULL,                 -- the record's time, Unix ms
    kind TEXT NOT NULL,                 -- start, block, verdict, ..., gap, policy, approval, prune
    sid TEXT,                           -- a stream record's key: stream id, seq, sub
    seq BIGINT,
    sub INTEGER,
    ref TEXT,                           -- the key as text (gap: emitter:incarnation:rseq); NULL: sid:seq:sub
    rows_named INTEGER NOT NULL,        -- 1: the hash covers a row of blocks, verdicts or gaps besides the ledger's
    data TEXT,                          -- what a summary record carried (JSON, sid aside), NULL for rows written once
    prev TEXT NOT NULL,                 -- the hash before it, its first 16 hex digits (the hash covers all 64)
    hash TEXT NOT NULL
);
-- Retention's prune entries, looked up by what they removed (few rows:
-- a record's entry does not pay for these).
CREATE INDEX chain_prune_sid ON chain (sid) WHERE kind = 'prune';
CREATE INDEX chain_prune_ref ON chain (ref) WHERE kind = 'prune';
-- The entry of a stream record (NULL: written before the chain began).
ALTER TABLE events ADD COLUMN chain_pos BIGINT;

-- Signed checkpoints: the head at pos, signed with the audit's Ed25519
-- key (signature NULL: no key was given). cut 1: retention removed the
-- chain up to pos; verification starts there.
CREATE TABLE checkpoints (
    pos BIGINT PRIMARY KEY,
    count BIGINT NOT NULL,              -- entries chained since the checkpoint before
    head TEXT NOT NULL,                 -- the hash at pos
    at BIGINT NOT NULL,
    key_id TEXT,
    signature TEXT,
    cut INTEGER NOT NULL DEFAULT 0
);
