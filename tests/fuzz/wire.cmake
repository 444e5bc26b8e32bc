# Frame parser of the node protocol (common/src/cm_wire.c).
shoal_fuzz(fuzz_wire SOURCES ${SHOAL_SOURCE_DIR}/common/src/cm_wire.c ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_wire.c LIBS common)
