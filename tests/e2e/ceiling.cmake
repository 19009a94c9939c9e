# The ceiling's property test (ceiling_check.py): random programs of ceiling-prog (every
# allocation door, threads, virtual memory released while mapped, pools) under each policy;
# simcuda's peak never above the ceiling, the analyzer never above what the shim held.
find_package(Python3 COMPONENTS Interpreter)
if(TARGET simcuda_cudart AND TARGET simcuda_cuda AND Python3_Interpreter_FOUND)
  add_executable(ceiling-prog ${CMAKE_CURRENT_LIST_DIR}/ceiling_prog.c)
  set_target_properties(ceiling-prog PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_link_libraries(ceiling-prog PRIVATE simcuda_headers simcuda_cudart simcuda_cuda
                                             Threads::Threads)
  foreach(policy none spill recompute auto)
    memshim_script_test(
      NAME ceiling_property_${policy}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/ceiling_check.py
              --shim $<TARGET_FILE:memshim> --prog $<TARGET_FILE:ceiling-prog>
              --analyze $<TARGET_FILE:memshim-analyze> ${policy}
      LABELS spill)
  endforeach()
endif()
