-- The tool inventory: every tool definition the requests of a team
-- carried, once per (team, name, digest): a definition that changes is a
-- new row beside the old one. team is '' for requests without a team (no
-- keys). server and tool are the parts of the name (mcp__github__x:
-- github, x; server NULL when the name names none). digest is the SHA-256
-- of the definition's canonical JSON (64 hex digits); description and
-- schema_json are as the gateway passed them on, truncated 1 when they
-- were cut (over the gateway's bound or the store's). key_ids and models
-- are bounded lists of who sent it and to which model, each entry between
-- commas (",k1,k2,"). requests counts the requests that carried it.
CREATE TABLE tools (
    team TEXT NOT NULL,
    name TEXT NOT NULL,
    digest TEXT NOT NULL,
    server TEXT,
    tool TEXT,
    description TEXT,
    schema_json TEXT,
    truncated INTEGER NOT NULL DEFAULT 0,
    first_seen BIGINT NOT NULL,
    last_seen BIGINT NOT NULL,
    key_ids TEXT NOT NULL,
    models TEXT NOT NULL,
    requests BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (team, name, digest)
);
CREATE INDEX tools_name ON tools (name, team);
CREATE INDEX tools_server ON tools (server, team);
