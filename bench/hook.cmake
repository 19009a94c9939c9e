# bench_hook: added ns per cudaMalloc+cudaFree pair through the hooks (shim vs. none, simcuda).
if(TARGET simcuda_cudart AND TARGET simcuda_cuda)
  add_executable(bench_hook ${CMAKE_CURRENT_LIST_DIR}/bench_hook.c)
  target_link_libraries(bench_hook PRIVATE simcuda_headers simcuda_cudart simcuda_cuda)
  add_dependencies(bench_hook memshim)
  if(MEMSHIM_WITH_TESTS)
    # Checks only that the benchmark runs; nothing about time. Not under sanitizers.
    add_test(NAME bench_hook_smoke COMMAND bench_hook $<TARGET_FILE:memshim> 20000)
    set_tests_properties(bench_hook_smoke PROPERTIES LABELS "bench;nosan" TIMEOUT 120
                         ENVIRONMENT "${MEMSHIM_TEST_ENV}")
  endif()
endif()
