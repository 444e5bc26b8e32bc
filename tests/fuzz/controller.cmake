# The store record of a tenant's S3 key (controller/ctl_s3keys.c).
shoal_fuzz(fuzz_s3key SOURCES ${SHOAL_SOURCE_DIR}/controller/ctl_s3keys.c
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_s3key.c LIBS controller_core PkgConfig::JANSSON)
target_include_directories(fuzz_s3key PRIVATE ${SHOAL_SOURCE_DIR}/controller)
# The cost parsers: a --prices file and the "sms" store records (controller/ctl_cost.c).
shoal_fuzz(fuzz_cost SOURCES ${SHOAL_SOURCE_DIR}/controller/ctl_cost.c
           ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_cost.c LIBS controller_core PkgConfig::JANSSON)
target_include_directories(fuzz_cost PRIVATE ${SHOAL_SOURCE_DIR}/controller)

# The store record of a tenant's placement rows (controller/ctl_pp.c).
shoal_fuzz(fuzz_pp_record SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_pp_record.c
           LIBS controller_core PkgConfig::JANSSON m)
target_include_directories(fuzz_pp_record PRIVATE ${SHOAL_SOURCE_DIR}/controller)
