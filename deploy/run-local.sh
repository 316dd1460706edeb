#!/bin/sh
# Start the whole sluice stack on 127.0.0.1 from one directory of binaries:
# the mock upstream, ingest, aggregator, judge, emitter and gateway, and
# sluice-audit recording every stream in SQLite with its web console.
# Prints one ready line; on SIGINT or SIGTERM stops every process it
# started and exits 0.
#
#   deploy/run-local.sh build/bin
#
# Ports: SLUICE_HTTP_PORT (8080) for clients, SLUICE_MOCK_PORT (9090) for
# the mock, 5551-5558 for the pipeline (5556 and 5557: the taps', 5558: the
# audit's), 9551-9555 and 9558 for /metrics, SLUICE_CONSOLE_PORT (8081) for
# the audit's console. The audit store is SQLite in SLUICE_AUDIT_DATA
# (default: audit/ beside the binaries' directory, build/audit for make run),
# or PostgreSQL when SLUICE_AUDIT_DSN names one. The audit signs its hash
# chain's checkpoints with keys/audit.sign_secret (made on the first start)
# and appends them to SLUICE_AUDIT_CHECKPOINTS (default: checkpoints.jsonl
# beside the binaries' directory): sluice-audit verify checks both.
#
# The bus between the processes is CURVE-encrypted and authenticated. Its
# keys are made on the first start in SLUICE_KEYS (default: keys/ beside
# the binaries' directory, build/keys for make run) and kept; a tap reads
# with one of them: sluice-tap --keys build/keys (everything) or
# sluice-tap --keys build/keys --key tap-meta (metadata only).
set -u
BIN=${1:-build/bin}
HERE=$(cd "$(dirname "$0")" && pwd)
KEYS=${SLUICE_KEYS:-$(cd "$BIN/.." && pwd)/keys}
HTTP_PORT=${SLUICE_HTTP_PORT:-8080}
MOCK_PORT=${SLUICE_MOCK_PORT:-9090}
POLICY=${SLUICE_POLICY:-$HERE/policy.yaml}
CONSOLE_PORT=${SLUICE_CONSOLE_PORT:-8081}
AUDIT_DATA=${SLUICE_AUDIT_DATA:-$(cd "$BIN/.." && pwd)/audit}
CHECKPOINTS=${SLUICE_AUDIT_CHECKPOINTS:-$(cd "$BIN/.." && pwd)/checkpoints.jsonl}
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

# The mock always runs; a dialect goes to its real provider when that
# provider's key is set (or its base URL is given explicitly).
# The bus's keys: made once, kept (sluice-keygen leaves existing keys alone).
if ! "$BIN/sluice-keygen" --dir "$KEYS" >/dev/null; then
    echo "cannot make the bus keys in $KEYS" >&2
    exit 1
fi
echo "bus keys: $KEYS  (watch with: $BIN/sluice-tap --keys $KEYS)"
# The audit's signing key (its chain's checkpoints): made once, kept.
if ! "$BIN/sluice-keygen" --dir "$KEYS" --signing audit >/dev/null; then
    echo "cannot make the audit's signing key in $KEYS" >&2
    exit 1
fi

# Bedrock on the mock: with no AWS credentials here, the mock and the
# ingest get the same made-up keys, and the mock checks the ingest's SigV4
# signatures as AWS would (with real ones, the mock checks none).
if [ -z "${AWS_ACCESS_KEY_ID:-}${AWS_BEARER_TOKEN_BEDROCK:-}${AWS_ROLE_ARN:-}" ]; then
    export AWS_ACCESS_KEY_ID=AKIDMOCKNOTAREALKEY AWS_SECRET_ACCESS_KEY=mock-secret-not-a-real-key
    export SLUICE_MOCK_AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID SLUICE_MOCK_AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
fi
MOCK=http://127.0.0.1:$MOCK_PORT
# Vertex AI on the mock with Google's own kind of credential: a service
# account's key made here (an RSA key, once, kept with the bus keys; no
# Google account), whose token_uri is the mock's token endpoint. The mock
# takes its grants and the ingest fetches tokens with it.
GCP_PEM=$KEYS/mock-gcp.pem
GCP_KEY=$KEYS/mock-gcp-key.json
if [ ! -s "$GCP_PEM" ] && ! (umask 077 && openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 \
        -out "$GCP_PEM" 2>/dev/null); then
    echo "cannot make the mock's Google key in $KEYS (openssl)" >&2
    exit 1
