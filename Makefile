# rein's top-level Makefile wraps CMake. The two commands in the README:
#   make run    install what is missing, build, and start rein serve (SQLite, the rules provider
#               unless a model is configured); RUN_ARGS="serve --port 9000" to change
#   make test   install what is missing, build with ASan+UBSan, run every test through CTest
# Other targets: make (build only), make lint, make fuzz, make bench, make clean.

JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
BUILD      ?= build
TEST_BUILD ?= build-test
FUZZ_BUILD ?= build-fuzz
CMAKE_ARGS ?=
CTEST_ARGS ?=
RUN_ARGS   ?= serve

.PHONY: all deps build run test lint format fuzz bench clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREIN_TESTS=OFF $(CMAKE_ARGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: deps
	@$(MAKE) --no-print-directory build
	@echo "make run: ./$(BUILD)/rein $(RUN_ARGS) (Ctrl-C stops it)"
	@./$(BUILD)/rein $(RUN_ARGS)

test: deps
	cmake -S . -B $(TEST_BUILD) -DCMAKE_BUILD_TYPE=Debug -DREIN_ASAN=ON -DREIN_UBSAN=ON \
	  -DREIN_WERROR=ON -DREIN_TESTS=ON $(CMAKE_ARGS)
	cmake --build $(TEST_BUILD) -j $(JOBS)
	cd $(TEST_BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

lint: $(BUILD)/CMakeCache.txt
	scripts/lint.sh $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

fuzz: deps
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DREIN_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@echo "fuzzers are in $(FUZZ_BUILD)/fuzz; e.g. $(FUZZ_BUILD)/fuzz/fuzz_<name> fuzz/corpus/<name>"

bench: build
	@for b in bench/*.sh; do echo "== $$b"; bash $$b || exit 1; done

clean:
	rm -rf $(BUILD) $(TEST_BUILD) $(FUZZ_BUILD)
