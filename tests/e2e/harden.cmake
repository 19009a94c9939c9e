# The shim in the hard places of a host process (harden_check.py documents each scenario):
# setuid programs, extreme option values, fork while busy, exec in place, signals and _exit,
# multi-process file names, reports, and 8 threads under spill.
find_package(Python3 COMPONENTS Interpreter)
if(TARGET simcuda_cudart AND Python3_Interpreter_FOUND)
  add_executable(harden-prog ${CMAKE_CURRENT_LIST_DIR}/harden_prog.c)
  set_target_properties(harden-prog PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_link_libraries(harden-prog PRIVATE simcuda_headers simcuda_cudart Threads::Threads)
  # The same program linked to libmemshim (not preloaded): what a setuid binary that links the
  # shim looks like. Absolute run path: the loader ignores LD_LIBRARY_PATH for it.
  add_executable(harden-linked ${CMAKE_CURRENT_LIST_DIR}/harden_prog.c)
  set_target_properties(harden-linked PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_link_libraries(harden-linked PRIVATE memshim simcuda_headers simcuda_cudart simcuda_cuda
                                              Threads::Threads)
  target_link_options(harden-linked PRIVATE "LINKER:--no-as-needed")
  set(HARDEN_CHECK ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/harden_check.py
                   --shim $<TARGET_FILE:memshim> --prog $<TARGET_FILE:harden-prog>
                   --linked $<TARGET_FILE:harden-linked>
                   --analyze $<TARGET_FILE:memshim-analyze>)
  foreach(scenario setuid env_extremes fork exec signals exit_paths names report_wrapper
                   driver_oom spill_stress analyzer_inputs)
    memshim_script_test(NAME harden_${scenario} COMMAND ${HARDEN_CHECK} ${scenario}
                        LABELS shim)
    set_tests_properties(harden_${scenario} PROPERTIES SKIP_RETURN_CODE 77)
  endforeach()
endif()
