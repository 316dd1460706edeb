# sluice - one Makefile for everything.
#
#   make            build every program into build/bin (optimized)
#   make run        install what is missing, build, start the stack on loopback
#   make test       install what is missing, build, run every test
#   make memcheck   run the unit tests under valgrind
#   make check-prometheus  promtool on deploy/prometheus/ (its config, its
#                   alert rules and their unit tests) and every metric the
#                   rules name exported and documented; make test runs it
#   make check-layers  every #include follows the order of common/LAYERS
#                   (the layers of the libraries, bottom up), no program
#                   includes another's folder, every unit test mirrors the
#                   file it tests (tests/layers/check-layers.py); make test
#                   runs it
#   make check-policies  the shipped policies' tests: sluice-policy test on
#                   every *.test.yaml of deploy/ and deploy/policies/; make
#                   test runs it
#   make check-docs every relative link, #anchor and quoted source path of
#                   the Markdown files resolves (tests/docs/check-links.py);
#                   make test runs it
#   make check-kubernetes  both overlays of deploy/kubernetes build (kubectl
#                   kustomize) and every object validates against the
#                   Kubernetes schemas (tests/kubernetes, npm, pinned; make
#                   kube-deps installs it); make test runs it
#   make fuzz       run every fuzz target for FUZZ_SECONDS (clang, libFuzzer)
#   make bench      run the benchmarks (tests/bench/bench_*.c), then
#                   sluice-bench against three stacks, nginx (the floor)
#                   and the mock, then the emitter's CPU with the audit's
#                   spool off and on, then the p50 an MCP tools/call takes
#                   directly and through sluice
#   make chaos      the kill-and-restart test, the stop-and-resume rounds and
#                   the rolling updates (DRAIN_ROUNDS),
#                   with their one-line summaries
#   make compose-test  the docker-compose stack for real (tests/compose/run.sh):
#                   the Debian base image when missing, the images built,
#                   the stack started scaled, streams through it while
#                   every kind of container is killed, stopped and rolled
#                   out, the tap and Prometheus, then all of it taken
#                   down; starts the Docker daemon when it is installed
#                   and not running (root). Not part of make test
#   make deps       install the Debian packages the build needs (root), or
#                   print the command to do it
#   make sdk-deps   install the official SDKs the SDK tests drive (npm, pinned
#                   in tests/sdk/package-lock.json); make test runs it
#   make browser-deps  install playwright-core for the console's browser test
#                   (npm, pinned in tests/browser/package-lock.json; it drives
#                   Debian's chromium); make test runs it
#   make oidc-deps  install the OpenID provider the console's sign-in test
#                   signs in with (oidc-provider, npm, pinned in
#                   tests/oidc/package-lock.json); make test runs it
#   make otel-deps  install the OTLP receiver the exporter's tests send to
#                   (npm, pinned in tests/otel/package-lock.json); make test
#                   runs it
#   make cloud-deps install the AWS SDK's event stream codec, SigV4
#                   signer and Bedrock Runtime client
#                   (@aws-sdk/client-bedrock-runtime), google-auth-library,
#                   and the Vertex AI and
#                   Azure clients (@anthropic-ai/vertex-sdk, @google/genai,
#                   openai, @azure/identity), the references the cloud code is checked
#                   against (npm, pinned in tests/cloud/package-lock.json);
#                   make test runs it
#   make mcp-deps   install the official MCP TypeScript SDK (client and
#                   server, both revision families) the MCP tests drive
#                   (npm, pinned in tests/mcp/package-lock.json); make test
#                   runs it
#   make agents     install Claude Code, Codex CLI, Gemini CLI and opencode
#                   (npm, pinned in tests/agents/package-lock.json) into
#                   build/agents and run each through a stack (not part of
#                   make test: the agents are large)
#   make agents AGENTS=latest  the same with the newest published version
#                   of each (npm view), installed into build/agents-latest;
#                   prints the versions beside the pins
#
# Layout: common/ and proto/ are the libraries (common/stages/ the stage
# libraries: pure, no sockets); services/<name>/sl_*.c (and sl_*.c in the
# folders of its parts, services/<name>/<part>/) are libraries of that
# service alone, every other .c file there is its service (main.c and the
# loop), linked into build/bin/sluice-<name>.

CC       ?= gcc
# libpq's header lives in its own directory.
PQ_CFLAGS := $(shell pkg-config --cflags libpq 2>/dev/null || echo -I/usr/include/postgresql)
# Project headers are included by their path from the repository root
# ("common/base/sl_buf.h"): the folder of every include says what it uses.
CSTD      = -std=c11 -D_GNU_SOURCE -I. $(PQ_CFLAGS)
WARN      = -Wall -Wextra -Werror
CFLAGS   ?= -O2 -g
ASANFLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
            -fno-sanitize-recover=undefined
