# Unit tests of the shim's core modules (shim/*.c behind track.h), linked against memshim_core.
set(CORE_UNIT ${CMAKE_CURRENT_LIST_DIR})

foreach(part options rules budget registry trace readme elfsym callsite)
  memshim_criterion_test(NAME test_core_${part}
    SOURCES ${CORE_UNIT}/test_core_${part}.c
    LIBS memshim_core)
endforeach()

memshim_criterion_test(NAME test_core_track
  SOURCES ${CORE_UNIT}/test_core_track.c
  LIBS memshim_core)
# The rules match the test's own functions by symbol: export them to dladdr.
set_target_properties(test_core_track PROPERTIES ENABLE_EXPORTS ON)

# Prints the README's environment section from the options table (see test_core_readme).
add_executable(gen_env_table ${CORE_UNIT}/gen_env_table.c)
target_link_libraries(gen_env_table PRIVATE memshim_core)
set_target_properties(gen_env_table PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})

# The spill policy's victim choice (shim/victim.c), pure: no CUDA.
memshim_criterion_test(NAME test_core_victim
  SOURCES ${CORE_UNIT}/test_core_victim.c
  LIBS memshim_core)

# The mapping counts of cuMemCreate handles (shim/handle_maps.c).
memshim_criterion_test(NAME test_core_handle_maps
  SOURCES ${CORE_UNIT}/test_core_handle_maps.c
  LIBS memshim_core)

# The spill backing's buddy sub-allocator (shim/backing.c), without CUDA.
memshim_criterion_test(NAME test_core_backing
  SOURCES ${CORE_UNIT}/test_core_backing.c
  LIBS memshim_core)

# The auto policy's cost model: MEMSHIM_COSTS syntax and arithmetic (pure), and the start-up
# measurement on simcuda (shim/measure.c; the driver and cuBLAS loaded at run time, as a program has them).
memshim_criterion_test(NAME test_core_costs
  SOURCES ${CORE_UNIT}/test_core_costs.c
  LIBS memshim_core)
if(TARGET simcuda_cuda AND TARGET simcuda_cublas)
  memshim_criterion_test(NAME test_core_measure
    SOURCES ${CORE_UNIT}/test_core_measure.c
    LIBS memshim_core)
  add_dependencies(test_core_measure simcuda_cuda simcuda_cublas)
endif()

# Recompute's lineage bookkeeping (shim/lineage.c): live list, recycling, the readers' filter.
memshim_criterion_test(NAME test_core_lineage
  SOURCES ${CORE_UNIT}/test_core_lineage.c
  LIBS memshim_core)
