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

# Every test but the long benchmarks and experiments (`make perf`, `ctest -L experiment`).
TESTS ?= -LE 'perf|experiment'

test: build
	@cd $(BUILD) && ctest --output-on-failure --timeout 600 $(TESTS) -j 2

# Unit, fuzz and the `sanitize` integration tests under ASan+UBSan
# (ASAN_TESTS picks others; `build-asan` only builds).
ASAN_TESTS ?= -L 'unit|fuzz|sanitize'
ASAN_FLAGS := -DSHOAL_SANITIZE=ON -DSHOAL_WERROR=ON -DCMAKE_BUILD_TYPE=Debug

test-asan:
	@$(MAKE) --no-print-directory test BUILD=build-asan TESTS="$(ASAN_TESTS)" CMAKE_FLAGS="$(ASAN_FLAGS)"

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
