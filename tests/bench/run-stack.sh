#!/bin/sh
# make bench, part 2: start the mock and two sluice stacks on loopback (one
# with the rule-only default policy, one with no policy), run sluice-bench
# against them and the bare mock, then stop everything.
#
#   tests/bench/run-stack.sh build/bin [extra sluice-bench flags]
#   tests/bench/run-stack.sh build/bin --hold   # start, print, wait (profiling)
#
# Every process binds a free port (0 / *) and the script reads the port it
# got from the process's own log line, so several runs can share a machine.
set -u
BIN=${1:-build/bin}
shift || true
HERE=$(cd "$(dirname "$0")/../.." && pwd)
LOGS=$(mktemp -d /tmp/sluice-bench-XXXXXX)
PIDS=""

stop() {
    for pid in $PIDS; do kill -TERM "$pid" 2>/dev/null; done
    for pid in $PIDS; do wait "$pid" 2>/dev/null; done
}
trap 'stop; exit 1' INT TERM

# start <label> <program> <args...>: LAST is its pid, its log $LOGS/<label>.log
start() {
    label=$1 name=$2
    shift 2
    "$BIN/sluice-$name" "$@" > "$LOGS/$label.log" 2>&1 &
    PIDS="$PIDS $!"
    LAST=$!
}

# value <label> <event> <key>: what follows "<key>" on the process's
# "<event>" log line, waiting for it (bounded: 10 s).
value() {
    i=0
    while [ $i -lt 200 ]; do
        v=$(grep "\"event\":\"$2\"" "$LOGS/$1.log" 2>/dev/null | head -1 | sed -n "s/.*$3\([^ \"]*\).*/\1/p")
        if [ -n "$v" ]; then echo "$v"; return 0; fi
        i=$((i + 1))
        sleep 0.05
    done
    echo "bench: $1 did not log $2 (logs in $LOGS)" >&2
    stop
    exit 1
}

# A pipeline: $1 name, $2 policy (or ""). Sets SPEC_<name> for sluice-bench.
pipeline() {
    n=$1 policy=$2
    start "$n-emitter" emitter --bind 'tcp://127.0.0.1:*' --pub 'tcp://127.0.0.1:*' --metrics-port off
    e=$LAST
    next=$(value "$n-emitter" inbox_bound endpoint=)
    start "$n-judge" judge --bind 'tcp://127.0.0.1:*' --next "$next" --policy "$policy" --metrics-port off
    j=$LAST
    next=$(value "$n-judge" inbox_bound endpoint=)
    start "$n-aggregator" aggregator --bind 'tcp://127.0.0.1:*' --next "$next" --metrics-port off
    a=$LAST
    next=$(value "$n-aggregator" inbox_bound endpoint=)
    start "$n-ingest" ingest --bind 'tcp://127.0.0.1:*' --next "$next" --openai-base-url "$MOCK/v1" --metrics-port 0
    i=$LAST
    next=$(value "$n-ingest" inbox_bound endpoint=)
    imetrics=$(value "$n-ingest" started metrics_port=)
    start "$n-gateway" gateway --http-port 0 --bind 'tcp://127.0.0.1:*' --next "$next" --metrics-port off \
        --stream-cap 67108864
    g=$LAST
    http=$(value "$n-gateway" listening http=127.0.0.1:)
    eval "SPEC_$n=\"$n=http://127.0.0.1:$http/v1@gateway:$g,ingest:$i,aggregator:$a,judge:$j,emitter:$e#$imetrics\""
}

start mock mock --port 0 --delay-ms 0
MOCK=http://127.0.0.1:$(value mock listening http=127.0.0.1:)
pipeline rule "$HERE/deploy/policy.yaml"
pipeline none ""

if [ "${1:-}" = "--hold" ]; then
    # For profiling: print what sluice-bench would be given, and wait.
    echo "mock: $MOCK/v1"
    echo "rule: $SPEC_rule"
    echo "none: $SPEC_none"
    trap 'stop; rm -rf "$LOGS"; exit 0' INT TERM
    while :; do sleep 1; done
fi

"$BIN/sluice-bench" --mock "$MOCK/v1" --stack "$SPEC_rule" --stack2 "$SPEC_none" "$@"
rc=$?
stop
if [ $rc -eq 0 ]; then rm -rf "$LOGS"; else echo "bench: logs kept in $LOGS" >&2; fi
exit $rc
