# simcuda runtime, cuBLAS and cuBLASLt (owned by the simcuda runtime area).
if(TARGET simcuda_cudart AND TARGET simcuda_cublas)
  memshim_criterion_test(NAME test_sim_cublas_gemm
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_cublas_gemm.c
    LIBS simcuda_blas_core m)

  # Both run on the real simulated driver, found (like the real one) on LD_LIBRARY_PATH.
  memshim_criterion_test(NAME test_sim_runtime
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_runtime.c
    LIBS simcuda_cudart simcuda_headers Threads::Threads ${CMAKE_DL_LIBS}
    ENV SIMCUDA_DEVICE_MEMORY=256m)
  add_dependencies(test_sim_runtime simcuda_cuda)
endif()
