# The s3 COS backend's URL, listing and error parsers (common/src/cm_cos_s3p.c).
shoal_fuzz(fuzz_cos_url SOURCES ${SHOAL_SOURCE_DIR}/common/src/cm_cos_s3p.c
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_cos_url.c LIBS common)
target_include_directories(fuzz_cos_url PRIVATE ${SHOAL_SOURCE_DIR}/common/src)
