# End-to-end tests of access tracking on simcuda: access-prog's copies, sets and
# kernel launches recorded with exact ranges, MEMSHIM_ACCESS levels, and the example trainer.
find_package(Python3 COMPONENTS Interpreter)
if(TARGET simcuda_cudart AND TARGET simcuda_cuda AND Python3_Interpreter_FOUND)
  add_executable(access-prog ${CMAKE_CURRENT_LIST_DIR}/access_prog.c)
  set_target_properties(access-prog PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_link_libraries(access-prog PRIVATE simcuda_headers simcuda_cudart simcuda_cuda)
  foreach(scenario prog levels)
    memshim_script_test(NAME access_${scenario}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/access_check.py ${scenario}
              --shim $<TARGET_FILE:memshim> --prog $<TARGET_FILE:access-prog>
      LABELS access)
  endforeach()
  if(TARGET mlp-train-sim)
    foreach(scenario mlp compact)
      memshim_script_test(NAME access_${scenario}
        COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/access_check.py ${scenario}
                --shim $<TARGET_FILE:memshim> --prog $<TARGET_FILE:mlp-train-sim>
        LABELS access)
    endforeach()
  endif()
endif()
