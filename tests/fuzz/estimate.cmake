# libFuzzer target for the estimate config parser and model (scripts/fuzz.sh runs it). Its
# sources are compiled into the target itself so that libFuzzer's coverage instruments them;
# the rest of the analyzer comes from the library.
if(MEMSHIM_FUZZ)
  add_executable(fuzz_estimate_config
                 ${CMAKE_CURRENT_LIST_DIR}/fuzz_estimate_config.c
                 ${CMAKE_SOURCE_DIR}/analyze/estimate/estimate_config.c
                 ${CMAKE_SOURCE_DIR}/analyze/estimate/estimate_formulas.c
                 ${CMAKE_SOURCE_DIR}/analyze/estimate/estimate.c)
  set_target_properties(fuzz_estimate_config PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_compile_options(fuzz_estimate_config PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_estimate_config PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_estimate_config PRIVATE memshim_analyze)
endif()
