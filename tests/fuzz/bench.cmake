# shoal-bench's parsers (bench/bench_spec.c, bench_sched.c, bench_trace.c are
# pure C, no libevent): tenant specs with their schedules, and --trace CSVs.
set(_bench_parsers ${SHOAL_SOURCE_DIR}/bench/bench_spec.c ${SHOAL_SOURCE_DIR}/bench/bench_sched.c)
shoal_fuzz(fuzz_bench_spec
    SOURCES ${_bench_parsers} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_bench_spec.c
    LIBS m)
shoal_fuzz(fuzz_bench_trace
    SOURCES ${_bench_parsers} ${SHOAL_SOURCE_DIR}/bench/bench_trace.c
            ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_bench_trace.c
    LIBS m)
target_include_directories(fuzz_bench_spec PRIVATE ${SHOAL_SOURCE_DIR}/bench)
target_include_directories(fuzz_bench_trace PRIVATE ${SHOAL_SOURCE_DIR}/bench)
