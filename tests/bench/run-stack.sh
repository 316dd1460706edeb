#!/bin/sh
# make bench, part 2: start the mock, nginx in front of it (the floor: a
# plain reverse proxy, one worker, proxy_buffering off, keep-alive to the
# mock) and three sluice stacks on loopback (the rule-only default policy
# as deployed, the stages' inboxes on tcp://; the same on ipc://; and the
# first on a plaintext bus: --bus-auth off, to measure what CURVE costs),
# run sluice-bench against them and the bare mock, then stop everything.
#
#   tests/bench/run-stack.sh build/bin [extra sluice-bench flags]
#   tests/bench/run-stack.sh build/bin --hold   # start, print, wait (profiling)
#   SLUICE_BENCH_TRACES=1 tests/bench/run-stack.sh build/bin --only s1000
#       the cost of tracing: the rule stack ("rule") against the same stack
#       tracing every stream ("traced": SLUICE_OTLP_ENDPOINT set, so the
#       gateway begins a sampled trace for each and the emitter exports
#       its spans to the OTLP receiver of tests/otel, make otel-deps)
#   SLUICE_BENCH_TRACES=hang (or 500, 400, garbage, down) ... the same with
#       a collector that never answers, fails, refuses, answers garbage or
#       is not there at all: the streams' figures must stay within the
#       bench's spread (spans are dropped and counted, never waited for)
#
# Every process binds a free port (0 / *) or a socket file in the run's
# directory, and the script reads the endpoint it got from the process's
# own log line, so several runs can share a machine; the gateway's inbox,
# which its emitter connects to first, is picked beforehand. The bus keys are made for the run in its log directory.
# nginx runs with its own prefix, configuration, pid and log files in that
# directory, on a free port; without nginx (Debian's nginx-light) the run
# goes on without the floor, and says so.
set -u
BIN=${1:-build/bin}
shift || true
HERE=$(cd "$(dirname "$0")/../.." && pwd)
LOGS=$(mktemp -d /tmp/sluice-bench-XXXXXX)
WHO=bench
. "$HERE/tests/bench/stack-lib.sh"

# The bench opens 1,000 connections at once, and so do the processes it
# drives: raise the soft limit on open files to the hard one for all of them.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
trap 'stop; exit 1' INT TERM

# The inbox of stage $2 of pipeline $1 on transport $3: a socket file in
# the run's directory (ipc), or a free port on loopback (tcp).
inbox_of() {
    if [ "$3" = ipc ]; then echo "ipc://$LOGS/$1-$2.ipc"
    elif [ "$2" = gateway ]; then echo "tcp://127.0.0.1:$(free_port)"
    else echo 'tcp://127.0.0.1:*'; fi
}

# A pipeline: $1 name, $2 policy (or ""), $3 the bus's security ("on": the
# run's keys, "off": plaintext), $4 the inboxes' transport (ipc or tcp).
# Sets SPEC_<name> for sluice-bench.
pipeline() {
    n=$1 policy=$2 via=$4
    if [ "$3" = on ]; then bus="--keys $KEYS"; else bus="--bus-auth off"; fi
    inbox() { inbox_of "$n" "$1" "$via"; }
    gw=$(inbox gateway)
    # shellcheck disable=SC2086
    start "$n-emitter" emitter --bind "$(inbox emitter)" --gateways "$gw" --pub 'tcp://127.0.0.1:*' \
        --pub-meta off --metrics-port off $bus
    e=$LAST
    next=$(value "$n-emitter" inbox_bound endpoint=)
    # shellcheck disable=SC2086
    start "$n-judge" judge --bind "$(inbox judge)" --next "$next" --policy "$policy" --metrics-port off \
        --approvals-bind off $bus
    j=$LAST
    next=$(value "$n-judge" inbox_bound endpoint=)
    # shellcheck disable=SC2086
    start "$n-aggregator" aggregator --bind "$(inbox aggregator)" --next "$next" --metrics-port off $bus
    a=$LAST
    next=$(value "$n-aggregator" inbox_bound endpoint=)
    # shellcheck disable=SC2086
    start "$n-ingest" ingest --bind "$(inbox ingest)" --next "$next" --openai-base-url "$MOCK/v1" --metrics-port 0 $bus
    i=$LAST
    next=$(value "$n-ingest" inbox_bound endpoint=)
    imetrics=$(value "$n-ingest" started metrics_port=)
    # shellcheck disable=SC2086
    start "$n-gateway" gateway --http-port 0 --bind "$gw" --next "$next" --metrics-port off \
        --stream-cap 67108864 --policy "$policy" $bus
    g=$LAST
    http=$(value "$n-gateway" listening http=127.0.0.1:)
    up=$(value "$n-emitter" peer_up name=)           # the emitter heard from its gateway ($up)
    eval "SPEC_$n=\"$n=http://127.0.0.1:$http/v1@gateway:$g,ingest:$i,aggregator:$a,judge:$j,emitter:$e#$imetrics\""
}

