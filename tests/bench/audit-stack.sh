#!/bin/sh
# make bench, part 3: what the audit's spool costs the emitter, measured on
# the process. One stack at a time (mock, ingest, aggregator, judge with
# the default policy, emitter, gateway; CURVE on), three ways:
#   off    the emitter without --audit (nothing spooled)
#   held   --audit, no sluice-audit: every record is spooled and held
#   audit  --audit and sluice-audit (SQLite) taking and acknowledging them
# Each runs the same load (STREAMS mock-tools streams, 8 clients on
# keep-alive connections: a text, two calls, a blocked one) and reads the
# emitter's CPU time from /proc before and after (for "audit", once the
# audit has acknowledged every record). Prints the emitter's CPU per
# stream, median of RUNS rounds, and what the spool adds. Writes nothing
# outside a temporary directory, which it removes.
#
#   tests/bench/audit-stack.sh build/bin
set -u
BIN=${1:-build/bin}
HERE=$(cd "$(dirname "$0")/../.." && pwd)
STREAMS=${SLUICE_AUDIT_BENCH_STREAMS:-3000}
RUNS=${SLUICE_AUDIT_BENCH_RUNS:-3}
LOGS=$(mktemp -d /tmp/sluice-audit-bench-XXXXXX)
WHO=audit-stack
. "$HERE/tests/bench/stack-lib.sh"
MOCKPID=""
trap 'stop; [ -n "$MOCKPID" ] && kill "$MOCKPID"; rm -rf "$LOGS"; exit 1' INT TERM

# CPU time of a process so far, ns: every thread's (ZeroMQ's I/O threads
# do the CURVE work), from the scheduler's own accounting.
cpu_ns() {
    cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

metric() {  # metric <port> <name>
    curl -sf "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'
}

# The load: $1 requests over 8 keep-alive connections to port $2.
load() {
    python3 - "$1" "$2" <<'EOF'
import http.client, json, sys, threading
total, port = int(sys.argv[1]), int(sys.argv[2])
body = json.dumps({"model": "mock-tools", "stream": True,
                   "messages": [{"role": "user", "content": "tidy up"}],
                   "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
                             {"type": "function", "function": {"name": "run_shell", "parameters": {"type": "object"}}}]})
failed = []
def run(n):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(n):
        c.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        if r.status != 200 or b"sluice blocked" not in data:
            failed.append(r.status)
threads = [threading.Thread(target=run, args=(total // 8 + (1 if i < total % 8 else 0),)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
sys.exit(1 if failed else 0)
EOF
}

"$BIN/sluice-keygen" --dir "$LOGS/keys" > /dev/null || exit 1
KEYS="$LOGS/keys"
start mock mock --host 127.0.0.1 --port 0 --delay-ms 0
MOCKPID=$LAST
PIDS=""                                 # the mock outlives the stacks
MOCK="http://127.0.0.1:$(value mock listening http=127.0.0.1:)"

# One measurement: prints the emitter's CPU per stream in µs.
measure() {
    mode=$1 run=$2
    gw="tcp://127.0.0.1:$(free_port)"
    audit_flag=""
    [ "$mode" != off ] && audit_flag="--audit tcp://127.0.0.1:*"
    # shellcheck disable=SC2086
    start "$mode-$run-emitter" emitter --bind 'tcp://127.0.0.1:*' --gateways "$gw" --pub off --pub-meta off \
        --metrics-port 0 --keys "$KEYS" $audit_flag
    emitter=$LAST
    em=$(value "$mode-$run-emitter" started metrics_port=)
    next=$(value "$mode-$run-emitter" inbox_bound endpoint=)
    if [ "$mode" = audit ]; then
        spool=$(value "$mode-$run-emitter" audit_bound endpoint=)
        start "$mode-$run-audit" audit --emitters "$spool" --keys "$KEYS" --data-dir "$LOGS/store-$run" \
            --console-port off --metrics-port off
        value "$mode-$run-audit" started name= > /dev/null
    fi
    start "$mode-$run-judge" judge --bind 'tcp://127.0.0.1:*' --next "$next" --policy "$HERE/deploy/policy.yaml" \
        --metrics-port off --keys "$KEYS"
    next=$(value "$mode-$run-judge" inbox_bound endpoint=)
    start "$mode-$run-aggregator" aggregator --bind 'tcp://127.0.0.1:*' --next "$next" --metrics-port off --keys "$KEYS"
    next=$(value "$mode-$run-aggregator" inbox_bound endpoint=)
    start "$mode-$run-ingest" ingest --bind 'tcp://127.0.0.1:*' --next "$next" --openai-base-url "$MOCK/v1" \
        --metrics-port off --keys "$KEYS"
    next=$(value "$mode-$run-ingest" inbox_bound endpoint=)
    start "$mode-$run-gateway" gateway --http-host 127.0.0.1 --http-port 0 --bind "$gw" --next "$next" \
        --metrics-port off --keys "$KEYS"
    port=$(value "$mode-$run-gateway" listening http=127.0.0.1:)
    i=0
    until [ "$(metric "$em" sluice_gateways_alive)" = 1 ] || [ $i -gt 200 ]; do i=$((i + 1)); sleep 0.05; done
    load 100 "$port" || { echo "audit-stack: warm-up failed (logs in $LOGS)" >&2; stop; exit 1; }
    before=$(cpu_ns "$emitter")
    load "$STREAMS" "$port" || { echo "audit-stack: load failed (logs in $LOGS)" >&2; stop; exit 1; }
    if [ "$mode" = audit ]; then
        i=0
        until [ "$(metric "$em" sluice_audit_spool_records)" = 0 ] || [ $i -gt 600 ]; do i=$((i + 1)); sleep 0.05; done
    fi
    after=$(cpu_ns "$emitter")
    stop
    echo "$before $after" | awk -v n="$STREAMS" '{ printf "%.1f\n", ($2 - $1) / n / 1000 }'
}

median() {
    sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

for mode in off held audit; do
    : > "$LOGS/$mode.us"
done
for run in $(seq 1 "$RUNS"); do
    for mode in off held audit; do
        measure "$mode" "$run" >> "$LOGS/$mode.us"
    done
done
kill "$MOCKPID"
wait "$MOCKPID" 2>/dev/null
off=$(median < "$LOGS/off.us")
held=$(median < "$LOGS/held.us")
audit=$(median < "$LOGS/audit.us")
echo "emitter CPU per stream ($STREAMS mock-tools streams, median of $RUNS; runs: off $(tr '\n' ' ' < "$LOGS/off.us")/ held $(tr '\n' ' ' < "$LOGS/held.us")/ audit $(tr '\n' ' ' < "$LOGS/audit.us")):"
awk -v o="$off" -v h="$held" -v a="$audit" 'BEGIN {
    printf "  spool off                      %6.1f us\n", o
    printf "  spool on, no audit (held)      %6.1f us  (%+.1f us, %+.0f%%)\n", h, h - o, (h - o) / o * 100
    printf "  spool on, sluice-audit taking  %6.1f us  (%+.1f us, %+.0f%%)\n", a, a - o, (a - o) / o * 100
}'
rm -rf "$LOGS"
