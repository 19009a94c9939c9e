# Access tracking (issue 3): the registry's containment index and access.c's records, linked
# against memshim_core without CUDA.
memshim_criterion_test(NAME test_core_access
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_core_access.c
  LIBS memshim_core)