LDLIBS    = -lczmq -lzmq -lmsgpackc -lcurl -ljansson -lmicrohttpd -lyaml -lsqlite3 -lpq -lsodium -ljwt \
            -lcrypto -lhiredis -lm

# Debian packages: libraries, test framework, fuzzing compiler, tools the
# tests drive (curl), the compose checker, the audit store's databases
# (SQLite; PostgreSQL, whose server the store tests start in a temporary
# directory), the browser the console test drives (Node for the SDK and
# browser tests comes with sdk-deps), nginx, the floor make bench
# measures sluice against, Prometheus (its promtool checks the shipped
# rules; the Prometheus test runs its server on a port of its own), and
# kubectl (kubernetes-client: kubectl kustomize builds the Kubernetes
# manifests; a kubectl from elsewhere does).
PACKAGES  = gcc make pkg-config libzmq3-dev libczmq-dev libmsgpack-dev \
            libcriterion-dev libcurl4-openssl-dev libjansson-dev \
            libmicrohttpd-dev libyaml-dev clang libclang-rt-14-dev curl python3 \
            docker-compose libsqlite3-dev libpq-dev postgresql chromium nginx-light \
            libsodium-dev libjwt-dev libssl-dev libhiredis-dev redis-server \
            prometheus kubernetes-client

SERVICES  = gateway ingest aggregator judge emitter mock tap replay bench keygen keys audit tools
BUILD     = build

# Files built into sluice-audit (its console, its store's migrations), as
# one generated C source (services/audit/embed/embed.c).
EMBED_FILES = $(sort $(wildcard services/audit/console/web/*)) $(sort $(wildcard services/audit/store/migrations/*.sql))
GEN_SRC     = $(BUILD)/gen/sl_embedded_files.c

# common/ holds every library more than one program uses, a folder per
# purpose, layered in the order of common/LAYERS (make check-layers);
# proto/ the wire protocol's codec. A library only its service uses stays
# in services/<name>/.
COMMON_SRC = $(sort $(shell find common proto -name '*.c'))
LIB_SRC    = $(foreach s,$(SERVICES),$(wildcard services/$(s)/sl_*.c services/$(s)/*/sl_*.c)) $(GEN_SRC)
UNIT_SRC   = $(sort $(shell find tests/unit -name '*.c'))
INTEG_SRC  = $(wildcard tests/integration/*.c)
FUZZ_SRC   = $(wildcard tests/fuzz/fuzz_*.c)
BENCH_SRC  = $(wildcard tests/bench/bench_*.c)

# Fuzzing: clang with libFuzzer, ASan and UBSan (make fuzz; make test runs
# each target for FUZZ_SMOKE_SECONDS).
FUZZ_CC   = clang
FUZZFLAGS = -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 3
FUZZ_BINS  = $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))
# The fuzz targets' library is a third compile of the libraries (clang):
# it leaves out the folders no target reaches (the bus, the service
# shell, MCP, the exporter, the programs but the audit and the mock),
# 33 of 164 files. A new target that needs one of them fails to link,
# naming the symbol: take that folder out of this list.
FUZZ_SKIP  = common/approval common/bus common/config common/mcp common/otel common/service \
             $(addprefix services/,$(filter-out audit mock,$(SERVICES)))
FUZZ_LIB_SRC = $(filter-out $(addsuffix /%,$(FUZZ_SKIP)),$(COMMON_SRC) $(LIB_SRC))
BENCH_BINS = $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

# Objects of a source list in a flavour directory: $(call objs,flavour,srcs)
objs = $(patsubst %.c,$(BUILD)/obj/$(1)/%.o,$(2))
# Service-only sources (everything but the library) of one service: its
# folder and its parts' folders (services/audit/recorder/), but for the
# build tool in services/audit/embed/.
# A part that is a program of its own (PROGRAM_PARTS) is left out too.
svc_src = $(filter-out %/sl_%.c services/$(1)/embed/% $(addsuffix /%,$(PROGRAM_PARTS)),$(wildcard services/$(1)/*.c services/$(1)/*/*.c))

# Programs that live in a part of another program's folder, because they
# read what that program keeps: sluice-policy (test, lint, backtest) in
# services/audit/policy/, whose backtest reads the audit's store.
PROGRAM_PARTS = services/audit/policy
PART_PROGRAMS = policy

RELEASE_BINS = $(addprefix $(BUILD)/bin/sluice-,$(SERVICES) $(PART_PROGRAMS))
ASAN_BINS    = $(addprefix $(BUILD)/asan/bin/sluice-,$(SERVICES) $(PART_PROGRAMS))

.PHONY: FORCE all deps sdk-deps browser-deps oidc-deps otel-deps kube-deps mcp-deps cloud-deps run test unit integration check-compose \
        compose-deps compose-test \
        check-docs check-layers check-policies check-prometheus check-kubernetes memcheck \
        fuzz fuzz-smoke bench chaos clean asan agents
.DEFAULT_GOAL := all
# Keep intermediate objects (fuzz and bench objects are built by pattern rules).
.SECONDARY:

