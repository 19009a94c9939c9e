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
  # cuBLAS out of the global scope: dlopen'ed RTLD_LOCAL, or linked by an RTLD_LOCAL library.
  add_library(blas_local_user SHARED ${CMAKE_CURRENT_LIST_DIR}/blas_local_user.c)
  set_target_properties(blas_local_user PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_link_libraries(blas_local_user PRIVATE simcuda_headers simcuda_cublas)
  add_executable(blas-local ${CMAKE_CURRENT_LIST_DIR}/blas_local.c)
  set_target_properties(blas-local PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_link_libraries(blas-local PRIVATE simcuda_headers simcuda_cudart ${CMAKE_DL_LIBS})
  add_dependencies(blas-local blas_local_user simcuda_cublas)
  memshim_script_test(NAME blas_access_local
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/blas_access_check.py local
            --shim $<TARGET_FILE:memshim> --prog $<TARGET_FILE:blas-local>
            --lib $<TARGET_FILE:blas_local_user>
    LABELS shim)

  if(TARGET mlp-train-sim)
    foreach(scenario mlp mlp_ex)
      memshim_script_test(NAME blas_access_${scenario}
        COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/blas_access_check.py ${scenario}
                --shim $<TARGET_FILE:memshim> --prog $<TARGET_FILE:mlp-train-sim>
        LABELS shim)
    endforeach()
  endif()
endif()
