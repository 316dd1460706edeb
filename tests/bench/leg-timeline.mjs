// leg-timeline.mjs - where an MCP leg's time goes, hop by hop, from the
// stack's own debug log lines (tests/bench/mcp-stack.sh with
// SLUICE_MCP_BENCH_TIMELINE=1): the gateway's leg_timeline (its start, the
// request policy done, answered, the pipeline's first frame back, its
// end) and every stage's stream_stamp (a stream's REQ or START reaching
// the ingest, aggregator, judge and emitter, its END reaching the
// emitter), matched by stream id; and the gateway's mcp_timeline of each
// tools/call (its call leg, the server's call, its result leg, its
// answer). Prints, per kind of leg, the p50 and p90 of each step in ms
// from the leg's start, then the same of each step of a tools/call from
// the request's start.
//
//   node leg-timeline.mjs LOGDIR
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv [2];
const legs = new Map ();          // sid -> { kind, start, steps: { name: unix µs } }
const stamps = new Map ();        // sid -> { name: unix µs }
const calls = new Map ();         // step -> [ ms from the request's start ]
const note = (name, ms) => calls.set (name, [ ...(calls.get (name) ?? []), ms ]);

function fields (msg) {
  const out = {};
  for (const m of msg.matchAll (/(\w+)=(\S+)/g))
    out [m [1]] = m [2];
  return out;
}

for (const file of readdirSync (dir).filter ((f) => f.endsWith ('.log'))) {
  for (const line of readFileSync (join (dir, file), 'utf8').split ('\n')) {
    if (!line.startsWith ('{'))
      continue;
    let entry;
    try { entry = JSON.parse (line); } catch { continue; }
    const f = fields (entry.msg ?? '');
    if (entry.event === 'leg_timeline') {
      const start = Number (f.start_unix_us);
      const at = (ms) => (Number (ms) >= 0 ? start + Number (ms) * 1000 : undefined);
      legs.set (f.sid, { kind: f.kind, start, steps: {
        'gateway: judged, job sent': at (f.judged_ms),
        'gateway: answered': at (f.answered_ms),
        'gateway: first frame back': at (f.first_frame_ms),
        'gateway: ended': at (f.ended_ms) } });
    } else if (entry.event === 'mcp_timeline' && f.method === 'tools/call') {
      for (const [ key, name ] of [ [ 'call_leg_ms', 'call leg' ], [ 'server_ms', 'server call' ],
                                    [ 'result_leg_ms', 'result leg' ] ]) {
        const [ from, to ] = (f [key] ?? '-').split ('..').map (Number);
        if (!Number.isNaN (from)) {
          note (`${name}: started`, from);
          note (`${name}: answered`, to);
        }
      }
      note ('answered the client', Number (f.answered_ms));
    } else if (entry.event === 'stream_stamp') {
      const s = stamps.get (f.sid) ?? {};
      const name = `${f.role}: ${f.type} in`;
      if (s [name] === undefined)
        s [name] = Number (f.unix_us);
      stamps.set (f.sid, s);
    }
  }
}

const ORDER = [ 'gateway: judged, job sent', 'gateway: answered', 'ingest: req in', 'aggregator: start in',
                'aggregator: end in', 'judge: start in', 'judge: end in', 'emitter: start in', 'emitter: end in',
                'gateway: first frame back', 'gateway: ended' ];
const byKind = new Map ();
for (const [ sid, leg ] of legs) {
  const steps = { ...leg.steps, ...(stamps.get (sid) ?? {}) };
  const rows = byKind.get (leg.kind) ?? new Map ();
  for (const [ name, at ] of Object.entries (steps)) {
    if (at === undefined)
      continue;
    const key = name.toLowerCase ();
    rows.set (key, [ ...(rows.get (key) ?? []), (at - leg.start) / 1000 ]);
  }
  byKind.set (leg.kind, rows);
}
const q = (v, p) => v [Math.min (v.length - 1, Math.floor (p * v.length))];
for (const [ kind, rows ] of byKind) {
  console.log (`leg ${kind}: ms from the leg's start, p50 / p90 (${legs.size} legs in all)`);
  const names = [ ...rows.keys () ].sort ((a, b) => ORDER.indexOf (a) - ORDER.indexOf (b));
  for (const name of names) {
    const v = rows.get (name).sort ((a, b) => a - b);
    console.log (`  ${name.padEnd (28)} ${q (v, 0.5).toFixed (3).padStart (8)} ${q (v, 0.9).toFixed (3).padStart (8)}`
               + `  (${v.length})`);
  }
}
if (calls.size) {
  console.log (`tools/call: ms from the request's start, p50 / p90`);
  for (const [ name, values ] of calls) {
    const v = values.sort ((a, b) => a - b);
    console.log (`  ${name.padEnd (28)} ${q (v, 0.5).toFixed (3).padStart (8)} ${q (v, 0.9).toFixed (3).padStart (8)}`
               + `  (${v.length})`);
  }
}
