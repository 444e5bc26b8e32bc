# shoal-bench's tenant-spec parser (bench/bench_spec.c is pure C, no libevent).
shoal_fuzz(fuzz_bench_spec
    SOURCES ${SHOAL_SOURCE_DIR}/bench/bench_spec.c ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_bench_spec.c
    LIBS common m)
target_include_directories(fuzz_bench_spec PRIVATE ${SHOAL_SOURCE_DIR}/bench)