KEYS=$LOGS/keys
"$BIN/sluice-keygen" --dir "$KEYS" > /dev/null || { echo "bench: cannot make keys in $KEYS" >&2; exit 1; }
start mock mock --port 0 --delay-ms 0
MOCKPID=$LAST
MOCK=http://127.0.0.1:$(value mock listening http=127.0.0.1:)
# nginx in front of the mock: $1 the mock's port. Sets SPEC_nginx ("" when
# nginx is not installed or does not start).
floor() {
    SPEC_nginx=""
    NGINX=$(command -v nginx || echo /usr/sbin/nginx)
    if [ ! -x "$NGINX" ]; then
        echo "bench: nginx is not installed (Debian's nginx-light): no floor in this run" >&2
        return 0
    fi
    dir=$LOGS/nginx
    mkdir -p "$dir/tmp"
    port=$(free_port)
    cat > "$dir/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile 16384;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 8192; }
http {
    access_log off;
    client_body_temp_path $dir/tmp/body;
    client_body_buffer_size 1m;         # request bodies in memory (its workers may not write our temporary directory)
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    upstream mock {
        server 127.0.0.1:$1;
        keepalive 1024;
    }
    server {
        listen 127.0.0.1:$port;
        location / {
            proxy_pass http://mock;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 300s;
        }
    }
}
CONF
    "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" > "$LOGS/nginx.log" 2>&1 &
    master=$!
    PIDS="$PIDS $master"
    # Its worker, once it has one (bounded: 5 s).
    i=0 worker=""
    while [ $i -lt 100 ] && [ -z "$worker" ]; do
        worker=$(awk -v m="$master" '$2 == "(nginx)" && $4 == m { print $1 }' /proc/[0-9]*/stat 2>/dev/null | head -1)
        [ -z "$worker" ] && sleep 0.05
        i=$((i + 1))
    done
    if [ -z "$worker" ]; then
        echo "bench: nginx did not start (logs in $dir): no floor in this run" >&2
        return 0
    fi
    SPEC_nginx="nginx=http://127.0.0.1:$port/v1@nginx:$master,nginx-worker:$worker"
}

floor "$(echo "$MOCK" | sed 's/.*://')"
if [ -n "${SLUICE_BENCH_TRACES:-}" ]; then
    if ! command -v node > /dev/null || [ ! -d "$HERE/tests/otel/node_modules" ]; then
        echo "bench: the traces variant needs node and the OTLP receiver (make otel-deps)" >&2
        stop
        exit 1
    fi
    otlp=$(free_port)
    case "$SLUICE_BENCH_TRACES" in
        down) ;;                        # nothing listens on the port
        hang|500|400|429|garbage)
            node "$HERE/tests/otel/receiver.mjs" --port "$otlp" --out /dev/null --mode "$SLUICE_BENCH_TRACES" \
                > "$LOGS/otlp.log" 2>&1 &
            PIDS="$PIDS $!" ;;
        *)
            node "$HERE/tests/otel/receiver.mjs" --port "$otlp" --out /dev/null > "$LOGS/otlp.log" 2>&1 &
            PIDS="$PIDS $!" ;;
    esac
    pipeline rule "$HERE/deploy/policy.yaml" on tcp
    export SLUICE_OTLP_ENDPOINT="http://127.0.0.1:$otlp"
    pipeline traced "$HERE/deploy/policy.yaml" on tcp
    unset SLUICE_OTLP_ENDPOINT
    "$BIN/sluice-bench" --mock "$MOCK/v1" --mock-pid "$MOCKPID" --floor "$SPEC_nginx" \
        --stack "$SPEC_rule" --stack2 "$SPEC_traced" "$@"
    rc=$?
    stop
    if [ $rc -eq 0 ]; then rm -rf "$LOGS"; else echo "bench: logs kept in $LOGS" >&2; fi
    exit $rc
fi
# rule: as deployed (make run, docker compose): the default policy, CURVE,
# the inboxes on tcp://. ipc: the same with the inboxes on ipc:// (one
# host). plain: rule on a plaintext bus, for what CURVE costs.
pipeline rule "$HERE/deploy/policy.yaml" on tcp
pipeline ipc "$HERE/deploy/policy.yaml" on ipc
pipeline plain "$HERE/deploy/policy.yaml" off tcp

if [ "${1:-}" = "--hold" ]; then
    # For profiling: print what sluice-bench would be given, and wait.
    echo "mock: $MOCK/v1"
    echo "nginx: $SPEC_nginx"
    echo "rule: $SPEC_rule"
    echo "ipc: $SPEC_ipc"
    echo "plain: $SPEC_plain"
    trap 'stop; rm -rf "$LOGS"; exit 0' INT TERM
    while :; do sleep 1; done
fi

"$BIN/sluice-bench" --mock "$MOCK/v1" --mock-pid "$MOCKPID" --floor "$SPEC_nginx" \
    --stack "$SPEC_rule" --stack2 "$SPEC_ipc" --stack3 "$SPEC_plain" "$@"
rc=$?
stop
if [ $rc -eq 0 ]; then rm -rf "$LOGS"; else echo "bench: logs kept in $LOGS" >&2; fi
exit $rc
