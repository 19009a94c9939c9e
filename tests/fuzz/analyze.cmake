# libFuzzer target for the trace reader, model and reports (scripts/fuzz.sh runs it on
# tests/fuzz/corpus/reader). The analyzer modules it drives are compiled into the target itself
# so that they carry the fuzzer's coverage instrumentation.
if(MEMSHIM_FUZZ)
  # Every module of the layers summary stands on, so that a new one cannot be left out.
  file(GLOB MEMSHIM_FUZZ_READER_MODULES CONFIGURE_DEPENDS
       ${CMAKE_SOURCE_DIR}/analyze/input/*.c ${CMAKE_SOURCE_DIR}/analyze/model/*.c
       ${CMAKE_SOURCE_DIR}/analyze/estimate/*.c ${CMAKE_SOURCE_DIR}/analyze/report/*.c
       ${CMAKE_SOURCE_DIR}/analyze/util/*.c)
  add_executable(fuzz_reader ${CMAKE_CURRENT_LIST_DIR}/fuzz_reader.c ${MEMSHIM_FUZZ_READER_MODULES})
  target_include_directories(fuzz_reader PRIVATE ${MEMSHIM_ANALYZE_DIRS})
  target_link_libraries(fuzz_reader PRIVATE memshim_headers m ${CMAKE_DL_LIBS})
  target_compile_options(fuzz_reader PRIVATE -fsanitize=fuzzer,address,undefined
                                             -fno-sanitize-recover=undefined)
  target_link_options(fuzz_reader PRIVATE -fsanitize=fuzzer,address,undefined)
  set_target_properties(fuzz_reader PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
endif()
