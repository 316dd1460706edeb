#!/bin/bash
# make compose-test: docker-compose.yml as people run it, in Docker.
#
#   tests/compose/run.sh build/compose/compose-load
#
# 1. The Debian 12 base image when the daemon lacks it (deploy/base-image.sh),
#    then the four images of deploy/ built (sizes and times printed).
# 2. Debian's docker-compose 1.29, when `docker compose` (v2) is there too:
#    `up --build` of the plain stack, every service healthy, the quick
#    start's curl with the first client key, the console, the audit storing;
#    then down.
# 3. `docker compose` (v2; else 1.29, saying so): the stack scaled
#    (ingest 2, aggregator 3, judge 3, emitter 2, gateway 2) with the tap
#    and monitoring profiles, every container healthy, then
#    - a request without a key refused; every dialect through a gateway,
#      its run_shell call blocked;
#    - an approval: a held call approved by another person's key;
#    - load: every instance of every stage takes a share (its metrics),
#      the tap sees every stream;
#    - `docker stop` of one ingest and one gateway mid-stream (a drain):
#      streams identical, exit status 0 within the grace period;
#    - a rebuilt image rolled out one service at a time (a new container,
#      then SIGTERM to an old one), under load: no stream lost;
#    - `docker kill` of one container of each kind mid-stream, then
#      `docker compose up -d`: the checks of make chaos (compose-load:
#      streams byte-identical, or a clean error where the design says so;
#      a killed gateway's upstream calls closed; the audit's records all
#      stored after its restart);
#    - Prometheus (Debian's) scraping every instance, the rules loaded;
#    - faults: a stage whose next stage is not there yet waits and says
#      so; a container with another stack's keys is refused and logged;
#      a gateway without client keys on a published port refuses to start;
#    - sluice-audit verify: the chain and the checkpoints written outside
#      the database, signed.
# 4. Down with volumes, whatever happened (the EXIT trap), bounded by
#    COMPOSE_TEST_LIMIT_S (default 1800 s); the figures, then
#    "compose-test: N passed, N failed".
set -u
LOAD=${1:?usage: tests/compose/run.sh COMPOSE_LOAD}
case "$LOAD" in /*) ;; *) LOAD=$PWD/$LOAD;; esac
if [ "${2:-}" = --rollout ]; then ROLLOUT=1; else ROLLOUT=; fi
cd "$(dirname "$0")/../.." || exit 1

LIMIT=${COMPOSE_TEST_LIMIT_S:-1800}
STEP_LIMIT=300                          # any one docker command
HEALTHY_S=90                            # a stack (re)started to every container healthy
PROJ=${COMPOSE_TEST_PROJECT:-sluicect$$}
export COMPOSE_TEST_PROJECT=$PROJ           # the --rollout child's too
LABEL="org.sluice.compose-test=$PROJ"
SCALE="--scale ingest=2 --scale aggregator=3 --scale judge=3 --scale emitter=2 --scale gateway=2"
PROFILES="--profile tap --profile monitoring"
declare -A WANT=([mock]=1 [redis]=1 [postgres]=1 [ingest]=2 [aggregator]=3 [judge]=3 [emitter]=2
                 [gateway]=2 [audit]=1 [tap]=1 [prometheus]=1)
declare -A METRICS=([ingest]=9551 [aggregator]=9552 [judge]=9553 [emitter]=9554 [gateway]=9555 [audit]=9558)

# What the stack is started with: ports docker picks, a paced mock, frequent
# checkpoints, console keys; the same for every command of the run.
export SLUICE_HTTP_PORTS= SLUICE_CONSOLE_PORT= SLUICE_PROMETHEUS_PORT=
export SLUICE_MOCK_DELAY_MS=20 SLUICE_CHECKPOINT_SECONDS=5
export SLUICE_CONSOLE_KEYS=${SLUICE_CONSOLE_KEYS:-ck-$PROJ-$RANDOM$RANDOM}
export SLUICE_PG_PASSWORD=${SLUICE_PG_PASSWORD:-pg-$PROJ-$RANDOM}
export SLUICE_KEYS_FILE=
[ -n "$(docker buildx version 2>/dev/null)" ] || export DOCKER_BUILDKIT=0 COMPOSE_DOCKER_CLI_BUILD=0

V2=; docker compose version >/dev/null 2>&1 && V2="docker compose"
V1=; command -v docker-compose >/dev/null 2>&1 && V1=docker-compose
DC=${COMPOSE_TEST_DC:-${V2:-$V1}}

say() { printf 'compose-test: %s\n' "$*"; }
dc() { timeout $STEP_LIMIT $DC -p "$PROJ" $PROFILES "$@"; }
containers() {                          # running containers of a service, oldest first
    docker ps --filter "label=com.docker.compose.project=$PROJ" \
        --filter "label=com.docker.compose.service=$1" --format '{{.CreatedAt}} {{.ID}}' | sort | awk '{print $NF}'
}
host_port() { docker port "$1" "$2" 2>/dev/null | head -1 | sed 's/.*://'; }
gateway_ports() { for c in $(containers gateway); do host_port "$c" 8080; done | paste -sd, -; }
metric() {                              # metric CONTAINER PORT NAME: the sum of its series
    docker exec "$1" curl -s -m 5 "http://127.0.0.1:$2/metrics" 2>/dev/null \
        | awk -v m="$3" '$1 == m || index($1, m "{") == 1 { s += $2 } END { printf "%d\n", s }'
}
summary() { grep -E '^compose: [^:]*: [0-9]+ streams' "$1" | sed 's/^compose: //'; }
psql_count() {                          # a number from the audit's store
    docker exec "$(containers postgres)" psql -U sluice -d audit -Atc "$1" 2>/dev/null | tr -d '[:space:]'
}

# ---------------------------------------------------------------------------
# The rolling update, as an action of compose-load: for each service, a new
# container (the rebuilt image), then SIGTERM to an old one (it drains),
# one instance at a time; a gateway's port joins the balancer's list when
# its container is healthy and leaves it before the SIGTERM.
wait_healthy_container() {
    local c=$1 deadline=$(( $(date +%s) + 60 ))
    while [ "$(date +%s)" -lt $deadline ]; do
        [ "$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}healthy{{end}}' "$c" 2>/dev/null)" = healthy ] \
            && return 0
        sleep 0.5
    done
    return 1
}
rollout() {
    local s old n new c port
    for s in "$@"; do
        n=${WANT[$s]}
        for old in $(containers "$s"); do
            timeout $STEP_LIMIT $DC -p "$PROJ" up -d --no-deps --no-recreate --no-build --scale "$s=$((n + 1))" "$s" \
                >/dev/null 2>&1 || { echo "rollout: $s did not scale up"; return 1; }
            new=
            for c in $(containers "$s"); do
                [ "$(docker inspect -f '{{.Image}}' "$c")" = "$(docker image inspect -f '{{.Id}}' sluice:latest)" ] \
                    && ! grep -qx "$c" "$ROLL_DIR/seen" 2>/dev/null && new=$c
            done
            [ -n "$new" ] && wait_healthy_container "$new" || { echo "rollout: no new healthy $s"; return 1; }
            echo "$new" >> "$ROLL_DIR/seen"
            if [ "$s" = gateway ]; then
                port=$(host_port "$old" 8080)
                { grep -vx "$port" "$ROLL_DIR/ports"; host_port "$new" 8080; } > "$ROLL_DIR/ports.new"
                mv "$ROLL_DIR/ports.new" "$ROLL_DIR/ports"
                sleep 0.3                   # the balancer reads it every 100 ms
            fi
            local t0; t0=$(date +%s%N)
            docker stop -t 150 "$old" >/dev/null
            echo "$s $(docker inspect -f '{{.State.ExitCode}}' "$old") $(( ($(date +%s%N) - t0) / 1000000 ))" \
                >> "$ROLL_DIR/stopped"
            docker rm "$old" >/dev/null
        done
    done
}
if [ -n "$ROLLOUT" ]; then
    shift 2
    rollout "$@"
    exit $?
fi

# ---------------------------------------------------------------------------
passed=0 failed=0 skipped=0
FIGURES=()
ok() { passed=$((passed + 1)); say "ok: $*"; }
bad() { failed=$((failed + 1)); say "FAILED: $*"; }
skip() { skipped=$((skipped + 1)); say "skipped: $*"; }
figure() { FIGURES+=("$*"); say "$*"; }
T0=$(date +%s)
WORK=$(mktemp -d /tmp/sluice-compose-test.XXXXXX)
export ROLL_DIR=$WORK/roll
mkdir -p "$ROLL_DIR"

teardown() {
    local rc=$?
    trap - EXIT INT TERM
    [ -n "${WATCHDOG:-}" ] && kill "$WATCHDOG" 2>/dev/null
    local t=$(date +%s)
    # The containers the run started itself first: they hold the stack's
    # network and keys volume.
    docker ps -aq --filter "label=$LABEL" | xargs -r docker rm -f >/dev/null 2>&1
    docker volume ls -q --filter "label=$LABEL" | xargs -r docker volume rm >/dev/null 2>&1
    if [ -n "$V1" ] && [ "$DC" != "$V1" ]; then
        timeout $STEP_LIMIT $V1 -p "$PROJ-v1" down -v --remove-orphans -t 5 >/dev/null 2>&1
    fi
    timeout $STEP_LIMIT $DC -p "$PROJ" $PROFILES down -v --remove-orphans -t 5 >/dev/null 2>&1
    local left
    left=$( { docker ps -aq --filter "label=com.docker.compose.project=$PROJ";
              docker ps -aq --filter "label=com.docker.compose.project=$PROJ-v1";
              docker ps -aq --filter "label=$LABEL";
              docker network ls -q --filter "label=com.docker.compose.project=$PROJ";
              docker network ls -q --filter "label=com.docker.compose.project=$PROJ-v1";
              docker volume ls -q --filter "label=com.docker.compose.project=$PROJ";
              docker volume ls -q --filter "label=com.docker.compose.project=$PROJ-v1";
              docker volume ls -q --filter "label=$LABEL"; } | wc -l)
    if [ "$left" = 0 ]; then ok "torn down: no container, network or volume of the run left ($(( $(date +%s) - t )) s)"
    else bad "torn down: $left containers, networks or volumes of the run are left"; fi
    rm -rf "$WORK"
    say "figures:"
    local f
    for f in "${FIGURES[@]}"; do say "  $f"; done
    say "$(( $(date +%s) - T0 )) s in all"
    echo "compose-test: $passed passed, $failed failed, $skipped skipped"
    [ "$failed" = 0 ] && [ "$rc" = 0 ] && exit 0
    exit 1
}
trap teardown EXIT
trap 'say "stopped (signal or over $LIMIT s)"; exit 1' INT TERM
( sleep "$LIMIT"; kill -TERM $$ ) 2>/dev/null &
WATCHDOG=$!

if ! docker info >/dev/null 2>&1; then
    bad "no Docker daemon answers (make compose-deps starts it)"
    exit 1
fi
if [ -z "$DC" ]; then
    bad "neither docker compose nor docker-compose is installed (make compose-deps)"
    exit 1
fi
say "compose: ${V2:+$($V2 version --short) (docker compose)}${V2:+, }${V1:+$($V1 version --short) (docker-compose)}; the scaled stack with: $DC"
[ -n "$V2" ] || skip "docker compose (v2) is not installed: the scaled stack runs with docker-compose 1.29"

# ---------------------------------------------------------------------------
# 1. Images
t=$(date +%s)
deploy/base-image.sh || { bad "the base image"; exit 1; }
figure "base image debian:12-slim: $(( $(docker image inspect -f '{{.Size}}' debian:12-slim) / 1048576 )) MiB ($(( $(date +%s) - t )) s, made or found)"
for spec in sluice:latest=deploy/Dockerfile sluice-postgres:15=deploy/postgres.Dockerfile \
            sluice-redis:latest=deploy/redis.Dockerfile sluice-prometheus:latest=deploy/prometheus.Dockerfile; do
    image=${spec%%=*} file=${spec#*=} t=$(date +%s)
    if timeout 1800 docker build -f "$file" -t "$image" . > "$WORK/build.log" 2>&1; then
        figure "image $image: $(( $(docker image inspect -f '{{.Size}}' "$image") / 1048576 )) MiB, built in $(( $(date +%s) - t )) s ($file)"
    else
        tail -30 "$WORK/build.log"
        bad "docker build -f $file"
        exit 1
    fi
done
ok "the four images build from this repository (no image from Docker Hub)"
official=$(timeout 60 $DC -f docker-compose.yml -f deploy/docker-compose.official.yml config 2>/dev/null \
           | grep -E '^ +image: (postgres|redis):' | sed 's/ *image: //' | sort | paste -sd' ' -)
[ "$official" = "postgres:15 redis:7" ] && ok "deploy/docker-compose.official.yml puts Docker Hub's $official in place (not pulled here)" \
    || bad "deploy/docker-compose.official.yml gives: $official"

wait_stack() {                          # wait_stack PROJECT COMPOSE [scaled]: every container healthy
    local proj=$1 cmd=$2 scaled=${3:-} deadline=$(( $(date +%s) + HEALTHY_S )) s want have c state missing
    while :; do
        missing=
        for s in "${!WANT[@]}"; do
            want=${WANT[$s]}
            [ -z "$scaled" ] && { want=1; case $s in tap|prometheus) continue;; esac; }
            have=0
            for c in $(docker ps -q --filter "label=com.docker.compose.project=$proj" \
                                    --filter "label=com.docker.compose.service=$s"); do
                state=$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}healthy{{end}}' "$c")
                [ "$state" = healthy ] && have=$((have + 1))
            done
            [ "$have" = "$want" ] || missing="$missing $s:$have/$want"
        done
        [ -z "$missing" ] && return 0
        if [ "$(date +%s)" -ge $deadline ]; then
            say "not healthy after ${HEALTHY_S} s:$missing"
            timeout 60 $cmd -p "$proj" ps 2>&1 | tail -30
            return 1
        fi
        sleep 1
    done
}

chat='{"model":"mock-tools","stream":true,"messages":[{"role":"user","content":"hi"}]}'

# ---------------------------------------------------------------------------
# 2. Debian's docker-compose 1.29: the plain stack from the file, --build
if [ -n "$V1" ] && [ "$DC" != "$V1" ]; then
    t=$(date +%s)
    if timeout $STEP_LIMIT $V1 -p "$PROJ-v1" up -d --build > "$WORK/v1.log" 2>&1 \
       && wait_stack "$PROJ-v1" "$V1"; then
        ok "docker-compose 1.29: up --build, every service healthy ($(( $(date +%s) - t )) s)"
        key=$(timeout 60 $V1 -p "$PROJ-v1" run --rm -T keygen cat /var/lib/sluice/first-key/key 2>/dev/null)
        gw=$(host_port "$(docker ps -q --filter "label=com.docker.compose.project=$PROJ-v1" --filter label=com.docker.compose.service=gateway)" 8080)
        out=$(curl -sN -m 20 "http://127.0.0.1:$gw/v1/chat/completions" -H "Authorization: Bearer $key" \
                   -H 'content-type: application/json' -d "$chat")
        case "$out" in *"sluice blocked a call to run_shell"*"data: [DONE]"*)
            ok "docker-compose 1.29: the quick start's curl, with the first client key, answered (run_shell blocked)";;
        *) bad "docker-compose 1.29: the quick start's curl: $(printf '%s' "$out" | tail -c 300)";; esac
        console=$(host_port "$(docker ps -q --filter "label=com.docker.compose.project=$PROJ-v1" --filter label=com.docker.compose.service=audit)" 8081)
        meta=$(curl -s -m 10 "http://127.0.0.1:$console/api/meta" -H "Authorization: Bearer $SLUICE_CONSOLE_KEYS")
        case "$meta" in *'"store":"postgres"'*) ok "docker-compose 1.29: the console answers on its published port: $meta";;
        *) bad "docker-compose 1.29: the console: $meta";; esac
        stored=0
        for i in $(seq 1 40); do
            stored=$(timeout 30 $V1 -p "$PROJ-v1" exec -T postgres psql -U sluice -d audit -Atc \
                     "select count(*) from streams where ended_at is not null" 2>/dev/null | tr -d '[:space:]')
            [ "${stored:-0}" -ge 1 ] 2>/dev/null && break
            sleep 0.5
        done
        [ "${stored:-0}" -ge 1 ] 2>/dev/null && ok "docker-compose 1.29: the audit stored the stream in PostgreSQL" \
            || bad "docker-compose 1.29: the audit stored nothing ($stored)"
    else
        tail -20 "$WORK/v1.log"
        bad "docker-compose 1.29: up --build"
    fi
    timeout $STEP_LIMIT $V1 -p "$PROJ-v1" down -v --remove-orphans -t 5 >/dev/null 2>&1
    figure "docker-compose 1.29, the plain stack: up --build to down in $(( $(date +%s) - t )) s"
fi

# ---------------------------------------------------------------------------
# 3. The scaled stack, with the tap and Prometheus
t=$(date +%s)
if ! dc up -d --no-build $SCALE > "$WORK/up.log" 2>&1 || ! wait_stack "$PROJ" "$DC" scaled; then
    tail -20 "$WORK/up.log"
    bad "$DC up --scale ... with the tap and monitoring profiles"
    exit 1
fi
ok "$DC up: 19 containers healthy, scaled per stage (ingest 2, aggregator 3, judge 3, emitter 2, gateway 2), tap and Prometheus ($(( $(date +%s) - t )) s)"
figure "the scaled stack up and healthy in $(( $(date +%s) - t )) s"
restart() { dc up -d --no-build --no-recreate $SCALE > "$WORK/restart.log" 2>&1 && wait_stack "$PROJ" "$DC" scaled; }

KEY=$(dc run --rm -T keygen cat /var/lib/sluice/first-key/key 2>/dev/null)
[ -n "$KEY" ] && ok "the first client key, from the keygen service" || bad "no first client key"
GW=$(gateway_ports)
GW1=${GW%%,*}
say "gateways on 127.0.0.1:$GW, console on 127.0.0.1:$(host_port "$(containers audit)" 8081)"

status=$(curl -s -o /dev/null -w '%{http_code}' -m 10 "http://127.0.0.1:$GW1/v1/chat/completions" \
              -H 'content-type: application/json' -d "$chat")
[ "$status" = 401 ] && ok "a request without a client key: 401" || bad "a request without a client key: $status"

# Every dialect, each with the key as its SDK sends it; mock-tools' run_shell
# call is blocked by the image's policy in each.
dialect() {                             # dialect NAME PATH HEADER BODY END
    local out
    out=$(curl -sN -m 20 "http://127.0.0.1:$GW1$2" -H "$3" -H 'content-type: application/json' \
               -H 'anthropic-version: 2023-06-01' -d "$4")
    case "$out" in *"sluice blocked a call to run_shell"*"$5"*) ok "dialect $1: streamed to its end, run_shell blocked";;
    *) bad "dialect $1: $(printf '%s' "$out" | tail -c 300)";; esac
}
dialect "OpenAI chat" /v1/chat/completions "Authorization: Bearer $KEY" "$chat" "data: [DONE]"
dialect "Anthropic messages" /v1/messages "x-api-key: $KEY" \
    '{"model":"mock-tools","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}' message_stop
dialect "OpenAI responses" /v1/responses "Authorization: Bearer $KEY" \
    '{"model":"mock-tools","stream":true,"input":"hi"}' response.completed
dialect "Gemini" "/v1beta/models/mock-tools:streamGenerateContent?alt=sse" "x-goog-api-key: $KEY" \
    '{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}' finishReason

# An approval: two more keys in the clients volume (an agent whose policy
# asks about run_shell, and an approver of its team), the file reloaded by
# the gateways and judges; the agent's call waits until the approver says yes.
# (docker-compose 1.29 says "Creating ... done" on stderr for each run.)
agent=$(dc run --rm -T --no-deps keygen sluice-keys new --team asking --user agent --policy ask-shell.yaml 2>/dev/null)
lead=$(dc run --rm -T --no-deps keygen sluice-keys new --team asking --user lead --approver 2>/dev/null)
printf 'version: 1\ndefault: allow\nrules:\n  - id: ask-shell\n    tool: run_shell\n    action: ask\n    ask: {timeout_ms: 60000, on_timeout: block}\n' \
    | dc run --rm -T --no-deps keygen sh -c 'cat > /var/lib/sluice/clients/ask-shell.yaml' 2>/dev/null
{ printf '%s\n' "$agent" | tail -n +2; printf '%s\n' "$lead" | tail -n +2; } \
    | dc run --rm -T --no-deps keygen sh -c 'f=/var/lib/sluice/clients/keys.yaml; cat $f - > $f.new && sluice-keys check $f.new >/dev/null && mv $f.new $f' 2>/dev/null
AGENT=$(printf '%s\n' "$agent" | head -1) LEAD=$(printf '%s\n' "$lead" | head -1)
for i in $(seq 1 40); do                # the keys file reloaded by every gateway
    s1=$(curl -s -o /dev/null -w '%{http_code}' -m 5 "http://127.0.0.1:${GW%%,*}/v1/models" -H "Authorization: Bearer $LEAD")
    s2=$(curl -s -o /dev/null -w '%{http_code}' -m 5 "http://127.0.0.1:${GW##*,}/v1/models" -H "Authorization: Bearer $LEAD")
    [ "$s1" = 200 ] && [ "$s2" = 200 ] && break
    sleep 0.5
done
sleep 2                                 # and by every judge (each checks it every second)
curl -sN -m 60 "http://127.0.0.1:$GW1/v1/chat/completions" -H "Authorization: Bearer $AGENT" \
     -H 'content-type: application/json' -d "$chat" > "$WORK/held.out" &
held=$!
id=
for i in $(seq 1 40); do
    id=$(curl -s -m 5 "http://127.0.0.1:${GW##*,}/v1/approvals" -H "Authorization: Bearer $LEAD" \
         | python3 -c 'import json,sys; a=json.load(sys.stdin).get("approvals",[]); print(a[0]["id"] if a and a[0]["tool"]=="run_shell" else "")' 2>/dev/null)
    [ -n "$id" ] && break
    sleep 0.5
done
decided=$(curl -s -m 10 "http://127.0.0.1:${GW##*,}/v1/approvals/$id" -H "Authorization: Bearer $LEAD" \
               -H 'content-type: application/json' -d '{"decision":"approve","comment":"compose-test"}')
wait $held
case "$(cat "$WORK/held.out")" in
*'"name":"run_shell"'*"data: [DONE]"*)
    case "$decided" in *'"state":"approved"'*) ok "an approval: the agent's run_shell waited, the approver's key approved it (on the other gateway), the call went through";;
    *) bad "an approval: the decision: $decided";; esac;;
*) bad "an approval: id '$id', decision $decided, the stream: $(tail -c 300 "$WORK/held.out")";; esac

# Load over both gateways: every instance of every stage takes a share;
# the tap, following both emitters, sees every stream start.
declare -A BEFORE
for s in "${!METRICS[@]}"; do for c in $(containers "$s"); do BEFORE[$c]=$(metric "$c" "${METRICS[$s]}" sluice_streams_total); done; done
tap_before=$(docker logs "$(containers tap)" 2>/dev/null | grep -c ' start ')
N=60
if "$LOAD" --ports "$GW" --key "$KEY" --streams $N --chunks 100 --spread 1000 --label "scaled load" > "$WORK/load.out" 2>&1; then
    ok "$(summary "$WORK/load.out")"
else
    cat "$WORK/load.out"; bad "scaled load"
fi
shares=
for s in ingest aggregator judge emitter gateway; do
    line="$s"
    for c in $(containers "$s"); do
        d=$(( $(metric "$c" "${METRICS[$s]}" sluice_streams_total) - ${BEFORE[$c]:-0} ))
        line="$line $d"
        [ "$d" -gt 0 ] || bad "$s $(docker inspect -f '{{.Name}}' "$c") took no stream of the load"
    done
    shares="$shares; $line"
done
figure "streams per instance under load (2 x $N streams)${shares}"
for i in $(seq 1 20); do
    tap_seen=$(( $(docker logs "$(containers tap)" 2>/dev/null | grep -c ' start ') - tap_before ))
    [ "$tap_seen" -ge $((2 * N)) ] && break
    sleep 0.5
done
[ "$tap_seen" = $((2 * N)) ] && ok "the tap (profile tap, key tap-meta) printed the start of all $((2 * N)) streams, from both emitters" \
    || bad "the tap printed $tap_seen stream starts of $((2 * N))"
docker logs "$(containers tap)" 2>/dev/null | grep -E ' (start|verdict) ' | tail -2 | sed 's/^/compose-test:   tap: /'

# A drained stop: SIGTERM (docker stop; docker compose stop does the same to
# every instance of a service) to one ingest and one gateway, mid-stream.
drain_one() {
    local s=$1 c
    c=$(containers "$s" | head -1)
    GW=$(gateway_ports)
    if "$LOAD" --ports "$GW" --key "$KEY" --streams 40 --chunks 100 --spread 400 --label "docker stop $s" \
         --at 600 "t0=\$(date +%s%N); docker stop -t 150 $c >/dev/null; echo \$(( (\$(date +%s%N) - t0) / 1000000 )) > $WORK/stop.ms" \
         > "$WORK/drain.out" 2>&1; then
        ok "$(summary "$WORK/drain.out")"
    else
        cat "$WORK/drain.out"; bad "docker stop $s"
    fi
    local code; code=$(docker inspect -f '{{.State.ExitCode}}' "$c")
    [ "$code" = 0 ] && ok "docker stop $s: drained and exited 0 in $(cat "$WORK/stop.ms") ms (grace 150 s)" \
        || bad "docker stop $s: exit status $code after $(cat "$WORK/stop.ms") ms"
    restart || bad "after the stop of a $s, the stack is whole again"
}
drain_one ingest
drain_one gateway

# A rolling update: the image rebuilt (a new image id), then each service
# rolled out one instance at a time under load (the balancer follows the
# gateways' ports).
t=$(date +%s)
before=$(docker image inspect -f '{{.Id}}' sluice:latest)
timeout 1800 docker build --label "org.sluice.rollout=$PROJ" -f deploy/Dockerfile -t sluice:latest . > "$WORK/build.log" 2>&1 \
    || { tail -20 "$WORK/build.log"; bad "the image rebuilt"; }
[ "$(docker image inspect -f '{{.Id}}' sluice:latest)" != "$before" ] || bad "the rebuilt image has a new id"
gateway_ports | tr , '\n' > "$ROLL_DIR/ports"
containers tap > "$ROLL_DIR/seen"
if "$LOAD" --ports "$(gateway_ports)" --ports-file "$ROLL_DIR/ports" --key "$KEY" --streams 300 --chunks 100 \
     --spread 150000 --reference-spread 15000 --label "rolling update" \
     --at 300 "$0 $LOAD --rollout ingest aggregator judge emitter gateway audit > $ROLL_DIR/rollout.log 2>&1" \
     > "$WORK/roll.out" 2>&1; then
    ok "$(summary "$WORK/roll.out")"
else
    cat "$WORK/roll.out" "$ROLL_DIR/rollout.log"; bad "rolling update"
fi
rolled=$(wc -l < "$ROLL_DIR/stopped" 2>/dev/null || echo 0)
clean=$(awk '$2 == 0' "$ROLL_DIR/stopped" 2>/dev/null | wc -l)
[ "$rolled" = 13 ] && [ "$clean" = 13 ] \
    && ok "rolling update: 13 containers replaced one at a time (new first), every old one drained and exited 0" \
    || { cat "$ROLL_DIR/rollout.log" 2>/dev/null; bad "rolling update: $clean of $rolled old containers exited 0 (13 to replace)"; }
figure "rolling update of the rebuilt image, 13 containers: $(( $(date +%s) - t )) s; drain per container (ms): $(awk '{print $1 "=" $3}' "$ROLL_DIR/stopped" 2>/dev/null | paste -sd' ' -)"
wait_stack "$PROJ" "$DC" scaled || bad "after the rolling update, every container healthy"

# Kill and restart, one container of each kind, mid-stream.
kill_one() {                            # kill_one SERVICE EXPECT
    local s=$1 expect=$2 c port ab0 ab1 cut n0 n1
    c=$(containers "$s" | head -1)
    GW=$(gateway_ports)
    [ "$expect" = gateway ] && { port=$(host_port "$c" 8080); expect=gateway:$port; }
    ab0=$(metric "$(containers mock)" 9090 mock_streams_abandoned_total)
    n0=$(psql_count "select count(*) from streams where ended_at is not null")
    if "$LOAD" --ports "$GW" --key "$KEY" --streams 40 --chunks 100 --spread 400 --expect "$expect" --label "kill $s" \
         --at 600 "docker kill $c >/dev/null; sleep 0.2; $DC -p $PROJ $PROFILES up -d --no-build --no-recreate $SCALE >/dev/null 2>&1" \
         > "$WORK/kill.out" 2>&1; then
        ok "$(summary "$WORK/kill.out")"
    else
        cat "$WORK/kill.out"; bad "kill $s"
    fi
    restart || bad "after the kill of a $s, the stack is whole again"
    if [ "$s" = gateway ]; then
        cut=$(sed -n 's/.*, \([0-9]*\) of the [0-9]* on the killed gateway cut.*/\1/p' "$WORK/kill.out")
        for i in $(seq 1 30); do
            ab1=$(metric "$(containers mock)" 9090 mock_streams_abandoned_total)
            [ $((ab1 - ab0)) -ge "${cut:-0}" ] && break
            sleep 0.5
        done
        [ "${cut:-0}" -gt 0 ] && [ $((ab1 - ab0)) -ge "$cut" ] \
            && ok "kill gateway: the mock saw the upstream calls of its $cut cut streams closed ($((ab1 - ab0)))" \
            || bad "kill gateway: $cut streams cut, the mock saw $((ab1 - ab0)) upstream calls closed"
    fi
    if [ "$s" = audit ]; then
        for i in $(seq 1 60); do
            n1=$(psql_count "select count(*) from streams where ended_at is not null")
            [ "${n1:-0}" -ge $((n0 + 80)) ] && break
            sleep 0.5
        done
        [ "${n1:-0}" -ge $((n0 + 80)) ] && ok "kill audit: after its restart the store holds all 80 streams of the run (from the emitters' spools)" \
            || bad "kill audit: the store holds $((n1 - n0)) of 80 new streams"
    fi
}
t=$(date +%s)
kill_one aggregator identical
kill_one judge identical
kill_one emitter identical
kill_one ingest clean
kill_one gateway gateway
kill_one audit identical
figure "kill and restart of the six kinds, each with its load and the stack healthy again: $(( $(date +%s) - t )) s"

