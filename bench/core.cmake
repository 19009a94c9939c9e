# bench_alloc: the shim core's cost per allocation+free pair, stacks off and on.
add_executable(bench_alloc ${CMAKE_CURRENT_LIST_DIR}/bench_alloc.c)
target_link_libraries(bench_alloc PRIVATE shim_track)
if(MEMSHIM_WITH_TESTS)
  # A short run that only checks the benchmark works; it asserts nothing about time. Not under
  # sanitizers: instrumented timings mean nothing and the deep recursion is slow there.
  add_test(NAME bench_alloc_smoke COMMAND bench_alloc 20000)
  set_tests_properties(bench_alloc_smoke PROPERTIES LABELS "bench;nosan" TIMEOUT 120
                       ENVIRONMENT "${MEMSHIM_TEST_ENV}")
endif()
