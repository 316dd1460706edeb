-- The providers a stream tried before the one that served it, and why
-- each was left (the stream's start "att": a JSON array of
-- {provider, dialect, model, result, status, retry_after_s, until_ms,
-- key}); NULL when the first provider served at its first attempt.
ALTER TABLE streams ADD COLUMN failover TEXT;
