# simcuda runtime, cuBLAS and cuBLASLt (owned by the simcuda runtime area).
if(TARGET simcuda_cudart AND TARGET simcuda_cublas AND TARGET simcuda_cublaslt)
  # The CPU GEMM kernel alone: no driver involved.
  memshim_criterion_test(NAME test_sim_cublas_gemm
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_cublas_gemm.c
    LIBS simcuda_blas_core m)

  # These run on the simulated driver, which the libraries dlopen() (never link) from
  # LD_LIBRARY_PATH, as the real ones do. A small device makes out-of-memory quick to reach.
  memshim_criterion_test(NAME test_sim_runtime
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_runtime.c
    LIBS simcuda_cudart simcuda_headers Threads::Threads ${CMAKE_DL_LIBS}
    ENV SIMCUDA_DEVICE_MEMORY=256m)
  memshim_criterion_test(NAME test_sim_cublas
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_cublas.c
    LIBS simcuda_cublas simcuda_cublaslt simcuda_cudart simcuda_blas_core m ${CMAKE_DL_LIBS}
    ENV SIMCUDA_DEVICE_MEMORY=1g)
  # Defines dlsym, as a preloaded shim does, to watch how the libraries reach the driver.
  # nosan: the sanitizer runtimes resolve their interceptors with dlsym(RTLD_NEXT, ...) before
  # main; forwarded from this executable, RTLD_NEXT finds the interceptors themselves, and
  # AddressSanitizer's start-up loops forever. The uninstrumented build runs it.
  memshim_criterion_test(NAME test_sim_runtime_lookup
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_runtime_lookup.c
    LIBS simcuda_cublas simcuda_cudart ${CMAKE_DL_LIBS}
    LABELS nosan)
  if(TARGET simcuda_cuda)
    add_dependencies(test_sim_runtime_lookup simcuda_cuda)
    add_dependencies(test_sim_runtime simcuda_cuda)
    add_dependencies(test_sim_cublas simcuda_cuda)
  endif()
endif()

# Every exported name must be one the real library exports (skipped without the toolkit's libs).
if(TARGET simcuda_cudart AND TARGET simcuda_cublas AND TARGET simcuda_cublaslt)
  memshim_script_test(NAME test_sim_exports
    COMMAND ${CMAKE_SOURCE_DIR}/tests/simcuda/runtime/check_exports.sh ${MEMSHIM_SIM_DIR}
            ${CUDAToolkit_LIBRARY_DIR})
  set_tests_properties(test_sim_exports PROPERTIES SKIP_RETURN_CODE 77)
endif()

# What a prebuilt framework needs (fat-binary kernels, capture queries, NVML, the compute switch).
if(TARGET simcuda_cudart AND TARGET simcuda_cublas AND TARGET simcuda_nvml)
  memshim_criterion_test(NAME test_sim_framework
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_framework.c
    LIBS simcuda_cublas simcuda_cudart Threads::Threads ${CMAKE_DL_LIBS})
  add_dependencies(test_sim_framework simcuda_cuda simcuda_nvml)
endif()
