# S3 front door building blocks (GW_S3_PURE_SRC, gateway/CMakeLists.txt):
# pure modules, compiled into each test with the rest of the set so these
# build on their own.
set(_gw_s3_src ${GW_S3_PURE_SRC})
foreach(name sig cksum chunked xml route botocore)
    add_executable(test_gw_s3_${name} ${CMAKE_CURRENT_SOURCE_DIR}/test_s3_${name}.c ${_gw_s3_src})
    target_include_directories(test_gw_s3_${name} PRIVATE ${SHOAL_SOURCE_DIR}/gateway)
    target_link_libraries(test_gw_s3_${name} PRIVATE common)
    if(NOT name STREQUAL "botocore")
        add_test(NAME unit.gateway.s3_${name} COMMAND test_gw_s3_${name})
        set_tests_properties(unit.gateway.s3_${name} PROPERTIES LABELS unit TIMEOUT 120)
    endif()
endforeach()

# Requests signed by botocore (the library under boto3 and aws-cli): live
# from the installed one (python3-botocore; skipped without it), and as
# recorded from a recent one whose defaults (CRC32 checksums, aws-chunked
# trailers over https) Debian's does not have yet.
set(SHOAL_BOTOCORE_PYTHON /usr/bin/python3 CACHE FILEPATH "Python with botocore for unit.gateway.s3_botocore")
add_test(NAME unit.gateway.s3_botocore
         COMMAND ${SHOAL_BOTOCORE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/s3_botocore.py
                 $<TARGET_FILE:test_gw_s3_botocore>)
set_tests_properties(unit.gateway.s3_botocore PROPERTIES LABELS unit TIMEOUT 120
                     SKIP_RETURN_CODE 77)
file(GLOB _gw_s3_recordings ${CMAKE_CURRENT_SOURCE_DIR}/s3_botocore_*.rec)
foreach(rec ${_gw_s3_recordings})
    get_filename_component(_v ${rec} NAME_WLE)
    string(REPLACE "s3_botocore_" "" _v ${_v})
    add_test(NAME unit.gateway.s3_botocore_recorded_${_v}
             COMMAND test_gw_s3_botocore verify ${rec})
    set_tests_properties(unit.gateway.s3_botocore_recorded_${_v} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()

# What they cost (label perf, not in the default run).
add_executable(bench_gw_s3 ${CMAKE_CURRENT_SOURCE_DIR}/bench_s3.c ${_gw_s3_src})
target_include_directories(bench_gw_s3 PRIVATE ${SHOAL_SOURCE_DIR}/gateway)
target_link_libraries(bench_gw_s3 PRIVATE common)
add_test(NAME perf.gateway.s3 COMMAND bench_gw_s3)
set_tests_properties(perf.gateway.s3 PROPERTIES LABELS perf TIMEOUT 300)
