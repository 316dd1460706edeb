// connect.mjs - one MCP client session of the official SDK, of either
// family, for client.mjs and bench.mjs.
//
// v1: @modelcontextprotocol/sdk 1.x (initialize, a session, revision
// 2025-11-25); v2: @modelcontextprotocol/client 2.x pinned to the
// stateless revision 2026-07-28 (server/discover first, no fallback).
// key: sent as "Authorization: Bearer KEY" on every request.
const info = { name: 'sluice-test-client', version: '1.0.0' };

//  A connected client: { client, transport, protocol () }.
export async function connect (family, url, key, timeout) {
  const requestInit = key ? { headers: { Authorization: `Bearer ${key}` } } : {};
  const options = timeout ? { timeout } : undefined;
  if (family === 'v1') {
    const { Client } = await import ('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import ('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const client = new Client (info, { capabilities: {} });
    const transport = new StreamableHTTPClientTransport (new URL (url), { requestInit });
    await client.connect (transport, options);
    return { client, transport, protocol: () => transport.protocolVersion };
  }
  if (family !== 'v2')
    throw new Error (`the family is v1 or v2, not ${family}`);
  const { Client, StreamableHTTPClientTransport } = await import ('@modelcontextprotocol/client');
  const client = new Client (info, { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } });
  const transport = new StreamableHTTPClientTransport (new URL (url), { requestInit });
  await client.connect (transport, options);
  return { client, transport, protocol: () => client.getNegotiatedProtocolVersion () };
}
