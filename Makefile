# rein's top-level Makefile wraps CMake. The two commands in the README:
#   make run    install what is missing, build, and start rein serve (SQLite, the rules provider
#               unless a model is configured); RUN_ARGS="serve --port 9000" to change
#   make test   install what is missing, build with ASan+UBSan, run every test through CTest
#   make tsan   build with ThreadSanitizer (build-tsan/) and run the threaded tests under it:
#               the server, gateway, upstream transfer, agent, session, store, plan engine and
#               MCP tests (TSAN_TESTS)
# Other targets: make (build only), make install (PREFIX=/usr/local: rein on PATH), make lint,
# make fuzz, make bench, make clean.
#
# Every target checks what it needs before CMake runs (scripts/check-deps.sh names what is
# missing and how to install it), and a configure that fails leaves no half-made build folder
# behind: the next make configures again instead of failing with "No rule to make target".

JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
BUILD      ?= build
TEST_BUILD ?= build-test
FUZZ_BUILD ?= build-fuzz
PREFIX     ?= /usr/local
TSAN_BUILD ?= build-tsan
# The tests whose code runs on several threads at once (CTest names, a regular expression).
TSAN_TESTS ?= ^(integration\.(server|serve|serve_cluster|http_audit|gateway|provider_http|agent_loop|session|plan_engine|mcp_server|mcp_client|runners)|unit\.(store|pool|agent|core|proc|mcp|ledger))\.
CMAKE_ARGS ?=
CTEST_ARGS ?=
RUN_ARGS   ?= serve

# configure DIR ARGS: runs CMake; on failure removes what it cached, so a later run starts
# clean (a cached "not found" would outlive installing the package).
configure = cmake -S . -B $(1) $(2) || { rm -rf $(1)/CMakeCache.txt $(1)/CMakeFiles $(1)/Makefile; exit 1; }

.PHONY: all deps check-deps build run test tsan lint format fuzz bench install clean

all: build

deps:
	@scripts/install-deps.sh

check-deps:
	@scripts/check-deps.sh build

$(BUILD)/Makefile:
	@scripts/check-deps.sh build
	@$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo -DREIN_TESTS=OFF $(CMAKE_ARGS))

build: check-deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)
	@echo "make install: $(PREFIX)/bin/rein (try: rein --help)"

run: deps
	@$(MAKE) --no-print-directory build
	@echo "make run: ./$(BUILD)/rein $(RUN_ARGS) (Ctrl-C stops it)"
	@./$(BUILD)/rein $(RUN_ARGS)

TEST_CMAKE_ARGS = -DCMAKE_BUILD_TYPE=Debug -DREIN_ASAN=ON -DREIN_UBSAN=ON -DREIN_WERROR=ON \
                  -DREIN_TESTS=ON $(CMAKE_ARGS)

test: deps
	@scripts/check-deps.sh test
	@$(call configure,$(TEST_BUILD),$(TEST_CMAKE_ARGS))
	cmake --build $(TEST_BUILD) -j $(JOBS)
	cd $(TEST_BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

tsan: deps
	@scripts/check-deps.sh test
	@$(call configure,$(TSAN_BUILD),-DCMAKE_BUILD_TYPE=Debug -DREIN_TSAN=ON -DREIN_WERROR=ON \
	  -DREIN_TESTS=ON $(CMAKE_ARGS))
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	cd $(TSAN_BUILD) && ctest --output-on-failure -j $(JOBS) -R '$(TSAN_TESTS)' $(CTEST_ARGS)

lint:
	@scripts/check-deps.sh lint
	@$(MAKE) --no-print-directory $(BUILD)/Makefile
	scripts/lint.sh $(BUILD)

format:
	@scripts/check-deps.sh lint
	clang-format -i $$(git ls-files '*.c' '*.h')

fuzz: deps
	@scripts/check-deps.sh fuzz
	@CC=clang $(call configure,$(FUZZ_BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo -DREIN_FUZZ=ON)
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@echo "fuzzers are in $(FUZZ_BUILD)/fuzz; e.g. $(FUZZ_BUILD)/fuzz/fuzz_<name> fuzz/corpus/<name>"

bench: build
	@for b in bench/*.sh; do echo "== $$b"; bash $$b || exit 1; done

clean:
	rm -rf $(BUILD) $(TEST_BUILD) $(FUZZ_BUILD) $(TSAN_BUILD)
