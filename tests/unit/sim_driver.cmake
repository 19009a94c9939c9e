# Unit tests of the simulated CUDA driver (tests/simcuda/driver).
if(MEMSHIM_WITH_SIM)
  foreach(part "" _mem _vmm)
    memshim_criterion_test(NAME test_sim_driver${part}
      SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_driver${part}.c
      LIBS simcuda_cuda simcuda_headers)
  endforeach()

  # The driver's internal modules, compiled into the test.
  memshim_criterion_test(NAME test_sim_driver_parts
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_driver_parts.c
            ${CMAKE_SOURCE_DIR}/tests/simcuda/driver/rangeset.c
            ${CMAKE_SOURCE_DIR}/tests/simcuda/driver/env.c)
  target_include_directories(test_sim_driver_parts PRIVATE ${CMAKE_SOURCE_DIR}/tests/simcuda/driver)

  # Capacity limits and the stats file: a small device, and a helper program that exits
  # from a second thread.
  add_executable(test_sim_driver_stats_child ${CMAKE_CURRENT_LIST_DIR}/test_sim_driver_stats_child.c)
  set_target_properties(test_sim_driver_stats_child PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_link_libraries(test_sim_driver_stats_child PRIVATE simcuda_cuda simcuda_headers Threads::Threads)
  memshim_criterion_test(NAME test_sim_driver_limits
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_driver_limits.c
    LIBS simcuda_cuda simcuda_headers Threads::Threads
    ENV SIMCUDA_DEVICE_MEMORY=64m)
  add_dependencies(test_sim_driver_limits test_sim_driver_stats_child)

  # Reaches the driver only through dlopen + cuGetProcAddress_v2, as libcudart does.
  memshim_criterion_test(NAME test_sim_driver_dlopen
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_driver_dlopen.c
    LIBS memshim_cuda_headers ${CMAKE_DL_LIBS})
  add_dependencies(test_sim_driver_dlopen simcuda_cuda)
endif()
