-- The MCP request a stream stands for (the gateway's own request for an
-- MCP client: "tools/call <tool>", "tools/call <tool> result",
-- "tools/list"); NULL for a model's traffic. The server is the stream's
-- provider, "mcp:<server>".
ALTER TABLE streams ADD COLUMN mcp TEXT;
