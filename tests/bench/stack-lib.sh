# stack-lib.sh - what make bench's stack scripts (run-stack.sh,
# audit-stack.sh, mcp-stack.sh) share, sourced once LOGS (the run's
# directory), BIN (the programs) and WHO (the name its messages begin
# with) are set: starting a program with its log in LOGS, reading an
# endpoint from its own log line, a free port, stopping all it started.
PIDS=""

# stop: SIGTERM to every process started, then wait for each.
stop() {
    for pid in $PIDS; do kill -TERM "$pid" 2>/dev/null; done
    for pid in $PIDS; do wait "$pid" 2>/dev/null; done
    PIDS=""
}

# start <label> <program> <args...>: sluice-<program> from BIN (or, when
# <program> is a path, that); LAST is its pid, its log $LOGS/<label>.log
start() {
    label=$1 name=$2
    shift 2
    case "$name" in */*) program=$name ;; *) program=$BIN/sluice-$name ;; esac
    "$program" "$@" > "$LOGS/$label.log" 2>&1 &
    PIDS="$PIDS $!"
    LAST=$!
}

# value <label> <event> <key>: what follows "<key>" on the process's
# "<event>" log line, waiting for it (bounded: 20 s).
value() {
    i=0
    while [ $i -lt 400 ]; do
        v=$(grep "\"event\":\"$2\"" "$LOGS/$1.log" 2>/dev/null | head -1 | sed -n "s/.*$3\([^ \"]*\).*/\1/p")
        if [ -n "$v" ]; then echo "$v"; return 0; fi
        i=$((i + 1))
        sleep 0.05
    done
    echo "$WHO: $1 did not log $2 (logs in $LOGS)" >&2
    stop
    exit 1
}

# A free TCP port on 127.0.0.1.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
