// client.mjs - one scenario of an MCP client built on the official
// TypeScript SDK against a URL (sluice's /mcp/<server>, or the server
// itself), printing one JSON line of what happened.
//
//   node client.mjs --family v1|v2 --url URL [--key KEY] [--call TOOL]
//                   [--args JSON] [--timeout-ms N]
//
// --family and --key: the session's (connect.mjs: v1 the 1.x SDK with a
// session, v2 the 2.x client on the stateless revision; the key as
// "Authorization: Bearer KEY").
// It lists the tools, then calls TOOL with the arguments JSON (when
// --call is given). The line says:
//   {"family","protocol","tools":[{"name","description"}],
//    "call":{"tool","isError","texts":[...],"structured"}}
// A protocol error (a JSON-RPC error, a refused connection, an HTTP
// error) prints {"family","error":"...","code":N} and exits 1; a tool
// result with isError is no protocol error (a blocked call is one).
import { parseArgs } from 'node:util';

import { connect } from './connect.mjs';

const { values: opts } = parseArgs ({
  options: {
    family: { type: 'string', default: 'v1' },
    url: { type: 'string' },
    key: { type: 'string' },
    call: { type: 'string' },
    args: { type: 'string', default: '{}' },
    'timeout-ms': { type: 'string', default: '60000' },
  },
});

function print (line) {
  process.stdout.write (JSON.stringify ({ family: opts.family, ...line }) + '\n');
}

if ((opts.family !== 'v1' && opts.family !== 'v2') || !opts.url) {
  print ({ error: 'usage: client.mjs --family v1|v2 --url URL [--key KEY] [--call TOOL] [--args JSON]' });
  process.exit (2);
}

const timeout = Number (opts ['timeout-ms']);

let session;
try {
  session = await connect (opts.family, opts.url, opts.key, timeout);
  const { client } = session;
  const listed = await client.listTools (undefined, { timeout });
  const line = { protocol: session.protocol (),
                 tools: listed.tools.map ((t) => ({ name: t.name, description: t.description ?? '' })) };
  if (opts.call) {
    const result = await client.callTool ({ name: opts.call, arguments: JSON.parse (opts.args) }, undefined,
                                          { timeout, maxTotalTimeout: timeout });
    line.call = { tool: opts.call, isError: result.isError === true,
                  texts: (result.content ?? []).filter ((c) => c.type === 'text').map ((c) => c.text),
                  structured: result.structuredContent ?? null };
  }
  print (line);
  if (opts.family === 'v1')
    await session.transport.terminateSession ().catch (() => {});
  await client.close ();
  process.exit (0);
} catch (err) {
  print ({ error: String (err?.message ?? err), code: err?.code ?? null });
  process.exit (1);
}
