# Thin wrapper over CMake. `make run` and `make test` work on a fresh Debian 12.
BUILD    ?= build
JOBS     ?= $(shell nproc)
CC       := clang
CMAKE_FLAGS ?=

.PHONY: all deps build build-asan run test test-asan perf perf-all experiments clean

all: build

deps:
	@deploy/install-deps.sh

build: deps
	@CC=$(CC) cmake -S . -B $(BUILD) -DSHOAL_FUZZ=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@deploy/local/run-demo --build $(BUILD) --dir var

# Every test but the long benchmarks and experiments (`make perf`, `ctest -L
# experiment`), each once: the integration tests on the optimized build (TESTS);
# the unit and fuzz tests and the core integration tests (label `sanitize`) on
# a second build with ASan+UBSan (ASAN_TESTS, in build-asan/), which compiles at
# the lowest priority while the first ones run (a cluster test leaves most of
# the CPU idle) and runs its tests after them. `test-asan`: those alone.
CTEST := ctest --output-on-failure --timeout 600 -j 2
TESTS ?= -LE 'perf|experiment|unit|fuzz|sanitize'
ASAN_TESTS ?= -L 'unit|fuzz|sanitize'
ASAN_FLAGS := -DSHOAL_SANITIZE=ON -DSHOAL_WERROR=ON -DCMAKE_BUILD_TYPE=Debug

test: build
	@mkdir -p build-asan
	@nice -n 19 $(MAKE) --no-print-directory build-asan >build-asan/make.log 2>&1 & asan=$$!; \
	rc=0; (cd $(BUILD) && $(CTEST) $(TESTS)) || rc=$$?; \
	if ! wait $$asan; then tail -n 60 build-asan/make.log; echo "the ASan build failed" >&2; exit 1; fi; \
	(cd build-asan && $(CTEST) $(ASAN_TESTS)) || rc=$$?; \
	exit $$rc

test-asan: build-asan
	@cd build-asan && $(CTEST) $(ASAN_TESTS)

build-asan:
	@$(MAKE) --no-print-directory build BUILD=build-asan CMAKE_FLAGS="$(ASAN_FLAGS)"

# The regression guard: the ratios recorded in docs/benchmarks.json, measured
# again (tests/perf/run.py --check, ~4 minutes). `perf-all`: every benchmark.
perf: build
	@cd $(BUILD) && ctest --output-on-failure -R '^perf\.check$$'

perf-all: build
	@cd $(BUILD) && ctest --output-on-failure -L perf -LE experiment

# The fairness and elasticity experiments: each rewrites its part of docs/.
experiments: build
	@cd $(BUILD) && ctest --output-on-failure -L experiment

clean:
	rm -rf build build-asan
