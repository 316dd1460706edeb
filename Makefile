# sluice - one Makefile for everything.
#
#   make            build every program into build/bin (optimized)
#   make run        install what is missing, build, start the stack on loopback
#   make test       install what is missing, build, run every test
#   make memcheck   run the unit tests under valgrind
#   make fuzz       run the fuzz targets for a bounded time (clang, libFuzzer)
#   make bench      start the stack and measure it (build/bench.json)
#   make deps       install the Debian packages the build needs (root), or
#                   print the command to do it
#
# Layout: common/ and proto/ are shared code; services/<name>/sl_*.c is the
# stage library of <name> (pure, no sockets), every other .c file in
# services/<name>/ is its service (main.c and the loop), linked into
# build/bin/sluice-<name>.

CC       ?= gcc
CSTD      = -std=c11 -D_GNU_SOURCE
WARN      = -Wall -Wextra -Werror
CFLAGS   ?= -O2 -g
ASANFLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
            -fno-sanitize-recover=undefined
LDLIBS    = -lczmq -lzmq -lmsgpackc -lcurl -ljansson -lmicrohttpd -lyaml -lm

# Debian packages: libraries, test framework, fuzzing compiler, tools the
# tests drive (curl), the compose checker, and Node for the SDK tests.
PACKAGES  = gcc make pkg-config libzmq3-dev libczmq-dev libmsgpack-dev \
            libcriterion-dev libcurl4-openssl-dev libjansson-dev \
            libmicrohttpd-dev libyaml-dev clang curl python3 docker-compose

SERVICES  = gateway ingest aggregator judge emitter mock tap
BUILD     = build

COMMON_SRC = $(wildcard common/*.c) $(wildcard proto/*.c)
LIB_SRC    = $(foreach s,$(SERVICES),$(wildcard services/$(s)/sl_*.c))
UNIT_SRC   = $(wildcard tests/unit/*.c)
INTEG_SRC  = $(wildcard tests/integration/*.c)

# Objects of a source list in a flavour directory: $(call objs,flavour,srcs)
objs = $(patsubst %.c,$(BUILD)/obj/$(1)/%.o,$(2))
# Service-only sources (everything but the library) of one service.
svc_src = $(filter-out services/$(1)/sl_%.c,$(wildcard services/$(1)/*.c))

RELEASE_BINS = $(addprefix $(BUILD)/bin/sluice-,$(SERVICES))
ASAN_BINS    = $(addprefix $(BUILD)/asan/bin/sluice-,$(SERVICES))

.PHONY: all deps run test unit integration check-compose memcheck fuzz bench \
        chaos clean asan
.DEFAULT_GOAL := all

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

# Test runners (Criterion), built with the sanitizers.
$(BUILD)/asan/tests/unit: $(call objs,asan,$(UNIT_SRC)) $(BUILD)/asan/lib/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(ASANFLAGS) -o $@ $^ -lcriterion $(LDLIBS)

$(BUILD)/asan/tests/integration: $(call objs,asan,$(INTEG_SRC)) $(BUILD)/asan/lib/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(ASANFLAGS) -o $@ $^ -lcriterion $(LDLIBS)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# ---------------------------------------------------------------------------
# Set-up

deps:
	@missing=""; for p in $(PACKAGES); do \
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
	apt-get install -y $$missing || { apt-get update && apt-get install -y $$missing; }

# ---------------------------------------------------------------------------
# Running

run: deps
	@$(MAKE) --no-print-directory all
	@deploy/run-local.sh $(BUILD)/bin

# ---------------------------------------------------------------------------
# Tests

test: deps
	@$(MAKE) --no-print-directory all asan $(BUILD)/asan/tests/unit $(BUILD)/asan/tests/integration
	@$(MAKE) --no-print-directory unit integration check-compose

unit: $(BUILD)/asan/tests/unit
	$(BUILD)/asan/tests/unit --jobs 2

# The integration tests start the sanitizer builds of the real programs.
integration: $(BUILD)/asan/tests/integration $(ASAN_BINS)
	SLUICE_BIN_DIR=$(CURDIR)/$(BUILD)/asan/bin $(BUILD)/asan/tests/integration --jobs 1

check-compose:
	@if command -v docker-compose >/dev/null 2>&1; then \
	  docker-compose -f docker-compose.yml config -q && echo "docker-compose.yml: valid"; \
	else echo "docker-compose not installed: skipping the compose check"; fi

memcheck: $(BUILD)/tests/unit-plain
	valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
	  $(BUILD)/tests/unit-plain --jobs 1

$(BUILD)/tests/unit-plain: $(call objs,release,$(UNIT_SRC)) $(BUILD)/lib/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ -lcriterion $(LDLIBS)

clean:
	rm -rf $(BUILD)
