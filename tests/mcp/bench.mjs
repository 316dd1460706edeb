// bench.mjs - what sluice adds to an MCP tools/call (make bench): one
// client session of the official SDK to the server directly and one to
// sluice's /mcp/<server> in front of the same server, the same call
// (echo) made N times each way, alternating so that both see the same
// machine, each timed from the call to its result. Prints the median
// (p50), p90 and p99 of each way and the p50 and p99 differences:
// sluice's added latency per call (the SDK's own cost is on both sides).
//
//   node bench.mjs --family v1|v2 --direct URL --through URL [--key KEY]
//                  [--calls N] [--warmup N]
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';

import { connect } from './connect.mjs';

const { values: opts } = parseArgs ({
  options: {
    family: { type: 'string', default: 'v1' },
    direct: { type: 'string' },
    through: { type: 'string' },
    key: { type: 'string' },
    calls: { type: 'string', default: '500' },
    warmup: { type: 'string', default: '50' },
  },
});
const CALL = { name: 'echo', arguments: { text: 'sluice bench' } };

//  One call, timed in ms; a result that is not echo's text is an error.
async function timed (client) {
  const started = performance.now ();
  const result = await client.callTool (CALL);
  const took = performance.now () - started;
  if (result.isError || result.content?.[0]?.text !== CALL.arguments.text)
    throw new Error (`unexpected result: ${JSON.stringify (result)}`);
  return took;
}

function quantile (sorted, q) {
  return sorted [Math.min (sorted.length - 1, Math.floor (q * sorted.length))];
}

try {
  const direct = (await connect (opts.family, opts.direct, opts.key)).client;
  const through = (await connect (opts.family, opts.through, opts.key)).client;
  const calls = Number (opts.calls), warmup = Number (opts.warmup);
  for (let i = 0; i < warmup; i++) {
    await timed (direct);
    await timed (through);
  }
  const d = [], t = [];
  for (let i = 0; i < calls; i++) {
    d.push (await timed (direct));
    t.push (await timed (through));
  }
  d.sort ((a, b) => a - b);
  t.sort ((a, b) => a - b);
  const out = { family: opts.family, calls,
                direct_p50_ms: quantile (d, 0.5), direct_p90_ms: quantile (d, 0.9),
                direct_p99_ms: quantile (d, 0.99),
                sluice_p50_ms: quantile (t, 0.5), sluice_p90_ms: quantile (t, 0.9),
                sluice_p99_ms: quantile (t, 0.99) };
  out.added_p50_ms = out.sluice_p50_ms - out.direct_p50_ms;
  out.added_p99_ms = out.sluice_p99_ms - out.direct_p99_ms;
  const ms = (v) => v.toFixed (2);
  console.log (`mcp ${opts.family}: tools/call p50 ${ms (out.direct_p50_ms)} ms directly, `
             + `${ms (out.sluice_p50_ms)} ms through sluice: +${ms (out.added_p50_ms)} ms per call `
             + `(p90 ${ms (out.direct_p90_ms)} / ${ms (out.sluice_p90_ms)} ms, `
             + `p99 ${ms (out.direct_p99_ms)} / ${ms (out.sluice_p99_ms)} ms: +${ms (out.added_p99_ms)}; `
             + `${calls} calls each way)`);
  console.log (JSON.stringify (out));
  await direct.close ();
  await through.close ();
  process.exit (0);
} catch (err) {
  console.error (`bench.mjs: ${err?.message ?? err}`);
  process.exit (1);
}
