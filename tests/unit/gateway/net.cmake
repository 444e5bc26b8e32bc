# The engine's wire client (gateway/gw_loop.c, gw_nodes.c, gw_conn.c) against a
# scripted node on loopback (included from CMakeLists.txt).
add_executable(test_gw_net ${CMAKE_CURRENT_SOURCE_DIR}/test_net.c)
target_link_libraries(test_gw_net PRIVATE gateway_core)
add_test(NAME unit.gateway.net COMMAND test_gw_net)
set_tests_properties(unit.gateway.net PROPERTIES LABELS unit TIMEOUT 60)

# The engine's side of the elastic memory tier (instance tags, reads around
# STALE chunks, META records) against six scripted nodes on loopback.
add_executable(test_gw_sms ${CMAKE_CURRENT_SOURCE_DIR}/test_sms.c)
target_link_libraries(test_gw_sms PRIVATE gateway_core)
add_test(NAME unit.gateway.sms COMMAND test_gw_sms)
set_tests_properties(unit.gateway.sms PROPERTIES LABELS unit TIMEOUT 60)
