-- Budget alerts the gateways posted (sl_alertstore.h): one row per
-- threshold crossed, known by the id the gateway gave it (the same for
-- every post of one crossing: a second is refused). What crossed: the
-- subject (key:<id>, team:<name>, user:<team>/<user>), the limit
-- (tokens_per_day, budget_tokens, budget_usd), the threshold in percent,
-- the counter and its maximum when it crossed (tokens, or dollars), the
-- period (day, month) and its window (yyyymmdd, yyyymm). at is when the
-- audit recorded it, crossed_at when the gateway saw it (ms). Every row
-- is an entry of the hash chain (kind "alert", its ref the row's pos).
CREATE TABLE alerts (
    pos BIGINT PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    at BIGINT NOT NULL,
    crossed_at BIGINT NOT NULL,
    team TEXT,
    key_id TEXT,
    user_name TEXT,
    subject TEXT NOT NULL,
    limit_kind TEXT NOT NULL,
    threshold INTEGER NOT NULL,
    used_value DOUBLE PRECISION NOT NULL,
    max_value DOUBLE PRECISION NOT NULL,
    period TEXT NOT NULL,
    win TEXT NOT NULL
);
CREATE INDEX alerts_at ON alerts (at);
