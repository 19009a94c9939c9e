# bench_access: added ns per kernel launch with 8 pointer parameters (shim vs. none, simcuda).
if(TARGET simcuda_cudart AND TARGET simcuda_cuda)
  add_executable(bench_access ${CMAKE_CURRENT_LIST_DIR}/bench_access.c)
  target_link_libraries(bench_access PRIVATE simcuda_headers simcuda_cudart simcuda_cuda)
  add_dependencies(bench_access memshim)
  if(MEMSHIM_WITH_TESTS)
    # Checks only that the benchmark runs; nothing about time. Not under sanitizers.
    add_test(NAME bench_access_smoke COMMAND bench_access $<TARGET_FILE:memshim> 20000)
    set_tests_properties(bench_access_smoke PROPERTIES LABELS "bench;nosan" TIMEOUT 120
                         ENVIRONMENT "${MEMSHIM_TEST_ENV}")
  endif()
endif()
