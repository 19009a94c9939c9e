# libFuzzer target for the estimate config parser (scripts/fuzz.sh runs it).
if(MEMSHIM_FUZZ)
  add_executable(fuzz_estimate_config ${CMAKE_CURRENT_LIST_DIR}/fuzz_estimate_config.c)
  set_target_properties(fuzz_estimate_config PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_compile_options(fuzz_estimate_config PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_estimate_config PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_estimate_config PRIVATE memshim_analyze)
endif()
