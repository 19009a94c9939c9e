# Unit tests of the shim's modules behind track.h, each linked against its own layer (shim/<layer>/,
# with the layers below it) and nothing above.
set(CORE_UNIT ${CMAKE_CURRENT_LIST_DIR})

foreach(part options rules budget registry trace readme callsite stackmemo)
  memshim_criterion_test(NAME test_core_${part}
    SOURCES ${CORE_UNIT}/test_core_${part}.c
    LIBS shim_core)
endforeach()
foreach(part elfsym file_claim arena)
  memshim_criterion_test(NAME test_core_${part}
    SOURCES ${CORE_UNIT}/test_core_${part}.c
    LIBS shim_util)
endforeach()

# CRC-32C (include/memshim/crc32c.h), header-only: the shim sums its write-outs, the analyzer
# checks them.
memshim_criterion_test(NAME test_core_crc32c
  SOURCES ${CORE_UNIT}/test_core_crc32c.c
  LIBS memshim_headers)

memshim_criterion_test(NAME test_core_track
  SOURCES ${CORE_UNIT}/test_core_track.c
  LIBS shim_track)
# The rules match the test's own functions by symbol: export them to dladdr.
set_target_properties(test_core_track PROPERTIES ENABLE_EXPORTS ON)

# Prints the README's environment section from the options table (see test_core_readme).
add_executable(gen_env_table ${CORE_UNIT}/gen_env_table.c)
target_link_libraries(gen_env_table PRIVATE shim_core)
set_target_properties(gen_env_table PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})

# The spill policy's victim choice (common/victim.c), pure: no CUDA.
memshim_criterion_test(NAME test_core_victim
  SOURCES ${CORE_UNIT}/test_core_victim.c
  LIBS memshim_common)

# Next-use forecasts from the previous step (common/nextuse.c) and the Belady victim order.
memshim_criterion_test(NAME test_core_nextuse
  SOURCES ${CORE_UNIT}/test_core_nextuse.c
  LIBS memshim_common)

# The mapping counts of cuMemCreate handles (shim/core/handle_maps.c).
memshim_criterion_test(NAME test_core_handle_maps
  SOURCES ${CORE_UNIT}/test_core_handle_maps.c
  LIBS shim_core)

# The spill backing's buddy sub-allocator (shim/policy/backing.c), without CUDA.
memshim_criterion_test(NAME test_core_backing
  SOURCES ${CORE_UNIT}/test_core_backing.c
  LIBS shim_policy)

# The auto policy's cost model: MEMSHIM_COSTS syntax and arithmetic (pure), and the start-up
# measurement on simcuda (shim/policy/measure.c; the driver and cuBLAS loaded at run time, as a program has them).
memshim_criterion_test(NAME test_core_costs
  SOURCES ${CORE_UNIT}/test_core_costs.c
  LIBS shim_policy)
if(TARGET simcuda_cuda AND TARGET simcuda_cublas)
  memshim_criterion_test(NAME test_core_measure
    SOURCES ${CORE_UNIT}/test_core_measure.c
    LIBS shim_policy)
  add_dependencies(test_core_measure simcuda_cuda simcuda_cublas)
endif()

# Recompute's lineage bookkeeping (shim/policy/lineage.c): live list, recycling, the readers'
# filter.
memshim_criterion_test(NAME test_core_lineage
  SOURCES ${CORE_UNIT}/test_core_lineage.c
  LIBS shim_policy)

# Spill residency on simcuda (shim/policy/residency*.c): serving, spilling past the ceiling,
# restoring with the contents kept, freeing.
if(TARGET simcuda_cuda)
  memshim_criterion_test(NAME test_core_residency
    SOURCES ${CORE_UNIT}/test_core_residency.c
    LIBS shim_policy)
  add_dependencies(test_core_residency simcuda_cuda)
endif()

# The buddy sub-allocator both programs share (common/buddy.c), pure.
memshim_criterion_test(NAME test_common_buddy
  SOURCES ${CORE_UNIT}/test_common_buddy.c
  LIBS memshim_common)
