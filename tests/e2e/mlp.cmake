# End-to-end tests of the example trainer (examples/mlp); mlp_check.py documents each mode.
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "mlp: no Python 3 interpreter, the example trainer's e2e tests are not registered")
  return()
endif()
set(MLP_CHECK ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/mlp_check.py)

if(TARGET mlp-train-sim)
  # Losses fall, runs repeat bit for bit, SIMCUDA_STATS agrees with the model's shape; once with
  # the defaults (ReLU, cublasSgemm_v2, tags) and once with GELU, cublasGemmEx and no tags.
  memshim_script_test(NAME mlp_train_sim COMMAND ${MLP_CHECK} train $<TARGET_FILE:mlp-train-sim>)
  memshim_script_test(NAME mlp_train_sim_gelu_ex
                      COMMAND ${MLP_CHECK} train $<TARGET_FILE:mlp-train-sim>
                              --act gelu --gemm ex --no-tags --layers 4 --steps 10)
  # Forward, backward, Adam and the GEMMs' transposes against a float64 Python reference.
  memshim_script_test(NAME mlp_train_sim_reference
                      COMMAND ${MLP_CHECK} reference $<TARGET_FILE:mlp-train-sim>)
  memshim_script_test(NAME mlp_train_sim_errors
                      COMMAND ${MLP_CHECK} errors $<TARGET_FILE:mlp-train-sim>)

  # A stand-in for libmemshim's app API, preloaded to show the trainer's weak calls bind.
  add_library(mlp_appapi_spy MODULE ${CMAKE_CURRENT_LIST_DIR}/mlp_appapi_spy.c)
  target_link_libraries(mlp_appapi_spy PRIVATE memshim_headers)
  set_target_properties(mlp_appapi_spy PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  memshim_script_test(NAME mlp_appapi
                      COMMAND ${MLP_CHECK} appapi $<TARGET_FILE:mlp-train-sim>
                              $<TARGET_FILE:mlp_appapi_spy>)
endif()

# The nvcc build links the real CUDA libraries and carries device code; skipped without nvcc.
if(TARGET mlp-train)
  memshim_script_test(NAME mlp_train_cuda_links COMMAND ${MLP_CHECK} links $<TARGET_FILE:mlp-train>)
else()
  memshim_script_test(NAME mlp_train_cuda_links COMMAND ${MLP_CHECK} links -)
endif()
set_tests_properties(mlp_train_cuda_links PROPERTIES SKIP_RETURN_CODE 77)

# The nvcc build on simcuda under the shim: its kernels' parameter layouts are read from nvcc's
# cubins, and every operation must record the same accesses as the simcuda-kernel build's.
if(TARGET mlp-train-sim AND TARGET memshim-analyze AND TARGET memshim)
  if(TARGET mlp-train)
    set(MLP_CUDA_EXE $<TARGET_FILE:mlp-train>)
  else()
    set(MLP_CUDA_EXE -)
  endif()
  memshim_script_test(NAME mlp_train_cuda_accesses
                      COMMAND ${MLP_CHECK} accesses ${MLP_CUDA_EXE} $<TARGET_FILE:mlp-train-sim>
                              $<TARGET_FILE:memshim> $<TARGET_FILE:memshim-analyze>)
  set_tests_properties(mlp_train_cuda_accesses PROPERTIES SKIP_RETURN_CODE 77)
endif()
