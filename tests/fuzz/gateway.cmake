# Gateway front parsers (gateway/gw_parse.c: pure, libc + common only).
shoal_fuzz(fuzz_key SOURCES ${SHOAL_SOURCE_DIR}/gateway/gw_parse.c
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_key.c LIBS common)
shoal_fuzz(fuzz_range SOURCES ${SHOAL_SOURCE_DIR}/gateway/gw_parse.c
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_range.c LIBS common)
shoal_fuzz(fuzz_header SOURCES ${SHOAL_SOURCE_DIR}/gateway/gw_parse.c
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_header.c LIBS common)
foreach(t fuzz_key fuzz_range fuzz_header)
    target_include_directories(${t} PRIVATE ${SHOAL_SOURCE_DIR}/gateway)
endforeach()
# What --rebuild-meta reads from COS (gateway/gw_meta_rec.c): META records and layout records,
# alone and inside insertion-log batches.
shoal_fuzz(fuzz_layout SOURCES ${SHOAL_SOURCE_DIR}/gateway/gw_meta_rec.c
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_layout.c LIBS common)
target_include_directories(fuzz_layout PRIVATE ${SHOAL_SOURCE_DIR}/gateway)
# The controller state a gateway polls (gateway/gw_snap.c), with what it
# calls of the S3 pure sources (date keys).
shoal_fuzz(fuzz_state SOURCES ${SHOAL_SOURCE_DIR}/gateway/gw_snap.c ${GW_S3_PURE_SRC}
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_state.c LIBS common PkgConfig::JANSSON)
target_include_directories(fuzz_state PRIVATE ${SHOAL_SOURCE_DIR}/gateway)
# A tenant's metadata bundle from another gateway (gateway/gw_meta_handover.c),
# taken into a store of its own and handed out again.
shoal_fuzz(fuzz_bundle SOURCES ${SHOAL_SOURCE_DIR}/gateway/gw_meta_handover.c
           ${SHOAL_SOURCE_DIR}/gateway/gw_meta.c ${SHOAL_SOURCE_DIR}/gateway/gw_meta_write.c
           ${SHOAL_SOURCE_DIR}/gateway/gw_meta_rec.c ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_bundle.c
           LIBS common)
target_include_directories(fuzz_bundle PRIVATE ${SHOAL_SOURCE_DIR}/gateway)
