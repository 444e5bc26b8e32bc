# Gateway front unit tests (owned by the front; included from CMakeLists.txt).
# The pure modules are compiled straight into their tests so that these
# build even while the engine is in flux.
# unit.gateway.<name>: test_<name>.c with gateway/gw_<name>.c compiled in.
function(shoal_gw_pure_test name timeout)
    add_executable(test_gw_${name} ${CMAKE_CURRENT_SOURCE_DIR}/test_${name}.c
                   ${SHOAL_SOURCE_DIR}/gateway/gw_${name}.c)
    target_include_directories(test_gw_${name} PRIVATE ${SHOAL_SOURCE_DIR}/gateway
                               ${CMAKE_CURRENT_SOURCE_DIR}/../common)
    target_link_libraries(test_gw_${name} PRIVATE common)
    add_test(NAME unit.gateway.${name} COMMAND test_gw_${name})
    set_tests_properties(unit.gateway.${name} PROPERTIES LABELS unit TIMEOUT ${timeout})
endfunction()

shoal_gw_pure_test(parse 60)
shoal_gw_pure_test(meta 120)
# the store's writes, its records and its hand-overs are in files of their own
target_sources(test_gw_meta PRIVATE ${SHOAL_SOURCE_DIR}/gateway/gw_meta_write.c
               ${SHOAL_SOURCE_DIR}/gateway/gw_meta_rec.c
               ${SHOAL_SOURCE_DIR}/gateway/gw_meta_handover.c)
shoal_gw_pure_test(grace 60)
shoal_gw_pure_test(admit 60)

add_executable(test_gw_state ${CMAKE_CURRENT_SOURCE_DIR}/test_state.c)
target_include_directories(test_gw_state PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/../common)
target_link_libraries(test_gw_state PRIVATE gateway_core)
add_test(NAME unit.gateway.state COMMAND test_gw_state)
set_tests_properties(unit.gateway.state PROPERTIES LABELS unit TIMEOUT 60)

# --rebuild-meta (gateway/gw_rebuild.c) over synthetic insertion logs in an fs COS.
add_executable(test_gw_rebuild ${CMAKE_CURRENT_SOURCE_DIR}/test_rebuild.c)
target_include_directories(test_gw_rebuild PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/../common)
target_link_libraries(test_gw_rebuild PRIVATE gateway_core)
add_test(NAME unit.gateway.rebuild COMMAND test_gw_rebuild)
set_tests_properties(unit.gateway.rebuild PROPERTIES LABELS unit TIMEOUT 60)

# What --rebuild-meta takes for 100,000 objects' logs (label perf, not in the default run).
add_executable(bench_gw_rebuild ${CMAKE_CURRENT_SOURCE_DIR}/bench_rebuild.c)
target_include_directories(bench_gw_rebuild PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/../common)
target_link_libraries(bench_gw_rebuild PRIVATE gateway_core)
add_test(NAME perf.gateway.rebuild COMMAND bench_gw_rebuild)
set_tests_properties(perf.gateway.rebuild PROPERTIES LABELS perf TIMEOUT 600)
