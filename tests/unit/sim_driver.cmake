# Unit tests of the simulated CUDA driver (tests/simcuda/driver).
if(MEMSHIM_WITH_SIM)
  memshim_criterion_test(NAME test_sim_driver
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_sim_driver.c
    LIBS simcuda_cuda simcuda_headers)
endif()
