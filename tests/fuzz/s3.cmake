# S3 front door parsers (gateway/gw_s3_*.c: pure, libc + common only):
# SigV4 verification, the aws-chunked decoder, the XML body parser.
file(GLOB _fuzz_s3_src CONFIGURE_DEPENDS ${SHOAL_SOURCE_DIR}/gateway/gw_s3_*.c)
foreach(t sig chunked xml)
    shoal_fuzz(fuzz_s3_${t} SOURCES ${_fuzz_s3_src} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz_s3_${t}.c
               LIBS common)
    target_include_directories(fuzz_s3_${t} PRIVATE ${SHOAL_SOURCE_DIR}/gateway)
endforeach()
