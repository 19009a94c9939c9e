# End-to-end tests of the cuBLAS/cuBLASLt access records: blas-access calls every hooked GEMM
# entry point on simcuda, blas_access_check.py holds the trace to the calls (and the example
# trainer's trace to its GEMMs).
find_package(Python3 COMPONENTS Interpreter)

if(TARGET simcuda_cublas AND TARGET simcuda_cublaslt AND TARGET simcuda_cudart AND
   Python3_Interpreter_FOUND)
  add_executable(blas-access ${CMAKE_CURRENT_LIST_DIR}/blas_access.c)
  set_target_properties(blas-access PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_link_libraries(blas-access PRIVATE simcuda_headers simcuda_cudart simcuda_cublas
                                            simcuda_cublaslt)
  foreach(scenario calls off via_lt)
    memshim_script_test(NAME blas_access_${scenario}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/blas_access_check.py ${scenario}
              --shim $<TARGET_FILE:memshim> --prog $<TARGET_FILE:blas-access>
      LABELS shim)
  endforeach()
  if(TARGET mlp-train-sim)
    foreach(scenario mlp mlp_ex)
      memshim_script_test(NAME blas_access_${scenario}
        COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/blas_access_check.py ${scenario}
                --shim $<TARGET_FILE:memshim> --prog $<TARGET_FILE:mlp-train-sim>
        LABELS shim)
    endforeach()
  endif()
endif()
