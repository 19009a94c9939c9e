# bench_blas: what the shim adds per cuBLAS/cuBLASLt GEMM call (a 1x1x1 problem on simcuda).
if(TARGET simcuda_cublas AND TARGET simcuda_cublaslt AND TARGET simcuda_cudart)
  add_executable(bench_blas ${CMAKE_CURRENT_LIST_DIR}/bench_blas.c)
  target_link_libraries(bench_blas PRIVATE simcuda_headers simcuda_cudart simcuda_cublas
                                           simcuda_cublaslt)
  if(MEMSHIM_WITH_TESTS)
    # A short run that only checks the benchmark works; it asserts nothing about time. Not under
    # sanitizers: instrumented timings mean nothing.
    add_test(NAME bench_blas_smoke COMMAND bench_blas $<TARGET_FILE:memshim> 2000)
    set_tests_properties(bench_blas_smoke PROPERTIES LABELS "bench;nosan" TIMEOUT 120
                         ENVIRONMENT "${MEMSHIM_TEST_ENV}")
  endif()
endif()
