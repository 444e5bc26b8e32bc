# Thin wrapper over CMake. `make run` and `make test` work on a fresh Debian 12.
BUILD    ?= build
JOBS     ?= $(shell nproc)
CC       := clang
CMAKE_FLAGS ?=

.PHONY: all deps build run test test-asan perf experiments clean

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

# Unit, fuzz and the `sanitize` integration tests under ASan+UBSan.
test-asan:
	@$(MAKE) --no-print-directory test BUILD=build-asan TESTS="-L 'unit|fuzz|sanitize'" \
	    CMAKE_FLAGS="-DSHOAL_SANITIZE=ON -DSHOAL_WERROR=ON -DCMAKE_BUILD_TYPE=Debug"

perf: build
	@cd $(BUILD) && ctest --output-on-failure -L perf -LE experiment

experiments: build
	@cd $(BUILD) && ctest --output-on-failure -L experiment

clean:
	rm -rf build build-asan
