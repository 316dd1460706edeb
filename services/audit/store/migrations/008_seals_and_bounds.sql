-- The chain against whoever holds the database (sl_chain.h, sl_checkpoint.h).
--
-- seal: the audit's Ed25519 signature of the last entry of each of its
-- write transactions (its position and hash), NULL on the others: a
-- head an audit holding the key did not write has none, so entries
-- appended behind the audits' backs are found, while audits sharing the
-- store (a rolling update) recognise each other's.
ALTER TABLE chain ADD COLUMN seal TEXT;
-- version 2: count is the distance to the checkpoint before it in the
-- store (verify checks that one is there), and the entries after it are
-- sealed; 1: written before, count from the writer's own last one.
ALTER TABLE checkpoints ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
-- Approvals' and policy reports' entries by their key, to compare the
-- rows later records update with what the chain recorded (few rows: a
-- stream record's entry does not pay for these).
CREATE INDEX chain_approval_ref ON chain (ref) WHERE kind = 'approval';
CREATE INDEX chain_policy_ref ON chain (ref) WHERE kind = 'policy';
-- The tool inventory's bound per team: the least recently seen go first.
CREATE INDEX tools_team_seen ON tools (team, last_seen);
