-- Calls that waited for a person (a rule with action: ask): one row per
-- approval, keyed by its id (32 hex digits), its state moved on by the
-- judge's later records (pending, then approved, denied, timeout,
-- cancelled or failed; a decided approval never goes back to pending,
-- whatever order the records arrive in). created_at is when it began to
-- wait, updated_at when its state last changed (its decision). details
-- is the judge's JSON: approvers, on_timeout, remember_minutes.
CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    stream TEXT NOT NULL,
    call_index INTEGER,
    tool TEXT,
    arguments TEXT,
    rule TEXT,
    message TEXT,
    digest TEXT NOT NULL,
    policy TEXT,
    policy_name TEXT,
    key_id TEXT,
    team TEXT,
    user_name TEXT,
    model TEXT,
    last_user TEXT,
    judge TEXT,
    details TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    updated_at BIGINT NOT NULL,
    approver TEXT,
    comment TEXT
);
CREATE INDEX approvals_state ON approvals (state, updated_at);
CREATE INDEX approvals_stream ON approvals (stream);
