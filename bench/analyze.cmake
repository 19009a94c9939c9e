# Analyzer throughput (events/s of `summary`), memory, and the ratio against python3
# pickle.load of the memory-viz export. Run: build/bin/bench_analyze [--events N]
# It needs the synthetic trace generator, which lives with the tests.
if(NOT TARGET memshim_tracegen)
  return()
endif()
add_executable(bench_analyze ${CMAKE_CURRENT_LIST_DIR}/bench_analyze.c)
target_link_libraries(bench_analyze PRIVATE memshim_analyze memshim_tracegen)
if(MEMSHIM_WITH_TESTS)
  # A small run as a smoke test: it checks the benchmark works, never its speed. nosan: the
  # sanitizers' slowdown makes even the small run needlessly long and measures nothing.
  add_test(NAME bench_analyze_smoke
           COMMAND bench_analyze --events 200000 --keep ${CMAKE_BINARY_DIR}/bench-analyze.mst
                   --analyze $<TARGET_FILE:memshim-analyze>)
  set_tests_properties(bench_analyze_smoke PROPERTIES LABELS "bench;nosan" TIMEOUT 300)
endif()
