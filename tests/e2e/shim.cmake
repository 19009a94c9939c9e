# End-to-end tests of libmemshim's interception layer: shim-paths calls every allocation path
# through every door on simcuda, shim_check.py holds its report against the trace and
# simcuda's SIMCUDA_STATS. One ctest per scenario (see shim_check.py).
find_package(Python3 COMPONENTS Interpreter)

if(TARGET simcuda_cudart AND TARGET simcuda_cuda AND Python3_Interpreter_FOUND)
  add_executable(shim-paths ${CMAKE_CURRENT_LIST_DIR}/shim_paths.c)
  set_target_properties(shim-paths PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR}
                                              ENABLE_EXPORTS ON)
  target_link_libraries(shim-paths PRIVATE memshim_headers simcuda_headers simcuda_cudart
                                           simcuda_cuda Threads::Threads ${CMAKE_DL_LIBS})
  # The app API is weak and undefined: keep its references dynamic so the preload binds them.
  target_link_options(shim-paths PRIVATE "LINKER:-z,dynamic-undefined-weak")

  add_executable(shim-realrt ${CMAKE_CURRENT_LIST_DIR}/shim_realrt.c)
  set_target_properties(shim-realrt PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_link_libraries(shim-realrt PRIVATE ${CMAKE_DL_LIBS})

  # A library linked to libcudart, loaded RTLD_LOCAL by shim-local (a Python extension's case).
  add_library(shim_local_user SHARED ${CMAKE_CURRENT_LIST_DIR}/shim_local_user.c)
  set_target_properties(shim_local_user PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_link_libraries(shim_local_user PRIVATE simcuda_headers simcuda_cudart)
  add_executable(shim-local ${CMAKE_CURRENT_LIST_DIR}/shim_local.c)
  set_target_properties(shim-local PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_link_libraries(shim-local PRIVATE ${CMAKE_DL_LIBS})
  add_dependencies(shim-local shim_local_user)

  set(SHIM_E2E_SCENARIOS paths ceiling meminfo threads fork kill errors nvtx api rules builtin
                         bad_env mlp exports real_cudart local no_cuda stacks)
  foreach(scenario ${SHIM_E2E_SCENARIOS})
    memshim_script_test(NAME shim_${scenario}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/shim_check.py ${scenario}
              --shim $<TARGET_FILE:memshim> --prog $<TARGET_FILE:shim-paths>
              --realrt $<TARGET_FILE:shim-realrt> --local $<TARGET_FILE:shim-local>
              --local-lib $<TARGET_FILE:shim_local_user>
      LABELS shim)
    set_tests_properties(shim_${scenario} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
else()
  message(STATUS "shim e2e: simcuda or Python 3 not available, no shim end-to-end tests")
endif()
