# Access tracking: the registry's containment index and access.c's records, linked
# against the track layer without CUDA.
memshim_criterion_test(NAME test_core_access
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_core_access.c
  LIBS shim_track)
