# Gateway front unit tests (owned by the front; included from CMakeLists.txt).
# The pure modules are compiled straight into their tests so that these
# build even while the engine is in flux.
add_executable(test_gw_parse ${CMAKE_CURRENT_SOURCE_DIR}/test_parse.c
               ${SHOAL_SOURCE_DIR}/gateway/gw_parse.c)
target_include_directories(test_gw_parse PRIVATE ${SHOAL_SOURCE_DIR}/gateway
                           ${CMAKE_CURRENT_SOURCE_DIR}/../common)
target_link_libraries(test_gw_parse PRIVATE common)
add_test(NAME unit.gateway.parse COMMAND test_gw_parse)
set_tests_properties(unit.gateway.parse PROPERTIES LABELS unit TIMEOUT 60)

add_executable(test_gw_meta ${CMAKE_CURRENT_SOURCE_DIR}/test_meta.c
               ${SHOAL_SOURCE_DIR}/gateway/gw_meta.c)
target_include_directories(test_gw_meta PRIVATE ${SHOAL_SOURCE_DIR}/gateway
                           ${CMAKE_CURRENT_SOURCE_DIR}/../common)
target_link_libraries(test_gw_meta PRIVATE common)
add_test(NAME unit.gateway.meta COMMAND test_gw_meta)
set_tests_properties(unit.gateway.meta PROPERTIES LABELS unit TIMEOUT 120)

if(TARGET gateway_core)
    add_executable(test_gw_state ${CMAKE_CURRENT_SOURCE_DIR}/test_state.c)
    target_include_directories(test_gw_state PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/../common)
    target_link_libraries(test_gw_state PRIVATE gateway_core)
    add_test(NAME unit.gateway.state COMMAND test_gw_state)
    set_tests_properties(unit.gateway.state PROPERTIES LABELS unit TIMEOUT 60)
endif()

add_executable(test_gw_grace ${CMAKE_CURRENT_SOURCE_DIR}/test_grace.c
               ${SHOAL_SOURCE_DIR}/gateway/gw_grace.c)
target_include_directories(test_gw_grace PRIVATE ${SHOAL_SOURCE_DIR}/gateway
                           ${CMAKE_CURRENT_SOURCE_DIR}/../common)
target_link_libraries(test_gw_grace PRIVATE common)
add_test(NAME unit.gateway.grace COMMAND test_gw_grace)
set_tests_properties(unit.gateway.grace PROPERTIES LABELS unit TIMEOUT 60)
