-- The audit store, version 1: streams, the ledger of their events, their
-- blocks and verdicts, the gaps the emitters reported, the judges' policies.
-- Runs as written on SQLite and PostgreSQL. Times are Unix milliseconds.

-- One row per stream: what the request was, how it ended, running counts.
CREATE TABLE streams (
    sid TEXT PRIMARY KEY,               -- the stream id, 32 hex digits
    started_at BIGINT NOT NULL,         -- when its start was spooled (or its first record)
    ended_at BIGINT,                    -- its end; NULL while in flight (or when its end was lost)
    duration_ms BIGINT,
    epoch BIGINT NOT NULL DEFAULT 0,    -- the epoch of its start (a replay starts again)
    emitter TEXT,                       -- the emitter instance that first recorded it
    client_dialect TEXT,
    upstream_dialect TEXT,
    model TEXT,                         -- as the client asked for it
    response_model TEXT,                -- as the upstream named it
    response_id TEXT,
    provider TEXT,
    client_key TEXT,                    -- the id of the client's key, never the key
    streaming INTEGER,
    policy TEXT,                        -- the id of the judge's policy (its text's digest)
    last_user TEXT,                     -- the last user message, cut at the store's bound
    tools TEXT,                         -- the names of the request's tools, comma-separated
    tools_json TEXT,                    -- their definitions, cut at the store's bound
    finish TEXT,
    finish_raw TEXT,
    usage_in BIGINT,
    usage_out BIGINT,
    usage_total BIGINT,
    usage_cache_read BIGINT,
    usage_cache_write BIGINT,
    usage_reasoning BIGINT,
    error_code TEXT,
    error_message TEXT,
    error_status INTEGER,
    error_source TEXT,                  -- upstream or sluice
    blocks INTEGER NOT NULL DEFAULT 0,  -- blocks recorded
    calls INTEGER NOT NULL DEFAULT 0,   -- tool calls judged
    blocked INTEGER NOT NULL DEFAULT 0, -- of them, not allowed as they came
    lost INTEGER NOT NULL DEFAULT 0,    -- gaps naming it: records of it an emitter could not keep
    bytes BIGINT NOT NULL DEFAULT 0     -- what it takes in the store, about (retention by size)
);
CREATE INDEX streams_started ON streams (started_at);
CREATE INDEX streams_model ON streams (model, started_at);
CREATE INDEX streams_provider ON streams (provider, started_at);
CREATE INDEX streams_client_key ON streams (client_key, started_at);

-- The ledger: every record of a stream, by its place in the judged stream
-- (seq) and its origin (sub: 0 from the judge, 1.. raised by the emitter).
-- A record delivered twice (a resend, a replay on another emitter) finds
-- its key here and changes nothing.
CREATE TABLE events (
    sid TEXT NOT NULL,
    seq BIGINT NOT NULL,
    sub INTEGER NOT NULL,
    type TEXT NOT NULL,
    at BIGINT NOT NULL,
    PRIMARY KEY (sid, seq, sub)
);

-- Every block as the client received it (a blocked call is its notice).
CREATE TABLE blocks (
    sid TEXT NOT NULL,
    seq BIGINT NOT NULL,
    idx INTEGER NOT NULL,               -- the block's index in the response
    kind TEXT NOT NULL,                 -- text, thinking, tool_call, ...
    id TEXT,
    call_id TEXT,
    name TEXT,                          -- a tool call's tool
    content TEXT,                       -- text, or a call's arguments, cut at the store's bound
    content_bytes BIGINT NOT NULL DEFAULT 0,    -- its whole size
    truncated INTEGER NOT NULL DEFAULT 0,
    replaced INTEGER NOT NULL DEFAULT 0,        -- written by the judge in place of a call
    incomplete TEXT,                    -- why it was cut off, NULL when it was not
    args_valid INTEGER,
    at BIGINT NOT NULL,
    PRIMARY KEY (sid, seq)
);

-- Every decision. side 'response' judges a tool call; 'request' is kept
-- for verdicts on the request itself (tool results, user messages).
CREATE TABLE verdicts (
    sid TEXT NOT NULL,
    seq BIGINT NOT NULL,
    side TEXT NOT NULL DEFAULT 'response',
    idx INTEGER,                        -- the call's block index
    call_id TEXT,
    tool TEXT,
    action TEXT NOT NULL,               -- allow, block, drop, rewrite, terminate
    checked TEXT NOT NULL,              -- ran, timeout, error, default
    rule TEXT,                          -- NULL for the policy's default
    reason TEXT,
    judge_model TEXT,
    probability DOUBLE PRECISION,
    latency_us BIGINT,
    latency_bucket INTEGER,             -- quarter-octave bucket of latency_us (percentiles)
    arguments TEXT,                     -- the arguments judged, cut at the store's bound
    arguments_bytes BIGINT NOT NULL DEFAULT 0,
    truncated INTEGER NOT NULL DEFAULT 0,
    at BIGINT NOT NULL,
    PRIMARY KEY (sid, seq)
);
CREATE INDEX verdicts_at ON verdicts (at);
CREATE INDEX verdicts_rule ON verdicts (rule, at);
CREATE INDEX verdicts_tool ON verdicts (tool, at);

-- Records an emitter's spool could not keep (it was full): never silent.
CREATE TABLE gaps (
    emitter TEXT NOT NULL,
    incarnation TEXT NOT NULL,
    rseq BIGINT NOT NULL,               -- the gap record's number at that emitter
    lost BIGINT NOT NULL,               -- records lost
    since BIGINT NOT NULL,              -- the first loss
    at BIGINT NOT NULL,                 -- when the emitter had room again
    streams INTEGER NOT NULL,           -- streams it names (at most 256)
    PRIMARY KEY (emitter, incarnation, rseq)
);
CREATE INDEX gaps_at ON gaps (at);

-- What each judge ran: one row per judge instance and policy.
CREATE TABLE policies (
    judge TEXT NOT NULL,
    policy TEXT NOT NULL,               -- the policy id
    name TEXT,                          -- its file
    source TEXT,                        -- its text
    loaded_at BIGINT,
    first_seen BIGINT NOT NULL,
    last_seen BIGINT NOT NULL,
    failures BIGINT NOT NULL DEFAULT 0, -- reloads the judge refused while running it
    last_error TEXT,
    PRIMARY KEY (judge, policy)
);
