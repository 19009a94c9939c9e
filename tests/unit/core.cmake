# Unit tests of the shim's core modules (shim/*.c behind track.h), linked against memshim_core.
set(CORE_UNIT ${CMAKE_CURRENT_LIST_DIR})

foreach(part options rules budget registry trace readme elfsym)
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

# The spill backing's buddy sub-allocator (shim/backing.c), without CUDA.
memshim_criterion_test(NAME test_core_backing
  SOURCES ${CORE_UNIT}/test_core_backing.c
  LIBS memshim_core)
