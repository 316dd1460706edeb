#!/bin/sh
# make bench, part 2: start the mock and three sluice stacks on loopback
# (the rule-only default policy, no policy, and the rule-only policy on a
# plaintext bus: --bus-auth off, to measure what CURVE costs), run
# sluice-bench against them and the bare mock, then stop everything.
#
#   tests/bench/run-stack.sh build/bin [extra sluice-bench flags]
#   tests/bench/run-stack.sh build/bin --hold   # start, print, wait (profiling)
#
# Every process binds a free port (0 / *) and the script reads the port it
# got from the process's own log line, so several runs can share a machine;
# the gateway's inbox, which its emitter connects to first, is a free port
# picked beforehand. The bus keys are made for the run in its log directory.
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

# A free TCP port on 127.0.0.1.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A pipeline: $1 name, $2 policy (or ""), $3 the bus's security ("on": the
# run's keys, "off": plaintext). Sets SPEC_<name> for sluice-bench.
pipeline() {
    n=$1 policy=$2
    if [ "$3" = on ]; then bus="--keys $KEYS"; else bus="--bus-auth off"; fi
    gw="tcp://127.0.0.1:$(free_port)"
    # shellcheck disable=SC2086
    start "$n-emitter" emitter --bind 'tcp://127.0.0.1:*' --gateways "$gw" --pub 'tcp://127.0.0.1:*' \
        --pub-meta off --metrics-port off $bus
    e=$LAST
    next=$(value "$n-emitter" inbox_bound endpoint=)
    # shellcheck disable=SC2086
    start "$n-judge" judge --bind 'tcp://127.0.0.1:*' --next "$next" --policy "$policy" --metrics-port off $bus
    j=$LAST
    next=$(value "$n-judge" inbox_bound endpoint=)
    # shellcheck disable=SC2086
    start "$n-aggregator" aggregator --bind 'tcp://127.0.0.1:*' --next "$next" --metrics-port off $bus
    a=$LAST
    next=$(value "$n-aggregator" inbox_bound endpoint=)
    # shellcheck disable=SC2086
    start "$n-ingest" ingest --bind 'tcp://127.0.0.1:*' --next "$next" --openai-base-url "$MOCK/v1" --metrics-port 0 $bus
    i=$LAST
    next=$(value "$n-ingest" inbox_bound endpoint=)
    imetrics=$(value "$n-ingest" started metrics_port=)
    # shellcheck disable=SC2086
    start "$n-gateway" gateway --http-port 0 --bind "$gw" --next "$next" --metrics-port off \
        --stream-cap 67108864 $bus
    g=$LAST
    http=$(value "$n-gateway" listening http=127.0.0.1:)
    up=$(value "$n-emitter" peer_up name=)           # the emitter heard from its gateway ($up)
    eval "SPEC_$n=\"$n=http://127.0.0.1:$http/v1@gateway:$g,ingest:$i,aggregator:$a,judge:$j,emitter:$e#$imetrics\""
}

KEYS=$LOGS/keys
"$BIN/sluice-keygen" --dir "$KEYS" > /dev/null || { echo "bench: cannot make keys in $KEYS" >&2; exit 1; }
start mock mock --port 0 --delay-ms 0
MOCK=http://127.0.0.1:$(value mock listening http=127.0.0.1:)
pipeline rule "$HERE/deploy/policy.yaml" on
pipeline none "" on
pipeline plain "$HERE/deploy/policy.yaml" off

if [ "${1:-}" = "--hold" ]; then
    # For profiling: print what sluice-bench would be given, and wait.
    echo "mock: $MOCK/v1"
    echo "rule: $SPEC_rule"
    echo "none: $SPEC_none"
    echo "plain: $SPEC_plain"
    trap 'stop; rm -rf "$LOGS"; exit 0' INT TERM
    while :; do sleep 1; done
fi

"$BIN/sluice-bench" --mock "$MOCK/v1" --stack "$SPEC_rule" --stack2 "$SPEC_none" --stack3 "$SPEC_plain" "$@"
rc=$?
stop
if [ $rc -eq 0 ]; then rm -rf "$LOGS"; else echo "bench: logs kept in $LOGS" >&2; fi
exit $rc
