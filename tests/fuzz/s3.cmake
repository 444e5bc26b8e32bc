# S3 front door parsers (GW_S3_PURE_SRC: pure, libc + common only): SigV4
# verification, the aws-chunked decoder, the XML body parser, the request
# router (bucket, key and operation; conditional headers; copy source).
foreach(t sig chunked xml route)
    shoal_fuzz(fuzz_s3_${t} SOURCES ${GW_S3_PURE_SRC} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_s3_${t}.c
               LIBS common)
    target_include_directories(fuzz_s3_${t} PRIVATE ${SHOAL_SOURCE_DIR}/gateway)
endforeach()