all: $(RELEASE_BINS)
asan: $(ASAN_BINS)

# ---------------------------------------------------------------------------
# Compiling, two flavours

$(BUILD)/obj/release/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/asan/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) $(ASANFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) $(FUZZFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(BUILD)/lib/libsluice.a: $(call objs,release,$(COMMON_SRC) $(LIB_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/asan/lib/libsluice.a: $(call objs,asan,$(COMMON_SRC) $(LIB_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# One rule per service and flavour.
define service_rules
$(BUILD)/bin/sluice-$(1): $(call objs,release,$(call svc_src,$(1))) $(BUILD)/lib/libsluice.a
	@mkdir -p $$(dir $$@)
	$(CC) $(CFLAGS) -o $$@ $$^ $(LDLIBS)

$(BUILD)/asan/bin/sluice-$(1): $(call objs,asan,$(call svc_src,$(1))) $(BUILD)/asan/lib/libsluice.a
	@mkdir -p $$(dir $$@)
	$(CC) $(ASANFLAGS) -o $$@ $$^ $(LDLIBS)
endef
$(foreach s,$(SERVICES),$(eval $(call service_rules,$(s))))

POLICY_SRC = $(wildcard services/audit/policy/*.c)
$(BUILD)/bin/sluice-policy: $(call objs,release,$(POLICY_SRC)) $(BUILD)/lib/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/asan/bin/sluice-policy: $(call objs,asan,$(POLICY_SRC)) $(BUILD)/asan/lib/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(ASANFLAGS) -o $@ $^ $(LDLIBS)

# A gateway for the integration tests only (tests/integration/test_inline.c):
# the real one, every object and its main, with a driver that starts the
# gateway's own requests (gateway_leg.h) from files: no client can.
LEGTEST_SRC = $(wildcard tests/integration/leg/*.c)
LEGTEST_BIN = $(BUILD)/asan/legtest/sluice-gateway
$(LEGTEST_BIN): $(call objs,asan,$(call svc_src,gateway) $(LEGTEST_SRC)) $(BUILD)/asan/lib/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(ASANFLAGS) -Wl,--wrap=gateway_new -o $@ $^ $(LDLIBS)

# Test runners (Criterion), built with the sanitizers. Their own sources
# compile with less optimization than the code they test (which stays at
# -O1), instrumented the same: the integration tests, their harness and
# load driver and the leg driver at -Og (about three quarters of the
# time -O1 takes; the load driver parses whole streams), the unit tests
# at -O0 (about half of -Og's time: 1,100 tests of Criterion's macros,
# whose own work is small beside that of the libraries they call; GCC's
# flow warnings such as -Wmaybe-uninitialized, which need optimization,
# are not given on the unit tests' own code).
TEST_SRC = $(INTEG_SRC) $(LEGTEST_SRC)
$(call objs,asan,$(TEST_SRC)): ASANFLAGS := -Og $(filter-out -O1,$(ASANFLAGS))
$(call objs,asan,$(UNIT_SRC)): ASANFLAGS := -O0 $(filter-out -O1,$(ASANFLAGS))

$(BUILD)/asan/tests/unit: $(call objs,asan,$(UNIT_SRC)) $(BUILD)/asan/lib/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(ASANFLAGS) -o $@ $^ -lcriterion $(LDLIBS)

$(BUILD)/asan/tests/integration: $(call objs,asan,$(INTEG_SRC)) $(BUILD)/asan/lib/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(ASANFLAGS) -o $@ $^ -lcriterion $(LDLIBS)

# Fuzz targets: tests/fuzz/fuzz_<name>.c, one libFuzzer binary each.
$(BUILD)/fuzz/lib.a: $(call objs,fuzz,$(FUZZ_LIB_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/fuzz/fuzz_%: $(BUILD)/obj/fuzz/tests/fuzz/fuzz_%.o $(BUILD)/fuzz/lib.a
	$(FUZZ_CC) $(FUZZFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# Benchmarks: tests/bench/bench_<name>.c, optimized, one binary each.
$(BUILD)/bench/bench_%: $(BUILD)/obj/release/tests/bench/bench_%.o $(BUILD)/lib/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The embedded files: a build tool, and the source it writes.
$(BUILD)/tools/embed: services/audit/embed/embed.c
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O2 -o $@ $<

# The list of those files, rewritten only when it changes: a file added,
# moved or removed makes the source again, even when every file left is
# older than it.
EMBED_LIST = $(BUILD)/gen/embedded.list

$(EMBED_LIST): FORCE
	@mkdir -p $(dir $@)
	@echo '$(EMBED_FILES)' | cmp -s - $@ || echo '$(EMBED_FILES)' > $@

$(GEN_SRC): $(BUILD)/tools/embed $(EMBED_FILES) $(EMBED_LIST)
	@mkdir -p $(dir $@)
	$(BUILD)/tools/embed $@ services/audit/ $(EMBED_FILES)

$(call objs,release,$(GEN_SRC)) $(call objs,asan,$(GEN_SRC)) $(call objs,fuzz,$(GEN_SRC)): CSTD += -Iservices/audit/store

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# ---------------------------------------------------------------------------
# Set-up

deps:
	@missing=""; for p in $(PACKAGES); do \
	  if [ $$p = kubernetes-client ] && command -v kubectl >/dev/null 2>&1; then continue; fi; \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" \
	    || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
	  echo "sluice needs these Debian packages:$$missing"; \
	  echo "install them with:  sudo apt-get install -y$$missing"; \
	  exit 1; \
	fi; \
	echo "installing:$$missing"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y $$missing || { apt-get update && apt-get install -y $$missing; }; rc=$$?; \
	case " $$missing " in *" prometheus "*) \
	  echo "stopping the prometheus services the package started (make run's mock takes port 9090)"; \
	  systemctl disable --now prometheus.service prometheus-node-exporter.service >/dev/null 2>&1 || true;; \
	esac; exit $$rc

# The official SDKs for tests/sdk: npm packages pinned in its
# package-lock.json, installed with npm ci. npm comes from Debian's nodejs and
# npm packages when the command is missing (checked by command: npm may come
# from elsewhere). When the packages cannot be installed this says so and
# the SDK test is skipped with the reason; it never fails the build.
SDK_DIR = tests/sdk

sdk-deps:
	@if ! command -v npm >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's nodejs and npm for the SDK tests"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y nodejs npm || { apt-get update && apt-get install -y nodejs npm; } || true; \
	  else \
	    echo "npm is missing; install it with: sudo apt-get install -y nodejs npm"; \
	  fi; \
	fi; \
	if ! command -v npm >/dev/null 2>&1; then \
	  echo "npm is not available: the SDK tests will be skipped"; \
	elif [ ! -f $(SDK_DIR)/node_modules/.package-lock.json ] \
	  || [ $(SDK_DIR)/package-lock.json -nt $(SDK_DIR)/node_modules/.package-lock.json ]; then \
	  echo "installing the SDKs for the SDK tests ($(SDK_DIR)/package-lock.json)"; \
	  (cd $(SDK_DIR) && timeout 600 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) \
	    || echo "npm could not install the SDK packages: the SDK tests will be skipped"; \
	fi

# playwright-core for tests/browser (the console in headless Chromium): the
# browser is Debian's /usr/bin/chromium (PACKAGES), never one npm downloads
# (--ignore-scripts). Like sdk-deps, it says why when it cannot, and the
# browser test is then skipped with that reason.
BROWSER_DIR = tests/browser

# npm ci in a test folder when its lock is newer than what is installed:
# $(call npm_ci,folder,what it installs,what is skipped without it)
define npm_ci
	@if ! command -v npm >/dev/null 2>&1; then \
	  echo "npm is not available: $(3) will be skipped"; \
	elif [ ! -f $(1)/node_modules/.package-lock.json ] \
	  || [ $(1)/package-lock.json -nt $(1)/node_modules/.package-lock.json ]; then \
	  echo "installing $(2) ($(1)/package-lock.json)"; \
	  (cd $(1) && timeout 600 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) \
	    || echo "npm could not install $(2): $(3) will be skipped"; \
	fi
endef

browser-deps:
	$(call npm_ci,$(BROWSER_DIR),playwright-core for the browser test,the browser test)

# The OpenID provider of the console's sign-in test (tests/oidc:
# oidc-provider, pinned in its package-lock.json), started by the test on
# 127.0.0.1. Like browser-deps, it says why when it cannot, and the sign-in
# test is then skipped with that reason.
OIDC_DIR = tests/oidc

oidc-deps:
	$(call npm_ci,$(OIDC_DIR),the OpenID provider for the sign-in test,the browser's sign-in test)

# The validator of the Kubernetes manifests (tests/kubernetes: the
# Kubernetes schemas as kubernetes-models, pinned in its package-lock.json).
# Like sdk-deps, it says why when it cannot, and the schema check is then
# skipped with that reason.
KUBE_DIR = tests/kubernetes

kube-deps:
	$(call npm_ci,$(KUBE_DIR),the Kubernetes manifest validator,the Kubernetes schema check)

# The OTLP receiver of tests/otel (the official OpenTelemetry protobuf
# decoder, in @opentelemetry/otlp-transformer), pinned in its
# package-lock.json. Like sdk-deps, it says why when it cannot, and the
# exporter's tests are then skipped with that reason.
OTEL_DIR = tests/otel

otel-deps:
	$(call npm_ci,$(OTEL_DIR),the OTLP receiver's packages,the OTLP exporter tests)

# The official MCP TypeScript SDK of tests/mcp (its server behind sluice,
# its client in front), pinned in its package-lock.json. Like sdk-deps, it
# says why when it cannot, and the MCP tests are then skipped with that
# reason.
MCP_DIR = tests/mcp

mcp-deps:
	$(call npm_ci,$(MCP_DIR),the MCP SDK packages,the MCP tests)

# The references of tests/cloud: the AWS SDK's event stream codec
# (@smithy/eventstream-codec) and SigV4 signer (@smithy/signature-v4), and
# google-auth-library (10.x, the last for Debian 12's Node 18 and 20),
# pinned in its package-lock.json; tests/integration/test_cloud.c checks
# common/cloud against them. Like sdk-deps, it says why when it cannot,
# and those tests are then skipped with that reason.
CLOUD_DIR = tests/cloud

cloud-deps:
	$(call npm_ci,$(CLOUD_DIR),the cloud reference packages and clients,the cloud reference tests)

# ---------------------------------------------------------------------------
# Running

# The builds use every core, and so do the unit and the integration tests
# (TEST_JOBS at once: each integration test starts its own processes on
# ports and in directories of its own, so they share nothing). The unit
# tests run UNIT_JOBS at once, two per core: many wait on a PostgreSQL
# cluster, a timer or a child process (1,248 tests: 127 s at 4 at once,
# 78 % of two cores, against about 210 s at 2).
BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
TEST_JOBS  ?= $(BUILD_JOBS)
UNIT_JOBS  ?= $(shell echo $$(( $(TEST_JOBS) * 2 )))
# The integration tests' parallel phase: as many as the cores. At one
# more (three on two cores, 664 s for make test instead of 742 s) a drain
# test failed in one of two runs: an emitter took a busy gateway for dead
# and its streams never ended. INTEG_JOBS=3 stays possible by hand.
INTEG_JOBS ?= $(TEST_JOBS)

run: deps
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) all
	@deploy/run-local.sh $(BUILD)/bin

# ---------------------------------------------------------------------------
# Tests

# sdk-deps first (it installs npm where it is missing), then the other
# npm folders beside the builds: their installs wait on the network.
test: deps
	@$(MAKE) --no-print-directory sdk-deps
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) browser-deps oidc-deps otel-deps kube-deps mcp-deps cloud-deps \
	  all asan $(BUILD)/asan/tests/unit $(BUILD)/asan/tests/integration $(LEGTEST_BIN) $(FUZZ_BINS)
	@$(MAKE) --no-print-directory check-layers check-policies unit integration fuzz-smoke
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) check-compose check-prometheus check-docs check-kubernetes

# The PostgreSQL clusters of the tests start from copies of one made by
# initdb once (tests/pgtmp.h): a copy takes 0.05 s of CPU, initdb 0.8 s.
PG_TEMPLATE_ENV = SLUICE_PG_TEMPLATE=$(CURDIR)/$(BUILD)/pg-template

# Criterion counts a test whose worker process LeakSanitizer reports at
# exit as passed: the report in the output fails the run.
unit: $(BUILD)/asan/tests/unit
	@{ $(PG_TEMPLATE_ENV) $(BUILD)/asan/tests/unit --jobs $(UNIT_JOBS) 2>&1; echo $$? > $(BUILD)/unit.rc; } | tee $(BUILD)/unit.log
	@test "$$(cat $(BUILD)/unit.rc)" = 0
	@if grep -q 'ERROR: LeakSanitizer' $(BUILD)/unit.log; then \
	  echo "unit: LeakSanitizer found leaks (above; the whole output in $(BUILD)/unit.log)"; exit 1; fi

# The integration tests start the sanitizer builds of the real programs;
# the release gateway too, for what the sanitizers would distort (memory).
# TEST_JOBS of them run at once (TEST_JOBS=1: one at a time); beside them,
# one at a time, the tests of INTEG_BESIDE, which mostly wait (a call held
# for a minute: 6 s of CPU in 67; processes stopped for seconds at a time:
# 37 s of CPU in 107; a collector that is down, epochs left to expire,
# drains: 12 s of CPU in 40 together; eight more that wait on redis
# windows, stopped processes, scrapes, a name not there yet and a store:
# 23 s of CPU in 124, which fill this lane to about the parallel phase's
# length, still three tests at once) and would otherwise hold one of the
# TEST_JOBS places for minutes; then the tests of INTEG_ALONE one at a time, the machine
# theirs: one starves every core for 30 s, one keeps every core busy
# parsing and checks that no heartbeat is missed meanwhile, and the slow
# reader's, whose client must fall behind a stream the pipeline makes fast
# enough to fill the kernel's buffers and the 64 KiB cap (beside another
# test the stream can come too slowly to be cut: seen 2 times in 6
# parallel runs) (Criterion patterns, | between).
INTEG_BESIDE = keepalive/a_call_held_a_minute_keeps_every_dialect_and_sdk_waiting|pause/every_kind_stopped|$\
               traces/a_collector_that_is_down_costs_the_stream_nothing|ends/stale_epochs_expire|$\
               drain/gateway_finishes_its_streams_then_exits|drain/gateway_ends_what_drain_ms_cuts_off_cleanly|$\
               drain/a_second_sigterm_ends_the_drain_at_once|$\
               identity/three_gateways_hold_one_limit_through_redis|ends/every_way_frees_every_hop|$\
               pause/requests_a_stopped_ingest_took_go_to_the_other|pause/an_ingest_stopped_mid_stream_is_waited_for|$\
               tap/a_name_stands_for_its_addresses_and_one_not_there_yet_is_waited_for|$\
               prometheus/scrapes_every_process_and_sees_streams_pass|compose/the_compose_commands_run_and_serve|$\
               keys_api/keys_issued_by_the_console_reach_every_gateway_postgresql
INTEG_ALONE  = pause/starved_of_cpu|pause/busy_gateway_declares_nobody_dead|gateway/a_slow_reader_is_cut_off_with_bounded_memory
INTEG_ENV    = $(PG_TEMPLATE_ENV) SLUICE_BIN_DIR=$(CURDIR)/$(BUILD)/asan/bin SLUICE_RELEASE_BIN_DIR=$(CURDIR)/$(BUILD)/bin \
               SLUICE_LEGTEST_BIN_DIR=$(CURDIR)/$(dir $(LEGTEST_BIN))

integration: $(BUILD)/asan/tests/integration $(ASAN_BINS) $(BUILD)/bin/sluice-gateway $(LEGTEST_BIN)
	@rc=0; \
	{ $(INTEG_ENV) $(BUILD)/asan/tests/integration --jobs 1 --filter '@($(INTEG_BESIDE))' \
	    > $(BUILD)/integration-beside.log 2>&1; echo $$? > $(BUILD)/integration-beside.rc; } & \
	$(INTEG_ENV) $(BUILD)/asan/tests/integration --jobs $(INTEG_JOBS) --filter '!($(INTEG_ALONE)|$(INTEG_BESIDE))' || rc=1; \
	wait; echo "== beside them, one at a time: $(INTEG_BESIDE)"; cat $(BUILD)/integration-beside.log; \
	test "$$(cat $(BUILD)/integration-beside.rc)" = 0 || rc=1; \
	$(INTEG_ENV) $(BUILD)/asan/tests/integration --jobs 1 --filter '@($(INTEG_ALONE))' || rc=1; \
	exit $$rc

# The kill-and-restart test, then the stop-and-resume rounds: every kind of
# process stopped PAUSE_ROUNDS times (5, 1.5 and 0.3 s in turn, under load
# and idle), then DRAIN_ROUNDS rolling updates of every kind of stage, the
# gateway and sluice-audit (a new instance, then SIGTERM to an old one,
# under load; the audit also alone on PostgreSQL); a summary line per test
# and per kind.
PAUSE_ROUNDS ?= 10
DRAIN_ROUNDS ?= 10

chaos: $(BUILD)/asan/tests/integration $(ASAN_BINS)
	@out=$$(mktemp); SLUICE_BIN_DIR=$(CURDIR)/$(BUILD)/asan/bin $(BUILD)/asan/tests/integration \
	  --filter 'chaos/kill_any_stage_lose_nothing' --jobs 1 > $$out 2>&1; rc=$$?; \
	  SLUICE_PAUSE_ROUNDS=$(PAUSE_ROUNDS) SLUICE_BIN_DIR=$(CURDIR)/$(BUILD)/asan/bin $(BUILD)/asan/tests/integration \
	  --filter 'pause/every_kind_stopped' --jobs 1 >> $$out 2>&1 || rc=1; \
	  SLUICE_DRAIN_ROUNDS=$(DRAIN_ROUNDS) SLUICE_BIN_DIR=$(CURDIR)/$(BUILD)/asan/bin $(BUILD)/asan/tests/integration \
	  --filter 'drain/rolling_update_of_*' --jobs 1 >> $$out 2>&1 || rc=1; \
	  grep -E '^chaos:|^pause:|^drain:|^\[FAIL|^\[----\] .*Assertion|Synthesis' $$out; rm -f $$out; exit $$rc

# The coding agents, real clients of sluice: installed into build/agents
# from tests/agents/package-lock.json (their install scripts put
# each agent's own binary in place; npm install, not npm ci, which refuses
# this lock: it lacks opencode's packages for other systems), then
# tests/integration/test_agents.c
# runs each against a stack of its own (the requests each case sent in
# $(AGENTS_DIR)/requests). AGENTS=latest: the newest version
# of each instead (tests/agents/install-latest.sh), in a folder of its own.
AGENTS ?= pinned
AGENTS_DIR = $(BUILD)/agents$(if $(filter latest,$(AGENTS)),-latest)

agents: deps
	@case "$(AGENTS)" in pinned|latest) ;; *) echo "AGENTS is pinned (the default) or latest, not '$(AGENTS)'"; exit 1;; esac
	@$(MAKE) --no-print-directory asan $(BUILD)/asan/tests/integration
	@command -v npm >/dev/null 2>&1 || { echo "make agents needs npm: sudo apt-get install -y nodejs npm"; exit 1; }
	@mkdir -p $(AGENTS_DIR)
ifeq ($(AGENTS),latest)
	@tests/agents/install-latest.sh $(AGENTS_DIR)
else
	@if [ ! -f $(AGENTS_DIR)/node_modules/.package-lock.json ] \
	  || [ tests/agents/package-lock.json -nt $(AGENTS_DIR)/node_modules/.package-lock.json ]; then \
	  echo "installing the coding agents into $(AGENTS_DIR) (tests/agents/package-lock.json)"; \
	  cp tests/agents/package.json tests/agents/package-lock.json $(AGENTS_DIR)/ \
	  && (cd $(AGENTS_DIR) && timeout 900 npm install --no-save --no-audit --no-fund --loglevel=error) || exit 1; \
	fi
endif
	@rm -rf $(AGENTS_DIR)/requests
	@out=$$(mktemp); SLUICE_BIN_DIR=$(CURDIR)/$(BUILD)/asan/bin SLUICE_AGENTS_BIN=$(CURDIR)/$(AGENTS_DIR)/node_modules/.bin \
	  SLUICE_AGENTS_RECORD=$(CURDIR)/$(AGENTS_DIR)/requests \
	  $(BUILD)/asan/tests/integration --filter 'agents/*' --jobs 1 > $$out 2>&1; rc=$$?; \
	  grep -E '^agents:|^\[FAIL|^\[----\]|Synthesis' $$out; rm -f $$out; exit $$rc

check-compose:
	@if command -v docker-compose >/dev/null 2>&1; then \
	  docker-compose -f docker-compose.yml config -q && echo "docker-compose.yml: valid"; \
	else echo "docker-compose not installed: skipping the compose check"; fi

# make compose-test: the compose stack in Docker (tests/compose/run.sh,
# which says what it checks). compose-deps installs what it needs from
# Debian: the daemon (docker.io), Debian's docker-compose 1.29, debootstrap
# (the base image, deploy/base-image.sh), and the compose v2 plugin from
# Debian's docker-compose 2.x (trixie's package: bookworm has none, and
# it needs only libc6), unpacked to $(COMPOSE_PLUGIN_DIR) so that
# both commands stay; then starts dockerd when it is not running. The
# load driver is the chaos tests' client (tests/integration/load.c).
COMPOSE_PACKAGES   = docker.io docker-compose debootstrap
COMPOSE_V2_SUITE   = trixie
COMPOSE_PLUGIN_DIR = /usr/local/lib/docker/cli-plugins
COMPOSE_LOAD       = $(BUILD)/compose/compose-load

$(COMPOSE_LOAD): $(call objs,release,tests/compose/compose_load.c tests/integration/load.c) $(BUILD)/lib/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

compose-deps:
	@COMPOSE_PACKAGES="$(COMPOSE_PACKAGES)" COMPOSE_V2_SUITE=$(COMPOSE_V2_SUITE) \
	  COMPOSE_PLUGIN_DIR=$(COMPOSE_PLUGIN_DIR) COMPOSE_APT_DIR=$(CURDIR)/$(BUILD)/compose/apt tests/compose/deps.sh

compose-test: deps
	@$(MAKE) --no-print-directory compose-deps
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) $(COMPOSE_LOAD)
	@tests/compose/run.sh $(COMPOSE_LOAD)

# deploy/prometheus/: the scrape config and the alert rules as promtool
# reads them, the rules' unit tests (tests/prometheus/alerts_test.yml),
# and every metric a rule names exported by a process and documented in
# docs/metrics.md (the checker's self-test first). promtool comes with
# Debian's prometheus package (PACKAGES); without it the promtool checks are
# skipped, saying so.
PROM_DIR = deploy/prometheus

check-prometheus:
	@python3 tests/prometheus/check-metric-names.py --self-test
	@python3 tests/prometheus/check-metric-names.py
	@if command -v promtool >/dev/null 2>&1; then \
	  promtool check config $(PROM_DIR)/prometheus.yml && \
	  promtool check rules $(PROM_DIR)/alerts.yml && \
	  promtool test rules tests/prometheus/alerts_test.yml; \
	else echo "promtool not installed (Debian's prometheus): skipping the promtool checks"; fi

# deploy/kubernetes: both overlays build with kubectl kustomize (the
# deprecation notes of newer kustomize versions dropped: the files keep to
# what Debian's kubectl 1.20 reads too), then every object validates
# against the Kubernetes schemas, the validator's self-test first.
# tests/integration/test_kubernetes.c runs the containers' commands.
KUBE_OVERLAYS = small large

check-kubernetes:
	@if ! command -v kubectl >/dev/null 2>&1; then \
	  echo "kubectl not installed: skipping the Kubernetes check"; exit 0; fi; \
	mkdir -p $(BUILD)/kubernetes; \
	for o in $(KUBE_OVERLAYS); do \
	  kubectl kustomize deploy/kubernetes/overlays/$$o > $(BUILD)/kubernetes/$$o.yaml 2> $(BUILD)/kubernetes/$$o.err; \
	  rc=$$?; grep -v "is deprecated" $(BUILD)/kubernetes/$$o.err; \
	  [ $$rc = 0 ] || { echo "deploy/kubernetes/overlays/$$o does not build"; exit 1; }; \
	  echo "deploy/kubernetes/overlays/$$o: builds"; \
	done; \
	if [ ! -d $(KUBE_DIR)/node_modules/kubernetes-models ] || ! command -v node >/dev/null 2>&1; then \
	  echo "the validator is not installed (make kube-deps): skipping the Kubernetes schema check"; exit 0; fi; \
	node $(KUBE_DIR)/validate.mjs --self-test \
	  && node $(KUBE_DIR)/validate.mjs $(addprefix $(BUILD)/kubernetes/,$(addsuffix .yaml,$(KUBE_OVERLAYS)))

# The order of the libraries: common/LAYERS lists the folders of common/
# (proto/ among them, services/ on top) from the bottom up, and a file
# includes only its own folder's files and those of folders listed before
# it, a program none of another program's folder, with no exceptions;
# each unit test names the file it tests, on the same path. The checker's
# self-test first, so a checker that finds nothing cannot pass unnoticed.
check-layers:
	@python3 tests/layers/check-layers.py --self-test
	@python3 tests/layers/check-layers.py

# The shipped policies come with their tests (P.test.yaml beside P.yaml,
# docs/policy.md "Testing a policy"): each runs through the policy library
# the judge uses, and a case that no longer holds fails the build.
POLICY_TESTS = $(sort $(wildcard deploy/*.test.yaml deploy/policies/*.test.yaml))

check-policies: $(BUILD)/bin/sluice-policy
	@out=$$($(BUILD)/bin/sluice-policy test $(POLICY_TESTS) 2>&1); rc=$$?; \
	  printf '%s\n' "$$out" | grep -v ': PASS '; exit $$rc

# The links of README.md, docs/, proto/PROTOCOL.md and every other
# Markdown file: each names a file that exists and a heading it has (the
# anchors GitHub makes); a source path the prose quotes exists too. The
# checker's self-test first, so a checker that finds nothing cannot pass
# unnoticed.
check-docs:
	@python3 tests/docs/check-links.py --self-test
	@python3 tests/docs/check-links.py

# Each fuzz target runs through tests/fuzz/run-one.sh (its corpus, its
# seeds, its findings in build/fuzz/artifacts/, one line each), TEST_JOBS
# targets at once (each is one process on one core); any target's
# failure fails the run.
define run_fuzz
	@printf '%s\n' $(FUZZ_BINS) | xargs -P $(TEST_JOBS) -n 1 tests/fuzz/run-one.sh $(1) $(BUILD)/fuzz
endef

fuzz: $(FUZZ_BINS)
	$(call run_fuzz,$(FUZZ_SECONDS))

fuzz-smoke: $(FUZZ_BINS)
	$(call run_fuzz,$(FUZZ_SMOKE_SECONDS))

bench: deps
	@$(MAKE) --no-print-directory all $(BENCH_BINS)
	@rm -f $(BUILD)/bench-audit.json
	@for b in $(BENCH_BINS); do echo "== $$b"; BENCH_AUDIT_JSON=$(BUILD)/bench-audit.json $$b || exit 1; done
	@echo "== sluice-bench: the stacks against nginx and the bare mock (build/bench.json)"
	@tests/bench/run-stack.sh $(BUILD)/bin --out $(BUILD)/bench.json
	@python3 tests/bench/json-merge.py $(BUILD)/bench.json $(BUILD)/bench-audit.json
	@echo "== the audit's spool on the emitter: off, held, taken by sluice-audit"
	@tests/bench/audit-stack.sh $(BUILD)/bin
	@echo "== MCP tools/call: directly and through sluice's /mcp/<server> (tests/mcp, make mcp-deps)"
	@tests/bench/mcp-stack.sh $(BUILD)/bin --out $(BUILD)/bench.json
	@echo "== AWS's event stream against SSE: the same stream, CPU per chunk (issue 40)"
	@rm -f $(BUILD)/bench-evstream.json
	@tests/bench/evstream-stack.sh $(BUILD)/bin --out $(BUILD)/bench-evstream.json
	@python3 tests/bench/json-merge.py $(BUILD)/bench.json $(BUILD)/bench-evstream.json

memcheck: $(BUILD)/tests/unit-plain
	valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
	  $(BUILD)/tests/unit-plain --jobs 1

$(BUILD)/tests/unit-plain: $(call objs,release,$(UNIT_SRC)) $(BUILD)/lib/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ -lcriterion $(LDLIBS)

clean:
	rm -rf $(BUILD)
