# The store record of a tenant's S3 key (controller/ctl_s3keys.c).
shoal_fuzz(fuzz_s3key SOURCES ${SHOAL_SOURCE_DIR}/controller/ctl_s3keys.c
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_s3key.c LIBS controller_core PkgConfig::JANSSON)
target_include_directories(fuzz_s3key PRIVATE ${SHOAL_SOURCE_DIR}/controller)
