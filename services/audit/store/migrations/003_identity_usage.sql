-- Who called, and what it cost: a stream's team and user (from its key or
-- token; user_name, since "user" is a word PostgreSQL keeps), whether its
-- usage is an estimate from bytes (the upstream reported none), and its
-- cost at the routes file's prices in micro-dollars (NULL: no price for
-- its model, or no usage). Verdicts say whose stream they judged.
ALTER TABLE streams ADD COLUMN team TEXT;
ALTER TABLE streams ADD COLUMN user_name TEXT;
ALTER TABLE streams ADD COLUMN usage_estimated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE streams ADD COLUMN cost_usd_micro BIGINT;
ALTER TABLE verdicts ADD COLUMN team TEXT;
ALTER TABLE verdicts ADD COLUMN user_name TEXT;
CREATE INDEX streams_team ON streams (team, started_at);
CREATE INDEX streams_user ON streams (user_name, started_at);
