#!/bin/sh
# make bench, part 5: what AWS's event stream costs the proxy against SSE
# (issue 40: an event-stream upstream's CPU per chunk within 10% of SSE's).
# One sluice stack as deployed (the default policy, CURVE, tcp://) with a
# routes file sending three models to the same mock: the same mock-bench
# stream (the same chunks, the same count) served as Anthropic's SSE
# (POST /v1/messages), as Claude on Bedrock's event stream
# (InvokeModelWithResponseStream, SigV4-signed with the run's keys, which
# the mock checks) and as Bedrock's Converse event stream; sluice-bench
# --evstream then reads the CPU per chunk of the ingest and of every
# process, an OpenAI chat client for all three (medians of three runs).
#
#   tests/bench/evstream-stack.sh build/bin [--out file.json] [--quick yes]
#
# Every process binds a free port or one picked beforehand, as in
# run-stack.sh; the run's directory is removed when the run succeeds.
set -u
BIN=${1:-build/bin}
shift || true
HERE=$(cd "$(dirname "$0")/../.." && pwd)
LOGS=$(mktemp -d /tmp/sluice-evbench-XXXXXX)
WHO=evstream-bench
. "$HERE/tests/bench/stack-lib.sh"
trap 'stop; exit 1' INT TERM

# The run's own AWS keys: the ingest signs with them, the mock checks.
export AWS_ACCESS_KEY_ID=AKIDEXAMPLEBENCH AWS_SECRET_ACCESS_KEY=bench-secret-access-key
export SLUICE_MOCK_AWS_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID SLUICE_MOCK_AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY
unset AWS_SESSION_TOKEN AWS_BEARER_TOKEN_BEDROCK AWS_ROLE_ARN AWS_WEB_IDENTITY_TOKEN_FILE

KEYS=$LOGS/keys
"$BIN/sluice-keygen" --dir "$KEYS" > /dev/null || { echo "$WHO: cannot make keys in $KEYS" >&2; exit 1; }
start mock mock --port 0 --delay-ms 0
MOCKPID=$LAST
MOCK=http://127.0.0.1:$(value mock listening http=127.0.0.1:)
ROUTES=$LOGS/routes.yaml
cat > "$ROUTES" <<YAML
providers:
  - { name: mock-anthropic, dialect: anthropic, base_url: "$MOCK" }
  - { name: mock-claude-bedrock, dialect: bedrock-anthropic, region: us-west-2, base_url: "$MOCK" }
  - { name: mock-converse, dialect: bedrock, region: us-west-2, base_url: "$MOCK" }
routes:
  - model: bench-sse
    providers: [{ provider: mock-anthropic, model: "mock-bench" }]
  - model: bench-evstream
    providers: [{ provider: mock-claude-bedrock, model: "mock-bench" }]
  - model: bench-converse
    providers: [{ provider: mock-converse, model: "mock-bench" }]
YAML

n=ev policy=$HERE/deploy/policy.yaml bus="--keys $KEYS"
gw=tcp://127.0.0.1:$(free_port)
# shellcheck disable=SC2086
start "$n-emitter" emitter --bind 'tcp://127.0.0.1:*' --gateways "$gw" --pub 'tcp://127.0.0.1:*' \
    --pub-meta off --metrics-port off $bus
e=$LAST
next=$(value "$n-emitter" inbox_bound endpoint=)
# shellcheck disable=SC2086
start "$n-judge" judge --bind 'tcp://127.0.0.1:*' --next "$next" --policy "$policy" --metrics-port off \
    --approvals-bind off $bus
j=$LAST
next=$(value "$n-judge" inbox_bound endpoint=)
# shellcheck disable=SC2086
start "$n-aggregator" aggregator --bind 'tcp://127.0.0.1:*' --next "$next" --metrics-port off $bus
a=$LAST
next=$(value "$n-aggregator" inbox_bound endpoint=)
# shellcheck disable=SC2086
start "$n-ingest" ingest --bind 'tcp://127.0.0.1:*' --next "$next" --routes "$ROUTES" --metrics-port off $bus
i=$LAST
next=$(value "$n-ingest" inbox_bound endpoint=)
# shellcheck disable=SC2086
start "$n-gateway" gateway --http-port 0 --bind "$gw" --next "$next" --metrics-port off \
    --stream-cap 67108864 --policy "$policy" --routes "$ROUTES" $bus
g=$LAST
http=$(value "$n-gateway" listening http=127.0.0.1:)
# the emitter heard from its gateway
[ -n "$(value "$n-emitter" peer_up name=)" ] || { stop; exit 1; }
SPEC="$n=http://127.0.0.1:$http/v1@gateway:$g,ingest:$i,aggregator:$a,judge:$j,emitter:$e"

"$BIN/sluice-bench" --mock "$MOCK/v1" --mock-pid "$MOCKPID" --stack "$SPEC" \
    --evstream bench-sse,bench-evstream,bench-converse "$@"
rc=$?
stop
if [ $rc -eq 0 ]; then rm -rf "$LOGS"; else echo "$WHO: logs kept in $LOGS" >&2; fi
exit $rc
