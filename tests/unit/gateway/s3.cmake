# S3 front door building blocks (gateway/gw_s3_*.c): pure modules, compiled
# into each test with the rest of the S3 set so these build on their own.
file(GLOB _gw_s3_src CONFIGURE_DEPENDS ${SHOAL_SOURCE_DIR}/gateway/gw_s3_*.c)
foreach(name sig cksum chunked xml)
    add_executable(test_gw_s3_${name} ${CMAKE_CURRENT_SOURCE_DIR}/test_s3_${name}.c ${_gw_s3_src})
    target_include_directories(test_gw_s3_${name} PRIVATE ${SHOAL_SOURCE_DIR}/gateway)
    target_link_libraries(test_gw_s3_${name} PRIVATE common)
    add_test(NAME unit.gateway.s3_${name} COMMAND test_gw_s3_${name})
    set_tests_properties(unit.gateway.s3_${name} PROPERTIES LABELS unit TIMEOUT 120)
endforeach()
