#!/bin/sh
# make bench, part 4: what sluice adds to an MCP tools/call. One stack as
# deployed (the default policy, CURVE, the inboxes on tcp://), the official
# SDK's MCP server of tests/mcp (each family: v1 with sessions, v2
# stateless) behind the gateway's /mcp/<server>, and tests/mcp/bench.mjs
# calling echo N times directly and N times through sluice, alternating:
# the p50 of each way and the difference. Needs node and make mcp-deps;
# without them it says so and measures nothing. Writes nothing outside a
# temporary directory, which it removes.
#
#   tests/bench/mcp-stack.sh build/bin
#   SLUICE_MCP_BENCH_CALLS=2000 tests/bench/mcp-stack.sh build/bin
set -u
BIN=${1:-build/bin}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
CALLS=${SLUICE_MCP_BENCH_CALLS:-500}
MCP=$HERE/tests/mcp
if ! command -v node > /dev/null || [ ! -d "$MCP/node_modules/@modelcontextprotocol/sdk" ] \
   || [ ! -d "$MCP/node_modules/@modelcontextprotocol/client" ]; then
    echo "mcp-stack: node or the MCP SDK (make mcp-deps) is missing: no MCP figures in this run"
    exit 0
fi
LOGS=$(mktemp -d /tmp/sluice-mcp-bench-XXXXXX)
PIDS=""

stop() {
    for pid in $PIDS; do kill -TERM "$pid" 2>/dev/null; done
    for pid in $PIDS; do wait "$pid" 2>/dev/null; done
}
trap 'stop; exit 1' INT TERM

# start <label> <command...>: LAST is its pid, its log $LOGS/<label>.log
start() {
    label=$1
    shift
    "$@" > "$LOGS/$label.log" 2>&1 &
    PIDS="$PIDS $!"
    LAST=$!
}

# value <label> <pattern> <key>: what follows <key> on the first line of
# the log matching <pattern>, waiting for it (bounded: 20 s).
value() {
    i=0
    while [ $i -lt 400 ]; do
        v=$(grep "$2" "$LOGS/$1.log" 2>/dev/null | head -1 | sed -n "s/.*$3\([^ \"]*\).*/\1/p")
        if [ -n "$v" ]; then echo "$v"; return 0; fi
        i=$((i + 1))
        sleep 0.05
    done
    echo "mcp-stack: $1 did not log $2 (logs in $LOGS)" >&2
    stop
    exit 1
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start server-v1 node "$MCP/server.mjs" --family v1 --log /dev/null
V1=$(value server-v1 listening '"listening":"')
start server-v2 node "$MCP/server.mjs" --family v2 --log /dev/null
V2=$(value server-v2 listening '"listening":"')
KEYS=$LOGS/keys
"$BIN/sluice-keygen" --dir "$KEYS" > /dev/null || { echo "mcp-stack: cannot make keys in $KEYS" >&2; stop; exit 1; }
start mock "$BIN/sluice-mock" --port 0 --delay-ms 0
MOCK=http://127.0.0.1:$(value mock '"event":"listening"' http=127.0.0.1:)
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
start emitter "$BIN/sluice-emitter" --bind 'tcp://127.0.0.1:*' --gateways "$gw" --pub 'tcp://127.0.0.1:*' \
    --pub-meta off --metrics-port off --keys "$KEYS"
next=$(value emitter '"event":"inbox_bound"' endpoint=)
start judge "$BIN/sluice-judge" --bind 'tcp://127.0.0.1:*' --next "$next" --policy "$POLICY" --metrics-port off \
    --approvals-bind off --keys "$KEYS"
next=$(value judge '"event":"inbox_bound"' endpoint=)
start aggregator "$BIN/sluice-aggregator" --bind 'tcp://127.0.0.1:*' --next "$next" --metrics-port off --keys "$KEYS"
next=$(value aggregator '"event":"inbox_bound"' endpoint=)
start ingest "$BIN/sluice-ingest" --bind 'tcp://127.0.0.1:*' --next "$next" --routes "$LOGS/routes.yaml" \
    --metrics-port off --keys "$KEYS"
next=$(value ingest '"event":"inbox_bound"' endpoint=)
start gateway "$BIN/sluice-gateway" --http-port 0 --bind "$gw" --next "$next" --metrics-port off \
    --policy "$POLICY" --routes "$LOGS/routes.yaml" --keys "$KEYS"
http=$(value gateway '"event":"listening"' http=127.0.0.1:)
value emitter '"event":"peer_up"' name= > /dev/null     # the emitter heard from its gateway

rc=0
for family in v1 v2; do
    if [ $family = v1 ]; then direct=$V1; else direct=$V2; fi
    node "$MCP/bench.mjs" --family $family --direct "$direct" --through "http://127.0.0.1:$http/mcp/$family" \
        --key sk-sluice-bench --calls "$CALLS" > "$LOGS/bench-$family.log" 2>&1 || rc=1
    grep -v '^{' "$LOGS/bench-$family.log"
done
stop
if [ $rc -eq 0 ]; then rm -rf "$LOGS"; else echo "mcp-stack: logs kept in $LOGS" >&2; fi
exit $rc
