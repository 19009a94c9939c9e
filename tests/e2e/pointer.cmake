# Pointer queries (cudaPointerGetAttributes, cuPointerGetAttribute(s), cuMemGetAddressRange) on
# memory the shim serves and moves: the answers cudaMalloc memory gives (pointer_check.py).
find_package(Python3 COMPONENTS Interpreter)
if(TARGET simcuda_cudart AND TARGET simcuda_cuda AND Python3_Interpreter_FOUND)
  add_executable(pointer-prog ${CMAKE_CURRENT_LIST_DIR}/pointer_prog.c)
  set_target_properties(pointer-prog PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_link_libraries(pointer-prog PRIVATE simcuda_headers simcuda_cudart simcuda_cuda)
  foreach(scenario plain host unmapped async)
    memshim_script_test(
      NAME pointer_${scenario}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/pointer_check.py ${scenario} --shim
              $<TARGET_FILE:memshim> --prog $<TARGET_FILE:pointer-prog>
      LABELS spill)
  endforeach()
endif()
