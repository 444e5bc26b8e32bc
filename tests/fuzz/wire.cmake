# The frame reader of the node protocol (common/src/cm_frame.c, with the encoder in cm_wire.c),
# which the gateway's and the node's connections both use.
shoal_fuzz(fuzz_frame SOURCES ${SHOAL_SOURCE_DIR}/common/src/cm_frame.c
           ${SHOAL_SOURCE_DIR}/common/src/cm_wire.c ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_frame.c LIBS common)
# COS segment header parser of the node (fnstore/fns_pack.c).
shoal_fuzz(fuzz_pack SOURCES ${SHOAL_SOURCE_DIR}/fnstore/fns_pack.c ${SHOAL_SOURCE_DIR}/fnstore/fns_chunk.c
           ${SHOAL_SOURCE_DIR}/fnstore/fns_arena.c
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_pack.c LIBS common policies)
target_include_directories(fuzz_pack PRIVATE ${SHOAL_SOURCE_DIR}/fnstore)
# The node's connections (fnstore/fns_conn.c: reads, EOF, back-pressure, one close) over a
# socket and the real loop, their frames read by common/src/cm_frame.c.
shoal_fuzz(fuzz_conn SOURCES ${SHOAL_SOURCE_DIR}/fnstore/fns_conn.c ${SHOAL_SOURCE_DIR}/common/src/cm_frame.c
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_conn.c LIBS fnstore_core PkgConfig::LIBEVENT)
target_include_directories(fuzz_conn PRIVATE ${SHOAL_SOURCE_DIR}/fnstore)
# Redo log replay of the LMDB adapter (common/src/cm_kv.c), through cm_kv_open.
shoal_fuzz(fuzz_redo SOURCES ${SHOAL_SOURCE_DIR}/common/src/cm_kv.c
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_redo.c LIBS common ${LMDB_LIB} Threads::Threads)
# Insertion log batches (common/src/cm_ilog.c), and what a node's replay makes of them
# (fnstore/fns_ilog.c).
shoal_fuzz(fuzz_ilog SOURCES ${SHOAL_SOURCE_DIR}/common/src/cm_ilog.c ${SHOAL_SOURCE_DIR}/fnstore/fns_ilog.c
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_ilog.c LIBS fnstore_core)
target_include_directories(fuzz_ilog PRIVATE ${SHOAL_SOURCE_DIR}/fnstore)