# Prometheus: every instance found by DNS and up, the shipped rules loaded.
prom=$(host_port "$(containers prometheus)" 9090)
want_targets=$(( WANT[gateway] + WANT[ingest] + WANT[aggregator] + WANT[judge] + WANT[emitter] + WANT[audit] + WANT[mock] ))
for i in $(seq 1 90); do
    up=$(curl -s -m 5 "http://127.0.0.1:$prom/api/v1/targets?state=active" | python3 -c '
import json, sys
t = json.load(sys.stdin)["data"]["activeTargets"]
print(sum(1 for x in t if x["health"] == "up"), len(t))' 2>/dev/null)
    [ "$up" = "$want_targets $want_targets" ] && break
    sleep 1
done
[ "$up" = "$want_targets $want_targets" ] && ok "Prometheus (Debian's, profile monitoring) scrapes all $want_targets instances, every one up" \
    || bad "Prometheus: targets up and found: $up (want $want_targets)"
rules=$(curl -s -m 5 "http://127.0.0.1:$prom/api/v1/rules" | python3 -c '
import json, sys
print(sum(len(g["rules"]) for g in json.load(sys.stdin)["data"]["groups"]))' 2>/dev/null)
[ "${rules:-0}" -gt 0 ] && ok "Prometheus loaded the shipped alert rules ($rules)" || bad "Prometheus has no rules loaded"

# The audit's chain, verified with its public key against the checkpoints it
# wrote outside the database (a volume the database's container lacks).
if docker inspect -f '{{range .Mounts}}{{.Name}} {{end}}' "$(containers postgres)" | grep -q checkpoints; then
    bad "the database's container mounts the checkpoints volume"
fi
lines=$(docker exec "$(containers audit)" sh -c 'wc -l < /var/lib/sluice/checkpoints/audit.jsonl' 2>/dev/null | tr -d '[:space:]')
verify=$(docker exec "$(containers audit)" sluice-audit verify --public-key /var/lib/sluice/signing/audit.sign \
         --checkpoint-file /var/lib/sluice/checkpoints/audit.jsonl 2>&1); vrc=$?
[ "$vrc" = 0 ] && [ "${lines:-0}" -gt 0 ] \
    && ok "sluice-audit verify: the chain intact, its $lines signed checkpoints in the checkpoints volume match ($(printf '%s' "$verify" | head -1))" \
    || bad "sluice-audit verify exit $vrc, $lines checkpoint lines: $verify"
figure "audit store: $(psql_count 'select count(*) from streams') streams, $(psql_count 'select count(*) from chain') chain entries, $lines checkpoints"

# Faults.
BUS=${PROJ}_bus KEYS=${PROJ}_keys
# An aggregator as the compose file runs it (its networks, volumes, DNS
# options), but whose next stage is a name no container has yet.
dc run -d --no-deps -l "$LABEL" --name "$PROJ-early" aggregator \
    sluice-aggregator --bind 'tcp://*:5552' --next tcp://latejudge:5553 --keys /var/lib/sluice/keys \
    --metrics-port 9552 >/dev/null 2>&1
sleep 8
state=$(docker inspect -f '{{.State.Running}} {{.RestartCount}}' "$PROJ-early")
health=$(docker exec "$PROJ-early" curl -s -o /dev/null -m 2 -w '%{http_code}' http://127.0.0.1:9552/healthz)
if [ "$state" = "true 0" ] && [ "$health" = 200 ] && docker logs "$PROJ-early" 2>&1 | grep -q '"resolve_failed".*latejudge'; then
    docker run -d --label "$LABEL" --name "$PROJ-late" --network "$BUS" --network-alias latejudge \
        -v "$KEYS:/var/lib/sluice/keys:ro" sluice:latest sluice-judge --bind 'tcp://*:5553' --next tcp://emitter:5554 \
        --keys /var/lib/sluice/keys --policy /etc/sluice/policy.yaml --metrics-port 9553 >/dev/null
    for i in $(seq 1 30); do docker logs "$PROJ-early" 2>&1 | grep -q '"peer_up"' && break; sleep 0.5; done
    docker logs "$PROJ-early" 2>&1 | grep -q '"peer_up"' \
        && ok "a stage whose next stage is not there at its start waits (running, not restarted, /healthz 200) and says so ($(docker logs "$PROJ-early" 2>&1 | grep -m1 resolve_failed | sed 's/.*"msg":"\([^"]*\)".*/\1/')), then connects when it comes" \
        || bad "the waiting aggregator did not connect to the judge that came"
else
    docker logs "$PROJ-early" 2>&1 | tail -5; bad "a stage whose next stage is not there: running, restarts: $state; /healthz $health"
fi
docker volume create --label "$LABEL" "${PROJ}_otherkeys" >/dev/null
docker run --rm --label "$LABEL" -v "${PROJ}_otherkeys:/var/lib/sluice/keys" sluice:latest \
    sluice-keygen --dir /var/lib/sluice/keys >/dev/null
docker run -d --label "$LABEL" --name "$PROJ-foreign" --network "$BUS" --network-alias aggregator \
    -v "${PROJ}_otherkeys:/var/lib/sluice/keys:ro" sluice:latest sluice-aggregator --bind 'tcp://*:5552' \
    --next tcp://judge:5553 --keys /var/lib/sluice/keys --metrics-port 9552 >/dev/null
sleep 5                                 # the ingests resolve "aggregator" again every 2 s
GW=$(gateway_ports)
if "$LOAD" --ports "$GW" --key "$KEY" --streams 20 --chunks 50 --spread 200 --label "another stack's aggregator" \
     > "$WORK/foreign.out" 2>&1; then
    ok "$(summary "$WORK/foreign.out")"
else
    cat "$WORK/foreign.out"; bad "another stack's aggregator among ours"
fi
refused=$( { docker logs "$PROJ-foreign" 2>&1; for c in $(containers ingest) $(containers judge); do docker logs "$c" 2>&1; done; } \
           | grep -E '"(handshake_failed|zap_refused)"' | head -1)
[ -n "$refused" ] && ok "a container with another stack's keys is refused and logged: $(printf '%s' "$refused" | sed 's/.*"event":"\([^"]*\)","msg":"\([^"]*\)".*/\1 \2/' | cut -c1-160)" \
    || bad "nothing logged a refusal of another stack's keys"
if docker run --rm sluice:latest sluice-gateway --help 2>&1 | grep -q allow-anonymous; then
    docker run -d --label "$LABEL" --name "$PROJ-open" --network "$BUS" -p 127.0.0.1::8080 \
        -v "$KEYS:/var/lib/sluice/keys:ro" sluice:latest sluice-gateway --http-host 0.0.0.0 --http-port 8080 \
        --bind 'tcp://*:5555' --next tcp://ingest:5551 --keys /var/lib/sluice/keys --metrics-port 9555 >/dev/null
    code=$(timeout 20 docker wait "$PROJ-open" 2>/dev/null)
    [ -n "$code" ] && [ "$code" != 0 ] \
        && ok "a gateway without client keys on a published port refuses to start (exit $code): $(docker logs "$PROJ-open" 2>&1 | tail -1 | cut -c1-200)" \
        || bad "a gateway without client keys on a published port started"
else
    skip "a gateway without client keys on a published port: this gateway has no --allow-anonymous, and starts (the refusal is not in this build)"
fi
exit 0