fi
(umask 077 && printf '{"type":"service_account","project_id":"mock-project","private_key_id":"mock",'\
'"private_key":"%s","client_email":"sluice@mock-project.iam.gserviceaccount.com",'\
'"token_uri":"%s/token"}\n' "$(awk '{printf "%s\\n", $0}' "$GCP_PEM")" "$MOCK" > "$GCP_KEY")
start "$BIN/sluice-mock" --host 127.0.0.1 --port "$MOCK_PORT" --gcp-key-file "$GCP_KEY"
pick() {  # pick <explicit url> <key> <real url> <mock url>
    if [ -n "$1" ]; then echo "$1"; elif [ -n "$2" ]; then echo "$3"; else echo "$4"; fi
}
OPENAI_URL=$(pick "${SLUICE_OPENAI_BASE_URL:-}" "${OPENAI_API_KEY:-}" https://api.openai.com/v1 "$MOCK/v1")
ANTHROPIC_URL=$(pick "${SLUICE_ANTHROPIC_BASE_URL:-}" "${ANTHROPIC_API_KEY:-}" https://api.anthropic.com "$MOCK")
GEMINI_URL=$(pick "${SLUICE_GEMINI_BASE_URL:-}" "${GEMINI_API_KEY:-}" https://generativelanguage.googleapis.com/v1beta "$MOCK/v1beta")
echo "upstreams: openai $OPENAI_URL, anthropic $ANTHROPIC_URL, gemini $GEMINI_URL"
echo "(each is the mock unless its API key or base URL is set)"

ROUTES=""
if [ -z "${SLUICE_ROUTES:-}" ]; then
    # One provider per dialect (the default for its models), and the mock's
    # scenarios always on the mock: GET /v1/models lists them (the gateway
    # routes with this file, and the ingest reads it too).
    ROUTES=$(mktemp "${TMPDIR:-/tmp}/sluice-routes.XXXXXX")
    {
        echo "providers:"
        echo "  - { name: openai, dialect: openai, base_url: \"$OPENAI_URL\", key_env: OPENAI_API_KEY }"
        echo "  - { name: responses, dialect: responses, base_url: \"$OPENAI_URL\", key_env: OPENAI_API_KEY }"
        echo "  - { name: anthropic, dialect: anthropic, base_url: \"$ANTHROPIC_URL\", key_env: ANTHROPIC_API_KEY }"
        echo "  - { name: gemini, dialect: gemini, base_url: \"$GEMINI_URL\", key_env: GEMINI_API_KEY }"
        echo "  - { name: mock-openai, dialect: openai, base_url: \"$MOCK/v1\" }"
        echo "  - { name: mock-responses, dialect: responses, base_url: \"$MOCK/v1\" }"
        echo "  - { name: mock-anthropic, dialect: anthropic, base_url: \"$MOCK\" }"
        echo "  - { name: mock-gemini, dialect: gemini, base_url: \"$MOCK/v1beta\" }"
        echo "  - { name: mock-vertex, dialect: vertex, base_url: \"$MOCK\", region: us-east5, project: mock-project,"
        echo "      credentials_file: \"$GCP_KEY\" }"
        echo "  - { name: mock-vertex-anthropic, dialect: vertex-anthropic, base_url: \"$MOCK\", region: us-east5,"
        echo "      project: mock-project, credentials_file: \"$GCP_KEY\" }"
        echo "  - { name: mock-bedrock, dialect: bedrock, region: us-east-1, base_url: \"$MOCK\" }"
        echo "  - { name: mock-bedrock-anthropic, dialect: bedrock-anthropic, region: us-east-1, base_url: \"$MOCK\" }"
        echo "routes:"
        for model in mock-text mock-tools mock-error mock-bench mock-paced; do
            for provider in mock-openai mock-responses mock-anthropic mock-gemini; do
                echo "  - { model: $model, provider: $provider }"
            done
        done
        # "<scenario>@<dialect>": the mock of that dialect, from a client
        # of any (curl the chat endpoint with mock-tools@anthropic to see
        # a translation, mock-tools@vertex-anthropic for Claude on Vertex
        # AI with a token the ingest fetched, mock-tools@bedrock signed with
        # SigV4).
        for dialect in openai responses anthropic gemini vertex vertex-anthropic bedrock bedrock-anthropic; do
            echo "  - { model: \"*@$dialect\", provider: mock-$dialect }"
        done
    } > "$ROUTES"
    export SLUICE_ROUTES=$ROUTES
fi

# The keys the console issues (POST /api/keys) reach the gateway through
# the audit's /api/keys/served, with a token made for this run (unless
# SLUICE_KEYS_TOKEN is set). The gateway, on loopback, lets everyone in
# until the first key is issued, then only keys (docs/identity.md).
if [ -z "${SLUICE_KEYS_TOKEN:-}" ]; then
    SLUICE_KEYS_TOKEN=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
fi
export SLUICE_KEYS_TOKEN

start "$BIN/sluice-emitter" --keys "$KEYS" --bind tcp://127.0.0.1:5554 --gateways tcp://127.0.0.1:5555 \
    --pub tcp://127.0.0.1:5556 --pub-meta tcp://127.0.0.1:5557 --audit tcp://127.0.0.1:5558 --metrics-port 9554
start "$BIN/sluice-audit" --keys "$KEYS" --emitters tcp://127.0.0.1:5558 --data-dir "$AUDIT_DATA" \
    --console-port "$CONSOLE_PORT" --judge-approvals tcp://127.0.0.1:5563 --metrics-port 9558 \
    --signing-key "$KEYS/audit.sign_secret" --checkpoint-file "$CHECKPOINTS"
start "$BIN/sluice-judge" --keys "$KEYS" --bind tcp://127.0.0.1:5553 --next tcp://127.0.0.1:5554 --policy "$POLICY" \
    --approvals-bind tcp://127.0.0.1:5563 --metrics-port 9553
start "$BIN/sluice-aggregator" --keys "$KEYS" --bind tcp://127.0.0.1:5552 --next tcp://127.0.0.1:5553 --metrics-port 9552
start "$BIN/sluice-ingest" --keys "$KEYS" --bind tcp://127.0.0.1:5551 --next tcp://127.0.0.1:5552 \
    --openai-base-url "$OPENAI_URL" --anthropic-base-url "$ANTHROPIC_URL" --gemini-base-url "$GEMINI_URL" \
    --metrics-port 9551
start "$BIN/sluice-gateway" --keys "$KEYS" --http-host 127.0.0.1 --http-port "$HTTP_PORT" --bind tcp://127.0.0.1:5555 \
    --next tcp://127.0.0.1:5551 --policy "$POLICY" --judge-approvals tcp://127.0.0.1:5563 --metrics-port 9555 \
    --keys-url "http://127.0.0.1:$CONSOLE_PORT/api/keys/served"

# Ready when the gateway answers, the emitter has heard from it (frames
# go only to a gateway that announced itself) and the gateway has had a
# good answer from the audit about the keys it issued (before one, no key
# is let in and a request gets 401: its fetches outnumber its failed
# ones). Bounded: 20 s.
keys_fetched () {
    curl -sf http://127.0.0.1:9555/metrics 2>/dev/null | awk '
        $1 == "sluice_keys_fetches_total" { f = $2 }
        $1 == "sluice_keys_fetch_failures_total" { x = $2 }
        END { exit !(f + 0 > x + 0) }'
}
i=0
until curl -sf "http://127.0.0.1:$HTTP_PORT/healthz" >/dev/null 2>&1 \
      && curl -sf http://127.0.0.1:9554/metrics 2>/dev/null | grep -q '^sluice_gateways_alive 1' \
      && keys_fetched; do
    i=$((i + 1))
    if [ $i -gt 200 ]; then echo "sluice did not come up" >&2; stop; fi
    sleep 0.1
done
echo "audit console: http://127.0.0.1:$CONSOLE_PORT/  (store: ${SLUICE_AUDIT_DSN:+PostgreSQL}${SLUICE_AUDIT_DSN:-SQLite in $AUDIT_DATA})"
if [ -n "${SLUICE_AUDIT_DSN:-}" ]; then store='--dsn "$SLUICE_AUDIT_DSN"'; else store="--data-dir $AUDIT_DATA"; fi
echo "audit chain: signed checkpoints also in $CHECKPOINTS  (check: $BIN/sluice-audit verify $store --public-key $KEYS/audit.sign --checkpoint-file $CHECKPOINTS)"
echo "sluice ready on http://127.0.0.1:$HTTP_PORT  try:  curl -sN localhost:$HTTP_PORT/v1/chat/completions -H 'content-type: application/json' -d '{\"model\":\"mock-tools\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}'"
wait
