# MEMSHIM_POLICY=recompute end to end on simcuda (remat_check.py documents each scenario): lineage
# invalidation by a kernel, a copy and a memset, by a kernel whose layout is unknown or past what is scanned, recursive chains, exposed buffers, a freed
# input, kernel parameters declared read-only by a `readonly` rule, a random-operation fuzz checked bit for bit, in both spill modes; and the example
# trainer at 50% and 30% of its natural peak with its readonly rules (drops required), without
# them (no drops), and under auto with a fast GEMM.
find_package(Python3 COMPONENTS Interpreter)
if(TARGET simcuda_cudart AND TARGET simcuda_cublas AND Python3_Interpreter_FOUND)
  add_executable(remat-prog ${CMAKE_CURRENT_LIST_DIR}/remat_prog.c)
  set_target_properties(remat-prog PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_link_libraries(remat-prog PRIVATE simcuda_headers simcuda_cudart simcuda_cuda
                                           simcuda_cublas)
  set(REMAT_CHECK ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/remat_check.py
                  --shim $<TARGET_FILE:memshim> --prog $<TARGET_FILE:remat-prog>)
  if(TARGET mlp-train-sim)
    list(APPEND REMAT_CHECK --mlp $<TARGET_FILE:mlp-train-sim>
                            --rules ${CMAKE_SOURCE_DIR}/examples/mlp/memshim.rules)
  endif()
  foreach(scenario invalidate_kernel invalidate_copy invalidate_memset blind_rt blind_drv blind_far
                   blind_far_extra blind_none chain exposed
                   exposed_batched free handle readonly_only readonly_both readonly_norule fuzz fuzz_chunks)
    foreach(mode host unmapped)
      memshim_script_test(NAME remat_${scenario}_${mode} COMMAND ${REMAT_CHECK} ${scenario} ${mode}
                          LABELS spill remat)
      set_tests_properties(remat_${scenario}_${mode} PROPERTIES SKIP_RETURN_CODE 77)
    endforeach()
  endforeach()
  foreach(scenario mlp_50 mlp_30 mlp_norules mlp_auto_fast mlp_auto_measured_50
                   mlp_auto_measured_30 mlp_nomin_50 mlp_nomin_30 mlp_auto_nomin_50
                   mlp_auto_nomin_30 auto_fast auto_slow)
    memshim_script_test(NAME remat_${scenario} COMMAND ${REMAT_CHECK} ${scenario} host
                        LABELS spill remat)
    set_tests_properties(remat_${scenario} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
endif()
