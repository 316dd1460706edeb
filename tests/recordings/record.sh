#!/bin/sh
# record.sh BIN_DIR - the project's own recorded provider streams: what
# sluice-mock sends for a few scenarios in each provider dialect, written
# to tests/recordings/<dialect directory>/<dialect directory>-mock-<scenario>.sse
# (named apart: the expectation files under tests/expected/ go by name).
#
# The unit and integration tests decode, aggregate, replay and judge these
# as they do the recordings of real providers in ../shared/corpus, so the
# core checks run on a clean clone without it. The mock's bytes depend only
# on the request (ids and time stamps come from its body), so running this
# again writes the same files; run it after changing the mock's scenarios,
# then write the expectation files again and read them against the
# recordings (tests/expected/*/README.md).
set -eu
bin=$(cd "${1:?usage: record.sh BIN_DIR}" && pwd)
cd "$(dirname "$0")"
log=$(mktemp)
"$bin/sluice-mock" --host 127.0.0.1 --port 0 --delay-ms 0 >"$log" 2>&1 &
mock=$!
trap 'kill $mock 2>/dev/null; rm -f "$log"' EXIT
port=""
for _ in $(seq 1 100); do
    port=$(sed -n 's/.*"listening".*http=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
    [ -n "$port" ] && break
    sleep 0.05
done
[ -n "$port" ] || { echo "record.sh: the mock did not start"; cat "$log"; exit 1; }
base=http://127.0.0.1:$port

# One scenario in one dialect: directory, path, body (with MODEL for the model).
record () {
    dir=$1 path=$2 body=$3 model=$4
    mkdir -p "$dir"
    path=$(printf '%s' "$path" | sed "s/MODEL/$model/")
    body=$(printf '%s' "$body" | sed "s/MODEL/$model/")
    curl -sN --max-time 10 "$base$path" -H 'content-type: application/json' -d "$body" \
        -o "$dir/$dir-$model.sse" || true   # mock-danger-eof ends mid-event, on purpose
}

for model in mock-text mock-tools mock-error mock-danger-length mock-danger-eof mock-bad-utf8; do
    record openai-chat /v1/chat/completions \
        '{"model":"MODEL","stream":true,"messages":[{"role":"user","content":"record"}]}' "$model"
    record openai-responses /v1/responses \
        '{"model":"MODEL","stream":true,"input":"record"}' "$model"
    record anthropic /v1/messages \
        '{"model":"MODEL","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"record"}]}' "$model"
    record gemini '/v1beta/models/MODEL:streamGenerateContent?alt=sse' \
        '{"contents":[{"role":"user","parts":[{"text":"record"}]}]}' "$model"
done
echo "record.sh: $(ls */*-mock-*.sse | wc -l) recordings written under $(pwd)"
