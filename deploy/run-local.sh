#!/bin/sh
# Start the whole sluice stack on 127.0.0.1 from one directory of binaries:
# the mock upstream (unless a real provider key is set), ingest, aggregator,
# judge, emitter and gateway. Prints one ready line; on SIGINT or SIGTERM
# stops every process it started and exits 0.
#
#   deploy/run-local.sh build/bin
#
# Ports: SLUICE_HTTP_PORT (8080) for clients, SLUICE_MOCK_PORT (9090) for
# the mock, 5551-5556 for the pipeline, 9551-9555 for /metrics.
set -u
BIN=${1:-build/bin}
HERE=$(cd "$(dirname "$0")" && pwd)
HTTP_PORT=${SLUICE_HTTP_PORT:-8080}
MOCK_PORT=${SLUICE_MOCK_PORT:-9090}
POLICY=${SLUICE_POLICY:-$HERE/policy.yaml}
PIDS=""

stop() {
    trap - INT TERM
    for pid in $PIDS; do kill -TERM "$pid" 2>/dev/null; done
    for pid in $PIDS; do wait "$pid" 2>/dev/null; done
    [ -n "${ROUTES:-}" ] && rm -f "$ROUTES"
    exit 0
}
trap stop INT TERM

start() {
    "$@" &
    PIDS="$PIDS $!"
}

ROUTES=""
if [ -n "${OPENAI_API_KEY:-}" ] && [ -n "${SLUICE_OPENAI_BASE_URL:-}" -o -z "${SLUICE_USE_MOCK:-}" ]; then
    UPSTREAM=${SLUICE_OPENAI_BASE_URL:-https://api.openai.com/v1}
    echo "upstream: $UPSTREAM (OPENAI_API_KEY is set)"
else
    start "$BIN/sluice-mock" --host 127.0.0.1 --port "$MOCK_PORT"
    UPSTREAM=http://127.0.0.1:$MOCK_PORT/v1
    echo "upstream: the mock at $UPSTREAM, every dialect (set OPENAI_API_KEY to use OpenAI)"
    if [ -z "${SLUICE_ROUTES:-}" ]; then
        # The mock serves all four dialects; its scenarios are the models
        # GET /v1/models lists (the gateway and the ingest read this file).
        ROUTES=$(mktemp "${TMPDIR:-/tmp}/sluice-routes.XXXXXX")
        {
            echo "providers:"
            echo "  - { name: mock-openai, dialect: openai, base_url: \"http://127.0.0.1:$MOCK_PORT/v1\" }"
            echo "  - { name: mock-responses, dialect: responses, base_url: \"http://127.0.0.1:$MOCK_PORT/v1\" }"
            echo "  - { name: mock-anthropic, dialect: anthropic, base_url: \"http://127.0.0.1:$MOCK_PORT\" }"
            echo "  - { name: mock-gemini, dialect: gemini, base_url: \"http://127.0.0.1:$MOCK_PORT/v1beta\" }"
            echo "routes:"
            for model in mock-text mock-tools mock-error mock-bench; do
                for provider in mock-openai mock-anthropic mock-gemini; do
                    echo "  - { model: $model, provider: $provider }"
                done
            done
        } > "$ROUTES"
        export SLUICE_ROUTES=$ROUTES
    fi
fi

start "$BIN/sluice-emitter" --bind tcp://127.0.0.1:5554 --pub tcp://127.0.0.1:5556 --metrics-port 9554
start "$BIN/sluice-judge" --bind tcp://127.0.0.1:5553 --next tcp://127.0.0.1:5554 --policy "$POLICY" --metrics-port 9553
start "$BIN/sluice-aggregator" --bind tcp://127.0.0.1:5552 --next tcp://127.0.0.1:5553 --metrics-port 9552
start "$BIN/sluice-ingest" --bind tcp://127.0.0.1:5551 --next tcp://127.0.0.1:5552 --openai-base-url "$UPSTREAM" --metrics-port 9551
start "$BIN/sluice-gateway" --http-host 127.0.0.1 --http-port "$HTTP_PORT" --bind tcp://127.0.0.1:5555 --next tcp://127.0.0.1:5551 --metrics-port 9555

# Ready when the gateway answers (bounded: 10 s).
i=0
until curl -sf "http://127.0.0.1:$HTTP_PORT/healthz" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 100 ]; then echo "sluice did not come up" >&2; stop; fi
    sleep 0.1
done
echo "sluice ready on http://127.0.0.1:$HTTP_PORT  try:  curl -sN localhost:$HTTP_PORT/v1/chat/completions -H 'content-type: application/json' -d '{\"model\":\"mock-tools\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}'"
wait
