-- The tool inventory's bound per team: the least recently seen go first.
CREATE INDEX tools_team_seen ON tools (team, last_seen);
