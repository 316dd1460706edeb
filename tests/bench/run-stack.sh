#!/bin/sh
# make bench, part 2: start the mock and two sluice stacks on loopback (one
# with the rule-only default policy, one with no policy), run sluice-bench
# against them and the bare mock, then stop everything.
#
#   tests/bench/run-stack.sh build/bin [extra sluice-bench flags]
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

start() {
    name=$1; shift
    "$BIN/sluice-$name" "$@" > "$LOGS/$name.$#.log" 2>&1 &
    PIDS="$PIDS $!"
    LAST=$!
}

# A pipeline: $1 name, $2 HTTP port, $3 first ZeroMQ port, $4 policy (or "").
pipeline() {
    n=$1 http=$2 z=$3 policy=$4
    start emitter --bind tcp://127.0.0.1:$((z + 3)) --pub tcp://127.0.0.1:$((z + 5)) --metrics-port off
    e=$LAST
    start judge --bind tcp://127.0.0.1:$((z + 2)) --next tcp://127.0.0.1:$((z + 3)) --policy "$policy" --metrics-port off
    j=$LAST
    start aggregator --bind tcp://127.0.0.1:$((z + 1)) --next tcp://127.0.0.1:$((z + 2)) --metrics-port off
    a=$LAST
    start ingest --bind tcp://127.0.0.1:$z --next tcp://127.0.0.1:$((z + 1)) --openai-base-url http://127.0.0.1:19090/v1 --metrics-port off
    i=$LAST
    start gateway --http-port "$http" --bind tcp://127.0.0.1:$((z + 4)) --next tcp://127.0.0.1:$z --metrics-port off --stream-cap 67108864
    g=$LAST
    eval "SPEC_$n=\"$n=http://127.0.0.1:$http/v1@gateway:$g,ingest:$i,aggregator:$a,judge:$j,emitter:$e\""
}

start mock --port 19090 --delay-ms 0
pipeline rule 18080 15551 "$HERE/deploy/policy.yaml"
pipeline none 18081 16551 ""

# Ready when both gateways and the mock answer (bounded: 10 s).
for port in 18080 18081 19090; do
    i=0
    until curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 100 ]; then echo "bench stack did not come up (logs in $LOGS)" >&2; stop; exit 1; fi
        sleep 0.1
    done
done

"$BIN/sluice-bench" --mock http://127.0.0.1:19090/v1 --stack "$SPEC_rule" --stack2 "$SPEC_none" "$@"
rc=$?
stop
[ $rc -eq 0 ] && rm -rf "$LOGS"
exit $rc
