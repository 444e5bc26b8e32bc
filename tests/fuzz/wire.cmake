# Frame parser of the node protocol (common/src/cm_wire.c).
shoal_fuzz(fuzz_wire SOURCES ${SHOAL_SOURCE_DIR}/common/src/cm_wire.c ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_wire.c LIBS common)
# COS segment header parser of the node (fnstore/fns_pack.c).
shoal_fuzz(fuzz_pack SOURCES ${SHOAL_SOURCE_DIR}/fnstore/fns_pack.c ${SHOAL_SOURCE_DIR}/fnstore/fns_chunk.c
           ${SHOAL_SOURCE_DIR}/fnstore/fns_arena.c
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_pack.c LIBS common)
target_include_directories(fuzz_pack PRIVATE ${SHOAL_SOURCE_DIR}/fnstore)
# Connection framing of the node (fnstore/fns_conn.c) over a socket and the real loop.
shoal_fuzz(fuzz_conn SOURCES ${SHOAL_SOURCE_DIR}/fnstore/fns_conn.c ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_conn.c
           LIBS fnstore_core PkgConfig::LIBEVENT)
target_include_directories(fuzz_conn PRIVATE ${SHOAL_SOURCE_DIR}/fnstore)
# Redo log replay of the LMDB adapter (common/src/cm_kv.c), through cm_kv_open.
shoal_fuzz(fuzz_redo SOURCES ${SHOAL_SOURCE_DIR}/common/src/cm_kv.c
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_redo.c LIBS common ${LMDB_LIB} Threads::Threads)
