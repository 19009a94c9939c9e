# MEMSHIM_POLICY=spill end to end on simcuda (spill_check.py documents each scenario): the
# example trainer at 50% and 30% of its natural peak, random-order pattern checks in both spill
# modes, the host limit, threads, many small buffers (chunks moving whole) in both modes, and
# the trainer at the smallest ceiling the analysis allows, under each policy (host use).
find_package(Python3 COMPONENTS Interpreter)
if(TARGET simcuda_cudart AND TARGET simcuda_cublas AND Python3_Interpreter_FOUND)
  add_executable(spill-prog ${CMAKE_CURRENT_LIST_DIR}/spill_prog.c)
  set_target_properties(spill-prog PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_link_libraries(spill-prog PRIVATE memshim_headers simcuda_headers simcuda_cudart
                                           simcuda_cublas Threads::Threads)
  set(SPILL_CHECK ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/spill_check.py
                  --shim $<TARGET_FILE:memshim> --prog $<TARGET_FILE:spill-prog>)
  if(TARGET mlp-train-sim)
    list(APPEND SPILL_CHECK --mlp $<TARGET_FILE:mlp-train-sim>)
  endif()
  if(TARGET memshim-analyze)
    list(APPEND SPILL_CHECK --analyze $<TARGET_FILE:memshim-analyze>
                --rules ${CMAKE_SOURCE_DIR}/examples/mlp/memshim.rules)
  endif()
  foreach(scenario patterns_host patterns_unmapped hostlimit threads smallbufs_host
                   smallbufs_unmapped mlp_50 mlp_30 host_use_spill host_use_recompute
                   host_use_auto)
    memshim_script_test(NAME spill_${scenario} COMMAND ${SPILL_CHECK} ${scenario} LABELS spill)
    set_tests_properties(spill_${scenario} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
endif()
