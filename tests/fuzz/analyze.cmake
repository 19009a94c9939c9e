# libFuzzer target for the trace reader, model and reports (scripts/fuzz.sh runs it on
# tests/fuzz/corpus/reader). The analyzer modules it drives are compiled into the target itself
# so that they carry the fuzzer's coverage instrumentation.
if(MEMSHIM_FUZZ)
  set(MEMSHIM_FUZZ_READER_MODULES input/reader input/reader_validate input/reader_bus
      input/reader_checksum input/reader_shape model/model model/model_query model/model_frames model/refine
      input/symbolize input/dwarf_lines model/site_label report/summary report/merge report/runs
      report/dump_refined estimate/estimate estimate/estimate_formulas estimate/estimate_config
      estimate/estimate_table estimate/estimate_cost util/json util/table report/dump util/cli)
  list(TRANSFORM MEMSHIM_FUZZ_READER_MODULES PREPEND ${CMAKE_SOURCE_DIR}/analyze/)
  list(TRANSFORM MEMSHIM_FUZZ_READER_MODULES APPEND .c)
  add_executable(fuzz_reader ${CMAKE_CURRENT_LIST_DIR}/fuzz_reader.c ${MEMSHIM_FUZZ_READER_MODULES})
  target_include_directories(fuzz_reader PRIVATE ${MEMSHIM_ANALYZE_DIRS})
  target_link_libraries(fuzz_reader PRIVATE memshim_headers m ${CMAKE_DL_LIBS})
  target_compile_options(fuzz_reader PRIVATE -fsanitize=fuzzer,address,undefined
                                             -fno-sanitize-recover=undefined)
  target_link_options(fuzz_reader PRIVATE -fsanitize=fuzzer,address,undefined)
  set_target_properties(fuzz_reader PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
endif()
