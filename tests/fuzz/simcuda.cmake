# libFuzzer target for simcuda's fat-binary reader (scripts/fuzz.sh runs it on
# tests/fuzz/corpus/fatbin), built with libzstd when it is there, as simcuda is.
if(MEMSHIM_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  add_executable(fuzz_fatbin ${CMAKE_CURRENT_LIST_DIR}/fuzz_fatbin.c
                             ${CMAKE_SOURCE_DIR}/tests/simcuda/driver/fatbin.c)
  target_include_directories(fuzz_fatbin PRIVATE ${CMAKE_SOURCE_DIR}/tests/simcuda/driver)
  if(SIMCUDA_ZSTD_FOUND)
    target_compile_definitions(fuzz_fatbin PRIVATE SIMCUDA_HAVE_ZSTD)
    target_link_libraries(fuzz_fatbin PRIVATE PkgConfig::SIMCUDA_ZSTD)
  endif()
  target_link_libraries(fuzz_fatbin PRIVATE Threads::Threads)
  target_compile_options(fuzz_fatbin PRIVATE -fsanitize=fuzzer,address,undefined
                                             -fno-sanitize-recover=undefined)
  target_link_options(fuzz_fatbin PRIVATE -fsanitize=fuzzer,address,undefined)
  set_target_properties(fuzz_fatbin PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
endif()
