#!/bin/sh
# make bench, part 4: what sluice adds to an MCP tools/call. One stack as
# deployed (the default policy, CURVE, the inboxes on tcp://), the official
# SDK's MCP server of tests/mcp (each family: v1 with sessions, v2
# stateless) behind the gateway's /mcp/<server>, and tests/mcp/bench.mjs
# calling echo N times directly and N times through sluice, alternating:
# the p50 and p99 of each way and the differences, beside their aims.
# With --out, the worse family's added p50 and p99 join that JSON file
# (make bench's build/bench.json) as mcp_added_ms_p50 and
# mcp_added_ms_p99, each family's as mcp_<family>_added_ms_p50 and _p99.
# SLUICE_MCP_BENCH_TIMELINE=1 runs the stack at debug level and prints
# where a leg's time goes, hop by hop (tests/bench/leg-timeline.mjs); the
# debug lines cost time themselves, so its added figures are not the
# bench's. Needs node and make mcp-deps; without them it says so and
# measures nothing. Writes nothing outside a temporary directory, which
# it removes, and the --out file.
#
#   tests/bench/mcp-stack.sh build/bin [--out build/bench.json]
#   SLUICE_MCP_BENCH_CALLS=2000 tests/bench/mcp-stack.sh build/bin
#   SLUICE_MCP_BENCH_TIMELINE=1 tests/bench/mcp-stack.sh build/bin
set -u
BIN=${1:-build/bin}
OUT=
if [ "${2:-}" = --out ]; then OUT=${3:?--out needs a file}; fi
TIMELINE=${SLUICE_MCP_BENCH_TIMELINE:-0}
if [ "$TIMELINE" = 1 ]; then export SLUICE_LOG_LEVEL=debug; fi
HERE=$(cd "$(dirname "$0")/../.." && pwd)
CALLS=${SLUICE_MCP_BENCH_CALLS:-500}
MCP=$HERE/tests/mcp
if ! command -v node > /dev/null || [ ! -d "$MCP/node_modules/@modelcontextprotocol/sdk" ] \
   || [ ! -d "$MCP/node_modules/@modelcontextprotocol/client" ]; then
    echo "mcp-stack: node or the MCP SDK (make mcp-deps) is missing: no MCP figures in this run"
    exit 0
fi
LOGS=$(mktemp -d /tmp/sluice-mcp-bench-XXXXXX)
WHO=mcp-stack
. "$HERE/tests/bench/stack-lib.sh"
trap 'stop; exit 1' INT TERM

NODE=$(command -v node)
start server-v1 "$NODE" "$MCP/server.mjs" --family v1 --log /dev/null
V1=$(value server-v1 listening 'url":"')
start server-v2 "$NODE" "$MCP/server.mjs" --family v2 --log /dev/null
V2=$(value server-v2 listening 'url":"')
KEYS=$LOGS/keys
"$BIN/sluice-keygen" --dir "$KEYS" > /dev/null || { echo "mcp-stack: cannot make keys in $KEYS" >&2; stop; exit 1; }
start mock mock --port 0 --delay-ms 0
MOCK=http://127.0.0.1:$(value mock listening http=127.0.0.1:)
cat > "$LOGS/routes.yaml" <<ROUTES
providers:
  - { name: mock-openai, dialect: openai, base_url: "$MOCK/v1" }
mcp:
  servers:
    - { name: v1, url: "$V1" }
    - { name: v2, url: "$V2", revision: "2026-07-28" }
ROUTES
POLICY=$HERE/deploy/policy.yaml
gw="tcp://127.0.0.1:$(free_port)"
start emitter emitter --bind 'tcp://127.0.0.1:*' --gateways "$gw" --pub 'tcp://127.0.0.1:*' \
    --pub-meta off --metrics-port off --keys "$KEYS"
next=$(value emitter inbox_bound endpoint=)
start judge judge --bind 'tcp://127.0.0.1:*' --next "$next" --policy "$POLICY" --metrics-port off \
    --approvals-bind off --keys "$KEYS"
next=$(value judge inbox_bound endpoint=)
start aggregator aggregator --bind 'tcp://127.0.0.1:*' --next "$next" --metrics-port off --keys "$KEYS"
next=$(value aggregator inbox_bound endpoint=)
start ingest ingest --bind 'tcp://127.0.0.1:*' --next "$next" --routes "$LOGS/routes.yaml" \
    --metrics-port off --keys "$KEYS"
next=$(value ingest inbox_bound endpoint=)
start gateway gateway --http-port 0 --bind "$gw" --next "$next" --metrics-port off \
    --policy "$POLICY" --routes "$LOGS/routes.yaml" --keys "$KEYS"
http=$(value gateway listening http=127.0.0.1:)
value emitter peer_up name= > /dev/null     # the emitter heard from its gateway

rc=0
for family in v1 v2; do
    if [ $family = v1 ]; then direct=$V1; else direct=$V2; fi
    node "$MCP/bench.mjs" --family $family --direct "$direct" --through "http://127.0.0.1:$http/mcp/$family" \
        --key sk-sluice-bench --calls "$CALLS" > "$LOGS/bench-$family.log" 2>&1 || rc=1
    grep -v '^{' "$LOGS/bench-$family.log"
done
stop
if [ "$TIMELINE" = 1 ]; then node "$HERE/tests/bench/leg-timeline.mjs" "$LOGS" || rc=1; fi
# The figures beside their aims, and into --out.
if [ $rc -eq 0 ]; then
    node - "$LOGS/bench-v1.log" "$LOGS/bench-v2.log" "$OUT" <<'JS' || rc=1
const fs = require ('fs');
const [ v1, v2, out ] = process.argv.slice (2);
const read = (f) => JSON.parse (fs.readFileSync (f, 'utf8').split ('\n').filter ((l) => l.startsWith ('{')).pop ());
const runs = [ read (v1), read (v2) ];
const keys = {};
for (const r of runs) {
  keys [`mcp_${r.family}_added_ms_p50`] = +r.added_p50_ms.toFixed (3);
  keys [`mcp_${r.family}_added_ms_p99`] = +r.added_p99_ms.toFixed (3);
}
keys.mcp_added_ms_p50 = Math.max (...runs.map ((r) => keys [`mcp_${r.family}_added_ms_p50`]));
keys.mcp_added_ms_p99 = Math.max (...runs.map ((r) => keys [`mcp_${r.family}_added_ms_p99`]));
const goal = (what, now, aim) => console.log (`goal: ${what} < ${aim} ms: ${now.toFixed (2)} ms, `
                                              + `${now < aim ? 'met' : 'NOT MET'}`);
goal ('MCP tools/call added p50 (worse family)', keys.mcp_added_ms_p50, 1);
goal ('MCP tools/call added p99 (worse family)', keys.mcp_added_ms_p99, 3);
if (out) {
  const all = fs.existsSync (out) ? JSON.parse (fs.readFileSync (out, 'utf8')) : {};
  fs.writeFileSync (out, JSON.stringify (Object.assign (all, keys), null, 2) + '\n');
}
JS
fi
if [ $rc -eq 0 ]; then rm -rf "$LOGS"; else echo "mcp-stack: logs kept in $LOGS" >&2; fi
exit $rc
